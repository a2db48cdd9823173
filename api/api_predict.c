/*
 * api_predict.c - predict and project.
 *
 * The body's "X" (or TF Serving's "instances") is read into one
 * contiguous buffer and checked against the model's feature count before
 * core runs, so every error names its row and column.
 *
 * Thread-safety: reentrant.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_json.h"
#include "api_model.h"
#include "api_predict.h"

/* Reads X or instances (not both). */
static int read_input(const km_model *m, const cJSON *root,
                      const char *const *keys, double **X, size_t *n,
                      api_error *e)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(root, "X");
    const cJSON *inst = cJSON_GetObjectItemCaseSensitive(root, "instances");
    size_t d;
    if (api_check_keys(root, "", keys, e))
        return -1;
    if (x && inst)
        return api_invalid(e, "give X or instances, not both");
    return api_get_matrix(x ? x : inst, inst ? "instances" : "X",
                          km_model_n_features(m), X, n, &d, e);
}

/* rows x cols numbers as an array of rows, or a flat array when flat. */
static cJSON *matrix_json(const double *v, size_t rows, size_t cols, int flat)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; a && i < rows; i++) {
        if (flat) {
            cJSON_AddItemToArray(a, cJSON_CreateNumber(v[i]));
            continue;
        }
        cJSON *row = cJSON_CreateDoubleArray(v + i * cols, (int)cols);
        if (!row || !cJSON_AddItemToArray(a, row)) {
            cJSON_Delete(row);
            cJSON_Delete(a);
            return NULL;
        }
    }
    return a;
}

static int answer(const km_model *m, const char *key, cJSON *values,
                  cJSON **out, api_error *e)
{
    cJSON *o = cJSON_CreateObject();
    if (!o || !values || !cJSON_AddItemToObject(o, "model",
                                                api_model_ref_json(m)) ||
        !cJSON_AddItemToObject(o, key, values)) {
        cJSON_Delete(o);
        cJSON_Delete(values);
        return api_fail(e, 500, "internal", "out of memory building the answer");
    }
    *out = o;
    return 0;
}

int api_predict(const km_model *m, const cJSON *root, cJSON **out,
                size_t *rows, api_error *e)
{
    static const char *const keys[] = {"X", "instances", "output", NULL};
    km_algorithm algo = km_model_algorithm(m);
    double *X = NULL, *Y = NULL;
    size_t n = 0;
    km_error kerr = {KM_OK, ""};
    km_status st;
    cJSON *values = NULL;

    if (algo == KM_ALGO_KPCA)
        return api_fail(e, 409, "conflict", "model \"%s\" is kpca: use "
                        "/v1/models/%s/project", km_model_name(m),
                        km_model_name(m));
    const cJSON *output = cJSON_GetObjectItemCaseSensitive(root, "output");
    if (output && algo != KM_ALGO_SVC)
        return api_invalid(e, "output applies only to svc models; this model "
                           "is %s", km_algorithm_name(algo));
    if (read_input(m, root, keys, &X, &n, e))
        return -1;
    size_t k = km_model_n_outputs(m);
    Y = malloc(n * (k ? k : 1) * sizeof *Y);
    if (!Y) {
        free(X);
        return api_fail(e, 413, "payload_too_large",
                        "not enough memory for %zu predictions", n);
    }
    switch (algo) {
    case KM_ALGO_KRR:
        st = km_krr_predict(m, X, n, Y, &kerr);
        if (st == KM_OK)
            values = matrix_json(Y, n, k, k == 1);
        break;
    default:
        kerr.status = st = KM_ECONFLICT;
        snprintf(kerr.message, sizeof kerr.message,
                 "predict is not available for %s models in this build",
                 km_algorithm_name(algo));
        break;
    }
    free(X);
    free(Y);
    if (st != KM_OK)
        return api_fail_km(e, &kerr);
    *rows = n;
    return answer(m, "predictions", values, out, e);
}

int api_project(const km_model *m, const cJSON *root, cJSON **out,
                size_t *rows, api_error *e)
{
    (void)root;
    (void)out;
    (void)rows;
    return api_fail(e, 409, "conflict", "project applies to kpca models; "
                    "model \"%s\" is %s", km_model_name(m),
                    km_algorithm_name(km_model_algorithm(m)));
}
