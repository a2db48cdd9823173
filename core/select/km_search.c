/*
 * km_search.c - model selection: km_search scores a list of candidate
 * points (a kernel and a params struct each) of one algorithm by
 * cross-validation and picks the best, as scikit-learn's GridSearchCV.
 *
 * Two engines:
 *
 *   generic   every algorithm: for each point and fold, the fold's rows
 *             are copied out, km_fit_inner fits them with the spec's
 *             preprocessing (without the training score, which only a
 *             kept model needs; with the descriptor's cv_params applied
 *             to the point's params), the model predicts the test rows
 *             through the generic km_predict (so its preprocessing
 *             applies) and the fold is scored; the model is freed.
 *
 *   krr       kernel ridge regression never refits per alpha. Points are
 *             grouped by equal resolved kernel (kernel_equal below; the
 *             preprocessing is the spec's, the same for all). Per group:
 *               LOO, GCV  one eigendecomposition K = V diag(s) V^T of all
 *                         rows serves every alpha and output in closed
 *                         form (krr_closed_form);
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
 * workers (run_generic: the calling thread and those it starts per
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
#include <stdlib.h>
#include <string.h>

#include "../km_internal.h"

/*
 * An eigendecomposition (dsyevd, eigenvectors) of an n x n Gram costs
 * about this many Choleskys (dpotrf) of it. Measured on this machine
 * (OpenBLAS, 2 cores shared, rbf Gram of uniform data, d = 20, median
 * of single runs): n = 500: 12, 1000: 15, 2000: 15, 3000: 18, 5000: 22.
 * A KFOLD fold of krr takes one eigendecomposition for all its alphas
 * when the group has at least this many alphas, else one Cholesky per
 * alpha (each alpha's extra work after the eigendecomposition is
 * O(n^2 m), negligible beside either).
 *
 * dsyevd against dsyevr, same runs: dsyevd took 0.80-0.87 of dsyevr's
 * time (n = 2000: 0.51 s vs 0.64 s; 3000: 1.83 vs 2.21; 5000: 9.2 vs
 * 10.5), at the price of 2 n^2 doubles of workspace (dsyevr: n^2 for
 * its separate eigenvectors); dsyevd is used, km_search_bytes counts it.
 */
#define KRR_EIG_CHOLESKYS 18

/* Alphas per batch of the closed forms (bounds the n x batch x m
 * buffers); rows of V squared per block for diag(H). */
#define ALPHA_BATCH 32
#define SQ_BLOCK 256

/* ------------------------------------------------------------ folds */

KM_CHOICES_DEFINE(km_cv_choices, KM_CV_MAP, KM_CV_COUNT);

const char *km_cv_kind_name(km_cv_kind k)
{
    return km_choice_name(&km_cv_choices, (int)k);
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
        if (s->algo != KM_ALGO_KRR)
            return km_error_set(err, KM_EINVAL, "cv gcv applies to krr "
                                "only, not %s", km_algorithm_name(s->algo));
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
    if (s->algo == KM_ALGO_SVR && pb->m != 1)
        return km_error_set(err, KM_EINVAL, "y has %zu outputs; svr takes 1",
                            pb->m);
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

/* Whether krr's own engine serves s: every point of the exact solver
 * (the closed forms and shared Grams are exact KRR's; a nystrom point is
 * fitted and scored by the generic engine, as any other algorithm). */
static int krr_engine(const km_search_spec *s)
{
    if (s->algo != KM_ALGO_KRR || !s->params)
        return 0;
    for (size_t p = 0; p < s->n_points; p++)
        if (((const km_krr_params *)s->params)[p].solver !=
            KM_KRR_SOLVER_EXACT)
            return 0;
    return 1;
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
    if (s->cv.kind == KM_CV_GCV && s->algo == KM_ALGO_KRR && !krr_engine(s))
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

/* ------------------------------------------------------------ state */

/* Per point: Welford's running mean and sum of squared deviations of its
 * fold scores, its fit seconds, and whether it failed; touched only by
 * the thread running the point. rank: its place in the serial order
 * (the generic engine's; 0 for krr's), which decides the first failure
 * whatever thread finds it. */
typedef struct point_acc {
    size_t count;
    double mean, m2, seconds;
    int failed;
    size_t rank;
} point_acc;

/*
 * A run's state. With several workers (the generic engine), lock guards
 * done, reported, the first failure and the hard status, and serialises
 * the progress callback; stop is set (under lock) with the first hard
 * status (a cancel is one), and every worker stops at its next fold or
 * progress report.
 */
typedef struct search_run {
    const km_search_spec *s;
    const km_problem *pb;
    const km_fit_control *ctl;
    const int *fold;
    size_t n_splits;
    int threads;        /* workers of the generic engine */
    point_acc *acc;
    double units, done; /* (point, fold) units in all, and started */
    double reported;    /* the last fraction reported */
    km_status first_status; /* the first point failure, for the message */
    size_t first_rank;
    char first_msg[400];
    pthread_mutex_t lock;
    atomic_int stop;
    km_status hard;     /* what ended the search */
    char hard_msg[sizeof ((km_error *)0)->message];
} search_run;

/* Ends the search with st (message msg) unless it has ended already:
 * the first one wins. Lock held. */
static void stop_locked(search_run *r, km_status st, const char *msg)
{
    if (r->hard == KM_OK) {
        r->hard = st;
        snprintf(r->hard_msg, sizeof r->hard_msg, "%s", msg);
    }
    atomic_store(&r->stop, 1);
}

static void stop_search(search_run *r, km_status st, const char *msg)
{
    pthread_mutex_lock(&r->lock);
    stop_locked(r, st, msg);
    pthread_mutex_unlock(&r->lock);
}

static void add_score(point_acc *a, double v)
{
    a->count++;
    double delta = v - a->mean;
    a->mean += delta / (double)a->count;
    a->m2 += delta * (v - a->mean);
}

static int is_point_failure(km_status st)
{
    return st == KM_EPROBLEM || st == KM_ENOTPD || st == KM_ENOCONV;
}

/* Marks point p failed at fold f (fold < 0: no fold) with st and msg. */
static void fail_point(search_run *r, size_t p, long f, km_status st,
                       const char *msg)
{
    if (r->acc[p].failed)
        return;
    r->acc[p].failed = 1;
    pthread_mutex_lock(&r->lock);
    if (r->first_status == KM_OK || r->acc[p].rank < r->first_rank) {
        r->first_status = st;
        r->first_rank = r->acc[p].rank;
        if (f >= 0)
            snprintf(r->first_msg, sizeof r->first_msg,
                     "points[%zu], cv fold %ld: %s", p, f, msg);
        else
            snprintf(r->first_msg, sizeof r->first_msg, "points[%zu]: %s", p,
                     msg);
    }
    pthread_mutex_unlock(&r->lock);
}

/* A failure st (message msg) of point p's fit on fold f: a failure of
 * its data or parameters (is_point_failure) fails the point and the
 * search goes on (KM_OK); any other status ends it, returned with err
 * naming the point and fold. */
static km_status point_failed(search_run *r, size_t p, long f, km_status st,
                              const char *msg, km_error *err)
{
    if (!is_point_failure(st))
        return km_error_set(err, st, "points[%zu], cv fold %ld: %s", p, f,
                            msg);
    fail_point(r, p, f, st, msg);
    return KM_OK;
}

/* A fold's (or the pooled) score of point p; a score that is not a
 * finite number fails the point. */
static void record(search_run *r, size_t p, long f, double v)
{
    if (r->acc[p].failed)
        return;
    if (!isfinite(v)) {
        fail_point(r, p, f, KM_EPROBLEM, "the score is not a finite number "
                   "(the predictions overflow)");
        return;
    }
    add_score(&r->acc[p], v);
}

/* Point p's score of its answers a on fold f (f < 0: the pooled or
 * closed-form score), by km_score_answers, recorded. Answers it refuses
 * (a prediction that is not a finite number) fail the point; only
 * KM_ENOMEM ends the search. */
static km_status score(search_run *r, size_t p, long f, const km_answers *a,
                       km_error *err)
{
    km_error e = {0};
    double v;
    km_status st = km_score_answers(r->s->scoring, a, &v, &e);
    if (st == KM_ENOMEM)
        return km_error_set(err, st, "%s", e.message);
    if (st != KM_OK)
        fail_point(r, p, f, KM_EPROBLEM, e.message);
    else if (isnan(v) && a->n < 2) /* r2 of one row, NAN as sklearn's */
        fail_point(r, p, f, KM_EPROBLEM, "r2 is not defined on a fold of "
                   "one test row; use fewer folds, or cv loo (scored on all "
                   "its predictions together)");
    else
        record(r, p, f, v);
    return KM_OK;
}

/* Reports units of r->units done (or the last report, if more) through
 * the callback, one thread at a time; 1 when the search has stopped or
 * the callback asks it to (which stops it: KM_ECANCELLED). */
static int report(search_run *r, double units)
{
    if (atomic_load(&r->stop))
        return 1;
    if (!r->ctl || !r->ctl->progress)
        return 0;
    pthread_mutex_lock(&r->lock);
    int stop = atomic_load(&r->stop);
    if (!stop) {
        double f = units / r->units;
        if (f < r->reported)
            f = r->reported;
        r->reported = f;
        if (km_progress(r->ctl, f)) {
            stop_locked(r, KM_ECANCELLED, "search cancelled");
            stop = 1;
        }
    }
    pthread_mutex_unlock(&r->lock);
    return stop;
}

static km_status progress(search_run *r, double units, km_error *err)
{
    if (report(r, units))
        return km_error_set(err, r->hard ? r->hard : KM_ECANCELLED, "%s",
                            r->hard ? r->hard_msg : "search cancelled");
    return KM_OK;
}

/* A fit's progress mapped into [base, base + 1] of the search's units. */
typedef struct sub_ctx {
    search_run *r;
    double base;
} sub_ctx;

static int sub_progress(void *ctx, double f)
{
    sub_ctx *c = ctx;
    return report(c->r, c->base + f);
}

/* ------------------------------------------------------------ fold rows */

/* One split's rows: indices, copies, and svc's class map. */
typedef struct split {
    size_t ntr, nte;
    size_t *tr, *te;
    double *Xtr, *Xte, *ytr, *yte;
    int *ltr, *lte;   /* ltr: training classes renumbered 0 .. ktr-1 */
    size_t ktr;
    int *cls;         /* ktr: training class -> original class */
    int *inv;         /* n_classes: original -> training class or -1 */
} split;

static void split_free(split *sp)
{
    free(sp->tr);
    free(sp->te);
    free(sp->Xtr);
    free(sp->Xte);
    free(sp->ytr);
    free(sp->yte);
    free(sp->ltr);
    free(sp->lte);
    free(sp->cls);
    free(sp->inv);
    memset(sp, 0, sizeof *sp);
}

/* Buffers for any split of pb; copies only when copy is set. */
static km_status split_alloc(split *sp, const km_problem *pb, int copy,
                             km_error *err)
{
    size_t n = pb->n, d = pb->d, m = pb->y ? pb->m : 0;
    memset(sp, 0, sizeof *sp);
    int ok = (sp->tr = malloc(n * sizeof *sp->tr)) &&
             (sp->te = malloc(n * sizeof *sp->te));
    if (ok && copy)
        ok = (sp->Xtr = malloc(n * d * sizeof(double))) &&
             (sp->Xte = malloc(n * d * sizeof(double))) &&
             (!m || ((sp->ytr = malloc(n * m * sizeof(double))) &&
                     (sp->yte = malloc(n * m * sizeof(double))))) &&
             (!pb->labels ||
              ((sp->ltr = malloc(n * sizeof(int))) &&
               (sp->lte = malloc(n * sizeof(int))) &&
               (sp->cls = malloc(pb->n_classes * sizeof(int))) &&
               (sp->inv = malloc(pb->n_classes * sizeof(int)))));
    if (!ok) {
        split_free(sp);
        return km_error_set(err, KM_ENOMEM, "out of memory for the folds' "
                            "rows");
    }
    return KM_OK;
}

/* Fills sp with split f's indices (GCV: all rows train, none test) and,
 * when copy, its rows. */
static void split_take(split *sp, const km_problem *pb, const int *fold,
                       long f, int copy)
{
    size_t n = pb->n, d = pb->d, m = pb->y ? pb->m : 0;
    sp->ntr = sp->nte = 0;
    for (size_t i = 0; i < n; i++) {
        if (fold[i] == f && f >= 0)
            sp->te[sp->nte++] = i;
        else
            sp->tr[sp->ntr++] = i;
    }
    if (!copy)
        return;
    for (size_t a = 0; a < sp->ntr; a++) {
        memcpy(sp->Xtr + a * d, pb->X + sp->tr[a] * d, d * sizeof(double));
        if (m)
            memcpy(sp->ytr + a * m, pb->y + sp->tr[a] * m, m * sizeof(double));
    }
    for (size_t a = 0; a < sp->nte; a++) {
        memcpy(sp->Xte + a * d, pb->X + sp->te[a] * d, d * sizeof(double));
        if (m)
            memcpy(sp->yte + a * m, pb->y + sp->te[a] * m, m * sizeof(double));
    }
    if (pb->labels) {
        for (size_t c = 0; c < pb->n_classes; c++)
            sp->inv[c] = -1;
        for (size_t a = 0; a < sp->ntr; a++)
            sp->inv[pb->labels[sp->tr[a]]] = 0;
        sp->ktr = 0;
        for (size_t c = 0; c < pb->n_classes; c++)
            if (sp->inv[c] == 0) {
                sp->cls[sp->ktr] = (int)c;
                sp->inv[c] = (int)sp->ktr++;
            }
        for (size_t a = 0; a < sp->ntr; a++)
            sp->ltr[a] = sp->inv[pb->labels[sp->tr[a]]];
        for (size_t a = 0; a < sp->nte; a++)
            sp->lte[a] = pb->labels[sp->te[a]];
    }
}

/* ------------------------------------------------------------ generic */

static int kernel_equal(const km_kernel *a, const km_kernel *b);

/* svc and svr without preprocessing: the points in groups of equal
 * resolved kernel (order[]: the points group by group, groups in the
 * order of their first point; leader[p]: p's group's first point), so
 * that one Gram of all rows serves every fit of a group. Otherwise the
 * points in their order, each its own group. */
static km_status group_points(const search_run *r, int share, size_t *order,
                              size_t *leader, km_error *err)
{
    const km_search_spec *s = r->s;
    size_t P = s->n_points, nk = 0, o = 0;
    km_status st = KM_OK;
    km_kernel *rk = share ? calloc(P, sizeof *rk) : NULL;
    if (share && !rk)
        return km_error_set(err, KM_ENOMEM, "out of memory for the search");
    for (size_t p = 0; p < P; p++)
        leader[p] = p;
    for (; share && nk < P; nk++) {
        if ((st = km_kernel_copy(&rk[nk], &s->kernels[nk], err)) != KM_OK)
            goto out;
        km_kernel_resolve(&rk[nk], r->pb->d);
        for (size_t q = 0; q < nk; q++)
            if (leader[q] == q && kernel_equal(&rk[nk], &rk[q])) {
                leader[nk] = q;
                break;
            }
    }
    for (size_t p = 0; p < P; p++)
        if (leader[p] == p)
            for (size_t q = p; q < P; q++)
                if (leader[q] == p)
                    order[o++] = q;
out:
    for (size_t i = 0; i < nk; i++)
        km_kernel_cleanup(&rk[i]);
    free(rk);
    return st;
}

/* What one worker of the generic engine writes into: a split's indices
 * and rows, the test and pooled answers, the point's params copy and
 * svc's class-weight map. */
typedef struct gen_ws {
    split sp;
    double *P, *Pool, *proba, *probk, *proj, *cw;
    int *lab, *labpool;
    unsigned char *pbuf;
} gen_ws;

/* What the workers share, read-only but for next (under r->lock): the
 * batch's points are order[next .. hi). */
typedef struct gen_run {
    search_run *r;
    const km_algo *al;
    size_t ps, pcols;
    unsigned need;
    int loo;
    const size_t *order;
    const double *Kall; /* the batch's shared Gram, or NULL */
    size_t next, hi;
} gen_run;

typedef struct gen_worker {
    gen_run *g;
    gen_ws *w;
    pthread_t tid;
} gen_worker;

static void ws_free(gen_ws *w)
{
    split_free(&w->sp);
    free(w->P);
    free(w->Pool);
    free(w->proba);
    free(w->probk);
    free(w->proj);
    free(w->cw);
    free(w->lab);
    free(w->labpool);
    free(w->pbuf);
    memset(w, 0, sizeof *w);
}

static km_status ws_alloc(gen_ws *w, const gen_run *g, km_error *err)
{
    const km_problem *pb = g->r->pb;
    size_t n = pb->n, k = pb->n_classes, pcols = g->pcols;
    memset(w, 0, sizeof *w);
    km_status st = split_alloc(&w->sp, pb, 1, err);
    if (st != KM_OK)
        return st;
    int ok = (w->pbuf = malloc(g->ps)) != NULL;
    if (ok && pcols)
        ok = (w->P = malloc(n * pcols * sizeof *w->P)) &&
             (!g->loo || (w->Pool = malloc(n * pcols * sizeof *w->Pool)));
    if (ok && (g->need & KM_OUT_LABELS))
        ok = (w->lab = malloc(n * sizeof *w->lab)) &&
             (w->labpool = malloc(n * sizeof *w->labpool)) &&
             (w->cw = malloc(k * sizeof *w->cw));
    if (ok && (g->need & KM_OUT_PROBABILITIES))
        ok = (w->proba = malloc(n * k * sizeof *w->proba)) &&
             (w->probk = malloc(n * k * sizeof *w->probk));
    if (!ok) {
        ws_free(w);
        return km_error_set(err, KM_ENOMEM, "out of memory for the search");
    }
    return KM_OK;
}

/* Claims the next fold's unit (*base: the units started before it) and
 * reports them; 1 when the search has stopped. */
static int fold_start(search_run *r, double *base)
{
    pthread_mutex_lock(&r->lock);
    *base = r->done;
    r->done += 1;
    pthread_mutex_unlock(&r->lock);
    return report(r, *base);
}

/* Point p on every split, with w's buffers; a status that ends the
 * search is returned with err set (KM_ECANCELLED when it has stopped). */
static km_status gen_point(const gen_run *g, gen_ws *w, size_t p,
                           km_error *err)
{
    search_run *r = g->r;
    const km_search_spec *s = r->s;
    const km_problem *pb = r->pb;
    size_t n = pb->n, d = pb->d, k = pb->n_classes, pcols = g->pcols;
    unsigned need = g->need;
    int loo = g->loo;
    const void *params = (const char *)s->params + p * g->ps;
    point_acc *acc = &r->acc[p];
    split *sp = &w->sp;
    km_status st = KM_OK;
    for (size_t f = 0; f < r->n_splits; f++) {
        double base;
        if (fold_start(r, &base))
            return km_error_set(err, KM_ECANCELLED, "search stopped");
        if (acc->failed)
            continue;
        split_take(sp, pb, r->fold, (long)f, 1);
        km_problem tp = {sp->Xtr, sp->ntr, d, sp->ytr, pb->y ? pb->m : 0,
                         sp->ltr, sp->ktr};
        memcpy(w->pbuf, params, g->ps);
        if (g->al->cv_params)
            g->al->cv_params(w->pbuf, s->scoring);
        if (s->algo == KM_ALGO_SVC) {
            km_svm_params *sv = (km_svm_params *)w->pbuf;
            if (sv->class_weight) {
                for (size_t c = 0; c < sp->ktr; c++)
                    w->cw[c] = sv->class_weight[sp->cls[c]];
                sv->class_weight = w->cw;
            }
        }
        /* several workers: the fits see the stop flag through it */
        sub_ctx sc = {r, base};
        km_fit_control sub = {sub_progress, &sc, 0};
        const km_fit_control *fc = r->ctl || r->threads > 1 ? &sub : NULL;
        km_model *model = NULL;
        km_error e = {0};
        double t0 = km_now();
        if (g->Kall) {
            km_shared_gram sg = {g->Kall, pb->X, n, sp->tr};
            st = km_svm_fit_shared(s->algo, &s->kernels[p],
                                   (void *)w->pbuf, &tp, &sg, fc, &model, &e);
        } else {
            st = km_fit_inner(s->algo, &s->kernels[p], w->pbuf, &s->pre, &tp,
                              fc, 0, &model, &e);
        }
        acc->seconds += km_now() - t0;
        if (st == KM_OK) {
            size_t nte = sp->nte;
            if (need & KM_OUT_VALUES) {
                st = km_predict(model, KM_OUT_VALUES, sp->Xte, nte, w->P, &e);
            } else if (need & KM_OUT_INVERSE) {
                size_t nc = km_model_n_outputs(model);
                double *pj = realloc(w->proj, nte * nc * sizeof *pj);
                if (pj)
                    w->proj = pj;
                st = !pj ? km_error_set(&e, KM_ENOMEM, "out of memory")
                     : km_predict(model, KM_OUT_PROJECTIONS, sp->Xte, nte,
                                  w->proj, &e);
                if (st == KM_OK)
                    st = km_predict(model, KM_OUT_INVERSE, w->proj, nte, w->P,
                                    &e);
            } else {
                st = km_predict_labels(model, sp->Xte, nte, w->lab, &e);
                for (size_t a = 0; st == KM_OK && a < nte; a++)
                    w->lab[a] = sp->cls[w->lab[a]];
                if (st == KM_OK && (need & KM_OUT_PROBABILITIES)) {
                    st = km_predict(model, KM_OUT_PROBABILITIES, sp->Xte,
                                    nte, w->probk, &e);
                    for (size_t a = 0; st == KM_OK && a < nte; a++) {
                        double *row = (loo ? w->proba + sp->te[a] * k
                                           : w->proba + a * k);
                        memset(row, 0, k * sizeof *row);
                        for (size_t c = 0; c < sp->ktr; c++)
                            row[sp->cls[c]] = w->probk[a * sp->ktr + c];
                    }
                }
            }
        }
        km_model_free(model);
        if (st != KM_OK) {
            if ((st = point_failed(r, p, (long)f, st, e.message, err)) !=
                KM_OK)
                return st;
            continue;
        }
        if (loo) { /* one test row: pool it */
            size_t i = sp->te[0];
            if (pcols)
                memcpy(w->Pool + i * pcols, w->P, pcols * sizeof *w->P);
            if (w->lab)
                w->labpool[i] = w->lab[0];
            continue;
        }
        km_answers a = {.n = sp->nte, .m = pcols, .k = k,
                        .Y = need & KM_OUT_VALUES ? sp->yte : sp->Xte,
                        .P = w->P, .truth = sp->lte, .pred = w->lab,
                        .proba = w->proba};
        if ((st = score(r, p, (long)f, &a, err)) != KM_OK)
            return st;
    }
    if (loo && !acc->failed) {
        km_answers a = {.n = n, .m = pcols, .k = k,
                        .Y = need & KM_OUT_VALUES ? pb->y : pb->X,
                        .P = w->Pool, .truth = pb->labels, .pred = w->labpool,
                        .proba = w->proba};
        if ((st = score(r, p, -1, &a, err)) != KM_OK)
            return st;
    }
    return KM_OK;
}

/* A worker: the batch's next point until there is none or the search
 * has stopped; a status that ends the search stops it (the first wins). */
static void *gen_work(void *arg)
{
    gen_worker *wk = arg;
    gen_run *g = wk->g;
    search_run *r = g->r;
    for (;;) {
        pthread_mutex_lock(&r->lock);
        size_t i = g->next < g->hi ? g->next++ : g->hi;
        pthread_mutex_unlock(&r->lock);
        if (i >= g->hi || atomic_load(&r->stop))
            break;
        km_error e = {0};
        km_status st = gen_point(g, wk->w, g->order[i], &e);
        if (st != KM_OK) {
            stop_search(r, st, e.message);
            break;
        }
    }
    return NULL;
}

/* The batch order[lo .. hi) on up to nw workers: the calling thread and
 * the threads it can start. */
static void run_batch(gen_run *g, gen_worker *wk, size_t nw, size_t lo,
                      size_t hi)
{
    size_t started = 1;
    g->next = lo;
    g->hi = hi;
    if (nw > hi - lo)
        nw = hi - lo;
    for (; started < nw; started++)
        if (pthread_create(&wk[started].tid, NULL, gen_work, &wk[started]))
            break; /* fewer workers */
    gen_work(&wk[0]);
    for (size_t t = 1; t < started; t++)
        pthread_join(wk[t].tid, NULL);
}

/* Shares group leader p's Gram of all rows among its points' fits, when
 * there are several and it takes at most half of every one of their
 * cache_mb; NULL otherwise (the fits compute their own columns). */
static double *group_gram(search_run *r, size_t p, const size_t *leader)
{
    const km_search_spec *s = r->s;
    const km_problem *pb = r->pb;
    size_t n = pb->n, d = pb->d, ps = km_algorithm_params_size(s->algo);
    size_t g = 0;
    double budget = HUGE_VAL;
    for (size_t q = p; q < s->n_points; q++)
        if (leader[q] == p) {
            double b = ((const km_svm_params *)((const char *)s->params +
                                                q * ps))->cache_mb *
                       1048576.0;
            budget = b < budget ? b : budget;
            g++;
        }
    double gram = (double)n * (double)n * sizeof(double);
    if (!(g * r->n_splits > 1 && gram <= budget / 2))
        return NULL;
    double t0 = km_now();
    km_error e = {0};
    km_kernel kr;
    double *Kall = malloc(n * n * sizeof *Kall);
    if (Kall && km_kernel_copy(&kr, &s->kernels[p], &e) == KM_OK) {
        km_kernel_resolve(&kr, d);
        if (km_gram_sym(&kr, pb->X, n, d, Kall, 1, &e) != KM_OK) {
            free(Kall); /* the fits compute their own */
            Kall = NULL;
        }
        km_kernel_cleanup(&kr);
    } else {
        free(Kall);
        Kall = NULL;
    }
    double each = (km_now() - t0) / (double)g;
    for (size_t q = p; Kall && q < s->n_points; q++)
        if (leader[q] == p)
            r->acc[q].seconds += each;
    return Kall;
}

/*
 * Every point on every split through km_fit_inner. LOO pools the n left-out
 * predictions of a point and scores them once. svc's fold fits learn the
 * classes their rows hold, renumbered (with class_weight renumbered
 * alike); their answers are mapped back to the original classes.
 *
 * svc and svr without preprocessing: the points of one resolved kernel
 * share one Gram of all rows (km_gram_sym) when it takes at most half
 * of every one of their params.cache_mb (the rule of an svc fit's own
 * Gram), and each fit gathers its kernel columns from it
 * (km_svm_fit_shared, the same fit as km_fit's) instead of computing
 * them; its time is shared among the group's fits.
 *
 * The points run on r->threads workers (gen_work), each with its own
 * buffers (gen_ws), taking the next point of a batch: a group of one
 * kernel (its Gram computed first, freed after) when svc and svr share
 * them, else all the points. A point's folds run in order on one
 * worker, which alone touches its accumulator, so the results do not
 * depend on the number of workers; the first failure is the first in
 * the serial order (point_acc.rank).
 */
static km_status run_generic(search_run *r, km_error *err)
{
    const km_search_spec *s = r->s;
    const km_problem *pb = r->pb;
    size_t m = pb->y ? pb->m : 1, d = pb->d, P = s->n_points;
    unsigned need = km_scoring_needs(s->scoring);
    int share = (s->algo == KM_ALGO_SVC || s->algo == KM_ALGO_SVR) &&
                s->pre.x == KM_SCALE_NONE && !s->pre.center_y;
    /* svc's nystrom and screened points compute their own kernel values */
    for (size_t p = 0; share && p < s->n_points; p++)
        share = ((const km_svm_params *)s->params)[p].solver ==
                KM_SVM_SOLVER_EXACT;
    gen_run g = {.r = r, .al = km_algo_of(s->algo),
                 .ps = km_algorithm_params_size(s->algo), .need = need,
                 .loo = s->cv.kind == KM_CV_LOO};
    if (need & KM_OUT_VALUES)
        g.pcols = m;
    else if (need & KM_OUT_INVERSE)
        g.pcols = d;
    size_t nw = r->threads > 1 ? (size_t)r->threads : 1;
    nw = nw < P ? nw : P;
    size_t *order = malloc(P * sizeof *order);
    size_t *leader = malloc(P * sizeof *leader);
    gen_ws *ws = calloc(nw, sizeof *ws);
    gen_worker *wk = calloc(nw, sizeof *wk);
    double *Kall = NULL;
    km_status st = KM_OK;
    if (!order || !leader || !ws || !wk) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for the search");
        goto out;
    }
    for (size_t t = 0; t < nw && st == KM_OK; t++) {
        st = ws_alloc(&ws[t], &g, err);
        wk[t] = (gen_worker){&g, &ws[t]};
    }
    if (st != KM_OK ||
        (st = group_points(r, share, order, leader, err)) != KM_OK)
        goto out;
    g.order = order;
    for (size_t oi = 0; oi < P; oi++)
        r->acc[order[oi]].rank = oi;
    for (size_t lo = 0, hi; lo < P && !atomic_load(&r->stop); lo = hi) {
        hi = lo + 1;
        if (share) { /* a group: its Gram */
            while (hi < P && leader[order[hi]] == order[lo])
                hi++;
            Kall = group_gram(r, order[lo], leader);
        } else {
            hi = P;
        }
        g.Kall = Kall;
        run_batch(&g, wk, nw, lo, hi);
        free(Kall);
        Kall = NULL;
    }
    if (atomic_load(&r->stop))
        st = km_error_set(err, r->hard, "%s", r->hard_msg);
    else
        st = progress(r, r->units, err);
out:
    for (size_t t = 0; ws && t < nw; t++)
        ws_free(&ws[t]);
    free(ws);
    free(wk);
    free(order);
    free(leader);
    free(Kall);
    return st;
}

/* ------------------------------------------------------------ krr */

/* Whether two resolved kernels compute the same function: the same type
 * and, of the parameters the type takes, the same values; parts alike. */
static int kernel_equal(const km_kernel *a, const km_kernel *b)
{
    if (a->type != b->type || a->n_parts != b->n_parts)
        return 0;
    const km_kernel_info *in = km_kernel_type_info(a->type);
    if (!in)
        return 0;
    if (((in->params & KM_KPARAM_GAMMA) && a->gamma != b->gamma) ||
        ((in->params & KM_KPARAM_DEGREE) && a->degree != b->degree) ||
        ((in->params & KM_KPARAM_COEF0) && a->coef0 != b->coef0))
        return 0;
    for (int i = 0; i < a->n_parts; i++) {
        double wa = a->weights ? a->weights[i] : 1.0;
        double wb = b->weights ? b->weights[i] : 1.0;
        if (((in->params & KM_KPARAM_WEIGHTS) && wa != wb) ||
            !kernel_equal(&a->parts[i], &b->parts[i]))
            return 0;
    }
    return 1;
}

/* Eigendecomposition in place: K (n x n, the lower triangle of a
 * row-major symmetric matrix) becomes V^T row-major (row j the unit
 * eigenvector of w[j], w ascending). */
static km_status eigen(double *K, size_t n, double *w, km_error *err)
{
    /* Row-major lower == column-major upper; LAPACK's column j (the
     * eigenvector j) is then row j of the row-major buffer. */
    lapack_int info = LAPACKE_dsyevd(LAPACK_COL_MAJOR, 'V', 'U',
                                     (lapack_int)n, K, (lapack_int)n, w);
    if (info == LAPACK_WORK_MEMORY_ERROR)
        return km_error_set(err, KM_ENOMEM, "out of memory for an "
                            "eigendecomposition of %zu x %zu", n, n);
    if (info > 0)
        return km_error_set(err, KM_ENOCONV, "the eigendecomposition of the "
                            "kernel matrix did not converge");
    if (info < 0)
        return km_error_set(err, KM_EINTERNAL, "dsyevd argument %d",
                            (int)-info);
    return KM_OK;
}

/* Points of one krr group, their alphas. */
typedef struct krr_group {
    const km_kernel *k; /* resolved */
    size_t *pts;
    size_t g;
} krr_group;

/* A failure st (message msg) of work that group gr's points share on
 * fold f (f < 0: on all rows): a point failure fails every one of them
 * and the search goes on (KM_OK); any other status ends it. */
static km_status group_failed(search_run *r, const krr_group *gr, long f,
                              km_status st, const char *msg, km_error *err)
{
    if (!is_point_failure(st))
        return km_error_set(err, st, "%s", msg);
    for (size_t a = 0; a < gr->g; a++)
        fail_point(r, gr->pts[a], f, st, msg);
    return KM_OK;
}

static double point_alpha(const km_search_spec *s, size_t p)
{
    return ((const km_krr_params *)s->params)[p].alpha;
}

/* Whether K + alpha I is positive definite by its smallest eigenvalue;
 * fails the point otherwise. */
static int eig_pd(search_run *r, size_t p, long f, double wmin, double alpha)
{
    if (wmin + alpha > 0)
        return 1;
    char msg[200];
    snprintf(msg, sizeof msg, "the kernel matrix plus alpha*I is not "
             "positive definite (smallest eigenvalue %g, alpha %g); use a "
             "larger params.alpha or a positive definite kernel", wmin, alpha);
    fail_point(r, p, f, KM_ENOTPD, msg);
    return 0;
}

/*
 * LOO and GCV in closed form for all alphas of group gr, from one
 * eigendecomposition K = V diag(w) V^T of the rows' Gram. With
 * G_a = diag(alpha / (w + alpha)):
 *   I - H       = V G_a V^T                   (H = K (K + alpha I)^-1)
 *   y - H y     = V G_a V^T y                 (n x m, all outputs)
 *   1 - H_ii    = sum_j V_ij^2 alpha / (w_j + alpha)
 *   LOO residual_i = (y - H y)_i / (1 - H_ii)
 *   GCV residual_i = (y - H y)_i / (tr(I - H) / n)
 * (the forms with alpha / (w + alpha), not 1 - w / (w + alpha), keep
 * small alphas free of cancellation). The n predictions y_i - residual_i
 * are scored together; with GCV, -neg_mean_squared_error is
 * n |y - Hy|^2 / (n - tr H)^2 (averaged over outputs), the generalised
 * cross-validation of Golub, Heath and Wahba.
 * Xs, Yc: the rows as the closed form sees them (preprocessed on all
 * rows), mu: the y-centering to add back (NULL: none).
 */
static km_status krr_closed_form(search_run *r, const krr_group *gr,
                                 const double *Xs, const double *Yc,
                                 km_error *err)
{
    const km_search_spec *s = r->s;
    const km_problem *pb = r->pb;
    size_t n = pb->n, d = pb->d, m = pb->m;
    int gcv = s->cv.kind == KM_CV_GCV;
    double t0 = km_now();
    double *K = malloc(n * n * sizeof *K), *w = malloc(n * sizeof *w);
    double *Q = malloc(n * m * sizeof *Q);
    size_t cb = gr->g < ALPHA_BATCH ? gr->g : ALPHA_BATCH;
    double *G = malloc(n * cb * sizeof *G), *B = malloc(n * cb * m * sizeof *B);
    double *R = malloc(n * cb * m * sizeof *R), *D = malloc(n * cb * sizeof *D);
    double *T = malloc(SQ_BLOCK * n * sizeof *T), *P = malloc(n * m * sizeof *P);
    km_status st = KM_OK;
    km_error e = {0};
    if (!K || !w || !Q || !G || !B || !R || !D || !T || !P) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for the closed-form "
                          "cross-validation of %zu rows", n);
        goto out;
    }
    if ((st = km_kernel_check_scale(gr->k, Xs, n, d, &e)) != KM_OK ||
        (st = km_gram_sym(gr->k, Xs, n, d, K, 0, &e)) != KM_OK ||
        (st = eigen(K, n, w, &e)) != KM_OK) {
        st = group_failed(r, gr, -1, st, e.message, err);
        goto out;
    }
    if ((st = progress(r, r->done + 0.9 * (double)(gr->g * r->n_splits),
                       err)) != KM_OK)
        goto out;
    const double *Vt = K;
    /* Q = V^T Y */
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)m,
                (int)n, 1.0, Vt, (int)n, Yc, (int)m, 0.0, Q, (int)m);
    for (size_t c0 = 0; c0 < gr->g; c0 += cb) {
        size_t nb = gr->g - c0 < cb ? gr->g - c0 : cb;
        for (size_t j = 0; j < n; j++)
            for (size_t c = 0; c < nb; c++) {
                double a = point_alpha(s, gr->pts[c0 + c]);
                double gj = a / (w[j] + a);
                G[j * nb + c] = gj;
                for (size_t o = 0; o < m; o++)
                    B[(j * nb + c) * m + o] = gj * Q[j * m + o];
            }
        /* R = V B: the residuals y - Hy of every alpha of the batch */
        cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)n,
                    (int)(nb * m), (int)n, 1.0, Vt, (int)n, B, (int)(nb * m),
                    0.0, R, (int)(nb * m));
        /* D = (V o V) G, squaring V^T a block of rows at a time */
        if (!gcv) {
            memset(D, 0, n * nb * sizeof *D);
            for (size_t j0 = 0; j0 < n; j0 += SQ_BLOCK) {
                size_t jb = n - j0 < SQ_BLOCK ? n - j0 : SQ_BLOCK;
                for (size_t t = 0; t < jb * n; t++)
                    T[t] = Vt[j0 * n + t] * Vt[j0 * n + t];
                cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)n,
                            (int)nb, (int)jb, 1.0, T, (int)n, G + j0 * nb,
                            (int)nb, 1.0, D, (int)nb);
            }
        }
        for (size_t c = 0; c < nb; c++) {
            size_t p = gr->pts[c0 + c];
            if (!eig_pd(r, p, -1, w[0], point_alpha(s, p)))
                continue;
            double trace = 0; /* tr(I - H) / n */
            if (gcv) {
                for (size_t j = 0; j < n; j++)
                    trace += G[j * nb + c];
                trace /= (double)n;
            }
            int bad = 0;
            for (size_t i = 0; i < n && !bad; i++) {
                double den = gcv ? trace : D[i * nb + c];
                bad = !(den > 0);
                for (size_t o = 0; o < m; o++)
                    P[i * m + o] = pb->y[i * m + o] -
                                   R[(i * nb + c) * m + o] / den;
            }
            if (bad) {
                fail_point(r, p, -1, KM_EPROBLEM, "a leave-one-out "
                           "denominator 1 - H_ii is not positive: the fit "
                           "interpolates; use a larger params.alpha");
                continue;
            }
            km_answers a = {.n = n, .m = m, .Y = pb->y, .P = P};
            if ((st = score(r, p, -1, &a, err)) != KM_OK)
                goto out;
        }
    }
out:
    {
        double each = (km_now() - t0) / (double)gr->g;
        for (size_t a = 0; a < gr->g; a++)
            r->acc[gr->pts[a]].seconds = each;
    }
    free(K);
    free(w);
    free(Q);
    free(G);
    free(B);
    free(R);
    free(D);
    free(T);
    free(P);
    if (st == KM_OK) {
        r->done += (double)(gr->g * r->n_splits);
        st = progress(r, r->done, err);
    }
    return st;
}

/*
 * KFOLD and PREDEFINED for one krr group: per split, the training block
 * Ktr and the test-by-training block Kte (gathered from the Gram of all
 * rows Kall, or, with x-preprocessing, computed from the split's scaled
 * rows), y centered on the training rows when asked; then for every
 * alpha C = (Ktr + alpha I)^-1 Ytr and the test predictions Kte C (+
 * the training mean), by one eigendecomposition of Ktr for all alphas
 * (g >= KRR_EIG_CHOLESKYS) or one Cholesky per alpha.
 */
static km_status krr_folds(search_run *r, const krr_group *gr, km_error *err)
{
    const km_search_spec *s = r->s;
    const km_problem *pb = r->pb;
    size_t n = pb->n, d = pb->d, m = pb->m;
    int scaled = s->pre.x != KM_SCALE_NONE, use_eig = gr->g >= KRR_EIG_CHOLESKYS;
    size_t cb = use_eig ? (gr->g < ALPHA_BATCH ? gr->g : ALPHA_BATCH) : 1;
    split sp;
    km_status st = split_alloc(&sp, pb, 0, err);
    if (st != KM_OK)
        return st;
    /* the largest training block and test-by-training block */
    size_t max_tr = 0, max_x = 0;
    {
        size_t *cnt = calloc(r->n_splits, sizeof *cnt);
        if (!cnt) {
            split_free(&sp);
            return km_error_set(err, KM_ENOMEM, "out of memory for the folds");
        }
        for (size_t i = 0; i < n; i++)
            if (r->fold[i] >= 0)
                cnt[r->fold[i]]++;
        for (size_t f = 0; f < r->n_splits; f++) {
            size_t ntr = n - cnt[f];
            max_tr = ntr > max_tr ? ntr : max_tr;
            max_x = cnt[f] * ntr > max_x ? cnt[f] * ntr : max_x;
        }
        free(cnt);
    }
    double *Kall = NULL, *Ktr = malloc(max_tr * max_tr * sizeof *Ktr);
    double *Kte = malloc(max_x * sizeof *Kte), *w = malloc(n * sizeof *w);
    double *Ytr = malloc(n * m * sizeof *Ytr), *Yte = malloc(n * m * sizeof *Yte);
    double *mu = malloc(m * sizeof *mu), *Q = malloc(n * m * sizeof *Q);
    double *B = malloc(n * cb * m * sizeof *B), *C = malloc(n * cb * m * sizeof *C);
    double *Pb = malloc(n * cb * m * sizeof *Pb), *P = malloc(n * m * sizeof *P);
    double *Kc = use_eig ? NULL : malloc(max_tr * max_tr * sizeof *Kc);
    double *Xtr = NULL, *Xte = NULL;
    km_error e = {0};
    int ok = Ktr && Kte && w && Ytr && Yte && mu && Q && B && C && Pb && P &&
             (use_eig || Kc);
    if (ok && scaled)
        ok = (Xtr = malloc(n * d * sizeof *Xtr)) &&
             (Xte = malloc(n * d * sizeof *Xte));
    if (ok && !scaled)
        ok = (Kall = malloc(n * n * sizeof *Kall)) != NULL;
    if (!ok) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for the folds of "
                          "%zu rows", n);
        goto out;
    }
    double t_shared = 0;
    if (!scaled) { /* one Gram of all rows serves every split */
        double t0 = km_now();
        if ((st = km_kernel_check_scale(gr->k, pb->X, n, d, &e)) != KM_OK ||
            (st = km_gram_sym(gr->k, pb->X, n, d, Kall, 1, &e)) != KM_OK) {
            if ((st = group_failed(r, gr, -1, st, e.message, err)) == KM_OK)
                r->done += (double)(gr->g * r->n_splits);
            goto out;
        }
        t_shared = km_now() - t0;
    }
    for (size_t f = 0; f < r->n_splits && st == KM_OK; f++) {
        double t0 = km_now();
        if ((st = progress(r, r->done, err)) != KM_OK)
            break;
        split_take(&sp, pb, r->fold, (long)f, 0);
        size_t ntr = sp.ntr, nte = sp.nte;
        /* the fold's preprocessing, learnt on its training rows as
         * km_fit's (km_pre_learn): x scaled, y centered on their mean */
        for (size_t a = 0; a < ntr; a++)
            memcpy(Ytr + a * m, pb->y + sp.tr[a] * m, m * sizeof *Ytr);
        for (size_t a = 0; a < nte; a++)
            memcpy(Yte + a * m, pb->y + sp.te[a] * m, m * sizeof *Yte);
        for (size_t a = 0; scaled && a < ntr; a++)
            memcpy(Xtr + a * d, pb->X + sp.tr[a] * d, d * sizeof *Xtr);
        km_pre_stats ps;
        memset(&ps, 0, sizeof ps);
        if (scaled || s->pre.center_y) {
            km_problem tp = {Xtr, ntr, d, Ytr, m, NULL, 0};
            st = km_pre_learn(&s->pre, &tp, &ps, &e);
        }
        /* row by row, so that a message names the row of X */
        for (size_t a = 0; st == KM_OK && scaled && a < ntr; a++)
            st = km_pre_transform(&ps, Xtr + a * d, 1, d, sp.tr[a],
                                  Xtr + a * d, &e);
        for (size_t a = 0; st == KM_OK && scaled && a < nte; a++)
            st = km_pre_transform(&ps, pb->X + sp.te[a] * d, 1, d, sp.te[a],
                                  Xte + a * d, &e);
        for (size_t o = 0; o < m; o++)
            mu[o] = ps.y_mean ? ps.y_mean[o] : 0;
        km_pre_stats_cleanup(&ps);
        if (st == KM_EINVAL) /* a row scaled out of the doubles: the data's */
            st = KM_EPROBLEM;
        /* the blocks */
        if (st == KM_OK && scaled &&
            (st = km_kernel_check_scale(gr->k, Xtr, ntr, d, &e)) == KM_OK &&
            (st = km_gram_sym(gr->k, Xtr, ntr, d, Ktr, 0, &e)) == KM_OK)
            st = km_gram_cross(gr->k, Xte, nte, Xtr, ntr, d, Kte, ntr, &e);
        if (st != KM_OK) {
            if ((st = group_failed(r, gr, (long)f, st, e.message, err)) !=
                KM_OK)
                break;
            r->done += (double)gr->g;
            continue;
        }
        if (!scaled) {
            for (size_t a = 0; a < ntr; a++) {
                const double *row = Kall + sp.tr[a] * n;
                for (size_t b = 0; b <= a; b++)
                    Ktr[a * ntr + b] = row[sp.tr[b]];
            }
            for (size_t a = 0; a < nte; a++) {
                const double *row = Kall + sp.te[a] * n;
                for (size_t b = 0; b < ntr; b++)
                    Kte[a * ntr + b] = row[sp.tr[b]];
            }
        }
        for (size_t a = 0; a < ntr; a++)
            for (size_t o = 0; o < m; o++)
                Ytr[a * m + o] -= mu[o];

        if (use_eig) {
            if ((st = eigen(Ktr, ntr, w, &e)) != KM_OK) {
                if ((st = group_failed(r, gr, (long)f, st, e.message, err)) !=
                    KM_OK)
                    break;
                r->done += (double)gr->g;
                continue;
            }
            const double *Vt = Ktr;
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)ntr,
                        (int)m, (int)ntr, 1.0, Vt, (int)ntr, Ytr, (int)m, 0.0,
                        Q, (int)m);
            for (size_t c0 = 0; c0 < gr->g; c0 += cb) {
                size_t nb = gr->g - c0 < cb ? gr->g - c0 : cb;
                for (size_t j = 0; j < ntr; j++)
                    for (size_t c = 0; c < nb; c++) {
                        double a = point_alpha(s, gr->pts[c0 + c]);
                        for (size_t o = 0; o < m; o++)
                            B[(j * nb + c) * m + o] = Q[j * m + o] / (w[j] + a);
                    }
                /* C = V B, then the predictions Kte C */
                cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)ntr,
                            (int)(nb * m), (int)ntr, 1.0, Vt, (int)ntr, B,
                            (int)(nb * m), 0.0, C, (int)(nb * m));
                cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans,
                            (int)nte, (int)(nb * m), (int)ntr, 1.0, Kte,
                            (int)ntr, C, (int)(nb * m), 0.0, Pb,
                            (int)(nb * m));
                for (size_t c = 0; c < nb; c++) {
                    size_t p = gr->pts[c0 + c];
                    if (!eig_pd(r, p, (long)f, w[0], point_alpha(s, p)))
                        continue;
                    for (size_t a = 0; a < nte; a++)
                        for (size_t o = 0; o < m; o++)
                            P[a * m + o] = Pb[(a * nb + c) * m + o] + mu[o];
                    km_answers an = {.n = nte, .m = m, .Y = Yte, .P = P};
                    if ((st = score(r, p, (long)f, &an, err)) != KM_OK)
                        goto out;
                }
            }
            r->done += (double)gr->g;
        } else {
            for (size_t c = 0; c < gr->g && st == KM_OK; c++) {
                size_t p = gr->pts[c];
                if (r->acc[p].failed) {
                    r->done += 1;
                    continue;
                }
                memcpy(Kc, Ktr, ntr * ntr * sizeof *Kc);
                sub_ctx sc = {r, r->done};
                km_fit_control sub = {sub_progress, &sc};
                st = km_krr_solve(Kc, ntr, point_alpha(s, p), Ytr, m, C,
                                  "the kernel matrix", r->ctl ? &sub : NULL,
                                  0.0, 1.0, &e);
                if (st == KM_OK && !km_all_finite(C, ntr * m))
                    st = km_error_set(&e, KM_ENOTPD, "the solve gave "
                                      "non-finite coefficients: the kernel "
                                      "matrix is numerically singular; use a "
                                      "larger params.alpha");
                r->done += 1;
                if (st != KM_OK) {
                    if ((st = point_failed(r, p, (long)f, st, e.message,
                                           err)) != KM_OK)
                        break;
                    continue;
                }
                cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans,
                            (int)nte, (int)m, (int)ntr, 1.0, Kte, (int)ntr, C,
                            (int)m, 0.0, P, (int)m);
                for (size_t a = 0; a < nte; a++)
                    for (size_t o = 0; o < m; o++)
                        P[a * m + o] += mu[o];
                km_answers an = {.n = nte, .m = m, .Y = Yte, .P = P};
                if ((st = score(r, p, (long)f, &an, err)) != KM_OK)
                    goto out;
            }
        }
        double each = (km_now() - t0 + t_shared / (double)r->n_splits) /
                      (double)gr->g;
        for (size_t a = 0; a < gr->g; a++)
            r->acc[gr->pts[a]].seconds += each;
    }
out:
    split_free(&sp);
    free(Kall);
    free(Ktr);
    free(Kte);
    free(w);
    free(Ytr);
    free(Yte);
    free(mu);
    free(Q);
    free(B);
    free(C);
    free(Pb);
    free(P);
    free(Kc);
    free(Xtr);
    free(Xte);
    return st;
}

/* krr: the points grouped by resolved kernel, each group by closed form
 * (LOO, GCV) or by shared Grams (KFOLD, PREDEFINED). */
static km_status run_krr(search_run *r, km_error *err)
{
    const km_search_spec *s = r->s;
    const km_problem *pb = r->pb;
    size_t P = s->n_points, n = pb->n, d = pb->d, m = pb->m;
    km_kernel *rk = calloc(P, sizeof *rk);
    size_t *leader = malloc(P * sizeof *leader), *pts = malloc(P * sizeof *pts);
    double *Xs = NULL, *Yc = NULL;
    km_status st = KM_OK;
    size_t nk = 0;
    if (!rk || !leader || !pts) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for the search");
        goto out;
    }
    for (; nk < P; nk++) {
        if ((st = km_kernel_copy(&rk[nk], &s->kernels[nk], err)) != KM_OK)
            goto out;
        km_kernel_resolve(&rk[nk], d);
    }
    int closed = s->cv.kind == KM_CV_LOO || s->cv.kind == KM_CV_GCV;
    if (closed) { /* the closed form preprocesses on all rows, once */
        int scaled = s->pre.x != KM_SCALE_NONE;
        if (!(Yc = malloc(n * m * sizeof *Yc)) ||
            (scaled && !(Xs = malloc(n * d * sizeof *Xs)))) {
            st = km_error_set(err, KM_ENOMEM, "out of memory for the search");
            goto out;
        }
        km_pre_stats ps;
        km_error e = {0};
        st = km_pre_learn(&s->pre, pb, &ps, &e);
        if (st == KM_OK && scaled)
            st = km_pre_transform(&ps, pb->X, n, d, 0, Xs, &e);
        for (size_t i = 0; st == KM_OK && i < n * m; i++)
            Yc[i] = pb->y[i] - (ps.y_mean ? ps.y_mean[i % m] : 0);
        km_pre_stats_cleanup(&ps);
        if (st == KM_ENOMEM) {
            km_error_set(err, st, "%s", e.message);
            goto out;
        }
        if (st != KM_OK) { /* the data's: every point fails */
            for (size_t p = 0; p < P; p++)
                fail_point(r, p, -1, KM_EPROBLEM, e.message);
            st = KM_OK;
            goto out;
        }
    }
    /* groups in the order of their first point */
    for (size_t p = 0; p < P; p++) {
        leader[p] = p;
        for (size_t q = 0; q < p; q++)
            if (leader[q] == q && kernel_equal(&rk[p], &rk[q])) {
                leader[p] = q;
                break;
            }
    }
    for (size_t p = 0; p < P && st == KM_OK; p++) {
        if (leader[p] != p)
            continue;
        krr_group gr = {&rk[p], pts, 0};
        for (size_t q = p; q < P; q++)
            if (leader[q] == p)
                pts[gr.g++] = q;
        st = closed ? krr_closed_form(r, &gr, Xs ? Xs : pb->X, Yc, err)
                    : krr_folds(r, &gr, err);
    }
out:
    for (size_t i = 0; i < nk; i++)
        km_kernel_cleanup(&rk[i]);
    free(rk);
    free(leader);
    free(pts);
    free(Xs);
    free(Yc);
    return st;
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
    if (s->algo == KM_ALGO_KRR)
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
    st = progress(&r, 0, err);
    if (st == KM_OK)
        st = krr_engine(s) ? run_krr(&r, err) : run_generic(&r, err);
    if (st == KM_OK)
        st = progress(&r, r.units, err);
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

static size_t add_sat(size_t a, size_t b)
{
    return a + b < a ? SIZE_MAX : a + b;
}

static size_t mul_sat(size_t a, size_t b)
{
    size_t p;
    return __builtin_mul_overflow(a, b, &p) ? SIZE_MAX : p;
}

static size_t search_bytes(const km_search_spec *s, const km_problem *pb)
{
    if (!s || !pb)
        return 0;
    size_t n = pb->n, d = pb->d, m = pb->y ? pb->m : 1, P = s->n_points;
    size_t k = pb->labels ? pb->n_classes : 0, D = sizeof(double);
    /* result arrays, per-point state, folds and the split's indices */
    size_t b = mul_sat(P, 3 * D + sizeof(point_acc));
    b = add_sat(b, mul_sat(n, sizeof(int) + 2 * sizeof(size_t)));
    if (krr_engine(s)) {
        size_t nn = mul_sat(n, n);
        size_t cb = P < ALPHA_BATCH ? P : ALPHA_BATCH;
        b = add_sat(b, mul_sat(P, sizeof(km_kernel) + 2 * sizeof(size_t)));
        if (s->cv.kind == KM_CV_LOO || s->cv.kind == KM_CV_GCV) {
            /* K (then V), dsyevd's workspace 1 + 6n + 2n^2, the
             * eigenvalues, Q, the batch's G, B, R, D, a block of V
             * squared, the predictions, the preprocessed copies */
            b = add_sat(b, mul_sat(D, add_sat(mul_sat(3, nn), 7 * n + 1)));
            b = add_sat(b, mul_sat(D, mul_sat(n, 2 * m + 2 * cb * m + 2 * cb +
                                              SQ_BLOCK + d + m)));
        } else {
            /* the Gram of all rows (or the scaled rows), the training
             * and test blocks, and either dsyevd's workspace or the
             * Cholesky copy, plus vectors */
            /* (bounds: a training block of at most n rows, a test block
             * nte x (n - nte) of at most n^2 / 4) */
            int eig = P >= KRR_EIG_CHOLESKYS;
            b = add_sat(b, mul_sat(D, mul_sat(eig ? 4 : 3, nn)));
            b = add_sat(b, mul_sat(D, nn / 4));
            b = add_sat(b, mul_sat(D, mul_sat(n, 4 * m + 3 * cb * m + 2 * d +
                                              8)));
        }
        return b;
    }
    /* generic: svc's and svr's shared Gram of all rows (when it takes at
     * most half of the smallest cache_mb), the subset copies, the
     * largest fold fit, the answers */
    if ((s->algo == KM_ALGO_SVC || s->algo == KM_ALGO_SVR) && s->params &&
        s->pre.x == KM_SCALE_NONE && !s->pre.center_y) {
        double budget = HUGE_VAL, gram = (double)n * (double)n * (double)D;
        for (size_t p = 0; p < P; p++) {
            double c = ((const km_svm_params *)s->params)[p].cache_mb *
                       1048576.0;
            budget = c < budget ? c : budget;
        }
        if (gram <= budget / 2)
            b = add_sat(b, mul_sat(D, mul_sat(n, n)));
    }
    /* per worker (s->threads of them, at most the points): a split's
     * indices (the first worker's are counted above) and copies, the
     * largest fold fit, the answers */
    size_t T = s->threads > 1 ? (size_t)s->threads : 1;
    T = T < P ? T : (P ? P : 1);
    size_t w = mul_sat(D, mul_sat(n, 2 * (d + (pb->y ? m : 0))));
    w = add_sat(w, mul_sat(n, 2 * sizeof(int)));
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
            al->cv_params(fp.b, s->scoring);
            pp = fp.b;
        }
        size_t f = km_algorithm_fit_bytes(s->algo, pp, pb);
        most = f > most ? f : most;
    }
    w = add_sat(w, most);
    /* test and pooled answers: values or reconstructions, labels,
     * probabilities twice, projections */
    w = add_sat(w, mul_sat(D, mul_sat(n, 2 * (m > d ? m : d) + 3 * k + d)));
    b = add_sat(b, mul_sat(T, w));
    return add_sat(b, mul_sat(T - 1, mul_sat(n, 2 * sizeof(size_t))));
}

/* ------------------------------------------------------------ auto */

/*
 * krr points of solver auto are resolved once, on the whole problem
 * (km_krr_resolve_solver under km_memory_budget()), before anything else:
 * every fold of a point and the refit of the best (km_fit of its params
 * on the same rows, which resolves the same way) run the same solver, and
 * the estimate counts that solver's fits. *r is s, or s with params
 * copied into *own (the caller frees it) and the auto points resolved.
 */
static km_status resolve_auto(const km_search_spec *s, const km_problem *pb,
                              km_search_spec *r, km_krr_params **own,
                              km_error *err)
{
    *own = NULL;
    if (!s)
        return KM_OK;
    *r = *s;
    if (!pb || s->algo != KM_ALGO_KRR || !s->params ||
        s->n_points == 0 || s->n_points > KM_SEARCH_MAX_POINTS)
        return KM_OK;
    const km_krr_params *p = s->params;
    size_t i = 0;
    while (i < s->n_points && p[i].solver != KM_KRR_SOLVER_AUTO)
        i++;
    if (i == s->n_points)
        return KM_OK;
    km_krr_params *q = malloc(s->n_points * sizeof *q);
    if (!q)
        return km_error_set(err, KM_ENOMEM, "out of memory for the search");
    size_t budget = km_memory_budget(), m = pb->y ? pb->m : 1;
    for (i = 0; i < s->n_points; i++) {
        q[i] = p[i];
        q[i].solver = km_krr_resolve_solver(&p[i], pb->n, pb->d, m, budget);
    }
    r->params = q;
    *own = q;
    return KM_OK;
}

km_status km_search_check(const km_search_spec *s, const km_problem *pb,
                          km_error *err)
{
    km_search_spec r;
    km_krr_params *own;
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
    km_krr_params *own;
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
    km_krr_params *own;
    if (resolve_auto(s, pb, &r, &own, NULL) != KM_OK)
        return SIZE_MAX;
    size_t b = search_bytes(s ? &r : NULL, pb);
    free(own);
    return b;
}
