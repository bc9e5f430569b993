/* Threads that compute: `rate THREADS SECS` runs THREADS threads at once, each spinning in
 * spin_rate for SECS seconds of its own CPU time, and prints "TID CPU_NS" per thread: the
 * thread's whole CPU time, from its start to its end. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static double secs = 0.5;
volatile unsigned long sink;

static long long cpu_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

__attribute__((noinline)) void spin_rate(void) {
    unsigned long x = 1;
    for (long i = 0; i < 20000; i++) x = x * 6364136223846793005UL + 1;
    sink += x;
}

struct result {
    pid_t tid;
    long long cpu;
};

static void *run(void *arg) {
    struct result *r = arg;
    while (cpu_ns() < secs * 1e9) spin_rate();
    r->tid = gettid();
    r->cpu = cpu_ns();
    return NULL;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 2;
    if (argc > 2) secs = atof(argv[2]);
    pthread_t threads[64];
    struct result results[64];
    if (n > 64) n = 64;
    for (int i = 0; i < n; i++) pthread_create(&threads[i], NULL, run, &results[i]);
    for (int i = 0; i < n; i++) pthread_join(threads[i], NULL);
    for (int i = 0; i < n; i++) printf("%d %lld\n", (int)results[i].tid, results[i].cpu);
    return 0;
}
