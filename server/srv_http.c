/*
 * srv_http.c - libmicrohttpd integration; see srv_http.h.
 *
 * MHD runs its own thread pool with epoll. Suspend/resume is enabled so
 * long work (a synchronous fit) does not hold an HTTP thread: the handler
 * parks the request with a continuation (srv_request.h), and the call
 * after the resume runs it.
 *
 * What MHD 0.9.75 does not guard against is guarded here: ambiguous
 * request framing (framing_error), a chunked body past the limit (answered
 * mid-body, refuse_mid_body), and slow, half-closed and idle connections
 * (the connection table and its sweeper thread).
 *
 * Thread-safety: see srv_http.h.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>

#include <microhttpd.h>

#include "../api/api_transfer.h"
#include "srv_clock.h"
#include "srv_http.h"
#include "srv_log.h"
#include "srv_request.h"
#include "srv_routes.h"

/* ------------------------------------------------------------- connections
 *
 * libmicrohttpd has one timeout, for idle time, and one limit, on the
 * connections open. A client that trickles a header byte every few
 * seconds is never idle, and enough such clients fill the limit. So every
 * connection has an entry in this table, in one of these states:
 *
 *   WAITING  for a request's headers, since the connection opened or its
 *            previous request ended; deadline --header-timeout.
 *   BODY     headers in, body not complete; deadline --body-timeout (or
 *            LINGER seconds once a 413 was written in the middle of it).
 *   BUSY     being handled, parked, or being answered: no
 *            deadline of ours (MHD's idle timeout still applies).
 *   DEAD     shut down by us; MHD notices and closes it.
 *
 * The sweeper thread wakes every SWEEP_MS and shuts down (shutdown(2),
 * both ways) every WAITING or BODY connection past its deadline, and every
 * one whose peer has half-closed, with nothing left unread, for
 * HALF_CLOSE_GRACE seconds without progress. (MHD 0.9.75 with epoll misses
 * a FIN that arrives together with the last data: a short read clears its
 * read-ready flag and the edge-triggered epoll does not fire again, so
 * such a connection would wait for the idle timeout.)
 *
 * The reserve: at most max_connections - reserve connections may be
 * WAITING at once, reserve = max_connections / 8, at least 1 when
 * max_connections >= 2. A new connection past that shuts down the WAITING
 * one that has waited longest (a slow client or an idle keep-alive one).
 * Connections past their headers are never shut down to make room. So
 * slow or idle connections, however many, cannot keep a well-behaved
 * client from being accepted and answered.
 *
 * The WAITING and BODY lists are in the order entries joined them, so the
 * head of WAITING is the one that has waited longest.
 *
 * An fd is touched only under the table's lock, and MHD's close
 * notification takes that lock and unlinks the entry before MHD closes the
 * fd: no fd is shut down after it was closed (or reused).
 */

/* The grace after a half-close spans one sweep: MHD reads a connection's
 * bytes and hands them on in one step, so an entry still WAITING or BODY,
 * with nothing unread and no progress a sweep later, has nothing coming. */
#define SWEEP_MS 100
#define HALF_CLOSE_GRACE 0.09
#define LINGER 1.0

enum { CONN_WAITING, CONN_BODY, CONN_BUSY, CONN_DEAD };

typedef struct conn_list {
    srv_conn *head, *tail;
    size_t n;
} conn_list;

struct srv_conn {
    srv_conn *prev, *next;   /* on its state's list (WAITING, BODY only) */
    int fd;
    int state;
    double deadline;         /* WAITING, BODY */
    unsigned long progress;  /* body chunks received */
    unsigned long seen;      /* progress when hup_since was set */
    double hup_since;        /* 0, or when a half-close was first seen */
};

struct srv_http {
    struct MHD_Daemon *d;
    srv_state *s;
    pthread_mutex_t lock;    /* the lists, every entry's fields */
    pthread_cond_t wake;
    conn_list waiting, body;
    size_t max_waiting;
    int stop;
    pthread_t sweeper;
};

static conn_list *list_of(srv_http *h, int state)
{
    return state == CONN_WAITING ? &h->waiting
           : state == CONN_BODY  ? &h->body
                                 : NULL;
}

static void unlink_conn(srv_http *h, srv_conn *c)
{
    conn_list *l = list_of(h, c->state);
    if (!l)
        return;
    if (c->prev)
        c->prev->next = c->next;
    else
        l->head = c->next;
    if (c->next)
        c->next->prev = c->prev;
    else
        l->tail = c->prev;
    c->prev = c->next = NULL;
    l->n--;
}

/* Moves c to state with a deadline `timeout` seconds on. Under the lock.
 * A DEAD entry stays dead. */
static void move_conn(srv_http *h, srv_conn *c, int state, double timeout)
{
    if (c->state == CONN_DEAD)
        return;
    unlink_conn(h, c);
    c->state = state;
    c->deadline = srv_mono() + timeout;
    c->hup_since = 0;
    conn_list *l = list_of(h, state);
    if (!l)
        return;
    c->prev = l->tail;
    if (l->tail)
        l->tail->next = c;
    else
        l->head = c;
    l->tail = c;
    l->n++;
}

/* Under the lock. */
static void kill_conn(srv_http *h, srv_conn *c, const char *why)
{
    unlink_conn(h, c);
    c->state = CONN_DEAD;
    shutdown(c->fd, SHUT_RDWR);
    srv_log(SRV_DEBUG, "connection_closed", "fd %d: %s", c->fd, why);
}

static srv_conn *conn_of(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

/* A request's step: sc may be NULL (its entry could not be allocated). */
static void conn_step(srv_http *h, srv_conn *sc, int state, double timeout)
{
    if (!sc)
        return;
    pthread_mutex_lock(&h->lock);
    move_conn(h, sc, state, timeout);
    pthread_mutex_unlock(&h->lock);
}

static void on_connection(void *cls, struct MHD_Connection *conn,
                          void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
    srv_http *h = cls;
    srv_conn *c = *socket_context;
    if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
        if (!c)
            return;
        pthread_mutex_lock(&h->lock);
        unlink_conn(h, c);
        pthread_mutex_unlock(&h->lock);
        free(c);
        *socket_context = NULL;
        return;
    }
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!ci || !(c = calloc(1, sizeof *c)))
        return; /* untracked: only MHD's idle timeout holds it */
    c->fd = ci->connect_fd;
    c->state = CONN_BUSY;
    pthread_mutex_lock(&h->lock);
    move_conn(h, c, CONN_WAITING, h->s->cfg.header_timeout);
    while (h->waiting.n > h->max_waiting && h->waiting.head != c)
        kill_conn(h, h->waiting.head, "waited longest for its headers, "
                  "and the reserve is reached");
    pthread_mutex_unlock(&h->lock);
    *socket_context = c;
}

/* One pass of the sweeper, under the lock. pf and pc hold room for every
 * WAITING and BODY entry, or are NULL (then no half-close check). */
static void sweep(srv_http *h, struct pollfd *pf, srv_conn **pc)
{
    double now = srv_mono();
    size_t k = 0;
    conn_list *lists[2] = {&h->waiting, &h->body};
    for (int i = 0; i < 2; i++) {
        for (srv_conn *c = lists[i]->head, *next; c; c = next) {
            next = c->next;
            if (now >= c->deadline) {
                kill_conn(h, c, i == 0 ? "headers past --header-timeout"
                                       : "body past --body-timeout");
            } else if (pf) {
                pf[k].fd = c->fd;
                pf[k].events = POLLRDHUP;
                pf[k].revents = 0;
                pc[k++] = c;
            }
        }
    }
    if (!k || poll(pf, k, 0) <= 0)
        return;
    for (size_t i = 0; i < k; i++) {
        srv_conn *c = pc[i];
        int unread = 0;
        if (!(pf[i].revents & (POLLRDHUP | POLLHUP | POLLERR)) ||
            ioctl(c->fd, FIONREAD, &unread) != 0 || unread > 0) {
            c->hup_since = 0;
        } else if (!c->hup_since || c->progress != c->seen) {
            c->hup_since = now;
            c->seen = c->progress;
        } else if (now - c->hup_since >= HALF_CLOSE_GRACE) {
            kill_conn(h, c, "the peer closed with the request incomplete");
        }
    }
}

static void *sweeper(void *arg)
{
    srv_http *h = arg;
    struct pollfd *pf = NULL;
    srv_conn **pc = NULL;
    size_t cap = 0;
    pthread_mutex_lock(&h->lock);
    while (!h->stop) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_nsec += SWEEP_MS * 1000000L;
        ts.tv_sec += ts.tv_nsec / 1000000000L;
        ts.tv_nsec %= 1000000000L;
        pthread_cond_timedwait(&h->wake, &h->lock, &ts);
        if (h->stop)
            break;
        size_t n = h->waiting.n + h->body.n;
        if (n > cap) {
            struct pollfd *p2 = realloc(pf, n * sizeof *pf);
            if (p2)
                pf = p2;
            srv_conn **c2 = p2 ? realloc(pc, n * sizeof *pc) : NULL;
            if (c2)
                pc = c2;
            if (p2 && c2)
                cap = n;
        }
        int room = n <= cap;
        sweep(h, room ? pf : NULL, room ? pc : NULL);
    }
    pthread_mutex_unlock(&h->lock);
    free(pf);
    free(pc);
    return NULL;
}

/* ------------------------------------------------------------- requests */

/* Request ids: a per-thread xorshift64* generator seeded once from
 * getrandom, instead of a system call per request. Unique enough to find a
 * request in the logs; not a secret. */
static unsigned long long new_id(void)
{
    static _Thread_local unsigned long long state;
    if (!state) {
        if (getrandom(&state, sizeof state, 0) != (ssize_t)sizeof state ||
            !state) {
            double t = srv_mono();
            memcpy(&state, &t, sizeof state);
            state ^= (unsigned long long)(uintptr_t)&state;
            state |= 1;
        }
    }
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    return state * 0x2545F4914F6CDD1DULL;
}

static int valid_request_id(const char *s)
{
    size_t n = strlen(s);
    if (n < 1 || n > 64)
        return 0;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && !strchr("-_.:", *s))
            return 0;
    return 1;
}

/* src into dst (cap bytes), cut to fit: without printf, which showed in
 * the profile of single-row predicts. */
static void copy_text(char *dst, size_t cap, const char *src)
{
    size_t n = strnlen(src, cap - 1);
    memcpy(dst, src, n);
    dst[n] = '\0';
}

/* v as 16 lower-case hex digits (as "%016llx"). */
static void hex_id(char *dst, unsigned long long v)
{
    static const char hex[] = "0123456789abcdef";
    for (int i = 15; i >= 0; i--, v >>= 4)
        dst[i] = hex[v & 15];
    dst[16] = '\0';
}

static srv_request *request_new(srv_state *s, struct MHD_Connection *conn,
                                const char *url, const char *method)
{
    srv_request *rq = calloc(1, sizeof *rq);
    if (!rq)
        return NULL;
    rq->s = s;
    rq->conn = conn;
    rq->start = srv_mono();
    pthread_mutex_init(&rq->lock, NULL);
    copy_text(rq->method, sizeof rq->method, method);
    copy_text(rq->path, sizeof rq->path, url);
    const char *given = srv_header(rq, "X-Request-Id");
    if (given && valid_request_id(given))
        copy_text(rq->id, sizeof rq->id, given);
    else
        hex_id(rq->id, new_id());
    rq->route = srv_route_match(url, rq->param, sizeof rq->param,
                                 rq->version, sizeof rq->version);
    atomic_fetch_add(&s->active_requests, 1);
    return rq;
}

static void request_free(srv_request *rq)
{
    srv_request_end(rq);
    pthread_mutex_destroy(&rq->lock);
    free(rq->body);
    free(rq);
}

static enum MHD_Result send_reply(srv_request *rq, srv_reply *rp)
{
    struct MHD_Response *resp = MHD_create_response_from_buffer(
        rp->len, rp->body ? rp->body : (void *)"",
        rp->body && !rp->persistent ? MHD_RESPMEM_MUST_FREE
                                    : MHD_RESPMEM_PERSISTENT);
    if (!resp) {
        if (!rp->persistent)
            free(rp->body);
        return MHD_NO;
    }
    rp->body = NULL; /* owned by the response now */
    MHD_add_response_header(resp, "Content-Type",
                            rp->content_type ? rp->content_type
                                             : "application/json");
    MHD_add_response_header(resp, "X-Request-Id", rq->id);
    MHD_add_response_header(resp, "Cache-Control", "no-store");
    if (rp->location[0])
        MHD_add_response_header(resp, "Location", rp->location);
    if (rp->header_len) {
        char n[24];
        snprintf(n, sizeof n, "%zu", rp->header_len);
        MHD_add_response_header(resp, "Inference-Header-Content-Length", n);
    }
    if (rp->allow[0])
        MHD_add_response_header(resp, "Allow", rp->allow);
    if (rp->www_authenticate[0])
        MHD_add_response_header(resp, "WWW-Authenticate", rp->www_authenticate);
    if (rp->close)
        MHD_add_response_header(resp, "Connection", "close");
    if (rp->csp) {
        MHD_add_response_header(resp, "Content-Security-Policy", rp->csp);
        MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
        MHD_add_response_header(resp, "Referrer-Policy", "no-referrer");
    }
    enum MHD_Result r = MHD_queue_response(rq->conn, (unsigned)rp->status,
                                           resp);
    MHD_destroy_response(resp);
    rq->answered = 1;
    rq->status = rp->status;
    rq->bytes_out = rp->len;
    return r;
}

typedef struct framing {
    int n_length, n_coding, bad_name;
    const char *coding;
} framing;

static enum MHD_Result count_framing(void *cls, enum MHD_ValueKind kind,
                                     const char *key, const char *value)
{
    framing *f = cls;
    (void)kind;
    (void)value;
    if (!strcasecmp(key, "Content-Length"))
        f->n_length++;
    if (!strcasecmp(key, "Transfer-Encoding")) {
        f->n_coding++;
        f->coding = value ? value : "";
    }
    if (!*key || key[strcspn(key, " \t")])
        f->bad_name = 1;
    return MHD_YES;
}

/* RFC 9112 section 6: every party on a request's path must read its body
 * length the same way, or bytes one takes for body another takes for the
 * next request (request smuggling). MHD lets Transfer-Encoding win over
 * Content-Length, takes the first of several Content-Length headers, and
 * reads a body of any coding but exactly "chunked" until the client
 * closes. Each of those is refused here, before any of the body is read;
 * MHD itself refuses a Content-Length that is not a decimal number.
 * Returns 0, or 1 with the reason in msg. */
static int framing_error(struct MHD_Connection *conn, const char *version,
                         char *msg, size_t len)
{
    framing f = {0};
    MHD_get_connection_values(conn, MHD_HEADER_KIND, count_framing, &f);
    if (f.bad_name)
        snprintf(msg, len, "a header name is empty or has white space");
    else if (f.n_coding && f.n_length)
        snprintf(msg, len, "a request may have Content-Length or "
                 "Transfer-Encoding, not both");
    else if (f.n_length > 1)
        snprintf(msg, len, "a request may have one Content-Length header, "
                 "not %d", f.n_length);
    else if (f.n_coding > 1)
        snprintf(msg, len, "a request may have one Transfer-Encoding header, "
                 "not %d", f.n_coding);
    else if (f.n_coding && strcasecmp(f.coding, "chunked"))
        snprintf(msg, len, "Transfer-Encoding must be chunked, not '%.60s'",
                 f.coding);
    else if (f.n_coding && strcmp(version, MHD_HTTP_VERSION_1_1))
        snprintf(msg, len, "Transfer-Encoding needs HTTP/1.1, not %.16s",
                 version);
    else
        return 0;
    return 1;
}

/* Checks that can be made from the headers alone. 0 = go on. */
static int refuse_early(srv_request *rq, const srv_route *route, srv_reply *rp)
{
    srv_handler h = NULL;
    int is_get = !strcmp(rq->method, "GET") || !strcmp(rq->method, "HEAD");
    if (!route) {
        srv_reply_fail(rp, API_NOT_FOUND, "no route for %s %s; see GET /v1",
                       rq->method, rq->path);
        return 1;
    }
    if (is_get)
        h = route->get;
    else if (!strcmp(rq->method, "POST"))
        h = route->post;
    else if (!strcmp(rq->method, "DELETE"))
        h = route->del;
    if (!h) {
        srv_route_allow(route, rp->allow, sizeof rp->allow);
        srv_reply_fail(rp, API_METHOD_NOT_ALLOWED,
                       "%s is not allowed on %s; allowed: %s", rq->method,
                       route->pattern, rp->allow);
        return 1;
    }
    srv_scope need = is_get ? route->get_scope
                     : !strcmp(rq->method, "POST") ? route->post_scope
                                                   : route->del_scope;
    if (rq->route == srv_metrics_route() && !rq->s->cfg.protect_metrics)
        need = SRV_SCOPE_OPEN;
    api_error e;
    if (srv_auth_check(rq->s->auth, srv_header(rq, "Authorization"), need,
                       &e)) {
        if (e.http == 401)
            snprintf(rp->www_authenticate, sizeof rp->www_authenticate,
                     "Bearer realm=\"kmserve\"");
        srv_reply_error(rp, &e);
        return 1;
    }
    if (strcmp(rq->method, "POST") || !route->body)
        return 0;
    const char *ct = srv_header(rq, "Content-Type");
    int binary = route->body == SRV_BODY_TENSORS &&
                 srv_header(rq, "Inference-Header-Content-Length");
    if (route->body == SRV_BODY_MODEL
            ? !api_media_is(ct, API_MEDIA_LIBSVM) &&
                  !api_media_is(ct, API_MEDIA_KMM)
            : !api_media_is(ct, "application/json") &&
                  !(binary && api_media_is(ct, "application/octet-stream"))) {
        srv_reply_fail(rp, API_UNSUPPORTED_MEDIA_TYPE,
                       "Content-Type must be %s, not %s",
                       route->body == SRV_BODY_MODEL
                           ? "text/plain (a LIBSVM model file) or "
                             "application/octet-stream (a kmserve model file)"
                       : binary ? "application/json or (with "
                                  "Inference-Header-Content-Length) "
                                  "application/octet-stream"
                                : "application/json",
                       ct ? ct : "missing");
        return 1;
    }
    /* framing_error has left one Content-Length of digits only, or
     * Transfer-Encoding: chunked, or neither. */
    const char *cl = srv_header(rq, "Content-Length");
    const char *te = srv_header(rq, "Transfer-Encoding");
    double limit = rq->s->cfg.max_body_mb * 1048576.0;
    if (!cl && !te) {
        srv_reply_fail(rp, API_LENGTH_REQUIRED,
                       "a POST needs a Content-Length or chunked encoding");
        return 1;
    }
    if (cl) {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(cl, &end, 10);
        if (end == cl || *end || errno || (double)v > limit) {
            srv_reply_fail(rp, API_PAYLOAD_TOO_LARGE,
                           "the body (Content-Length %.40s) is over the limit "
                           "of %.0f bytes (--max-body-mb)", cl, limit);
            return 1;
        }
        rq->announced = (size_t)v;
    }
    return 0;
}

/* A body past --max-body-mb while it is being received (chunked: its size
 * is not known before). MHD 0.9.75 queues a response only before the body
 * or after all of it, and reading all of it is what a hostile client
 * wants. So the 413 is written on the socket here, directly (MHD has
 * written nothing for this request, and writes nothing before the final
 * call), the sending side is shut, and what the client sends meanwhile is
 * discarded for LINGER seconds so it can read the answer before the
 * connection is closed (closing with data unread resets the connection,
 * which may destroy the answer in flight). With TLS the socket cannot be
 * written past MHD: the connection is closed without an answer. 0 =
 * answered; -1 = close now. */
static int refuse_mid_body(srv_http *h, srv_request *rq)
{
    double limit = h->s->cfg.max_body_mb * 1048576.0;
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(rq->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    rq->answered = 1;
    rq->status = 413;
    if (h->s->tls_cert || !ci)
        return -1;
    srv_reply rp = {0};
    rp.plain_errors = srv_route_plain_errors(rq->path);
    srv_reply_fail(&rp, API_PAYLOAD_TOO_LARGE, "the body is over the "
                   "limit of %.0f bytes (--max-body-mb)", limit);
    char head[512];
    int n = snprintf(head, sizeof head, "HTTP/1.1 %d %s\r\n"
                     "Content-Type: application/json\r\n"
                     "Content-Length: %zu\r\nX-Request-Id: %s\r\n"
                     "Cache-Control: no-store\r\nConnection: close\r\n\r\n",
                     rp.status, rp.status == 413 ? "Content Too Large"
                                                 : "Internal Server Error",
                     rp.len, rq->id);
    int fd = ci->connect_fd;
    int ok = send(fd, head, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT |
                  MSG_MORE) == n &&
             send(fd, rp.body, rp.len, MSG_NOSIGNAL | MSG_DONTWAIT) ==
                 (ssize_t)rp.len;
    rq->status = rp.status;
    rq->bytes_out = rp.len;
    free(rp.body);
    shutdown(fd, SHUT_WR);
    if (!ok)
        return -1;
    rq->linger_until = srv_mono() + LINGER;
    conn_step(h, rq->sc, CONN_BODY, LINGER);
    return 0;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn,
                                  const char *url, const char *method,
                                  const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls)
{
    srv_http *h = cls;
    srv_state *s = h->s;
    srv_request *rq = *con_cls;
    srv_reply rp = {0};
    char why[160];
    rp.plain_errors = srv_route_plain_errors(url);

    if (!rq) {
        rq = request_new(s, conn, url, method);
        if (!rq)
            return MHD_NO;
        *con_cls = rq;
        rq->sc = conn_of(conn);
        if (framing_error(conn, version, why, sizeof why)) {
            srv_reply_fail(&rp, API_BAD_REQUEST, "%s", why);
            rp.close = 1;
        } else {
            refuse_early(rq, srv_route_at(rq->route), &rp);
        }
        if (rp.status) {
            conn_step(h, rq->sc, CONN_BUSY, 0);
            return send_reply(rq, &rp);
        }
        conn_step(h, rq->sc, CONN_BODY, s->cfg.body_timeout);
        return MHD_YES;
    }
    if (rq->linger_until) { /* 413 written mid-body: discard, then close */
        size_t n = *upload_size;
        *upload_size = 0;
        return n && srv_mono() < rq->linger_until ? MHD_YES : MHD_NO;
    }
    if (rq->answered)
        return MHD_YES; /* the rest of a refused body: discard */
    if (*upload_size) {
        size_t limit = (size_t)(s->cfg.max_body_mb * 1048576.0);
        size_t n = *upload_size;
        *upload_size = 0;
        if (rq->sc) {
            pthread_mutex_lock(&h->lock);
            rq->sc->progress++;
            pthread_mutex_unlock(&h->lock);
        }
        if (rq->len + n > limit)
            return refuse_mid_body(h, rq) ? MHD_NO : MHD_YES;
        if (rq->too_large)
            return MHD_YES;
        if (rq->len + n + 1 > rq->cap) {
            /* The first buffer is the body's announced size, up to 64 KiB
             * (a predict's few hundred bytes, not 64 KiB: glibc's free of
             * a chunk that large consolidates its heap each time); past
             * that, doubling, so a false Content-Length costs little. */
            size_t cap = rq->cap ? rq->cap
                         : rq->announced && rq->announced < 65536
                             ? rq->announced + 1 : 65536;
            while (cap < rq->len + n + 1)
                cap *= 2;
            if (cap > limit + 1)
                cap = limit + 1;
            char *b = realloc(rq->body, cap);
            if (!b) {
                rq->too_large = 1;
                return MHD_YES;
            }
            rq->body = b;
            rq->cap = cap;
        }
        memcpy(rq->body + rq->len, upload, n);
        rq->len += n;
        rq->body[rq->len] = '\0';
        return MHD_YES;
    }
    conn_step(h, rq->sc, CONN_BUSY, 0); /* the whole body is in */
    if (rq->cont.answer) { /* resumed: the work it was parked on is done */
        srv_request_resume(rq, &rp);
        return send_reply(rq, &rp);
    }
    if (rq->too_large) {
        srv_reply_fail(&rp, API_PAYLOAD_TOO_LARGE,
                       "the body is over the limit of %.0f bytes "
                       "(--max-body-mb)", s->cfg.max_body_mb * 1048576.0);
        return send_reply(rq, &rp);
    }
    const srv_route *route = srv_route_at(rq->route);
    srv_handler handler = !strcmp(method, "POST")     ? route->post
                          : !strcmp(method, "DELETE") ? route->del
                                                      : route->get;
    handler(rq, &rp);
    if (rp.status == 0)
        return MHD_YES; /* parked */
    return send_reply(rq, &rp);
}

static void on_completed(void *cls, struct MHD_Connection *conn,
                         void **con_cls, enum MHD_RequestTerminationCode why)
{
    srv_http *h = cls;
    srv_state *s = h->s;
    srv_request *rq = *con_cls;
    /* Waiting for the next request on this connection, if it stays. */
    conn_step(h, conn_of(conn), CONN_WAITING, s->cfg.header_timeout);
    if (!rq)
        return;
    double t = srv_mono() - rq->start;
    int status = rq->answered ? rq->status : 499; /* client went away */
    if (why != MHD_REQUEST_TERMINATED_COMPLETED_OK && rq->answered &&
        why != MHD_REQUEST_TERMINATED_CLIENT_ABORT)
        srv_log(SRV_DEBUG, "request_terminated", "request %s ended with "
                "code %d", rq->id, (int)why);
    srv_metrics_request(s->metrics, rq->route, rq->method, status, t);
    if (s->cfg.access_log)
        srv_log_access(rq->id, rq->method, rq->path, status, t, rq->len,
                       rq->bytes_out);
    request_free(rq);
    *con_cls = NULL;
    atomic_fetch_sub(&s->active_requests, 1);
}

/* A listening socket on ai, bound here rather than by libmicrohttpd so a
 * failure is one clear message ("Address already in use") instead of
 * MHD's "Failed to bind to port 0" first. -1 with err filled on failure. */
static int listen_on(const struct addrinfo *ai, const char *what, char *err,
                     size_t errlen)
{
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
                    0);
    int on = 1;
    if (fd < 0 ||
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on) != 0 ||
        bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 ||
        listen(fd, SOMAXCONN) != 0) {
        snprintf(err, errlen, "cannot listen on %s: %s", what,
                 strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    char msg[512];
    (void)cls;
    vsnprintf(msg, sizeof msg, fmt, ap);
    msg[strcspn(msg, "\n")] = '\0';
    srv_log(SRV_WARN, "http", "%s", msg);
}

srv_http *srv_http_start(srv_state *s, char *err, size_t errlen)
{
    char host[256];
    const char *colon = strrchr(s->cfg.listen, ':');
    if (!colon || colon == s->cfg.listen || !colon[1]) {
        snprintf(err, errlen, "--listen must be host:port, not '%s'",
                 s->cfg.listen);
        return NULL;
    }
    snprintf(host, sizeof host, "%.*s", (int)(colon - s->cfg.listen),
             s->cfg.listen);
    if (host[0] == '[' && host[strlen(host) - 1] == ']') {
        memmove(host, host + 1, strlen(host));
        host[strlen(host) - 1] = '\0';
    }
    struct addrinfo hints = {0}, *ai = NULL;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    int rc = getaddrinfo(host, colon + 1, &hints, &ai);
    if (rc != 0) {
        snprintf(err, errlen, "cannot resolve --listen %s: %s", s->cfg.listen,
                 gai_strerror(rc));
        return NULL;
    }
    if (s->tls_cert && MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
        snprintf(err, errlen, "this libmicrohttpd has no TLS support");
        freeaddrinfo(ai);
        return NULL;
    }
    int lfd = listen_on(ai, s->cfg.listen, err, errlen);
    if (lfd < 0) {
        freeaddrinfo(ai);
        return NULL;
    }
    srv_http *h = calloc(1, sizeof *h);
    pthread_condattr_t ca;
    if (!h || pthread_condattr_init(&ca) != 0) {
        snprintf(err, errlen, "out of memory");
        free(h);
        close(lfd);
        freeaddrinfo(ai);
        return NULL;
    }
    h->s = s;
    unsigned max = (unsigned)s->cfg.max_connections;
    unsigned reserve = max < 2 ? 0 : max / 8 ? max / 8 : 1;
    h->max_waiting = max - reserve;
    pthread_mutex_init(&h->lock, NULL);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&h->wake, &ca);
    pthread_condattr_destroy(&ca);

    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL |
                     MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG |
                     MHD_USE_ITC;
    if (ai->ai_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    if (s->tls_cert)
        flags |= MHD_USE_TLS;
    h->d = MHD_start_daemon(
        flags, 0, NULL, NULL, on_request, h,
        MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL, /* first, or MHD warns */
        MHD_OPTION_LISTEN_SOCKET, (MHD_socket)lfd,
        MHD_OPTION_THREAD_POOL_SIZE, (unsigned)s->cfg.http_threads,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)s->cfg.connection_timeout,
        MHD_OPTION_CONNECTION_LIMIT, max,
        /* MHD clears this pool between requests on a connection: 64 KiB
         * holds any sane header block, and bodies go to our own buffer. */
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(64 * 1024),
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
        MHD_OPTION_NOTIFY_CONNECTION, on_connection, h,
        MHD_OPTION_UNESCAPE_CALLBACK, srv_route_unescape, NULL, /* keeps %00 */
        /* the TLS options last: without TLS they end the list */
        s->tls_cert ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, s->tls_cert,
        MHD_OPTION_HTTPS_MEM_KEY, s->tls_key,
        MHD_OPTION_END);
    freeaddrinfo(ai);
    if (!h->d) {
        snprintf(err, errlen, "cannot serve on %s (see the http log line "
                 "before)", s->cfg.listen);
        close(lfd);
    } else if (pthread_create(&h->sweeper, NULL, sweeper, h) != 0) {
        snprintf(err, errlen, "cannot start the connection sweeper");
        MHD_stop_daemon(h->d);
        h->d = NULL;
    }
    if (!h->d) {
        pthread_cond_destroy(&h->wake);
        pthread_mutex_destroy(&h->lock);
        free(h);
        return NULL;
    }
    return h;
}

unsigned srv_http_port(const srv_http *h)
{
    const union MHD_DaemonInfo *di =
        MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
    return di ? di->port : 0;
}

int srv_http_quiesce(srv_http *h)
{
    MHD_socket fd = MHD_quiesce_daemon(h->d);
    return fd == MHD_INVALID_SOCKET ? -1 : (int)fd;
}

void srv_http_stop(srv_http *h)
{
    if (!h)
        return;
    MHD_stop_daemon(h->d); /* closes every connection: the lists empty */
    pthread_mutex_lock(&h->lock);
    h->stop = 1;
    pthread_cond_signal(&h->wake);
    pthread_mutex_unlock(&h->lock);
    pthread_join(h->sweeper, NULL);
    pthread_cond_destroy(&h->wake);
    pthread_mutex_destroy(&h->lock);
    free(h);
}
