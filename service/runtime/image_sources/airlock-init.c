/* PID 1 of an Airlock sandbox.
 *
 * It reaps every child (including orphans re-parented to it) and ignores the signals a
 * clean-up sends (`kill -9 -1` never reaches PID 1, TERM/INT/HUP are ignored), so the
 * sandbox outlives the processes an exec leaves behind.
 */
#include <errno.h>
#include <signal.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void) {
    sigset_t all;
    sigfillset(&all);
    sigprocmask(SIG_BLOCK, &all, NULL);
    /* Wake on any signal (SIGCHLD included) and at least every second, in case a
     * notification for an adopted zombie never comes, then reap everything that exited. */
    struct timespec tick = {1, 0};
    for (;;) {
        while (waitpid(-1, NULL, WNOHANG) > 0) {
        }
        sigtimedwait(&all, NULL, &tick);
    }
    return 0;
}
