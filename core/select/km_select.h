/*
 * km_select.h - model selection (select/): the generic fit km_fit,
 * preprocessing's fit, scores and the hyperparameter search.
 *
 * Part of libkm's public interface; include km.h, which includes every
 * area. Conventions and thread-safety as km.h says.
 */
#ifndef KM_SELECT_H
#define KM_SELECT_H

#include "../model/km_model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------- model selection */

/* Preprocessing's spec (KM_SCALE_MAP, km_preprocess) and a fit request
 * as bytes are model/km_fit.h's; what a model keeps of its preprocessing
 * and of a search (KM_SCORING_MAP, KM_CV_MAP, km_search_table) are
 * model/km_model.h's: model/ reads and writes them. Here: their fits,
 * the scores and the search. */

/* The generic fit (km_train.c): fits as the typed function does
 * (km_krr_fit, ...); caller owns *out. pre (may be NULL: none) is the
 * preprocessing, learnt from pb and kept in the model (km_preprocess,
 * km_fit.h); the typed fits do none.
 * km_fit adds the training figure "training_score": the algorithm's
 * default scoring (km_scoring_default) of the fitted model on pb, as
 * km_model_score computes it. It costs one predict over the training
 * rows (kpca: one projection and one inverse map of them), O(n n_sv d)
 * for svc and svr, O(n^2 d) for krr and kpca: small beside a krr or kpca
 * fit, but not beside an svc fit of many classes (letter, 20000 rows,
 * 26 classes: 0.75 s on top of a 1.44 s fit), whose solver never sees
 * most rows against most pairs.
 * No figure for a kpca model without the inverse map, nor when the
 * score is not a number (r2 of one row). */
km_status km_fit(km_algorithm a, const km_kernel *k, const void *params,
                 const km_preprocess *pre, const km_problem *pb,
                 const km_fit_control *ctl, km_model **out,
                 km_error *err) KM_MUST_CHECK;

/* The description of a fit's preprocess object (km_param_set, km_base.h):
 * a row per member a request may give (scale, center_y), then read-only
 * rows for the statistics a model shows (x_shift, x_scale, y_mean); the
 * struct is a km_preprocess, all zero by default. */
const km_param_set *km_preprocess_params(void);

/* Bytes a fit's preprocessing adds to the algorithm's own peak
 * (km_algorithm_fit_bytes): the scaled copy of X, the centered copy of y
 * and the statistics; 0 for none (pre NULL or nothing asked). */
size_t km_preprocess_fit_bytes(const km_preprocess *pre,
                               const km_problem *pb);

/* Scoring: what a search maximises (KM_SCORING_MAP, km_model.h, says
 * each). */
extern const km_choices km_scoring_choices;

/* The name ("r2", ...); NULL if invalid. */
const char *km_scoring_name(km_scoring s);
/* Returns 0 and sets *s on success, -1 if unknown. */
int km_scoring_parse(const char *name, km_scoring *s);
/* The scoring a search of a uses when none is named, by what a answers
 * (km_algorithm_outputs): r2 for values (krr, svr, gpr), accuracy for
 * labels (svc, klr), neg_reconstruction_error for projections (kpca);
 * KM_SCORING_COUNT for an algorithm that answers none of these (kkmeans)
 * and for an invalid a. */
km_scoring km_scoring_default(km_algorithm a);
/* KM_EINVAL naming the scoring when it does not apply to a with params
 * ("scoring neg_log_loss needs params.probability"; "scoring accuracy
 * applies to svc, not krr"). params (a's own struct) may be NULL: then
 * only the algorithm is checked. */
km_status km_scoring_check(km_scoring s, km_algorithm a, const void *params,
                           km_error *err) KM_MUST_CHECK;

/* Regression figures of predictions P against targets Y (n x m, n >= 1),
 * as sklearn.metrics r2_score (1 when y is constant and predicted
 * exactly, else 0 for a constant y), mean_squared_error and
 * mean_absolute_error, each averaged over the m outputs. r2 is NAN for
 * n = 1, as sklearn's (not defined with fewer than two samples). y
 * counts as constant when all its values are equal. KM_EINVAL for a
 * y that is not finite, KM_EPROBLEM for a prediction that is not. */
typedef struct km_regression_scores {
    double r2, mse, mae;
} km_regression_scores;
km_status km_score_regression(const double *Y, const double *P, size_t n,
                              size_t m, km_regression_scores *out,
                              km_error *err) KM_MUST_CHECK;

/* Classification figures of predicted class indices pred against truth
 * (n each, indices in [0, k)), as sklearn.metrics: accuracy_score,
 * balanced_accuracy_score (mean recall over the classes present in
 * truth), precision and recall per class (0 where undefined, sklearn's
 * zero_division), confusion_matrix (row: true class, column: predicted);
 * log_loss from proba (n x k rows, or NULL: log_loss is NAN) with
 * probabilities clipped to [eps, 1 - eps], eps = DBL_EPSILON, and rows
 * renormalised, as sklearn's log_loss(eps="auto"). Caller owns the arrays:
 * km_class_scores_cleanup. */
typedef struct km_class_scores {
    size_t k;
    double accuracy, balanced_accuracy, log_loss;
    double *precision, *recall; /* k each */
    uint64_t *confusion;        /* k x k, row-major */
} km_class_scores;
km_status km_score_classes(const int *truth, const int *pred,
                           const double *proba, size_t n, size_t k,
                           km_class_scores *out, km_error *err) KM_MUST_CHECK;
void km_class_scores_cleanup(km_class_scores *s);

/* The adjusted Rand index of two labelings of n rows (any ints >= 0;
 * a clustering's labels against the truth), as
 * sklearn.metrics.adjusted_rand_score: from the pair confusion matrix in
 * exact integers, 1 when they agree up to renaming (also for n <= 1).
 * KM_EINVAL for a negative label. */
km_status km_score_adjusted_rand(const int *a, const int *b, size_t n,
                                 double *out, km_error *err) KM_MUST_CHECK;

/* The score s of model m on the problem pb (its X and its y or labels,
 * in the model's classes; kpca: X only), through the model's
 * preprocessing: km_predict (krr, svr), km_predict_labels and, for
 * neg_log_loss, probabilities (svc), projection then KM_OUT_INVERSE
 * (kpca). KM_EINVAL as km_scoring_check, for X of another feature
 * count, y of another output count or labels out of range;
 * KM_ECONFLICT when m was fitted without what s needs (probabilities,
 * the inverse map). */
km_status km_model_score(const km_model *m, km_scoring s,
                         const km_problem *pb, double *out,
                         km_error *err) KM_MUST_CHECK;

/* Cross-validation: how the rows are split into train and test folds
 * (KM_CV_MAP, km_model.h, says each kind). */
extern const km_choices km_cv_choices;
/* The name (KM_CV_MAP: the search metadata's "cv"); NULL if invalid. */
const char *km_cv_kind_name(km_cv_kind k);

typedef struct km_cv {
    km_cv_kind kind;
    size_t folds;         /* KFOLD: 2 .. n; PREDEFINED: set by the caller
                             as 1 + the largest test_fold */
    int shuffle;          /* KFOLD */
    uint64_t seed;        /* KFOLD with shuffle */
    int stratified;       /* KFOLD, classification only */
    const int *test_fold; /* PREDEFINED: n entries, borrowed */
} km_cv;

/*
 * A search: n_points candidates of one algorithm, each a kernel and a
 * params struct (params: n_points structs of km_algorithm_params_size(a)
 * bytes, one after the other), all scored by cross-validation with the
 * same folds and preprocessing (fitted on each fold's training rows
 * only, as a scikit-learn Pipeline inside GridSearchCV). The fold fits
 * leave out what only a kept model needs: the training score, and svc's
 * params.probability (Platt scaling's internal cross-validation) unless
 * the scoring reads probabilities (neg_log_loss); the scores are the same.
 */
typedef struct km_search_spec {
    km_algorithm algo;
    km_preprocess pre;
    km_scoring scoring;
    km_cv cv;
    size_t n_points;
    const km_kernel *kernels;
    const void *params;
    int threads; /* the most points run at once (0 or 1: one); see below */
} km_search_spec;

/* Threads of a search. Every algorithm but krr (the generic engine) fits its
 * points on T = min(ctl->threads, spec->threads) threads (each 0 or 1
 * meaning one; ctl NULL: one): the calling thread and T - 1 it starts.
 * svc and svr points that share one Gram of all rows (below) are run
 * group by group, each group's Gram computed before its points are
 * handed out, so one Gram is held at a time; each worker runs a point's
 * folds in order with its own buffers, so the results are the same
 * (bit for bit) whatever T. spec->threads is there for the memory:
 * km_search_bytes counts that many workers' buffers and fold fits, so
 * a caller that admits a search by it passes the same spec to the run,
 * and ctl->threads can only lower T. krr's engine runs on the calling
 * thread (its work is LAPACK's and BLAS's, threaded there). */

/* Per point: the mean and (population) standard deviation of its fold
 * scores, as GridSearchCV's mean_test_score and std_test_score (LOO
 * and GCV: the pooled score, std 0), and the seconds its fits took
 * (mean per fold; closed-form sweeps share theirs among the points:
 * a krr LOO or GCV point gets its equal share of its kernel's whole
 * sweep). best: the first point of highest mean. n_splits: KFOLD and
 * PREDEFINED folds, LOO n, GCV 1 (the one fit on all rows).
 *
 * A point whose fit fails on a fold because of its data or parameters
 * (KM_EPROBLEM, KM_ENOTPD, KM_ENOCONV: say a tiny alpha on a kernel that
 * is not positive definite), or whose score is not a finite number (r2
 * of a fold of one test row is not defined, as km_score_regression's),
 * fails alone, as scikit-learn's error_score=nan makes it lose: its mean
 * is KM_SEARCH_FAILED_SCORE (-DBL_MAX, finite so that the record and
 * JSON hold it; no real score is that low) and its std 0, and it is
 * never best while another point succeeds. When every point fails the
 * search fails with the first failure's status, its message naming the
 * point and fold ("points[3], cv fold 1: ..."). Other statuses
 * (KM_ENOMEM, KM_ECANCELLED, ...) end the search.
 *
 * krr's closed forms (LOO, GCV; K = Q T Q^T, one reduction to
 * tridiagonal form per kernel setting, then tridiagonal solves per
 * alpha): the residuals y - Hy = alpha (K + alpha I)^-1 y of
 * H = K (K + alpha I)^-1, 1 - H_ii = alpha ((K + alpha I)^-1)_ii, the
 * LOO residual (y - Hy)_i / (1 - H_ii) and the GCV residual
 * (y - Hy)_i / (1 - tr H / n) (H_ii replaced by its mean), so that
 * GCV's neg_mean_squared_error is minus n |y - Hy|^2 / (n - tr H)^2
 * (Golub, Heath and Wahba; averaged over outputs; scikit-learn's
 * RidgeCV "gcv" mode is the LOO one). The scoring is applied to the n
 * predictions y_i - residual_i. The closed form needs one K: with
 * preprocessing its statistics (x scaling, and center_y's mean) are
 * learnt once on all rows, not per left-out row, so
 * LOO with center_y means "y centered on all rows", not refits that each
 * center on n - 1 rows. KFOLD and PREDEFINED learn them per fold as
 * scikit-learn's Pipeline does. */
#define KM_SEARCH_FAILED_SCORE (-1.7976931348623157e308)
typedef struct km_search_result {
    size_t n_points, n_splits;
    double *mean, *std, *fit_seconds;
    size_t best;
} km_search_result;

/* Checks the spec against pb (KM_EINVAL naming the field: no points,
 * a point's kernel or params, the scoring, GCV for another algorithm
 * than krr; KM_EPROBLEM: more folds than rows, a stratified fold count
 * above the smallest class's size, an empty fold or one that leaves
 * nothing, or one class, to train on), then runs it. Progress goes over
 * every (point, fold) fit; ctl may cancel (between fits, and inside
 * them as their own progress allows; krr's eigendecompositions cannot be
 * interrupted: a cancel is honoured after one). On several threads a
 * cancel, or a status that ends the search, stops every worker at its
 * next fit or progress report; the first such status is returned.
 * Caller owns out's arrays (km_search_result_cleanup, also on failure). */
km_status km_search(const km_search_spec *s, const km_problem *pb,
                    const km_fit_control *ctl, km_search_result *out,
                    km_error *err) KM_MUST_CHECK;
void km_search_result_cleanup(km_search_result *r);
/* The checks km_search makes before any work, alone (the folds are made
 * and checked, no fit is run): so a caller can refuse a search before
 * queueing it. */
km_status km_search_check(const km_search_spec *s, const km_problem *pb,
                          km_error *err) KM_MUST_CHECK;
/* Peak bytes of km_search (admission control), for s->threads workers
 * (see above). */
size_t km_search_bytes(const km_search_spec *s, const km_problem *pb);

/* ---------------------------------------------------- drift (km_drift.c) */

/*
 * A kernel two-sample test (Gretton et al., "A Kernel Two-Sample Test",
 * JMLR 2012) of rows X (nx) against rows Y (ny), each of d doubles as
 * km_gram_sym takes them (strings too).
 *
 * km_mmd2: the unbiased statistic, the U-statistic
 *   MMD2 = sum_{i!=j} k(x_i,x_j) / (nx (nx-1))
 *        + sum_{i!=j} k(y_i,y_j) / (ny (ny-1))
 *        - 2 sum_{i,j} k(x_i,y_j) / (nx ny),
 * nx, ny >= 2 (KM_EINVAL naming the sample otherwise). One Gram of the
 * pooled N = nx + ny rows.
 */
km_status km_mmd2(const km_kernel *k, const double *X, size_t nx,
                  const double *Y, size_t ny, size_t d, double *out,
                  km_error *err) KM_MUST_CHECK;

/*
 * km_mmd_test: km_mmd2 and its permutation p-value, reusing the pooled
 * Gram K: p = (1 + #{b : T_b >= T}) / (1 + B) over B permutations.
 * Permutation b relabels the pooled rows: an index array p, 0 .. N-1 at
 * first and kept from one permutation to the next, gets
 *   for i in 0 .. nx-1: swap p[i], p[i + km_rng_below(r, N - i)]
 * with one km_rng r seeded seed, and p[0 .. nx-1] are X's rows. The
 * statistics of KM_MMD_BATCH permutations at a time are quadratic forms
 * through one product K U (U: their 0/1 indicators of X's rows, N x
 * batch): with q = a'Ka, s = a'K1, t = a'diag(K), T = 1'K1 and
 * tr = trace K, the sums are XX = q - t, YY = T - 2s + q - (tr - t),
 * XY = s - q. A permutation counts when T_b >= T - 1e-12 max_i K_ii
 * (ties within rounding count). Progress after each batch (ctl may be
 * NULL; a cancel ends with KM_ECANCELLED). B in 1 ..
 * KM_DRIFT_MAX_PERMUTATIONS.
 */
#define KM_MMD_BATCH 64
#define KM_DRIFT_MAX_PERMUTATIONS 100000
km_status km_mmd_test(const km_kernel *k, const double *X, size_t nx,
                      const double *Y, size_t ny, size_t d, size_t B,
                      uint64_t seed, const km_fit_control *ctl, double *mmd2,
                      double *p_value, km_error *err) KM_MUST_CHECK;
/* Bytes km_mmd_test holds at most: the pooled rows, K and two N x batch
 * blocks. */
size_t km_mmd_test_bytes(size_t nx, size_t ny, size_t d);

/*
 * The median heuristic: gamma = 1 / (2 med^2), med the median of the
 * Euclidean distances |x_i - x_j| over the n (n-1) / 2 pairs i < j of X
 * (n rows of d numbers; numpy's median: the mean of the two middle ones
 * of an even count); when that median is 0, the median of the positive
 * distances; 1 when no distance is positive or n < 2.
 */
double km_median_gamma(const double *X, size_t n, size_t d);

/*
 * Drift of a model's inputs: km_mmd_test of its drift reference
 * (km_model_reference, the raw training rows it keeps) against Y (ny raw
 * rows of the model's n_features doubles, as predicts take them), both
 * through the model's preprocessing first. The kernel is the model's own
 * when km_kernel_characteristic; else an rbf of km_median_gamma on the
 * (preprocessed) reference. KM_ECONFLICT naming why for a precomputed
 * model, one without a reference (a file older than format version 8:
 * refit it), and a non-characteristic kernel on strings (there is no rbf
 * of strings); KM_EINVAL for Y not the model's input or fewer than 2
 * rows, or permutations outside 1 .. KM_DRIFT_MAX_PERMUTATIONS.
 */
typedef struct km_drift_result {
    double mmd2, p_value;
    size_t n_reference, n_recent, permutations;
    uint64_t seed;
    int own_kernel;            /* the model's own kernel was used */
    km_kernel_type kernel;     /* the kernel used: the model's type, or rbf */
    double gamma;              /* the rbf's gamma when not own (else 0) */
} km_drift_result;
#define KM_DRIFT_PERMUTATIONS 200 /* a default for callers */
km_status km_drift(const km_model *m, const double *Y, size_t ny,
                   size_t permutations, uint64_t seed,
                   const km_fit_control *ctl, km_drift_result *out,
                   km_error *err) KM_MUST_CHECK;
/* Bytes km_drift holds at most for ny recent rows of m. */
size_t km_drift_bytes(const km_model *m, size_t ny);

#ifdef __cplusplus
}
#endif
#endif /* KM_SELECT_H */
