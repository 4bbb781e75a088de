/* The product's asserts are compiled in, in every build type: a broken
 * invariant stops the process (here tokenizer_set_default(NULL), which the
 * library asserts against, in a child) rather than going on. */
#include "check.h"
#include "tokenizer.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void)
{
    pid_t pid = fork();
    check(pid >= 0, "fork");
    if (pid == 0) {
        /* No core file and no report to wade through: only the signal. */
        close(STDERR_FILENO);
        tokenizer_set_default(NULL);
        _exit(0);
    }
    int status = 0;
    check(waitpid(pid, &status, 0) == pid, "waitpid");
    check(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT,
          "tokenizer_set_default(NULL) went on (status %d): the library's asserts are compiled out",
          status);
    return check_done("assert_cases");
}
