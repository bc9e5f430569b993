/* Two functions of known CPU split: spends about 1/4 of its CPU time in spin_alpha and 3/4 in
 * spin_beta for as many CPU seconds as its argument says, measuring the split itself with
 * CLOCK_THREAD_CPUTIME_ID, and prints it: "alpha 0.2512 beta 0.7488". Each call lasts tens of
 * milliseconds, many sampling periods, so that samples cannot fall in step with the calls (a
 * round of one millisecond, the sampling period, could). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double cpu_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

volatile unsigned long sink;

__attribute__((noinline)) void spin_alpha(long n) {
    unsigned long x = 1;
    for (long i = 0; i < n; i++) x = x * 6364136223846793005UL + 1442695040888963407UL;
    sink += x;
}

__attribute__((noinline)) void spin_beta(long n) {
    unsigned long x = 3;
    for (long i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    sink += x;
}

int main(int argc, char **argv) {
    double secs = argc > 1 ? atof(argv[1]) : 1.0;
    double a = 0, b = 0, start = cpu_now();
    while (cpu_now() - start < secs) {
        double t0 = cpu_now();
        spin_alpha(30000000);
        double t1 = cpu_now();
        spin_beta(50000000);
        double t2 = cpu_now();
        a += t1 - t0;
        b += t2 - t1;
    }
    printf("alpha %.4f beta %.4f\n", a / (a + b), b / (a + b));
    return 0;
}
