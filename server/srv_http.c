/*
 * srv_http.c - libmicrohttpd integration; see srv_http.h.
 *
 * MHD runs its own thread pool with epoll. Suspend/resume is enabled so a
 * synchronous fit does not hold an HTTP thread: the request is parked on
 * its job and the worker resumes the connection when the job ends.
 *
 * Thread-safety: see srv_http.h.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>

#include "srv_clock.h"
#include "srv_http.h"
#include "srv_log.h"
#include "srv_routes.h"

const char *srv_header(srv_request *rq, const char *name)
{
    return MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, name);
}

void srv_reply_text(srv_reply *rp, int status, char *text, size_t len)
{
    static const char oom[] = "{\"error\":{\"code\":\"internal\","
                              "\"message\":\"out of memory\"}}";
    free(rp->body);
    rp->status = text ? status : 500;
    rp->body = text ? text : strdup(oom);
    rp->len = text ? len : rp->body ? strlen(rp->body) : 0;
    rp->content_type = "application/json";
}

void srv_reply_json(srv_reply *rp, int status, cJSON *obj)
{
    char *text = obj ? cJSON_PrintUnformatted(obj) : NULL;
    cJSON_Delete(obj);
    srv_reply_text(rp, status, text, text ? strlen(text) : 0);
}

void srv_reply_error(srv_reply *rp, const api_error *e)
{
    char *text = api_error_json(e);
    srv_reply_text(rp, e->http, text, text ? strlen(text) : 0);
}

void srv_reply_fail(srv_reply *rp, int status, const char *code,
                    const char *fmt, ...)
{
    api_error e = {status, code, ""};
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e.message, sizeof e.message, fmt, ap);
    va_end(ap);
    srv_reply_error(rp, &e);
}

/* ------------------------------------------------------------- parking */

void srv_http_job_done(srv_job *job, void *arg)
{
    srv_request *rq = arg;
    (void)job;
    pthread_mutex_lock(&rq->lock);
    rq->job_done = 1;
    struct MHD_Connection *conn = rq->suspended ? rq->conn : NULL;
    pthread_mutex_unlock(&rq->lock);
    /* Resume only after unlocking, and touch rq no more: once resumed, an
     * MHD thread may answer and free the request at any moment. Until
     * then the suspended connection keeps rq alive. */
    if (conn)
        MHD_resume_connection(conn);
}

void srv_park(srv_request *rq, srv_reply *rp, srv_job *job)
{
    rq->job = job;
    pthread_mutex_lock(&rq->lock);
    if (!rq->job_done) {
        MHD_suspend_connection(rq->conn);
        rq->suspended = 1;
        rp->status = 0;
    }
    pthread_mutex_unlock(&rq->lock);
    if (rp->status == 0 && rq->suspended)
        return;
    srv_fit_finished(rq, rp); /* it finished before we could park */
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
    snprintf(rq->method, sizeof rq->method, "%s", method);
    snprintf(rq->path, sizeof rq->path, "%s", url);
    const char *given = srv_header(rq, "X-Request-Id");
    if (given && valid_request_id(given)) {
        snprintf(rq->id, sizeof rq->id, "%s", given);
    } else {
        snprintf(rq->id, sizeof rq->id, "%016llx", (unsigned long long)new_id());
    }
    rq->route = srv_route_match(url, rq->param, sizeof rq->param);
    atomic_fetch_add(&s->active_requests, 1);
    return rq;
}

static void request_free(srv_request *rq)
{
    if (rq->job)
        srv_job_release(rq->job);
    pthread_mutex_destroy(&rq->lock);
    free(rq->body);
    free(rq);
}

static enum MHD_Result send_reply(srv_request *rq, srv_reply *rp)
{
    struct MHD_Response *resp = MHD_create_response_from_buffer(
        rp->len, rp->body ? rp->body : (void *)"", rp->body
                                                     ? MHD_RESPMEM_MUST_FREE
                                                     : MHD_RESPMEM_PERSISTENT);
    if (!resp) {
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
    if (rp->allow[0])
        MHD_add_response_header(resp, "Allow", rp->allow);
    if (rp->www_authenticate[0])
        MHD_add_response_header(resp, "WWW-Authenticate", rp->www_authenticate);
    enum MHD_Result r = MHD_queue_response(rq->conn, (unsigned)rp->status,
                                           resp);
    MHD_destroy_response(resp);
    rq->answered = 1;
    rq->status = rp->status;
    rq->bytes_out = rp->len;
    return r;
}

/* Checks that can be made from the headers alone. 0 = go on. */
static int refuse_early(srv_request *rq, const srv_route *route, srv_reply *rp)
{
    srv_handler h = NULL;
    int is_get = !strcmp(rq->method, "GET") || !strcmp(rq->method, "HEAD");
    if (!route) {
        srv_reply_fail(rp, 404, "not_found", "no route for %s %s; see GET /v1",
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
        srv_reply_fail(rp, 405, "method_not_allowed",
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
    size_t n = strlen("application/json");
    if (!ct || strncasecmp(ct, "application/json", n) ||
        (ct[n] && ct[n] != ';' && ct[n] != ' ')) {
        srv_reply_fail(rp, 415, "unsupported_media_type",
                       "Content-Type must be application/json, not %s",
                       ct ? ct : "missing");
        return 1;
    }
    const char *cl = srv_header(rq, "Content-Length");
    const char *te = srv_header(rq, "Transfer-Encoding");
    double limit = rq->s->cfg.max_body_mb * 1048576.0;
    if (!cl && !(te && strcasestr(te, "chunked"))) {
        srv_reply_fail(rp, 411, "length_required",
                       "a POST needs a Content-Length or chunked encoding");
        return 1;
    }
    if (cl) {
        char *end;
        double v = strtod(cl, &end);
        if (end == cl || v < 0 || v > limit) {
            srv_reply_fail(rp, 413, "payload_too_large",
                           "the body (Content-Length %.40s) is over the limit "
                           "of %.0f bytes (--max-body-mb)", cl, limit);
            return 1;
        }
        rq->announced = (size_t)v;
    }
    return 0;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn,
                                  const char *url, const char *method,
                                  const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls)
{
    srv_state *s = cls;
    srv_request *rq = *con_cls;
    srv_reply rp = {0};
    (void)version;

    if (!rq) {
        rq = request_new(s, conn, url, method);
        if (!rq)
            return MHD_NO;
        *con_cls = rq;
        if (refuse_early(rq, srv_route_at(rq->route), &rp))
            return send_reply(rq, &rp);
        return MHD_YES;
    }
    if (rq->answered)
        return MHD_YES; /* the rest of a refused body: discard */
    if (*upload_size) {
        size_t limit = (size_t)(s->cfg.max_body_mb * 1048576.0);
        size_t n = *upload_size;
        *upload_size = 0;
        if (rq->too_large || rq->len + n > limit) {
            rq->too_large = 1;
            return MHD_YES;
        }
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
    if (rq->job) { /* resumed: the parked fit has finished */
        srv_fit_finished(rq, &rp);
        return send_reply(rq, &rp);
    }
    if (rq->too_large) {
        srv_reply_fail(&rp, 413, "payload_too_large",
                       "the body is over the limit of %.0f bytes "
                       "(--max-body-mb)", s->cfg.max_body_mb * 1048576.0);
        return send_reply(rq, &rp);
    }
    const srv_route *route = srv_route_at(rq->route);
    srv_handler h = !strcmp(method, "POST")     ? route->post
                    : !strcmp(method, "DELETE") ? route->del
                                                : route->get;
    h(rq, &rp);
    if (rp.status == 0)
        return MHD_YES; /* parked */
    return send_reply(rq, &rp);
}

static void on_completed(void *cls, struct MHD_Connection *conn,
                         void **con_cls, enum MHD_RequestTerminationCode why)
{
    srv_state *s = cls;
    srv_request *rq = *con_cls;
    (void)conn;
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

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    char msg[512];
    (void)cls;
    vsnprintf(msg, sizeof msg, fmt, ap);
    msg[strcspn(msg, "\n")] = '\0';
    srv_log(SRV_WARN, "http", "%s", msg);
}

struct MHD_Daemon *srv_http_start(srv_state *s, char *err, size_t errlen)
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
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL |
                     MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG |
                     MHD_USE_ITC;
    if (ai->ai_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    if (s->tls_cert)
        flags |= MHD_USE_TLS;
    struct MHD_Daemon *d = MHD_start_daemon(
        flags, 0, NULL, NULL, on_request, s,
        MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL, /* first, or MHD warns */
        MHD_OPTION_SOCK_ADDR, ai->ai_addr,
        MHD_OPTION_THREAD_POOL_SIZE, (unsigned)s->cfg.http_threads,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)s->cfg.connection_timeout,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)s->cfg.max_connections,
        /* MHD clears this pool between requests on a connection: 64 KiB
         * holds any sane header block, and bodies go to our own buffer. */
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(64 * 1024),
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
        MHD_OPTION_UNESCAPE_CALLBACK, srv_route_unescape, NULL, /* keeps %00 */
        /* the TLS options last: without TLS they end the list */
        s->tls_cert ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, s->tls_cert,
        MHD_OPTION_HTTPS_MEM_KEY, s->tls_key,
        MHD_OPTION_END);
    freeaddrinfo(ai);
    if (!d)
        snprintf(err, errlen, "cannot listen on %s (in use, or not an address "
                 "of this machine?)", s->cfg.listen);
    return d;
}
