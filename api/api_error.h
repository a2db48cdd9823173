/*
 * api_error.h - API errors: an HTTP status, a stable code from API.md's
 * table, and a message that names the field and what was expected.
 *
 * Thread-safety: reentrant; an api_error is caller-owned.
 */
#ifndef API_ERROR_H
#define API_ERROR_H

#include "../core/km.h"

typedef struct api_error {
    int http;          /* 400, 404, ... */
    const char *code;  /* "invalid_argument", ... (static) */
    char message[512];
} api_error;

#if defined(__GNUC__)
#define API_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define API_PRINTF(a, b)
#endif

/* Sets all three fields; returns -1 so parsers can `return api_fail(...)`. */
int api_fail(api_error *e, int http, const char *code, const char *fmt, ...)
    API_PRINTF(4, 5);

/* Shorthand for 400 invalid_argument. */
int api_invalid(api_error *e, const char *fmt, ...) API_PRINTF(2, 3);

/* Maps a core status and its message to an API error; returns -1. */
int api_fail_km(api_error *e, const km_error *kerr);

/* {"error":{"code":...,"message":...}} as a malloc'd string; NULL on OOM.
 * Bytes of the message that are not UTF-8 are written as U+FFFD
 * (api_json_escape), so the text is UTF-8 JSON whatever it quotes. */
char *api_error_json(const api_error *e);

#endif
