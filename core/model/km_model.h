/*
 * km_model.h - models: the fitted model, its answers, its file and its
 * identity, what it keeps of its preprocessing and of the search that
 * chose it (model/km_model.c, km_predict.c, km_info.c).
 *
 * Part of libkm's public interface; include km.h, which includes every
 * area. Conventions and thread-safety as km.h says.
 */
#ifndef KM_MODEL_H
#define KM_MODEL_H

#include "../model/km_fit.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- models */

/*
 * A fitted model: algorithm, kernel (with resolved gamma), what prediction
 * needs (deep copies), identity (name, version, creation time) and
 * descriptive figures. Opaque (declared above km_problem); immutable once
 * shared.
 */

void km_model_free(km_model *m);

km_algorithm km_model_algorithm(const km_model *m);
const km_kernel *km_model_kernel(const km_model *m);
size_t km_model_n_features(const km_model *m);
size_t km_model_n_samples(const km_model *m);
/* The model's n_outputs (krr: its targets; kpca: n_components; each
 * algorithm's range: the load bounds below). How many values an answer
 * has per row is km_model_answer_width's (km_fit.h). */
size_t km_model_n_outputs(const km_model *m);
/* Bytes of heap memory the model holds. */
size_t km_model_bytes(const km_model *m);

/* Identity: set by the owner before the model is shared. name is at most
 * 64 bytes (longer is truncated); created_at_ms is Unix time in ms. */
void km_model_set_identity(km_model *m, const char *name, uint64_t version,
                           int64_t created_at_ms);
const char *km_model_name(const km_model *m);
uint64_t km_model_version(const km_model *m);
int64_t km_model_created_at_ms(const km_model *m);

/*
 * Named figures that describe a model: its parameters ("alpha", "C", ...)
 * and its training ("seconds", "iterations", "n_support", ...). Values are
 * numbers; kind says how to show them. A figure with no values (count 0)
 * is absent: its value could not be stored (not finite, or not of its
 * kind), and metadata shows it as null.
 */
typedef enum { KM_INFO_NUMBER, KM_INFO_INTEGER, KM_INFO_BOOLEAN } km_info_kind;

typedef struct km_info_entry {
    char key[32];
    km_info_kind kind;
    int is_array;   /* show as a list even when count == 1 */
    size_t count;
    double *values; /* count values, owned by the list */
} km_info_entry;

typedef struct km_info {
    size_t count;
    km_info_entry *entries;
} km_info;

/* A string model's max_length (bytes), as its fit was asked: kept as
 * the training figure "max_length" (in the file); predicts of longer
 * strings are KM_EINVAL. Without it a model takes what its rows hold
 * (km_string_max_length of n_features). */
km_status km_model_set_max_length(km_model *m, size_t max_length,
                                  km_error *err) KM_MUST_CHECK;
size_t km_model_max_length(const km_model *m);

/*
 * Class labels of a classifier, in class-index order (sorted by the
 * caller: numbers ascending, strings by byte order). Kept as text; numeric
 * says whether they came as numbers. Copies labels. Set before sharing.
 */
km_status km_model_set_labels(km_model *m, const char *const *labels,
                              size_t n, int numeric,
                              km_error *err) KM_MUST_CHECK;
size_t km_model_n_labels(const km_model *m);
/* Label of class i (borrowed); NULL if i is out of range. */
const char *km_model_label(const km_model *m, size_t i);
int km_model_labels_numeric(const km_model *m);

/* Borrowed views, valid while the model lives. */
const km_info *km_model_params(const km_model *m);
const km_info *km_model_training(const km_model *m);
/* Finds an entry by key; NULL if absent. */
const km_info_entry *km_info_find(const km_info *info, const char *key);

/*
 * Binary file format: magic, format version, identity and metadata, the
 * algorithm's payload, and a CRC-32 over all of it. Little-endian.
 * km_model_save_buffer: caller owns *buf; free with free().
 * km_model_load_buffer: borrows buf; caller owns *out. A truncated or
 * altered buffer is KM_ECORRUPT; an unknown format version KM_EFORMAT.
 */
km_status km_model_save_buffer(const km_model *m, unsigned char **buf,
                               size_t *len, km_error *err) KM_MUST_CHECK;
km_status km_model_load_buffer(const unsigned char *buf, size_t len,
                               km_model **out, km_error *err) KM_MUST_CHECK;
/* The same bytes streamed to sink, a MiB at a time and large arrays from
 * where they are, so the file is never whole in memory; KM_EIO when the
 * sink failed (it keeps why). */
km_status km_model_save_sink(const km_model *m, km_sink_fn sink,
                             void *ctx, km_error *err) KM_MUST_CHECK;

/*
 * Block files: the Cholesky factor an exact gpr model, or a krr model
 * fitted with params.keep_factor, keeps, stored apart from its model
 * file, as the store does (docs/model-format.md "Factor blocks"). The
 * factor is held in row blocks that never change once made, and an
 * update adds one (its new rows) while sharing the others; a model file
 * of format 12 names its factor's blocks by id, and each block is a file
 * of its own, so that a version made by an update writes its new rows and
 * not the whole n x n triangle again.
 */
typedef struct km_blocks {
    void *ctx;
    /* Factors of fewer bytes than this stay in the model file. */
    uint64_t min_bytes;
    /* Makes block `id` durable for the model being saved: a link to a file
     * of that block already there, or a new file whose bytes write()
     * streams to (sink, sink_ctx) (returning 0, or -1 when the sink
     * failed). 0, or an errno value (the save then fails). */
    int (*put)(void *ctx, uint64_t id,
               int (*write)(void *wctx, km_sink_fn sink, void *sink_ctx),
               void *wctx);
    /* A descriptor open for reading on block `id` of the model file of
     * this version (closed by the caller), or -1 with errno set. */
    int (*open)(void *ctx, uint64_t version, uint64_t id);
} km_blocks;

/* km_model_save_sink with the factor, when it has blocks->min_bytes or
 * more, in block files through blocks (NULL: as km_model_save_sink). */
km_status km_model_save_sink_blocks(const km_model *m, km_sink_fn sink,
                                    void *ctx, const km_blocks *blocks,
                                    km_error *err) KM_MUST_CHECK;
/* km_model_load_buffer of a file whose factor may be in block files read
 * through blocks (each checked: its header against the model file's list,
 * its size, its checksum). Without blocks a format 12 file is refused
 * (KM_ECORRUPT naming the block files). */
km_status km_model_load_buffer_blocks(const unsigned char *buf, size_t len,
                                      const km_blocks *blocks,
                                      km_model **out,
                                      km_error *err) KM_MUST_CHECK;
/* The same through a stdio stream (the whole stream from its position).
 * load reads the header first and then no more than it allows (nor more
 * than max_bytes: KM_EINVAL). */
km_status km_model_save_file(const km_model *m, void *file /* FILE* */,
                             km_error *err) KM_MUST_CHECK;
km_status km_model_load_file(void *file /* FILE* */, size_t max_bytes,
                             km_model **out, km_error *err) KM_MUST_CHECK;

/*
 * What a model file must meet to load: a file is input like any other, so
 * every size in it is bounded, every count agrees with the others, every
 * index is in range and every number the model computes with is finite.
 * The bounds are the largest a fit makes (fits refuse more), so any model
 * this build fits loads back:
 *   n_features      1 .. KM_MODEL_MAX_FEATURES
 *   n_samples       1 .. KM_MODEL_MAX_SAMPLES (support indices are int32)
 *   n_outputs       1 .. the algorithm's max_outputs(n_samples) (its
 *                   descriptor, km_model_internal.h; at most
 *                   KM_MODEL_MAX_OUTPUTS), and what its payload's load
 *                   checks (a classifier: its class count)
 *   svc classes     2 .. min(n_samples, KM_MODEL_MAX_CLASSES), with
 *                   exactly one label per class, labels distinct and
 *                   sorted (numbers ascending, strings by byte order)
 *   version         0 .. KM_MODEL_MAX_VERSION (exact as a JSON number;
 *                   0 is a model no owner has named yet)
 *   created_at_ms   0 .. KM_MODEL_MAX_TIME_MS (9999-12-31T23:59:59.999Z)
 *   text            the name and labels are UTF-8 without NUL; figure
 *                   keys are [A-Za-z0-9_]; at most KM_MODEL_MAX_FIGURES
 *                   figures per list
 */
#define KM_MODEL_MAX_FEATURES ((size_t)1 << 24)
#define KM_MODEL_MAX_SAMPLES ((size_t)2147483647)
#define KM_MODEL_MAX_OUTPUTS ((size_t)1 << 24)
#define KM_MODEL_MAX_CLASSES ((size_t)65536)
#define KM_MODEL_MAX_VERSION ((uint64_t)1 << 53)
#define KM_MODEL_MAX_TIME_MS 253402300799999LL
#define KM_MODEL_MAX_FIGURES 64

/* Bytes at the start of a model file that km_model_check_header reads:
 * magic, format version, algorithm, n_features, n_samples, n_outputs. */
#define KM_MODEL_HEADER_BYTES 36

/*
 * Checks a model file's header (its first len bytes; at least
 * KM_MODEL_HEADER_BYTES are needed) before the rest is read: magic, format
 * version (KM_EFORMAT), algorithm and sizes within the bounds above, and
 * that file_size lies in the range those sizes imply (KM_ECORRUPT naming
 * both). *max_size (may be NULL) gets the largest size the header allows.
 * Borrows head.
 */
km_status km_model_check_header(const unsigned char *head, size_t len,
                                uint64_t file_size, uint64_t *max_size,
                                km_error *err) KM_MUST_CHECK;

/* What reading a model takes (admission control, before the read), in
 * bytes, not counting the bytes read: kept, what the model it makes
 * holds (for a model file exactly its km_model_bytes), and peak, the
 * most heap the read holds at once (at least kept; with an allowance for
 * the allocator's own overhead). */
typedef struct km_load_bytes {
    size_t peak, kept;
} km_load_bytes;

/* What km_model_load_buffer of buf takes, from the sizes it allocates
 * by: the header checked against len as the load checks it, the records
 * before the payload read as the load reads them, and the payload's
 * leading counts (the checksum and the rest are the load's to check).
 * Fails as the load would on what it reads. Borrows buf. */
km_status km_model_load_bytes(const unsigned char *buf, size_t len,
                              km_load_bytes *out,
                              km_error *err) KM_MUST_CHECK;

/* ---------------------------------------------------------------- answers */

/*
 * Every answer a model gives, as the API names it: one row each, and the
 * one place those names are written (the API's routes, "output" choices,
 * v2 outputs, messages and GET /v1's description derive from it). Row
 * order is the order answers are listed and offered in: the first an
 * algorithm offers on a route is that route's default (v1 predict
 * without "output", v2 infer without "outputs").
 *
 * Each row is X(ID, "name", flag, each, "route", v1_output, v1_inverse,
 *               v2_name, v2_datatype, with, without, needs):
 *   ID           the row's constant: KM_ANSWER_<ID>
 *   "name"       the answer's name (v1's "output" value when it has one)
 *   flag         the KM_OUT_* answer core computes (km_predict)
 *   each         NULL, or the function (of one double, math.h's) that
 *                turns each of flag's values into this answer's: sqrt
 *                (std is the square root of the variances)
 *   "route"      the v1 route that gives it: "predict" or "project"
 *   v1_output    predict's "output" value that asks for it; NULL when
 *                it is not chosen so (the route's default, or inverse)
 *   v1_inverse   1: asked for by project's "inverse": true
 *   v2_name      the v2 output's name; NULL when v2 does not offer it
 *   v2_datatype  the v2 datatype: "FP64", "INT64"; NULL when the model
 *                decides (labels: INT64, FP64 or BYTES by its labels)
 *   with         KM_OUT_* flags an algorithm must also answer to offer it
 *   without      ... and must not answer (krr's values are not gpr's mean)
 *   needs        the fit parameter a model of such an algorithm may lack
 *                it without (km_model_outputs says whether it has it);
 *                NULL when every model has it
 */
#define KM_ANSWER_MAP(X)                                                     \
    X(LABEL, "label", KM_OUT_LABELS, NULL, "predict", "label", 0, "labels",  \
      NULL, 0, 0, NULL)                                                      \
    X(VALUES, "values", KM_OUT_VALUES, NULL, "predict", NULL, 0,             \
      "predictions", "FP64", 0, KM_OUT_VARIANCES, NULL)                      \
    X(MEAN, "mean", KM_OUT_VALUES, NULL, "predict", "mean", 0, "mean",       \
      "FP64", KM_OUT_VARIANCES, 0, NULL)                                     \
    X(CLUSTERS, "clusters", KM_OUT_CLUSTERS, NULL, "predict", NULL, 0,       \
      "clusters", "INT64", 0, 0, NULL)                                       \
    X(PROJECTIONS, "projections", KM_OUT_PROJECTIONS, NULL, "project",       \
      NULL, 0, "projections", "FP64", 0, 0, NULL)                            \
    X(INVERSE, "inverse", KM_OUT_INVERSE, NULL, "project", NULL, 1, NULL,    \
      "FP64", 0, 0, "params.fit_inverse_transform: true")                    \
    X(DECISION_FUNCTION, "decision_function", KM_OUT_SCORES, NULL,           \
      "predict", "decision_function", 0, "decision_values", "FP64", 0, 0,    \
      NULL)                                                                  \
    X(PROBABILITY, "probability", KM_OUT_PROBABILITIES, NULL, "predict",     \
      "probability", 0, "probabilities", "FP64", 0, 0,                       \
      "params.probability: true")                                            \
    X(STD, "std", KM_OUT_VARIANCES, sqrt, "predict", "std", 0, "std",        \
      "FP64", 0, 0, "params.variance: true")                                 \
    X(VAR, "var", KM_OUT_VARIANCES, NULL, "predict", "var", 0, "variance",   \
      "FP64", 0, 0, "params.variance: true")                                 \
    X(COV, "cov", KM_OUT_COVARIANCE, NULL, "predict", "cov", 0,              \
      "covariance", "FP64", 0, 0, "params.variance: true")

/* KM_ANSWER_LABEL = 0, ... in KM_ANSWER_MAP's order; KM_ANSWER_COUNT rows. */
typedef enum {
#define KM_ANSWER_ENUM(id, name, ...) KM_ANSWER_##id,
    KM_ANSWER_MAP(KM_ANSWER_ENUM)
#undef KM_ANSWER_ENUM
    KM_ANSWER_COUNT
} km_answer_id;

/* One row of KM_ANSWER_MAP (fields as described there). */
typedef struct km_answer {
    const char *name;
    const char *route;
    const char *v1_output;
    int v1_inverse;
    const char *v2_name;
    const char *v2_datatype;
    unsigned flag;
    unsigned with, without;
    double (*each)(double);
    const char *needs;
} km_answer;

/* Rows of the table (KM_ANSWER_COUNT). */
size_t km_answer_count(void);
/* Row i, in the table's order; NULL past the end. */
const km_answer *km_answer_at(size_t i);
/* Whether models of algorithm a offer r: a answers r's flag and its with
 * flags, and none of its without. A model may still lack it (its fit did
 * not prepare it: km_model_outputs). 0 for a NULL r or an invalid a. */
int km_answer_offered(const km_answer *r, km_algorithm a);

/* Checks that X (n rows) fits the model: n_features columns, all finite.
 * Names the first bad entry ("X[3][1] is not a finite number"). */
km_status km_model_check_input(const km_model *m, const double *X, size_t n,
                               size_t d, km_error *err) KM_MUST_CHECK;

/* ------------------------------------------------------------ updates */

/*
 * Updates: a new model equal to a refit on a model's training rows and k
 * new ones, without the refit (km_update.c, through the descriptors'
 * update entry; which models can: km_update_possible).
 *
 * km_model_update_refusal: NULL if m can be updated, else why not (static
 * text naming what can). km_update_possible: the models that can, from
 * the descriptors ("krr models fitted with params.keep_factor and exact
 * gpr models"), into buf.
 */
const char *km_model_update_refusal(const km_model *m);
void km_update_possible(char *buf, size_t len);
/* Peak bytes an update of m by k rows holds beyond m itself (admission
 * control); SIZE_MAX for a model that cannot be updated. */
size_t km_model_update_bytes(const km_model *m, size_t k);
/*
 * The new model: m's algorithm, kernel, hyperparameters (gpr's as fitted,
 * also when its optimizer chose them), preprocessing statistics (applied
 * to X and y as a prediction applies them: they are not learnt again) and
 * class labels, fitted on m's rows then X (k rows of m's features, as a
 * fit's X) with targets Y (k x ny, ny = m's outputs). Training figures as
 * the fit's (those an update recomputes: gpr's log marginal likelihood,
 * krr's rkhs_norm_sq), "seconds" the update's, "rows_added" k and
 * "updates" the count of updates since the fit. Borrows all; caller owns
 * *out. KM_ECONFLICT when m cannot be updated (the refusal's message);
 * KM_EINVAL naming X or y when their sizes or values are wrong, or the
 * rows too many; KM_ENOTPD when the extended matrix cannot be factored;
 * KM_ECANCELLED by ctl.
 */
km_status km_model_update(const km_model *m, const double *X, size_t k,
                          size_t d, const double *Y, size_t ny,
                          const km_fit_control *ctl, km_model **out,
                          km_error *err) KM_MUST_CHECK;

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

/* Rows per block of the scaled copy of X a preprocessed model predicts
 * through (about 1 MiB of doubles: 2^17 / d rows, at least one): a batch
 * of more rows is answered block by block. */
size_t km_pre_block_rows(size_t d);

/* ----------------------------------------------------- a search's record */

/* A model chosen by a search (select/) keeps the search's record; the
 * scorings and the kinds of cross-validation it names are listed here,
 * with the record, so that the model's file reads and checks them
 * without select/. The scorings' and cv kinds' names, checks and
 * computation are select/km_select.h's. */

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

/*
 * The drift reference (format version 8): a seeded subsample of a fit's
 * raw training rows (before preprocessing), kept in the model so that a
 * kernel two-sample test (km_drift, km_select.h) can compare what the
 * model is asked against what it was fitted on. At most
 * KM_DRIFT_REFERENCE_ROWS rows, and at most KM_DRIFT_REFERENCE_BYTES of
 * them (long string rows: fewer); all of them, in order, when the fit had
 * no more; else km_rng seeded KM_DRIFT_REFERENCE_SEED picks them, in
 * their order. km_fit keeps one for every algorithm; a precomputed kernel
 * keeps none (its rows are kernel values, no sample to test), nor does a
 * model loaded from a file older than version 8.
 */
#define KM_DRIFT_REFERENCE_ROWS 1000
#define KM_DRIFT_REFERENCE_BYTES ((size_t)32 << 20)
#define KM_DRIFT_REFERENCE_SEED 0
/* How many rows a reference of a fit of n rows of d doubles holds. */
size_t km_drift_reference_rows(size_t n, size_t d);
/* Keeps the reference of X (n rows of the model's n_features doubles,
 * raw) in m (set before sharing; replaces any). Nothing for a precomputed
 * kernel. KM_ENOMEM out of memory. */
km_status km_model_set_reference(km_model *m, const double *X, size_t n,
                                 km_error *err) KM_MUST_CHECK;
/* The reference's rows (borrowed, n_features doubles each) and their
 * number in *rows; NULL and 0 when the model has none. */
const double *km_model_reference(const km_model *m, size_t *rows);


/*
 * A model's coefficients, as GET /v1/models/{name}/coefficients answers
 * them: the arrays its algorithm's descriptor lists (km_algo's coefs),
 * each a view borrowed from the model (valid while it lives), named as
 * scikit-learn names the attribute where one exists (dual_coef_,
 * support_, eigenvectors_, ...), in scikit-learn's layout and signs.
 * Value (i, j) is km_coef_at (j is 0 for a vector). page_axis is the
 * axis that runs over training rows, support vectors, centres or random
 * features (an answer pages it by offset and limit), -1 when the array is
 * small and whole (intercepts, eigenvalues).
 * The training rows a model keeps are answered as the model's kernel
 * takes them (km_coef_input_rows): rows of numbers; a string model's
 * strings (a vector whose entry i is the string row f64 + i stride[0]
 * of stride[0] doubles, km_string_row_bytes; km_coef_at gives its
 * length); a precomputed model's rows of kernel values against the
 * training rows without their index column (scikit-learn's X_fit_ of
 * kernel="precomputed", the Gram matrix given), and, as scikit-learn's
 * SVC and SVR of kernel="precomputed", no support vectors (shape 0 x 0:
 * support_ says which training rows they are); a precomputed model's
 * centres are followed by centre_indices_, their training rows.
 */
#define KM_COEF_MAX 8
typedef struct km_coef {
    const char *name;
    int integer;           /* whole numbers (indices, labels) */
    int string;            /* strings (a vector of string rows) */
    int indexed;           /* a precomputed model's centres: their index
                              column is f64[-1] (km_model_coefs adds it) */
    size_t ndim;           /* 1 or 2 */
    size_t shape[2];       /* shape[1] is 1 for a vector */
    int page_axis;         /* 0, 1, or -1 */
    /* the view: scale * (f64 or i32)[i stride[0] + j stride[1]], or at */
    const double *f64;
    const int *i32;
    size_t stride[2];
    double scale;
    double (*at)(const struct km_coef *c, size_t i, size_t j);
    const double *aux;     /* at's second array */
} km_coef;
/* The model's arrays into out (at most KM_COEF_MAX); returns their count
 * (0 for an algorithm that lists none). */
size_t km_model_coefs(const km_model *m, km_coef *out);
double km_coef_at(const km_coef *c, size_t i, size_t j);
/* The length of the paged axis of the arrays (every paged array of one
 * model has the same), 0 when none is paged. */
size_t km_coef_rows(const km_coef *c, size_t n);

#ifdef __cplusplus
}
#endif
#endif /* KM_MODEL_H */
