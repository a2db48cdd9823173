/*
 * srv_http.h - the HTTP side: libmicrohttpd set-up, the per-request
 * context that handlers see, and replies.
 *
 * A request's way: the first callback refuses what can be refused from
 * the headers alone: ambiguous framing (400, see srv_http.c), then 404,
 * 405, 411, 413 by Content-Length, 415; body chunks are appended up to
 * --max-body-mb (413 past it); the final callback runs the route's
 * handler. A handler either fills a reply or parks the request on a fit
 * job (the connection is suspended, and resumed by the worker when the
 * job ends).
 *
 * Around the requests, a sweeper thread holds every connection to its
 * deadlines (--header-timeout, --body-timeout), closes connections whose
 * peer has gone, and keeps a reserve of connections for requests whose
 * headers are in (see srv_http.c for the rules).
 *
 * Thread-safety: a request is handled by one MHD thread at a time; the
 * job callback touches only the request's own lock-protected flags; the
 * connection table has its own lock.
 */
#ifndef SRV_HTTP_H
#define SRV_HTTP_H

#include <cJSON.h>
#include <microhttpd.h>
#include <pthread.h>

#include "../api/api_error.h"
#include "srv_state.h"

typedef struct srv_reply {
    int status;               /* 0: no reply yet (request parked) */
    char *body;               /* malloc'd; freed by the HTTP layer */
    size_t len;
    const char *content_type;
    char location[160];
    char allow[64];
    char www_authenticate[64];
    int close;                /* answer with Connection: close */
} srv_reply;

typedef struct srv_http srv_http;
typedef struct srv_conn srv_conn;

typedef struct srv_request {
    srv_state *s;
    struct MHD_Connection *conn;
    srv_conn *sc;             /* its connection's entry in the table */
    char id[72];
    char method[16];
    char path[1024];
    char param[272];          /* the {name} or {id} of the route */
    size_t route;
    double start;
    char *body;
    size_t len, cap;
    size_t announced;         /* the Content-Length, when given */
    double linger_until;      /* after a 413 written mid-body */
    int too_large;
    int answered;             /* a reply was queued (or written: 413) */
    int status;
    size_t bytes_out;
    /* a parked fit */
    pthread_mutex_t lock;
    srv_job *job;
    int job_done, suspended;
} srv_request;

/* Starts the daemon on s->cfg.listen, and its sweeper. NULL with a
 * message on failure. Caller owns the result; stop with srv_http_stop(). */
srv_http *srv_http_start(srv_state *s, char *err, size_t errlen);

/* The port listened on (useful with port 0). */
unsigned srv_http_port(const srv_http *h);

/* Stops accepting connections (MHD_quiesce_daemon): returns the listening
 * socket, which the caller closes after srv_http_stop(), or -1. */
int srv_http_quiesce(srv_http *h);

/* Closes every connection, stops the threads and frees h (NULL is fine). */
void srv_http_stop(srv_http *h);

/* A request header's value, or NULL. */
const char *srv_header(srv_request *rq, const char *name);

/* Fills rp with obj as JSON (takes ownership of obj). */
void srv_reply_json(srv_reply *rp, int status, cJSON *obj);
void srv_reply_error(srv_reply *rp, const api_error *e);
/* Fills rp with JSON text already written (takes ownership of text; NULL
 * answers 500 "out of memory"). */
void srv_reply_text(srv_reply *rp, int status, char *text, size_t len);
/* Plain API error in one call. */
void srv_reply_fail(srv_reply *rp, int status, const char *code,
                    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* The done callback to give srv_jobs_submit for a request that will be
 * parked (arg is the srv_request). */
void srv_http_job_done(srv_job *job, void *arg);

/* Parks rq on job until it finishes: the connection is suspended and the
 * handler's reply_fn runs when it is resumed. Takes the job reference. */
void srv_park(srv_request *rq, srv_reply *rp, srv_job *job);

#endif
