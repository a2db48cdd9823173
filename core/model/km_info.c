/*
 * km_info.c - info lists, the named figures a model keeps (its parameters
 * and training figures): adding, finding, and their form in a model file,
 * written and read back under the loader's checks.
 *
 * Thread-safety: reentrant; a shared model's lists are only read.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../base/km_base_internal.h"
#include "km_model_internal.h"

/* Whether value v can be a figure of this kind: the rule the loader
 * applies, so the only values a list holds and a file stores. */
static int valid_figure(km_info_kind kind, double v)
{
    if (!isfinite(v))
        return 0;
    if (kind == KM_INFO_BOOLEAN)
        return v == 0 || v == 1;
    return kind != KM_INFO_INTEGER || v == floor(v);
}

/* Whether all count values are valid figures of this kind. */
static int valid_figures(km_info_kind kind, const double *v, size_t count)
{
    for (size_t i = 0; i < count; i++)
        if (!valid_figure(kind, v[i]))
            return 0;
    return 1;
}

void km_info_cleanup(km_info *info)
{
    for (size_t i = 0; i < info->count; i++)
        free(info->entries[i].values);
    free(info->entries);
    info->entries = NULL;
    info->count = 0;
}

km_status km_info_add(km_info *info, const char *key, km_info_kind kind,
                      int is_array, const double *values, size_t count)
{
    km_info_entry *e = realloc(info->entries,
                               (info->count + 1) * sizeof *info->entries);
    if (!e)
        return KM_ENOMEM;
    info->entries = e;
    e = &info->entries[info->count];
    memset(e, 0, sizeof *e);
    snprintf(e->key, sizeof e->key, "%s", key);
    e->kind = kind;
    e->is_array = is_array;
    e->count = count;
    e->values = malloc((count ? count : 1) * sizeof *e->values);
    if (!e->values)
        return KM_ENOMEM;
    if (count)
        memcpy(e->values, values, count * sizeof *values);
    /* A figure that cannot be stored (a sum that overflowed) is absent:
     * the entry is kept, without values, as the file keeps it. */
    if (!valid_figures(kind, values, count))
        e->count = 0;
    info->count++;
    return KM_OK;
}

km_status km_info_add1(km_info *info, const char *key, km_info_kind kind,
                       double value)
{
    return km_info_add(info, key, kind, 0, &value, 1);
}

km_status km_info_set(km_info *info, const char *key, km_info_kind kind,
                      int is_array, const double *values, size_t count)
{
    for (size_t i = 0; i < info->count; i++)
        if (strcmp(info->entries[i].key, key) == 0) {
            km_info_entry *e = &info->entries[i];
            double *v = malloc((count ? count : 1) * sizeof *v);
            if (!v)
                return KM_ENOMEM;
            if (count)
                memcpy(v, values, count * sizeof *v);
            free(e->values);
            e->values = v;
            e->kind = kind;
            e->is_array = is_array;
            e->count = valid_figures(kind, values, count) ? count : 0;
            return KM_OK;
        }
    return km_info_add(info, key, kind, is_array, values, count);
}

void km_info_remove(km_info *info, const char *key)
{
    for (size_t i = 0; i < info->count; i++)
        if (strcmp(info->entries[i].key, key) == 0) {
            free(info->entries[i].values);
            memmove(info->entries + i, info->entries + i + 1,
                    (info->count - i - 1) * sizeof *info->entries);
            info->count--;
            return;
        }
}

const km_info_entry *km_info_find(const km_info *info, const char *key)
{
    for (size_t i = 0; i < info->count; i++)
        if (strcmp(info->entries[i].key, key) == 0)
            return &info->entries[i];
    return NULL;
}

void km_info_write(km_writer *w, const km_info *info)
{
    km_write_u64(w, info->count);
    for (size_t i = 0; i < info->count; i++) {
        const km_info_entry *e = &info->entries[i];
        km_write_str(w, e->key);
        km_write_u32(w, (uint32_t)e->kind);
        km_write_u32(w, (uint32_t)e->is_array);
        /* Only what km_info_read accepts: a figure with a value that
         * cannot be stored is written without values (absent). */
        km_write_f64s(w, e->values,
                      valid_figures(e->kind, e->values, e->count) ? e->count
                                                                  : 0);
    }
}

/* A figure key as a fit writes it: 1 to 31 of [A-Za-z0-9_]. */
static int valid_key(const char *key)
{
    if (!key[0])
        return 0;
    for (const char *p = key; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
              (*p >= '0' && *p <= '9') || *p == '_'))
            return 0;
    return 1;
}

km_status km_info_read(km_reader *r, km_info *info, size_t max_values,
                       km_error *err)
{
    /* Each entry takes at least 24 bytes, which bounds the count. */
    size_t n = km_read_count(r, 24);
    if (!r->failed && n > KM_MODEL_MAX_FIGURES)
        return km_error_set(err, KM_ECORRUPT, "model file: %zu figures in a "
                            "list (at most %d)", n, KM_MODEL_MAX_FIGURES);
    for (size_t i = 0; i < n && !r->failed; i++) {
        char key[32];
        km_read_str(r, key, sizeof key - 1);
        uint32_t kind = km_read_u32(r);
        uint32_t is_array = km_read_u32(r);
        size_t count = km_read_count(r, 8);
        if (r->failed || kind > KM_INFO_BOOLEAN || is_array > 1 ||
            !valid_key(key) || count > max_values)
            return km_error_set(err, KM_ECORRUPT,
                                "model file: bad figure %zu", i);
        double *v = malloc((count ? count : 1) * sizeof *v);
        if (!v)
            return km_error_set(err, KM_ENOMEM, "out of memory reading model");
        for (size_t j = 0; j < count; j++) {
            v[j] = km_read_f64(r);
            if (!valid_figure((km_info_kind)kind, v[j])) {
                free(v);
                return km_error_set(err, KM_ECORRUPT, "model file: figure "
                                    "%s[%zu] is not a valid %s", key, j,
                                    kind == KM_INFO_BOOLEAN   ? "boolean"
                                    : kind == KM_INFO_INTEGER ? "integer"
                                                              : "number");
            }
        }
        km_status st = km_info_add(info, key, (km_info_kind)kind,
                                   (int)is_array, v, count);
        free(v);
        if (st != KM_OK)
            return km_error_set(err, st, "out of memory reading model");
    }
    if (r->failed)
        return km_error_set(err, KM_ECORRUPT, "model file: bad figures");
    return KM_OK;
}
