/* Starts `sleep 0.3` three ways, one after another, and waits for each: posix_spawnp with its
 * environment, execvp in a forked child, and system() (which glibc runs through an internal
 * posix_spawn that cannot be interposed). */
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

int main(void) {
    char *sleep_args[] = {"sleep", "0.3", NULL};
    pid_t pid;
    if (posix_spawnp(&pid, "sleep", NULL, NULL, sleep_args, environ) != 0) return 3;
    waitpid(pid, NULL, 0);
    pid = fork();
    if (pid == 0) {
        execvp("sleep", sleep_args);
        _exit(127);
    }
    waitpid(pid, NULL, 0);
    return system("sleep 0.3") == 0 ? 0 : 4;
}
