/*
 * srv_metrics.h - Prometheus metrics, every name prefixed kmserve_.
 *
 * Counters and histograms are fixed arrays of atomics indexed by route,
 * method, status and algorithm, so recording never allocates or locks.
 * Gauges that the daemon already knows (models loaded, jobs) are passed to
 * the renderer when /metrics is scraped.
 *
 * Thread-safety: record from any thread; render from any thread.
 */
#ifndef SRV_METRICS_H
#define SRV_METRICS_H

#include <stddef.h>

#include "../core/km.h"

/* Room for this many route labels (srv_routes.c checks at compile time
 * that its routes and "unmatched" fit). */
#define SRV_MAX_ROUTES 48

typedef struct srv_metrics srv_metrics;

/* route_names: the routes' label values (borrowed for the metrics'
 * lifetime). NULL on OOM, and when n_routes > SRV_MAX_ROUTES: a route is
 * never dropped from the metrics silently (srv_routes.c checks its count
 * against SRV_MAX_ROUTES at compile time). */
srv_metrics *srv_metrics_create(const char *const *route_names,
                                size_t n_routes);
void srv_metrics_free(srv_metrics *m);

/* method: "GET", ...; route: index into route_names. */
void srv_metrics_request(srv_metrics *m, size_t route, const char *method,
                         int status, double seconds);
void srv_metrics_fit(srv_metrics *m, km_algorithm algo, double seconds);
void srv_metrics_predicted_rows(srv_metrics *m, size_t rows);
/* A rollback committed (POST /v1/models/{name}/rollback). */
void srv_metrics_rollback(srv_metrics *m);

/* What the daemon knows at scrape time. */
typedef struct srv_gauges {
    size_t models_loaded, model_bytes;
    size_t jobs[5]; /* by srv_job_state (srv_jobs.h: SRV_JOB_STATES is 5) */
    size_t queue_depth;
    size_t jobs_retained;     /* jobs in the table, all states */
    size_t jobs_evicted;      /* finished jobs dropped at --max-jobs */
    size_t fit_bytes_reserved;
    size_t memory_budget;     /* --memory-budget-mb, in bytes */
    const char *extra;        /* families rendered elsewhere (the models'
                                 drift, srv_drift.h), or NULL */
} srv_gauges;

/* Prometheus text format 0.0.4; caller frees. NULL on OOM. */
char *srv_metrics_render(srv_metrics *m, const srv_gauges *g, size_t *len);

#endif
