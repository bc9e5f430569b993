#include <stdlib.h>
#include <stdio.h>
#include <time.h>
int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 20000000;
  void *keep[64] = {0};
  struct timespec a, b;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
  for (long i = 0; i < n; i++) {
    int k = i & 63;
    free(keep[k]);
    keep[k] = malloc(16 + (i & 255));
  }
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
  printf("%.1f ns per malloc+free\n", ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / n);
  return 0;
}
