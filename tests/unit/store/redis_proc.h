/* A private redis-server for the store's C tests: started by the suites'
 * one launcher (tests/redis/launch.sh: the shipped docker/redis.conf, AOF,
 * appendfsync always) on a free loopback port in a temporary folder,
 * inspected with redis-cli, stopped by its pid. The C counterpart of
 * tests/integration/harness.py's Redis.
 *
 * With COMPACTD_TEST_TLS_DIR naming a folder of tests/redis/tls_certs.sh's
 * certificates (tests/redis/with_tls.sh sets it), the server speaks TLS
 * only, on the same port, and redis-cli and the suite's store (through
 * redis_store_url()) reach it over TLS. */
#ifndef COMPACTD_REDIS_PROC_H
#define COMPACTD_REDIS_PROC_H

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef REDIS_LAUNCH
#error "REDIS_LAUNCH must name tests/redis/launch.sh"
#endif

typedef struct {
    pid_t pid;
    int port;
    char dir[64];
} redis_proc;

/* A TCP port on 127.0.0.1 that nothing listens on right now; 0 on failure. */
static int redis_free_port(void)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    int fd = socket(AF_INET, SOCK_STREAM, 0), port = 0;
    if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    if (fd >= 0)
        close(fd);
    return port;
}

/* The certificates' folder when the suite runs over TLS, else NULL. */
static const char *redis_tls_dir(void)
{
    const char *dir = getenv("COMPACTD_TEST_TLS_DIR");
    return dir && dir[0] ? dir : NULL;
}

/* Writes the URL of the server at port into url (redis:// or, over TLS,
 * rediss://) and the CA file to trust into ca_file ("" without TLS). */
static void redis_store_url(int port, char *url, size_t url_size, char *ca_file, size_t ca_size)
{
    const char *tls = redis_tls_dir();
    snprintf(url, url_size, "%s://127.0.0.1:%d/0", tls ? "rediss" : "redis", port);
    snprintf(ca_file, ca_size, "%s%s", tls ? tls : "", tls ? "/ca.crt" : "");
}

static void redis_sleep_ms(int ms)
{
    struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000};
    nanosleep(&t, NULL);
}

/* Runs redis-cli with the given arguments against r and returns its output
 * (trailing newline removed) in a new string the caller frees, or NULL when
 * redis-cli could not run or failed. Arguments are passed as they are, no
 * shell in between. */
static char *redis_cli(const redis_proc *r, const char *const *args)
{
    int out[2];
    if (pipe(out) != 0)
        return NULL;
    pid_t pid = fork();
    if (pid == 0) {
        char port[16], ca[512];
        const char *argv[32] = {"redis-cli", "-p", port, "--raw"};
        int argc = 4;
        snprintf(port, sizeof(port), "%d", r->port);
        if (redis_tls_dir()) {
            snprintf(ca, sizeof(ca), "%s/ca.crt", redis_tls_dir());
            argv[argc++] = "--tls";
            argv[argc++] = "--cacert";
            argv[argc++] = ca;
        }
        for (int i = 0; args[i] && argc < 31; i++)
            argv[argc++] = args[i];
        argv[argc] = NULL;
        dup2(out[1], 1);
        close(out[0]);
        close(out[1]);
        int devnull = open("/dev/null", O_WRONLY);
        dup2(devnull, 2);
        execvp("redis-cli", (char *const *)argv);
        _exit(127);
    }
    close(out[1]);
    size_t cap = 256, len = 0;
    char *buf = malloc(cap);
    ssize_t got;
    while (buf && (got = read(out[0], buf + len, cap - len - 1)) > 0) {
        len += (size_t)got;
        if (cap - len < 2) {
            char *bigger = realloc(buf, cap *= 2);
            if (!bigger)
                free(buf);
            buf = bigger;
        }
    }
    close(out[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (!buf || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        free(buf);
        return NULL;
    }
    while (len > 0 && buf[len - 1] == '\n')
        len--;
    buf[len] = '\0';
    return buf;
}

/* Runs one redis-cli command and compares its output with want. */
static int redis_cli_is(const redis_proc *r, const char *const *args, const char *want)
{
    char *got = redis_cli(r, args);
    int same = got && strcmp(got, want) == 0;
    free(got);
    return same;
}

static int redis_ping(const redis_proc *r)
{
    const char *ping[] = {"PING", NULL};
    return redis_cli_is(r, ping, "PONG");
}

/* True once the server at r->port answers PING and INFO names r->pid: a
 * free port is free only until somebody binds it, and PING alone could reach
 * a server some other test started there. */
static int redis_is_ours(const redis_proc *r)
{
    if (!redis_ping(r))
        return 0;
    const char *info[] = {"INFO", "server", NULL};
    char *got = redis_cli(r, info);
    char want[40];
    snprintf(want, sizeof(want), "process_id:%d\r", (int)r->pid);
    int ours = got && strstr(got, want) != NULL;
    free(got);
    return ours;
}

/* One start on r->port: 1 once the server is ours and answers, 0 when it
 * exited first (somebody else took the port), -1 when it did not answer in
 * 10 s or could not be spawned. */
static int redis_start_once(redis_proc *r)
{
    char port_s[16], cert[512], key[512], ca[512];
    snprintf(port_s, sizeof(port_s), "%d", r->port);
    const char *tls = redis_tls_dir();
    if (tls) {
        snprintf(cert, sizeof(cert), "%s/server.crt", tls);
        snprintf(key, sizeof(key), "%s/server.key", tls);
        snprintf(ca, sizeof(ca), "%s/ca.crt", tls);
    }
    pid_t parent = getpid();
    r->pid = fork();
    if (r->pid == 0) {
        /* A suite that crashes takes its server with it. */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
            _exit(127);
        int devnull = open("/dev/null", O_WRONLY);
        dup2(devnull, 1);
        dup2(devnull, 2);
        /* The launcher execs redis-server, so r->pid is the server's. */
        if (tls)
            execl(REDIS_LAUNCH, REDIS_LAUNCH, r->dir, port_s, "--port", "0", "--tls-port", port_s,
                  "--tls-cert-file", cert, "--tls-key-file", key, "--tls-ca-cert-file", ca,
                  "--tls-auth-clients", "no", (char *)NULL);
        else
            execl(REDIS_LAUNCH, REDIS_LAUNCH, r->dir, port_s, (char *)NULL);
        _exit(127);
    }
    if (r->pid < 0)
        return -1;
    for (int i = 0; i < 500; i++) {
        if (waitpid(r->pid, NULL, WNOHANG) == r->pid) {
            r->pid = 0;
            return 0;
        }
        if (redis_is_ours(r))
            return 1;
        redis_sleep_ms(20);
    }
    kill(r->pid, SIGKILL);
    waitpid(r->pid, NULL, 0);
    r->pid = 0;
    return -1;
}

/* Starts redis-server on port (0: a free one, and another free one while the
 * server exits before it answers) in a new temporary folder, or in r->dir
 * again when it is already set (a restart keeps the data). Returns 0 once it
 * answers PING, else -1. */
static int redis_start(redis_proc *r, int port)
{
    if (!r->dir[0]) {
        strcpy(r->dir, "/tmp/compactd-store-test-XXXXXX");
        if (!mkdtemp(r->dir))
            return -1;
    }
    for (int attempt = 0; attempt < 20; attempt++) {
        r->port = port ? port : redis_free_port();
        int started = redis_start_once(r);
        if (started != 0)
            return started > 0 ? 0 : -1;
        if (port)
            return -1;
    }
    return -1;
}

/* Stops the server with sig (SIGCONT first, in case it was stopped) and
 * waits for it. */
static void redis_kill(redis_proc *r, int sig)
{
    if (r->pid <= 0)
        return;
    kill(r->pid, SIGCONT);
    kill(r->pid, sig);
    waitpid(r->pid, NULL, 0);
    r->pid = 0;
}

/* Stops the server and removes its folder. */
static void redis_stop(redis_proc *r)
{
    redis_kill(r, SIGTERM);
    if (r->dir[0]) {
        char cmd[128];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", r->dir);
        if (system(cmd) != 0)
            fprintf(stderr, "could not remove %s\n", r->dir);
        r->dir[0] = '\0';
    }
}

#endif
