/* Calls counted by `prof record --calls` (tests/tests/record_calls.rs): `parse` 12,345 times
 * and `leaf` 1,000,000 times, each from two call sites on two threads; `depth` 100 times by
 * recursion that is not a tail call; `in_child` 7 times in a forked child process. The program
 * checks that its thread and its child could be started (a profiler must not make that fail)
 * and prints what it did. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

__attribute__((noinline)) long leaf(long x) {
  __asm__ volatile("" : "+r"(x));
  return x * 3 + 1;
}

__attribute__((noinline)) long parse(long n) {
  long s = 0;
  for (long i = 0; i < 80; i++) s += leaf(i) ^ n;
  return s;
}

__attribute__((noinline)) long depth(int d) {
  if (d == 0) return 1;
  long r = depth(d - 1);
  __asm__ volatile("" : "+r"(r));
  return r + 1;
}

__attribute__((noinline)) long in_child(long x) {
  __asm__ volatile("" : "+r"(x));
  return x + 1;
}

/* parse calls leaf 80 times: 12,345 parse make 987,600 leaf, and 12,400 direct calls the
 * other 12,400 of 1,000,000. */
static void *worker(void *arg) {
  long s = 0;
  for (long i = 0; i < 2345; i++) s += parse(i); /* 187,600 leaf */
  for (long i = 0; i < 6200; i++) s += leaf(i);
  return (void *)s;
}

int main(void) {
  pthread_t t;
  int rc = pthread_create(&t, 0, worker, 0);
  if (rc != 0) {
    fprintf(stderr, "pthread_create failed: %d\n", rc);
    return 3;
  }
  long s = 0;
  for (long i = 0; i < 10000; i++) s += parse(i); /* 800,000 leaf */
  for (long i = 0; i < 6200; i++) s += leaf(i);
  s += depth(99);
  pthread_join(t, 0);
  pid_t child = fork();
  if (child < 0) {
    perror("fork");
    return 4;
  }
  if (child == 0) {
    long c = 0;
    for (int i = 0; i < 7; i++) c += in_child(i);
    _exit(c == 28 ? 0 : 5);
  }
  int status = 0;
  waitpid(child, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return 6;
  printf("done %d\n", s != 0);
  return 0;
}
