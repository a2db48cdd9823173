/*
 * srv_store_internal.h - what the store's files share (srv_store.c,
 * srv_store_files.c, srv_store_kept.c, srv_store_write.c): the store's
 * struct, the names of its files, and srv_store_files.c's helpers. Not
 * for the rest of server/, which uses srv_store.h.
 *
 * Thread-safety: see srv_store.c.
 */
#ifndef SRV_STORE_INTERNAL_H
#define SRV_STORE_INTERNAL_H

#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "../api/api_model.h"
#include "srv_store.h"

#define SUFFIX ".kmm"
#define LOCK_SUFFIX SUFFIX ".lock"
/* Largest model file read at start (far beyond what a fit produces). */
#define MAX_FILE ((size_t)64 << 30)

/* A file the store wrote or loaded, as it was then. */
typedef struct known_file {
    char name[72];
    ino_t ino;
    off_t size;
    struct timespec mtime;
    uint64_t version; /* the version the file holds */
    int64_t created_at_ms; /* and its creation time */
    int seen;         /* during a sync */
} known_file;

struct srv_store {
    char dir[1024];
    char host[64];
    unsigned long pid_ns;      /* inode of our PID namespace; 0 unknown */
    unsigned nonce;            /* random, per process start */
    int dirfd;                 /* changed only by a sync, under the
                                  commit lock and lock */
    atomic_uint counter;
    pthread_mutex_t lock;      /* files; dirfd for readers without the
                                  commit lock */
    known_file *files;
    size_t n_files, cap_files;
    int dir_errno;             /* why the path was unusable at the last
                                  sync, or 0 (sync_lock) */
    int keep;                  /* versions kept of each name (>= 1) */
    uint64_t factor_min;       /* --factor-files-mib in bytes */
    atomic_int lock_warned;    /* store_unlocked logged */
    pthread_mutex_t sync_lock; /* one sync at a time */
    /* the watcher */
    pthread_t watcher;
    int watching, stop;
    pthread_mutex_t watch_lock;
    pthread_cond_t watch_cond;
    srv_registry *registry;
    pthread_mutex_t *commit_lock;
    double interval;
    /* entries skipped (and logged once), guarded by sync_lock */
    struct skipped_entry *skipped;
    size_t n_skipped, cap_skipped;
};

/* A save's temporary file and a keep link (see srv_store.c's temporary
 * files). */
#define TEMP_MARK SUFFIX ".tmp-"
#define KEEP_MARK SUFFIX ".keep-"

/* ---------------------------------------- srv_store_files.c: known files */

/* Whether s ends with suffix, and is longer. */
int ends_with(const char *s, const char *suffix);
/* Records name's file as it is now (st), holding version created at
 * created_at_ms, or forgets it (st NULL). Takes the store's lock. */
void remember(srv_store *s, const char *name, const struct stat *st,
              uint64_t version, int64_t created_at_ms);
/* Whether the file of name (st) is the one the store knows; if so,
 * *version and *created_at_ms (may be NULL) get the version it holds and
 * its creation time. seen: a sync's check, which marks name's known file
 * seen. */
int known_version(srv_store *s, const char *name, const struct stat *st,
                  uint64_t *version, int64_t *created_at_ms, int seen);
/* known_version as a sync's check. */
int is_known(srv_store *s, const char *name, const struct stat *st);
/* Marks name's known file as seen by the sync under way. */
void mark_seen(srv_store *s, const char *name);

/* ---------------------------------------- srv_store_files.c: reading */

/* "a directory", "a FIFO", ... for a message about an entry. */
const char *file_kind(mode_t mode);
/* Reads up to n bytes at offset off; the count read, or -1. */
ssize_t read_at(int fd, unsigned char *buf, size_t n, off_t off);
/* Opens a model file of the directory to read: without blocking and
 * without becoming a controlling terminal. -1 with errno set. */
int open_model(int dirfd, const char *file);
/* Reads and loads the model file open as fd (borrowed), a file of name
 * in dirfd (borrowed), whose factor blocks are read from there; NULL with
 * why filled; *special when it is not a regular file. */
km_model *read_model_fd(int fd, int dirfd, const char *name, char *why,
                        size_t whylen, int *special);
/* The same for file of dirfd. */
km_model *read_model(int dirfd, const char *file, const char *name,
                     char *why, size_t whylen, int *special);
/* A listing of dirfd (borrowed), or NULL with errno set. */
DIR *open_listing(int dirfd);

/* ---------------------------------------- srv_store_files.c: kept names */

/* The version in a kept file's name NAME.kmm.vVERSION, or 0 when file is
 * not one of name's. */
uint64_t kept_version(const char *file, const char *name);
/* NAME.kmm.vVERSION into buf. */
void kept_file(char *buf, size_t len, const char *name, uint64_t v);
/* A handle on the directory for readers without the commit lock. -1 with
 * errno set on failure. */
int dir_dup(srv_store *s);
/* The kept versions of name in dirfd (borrowed), newest first. 0, or an
 * errno value. Caller frees *out. */
int list_kept(int dirfd, const char *name, uint64_t **out, size_t *n);

/* ---------------------------------------- srv_store_files.c: factor blocks
 *
 * The block files of a model's factor (core's km_blocks; docs/model-format.md
 * "Factor blocks"): .NAME.kmm.bVERSION-ID, ID 16 hex digits, one name for
 * each version holding the block, all hard links to one file (hidden:
 * scans pass over them). */

#define BLOCK_MARK SUFFIX ".b"
/* .NAME.kmm.bVERSION-ID into buf. */
void block_file(char *buf, size_t len, const char *name, uint64_t version,
                uint64_t id);
/* Whether file is a block link of name's; if so *version and *id. */
int block_link(const char *file, const char *name, uint64_t *version,
               uint64_t *id);

#endif
