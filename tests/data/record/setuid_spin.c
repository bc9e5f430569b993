/* Prints its real and effective user ids, then spins for 0.5 s of CPU time while allocating
 * (64 KiB blocks, freed at once): what prof records of a program made set-uid by the test. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

volatile unsigned long sink;

static double cpu_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

__attribute__((noinline)) void spin_set_uid(void) {
    unsigned long x = 7;
    for (long i = 0; i < 100000; i++) x = x * 2862933555777941757UL + 3037000493UL;
    char *block = malloc(65536);
    memset(block, (int)x, 65536);
    sink += x + (unsigned char)block[x & 0xffff];
    free(block);
}

int main(void) {
    printf("uid %u euid %u\n", (unsigned)getuid(), (unsigned)geteuid());
    fflush(stdout);
    double start = cpu_now();
    while (cpu_now() - start < 0.5) spin_set_uid();
    return 0;
}
