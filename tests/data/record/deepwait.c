/* A thread that blocks deep in its stack: `deepwait SECS DEPTH` recurses DEPTH frames of about
 * 100 bytes through descend(), then for SECS seconds of wall time alternates nap() (a 1 ms
 * nanosleep, first: the thread blocks there before it has computed anything at that depth) and
 * compute() (about 1 ms), both called from the deepest frame, and prints the split its
 * CLOCK_MONOTONIC measured: "nap 0.5012 compute 0.4988". */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

volatile unsigned long sink;

__attribute__((noinline)) void compute(long n) {
    unsigned long x = 3;
    for (long i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    sink += x;
}

__attribute__((noinline)) void nap(void) {
    struct timespec t = {0, 1000 * 1000};
    nanosleep(&t, NULL);
}

static double secs, in_nap, in_compute;
static long iterations;

__attribute__((noinline)) void work(void) {
    double start = now();
    while (now() - start < secs) {
        double t0 = now();
        nap();
        double t1 = now();
        compute(iterations);
        double t2 = now();
        in_nap += t1 - t0;
        in_compute += t2 - t1;
    }
}

__attribute__((noinline)) int descend(int depth) {
    volatile char pad[80];
    pad[0] = (char)depth;
    if (depth == 0)
        work();
    else
        descend(depth - 1);
    return pad[0];
}

int main(int argc, char **argv) {
    secs = argc > 1 ? atof(argv[1]) : 1.0;
    int depth = argc > 2 ? atoi(argv[2]) : 50;
    double t0 = now();
    compute(1000000);
    iterations = (long)(1000000 * 0.001 / (now() - t0));
    descend(depth);
    printf("nap %.4f compute %.4f\n", in_nap / (in_nap + in_compute),
           in_compute / (in_nap + in_compute));
    return 0;
}
