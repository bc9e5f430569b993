/* Allocations of known sizes for `prof record --mode alloc`: `kept` allocates 2 KiB blocks
 * and keeps them to the end, `churn` allocates 64 KiB blocks and frees each at once, the same
 * number of bytes each. Usage: allocs ROUNDS [fork] [EXIT]; with `fork` a child process does
 * the same. Prints the bytes each allocated, and exits with EXIT (default 0). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void **kept_blocks;
static long kept_bytes, churn_bytes;

__attribute__((noinline)) void *kept(size_t n) {
  void *p = calloc(1, n);
  kept_bytes += n;
  return p;
}

__attribute__((noinline)) long churn(size_t n) {
  char *p = malloc(n);
  memset(p, 1, n);
  long sum = p[n / 2];
  free(p);
  churn_bytes += n;
  return sum;
}

static long work(int rounds) {
  long sum = 0;
  kept_blocks = malloc(sizeof(void *) * 32 * rounds);
  for (int r = 0; r < rounds; r++) {
    sum += churn(64 * 1024);
    for (int i = 0; i < 32; i++) kept_blocks[r * 32 + i] = kept(2048);
  }
  return sum;
}

int main(int argc, char **argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 2000;
  int forked = argc > 2 && strcmp(argv[2], "fork") == 0;
  int code = argc > 3 ? atoi(argv[3]) : 0;
  pid_t child = forked ? fork() : -1;
  long sum = work(rounds);
  printf("%s kept %ld churn %ld sum %ld\n", child == 0 ? "child" : "parent", kept_bytes,
         churn_bytes, sum);
  fflush(stdout);
  if (child == 0) _exit(0);
  if (child > 0) waitpid(child, NULL, 0);
  return code;
}
