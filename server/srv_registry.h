/*
 * srv_registry.h - the models being served, by name.
 *
 * Each entry holds a reference-counted handle to an immutable km_model.
 * A lookup takes a reference; replacing or removing a name only drops the
 * registry's own reference, so a predict that holds the old model finishes
 * on it and the model is freed when the last reference goes.
 *
 * Thread-safety: all functions are safe from any thread. Lookups hold the
 * registry mutex only to find the entry and count the reference.
 */
#ifndef SRV_REGISTRY_H
#define SRV_REGISTRY_H

#include <stddef.h>
#include <stdint.h>

#include "../core/km.h"

typedef struct srv_ref srv_ref;
typedef struct srv_registry srv_registry;

srv_registry *srv_registry_create(void);
/* Drops every entry (models still referenced live on until released). */
void srv_registry_free(srv_registry *r);

/* Takes a reference on the model called name; NULL if there is none.
 * Release with srv_ref_release. */
srv_ref *srv_registry_get(srv_registry *r, const char *name);
const km_model *srv_ref_model(const srv_ref *ref);
void srv_ref_release(srv_ref *ref);
/* A reference to a model held by no registry (a kept version read from
 * disk for one request): the model is freed with its last release. Takes
 * ownership; NULL on OOM (model freed). */
srv_ref *srv_ref_own(km_model *model);

/* Makes model the one served under its name (km_model_name), taking
 * ownership; the previous one, if any, is released. -1 on OOM (model
 * freed). */
int srv_registry_put(srv_registry *r, km_model *model);
/* Removes name; 0 if it was there, -1 if not. */
int srv_registry_remove(srv_registry *r, const char *name);

/* The version served under name, or 0. */
uint64_t srv_registry_version(srv_registry *r, const char *name);

/* A name's lineage: a number (from 1, never given twice) that a name
 * keeps while it is served, through refits, updates, rollbacks and
 * reloads, and that changes when the name is removed and served again (a
 * delete, then a fit): what belongs to a served model and must not
 * outlive its delete (the drift reservoir) is kept by lineage. */
/* The lineage of ref's entry when the ref was taken; 0 for srv_ref_own's. */
uint64_t srv_ref_lineage(const srv_ref *ref);
/* Whether ref is the entry its name serves now: 0 once a refit, update,
 * rollback or delete has replaced it (and for srv_ref_own's). No lock. */
int srv_ref_served(const srv_ref *ref);

/* References to all models, sorted by name; caller releases each and
 * frees the array. -1 on OOM. */
int srv_registry_list(srv_registry *r, srv_ref ***refs, size_t *n);

size_t srv_registry_count(srv_registry *r);
/* Heap bytes of all models served. */
size_t srv_registry_bytes(srv_registry *r);

#endif
