/* Calls timed by `prof record --calls-timed` (tests/tests/record_calls.rs): `outer` is called 40
 * times and spins about 1 ms itself, calling `work` twice (about 2 ms each); `nest` recurses 80
 * deep (past the kernel's 64 return probes nested on one thread). The program times each call
 * itself on CLOCK_MONOTONIC twice: around the call, in the caller, and inside the function, from
 * its first statement to its last. A profiler's record of the call's entry and return falls
 * between the two, so its time of a call does too. It prints, in nanoseconds:
 * "outer CALLS AROUND INSIDE work CALLS AROUND INSIDE nest N". */
#include <stdio.h>
#include <time.h>

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

/* Spins for `ns` nanoseconds of wall time. */
static void spin(double ns) {
  double end = now_ns() + ns;
  volatile unsigned long x = 1;
  while (now_ns() < end) {
    for (int i = 0; i < 200; i++) x = x * 6364136223846793005ul + 1;
  }
}

static double work_around, work_inside, outer_inside;
static long work_calls;

__attribute__((noinline)) void work(void) {
  double t0 = now_ns();
  spin(2e6);
  work_inside += now_ns() - t0;
}

__attribute__((noinline)) void outer(void) {
  double t0 = now_ns();
  spin(1e6);
  for (int i = 0; i < 2; i++) {
    double c0 = now_ns();
    work();
    work_around += now_ns() - c0;
    work_calls++;
  }
  outer_inside += now_ns() - t0;
}

__attribute__((noinline)) long nest(int d) {
  if (d == 0) return 1;
  long r = nest(d - 1);
  __asm__ volatile("" : "+r"(r));
  return r + 1;
}

int main(void) {
  double outer_around = 0;
  long outer_calls = 0;
  for (int i = 0; i < 40; i++) {
    double t0 = now_ns();
    outer();
    outer_around += now_ns() - t0;
    outer_calls++;
  }
  long n = nest(79);
  printf("outer %ld %.0f %.0f work %ld %.0f %.0f nest %ld\n", outer_calls, outer_around,
         outer_inside, work_calls, work_around, work_inside, n);
  return 0;
}
