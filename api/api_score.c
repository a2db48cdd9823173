/*
 * api_score.c - score: a model's answers on rows with known answers,
 * measured as sklearn.metrics measures them (core's km_score_regression,
 * km_score_classes, km_model_score).
 *
 * A score body is {"X": [[...]], "y": [...]}. X is read as predict reads
 * it (rows of n_features finite numbers); y is what the model answers:
 * numbers (krr with one output, svr), rows of n_outputs numbers (krr
 * with several; one output may also come as rows of one), labels of the
 * model's own type (svc; a label the model does not know is 422 naming
 * y[i]); kkmeans takes any labels, or none; kpca takes no y and scores
 * its reconstruction, which needs the inverse map (409 otherwise, as
 * project's inverse). The answer is
 *   {"model": {"name", "version"}, "n": rows, "scoring": {...}}
 * with r2, mse, mae (regression); accuracy, balanced_accuracy,
 * log_loss (with probabilities), labels, precision, recall,
 * confusion_matrix (svc); reconstruction_error (kpca); inertia and,
 * with y, adjusted_rand_index (kkmeans). Numbers are written exactly
 * (api_json_number); r2 of one row is null (not defined).
 *
 * Thread-safety: reentrant.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_json.h"
#include "api_rows.h"
#include "api_model.h"
#include "api_predict.h"
#include "api_score.h"

const char *const api_score_matrix_keys[] = {"X", NULL};

/* A cJSON node and its allocation's overhead: the most one value of y
 * costs once parsed. */
#define NODE_BYTES 80

size_t api_score_bytes(const km_model *m, const char *body, size_t len)
{
    size_t numbers = api_json_max_numbers(body, len);
    /* each row has n_features numbers of X and at most w values of y */
    size_t d = km_model_n_features(m), w = km_model_n_outputs(m);
    if (!w || km_model_n_labels(m))
        w = 1;
    size_t ys = numbers / (d + w) * w + w;
    size_t rows = numbers / (d ? d : 1) + 1;
    /* y's nodes and strings, its copy (8 bytes a value, or the truth's
     * int), the predicted labels, the scores per class */
    return api_predict_bytes(m, body, len) + len + ys * (NODE_BYTES + 8) +
           rows * 2 * sizeof(int) +
           km_model_n_labels(m) * (km_model_n_labels(m) + 3) * 8;
}

/* ------------------------------------------------------------ y */

/* Targets: n rows of m numbers into Y (n x m). */
static int read_values(const cJSON *y, size_t n, size_t m, double *Y,
                       api_error *e)
{
    size_t i = 0;
    int rows = cJSON_IsArray(y->child);
    for (const cJSON *v = y->child; v; v = v->next, i++) {
        if (!rows) {
            if (m > 1)
                return api_invalid(e, "y[%zu] must be an array of %zu numbers "
                                   "(the model has %zu outputs), not %s", i,
                                   m, m, api_type_name(v));
            if (!cJSON_IsNumber(v))
                return api_invalid(e, "y[%zu] must be a number, not %s", i,
                                   api_type_name(v));
            if (!isfinite(v->valuedouble))
                return api_invalid(e, "y[%zu] is not a finite number", i);
            Y[i] = v->valuedouble;
            continue;
        }
        if (!cJSON_IsArray(v))
            return api_invalid(e, "y[%zu] must be an array of numbers, not %s "
                               "(y[0] is an array)", i, api_type_name(v));
        if ((size_t)cJSON_GetArraySize(v) != m)
            return api_invalid(e, "y[%zu] has %d values; the model has %zu "
                               "output%s", i, cJSON_GetArraySize(v), m,
                               m == 1 ? "" : "s");
        size_t j = 0;
        for (const cJSON *c = v->child; c; c = c->next, j++) {
            if (!cJSON_IsNumber(c))
                return api_invalid(e, "y[%zu][%zu] must be a number, not %s",
                                   i, j, api_type_name(c));
            if (!isfinite(c->valuedouble))
                return api_invalid(e, "y[%zu][%zu] is not a finite number", i,
                                   j);
            Y[i * m + j] = c->valuedouble;
        }
    }
    (void)n;
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int cmp_label(const void *key, const void *elt)
{
    return strcmp(key, *(const char *const *)elt);
}

/* Labels of the model's type into class indices; 422 naming y[i] for a
 * label the model does not know. */
static int read_labels(const km_model *m, const cJSON *y, int *truth,
                       api_error *e)
{
    size_t k = km_model_n_labels(m);
    int numeric = km_model_labels_numeric(m);
    double *values = numeric ? malloc(k * sizeof *values) : NULL;
    const char **texts = numeric ? NULL : malloc(k * sizeof *texts);
    if (numeric ? !values : !texts) {
        free(values);
        return api_raise(e, API_PAYLOAD_TOO_LARGE, "not enough memory for y");
    }
    for (size_t c = 0; c < k; c++) {
        if (numeric)
            values[c] = strtod(km_model_label(m, c), NULL);
        else
            texts[c] = km_model_label(m, c);
    }
    size_t i = 0;
    int rc = 0;
    for (const cJSON *v = y->child; v && !rc; v = v->next, i++) {
        if (numeric ? !cJSON_IsNumber(v) : !cJSON_IsString(v)) {
            rc = api_invalid(e, "y[%zu] must be a %s (the model's labels are "
                             "%ss), not %s", i, numeric ? "number" : "string",
                             numeric ? "number" : "string", api_type_name(v));
            break;
        }
        if (numeric && !isfinite(v->valuedouble)) {
            rc = api_invalid(e, "y[%zu] is not a finite number", i);
            break;
        }
        /* labels are sorted as the model keeps them (numbers ascending,
         * strings by byte order) */
        const void *hit =
            numeric ? bsearch(&v->valuedouble, values, k, sizeof *values,
                              cmp_double)
                    : bsearch(v->valuestring, texts, k, sizeof *texts,
                              cmp_label);
        if (!hit) {
            char text[32];
            if (numeric)
                api_format_number(text, v->valuedouble);
            rc = api_raise(e, API_UNPROCESSABLE, "y[%zu] is %s%.64s%s, which "
                           "is not a class of model \"%s\" (it has %zu: see "
                           "its classes)", i, numeric ? "" : "\"",
                           numeric ? text : v->valuestring,
                           numeric ? "" : "\"", km_model_name(m), k);
            break;
        }
        truth[i] = numeric ? (int)((const double *)hit - values)
                           : (int)((const char *const *)hit - texts);
    }
    free(values);
    free(texts);
    return rc;
}

/* ------------------------------------------------------------ answers */

/* 0, or 422 naming the first row whose prediction is not finite. */
static int check_finite(const double *v, size_t rows, size_t cols,
                        api_error *e)
{
    for (size_t i = 0; i < rows * cols; i++)
        if (!isfinite(v[i]))
            return api_raise(e, API_UNPROCESSABLE, "predictions[%zu] is not "
                             "a finite number: input row %zu overflows the "
                             "model's arithmetic in double precision; "
                             "rescale it", i / cols, i / cols);
    return 0;
}

static int score_values(const km_model *m, const cJSON *y, const double *X,
                        size_t n, cJSON *out, api_error *e)
{
    size_t mo = km_model_n_outputs(m);
    double *Y = malloc(n * mo * sizeof *Y), *P = malloc(n * mo * sizeof *P);
    km_error kerr = {KM_OK, ""};
    km_regression_scores r;
    int rc = !Y || !P ? api_raise(e, API_PAYLOAD_TOO_LARGE, "not enough "
                                  "memory to score %zu rows", n)
                      : read_values(y, n, mo, Y, e);
    if (!rc && km_predict(m, KM_OUT_VALUES, X, n, P, &kerr) != KM_OK)
        rc = api_fail_km(e, &kerr);
    if (!rc)
        rc = check_finite(P, n, mo, e);
    if (!rc && km_score_regression(Y, P, n, mo, &r, &kerr) != KM_OK)
        rc = api_fail_km(e, &kerr);
    if (!rc) {
        cJSON_AddItemToObject(out, "r2", api_json_number(r.r2));
        cJSON_AddItemToObject(out, "mse", api_json_number(r.mse));
        cJSON_AddItemToObject(out, "mae", api_json_number(r.mae));
    }
    free(Y);
    free(P);
    return rc;
}

static int score_classes(const km_model *m, const cJSON *y, const double *X,
                         size_t n, cJSON *out, api_error *e)
{
    size_t k = km_model_n_labels(m);
    int proba = (km_model_outputs(m) & KM_OUT_PROBABILITIES) != 0;
    int *truth = malloc(n * sizeof *truth), *pred = malloc(n * sizeof *pred);
    double *P = proba ? malloc(n * k * sizeof *P) : NULL;
    km_error kerr = {KM_OK, ""};
    km_class_scores cs;
    memset(&cs, 0, sizeof cs);
    int rc = !truth || !pred || (proba && !P)
                 ? api_raise(e, API_PAYLOAD_TOO_LARGE, "not enough memory to "
                             "score %zu rows", n)
                 : read_labels(m, y, truth, e);
    if (!rc && km_predict_labels(m, X, n, pred, &kerr) != KM_OK)
        rc = api_fail_km(e, &kerr);
    if (!rc && proba &&
        km_predict(m, KM_OUT_PROBABILITIES, X, n, P, &kerr) != KM_OK)
        rc = api_fail_km(e, &kerr);
    if (!rc && proba)
        rc = check_finite(P, n, k, e);
    if (!rc && km_score_classes(truth, pred, P, n, k, &cs, &kerr) != KM_OK)
        rc = api_fail_km(e, &kerr);
    if (!rc) {
        cJSON_AddItemToObject(out, "accuracy", api_json_number(cs.accuracy));
        cJSON_AddItemToObject(out, "balanced_accuracy",
                              api_json_number(cs.balanced_accuracy));
        if (proba)
            cJSON_AddItemToObject(out, "log_loss",
                                  api_json_number(cs.log_loss));
        cJSON *labels = cJSON_AddArrayToObject(out, "labels");
        for (size_t c = 0; labels && c < k; c++)
            cJSON_AddItemToArray(labels, api_model_label_json(m, c));
        cJSON_AddItemToObject(out, "precision", api_json_numbers(cs.precision, k));
        cJSON_AddItemToObject(out, "recall", api_json_numbers(cs.recall, k));
        cJSON *cm = cJSON_AddArrayToObject(out, "confusion_matrix");
        for (size_t t = 0; cm && t < k; t++) {
            cJSON *row = cJSON_CreateArray();
            for (size_t c = 0; row && c < k; c++)
                cJSON_AddItemToArray(row, api_json_number(
                                              (double)cs.confusion[t * k + c]));
            cJSON_AddItemToArray(cm, row);
        }
    }
    km_class_scores_cleanup(&cs);
    free(truth);
    free(pred);
    free(P);
    return rc;
}

/* y of a clustering: numbers or strings (the kind of y[0]), as the ids
 * of their distinct values (any numbering will do for the Rand index). */
typedef struct group_item {
    const cJSON *v;
    size_t row;
} group_item;

static int cmp_group(const void *a, const void *b)
{
    const cJSON *x = ((const group_item *)a)->v, *y = ((const group_item *)b)->v;
    if (cJSON_IsString(x))
        return strcmp(x->valuestring, y->valuestring);
    return (x->valuedouble > y->valuedouble) -
           (x->valuedouble < y->valuedouble);
}

static int read_groups(const cJSON *y, size_t n, int *truth, api_error *e)
{
    group_item *items = malloc((n ? n : 1) * sizeof *items);
    if (!items)
        return api_raise(e, API_PAYLOAD_TOO_LARGE, "not enough memory for y");
    int strings = cJSON_IsString(y->child), rc = 0;
    size_t i = 0;
    for (const cJSON *v = y->child; v && !rc; v = v->next, i++) {
        if (strings ? !cJSON_IsString(v) : !cJSON_IsNumber(v))
            rc = api_invalid(e, "y[%zu] must be a %s (as y[0]), not %s", i,
                             strings ? "string" : "number", api_type_name(v));
        else if (!strings && !isfinite(v->valuedouble))
            rc = api_invalid(e, "y[%zu] is not a finite number", i);
        items[i].v = v;
        items[i].row = i;
    }
    if (!rc) {
        qsort(items, n, sizeof *items, cmp_group);
        int g = -1;
        for (size_t r = 0; r < n; r++) {
            if (r == 0 || cmp_group(&items[r - 1], &items[r]))
                g++;
            truth[items[r].row] = g;
        }
    }
    free(items);
    return rc;
}

/* Clusters (kkmeans): the inertia of X's rows, and with y (labels of any
 * kind) the adjusted Rand index of the cluster ids against them. */
static int score_clusters(const km_model *m, const cJSON *y, const double *X,
                          size_t n, cJSON *out, api_error *e)
{
    int *truth = malloc(n * sizeof *truth), *pred = malloc(n * sizeof *pred);
    km_error kerr = {KM_OK, ""};
    double inertia = 0, ari = 0;
    int rc = !truth || !pred ? api_raise(e, API_PAYLOAD_TOO_LARGE, "not "
                                         "enough memory to score %zu rows",
                                         n)
             : y ? read_groups(y, n, truth, e)
                 : 0;
    if (!rc && km_kkmeans_score(m, X, n, pred, &inertia, &kerr) != KM_OK)
        rc = api_fail_km(e, &kerr);
    if (!rc && !isfinite(inertia))
        rc = api_raise(e, API_UNPROCESSABLE, "the inertia is not a finite "
                       "number: the input overflows the model's arithmetic "
                       "in double precision; rescale it");
    if (!rc && y && km_score_adjusted_rand(truth, pred, n, &ari, &kerr) !=
                        KM_OK)
        rc = api_fail_km(e, &kerr);
    if (!rc) {
        cJSON_AddItemToObject(out, "inertia", api_json_number(inertia));
        if (y)
            cJSON_AddItemToObject(out, "adjusted_rand_index",
                                  api_json_number(ari));
    }
    free(truth);
    free(pred);
    return rc;
}

static int score_reconstruction(const km_model *m, const double *X, size_t n,
                                cJSON *out, api_error *e)
{
    km_problem pb = {X, n, km_model_n_features(m), NULL, 0, NULL, 0};
    km_error kerr = {KM_OK, ""};
    double s;
    if (km_model_score(m, KM_SCORING_NEG_RECONSTRUCTION, &pb, &s, &kerr) !=
        KM_OK)
        return kerr.status == KM_ENOMEM
                   ? api_raise(e, API_PAYLOAD_TOO_LARGE, "not enough memory "
                               "to score %zu rows", n)
                   : api_fail_km(e, &kerr);
    cJSON_AddItemToObject(out, "reconstruction_error", api_json_number(-s));
    return 0;
}

int api_score(const km_model *m, api_body *body, api_text *out, size_t *rows,
              api_error *e)
{
    static const char *const keys[] = {"X", "y", NULL};
    unsigned answers = km_algorithm_outputs(km_model_algorithm(m));
    const char *algo = km_algorithm_name(km_model_algorithm(m));
    const cJSON *y = cJSON_GetObjectItemCaseSensitive(body->root, "y");
    int supervised = (answers & (KM_OUT_VALUES | KM_OUT_LABELS)) != 0;
    int clusters = (answers & KM_OUT_CLUSTERS) != 0; /* y optional */
    double *X = NULL;
    size_t n = 0, d;

    if (api_check_keys(body->root, "", keys, e))
        return -1;
    if (!supervised && !clusters &&
        !(km_model_outputs(m) & KM_OUT_INVERSE))
        return api_raise(e, API_CONFLICT, "model \"%s\" was fitted without "
                         "params.fit_inverse_transform: true; its "
                         "reconstruction error is not available",
                         km_model_name(m));
    api_rows_spec rs = {km_model_kernel(m), km_model_n_features(m),
                        km_model_max_length(m)};
    if (api_body_rows(body, "X", &rs, &X, &n, &d, e))
        return -1;
    int rc = 0;
    if (!supervised && !clusters && y)
        rc = api_invalid(e, "y does not apply to %s; remove it", algo);
    else if (clusters && y && !cJSON_IsArray(y))
        rc = api_invalid(e, "y must be an array of labels, not %s",
                         api_type_name(y));
    else if (clusters && y && (size_t)cJSON_GetArraySize(y) != n)
        rc = api_invalid(e, "y has %d entries; X has %zu rows",
                         cJSON_GetArraySize(y), n);
    else if (supervised && !y)
        rc = api_invalid(e, "y is required: %s", answers & KM_OUT_LABELS
                         ? "an array of the model's class labels"
                         : km_model_n_outputs(m) > 1
                               ? "an array of rows of numbers, one per "
                                 "output"
                               : "an array of numbers");
    else if (supervised && !cJSON_IsArray(y))
        rc = api_invalid(e, "y must be an array, not %s", api_type_name(y));
    else if (supervised && (size_t)cJSON_GetArraySize(y) != n)
        rc = api_invalid(e, "y has %d entries; X has %zu rows",
                         cJSON_GetArraySize(y), n);
    cJSON *o = cJSON_CreateObject(), *s = cJSON_CreateObject();
    if (!rc && (!o || !s))
        rc = api_raise(e, API_INTERNAL, "out of memory building the answer");
    if (!rc)
        rc = answers & KM_OUT_VALUES   ? score_values(m, y, X, n, s, e)
             : answers & KM_OUT_LABELS ? score_classes(m, y, X, n, s, e)
             : clusters                ? score_clusters(m, y, X, n, s, e)
                                       : score_reconstruction(m, X, n, s, e);
    free(X);
    char *text = NULL;
    if (!rc) {
        cJSON_AddItemToObject(o, "model", api_model_ref_json(m));
        cJSON_AddItemToObject(o, "n", api_json_number((double)n));
        cJSON_AddItemToObject(o, "scoring", s);
        s = NULL;
        if (!(text = cJSON_PrintUnformatted(o)))
            rc = api_raise(e, API_INTERNAL, "out of memory building the "
                           "answer");
    }
    cJSON_Delete(o);
    cJSON_Delete(s);
    if (rc)
        return -1;
    *rows = n;
    out->buf = text;
    out->len = strlen(text);
    out->cap = out->len + 1;
    out->failed = 0;
    return 0;
}
