/*
 * cmn_beat.h - the liveness record of one rank of a distributed fit: each
 * rank of kmserve-mpi (mpi/kmserve_mpi.c) rewrites its own, PREFIX<rank>
 * beside the fit's staging files, from a heartbeat thread (so a rank busy
 * in one long ScaLAPACK call still beats); the daemon (server/srv_mpi.c) reads
 * them and enforces the deadlines of docs/distributed.md on them. The
 * format is this file's alone.
 *
 * One line: "RANK PID BEAT PHASE STATE WHERE"
 *   BEAT   a counter raised at every write: the daemon times its changes
 *          with its own clock, so the hosts' clocks need not agree
 *   PHASE  the rank's phase: CMN_BEAT_PHASE_INIT until MPI_Init returns
 *   STATE  "run"; "held" while the test hook holds the rank
 *          (KMSERVE_MPI_TEST_HOLD); "exit:CODE", written last, before the
 *          rank exits with CODE
 *   WHERE  this kernel's boot id and pid namespace: a daemon with the same
 *          WHERE can look PID up in its /proc
 *
 * It is in common/ (see cmn_file.h) because both sides build on it.
 *
 * Thread-safety: reentrant.
 */
#ifndef CMN_BEAT_H
#define CMN_BEAT_H

#include <stddef.h>

/* The phase of a rank that has not yet returned from MPI_Init. */
#define CMN_BEAT_PHASE_INIT "mpi-init"

typedef struct cmn_beat {
    int rank;
    long pid;
    unsigned long beat;
    char phase[24];
    char state[16];
    char where[96];
} cmn_beat;

/* This process's WHERE ("-" when /proc does not tell). */
void cmn_beat_where(char *buf, size_t len);

/* Writes b to path through path.tmp and rename (no fsync: a record is
 * worth a second, not a crash). 0, or -1 with errno set. */
int cmn_beat_write(const char *path, const cmn_beat *b);

/* Reads the record at path into b. 0, or -1 when it is missing or not
 * one well-formed record (a caller keeps what it knew). */
int cmn_beat_read(const char *path, cmn_beat *b);

/* 1 with *code set when b is a rank's last record ("exit:CODE"). */
int cmn_beat_exited(const cmn_beat *b, int *code);

#endif
