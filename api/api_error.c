/*
 * api_error.c - API errors and the mapping from core statuses to HTTP.
 *
 * The mapping is one table: a core status says what went wrong in the
 * numbers; API.md says which HTTP status and code a client sees for it.
 *
 * Thread-safety: reentrant.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "api_error.h"
#include "api_text.h"

int api_fail(api_error *e, int http, const char *code, const char *fmt, ...)
{
    va_list ap;
    e->http = http;
    e->code = code;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
    return -1;
}

int api_invalid(api_error *e, const char *fmt, ...)
{
    va_list ap;
    e->http = 400;
    e->code = "invalid_argument";
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
    return -1;
}

static const struct {
    km_status status;
    int http;
    const char *code;
} status_map[] = {
    {KM_EINVAL, 400, "invalid_argument"},
    {KM_ENOMEM, 413, "payload_too_large"},
    {KM_ENOTPD, 422, "unprocessable"},
    {KM_EPROBLEM, 422, "unprocessable"},
    {KM_ENOCONV, 422, "unprocessable"},
    {KM_ECONFLICT, 409, "conflict"},
    {KM_ECANCELLED, 409, "conflict"},
    {KM_ECORRUPT, 500, "internal"},
    {KM_EFORMAT, 500, "internal"},
    {KM_EIO, 500, "internal"},
    {KM_EINTERNAL, 500, "internal"},
};

int api_fail_km(api_error *e, const km_error *kerr)
{
    for (size_t i = 0; i < sizeof status_map / sizeof *status_map; i++)
        if (status_map[i].status == kerr->status)
            return api_fail(e, status_map[i].http, status_map[i].code, "%s",
                            kerr->message[0] ? kerr->message
                                             : km_strerror(kerr->status));
    return api_fail(e, 500, "internal", "unexpected status %s: %s (a bug)",
                    km_status_name(kerr->status), kerr->message);
}

/* Written with api_text's escaper, not cJSON's, whose strings are the
 * bytes they were given: a message may quote a path, a method or a
 * header exactly as the client sent it, and must still be UTF-8 JSON. */
char *api_error_json(const api_error *e)
{
    api_text t = {0};
    api_text_raw(&t, "{\"error\":{\"code\":");
    api_text_string(&t, e->code);
    api_text_raw(&t, ",\"message\":");
    api_text_string(&t, e->message);
    api_text_raw(&t, "}}");
    if (t.failed) {
        free(t.buf);
        return NULL;
    }
    return t.buf;
}
