/*
 * km_fit.h - fitting: problems, the dense engine, the calls on an
 * algorithm through its descriptor (model/km_fit.c, km_algo.c,
 * km_caps.c), the preprocessing spec (km_pre_stats.c), a fit request as
 * bytes and distributed fits (km_request.c, km_caps.c). The generic fit
 * km_fit, above the model, is select/km_select.h's.
 *
 * Part of libkm's public interface; include km.h, which includes every
 * area. Conventions and thread-safety as km.h says.
 */
#ifndef KM_FIT_H
#define KM_FIT_H

#include "../kernels/km_kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- fitting */

/* A fit's progress and cancellation, km_fit_control, is km_base.h's: the
 * solvers below the model read it too. */

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

/*
 * What an algorithm can do, from its descriptor (the one place that says
 * it): read by the API's fit parser, the capability description, the
 * search and the distributed route instead of lists of algorithms.
 */
/* What y an algorithm learns from. */
typedef enum km_target {
    KM_TARGET_NONE,    /* no y (kpca, kkmeans) */
    KM_TARGET_VALUES,  /* one number per row (svr, gpr) */
    KM_TARGET_ROWS,    /* numbers, or rows of numbers: n x m (krr) */
    KM_TARGET_CLASSES  /* class labels (svc, klr) */
} km_target;
/* a's target kind; KM_TARGET_NONE for an invalid a. */
km_target km_algorithm_target(km_algorithm a);
/* 1 if a's check (km_algorithm_check) reads the problem's targets (the
 * classes, y's outputs), so that a caller reads y before it checks the
 * params (svc, svr, gpr, klr); 0 if the params can be checked first. */
int km_algorithm_checks_targets(km_algorithm a);

/* The params key of a's solver choice ("solver"; kpca "eigen_solver");
 * NULL when a has none. */
const char *km_algorithm_solver_param(km_algorithm a);
/* The number of a's solvers, the enum values 0 .. count - 1 of that key
 * (0 when a has none). */
size_t km_algorithm_solver_count(km_algorithm a);
/* The name of a's solver i (as the params key takes it); NULL if i is
 * out of range. */
const char *km_algorithm_solver_name(km_algorithm a, size_t i);
/* 1 if a's solver i fits with a kernel of type t (krr's rff: only the
 * kernels of KM_KERNEL_CAP_RFF); 0 if not or out of range. */
int km_algorithm_solver_accepts(km_algorithm a, size_t i, km_kernel_type t);
/* 1 if a takes kernels of input kind in (km_kernel.h) with params (NULL:
 * with some params): gpr and kkmeans take no precomputed kernel (their
 * answers need k(x, x) of new rows), kpca with fit_inverse_transform
 * only rows of numbers. */
int km_algorithm_takes_input(km_algorithm a, km_input_kind in,
                             const void *params);

/* KM_EINVAL naming params' solver and k's type when a's solver in params
 * does not take a kernel of k's type (km_algorithm_solver_accepts; krr's
 * rff: km_krr_check_kernel); KM_OK otherwise. */
km_status km_algorithm_check_kernel(km_algorithm a, const void *params,
                                    const km_kernel *k,
                                    km_error *err) KM_MUST_CHECK;

/* How the decision values (KM_OUT_SCORES) of an algorithm's model are laid
 * out per row, for k classes (km_model_score_columns counts them; GET
 * /v1's decision_columns names them):
 *   outputs  one per output (n_outputs; the descriptor's default, none
 *            of today's algorithms)
 *   pairs    one per pair of classes (i, j), i < j, one-vs-one:
 *            k(k-1)/2, 1 for two classes (svc)
 *   classes  one per class, 1 for two classes (klr) */
#define KM_DECISION_COLUMNS_MAP(X)                                           \
    X(KM_DECISION_OUTPUTS, "outputs")                                        \
    X(KM_DECISION_PAIRS, "pairs")                                            \
    X(KM_DECISION_CLASSES, "classes")
typedef enum km_decision_columns {
    KM_DECISION_COLUMNS_MAP(KM_CHOICE_ENUM)
    KM_DECISION_COLUMNS_COUNT
} km_decision_columns;
extern const km_choices km_decision_columns_choices;
/* The layout of a's decision values; KM_DECISION_COLUMNS_COUNT when a
 * answers none (or is invalid). */
km_decision_columns km_algorithm_decision_columns(km_algorithm a);

/* What a search does for an algorithm beyond fitting and scoring each
 * point's folds (km_algorithm_search_caps):
 *   CLOSED_FORM  krr: exact points of one kernel share eigen-
 *                decompositions, with closed-form LOO and cv gcv; runs
 *                on one thread
 *   SHARED_GRAM  svc, svr: exact points of one kernel share the Gram of
 *                all rows (when it fits half the smallest cache_mb) */
#define KM_SEARCH_CLOSED_FORM 0x01u
#define KM_SEARCH_SHARED_GRAM 0x02u
unsigned km_algorithm_search_caps(km_algorithm a);


/* The name of KM_ALGO_MAP ("krr", ...); NULL if invalid. */
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
/* Decision values per row of m's KM_OUT_SCORES answer, by its
 * algorithm's layout (km_algorithm_decision_columns: svc's k(k-1)/2
 * one-vs-one pairs; klr's 1 for two classes, else k), and in
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
 * learns from, as its descriptor's target says (km_algorithm_target):
 * KM_TARGET_VALUES, y: n targets, m = 1; KM_TARGET_ROWS, y: n x m
 * targets; KM_TARGET_CLASSES, labels: n class indices in [0, n_classes);
 * KM_TARGET_NONE, X only. Borrowed by the calls that take it.
 */
typedef struct km_problem {
    const double *X;
    size_t n, d;
    const double *y;
    size_t m;
    const int *labels;
    size_t n_classes;
} km_problem;

/* The generic life cycle; params points to a's own struct (km_NAME_params:
 * km_krr_params for krr, ...; svc and svr share km_svm_params), of
 * km_algorithm_params_size(a) bytes (0 if a is invalid). */
size_t km_algorithm_params_size(km_algorithm a);
/* Fills params with a's defaults. */
void km_algorithm_params_default(km_algorithm a, void *params);
/* The description of a's params (km_param_set, km_base.h): a row per key
 * a request may give, in the order the API lists them, the struct's size
 * and its defaults; NULL if a is invalid. */
const km_param_set *km_algorithm_params(km_algorithm a);
/* a's parameter check against pb's sizes (km_krr_check, ...). */
km_status km_algorithm_check(km_algorithm a, const void *params,
                             const km_problem *pb,
                             km_error *err) KM_MUST_CHECK;
/* Peak bytes of a fit (km_krr_fit_bytes, ...). */
size_t km_algorithm_fit_bytes(km_algorithm a, const void *params,
                              const km_problem *pb);

/* --------------------------------------------------------- preprocessing */

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

/* ---------------------------------------- fit requests, distributed fits */

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

#ifdef __cplusplus
}
#endif
#endif /* KM_FIT_H */
