/*
 * api_model.c - models as JSON.
 *
 * Metadata is built from what the core model says of itself (kernel,
 * sizes, identity, parameter and training figures), so a model loaded from
 * disk answers exactly as it did when it was fitted. Kernel objects are
 * read and written through core's kernel rows (km_kernel_params, by
 * api_schema.c): which
 * members each type takes, how each is checked, and the order metadata
 * shows them in.
 *
 * Thread-safety: reentrant.
 */
#include <ctype.h>
#include <stdlib.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "api_json.h"
#include "api_model.h"
#include "api_schema.h"

int api_check_name(const char *name, api_error *e)
{
    size_t n = strlen(name);
    int ok = n >= 1 && n <= 64 && isalnum((unsigned char)name[0]);
    for (size_t i = 1; ok && i < n; i++) {
        unsigned char c = (unsigned char)name[i];
        ok = isalnum(c) || c == '.' || c == '_' || c == '-';
    }
    if (ok)
        return 0;
    char shown[80];
    snprintf(shown, sizeof shown, "%.64s%s", name, n > 64 ? "..." : "");
    for (char *p = shown; *p; p++)
        if (!isprint((unsigned char)*p) || *p == '"' || *p == '\\')
            *p = '?';
    return api_invalid(e, "model name \"%s\" is invalid: expected 1 to 64 "
                       "letters, digits, '.', '_' or '-', starting with a "
                       "letter or digit", shown);
}

/* The first member of item that type t does not take, or NULL. A spelling
 * of another row (sigma for gamma) is reported after every row of its
 * own, so that the row named is the parameter rather than its alias. */
static const char *stray_key(const cJSON *item, const km_param_set *s,
                             km_kernel_type t)
{
    size_t n = 0;
    while (s->rows[n].key)
        n++;
    for (int alias = 0; alias < 2; alias++)
        for (size_t i = n; i-- > 0;) {
            const km_param *r = &s->rows[i];
            if (!r->alias_of == !alias &&
                cJSON_GetObjectItemCaseSensitive(item, r->key) &&
                !api_schema_kernel_takes(t, r->key))
                return r->key;
        }
    return NULL;
}

/* A composite's parts and weights (one per part): checked whole before
 * any part is read. */
static int parse_parts(const cJSON *item, const char *path, km_kernel *k,
                       int depth, api_error *e)
{
    const km_param_set *s = km_kernel_params();
    const km_param *pr = api_schema_find(s, "kernels");
    const km_param *wr = api_schema_find(s, "weights");
    const cJSON *parts = cJSON_GetObjectItemCaseSensitive(item, pr->key);
    const cJSON *weights = cJSON_GetObjectItemCaseSensitive(item, wr->key);
    if (depth + 1 >= KM_KERNEL_MAX_DEPTH)
        return api_invalid(e, "%s: sums and products nest at most %d deep",
                           path, KM_KERNEL_MAX_DEPTH);
    const km_kernel_info *info = km_kernel_type_info(k->type);
    if (!cJSON_IsArray(parts) ||
        cJSON_GetArraySize(parts) < info->min_parts ||
        cJSON_GetArraySize(parts) > info->max_parts) {
        if (info->min_parts == info->max_parts)
            return api_invalid(e, "%s.%s must be an array of %d kernel%s",
                               path, pr->key, info->min_parts,
                               info->min_parts == 1 ? "" : "s");
        return api_invalid(e, "%s.%s must be an array of %d to %d kernels",
                           path, pr->key, info->min_parts, info->max_parts);
    }
    int n = cJSON_GetArraySize(parts);
    if (weights && (!cJSON_IsArray(weights) ||
                    cJSON_GetArraySize(weights) != n))
        return api_invalid(e, "%s.%s must be an array of %d numbers, "
                           "one per kernel", path, wr->key, n);
    km_kernel *sub = calloc((size_t)n, sizeof *sub);
    double *w = weights ? calloc((size_t)n, sizeof *w) : NULL;
    if (!sub || (weights && !w)) {
        free(sub);
        free(w);
        return api_raise(e, API_INTERNAL, "out of memory parsing %s", path);
    }
    km_kernel_set_parts(k, sub, w, n);
    int i = 0;
    for (const cJSON *c = parts->child; c; c = c->next, i++) {
        char p[160];
        snprintf(p, sizeof p, "%s.%s[%d]", path, pr->key, i);
        if (api_parse_kernel(c, p, &sub[i], depth + 1, e))
            return -1;
    }
    i = 0;
    for (const cJSON *c = weights ? weights->child : NULL; c; c = c->next, i++) {
        if (!cJSON_IsNumber(c) || !(c->valuedouble >= wr->min) ||
            !isfinite(c->valuedouble))
            return api_invalid(e, "%s.%s[%d] must be a finite number >= %g",
                               path, wr->key, i, wr->min);
        w[i] = c->valuedouble;
    }
    km_error kerr;
    if (km_kernel_check(k, &kerr) != KM_OK)
        return api_fail_km(e, &kerr);
    return 0;
}

/* A leaf's "columns" (a KM_PARAM_INDICES row): distinct whole numbers
 * in the row's range, at least one; absent: all columns. */
static int parse_columns(const cJSON *item, const char *path, km_kernel *k,
                         api_error *e)
{
    const km_param *r = api_schema_find(km_kernel_params(), "columns");
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(item, r->key);
    if (!c)
        return 0;
    int n = cJSON_GetArraySize(c);
    if (!cJSON_IsArray(c) || n < 1 || n > (int)r->max + 1)
        return api_invalid(e, "%s.%s must be an array of 1 to %d column "
                           "indices", path, r->key, (int)r->max + 1);
    if (!(k->columns = malloc((size_t)n * sizeof *k->columns)))
        return api_raise(e, API_INTERNAL, "out of memory parsing %s", path);
    k->n_columns = n;
    int i = 0;
    for (const cJSON *v = c->child; v; v = v->next, i++) {
        double x = v->valuedouble;
        if (!cJSON_IsNumber(v) || !(x >= r->min && x <= r->max) ||
            x != floor(x))
            return api_invalid(e, "%s.%s[%d] must be a whole number from %g "
                               "to %g", path, r->key, i, r->min, r->max);
        k->columns[i] = (int)x;
    }
    return 0;
}

int api_parse_kernel(const cJSON *item, const char *path, km_kernel *k,
                     int depth, api_error *e)
{
    const km_param_set *s = km_kernel_params();
    char types[256];
    km_kernel_init(k, KM_KERNEL_LINEAR);
    if (!item)
        return api_invalid(e, "%s is required: an object with a \"type\", "
                           "or a kernel's name", path);
    km_kernel_type t;
    api_name_list(types, sizeof types, api_kernel_type_name,
                  KM_KERNEL_TYPE_COUNT);
    if (cJSON_IsString(item)) {
        /* "rbf": the kernel with its defaults, as {"type":"rbf"} */
        if (km_kernel_type_parse(item->valuestring, &t) != 0)
            return api_invalid(e, "%s \"%.40s\" is not a known kernel; "
                               "expected one of %s", path, item->valuestring,
                               types);
        km_kernel_init(k, t);
        km_error kerr;
        return depth == 0 && km_kernel_check(k, &kerr) != KM_OK
               ? api_fail_km(e, &kerr) : 0;
    }
    if (!cJSON_IsObject(item))
        return api_invalid(e, "%s must be an object or a kernel's name, not "
                           "%s", path, api_type_name(item));
    if (api_schema_check_keys(item, path, s, e))
        return -1;
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(item, "type");
    if (!cJSON_IsString(type))
        return api_invalid(e, "%s.type is required: one of %s", path, types);
    if (km_kernel_type_parse(type->valuestring, &t) != 0)
        return api_invalid(e, "%s.type \"%.40s\" is not a known kernel; "
                           "expected one of %s", path, type->valuestring,
                           types);
    km_kernel_init(k, t);

    const char *bad = stray_key(item, s, t);
    if (bad)
        return api_invalid(e, "%s.%s does not apply to a %s kernel", path, bad,
                           type->valuestring);
    for (const km_param *r = s->rows; r->key; r++)
        if (r->alias_of && cJSON_GetObjectItemCaseSensitive(item, r->key) &&
            cJSON_GetObjectItemCaseSensitive(item, r->alias_of))
            return api_invalid(e, "%s: give %s or %s, not both", path,
                               r->alias_of, r->key);
    if (api_schema_read(item, path, s, k, 0, e) ||
        parse_columns(item, path, k, e))
        return -1;
    if (api_schema_kernel_takes(t, "kernels"))
        return parse_parts(item, path, k, depth, e);
    /* a part is checked with its whole kernel (parse_parts), whose
     * messages name its path */
    km_error kerr;
    return depth == 0 && km_kernel_check(k, &kerr) != KM_OK
           ? api_fail_km(e, &kerr) : 0;
}

/* The rows t takes, in its order; an alias is input only. */
cJSON *api_kernel_json(const km_kernel *k)
{
    const km_param_set *s = km_kernel_params();
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddStringToObject(o, "type", km_kernel_type_name(k->type));
    for (const char *const *key = api_schema_kernel_keys(k->type); *key;
         key++) {
        const km_param *r = api_schema_find(s, *key);
        if (r->alias_of)
            continue;
        if (r->type == KM_PARAM_PARTS) {
            cJSON *parts = cJSON_AddArrayToObject(o, r->key);
            for (int i = 0; parts && i < k->n_parts; i++)
                cJSON_AddItemToArray(parts, api_kernel_json(&k->parts[i]));
        } else if (r->type == KM_PARAM_INDICES) {
            cJSON *c = k->n_columns ? cJSON_AddArrayToObject(o, r->key)
                                    : NULL;
            for (int i = 0; c && i < k->n_columns; i++)
                cJSON_AddItemToArray(c, api_json_number(k->columns[i]));
        } else if (r->type == KM_PARAM_PART_WEIGHTS) {
            cJSON *w = cJSON_AddArrayToObject(o, r->key);
            for (int i = 0; w && i < k->n_parts; i++)
                cJSON_AddItemToArray(w, api_json_number(
                                            k->weights ? k->weights[i] : 1.0));
        } else {
            cJSON_AddItemToObject(o, r->key, api_schema_value_json(r, k));
        }
    }
    return o;
}

static cJSON *info_value(const km_info_entry *e, size_t i)
{
    if (e->kind == KM_INFO_BOOLEAN)
        return cJSON_CreateBool(e->values[i] != 0);
    return api_json_number(e->values[i]);
}

/* A figure named as a KM_PARAM_CHOICE row of the model's params (krr's
 * "solver") holds the value's number: shown by its name, as a request
 * gives it. The training figure "solver" is the solver that ran, whatever
 * the algorithm's params call that choice (kpca's "eigen_solver"). */
static cJSON *enum_figure(const km_info_entry *e, km_algorithm a)
{
    const km_param_set *s = km_algorithm_params(a);
    const char *key = e->key;
    if (!strcmp(key, "solver") && km_algorithm_solver_param(a))
        key = km_algorithm_solver_param(a);
    const km_param *r = s ? api_schema_find(s, key) : NULL;
    if (!r || r->type != KM_PARAM_CHOICE || e->is_array || e->count != 1 ||
        e->kind != KM_INFO_INTEGER || !(e->values[0] >= 0) ||
        e->values[0] >= r->choices->count)
        return NULL;
    return cJSON_CreateString(km_choice_name(r->choices, (int)e->values[0]));
}

/* The training figure "imported_from" holds km.h's KM_IMPORTED_* number:
 * shown by the program's name. */
static cJSON *source_figure(const km_info_entry *e)
{
    static const char *const sources[] = {[KM_IMPORTED_LIBSVM] = "libsvm"};
    const size_t n = sizeof sources / sizeof *sources;
    if (strcmp(e->key, "imported_from") || e->is_array || e->count != 1 ||
        e->kind != KM_INFO_INTEGER || !(e->values[0] >= 1) ||
        e->values[0] >= n)
        return NULL;
    return cJSON_CreateString(sources[(size_t)e->values[0]]);
}

static cJSON *info_json(const km_info *info, km_algorithm a)
{
    cJSON *o = cJSON_CreateObject();
    for (size_t i = 0; o && i < info->count; i++) {
        const km_info_entry *e = &info->entries[i];
        cJSON *name = enum_figure(e, a);
        if (!name)
            name = source_figure(e);
        if (name) {
            cJSON_AddItemToObject(o, e->key, name);
            continue;
        }
        if (!e->is_array && e->count == 1) {
            cJSON_AddItemToObject(o, e->key, info_value(e, 0));
            continue;
        }
        if (e->count == 0) { /* absent: its value could not be stored */
            cJSON_AddItemToObject(o, e->key, cJSON_CreateNull());
            continue;
        }
        cJSON *a = cJSON_AddArrayToObject(o, e->key);
        for (size_t j = 0; a && j < e->count; j++)
            cJSON_AddItemToArray(a, info_value(e, j));
    }
    return o;
}

/* {"scale", "center_y"} through the preprocess schema, and the
 * statistics (read-only rows) where they apply. */
cJSON *api_preprocess_json(const km_model *m)
{
    const km_param_set *s = km_preprocess_params();
    km_preprocess_view v = km_model_preprocess(m);
    size_t nf = km_model_n_features(m), no = km_model_n_outputs(m);
    cJSON *o = cJSON_CreateObject();
    for (const km_param *r = s->rows; o && r->key; r++) {
        if (r->type != KM_PARAM_READ_ONLY) {
            cJSON_AddItemToObject(o, r->key, api_schema_value_json(r, &v.spec));
            continue;
        }
        const double *vals = !strcmp(r->key, "x_shift")   ? v.x_shift
                             : !strcmp(r->key, "x_scale") ? v.x_scale
                             : !strcmp(r->key, "y_mean")  ? v.y_mean
                                                          : NULL;
        if (vals)
            cJSON_AddItemToObject(o, r->key, api_json_numbers(
                                      vals, !strcmp(r->key, "y_mean") ? no
                                                                      : nf));
    }
    return o;
}

void api_format_time(long long unix_ms, char *buf, size_t len)
{
    time_t s = (time_t)(unix_ms / 1000);
    struct tm tm;
    gmtime_r(&s, &tm);
    char date[24];
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf, len, "%s.%03dZ", date, (int)(unix_ms % 1000));
}

/* A label as JSON: a number for numeric labels, else a string. */
void api_model_label_text(api_text *t, const km_model *m, size_t i)
{
    const char *l = km_model_label(m, i);
    if (km_model_labels_numeric(m))
        api_text_number(t, strtod(l, NULL));
    else
        api_text_string(t, l);
}

cJSON *api_model_label_json(const km_model *m, size_t i)
{
    const char *l = km_model_label(m, i);
    return km_model_labels_numeric(m) ? api_json_number(strtod(l, NULL))
                                      : cJSON_CreateString(l);
}

cJSON *api_model_brief_json(const km_model *m)
{
    cJSON *o = api_model_json(m);
    cJSON_DeleteItemFromObjectCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(o, "search"), "results");
    return o;
}

cJSON *api_model_ref_json(const km_model *m)
{
    cJSON *o = cJSON_CreateObject();
    if (o) {
        cJSON_AddStringToObject(o, "name", km_model_name(m));
        cJSON_AddItemToObject(o, "version",
                              api_json_number((double)km_model_version(m)));
    }
    return o;
}

void api_model_ref_text(api_text *t, const km_model *m)
{
    api_text_raw(t, "{\"model\":{\"name\":");
    api_text_string(t, km_model_name(m));
    api_text_raw(t, ",\"version\":");
    api_text_uint(t, (unsigned long long)km_model_version(m));
    api_text_raw(t, "}");
}

cJSON *api_model_json(const km_model *m)
{
    cJSON *o = api_model_ref_json(m);
    if (!o)
        return NULL;
    char when[40];
    api_format_time(km_model_created_at_ms(m), when, sizeof when);
    cJSON_AddStringToObject(o, "algorithm",
                            km_algorithm_name(km_model_algorithm(m)));
    cJSON_AddItemToObject(o, "kernel", api_kernel_json(km_model_kernel(m)));
    km_algorithm a = km_model_algorithm(m);
    cJSON_AddItemToObject(o, "params", info_json(km_model_params(m), a));
    cJSON_AddItemToObject(o, "preprocess", api_preprocess_json(m));
    cJSON_AddItemToObject(o, "n_features",
                          api_json_number((double)km_model_n_features(m)));
    /* what X is, where it is not rows of n_features numbers */
    const km_kernel *k = km_model_kernel(m);
    km_input_kind kind = km_kernel_input(k);
    if (kind != KM_INPUT_VECTORS) {
        cJSON *in = cJSON_AddObjectToObject(o, "input");
        size_t w = kind == KM_INPUT_STRINGS
                   ? km_model_max_length(m)
                   : km_kernel_input_width(k, km_model_n_features(m));
        cJSON_AddStringToObject(in, "kind",
                                km_choice_name(&km_input_kind_choices, kind));
        cJSON_AddItemToObject(in, kind == KM_INPUT_STRINGS ? "max_length"
                                                           : "n_training",
                              api_json_number((double)w));
    }
    cJSON_AddItemToObject(o, "n_samples",
                          api_json_number((double)km_model_n_samples(m)));
    /* whether POST .../update can add rows (core's descriptors say) */
    cJSON_AddBoolToObject(o, "updatable", km_model_update_refusal(m) == NULL);
    /* an algorithm of several outputs (y's rows) says how many */
    if (km_algorithm_target(km_model_algorithm(m)) == KM_TARGET_ROWS)
        cJSON_AddItemToObject(o, "n_outputs",
                              api_json_number((double)km_model_n_outputs(m)));
    if (km_model_n_labels(m)) {
        cJSON *classes = cJSON_AddArrayToObject(o, "classes");
        for (size_t i = 0; classes && i < km_model_n_labels(m); i++)
            cJSON_AddItemToArray(classes, api_model_label_json(m, i));
    }
    cJSON_AddStringToObject(o, "created_at", when);
    cJSON_AddItemToObject(o, "training", info_json(km_model_training(m), a));
    cJSON *search = api_search_json(m);
    if (search)
        cJSON_AddItemToObject(o, "search", search);
    cJSON_AddItemToObject(o, "size_bytes",
                          api_json_number((double)km_model_bytes(m)));
    return o;
}

/* ------------------------------------------------------------ search record */

static cJSON *point_json(const km_search_table *t, size_t p)
{
    cJSON *o = cJSON_CreateObject();
    for (size_t i = 0; o && i < t->n_params; i++)
        cJSON_AddItemToObject(o, t->names[i],
                              api_json_number(t->values[p * t->n_params + i]));
    return o;
}

cJSON *api_search_json(const km_model *m)
{
    const km_search_table *t = km_model_search(m);
    if (!t)
        return NULL;
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddStringToObject(o, "scoring", km_scoring_name(t->scoring));
    const char *cv = km_cv_kind_name(t->cv);
    cJSON_AddStringToObject(o, "cv", cv ? cv : "?");
    cJSON_AddItemToObject(o, "n_splits", api_json_number((double)t->n_splits));
    cJSON_AddItemToObject(o, "n_points", api_json_number((double)t->n_points));
    cJSON_AddItemToObject(o, "best_index", api_json_number((double)t->best));
    cJSON_AddItemToObject(o, "best_params", point_json(t, t->best));
    cJSON_AddItemToObject(o, "best_score", api_json_number(t->mean[t->best]));
    cJSON *rows = cJSON_AddArrayToObject(o, "results");
    for (size_t p = 0; rows && p < t->n_points; p++) {
        cJSON *r = cJSON_CreateObject();
        if (!r)
            break;
        cJSON_AddItemToObject(r, "params", point_json(t, p));
        cJSON_AddItemToObject(r, "mean_score", api_json_number(t->mean[p]));
        cJSON_AddItemToObject(r, "std_score", api_json_number(t->std[p]));
        cJSON_AddItemToObject(r, "fit_seconds",
                              api_json_number(t->fit_seconds[p]));
        cJSON_AddItemToArray(rows, r);
    }
    return o;
}
