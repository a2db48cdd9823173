/*
 * kmw_worker.c - what every part of a rank's fit shares: the status and
 * model files, phases and the test hook, errors, broadcasts and agreement
 * on a status; see kmw_worker.h.
 */
#include <limits.h>
#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../common/cmn_file.h"
#include "kmw_worker.h"

/* Longest hold of the test hook (set_phase), in seconds. */
#define HOLD_MAX_S 600
/* Values per broadcast (MPI counts are int). */
#define BCAST_CHUNK ((size_t)1 << 26)

/* ------------------------------------------------------------ files */

/* Writes len bytes to path through path.tmp, fsync and rename. */
int write_atomic(const char *path, const void *buf, size_t len)
{
    char tmp[PATH_MAX];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp)
        return -1;
    int ok = cmn_file_write(tmp, buf, len, 0, 0644) == 0;
    if (!ok || rename(tmp, path) != 0) {
        unlink(tmp);
        return -1;
    }
    return 0;
}

int report(void *ctx, double fraction)
{
    worker *w = ctx;
    char line[96];
    int len = snprintf(line, sizeof line, "%.4f %s\n", fraction, w->phase);
    write_atomic(w->status_path, line, (size_t)len);
    return 0; /* cancel: the daemon ends the process group */
}

/* 1 while the test hook's file names phase as its first word. */
static int held(const worker *w, const char *phase)
{
    size_t len = 0;
    unsigned char *s = w->hold ? cmn_file_read(w->hold, 256, &len) : NULL;
    int yes = 0;
    if (s) {
        s[strcspn((char *)s, " \t\n")] = 0;
        yes = strcmp((char *)s, phase) == 0;
        free(s);
    }
    return yes;
}

/*
 * Enters a phase: its name for the status file and the record. The test
 * hook (docs/distributed.md): with KMSERVE_MPI_TEST_HOLD=FILE in the
 * environment, a rank entering the phase that FILE names waits there,
 * its record in state "held" (the heartbeat goes on), until FILE names
 * another phase or is gone; at most HOLD_MAX_S, so that a test that died
 * does not hold a fit forever.
 */
void set_phase(worker *w, const char *phase)
{
    w->phase = phase;
    heart_set(&w->hb, phase, "run");
    if (!held(w, phase))
        return;
    heart_set(&w->hb, phase, "held");
    for (int t = 0; t < HOLD_MAX_S * 50 && held(w, phase); t++)
        nanosleep(&(struct timespec){0, 20000000}, NULL);
    heart_set(&w->hb, phase, "run");
}

/* ------------------------------------------------------------ broadcast */

void bcast_doubles(double *v, size_t n)
{
    for (size_t i = 0; i < n; i += BCAST_CHUNK) {
        size_t c = n - i < BCAST_CHUNK ? n - i : BCAST_CHUNK;
        MPI_Bcast(v + i, (int)c, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    }
}

void reduce_doubles(double *v, size_t n, int rank)
{
    for (size_t i = 0; i < n; i += BCAST_CHUNK) {
        size_t c = n - i < BCAST_CHUNK ? n - i : BCAST_CHUNK;
        MPI_Reduce(rank ? v + i : MPI_IN_PLACE, v + i, (int)c, MPI_DOUBLE,
                   MPI_SUM, 0, MPI_COMM_WORLD);
    }
}

/* The worst status of all ranks (statuses are ordered: KM_OK is 0), and
 * the message of the lowest rank that has it, on every rank. */
km_status agree(km_status st, km_error *err)
{
    int mine = (int)st, worst = 0, rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Allreduce(&mine, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (worst == 0)
        return KM_OK;
    int cand = mine == worst ? rank : INT_MAX, first = 0;
    MPI_Allreduce(&cand, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    char msg[sizeof err->message];
    memcpy(msg, err->message, sizeof msg);
    msg[sizeof msg - 1] = 0;
    MPI_Bcast(msg, (int)sizeof msg, MPI_CHAR, first, MPI_COMM_WORLD);
    memcpy(err->message, msg, sizeof msg);
    return (km_status)worst;
}

km_status set_err(km_error *err, km_status st, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
    }
    return st;
}

/* Enters a phase: its name for the status file and, on rank 0, progress
 * f through ctl. */
void enter(worker *w, const km_fit_control *ctl, const char *phase,
                  double f)
{
    set_phase(w, phase);
    if (w->rank == 0 && ctl->progress)
        ctl->progress(ctl->ctx, f);
}
