/*
 * api_fit.c - fit requests.
 *
 * A fit body is {"algorithm", "kernel", "params", "X", "y", "async"}.
 * Unknown fields are refused, so a misspelt parameter is an error rather
 * than a silently ignored default. Ranges are checked by core's own check
 * functions (one source of truth), whose messages name params.<field>.
 *
 * Thread-safety: reentrant.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_fit.h"
#include "api_json.h"
#include "api_model.h"

void api_fit_request_cleanup(api_fit_request *req)
{
    km_kernel_cleanup(&req->kernel);
    free(req->X);
    free(req->Y);
    free(req->classes);
    for (size_t i = 0; i < req->n_labels; i++)
        free(req->labels[i]);
    free(req->labels);
    free(req->class_weight);
    memset(req, 0, sizeof *req);
}

/* y as numbers (one per row) or rows of numbers (m per row). */
static int parse_targets(const cJSON *y, api_fit_request *req, int multi,
                         api_error *e)
{
    if (!y)
        return api_invalid(e, "y is required: %s", multi
                           ? "an array of numbers, or of rows of numbers"
                           : "an array of numbers");
    if (!cJSON_IsArray(y))
        return api_invalid(e, "y must be an array, not %s", api_type_name(y));
    size_t n = (size_t)cJSON_GetArraySize(y);
    if (n != req->n)
        return api_invalid(e, "y has %zu entries; X has %zu rows", n, req->n);
    if (multi && cJSON_IsArray(y->child)) {
        size_t d;
        return api_get_matrix(y, "y", 0, &req->Y, &n, &d, e) ? -1
               : (req->m = d, 0);
    }
    req->m = 1;
    req->Y = malloc(n * sizeof *req->Y);
    if (!req->Y)
        return api_fail(e, 413, "payload_too_large", "not enough memory for y");
    size_t i = 0;
    for (const cJSON *v = y->child; v; v = v->next, i++) {
        if (!cJSON_IsNumber(v))
            return api_invalid(e, "y[%zu] must be a number, not %s", i,
                               api_type_name(v));
        if (!isfinite(v->valuedouble))
            return api_invalid(e, "y[%zu] is not a finite number", i);
        req->Y[i] = v->valuedouble;
    }
    return 0;
}

static int parse_krr(const cJSON *params, api_fit_request *req, api_error *e)
{
    static const char *const keys[] = {"alpha", NULL};
    km_error kerr;
    req->krr = km_krr_params_default();
    if (api_check_keys(params, "params", keys, e) ||
        api_opt_number(params, "params", "alpha", &req->krr.alpha, e))
        return -1;
    if (km_krr_check(&req->krr, &kerr) != KM_OK)
        return api_fail_km(e, &kerr);
    return 0;
}

int api_fit_parse(const cJSON *root, api_fit_request *req, api_error *e)
{
    static const char *const keys[] = {"algorithm", "kernel", "params", "X",
                                       "y", "async", NULL};
    memset(req, 0, sizeof *req);
    km_kernel_init(&req->kernel, KM_KERNEL_LINEAR);
    if (api_check_keys(root, "", keys, e))
        return -1;

    const cJSON *algo = cJSON_GetObjectItemCaseSensitive(root, "algorithm");
    if (!cJSON_IsString(algo))
        return api_invalid(e, "algorithm is required: one of krr, svc, svr, "
                           "kpca");
    if (km_algorithm_parse(algo->valuestring, &req->algo) != 0)
        return api_invalid(e, "algorithm \"%.40s\" is not known; expected one "
                           "of krr, svc, svr, kpca", algo->valuestring);
    if (api_parse_kernel(cJSON_GetObjectItemCaseSensitive(root, "kernel"),
                         "kernel", &req->kernel, 0, e))
        return -1;
    const cJSON *params = cJSON_GetObjectItemCaseSensitive(root, "params");
    if (params && !cJSON_IsObject(params))
        return api_invalid(e, "params must be an object, not %s",
                           api_type_name(params));
    if (api_opt_bool(root, "", "async", &req->async, e))
        return -1;
    if (api_get_matrix(cJSON_GetObjectItemCaseSensitive(root, "X"), "X", 0,
                       &req->X, &req->n, &req->d, e))
        return -1;
    const cJSON *y = cJSON_GetObjectItemCaseSensitive(root, "y");

    switch (req->algo) {
    case KM_ALGO_KRR:
        return parse_krr(params, req, e) || parse_targets(y, req, 1, e) ? -1 : 0;
    default:
        return api_fail(e, 400, "invalid_argument",
                        "algorithm \"%s\" is not available in this build",
                        km_algorithm_name(req->algo));
    }
}

size_t api_fit_bytes(const api_fit_request *req)
{
    switch (req->algo) {
    case KM_ALGO_KRR:
        return km_krr_fit_bytes(req->n, req->d, req->m);
    default:
        return 0;
    }
}

int api_fit_run(const api_fit_request *req, const km_fit_control *ctl,
                km_model **out, api_error *e)
{
    km_error kerr = {KM_OK, ""};
    km_status st;
    switch (req->algo) {
    case KM_ALGO_KRR:
        st = km_krr_fit(&req->kernel, &req->krr, req->X, req->n, req->d,
                        req->Y, req->m, ctl, out, &kerr);
        break;
    default:
        kerr.status = st = KM_EINVAL;
        snprintf(kerr.message, sizeof kerr.message,
                 "algorithm %s is not available", km_algorithm_name(req->algo));
        break;
    }
    return st == KM_OK ? 0 : api_fail_km(e, &kerr);
}
