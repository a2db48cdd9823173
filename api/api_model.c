/*
 * api_model.c - models as JSON.
 *
 * Metadata is built from what the core model says of itself (kernel,
 * sizes, identity, parameter and training figures), so a model loaded from
 * disk answers exactly as it did when it was fitted.
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

int api_parse_kernel(const cJSON *item, const char *path, km_kernel *k,
                     int depth, api_error *e)
{
    static const char *const keys[] = {"type", "gamma", "sigma", "degree",
                                       "coef0", "kernels", "weights", NULL};
    km_kernel_init(k, KM_KERNEL_LINEAR);
    if (!item)
        return api_invalid(e, "%s is required: an object with a \"type\"",
                           path);
    if (!cJSON_IsObject(item))
        return api_invalid(e, "%s must be an object, not %s", path,
                           api_type_name(item));
    if (api_check_keys(item, path, keys, e))
        return -1;
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(item, "type");
    km_kernel_type t;
    if (!cJSON_IsString(type))
        return api_invalid(e, "%s.type is required: one of linear, "
                           "polynomial, rbf, laplacian, sigmoid, sum, product",
                           path);
    if (km_kernel_type_parse(type->valuestring, &t) != 0)
        return api_invalid(e, "%s.type \"%.40s\" is not a known kernel; "
                           "expected one of linear, polynomial, rbf, "
                           "laplacian, sigmoid, sum, product", path,
                           type->valuestring);
    km_kernel_init(k, t);

    const cJSON *gamma = cJSON_GetObjectItemCaseSensitive(item, "gamma");
    const cJSON *sigma = cJSON_GetObjectItemCaseSensitive(item, "sigma");
    const cJSON *parts = cJSON_GetObjectItemCaseSensitive(item, "kernels");
    const cJSON *weights = cJSON_GetObjectItemCaseSensitive(item, "weights");
    const cJSON *degree = cJSON_GetObjectItemCaseSensitive(item, "degree");
    const cJSON *coef0 = cJSON_GetObjectItemCaseSensitive(item, "coef0");
    int composite = t == KM_KERNEL_SUM || t == KM_KERNEL_PRODUCT;
    const char *bad = NULL;
    if (sigma && t != KM_KERNEL_RBF) bad = "sigma";
    if (gamma && (t == KM_KERNEL_LINEAR || composite)) bad = "gamma";
    if (degree && t != KM_KERNEL_POLYNOMIAL) bad = "degree";
    if (coef0 && t != KM_KERNEL_POLYNOMIAL && t != KM_KERNEL_SIGMOID)
        bad = "coef0";
    if ((parts && !composite)) bad = "kernels";
    if (weights && t != KM_KERNEL_SUM) bad = "weights";
    if (bad)
        return api_invalid(e, "%s.%s does not apply to a %s kernel", path, bad,
                           type->valuestring);
    if (gamma && sigma)
        return api_invalid(e, "%s: give gamma or sigma, not both", path);

    if (gamma) {
        if (!cJSON_IsNumber(gamma) || !(gamma->valuedouble > 0) ||
            !isfinite(gamma->valuedouble))
            return api_invalid(e, "%s.gamma must be a finite number > 0", path);
        k->gamma = gamma->valuedouble;
    }
    if (sigma) {
        double s = sigma->valuedouble;
        if (!cJSON_IsNumber(sigma) || !(s > 0) || !isfinite(s) ||
            !isfinite(1.0 / (2.0 * s * s)) || 1.0 / (2.0 * s * s) == 0)
            return api_invalid(e, "%s.sigma must be a finite number > 0", path);
        k->gamma = 1.0 / (2.0 * s * s);
    }
    long deg = k->degree;
    if (api_opt_integer(item, path, "degree", 0, 64, &deg, e) ||
        api_opt_number(item, path, "coef0", &k->coef0, e))
        return -1;
    k->degree = (int)deg;
    if (!composite)
        return 0;

    if (depth + 1 >= KM_KERNEL_MAX_DEPTH)
        return api_invalid(e, "%s: sums and products nest at most %d deep",
                           path, KM_KERNEL_MAX_DEPTH);
    if (!cJSON_IsArray(parts) || cJSON_GetArraySize(parts) < 1 ||
        cJSON_GetArraySize(parts) > KM_KERNEL_MAX_PARTS)
        return api_invalid(e, "%s.kernels must be an array of 1 to %d kernels",
                           path, KM_KERNEL_MAX_PARTS);
    int n = cJSON_GetArraySize(parts);
    if (weights && (!cJSON_IsArray(weights) ||
                    cJSON_GetArraySize(weights) != n))
        return api_invalid(e, "%s.weights must be an array of %d numbers, "
                           "one per kernel", path, n);
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
        snprintf(p, sizeof p, "%s.kernels[%d]", path, i);
        if (api_parse_kernel(c, p, &sub[i], depth + 1, e))
            return -1;
    }
    i = 0;
    for (const cJSON *c = weights ? weights->child : NULL; c; c = c->next, i++) {
        if (!cJSON_IsNumber(c) || !(c->valuedouble >= 0) ||
            !isfinite(c->valuedouble))
            return api_invalid(e, "%s.weights[%d] must be a finite number >= 0",
                               path, i);
        w[i] = c->valuedouble;
    }
    km_error kerr;
    if (km_kernel_check(k, &kerr) != KM_OK)
        return api_fail_km(e, &kerr);
    return 0;
}

cJSON *api_kernel_json(const km_kernel *k)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddStringToObject(o, "type", km_kernel_type_name(k->type));
    switch (k->type) {
    case KM_KERNEL_POLYNOMIAL:
        cJSON_AddItemToObject(o, "degree", api_json_number(k->degree));
        /* fall through */
    case KM_KERNEL_SIGMOID:
        cJSON_AddItemToObject(o, "gamma", api_json_number(k->gamma));
        cJSON_AddItemToObject(o, "coef0", api_json_number(k->coef0));
        break;
    case KM_KERNEL_RBF:
    case KM_KERNEL_LAPLACIAN:
        cJSON_AddItemToObject(o, "gamma", api_json_number(k->gamma));
        break;
    case KM_KERNEL_SUM:
    case KM_KERNEL_PRODUCT: {
        cJSON *parts = cJSON_AddArrayToObject(o, "kernels");
        for (int i = 0; parts && i < k->n_parts; i++)
            cJSON_AddItemToArray(parts, api_kernel_json(&k->parts[i]));
        if (k->type == KM_KERNEL_SUM) {
            cJSON *w = cJSON_AddArrayToObject(o, "weights");
            for (int i = 0; w && i < k->n_parts; i++)
                cJSON_AddItemToArray(w, api_json_number(
                                            k->weights ? k->weights[i] : 1.0));
        }
        break;
    }
    default:
        break;
    }
    return o;
}

static cJSON *info_value(const km_info_entry *e, size_t i)
{
    if (e->kind == KM_INFO_BOOLEAN)
        return cJSON_CreateBool(e->values[i] != 0);
    return api_json_number(e->values[i]);
}

static cJSON *info_json(const km_info *info)
{
    cJSON *o = cJSON_CreateObject();
    for (size_t i = 0; o && i < info->count; i++) {
        const km_info_entry *e = &info->entries[i];
        if (!e->is_array && e->count == 1) {
            cJSON_AddItemToObject(o, e->key, info_value(e, 0));
            continue;
        }
        cJSON *a = cJSON_AddArrayToObject(o, e->key);
        for (size_t j = 0; a && j < e->count; j++)
            cJSON_AddItemToArray(a, info_value(e, j));
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
    cJSON_AddItemToObject(o, "params", info_json(km_model_params(m)));
    cJSON_AddItemToObject(o, "n_features",
                          api_json_number((double)km_model_n_features(m)));
    cJSON_AddItemToObject(o, "n_samples",
                          api_json_number((double)km_model_n_samples(m)));
    if (km_model_algorithm(m) == KM_ALGO_KRR)
        cJSON_AddItemToObject(o, "n_outputs",
                              api_json_number((double)km_model_n_outputs(m)));
    if (km_model_n_labels(m)) {
        cJSON *classes = cJSON_AddArrayToObject(o, "classes");
        for (size_t i = 0; classes && i < km_model_n_labels(m); i++)
            cJSON_AddItemToArray(classes, api_model_label_json(m, i));
    }
    cJSON_AddStringToObject(o, "created_at", when);
    cJSON_AddItemToObject(o, "training", info_json(km_model_training(m)));
    cJSON_AddItemToObject(o, "size_bytes",
                          api_json_number((double)km_model_bytes(m)));
    return o;
}
