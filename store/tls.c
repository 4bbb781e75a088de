/* TLS to Redis over OpenSSL: the process's contexts (CAs, client
 * certificate), each connection's link, and errors that say why. */
#include "tls.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- Contexts: one per set of files, for the life of the process ---- */

struct tls_context {
    char ca_file[STORE_FILE_MAX], ca_dir[STORE_FILE_MAX];
    char cert_file[STORE_FILE_MAX], key_file[STORE_FILE_MAX];
    SSL_CTX *ctx;      /* NULL when error is set */
    char trusted[160]; /* the CAs trusted, for messages */
    char error[256];
    struct tls_context *next;
};

static pthread_mutex_t contexts_lock = PTHREAD_MUTEX_INITIALIZER;
static tls_context *contexts;

/* A private key is read once at start-up, never with a person at the
 * terminal to type its passphrase: an encrypted key fails to load. */
static int no_passphrase(char *buf, int size, int rwflag, void *data)
{
    (void)buf;
    (void)size;
    (void)rwflag;
    (void)data;
    return -1;
}

/* OpenSSL's reason for the first error queued (the queue is cleared). */
static const char *queued_reason(void)
{
    unsigned long code = ERR_get_error();
    const char *why = code ? ERR_reason_error_string(code) : NULL;
    ERR_clear_error();
    return why ? why : "unknown error";
}

/* Whether path is a file (or, with dir, a folder) this process can read;
 * when not, why in t->error under the name what. */
static int readable(tls_context *t, const char *what, const char *path, int dir)
{
    struct stat st;
    const char *why = NULL;
    if (stat(path, &st) != 0)
        why = strerror(errno);
    else if (dir && !S_ISDIR(st.st_mode))
        why = "not a folder";
    else if (!dir && S_ISDIR(st.st_mode))
        why = "a folder, not a file";
    else if (access(path, dir ? R_OK | X_OK : R_OK) != 0)
        why = strerror(errno);
    if (why)
        snprintf(t->error, sizeof(t->error), "TLS %s '%.150s': %s", what, path, why);
    return why == NULL;
}

static void describe_trusted(tls_context *t)
{
    if (t->ca_file[0] && t->ca_dir[0])
        snprintf(t->trusted, sizeof(t->trusted), "CA file %.60s and folder %.60s", t->ca_file,
                 t->ca_dir);
    else if (t->ca_file[0])
        snprintf(t->trusted, sizeof(t->trusted), "CA file %.140s", t->ca_file);
    else if (t->ca_dir[0])
        snprintf(t->trusted, sizeof(t->trusted), "CA folder %.140s", t->ca_dir);
    else
        snprintf(t->trusted, sizeof(t->trusted), "the system's CAs");
}

/* The CAs Redis's certificate must chain to. Returns 0, or -1 with
 * t->error set. */
static int load_trusted(tls_context *t)
{
    if (!t->ca_file[0] && !t->ca_dir[0]) {
        if (SSL_CTX_set_default_verify_paths(t->ctx) == 1)
            return 0;
        snprintf(t->error, sizeof(t->error), "TLS: the system's CAs cannot be loaded: %s",
                 queued_reason());
        return -1;
    }
    if ((t->ca_file[0] && !readable(t, "CA file", t->ca_file, 0)) ||
        (t->ca_dir[0] && !readable(t, "CA folder", t->ca_dir, 1)))
        return -1;
    if (SSL_CTX_load_verify_locations(t->ctx, t->ca_file[0] ? t->ca_file : NULL,
                                      t->ca_dir[0] ? t->ca_dir : NULL) == 1)
        return 0;
    snprintf(t->error, sizeof(t->error), "TLS CA file '%.150s': %s (PEM certificates expected)",
             t->ca_file, queued_reason());
    return -1;
}

/* Why the client key did not load, in t->error. */
static void key_refused(tls_context *t)
{
    unsigned long code = ERR_peek_error();
    int lib = ERR_GET_LIB(code), reason = ERR_GET_REASON(code);
    if (lib == ERR_LIB_X509 && reason == X509_R_KEY_VALUES_MISMATCH)
        snprintf(t->error, sizeof(t->error), "TLS client key '%.100s' is not the key of '%.100s'",
                 t->key_file, t->cert_file);
    else if (reason == ERR_R_INTERRUPTED_OR_CANCELLED) /* the passphrase callback's refusal */
        snprintf(t->error, sizeof(t->error),
                 "TLS client key '%.150s': encrypted, and compactd reads keys without a "
                 "passphrase",
                 t->key_file);
    else
        snprintf(t->error, sizeof(t->error), "TLS client key '%.150s': %s (a PEM key expected)",
                 t->key_file, queued_reason());
    ERR_clear_error();
}

/* The client's certificate and key, for a Redis that asks for one
 * (tls-auth-clients). Returns 0, or -1 with t->error set. */
static int load_client(tls_context *t)
{
    if (!t->cert_file[0])
        return 0;
    if (!readable(t, "client certificate", t->cert_file, 0) ||
        !readable(t, "client key", t->key_file, 0))
        return -1;
    if (SSL_CTX_use_certificate_chain_file(t->ctx, t->cert_file) != 1) {
        snprintf(t->error, sizeof(t->error), "TLS client certificate '%.150s': %s (PEM expected)",
                 t->cert_file, queued_reason());
        return -1;
    }
    /* Loading the key checks it against the certificate. */
    if (SSL_CTX_use_PrivateKey_file(t->ctx, t->key_file, SSL_FILETYPE_PEM) != 1) {
        key_refused(t);
        return -1;
    }
    return 0;
}

static void context_load(tls_context *t)
{
    describe_trusted(t);
    t->ctx = SSL_CTX_new(TLS_client_method());
    if (!t->ctx) {
        snprintf(t->error, sizeof(t->error), "TLS: %s", queued_reason());
        return;
    }
    SSL_CTX_set_min_proto_version(t->ctx, TLS1_2_VERSION);
    SSL_CTX_set_verify(t->ctx, SSL_VERIFY_PEER, NULL);
    /* The bytes of a write that waits for the socket are hiredis's output
     * buffer, which may move as commands are added behind them. */
    SSL_CTX_set_mode(t->ctx, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    SSL_CTX_set_default_passwd_cb(t->ctx, no_passphrase);
    if (load_trusted(t) != 0 || load_client(t) != 0) {
        SSL_CTX_free(t->ctx);
        t->ctx = NULL;
    }
}

static int same_files(const tls_context *t, const store_tls_config *cfg)
{
    return strcmp(t->ca_file, cfg->ca_file) == 0 && strcmp(t->ca_dir, cfg->ca_dir) == 0 &&
           strcmp(t->cert_file, cfg->cert_file) == 0 && strcmp(t->key_file, cfg->key_file) == 0;
}

const tls_context *tls_context_for(const store_tls_config *cfg)
{
    pthread_mutex_lock(&contexts_lock);
    tls_context *t = contexts;
    while (t && !same_files(t, cfg))
        t = t->next;
    if (!t && (t = calloc(1, sizeof(*t)))) {
        memcpy(t->ca_file, cfg->ca_file, sizeof(t->ca_file));
        memcpy(t->ca_dir, cfg->ca_dir, sizeof(t->ca_dir));
        memcpy(t->cert_file, cfg->cert_file, sizeof(t->cert_file));
        memcpy(t->key_file, cfg->key_file, sizeof(t->key_file));
        context_load(t);
        t->next = contexts;
        contexts = t;
    }
    pthread_mutex_unlock(&contexts_lock);
    return t;
}

const char *tls_context_error(const tls_context *t)
{
    return t->ctx ? NULL : t->error;
}

int store_tls_check(const store_config *cfg, char *err, size_t errlen)
{
    const store_tls_config *tls = &cfg->tls;
    if (!tls->on) {
        if (!tls->ca_file[0] && !tls->ca_dir[0] && !tls->cert_file[0] && !tls->key_file[0] &&
            !tls->server_name[0])
            return 0;
        snprintf(err, errlen,
                 "TLS settings are given (CA, client certificate or key, server name), but the "
                 "redis url does not ask for TLS: use rediss:// or rediss+cluster://");
        return -1;
    }
    if (!tls->cert_file[0] != !tls->key_file[0]) {
        snprintf(err, errlen,
                 "TLS: a client certificate needs its key, and a key its certificate (%s is "
                 "missing)",
                 tls->cert_file[0] ? "the key" : "the certificate");
        return -1;
    }
    const tls_context *t = tls_context_for(tls);
    if (!t || tls_context_error(t)) {
        snprintf(err, errlen, "%s", t ? tls_context_error(t) : "TLS: out of memory");
        return -1;
    }
    return 0;
}

/* ---- Links ---- */

struct tls_link {
    SSL *ssl;
    const tls_context *t;
    int up;    /* handshake done */
    int fatal; /* an error ended the link */
    char name[STORE_HOST_MAX];
    char error[256];
};

tls_link *tls_link_new(const tls_context *t, int fd, const char *host, const char *server_name)
{
    tls_link *l = calloc(1, sizeof(*l));
    if (!l)
        return NULL;
    l->t = t;
    snprintf(l->name, sizeof(l->name), "%s", server_name[0] ? server_name : host);
    unsigned char addr[16];
    int ip = inet_pton(AF_INET, l->name, addr) == 1 || inet_pton(AF_INET6, l->name, addr) == 1;
    l->ssl = SSL_new(t->ctx);
    int ok = l->ssl && SSL_set_fd(l->ssl, fd) == 1;
    /* SNI carries DNS names only (RFC 6066); an address is checked
     * against the certificate's IP addresses. */
    if (ok && ip)
        ok = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(l->ssl), l->name) == 1;
    else if (ok)
        ok = SSL_set_tlsext_host_name(l->ssl, l->name) == 1 && SSL_set1_host(l->ssl, l->name) == 1;
    ERR_clear_error();
    if (!ok) {
        tls_link_free(l);
        return NULL;
    }
    SSL_set_connect_state(l->ssl);
    return l;
}

void tls_link_free(tls_link *l)
{
    if (!l)
        return;
    /* No close_notify: RESP frames itself, so a cut is never taken for an
     * end, and a write here could meet a socket Redis already closed. */
    SSL_free(l->ssl);
    free(l);
}

const char *tls_link_error(const tls_link *l)
{
    return l->error;
}

/* Why the handshake's certificate check failed, when it did: 1 with
 * l->error set, else 0. */
static int verify_failure(tls_link *l)
{
    long result = SSL_get_verify_result(l->ssl);
    if (result == X509_V_OK)
        return 0;
    if (result == X509_V_ERR_HOSTNAME_MISMATCH || result == X509_V_ERR_IP_ADDRESS_MISMATCH)
        snprintf(l->error, sizeof(l->error),
                 "TLS: Redis's certificate does not name %.100s (the node's address, or the TLS "
                 "server name when one is set)",
                 l->name);
    else
        snprintf(l->error, sizeof(l->error),
                 "TLS: Redis's certificate is not trusted: %s (trusted: %s)",
                 X509_verify_cert_error_string(result), l->t->trusted);
    return 1;
}

/* Words for what OpenSSL's reason leaves unsaid, or "". */
static const char *hint(int reason)
{
    switch (reason) {
    case SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED:
        return " (Redis asks for a client certificate and key)";
    case SSL_R_TLSV1_ALERT_UNKNOWN_CA:
    case SSL_R_SSLV3_ALERT_BAD_CERTIFICATE:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_UNKNOWN:
        return " (Redis refused the client certificate)";
    case SSL_R_WRONG_VERSION_NUMBER:
    case SSL_R_PACKET_LENGTH_TOO_LONG:
        return " (does Redis speak TLS on this port?)";
    default:
        return "";
    }
}

/* Turns the result ret of an SSL call into the link's answer: 0 with
 * *events when it waits for the socket, else -1 with l->error set. */
static int settle_result(tls_link *l, int ret, short *events)
{
    int saved_errno = errno;
    switch (SSL_get_error(l->ssl, ret)) {
    case SSL_ERROR_WANT_READ:
        *events = POLLIN;
        return 0;
    case SSL_ERROR_WANT_WRITE:
        *events = POLLOUT;
        return 0;
    case SSL_ERROR_ZERO_RETURN:
        snprintf(l->error, sizeof(l->error), "TLS: Redis closed the connection");
        break;
    case SSL_ERROR_SYSCALL:
        snprintf(l->error, sizeof(l->error), "TLS: %s",
                 saved_errno ? strerror(saved_errno) : "Redis closed the connection");
        break;
    default: {
        unsigned long code = ERR_peek_error();
        int reason = ERR_GET_LIB(code) == ERR_LIB_SSL ? ERR_GET_REASON(code) : 0;
        if (reason == SSL_R_CERTIFICATE_VERIFY_FAILED && verify_failure(l))
            break;
        if (reason == SSL_R_UNEXPECTED_EOF_WHILE_READING) {
            snprintf(l->error, sizeof(l->error), "TLS: Redis closed the connection");
            break;
        }
        const char *why = code ? ERR_reason_error_string(code) : NULL;
        snprintf(l->error, sizeof(l->error), "TLS: %s%s", why ? why : "protocol error",
                 hint(reason));
        break;
    }
    }
    ERR_clear_error();
    l->fatal = 1;
    return -1;
}

int tls_link_handshake(tls_link *l, short *events)
{
    if (l->up)
        return 1;
    ERR_clear_error();
    errno = 0;
    int ret = SSL_do_handshake(l->ssl);
    if (ret == 1) {
        l->up = 1;
        return 1;
    }
    return settle_result(l, ret, events);
}

/* After a write found the connection cut: Redis may have said why before
 * it cut it (an alert after the handshake: no client certificate, or one
 * it refused), unread yet. When it did, that is the link's error. */
static void read_why_cut(tls_link *l)
{
    char b, cut[sizeof(l->error)];
    short events;
    memcpy(cut, l->error, sizeof(cut));
    ERR_clear_error();
    int ret = SSL_read(l->ssl, &b, 1);
    unsigned long code = ERR_peek_error();
    if (ret > 0 || SSL_get_error(l->ssl, ret) != SSL_ERROR_SSL ||
        ERR_GET_LIB(code) != ERR_LIB_SSL || !hint(ERR_GET_REASON(code))[0]) {
        ERR_clear_error();
        memcpy(l->error, cut, sizeof(cut));
        return;
    }
    settle_result(l, ret, &events);
}

ssize_t tls_link_write(tls_link *l, const char *buf, size_t len, short *events)
{
    /* Always the same length for the same bytes: a write that waited
     * must be asked again with at least as many. */
    int n = len > INT_MAX ? INT_MAX : (int)len;
    ERR_clear_error();
    errno = 0;
    int ret = SSL_write(l->ssl, buf, n);
    if (ret > 0)
        return ret;
    int kind = SSL_get_error(l->ssl, ret);
    if (settle_result(l, ret, events) == 0)
        return 0;
    if (kind == SSL_ERROR_SYSCALL)
        read_why_cut(l);
    return -1;
}

ssize_t tls_link_read(tls_link *l, char *buf, size_t len, short *events)
{
    ERR_clear_error();
    errno = 0;
    int ret = SSL_read(l->ssl, buf, len > INT_MAX ? INT_MAX : (int)len);
    return ret > 0 ? ret : settle_result(l, ret, events);
}

int tls_link_idle_fit(tls_link *l)
{
    char b;
    short events;
    if (l->fatal)
        return 0;
    ERR_clear_error();
    errno = 0;
    int ret = SSL_peek(l->ssl, &b, 1);
    if (ret > 0)
        return 0;
    return settle_result(l, ret, &events) == 0 && events == POLLIN;
}
