/*
 * srv_commit.h - the commit policy: the one place that changes which model
 * a name serves.
 *
 * A fitted model becomes served in two steps, store then swap: its file
 * is written (atomically, see srv_store.h) under the next version, and
 * only then is it put in the registry in place of the previous version.
 * A model that cannot be written is never served, so what is served is
 * always what a restart would load. A delete goes the same way round:
 * the file first, then the registry entry.
 *
 * The commit lock serialises every change to a name (commits, deletes,
 * and the store's syncs, which take it through srv_commit_lock), so
 * versions and files stay consistent; commits and deletes also take the
 * name's lock in the directory (srv_store_lock), which serialises them
 * with the other replicas' and numbers a version after the file on disk.
 * Predict lookups never take either.
 *
 * Thread-safety: all functions may run from any thread.
 */
#ifndef SRV_COMMIT_H
#define SRV_COMMIT_H

#include <cJSON.h>
#include <pthread.h>

#include "../api/api_error.h"
#include "../core/km.h"
#include "srv_metrics.h"
#include "srv_registry.h"
#include "srv_store.h"

typedef struct srv_commit srv_commit;

/* Borrows registry, store and metrics for the commit's lifetime. NULL when
 * out of memory. Caller owns the result; free with srv_commit_free(). */
srv_commit *srv_commit_create(srv_registry *registry, srv_store *store,
                              srv_metrics *metrics);
void srv_commit_free(srv_commit *c);

/* The lock that serialises changes to a name, for srv_store_sync and
 * srv_store_watch. Borrowed: valid until srv_commit_free. */
pthread_mutex_t *srv_commit_lock(srv_commit *c);

/* The version served under name, or 0 when there is none. */
uint64_t srv_commit_served(srv_commit *c, const char *name);

/* Commits a fitted model under name: assigns the next version (after
 * the one NAME.kmm holds on disk: the one served, or another replica's
 * that wrote last; 1 when there is none) and the creation time, writes
 * the file, swaps it into the registry. Takes ownership of model. Returns
 * 0 and the model's metadata in *metadata (caller owns it), or -1 with e
 * set: 409 when the name is at the last version a file can hold, 507 when
 * the file cannot be written, or the one there cannot be looked at (the
 * previous version stays served). */
int srv_commit_model(srv_commit *c, const char *name, km_model *model,
                     cJSON **metadata, api_error *e);

/* The same for an update's model (km_model_update of base, a version of
 * name): committed only while base is still the newest version (on disk:
 * also another replica's), the same version of the same life of the name
 * (its creation time too: a delete and a fit start again at version 1),
 * so that no update is lost to another fit, update or rollback that
 * committed while it ran, and none brings a deleted model's rows back;
 * else 409 naming the version now current (the caller sends the update
 * again). */
int srv_commit_update(srv_commit *c, const char *name, km_model *model,
                      const km_model *base, cJSON **metadata, api_error *e);

/* The same for a model read from an uploaded file (an import): logged
 * as model_imported, and not counted as a fit in the metrics. */
int srv_commit_import(srv_commit *c, const char *name, km_model *model,
                      cJSON **metadata, api_error *e);
/* Makes model, the content of name's kept version restores (loaded by
 * the caller from the file kept, still open: srv_store_load_version), the
 * next version of name, as a fit would: the same store and swap, the
 * version it replaces kept as any other. Counted as a rollback (not a
 * fit) and logged as model_rolled_back. Takes ownership of model (not of
 * kept). 0 and the metadata as srv_commit_model, or -1 with e set: 404
 * when name has no file any more (deleted, here or by a replica), or when
 * kept is no longer the file of that version: pruned, or deleted with the
 * name (so a version of an earlier life of the name, before a delete, is
 * never restored into a later one: a delete is final); 409 when restores
 * is the version now current; 507 as srv_commit_model. */
int srv_commit_rollback(srv_commit *c, const char *name, km_model *model,
                        uint64_t restores, int kept, cJSON **metadata,
                        api_error *e);

/* Stops serving name: removes its file and its kept versions, then its
 * registry entry. 0, or -1
 * with e set: 404 when no such model is served, 507 when the file cannot
 * be removed (the model stays served). */
int srv_commit_delete(srv_commit *c, const char *name, api_error *e);

#endif
