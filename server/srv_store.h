/*
 * srv_store.h - the models directory: one file per model, NAME.kmm.
 *
 * A file is only ever replaced by rename(2) of a fully written and
 * fsync'd temporary file, followed by an fsync of the directory, so after
 * a crash at any point a model file is either the old one or the new one,
 * never a mix. At start every NAME.kmm is loaded; one that fails to load
 * (checksum, truncation, unknown format, any check of km_model_load_buffer)
 * is renamed NAME.kmm.corrupt-<time> and logged, and the rest are served.
 * Only regular files (or symlinks to one) whose NAME is a valid model name
 * are read: any other NAME.kmm (a FIFO, a device, a directory, a name
 * with a space or bytes that are not UTF-8) is left where it is and
 * logged once (event model_file_skipped). A file's header is checked
 * against its size before the rest is read. Temporary files are removed
 * only when provably stale: left by a process of this host that is gone,
 * or an hour old (the rule is in srv_store.c), never another replica's
 * write in flight. When the directory is deleted and another made under
 * its path, the next sync opens the new one; while the path names no
 * directory, syncs leave the registry as it is and srv_store_check says
 * why.
 *
 * Older versions are kept, with --keep-versions N > 1, as
 * NAME.kmm.vVERSION beside it (see srv_store_save); scans pass over
 * them, and requests that name a version read them from disk.
 *
 * Several replicas may share the directory: srv_store_sync (at start, on
 * SIGHUP, and every --watch-interval from the watcher thread) loads files
 * that are new or changed since it last saw them and unloads models whose
 * file is gone. The store remembers each file it wrote or loaded (inode,
 * size, mtime, version), so its own writes are not loaded back. Changes
 * to one name's files are serialised across replicas by the name's lock
 * (srv_store_lock), and each numbers its version after the file on disk
 * (srv_store_read_head), not after what its registry last saw.
 *
 * Thread-safety: all functions may run from any thread. Everything that
 * changes a name (save + registry swap, delete, a sync's load) runs under
 * the commit lock the caller gives, so files and registry agree; saves
 * and deletes also under the name's lock.
 */
#ifndef SRV_STORE_H
#define SRV_STORE_H

#include <pthread.h>
#include <sys/types.h>
#include <time.h>

#include "../core/km.h"
#include "srv_registry.h"

typedef struct srv_store srv_store;

/* Opens (creating if needed) dir. NULL with a message in err on failure. */
srv_store *srv_store_open(const char *dir, char *err, size_t errlen);
/* Stops the watcher, if any, and frees the store. */
void srv_store_close(srv_store *s);

/* Brings r in line with the directory (see above), taking commit_lock
 * around each change. Returns the number of models loaded; *removed (may
 * be NULL) gets the number unloaded. */
size_t srv_store_sync(srv_store *s, srv_registry *r,
                      pthread_mutex_t *commit_lock, size_t *removed);

/* Starts a thread that syncs every interval seconds (0: none). */
int srv_store_watch(srv_store *s, srv_registry *r,
                    pthread_mutex_t *commit_lock, double interval);

/* Takes name's lock shared with the other processes on the directory
 * (replicas): an exclusive flock(2) on the hidden file .NAME.kmm.lock.
 * Every change of name's files (save, delete) runs under it, taken after
 * the commit lock, so that two replicas changing one name take turns:
 * each sees the other's file, numbers its version after it and keeps it.
 * Returns the lock for srv_store_unlock, or -1 when none can be had (the
 * directory cannot be written, so the change fails anyway; or the file
 * system has no locks: logged once as store_unlocked, and the change runs
 * under the commit lock alone). */
int srv_store_lock(srv_store *s, const char *name);
/* Releases it; remove: after a delete, also removes the lock's file. */
void srv_store_unlock(srv_store *s, const char *name, int lock, int remove);

/* What NAME.kmm is on disk: present or not, the file (device, inode, size,
 * modification time) and the version it holds (0 when it cannot be
 * read; a scan quarantines it). Read under the name's lock, it is the
 * version the next one follows, whichever replica wrote it. */
typedef struct srv_store_head {
    int present;
    uint64_t version;
    int64_t created_at_ms; /* the version's creation time: with version,
                              which life of the name it is (a delete and
                              a fit start again at version 1) */
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime;
} srv_store_head;

/* Fills *head: 0, or an errno value other than ENOENT (no file is
 * present 0). A file the store wrote or loaded itself is not read again.
 * Commit lock (and name's lock) held. */
int srv_store_read_head(srv_store *s, const char *name, srv_store_head *head);

/* Writes m as NAME.kmm atomically. replaced: what NAME.kmm was, as
 * srv_store_read_head found it under the same locks. With more than one
 * version kept, the file it replaces is first kept as NAME.kmm.vVERSION,
 * VERSION the one that file holds (see keep_replaced in
 * srv_store_write.c), and after the rename kept files beyond the newest
 * keep - 1 are removed. 0, or an errno value (ENOSPC, EIO...) with NAME.kmm untouched. Once the
 * rename is done the result is 0 (a failed fsync of the directory after
 * it is logged), and *written is the file written (the temporary file's
 * own identity, whatever NAME.kmm is by now). The store does not know the
 * file yet: a sync meanwhile loads it, after the commit lock. Call with
 * the commit lock and name's lock held. */
int srv_store_save(srv_store *s, const km_model *m,
                   const srv_store_head *replaced, srv_store_head *written);
/* Records the file srv_store_save wrote as the one the store knows, so
 * that syncs pass over it. Call once the registry serves its model, in the
 * same hold of the commit lock as the save: a sync that finds the file
 * known concludes that the registry serves it. */
void srv_store_served(srv_store *s, const char *name,
                      const srv_store_head *written);

/* Removes every kept version of name, then NAME.kmm. 0, or an errno value
 * (ENOENT if NAME.kmm was absent, the kept ones removed all the same;
 * EACCES, EROFS... when the directory cannot be changed: NAME.kmm then
 * stays, so a delete that fails leaves the name with its current version,
 * never a kept version without it). Call with the commit lock and name's
 * lock held. */
int srv_store_delete(srv_store *s, const char *name);

/* --keep-versions: how many versions of each name are kept on disk, the
 * current one included (1, the default: only NAME.kmm). Set before the
 * store is used. */
void srv_store_keep(srv_store *s, int versions);
int srv_store_keeps(const srv_store *s);
/* --factor-files-mib: a model's factor of at least min_bytes is saved in
 * block files beside its model file (0: every factor). Set before the
 * store is used; until then every factor is. */
void srv_store_factor_files(srv_store *s, uint64_t min_bytes);

/* The kept (older) versions of name on disk, newest first, only those
 * below `below` (0: all). 0, or an errno value. Caller frees *versions.
 * Reads the directory; needs no lock. */
int srv_store_versions(srv_store *s, const char *name, uint64_t below,
                       uint64_t **versions, size_t *n);
/* The size of the kept file of name's version; 0, or ENOENT when that
 * version is not kept. */
int srv_store_version_size(srv_store *s, const char *name, uint64_t version,
                           size_t *size);
/* What loading the kept file of name's version takes: its size (the file
 * read whole) and the peak of reading it (km_model_load_bytes, from a
 * read-only mapping of the file: nothing of its size is allocated), or
 * the size again when its records cannot be read (the load fails on
 * them). 0, or ENOENT when that version is not kept (another errno when
 * it cannot be opened). */
int srv_store_version_bytes(srv_store *s, const char *name, uint64_t version,
                            size_t *bytes);
/* Loads the kept version of name from its file, checked as a scan checks
 * (it must hold that version); NULL with the reason in why, and *gone set
 * when there is no such file (never kept, or pruned or deleted since it
 * was listed, or while it was read: its factor's block files go with it;
 * not found, not an error). With file non-NULL, *file gets the
 * file read, still open (caller closes it), for srv_store_still_kept.
 * Caller owns the model. Needs no lock: the file is never written in
 * place. */
km_model *srv_store_load_version(srv_store *s, const char *name,
                                 uint64_t version, int *file, int *gone,
                                 char *why, size_t whylen);
/* Whether name's kept version is still the file open as file (from
 * srv_store_load_version): 0 when it has been pruned, or deleted with the
 * name, since; a file of that version written in a later life of the
 * name (after a delete) is another file. Holding the file open keeps its
 * inode from being reused meanwhile. Commit lock and name's lock held. */
int srv_store_still_kept(srv_store *s, const char *name, uint64_t version,
                         int file);

const char *srv_store_dir(const srv_store *s);

/* 0 if the path still names the directory the store has open; else -1
 * with the reason (deleted, replaced, not a directory) in why. */
int srv_store_check(srv_store *s, char *why, size_t len);

#endif
