/*
 * km_score.c - scores: how good a model's answers are, as
 * sklearn.metrics 1.2.1 computes them (r2_score, mean_squared_error,
 * mean_absolute_error, accuracy_score, balanced_accuracy_score,
 * precision and recall with zero_division=0, confusion_matrix,
 * log_loss), the scorings a search maximises (km_scoring_*), a model's
 * score on a problem (km_model_score) and the training figure
 * "training_score" every fit records (km_training_score).
 *
 * Every sum goes through Neumaier's compensated summation, so a score
 * is within a few ulps of the exact sum of its terms and agrees with
 * numpy's pairwise sums to far better than 1e-12 on data of moderate
 * dynamic range.
 *
 * Where sklearn's floating point decides a rule, the rule is taken by
 * its meaning: y counts as constant (r2's denominator 0) when all its
 * values are equal, although numpy's mean of [0.1, 0.1, 0.1] is
 * 0.10000000000000002 and sklearn then divides by a denominator of
 * 1e-33.
 *
 * Thread-safety: reentrant.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../base/km_base_internal.h"
#include "../model/km_model_internal.h"
#include "km_select_internal.h"

/* ------------------------------------------------------------ scorings */

KM_CHOICES_DEFINE(km_scoring_choices, KM_SCORING_MAP, KM_SCORING_COUNT);

/* What a scoring needs of a model: the kind of answer (its algorithm
 * must give it) and, beyond it, an answer only some fits prepare (with
 * the fit parameter that does). */
static const struct scoring_need {
    unsigned kind;
    unsigned extra;
    const char *param;
} needs[KM_SCORING_COUNT] = {
    [KM_SCORING_R2] = {KM_OUT_VALUES, 0, NULL},
    [KM_SCORING_NEG_MSE] = {KM_OUT_VALUES, 0, NULL},
    [KM_SCORING_NEG_MAE] = {KM_OUT_VALUES, 0, NULL},
    [KM_SCORING_ACCURACY] = {KM_OUT_LABELS, 0, NULL},
    [KM_SCORING_BALANCED_ACCURACY] = {KM_OUT_LABELS, 0, NULL},
    [KM_SCORING_NEG_LOG_LOSS] = {KM_OUT_LABELS, KM_OUT_PROBABILITIES,
                                 "params.probability"},
    [KM_SCORING_NEG_RECONSTRUCTION] = {KM_OUT_PROJECTIONS, KM_OUT_INVERSE,
                                       "params.fit_inverse_transform"},
};

const char *km_scoring_name(km_scoring s)
{
    return km_choice_name(&km_scoring_choices, (int)s);
}

int km_scoring_parse(const char *name, km_scoring *s)
{
    int i = km_choice_value(&km_scoring_choices, name);
    if (i >= 0)
        *s = (km_scoring)i;
    return i >= 0 ? 0 : -1;
}

km_scoring km_scoring_default(km_algorithm a)
{
    unsigned out = km_algorithm_outputs(a);
    return out & KM_OUT_VALUES        ? KM_SCORING_R2
           : out & KM_OUT_LABELS      ? KM_SCORING_ACCURACY
           : out & KM_OUT_PROJECTIONS ? KM_SCORING_NEG_RECONSTRUCTION
                                      : KM_SCORING_COUNT;
}

/* The answers a model of a fitted with params can give: its
 * descriptor's params_outputs (svc without params.probability gives no
 * probabilities, kpca without params.fit_inverse_transform no inverse
 * map), else all its algorithm's. */
static unsigned params_outputs(km_algorithm a, const void *params)
{
    const km_algo *al = km_algo_of(a);
    if (!al)
        return 0;
    return params && al->params_outputs ? al->params_outputs(params)
                                        : al->outputs;
}

/* "krr, svr": the algorithms that answer all of mask. */
static void algorithms_with(char *buf, size_t len, unsigned mask)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int a = 0; a < KM_ALGO_COUNT && used < len; a++) {
        if ((km_algorithm_outputs((km_algorithm)a) & mask) != mask)
            continue;
        int w = snprintf(buf + used, len - used, "%s%s", used ? ", " : "",
                         km_algorithm_name((km_algorithm)a));
        used += w > 0 ? (size_t)w : 0;
    }
}

km_status km_scoring_check(km_scoring s, km_algorithm a, const void *params,
                           km_error *err)
{
    if (s == KM_SCORING_COUNT && km_algo_of(a)) /* a's default: none */
        return km_error_set(err, KM_EINVAL, "no scoring applies to %s",
                            km_algorithm_name(a));
    if ((unsigned)s >= KM_SCORING_COUNT)
        return km_error_set(err, KM_EINVAL, "scoring %d is not known",
                            (int)s);
    if (!km_algo_of(a))
        return km_error_set(err, KM_EINVAL, "unknown algorithm %d", (int)a);
    const struct scoring_need *nd = &needs[s];
    unsigned mask = nd->kind | nd->extra;
    if ((km_algorithm_outputs(a) & mask) != mask) {
        char list[128];
        algorithms_with(list, sizeof list, mask);
        return km_error_set(err, KM_EINVAL, "scoring %s applies to %s, not "
                            "%s", km_scoring_name(s), list,
                            km_algorithm_name(a));
    }
    if (nd->extra && !(params_outputs(a, params) & nd->extra))
        return km_error_set(err, KM_EINVAL, "scoring %s needs %s",
                            km_scoring_name(s), nd->param);
    return KM_OK;
}

/* ------------------------------------------------------------ regression */

km_status km_score_regression(const double *Y, const double *P, size_t n,
                              size_t m, km_regression_scores *out,
                              km_error *err)
{
    if (n == 0 || m == 0)
        return km_error_set(err, KM_EINVAL, "scores need at least one row "
                            "and one output");
    for (size_t i = 0; i < n * m; i++) {
        if (!isfinite(Y[i]))
            return km_error_set(err, KM_EINVAL, "y[%zu] is not a finite "
                                "number", i / m);
        if (!isfinite(P[i]))
            return km_error_set(err, KM_EPROBLEM, "the prediction for row "
                                "%zu is not a finite number", i / m);
    }
    km_ksum r2 = {0, 0}, mse = {0, 0}, mae = {0, 0};
    for (size_t j = 0; j < m; j++) {
        km_ksum mean = {0, 0}, num = {0, 0}, den = {0, 0}, ab = {0, 0};
        int constant = 1;
        for (size_t i = 0; i < n; i++) {
            double y = Y[i * m + j], e = y - P[i * m + j];
            km_ksum_add(&mean, y);
            km_ksum_add(&num, e * e);
            km_ksum_add(&ab, fabs(e));
            constant &= y == Y[j];
        }
        double mu = km_ksum_get(&mean) / (double)n;
        for (size_t i = 0; i < n && !constant; i++) {
            double c = Y[i * m + j] - mu;
            km_ksum_add(&den, c * c);
        }
        double nu = km_ksum_get(&num), de = constant ? 0 : km_ksum_get(&den);
        /* sklearn: 1 for a perfect fit, 0 for an imperfect one of a
         * constant y (force_finite) */
        km_ksum_add(&r2, nu == 0 ? 1.0 : de == 0 ? 0.0 : 1.0 - nu / de);
        km_ksum_add(&mse, nu / (double)n);
        km_ksum_add(&mae, km_ksum_get(&ab) / (double)n);
    }
    /* sklearn: not well-defined with fewer than two samples */
    out->r2 = n < 2 ? NAN : km_ksum_get(&r2) / (double)m;
    out->mse = km_ksum_get(&mse) / (double)m;
    out->mae = km_ksum_get(&mae) / (double)m;
    return KM_OK;
}

/* ------------------------------------------------------------ classes */

void km_class_scores_cleanup(km_class_scores *s)
{
    if (!s)
        return;
    free(s->precision);
    free(s->recall);
    free(s->confusion);
    s->precision = s->recall = NULL;
    s->confusion = NULL;
}

km_status km_score_classes(const int *truth, const int *pred,
                           const double *proba, size_t n, size_t k,
                           km_class_scores *out, km_error *err)
{
    memset(out, 0, sizeof *out);
    if (n == 0 || k == 0)
        return km_error_set(err, KM_EINVAL, "scores need at least one row "
                            "and one class");
    if (k > KM_MODEL_MAX_CLASSES)
        return km_error_set(err, KM_EINVAL, "%zu classes; at most %zu", k,
                            KM_MODEL_MAX_CLASSES);
    for (size_t i = 0; i < n; i++) {
        if (truth[i] < 0 || (size_t)truth[i] >= k)
            return km_error_set(err, KM_EINVAL, "y[%zu] = %d is not a class "
                                "index in [0, %zu)", i, truth[i], k);
        if (pred[i] < 0 || (size_t)pred[i] >= k)
            return km_error_set(err, KM_EINVAL, "predictions[%zu] = %d is not "
                                "a class index in [0, %zu)", i, pred[i], k);
    }
    if (proba && !km_all_finite(proba, km_mul3(n, k, 1)))
        return km_error_set(err, KM_EINVAL, "probabilities are not all "
                            "finite numbers");
    out->k = k;
    out->precision = calloc(k, sizeof *out->precision);
    out->recall = calloc(k, sizeof *out->recall);
    out->confusion = calloc(k * k, sizeof *out->confusion);
    uint64_t *cols = calloc(k, sizeof *cols), *rows = calloc(k, sizeof *rows);
    if (!out->precision || !out->recall || !out->confusion || !cols ||
        !rows) {
        free(cols);
        free(rows);
        km_class_scores_cleanup(out);
        return km_error_set(err, KM_ENOMEM, "out of memory for %zu classes",
                            k);
    }
    uint64_t right = 0;
    for (size_t i = 0; i < n; i++) {
        out->confusion[(size_t)truth[i] * k + (size_t)pred[i]]++;
        rows[truth[i]]++;
        cols[pred[i]]++;
        right += truth[i] == pred[i];
    }
    out->accuracy = (double)right / (double)n;
    /* balanced accuracy: the mean recall over the classes present in
     * truth (sklearn drops the others with a warning) */
    km_ksum bal = {0, 0};
    size_t present = 0;
    for (size_t c = 0; c < k; c++) {
        double tp = (double)out->confusion[c * k + c];
        out->recall[c] = rows[c] ? tp / (double)rows[c] : 0.0;
        out->precision[c] = cols[c] ? tp / (double)cols[c] : 0.0;
        if (rows[c]) {
            km_ksum_add(&bal, out->recall[c]);
            present++;
        }
    }
    out->balanced_accuracy = km_ksum_get(&bal) / (double)present;
    free(cols);
    free(rows);
    out->log_loss = NAN;
    if (proba) {
        /* clipped to [eps, 1 - eps], each row renormalised */
        const double eps = DBL_EPSILON, hi = 1.0 - DBL_EPSILON;
        km_ksum loss = {0, 0};
        for (size_t i = 0; i < n; i++) {
            const double *p = proba + i * k;
            double s = 0, pt = 0;
            for (size_t c = 0; c < k; c++) {
                double v = p[c] < eps ? eps : p[c] > hi ? hi : p[c];
                s += v;
                if (c == (size_t)truth[i])
                    pt = v;
            }
            km_ksum_add(&loss, -log(pt / s));
        }
        out->log_loss = km_ksum_get(&loss) / (double)n;
    }
    return KM_OK;
}

/* ------------------------------------------------------------ clusters */

static int cmp_pair(const void *x, const void *y)
{
    const int *p = x, *q = y;
    return p[0] != q[0] ? (p[0] > q[0]) - (p[0] < q[0])
                        : (p[1] > q[1]) - (p[1] < q[1]);
}

/* Sum over the groups of equal values of v (n sorted ints, stride s) of
 * the group's size squared. */
static void group_squares(const int *v, size_t n, size_t s, int64_t *sq)
{
    *sq = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && v[j * s] == v[i * s])
            j++;
        *sq += (int64_t)(j - i) * (int64_t)(j - i);
        i = j;
    }
}

static int cmp_int(const void *x, const void *y)
{
    int p = *(const int *)x, q = *(const int *)y;
    return (p > q) - (p < q);
}

km_status km_score_adjusted_rand(const int *a, const int *b, size_t n,
                                 double *out, km_error *err)
{
    for (size_t i = 0; i < n; i++)
        if (a[i] < 0 || b[i] < 0)
            return km_error_set(err, KM_EINVAL, "labels[%zu] is negative", i);
    int *pairs = malloc((n ? n : 1) * 2 * sizeof *pairs);
    int *col = malloc((n ? n : 1) * sizeof *col);
    if (!pairs || !col) {
        free(pairs);
        free(col);
        return km_error_set(err, KM_ENOMEM, "out of memory to score %zu "
                            "rows", n);
    }
    for (size_t i = 0; i < n; i++) {
        pairs[2 * i] = a[i];
        pairs[2 * i + 1] = b[i];
        col[i] = b[i];
    }
    /* sklearn's pair_confusion_matrix (a true, b predicted): with n_ij
     * the contingency table, a_i its row sums, b_j its column sums,
     *   tp = sum n_ij^2 - n, fp = sum b_j^2 - sum n_ij^2,
     *   fn = sum a_i^2 - sum n_ij^2, tn = n^2 - fp - fn - sum n_ij^2
     * (ordered pairs) */
    qsort(pairs, n, 2 * sizeof *pairs, cmp_pair);
    qsort(col, n, sizeof *col, cmp_int);
    int64_t sum_sq = 0, sum_a = 0, sum_b = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && !cmp_pair(pairs + 2 * j, pairs + 2 * i))
            j++;
        sum_sq += (int64_t)(j - i) * (int64_t)(j - i);
        i = j;
    }
    group_squares(pairs, n, 2, &sum_a);
    group_squares(col, n, 1, &sum_b);
    free(pairs);
    free(col);
    int64_t nn = (int64_t)n;
    int64_t tp = sum_sq - nn, fp = sum_b - sum_sq, fn = sum_a - sum_sq;
    int64_t tn = nn * nn - fp - fn - sum_sq;
    if (fn == 0 && fp == 0) {
        *out = 1.0;
        return KM_OK;
    }
    /* Python's exact integers, then 2.0 * num / den in doubles */
    __int128 num = (__int128)tp * tn - (__int128)fn * fp;
    __int128 den = (__int128)(tp + fn) * (fn + tn) +
                   (__int128)(tp + fp) * (fp + tn);
    *out = 2.0 * (double)num / (double)den;
    return KM_OK;
}

/* ------------------------------------------------------------ answers */

unsigned km_scoring_needs(km_scoring s)
{
    return (unsigned)s < KM_SCORING_COUNT ? needs[s].kind | needs[s].extra
                                          : 0;
}

km_status km_score_answers(km_scoring s, const km_answers *a, double *out,
                           km_error *err)
{
    if ((unsigned)s >= KM_SCORING_COUNT)
        return km_error_set(err, KM_EINVAL, "scoring %d is not known",
                            (int)s);
    km_status st;
    if (needs[s].kind == KM_OUT_VALUES) {
        km_regression_scores r;
        if ((st = km_score_regression(a->Y, a->P, a->n, a->m, &r, err)) ==
            KM_OK)
            *out = s == KM_SCORING_R2        ? r.r2
                   : s == KM_SCORING_NEG_MSE ? -r.mse
                                             : -r.mae;
        return st;
    }
    if (needs[s].kind == KM_OUT_LABELS) {
        km_class_scores cs;
        st = km_score_classes(a->truth, a->pred,
                              s == KM_SCORING_NEG_LOG_LOSS ? a->proba : NULL,
                              a->n, a->k, &cs, err);
        if (st == KM_OK)
            *out = s == KM_SCORING_ACCURACY            ? cs.accuracy
                   : s == KM_SCORING_BALANCED_ACCURACY ? cs.balanced_accuracy
                                                       : -cs.log_loss;
        km_class_scores_cleanup(&cs);
        return st;
    }
    /* neg_reconstruction_error */
    km_ksum e = {0, 0};
    for (size_t i = 0; i < a->n * a->m; i++) {
        double r = a->Y[i] - a->P[i];
        km_ksum_add(&e, r * r);
    }
    double v = km_ksum_get(&e) / (double)a->n / (double)a->m;
    if (!isfinite(v))
        return km_error_set(err, KM_EPROBLEM, "the reconstruction error is "
                            "not a finite number: the input overflows the "
                            "model's arithmetic in double precision");
    *out = -v;
    return KM_OK;
}

/* ------------------------------------------------------------ models */

static km_status oom(km_error *err, size_t n)
{
    return km_error_set(err, KM_ENOMEM, "out of memory to score %zu rows",
                        n);
}

static km_status score_values(const km_model *m, km_scoring s,
                              const km_problem *pb, double *out,
                              km_error *err)
{
    size_t n = pb->n, mo = km_model_n_outputs(m);
    if (!pb->y)
        return km_error_set(err, KM_EINVAL, "y is required to score a %s "
                            "model", km_algorithm_name(km_model_algorithm(m)));
    if (pb->m != mo)
        return km_error_set(err, KM_EINVAL, "y has %zu outputs; the model "
                            "answers %zu", pb->m, mo);
    double *P = malloc(km_mul3(n, mo, sizeof *P) ? n * mo * sizeof *P : 1);
    if (!P)
        return oom(err, n);
    km_status st = km_predict(m, KM_OUT_VALUES, pb->X, n, P, err);
    if (st == KM_OK) {
        km_answers a = {.n = n, .m = mo, .Y = pb->y, .P = P};
        st = km_score_answers(s, &a, out, err);
    }
    free(P);
    return st;
}

static km_status score_classes(const km_model *m, km_scoring s,
                               const km_problem *pb, double *out,
                               km_error *err)
{
    size_t n = pb->n, k = km_model_n_classes(m);
    if (!pb->labels)
        return km_error_set(err, KM_EINVAL, "y (class indices) is required "
                            "to score a %s model",
                            km_algorithm_name(km_model_algorithm(m)));
    if (pb->n_classes && pb->n_classes != k)
        return km_error_set(err, KM_EINVAL, "the problem has %zu classes; "
                            "the model has %zu", pb->n_classes, k);
    int *pred = malloc(n * sizeof *pred);
    double *proba = NULL;
    if (!pred || (s == KM_SCORING_NEG_LOG_LOSS &&
                  !(proba = malloc(km_mul3(n, k, sizeof *proba)
                                       ? n * k * sizeof *proba : 1)))) {
        free(pred);
        return oom(err, n);
    }
    km_status st = km_predict_labels(m, pb->X, n, pred, err);
    if (st == KM_OK && proba)
        st = km_predict(m, KM_OUT_PROBABILITIES, pb->X, n, proba, err);
    if (st == KM_OK) {
        km_answers a = {.n = n, .k = k, .truth = pb->labels, .pred = pred,
                        .proba = proba};
        st = km_score_answers(s, &a, out, err);
    }
    free(pred);
    free(proba);
    return st;
}

/* Minus the mean over rows and features of (x - inverse(project(x)))^2. */
static km_status score_reconstruction(const km_model *m, const km_problem *pb,
                                      double *out, km_error *err)
{
    size_t n = pb->n, d = km_model_n_features(m), nc = km_model_n_outputs(m);
    double *P = malloc(km_mul3(n, nc, sizeof *P) ? n * nc * sizeof *P : 1);
    double *R = malloc(km_mul3(n, d, sizeof *R) ? n * d * sizeof *R : 1);
    km_status st = P && R ? KM_OK : oom(err, n);
    if (st == KM_OK)
        st = km_predict(m, KM_OUT_PROJECTIONS, pb->X, n, P, err);
    if (st == KM_OK)
        st = km_predict(m, KM_OUT_INVERSE, P, n, R, err);
    if (st == KM_OK) {
        km_answers a = {.n = n, .m = d, .Y = pb->X, .P = R};
        st = km_score_answers(KM_SCORING_NEG_RECONSTRUCTION, &a, out, err);
    }
    free(P);
    free(R);
    return st;
}

km_status km_model_score(const km_model *m, km_scoring s,
                         const km_problem *pb, double *out, km_error *err)
{
    km_algorithm a = km_model_algorithm(m);
    km_status st = km_scoring_check(s, a, NULL, err);
    if (st != KM_OK)
        return st;
    const struct scoring_need *nd = &needs[s];
    if (nd->extra && !(km_model_outputs(m) & nd->extra))
        return km_error_set(err, KM_ECONFLICT, "model \"%s\" was fitted "
                            "without %s; scoring %s needs it",
                            km_model_name(m), nd->param, km_scoring_name(s));
    if (pb->n == 0)
        return km_error_set(err, KM_EINVAL, "X must have at least one row");
    if (pb->d != km_model_n_features(m))
        return km_error_set(err, KM_EINVAL, "X has %zu features; the model "
                            "expects %zu", pb->d, km_model_n_features(m));
    if (nd->kind == KM_OUT_VALUES)
        return score_values(m, s, pb, out, err);
    if (nd->kind == KM_OUT_LABELS)
        return score_classes(m, s, pb, out, err);
    return score_reconstruction(m, pb, out, err);
}

km_status km_subproblem(const km_problem *pb, size_t rows, km_problem *sub,
                        km_error *err)
{
    *sub = *pb;
    if (rows == pb->n)
        return KM_OK;
    size_t d = pb->d, q = pb->m;
    size_t *idx = malloc(rows * sizeof *idx);
    double *X = malloc(rows * d * sizeof *X);
    double *y = pb->y ? malloc(rows * q * sizeof *y) : NULL;
    int *lab = pb->labels ? malloc(rows * sizeof *lab) : NULL;
    km_status st = KM_OK;
    if (!idx || !X || (pb->y && !y) || (pb->labels && !lab) ||
        km_psd_subsample(pb->n, rows, 0, idx) != KM_OK) {
        free(X);
        free(y);
        free(lab);
        st = km_error_set(err, KM_ENOMEM, "out of memory for a subsample "
                          "of %zu rows", rows);
    } else {
        for (size_t i = 0; i < rows; i++) {
            memcpy(X + i * d, pb->X + idx[i] * d, d * sizeof *X);
            if (y)
                memcpy(y + i * q, pb->y + idx[i] * q, q * sizeof *y);
            if (lab)
                lab[i] = pb->labels[idx[i]];
        }
        *sub = (km_problem){X, rows, d, y, q, lab, pb->n_classes};
    }
    free(idx);
    return st;
}

void km_subproblem_free(const km_problem *pb, km_problem *sub)
{
    if (sub->X != pb->X) {
        free((double *)sub->X);
        free((double *)sub->y);
        free((int *)sub->labels);
    }
    *sub = *pb;
}

km_status km_training_score(km_model *m, const km_problem *pb, km_error *err)
{
    km_scoring s = km_scoring_default(km_model_algorithm(m));
    if ((unsigned)s >= KM_SCORING_COUNT ||
        (needs[s].extra && !(km_model_outputs(m) & needs[s].extra)))
        return KM_OK; /* kpca without the inverse map: no figure */
    size_t rows = pb->n < KM_SCORE_FIT_ROWS ? pb->n : KM_SCORE_FIT_ROWS;
    double v = NAN;
    km_problem sub;
    km_status st = km_subproblem(pb, rows, &sub, err);
    if (st == KM_OK)
        st = km_model_score(m, s, &sub, &v, err);
    km_subproblem_free(pb, &sub);
    if (st != KM_OK)
        return st;
    double r = (double)rows;
    km_info *t = km_model_training_mut(m);
    /* r2 of one row is not defined (NAN): no figure */
    if (isfinite(v) &&
        (km_info_add1(t, "training_score", KM_INFO_NUMBER, v) != KM_OK ||
         (rows < pb->n && km_info_add1(t, "training_score_rows",
                                       KM_INFO_INTEGER, r) != KM_OK)))
        return km_error_set(err, KM_ENOMEM, "out of memory for the model");
    return KM_OK;
}
