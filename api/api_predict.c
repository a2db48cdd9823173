/*
 * api_predict.c - predict and project.
 *
 * The body's "X" (or TF Serving's "instances") is read into one
 * contiguous buffer and checked against the model's feature count before
 * core runs, so every error names its row and column.
 *
 * JSON has no infinity or NaN, and an input row of finite numbers can
 * still overflow a model's arithmetic (a linear kernel on 1e308). Such a
 * value is never written: the whole answer is 422 unprocessable naming
 * the first row whose value is not finite ("predictions[3] is not a
 * finite number ..."). A label answer is always a label.
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
#include "api_text.h"

const char *const api_predict_matrix_keys[] = {"X", "instances", NULL};

/* ------------------------------------------------------------ answers
 *
 * What a model answers, and how /v1 asks for it, comes from core's table
 * of answers (KM_ANSWER_MAP: each answer's route, "output" value, flag
 * and needs) and its algorithm's descriptor (km_answer_offered), so the
 * routes, "output" and their messages follow from them rather than from
 * lists or tests of the algorithm here. */

static unsigned answers_of(const km_model *m)
{
    return km_algorithm_outputs(km_model_algorithm(m));
}

/* Whether r is an answer of route that algorithm a offers (choosing: one
 * chosen by predict's "output"). */
static int on_route(const km_answer *r, const char *route, km_algorithm a,
                    int choosing)
{
    return !strcmp(r->route, route) && (!choosing || r->v1_output) &&
           km_answer_offered(r, a);
}

/* How many answers of route a offers (choosing: as on_route). */
static size_t count_on_route(km_algorithm a, const char *route, int choosing)
{
    size_t n = 0;
    for (size_t i = 0; i < km_answer_count(); i++)
        n += (size_t)on_route(km_answer_at(i), route, a, choosing);
    return n;
}

/* Whether models of a choose among outputs on predict. */
static int has_outputs(km_algorithm a)
{
    return count_on_route(a, "predict", 1) > 1;
}

/* "svc": the algorithms that answer on route (with outputs to choose
 * from, when choosing). */
static void algorithms_answering(char *buf, size_t len, const char *route,
                                 int choosing)
{
    const char *names[KM_ALGO_COUNT];
    int k = 0;
    for (int i = 0; i < KM_ALGO_COUNT; i++) {
        km_algorithm a = (km_algorithm)i;
        if (count_on_route(a, route, 0) && (!choosing || has_outputs(a)))
            names[k++] = km_algorithm_name(a);
    }
    km_join_names(names, k, ", ", buf, len);
}

/* The answer of route that a gives when not asked for another: the first
 * it offers that no "output" or "inverse" names; NULL if none. */
static const km_answer *route_default(km_algorithm a, const char *route)
{
    for (size_t i = 0; i < km_answer_count(); i++) {
        const km_answer *r = km_answer_at(i);
        if (on_route(r, route, a, 0) && !r->v1_output && !r->v1_inverse)
            return r;
    }
    return NULL;
}

/* Bytes of answer text per value: %.17g takes at most 24 characters, and
 * a separator. */
#define TEXT_PER_VALUE 26
/* Kernel values core computes at once when predicting (km_svm.c's
 * block; km_kernel_expand's is smaller), at least one row of them. */

size_t api_predict_bytes(const km_model *m, const char *body, size_t len)
{
    size_t numbers = api_json_max_numbers(body, len);
    size_t nf = km_model_n_features(m), no = km_model_n_outputs(m);
    size_t d = nf, width = 1;
    /* the widest row of any answer but the covariance (counted below) */
    for (unsigned a = 1; a && a <= answers_of(m); a <<= 1) {
        size_t w = a & answers_of(m) & ~KM_OUT_COVARIANCE
                       ? km_model_answer_width(m, a, 1)
                       : 0;
        width = w > width ? w : width;
    }
    if (answers_of(m) & KM_OUT_PROJECTIONS) /* inverse: rows of no in */
        d = no < nf ? no : nf;
    size_t rows = numbers / (d ? d : 1) + 1;
    /* strings: a row per string (a value of the body), each of nf doubles
     * however short (km_strings_pack), and the string sets made of them
     * (their k-mer lists): at most rows of nf doubles' strings, and at
     * most the body's bytes in all (a set's bytes grow with the strings'
     * lengths: rows of empty strings and one of all the bytes) */
    size_t strings = 0;
    const km_kernel *k = km_model_kernel(m);
    if (km_kernel_input(k) == KM_INPUT_STRINGS) {
        size_t all = km_string_width(len) < nf ? km_string_width(len) : nf;
        size_t sets = km_kernel_set_bytes(k, numbers, km_string_width(0)) +
                      km_kernel_set_bytes(k, 1, all);
        size_t most = km_kernel_set_bytes(k, numbers, nf);
        rows = numbers;
        strings = rows * nf * sizeof(double) + (sets < most ? sets : most);
    }
    size_t ns = km_model_n_samples(m);
    size_t block = rows * ns < KM_PREDICT_BLOCK_VALUES
                       ? rows * ns
                       : KM_PREDICT_BLOCK_VALUES;
    if (block < ns)
        block = ns;
    /* the scaled copy of X's rows, one block at a time (km_pre.c: about
     * 2^17 values, at least one row) */
    size_t scaled = 0;
    if (km_model_preprocess(m).x_shift) {
        size_t per = ((size_t)1 << 17) / nf ? ((size_t)1 << 17) / nf : 1;
        scaled = (rows < per ? rows : per) * nf * sizeof(double);
    }
    /* output cov: c x c answers and the c x ns whitened kernel rows */
    size_t c = rows < KM_COV_MAX_ROWS ? rows : KM_COV_MAX_ROWS, cov = 0;
    if (answers_of(m) & KM_OUT_COVARIANCE)
        cov = c * c * (sizeof(double) + TEXT_PER_VALUE) +
              c * ns * sizeof(double);
    /* cluster ids: the distances to the k <= ns centroids, a block of
     * rows at a time (km_kkmeans.c) */
    size_t dist = answers_of(m) & KM_OUT_CLUSTERS
                      ? (KM_KKMEANS_PREDICT_BLOCK + ns) * sizeof(double)
                      : 0;
    return len + numbers * sizeof(double) +
           rows * width * (sizeof(double) + TEXT_PER_VALUE) +
           rows * sizeof(int) + block * sizeof(double) + scaled + cov + dist +
           strings;
}

/* Reads X or instances (not both): rows of expect_d doubles as model m's
 * kernel takes them (api_rows.c), or for m NULL rows of expect_d numbers
 * (an inverse's projections). */
static int read_input(api_body *b, const char *const *keys,
                      const km_model *m, size_t expect_d, double **X,
                      size_t *n, api_error *e)
{
    int inst = api_body_has(b, "instances");
    size_t d;
    if (api_check_keys(b->root, "", keys, e))
        return -1;
    if (inst && api_body_has(b, "X"))
        return api_invalid(e, "give X or instances, not both");
    const char *name = inst ? "instances" : "X";
    if (!m)
        return api_body_matrix(b, name, expect_d, X, n, &d, e);
    api_rows_spec rs = {km_model_kernel(m), expect_d, km_model_max_length(m)};
    return api_body_rows(b, name, &rs, X, n, &d, e);
}

/* 0, or 422 naming the first of rows whose values (cols each) are not
 * all finite numbers. */
static int check_finite(const double *v, size_t rows, size_t cols,
                        const char *what, api_error *e)
{
    for (size_t i = 0; i < rows * cols; i++)
        if (!isfinite(v[i]))
            return api_raise(e, API_UNPROCESSABLE, "%s[%zu] is not a finite "
                            "number: input row %zu overflows the model's "
                            "arithmetic in double precision; rescale it",
                            what, i / cols, i / cols);
    return 0;
}

/* rows x cols numbers as a JSON array of rows (or a flat array when
 * flat). */
static void put_matrix(api_text *t, const double *v, size_t rows,
                       size_t cols, int flat)
{
    api_text_raw(t, "[");
    for (size_t i = 0; i < rows; i++) {
        if (i)
            api_text_raw(t, ",");
        if (!flat)
            api_text_raw(t, "[");
        for (size_t j = 0; j < cols; j++) {
            if (j)
                api_text_raw(t, ",");
            api_text_number(t, v[i * cols + j]);
        }
        if (!flat)
            api_text_raw(t, "]");
    }
    api_text_raw(t, "]");
}

/* {"model":{"name":...,"version":...},"<key>":<values>}: the start, up to
 * the values. */
static void begin_answer(api_text *t, const km_model *m, const char *key)
{
    api_model_ref_text(t, m);
    api_text_raw(t, ",\"");
    api_text_raw(t, key);
    api_text_raw(t, "\":");
}

/* Closes the answer; 0, or an out-of-memory error. */
static int end_answer(api_text *t, api_error *e)
{
    api_text_raw(t, "}");
    if (!t->failed)
        return 0;
    free(t->buf);
    memset(t, 0, sizeof *t);
    return api_raise(e, API_INTERNAL, "out of memory building the answer");
}

void api_answer_free(api_answer *a)
{
    free(a->v);
    free(a->idx);
    memset(a, 0, sizeof *a);
}

/* Labels (in the type they were fitted with) and cluster ids come from
 * km_predict_labels; every other answer from km_predict. Decision values
 * are negated when the descriptor says so (km_model_score_columns: svc's
 * single value per row of two classes), so that positive means the second
 * sorted label, as scikit-learn (LIBSVM's is the first).
 * The covariance of more than KM_COV_MAX_ROWS rows is refused by core
 * before it writes, so no n x n buffer is made for it. */
int api_answer_compute(const km_model *m, unsigned answer,
                       double (*each)(double),
                       const double *X, size_t n, const char *what,
                       api_answer *a, api_error *e)
{
    km_error kerr = {KM_OK, ""};
    km_status st;
    memset(a, 0, sizeof *a);
    a->answer = answer;
    a->rows = n;
    a->width = km_model_answer_width(m, answer, n);
    if (answer == KM_OUT_LABELS || answer == KM_OUT_CLUSTERS) {
        a->idx = malloc((n ? n : 1) * sizeof *a->idx);
        st = a->idx ? km_predict_labels(m, X, n, a->idx, &kerr) : KM_ENOMEM;
    } else {
        int big_cov = answer == KM_OUT_COVARIANCE && n > KM_COV_MAX_ROWS;
        size_t cells = big_cov ? 1 : n * a->width;
        a->v = malloc((cells ? cells : 1) * sizeof *a->v);
        st = a->v ? km_predict(m, answer, X, n, a->v, &kerr) : KM_ENOMEM;
        for (size_t i = 0; st == KM_OK && each && i < n * a->width; i++)
            a->v[i] = each(a->v[i]);
        double sign = 1;
        if (answer == KM_OUT_SCORES)
            km_model_score_columns(m, &sign);
        for (size_t i = 0; st == KM_OK && sign < 0 && i < n * a->width; i++)
            a->v[i] = -a->v[i]; /* scikit-learn's binary sign */
        if (st == KM_OK && check_finite(a->v, n, a->width, what, e)) {
            api_answer_free(a);
            return -1;
        }
    }
    if (st == KM_ENOMEM && kerr.status != KM_ENOMEM) {
        kerr.status = KM_ENOMEM;
        snprintf(kerr.message, sizeof kerr.message,
                 "not enough memory for %zu predictions", n);
    }
    if (st != KM_OK) {
        api_answer_free(a);
        return api_fail_km(e, &kerr);
    }
    return 0;
}

void api_answer_text(api_text *t, const km_model *m, const api_answer *a,
                     int flat)
{
    if (a->v) {
        put_matrix(t, a->v, a->rows, a->width,
                   flat || (a->width == 1 && a->answer != KM_OUT_COVARIANCE));
        return;
    }
    api_text_raw(t, "[");
    for (size_t i = 0; i < a->rows; i++) {
        if (i)
            api_text_raw(t, ",");
        if (a->answer == KM_OUT_LABELS)
            api_model_label_text(t, m, (size_t)a->idx[i]);
        else
            api_text_uint(t, (unsigned long long)a->idx[i]);
    }
    api_text_raw(t, "]");
}

/* The output a predict body asks for (NULL: the model has no choice); 0,
 * or an error naming what the model can answer. */
static int choose_output(const km_model *m, const cJSON *output,
                         const km_answer **out, api_error *e)
{
    km_algorithm algo = km_model_algorithm(m);
    char list[128];
    *out = NULL;
    if (!has_outputs(algo)) {
        if (!output)
            return 0;
        algorithms_answering(list, sizeof list, "predict", 1);
        return api_invalid(e, "output applies only to %s models; this model "
                           "is %s", list, km_algorithm_name(algo));
    }
    size_t used = 0;
    list[0] = '\0';
    for (size_t i = 0; i < km_answer_count(); i++) {
        const km_answer *r = km_answer_at(i);
        if (!on_route(r, "predict", algo, 1))
            continue;
        if (!*out && (!output || (cJSON_IsString(output) &&
                                  !strcmp(output->valuestring,
                                          r->v1_output))))
            *out = r;
        int w = snprintf(list + used, sizeof list - used, "%s%s",
                         used ? ", " : "", r->v1_output);
        used += w > 0 && (size_t)w < sizeof list - used ? (size_t)w : 0;
    }
    if (!*out)
        return api_invalid(e, "output must be one of %s", list);
    if (!(km_model_outputs(m) & (*out)->flag))
        return api_raise(e, API_CONFLICT, "model \"%s\" was fitted without "
                         "%s; %s is not available", km_model_name(m),
                         (*out)->needs ? (*out)->needs : "what it needs",
                         (*out)->v1_output);
    return 0;
}

int api_predict(const km_model *m, api_body *body, api_text *out,
                size_t *rows, api_error *e)
{
    const cJSON *root = body->root;
    static const char *const keys[] = {"X", "instances", "output", NULL};
    km_algorithm algo = km_model_algorithm(m);
    const km_answer *chosen;
    double *X = NULL;
    size_t n = 0;
    api_answer a;
    api_text t = {0};

    if (!count_on_route(algo, "predict", 0))
        return api_raise(e, API_CONFLICT, "model \"%s\" is %s: use "
                         "/v1/models/%s/project", km_model_name(m),
                         km_algorithm_name(algo), km_model_name(m));
    if (choose_output(m, cJSON_GetObjectItemCaseSensitive(root, "output"),
                      &chosen, e))
        return -1;
    if (read_input(body, keys, m, km_model_n_features(m),
                   &X, &n, e))
        return -1;
    if (body->observer)
        body->observer->rows(body->observer->ctx, m, X, n);
    /* no choice: the route's default (krr's values, kkmeans' clusters) */
    if (!chosen)
        chosen = route_default(algo, "predict");
    int bad = !chosen ? api_raise(e, API_INTERNAL, "a %s model has no "
                                  "answer on predict",
                                  km_algorithm_name(algo))
                      : api_answer_compute(m, chosen->flag, chosen->each, X,
                                           n, "predictions", &a, e);
    free(X);
    if (bad)
        return -1;
    begin_answer(&t, m, "predictions");
    api_answer_text(&t, m, &a, 0);
    api_answer_free(&a);
    *rows = n;
    if (end_answer(&t, e))
        return -1;
    *out = t;
    return 0;
}

int api_project(const km_model *m, api_body *body, api_text *out,
                size_t *rows, api_error *e)
{
    const cJSON *root = body->root;
    static const char *const keys[] = {"X", "instances", "inverse", NULL};
    km_algorithm algo = km_model_algorithm(m);
    int inverse = 0;
    char list[128];
    algorithms_answering(list, sizeof list, "project", 0);
    /* the projections, and the answer "inverse": true names (the map back
     * from them) */
    const km_answer *fwd = route_default(algo, "project"), *r = fwd;
    if (!fwd)
        return api_raise(e, API_CONFLICT, "project applies to %s models; "
                         "model \"%s\" is %s: use /v1/models/%s/predict",
                         list, km_model_name(m), km_algorithm_name(algo),
                         km_model_name(m));
    if (api_opt_bool(root, "", "inverse", &inverse, e))
        return -1;
    for (size_t i = 0; inverse && i < km_answer_count(); i++)
        if (on_route(km_answer_at(i), "project", algo, 0) &&
            km_answer_at(i)->v1_inverse)
            r = km_answer_at(i);
    if (inverse && (r == fwd || !(km_model_outputs(m) & r->flag)))
        return api_raise(e, API_CONFLICT, "model \"%s\" was fitted without "
                         "%s; inverse is not available", km_model_name(m),
                         r != fwd && r->needs ? r->needs : "what it needs");
    /* inverse reads rows of projections and answers rows of features */
    unsigned answer = r->flag;
    size_t in_d = inverse ? km_model_answer_width(m, fwd->flag, 0)
                          : km_model_n_features(m);
    size_t out_d = km_model_answer_width(m, answer, 0);
    double *X = NULL, *P = NULL;
    size_t n = 0;
    km_error kerr = {KM_OK, ""};
    if (read_input(body, keys, inverse ? NULL : m, in_d, &X,
                   &n, e))
        return -1;
    if (body->observer && !inverse)
        body->observer->rows(body->observer->ctx, m, X, n);
    P = malloc(n * out_d * sizeof *P);
    km_status st = !P ? KM_ENOMEM
                   : km_predict(m, answer, X, n, P, &kerr);
    api_text t = {0};
    int bad = st == KM_OK && check_finite(P, n, out_d, "projections", e);
    if (st == KM_OK && !bad) {
        begin_answer(&t, m, "projections");
        put_matrix(&t, P, n, out_d, 0);
    }
    free(X);
    free(P);
    if (bad)
        return -1;
    if (st == KM_ENOMEM && kerr.status != KM_ENOMEM)
        return api_raise(e, API_PAYLOAD_TOO_LARGE,
                        "not enough memory for %zu projections", n);
    if (st != KM_OK)
        return api_fail_km(e, &kerr);
    *rows = n;
    if (end_answer(&t, e))
        return -1;
    *out = t;
    return 0;
}
