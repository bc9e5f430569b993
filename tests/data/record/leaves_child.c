/* A command that leaves a child behind. Usage: leaves_child CHILD_SECONDS PARENT_SECONDS
 * [daemon] [ignore-int]
 * Forks a child that spins CHILD_SECONDS of its own CPU time in spin_left, with its standard descriptors on
 * /dev/null (it holds none of the caller's pipes); with `daemon` it first leaves the session
 * (setsid), as a daemon does; with `ignore-int` it ignores SIGINT, as a shell's background job
 * does. The parent prints "child PID", spins PARENT_SECONDS of CPU time in spin_parent (less
 * when SIGINT ends it) and exits 3 without waiting for the child. Each round of either spin
 * allocates and frees a 64 KiB block (for alloc mode). */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double cpu_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

volatile unsigned long sink;

/* One round: a 64 KiB block allocated and freed, then some arithmetic. */
static void work(void) {
    char *block = malloc(65536);
    if (block) {
        memset(block, 1, 64);
        sink += block[7];
        free(block);
    }
    unsigned long x = 3;
    for (long i = 0; i < 20000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    sink += x;
}

__attribute__((noinline)) void spin_left(double seconds) {
    double end = cpu_now() + seconds;
    while (cpu_now() < end) work();
}

__attribute__((noinline)) void spin_parent(double seconds) {
    double end = cpu_now() + seconds;
    while (cpu_now() < end) work();
}

static int has(int argc, char **argv, const char *word) {
    for (int i = 3; i < argc; i++)
        if (strcmp(argv[i], word) == 0) return 1;
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 3) return 2;
    double child_seconds = atof(argv[1]), parent_seconds = atof(argv[2]);
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) return 4;
    if (pid == 0) {
        if (has(argc, argv, "daemon")) setsid();
        if (has(argc, argv, "ignore-int")) signal(SIGINT, SIG_IGN);
        int null = open("/dev/null", O_RDWR);
        dup2(null, 0);
        dup2(null, 1);
        dup2(null, 2);
        close(null);
        spin_left(child_seconds);
        return 0;
    }
    printf("child %d\n", (int)pid);
    fflush(stdout);
    spin_parent(parent_seconds);
    return 3;
}
