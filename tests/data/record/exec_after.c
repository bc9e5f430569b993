/* Spins in spin_before_exec for 0.3 s of CPU time, then replaces itself with the program its
 * arguments name (exec): one process, two address spaces. */
#include <time.h>
#include <unistd.h>

volatile unsigned long sink;

static double cpu_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

__attribute__((noinline)) void spin_before_exec(void) {
    unsigned long x = 7;
    for (long i = 0; i < 100000; i++) x = x * 2862933555777941757UL + 3037000493UL;
    sink += x;
}

int main(int argc, char **argv) {
    double start = cpu_now();
    while (cpu_now() - start < 0.3) spin_before_exec();
    if (argc > 1) execv(argv[1], argv + 1);
    return 1;
}
