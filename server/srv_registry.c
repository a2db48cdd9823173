/*
 * srv_registry.c - name -> reference-counted model.
 *
 * A sorted array with binary search: registries hold tens to thousands of
 * models, lookups dominate, and a sorted array also gives the list its
 * order for free. Reference counts are atomic so release needs no lock.
 *
 * Thread-safety: one mutex guards the array; see srv_registry.h.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "srv_registry.h"

struct srv_ref {
    atomic_size_t refs;
    km_model *model;
    uint64_t lineage; /* srv_registry.h; 0 for srv_ref_own's */
    atomic_bool served; /* the registry serves it now (srv_ref_served) */
};

struct srv_registry {
    pthread_mutex_t lock;
    srv_ref **items; /* sorted by model name */
    size_t n, cap;
    uint64_t lineages; /* the last lineage given */
};

srv_registry *srv_registry_create(void)
{
    srv_registry *r = calloc(1, sizeof *r);
    if (r)
        pthread_mutex_init(&r->lock, NULL);
    return r;
}

void srv_ref_release(srv_ref *ref)
{
    if (ref && atomic_fetch_sub(&ref->refs, 1) == 1) {
        km_model_free(ref->model);
        free(ref);
    }
}

void srv_registry_free(srv_registry *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++)
        srv_ref_release(r->items[i]);
    free(r->items);
    pthread_mutex_destroy(&r->lock);
    free(r);
}

srv_ref *srv_ref_own(km_model *model)
{
    srv_ref *ref = malloc(sizeof *ref);
    if (!ref) {
        km_model_free(model);
        return NULL;
    }
    atomic_init(&ref->refs, 1);
    ref->model = model;
    ref->lineage = 0;
    atomic_init(&ref->served, 0);
    return ref;
}

const km_model *srv_ref_model(const srv_ref *ref)
{
    return ref->model;
}

uint64_t srv_ref_lineage(const srv_ref *ref)
{
    return ref->lineage;
}

int srv_ref_served(const srv_ref *ref)
{
    return atomic_load(&ref->served);
}

/* Index of name, or -(insertion point) - 1. Lock held. */
static long find(const srv_registry *r, const char *name)
{
    size_t lo = 0, hi = r->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(km_model_name(r->items[mid]->model), name);
        if (c == 0)
            return (long)mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -(long)lo - 1;
}

srv_ref *srv_registry_get(srv_registry *r, const char *name)
{
    srv_ref *ref = NULL;
    pthread_mutex_lock(&r->lock);
    long i = find(r, name);
    if (i >= 0) {
        ref = r->items[i];
        atomic_fetch_add(&ref->refs, 1);
    }
    pthread_mutex_unlock(&r->lock);
    return ref;
}

int srv_registry_put(srv_registry *r, km_model *model)
{
    srv_ref *ref = malloc(sizeof *ref), *old = NULL;
    if (!ref) {
        km_model_free(model);
        return -1;
    }
    atomic_init(&ref->refs, 1);
    atomic_init(&ref->served, 1);
    ref->model = model;
    pthread_mutex_lock(&r->lock);
    long i = find(r, km_model_name(model));
    if (i >= 0) {
        old = r->items[i];
        atomic_store(&old->served, 0);
        ref->lineage = old->lineage;
        r->items[i] = ref;
    } else {
        if (r->n == r->cap) {
            size_t cap = r->cap ? 2 * r->cap : 16;
            srv_ref **items = realloc(r->items, cap * sizeof *items);
            if (!items) {
                pthread_mutex_unlock(&r->lock);
                srv_ref_release(ref);
                return -1;
            }
            r->items = items;
            r->cap = cap;
        }
        size_t at = (size_t)(-i - 1);
        memmove(r->items + at + 1, r->items + at,
                (r->n - at) * sizeof *r->items);
        ref->lineage = ++r->lineages;
        r->items[at] = ref;
        r->n++;
    }
    pthread_mutex_unlock(&r->lock);
    srv_ref_release(old); /* outside the lock: may free a large model */
    return 0;
}

int srv_registry_remove(srv_registry *r, const char *name)
{
    srv_ref *old = NULL;
    pthread_mutex_lock(&r->lock);
    long i = find(r, name);
    if (i >= 0) {
        old = r->items[i];
        atomic_store(&old->served, 0);
        memmove(r->items + i, r->items + i + 1,
                (r->n - (size_t)i - 1) * sizeof *r->items);
        r->n--;
    }
    pthread_mutex_unlock(&r->lock);
    srv_ref_release(old);
    return old ? 0 : -1;
}

uint64_t srv_registry_version(srv_registry *r, const char *name)
{
    srv_ref *ref = srv_registry_get(r, name);
    uint64_t v = ref ? km_model_version(ref->model) : 0;
    srv_ref_release(ref);
    return v;
}

int srv_registry_list(srv_registry *r, srv_ref ***refs, size_t *n)
{
    pthread_mutex_lock(&r->lock);
    *refs = malloc((r->n ? r->n : 1) * sizeof **refs);
    if (!*refs) {
        pthread_mutex_unlock(&r->lock);
        return -1;
    }
    for (size_t i = 0; i < r->n; i++) {
        (*refs)[i] = r->items[i];
        atomic_fetch_add(&r->items[i]->refs, 1);
    }
    *n = r->n;
    pthread_mutex_unlock(&r->lock);
    return 0;
}

size_t srv_registry_count(srv_registry *r)
{
    pthread_mutex_lock(&r->lock);
    size_t n = r->n;
    pthread_mutex_unlock(&r->lock);
    return n;
}

size_t srv_registry_bytes(srv_registry *r)
{
    size_t b = 0;
    pthread_mutex_lock(&r->lock);
    for (size_t i = 0; i < r->n; i++)
        b += km_model_bytes(r->items[i]->model);
    pthread_mutex_unlock(&r->lock);
    return b;
}
