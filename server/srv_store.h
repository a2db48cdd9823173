/*
 * srv_store.h - the models directory: one file per model, NAME.kmm.
 *
 * A file is only ever replaced by rename(2) of a fully written and
 * fsync'd temporary file, followed by an fsync of the directory, so after
 * a crash at any point a model file is either the old one or the new one,
 * never a mix. At start every NAME.kmm is loaded; one that fails to load
 * (checksum, truncation, unknown format) is renamed NAME.kmm.corrupt-<time>
 * and logged, and the rest are served. Temporary files left by a crash
 * (.NAME.kmm.tmp-*) are removed at start.
 *
 * Thread-safety: save and delete may run from several threads; callers
 * serialise operations on the same name (srv_state's commit lock).
 */
#ifndef SRV_STORE_H
#define SRV_STORE_H

#include "../core/km.h"
#include "srv_registry.h"

typedef struct srv_store srv_store;

/* Opens (creating if needed) dir. NULL with a message in err on failure. */
srv_store *srv_store_open(const char *dir, char *err, size_t errlen);
void srv_store_close(srv_store *s);

/* Loads every model file into r; returns how many were loaded. */
size_t srv_store_load_all(srv_store *s, srv_registry *r);

/* Writes m as NAME.kmm atomically. 0, or an errno value (ENOSPC, EIO...)
 * with the old file untouched. */
int srv_store_save(srv_store *s, const km_model *m);

/* Removes NAME.kmm. 0, or an errno value (ENOENT if absent). */
int srv_store_delete(srv_store *s, const char *name);

const char *srv_store_dir(const srv_store *s);

#endif
