/* Three C functions whose names are also abbreviations of the C++ mangling grammar (`f` is
 * float, `i` int, `Sa` std::allocator), each kept out of line and exported (not static, so an
 * unstripped build has their symbols), and a main that spends as many CPU seconds as its
 * argument says in them: about 3/5 in f, 1/5 in i and 1/5 in Sa. The tests also strip it, so
 * that the same functions have no symbol at all.
 *
 * Each call lasts tens of milliseconds (a round about 100 ms), many sampling periods: with
 * rounds of half a millisecond, two per sample, the samples fell in step with the rounds and
 * gave Sa 31.6% in one run and 12.2% in the next. */
#include <stdlib.h>
#include <time.h>

static double cpu_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

volatile unsigned long sink;

__attribute__((noinline)) void f(long n) {
    unsigned long x = 1;
    for (long k = 0; k < n; k++) x = x * 6364136223846793005UL + 1442695040888963407UL;
    sink += x;
}

__attribute__((noinline)) void i(long n) {
    unsigned long x = 3;
    for (long k = 0; k < n; k++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    sink += x;
}

__attribute__((noinline)) void Sa(long n) {
    unsigned long x = 5;
    for (long k = 0; k < n; k++) x = (x >> 1) ^ (-(x & 1) & 0xd800000000000000UL);
    sink += x;
}

int main(int argc, char **argv) {
    double secs = argc > 1 ? atof(argv[1]) : 1.0;
    double start = cpu_now();
    while (cpu_now() - start < secs) {
        f(60000000);
        i(20000000);
        Sa(20000000);
    }
    return 0;
}
