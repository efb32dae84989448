/* PID 1 of an Airlock sandbox.
 *
 * It reaps every child (including orphans re-parented to it) and ignores the signals a
 * clean-up sends (`kill -9 -1` never reaches PID 1, TERM/INT/HUP are ignored), so the
 * sandbox outlives the processes an exec leaves behind.
 */
#include <errno.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void) {
    sigset_t all;
    sigfillset(&all);
    sigprocmask(SIG_BLOCK, &all, NULL);
    for (;;) {
        int sig = 0;
        while (waitpid(-1, NULL, WNOHANG) > 0) {
        }
        /* Sleep until any signal (SIGCHLD included) is pending, then reap again. */
        sigwait(&all, &sig);
    }
    return 0;
}
