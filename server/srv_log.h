/*
 * srv_log.h - the daemon's log: one JSON object per line on stderr, for
 * events ("model_loaded") and for requests (the access log).
 *
 * Thread-safety: safe from any thread; each line is written whole.
 */
#ifndef SRV_LOG_H
#define SRV_LOG_H

#include <stddef.h>

typedef enum { SRV_DEBUG, SRV_INFO, SRV_WARN, SRV_ERROR } srv_level;

/* Sets the least severe level written ("debug", "info", ...). -1 if the
 * name is unknown. Call before threads start. */
int srv_log_set_level(const char *name);

/* Writes {"time","level","event","msg"} with msg from fmt. */
void srv_log(srv_level level, const char *event, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* One access-log line. */
void srv_log_access(const char *request_id, const char *method,
                    const char *path, int status, double seconds,
                    size_t bytes_in, size_t bytes_out);

#endif
