/* A C++ program as templates make them: `crunch<Lcg>` and `crunch<XorShift>` (kept out of
 * line) each run a generator's `next` and the template `fold` in a loop, both inlined into them
 * at -O2. Runs for as many CPU seconds as its argument says. */
#include <cstdio>
#include <cstdlib>
#include <ctime>

struct Lcg {
    unsigned long s = 1;
    unsigned long next() { return s = s * 6364136223846793005UL + 1442695040888963407UL; }
};

struct XorShift {
    unsigned long s = 3;
    unsigned long next() {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        return s;
    }
};

template <typename T> inline T fold(T acc, T x) {
    for (int i = 0; i < 8; i++) acc = (acc ^ x) * 0x100000001b3UL + (acc >> 29);
    return acc;
}

template <typename G> __attribute__((noinline)) unsigned long crunch(long n) {
    G g;
    unsigned long acc = 0;
    for (long i = 0; i < n; i++) acc = fold(acc, g.next());
    return acc;
}

static double cpu_now() {
    timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

volatile unsigned long sink;

int main(int argc, char **argv) {
    double secs = argc > 1 ? atof(argv[1]) : 1.0;
    double start = cpu_now();
    while (cpu_now() - start < secs) {
        sink += crunch<Lcg>(100000);
        sink += crunch<XorShift>(100000);
    }
    return 0;
}
