/* Makes itself non-dumpable (prctl PR_SET_DUMPABLE 0), says so, and sleeps for argv[1]
 * seconds: its own user can no longer attach to it. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) return 2;
    printf("ready\n");
    fflush(stdout);
    sleep(argc > 1 ? atoi(argv[1]) : 30);
    return 0;
}
