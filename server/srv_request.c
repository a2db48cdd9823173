/*
 * srv_request.c - headers, replies and parking of a request; see
 * srv_request.h.
 *
 * Parking rests on libmicrohttpd's suspend/resume: a suspended connection
 * is left alone by MHD (its request stays allocated) until it is resumed,
 * and is then handed back to its own HTTP thread, which calls the request
 * callback again and so runs the continuation (srv_http.c).
 *
 * Thread-safety: see srv_request.h.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <microhttpd.h>

#include "srv_request.h"

const char *srv_header(srv_request *rq, const char *name)
{
    return MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, name);
}

const char *srv_query(srv_request *rq, const char *name)
{
    const char *v = NULL;
    size_t n;
    if (MHD_lookup_connection_value_n(rq->conn, MHD_GET_ARGUMENT_KIND, name,
                                      strlen(name), &v, &n) != MHD_YES)
        return NULL;
    return v ? v : "";
}

typedef struct query_walk {
    int (*fn)(void *ctx, const char *name);
    void *ctx;
    int rc;
} query_walk;

static enum MHD_Result each_query(void *cls, enum MHD_ValueKind kind,
                                  const char *key, const char *value)
{
    query_walk *w = cls;
    (void)kind;
    (void)value;
    w->rc = w->fn(w->ctx, key ? key : "");
    return w->rc ? MHD_NO : MHD_YES;
}

int srv_query_each(srv_request *rq, int (*fn)(void *ctx, const char *name),
                   void *ctx)
{
    query_walk w = {fn, ctx, 0};
    MHD_get_connection_values(rq->conn, MHD_GET_ARGUMENT_KIND, each_query,
                              &w);
    return w.rc;
}

void srv_reply_bytes(srv_reply *rp, int status, char *body, size_t len,
                     const char *type)
{
    free(rp->body);
    rp->status = status;
    rp->body = body;
    rp->len = len;
    rp->content_type = type;
}

void srv_reply_text(srv_reply *rp, int status, char *text, size_t len)
{
    static const char oom[] = "{\"error\":{\"code\":\"internal\","
                              "\"message\":\"out of memory\"}}\n";
    if (text && (len == 0 || text[len - 1] != '\n')) {
        char *t = realloc(text, len + 2);
        if (t) {
            t[len++] = '\n';
            t[len] = 0;
            text = t;
        } else {
            free(text);
            text = NULL;
        }
    }
    if (!text) {
        status = 500;
        text = strdup(oom);
        len = text ? strlen(text) : 0;
    }
    srv_reply_bytes(rp, status, text, len, "application/json");
}

void srv_reply_json(srv_reply *rp, int status, cJSON *obj)
{
    char *text = obj ? cJSON_PrintUnformatted(obj) : NULL;
    cJSON_Delete(obj);
    srv_reply_text(rp, status, text, text ? strlen(text) : 0);
}

void srv_reply_error(srv_reply *rp, const api_error *e)
{
    char *text = api_error_text(e, rp->plain_errors);
    srv_reply_text(rp, e->http, text, text ? strlen(text) : 0);
}

void srv_reply_fail(srv_reply *rp, api_code c, const char *fmt, ...)
{
    api_error e;
    va_list ap;
    va_start(ap, fmt);
    api_vraise(&e, c, fmt, ap);
    va_end(ap);
    srv_reply_error(rp, &e);
}

/* ------------------------------------------------------------- parking */

void srv_wake(srv_request *rq)
{
    pthread_mutex_lock(&rq->lock);
    rq->woken = 1;
    struct MHD_Connection *conn = rq->suspended ? rq->conn : NULL;
    pthread_mutex_unlock(&rq->lock);
    /* Resume only after unlocking, and touch rq no more: once resumed, an
     * MHD thread may answer and free the request at any moment. Until
     * then the suspended connection keeps rq alive. */
    if (conn)
        MHD_resume_connection(conn);
}

void srv_park(srv_request *rq, srv_reply *rp, srv_continuation cont)
{
    rq->cont = cont;
    pthread_mutex_lock(&rq->lock);
    if (!rq->woken) {
        MHD_suspend_connection(rq->conn);
        rq->suspended = 1;
        rp->status = 0;
    }
    int suspended = rq->suspended;
    pthread_mutex_unlock(&rq->lock);
    if (!suspended)
        srv_request_resume(rq, rp); /* done before it could park */
}

void srv_request_resume(srv_request *rq, srv_reply *rp)
{
    srv_continuation c = rq->cont;
    memset(&rq->cont, 0, sizeof rq->cont);
    if (c.answer)
        c.answer(rq, rp, c.arg);
    if (c.release)
        c.release(c.arg);
}

void srv_request_end(srv_request *rq)
{
    srv_continuation c = rq->cont;
    memset(&rq->cont, 0, sizeof rq->cont);
    if (c.release)
        c.release(c.arg);
}
