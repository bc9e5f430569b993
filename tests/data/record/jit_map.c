/* A JIT in miniature: copies a counting loop into anonymous executable memory, writes a perf
 * map (/tmp/perf-PID.map) of argv[1] MB whose lines name code that does not exist, then one
 * last line naming the copied loop `jit_hot_loop`, and runs the loop for 0.5 s of CPU time.
 * x86_64 only. The map is left behind, as JITs leave theirs, for the profiler to read; its path
 * is written first to the file argv[2] names, so that whoever started it can remove it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static double cpu_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    long megabytes = argc > 1 ? atol(argv[1]) : 1;
    /* mov rcx, 10000000; again: dec rcx; jnz again; ret */
    static const unsigned char loop[] = {0x48, 0xb9, 0x80, 0x96, 0x98, 0, 0, 0, 0, 0,
                                         0x48, 0xff, 0xc9, 0x75, 0xfb, 0xc3};
    unsigned char *code = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
                               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (code == MAP_FAILED) return 2;
    memcpy(code, loop, sizeof loop);
    char path[64];
    snprintf(path, sizeof path, "/tmp/perf-%d.map", (int)getpid());
    if (argc > 2) {
        FILE *note = fopen(argv[2], "w");
        if (!note || fputs(path, note) < 0 || fclose(note) != 0) return 5;
    }
    FILE *map = fopen(path, "w");
    if (!map) return 3;
    unsigned long fake = 0x100000000000UL;
    for (long written = 0; written < megabytes << 20; fake += 0x40)
        written += fprintf(map, "%lx 40 LazyCompile:*never_run_%lx /tmp/not_there.js:1:1\n",
                           fake, fake);
    fprintf(map, "%lx %lx jit_hot_loop\n", (unsigned long)code, (unsigned long)sizeof loop);
    if (fclose(map) != 0) return 4;
    printf("map %s\n", path);
    fflush(stdout);
    void (*run)(void) = (void (*)(void))code;
    double start = cpu_now();
    while (cpu_now() - start < 0.5) run();
    return 0;
}
