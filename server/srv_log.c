/*
 * srv_log.c - JSON-line logging to stderr.
 *
 * Each line is formatted whole in a local buffer, so lines from different
 * threads never interleave. Strings are escaped for JSON by
 * api_json_escape, as answers are, so every line is UTF-8 JSON whatever a
 * client sent; a string too long for the line is cut there, on a whole
 * character, and the line keeps its other fields.
 *
 * Event lines are written at once. Access lines are the hot path (one per
 * request; a write() each cost as much as the model's arithmetic), so once
 * srv_log_start() has run they are gathered in one buffer and written
 * together: by a flusher thread at most FLUSH_MS after the first of them,
 * or at once by the thread that would overfill the buffer. An event line
 * first writes what is pending, so the file keeps its order. The time
 * prefix is formatted once per second per thread, the numbers by hand.
 *
 * Thread-safety: the level is set once before threads start; logging is
 * safe from any thread; start and stop are called by main().
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../api/api_text.h"
#include "srv_log.h"

#define FLUSH_MS 100
#define PENDING_CAP (64 * 1024)

static srv_level min_level = SRV_INFO;
static const char *const level_names[] = {"debug", "info", "warn", "error"};

static struct {
    pthread_mutex_t lock;
    pthread_cond_t wake;      /* the first line of a batch; stop */
    char buf[PENDING_CAP];    /* access lines not yet written */
    size_t len;
    int running, stopping;    /* the flusher thread */
    pthread_t thread;
} out = {.lock = PTHREAD_MUTEX_INITIALIZER};

int srv_log_set_level(const char *name)
{
    for (int i = 0; i < 4; i++)
        if (!strcmp(name, level_names[i])) {
            min_level = (srv_level)i;
            return 0;
        }
    return -1;
}

/* ------------------------------------------------------------ formatting */

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

/* Appends s as it is (the caller's constant text), never past cap - 1. */
static size_t put_text(char *buf, size_t len, size_t cap, const char *s)
{
    while (*s && len + 1 < cap)
        buf[len++] = *s++;
    buf[len] = '\0';
    return len;
}

/* Appends v in decimal, at least `width` digits (zero-padded). */
static size_t put_uint(char *buf, size_t len, size_t cap,
                       unsigned long long v, int width)
{
    char digits[24];
    int n = 0;
    do {
        digits[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v || n < width);
    while (n > 0 && len + 1 < cap)
        buf[len++] = digits[--n];
    buf[len] = '\0';
    return len;
}

/* Appends s JSON-escaped (bytes that are not UTF-8 as U+FFFD, the rule
 * of answers too), leaving keep bytes free for the rest of the line: a
 * client's path may be up to six times longer escaped than sent, and a
 * line cut by finish() in the middle of an escape would not be JSON.
 * Returns the new length. */
static size_t put_escaped(char *buf, size_t len, size_t cap, const char *s,
                          size_t keep)
{
    if (len + keep >= cap)
        return len;
    return len + api_json_escape(buf + len, cap - keep - len, s);
}

/* What an access line needs after its path: `","status":` and four
 * numbers with their names, `}` and a newline. */
#define ACCESS_TAIL 160

/* {"time":"2026-11-22T10:15:02.123Z" - the date and time of day formatted
 * once per second per thread. */
static size_t put_time(char *buf, size_t cap)
{
    static _Thread_local struct {
        time_t sec;
        char text[48];
    } last;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (ts.tv_sec != last.sec || !last.text[0]) {
        struct tm tm;
        gmtime_r(&ts.tv_sec, &tm);
        strftime(last.text, sizeof last.text,
                 "{\"time\":\"%Y-%m-%dT%H:%M:%S.", &tm);
        last.sec = ts.tv_sec;
    }
    size_t n = put_text(buf, 0, cap, last.text);
    n = put_uint(buf, n, cap, (unsigned long long)(ts.tv_nsec / 1000000), 3);
    return put_text(buf, n, cap, "Z\"");
}

/* Closes the object and the line. */
static size_t finish(char *buf, size_t len, size_t cap)
{
    if (len > cap - 3)
        len = cap - 3;
    buf[len++] = '}';
    buf[len++] = '\n';
    return len;
}

/* --------------------------------------------------------------- writing */

static void write_all(const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(STDERR_FILENO, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return; /* nowhere to log to: drop the line */
        p += w;
        n -= (size_t)w;
    }
}

/* Called with out.lock held. */
static void write_pending(void)
{
    write_all(out.buf, out.len);
    out.len = 0;
}

static void emit(const char *line, size_t n, int batch)
{
    pthread_mutex_lock(&out.lock);
    if (!batch || !out.running) {
        write_pending();
        write_all(line, n);
    } else {
        if (out.len + n > sizeof out.buf)
            write_pending();
        if (out.len == 0)
            pthread_cond_signal(&out.wake);
        memcpy(out.buf + out.len, line, n);
        out.len += n;
    }
    pthread_mutex_unlock(&out.lock);
}

static void *flusher(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&out.lock);
    while (!out.stopping) {
        while (out.len == 0 && !out.stopping)
            pthread_cond_wait(&out.wake, &out.lock);
        /* Let the batch grow for FLUSH_MS, then write it in one go. */
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_nsec += FLUSH_MS * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        while (!out.stopping &&
               pthread_cond_timedwait(&out.wake, &out.lock, &until) !=
                   ETIMEDOUT)
            ;
        write_pending();
    }
    pthread_mutex_unlock(&out.lock);
    return NULL;
}

int srv_log_start(void)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    int rc = pthread_cond_init(&out.wake, &ca);
    pthread_condattr_destroy(&ca);
    if (rc != 0)
        return -1;
    out.stopping = 0;
    if (pthread_create(&out.thread, NULL, flusher, NULL) != 0) {
        pthread_cond_destroy(&out.wake);
        return -1;
    }
    out.running = 1;
    return 0;
}

void srv_log_stop(void)
{
    if (!out.running)
        return;
    pthread_mutex_lock(&out.lock);
    out.stopping = 1;
    pthread_cond_signal(&out.wake);
    pthread_mutex_unlock(&out.lock);
    pthread_join(out.thread, NULL);
    pthread_mutex_lock(&out.lock);
    write_pending();
    out.running = 0;
    pthread_mutex_unlock(&out.lock);
    pthread_cond_destroy(&out.wake);
}

/* ----------------------------------------------------------------- lines */

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
    n = put_escaped(buf, n, sizeof buf, event, 16);
    n = put_text(buf, n, sizeof buf, "\",\"msg\":\"");
    n = put_escaped(buf, n, sizeof buf, msg, 8);
    n = put_text(buf, n, sizeof buf, "\"");
    emit(buf, finish(buf, n, sizeof buf), 0);
}

void srv_log_access(const char *request_id, const char *method,
                    const char *path, int status, double seconds,
                    size_t bytes_in, size_t bytes_out)
{
    char buf[2048];
    size_t cap = sizeof buf;
    unsigned long long us =
        seconds > 0 ? (unsigned long long)(seconds * 1e6 + 0.5) : 0;
    size_t n = put_time(buf, cap);
    n = put_text(buf, n, cap, ",\"level\":\"info\",\"event\":\"request\","
                              "\"request_id\":\"");
    n = put_escaped(buf, n, cap, request_id, ACCESS_TAIL);
    n = put_text(buf, n, cap, "\",\"method\":\"");
    n = put_escaped(buf, n, cap, method, ACCESS_TAIL);
    n = put_text(buf, n, cap, "\",\"path\":\"");
    n = put_escaped(buf, n, cap, path, ACCESS_TAIL);
    n = put_text(buf, n, cap, "\",\"status\":");
    n = put_uint(buf, n, cap, (unsigned long long)(status > 0 ? status : 0), 1);
    n = put_text(buf, n, cap, ",\"duration_ms\":");
    n = put_uint(buf, n, cap, us / 1000, 1);
    n = put_text(buf, n, cap, ".");
    n = put_uint(buf, n, cap, us % 1000, 3);
    n = put_text(buf, n, cap, ",\"bytes_in\":");
    n = put_uint(buf, n, cap, bytes_in, 1);
    n = put_text(buf, n, cap, ",\"bytes_out\":");
    n = put_uint(buf, n, cap, bytes_out, 1);
    emit(buf, finish(buf, n, cap), 1);
}
