/*
 * srv_daemon.c - the daemon's parts, made and freed in one order (see
 * srv_daemon.h).
 */
#include <stdio.h>
#include <stdlib.h>

#include "srv_auth.h"
#include "srv_commit.h"
#include "srv_daemon.h"
#include "srv_drift.h"
#include "srv_jobs.h"
#include "srv_metrics.h"
#include "srv_mpi.h"
#include "srv_registry.h"
#include "srv_routes.h"
#include "srv_store.h"

int srv_daemon_open(srv_state *s, char *err, size_t errlen)
{
    size_t n_routes;
    const char *const *route_labels = srv_route_labels(&n_routes);
    atomic_init(&s->phase, SRV_LOADING);
    atomic_init(&s->active_requests, 0);
    s->registry = srv_registry_create();
    s->metrics = srv_metrics_create(route_labels, n_routes);
    if (!s->registry || !s->metrics) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    s->store = srv_store_open(s->cfg.models_dir, err, errlen);
    if (!s->store)
        return -1;
    srv_store_keep(s->store, s->cfg.keep_versions);
    srv_store_factor_files(s->store, (uint64_t)s->cfg.factor_files_mib << 20);
    s->commit = srv_commit_create(s->registry, s->store, s->metrics);
    if (!s->commit) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    size_t budget = (size_t)(s->cfg.memory_budget_mb * 1048576.0);
    /* krr's solver "auto" chooses against the same budget admission
     * checks (before any fit runs) */
    km_set_memory_budget(budget);
    /* the string kernels' cache of training strings (km_strings.c) holds
     * at most a 32nd of the budget (at most KM_STRING_CACHE_BYTES); what
     * it holds counts against the budget at every admission (srv_jobs.c) */
    size_t cache = budget / 32 < KM_STRING_CACHE_BYTES ? budget / 32
                                                       : KM_STRING_CACHE_BYTES;
    km_set_string_cache_bytes(cache);
    s->jobs = srv_jobs_create(s->cfg.workers, (size_t)s->cfg.queue,
                              s->cfg.job_ttl, (size_t)s->cfg.max_jobs,
                              s->cfg.fit_timeout, budget,
                              s->cfg.blas_threads, s->commit);
    if (!s->jobs) {
        snprintf(err, errlen, "cannot start the fit workers");
        return -1;
    }
    srv_mpi_clean_stale(s->cfg.models_dir);
    s->mpi = srv_mpi_create(&s->cfg, err, errlen);
    if (!s->mpi && err[0])
        return -1;
    srv_jobs_set_mpi(s->jobs, s->mpi);
    s->drift = srv_drift_create(s);
    if (!s->drift) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

void srv_daemon_close(srv_state *s)
{
    /* the drift schedule, which submits jobs; the jobs (a drift test
     * writes its answer into the reservoirs' list); then the reservoirs,
     * with no budget left to give their memory back to */
    srv_drift_stop(s->drift);
    srv_jobs_free(s->jobs);
    s->jobs = NULL;
    srv_drift_free(s->drift);
    s->drift = NULL;
    srv_mpi_free(s->mpi);
    s->mpi = NULL;
    srv_store_close(s->store);
    srv_commit_free(s->commit);
    srv_registry_free(s->registry);
    srv_metrics_free(s->metrics);
    srv_auth_free(s->auth);
    free(s->tls_cert);
    free(s->tls_key);
    s->jobs = NULL;
    s->store = NULL;
    s->commit = NULL;
    s->registry = NULL;
    s->metrics = NULL;
    s->auth = NULL;
    s->tls_cert = s->tls_key = NULL;
}
