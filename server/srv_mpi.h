/*
 * srv_mpi.h - distributed exact fits: the daemon's side of kmserve-mpi.
 *
 * With --mpi-launch (e.g. "mpirun -np 4 --hostfile /etc/kmserve/hosts"),
 * a fit with "distributed": true, or krr's solver auto whose exact
 * estimate exceeds the local budget but whose per-rank share fits
 * --mpi-memory-budget-mb, runs as a job that writes the request to a
 * staging file in the models directory, starts the launch command plus
 * the worker (kmserve-mpi) in a session of its own, follows the worker's
 * status file and the ranks' liveness records, and loads the model the
 * worker wrote; the job then commits it like any other fit. Cancel,
 * --fit-timeout and the liveness rule (--mpi-start-timeout,
 * --mpi-heartbeat-timeout, a dead rank) end the job's processes
 * (SIGTERM to the launcher, SIGKILL to all of its session after 3 s), so
 * a distributed fit never holds a fit worker indefinitely. Staging files
 * are removed in every path, and at start those that a gone daemon of
 * this host left behind.
 *
 * Thread-safety: created and freed by the main thread (srv_mpi_create
 * makes the process a child subreaper, so that ranks orphaned by their
 * launcher are reaped by their job); srv_mpi_fit runs on any number of
 * fit workers at once.
 */
#ifndef SRV_MPI_H
#define SRV_MPI_H

#include <stddef.h>

#include "../api/api_fit.h"
#include "srv_config.h"

typedef struct srv_mpi srv_mpi;

/* NULL with err empty when --mpi-launch is unset (off); NULL with err set
 * when it cannot be used (bad quoting, no rank count, no worker). */
srv_mpi *srv_mpi_create(const srv_config *c, char *err, size_t errlen);
void srv_mpi_free(srv_mpi *m);

/* Removes staging files (.kmserve-mpi-HOST-PID-*) that a daemon of this
 * host that is gone (or this process, before it wrote any) left in dir. */
void srv_mpi_clean_stale(const char *dir);

/*
 * Decides where a parsed fit runs: with req->distributed set (the body's
 * "distributed": true) checks it can run distributed (400 when --mpi-launch
 * is unset or the fit is not krr's exact or auto solver or gpr without an
 * optimizer, or has a search; 413 when a rank's share is above
 * --mpi-memory-budget-mb); sets it for krr's auto when *bytes (the local
 * estimate) is above local_budget and a rank's share fits. When the fit
 * goes distributed, *bytes becomes what the daemon itself holds (the
 * staging buffer and the model read back). 0, or -1 with e filled.
 */
int srv_mpi_route(const srv_mpi *m, api_fit_request *req, size_t local_budget,
                  size_t *bytes, api_error *e);

/* Runs req on the cluster (a job's worker thread): as api_fit_run. */
int srv_mpi_fit(srv_mpi *m, const api_fit_request *req,
                const km_fit_control *ctl, const char *job_id, km_model **out,
                api_error *e);

#endif
