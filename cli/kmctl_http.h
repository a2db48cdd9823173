/*
 * kmctl_http.h - kmctl's connection to a kmserve: HTTP(S) by libcurl, JSON
 * in and out, the bearer token, and the server's errors turned into
 * "STATUS code: message".
 *
 * One ctl_client keeps one libcurl handle, so successive requests reuse the
 * connection (keep-alive). An answer body is read up to CTL_HTTP_MAX_REPLY.
 *
 * Thread-safety: a ctl_client is used by one thread at a time.
 */
#ifndef KMCTL_HTTP_H
#define KMCTL_HTTP_H

#include <signal.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "kmctl_util.h"

#define CTL_HTTP_MAX_REPLY ((size_t)1 << 30)

typedef struct ctl_client ctl_client;

typedef struct ctl_reply {
    long status;  /* HTTP status */
    cJSON *json;  /* the body parsed, or NULL if it was empty or not JSON */
    char *body;   /* the body as received, NUL-terminated */
    size_t len;
} ctl_reply;

/* url: "http://host:port" or "https://..." (a trailing '/' is ignored);
 * token and cacert may be NULL or "". Borrows nothing: the strings are
 * copied. Caller owns *out; free with ctl_client_free(). */
__attribute__((warn_unused_result)) int ctl_client_create(const char *url,
    const char *token, const char *cacert, ctl_client **out, ctl_err *e);
void ctl_client_free(ctl_client *c);

/* While *flag (set by a signal handler) is non-zero, a transfer in progress
 * is abandoned and ctl_client_call fails with CTL_EXIT_INTERRUPTED. NULL
 * turns this off. Borrows flag for as long as it is set. */
void ctl_client_set_interrupt(ctl_client *c, volatile sig_atomic_t *flag);

/* One request: method, path (already escaped; see ctl_client_escape),
 * body (NULL for none, else JSON of len bytes). Returns 0 whenever the
 * server answered, whatever the status; -1 when it could not be reached
 * (e: exit 3, with the URL and libcurl's reason) or the call was
 * interrupted (exit 130). Caller owns r's contents; free with
 * ctl_reply_cleanup(). */
__attribute__((warn_unused_result)) int ctl_client_call(ctl_client *c,
    const char *method, const char *path, const char *body, size_t len,
    ctl_reply *r, ctl_err *e);
/* The same with a body of another media type (content_type, e.g.
 * "text/plain"), for model files. */
__attribute__((warn_unused_result)) int ctl_client_call_as(ctl_client *c,
    const char *method, const char *path, const char *body, size_t len,
    const char *content_type, ctl_reply *r, ctl_err *e);
void ctl_reply_cleanup(ctl_reply *r);

/* Fills e (exit 1) with "STATUS code: message" from an error answer, or
 * with the status and the start of the body when it is not the API's error
 * object. Returns -1. */
int ctl_reply_fail(const ctl_reply *r, ctl_err *e);

/* Percent-encodes s for use as one path segment. Caller owns the result;
 * free with free(). NULL when memory is short. */
char *ctl_client_escape(ctl_client *c, const char *s);

/* The base URL as given (for messages). */
const char *ctl_client_url(const ctl_client *c);

#endif
