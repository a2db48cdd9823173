/*
 * cmn_file.h - whole small files read or written at once: the MPI
 * staging files, by the daemon (server/srv_mpi.c) and by the worker
 * (mpi/kmserve_mpi.c).
 *
 * common/ is what the daemon and the MPI worker share below both: plain
 * POSIX file and process plumbing, no sockets, no printing, no state. It
 * is not core/ (libkm): core is the numbers, usable on its own, and knows
 * nothing of staging files, /proc or the daemon-worker protocol; nor is
 * it server/, which the worker must not link (see docs/architecture.md).
 *
 * Thread-safety: reentrant.
 */
#ifndef CMN_FILE_H
#define CMN_FILE_H

#include <stddef.h>

/* The whole regular file at path, NUL-terminated beyond *len (malloc'd);
 * NULL if it cannot be opened or read, is not a regular file, or is larger
 * than max bytes. */
unsigned char *cmn_file_read(const char *path, size_t max, size_t *len);

/* Creates path (exclusive: it must not exist; else truncated) with mode,
 * writes the len bytes of buf, fsyncs and closes it. 0, or -1 with errno
 * set (the file may then be partly written: the caller removes it). */
int cmn_file_write(const char *path, const void *buf, size_t len,
                   int exclusive, int mode);

#endif
