/*
 * api_fit.c - fit requests.
 *
 * A fit body is {"algorithm", "kernel", "params", "preprocess", "X", "y",
 * "async", "distributed"}; X and y may be binary tensors whose bytes
 * follow the JSON (api_tensor.h), X's first, then y's.
 * Unknown fields are refused, so a misspelt parameter is an error rather
 * than a silently ignored default. params are read by core's rows of the
 * algorithm (km_algorithm_params, through api_schema.c); ranges are
 * checked by core's own check functions
 * (one source of truth), whose messages name params.<field>.
 *
 * Thread-safety: reentrant.
 */
#include <limits.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_fit.h"
#include "api_json.h"
#include "api_rows.h"
#include "api_model.h"
#include "api_schema.h"
#include "api_search.h"
#include "api_tensor.h"

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
    api_search_free(req->search);
    if (req->base_release)
        req->base_release(req->base_ref);
    memset(req, 0, sizeof *req);
}

/* y as numbers (one per row) or rows of numbers (m per row). */
static int parse_targets(const cJSON *y, api_fit_request *req, int multi,
                         api_error *e)
{
    if (req->Y) /* a binary y, read (binary_y) */
        return 0;
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

/* A label-weights row (svc's class_weight: {"label": weight, ...} over
 * the labels of y): one weight per label, 1 for those not named. */
static int parse_label_weights(const cJSON *cw, const km_param *r,
                               api_fit_request *req, api_error *e)
{
    if (!cw)
        return 0;
    if (!cJSON_IsObject(cw))
        return api_invalid(e, "params.%s must be an object of label to "
                           "weight, not %s", r->key, api_type_name(cw));
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
            return api_invalid(e, "params.%s has label \"%.64s\", which is "
                               "not in y", r->key, w->string);
        if (!cJSON_IsNumber(w) || !isfinite(w->valuedouble) ||
            !(w->valuedouble > r->min))
            return api_invalid(e, "params.%s[\"%.64s\"] must be a finite "
                               "number > %g", r->key, w->string, r->min);
        req->class_weight[c] = w->valuedouble;
    }
    const double *cwp = req->class_weight;
    memcpy(req->params + r->offset, &cwp, sizeof cwp);
    return 0;
}

/* ------------------------------------------------------------ algorithms
 *
 * What api needs of each algorithm beyond its params schema is core's
 * descriptor: its check, memory estimate and fit (km_algorithm_check,
 * km_algorithm_fit_bytes, km_fit), what y is (km_algorithm_target), and
 * whether its check needs y first (km_algorithm_checks_targets: svc's
 * needs the classes). */

static int parse_y(const cJSON *y, api_fit_request *req, api_error *e)
{
    switch (km_algorithm_target(req->algo)) {
    case KM_TARGET_VALUES:
        return parse_targets(y, req, 0, e);
    case KM_TARGET_ROWS:
        return parse_targets(y, req, 1, e);
    case KM_TARGET_CLASSES:
        return parse_labels(y, req, e);
    default:
        return 0;
    }
}

/* A binary y (an object: api_tensor.h) of X's rows, read before parse_y:
 * numbers (krr's rows of outputs, [rows] or [rows, outputs]; one number a
 * row otherwise) straight into req->Y, which parse_y then takes as read;
 * labels (svc's, klr's: [rows] of numbers) made the JSON array they stand
 * for, which parse_y reads as it reads JSON labels. Reading y's size
 * against X's rows first, so that a hostile y costs no more than its
 * bytes. 0 when y is not an object. */
static int binary_y(api_body *body, api_fit_request *req, api_error *e)
{
    cJSON *y = cJSON_GetObjectItemCaseSensitive(body->root, "y");
    if (!cJSON_IsObject(y))
        return 0;
    km_target t = km_algorithm_target(req->algo);
    if (t == KM_TARGET_NONE)
        return api_invalid(e, "y does not apply to %s; remove it",
                           km_algorithm_name(req->algo));
    double *v;
    size_t n, q;
    int dims;
    if (api_tensor_read(y, "y", 2, &body->tail, &v, &n, &q, &dims, e))
        return -1;
    int rc = 0;
    if (n != req->n)
        rc = api_invalid(e, "y has %zu entries; X has %zu rows", n, req->n);
    else if (q != 1 && t != KM_TARGET_ROWS)
        rc = api_invalid(e, "y.shape must be [rows] (one %s a row) for %s",
                         t == KM_TARGET_CLASSES ? "label" : "number",
                         km_algorithm_name(req->algo));
    else if (q == 0)
        rc = api_invalid(e, "y.shape must have at least one output");
    if (rc || t != KM_TARGET_CLASSES) {
        if (rc)
            free(v);
        else {
            req->Y = v;
            req->m = q;
        }
        return rc;
    }
    cJSON *a = n <= INT_MAX ? cJSON_CreateDoubleArray(v, (int)n) : NULL;
    free(v);
    if (!a || !cJSON_ReplaceItemInObjectCaseSensitive(body->root, "y", a)) {
        cJSON_Delete(a);
        return api_raise(e, API_PAYLOAD_TOO_LARGE, "not enough memory for "
                         "y's %zu labels", n);
    }
    return 0;
}

static int run_check(const api_fit_request *req, api_error *e)
{
    km_error kerr;
    km_problem pb = api_fit_problem(req);
    return km_algorithm_check(req->algo, req->params, &pb, &kerr) == KM_OK
               ? 0 : api_fail_km(e, &kerr);
}

/* params and y, as the algorithm's schema and targets say. */
static int parse_algorithm(const cJSON *params, const cJSON *y,
                           api_fit_request *req, api_error *e)
{
    const km_param_set *s = km_algorithm_params(req->algo);
    int check_after = km_algorithm_checks_targets(req->algo);
    if (s->size > sizeof req->params) /* test_api_schema checks each */
        return api_raise(e, API_INTERNAL, "the params of %s need more than "
                         "API_PARAMS_BYTES (a bug)",
                         km_algorithm_name(req->algo));
    s->defaults(req->params);
    if (km_algorithm_target(req->algo) == KM_TARGET_NONE && y)
        return api_invalid(e, "y does not apply to %s; remove it",
                           km_algorithm_name(req->algo));
    if (api_schema_check_keys(params, "params", s, e) ||
        api_schema_read(params, "params", s, req->params, req->n, e))
        return -1;
    if (!check_after && run_check(req, e))
        return -1;
    if (parse_y(y, req, e))
        return -1;
    for (const km_param *r = s->rows; r->key; r++)
        if (r->type == KM_PARAM_LABEL_WEIGHTS &&
            parse_label_weights(params ? cJSON_GetObjectItemCaseSensitive(
                                             params, r->key) : NULL,
                                r, req, e))
            return -1;
    if (check_after && run_check(req, e))
        return -1;
    /* the kernel against the solver (krr's rff needs a kernel with a
     * spectral density) */
    km_error kerr;
    if (km_algorithm_check_kernel(req->algo, req->params, &req->kernel,
                                  &kerr) != KM_OK)
        return api_fail_km(e, &kerr);
    return 0;
}

/* "preprocess": {"scale", "center_y"}, read by its schema; center_y only
 * for an algorithm that predicts values (core's KM_OUT_VALUES). */
static int parse_preprocess(const cJSON *pre, api_fit_request *req,
                            api_error *e)
{
    const km_param_set *s = km_preprocess_params();
    memset(&req->pre, 0, sizeof req->pre);
    if (!pre)
        return 0;
    if (!cJSON_IsObject(pre))
        return api_invalid(e, "preprocess must be an object, not %s",
                           api_type_name(pre));
    if (api_schema_check_keys(pre, "preprocess", s, e) ||
        api_schema_read(pre, "preprocess", s, &req->pre, req->n, e))
        return -1;
    if (req->pre.center_y &&
        !(km_algorithm_outputs(req->algo) & KM_OUT_VALUES)) {
        char list[64] = "";
        for (int a = 0; a < KM_ALGO_COUNT; a++)
            if (km_algorithm_outputs((km_algorithm)a) & KM_OUT_VALUES)
                snprintf(list + strlen(list), sizeof list - strlen(list),
                         "%s%s", list[0] ? ", " : "",
                         km_algorithm_name((km_algorithm)a));
        return api_invalid(e, "preprocess.center_y applies to algorithms "
                           "that predict values (%s), not %s", list,
                           km_algorithm_name(req->algo));
    }
    return 0;
}

/* X as the kernel takes it (api_rows.c), with "max_length" for strings;
 * preprocessing applies to rows of numbers only. */
static int parse_input(api_body *body, api_fit_request *req, api_error *e)
{
    km_input_kind kind = km_kernel_input(&req->kernel);
    const char *kname = km_kernel_type_name(req->kernel.type);
    long max_length = 0;
    if (api_body_has(body, "max_length") && kind != KM_INPUT_STRINGS)
        return api_invalid(e, "max_length applies to the string kernels, "
                           "not to a %s kernel", kname);
    if (api_opt_integer(body->root, "", "max_length", 1, KM_STRING_MAX_BYTES,
                        &max_length, e))
        return -1;
    if (kind != KM_INPUT_VECTORS && req->pre.x != KM_SCALE_NONE)
        return api_invalid(e, "preprocess.scale applies to rows of numbers; "
                           "a %s kernel takes %s", kname,
                           km_choice_name(&km_input_kind_choices, kind));
    api_rows_spec rs = {&req->kernel, 0, (size_t)max_length};
    if (api_body_rows(body, "X", &rs, &req->X, &req->n, &req->d, e))
        return -1;
    req->max_length = kind == KM_INPUT_STRINGS ? rs.max_length : 0;
    return 0;
}

const char *const api_fit_matrix_keys[] = {"X", NULL};

int api_fit_parse(api_body *body, api_fit_request *req, api_error *e)
{
    const cJSON *root = body->root;
    static const char *const keys[] = {"algorithm", "kernel", "params",
                                       "preprocess", "X", "y", "search",
                                       "async", "distributed", "max_length",
                                       NULL};
    char algos[128];
    memset(req, 0, sizeof *req);
    km_kernel_init(&req->kernel, KM_KERNEL_LINEAR);
    if (api_check_keys(root, "", keys, e))
        return -1;

    const cJSON *algo = cJSON_GetObjectItemCaseSensitive(root, "algorithm");
    api_name_list(algos, sizeof algos, api_algorithm_name, KM_ALGO_COUNT);
    if (!cJSON_IsString(algo))
        return api_invalid(e, "algorithm is required: one of %s", algos);
    if (km_algorithm_parse(algo->valuestring, &req->algo) != 0)
        return api_invalid(e, "algorithm \"%.40s\" is not known; expected one "
                           "of %s", algo->valuestring, algos);
    if (api_parse_kernel(cJSON_GetObjectItemCaseSensitive(root, "kernel"),
                         "kernel", &req->kernel, 0, e))
        return -1;
    const cJSON *params = cJSON_GetObjectItemCaseSensitive(root, "params");
    if (params && !cJSON_IsObject(params))
        return api_invalid(e, "params must be an object, not %s",
                           api_type_name(params));
    if (api_opt_bool(root, "", "async", &req->async, e) ||
        api_opt_bool(root, "", "distributed", &req->distributed, e) ||
        parse_preprocess(cJSON_GetObjectItemCaseSensitive(root, "preprocess"),
                         req, e))
        return -1;
    if (parse_input(body, req, e) || binary_y(body, req, e) ||
        api_tail_done(&body->tail, e))
        return -1;
    if (parse_algorithm(params, cJSON_GetObjectItemCaseSensitive(root, "y"),
                        req, e))
        return -1;
    return api_search_parse(cJSON_GetObjectItemCaseSensitive(root, "search"),
                            req, &req->search, e);
}

/* The model's index of label l (numbers compare as numbers), or -1. */
static long model_class(const km_model *m, const char *l, int numeric)
{
    if (numeric != km_model_labels_numeric(m))
        return -1;
    for (size_t c = 0; c < km_model_n_labels(m); c++) {
        const char *ml = km_model_label(m, c);
        if (numeric ? strtod(ml, NULL) == strtod(l, NULL) : !strcmp(ml, l))
            return (long)c;
    }
    return -1;
}

/* A classifier's update: each row's class as the model's class index, in
 * req->Y (one output), as km_model_update takes it. 409 naming a class
 * the model does not have: an update cannot add one. */
static int update_classes(const km_model *m, api_fit_request *req,
                          api_error *e)
{
    long *map = malloc((req->n_labels ? req->n_labels : 1) * sizeof *map);
    if (!map || !(req->Y = malloc((req->n ? req->n : 1) * sizeof *req->Y))) {
        free(map);
        return api_raise(e, API_PAYLOAD_TOO_LARGE, "not enough memory for y");
    }
    for (size_t c = 0; c < req->n_labels; c++)
        if ((map[c] = model_class(m, req->labels[c], req->labels_numeric)) <
            0) {
            free(map);
            return api_raise(e, API_CONFLICT, "y holds the class \"%s\", "
                             "which model \"%s\" (%zu classes) does not "
                             "have: an update cannot add a class (refit to "
                             "add it: POST /v1/models/{name}/fit)",
                             req->labels[c], km_model_name(m),
                             km_model_n_labels(m));
        }
    for (size_t i = 0; i < req->n; i++)
        req->Y[i] = (double)map[req->classes[i]];
    req->m = 1;
    free(map);
    return 0;
}

int api_update_parse(api_body *body, const km_model *m, api_fit_request *req,
                     api_error *e)
{
    static const char *const keys[] = {"X", "y", "async", NULL};
    memset(req, 0, sizeof *req);
    km_kernel_init(&req->kernel, KM_KERNEL_LINEAR);
    const char *why = km_model_update_refusal(m);
    if (why) {
        char can[256];
        km_update_possible(can, sizeof can);
        return api_raise(e, API_CONFLICT, "model \"%s\" version %llu "
                         "cannot be updated: %s; %s can be updated (or "
                         "refit it: POST /v1/models/{name}/fit)",
                         km_model_name(m),
                         (unsigned long long)km_model_version(m), why, can);
    }
    km_error kerr;
    if (api_check_keys(body->root, "", keys, e) ||
        api_opt_bool(body->root, "", "async", &req->async, e))
        return -1;
    req->algo = km_model_algorithm(m);
    if (km_kernel_copy(&req->kernel, km_model_kernel(m), &kerr) != KM_OK)
        return api_fail_km(e, &kerr);
    api_rows_spec rs = {&req->kernel, km_model_n_features(m),
                        km_model_max_length(m)};
    if (api_body_rows(body, "X", &rs, &req->X, &req->n, &req->d, e) ||
        binary_y(body, req, e) || api_tail_done(&body->tail, e) ||
        parse_y(cJSON_GetObjectItemCaseSensitive(body->root, "y"), req, e))
        return -1;
    req->base = m;
    if (km_algorithm_target(req->algo) == KM_TARGET_CLASSES)
        return update_classes(m, req, e);
    return 0;
}

size_t api_fit_bytes(const api_fit_request *req)
{
    if (req->base)
        return km_model_update_bytes(req->base, req->n);
    km_problem pb = api_fit_problem(req);
    size_t fit = req->search ? api_search_bytes(req->search, req)
                             : km_algorithm_fit_bytes(req->algo, req->params,
                                                      &pb);
    /* after the fit, a kernel that may be indefinite has its Gram's
     * eigenvalues computed on at most KM_PSD_FIT_ROWS rows (the training
     * figures psd and min_eigenvalue) */
    size_t psd = km_kernel_maybe_indefinite(&req->kernel)
                     ? km_kernel_psd_bytes(&req->kernel, pb.n, pb.d,
                                           KM_PSD_FIT_ROWS)
                     : 0;
    /* a string kernel's sets of the training strings (their k-mer lists
     * and postings), made beside the Gram */
    size_t sets = km_kernel_set_bytes_of(&req->kernel, pb.X, pb.n, pb.d);
    size_t pre = km_preprocess_fit_bytes(&req->pre, &pb);
    size_t b = fit > psd ? fit : psd;
    return b > SIZE_MAX - pre - sets ? SIZE_MAX : b + pre + sets;
}

int api_fit_run(const api_fit_request *req, const km_fit_control *ctl,
                km_model **out, api_error *e)
{
    km_error kerr = {KM_OK, ""};
    km_problem pb = api_fit_problem(req);
    const km_kernel *kernel = &req->kernel;
    const void *params = req->params;
    km_fit_control refit;
    if (req->base) {
        if (km_model_update(req->base, req->X, req->n, req->d, req->Y,
                            req->m, ctl, out, &kerr) != KM_OK)
            return api_fail_km(e, &kerr);
        return 0;
    }
    if (req->search) {
        if (api_search_select(req->search, req, ctl, &kernel, &params, &refit,
                              e))
            return -1;
        ctl = ctl ? &refit : NULL;
    }
    km_status st = km_fit(req->algo, kernel, params, &req->pre, &pb, ctl, out,
                          &kerr);
    if (st == KM_OK && req->max_length &&
        (st = km_model_set_max_length(*out, req->max_length, &kerr)) !=
            KM_OK) {
        km_model_free(*out);
        *out = NULL;
    }
    if (st == KM_OK && km_algorithm_target(req->algo) == KM_TARGET_CLASSES &&
        (st = km_model_set_labels(*out, (const char *const *)req->labels,
                                  req->n_labels, req->labels_numeric,
                                  &kerr)) != KM_OK) {
        km_model_free(*out);
        *out = NULL;
    }
    if (st != KM_OK)
        return api_fail_km(e, &kerr);
    if (req->search && api_search_record(req->search, *out, e)) {
        km_model_free(*out);
        *out = NULL;
        return -1;
    }
    return 0;
}
