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
 * Several replicas may share the directory: srv_store_sync (at start, on
 * SIGHUP, and every --watch-interval from the watcher thread) loads files
 * that are new or changed since it last saw them and unloads models whose
 * file is gone. The store remembers each file it wrote or loaded (inode,
 * size, mtime), so its own writes are not loaded back.
 *
 * Thread-safety: all functions may run from any thread. Everything that
 * changes a name (save + registry swap, delete, a sync's load) runs under
 * the commit lock the caller gives, so files and registry agree.
 */
#ifndef SRV_STORE_H
#define SRV_STORE_H

#include <pthread.h>

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

/* Writes m as NAME.kmm atomically. 0, or an errno value (ENOSPC, EIO...)
 * with the old file untouched. Once the rename is done the result is 0
 * (a failed fsync of the directory after it is logged). Call with the
 * commit lock held. */
int srv_store_save(srv_store *s, const km_model *m);

/* Removes NAME.kmm. 0, or an errno value (ENOENT if absent; EACCES,
 * EROFS... when the directory cannot be changed, the file then stays).
 * Call with the commit lock held. */
int srv_store_delete(srv_store *s, const char *name);

const char *srv_store_dir(const srv_store *s);

/* 0 if the path still names the directory the store has open; else -1
 * with the reason (deleted, replaced, not a directory) in why. */
int srv_store_check(srv_store *s, char *why, size_t len);

#endif
