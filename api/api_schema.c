/*
 * api_schema.c - the parameters a request may give, read and written
 * from core's descriptions of them (km_param rows, km_base.h): an
 * algorithm's params (km_algorithm_params, written next to its
 * descriptor), a kernel object (km_kernel_params, beside the kernel
 * table) and a fit's preprocess object (km_preprocess_params). This file
 * holds no row: one reader, one writer and the OpenAPI fragments, generic
 * over the rows, so that a new algorithm, kernel or parameter needs
 * nothing here.
 *
 * Thread-safety: core's constant rows and one table built once under
 * pthread_once; reentrant.
 */
#include <limits.h>
#include <stdint.h>
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "api_json.h"
#include "api_schema.h"

/* ---------------------------------------------------------------- names */

const char *api_algorithm_name(int a)
{
    return km_algorithm_name((km_algorithm)a);
}

const char *api_kernel_type_name(int t)
{
    return km_kernel_type_name((km_kernel_type)t);
}

void api_name_list(char *buf, size_t len, const char *(*names)(int),
                   int count)
{
    const char *list[64];
    int k = 0;
    for (int i = 0; i < count && k < 64; i++)
        list[k++] = names(i);
    km_join_names(list, k, ", ", buf, len);
}

/* ---------------------------------------------------------------- kernels */

/*
 * The rows each kernel type takes, in the order metadata shows them, come
 * from core's rows and kernel table (a row's kparam flag in the type's
 * km_kernel_info params), so a kernel added to core needs nothing here.
 * Metadata has shown degree first since the first models (compat.py
 * holds their answers), then the rows in order.
 */
#define KERNEL_KEYS_MAX 8

static const char *kernel_keys[KM_KERNEL_TYPE_COUNT][KERNEL_KEYS_MAX];
static pthread_once_t kernel_keys_once = PTHREAD_ONCE_INIT;

static void kernel_keys_init(void)
{
    const km_param *rows = km_kernel_params()->rows;
    for (int t = 0; t < KM_KERNEL_TYPE_COUNT; t++) {
        unsigned params = km_kernel_type_info((km_kernel_type)t)->params;
        size_t n = 0;
        for (int degree_pass = 1; degree_pass >= 0; degree_pass--)
            for (const km_param *r = rows; r->key; r++)
                if ((r->kparam & params) && n + 1 < KERNEL_KEYS_MAX &&
                    (r->kparam == KM_KPARAM_DEGREE) == degree_pass)
                    kernel_keys[t][n++] = r->key;
        kernel_keys[t][n] = NULL;
    }
}

const char *const *api_schema_kernel_keys(km_kernel_type t)
{
    static const char *const none[] = {NULL};
    pthread_once(&kernel_keys_once, kernel_keys_init);
    return (unsigned)t < KM_KERNEL_TYPE_COUNT ? kernel_keys[t] : none;
}

int api_schema_kernel_takes(km_kernel_type t, const char *key)
{
    if (!strcmp(key, "type"))
        return 1;
    for (const char *const *k = api_schema_kernel_keys(t); *k; k++)
        if (!strcmp(*k, key))
            return 1;
    return 0;
}

/* ---------------------------------------------------------------- reader */

const km_param *api_schema_find(const km_param_set *s, const char *key)
{
    for (const km_param *r = s->rows; r->key; r++)
        if (!strcmp(r->key, key))
            return r;
    return NULL;
}

/* Most rows a table may have. */
#define MAX_ROWS 32

int api_schema_check_keys(const cJSON *obj, const char *path,
                          const km_param_set *s, api_error *e)
{
    const char *keys[MAX_ROWS + 1];
    size_t n = 0;
    for (const km_param *r = s->rows; r->key && n < MAX_ROWS; r++)
        if (r->type != KM_PARAM_READ_ONLY)
            keys[n++] = r->key;
    keys[n] = NULL;
    return api_check_keys(obj, path, keys, e);
}

/* "params.alpha", or "async" at the top. */
static const char *field(char *buf, size_t len, const char *path,
                         const char *key)
{
    snprintf(buf, len, "%s%s%s", path, *path ? "." : "", key);
    return buf;
}

static void store_int(void *at, size_t size, long v)
{
    if (size == sizeof(int)) {
        int i = (int)v;
        memcpy(at, &i, sizeof i);
    } else {
        size_t z = (size_t)v;
        memcpy(at, &z, sizeof z);
    }
}

static long load_int(const void *at, size_t size)
{
    if (size == sizeof(int)) {
        int i;
        memcpy(&i, at, sizeof i);
        return i;
    }
    size_t z;
    memcpy(&z, at, sizeof z);
    return (long)z;
}

/* A number the reader checks: one message for anything outside. */
static int read_checked_number(const cJSON *v, const char *name,
                               const km_param *r, double *out, api_error *e)
{
    double x = v->valuedouble;
    int ok = cJSON_IsNumber(v) && isfinite(x) &&
             (r->min_open ? x > r->min : x >= r->min) && x <= r->max;
    if (ok && r->convert)
        ok = r->convert(x, &x) == 0;
    if (!ok && r->max < HUGE_VAL)
        return api_invalid(e, "%s must be a finite number %s %g and <= %g",
                           name, r->min_open ? ">" : ">=", r->min, r->max);
    if (!ok)
        return api_invalid(e, "%s must be a finite number %s %g", name,
                           r->min_open ? ">" : ">=", r->min);
    *out = x;
    return 0;
}

static int read_row(const cJSON *obj, const char *path, const km_param *r,
                    const km_param_set *s, char *base, api_error *e)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, r->key);
    const km_param *target = r->alias_of ? api_schema_find(s, r->alias_of)
                                          : r;
    char *at = base + target->offset;
    char name[160];
    field(name, sizeof name, path, r->key);
    switch (r->type) {
    case KM_PARAM_NUMBER: {
        double x;
        if (r->range == KM_PARAM_RANGE_READER) {
            if (read_checked_number(v, name, r, &x, e))
                return -1;
        } else if (api_opt_number(obj, path, r->key, &x, e)) {
            return -1;
        }
        memcpy(at, &x, sizeof x);
        return 0;
    }
    case KM_PARAM_INTEGER: {
        long x = load_int(at, r->size);
        if (api_opt_integer(obj, path, r->key, (long)r->min, (long)r->max, &x,
                            e))
            return -1;
        store_int(at, r->size, x);
        return 0;
    }
    case KM_PARAM_BOOL: {
        int b;
        if (api_opt_bool(obj, path, r->key, &b, e))
            return -1;
        memcpy(at, &b, sizeof b);
        return 0;
    }
    case KM_PARAM_CHOICE: {
        int i = cJSON_IsString(v) ? km_choice_value(r->choices,
                                                    v->valuestring)
                                  : -1;
        if (i >= 0) {
            memcpy(at, &i, sizeof i);
            return 0;
        }
        char list[256];
        km_choice_list(r->choices, ", ", list, sizeof list);
        return api_invalid(e, "%s must be one of %s", name, list);
    }
    default:
        return 0; /* the caller's */
    }
}

int api_schema_read_row(const cJSON *obj, const char *path,
                        const km_param_set *s, const km_param *r, void *params,
                        api_error *e)
{
    return read_row(obj, path, r, s, params, e);
}

/* Whether the enum row named key of s holds value (or one of also's) in
 * params; the condition's words ("params.solver \"nystrom\" or
 * \"auto\"") into buf. */
static int holds(const km_param_set *s, const char *key, int value,
                 unsigned also, const void *params, const char *path,
                 char *buf, size_t len)
{
    const km_param *dep = api_schema_find(s, key);
    int v;
    memcpy(&v, (const char *)params + dep->offset, sizeof v);
    char by[160];
    field(by, sizeof by, path, dep->key);
    size_t used = (size_t)snprintf(buf, len, "%s \"%s\"", by,
                                   km_choice_name(dep->choices, value));
    for (int i = 0; i < 32 && i < dep->choices->count && used < len; i++)
        if (also >> i & 1u)
            used += (size_t)snprintf(buf + used, len - used, " or \"%s\"",
                                     km_choice_name(dep->choices, i));
    return v == value || (v >= 0 && v < 32 && (also >> v & 1u));
}

int api_schema_applies(const km_param_set *s, const km_param *r,
                       const void *params, const char *path, api_error *e)
{
    if (!r->only_if)
        return 0;
    char name[160], one[256], two[256] = "";
    if (holds(s, r->only_if, r->only_value, r->only_also, params, path, one,
              sizeof one) ||
        (r->or_if && holds(s, r->or_if, r->or_value, r->or_also, params,
                           path, two, sizeof two)))
        return 0;
    field(name, sizeof name, path, r->key);
    return api_invalid(e, "%s applies only with %s%s%s", name, one,
                       *two ? ", or with " : "", two);
}

int api_schema_read(const cJSON *obj, const char *path, const km_param_set *s,
                    void *params, size_t data_n, api_error *e)
{
    char name[160];
    for (const km_param *r = s->rows; r->key; r++) {
        if (!r->required || r->type == KM_PARAM_DISCRIMINATOR ||
            (obj && cJSON_GetObjectItemCaseSensitive(obj, r->key)))
            continue;
        field(name, sizeof name, path, r->key);
        if (r->data_bound)
            return api_invalid(e, "%s is required: a whole number from %ld "
                               "to %s (%zu)", name, (long)r->min,
                               r->data_bound, data_n);
        return api_invalid(e, "%s is required", name);
    }
    for (const km_param *r = s->rows; obj && r->key; r++)
        if (cJSON_GetObjectItemCaseSensitive(obj, r->key) &&
            read_row(obj, path, r, s, params, e))
            return -1;
    for (const km_param *r = s->rows; obj && r->key; r++)
        if (cJSON_GetObjectItemCaseSensitive(obj, r->key) &&
            api_schema_applies(s, r, params, path, e))
            return -1;
    return 0;
}

/* ---------------------------------------------------------------- writer */

cJSON *api_schema_value_json(const km_param *r, const void *params)
{
    const char *at = (const char *)params + r->offset;
    switch (r->type) {
    case KM_PARAM_NUMBER: {
        double x;
        memcpy(&x, at, sizeof x);
        return api_json_number(x);
    }
    case KM_PARAM_INTEGER:
        return api_json_number((double)load_int(at, r->size));
    case KM_PARAM_BOOL: {
        int b;
        memcpy(&b, at, sizeof b);
        return cJSON_CreateBool(b != 0);
    }
    case KM_PARAM_CHOICE: {
        int i;
        memcpy(&i, at, sizeof i);
        return cJSON_CreateString(km_choice_name(r->choices, i));
    }
    default:
        return NULL;
    }
}

/* ---------------------------------------------------------------- OpenAPI */

const char *api_param_type_json(km_param_type t)
{
    static const char *const types[] = {
        [KM_PARAM_NUMBER] = "number",
        [KM_PARAM_INTEGER] = "integer",
        [KM_PARAM_BOOL] = "boolean",
        [KM_PARAM_CHOICE] = "string",
        [KM_PARAM_DISCRIMINATOR] = "string",
        [KM_PARAM_LABEL_WEIGHTS] = "object",
        [KM_PARAM_PARTS] = "array",
        [KM_PARAM_PART_WEIGHTS] = "array",
        [KM_PARAM_READ_ONLY] = "array",
        [KM_PARAM_INDICES] = "array"};
    return (unsigned)t < sizeof types / sizeof *types ? types[t] : NULL;
}

unsigned api_param_bounds(const km_param *r, double *min, double *max)
{
    unsigned has = 0;
    if (r->range == KM_PARAM_RANGE_NONE)
        return 0;
    if (r->min > -HUGE_VAL) {
        *min = r->min;
        has |= API_HAS_MIN;
    }
    if (r->max < HUGE_VAL && !r->data_bound) {
        *max = r->max;
        has |= API_HAS_MAX;
    }
    return has;
}

static void add_range(cJSON *o, const km_param *r)
{
    double min, max;
    unsigned has = api_param_bounds(r, &min, &max);
    if (has & API_HAS_MIN)
        cJSON_AddItemToObject(o, "minimum", api_json_number(min));
    if (r->min_open && r->range != KM_PARAM_RANGE_NONE)
        cJSON_AddTrueToObject(o, "exclusiveMinimum");
    if (has & API_HAS_MAX)
        cJSON_AddItemToObject(o, "maximum", api_json_number(max));
}

/* member: the schema of the numbers a container row holds. */
static void add_numbers(cJSON *o, const char *member, const km_param *r)
{
    cJSON *w = cJSON_AddObjectToObject(o, member);
    if (w) {
        cJSON_AddStringToObject(w, "type", "number");
        add_range(w, r);
    }
}

static cJSON *enum_json(const km_param *r)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < r->choices->count; i++)
        cJSON_AddItemToArray(
            a, cJSON_CreateString(km_choice_name(r->choices, i)));
    return a;
}

/* The default of kernel row r: the one km_kernel_init gives every type
 * that takes it, or NULL when they differ or the data set it. */
cJSON *api_schema_default_json(const km_param *r, const void *defaults)
{
    if (r->required || r->data_default || r->alias_of ||
        r->type == KM_PARAM_READ_ONLY)
        return NULL;
    return api_schema_value_json(r, defaults);
}

static cJSON *kernel_default(const km_param *r)
{
    cJSON *def = NULL;
    if (r->type != KM_PARAM_NUMBER && r->type != KM_PARAM_INTEGER)
        return NULL;
    for (int t = 0; t < KM_KERNEL_TYPE_COUNT; t++) {
        if (!api_schema_kernel_takes((km_kernel_type)t, r->key))
            continue;
        km_kernel k;
        km_kernel_init(&k, (km_kernel_type)t);
        cJSON *v = api_schema_default_json(r, &k);
        if (!v)
            return def;
        if (def && !cJSON_Compare(def, v, 1)) {
            cJSON_Delete(v);
            cJSON_Delete(def);
            return NULL;
        }
        cJSON_Delete(def);
        def = v;
    }
    return def;
}

static cJSON *property_json(const km_param_set *s, const km_param *r,
                            const void *defaults)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddStringToObject(o, "type", api_param_type_json(r->type));
    switch (r->type) {
    case KM_PARAM_CHOICE:
    case KM_PARAM_DISCRIMINATOR:
        cJSON_AddItemToObject(o, "enum", enum_json(r));
        break;
    case KM_PARAM_LABEL_WEIGHTS:
        add_numbers(o, "additionalProperties", r);
        break;
    case KM_PARAM_PARTS: {
        cJSON_AddItemToObject(o, "minItems", api_json_number(r->min));
        cJSON_AddItemToObject(o, "maxItems", api_json_number(r->max));
        cJSON *items = cJSON_AddObjectToObject(o, "items");
        if (items)
            cJSON_AddStringToObject(items, "$ref",
                                    "#/components/schemas/KernelSpec");
        break;
    }
    case KM_PARAM_PART_WEIGHTS:
        add_numbers(o, "items", r);
        break;
    case KM_PARAM_READ_ONLY:
        add_numbers(o, "items", r);
        cJSON_AddTrueToObject(o, "readOnly");
        break;
    case KM_PARAM_INDICES: {
        cJSON_AddItemToObject(o, "maxItems", api_json_number(r->max + 1));
        cJSON *items = cJSON_AddObjectToObject(o, "items");
        if (items) {
            cJSON_AddStringToObject(items, "type", "integer");
            cJSON_AddItemToObject(items, "minimum", api_json_number(r->min));
        }
        break;
    }
    default:
        add_range(o, r);
        break;
    }
    if (r->doc)
        cJSON_AddStringToObject(o, "description", r->doc);
    cJSON *def = NULL;
    if (s == km_kernel_params())
        def = kernel_default(r);
    else
        def = api_schema_default_json(r, defaults);
    if (def)
        cJSON_AddItemToObject(o, "default", def);
    return o;
}

static cJSON *schema_json(const km_param_set *s, const char *algorithm,
                          int closed)
{
    _Alignas(max_align_t) unsigned char defaults[256];
    if (s->size > sizeof defaults)
        return NULL;
    s->defaults(defaults);
    cJSON *o = cJSON_CreateObject();
    cJSON *props = cJSON_CreateObject(), *req = cJSON_CreateArray();
    if (!o || !props || !req) {
        cJSON_Delete(o);
        cJSON_Delete(props);
        cJSON_Delete(req);
        return NULL;
    }
    cJSON_AddStringToObject(o, "type", "object");
    if (algorithm || closed)
        cJSON_AddFalseToObject(o, "additionalProperties");
    if (algorithm)
        cJSON_AddStringToObject(o, "x-algorithm", algorithm);
    for (const km_param *r = s->rows; r->key; r++) {
        cJSON_AddItemToObject(props, r->key, property_json(s, r, defaults));
        if (r->required)
            cJSON_AddItemToArray(req, cJSON_CreateString(r->key));
    }
    if (cJSON_GetArraySize(req))
        cJSON_AddItemToObject(o, "required", req);
    else
        cJSON_Delete(req);
    cJSON_AddItemToObject(o, "properties", props);
    return o;
}

cJSON *api_schema_openapi(void)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddItemToObject(o, "Kernel",
                          schema_json(km_kernel_params(), NULL, 0));
    cJSON_AddItemToObject(o, "Preprocess",
                          schema_json(km_preprocess_params(), NULL, 1));
    for (int a = 0; a < KM_ALGO_COUNT; a++) {
        const char *name = km_algorithm_name((km_algorithm)a);
        char title[64];
        snprintf(title, sizeof title, "%c%sParams",
                 name[0] - 'a' + 'A', name + 1);
        cJSON_AddItemToObject(o, title,
                              schema_json(km_algorithm_params(
                                              (km_algorithm)a), name, 1));
    }
    return o;
}
