/*
 * km.h - public interface of libkm, kmserve's numerical library.
 *
 * libkm fits kernel-method models (kernel ridge regression, C-SVC, epsilon-SVR,
 * kernel PCA, kernel logistic regression), predicts with them and reads and
 * writes their binary file format. It is pure: no sockets, no JSON, no
 * printing, no global state.
 *
 * Conventions used throughout:
 *   - Matrices are dense, row-major doubles: X[i*d + j] is feature j of row i.
 *   - Every fallible function returns a km_status and, when err is not NULL,
 *     fills the caller-owned km_error with a message naming what was wrong.
 *   - "Borrows x": x is read during the call only. "Caller owns the result":
 *     free it with the matching *_free(). *_free(NULL) is a no-op.
 *
 * Thread-safety: functions are reentrant; a km_model is immutable once it is
 * shared, so any number of threads may predict with one model at once.
 */
#ifndef KM_H
#define KM_H

#include <stddef.h>
#include <stdint.h>

#include "km_maps.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KM_VERSION "0.1.0"

#if defined(__GNUC__)
#define KM_MUST_CHECK __attribute__((warn_unused_result))
#else
#define KM_MUST_CHECK
#endif

/* ---------------------------------------------------------------- status */

/* X(name, message): the one table of statuses and their messages. */
#define KM_STATUS_MAP(X)                                                     \
    X(OK, "success")                                                         \
    X(EINVAL, "invalid argument")                                            \
    X(ENOMEM, "out of memory")                                               \
    X(ENOTPD, "kernel matrix is not positive definite")                      \
    X(EPROBLEM, "the problem cannot be solved with these data")              \
    X(ECONFLICT, "the operation does not apply to this model")               \
    X(ECORRUPT, "model data is corrupt")                                     \
    X(EFORMAT, "unsupported model format")                                   \
    X(EIO, "input/output error")                                             \
    X(ECANCELLED, "cancelled")                                               \
    X(ENOCONV, "the solver did not converge")                                \
    X(EINTERNAL, "internal error")

typedef enum {
#define KM_STATUS_ENUM(name, msg) KM_##name,
    KM_STATUS_MAP(KM_STATUS_ENUM)
#undef KM_STATUS_ENUM
    KM_STATUS_COUNT
} km_status;

/* Static message for a status ("invalid argument"); never NULL. */
const char *km_strerror(km_status st);
/* Static name of a status ("EINVAL"); never NULL. */
const char *km_status_name(km_status st);

/* Caller-owned error detail. message is always NUL-terminated. */
typedef struct km_error {
    km_status status;
    char message[256];
} km_error;

/* ---------------------------------------------------------------- random */

/* Core's one PRNG (splitmix64), with its state in the caller's hands:
 * fits and searches are repeatable and touch no global state. Seed s
 * with any value. */
typedef struct km_rng {
    uint64_t s;
} km_rng;
uint64_t km_rng_next(km_rng *r);
/* Uniform integer in [0, n), n > 0. */
size_t km_rng_below(km_rng *r, size_t n);
/* Uniform double in [-1, 1), a multiple of 2^-52. */
double km_rng_uniform(km_rng *r);

/* ---------------------------------------------------------------- kernels */

/* KM_KERNEL_LINEAR = 0, ... in the order and with the stored ids of
 * KM_KERNEL_MAP (km_maps.h). */
typedef enum {
#define KM_KERNEL_ENUM(e, id, name, desc) KM_KERNEL_##e = id,
    KM_KERNEL_MAP(KM_KERNEL_ENUM)
#undef KM_KERNEL_ENUM
    KM_KERNEL_TYPE_COUNT
} km_kernel_type;

/* Ids index core's tables: as many entries as ids, the last id the
 * largest, so that (no id repeated, none out of range) they run
 * 0 .. count - 1. */
#define KM_MAP_ONE(e, id, name, desc) +1
#ifndef __cplusplus
_Static_assert((0 KM_KERNEL_MAP(KM_MAP_ONE)) == KM_KERNEL_TYPE_COUNT,
               "kernel ids run 0, 1, 2, ... with the last one in the list");
#endif

#define KM_KERNEL_MAX_PARTS 16 /* parts of one sum or product */
#define KM_KERNEL_MAX_DEPTH 4  /* nesting of sums and products */

/*
 * A kernel, as a plain parameter struct with the parameterisation of
 * scikit-learn:
 *   linear       <x,z>
 *   polynomial   (gamma <x,z> + coef0)^degree
 *   rbf          exp(-gamma |x-z|^2)
 *   laplacian    exp(-gamma |x-z|_1)
 *   sigmoid      tanh(gamma <x,z> + coef0)
 *   sum          sum_i weights[i] k_i(x,z)
 *   product      prod_i k_i(x,z)
 *   laplacian_l2 exp(-gamma |x-z|_2)       (the Euclidean-norm Laplacian)
 *   exponential  exp(gamma <x,z>)
 *   normalized   k_0(x,z) / sqrt(k_0(x,x) k_0(z,z)) of its one part k_0
 *                (cosine normalisation; 0 where k_0(x,x) k_0(z,z) <= 0)
 * gamma == 0 means "default": 1/n_features, filled in by km_kernel_resolve().
 * A sum or product owns its parts and weights (set them with
 * km_kernel_set_parts). Initialise with km_kernel_init, release with
 * km_kernel_cleanup.
 */
typedef struct km_kernel {
    km_kernel_type type;
    double gamma;
    double coef0;
    int degree;
    int n_parts;
    struct km_kernel *parts; /* n_parts kernels, owned */
    double *weights;         /* n_parts weights (sum only), owned */
} km_kernel;

/* Sets k to the type's defaults (degree 3, coef0 1 for polynomial, 0 for
 * sigmoid, gamma 0 = default) with no parts. */
void km_kernel_init(km_kernel *k, km_kernel_type type);
/* Releases the parts and weights of k; k may then be re-initialised. */
void km_kernel_cleanup(km_kernel *k);
/* Takes ownership of parts[0..n) (allocated with malloc, each initialised)
 * and of weights (malloc'd, n entries, or NULL for all 1). */
void km_kernel_set_parts(km_kernel *k, km_kernel *parts, double *weights,
                         int n);
/* Deep copy into dst (uninitialised). */
km_status km_kernel_copy(km_kernel *dst, const km_kernel *src,
                         km_error *err) KM_MUST_CHECK;
/* Checks types, ranges, part counts and nesting; names the bad field. */
km_status km_kernel_check(const km_kernel *k, km_error *err) KM_MUST_CHECK;
/* Replaces default (0) gammas by 1/n_features, recursively. */
void km_kernel_resolve(km_kernel *k, size_t n_features);
/* What a kernel type is, from its row of the kernel table (km_kernel.c):
 * the API builds its parameter rules and the client its lists from it. */
typedef enum {
    KM_KFAMILY_INNER,    /* a function of <x,z> (and of |x|, |z|) */
    KM_KFAMILY_L2,       /* a function of |x-z|_2 */
    KM_KFAMILY_L1,       /* a function of |x-z|_1 */
    KM_KFAMILY_COMPOSITE /* built from its parts */
} km_kernel_family;

/* Parameters a kernel type takes (km_kernel_type_info's params). */
#define KM_KPARAM_GAMMA 0x01u   /* gamma (0 = 1/n_features) */
#define KM_KPARAM_DEGREE 0x02u  /* degree, 0 .. 64 */
#define KM_KPARAM_COEF0 0x04u   /* coef0 */
#define KM_KPARAM_PARTS 0x08u   /* kernels: min_parts .. max_parts parts */
#define KM_KPARAM_WEIGHTS 0x10u /* weights, one per part, >= 0 */

typedef struct km_kernel_info {
    km_kernel_family family;
    unsigned params;         /* KM_KPARAM_* flags */
    int degree;              /* default degree (where it applies) */
    double coef0;            /* default coef0 (where it applies) */
    int min_parts, max_parts;/* 0, 0 unless KM_KPARAM_PARTS */
} km_kernel_info;

/* The row of type t (static); NULL for an invalid type. */
const km_kernel_info *km_kernel_type_info(km_kernel_type t);

/* "rbf", "sum", ...; NULL for an invalid type. */
const char *km_kernel_type_name(km_kernel_type t);
/* Parses a type name; returns 0 on success, -1 if unknown. */
int km_kernel_type_parse(const char *name, km_kernel_type *t);

/* k(x, z) for two vectors of d features. Borrows x and z. */
double km_kernel_eval(const km_kernel *k, const double *x, const double *z,
                      size_t d);

/*
 * Training Gram matrix K[i][j] = k(X_i, X_j), n x n row-major, into K
 * (caller-allocated, n*n doubles). Only the lower triangle (j <= i) is
 * written unless full is nonzero. Uses DSYRK for inner products.
 */
km_status km_gram_sym(const km_kernel *k, const double *X, size_t n,
                      size_t d, double *K, int full,
                      km_error *err) KM_MUST_CHECK;

/*
 * Cross Gram matrix K[i*ldk + j] = k(X_i, Z_j) for i < nx, j < nz, into K
 * (caller-allocated, nx rows of ldk >= nz doubles). Uses DGEMM. Borrows all.
 */
km_status km_gram_cross(const km_kernel *k, const double *X, size_t nx,
                        const double *Z, size_t nz, size_t d, double *K,
                        size_t ldk, km_error *err) KM_MUST_CHECK;

/*
 * One block of the training Gram matrix of X (rows of d features):
 * K[a*ldk + b] = k(X_{i0+a}, X_{j0+b}) for a < ni, b < nj, through the
 * same maps as km_gram_sym (an L2 kernel's distance is exactly 0 where
 * i0 + a == j0 + b, when i0 >= j0; aligned tiles, as a block-cyclic
 * distribution's, always are). xn: the squared norms of X's rows
 * (km_sqnorms), or NULL to compute those of the block's rows here.
 * The one kernel code of a distributed Gram (kmserve-mpi's tiles).
 */
km_status km_gram_block(const km_kernel *k, const double *X, const double *xn,
                        size_t d, size_t i0, size_t ni, size_t j0, size_t nj,
                        double *K, size_t ldk, km_error *err) KM_MUST_CHECK;
/* Squared norms of X's n rows (d features), malloc'd; NULL on OOM. */
double *km_sqnorms(const double *X, size_t n, size_t d);

/* exp(v[i]) for all i, in place, vectorised; accurate to a few ulps, exact 0
 * below -708. Exposed for benchmarks and tests. */
void km_vexp(double *v, size_t n);

/* ---------------------------------------------------------------- fitting */

/*
 * Progress and cancellation for long fits. progress, when not NULL, is
 * called with a non-decreasing fraction in [0, 1], from one thread at a
 * time (a fit's own, or one of km_search's workers: never two calls at
 * once); a nonzero return asks the fit to stop, which it does soon after
 * with KM_ECANCELLED (km_search does not call it again after that).
 * threads: threads a fit may run beyond BLAS's own; 0 or 1: one.
 * km_search runs that many points at once (at most its spec's threads:
 * see km_search_spec); krr's nystrom solver maps blocks of kernel values
 * on that many; the other fits run on the calling thread alone.
 * Last, so that {progress, ctx} initialisers leave it 0.
 */
typedef struct km_dense_engine km_dense_engine;
typedef struct km_fit_control {
    int (*progress)(void *ctx, double fraction);
    void *ctx;
    int threads;
    /* A dense solver elsewhere (kmserve-mpi's ScaLAPACK engine), or NULL:
     * this process. See km_dense_engine. */
    const km_dense_engine *dense;
} km_fit_control;

/*
 * A part of a fit reported as a whole: a control whose progress 0..1 is
 * the outer control's from..to (cancel passes through). Usage:
 *   km_progress_span sp = {outer, 0.0, 0.6};
 *   km_fit_control sub = {km_progress_span_report, &sp, threads};
 */
typedef struct km_progress_span {
    const km_fit_control *outer;
    double from, to;
} km_progress_span;
int km_progress_span_report(void *span, double fraction);

/*
 * A dense linear algebra engine that an exact fit hands its system to
 * instead of forming the n x n kernel matrix in this process (the MPI
 * worker, mpi/kmserve_mpi.c, distributes it block-cyclically over its
 * ranks). Used by krr's exact solver, gpr without an optimizer and kpca's
 * dense solver (with its inverse map) when km_fit_control.dense is set;
 * every other fit ignores it.
 *   solve  C (n x m, row-major) = (scale k(X, X) + shift I)^-1 Y for X
 *          (n x d, row-major, k resolved) and Y (n x m, row-major); when
 *          L is not NULL it also gets the lower Cholesky factor of
 *          scale k(X, X) + shift I (n x n, row-major, upper triangle 0).
 *          Progress from f0 to f1 through ctl, which may cancel. Statuses
 *          as km_krr_solve's: KM_ENOTPD (naming the row), KM_ECANCELLED,
 *          KM_ENOMEM, KM_EINTERNAL.
 *   eigen  (NULL: kpca runs here) the top nev eigenpairs of the centred
 *          Kc = H k(X, X) H (H = I - 11^T/n) for kpca's dense solver (its
 *          eigen_solver auto or dense): col_mean (n) the column means of
 *          k(X, X), *grand their mean, *trace the trace of Kc, lambda (nev)
 *          the eigenvalues descending, U (n x nev, column-major: vector j
 *          contiguous) their unit vectors in any sign. Progress from f0 to
 *          f1. A matrix that is not finite (overflow) leaves *grand or
 *          *trace not finite, and lambda and U unset, for the caller to
 *          refuse. Statuses: KM_ECANCELLED, KM_ENOMEM, KM_EINTERNAL.
 */
struct km_dense_engine {
    void *ctx;
    km_status (*solve)(void *ctx, const km_kernel *k, double scale,
                       const double *X, size_t n, size_t d, double shift,
                       const double *Y, size_t m, double *C, double *L,
                       const km_fit_control *ctl, double f0, double f1,
                       km_error *err);
    km_status (*eigen)(void *ctx, const km_kernel *k, const double *X,
                       size_t n, size_t d, size_t nev, double *col_mean,
                       double *grand, double *trace, double *lambda,
                       double *U, const km_fit_control *ctl, double f0,
                       double f1, km_error *err);
};

/*
 * The memory budget, in bytes, that an auto solver (krr's params.solver
 * AUTO) measures its choice against: the server sets it once at start-up
 * to its --memory-budget-mb, before any fit runs. 0 (never set): the
 * default, km_default_memory_budget(). The estimates (km_algorithm_fit_bytes)
 * and the fits of an auto solver both read it, so they agree. Atomic.
 */
void km_set_memory_budget(size_t bytes);
size_t km_memory_budget(void);
/* 75 % of physical memory (sysconf), or 1 GiB when that is unknown: the
 * server's default --memory-budget-mb. */
size_t km_default_memory_budget(void);

/* KM_ALGO_KRR = 0, ... with the stored ids of KM_ALGO_MAP (km_maps.h). */
typedef enum {
#define KM_ALGO_ENUM(e, id, name, desc) KM_ALGO_##e = id,
    KM_ALGO_MAP(KM_ALGO_ENUM)
#undef KM_ALGO_ENUM
    KM_ALGO_COUNT
} km_algorithm;

#ifndef __cplusplus
_Static_assert((0 KM_ALGO_MAP(KM_MAP_ONE)) == KM_ALGO_COUNT,
               "algorithm ids run 0, 1, 2, ... with the last one in the list");
#endif

/* What an algorithm's predictions answer (km_algorithm_outputs). */
#define KM_OUT_VALUES 0x01u        /* real values per output (krr, svr) */
#define KM_OUT_LABELS 0x02u        /* class labels (svc) */
#define KM_OUT_SCORES 0x04u        /* decision values (svc, svr) */
#define KM_OUT_PROBABILITIES 0x08u /* class probabilities (svc, when fitted
                                      with them) */
#define KM_OUT_PROJECTIONS 0x10u   /* projections on components (kpca) */
#define KM_OUT_INVERSE 0x20u       /* back to inputs (kpca, when fitted
                                      with the inverse map) */
#define KM_OUT_VARIANCES 0x40u     /* predictive variances, one per row
                                      (gpr) */
#define KM_OUT_COVARIANCE 0x80u    /* the joint predictive covariance of
                                      a batch: n rows of n values (gpr),
                                      n at most KM_COV_MAX_ROWS */
#define KM_OUT_CLUSTERS 0x100u     /* cluster ids 0 .. k-1 (kkmeans), from
                                      km_predict_labels; no class labels */
#define KM_COV_MAX_ROWS 1000

/* KM_OUT_* flags of what a's models can answer; 0 for an invalid a. */
unsigned km_algorithm_outputs(km_algorithm a);


/* "krr", "svc", "svr", "kpca", "klr"; NULL if invalid. */
const char *km_algorithm_name(km_algorithm a);
/* Returns 0 and sets *a on success, -1 if unknown. */
int km_algorithm_parse(const char *name, km_algorithm *a);

typedef struct km_model km_model;

/*
 * The generic predict: answer is one KM_OUT_* flag other than LABELS
 * (VALUES, SCORES, PROBABILITIES, PROJECTIONS, INVERSE, VARIANCES,
 * COVARIANCE); out gets n rows of what the typed function writes
 * (km_krr_predict, km_svc_decision, km_gpr_covariance ...). KM_EINVAL
 * when the model's algorithm does not answer it.
 * km_predict_labels: class indices into the model's labels (a
 * KM_OUT_LABELS algorithm) or cluster ids (KM_OUT_CLUSTERS). Both apply
 * the model's preprocessing (km_model_preprocess) to X first.
 */
/* KM_OUT_* flags of what m can answer: its algorithm's outputs less those
 * its fit did not prepare (an svc fitted without probability, a kpca
 * without the inverse map). */
unsigned km_model_outputs(const km_model *m);
/* Decision values per row of m's KM_OUT_SCORES answer (svc: k(k-1)/2
 * one-vs-one pairs; klr: 1 for two classes, else k; svr: 1), and in
 * *sign (may be NULL) the factor that gives scikit-learn's sign
 * convention (-1 for a binary svc, whose LIBSVM value is positive for
 * the first class; else 1). 0 when m answers no scores. */
size_t km_model_score_columns(const km_model *m, double *sign);
/* A classifier's class count: its labels' once set, before that (inside
 * a fit) what its payload holds; 0 for a model of no classes. */
size_t km_model_n_classes(const km_model *m);
/* Values per row of m's answer (a KM_OUT_* flag) for n rows: what
 * km_predict writes a row and what every caller sizes and indexes its
 * buffer by, the one place that says it. Labels and cluster ids 1;
 * decision values km_model_score_columns; probabilities one per class
 * (km_model_n_classes); the covariance n; the inverse map n_features;
 * values, variances and projections n_outputs. 0 when m answers no such
 * thing of that width (a classifier of no classes yet). */
size_t km_model_answer_width(const km_model *m, unsigned answer, size_t n);
km_status km_predict(const km_model *m, unsigned answer, const double *X,
                     size_t n, double *out, km_error *err) KM_MUST_CHECK;
km_status km_predict_labels(const km_model *m, const double *X, size_t n,
                            int *out, km_error *err) KM_MUST_CHECK;

/*
 * One training problem, whatever the algorithm: X (n x d) and what it
 * learns from. Borrowed by the calls that take it.
 *   krr   y: n x m targets
 *   svr   y: n targets, m = 1
 *   svc   labels: n class indices in [0, n_classes)
 *   kpca  X only
 *   gpr   y: n targets, m = 1
 *   kkmeans  X only
 *   klr   labels: n class indices in [0, n_classes)
 */
typedef struct km_problem {
    const double *X;
    size_t n, d;
    const double *y;
    size_t m;
    const int *labels;
    size_t n_classes;
} km_problem;

/* The generic life cycle; params points to a's own struct (km_krr_params
 * for krr, km_svm_params for svc and svr, km_kpca_params for kpca,
 * km_gpr_params for gpr), of
 * km_algorithm_params_size(a) bytes (0 if a is invalid). */
size_t km_algorithm_params_size(km_algorithm a);
/* Fills params with a's defaults. */
void km_algorithm_params_default(km_algorithm a, void *params);
/* a's parameter check against pb's sizes (km_krr_check, ...). */
km_status km_algorithm_check(km_algorithm a, const void *params,
                             const km_problem *pb,
                             km_error *err) KM_MUST_CHECK;
/* Peak bytes of a fit (km_krr_fit_bytes, ...). */
size_t km_algorithm_fit_bytes(km_algorithm a, const void *params,
                              const km_problem *pb);
/* Fits as the typed function does (km_krr_fit, ...); caller owns *out. */
/* pre (may be NULL: none) is the preprocessing, learnt from pb and kept
 * in the model (see km_preprocess below); the typed fits do none.
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
typedef struct km_preprocess km_preprocess;
km_status km_fit(km_algorithm a, const km_kernel *k, const void *params,
                 const km_preprocess *pre, const km_problem *pb,
                 const km_fit_control *ctl, km_model **out,
                 km_error *err) KM_MUST_CHECK;

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
/* Number of values predict answers per row (krr: outputs; svr, svc: 1;
 * kpca: n_components for project). */
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
 *   n_outputs       krr 1 .. KM_MODEL_MAX_OUTPUTS; svc, svr 1;
 *                   kpca 1 .. n_samples - 1; gpr 1; kkmeans 1;
 *                   klr 1 (two classes) or
 *                   the class count, at most min(n_samples,
 *                   KM_MODEL_MAX_CLASSES)
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

/* Checks that X (n rows) fits the model: n_features columns, all finite.
 * Names the first bad entry ("X[3][1] is not a finite number"). */
km_status km_model_check_input(const km_model *m, const double *X, size_t n,
                               size_t d, km_error *err) KM_MUST_CHECK;

/* Checks that X is n x d with every entry finite. */
km_status km_check_matrix(const char *what, const double *X, size_t n,
                          size_t d, km_error *err) KM_MUST_CHECK;

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
typedef enum {
    KM_SCALE_NONE = 0,
    KM_SCALE_STANDARDIZE = 1,
    KM_SCALE_MINMAX = 2,
    KM_SCALE_COUNT
} km_scale;

typedef struct km_preprocess {
    km_scale x;
    int center_y;
} km_preprocess;

/* "none", "standardize", "minmax"; NULL if invalid. */
const char *km_scale_name(km_scale s);
/* Returns 0 and sets *s on success, -1 if unknown. */
int km_scale_parse(const char *name, km_scale *s);

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
    X(R2, "r2")                                                              \
    X(NEG_MSE, "neg_mean_squared_error")                                     \
    X(NEG_MAE, "neg_mean_absolute_error")                                    \
    X(ACCURACY, "accuracy")                                                  \
    X(BALANCED_ACCURACY, "balanced_accuracy")                                \
    X(NEG_LOG_LOSS, "neg_log_loss")                                          \
    X(NEG_RECONSTRUCTION, "neg_reconstruction_error")

typedef enum {
#define KM_SCORING_ENUM(e, name) KM_SCORING_##e,
    KM_SCORING_MAP(KM_SCORING_ENUM)
#undef KM_SCORING_ENUM
    KM_SCORING_COUNT
} km_scoring;

/* The name ("r2", ...); NULL if invalid. */
const char *km_scoring_name(km_scoring s);
/* Returns 0 and sets *s on success, -1 if unknown. */
int km_scoring_parse(const char *name, km_scoring *s);
/* The scoring a search of a uses when none is named: r2 (krr, svr),
 * accuracy (svc, klr), neg_reconstruction_error (kpca); KM_SCORING_COUNT for
 * an invalid a. */
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
typedef enum {
    KM_CV_KFOLD,
    KM_CV_LOO,
    KM_CV_GCV,
    KM_CV_PREDEFINED
} km_cv_kind;

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

/* Threads of a search. svc, svr and kpca (the generic engine) fit their
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

/* ---------------------------------------------------------------- KRR */

/* The solver of a krr fit. The numbers are those of the params figure
 * "solver". */
typedef enum km_krr_solver {
    KM_KRR_SOLVER_EXACT = 0,   /* Cholesky of the n x n K + alpha I */
    KM_KRR_SOLVER_NYSTROM = 1, /* m centres, Falkon's preconditioned CG */
    KM_KRR_SOLVER_RFF = 2,     /* D random Fourier features, D x D ridge */
    KM_KRR_SOLVER_AUTO = 3,    /* exact when it fits the memory budget
                                * comfortably, else nystrom
                                * (km_krr_resolve_solver) */
    KM_KRR_SOLVER_COUNT
} km_krr_solver;

/* How the nystrom solver picks its centres. The numbers are those of the
 * params figure "centres". */
typedef enum km_krr_centre_rule {
    KM_KRR_CENTRES_UNIFORM = 0,    /* uniformly without replacement */
    KM_KRR_CENTRES_RPCHOLESKY = 1, /* randomly pivoted Cholesky */
    KM_KRR_CENTRES_COUNT
} km_krr_centre_rule;

/*
 * The fields after alpha apply to the nystrom or the rff solver only (the
 * exact solver neither checks nor records them), so that {alpha} alone,
 * the other fields zero, is an exact fit as before they existed. Those of
 * nystrom apply to auto too (it may resolve to nystrom) and are checked
 * with it.
 */
typedef struct km_krr_params {
    double alpha;         /* ridge, > 0; default 1.0 */
    km_krr_solver solver; /* default EXACT */
    size_t n_centres;     /* nystrom: m, 1 .. n; 0 (default):
                           * km_krr_centres */
    uint64_t seed;        /* nystrom, rff: of the draw; default 0 */
    double cg_tol;        /* nystrom: > 0, default 1e-7 */
    size_t cg_max_iter;   /* nystrom: >= 1, default 100 */
    size_t n_components;  /* rff: D, 1 .. KM_KRR_MAX_COMPONENTS; default
                           * KM_KRR_DEFAULT_COMPONENTS (0 means it too) */
    km_krr_centre_rule centres; /* nystrom: default UNIFORM */
} km_krr_params;

/* The rff solver's default and largest number of features D. */
#define KM_KRR_DEFAULT_COMPONENTS 1000
#define KM_KRR_MAX_COMPONENTS 65536

/* The default number of centres of the nystrom solver for n rows:
 * min(n, ceil(sqrt(n) ln n) bounded to [KM_KRR_DEFAULT_CENTRES,
 * KM_KRR_MAX_DEFAULT_CENTRES]) (km_krr_centres). */
#define KM_KRR_DEFAULT_CENTRES 1000
#define KM_KRR_MAX_DEFAULT_CENTRES 10000

km_krr_params km_krr_params_default(void);
/* KM_EINVAL naming the field: params.alpha not a finite number > 0,
 * params.solver unknown; with the nystrom solver, params.cg_tol not a
 * finite number > 0, params.cg_max_iter 0; with nystrom or rff,
 * params.seed above 2^53; with rff, params.n_components above
 * KM_KRR_MAX_COMPONENTS; KM_EPROBLEM (422 in the API) for
 * params.n_centres above n_samples. The kernel is checked apart
 * (km_krr_check_kernel). */
km_status km_krr_check(const km_krr_params *p, size_t n_samples,
                       km_error *err) KM_MUST_CHECK;
/* With the rff solver, KM_EINVAL naming params.solver and the kernel's
 * type unless the kernel is rbf, laplacian or laplacian_l2 (the
 * shift-invariant ones with a spectral density); KM_OK otherwise. */
km_status km_krr_check_kernel(const km_krr_params *p, const km_kernel *k,
                              km_error *err) KM_MUST_CHECK;
/* "exact", "nystrom", "rff"; NULL if invalid. */
const char *km_krr_solver_name(km_krr_solver s);
/* The number of centres a nystrom fit of n rows asks for (n_centres, or
 * its default: min(n, ceil(sqrt(n) ln n)) bounded to [1000, 10000], the
 * order of centres Falkon's analysis asks for exact KRR's accuracy; 1000
 * up to n = 11,449, 3,641 at 10^5, 10,000 from 569,300 on). An rpcholesky
 * fit may keep fewer (km_krr_fit). */
size_t km_krr_centres(const km_krr_params *p, size_t n);
/* "uniform", "rpcholesky"; NULL if invalid. */
const char *km_krr_centres_name(km_krr_centre_rule c);
/*
 * The solver a fit of p on n rows, d features and m outputs runs under a
 * memory budget of budget bytes: p->solver itself unless it is AUTO;
 * AUTO is EXACT when the exact solver's estimate (km_krr_fit_bytes) is at
 * most half the budget ("comfortably": the other half is for the
 * request's own body, the models served and the predicts and fits that
 * run beside it), else NYSTROM. km_krr_fit and km_krr_fit_bytes resolve
 * with km_memory_budget().
 */
km_krr_solver km_krr_resolve_solver(const km_krr_params *p, size_t n,
                                    size_t d, size_t m, size_t budget);

/*
 * Solves (K + alpha I) C = Y by Cholesky in place on one n x n buffer.
 * X: n x d; Y: n x m (m outputs). Borrows all inputs; caller owns *out.
 * KM_ENOTPD when K + alpha I is not positive definite. Training figures:
 * "seconds" and "rkhs_norm_sq", per output (a list when m > 1): the
 * squared RKHS norm of the fitted function, a^T K a for the output's
 * dual coefficients a, computed without K as a^T y - alpha a^T a.
 *
 * Every fit (krr, svc, svr, kpca) answers KM_EPROBLEM, naming the row,
 * when the data overflow the kernel in double precision (k(x, x), or for
 * kernels of inner products |x|^2, not a finite number: X near 1e300 on
 * a linear kernel), and svc and svr when their solution is not finite;
 * so a fitted model never holds or predicts infinities from its own rows.
 *
 * With params.solver NYSTROM (Falkon: Rudi, Carratino and Rosasco 2017),
 * m = km_krr_centres(p, n) centres Z are drawn from X's rows uniformly
 * without replacement (core's km_rng seeded with params.seed; kept in
 * the order of X) and the fit solves
 *     (K_nm^T K_nm + alpha K_mm) C = K_nm^T Y
 * (K_nm = k(X, Z), K_mm = k(Z, Z)) by conjugate gradients preconditioned
 * with two m x m Cholesky factors, computing K_nm in row blocks at every
 * iteration (never whole). With m = n it is exact KRR's solution. It
 * stops when every output's relative residual is at most params.cg_tol
 * or after params.cg_max_iter iterations (then the iterate is kept: see
 * the figure "residual"). The model is an ordinary krr model whose
 * training rows are the m centres and whose dual coefficients are C, so
 * n_samples is m and predict costs O(m d) per row. Params figures: alpha
 * and, for nystrom only, "solver", "n_centres", "seed", "cg_tol",
 * "cg_max_iter", "centres"; training figures: "seconds", "rkhs_norm_sq" (C^T K_mm C
 * per output) and, for nystrom only, "iterations" and "residual" (the
 * largest relative residual of the outputs at the end). KM_ENOTPD when
 * K_mm cannot be factored even with a shift; KM_ECANCELLED as ever.
 *
 * With params.centres RPCHOLESKY the centres are the pivots of randomly
 * pivoted Cholesky (Chen, Epperly, Tropp and Webber 2022) on K, each
 * drawn with probability proportional to the diagonal of the residual
 * K - F F^T, in the accelerated form (Epperly, Tropp and Webber 2024:
 * blocks of proposals from the same diagonal, each accepted with
 * probability its residual given those accepted before it over the
 * diagonal it was drawn from; the pivots are distributed as the
 * sequential algorithm's). It evaluates O(n m) kernel values and holds
 * the n x m factor F (km_krr_fit_bytes counts it: 8 n m bytes). It stops
 * early, with fewer centres than asked, when the residual's trace falls
 * to 1e-12 of K's (K then has numerical rank below m); the params figure
 * "n_centres" is the number kept, and "centres" the rule.
 *
 * With params.solver AUTO the fit runs the solver km_krr_resolve_solver
 * picks under km_memory_budget(); the params figures are that solver's,
 * with "solver" AUTO, and the training figures add "solver" (the one
 * run) and "memory_budget_mb" (the budget the choice was made against).
 *
 * With params.solver RFF (random Fourier features: Rahimi and Recht
 * 2007), D = params.n_components frequencies W (D x d) are drawn from the
 * kernel's spectral density and phases b from U[0, 2 pi) (core's km_rng
 * seeded with params.seed; km_krr_rff_draw), z(x) = sqrt(2/D) cos(W x + b),
 * and the fit solves (Z^T Z + alpha I) w = Z^T Y by Cholesky, Z built in
 * row blocks (never whole): memory O(D^2 + block D). The model keeps W,
 * b and w (its n_samples is D); predict = z(x) w costs O(D d) per row.
 * Only rbf, laplacian and laplacian_l2 kernels (km_krr_check_kernel).
 * Params figures: alpha, "solver" (2), "n_components", "seed"; training
 * figures "seconds", "rkhs_norm_sq" (|w|^2 per output), "solver".
 */
km_status km_krr_fit(const km_kernel *k, const km_krr_params *p,
                     const double *X, size_t n, size_t d, const double *Y,
                     size_t m, const km_fit_control *ctl, km_model **out,
                     km_error *err) KM_MUST_CHECK;

/* out: n x m predictions (caller-allocated). KM_ECONFLICT if not krr. */
km_status km_krr_predict(const km_model *m, const double *X, size_t n,
                         double *out, km_error *err) KM_MUST_CHECK;

/* The n_samples x n_outputs dual coefficients, row-major; borrowed, valid
 * while the model lives. NULL if not krr. For an rff model: the D x
 * n_outputs primal weights w. */
const double *km_krr_dual_coef(const km_model *m);

/* Bytes a fit of this size needs at its peak (for admission control):
 * the exact solver's n x n matrix, the nystrom solver's
 * O(m^2 + block m + n outputs) (plus 8 n m with rpcholesky centres), or
 * the rff solver's O(D^2 + block D + D d) (km_krr.c); auto's is that of
 * the solver it resolves to under km_memory_budget(). p NULL: the exact
 * solver. */
size_t km_krr_fit_bytes(size_t n, size_t d, size_t m,
                        const km_krr_params *p);

/* ---------------------------------------------------------------- SVM */

/*
 * C-SVC (one-vs-one) and epsilon-SVR, trained by SMO with second-order
 * working-set selection and shrinking, as LIBSVM (same problems, same
 * stopping rule, same bias), so that answers agree with LIBSVM's.
 * Labels for C-SVC are given as indices into a sorted list of distinct
 * classes: the caller maps its labels (numbers or strings) to 0..k-1 in
 * sorted order; the model keeps the class count and answers indices.
 * The kernel is kept in cache_mb: the whole Gram when it fits (computed
 * once and shared by all pairs), else an LRU cache of kernel columns.
 */
typedef enum km_svm_solver {
    KM_SVM_SOLVER_EXACT = 0,   /* SMO on the kernel (LIBSVM) */
    KM_SVM_SOLVER_NYSTROM = 1, /* svc only: m centres, Nystrom features,
                                  LIBLINEAR's dual coordinate descent */
    KM_SVM_SOLVER_SCREENED = 2, /* svc only: SMO on working sets that a
                                   nystrom screen picks, grown until all
                                   rows meet the optimality conditions:
                                   the exact solver's optimum */
    KM_SVM_SOLVER_AUTO = 3,     /* svc only: EXACT or SCREENED, by
                                   km_svm_resolve_solver */
    KM_SVM_SOLVER_COUNT
} km_svm_solver;

/* The precision svc's nystrom solver holds its features in: FLOAT64
 * (double, the default) or FLOAT32 (float: half the memory; the kernel
 * block by SGEMM and the triangular solve by STRSM, the descent reading
 * float rows into double sums and double weights; the model is the same
 * double model, to float's rounding of the features). */
typedef enum km_svm_precision {
    KM_SVM_PRECISION_FLOAT64 = 0,
    KM_SVM_PRECISION_FLOAT32 = 1,
    KM_SVM_PRECISION_COUNT
} km_svm_precision;

/* The default number of centres of svc's nystrom solver: min(n, this). */
#define KM_SVM_DEFAULT_CENTRES 1000
/* The nystrom solver's default cap on epochs per pair (LIBLINEAR's). */
#define KM_SVM_DEFAULT_EPOCHS 1000

typedef struct km_svm_params {
    double C;             /* > 0, default 1 */
    double epsilon;       /* SVR only, >= 0, default 0.1 */
    double tol;           /* > 0, default 1e-3 */
    double cache_mb;      /* > 0, default 200 */
    int shrinking;        /* default 1 */
    int probability;      /* SVC only, default 0 */
    const double *class_weight; /* SVC: n_classes weights or NULL (all 1);
                                   borrowed; C of class c is C*w[c] */
    long max_iter;        /* <= 0: no cap beyond the solver's own
                             (max(10^7, 100 n) per binary problem);
                             nystrom: epochs per pair, <= 0 for
                             KM_SVM_DEFAULT_EPOCHS */
    /* Last, so that the fields above alone are an exact fit as before: */
    km_svm_solver solver; /* default EXACT; NYSTROM and SCREENED for svc
                             only */
    size_t n_centres;     /* nystrom (screened: the screen's): m,
                             n_classes .. n; 0 (default):
                             min(n, KM_SVM_DEFAULT_CENTRES) */
    uint64_t seed;        /* nystrom and screened: of the centres' draw
                             and of each epoch's order; at most 2^53;
                             default 0 */
    km_krr_centre_rule centres; /* nystrom: as krr's; default UNIFORM */
    km_svm_precision precision; /* nystrom: the features'; default
                                   FLOAT64 */
} km_svm_params;

km_svm_params km_svm_params_default(void);

/* The solver an svc fit of n rows and k classes with p runs: p->solver,
 * or for AUTO: EXACT with probability, up to KM_SVM_AUTO_EXACT_ROWS rows,
 * or when the exact solver shares one Gram among the pairs (k > 2 and
 * 8 n^2 bytes at most half of cache_mb); else SCREENED. Both reach the
 * same optimum; measured on Fashion-MNIST (rbf, C = 10): at 5000 rows
 * exact with a shared Gram 0.4 s, screened 0.5 s, exact with columns
 * cached in 200 MB 1.4 s; at 10,000 rows 2.0 s (shared), 1.1 s, 3.4 s;
 * at 20,000 rows 19.9 s, 3.1 s, 24.3 s. */
#define KM_SVM_AUTO_EXACT_ROWS 2000
km_svm_solver km_svm_resolve_solver(const km_svm_params *p, size_t n,
                                    size_t k);
/* Checks ranges, naming the field ("params.C must be a finite number > 0",
 * "params.class_weight[2] must be a finite number > 0"): KM_EINVAL;
 * probability or class_weight for svr is KM_EINVAL; for svc, n_classes
 * < 2 is KM_EPROBLEM ("y has 1 distinct class; svc needs at least 2").
 * The solver: unknown, nystrom for svr, probability with nystrom, a
 * seed above 2^53, with nystrom an unknown centres rule or precision
 * are KM_EINVAL
 * (n_centres against the rows and classes: km_svm_check_centres). */
km_status km_svm_check(const km_svm_params *p, km_algorithm algo,
                       size_t n_classes, km_error *err) KM_MUST_CHECK;
/* With the nystrom solver: n_centres above n_samples or below
 * n_classes is KM_EPROBLEM (422 in the API); KM_OK otherwise. */
km_status km_svm_check_centres(const km_svm_params *p, size_t n_samples,
                               size_t n_classes, km_error *err) KM_MUST_CHECK;
/* The nystrom solver's m for n rows. */
size_t km_svm_centres(const km_svm_params *p, size_t n);
/* "exact", "nystrom"; NULL for a value out of range. */
const char *km_svm_solver_name(km_svm_solver s);
/* "float64", "float32"; NULL for an invalid value. */
const char *km_svm_precision_name(km_svm_precision p);

/* y: n class indices in [0, n_classes); every class must occur
 * (KM_EPROBLEM for fewer than 2 or a class without rows; KM_EINVAL for an
 * index out of range). Borrows all inputs; caller owns *out. The
 * training figures are "seconds", "iterations" (all solves), "objective"
 * (per pair), "n_support" (per class), "margin" (per pair, in the order
 * of "objective": 1/|w|, with |w|^2 = a^T Q a = 2 (objective + sum of
 * the pair's alphas) from LIBSVM's dual objective a^T Q a / 2 - sum a;
 * left out when some |w|^2 is not > 0, as a kernel that is not positive
 * semi-definite can give), and "iterations_capped" (solves stopped by
 * the iteration cap) when any was. KM_ECANCELLED when the progress
 * callback asks. */
km_status km_svc_fit(const km_kernel *k, const km_svm_params *p,
                     const double *X, size_t n, size_t d, const int *y,
                     size_t n_classes, const km_fit_control *ctl,
                     km_model **out, km_error *err) KM_MUST_CHECK;
/* y: n finite targets. Figures as svc with one objective and one
 * n_support. Borrows all inputs; caller owns *out. */
km_status km_svr_fit(const km_kernel *k, const km_svm_params *p,
                     const double *X, size_t n, size_t d, const double *y,
                     const km_fit_control *ctl, km_model **out,
                     km_error *err) KM_MUST_CHECK;

/* 0 / false for a model that is not svc. */
size_t km_svc_n_classes(const km_model *m);
int km_svc_has_probability(const km_model *m);

/* Predicted class indices (labels[n]), by one-vs-one voting; a tie goes
 * to the lowest class index (as LIBSVM). KM_ECONFLICT if not svc. */
km_status km_svc_predict(const km_model *m, const double *X, size_t n,
                         int *labels, km_error *err) KM_MUST_CHECK;
/* One-vs-one decision values: n rows of k(k-1)/2 values, pairs (0,1),
 * (0,2), ..., (k-2,k-1), positive meaning the first class of the pair.
 * (Binary: one value per row, and api flips the sign to sklearn's.) */
km_status km_svc_decision(const km_model *m, const double *X, size_t n,
                          double *out, km_error *err) KM_MUST_CHECK;
/* n rows of k class probabilities (Platt sigmoids per pair, coupled as
 * LIBSVM; each row sums to 1); KM_ECONFLICT without probability. */
km_status km_svc_probability(const km_model *m, const double *X, size_t n,
                             double *out, km_error *err) KM_MUST_CHECK;
/* SVR predictions, n values. KM_ECONFLICT if not svr. */
km_status km_svr_predict(const km_model *m, const double *X, size_t n,
                         double *out, km_error *err) KM_MUST_CHECK;

/* Peak bytes of a fit (kernel storage within cache_mb, solver workspace,
 * copies, the model), for admission control. km_svm_fit_bytes bounds
 * epsilon-SVR and binary C-SVC; km_svc_fit_bytes takes the class count. */
size_t km_svm_fit_bytes(size_t n, size_t d, const km_svm_params *p);
size_t km_svc_fit_bytes(size_t n, size_t d, size_t n_classes,
                        const km_svm_params *p);

/*
 * What a fitted svc or svr model keeps (borrowed, valid while the model
 * lives; 0 or NULL for other models). The nsv support vectors are grouped
 * by class (svc), in training order within a class.
 *   support_count    nsv
 *   n_support        svc: k counts, one per class
 *   support_indices  nsv indices of the training rows
 *   support_vectors  nsv x n_features
 *   dual_coef        svc: nsv x (k-1), LIBSVM's layout: a support vector
 *                    of class c has, for each other class b, its
 *                    coefficient y*alpha in pair (c, b) at column b if
 *                    b < c, else b-1; svr: nsv values alpha - alpha*
 *   rho              svc: one per pair, svr: one; decision value =
 *                    sum coef k(sv, x) - rho (scikit-learn's intercept_
 *                    is -rho, with the binary sign flipped)
 */
size_t km_svm_support_count(const km_model *m);
const int *km_svc_n_support(const km_model *m);
const int *km_svm_support_indices(const km_model *m);
const double *km_svm_support_vectors(const km_model *m);
const double *km_svm_dual_coef(const km_model *m);
const double *km_svm_rho(const km_model *m);

/* ---------------------------------------------------------------- KPCA */

/*
 * Kernel PCA as scikit-learn's KernelPCA: the top n_components eigenpairs
 * (lambda_j, alpha_j) of the centered training Gram matrix
 * Kc = H K H (H = I - 11^T/n), eigenvalues in descending order, unit
 * eigenvectors signed so that the entry of largest magnitude is positive
 * (sklearn's svd_flip). The projection of a training point i on
 * component j is sqrt(lambda_j) alpha_j[i]; a new point is projected with
 * its kernel row centered by the training column means, its own row mean
 * and the grand mean of K.
 */

/* The eigen-solver. AUTO picks by problem size (see km_kpca.c); the others
 * force a solver (for tests and benchmarks). The numbers are those of the
 * "solver" training figure. */
typedef enum km_kpca_solver {
    KM_KPCA_SOLVER_AUTO = 0,      /* choose by n and n_components */
    KM_KPCA_SOLVER_DENSE = 1,     /* LAPACK, the top k by index */
    KM_KPCA_SOLVER_ITERATIVE = 2, /* restarted block Lanczos; dense when it
                                     does not converge, or when n is below
                                     12 block sizes (~24 n_components) */
    KM_KPCA_SOLVER_RANDOMIZED = 3, /* Halko-Martinsson-Tropp randomized range
                                      finder with power iterations until
                                      the top Ritz pairs converge; never
                                      chosen by AUTO; dense when it does
                                      not converge */
    KM_KPCA_SOLVER_NYSTROM = 4, /* eigenvectors of the centred Nystrom
                                   approximation on n_centres centres:
                                   memory O(m^2 + block m), never the
                                   n x n matrix; never chosen by AUTO */
    KM_KPCA_SOLVER_COUNT
} km_kpca_solver;

typedef struct km_kpca_params {
    size_t n_components;       /* >= 1 and <= n_samples */
    int fit_inverse_transform; /* default 0 */
    double alpha;              /* ridge of the inverse map, > 0, default 1 */
    km_kpca_solver solver;     /* default AUTO */
    size_t n_centres;          /* nystrom: m, n_components + 1 .. n; 0
                                * (default): min(n, KM_KRR_DEFAULT_CENTRES) */
    uint64_t seed;             /* nystrom: of the centres' draw; default 0 */
} km_kpca_params;

/* n_components 1 (callers set it: it has no sensible default), no inverse
 * map, alpha 1, solver AUTO. */
km_kpca_params km_kpca_params_default(void);
/* KM_EINVAL naming the field: params.n_components below 1, params.alpha
 * not a finite number > 0, params.solver unknown; with the nystrom
 * solver, params.seed above 2^53 or fit_inverse_transform set (the
 * inverse map is learned on all n rows: not built for nystrom).
 * KM_EPROBLEM (422 in the API) for params.n_components above n_samples,
 * and with nystrom for params.n_centres above n_samples or
 * params.n_components not below the centres. */
km_status km_kpca_check(const km_kpca_params *p, size_t n_samples,
                        km_error *err) KM_MUST_CHECK;
/* "auto", "dense", "iterative", "randomized", "nystrom"; NULL if
 * invalid. */
const char *km_kpca_solver_name(km_kpca_solver s);

/*
 * Fits kernel PCA on X (n x d). Borrows k, p and X; caller owns *out
 * (free with km_model_free). Peak memory: one n x n matrix plus
 * O(n (d + n_components)) (see km_kpca_fit_bytes).
 *
 * Errors: KM_EINVAL as km_kpca_check, or for X empty or not finite;
 * KM_EPROBLEM when the centered kernel matrix has fewer than n_components
 * positive eigenvalues (an eigenvalue counts as positive when it exceeds
 * 1e-12 times the largest, scikit-learn's threshold; the message says how
 * many there are). Since Kc 1 = 0, at most n - 1 are positive.
 * KM_ENOTPD when the inverse map's ridge system is not positive definite;
 * KM_ECANCELLED when ctl asks to stop (the dense solver itself cannot be
 * interrupted: the request is honoured after it).
 *
 * With fit_inverse_transform, the model also learns the map from
 * projections back to inputs by kernel ridge regression, exactly as
 * scikit-learn: dual = (K(E, E) + alpha I)^-1 X, where E (n x
 * n_components) is the training embedding and K the same kernel with the
 * same parameters; a default gamma (0) resolves to 1/n_components there,
 * as scikit-learn's gamma=None does on the embedded points.
 *
 * Params figures: "n_components" (integer), "fit_inverse_transform"
 * (boolean), "alpha". Training figures: "seconds"; "eigenvalues" (array,
 * descending); "explained_variance_ratio" (array: lambda_j / trace(Kc),
 * i.e. the share of the total variance in feature space, all n
 * eigenvalues counted); "solver" (KM_KPCA_SOLVER_DENSE, _ITERATIVE or
 * _RANDOMIZED: the one that produced the result); "fallback" (boolean: the
 * iterative or randomized solver did not converge and dense took over);
 * "iterations" (products of Kc with a block of vectors; 0 for dense; q + 2
 * for the randomized solver's q power iterations).
 *
 * Every solver but nystrom holds the whole n x n centered Gram matrix:
 * the iterative and randomized ones save time, not memory. The nystrom
 * solver finds the eigenpairs of the centred Gram matrix of the Nystrom
 * features phi(x) = k(x, Z) L^-T of m centres Z (L L^T = k(Z, Z)), from
 * their m x m covariance accumulated over row blocks of X; its model
 * keeps the centres (n_samples = m) and projects a new row in O(m d).
 * Its figures add params "eigen_solver", "n_centres" and "seed";
 * "iterations" counts its passes over X (3).
 */
km_status km_kpca_fit(const km_kernel *k, const km_kpca_params *p,
                      const double *X, size_t n, size_t d,
                      const km_fit_control *ctl, km_model **out,
                      km_error *err) KM_MUST_CHECK;
/* out: n x n_components projections (caller-allocated). Borrows X (n x
 * n_features). KM_ECONFLICT if not kpca; KM_EINVAL for bad X. */
km_status km_kpca_project(const km_model *m, const double *X, size_t n,
                          double *out, km_error *err) KM_MUST_CHECK;
/* 1 if m is a kpca model fitted with fit_inverse_transform, else 0. */
int km_kpca_has_inverse(const km_model *m);
/* P: n x n_components projections; out: n x n_features (caller-allocated).
 * KM_ECONFLICT if not kpca or fitted without fit_inverse_transform;
 * KM_EINVAL for an empty or non-finite P. */
km_status km_kpca_inverse(const km_model *m, const double *P, size_t n,
                          double *out, km_error *err) KM_MUST_CHECK;
/* The n_components eigenvalues, descending; borrowed, valid while the
 * model lives. NULL if not kpca. */
const double *km_kpca_eigenvalues(const km_model *m);

/* Bytes a fit of this size needs at its peak (for admission control). */
size_t km_kpca_fit_bytes(size_t n, size_t d, const km_kpca_params *p);

/* ---------------------------------------------------------------- GPR */

/*
 * Gaussian-process regression as scikit-learn's GaussianProcessRegressor
 * with kernel ConstantKernel(signal_variance) * k and alpha = noise: the
 * prior covariance of f is s k(x, z) (s = params.signal_variance, k the
 * model's kernel; rbf's gamma = 1/(2 l^2) for sklearn's length scale l),
 * and the fit factors K = s k(X, X) + noise I = L L^T (core's KRR solve,
 * km_krr_solve) and keeps a = K^-1 y' with y' the targets, or with
 * normalize_y (y - mean) / std (population std; 1 when it is 0), as
 * sklearn. For a new point x, with k_x = s k(X, x):
 *   mean      k_x^T a (times std, plus the mean, with normalize_y)
 *   variance  s k(x, x) - |L^-1 k_x|^2 (clipped at 0, as sklearn; times
 *             std^2): the variance of f(x), without the noise
 *   covariance of a batch: s k(X*, X*) - V^T V, V = L^-1 k(X, X*) s
 * The log marginal likelihood of y' is
 *   -y'^T a / 2 - sum_i log L_ii - (n / 2) log(2 pi).
 *
 * With optimizer LBFGS the fit first maximises it over theta = (log s,
 * log gamma, log noise) by a projected L-BFGS (core's own, km_gpr.c)
 * with the analytic gradient, within sklearn's default bounds: s and
 * noise in [1e-5, 1e5], gamma in [5e-11, 5e9] (rbf's l in [1e-5, 1e5]).
 * gamma is tuned only for kernels exp(gamma t) (rbf, laplacian,
 * laplacian_l2, exponential), whose derivative is k log k; with any other
 * kernel only s and the noise are. The first start is the given
 * parameters (clamped into the bounds), then n_restarts starts drawn
 * uniformly in the log-bounds by core's km_rng seeded with seed; the
 * start whose optimum has the highest likelihood wins, and the model is
 * fitted there (its kernel holds the tuned gamma).
 *
 * With solver NYSTROM (no optimizer) the fit picks m centres Z as krr's
 * nystrom solver does and computes the subset-of-regressors mean,
 * k(x, Z) c with (K_nm^T K_nm + alpha K_mm) c = K_nm^T y', alpha =
 * noise / s, by krr's solver itself (km_krr_fit_nystrom: Falkon); with
 * variance, also the DTC variance (Quinonero-Candela and Rasmussen 2005)
 *   s (k(x, x) - |phi|^2 + alpha |C^-1 phi|^2),  phi = L^-1 k(Z, x),
 * L L^T = K_mm, C C^T = alpha I + Phi^T Phi, Phi = K_nm L^-T (times
 * std^2 with normalize_y), the batch covariance likewise, and the log
 * marginal likelihood of y' under N(0, s (Phi Phi^T + alpha I)). Exact
 * when m = n. A nystrom model without the variance answers the mean
 * only.
 */
/* The solver of a gpr fit. The numbers are those of the params figure
 * "solver". */
typedef enum km_gpr_solver {
    KM_GPR_SOLVER_EXACT = 0,   /* Cholesky of the n x n s K + noise I */
    KM_GPR_SOLVER_NYSTROM = 1, /* m centres: the mean by krr's Falkon
                                * solver, the variance by DTC */
    KM_GPR_SOLVER_AUTO = 2,    /* exact when it fits the memory budget
                                * comfortably, else nystrom
                                * (km_gpr_resolve_solver) */
    KM_GPR_SOLVER_COUNT
} km_gpr_solver;

typedef enum km_gpr_optimizer {
    KM_GPR_OPTIMIZER_NONE = 0,  /* the given hyperparameters */
    KM_GPR_OPTIMIZER_LBFGS = 1, /* maximise the log marginal likelihood */
    KM_GPR_OPTIMIZER_COUNT
} km_gpr_optimizer;

typedef struct km_gpr_params {
    double noise;           /* > 0, added to K's diagonal; default 1e-10
                               (sklearn's alpha) */
    double signal_variance; /* > 0, default 1 (ConstantKernel's) */
    int normalize_y;        /* default 0 */
    km_gpr_optimizer optimizer; /* default NONE */
    size_t n_restarts;      /* LBFGS: 0 .. KM_GPR_MAX_RESTARTS, default 0 */
    uint64_t seed;          /* LBFGS: of the restarts' draw, default 0 */
    size_t max_iter;        /* LBFGS: iterations per start, 1 ..
                               KM_GPR_MAX_ITER, default 200 */
    /* The fields below apply to the nystrom solver (and auto, which may
     * resolve to it) only, as krr's of the same names; seed above is
     * also the centres' draw. The exact solver neither checks nor
     * records them. */
    km_gpr_solver solver;   /* default EXACT */
    size_t n_centres;       /* m, 1 .. n; 0 (default): krr's default */
    double cg_tol;          /* > 0, default 1e-7 */
    size_t cg_max_iter;     /* >= 1, default 100 */
    km_krr_centre_rule centres; /* default UNIFORM */
    int variance;           /* keep the DTC variance's factors (O(n m^2)
                               at fit); default 0: the mean only */
} km_gpr_params;

#define KM_GPR_MAX_RESTARTS 100
#define KM_GPR_MAX_ITER 100000

km_gpr_params km_gpr_params_default(void);
/* KM_EINVAL naming the field: params.noise or params.signal_variance
 * not a finite number > 0, params.optimizer unknown, params.n_restarts
 * above KM_GPR_MAX_RESTARTS, params.max_iter 0 or above KM_GPR_MAX_ITER,
 * params.seed above 2^53, params.solver unknown; with solver NYSTROM or
 * AUTO, params.optimizer LBFGS, noise / signal_variance not a finite
 * number > 0, and krr's nystrom checks of params.centres, cg_tol and
 * cg_max_iter. params.n_centres above the rows is the fit's KM_EPROBLEM
 * (as krr's). */
km_status km_gpr_check(const km_gpr_params *p, km_error *err) KM_MUST_CHECK;
/* "none", "lbfgs"; NULL if invalid. */
const char *km_gpr_optimizer_name(km_gpr_optimizer o);
/* "exact", "nystrom", "auto"; NULL if invalid. */
const char *km_gpr_solver_name(km_gpr_solver s);
/*
 * The solver a fit of p on n rows and d features runs under a memory
 * budget of budget bytes: p->solver itself unless it is AUTO; AUTO is
 * EXACT when the exact solver's estimate (km_gpr_fit_bytes) is at most
 * half the budget, else NYSTROM (krr's rule, km_krr_resolve_solver).
 * km_gpr_fit and km_gpr_fit_bytes resolve with km_memory_budget().
 */
km_gpr_solver km_gpr_resolve_solver(const km_gpr_params *p, size_t n,
                                    size_t d, size_t budget);

/*
 * Fits y (n finite targets) on X (n x d). Borrows all inputs; caller owns
 * *out. Peak memory one n x n matrix (two with the optimizer) plus
 * O(n d): km_gpr_fit_bytes; the model keeps L (n x n) for the variances.
 * The nystrom solver: O(m^2 + n) (with the variance, two m x m factors
 * the model keeps); its params figures add "solver", "n_centres" (the m
 * kept), "seed", "cg_tol", "cg_max_iter", "centres", "variance", its
 * training figures "solver", "iterations", "residual", and
 * "log_marginal_likelihood" only with the variance. auto: the figures of
 * the solver run, params "solver" AUTO, training "solver" (the one run)
 * and "memory_budget_mb", as krr's.
 * KM_ENOTPD when K + noise I cannot be factored (at every start, with
 * the optimizer); KM_ECANCELLED when ctl asks (between the blocks of
 * every factorisation and between the optimizer's iterations).
 *
 * Params figures: "noise", "signal_variance", "normalize_y" (boolean),
 * "optimizer" (integer: KM_GPR_OPTIMIZER_*) and, with LBFGS,
 * "n_restarts", "seed", "max_iter". Training figures: "seconds",
 * "log_marginal_likelihood" (at the model's hyperparameters),
 * "signal_variance", "noise" (the model's: the given ones, or the
 * optimum) and, with LBFGS, "gamma" (the model's kernel's), "iterations"
 * (the optimizer's, all starts), "starts" (starts whose likelihood could
 * be computed), "initial_log_marginal_likelihood" (at the given
 * parameters, clamped into the bounds; omitted when K + noise I cannot
 * be factored there).
 */
km_status km_gpr_fit(const km_kernel *k, const km_gpr_params *p,
                     const double *X, size_t n, size_t d, const double *y,
                     const km_fit_control *ctl, km_model **out,
                     km_error *err) KM_MUST_CHECK;
/* The predictive mean, n values. KM_ECONFLICT if not gpr. */
km_status km_gpr_predict(const km_model *m, const double *X, size_t n,
                         double *out, km_error *err) KM_MUST_CHECK;
/* The predictive variances, n values. KM_ECONFLICT if not gpr, or for a
 * nystrom model fitted without params.variance (also the covariance). */
km_status km_gpr_variance(const km_model *m, const double *X, size_t n,
                          double *out, km_error *err) KM_MUST_CHECK;
/* The predictive covariance of the batch, n x n row-major; KM_EINVAL for
 * n above KM_COV_MAX_ROWS. KM_ECONFLICT if not gpr. */
km_status km_gpr_covariance(const km_model *m, const double *X, size_t n,
                            double *out, km_error *err) KM_MUST_CHECK;
/*
 * The log marginal likelihood at kernel k (its gamma; a default gamma
 * resolves to 1/d) and p's noise, signal_variance and normalize_y, of
 * y (n targets) on X, as sklearn's log_marginal_likelihood; grad (3
 * values, may be NULL) gets its gradient with respect to (log
 * signal_variance, log gamma, log noise), the gamma entry 0 for a
 * kernel whose gamma the optimizer does not tune. KM_ENOTPD when K +
 * noise I cannot be factored. Memory: two n x n matrices.
 */
km_status km_gpr_log_marginal_likelihood(const km_kernel *k,
                                         const km_gpr_params *p,
                                         const double *X, size_t n, size_t d,
                                         const double *y, double *lml,
                                         double *grad,
                                         km_error *err) KM_MUST_CHECK;
/* Bytes a fit of this size needs at its peak (for admission control). */
size_t km_gpr_fit_bytes(size_t n, size_t d, const km_gpr_params *p);

/* ---------------------------------------------------------------- kernel k-means */

/*
 * Kernel k-means: Lloyd's iterations in the kernel's feature space, from
 * the Gram matrix K alone. A centroid is the mean of its member rows'
 * features, mu_c = (1/|S_c|) sum_{j in S_c} phi(x_j), so the squared
 * distance of a point x to it is
 *     k(x, x) - (2/|S_c|) sum_{j in S_c} k(x, x_j) + C_c,
 *     C_c = |mu_c|^2 = (1/|S_c|^2) sum_{j, l in S_c} K_jl.
 * One run, from k initial centres (rows of X): repeat { assign every row
 * to its nearest centroid (the lowest index on ties); the centroids
 * become the means of their rows } as scikit-learn's KMeans(algorithm=
 * "lloyd"): it stops when an assignment repeats the previous one, or when
 * the sum over clusters of |mu_c(new) - mu_c(old)|^2 is at most tol times
 * the mean variance per input feature, trace(H K H) / (n d) (scikit-
 * learn's rule, exactly, for the linear kernel), or after max_iter
 * assignments; in the last two cases the rows are assigned once more to
 * the final centroids. So with the linear kernel and the same initial
 * centres, the assignments, iteration count and inertia are those of
 * KMeans(init=centres, n_init=1, algorithm="lloyd").
 *
 * A cluster left empty by an assignment takes the row farthest from its
 * own centroid (the largest squared distance; the lowest index on ties)
 * among the rows of clusters that keep at least one other row: that row
 * alone is the empty cluster's new centroid (scikit-learn relocates the
 * same way). Empty clusters are taken in index order.
 *
 * Initial centres: greedy k-means++ in feature space, as scikit-learn's
 * (2 + floor(ln k) candidates per centre, the one that lowers the
 * potential most is kept), drawing from core's km_rng seeded with
 * params.seed: the first centre is row km_rng_below(n), each candidate
 * the first row whose cumulative squared distance reaches u times the
 * potential, u = (1 + km_rng_uniform) / 2. The n_init runs draw from one
 * generator in turn; the run of lowest inertia is kept (the first of
 * equal ones).
 */
typedef struct km_kkmeans_params {
    size_t n_clusters; /* k, 1 .. n_samples; required (default 1) */
    size_t n_init;     /* runs from different centres, 1 .. 1000;
                          default 10 */
    size_t max_iter;   /* assignments per run, 1 .. 100000; default 300 */
    double tol;        /* >= 0, default 1e-4 */
    uint64_t seed;     /* of the centres' draw, 0 .. 2^53; default 0 */
} km_kkmeans_params;

#define KM_KKMEANS_MAX_INIT 1000
/* Distances a predict holds at once: rows of k values, at least one. */
#define KM_KKMEANS_PREDICT_BLOCK ((size_t)1 << 16)
#define KM_KKMEANS_MAX_ITER 100000

km_kkmeans_params km_kkmeans_params_default(void);
/* KM_EINVAL naming the field: params.n_clusters below 1, params.n_init
 * outside 1..KM_KKMEANS_MAX_INIT, params.max_iter outside
 * 1..KM_KKMEANS_MAX_ITER, params.tol not a finite number >= 0,
 * params.seed above 2^53; KM_EPROBLEM (422 in the API) for
 * params.n_clusters above n_samples. */
km_status km_kkmeans_check(const km_kkmeans_params *p, size_t n_samples,
                           km_error *err) KM_MUST_CHECK;

/*
 * Fits kernel k-means on X (n x d). Borrows all inputs; caller owns *out.
 * The model keeps the training rows, each row's centroid (the clusters
 * whose means are the final centroids) and the constants C_c; predict
 * (km_kkmeans_predict, or km_predict_labels) assigns new rows to the
 * nearest centroid. Peak memory: the n x n Gram matrix and O(n k)
 * (km_kkmeans_fit_bytes).
 *
 * Params figures: "n_clusters", "n_init", "max_iter", "tol", "seed".
 * Training figures: "seconds"; "inertia" (the sum over the training rows
 * of the squared distance to their cluster's centroid, each clamped at
 * 0); "cluster_sizes" (k: rows of each cluster in the final assignment);
 * "n_iter" (assignments of the kept run, as scikit-learn's n_iter_);
 * "best_init" (which run was kept, from 0). KM_ECANCELLED when ctl asks.
 */
km_status km_kkmeans_fit(const km_kernel *k, const km_kkmeans_params *p,
                         const double *X, size_t n, size_t d,
                         const km_fit_control *ctl, km_model **out,
                         km_error *err) KM_MUST_CHECK;
/* Cluster ids (labels[n], 0 .. k-1) of X's rows: the nearest centroid,
 * the lowest id on ties. KM_ECONFLICT if not kkmeans. */
km_status km_kkmeans_predict(const km_model *m, const double *X, size_t n,
                             int *labels, km_error *err) KM_MUST_CHECK;
/* Squared feature-space distances of X's rows to the k centroids: out
 * (n x k, caller-allocated), not clamped. */
km_status km_kkmeans_distances(const km_model *m, const double *X, size_t n,
                               double *out, km_error *err) KM_MUST_CHECK;
/* The score of rows X: their cluster ids (labels, n; may be NULL) and
 * *inertia, the sum of their squared distances to the nearest centroid
 * (each clamped at 0), through the model's preprocessing as
 * km_predict_labels. */
km_status km_kkmeans_score(const km_model *m, const double *X, size_t n,
                           int *labels, double *inertia,
                           km_error *err) KM_MUST_CHECK;
/* k; 0 for a model that is not kkmeans. */
size_t km_kkmeans_n_clusters(const km_model *m);
/* Bytes a fit of this size needs at its peak (for admission control). */
size_t km_kkmeans_fit_bytes(size_t n, size_t d, const km_kkmeans_params *p);

/* The adjusted Rand index of two labelings of n rows (any ints >= 0), as
 * sklearn.metrics.adjusted_rand_score: from the pair confusion matrix in
 * exact integers, 1 when they agree up to renaming (also for n <= 1).
 * KM_EINVAL for a negative label. */
km_status km_score_adjusted_rand(const int *a, const int *b, size_t n,
                                 double *out, km_error *err) KM_MUST_CHECK;

/* ---------------------------------------------------------------- KLR */

/*
 * Kernel logistic regression (km_klr.c says how it is solved): minimise
 *     sum_i loss_i + (lambda / 2) sum_c |f_c|_H^2,
 *     f_c(x) = sum_j a_jc k(x_j, x) + b_c,
 * b_c an unpenalised intercept (fit_intercept; else 0). Two classes: one
 * function, loss log(1 + exp(-y f)) with y = +1 for the second class
 * (whatever multi_class says, as scikit-learn's multi_class="auto");
 * more: multinomial (softmax loss over k functions) or ovr (k binary
 * problems, class c against the rest). With the linear kernel it is
 * scikit-learn's LogisticRegression(C = 1/lambda) with w_c = X^T a_c.
 */
typedef enum km_klr_multi {
    KM_KLR_MULTINOMIAL = 0,
    KM_KLR_OVR = 1,
    KM_KLR_MULTI_COUNT
} km_klr_multi;

#define KM_KLR_MAX_ITER 100000

/* How a klr fit solves (the numbers are those of the figure "solver"). */
typedef enum km_klr_solver {
    KM_KLR_SOLVER_EXACT = 0,   /* Newton on the n dual coefficients */
    KM_KLR_SOLVER_NYSTROM = 1, /* Newton on m Nystrom features */
    KM_KLR_SOLVER_COUNT
} km_klr_solver;

typedef struct km_klr_params {
    double lambda;       /* > 0, default 1 (scikit-learn's C = 1/lambda) */
    double tol;          /* > 0, default 1e-8: stop when the gradient's
                            2-norm is at most this */
    size_t max_iter;     /* 1 .. KM_KLR_MAX_ITER, default 100: Newton
                            iterations (multinomial: sweeps over the
                            classes, one Newton step each) */
    int fit_intercept;   /* default 1 */
    km_klr_multi multi_class; /* more than two classes; default
                                 MULTINOMIAL */
    km_klr_solver solver;     /* default EXACT */
    size_t n_centres;         /* nystrom: m, 1 .. n; 0 (default): as krr's
                               * (km_krr_centres) */
    uint64_t seed;            /* nystrom: the centres' draw, <= 2^53 */
    km_krr_centre_rule centres; /* nystrom: default UNIFORM */
} km_klr_params;

km_klr_params km_klr_params_default(void);
/* KM_EINVAL naming the field: params.lambda or params.tol not a finite
 * number > 0, params.max_iter outside [1, KM_KLR_MAX_ITER],
 * params.fit_intercept not 0 or 1, params.multi_class, params.solver or
 * params.centres unknown, params.seed above 2^53; KM_EPROBLEM for one
 * class or (nystrom) params.n_centres above n_samples (422 in the
 * API). */
km_status km_klr_check(const km_klr_params *p, size_t n_samples,
                       size_t n_classes, km_error *err) KM_MUST_CHECK;
/* "exact", "nystrom"; NULL if invalid. */
const char *km_klr_solver_name(km_klr_solver s);
/* "multinomial", "ovr"; NULL if invalid. */
const char *km_klr_multi_name(km_klr_multi m);

/*
 * y: n class indices in [0, n_classes), every class present (KM_EPROBLEM
 * otherwise). Borrows all inputs; caller owns *out. n_outputs of the
 * model: 1 for two classes, else n_classes (the functions). Params
 * figures: "lambda", "tol", "max_iter", "fit_intercept" (boolean),
 * "multi_class" (integer: KM_KLR_*), "solver" (integer: KM_KLR_SOLVER_*)
 * and, for nystrom, "n_centres" (kept), "seed", "centres". Training
 * figures: "seconds", "iterations" (Newton iterations; exact
 * multinomial: sweeps over the classes), "gradient_norm" (2-norm of the
 * objective's gradient in the coefficients and intercepts where it
 * stopped: at most tol unless max_iter or rounding stopped it first; for
 * nystrom in the primal weights w of the features), "objective" (its
 * value there), "solver", "factorizations" (Cholesky factorisations
 * made: exact binary keeps one across chord steps), and for nystrom
 * "cg_iterations" (Hessian products of its Newton-CG steps).
 * KM_ENOTPD when the kernel is not positive semi-definite enough for the
 * Newton system's Cholesky; KM_ECANCELLED when ctl asks (between panels
 * of each factorisation, or row blocks of nystrom's passes).
 *
 * params.solver NYSTROM: m = km_krr_centres-like n_centres centres Z
 * (uniform or rpcholesky, seeded, as krr's nystrom), features
 * phi(x) = T^-T k(Z, x) with T^T T = K_mm (+ a tiny shift if singular),
 * and Newton on the penalised logistic loss in the m primal weights w
 * per function (+ intercepts): klr restricted to f = sum_j c_j k(z_j, .),
 * c = T^-1 w. The model is an ordinary klr model whose training rows are
 * the m centres and whose coefficients are c: predict costs O(m d) per
 * row. Memory O(n m + q m^2) (Phi is held whole).
 */
km_status km_klr_fit(const km_kernel *k, const km_klr_params *p,
                     const double *X, size_t n, size_t d, const int *y,
                     size_t n_classes, const km_fit_control *ctl,
                     km_model **out, km_error *err) KM_MUST_CHECK;
/* Class indices (labels[n]): the argmax of km_klr_probability's row, the
 * first on ties. KM_ECONFLICT if not klr. */
km_status km_klr_predict(const km_model *m, const double *X, size_t n,
                         int *labels, km_error *err) KM_MUST_CHECK;
/* Decision values f_c(x): n rows of n_outputs values (two classes: one,
 * positive for the second class, as scikit-learn's). */
km_status km_klr_decision(const km_model *m, const double *X, size_t n,
                          double *out, km_error *err) KM_MUST_CHECK;
/* n rows of k class probabilities, each row summing to 1: sigmoid (two
 * classes), softmax (multinomial), normalised sigmoids (ovr). */
km_status km_klr_probability(const km_model *m, const double *X, size_t n,
                             double *out, km_error *err) KM_MUST_CHECK;
/* Bytes a fit of this size needs at its peak (for admission control):
 * exact: one n x n matrix plus O(n (d + k)); nystrom: O(n m + k m^2 +
 * n (d + k)) (plus rpcholesky's n x m factor while it runs). */
size_t km_klr_fit_bytes(size_t n, size_t d, size_t n_classes,
                        const km_klr_params *p);

/* ---------------------------------------------------------------- LIBSVM */

/*
 * LIBSVM's model file (the text svm-train writes and svm-predict reads),
 * km_libsvm.c: svm_type c_svc and epsilon_svr, kernel_type linear,
 * polynomial, rbf and sigmoid. A file is hostile input: every line,
 * count, index and number is checked, and any fault is KM_EINVAL naming
 * the line and the field ("LIBSVM model line 9, SV 3: index 4 after 7;
 * indices must ascend"). n_features: the model's feature count, 0 for
 * the largest index in the file (at least 1); a larger one may be given
 * (LIBSVM's rows are sparse and its file does not record it).
 */
#define KM_LIBSVM_MAX_CLASSES 256 /* nr_class of an import (as a fit) */
/* The training figure "imported_from" of a model read from another
 * program's file: 1 LIBSVM. */
#define KM_IMPORTED_LIBSVM 1

typedef struct km_libsvm_info {
    km_algorithm algorithm; /* KM_ALGO_SVC or KM_ALGO_SVR */
    size_t n_classes;       /* svc: nr_class; svr: 0 */
    size_t n_sv;            /* total_sv */
    size_t n_features;      /* of the model it makes */
    int has_probability;    /* svc with probA and probB */
    int reordered;          /* svc whose labels do not ascend: its
                               classes are renumbered */
} km_libsvm_info;

/* Checks the whole text without building the model (nothing allocated
 * grows with the SV lines) and says what it holds. */
km_status km_libsvm_scan(const char *text, size_t len, size_t n_features,
                         km_libsvm_info *info, km_error *err) KM_MUST_CHECK;
/* What km_libsvm_read of a file that scanned as info takes (not
 * counting the text): its peak, and what the model keeps (an upper bound
 * of its km_model_bytes). */
void km_libsvm_bytes(const km_libsvm_info *info, km_load_bytes *out);
/*
 * The model of a LIBSVM file: an svc (labels numeric, kmserve's
 * ascending class order: pairs whose classes LIBSVM orders the other way
 * are negated, so decision values are LIBSVM's up to that sign) or an
 * svr. n_samples is max(total_sv, nr_class) (the training rows are not
 * in the file) and support vector s's row index is its position among
 * the file's SV lines. Figures: params "probability" (svc) only, as C,
 * tol, epsilon and the others are not in the file; training
 * "imported_from" KM_IMPORTED_LIBSVM, "n_support", and for an
 * epsilon_svr with probA that value as "probA" (svm-predict -b 1's
 * Laplace scale: kept for export, unused here). Caller owns *out.
 */
km_status km_libsvm_read(const char *text, size_t len, size_t n_features,
                         km_model **out, km_error *err) KM_MUST_CHECK;
/* KM_OK if m can be written as a LIBSVM file: svc or svr of the exact
 * form, a LIBSVM kernel, no preprocessing, integer labels; else
 * KM_ECONFLICT saying why. */
km_status km_libsvm_check_export(const km_model *m,
                                 km_error *err) KM_MUST_CHECK;
/* m as a LIBSVM model file: *text (NUL-terminated, caller frees) of
 * *len bytes, in kmserve's class order, every number with %.17g (exact
 * when read back). Fails as km_libsvm_check_export. */
km_status km_libsvm_write(const km_model *m, char **text, size_t *len,
                          km_error *err) KM_MUST_CHECK;

#ifdef __cplusplus
}
#endif
#endif /* KM_H */
