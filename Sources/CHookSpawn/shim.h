// Starts `serve`'s completion hooks (the program's path is found beforehand: execvpe may allocate). In C because the child must call prctl(2), which is variadic (Swift
// cannot call it), and because between fork(2) and execve(2) only async-signal-safe C may run: no Swift
// runtime, no allocation. posix_spawn cannot set a parent-death signal.
#ifndef RESUMECTL_CHOOKSPAWN_H
#define RESUMECTL_CHOOKSPAWN_H
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <unistd.h>

// pipe2(2) is a GNU extension the Swift view of glibc leaves out: both ends close-on-exec at once, so
// that no hook started meanwhile on another thread inherits one (and holds the other hook's stderr open).
extern int pipe2(int pipefd[2], int flags);
static inline int resumectl_cloexec_pipe(int fds[2]) { return pipe2(fds, O_CLOEXEC); }
// close_range(2) (glibc 2.34, Linux 5.9), also GNU-only in the headers.
extern int close_range(unsigned int first, unsigned int last, int flags);

/// Runs the program at `path` with `argv` and `envp`: stdin and stdout on `null_fd`, stderr on
/// `stderr_fd`, no other descriptor open, in a process group of its own (a timeout kills the group),
/// default signal handling, and SIGKILL when the thread that started it dies — so a hook never outlives
/// a killed `serve`, whose next start runs the hook again. Returns the child's pid, or -1 (errno set).
static inline pid_t resumectl_spawn_hook(const char *path, char *const argv[], char *const envp[], int null_fd, int stderr_fd) {
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid != 0) return pid;
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    setpgid(0, 0);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    if (dup2(null_fd, 0) < 0 || dup2(null_fd, 1) < 0 || dup2(stderr_fd, 2) < 0) _exit(127);
    // NIO opens its sockets without close-on-exec: without this a hook (and whatever it leaves running)
    // would hold serve's listening socket, and a restarted serve could not bind its port.
    if (close_range(3, ~0U, 0) != 0) {
        long most = sysconf(_SC_OPEN_MAX);
        for (long fd = 3; fd < (most > 0 && most < 65536 ? most : 65536); fd++) close((int)fd);
    }
    execve(path, argv, envp);
    _exit(127);
}
#endif
