/* What a daemon does at start: closes every descriptor from 3 up to FIRST_KEPT (0: to
 * sysconf(_SC_OPEN_MAX)), opens sockets of its own (16 non-blocking socket pairs, which take the
 * lowest numbers), allocates MB megabytes in blocks of 64 KiB, then reads the other ends of its
 * pairs. It sent nothing into them: any byte read there was written by someone else into its
 * sockets. Prints "foreign N" (bytes read) and exits 0 when N is 0, else 4.
 * Usage: closefds FIRST_KEPT MB */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* Each block escapes through here, so the compiler keeps every malloc and free. */
char *volatile last;

__attribute__((noinline)) void allocate_after_closing(long mb) {
    for (long i = 0; i < mb * 16; i++) {
        char *p = malloc(65536);
        p[0] = (char)i;
        last = p;
        free(last);
    }
}

int main(int argc, char **argv) {
    long first_kept = argc > 1 ? atol(argv[1]) : 0;
    long mb = argc > 2 ? atol(argv[2]) : 64;
    if (first_kept == 0) first_kept = sysconf(_SC_OPEN_MAX);
    for (long fd = 3; fd < first_kept; fd++) close((int)fd);
    int pairs[16][2];
    for (int i = 0; i < 16; i++) {
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, pairs[i]) != 0) return 3;
    }
    allocate_after_closing(mb);
    long foreign = 0;
    char buf[65536];
    for (int i = 0; i < 16; i++) {
        for (int end = 0; end < 2; end++) {
            ssize_t n;
            while ((n = read(pairs[i][end], buf, sizeof buf)) > 0) foreign += n;
        }
    }
    /* Goes on running a little, as a daemon would: the channel's end is seen while it runs. */
    struct timespec t = {1, 0};
    nanosleep(&t, NULL);
    printf("foreign %ld\n", foreign);
    return foreign == 0 ? 0 : 4;
}
