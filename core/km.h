/*
 * km.h - public interface of libkm, kmserve's numerical library.
 *
 * libkm fits kernel-method models (kernel ridge regression, C-SVC, epsilon-SVR,
 * kernel PCA), predicts with them and reads and writes their binary file
 * format. It is pure: no sockets, no JSON, no printing, no global state.
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

/* ---------------------------------------------------------------- kernels */

typedef enum {
    KM_KERNEL_LINEAR,
    KM_KERNEL_POLYNOMIAL,
    KM_KERNEL_RBF,
    KM_KERNEL_LAPLACIAN,
    KM_KERNEL_SIGMOID,
    KM_KERNEL_SUM,
    KM_KERNEL_PRODUCT,
    KM_KERNEL_TYPE_COUNT
} km_kernel_type;

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

/* exp(v[i]) for all i, in place, vectorised; accurate to a few ulps, exact 0
 * below -708. Exposed for benchmarks and tests. */
void km_vexp(double *v, size_t n);

/* ---------------------------------------------------------------- fitting */

/*
 * Progress and cancellation for long fits. progress, when not NULL, is
 * called from the fitting thread with a non-decreasing fraction in [0, 1];
 * a nonzero return asks the fit to stop, which it does soon after with
 * KM_ECANCELLED.
 */
typedef struct km_fit_control {
    int (*progress)(void *ctx, double fraction);
    void *ctx;
} km_fit_control;

typedef enum {
    KM_ALGO_KRR,
    KM_ALGO_SVC,
    KM_ALGO_SVR,
    KM_ALGO_KPCA,
    KM_ALGO_COUNT
} km_algorithm;

/* "krr", "svc", "svr", "kpca"; NULL if invalid. */
const char *km_algorithm_name(km_algorithm a);
/* Returns 0 and sets *a on success, -1 if unknown. */
int km_algorithm_parse(const char *name, km_algorithm *a);

/* ---------------------------------------------------------------- models */

/*
 * A fitted model: algorithm, kernel (with resolved gamma), what prediction
 * needs (deep copies), identity (name, version, creation time) and
 * descriptive figures. Opaque; immutable once shared.
 */
typedef struct km_model km_model;

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
 * numbers; kind says how to show them.
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
/* The same through a stdio stream (the whole stream from its position). */
km_status km_model_save_file(const km_model *m, void *file /* FILE* */,
                             km_error *err) KM_MUST_CHECK;
km_status km_model_load_file(void *file /* FILE* */, size_t max_bytes,
                             km_model **out, km_error *err) KM_MUST_CHECK;

/* Checks that X (n rows) fits the model: n_features columns, all finite.
 * Names the first bad entry ("X[3][1] is not a finite number"). */
km_status km_model_check_input(const km_model *m, const double *X, size_t n,
                               size_t d, km_error *err) KM_MUST_CHECK;

/* Checks that X is n x d with every entry finite. */
km_status km_check_matrix(const char *what, const double *X, size_t n,
                          size_t d, km_error *err) KM_MUST_CHECK;

/* ---------------------------------------------------------------- KRR */

typedef struct km_krr_params {
    double alpha; /* ridge, > 0; default 1.0 */
} km_krr_params;

km_krr_params km_krr_params_default(void);
km_status km_krr_check(const km_krr_params *p, km_error *err) KM_MUST_CHECK;

/*
 * Solves (K + alpha I) C = Y by Cholesky in place on one n x n buffer.
 * X: n x d; Y: n x m (m outputs). Borrows all inputs; caller owns *out.
 * KM_ENOTPD when K + alpha I is not positive definite.
 */
km_status km_krr_fit(const km_kernel *k, const km_krr_params *p,
                     const double *X, size_t n, size_t d, const double *Y,
                     size_t m, const km_fit_control *ctl, km_model **out,
                     km_error *err) KM_MUST_CHECK;

/* out: n x m predictions (caller-allocated). KM_ECONFLICT if not krr. */
km_status km_krr_predict(const km_model *m, const double *X, size_t n,
                         double *out, km_error *err) KM_MUST_CHECK;

/* The n_samples x n_outputs dual coefficients, row-major; borrowed, valid
 * while the model lives. NULL if not krr. */
const double *km_krr_dual_coef(const km_model *m);

/* Bytes a fit of this size needs at its peak (for admission control). */
size_t km_krr_fit_bytes(size_t n, size_t d, size_t m);

/* ---------------------------------------------------------------- SVM */

/*
 * C-SVC (one-vs-one) and epsilon-SVR, trained by SMO with second-order
 * working-set selection and shrinking.
 * Labels for C-SVC are given as indices into a sorted list of distinct
 * classes: the caller maps its labels (numbers or strings) to 0..k-1 in
 * sorted order; the model keeps the class count and answers indices.
 */
typedef struct km_svm_params {
    double C;             /* > 0, default 1 */
    double epsilon;       /* SVR only, >= 0, default 0.1 */
    double tol;           /* > 0, default 1e-3 */
    double cache_mb;      /* > 0, default 200 */
    int shrinking;        /* default 1 */
    int probability;      /* SVC only, default 0 */
    const double *class_weight; /* SVC: n_classes weights or NULL (all 1) */
    long max_iter;        /* <= 0: no cap beyond the solver's own */
} km_svm_params;

km_svm_params km_svm_params_default(void);
km_status km_svm_check(const km_svm_params *p, km_algorithm algo,
                       size_t n_classes, km_error *err) KM_MUST_CHECK;

/* y: n class indices in [0, n_classes); every class must occur
 * (KM_EPROBLEM for fewer than 2). Caller owns *out. */
km_status km_svc_fit(const km_kernel *k, const km_svm_params *p,
                     const double *X, size_t n, size_t d, const int *y,
                     size_t n_classes, const km_fit_control *ctl,
                     km_model **out, km_error *err) KM_MUST_CHECK;
km_status km_svr_fit(const km_kernel *k, const km_svm_params *p,
                     const double *X, size_t n, size_t d, const double *y,
                     const km_fit_control *ctl, km_model **out,
                     km_error *err) KM_MUST_CHECK;

size_t km_svc_n_classes(const km_model *m);
int km_svc_has_probability(const km_model *m);

/* Predicted class indices (labels[n]). */
km_status km_svc_predict(const km_model *m, const double *X, size_t n,
                         int *labels, km_error *err) KM_MUST_CHECK;
/* One-vs-one decision values: n rows of k(k-1)/2 values, pairs (0,1),
 * (0,2), ..., (k-2,k-1), positive meaning the first class of the pair.
 * (Binary: one value per row, and api flips the sign to sklearn's.) */
km_status km_svc_decision(const km_model *m, const double *X, size_t n,
                          double *out, km_error *err) KM_MUST_CHECK;
/* n rows of k class probabilities; KM_ECONFLICT without probability. */
km_status km_svc_probability(const km_model *m, const double *X, size_t n,
                             double *out, km_error *err) KM_MUST_CHECK;
/* SVR predictions, n values. */
km_status km_svr_predict(const km_model *m, const double *X, size_t n,
                         double *out, km_error *err) KM_MUST_CHECK;

size_t km_svm_fit_bytes(size_t n, size_t d, const km_svm_params *p);

/* ---------------------------------------------------------------- KPCA */

typedef struct km_kpca_params {
    size_t n_components;       /* >= 1 and <= n_samples */
    int fit_inverse_transform; /* default 0 */
    double alpha;              /* ridge of the inverse map, > 0, default 1 */
} km_kpca_params;

km_kpca_params km_kpca_params_default(void);
km_status km_kpca_check(const km_kpca_params *p, size_t n_samples,
                        km_error *err) KM_MUST_CHECK;

km_status km_kpca_fit(const km_kernel *k, const km_kpca_params *p,
                      const double *X, size_t n, size_t d,
                      const km_fit_control *ctl, km_model **out,
                      km_error *err) KM_MUST_CHECK;
/* out: n x n_components projections. */
km_status km_kpca_project(const km_model *m, const double *X, size_t n,
                          double *out, km_error *err) KM_MUST_CHECK;
int km_kpca_has_inverse(const km_model *m);
/* P: n x n_components projections; out: n x n_features. KM_ECONFLICT
 * without fit_inverse_transform. */
km_status km_kpca_inverse(const km_model *m, const double *P, size_t n,
                          double *out, km_error *err) KM_MUST_CHECK;

size_t km_kpca_fit_bytes(size_t n, size_t d, const km_kpca_params *p);

#ifdef __cplusplus
}
#endif
#endif /* KM_H */
