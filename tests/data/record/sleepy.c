/* A wall-clock split: loops sleepy() (nanosleep 14 ms) and compute() (about 6 ms of work, a
 * count calibrated once at the start), for as many seconds of wall time as its argument says,
 * measuring each part with CLOCK_MONOTONIC, and prints the split: "sleepy 0.7012 compute
 * 0.2988". With a second argument `trace`, it also prints each round's three times (start,
 * awake, computed) on standard error, in seconds of CLOCK_REALTIME, so the split of any window
 * of its run can be worked out. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static double wall(void) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

volatile unsigned long sink;

__attribute__((noinline)) void sleepy(void) {
    struct timespec t = {0, 14 * 1000 * 1000};
    nanosleep(&t, NULL);
}

__attribute__((noinline)) void compute(long n) {
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
    int trace = argc > 2 && strcmp(argv[2], "trace") == 0;
    /* Iterations for about 6 ms, from the fastest of a few runs of a million (counted as
     * compute's time: a profiler sees them there). */
    double best = 1e9, c = 0, s = 0;
    for (int i = 0; i < 5; i++) {
        double t0 = now();
        compute(1000000);
        double d = now() - t0;
        c += d;
        if (d < best) best = d;
    }
    long n = (long)(1000000 * 0.006 / best);
    double start = now();
    while (now() - start < secs) {
        double w0 = trace ? wall() : 0;
        double t0 = now();
        sleepy();
        double t1 = now();
        compute(n);
        double t2 = now();
        s += t1 - t0;
        c += t2 - t1;
        if (trace) {
            fprintf(stderr, "%.6f %.6f %.6f\n", w0, w0 + (t1 - t0), w0 + (t2 - t0));
        }
    }
    printf("sleepy %.4f compute %.4f\n", s / (s + c), c / (s + c));
    return 0;
}
