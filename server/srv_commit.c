/*
 * srv_commit.c - store, then swap; see srv_commit.h.
 *
 * Thread-safety: every change runs under the commit lock; the registry,
 * store and metrics are thread-safe on their own.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../api/api_model.h"
#include "srv_clock.h"
#include "srv_commit.h"
#include "srv_log.h"
#include "srv_test.h"

struct srv_commit {
    srv_registry *registry;
    srv_store *store;
    srv_metrics *metrics;
    pthread_mutex_t lock;
    int64_t last_created; /* the newest creation time given (ms) */
};

srv_commit *srv_commit_create(srv_registry *registry, srv_store *store,
                              srv_metrics *metrics)
{
    srv_commit *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->registry = registry;
    c->store = store;
    c->metrics = metrics;
    pthread_mutex_init(&c->lock, NULL);
    return c;
}

void srv_commit_free(srv_commit *c)
{
    if (!c)
        return;
    pthread_mutex_destroy(&c->lock);
    free(c);
}

uint64_t srv_commit_served(srv_commit *c, const char *name)
{
    return srv_registry_version(c->registry, name);
}

pthread_mutex_t *srv_commit_lock(srv_commit *c)
{
    return &c->lock;
}

/* The creation time of name's newest version: its file's (head), or the
 * served model's when the file cannot be read. Commit lock held. */
static int64_t created_of(srv_commit *c, const char *name,
                          const srv_store_head *head)
{
    if (head->version)
        return head->created_at_ms;
    srv_ref *ref = srv_registry_get(c->registry, name);
    int64_t t = ref ? km_model_created_at_ms(srv_ref_model(ref)) : 0;
    srv_ref_release(ref);
    return t;
}

/* Store, then swap, under the commit lock and name's lock (shared with
 * the replicas): model becomes the next version of name, numbered after
 * the file on disk (another replica's, when it wrote last). imported: an
 * upload's model (1) or a fit's (0); restores: the kept version whose
 * content it is (a rollback), or 0; kept: then the file it was read from,
 * which must still be that version's file (see srv_commit_rollback);
 * base: the version an update added rows to, which must still be the
 * newest of the same life of the name (srv_commit_update), or NULL. */
static int commit(srv_commit *c, const char *name, km_model *model,
                  int imported, uint64_t restores, int kept,
                  const km_model *base, cJSON **metadata, api_error *e)
{
    srv_store_head head, written;
    pthread_mutex_lock(&c->lock);
    int lock = srv_store_lock(c->store, name);
    int rc = srv_store_read_head(c->store, name, &head);
    /* a file that cannot be read holds, for numbering, what is served */
    uint64_t current = !head.present ? 0
                       : head.version ? head.version
                                      : srv_registry_version(c->registry,
                                                             name);
    uint64_t version = current + 1;
    const char *refusal = NULL;
    api_code code = API_CONFLICT;
    if (rc) {
        code = API_INSUFFICIENT_STORAGE;
        refusal = "could not be read from the models directory";
    } else if (restores && !current) {
        code = API_NOT_FOUND;
        refusal = "does not exist";
    } else if (restores && restores == current) {
        refusal = "is already at that version";
    } else if (restores &&
               !srv_store_still_kept(c->store, name, restores, kept)) {
        code = API_NOT_FOUND;
        refusal = "no longer has the version to restore (it was pruned, or "
                  "deleted with the model, since it was read); it is at";
    } else if (base && km_model_version(base) != current) {
        refusal = current ? "changed while the update ran: the update "
                            "added rows to an older version (send it "
                            "again); it is now at"
                          : "was deleted while the update ran; it is at";
    } else if (base && km_model_created_at_ms(base) !=
                           created_of(c, name, &head)) {
        refusal = "was deleted and fitted again while the update ran: the "
                  "rows were added to the deleted model, not to this one; "
                  "it is at";
    } else if (version > KM_MODEL_MAX_VERSION) { /* a file could not hold it */
        refusal = "is at the last version a model file can hold; delete it "
                  "to fit it again from version 1";
    }
    if (refusal) {
        srv_store_unlock(c->store, name, lock, 0);
        pthread_mutex_unlock(&c->lock);
        km_model_free(model);
        if (rc)
            return api_raise(e, code, "model \"%s\" %s: %s", name, refusal,
                             strerror(rc));
        return api_raise(e, code, "model \"%s\" %s (version %llu)", name,
                         refusal, (unsigned long long)current);
    }
    /* creation times differ, so that with the version they tell the
     * lives of a name apart (srv_commit_update) */
    int64_t now = srv_now_ms();
    c->last_created = now > c->last_created ? now : c->last_created + 1;
    km_model_set_identity(model, name, version, c->last_created);
    rc = srv_store_save(c->store, model, &head, &written);
    if (rc) {
        srv_store_unlock(c->store, name, lock, 0);
        pthread_mutex_unlock(&c->lock);
        km_model_free(model);
        srv_log(SRV_ERROR, "model_not_stored", "%s version %llu: %s", name,
                (unsigned long long)version, strerror(rc));
        return api_raise(e, API_INSUFFICIENT_STORAGE,
                        "the model could not be written to %s: %s; the "
                        "previous version stays", srv_store_dir(c->store),
                        strerror(rc));
    }
    srv_store_unlock(c->store, name, lock, 0);
    *metadata = api_model_json(model);
    if (restores) {
        srv_metrics_rollback(c->metrics);
        srv_log(SRV_INFO, "model_rolled_back", "%s version %llu restores "
                "version %llu (%s)", name, (unsigned long long)version,
                (unsigned long long)restores,
                km_algorithm_name(km_model_algorithm(model)));
    } else {
        const km_info_entry *secs = km_info_find(km_model_training(model),
                                                 "seconds");
        if (!imported)
            srv_metrics_fit(c->metrics, km_model_algorithm(model),
                            secs ? secs->values[0] : 0);
        srv_log(SRV_INFO, imported ? "model_imported" : "model_fitted",
                "%s version %llu (%s, %zu samples)", name,
                (unsigned long long)version,
                km_algorithm_name(km_model_algorithm(model)),
                km_model_n_samples(model));
    }
    srv_test_pause("commit_stored");
    if (srv_registry_put(c->registry, model)) {
        /* the file stays unknown: the next sync loads it */
        pthread_mutex_unlock(&c->lock);
        cJSON_Delete(*metadata);
        *metadata = NULL;
        return api_raise(e, API_INTERNAL, "out of memory serving the model");
    }
    /* known only now that it is served, in the same hold of the lock: a
     * sync never finds it known while the registry serves the previous
     * model */
    srv_store_served(c->store, name, &written);
    pthread_mutex_unlock(&c->lock);
    return 0;
}

int srv_commit_model(srv_commit *c, const char *name, km_model *model,
                     cJSON **metadata, api_error *e)
{
    return commit(c, name, model, 0, 0, -1, NULL, metadata, e);
}

int srv_commit_update(srv_commit *c, const char *name, km_model *model,
                      const km_model *base, cJSON **metadata, api_error *e)
{
    return commit(c, name, model, 0, 0, -1, base, metadata, e);
}

int srv_commit_import(srv_commit *c, const char *name, km_model *model,
                      cJSON **metadata, api_error *e)
{
    return commit(c, name, model, 1, 0, -1, NULL, metadata, e);
}

int srv_commit_rollback(srv_commit *c, const char *name, km_model *model,
                        uint64_t restores, int kept, cJSON **metadata,
                        api_error *e)
{
    return commit(c, name, model, 0, restores ? restores : 1, kept, NULL,
                  metadata, e);
}

/* A file already gone (another replica deleted it) is no failure: the
 * name is unserved all the same. */
int srv_commit_delete(srv_commit *c, const char *name, api_error *e)
{
    pthread_mutex_lock(&c->lock);
    srv_ref *ref = srv_registry_get(c->registry, name);
    int lock = ref ? srv_store_lock(c->store, name) : -1;
    int rc = ref ? srv_store_delete(c->store, name) : ENOENT;
    if (ref && (rc == 0 || rc == ENOENT)) {
        srv_registry_remove(c->registry, name);
        rc = 0;
    }
    srv_store_unlock(c->store, name, lock, ref && !rc);
    pthread_mutex_unlock(&c->lock);
    if (!ref)
        return api_raise(e, API_NOT_FOUND, "model \"%s\" does not exist",
                        name);
    srv_ref_release(ref);
    if (rc) /* the directory cannot be changed (EACCES, EROFS, EIO) */
        return api_raise(e, API_INSUFFICIENT_STORAGE, "could not remove "
                        "the file of model \"%s\" from %s: %s; it is still "
                        "served", name, srv_store_dir(c->store),
                        strerror(rc));
    srv_log(SRV_INFO, "model_deleted", "%s", name);
    return 0;
}
