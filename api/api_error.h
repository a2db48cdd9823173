/*
 * api_error.h - API errors: an HTTP status, a stable code from the table
 * below (docs/api.md lists the same), and a message that names the field
 * and what was expected.
 *
 * Thread-safety: reentrant; an api_error is caller-owned.
 */
#ifndef API_ERROR_H
#define API_ERROR_H

#include <stdarg.h>

#include "../core/km.h"

/*
 * X(NAME, status, "code", "meaning"): the one table of API errors. A
 * caller names a row (API_CONFLICT); the status and the code a client
 * sees come from here, never from literals at the call site.
 */
#define API_ERROR_MAP(X)                                                     \
    X(INVALID_JSON, 400, "invalid_json", "the body is not one JSON value")   \
    X(INVALID_ARGUMENT, 400, "invalid_argument",                             \
      "a member is missing, unknown, mistyped or out of range")              \
    X(BAD_REQUEST, 400, "bad_request", "the HTTP request is malformed")      \
    X(UNAUTHENTICATED, 401, "unauthenticated",                               \
      "no bearer token, or one the server does not know")                    \
    X(PERMISSION_DENIED, 403, "permission_denied",                           \
      "the token's scope does not allow this")                               \
    X(NOT_FOUND, 404, "not_found", "no such route, model or job")            \
    X(METHOD_NOT_ALLOWED, 405, "method_not_allowed",                         \
      "the route does not take this method")                                 \
    X(CONFLICT, 409, "conflict",                                             \
      "the request does not apply to the model or job as it is")             \
    X(LENGTH_REQUIRED, 411, "length_required",                               \
      "a body without Content-Length or chunked framing")                    \
    X(PAYLOAD_TOO_LARGE, 413, "payload_too_large",                           \
      "over the body limit or the memory budget")                            \
    X(UNSUPPORTED_MEDIA_TYPE, 415, "unsupported_media_type",                 \
      "the body is not application/json")                                    \
    X(UNPROCESSABLE, 422, "unprocessable",                                   \
      "valid input, but the problem cannot be solved or answered")           \
    X(TOO_MANY_REQUESTS, 429, "too_many_requests", "the fit queue is full")  \
    X(INTERNAL, 500, "internal", "a fault of the server")                    \
    X(UNAVAILABLE, 503, "unavailable", "loading, draining or shutting down") \
    X(INSUFFICIENT_STORAGE, 507, "insufficient_storage",                     \
      "the model could not be written to or removed from disk")

typedef enum {
#define API_ERROR_ENUM(name, status, code, meaning) API_##name,
    API_ERROR_MAP(API_ERROR_ENUM)
#undef API_ERROR_ENUM
    API_ERROR_COUNT
} api_code;

typedef struct api_error {
    int http;          /* 400, 404, ... */
    const char *code;  /* "invalid_argument", ... (static) */
    char message[512];
} api_error;

/* The row's HTTP status, code and meaning; c must be a valid api_code. */
int api_code_status(api_code c);
const char *api_code_name(api_code c);
const char *api_code_meaning(api_code c);

#if defined(__GNUC__)
#define API_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define API_PRINTF(a, b)
#endif

/* Sets all three fields from row c of the table and the message; returns
 * -1 so parsers can `return api_raise(...)`. */
int api_raise(api_error *e, api_code c, const char *fmt, ...)
    API_PRINTF(3, 4);

/* Shorthand for api_raise(e, API_INVALID_ARGUMENT, ...). */
int api_invalid(api_error *e, const char *fmt, ...) API_PRINTF(2, 3);

/* As api_raise, with a va_list. */
int api_vraise(api_error *e, api_code c, const char *fmt, va_list ap);

/* Puts the formatted text before e's message (a context the message
 * lacks: "search point 3 (C=-1): "), keeping its status and code;
 * returns -1. */
int api_prefix(api_error *e, const char *fmt, ...) API_PRINTF(2, 3);

/* Maps a core status and its message to an API error; returns -1. */
int api_fail_km(api_error *e, const km_error *kerr);

/* {"error":{"code":...,"message":...}} as a malloc'd string; NULL on OOM.
 * Bytes of the message that are not UTF-8 are written as U+FFFD
 * (api_json_escape), so the text is UTF-8 JSON whatever it quotes. */
char *api_error_json(const api_error *e);
/* The same when plain is 0; when it is not, the Open Inference Protocol's
 * {"error":message} (the /v2 routes' errors). */
char *api_error_text(const api_error *e, int plain);

#endif
