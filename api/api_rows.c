/*
 * api_rows.c - a request's rows as its kernel takes them (api_rows.h).
 *
 * The kernel's input kind (core's km_kernel_input) decides what X must
 * be: rows of numbers, an array of strings (packed into string rows,
 * km_strings_pack), or kernel values (packed with their index column,
 * km_precomputed_pack). A request of the wrong kind is 400 saying which
 * kind the kernel takes and which kernels take what was sent. Numbers may
 * come as a binary tensor (fit and update bodies: api_tensor.h).
 *
 * Thread-safety: reentrant.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_rows.h"
#include "api_tensor.h"

void api_kernels_taking(km_input_kind k, char *buf, size_t len)
{
    const char *names[KM_KERNEL_TYPE_COUNT];
    int n = 0;
    for (int t = 0; t < KM_KERNEL_TYPE_COUNT; t++)
        if (km_kernel_type_input((km_kernel_type)t) == k &&
            !(km_kernel_type_caps((km_kernel_type)t) &
              KM_KERNEL_CAP_COMPOSITE))
            names[n++] = km_kernel_type_name((km_kernel_type)t);
    km_join_names(names, n, " and ", buf, len);
}

/* The path of the first string among item's elements (strings where
 * rows are expected: what a string kernel takes), or 0. A string inside
 * a row is a value of the wrong type, as the matrix reader says. */
static int first_string(const cJSON *item, const char *name, char *path,
                        size_t cap)
{
    size_t i = 0;
    for (const cJSON *r = cJSON_IsArray(item) ? item->child : NULL; r;
         r = r->next, i++)
        if (cJSON_IsString(r)) {
            snprintf(path, cap, "%s[%zu]", name, i);
            return 1;
        }
    return 0;
}

static const char *kernel_name(const km_kernel *k)
{
    return km_kernel_type_name(k->type);
}

/* 400: strings where the kernel takes numbers. */
static int not_numbers(const char *path, const char *name, const km_kernel *k,
                       api_error *e)
{
    char str[160];
    api_kernels_taking(KM_INPUT_STRINGS, str, sizeof str);
    return api_invalid(e, "%s is a string, but a %s kernel takes rows of "
                       "numbers; strings are taken by the string kernels "
                       "(%s): %s must be an array of rows of numbers",
                       path, kernel_name(k), str, name);
}

int api_rows_from_strings(const char *const *str, const size_t *len,
                          size_t n, api_rows_spec *s, const char *name,
                          double **X, size_t *d, api_error *e)
{
    size_t longest = 0, at = 0;
    *X = NULL;
    for (size_t i = 0; i < n; i++) {
        if (len[i] > KM_STRING_MAX_BYTES)
            return api_raise(e, API_PAYLOAD_TOO_LARGE, "%s[%zu] has %zu "
                             "bytes; a string may have at most %d bytes",
                             name, i, len[i], KM_STRING_MAX_BYTES);
        if (len[i] > longest) {
            longest = len[i];
            at = i;
        }
    }
    size_t width;
    if (s->model_d) {
        width = s->model_d;
        size_t cap = km_string_max_length(width);
        if (s->max_length && s->max_length < cap)
            cap = s->max_length;
        if (longest > cap)
            return api_invalid(e, "%s[%zu] has %zu bytes; this model takes "
                               "strings of at most %zu bytes (its "
                               "max_length, set at its fit)", name, at,
                               longest, cap);
    } else {
        size_t max = s->max_length ? s->max_length
                                   : km_string_default_max(longest);
        if (longest > max)
            return api_invalid(e, "%s[%zu] has %zu bytes, more than "
                               "max_length %zu", name, at, longest, max);
        width = km_string_width(max);
        s->max_length = max;
    }
    if (n > SIZE_MAX / sizeof(double) / width)
        return api_raise(e, API_PAYLOAD_TOO_LARGE, "%s is too large", name);
    double *M = malloc((n ? n : 1) * width * sizeof *M);
    if (!M)
        return api_raise(e, API_PAYLOAD_TOO_LARGE, "not enough memory for "
                         "%s (%zu strings)", name, n);
    km_error kerr;
    if (km_strings_pack(str, len, n, width, M, &kerr) != KM_OK) {
        free(M);
        return api_invalid(e, "%s", kerr.message);
    }
    *X = M;
    *d = width;
    return 0;
}

int api_rows_widen(double **X, size_t n, size_t d, size_t to)
{
    if (to <= d)
        return 0;
    double *W = calloc(n ? n : 1, to * sizeof *W);
    if (!W)
        return -1;
    for (size_t i = 0; i < n; i++)
        memcpy(W + i * to, *X + i * d, d * sizeof *W);
    free(*X);
    *X = W;
    return 0;
}

static int read_strings(const cJSON *item, const char *name,
                        api_rows_spec *s, double **X, size_t *n,
                        size_t *d, api_error *e)
{
    const km_kernel *k = s->kernel;
    if (!item)
        return api_invalid(e, "%s is required: an array of strings (a %s "
                           "kernel takes strings)", name, kernel_name(k));
    if (!cJSON_IsArray(item) || !item->child)
        return api_invalid(e, "%s must be an array of at least one string "
                           "(a %s kernel takes strings), not %s", name,
                           kernel_name(k),
                           cJSON_IsArray(item) ? "an empty array"
                                               : api_type_name(item));
    size_t rows = (size_t)cJSON_GetArraySize(item), i = 0;
    const char **str = malloc(rows * sizeof *str);
    size_t *len = malloc(rows * sizeof *len);
    int rc = 0;
    if (!str || !len) {
        rc = api_raise(e, API_PAYLOAD_TOO_LARGE, "not enough memory for %s",
                       name);
        goto out;
    }
    for (const cJSON *c = item->child; c; c = c->next, i++) {
        if (!cJSON_IsString(c)) {
            rc = api_invalid(e, "%s[%zu] must be a string, not %s: a %s "
                             "kernel takes strings", name, i,
                             api_type_name(c), kernel_name(k));
            goto out;
        }
        str[i] = c->valuestring;
        len[i] = strlen(c->valuestring);
    }
    *n = rows;
    rc = api_rows_from_strings(str, len, rows, s, name, X, d, e);
out:
    free(str);
    free(len);
    return rc;
}

/* Member name's rows of numbers: a binary tensor (an object: fit and
 * update bodies, api_tensor.h) of shape [rows, columns], or JSON rows
 * (api_body_matrix); expect_d as there. */
static int body_numbers(api_body *b, const char *name, size_t expect_d,
                        double **X, size_t *n, size_t *d, api_error *e)
{
    const cJSON *item = b->key && !strcmp(b->key, name)
                            ? NULL
                            : cJSON_GetObjectItemCaseSensitive(b->root, name);
    if (!cJSON_IsObject(item))
        return api_body_matrix(b, name, expect_d, X, n, d, e);
    int dims;
    if (api_tensor_read(item, name, 2, &b->tail, X, n, d, &dims, e))
        return -1;
    int rc = 0;
    if (dims != 2 || *d == 0)
        rc = api_invalid(e, "%s.shape must be [rows, columns], with at least "
                         "one column", name);
    else if (expect_d && *d != expect_d)
        rc = api_invalid(e, "%s has %zu columns; the model expects %zu", name,
                         *d, expect_d);
    if (rc) {
        free(*X);
        *X = NULL;
    }
    return rc;
}

static int read_precomputed(api_body *b, const char *name,
                            const api_rows_spec *s, double **X, size_t *n,
                            size_t *d, api_error *e)
{
    double *G = NULL;
    size_t m = 0;
    if (body_numbers(b, name, 0, &G, n, &m, e))
        return -1;
    int rc = 0;
    if (s->model_d && m + 1 != s->model_d)
        rc = api_invalid(e, "%s[0] has %zu values; a precomputed model takes "
                         "one kernel value per training row: %zu", name, m,
                         s->model_d - 1);
    else if (!s->model_d && *n != m)
        rc = api_invalid(e, "%s has %zu rows of %zu values; a precomputed "
                         "kernel's %s is the square n x n Gram matrix of the "
                         "training rows", name, *n, m, name);
    else if (*n > SIZE_MAX / sizeof(double) / (m + 1))
        rc = api_raise(e, API_PAYLOAD_TOO_LARGE, "%s is too large", name);
    double *M = rc ? NULL : malloc(*n * (m + 1) * sizeof *M);
    if (!rc && !M)
        rc = api_raise(e, API_PAYLOAD_TOO_LARGE, "not enough memory for %s",
                       name);
    if (!rc) {
        km_precomputed_pack(G, *n, m, !s->model_d, M);
        *X = M;
        *d = m + 1;
    }
    free(G);
    return rc;
}

int api_body_rows(api_body *b, const char *name, api_rows_spec *s,
                  double **X, size_t *n, size_t *d, api_error *e)
{
    char path[64];
    int direct = b->key && !strcmp(b->key, name);
    const cJSON *item = direct ? NULL
                               : cJSON_GetObjectItemCaseSensitive(b->root,
                                                                  name);
    km_input_kind kind = km_kernel_input(s->kernel);
    *X = NULL;
    if (kind == KM_INPUT_STRINGS) {
        if (direct || (cJSON_IsArray(item) && item->child &&
                       cJSON_IsArray(item->child)))
            return api_invalid(e, "%s must be an array of strings: a %s "
                               "kernel takes strings, not rows of numbers",
                               name, kernel_name(s->kernel));
        return read_strings(item, name, s, X, n, d, e);
    }
    if (item && first_string(item, name, path, sizeof path)) {
        if (kind == KM_INPUT_VECTORS)
            return not_numbers(path, name, s->kernel, e);
        return api_invalid(e, "%s is a string, but a precomputed kernel "
                           "takes kernel values: %s must be an array of rows "
                           "of numbers", path, name);
    }
    if (kind == KM_INPUT_PRECOMPUTED)
        return read_precomputed(b, name, s, X, n, d, e);
    return body_numbers(b, name, s->model_d, X, n, d, e);
}
