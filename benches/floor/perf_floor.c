/*
 * What the kernel charges per CPU-time sample on this machine, with no profiler code at all:
 * a 2.5 s busy loop on one thread, sampled at HZ by each mechanism, the handler (if any) empty.
 * Prints the thread's CPU time; compare with mode `none`.
 *
 *   cc -O2 -o /tmp/perf_floor benches/floor/perf_floor.c
 *   for m in none sigio sigtrap timer ring stack; do /tmp/perf_floor $m 10000; done
 *
 * Modes: none (no sampling); sigio (perf task clock, SIGPROF through F_SETSIG: prof's
 * `perf_event`); sigtrap (perf task clock, attr.sigtrap: prof's `perf_event_sigtrap`); timer
 * (timer_create CLOCK_MONOTONIC, SIGEV_THREAD_ID: prof's `timer_create`); ring (perf task clock
 * into a mapped ring buffer, no signal: instruction pointer, thread, time, period); stack (the same
 * plus the registers and 8 KiB of user stack per sample, what a signal-free unwinder needs).
 * Used for the floor figures in README.md's Sampler section; not built by CI.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static volatile uint64_t signals;

static void on_signal(int sig, siginfo_t *info, void *ctx) {
    (void)sig, (void)info, (void)ctx;
    signals++;
}

static double seconds(clockid_t clock) {
    struct timespec t;
    clock_gettime(clock, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

__attribute__((noinline)) static uint64_t work(uint64_t n) {
    uint64_t x = 1;
    for (uint64_t i = 0; i < n; i++) {
        x = x * 6364136223846793005ULL + i;
        __asm__ volatile("" ::"r"(x));
    }
    return x;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s none|sigio|sigtrap|timer|ring|stack HZ\n", argv[0]);
        return 2;
    }
    const char *mode = argv[1];
    long period = 1000000000L / atol(argv[2]);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigaction(SIGPROF, &sa, 0);
    sigaction(SIGTRAP, &sa, 0);
    struct perf_event_mmap_page *ring = 0;
    int perf = !strcmp(mode, "sigio") || !strcmp(mode, "sigtrap") || !strcmp(mode, "ring") ||
               !strcmp(mode, "stack");
    if (perf) {
        struct perf_event_attr a;
        memset(&a, 0, sizeof a);
        a.size = sizeof a;
        a.type = PERF_TYPE_SOFTWARE;
        a.config = PERF_COUNT_SW_TASK_CLOCK;
        a.sample_period = period;
        a.exclude_kernel = 1;
        a.exclude_hv = 1;
        a.disabled = 1;
        a.wakeup_events = 1;
        if (!strcmp(mode, "sigtrap")) {
            a.sigtrap = 1;
            a.remove_on_exec = 1;
        }
        if (!strcmp(mode, "ring") || !strcmp(mode, "stack")) {
            a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_PERIOD;
            a.wakeup_events = 1 << 30;
            if (!strcmp(mode, "stack")) {
                a.sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
                a.sample_regs_user = (1 << 6) | (1 << 7) | (1 << 8); /* bp, sp, ip */
                a.sample_stack_user = 8192;
            }
        }
        int fd = syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
        if (fd < 0) {
            perror("perf_event_open");
            return 1;
        }
        if (!strcmp(mode, "sigio")) {
            struct f_owner_ex owner = {F_OWNER_TID, (pid_t)syscall(SYS_gettid)};
            fcntl(fd, F_SETOWN_EX, &owner);
            fcntl(fd, F_SETSIG, SIGPROF);
            fcntl(fd, F_SETFL, O_ASYNC);
        } else if (!strcmp(mode, "ring") || !strcmp(mode, "stack")) {
            ring = mmap(0, 4096 * (1 + 1024), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
            if (ring == MAP_FAILED) {
                perror("mmap");
                return 1;
            }
        }
        ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
    } else if (!strcmp(mode, "timer")) {
        struct sigevent ev;
        memset(&ev, 0, sizeof ev);
        ev.sigev_notify = SIGEV_THREAD_ID;
        ev.sigev_signo = SIGPROF;
        ev._sigev_un._tid = syscall(SYS_gettid);
        timer_t timer;
        timer_create(CLOCK_MONOTONIC, &ev, &timer);
        struct itimerspec spec = {{0, period}, {0, period}};
        timer_settime(timer, 0, &spec, 0);
    } else if (strcmp(mode, "none")) {
        fprintf(stderr, "unknown mode %s\n", mode);
        return 2;
    }
    double cpu = seconds(CLOCK_THREAD_CPUTIME_ID);
    uint64_t r = 0, written = 0;
    for (int chunk = 0; chunk < 2000; chunk++) {
        r ^= work(1000000);
        if (ring) {
            /* Consume what the kernel wrote (about 1 ms of samples), so it never finds the ring
             * full and skips the copy. */
            uint64_t head = __atomic_load_n(&ring->data_head, __ATOMIC_ACQUIRE);
            written += head - ring->data_tail;
            __atomic_store_n(&ring->data_tail, head, __ATOMIC_RELEASE);
        }
    }
    cpu = seconds(CLOCK_THREAD_CPUTIME_ID) - cpu;
    printf("%-8s %6ld Hz: thread CPU %.4f s, signals %lu, ring bytes %llu (%lu)\n", mode,
           1000000000L / period, cpu, (unsigned long)signals, (unsigned long long)written,
           (unsigned long)(r & 1));
    return 0;
}
