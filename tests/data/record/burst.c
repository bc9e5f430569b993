/* Many short threads: `burst N MS` starts N threads, four at a time, each named "burst" and
 * spinning in spin_burst for MS milliseconds of its own CPU time; prints how many ran. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double ms = 2;
volatile unsigned long sink;

static double cpu_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

__attribute__((noinline)) void spin_burst(void) {
    unsigned long x = 1;
    for (long i = 0; i < 2000; i++) x = x * 6364136223846793005UL + 1;
    sink += x;
}

static void *run(void *arg) {
    (void)arg;
    pthread_setname_np(pthread_self(), "burst");
    while (cpu_ms() < ms) spin_burst();
    return NULL;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 1000;
    if (argc > 2) ms = atof(argv[2]);
    int ran = 0;
    for (int i = 0; i < n; i += 4) {
        pthread_t t[4];
        int k = n - i < 4 ? n - i : 4;
        for (int j = 0; j < k; j++) pthread_create(&t[j], NULL, run, NULL);
        for (int j = 0; j < k; j++) pthread_join(t[j], NULL), ran++;
    }
    printf("%d\n", ran);
    return 0;
}
