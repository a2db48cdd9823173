/*
 * kmw_heart.c - kmserve-mpi's heartbeat thread; see kmw_heart.h.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "kmw_heart.h"


static int heart_path(heart *h, int rank)
{
    h->rec.rank = rank;
    return snprintf(h->path, sizeof h->path, "%s%d", h->prefix, rank) <
                   (int)sizeof h->path
               ? 0
               : -1;
}

static void *heart_main(void *arg)
{
    heart *h = arg;
    pthread_mutex_lock(&h->lock);
    while (!h->stop) {
        h->rec.beat++;
        cmn_beat_write(h->path, &h->rec); /* a miss shows as silence */
        /* The daemon removes the request first and the records last when
         * it ends a job, so a record written after that is removed here:
         * a rank the launcher did not end (on another host, say) ends
         * itself within a beat, and leaves no file. */
        if (h->request && access(h->request, F_OK) != 0 && errno == ENOENT) {
            unlink(h->path);
            fprintf(stderr, "kmserve-mpi: rank %d: the job's staging file "
                    "is gone (the daemon ended the job); exiting\n",
                    h->rec.rank);
            _exit(3);
        }
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        double t = (double)until.tv_sec + until.tv_nsec / 1e9 + h->interval;
        until.tv_sec = (time_t)t;
        until.tv_nsec = (long)((t - (double)until.tv_sec) * 1e9);
        while (!h->stop && !h->dirty &&
               pthread_cond_timedwait(&h->wake, &h->lock, &until) == 0)
            ;
        h->dirty = 0;
    }
    pthread_mutex_unlock(&h->lock);
    return NULL;
}

/* The rank, and a rank's record from then on: starts the thread the first
 * time (rank -1: not yet known, nothing), moves the record when the rank
 * changes. */
void heart_rank(heart *h, int rank)
{
    if (!h->prefix || rank < 0)
        return;
    pthread_mutex_lock(&h->lock);
    if (h->running && rank != h->rec.rank) {
        unlink(h->path);
        if (heart_path(h, rank) == 0)
            h->dirty = 1;
        pthread_cond_signal(&h->wake);
    }
    pthread_mutex_unlock(&h->lock);
    if (h->running || heart_path(h, rank) != 0)
        return;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&h->wake, &ca);
    pthread_condattr_destroy(&ca);
    h->running = pthread_create(&h->thread, NULL, heart_main, h) == 0;
    if (!h->running)
        fprintf(stderr, "kmserve-mpi: rank %d: no heartbeat thread\n", rank);
}

/* A new phase or state for the record, written at once. */
void heart_set(heart *h, const char *phase, const char *state)
{
    pthread_mutex_lock(&h->lock);
    snprintf(h->rec.phase, sizeof h->rec.phase, "%s", phase);
    snprintf(h->rec.state, sizeof h->rec.state, "%s", state);
    h->dirty = 1;
    if (h->running)
        pthread_cond_signal(&h->wake);
    pthread_mutex_unlock(&h->lock);
}

/* Stops the thread and writes the last record, "exit:CODE". */
void heart_stop(heart *h, int code)
{
    if (!h->running)
        return;
    pthread_mutex_lock(&h->lock);
    h->stop = 1;
    pthread_cond_signal(&h->wake);
    pthread_mutex_unlock(&h->lock);
    pthread_join(h->thread, NULL);
    pthread_cond_destroy(&h->wake);
    h->running = 0;
    snprintf(h->rec.state, sizeof h->rec.state, "exit:%d", code);
    h->rec.beat++;
    cmn_beat_write(h->path, &h->rec);
}

/* The rank that the launcher gives in the environment, before MPI_Init
 * (OpenMPI, PMIx, MPICH's PMI, Slurm); -1 when none does. */
int env_rank(void)
{
    const char *vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK",
                          "SLURM_PROCID"};
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) {
        const char *v = getenv(vars[i]);
        char *end;
        long r = v && *v ? strtol(v, &end, 10) : -1;
        if (v && *v && !*end && r >= 0 && r < INT_MAX)
            return (int)r;
    }
    return -1;
}
