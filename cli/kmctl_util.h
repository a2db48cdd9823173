/*
 * kmctl_util.h - what every kmctl module shares: the error struct that
 * carries a message and an exit code up to main(), a growable byte buffer
 * with a size cap, and number formatting that round-trips.
 *
 * Exit codes (documented in `kmctl --help` and the README):
 *   0 success, 1 the server answered an error (or a job failed),
 *   2 usage or input error, 3 the server could not be reached,
 *   130 interrupted by Ctrl-C (the job, if any, cancelled or left running).
 *
 * Thread-safety: kmctl is single-threaded; nothing here is shared.
 */
#ifndef KMCTL_UTIL_H
#define KMCTL_UTIL_H

#include <stddef.h>

enum {
    CTL_EXIT_OK = 0,
    CTL_EXIT_SERVER = 1,
    CTL_EXIT_USAGE = 2,
    CTL_EXIT_CONNECT = 3,
    CTL_EXIT_INTERRUPTED = 130
};

/* Filled by the function that failed; main() prints "kmctl: <msg>" and
 * exits with `exit`. Caller-allocated; zero-initialise it. */
typedef struct ctl_err {
    int exit;
    char msg[1024];
} ctl_err;

/* Sets e (if not NULL) and returns -1, so callers can `return ctl_fail(...)`. */
int ctl_fail(ctl_err *e, int exit_code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A byte buffer that is always NUL-terminated and never grows past `max`
 * bytes: appending beyond it fails (the caller reports which input was too
 * big). Caller-allocated: ctl_buf_init() / ctl_buf_cleanup(). */
typedef struct ctl_buf {
    char *data;
    size_t len, cap, max;
} ctl_buf;

void ctl_buf_init(ctl_buf *b, size_t max);
void ctl_buf_cleanup(ctl_buf *b);
/* 0, or -1 when the cap would be exceeded or memory is short (b unchanged). */
__attribute__((warn_unused_result)) int ctl_buf_append(ctl_buf *b, const void *p,
                                                       size_t n);
__attribute__((warn_unused_result)) int ctl_buf_printf(ctl_buf *b, const char *fmt,
                                                       ...)
    __attribute__((format(printf, 2, 3)));

/* Writes the shortest of %.15g/%.16g/%.17g that reads back as exactly v into
 * out (at least 32 bytes). v must be finite: the result is then a JSON number. */
void ctl_fmt_double(char out[32], double v);

#endif
