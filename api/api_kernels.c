/*
 * api_kernels.c - the kernel routes: the PSD report of a kernel on rows
 * (POST /v1/kernels/check) and its Gram matrix K(X, Z) (POST
 * /v1/kernels/gram). The numerics are core's (km_kernel_psd,
 * km_gram_cross); here are the bodies, their checks and the answers.
 *
 * Inputs: a body's rows are read as the kernel takes them (api_rows.c):
 * rows of numbers, strings, or for the check a precomputed Gram.
 *
 * Thread-safety: reentrant.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_json.h"
#include "api_rows.h"
#include "api_kernels.h"
#include "api_model.h"

const char *const api_kernels_matrix_keys[] = {"X", NULL};

/* A cJSON node and its allocation's overhead, as api_score.c counts it. */
#define NODE_BYTES 80
/* The longest JSON text of one number and its comma. */
#define NUMBER_TEXT 26

size_t api_kernels_check_bytes(const char *body, size_t len)
{
    size_t numbers = api_json_max_numbers(body, len);
    /* the body's text, X itself (n <= numbers rows of d >= 1 numbers),
     * and km_kernel_psd's own for any kernel (the body is not read yet):
     * its largest over n <= numbers rows, whose subsample copy holds at
     * most the numbers of X again */
    return len + 2 * numbers * sizeof(double) +
           km_kernel_psd_bytes(NULL, numbers, 1, 0);
}

size_t api_kernels_gram_bytes(const char *body, size_t len)
{
    size_t numbers = api_json_max_numbers(body, len);
    size_t cells = numbers < 1000 ? numbers * numbers : API_GRAM_MAX_CELLS;
    if (cells > API_GRAM_MAX_CELLS)
        cells = API_GRAM_MAX_CELLS;
    /* X and Z (as doubles, or Z's nodes when it is not read directly),
     * K and its text, and the Gram's own working memory for any kernel
     * (the body is not read yet) on nx x nz <= cells values: at most
     * that of cells x 1, as nx + nz <= nx nz + 1 */
    return len + numbers * (sizeof(double) + NODE_BYTES) +
           cells * (sizeof(double) + NUMBER_TEXT) +
           km_gram_work_bytes(NULL, cells, 1, 1);
}

/* The rows of member name as kernel k takes them (api_rows.c): a fit's
 * rows (a precomputed kernel's X its square Gram). */
static int read_rows(api_body *body, const char *name, const km_kernel *k,
                     double **X, size_t *n, size_t *d, api_error *e)
{
    api_rows_spec rs = {k, 0, 0};
    return api_body_rows(body, name, &rs, X, n, d, e);
}

/* The kernel member, checked and resolved for d features. */
static int read_kernel(const cJSON *root, km_kernel *k, api_error *e)
{
    return api_parse_kernel(cJSON_GetObjectItemCaseSensitive(root, "kernel"),
                            "kernel", k, 0, e);
}

/* cJSON tree o as the answer's text. */
static int answer_text(cJSON *o, api_text *out, api_error *e)
{
    char *text = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    if (!text)
        return api_raise(e, API_INTERNAL, "out of memory building the "
                         "answer");
    out->buf = text;
    out->len = strlen(text);
    out->cap = out->len + 1;
    out->failed = 0;
    return 0;
}

/* The report as the check route answers it (docs/api.md). */
static cJSON *report_json(const km_kernel *k, const km_psd_report *r)
{
    cJSON *o = cJSON_CreateObject(), *s = cJSON_CreateObject(),
          *v = cJSON_CreateObject();
    if (!o || !s || !v) {
        cJSON_Delete(o);
        cJSON_Delete(s);
        cJSON_Delete(v);
        return NULL;
    }
    cJSON_AddItemToObject(o, "kernel", api_kernel_json(k));
    cJSON_AddItemToObject(o, "n", api_json_number((double)r->n));
    cJSON_AddItemToObject(o, "n_given", api_json_number((double)r->n_given));
    cJSON_AddBoolToObject(o, "subsampled", r->subsampled);
    cJSON_AddItemToObject(o, "max_rows", api_json_number(KM_PSD_MAX_ROWS));
    cJSON_AddItemToObject(o, "seed", api_json_number((double)r->seed));
    cJSON_AddItemToObject(s, "max_asymmetry", api_json_number(r->asymmetry));
    cJSON_AddItemToObject(s, "tolerance", api_json_number(KM_PSD_SYM_TOL));
    cJSON_AddBoolToObject(s, "symmetric", r->symmetric);
    cJSON_AddItemToObject(o, "symmetry", s);
    cJSON_AddItemToObject(v, "min", api_json_number(r->min_eig));
    cJSON_AddItemToObject(v, "max", api_json_number(r->max_eig));
    cJSON_AddItemToObject(v, "n_negative",
                          api_json_number((double)r->n_negative));
    cJSON_AddItemToObject(v, "negative_threshold",
                          api_json_number(r->threshold));
    cJSON_AddStringToObject(v, "threshold_rule",
                            "n * eps * max|eigenvalue|, eps = 2^-52");
    cJSON_AddItemToObject(o, "eigenvalues", v);
    cJSON_AddBoolToObject(o, "psd", r->n_negative == 0);
    cJSON_AddItemToObject(o, "alpha", api_json_number(r->alpha));
    cJSON_AddItemToObject(o, "condition_number",
                          api_json_number(r->condition));
    cJSON_AddItemToObject(o, "effective_dimension",
                          api_json_number(r->effective_dim));
    return o;
}

int api_kernels_check(api_body *body, api_text *out, size_t *rows,
                      api_error *e)
{
    static const char *const keys[] = {"kernel", "X", "alpha", "seed",
                                       NULL};
    const cJSON *root = body->root;
    double alpha = 1.0, *X = NULL;
    long seed = 0;
    size_t n = 0, d = 0;
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_LINEAR);
    int rc = api_check_keys(root, "", keys, e) || read_kernel(root, &k, e) ||
             api_opt_number(root, "", "alpha", &alpha, e) ||
             api_opt_integer(root, "", "seed", 0, 9007199254740991L, &seed,
                             e);
    if (!rc && !(alpha > 0))
        rc = api_invalid(e, "alpha must be a number > 0");
    if (!rc)
        rc = read_rows(body, "X", &k, &X, &n, &d, e);
    km_psd_report r;
    km_error kerr = {KM_OK, ""};
    if (!rc) {
        km_kernel_resolve(&k, d);
        if (km_kernel_psd(&k, X, n, d, alpha, (uint64_t)seed, 0, &r, &kerr) !=
            KM_OK)
            rc = kerr.status == KM_ENOMEM
                     ? api_raise(e, API_PAYLOAD_TOO_LARGE, "not enough "
                                 "memory for the report on %zu rows", n)
                     : api_fail_km(e, &kerr);
    }
    free(X);
    if (!rc) {
        rc = answer_text(report_json(&k, &r), out, e);
        *rows = n;
    }
    km_kernel_cleanup(&k);
    return rc ? -1 : 0;
}

/* K (nx x nz) as {"kernel", "n_rows", "n_cols", "K": [[...]]}. */
static int gram_text(const km_kernel *k, const double *K, size_t nx,
                     size_t nz, api_text *out, api_error *e)
{
    cJSON *kj = api_kernel_json(k);
    char *kt = kj ? cJSON_PrintUnformatted(kj) : NULL;
    cJSON_Delete(kj);
    api_text t = {0};
    api_text_raw(&t, "{\"kernel\":");
    api_text_raw(&t, kt ? kt : "null");
    free(kt);
    api_text_raw(&t, ",\"n_rows\":");
    api_text_uint(&t, nx);
    api_text_raw(&t, ",\"n_cols\":");
    api_text_uint(&t, nz);
    api_text_raw(&t, ",\"K\":[");
    for (size_t i = 0; i < nx && !t.failed; i++) {
        api_text_raw(&t, i ? ",[" : "[");
        for (size_t j = 0; j < nz; j++) {
            if (j)
                api_text_raw(&t, ",");
            api_text_number(&t, K[i * nz + j]);
        }
        api_text_raw(&t, "]");
    }
    api_text_raw(&t, "]}");
    if (t.failed || !kt) {
        free(t.buf);
        return api_raise(e, API_PAYLOAD_TOO_LARGE, "not enough memory for "
                         "the answer");
    }
    *out = t;
    return 0;
}

int api_kernels_gram(api_body *body, api_text *out, size_t *rows,
                     api_error *e)
{
    static const char *const keys[] = {"kernel", "X", "Z", NULL};
    const cJSON *root = body->root;
    double *X = NULL, *Z = NULL, *K = NULL;
    size_t nx = 0, d = 0, nz = 0, dz = 0;
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_LINEAR);
    int has_z = api_body_has(body, "Z");
    int rc = api_check_keys(root, "", keys, e) || read_kernel(root, &k, e);
    km_input_kind kind = km_kernel_input(&k);
    if (!rc && kind == KM_INPUT_PRECOMPUTED)
        rc = api_invalid(e, "kernel: a precomputed kernel's values are "
                         "already given; this route computes the others");
    if (!rc)
        rc = read_rows(body, "X", &k, &X, &nx, &d, e) ||
             (has_z && read_rows(body, "Z", &k, &Z, &nz, &dz, e));
    /* strings: both in rows of the wider's width */
    if (!rc && has_z && kind == KM_INPUT_STRINGS && dz != d &&
        (api_rows_widen(&X, nx, d, dz) || api_rows_widen(&Z, nz, dz, d)))
        rc = api_raise(e, API_PAYLOAD_TOO_LARGE, "not enough memory for X "
                       "and Z");
    if (!rc && has_z && kind == KM_INPUT_STRINGS)
        d = dz = d > dz ? d : dz;
    if (!rc && has_z && dz != d)
        rc = api_invalid(e, "Z[0] has %zu columns; X has %zu", dz, d);
    const double *Zr = has_z ? Z : X;
    if (!has_z)
        nz = nx;
    if (!rc && nz > API_GRAM_MAX_CELLS / nx)
        rc = api_raise(e, API_PAYLOAD_TOO_LARGE, "K(X, Z) would have %zu x "
                       "%zu values; the cap is %d (rows x cols)", nx, nz,
                       API_GRAM_MAX_CELLS);
    if (!rc && !(K = malloc(nx * nz * sizeof *K)))
        rc = api_raise(e, API_PAYLOAD_TOO_LARGE, "not enough memory for the "
                       "%zu x %zu Gram matrix", nx, nz);
    km_error kerr = {KM_OK, ""};
    if (!rc) {
        km_kernel_resolve(&k, d);
        if (km_gram_cross(&k, X, nx, Zr, nz, d, K, nz, &kerr) != KM_OK)
            rc = api_fail_km(e, &kerr);
    }
    for (size_t i = 0; !rc && i < nx * nz; i++)
        if (!isfinite(K[i]))
            rc = api_raise(e, API_UNPROCESSABLE, "K[%zu][%zu] is not a finite "
                           "number (overflow); use a smaller gamma, degree "
                           "or scale of X", i / nz, i % nz);
    if (!rc) {
        rc = gram_text(&k, K, nx, nz, out, e);
        *rows = nx;
    }
    free(X);
    free(Z);
    free(K);
    km_kernel_cleanup(&k);
    return rc ? -1 : 0;
}
