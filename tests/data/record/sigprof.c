/* A program that profiles itself the old way: a SIGPROF handler and an ITIMER_PROF timer of
 * 1 ms, while it spins for as many CPU seconds as its argument says. Prints what it saw:
 * "itimer N other M cpu_ms C eintr E": N signals from its timer (si_code SI_KERNEL), M SIGPROF
 * or SIGTRAP signals from anything else, its CPU time, and the sleeps cut short by a signal
 * (it also naps 100 us every 10 ms of CPU, counting EINTR). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

static volatile sig_atomic_t from_timer, from_others;

static void on_signal(int sig, siginfo_t *info, void *context) {
    (void)context;
    if (sig == SIGPROF && info->si_code == SI_KERNEL)
        from_timer++;
    else
        from_others++;
}

static double cpu_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

volatile unsigned long sink;

__attribute__((noinline)) void spin_with_itimer(void) {
    unsigned long x = 5;
    for (long i = 0; i < 100000; i++) x = x * 6364136223846793005UL + 1;
    sink += x;
}

int main(int argc, char **argv) {
    double secs = argc > 1 ? atof(argv[1]) : 1.0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigaction(SIGPROF, &sa, NULL);
    sigaction(SIGTRAP, &sa, NULL);
    struct itimerval every_ms = {{0, 1000}, {0, 1000}};
    setitimer(ITIMER_PROF, &every_ms, NULL);
    long eintr = 0;
    double start = cpu_now(), nap = start;
    while (cpu_now() - start < secs) {
        spin_with_itimer();
        if (cpu_now() - nap >= 0.01) {
            struct timespec t = {0, 100000};
            if (nanosleep(&t, NULL) != 0 && errno == EINTR) eintr++;
            nap = cpu_now();
        }
    }
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_PROF, &off, NULL);
    printf("itimer %d other %d cpu_ms %.0f eintr %ld\n", (int)from_timer, (int)from_others,
           (cpu_now() - start) * 1000, eintr);
    return 0;
}
