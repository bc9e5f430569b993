/* Two named threads, each spinning in a function of its own for the CPU seconds its argument
 * says, while the main thread waits for them. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

static double secs = 0.5;
volatile unsigned long sink;

static double cpu_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

__attribute__((noinline)) void crunch_left(void) {
    unsigned long x = 1;
    for (long i = 0; i < 100000; i++) x = x * 6364136223846793005UL + 1;
    sink += x;
}

__attribute__((noinline)) void crunch_right(void) {
    unsigned long x = 3;
    for (long i = 0; i < 100000; i++) x ^= (x << 13) ^ (x >> 7);
    sink += x;
}

static void *left(void *arg) {
    (void)arg;
    pthread_setname_np(pthread_self(), "left-worker");
    double start = cpu_now();
    while (cpu_now() - start < secs) crunch_left();
    return NULL;
}

static void *right(void *arg) {
    (void)arg;
    pthread_setname_np(pthread_self(), "right-worker");
    double start = cpu_now();
    while (cpu_now() - start < secs) crunch_right();
    return NULL;
}

int main(int argc, char **argv) {
    if (argc > 1) secs = atof(argv[1]);
    pthread_t a, b;
    pthread_create(&a, NULL, left, NULL);
    pthread_create(&b, NULL, right, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    return 0;
}
