/*
 * api_error.c - API errors and the mapping from core statuses to HTTP.
 *
 * Two tables: API_ERROR_MAP (api_error.h) gives each error its HTTP
 * status and code; status_map says which of them a client sees for each
 * core status (core says what went wrong in the numbers).
 *
 * Thread-safety: reentrant.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_error.h"
#include "api_text.h"

static const struct {
    int status;
    const char *code, *meaning;
} codes[] = {
#define API_ERROR_ROW(name, status, code, meaning) {status, code, meaning},
    API_ERROR_MAP(API_ERROR_ROW)
#undef API_ERROR_ROW
};

int api_code_status(api_code c) { return codes[c].status; }
const char *api_code_name(api_code c) { return codes[c].code; }
const char *api_code_meaning(api_code c) { return codes[c].meaning; }

static int set(api_error *e, int http, const char *code, const char *fmt,
               va_list ap)
{
    e->http = http;
    e->code = code;
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    return -1;
}

int api_raise(api_error *e, api_code c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    api_vraise(e, c, fmt, ap);
    va_end(ap);
    return -1;
}

int api_invalid(api_error *e, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    set(e, codes[API_INVALID_ARGUMENT].status, codes[API_INVALID_ARGUMENT].code,
        fmt, ap);
    va_end(ap);
    return -1;
}

int api_vraise(api_error *e, api_code c, const char *fmt, va_list ap)
{
    set(e, codes[c].status, codes[c].code, fmt, ap);
    return -1;
}

/* What a client sees for each core status. */
static const struct {
    km_status status;
    api_code code;
} status_map[] = {
    {KM_EINVAL, API_INVALID_ARGUMENT},
    {KM_ENOMEM, API_PAYLOAD_TOO_LARGE},
    {KM_ENOTPD, API_UNPROCESSABLE},
    {KM_EPROBLEM, API_UNPROCESSABLE},
    {KM_ENOCONV, API_UNPROCESSABLE},
    {KM_ECONFLICT, API_CONFLICT},
    {KM_ECANCELLED, API_CONFLICT},
    {KM_ECORRUPT, API_INTERNAL},
    {KM_EFORMAT, API_INTERNAL},
    {KM_EIO, API_INTERNAL},
    {KM_EINTERNAL, API_INTERNAL},
};

int api_prefix(api_error *e, const char *fmt, ...)
{
    char head[256], why[sizeof e->message];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(head, sizeof head, fmt, ap);
    va_end(ap);
    snprintf(why, sizeof why, "%s", e->message);
    snprintf(e->message, sizeof e->message, "%s%.*s", head,
             (int)(sizeof e->message - 1 - strlen(head)), why);
    return -1;
}

int api_fail_km(api_error *e, const km_error *kerr)
{
    for (size_t i = 0; i < sizeof status_map / sizeof *status_map; i++)
        if (status_map[i].status == kerr->status)
            return api_raise(e, status_map[i].code, "%s",
                             kerr->message[0] ? kerr->message
                                              : km_strerror(kerr->status));
    return api_raise(e, API_INTERNAL, "unexpected status %s: %s (a bug)",
                     km_status_name(kerr->status), kerr->message);
}

/* Written with api_text's escaper, not cJSON's, whose strings are the
 * bytes they were given: a message may quote a path, a method or a
 * header exactly as the client sent it, and must still be UTF-8 JSON. */
char *api_error_json(const api_error *e)
{
    return api_error_text(e, 0);
}

/* The Open Inference Protocol's error body, {"error": message}, when
 * plain; else ours. */
char *api_error_text(const api_error *e, int plain)
{
    api_text t = {0};
    api_text_raw(&t, plain ? "{\"error\":" : "{\"error\":{\"code\":");
    if (!plain) {
        api_text_string(&t, e->code);
        api_text_raw(&t, ",\"message\":");
    }
    api_text_string(&t, e->message);
    api_text_raw(&t, plain ? "}" : "}}");
    if (t.failed) {
        free(t.buf);
        return NULL;
    }
    return t.buf;
}
