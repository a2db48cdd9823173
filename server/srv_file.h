/*
 * srv_file.h - whole small files read at once: the MPI staging files,
 * read by the daemon (srv_mpi.c) and by the worker (mpi/kmserve_mpi.c,
 * which links this object too).
 *
 * Thread-safety: reentrant.
 */
#ifndef SRV_FILE_H
#define SRV_FILE_H

#include <stddef.h>

/* The whole regular file at path, NUL-terminated beyond *len (malloc'd);
 * NULL if it cannot be opened or read, is not a regular file, or is larger
 * than max bytes. */
unsigned char *srv_file_read(const char *path, size_t max, size_t *len);

#endif
