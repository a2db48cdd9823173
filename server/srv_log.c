/*
 * srv_log.c - JSON-line logging to stderr.
 *
 * Each line is formatted into a local buffer and written with one write(),
 * so lines from different threads never interleave. Strings are escaped
 * for JSON.
 *
 * Thread-safety: the level is set once before threads start; logging is
 * safe from any thread.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "srv_log.h"

static srv_level min_level = SRV_INFO;
static const char *const level_names[] = {"debug", "info", "warn", "error"};

int srv_log_set_level(const char *name)
{
    for (int i = 0; i < 4; i++)
        if (!strcmp(name, level_names[i])) {
            min_level = (srv_level)i;
            return 0;
        }
    return -1;
}

/* Appends formatted text, never past cap - 1; returns the new length. */
static size_t put(char *buf, size_t len, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static size_t put(char *buf, size_t len, size_t cap, const char *fmt, ...)
{
    if (len >= cap - 1)
        return len;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + len, cap - len, fmt, ap);
    va_end(ap);
    if (n < 0)
        return len;
    return len + (size_t)n < cap - 1 ? len + (size_t)n : cap - 1;
}

/* Appends s JSON-escaped; returns the new length (never past cap - 1). */
static size_t put_escaped(char *buf, size_t len, size_t cap, const char *s)
{
    for (; *s && len + 7 < cap; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            buf[len++] = '\\';
            buf[len++] = (char)c;
        } else if (c < 0x20) {
            len = put(buf, len, cap, "\\u%04x", c);
        } else {
            buf[len++] = (char)c;
        }
    }
    buf[len] = '\0';
    return len;
}

static size_t put_time(char *buf, size_t cap)
{
    struct timeval tv;
    struct tm tm;
    gettimeofday(&tv, NULL);
    gmtime_r(&tv.tv_sec, &tm);
    size_t n = strftime(buf, cap, "{\"time\":\"%Y-%m-%dT%H:%M:%S", &tm);
    return put(buf, n, cap, ".%03ldZ\"", (long)(tv.tv_usec / 1000));
}

static void emit(char *buf, size_t len, size_t cap)
{
    if (len > cap - 3)
        len = cap - 3;
    buf[len++] = '}';
    buf[len++] = '\n';
    ssize_t w = write(STDERR_FILENO, buf, len);
    (void)w;
}

void srv_log(srv_level level, const char *event, const char *fmt, ...)
{
    if (level < min_level)
        return;
    char msg[1024], buf[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    size_t n = put_time(buf, sizeof buf);
    n = put(buf, n, sizeof buf, ",\"level\":\"%s\",\"event\":\"", level_names[level]);
    n = put_escaped(buf, n, sizeof buf, event);
    n = put(buf, n, sizeof buf, "\",\"msg\":\"");
    n = put_escaped(buf, n, sizeof buf, msg);
    n = put(buf, n, sizeof buf, "\"");
    emit(buf, n, sizeof buf);
}

void srv_log_access(const char *request_id, const char *method,
                    const char *path, int status, double seconds,
                    size_t bytes_in, size_t bytes_out)
{
    char buf[2048];
    size_t n = put_time(buf, sizeof buf);
    n = put(buf, n, sizeof buf, ",\"level\":\"info\",\"event\":\"request\","
                          "\"request_id\":\"");
    n = put_escaped(buf, n, sizeof buf, request_id);
    n = put(buf, n, sizeof buf, "\",\"method\":\"");
    n = put_escaped(buf, n, sizeof buf, method);
    n = put(buf, n, sizeof buf, "\",\"path\":\"");
    n = put_escaped(buf, n, sizeof buf, path);
    n = put(buf, n, sizeof buf, "\",\"status\":%d,\"duration_ms\":%.3f,"
                          "\"bytes_in\":%zu,\"bytes_out\":%zu",
                          status, seconds * 1e3, bytes_in, bytes_out);
    emit(buf, n, sizeof buf);
}
