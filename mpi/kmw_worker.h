/*
 * kmw_worker.h - one rank of kmserve-mpi: its place in the process grid,
 * its budget and files, its phase (for the status file, the heartbeat and
 * the test hook), and what every part of the fit shares: errors, the
 * status and model files, broadcasts and agreement on a status.
 *
 * Thread-safety: the rank's work thread only.
 */
#ifndef KMW_WORKER_H
#define KMW_WORKER_H

#include <stddef.h>

#include "km.h"
#include "kmw_heart.h"

typedef struct worker {
    int rank, size, ctxt, nprow, npcol, myrow, mycol, nb;
    size_t budget; /* bytes per rank; 0: unchecked */
    const char *status_path, *output_path;
    const char *phase;
    const char *hold;  /* KMSERVE_MPI_TEST_HOLD's file, or NULL */
    heart hb;
} worker;

/* Writes len bytes to path through path.tmp, fsync and rename. */
int write_atomic(const char *path, const void *buf, size_t len);
/* km_fit_control's progress (ctx: the worker): "fraction phase" into the
 * status file. */
int report(void *ctx, double fraction);
/* Enters a phase (see kmw_worker.c: the test hook may hold it there). */
void set_phase(worker *w, const char *phase);
/* Enters a phase: its name for the status file and, on rank 0, progress
 * f through ctl. */
void enter(worker *w, const km_fit_control *ctl, const char *phase,
           double f);
/* err's message from fmt (when err is not NULL); returns st. */
km_status set_err(km_error *err, km_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* n doubles from rank 0 to all; summed onto rank 0. */
void bcast_doubles(double *v, size_t n);
void reduce_doubles(double *v, size_t n, int rank);
/* The worst status of all ranks (statuses are ordered: KM_OK is 0), and
 * the message of the lowest rank that has it, on every rank. */
km_status agree(km_status st, km_error *err);

#endif
