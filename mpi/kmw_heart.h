/*
 * kmw_heart.h - kmserve-mpi's heartbeat: a thread of each rank that
 * rewrites the rank's liveness record (common/cmn_beat.h); see
 * kmserve_mpi.c's head comment and docs/distributed.md.
 *
 * Thread-safety: the record is shared with the thread under h->lock.
 */
#ifndef KMW_HEART_H
#define KMW_HEART_H

#include <limits.h>
#include <pthread.h>

#include "../common/cmn_beat.h"

/* The heartbeat: a thread that rewrites this rank's liveness record
 * (cmn_beat.h) every interval, and at once when the phase, the state or
 * the rank changes. Off (no thread) without --heartbeat. */
typedef struct heart {
    pthread_mutex_t lock;
    pthread_cond_t wake; /* on CLOCK_MONOTONIC */
    pthread_t thread;
    int running, stop, dirty;
    double interval;         /* seconds */
    const char *prefix;      /* record of rank R: PREFIX<R>; NULL: off */
    const char *request;     /* the staging file: gone, the job is over */
    char path[PATH_MAX];
    cmn_beat rec;            /* guarded by lock */
} heart;

/* The rank, and a rank's record from then on: starts the thread the first
 * time (rank -1: not yet known, nothing), moves the record when the rank
 * changes. */
void heart_rank(heart *h, int rank);
/* A new phase or state for the record, written at once. */
void heart_set(heart *h, const char *phase, const char *state);
/* Stops the thread and writes the last record, "exit:CODE". */
void heart_stop(heart *h, int code);
/* The rank that the launcher gives in the environment, before MPI_Init
 * (OpenMPI, PMIx, MPICH's PMI, Slurm); -1 when none does. */
int env_rank(void);

#endif
