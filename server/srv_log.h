/*
 * srv_log.h - the daemon's log: one JSON object per line on stderr, for
 * events ("model_loaded") and for requests (the access log).
 *
 * Events are written at once. Between srv_log_start() and srv_log_stop()
 * access lines are written in batches, at most 100 ms after they are
 * logged; before and after, at once.
 *
 * Thread-safety: safe from any thread; each line is written whole.
 * srv_log_start and srv_log_stop are called once each, by main().
 */
#ifndef SRV_LOG_H
#define SRV_LOG_H

#include <stddef.h>

typedef enum { SRV_DEBUG, SRV_INFO, SRV_WARN, SRV_ERROR } srv_level;

/* Sets the least severe level written ("debug", "info", ...). -1 if the
 * name is unknown. Call before threads start. */
int srv_log_set_level(const char *name);

/* Starts the thread that writes batched access lines; -1 if it cannot. */
int srv_log_start(void);

/* Writes what is pending and stops that thread. */
void srv_log_stop(void);

/* Writes {"time","level","event","msg"} with msg from fmt. */
void srv_log(srv_level level, const char *event, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* One access-log line. */
void srv_log_access(const char *request_id, const char *method,
                    const char *path, int status, double seconds,
                    size_t bytes_in, size_t bytes_out);

#endif
