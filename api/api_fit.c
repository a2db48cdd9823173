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
#include <limits.h>
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
        return api_raise(e, API_PAYLOAD_TOO_LARGE, "not enough memory for y");
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

/* Most classes an svc fit may have (k(k-1)/2 pairs are trained). */
#define MAX_CLASSES 256
/* Longest class label. */
#define MAX_LABEL 256

typedef struct label_ref {
    const cJSON *item;
    size_t row;
} label_ref;

static int cmp_number_labels(const void *a, const void *b)
{
    double x = ((const label_ref *)a)->item->valuedouble;
    double y = ((const label_ref *)b)->item->valuedouble;
    return (x > y) - (x < y);
}

static int cmp_string_labels(const void *a, const void *b)
{
    return strcmp(((const label_ref *)a)->item->valuestring,
                  ((const label_ref *)b)->item->valuestring);
}

static int same_label(const cJSON *a, const cJSON *b, int numeric)
{
    return numeric ? a->valuedouble == b->valuedouble
                   : !strcmp(a->valuestring, b->valuestring);
}

/*
 * svc labels: all numbers or all strings; sorted (numbers ascending,
 * strings by byte order) into req->labels, with each row's index in
 * req->classes.
 */
static int parse_labels(const cJSON *y, api_fit_request *req, api_error *e)
{
    if (!y)
        return api_invalid(e, "y is required: an array of class labels, all "
                           "numbers or all strings");
    if (!cJSON_IsArray(y))
        return api_invalid(e, "y must be an array of labels, not %s",
                           api_type_name(y));
    size_t n = (size_t)cJSON_GetArraySize(y);
    if (n != req->n)
        return api_invalid(e, "y has %zu entries; X has %zu rows", n, req->n);
    int numeric = cJSON_IsNumber(y->child);
    size_t i = 0;
    for (const cJSON *v = y->child; v; v = v->next, i++) {
        if (!cJSON_IsNumber(v) && !cJSON_IsString(v))
            return api_invalid(e, "y[%zu] must be a number or a string, not %s",
                               i, api_type_name(v));
        if (cJSON_IsNumber(v) != numeric)
            return api_invalid(e, "y[%zu] is %s but y[0] is %s: labels must "
                               "be all numbers or all strings", i,
                               api_type_name(v), api_type_name(y->child));
        if (numeric && !isfinite(v->valuedouble))
            return api_invalid(e, "y[%zu] is not a finite number", i);
        if (!numeric && strlen(v->valuestring) > MAX_LABEL)
            return api_invalid(e, "y[%zu] is longer than %d bytes", i,
                               MAX_LABEL);
    }
    label_ref *refs = malloc(n * sizeof *refs);
    req->classes = malloc(n * sizeof *req->classes);
    req->labels = calloc(MAX_CLASSES, sizeof *req->labels);
    if (!refs || !req->classes || !req->labels) {
        free(refs);
        return api_raise(e, API_PAYLOAD_TOO_LARGE, "not enough memory for y");
    }
    i = 0;
    for (const cJSON *v = y->child; v; v = v->next, i++)
        refs[i] = (label_ref){v, i};
    qsort(refs, n, sizeof *refs, numeric ? cmp_number_labels : cmp_string_labels);
    size_t k = 0;
    for (i = 0; i < n; i++) {
        if (i == 0 || !same_label(refs[i].item, refs[i - 1].item, numeric)) {
            if (k == MAX_CLASSES) {
                free(refs);
                return api_invalid(e, "y has more than %d distinct classes",
                                   MAX_CLASSES);
            }
            char buf[32];
            if (numeric)
                snprintf(buf, sizeof buf, "%.17g", refs[i].item->valuedouble);
            req->labels[k] = strdup(numeric ? buf : refs[i].item->valuestring);
            if (!req->labels[k]) {
                free(refs);
                return api_raise(e, API_INTERNAL, "out of memory for labels");
            }
            req->n_labels = ++k;
        }
        req->classes[refs[i].row] = (int)(k - 1);
    }
    free(refs);
    req->labels_numeric = numeric;
    return 0;
}

/* class_weight: {"label": weight, ...} over the labels of y. */
static int parse_class_weight(const cJSON *cw, api_fit_request *req,
                              api_error *e)
{
    if (!cw)
        return 0;
    if (!cJSON_IsObject(cw))
        return api_invalid(e, "params.class_weight must be an object of label "
                           "to weight, not %s", api_type_name(cw));
    req->class_weight = malloc(req->n_labels * sizeof *req->class_weight);
    if (!req->class_weight)
        return api_raise(e, API_INTERNAL, "out of memory");
    for (size_t c = 0; c < req->n_labels; c++)
        req->class_weight[c] = 1.0;
    for (const cJSON *w = cw->child; w; w = w->next) {
        size_t c = 0;
        for (; c < req->n_labels; c++) {
            if (req->labels_numeric) {
                char *end;
                double v = strtod(w->string, &end);
                if (*w->string && !*end && v == strtod(req->labels[c], NULL))
                    break;
            } else if (!strcmp(w->string, req->labels[c])) {
                break;
            }
        }
        if (c == req->n_labels)
            return api_invalid(e, "params.class_weight has label \"%.64s\", "
                               "which is not in y", w->string);
        if (!cJSON_IsNumber(w) || !isfinite(w->valuedouble) ||
            !(w->valuedouble > 0))
            return api_invalid(e, "params.class_weight[\"%.64s\"] must be a "
                               "finite number > 0", w->string);
        req->class_weight[c] = w->valuedouble;
    }
    req->svm.class_weight = req->class_weight;
    return 0;
}

static int parse_svm(const cJSON *params, const cJSON *y, api_fit_request *req,
                     api_error *e)
{
    static const char *const svc_keys[] = {"C", "tol", "cache_mb", "shrinking",
                                           "class_weight", "probability", NULL};
    static const char *const svr_keys[] = {"C", "epsilon", "tol", "cache_mb",
                                           "shrinking", NULL};
    int svc = req->algo == KM_ALGO_SVC;
    km_error kerr;
    req->svm = km_svm_params_default();
    if (api_check_keys(params, "params", svc ? svc_keys : svr_keys, e) ||
        api_opt_number(params, "params", "C", &req->svm.C, e) ||
        api_opt_number(params, "params", "tol", &req->svm.tol, e) ||
        api_opt_number(params, "params", "cache_mb", &req->svm.cache_mb, e) ||
        api_opt_bool(params, "params", "shrinking", &req->svm.shrinking, e) ||
        api_opt_number(params, "params", "epsilon", &req->svm.epsilon, e) ||
        api_opt_bool(params, "params", "probability", &req->svm.probability, e))
        return -1;
    if (svc) {
        if (parse_labels(y, req, e) ||
            parse_class_weight(params ? cJSON_GetObjectItemCaseSensitive(
                                            params, "class_weight") : NULL,
                               req, e))
            return -1;
    } else if (parse_targets(y, req, 0, e)) {
        return -1;
    }
    if (km_svm_check(&req->svm, req->algo, svc ? req->n_labels : 0, &kerr) !=
        KM_OK)
        return api_fail_km(e, &kerr);
    return 0;
}

static int parse_kpca(const cJSON *params, const cJSON *y,
                      api_fit_request *req, api_error *e)
{
    static const char *const keys[] = {"n_components", "fit_inverse_transform",
                                       "alpha", "eigen_solver", NULL};
    km_error kerr;
    long nc = 0;
    req->kpca = km_kpca_params_default();
    if (y)
        return api_invalid(e, "y does not apply to kpca; remove it");
    if (api_check_keys(params, "params", keys, e))
        return -1;
    if (!params || !cJSON_GetObjectItemCaseSensitive(params, "n_components"))
        return api_invalid(e, "params.n_components is required: a whole "
                           "number from 1 to the number of rows of X (%zu)",
                           req->n);
    /* Its type here (400); its bound, n_samples, in km_kpca_check (422). */
    if (api_opt_integer(params, "params", "n_components", 1, INT_MAX, &nc,
                        e) ||
        api_opt_bool(params, "params", "fit_inverse_transform",
                     &req->kpca.fit_inverse_transform, e) ||
        api_opt_number(params, "params", "alpha", &req->kpca.alpha, e))
        return -1;
    req->kpca.n_components = (size_t)nc;
    const cJSON *solver = cJSON_GetObjectItemCaseSensitive(params,
                                                           "eigen_solver");
    if (solver) {
        int found = 0;
        for (int s = 0; s < KM_KPCA_SOLVER_COUNT && cJSON_IsString(solver); s++)
            if (!strcmp(solver->valuestring, km_kpca_solver_name(s))) {
                req->kpca.solver = (km_kpca_solver)s;
                found = 1;
            }
        if (!found)
            return api_invalid(e, "params.eigen_solver must be one of auto, "
                               "dense, iterative");
    }
    if (km_kpca_check(&req->kpca, req->n, &kerr) != KM_OK)
        return api_fail_km(e, &kerr);
    return 0;
}

const char *const api_fit_matrix_keys[] = {"X", NULL};

int api_fit_parse(api_body *body, api_fit_request *req, api_error *e)
{
    const cJSON *root = body->root;
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
    if (api_body_matrix(body, "X", 0, &req->X, &req->n, &req->d, e))
        return -1;
    const cJSON *y = cJSON_GetObjectItemCaseSensitive(root, "y");

    switch (req->algo) {
    case KM_ALGO_KRR:
        return parse_krr(params, req, e) || parse_targets(y, req, 1, e) ? -1 : 0;
    case KM_ALGO_SVC:
    case KM_ALGO_SVR:
        return parse_svm(params, y, req, e);
    case KM_ALGO_KPCA:
        return parse_kpca(params, y, req, e);
    default:
        return api_raise(e, API_INVALID_ARGUMENT,
                        "algorithm \"%s\" is not available in this build",
                        km_algorithm_name(req->algo));
    }
}

size_t api_fit_bytes(const api_fit_request *req)
{
    switch (req->algo) {
    case KM_ALGO_KRR:
        return km_krr_fit_bytes(req->n, req->d, req->m);
    case KM_ALGO_SVC:
        return km_svc_fit_bytes(req->n, req->d, req->n_labels, &req->svm);
    case KM_ALGO_SVR:
        return km_svm_fit_bytes(req->n, req->d, &req->svm);
    case KM_ALGO_KPCA:
        return km_kpca_fit_bytes(req->n, req->d, &req->kpca);
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
    case KM_ALGO_SVC:
        st = km_svc_fit(&req->kernel, &req->svm, req->X, req->n, req->d,
                        req->classes, req->n_labels, ctl, out, &kerr);
        if (st == KM_OK &&
            (st = km_model_set_labels(*out, (const char *const *)req->labels,
                                      req->n_labels, req->labels_numeric,
                                      &kerr)) != KM_OK) {
            km_model_free(*out);
            *out = NULL;
        }
        break;
    case KM_ALGO_SVR:
        st = km_svr_fit(&req->kernel, &req->svm, req->X, req->n, req->d,
                        req->Y, ctl, out, &kerr);
        break;
    case KM_ALGO_KPCA:
        st = km_kpca_fit(&req->kernel, &req->kpca, req->X, req->n, req->d, ctl,
                         out, &kerr);
        break;
    default:
        kerr.status = st = KM_EINVAL;
        snprintf(kerr.message, sizeof kerr.message,
                 "algorithm %s is not available", km_algorithm_name(req->algo));
        break;
    }
    return st == KM_OK ? 0 : api_fail_km(e, &kerr);
}
