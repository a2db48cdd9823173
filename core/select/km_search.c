/*
 * km_search.c - model selection: km_search scores a list of candidate
 * points (a kernel and a params struct each) of one algorithm by
 * cross-validation and picks the best, as scikit-learn's GridSearchCV.
 *
 * Two engines, chosen by the algorithm's search capabilities (its
 * descriptor's km_algo_search):
 *
 *   generic   (km_search_gen.c) every algorithm: for each point and
 *             fold, the fold's rows are copied out, km_fit_inner fits
 *             them with the spec's
 *             preprocessing (without the training score, which only a
 *             kept model needs; with the descriptor's cv_params applied
 *             to the point's params), the model predicts the test rows
 *             through the generic km_predict (so its preprocessing
 *             applies) and the fold is scored; the model is freed.
 *
 *   krr       (km_search_krr.c, KM_SEARCH_CLOSED_FORM) kernel ridge
 *             regression never refits per alpha. Points are grouped by
 *             equal resolved kernel (km_search_kernel_equal; the
 *             preprocessing is the spec's, the same for all). Per group:
 *               LOO, GCV  one reduction to tridiagonal form K = Q T Q^T
 *                         of all rows serves every alpha and output in
 *                         closed form (krr_closed_form);
 *               KFOLD, PREDEFINED  the Gram of all rows is computed once
 *                         (without x-preprocessing; with it, each fold's
 *                         scaled rows get their own Gram) and each fold
 *                         gathers its training and test blocks; then one
 *                         eigendecomposition per fold serves all alphas,
 *                         or one Cholesky per alpha on a copy, whichever
 *                         the measured cost ratio KRR_EIG_CHOLESKYS says
 *                         is cheaper (krr_folds).
 *
 * Folds (make_folds): KFOLD cuts the row order (shuffled by km_rng when
 * asked) into k contiguous parts, the first n % k one row larger, as
 * KFold; stratified KFOLD sorts the order by class (stably, so a shuffle
 * stays within each class) and deals the rows to the folds round-robin
 * (row p of that order goes to fold p % k): each class's rows are spread
 * over the folds in turn, so a class has floor or ceil(n_c / k) rows in
 * every fold and fold sizes still differ by at most one.
 *
 * Scores are those km.h gives for km_scoring, computed on the test rows
 * by km_score.c's km_score_answers (as km_model_score's), the krr
 * engine's preprocessing by km_pre.c's km_pre_learn and km_pre_transform
 * (as km_fit's); a fold's scores combine into a mean and a population
 * standard deviation (Welford's update), LOO and GCV into one pooled
 * score.
 *
 * A fit that fails on its data (KM_EPROBLEM, KM_ENOTPD, KM_ENOCONV), or
 * a fold score that is not a finite number, fails the point only: its
 * mean is KM_SEARCH_FAILED_SCORE, its std 0, and it is never best unless
 * every point failed, when the search fails with the first failure's
 * status and message, naming its point and fold. Any other status
 * (KM_ENOMEM, KM_ECANCELLED, ...) ends the search.
 *
 * Threads: the generic engine runs its points on km_search_threads'
 * workers (km_search_run_generic: the calling thread and those it starts per
 * batch), each point's folds in order on one of them, so the results do
 * not depend on how many; search_run.lock serialises the progress
 * callback and the shared bookkeeping. krr's engine runs on the calling
 * thread.
 *
 * Thread-safety: reentrant.
 */
#include <cblas.h>
#include <float.h>
#include <lapacke.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/km_base_internal.h"
#include "../model/km_model_internal.h"
#include "km_search_internal.h"

/* ------------------------------------------------------------ folds */

KM_CHOICES_DEFINE(km_cv_choices, KM_CV_MAP, KM_CV_COUNT);

const char *km_cv_kind_name(km_cv_kind k)
{
    return km_choice_name(&km_cv_choices, (int)k);
}

/* Whether a's search has the closed-form engine (krr's LOO and GCV). */
static int closed_form(km_algorithm a)
{
    return (km_algorithm_search_caps(a) & KM_SEARCH_CLOSED_FORM) != 0;
}

/* Sorts order[0..n) stably by labels (counting sort); tmp: n entries,
 * cnt: k + 1 entries. */
static void sort_by_class(size_t *order, size_t n, const int *labels,
                          size_t k, size_t *tmp, size_t *cnt)
{
    memset(cnt, 0, (k + 1) * sizeof *cnt);
    for (size_t i = 0; i < n; i++)
        cnt[labels[order[i]] + 1]++;
    for (size_t c = 0; c < k; c++)
        cnt[c + 1] += cnt[c];
    for (size_t i = 0; i < n; i++)
        tmp[cnt[labels[order[i]]]++] = order[i];
    memcpy(order, tmp, n * sizeof *order);
}

/*
 * Checks s->cv against pb and writes each row's test fold into fold[]
 * (-1: always trained on); *n_splits gets the number of train/test
 * splits (GCV: 1, the fit on all rows), *min_train the fewest training
 * rows of a split.
 */
static km_status make_folds(const km_search_spec *s, const km_problem *pb,
                            int *fold, size_t *n_splits, size_t *min_train,
                            km_error *err)
{
    const km_cv *cv = &s->cv;
    size_t n = pb->n;
    km_status st = KM_OK;
    switch (cv->kind) {
    case KM_CV_KFOLD: {
        size_t k = cv->folds;
        if (k < 2)
            return km_error_set(err, KM_EINVAL, "cv.folds must be at least 2 "
                                "for kfold (got %zu)", k);
        if (k > n)
            return km_error_set(err, KM_EPROBLEM, "cv.folds %zu is more than "
                                "the %zu rows", k, n);
        if (cv->stratified && !pb->labels)
            return km_error_set(err, KM_EINVAL, "cv.stratified applies to "
                                "classification (svc), not %s",
                                km_algorithm_name(s->algo));
        size_t *order = malloc(n * sizeof *order);
        size_t *tmp = malloc(n * sizeof *tmp);
        size_t nc = pb->labels ? pb->n_classes : 0;
        size_t *cnt = malloc((nc + 1) * sizeof *cnt);
        if (!order || !tmp || !cnt) {
            st = km_error_set(err, KM_ENOMEM, "out of memory for the folds");
            goto kfold_out;
        }
        for (size_t i = 0; i < n; i++)
            order[i] = i;
        if (cv->shuffle) { /* Fisher-Yates */
            km_rng r = {cv->seed};
            for (size_t i = n - 1; i > 0; i--) {
                size_t j = km_rng_below(&r, i + 1), t = order[i];
                order[i] = order[j];
                order[j] = t;
            }
        }
        if (cv->stratified) {
            memset(cnt, 0, (nc + 1) * sizeof *cnt);
            for (size_t i = 0; i < n; i++)
                cnt[pb->labels[i]]++;
            for (size_t c = 0; c < nc; c++)
                if (cnt[c] > 0 && cnt[c] < k) {
                    st = km_error_set(err, KM_EPROBLEM, "cv.folds %zu is "
                                      "more than the %zu rows of class %zu "
                                      "(stratified folds need each class in "
                                      "every fold)", k, cnt[c], c);
                    goto kfold_out;
                }
            sort_by_class(order, n, pb->labels, nc, tmp, cnt);
            for (size_t p = 0; p < n; p++)
                fold[order[p]] = (int)(p % k);
        } else {
            size_t pos = 0;
            for (size_t f = 0; f < k; f++)
                for (size_t j = 0; j < n / k + (f < n % k); j++)
                    fold[order[pos++]] = (int)f;
        }
        *n_splits = k;
        *min_train = n - (n / k + (n % k != 0));
    kfold_out:
        free(order);
        free(tmp);
        free(cnt);
        return st;
    }
    case KM_CV_LOO:
        if (n < 2)
            return km_error_set(err, KM_EPROBLEM, "cv loo needs at least 2 "
                                "rows (X has %zu)", n);
        for (size_t i = 0; i < n; i++)
            fold[i] = (int)i;
        *n_splits = n;
        *min_train = n - 1;
        return KM_OK;
    case KM_CV_GCV:
        if (!closed_form(s->algo)) {
            char names[64];
            km_algorithm_names_where(closed_form, " and ", names,
                                     sizeof names);
            return km_error_set(err, KM_EINVAL, "cv gcv applies to %s "
                                "only, not %s", names,
                                km_algorithm_name(s->algo));
        }
        for (size_t i = 0; i < n; i++)
            fold[i] = -1;
        *n_splits = 1;
        *min_train = n;
        return KM_OK;
    case KM_CV_PREDEFINED: {
        size_t k = cv->folds;
        if (!cv->test_fold)
            return km_error_set(err, KM_EINVAL, "cv.test_fold is required "
                                "for predefined folds");
        if (k < 1)
            return km_error_set(err, KM_EINVAL, "cv.folds must be at least 1 "
                                "for predefined folds (1 + the largest "
                                "cv.test_fold)");
        if (k > n)
            return km_error_set(err, KM_EPROBLEM, "cv.folds %zu is more than "
                                "the %zu rows", k, n);
        size_t *cnt = calloc(k, sizeof *cnt), always = 0;
        if (!cnt)
            return km_error_set(err, KM_ENOMEM, "out of memory for the folds");
        for (size_t i = 0; i < n && st == KM_OK; i++) {
            int t = cv->test_fold[i];
            if (t < -1 || (t >= 0 && (size_t)t >= k))
                st = km_error_set(err, KM_EINVAL, "cv.test_fold[%zu] = %d is "
                                  "neither -1 nor a fold in 0 .. %zu", i, t,
                                  k - 1);
            else if (t < 0)
                always++;
            else
                cnt[t]++;
            fold[i] = t;
        }
        size_t most = 0;
        for (size_t f = 0; f < k && st == KM_OK; f++) {
            if (cnt[f] == 0)
                st = km_error_set(err, KM_EPROBLEM, "cv fold %zu has no rows "
                                  "(no cv.test_fold entry is %zu)", f, f);
            else if (cnt[f] == n)
                st = km_error_set(err, KM_EPROBLEM, "cv fold %zu holds every "
                                  "row: nothing is left to train on", f);
            most = cnt[f] > most ? cnt[f] : most;
        }
        free(cnt);
        *n_splits = k;
        *min_train = n - most;
        return st;
    }
    default:
        return km_error_set(err, KM_EINVAL, "cv.kind %d is not known",
                            (int)cv->kind);
    }
}

/* A classifier (svc, klr): every split's training rows must hold at
 * least 2 classes (a fold fit learns the classes its rows hold). */
static km_status check_fold_classes(const km_problem *pb, const int *fold,
                                    size_t n_splits, km_error *err)
{
    size_t n = pb->n, k = pb->n_classes, present = 0;
    size_t *cnt = calloc(k, sizeof *cnt), *start = calloc(n_splits + 1,
                                                           sizeof *start);
    size_t *rows = malloc(n * sizeof *rows);
    km_status st = KM_OK;
    if (!cnt || !start || !rows) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for the folds");
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        present += cnt[pb->labels[i]]++ == 0;
        if (fold[i] >= 0)
            start[fold[i] + 1]++;
    }
    for (size_t f = 0; f < n_splits; f++)
        start[f + 1] += start[f];
    for (size_t i = 0; i < n; i++)
        if (fold[i] >= 0)
            rows[start[fold[i]]++] = i;
    /* start[f] is now the end of fold f's rows, start[f - 1] their start */
    for (size_t f = 0; f < n_splits && st == KM_OK; f++) {
        size_t a = f ? start[f - 1] : 0, b = start[f], left = present;
        for (size_t r = a; r < b; r++)
            left -= --cnt[pb->labels[rows[r]]] == 0;
        if (left < 2)
            st = km_error_set(err, KM_EPROBLEM, "cv fold %zu leaves %zu "
                              "class%s to train on; svc needs at least 2", f,
                              left, left == 1 ? "" : "es");
        for (size_t r = a; r < b; r++)
            cnt[pb->labels[rows[r]]]++;
    }
out:
    free(cnt);
    free(start);
    free(rows);
    return st;
}

/* ------------------------------------------------------------ the spec */

static km_status check_problem(const km_search_spec *s, const km_problem *pb,
                               km_error *err)
{
    unsigned outs = km_algorithm_outputs(s->algo);
    if (!pb->X || pb->n == 0 || pb->d == 0)
        return km_error_set(err, KM_EINVAL, "X must have at least one row "
                            "and column");
    if ((outs & KM_OUT_VALUES) && (!pb->y || pb->m == 0))
        return km_error_set(err, KM_EINVAL, "y is required for %s",
                            km_algorithm_name(s->algo));
    if ((outs & KM_OUT_LABELS) && (!pb->labels || pb->n_classes < 2))
        return km_error_set(err, pb->labels ? KM_EPROBLEM : KM_EINVAL,
                            "y must hold at least 2 classes for %s",
                            km_algorithm_name(s->algo));
    const km_algo_search *se = km_algo_of(s->algo)->search;
    if (se && se->one_output && pb->m != 1)
        return km_error_set(err, KM_EINVAL, "y has %zu outputs; %s takes 1",
                            pb->m, km_algorithm_name(s->algo));
    km_status st = km_check_matrix("X", pb->X, pb->n, pb->d, err);
    if (st == KM_OK && (outs & KM_OUT_VALUES))
        st = km_check_matrix("y", pb->y, pb->n, pb->m, err);
    for (size_t i = 0; st == KM_OK && (outs & KM_OUT_LABELS) && i < pb->n; i++)
        if (pb->labels[i] < 0 || (size_t)pb->labels[i] >= pb->n_classes)
            st = km_error_set(err, KM_EINVAL, "y[%zu] = %d is not a class "
                              "index in [0, %zu)", i, pb->labels[i],
                              pb->n_classes);
    return st;
}

/* km_scoring_check of the scoring against the algorithm, then against
 * every point's params (neg_log_loss: params.probability, ...). */
static km_status check_scoring(const km_search_spec *s, km_error *err)
{
    km_status st = km_scoring_check(s->scoring, s->algo, NULL, err);
    size_t ps = km_algorithm_params_size(s->algo);
    for (size_t i = 0; st == KM_OK && i < s->n_points; i++) {
        km_error e = {0};
        st = km_scoring_check(s->scoring, s->algo,
                              (const char *)s->params + i * ps, &e);
        if (st != KM_OK)
            km_error_set(err, st, "points[%zu]: %s", i, e.message);
    }
    return st;
}

/* Whether the closed-form engine (krr's) serves s: every point of the
 * solver it serves, exact (the closed forms and shared Grams are exact
 * KRR's; a nystrom point is fitted and scored by the generic engine, as
 * any other algorithm). */
static int krr_engine(const km_search_spec *s)
{
    return closed_form(s->algo) && km_search_points_served(s);
}

/* Everything about s and pb before any work; fold gets the folds. */
static km_status check_spec(const km_search_spec *s, const km_problem *pb,
                            int *fold, size_t *n_splits, km_error *err)
{
    km_status st;
    if (!km_algorithm_name(s->algo))
        return km_error_set(err, KM_EINVAL, "algorithm %d is not known",
                            (int)s->algo);
    if (s->n_points == 0 || !s->kernels || !s->params)
        return km_error_set(err, KM_EINVAL, "the search has no points");
    if (s->n_points > KM_SEARCH_MAX_POINTS)
        return km_error_set(err, KM_EINVAL, "the search has %zu points; at "
                            "most %d are allowed", s->n_points,
                            KM_SEARCH_MAX_POINTS);
    if ((unsigned)s->pre.x >= KM_SCALE_COUNT)
        return km_error_set(err, KM_EINVAL, "pre.x %d is not a known scaling",
                            (int)s->pre.x);
    if (s->pre.center_y &&
        !(km_algorithm_outputs(s->algo) & KM_OUT_VALUES))
        return km_error_set(err, KM_EINVAL, "pre.center_y applies to "
                            "regression (krr, svr), not %s",
                            km_algorithm_name(s->algo));
    if ((st = check_scoring(s, err)) != KM_OK ||
        (st = check_problem(s, pb, err)) != KM_OK)
        return st;
    size_t min_train = 0;
    if ((st = make_folds(s, pb, fold, n_splits, &min_train, err)) != KM_OK)
        return st;
    if (s->cv.kind == KM_CV_GCV && closed_form(s->algo) && !krr_engine(s))
        return km_error_set(err, KM_EINVAL, "cv gcv needs params.solver "
                            "exact (its closed form is exact KRR's)");
    if (km_algo_of(s->algo)->classes && s->cv.kind != KM_CV_GCV &&
        (st = check_fold_classes(pb, fold, *n_splits, err)) != KM_OK)
        return st;
    /* Each point as its fits will see it: its params against the
     * smallest training split. */
    km_problem small = *pb;
    small.n = min_train;
    size_t ps = km_algorithm_params_size(s->algo);
    for (size_t i = 0; i < s->n_points; i++) {
        km_error e = {0};
        if ((st = km_kernel_check(&s->kernels[i], &e)) != KM_OK ||
            (st = km_algorithm_check(s->algo, (const char *)s->params + i * ps,
                                     &small, &e)) != KM_OK)
            return km_error_set(err, st, "points[%zu]: %s", i, e.message);
    }
    return KM_OK;
}

km_status km_search_folds(const km_search_spec *s, const km_problem *pb,
                          int *fold, size_t *n_splits, km_error *err)
{
    return check_spec(s, pb, fold, n_splits, err);
}

/* ------------------------------------------------------------ entry */

void km_search_result_cleanup(km_search_result *r)
{
    if (!r)
        return;
    free(r->mean);
    free(r->std);
    free(r->fit_seconds);
    memset(r, 0, sizeof *r);
}

static km_status search_check(const km_search_spec *s, const km_problem *pb,
                             km_error *err)
{
    if (!s || !pb)
        return km_error_set(err, KM_EINVAL, "no search or no problem");
    int *fold = pb->n ? malloc(pb->n * sizeof *fold) : NULL;
    size_t n_splits = 0;
    if (pb->n && !fold)
        return km_error_set(err, KM_ENOMEM, "out of memory for the folds");
    km_status st = check_spec(s, pb, fold, &n_splits, err);
    free(fold);
    return st;
}

/* Workers of the generic engine: min(ctl->threads, s->threads), each
 * at least 1, at most the points (krr: 1). */
static int km_search_threads(const km_search_spec *s,
                             const km_fit_control *ctl)
{
    if (closed_form(s->algo))
        return 1;
    int t = ctl && ctl->threads > 1 ? ctl->threads : 1;
    t = s->threads < t ? s->threads : t;
    if (t < 1)
        t = 1;
    return (size_t)t < s->n_points ? t : (int)s->n_points;
}

static km_status search(const km_search_spec *s, const km_problem *pb,
                        const km_fit_control *ctl, km_search_result *out,
                        km_error *err)
{
    if (!out)
        return km_error_set(err, KM_EINVAL, "no result to fill");
    memset(out, 0, sizeof *out);
    if (!s || !pb)
        return km_error_set(err, KM_EINVAL, "no search or no problem");
    int *fold = pb->n ? malloc(pb->n * sizeof *fold) : NULL;
    search_run r;
    memset(&r, 0, sizeof r);
    km_status st;
    if (pb->n && !fold)
        return km_error_set(err, KM_ENOMEM, "out of memory for the folds");
    if ((st = check_spec(s, pb, fold, &r.n_splits, err)) != KM_OK) {
        free(fold);
        return st;
    }
    size_t P = s->n_points;
    out->n_points = P;
    out->n_splits = r.n_splits;
    out->mean = calloc(P, sizeof *out->mean);
    out->std = calloc(P, sizeof *out->std);
    out->fit_seconds = calloc(P, sizeof *out->fit_seconds);
    r.acc = calloc(P, sizeof *r.acc);
    if (!out->mean || !out->std || !out->fit_seconds || !r.acc) {
        free(fold);
        free(r.acc);
        return km_error_set(err, KM_ENOMEM, "out of memory for the search "
                            "result");
    }
    r.s = s;
    r.pb = pb;
    r.ctl = ctl;
    r.threads = km_search_threads(s, ctl);
    pthread_mutex_init(&r.lock, NULL);
    atomic_init(&r.stop, 0);
    r.fold = fold;
    r.units = (double)P * (double)r.n_splits;
    st = km_search_progress(&r, 0, err);
    if (st == KM_OK)
        st = krr_engine(s) ? km_search_run_krr(&r, err)
                           : km_search_run_generic(&r, err);
    if (st == KM_OK)
        st = km_search_progress(&r, r.units, err);
    int closed = krr_engine(s) &&
                 (s->cv.kind == KM_CV_LOO || s->cv.kind == KM_CV_GCV);
    size_t best = P;
    for (size_t p = 0; st == KM_OK && p < P; p++) {
        point_acc *a = &r.acc[p];
        if (a->failed || a->count == 0) {
            out->mean[p] = KM_SEARCH_FAILED_SCORE;
            out->std[p] = 0;
        } else {
            out->mean[p] = a->mean;
            out->std[p] = a->count > 1 ? sqrt(a->m2 / (double)a->count) : 0;
            if (best == P || a->mean > out->mean[best])
                best = p;
        }
        /* closed forms already hold the point's share of the sweep */
        out->fit_seconds[p] =
            closed ? a->seconds : a->seconds / (double)r.n_splits;
    }
    if (st == KM_OK && best == P)
        st = km_error_set(err, r.first_status ? r.first_status : KM_EPROBLEM,
                          "every point of the search failed; the first: %s",
                          r.first_msg);
    out->best = best == P ? 0 : best;
    pthread_mutex_destroy(&r.lock);
    free(fold);
    free(r.acc);
    return st;
}

/* ------------------------------------------------------------ memory */

static size_t search_bytes(const km_search_spec *s, const km_problem *pb)
{
    if (!s || !pb)
        return 0;
    size_t n = pb->n, d = pb->d, m = pb->y ? pb->m : 1, P = s->n_points;
    size_t k = pb->labels ? pb->n_classes : 0, D = sizeof(double);
    /* result arrays, per-point state, folds and the split's indices */
    size_t b = km_mul_sat(P, 3 * D + sizeof(point_acc));
    b = km_add_sat(b, km_mul_sat(n, sizeof(int) + 2 * sizeof(size_t)));
    if (krr_engine(s)) {
        size_t nn = km_mul_sat(n, n);
        size_t cb = P < ALPHA_BATCH ? P : ALPHA_BATCH;
        b = km_add_sat(b, km_mul_sat(P, sizeof(km_kernel) + 2 * sizeof(size_t)));
        if (s->cv.kind == KM_CV_LOO || s->cv.kind == KM_CV_GCV) {
            /* km_search_krr.c's cf_alloc: K (reduced in place, then
             * Q), T's two diagonals, tau, the eigenvalues, Z and the
             * predictions, the batch's L, Rp, D, W and C, the
             * diagonal's two blocks; LAPACK's workspaces (dsytrd,
             * dorgtr, dormtr: n x a block of at most 64; dstebz: 7n);
             * the preprocessed copies; and the pages of OpenBLAS's own
             * buffers that the blocked reduction's BLAS-3 calls touch
             * first (measured: a daemon's peak grew 8.4 MiB past K at n
             * = 3000, on two threads) */
            b = km_add_sat(b, (size_t)16 << 20);
            b = km_add_sat(b, km_mul_sat(D, nn));
            b = km_add_sat(b, km_mul_sat(D, km_mul_sat(n, 4 + 2 * m + 3 * cb +
                                              2 * cb * m + 2 * DIAG_IB +
                                              64 + 7 + d + m)));
        } else {
            /* the Gram of all rows (or the scaled rows), the training
             * and test blocks, and either dsyevd's workspace or the
             * Cholesky copy, plus vectors */
            /* (bounds: a training block of at most n rows, a test block
             * nte x (n - nte) of at most n^2 / 4) */
            int eig = P >= KRR_EIG_CHOLESKYS;
            b = km_add_sat(b, km_mul_sat(D, km_mul_sat(eig ? 4 : 3, nn)));
            b = km_add_sat(b, km_mul_sat(D, nn / 4));
            b = km_add_sat(b, km_mul_sat(D, km_mul_sat(n, 4 * m + 3 * cb * m + 2 * d +
                                              8)));
        }
        return b;
    }
    /* generic: svc's and svr's shared Gram of all rows (when it takes at
     * most half of the smallest cache_mb), the subset copies, the
     * largest fold fit, the answers */
    const km_algo_search *se = km_algo_of(s->algo)->search;
    if (se && (se->caps & KM_SEARCH_SHARED_GRAM) && s->params &&
        s->pre.x == KM_SCALE_NONE && !s->pre.center_y) {
        double budget = HUGE_VAL, gram = (double)n * (double)n * (double)D;
        size_t ps = km_algorithm_params_size(s->algo);
        for (size_t p = 0; p < P; p++) {
            double c = se->cache_bytes((const unsigned char *)s->params +
                                       p * ps);
            budget = c < budget ? c : budget;
        }
        if (gram <= budget / 2)
            b = km_add_sat(b, km_mul_sat(D, km_mul_sat(n, n)));
    }
    /* per worker (s->threads of them, at most the points): a split's
     * indices (the first worker's are counted above) and copies, the
     * largest fold fit, the answers */
    size_t T = s->threads > 1 ? (size_t)s->threads : 1;
    T = T < P ? T : (P ? P : 1);
    size_t w = km_mul_sat(D, km_mul_sat(n, 2 * (d + (pb->y ? m : 0))));
    w = km_add_sat(w, km_mul_sat(n, 2 * sizeof(int)));
    /* the largest fold fit, of params as the fold fits take them */
    size_t ps = km_algorithm_params_size(s->algo), most = 0;
    const km_algo *al = km_algo_of(s->algo);
    union {
        max_align_t align;
        unsigned char b[256];
    } fp;
    for (size_t p = 0; p < P && s->params; p++) {
        const void *pp = (const char *)s->params + p * ps;
        if (al && al->cv_params && ps <= sizeof fp.b) {
            memcpy(fp.b, pp, ps);
            al->cv_params(fp.b, km_scoring_needs(s->scoring));
            pp = fp.b;
        }
        size_t f = km_algorithm_fit_bytes(s->algo, pp, pb);
        most = f > most ? f : most;
    }
    w = km_add_sat(w, most);
    /* test and pooled answers: values or reconstructions, labels,
     * probabilities twice, projections */
    w = km_add_sat(w, km_mul_sat(D, km_mul_sat(n, 2 * (m > d ? m : d) + 3 * k + d)));
    b = km_add_sat(b, km_mul_sat(T, w));
    return km_add_sat(b, km_mul_sat(T - 1, km_mul_sat(n, 2 * sizeof(size_t))));
}

/* ------------------------------------------------------------ auto */

/*
 * Points of solver auto (krr's: the descriptor's is_auto) are resolved
 * once, on the whole problem (resolve_auto: km_krr_resolve_solver under
 * km_memory_budget()), before anything else: every fold of a point and
 * the refit of the best (km_fit of its params on the same rows, which
 * resolves the same way) run the same solver, and the estimate counts
 * that solver's fits. *r is s, or s with params copied into *own (the
 * caller frees it) and the auto points resolved.
 */
static km_status resolve_auto(const km_search_spec *s, const km_problem *pb,
                              km_search_spec *r, void **own, km_error *err)
{
    *own = NULL;
    if (!s)
        return KM_OK;
    *r = *s;
    const km_algo *al = km_algo_of(s->algo);
    const km_algo_search *se = al ? al->search : NULL;
    if (!pb || !se || !se->is_auto || !s->params ||
        s->n_points == 0 || s->n_points > KM_SEARCH_MAX_POINTS)
        return KM_OK;
    size_t ps = al->params->size, i = 0;
    const unsigned char *p = s->params;
    while (i < s->n_points && !se->is_auto(p + i * ps))
        i++;
    if (i == s->n_points)
        return KM_OK;
    unsigned char *q = malloc(s->n_points * ps);
    if (!q)
        return km_error_set(err, KM_ENOMEM, "out of memory for the search");
    memcpy(q, p, s->n_points * ps);
    size_t budget = km_memory_budget();
    for (i = 0; i < s->n_points; i++)
        se->resolve_auto(q + i * ps, pb, budget);
    r->params = q;
    *own = q;
    return KM_OK;
}

km_status km_search_check(const km_search_spec *s, const km_problem *pb,
                          km_error *err)
{
    km_search_spec r;
    void *own;
    km_status st = resolve_auto(s, pb, &r, &own, err);
    if (st == KM_OK)
        st = search_check(s ? &r : NULL, pb, err);
    free(own);
    return st;
}

km_status km_search(const km_search_spec *s, const km_problem *pb,
                    const km_fit_control *ctl, km_search_result *out,
                    km_error *err)
{
    km_search_spec r;
    void *own;
    if (out)
        memset(out, 0, sizeof *out);
    km_status st = resolve_auto(s, pb, &r, &own, err);
    if (st == KM_OK)
        st = search(s ? &r : NULL, pb, ctl, out, err);
    free(own);
    return st;
}

size_t km_search_bytes(const km_search_spec *s, const km_problem *pb)
{
    km_search_spec r;
    void *own;
    if (resolve_auto(s, pb, &r, &own, NULL) != KM_OK)
        return SIZE_MAX;
    size_t b = search_bytes(s ? &r : NULL, pb);
    free(own);
    return b;
}
