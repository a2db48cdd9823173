/*
 * kmctl_util.c - errors, the capped buffer and number formatting of kmctl.
 *
 * Thread-safety: none needed (kmctl is single-threaded).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kmctl_util.h"

int ctl_fail(ctl_err *e, int exit_code, const char *fmt, ...)
{
    if (e) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->msg, sizeof e->msg, fmt, ap);
        va_end(ap);
        e->exit = exit_code;
    }
    return -1;
}

void ctl_buf_init(ctl_buf *b, size_t max)
{
    b->data = NULL;
    b->len = b->cap = 0;
    b->max = max;
}

void ctl_buf_cleanup(ctl_buf *b)
{
    free(b->data);
    ctl_buf_init(b, b->max);
}

/* Makes room for n more bytes and the terminating NUL. */
static int reserve(ctl_buf *b, size_t n)
{
    if (n > b->max || b->len > b->max - n)
        return -1;
    size_t need = b->len + n + 1;
    if (need <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need)
        cap = cap > ((size_t)-1) / 2 ? need : cap * 2;
    char *p = realloc(b->data, cap);
    if (!p)
        return -1;
    b->data = p;
    b->cap = cap;
    return 0;
}

int ctl_buf_append(ctl_buf *b, const void *p, size_t n)
{
    if (reserve(b, n))
        return -1;
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

int ctl_buf_printf(ctl_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || reserve(b, (size_t)n))
        return -1;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return 0;
}

void ctl_fmt_double(char out[32], double v)
{
    /* 15 digits suffice for most values that came from decimal text; 17
     * always round-trip. The shortest keeps bodies and CSV output small. */
    for (int digits = 15; digits <= 17; digits++) {
        snprintf(out, 32, "%.*g", digits, v);
        if (strtod(out, NULL) == v)
            return;
    }
}
