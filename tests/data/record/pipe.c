/* One end of a pipeline: `pipe produce SECS` computes lines for SECS CPU seconds in
 * produce_lines and writes them to its standard output; `pipe consume` hashes what it reads in
 * consume_lines (a few rounds per byte, so it computes too) until the end of its input. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double cpu_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

__attribute__((noinline)) unsigned long produce_lines(unsigned long x, char *line) {
    for (long i = 0; i < 200000; i++) x = x * 6364136223846793005UL + 1442695040888963407UL;
    snprintf(line, 64, "%lu\n", x);
    return x;
}

__attribute__((noinline)) unsigned long consume_lines(unsigned long h, const char *line) {
    for (int round = 0; round < 12000; round++)
        for (const char *c = line; *c; c++) h = (h ^ (unsigned char)*c) * 0x100000001b3UL;
    return h;
}

int main(int argc, char **argv) {
    char line[64];
    if (argc > 2 && strcmp(argv[1], "produce") == 0) {
        double secs = atof(argv[2]), start = cpu_now();
        unsigned long x = 1;
        while (cpu_now() - start < secs) {
            x = produce_lines(x, line);
            fputs(line, stdout);
        }
        return 0;
    }
    unsigned long h = 0;
    while (fgets(line, sizeof line, stdin)) h = consume_lines(h, line);
    printf("%lu\n", h);
    return 0;
}
