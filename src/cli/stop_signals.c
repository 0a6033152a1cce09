/*
 * stop_signals.c - SIGTERM, SIGINT and SIGHUP as requests to stop.
 *
 * The three signals are blocked in every thread (the mask is set before
 * any thread starts and threads inherit it) and received by one thread in
 * sigwait, so no library call is ever interrupted (no EINTR inside a
 * commit): the command polls cli_signals_caught between library calls,
 * and its input reader waits on cli_signals_fd beside the input.  A second
 * signal while the command is stopping restores the default action and
 * raises it again: the process ends at once, as if floe had not caught it.
 */
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli_internal.h"

static _Atomic int caught;
static _Atomic bool seen;          /* the command noticed the signal */
static int wake[2] = {-1, -1};

static void stop_signal_set(sigset_t *set)
{
    sigemptyset(set);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGHUP);
}

const char *cli_signal_name(int sig, char *buf, size_t cap)
{
    switch (sig) {
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    case SIGHUP: return "SIGHUP";
    default: snprintf(buf, cap, "signal %d", sig); return buf;
    }
}

/* The second signal: end the process the way the signal would have. */
static void die_by(int sig)
{
    static const char msg[] = "\nfloe: a second stop signal: exiting at once\n";
    if (write(STDERR_FILENO, msg, sizeof msg - 1) < 0) {
        /* nothing more to say */
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_DFL;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, NULL);
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    pthread_sigmask(SIG_UNBLOCK, &one, NULL);
    raise(sig);
}

/* After the first signal: if the command has not noticed it within a
 * second (it is inside a long library call, a commit that retries), say
 * so; a second signal meanwhile ends the process. */
static void while_stopping(const sigset_t *set, int first)
{
    struct timespec second = {1, 0};
    int sig = sigtimedwait(set, NULL, &second);
    if (sig > 0)
        die_by(sig);
    if (!atomic_load(&seen)) {
        char buf[32];
        cli_say("floe: %s: stopping once the current step is done (a second signal exits at "
                "once)\n", cli_signal_name(first, buf, sizeof buf));
    }
}

static void *wait_for_signals(void *arg)
{
    (void)arg;
    sigset_t set;
    stop_signal_set(&set);
    for (;;) {
        int sig = 0;
        if (sigwait(&set, &sig) != 0)
            continue;
        int none = 0;
        if (!atomic_compare_exchange_strong(&caught, &none, sig)) {
            die_by(sig);
            continue;
        }
        if (write(wake[1], "s", 1) < 0) {
            /* the pipe is never full: one byte is ever written */
        }
        while_stopping(&set, sig);
    }
    return NULL;
}

int cli_signals_start(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_IGN;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGPIPE, &sa, NULL);
    sigset_t set;
    stop_signal_set(&set);
    if (pthread_sigmask(SIG_BLOCK, &set, NULL) != 0 || pipe2(wake, O_CLOEXEC) != 0)
        return -1;
    pthread_attr_t attr;
    pthread_t thread;
    if (pthread_attr_init(&attr) != 0)
        return -1;
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(&thread, &attr, wait_for_signals, NULL);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        pthread_sigmask(SIG_UNBLOCK, &set, NULL);
        return -1;
    }
    return 0;
}

int cli_signals_caught(void)
{
    int sig = atomic_load(&caught);
    if (sig)
        atomic_store(&seen, true);
    return sig;
}

int cli_signals_fd(void) { return wake[0]; }

void cli_signals_wait(uint64_t ns)
{
    uint64_t until = cli_now_ns() + ns;
    for (uint64_t now; (now = cli_now_ns()) < until && !cli_signals_caught();) {
        struct pollfd p = {cli_signals_fd(), POLLIN, 0};
        poll(&p, 1, (int)((until - now) / 1000000u) + 1);
    }
}

int cli_begin(const cli_command *cmd, int argc, char **argv, cli_opt *opts)
{
    int p = cli_parse(cmd, argc, argv, opts);
    if (p != 0)
        return p > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
    if (cli_signals_start() != 0) {
        cli_say("floe: cannot set up the stop signals\n");
        return CLI_EXIT_FAILED;
    }
    return -1;
}
