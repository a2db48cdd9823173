/*
 * km_select.h - model selection: preprocessing, scores and the hyperparameter
 * search (select/).
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

/*
 * Preprocessing: what a fit does to its data before the algorithm sees
 * them. The statistics are learnt from the training rows and kept in the
 * model, so that km_predict, km_predict_labels and km_model_score apply
 * them to every input exactly as at fit time (the typed predicts,
 * km_krr_predict and the rest, work in the model's own space and do not).
 *   x         KM_SCALE_STANDARDIZE: (x - mean) / std per feature, std
 *             the population one (ddof 0), 1 for a constant feature (as
 *             scikit-learn's StandardScaler);
 *             KM_SCALE_MINMAX: to [-1, 1] per feature, as
 *             scikit-learn's MinMaxScaler(feature_range=(-1, 1)) (a
 *             constant feature maps to -1) and LIBSVM's svm-scale.
 *   center_y  regression only (models that answer KM_OUT_VALUES): the
 *             fit sees y - mean(y) (per output); predictions add the
 *             mean back: an unpenalised intercept.
 * A kpca model's inverse map answers in the original units. y_mean is
 * added to KM_OUT_VALUES answers only: scores (svr's decision values)
 * stay in the model's space.
 */
#define KM_SCALE_MAP(X)                                                      \
    X(KM_SCALE_NONE, "none")                                                 \
    X(KM_SCALE_STANDARDIZE, "standardize")                                   \
    X(KM_SCALE_MINMAX, "minmax")
typedef enum {
    KM_SCALE_MAP(KM_CHOICE_ENUM)
    KM_SCALE_COUNT
} km_scale;
extern const km_choices km_scale_choices;

typedef struct km_preprocess {
    km_scale x;
    int center_y;
} km_preprocess;

/* The name (KM_SCALE_MAP); NULL if invalid. */
const char *km_scale_name(km_scale s);
/* Returns 0 and sets *s on success, -1 if unknown. */
int km_scale_parse(const char *name, km_scale *s);
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

/* Rows per block of the scaled copy of X a preprocessed model predicts
 * through (about 1 MiB of doubles: 2^17 / d rows, at least one): a batch
 * of more rows is answered block by block. */
size_t km_pre_block_rows(size_t d);

/*
 * What a model learnt of its preprocessing (borrowed views, valid while
 * the model lives). spec is what was asked ({KM_SCALE_NONE, 0} for a
 * model fitted without, and for every model of format version 1).
 * x' = (x - x_shift) / x_scale per feature (n_features each; NULL when
 * spec.x is NONE); prediction = model value + y_mean (n_outputs; NULL
 * without center_y).
 */
typedef struct km_preprocess_view {
    km_preprocess spec;
    const double *x_shift, *x_scale;
    const double *y_mean;
} km_preprocess_view;
km_preprocess_view km_model_preprocess(const km_model *m);

/*
 * A fit request as bytes (km_request.c): the algorithm, its params, the
 * kernel, the preprocessing and the problem's X and Y, with a CRC-32. The
 * daemon writes it to a staging file that the MPI worker (kmserve-mpi)
 * reads and fits with km_fit. Only krr, gpr and kpca (params without
 * pointers; KM_EINVAL for others). The params are stored as this build
 * lays them out, so only a worker of the same build reads them; the load
 * checks magic, version, checksum, sizes (against the buffer's length
 * and the model limits) and the kernel (KM_ECORRUPT), and leaves the
 * params' ranges and X's values to km_fit's checks.
 */
typedef struct km_request {
    km_algorithm algo;
    km_kernel kernel;
    _Alignas(16) unsigned char params[128]; /* the algorithm's struct */
    km_preprocess pre;
    double *X, *Y; /* n x d; n x m (NULL when m is 0) */
    size_t n, d, m;
} km_request;
km_status km_request_save_buffer(km_algorithm a, const km_kernel *k,
                                 const void *params, const km_preprocess *pre,
                                 const km_problem *pb, unsigned char **buf,
                                 size_t *len, km_error *err) KM_MUST_CHECK;
km_status km_request_load_buffer(const unsigned char *buf, size_t len,
                                 km_request *r, km_error *err) KM_MUST_CHECK;
void km_request_cleanup(km_request *r);
/* r's data as a problem (borrowed). */
km_problem km_request_problem(const km_request *r);

/*
 * Distributed fits (the daemon's route, server/srv_mpi.c, and the
 * worker, mpi/kmserve_mpi.c), from a's descriptor. params is a's struct.
 */
/* 1 if a can run distributed (its requests can be written). */
int km_algorithm_distributed(km_algorithm a);
/* The names of the algorithms that can, "krr, gpr and kpca" (last
 * between the last two: " and "), into buf. */
void km_algorithm_distributed_names(const char *last, char *buf, size_t len);
/* NULL if a fit of a with params can run distributed, else why not (in
 * buf of len, or static). */
const char *km_algorithm_mpi_refusal(km_algorithm a, const void *params,
                                     char *buf, size_t len);
/* 1 if a local fit of params may be moved to the cluster when it does not
 * fit here (krr's auto), with *exact (params_size bytes) what the local
 * fit would run; 0 otherwise. */
int km_algorithm_mpi_routes_auto(km_algorithm a, const void *params,
                                 void *exact);
/* The worker's side: resolves params as the worker runs them (krr's auto:
 * exact); KM_EINVAL if the worker cannot run them. */
km_status km_algorithm_mpi_resolve(km_algorithm a, void *params,
                                   km_error *err) KM_MUST_CHECK;
/* The largest rank's bytes of a distributed fit on a rows x cols grid of
 * nb x nb blocks; what the daemon holds for it. SIZE_MAX-saturating; 0
 * when a cannot run distributed. */
size_t km_algorithm_mpi_rank_bytes(km_algorithm a, const void *params,
                                   const km_problem *pb, size_t nb,
                                   size_t rows, size_t cols);
size_t km_algorithm_mpi_local_bytes(km_algorithm a, const void *params,
                                    const km_problem *pb);
/* A resolved kernel as bytes (as a model file holds it) and back
 * (checked as a model file's: KM_ECORRUPT), for the worker's ranks. */
km_status km_kernel_save_buffer(const km_kernel *k, unsigned char **buf,
                                size_t *len, km_error *err) KM_MUST_CHECK;
km_status km_kernel_load_buffer(const unsigned char *buf, size_t len,
                                km_kernel *k, km_error *err) KM_MUST_CHECK;

/*
 * Scoring: what a search maximises, named as scikit-learn's scorers.
 * Errors are negated so that higher is better throughout.
 *   r2, neg_mean_squared_error, neg_mean_absolute_error
 *            regression (krr, svr); several outputs are averaged
 *            (multioutput='uniform_average')
 *   accuracy, balanced_accuracy, neg_log_loss
 *            classification (svc, klr); neg_log_loss needs probabilities
 *   neg_reconstruction_error
 *            kpca with the inverse map: minus the mean over rows and
 *            features of (x - inverse(project(x)))^2, in input units
 */
#define KM_SCORING_MAP(X)                                                    \
    X(KM_SCORING_R2, "r2")                                                   \
    X(KM_SCORING_NEG_MSE, "neg_mean_squared_error")                          \
    X(KM_SCORING_NEG_MAE, "neg_mean_absolute_error")                         \
    X(KM_SCORING_ACCURACY, "accuracy")                                       \
    X(KM_SCORING_BALANCED_ACCURACY, "balanced_accuracy")                     \
    X(KM_SCORING_NEG_LOG_LOSS, "neg_log_loss")                               \
    X(KM_SCORING_NEG_RECONSTRUCTION, "neg_reconstruction_error")

typedef enum {
    KM_SCORING_MAP(KM_CHOICE_ENUM)
    KM_SCORING_COUNT
} km_scoring;
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

/*
 * Cross-validation: how the rows are split into train and test folds.
 *   KFOLD       folds parts of consecutive rows (sizes differ by at most
 *               one, larger first), as scikit-learn's KFold; with
 *               shuffle, the rows are permuted first by core's PRNG
 *               seeded with seed (not numpy's: the same seed does not
 *               give sklearn's folds; pass test_fold for those); with
 *               stratified (classification), each class is spread over
 *               the folds in turn, as StratifiedKFold: the rows, sorted
 *               by class (stably, so shuffled within each class when
 *               shuffle), are dealt round-robin, row p of that order to
 *               fold p % folds; a class of n_c rows has floor or
 *               ceil(n_c / folds) in every fold (not sklearn's exact
 *               assignment)
 *   LOO         leave one out: n folds of one row
 *   GCV         krr only: generalised cross-validation, one number per
 *               alpha from the whole fit (no folds)
 *   PREDEFINED  test_fold[i] is the fold of row i (0 .. folds-1), or -1
 *               for a row always trained on, as PredefinedSplit
 * A search of krr over LOO or GCV is closed-form: one eigendecomposition
 * of K per kernel setting serves every alpha and output (the scores of
 * LOO pooled over all n left-out predictions).
 */
#define KM_CV_MAP(X)                                                         \
    X(KM_CV_KFOLD, "kfold")                                                  \
    X(KM_CV_LOO, "loo")                                                      \
    X(KM_CV_GCV, "gcv")                                                      \
    X(KM_CV_PREDEFINED, "predefined")
typedef enum {
    KM_CV_MAP(KM_CHOICE_ENUM)
    KM_CV_COUNT
} km_cv_kind;
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
 * krr's closed forms (LOO, GCV; K = V diag(s) V^T, one dsyevd per
 * kernel setting): with G = diag(alpha / (s + alpha)), the residuals
 * y - Hy = V G V^T y of H = K (K + alpha I)^-1, the LOO residual
 * (y - Hy)_i / (1 - H_ii) and the GCV residual (y - Hy)_i / (1 - tr H / n)
 * (H_ii replaced by its mean), so that GCV's neg_mean_squared_error is
 * minus n |y - Hy|^2 / (n - tr H)^2 (Golub, Heath and Wahba; averaged
 * over outputs; scikit-learn's RidgeCV "gcv" mode is the LOO one). The
 * scoring is applied to the n predictions y_i - residual_i. The closed
 * form needs one K: with preprocessing its statistics (x scaling, and
 * center_y's mean) are learnt once on all rows, not per left-out row, so
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

/*
 * The record of a search kept in the model it chose (format version 2):
 * which parameters varied (names as the API writes them: "alpha",
 * "kernel.gamma"; at most 31 bytes of [A-Za-z0-9_.]), their values per
 * point, and the result.
 */
#define KM_SEARCH_MAX_POINTS 10000
#define KM_SEARCH_MAX_PARAMS 16
typedef struct km_search_table {
    km_scoring scoring;
    km_cv_kind cv;
    size_t n_splits;
    size_t n_params;
    char names[KM_SEARCH_MAX_PARAMS][32];
    size_t n_points;      /* 1 .. KM_SEARCH_MAX_POINTS */
    const double *values; /* n_points x n_params */
    const double *mean, *std, *fit_seconds; /* n_points each */
    size_t best;
} km_search_table;
/* Copies t into m (set before sharing); KM_EINVAL for bad sizes or names. */
km_status km_model_set_search(km_model *m, const km_search_table *t,
                              km_error *err) KM_MUST_CHECK;
/* The model's search record (borrowed), or NULL. */
const km_search_table *km_model_search(const km_model *m);

#ifdef __cplusplus
}
#endif
#endif /* KM_SELECT_H */
