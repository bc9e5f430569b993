/* Starts a daemon and exits at once: the daemon (a forked child) leaves the session (setsid),
 * points its standard descriptors at /dev/null, keeps every other descriptor it inherited,
 * writes its pid to PID_FILE, waits until GO_FILE exists (30 s at most), then starts `env`
 * (execv, in a forked child) with its output and errors in OUT_FILE, and exits.
 * Usage: daemon PID_FILE GO_FILE OUT_FILE */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 4) return 2;
    pid_t pid = fork();
    if (pid < 0) return 3;
    if (pid > 0) return 0;
    setsid();
    int null = open("/dev/null", O_RDWR);
    dup2(null, 0);
    dup2(null, 1);
    dup2(null, 2);
    close(null);
    FILE *f = fopen(argv[1], "w");
    if (f) {
        fprintf(f, "%d\n", (int)getpid());
        fclose(f);
    }
    for (int i = 0; i < 600 && access(argv[2], F_OK) != 0; i++) {
        struct timespec t = {0, 50 * 1000 * 1000};
        nanosleep(&t, NULL);
    }
    pid_t child = fork();
    if (child == 0) {
        int out = open(argv[3], O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(out, 1);
        dup2(out, 2);
        char *args[] = {"env", NULL};
        execv("/usr/bin/env", args);
        _exit(127);
    }
    int status;
    waitpid(child, &status, 0);
    return 0;
}
