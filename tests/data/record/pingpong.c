/* Two threads passing a byte back and forth over two pipes, many thousand times a second: each
 * computes a little in compute() (about WORK_US microseconds, a count calibrated once at the
 * start), writes the byte to the other and blocks in wait_peer() (a read) until it comes back.
 * `pingpong SECS [WORK_US]` runs for SECS seconds of wall time (WORK_US 2 by default) and prints
 * the split each thread's CLOCK_MONOTONIC measured, summed over both threads, and the rounds:
 * "compute 0.3012 wait 0.6521 rounds 301234". Every round is two context switches out (each
 * thread blocks once), so switches/s = 2 * rounds / SECS. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

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

/* Blocks until the other thread's byte arrives; returns it (0 at the end). */
__attribute__((noinline)) char wait_peer(int fd) {
    char byte = 0;
    if (read(fd, &byte, 1) != 1) return 0;
    return byte;
}

struct side {
    int in, out;
    long n;
    double compute, wait, total;
    long rounds;
};

static double stop_at;

/* One side's loop: compute, pass the byte on, wait for it back. The first side decides when to
 * stop and passes 0, which the other passes back before it ends. */
static void play(struct side *s, int first) {
    char byte = 1;
    double start = now();
    if (!first) {
        byte = wait_peer(s->in);
        s->wait += now() - start;
    }
    while (byte) {
        double t0 = now();
        compute(s->n);
        double t1 = now();
        if (first && t1 >= stop_at) byte = 0;
        if (write(s->out, &byte, 1) != 1) break;
        if (!byte) break;
        double t2 = now();
        byte = wait_peer(s->in);
        double t3 = now();
        s->compute += t1 - t0;
        s->wait += t3 - t2;
        s->rounds++;
    }
    s->total = now() - start;
}

static void *pong(void *arg) {
    play(arg, 0);
    return NULL;
}

int main(int argc, char **argv) {
    double secs = argc > 1 ? atof(argv[1]) : 1.0;
    double work_us = argc > 2 ? atof(argv[2]) : 2.0;
    /* Iterations for WORK_US, from the fastest of a few runs of a million (counted as the
     * main thread's compute time: a profiler sees them there). */
    double best = 1e9, calibration = 0;
    for (int i = 0; i < 5; i++) {
        double t0 = now();
        compute(1000000);
        double d = now() - t0;
        calibration += d;
        if (d < best) best = d;
    }
    long n = (long)(1000000 * work_us * 1e-6 / best);
    int a[2], b[2];
    if (pipe(a) || pipe(b)) return 1;
    struct side ping = {b[0], a[1], n, 0, 0, 0, 0}, other = {a[0], b[1], n, 0, 0, 0, 0};
    pthread_t t;
    stop_at = now() + secs;
    if (pthread_create(&t, NULL, pong, &other)) return 1;
    play(&ping, 1);
    pthread_join(t, NULL);
    double total = ping.total + other.total + calibration;
    printf("compute %.4f wait %.4f rounds %ld\n",
           (ping.compute + other.compute + calibration) / total,
           (ping.wait + other.wait) / total, ping.rounds);
    return 0;
}
