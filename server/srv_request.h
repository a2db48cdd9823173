/*
 * srv_request.h - what a handler sees of an HTTP request: its fields, its
 * headers, the reply it fills, and parking.
 *
 * A handler either fills a reply or parks the request with a
 * continuation: the connection is suspended, and when the work it waits
 * on is done, whoever does it calls srv_wake(); the HTTP layer then
 * resumes the connection and runs the continuation to fill the reply.
 * Nothing here knows what the work is (a fit job, today).
 *
 * Thread-safety: a request is handled by one HTTP thread at a time;
 * srv_wake may be called from any thread, and touches only the request's
 * lock-protected flags.
 */
#ifndef SRV_REQUEST_H
#define SRV_REQUEST_H

#include <cJSON.h>
#include <pthread.h>
#include <stddef.h>

#include "../api/api_error.h"
#include "srv_state.h"

struct MHD_Connection;

typedef struct srv_reply {
    int status;               /* 0: no reply yet (request parked) */
    char *body;               /* malloc'd; freed by the HTTP layer, unless
                                 persistent */
    size_t len;
    const char *content_type;
    char location[160];
    char allow[64];
    char www_authenticate[64];
    int close;                /* answer with Connection: close */
    int persistent;           /* body is static (a console file): not freed */
    const char *csp;          /* Content-Security-Policy (console files);
                                 adds nosniff and no-referrer */
    int plain_errors;         /* errors as {"error":message} (/v2) */
    size_t header_len;        /* nonzero: the binary tensor data extension's
                                 Inference-Header-Content-Length */
} srv_reply;

typedef struct srv_request srv_request;

/* What a parked request does when its work is done. answer fills rp; it
 * runs once, on an HTTP thread, when the request is resumed (or at once
 * in srv_park, if the work was done first). release (may be NULL) frees
 * arg; it runs once, right after answer, or instead of it when the
 * request ends unanswered (the client went away). */
typedef struct srv_continuation {
    void (*answer)(srv_request *rq, srv_reply *rp, void *arg);
    void (*release)(void *arg);
    void *arg;
} srv_continuation;

typedef struct srv_conn srv_conn;

struct srv_request {
    /* for handlers */
    srv_state *s;
    char id[72];
    char method[16];
    char path[1024];
    char param[272];          /* the {name} or {id} of the route */
    char version[32];         /* its {version}, or "" */
    size_t route;
    char *body;               /* NUL-terminated, or NULL when empty */
    size_t len;
    /* the HTTP layer's */
    struct MHD_Connection *conn;
    srv_conn *sc;             /* its connection's entry in the table */
    double start;
    size_t cap;
    size_t announced;         /* the Content-Length, when given */
    double linger_until;      /* after a 413 written mid-body */
    int too_large;
    int answered;             /* a reply was queued (or written: 413) */
    int status;
    size_t bytes_out;
    /* parked: the continuation, and the wake-up (under lock) */
    pthread_mutex_t lock;
    srv_continuation cont;
    int woken, suspended;
};

/* A request header's value, or NULL. */
const char *srv_header(srv_request *rq, const char *name);
/* A query parameter's value (percent-decoded), or NULL; "" for a name
 * without "=". */
const char *srv_query(srv_request *rq, const char *name);
/* Calls fn with each query parameter's name until it returns nonzero;
 * returns that, or 0. */
int srv_query_each(srv_request *rq, int (*fn)(void *ctx, const char *name),
                   void *ctx);

/* Fills rp with obj as JSON (takes ownership of obj). */
void srv_reply_json(srv_reply *rp, int status, cJSON *obj);
void srv_reply_error(srv_reply *rp, const api_error *e);
/* Fills rp with JSON text already written (takes ownership of text; NULL
 * answers 500 "out of memory"). Every JSON answer ends with a newline
 * (added here when the text lacks one), as a prompt after curl wants. */
void srv_reply_text(srv_reply *rp, int status, char *text, size_t len);
/* Fills rp with bytes of type (a model file: nothing is added; takes
 * ownership of body, which must not be NULL). */
void srv_reply_bytes(srv_reply *rp, int status, char *body, size_t len,
                     const char *type);
/* Plain API error in one call: row c of api_error.h's table. */
void srv_reply_fail(srv_reply *rp, api_code c, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Parks rq until srv_wake(rq): its connection is suspended and rp is left
 * without a reply; when resumed, cont.answer fills the reply. If srv_wake
 * was called already, cont.answer fills rp now. Takes ownership of
 * cont.arg (see srv_continuation). Call at most once per request. */
void srv_park(srv_request *rq, srv_reply *rp, srv_continuation cont);

/* The work rq waits on is done (from any thread): resumes its connection
 * if it is parked. Call once, and touch rq no more: once resumed, the
 * request may be answered and freed at any moment. */
void srv_wake(srv_request *rq);

/* For the HTTP layer. srv_request_resume: fills rp from the continuation
 * of a resumed request. srv_request_end: releases what the continuation
 * still holds (a request that ends unanswered). */
void srv_request_resume(srv_request *rq, srv_reply *rp);
void srv_request_end(srv_request *rq);

#endif
