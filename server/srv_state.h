/*
 * srv_state.h - the daemon's one piece of mutable shared state.
 *
 * Everything the request handlers and workers share lives here, created
 * by main() before the HTTP daemon starts and freed after it stops:
 * configuration (read-only), the registry of served models, the store on
 * disk, the commit policy that changes them, the jobs, the metrics, and
 * the lifecycle phase.
 *
 * Thread-safety: each member documents its own; phase is atomic.
 */
#ifndef SRV_STATE_H
#define SRV_STATE_H

#include <stdatomic.h>

#include "srv_auth.h"
#include "srv_commit.h"
#include "srv_config.h"
#include "srv_jobs.h"
#include "srv_metrics.h"
#include "srv_mpi.h"
#include "srv_registry.h"
#include "srv_store.h"

typedef enum { SRV_LOADING, SRV_READY, SRV_DRAINING } srv_phase;

typedef struct srv_drift srv_drift; /* srv_drift.h */

typedef struct srv_state {
    srv_config cfg;
    srv_registry *registry;
    srv_store *store;
    srv_commit *commit;    /* every change to a name goes through it */
    srv_jobs *jobs;
    srv_metrics *metrics;
    srv_auth *auth;        /* NULL: no tokens, all open */
    srv_mpi *mpi;          /* NULL: no --mpi-launch (srv_mpi.h) */
    srv_drift *drift;      /* the drift reservoirs and tests */
    char *tls_cert, *tls_key; /* PEM text, or NULL for plain HTTP */
    atomic_int phase;
    atomic_long active_requests;
} srv_state;

#endif
