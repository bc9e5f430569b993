/* Deep stacks for measuring how many bytes of stack a recorder must copy: 4000 calls, the i-th
 * recursing i % N deep (N from the argument) through ~80-byte frames before a busy leaf. */
#include <stdlib.h>

volatile unsigned long sink;

__attribute__((noinline)) unsigned long leaf(long n) {
    unsigned long x = n;
    for (long i = 0; i < 20000; i++) x = x * 6364136223846793005UL + 1;
    return x;
}

__attribute__((noinline)) unsigned long down(int depth, long n) {
    volatile char pad[48];
    pad[0] = depth;
    if (depth == 0) return leaf(n);
    return down(depth - 1, n) + pad[0];
}

int main(int argc, char **argv) {
    int d = argc > 1 ? atoi(argv[1]) : 100;
    for (long i = 0; i < 4000; i++) sink += down(i % d, i);
    return 0;
}
