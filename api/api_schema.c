/*
 * api_schema.c - the parameter tables, their reader and their OpenAPI
 * form.
 *
 * Adding an algorithm's parameters is one table of rows and one entry in
 * params_schemas (a static assertion fails the build when core has an
 * algorithm the table does not cover). A kernel type needs nothing here:
 * the keys it takes, in the order metadata shows them, come from core's
 * kernel table (kernel_keys_init); only a parameter no kernel had before
 * needs a row in kernel_rows.
 *
 * Thread-safety: constant tables and one table built once under
 * pthread_once; reentrant.
 */
#include <limits.h>
#include <stdint.h>
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "api_json.h"
#include "api_schema.h"

/* .offset and .size of a field. */
#define FIELD(type, field) \
    .offset = offsetof(type, field), .size = sizeof(((type *)0)->field)
/* x > 0, checked by core. */
#define POSITIVE .range = API_RANGE_CORE, .min = 0, .max = HUGE_VAL, .min_open = 1

/* ---------------------------------------------------------------- names */

const char *api_algorithm_name(int a)
{
    return km_algorithm_name((km_algorithm)a);
}

const char *api_kernel_type_name(int t)
{
    return km_kernel_type_name((km_kernel_type)t);
}

/* An API_ENUM row's names(int): the option's choices in core (generated
 * from its one X list, km_base.h). */
#define CHOICE_NAMES(fn, choices)                                            \
    static const char *fn(int v) { return km_choice_name(&(choices), v); }
CHOICE_NAMES(scale_name, km_scale_choices)
CHOICE_NAMES(kpca_solver_name, km_kpca_solver_choices)
CHOICE_NAMES(klr_multi_name, km_klr_multi_choices)
CHOICE_NAMES(krr_solver_name, km_krr_solver_choices)
CHOICE_NAMES(krr_centres_name, km_krr_centres_choices)
CHOICE_NAMES(svm_solver_name, km_svm_solver_choices)
CHOICE_NAMES(svm_precision_name, km_svm_precision_choices)
CHOICE_NAMES(gpr_optimizer_name, km_gpr_optimizer_choices)
CHOICE_NAMES(gpr_solver_name, km_gpr_solver_choices)
CHOICE_NAMES(klr_solver_name, km_klr_solver_choices)

void api_name_list(char *buf, size_t len, const char *(*names)(int),
                   int count)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < count && used < len; i++) {
        int w = snprintf(buf + used, len - used, "%s%s", i ? ", " : "",
                         names(i));
        used += w > 0 ? (size_t)w : 0;
    }
}

/* ---------------------------------------------------------------- params */

/* Only with solver "nystrom" (or "auto", which may resolve to it);
 * "rff"; either. */
#define ONLY_NYSTROM .only_if = "solver", .only_value = KM_KRR_SOLVER_NYSTROM
#define NYSTROM ONLY_NYSTROM, .only_also = 1u << KM_KRR_SOLVER_AUTO
#define RFF .only_if = "solver", .only_value = KM_KRR_SOLVER_RFF
#define NYSTROM_OR_RFF ONLY_NYSTROM, \
    .only_also = 1u << KM_KRR_SOLVER_AUTO | 1u << KM_KRR_SOLVER_RFF

/* The rows of the nystrom solvers' settings that krr and gpr share (the
 * members of the same names of T), applying where cond says.
 * n_centres: its type and lower bound here (400); its upper bound,
 * n_samples, in core's check (km_nys_check_centres: 422), as kpca's
 * n_components. */
#define NYS_N_CENTRES_ROW(T, cond)                                           \
    {.key = "n_centres", .type = API_INTEGER, FIELD(T, n_centres),           \
     .range = API_RANGE_API, .min = 1, .max = INT_MAX, .data_default = 1,    \
     .data_bound = "the number of rows of X", cond,                          \
     .doc = "nystrom and auto only: centres; default min(n, "                \
            "ceil(sqrt(n) ln n) within [1000, 10000]); above n_samples "     \
            "is 422"}
#define NYS_CG_ROWS(T, cond)                                                 \
    {.key = "cg_tol", .type = API_NUMBER, FIELD(T, cg_tol), POSITIVE,        \
     cond, .doc = "nystrom and auto only: stop when every output's "         \
                  "relative residual is at most this"},                      \
    {.key = "cg_max_iter", .type = API_INTEGER, FIELD(T, cg_max_iter),       \
     .range = API_RANGE_API, .min = 1, .max = INT_MAX, cond,                 \
     .doc = "nystrom and auto only: most conjugate-gradient iterations"}
/* params.centres of a nystrom solver (krr's, gpr's, svc's): the same
 * rule, names and check (km_nys_check_rule); which solvers it applies to
 * (the condition, last: it expands to several members) and what its
 * factor is for differ. */
#define CENTRES_ROW(T, scope, factor, ...)                                   \
    {.key = "centres", .type = API_ENUM, FIELD(T, centres),                  \
     .names = krr_centres_name, .count = KM_KRR_CENTRES_COUNT, __VA_ARGS__,  \
     .doc = scope ": how the centres are picked: uniform (without "          \
                  "replacement) or rpcholesky (randomly pivoted Cholesky, "  \
                  factor ")"}
#define NYS_CENTRES_ROW(T, cond)                                             \
    CENTRES_ROW(T, "nystrom and auto only",                                  \
                "which holds an n x m factor while it runs", cond)

static const api_param krr_rows[] = {
    {.key = "alpha", .type = API_NUMBER, FIELD(km_krr_params, alpha),
     POSITIVE, .doc = "ridge added to the kernel matrix's diagonal"},
    {.key = "solver", .type = API_ENUM, FIELD(km_krr_params, solver),
     .names = krr_solver_name, .count = KM_KRR_SOLVER_COUNT,
     .doc = "exact: Cholesky of the n x n kernel matrix; nystrom: m "
            "centres and preconditioned conjugate gradients (Falkon), "
            "memory O(m^2 + n); rff: D random Fourier features and a "
            "D x D ridge solve, memory O(D^2), kernels rbf, laplacian "
            "and laplacian_l2 only; auto: exact when its estimate is at "
            "most half the server's memory budget, else nystrom "
            "(training.solver says which)"},
    NYS_N_CENTRES_ROW(km_krr_params, NYSTROM),
    {.key = "seed", .type = API_INTEGER, FIELD(km_krr_params, seed),
     .range = API_RANGE_API, .min = 0, .max = 2147483647, NYSTROM_OR_RFF,
     .doc = "nystrom, auto and rff only: seed of the centres' or the "
            "random features' draw (core's PRNG)"},
    NYS_CG_ROWS(km_krr_params, NYSTROM),
    {.key = "n_components", .type = API_INTEGER,
     FIELD(km_krr_params, n_components), .range = API_RANGE_API, .min = 1,
     .max = KM_KRR_MAX_COMPONENTS, RFF,
     .doc = "rff only: D, the number of random Fourier features"},
    NYS_CENTRES_ROW(km_krr_params, NYSTROM),
    {0},
};
_Static_assert(sizeof(km_krr_solver) == sizeof(int) &&
                   sizeof(km_krr_centre_rule) == sizeof(int),
               "API_ENUM fields are int-sized");
_Static_assert(sizeof(uint64_t) == sizeof(size_t),
               "API_INTEGER fields are int or size_t sized");

/* svc: only with solver "exact" or "auto"; "nystrom"; "exact",
 * "screened" or "auto"; "nystrom", "screened" or "auto". */
#define SVC_EXACT .only_if = "solver", .only_value = KM_SVM_SOLVER_EXACT, \
                  .only_also = 1u << KM_SVM_SOLVER_AUTO
#define SVC_NYSTROM .only_if = "solver", .only_value = KM_SVM_SOLVER_NYSTROM
#define SVC_SMO .only_if = "solver", .only_value = KM_SVM_SOLVER_EXACT, \
                .only_also = 1u << KM_SVM_SOLVER_SCREENED | \
                             1u << KM_SVM_SOLVER_AUTO
#define SVC_SCREEN SVC_NYSTROM, .only_also = 1u << KM_SVM_SOLVER_SCREENED | \
                                             1u << KM_SVM_SOLVER_AUTO

/* n_centres: its type and lower bound here (400); its bounds from the
 * data (at most n_samples, at least the classes) in km_svm_check_centres
 * (422). */
static const api_param svc_rows[] = {
    {.key = "C", .type = API_NUMBER, FIELD(km_svm_params, C), POSITIVE,
     .doc = "penalty of margin errors"},
    {.key = "tol", .type = API_NUMBER, FIELD(km_svm_params, tol), POSITIVE,
     .doc = "stopping tolerance of SMO (nystrom: of the dual coordinate "
            "descent's projected-gradient spread)"},
    {.key = "cache_mb", .type = API_NUMBER, FIELD(km_svm_params, cache_mb),
     POSITIVE, SVC_SMO, .doc = "MiB for kernel values (exact, screened "
                               "and auto)"},
    {.key = "shrinking", .type = API_BOOL,
     FIELD(km_svm_params, shrinking), .doc = "shrinking heuristic"},
    {.key = "class_weight", .type = API_LABEL_WEIGHTS,
     FIELD(km_svm_params, class_weight), .range = API_RANGE_API, .min = 0,
     .max = HUGE_VAL, .min_open = 1,
     .doc = "label -> weight multiplying C for that class (default 1)"},
    {.key = "probability", .type = API_BOOL,
     FIELD(km_svm_params, probability), SVC_EXACT,
     .doc = "fit Platt sigmoids so that output probability is available "
            "(exact solver only; auto then runs exact)"},
    {.key = "solver", .type = API_ENUM, FIELD(km_svm_params, solver),
     .names = svm_solver_name, .count = KM_SVM_SOLVER_COUNT,
     .doc = "exact: SMO on the kernel (LIBSVM); nystrom: m centres, "
            "Nystrom features and LIBLINEAR's dual coordinate descent per "
            "class pair, memory O(n m); screened: SMO per pair on the rows "
            "a nystrom screen puts near the margins, grown until every row "
            "meets the optimality conditions (the exact optimum), the "
            "kernel within cache_mb; auto: exact with probability, up to "
            "2000 rows, or when its Gram shared by the pairs fits half of "
            "cache_mb, else screened (training.solver says which)"},
    {.key = "n_centres", .type = API_INTEGER,
     FIELD(km_svm_params, n_centres), .range = API_RANGE_API, .min = 1,
     .max = INT_MAX, .data_default = 1,
     .data_bound = "the number of rows of X", SVC_SCREEN,
     .doc = "nystrom, screened and auto only: centres (screened: the "
            "screen's, uniform), picked from the rows by centres; default "
            "min(n, 1000); above n_samples or below the number of classes "
            "is 422"},
    {.key = "seed", .type = API_INTEGER, FIELD(km_svm_params, seed),
     .range = API_RANGE_API, .min = 0, .max = 2147483647, SVC_SCREEN,
     .doc = "nystrom, screened and auto only: seed of the centres' draw "
            "and of each epoch's order (core's PRNG)"},
    {.key = "max_iter", .type = API_INTEGER, FIELD(km_svm_params, max_iter),
     .range = API_RANGE_API, .min = 1, .max = INT_MAX, SVC_NYSTROM,
     .data_default = 1, /* 0 in the struct: the solver's own, 1000 */
     .doc = "nystrom only: most epochs of dual coordinate descent per "
            "class pair (default 1000)"},
    CENTRES_ROW(km_svm_params, "nystrom only",
                "whose n x m factor is itself the features", SVC_NYSTROM),
    {.key = "precision", .type = API_ENUM, FIELD(km_svm_params, precision),
     .names = svm_precision_name, .count = KM_SVM_PRECISION_COUNT,
     SVC_NYSTROM,
     .doc = "nystrom only: the features' precision: float64 or float32 "
            "(half the memory, SGEMM and STRSM, about twice as fast; the "
            "descent's sums and the model stay double)"},
    {0},
};
_Static_assert(sizeof(km_svm_solver) == sizeof(int) &&
                   sizeof(km_krr_centre_rule) == sizeof(int) &&
                   sizeof(km_svm_precision) == sizeof(int),
               "API_ENUM fields are int-sized");

static const api_param svr_rows[] = {
    {.key = "C", .type = API_NUMBER, FIELD(km_svm_params, C), POSITIVE,
     .doc = "penalty of errors beyond epsilon"},
    {.key = "epsilon", .type = API_NUMBER, FIELD(km_svm_params, epsilon),
     .range = API_RANGE_CORE, .min = 0, .max = HUGE_VAL,
     .doc = "half-width of the tube without loss"},
    {.key = "tol", .type = API_NUMBER, FIELD(km_svm_params, tol), POSITIVE,
     .doc = "stopping tolerance of SMO"},
    {.key = "cache_mb", .type = API_NUMBER, FIELD(km_svm_params, cache_mb),
     POSITIVE, .doc = "MiB for kernel values"},
    {.key = "shrinking", .type = API_BOOL,
     FIELD(km_svm_params, shrinking), .doc = "shrinking heuristic"},
    {0},
};

/* Only with eigen_solver "nystrom". */
#define KPCA_NYSTROM .only_if = "eigen_solver", \
                     .only_value = KM_KPCA_SOLVER_NYSTROM

/* n_components: its type and lower bound here (400); its upper bound,
 * n_samples, in km_kpca_check (422). */
static const api_param kpca_rows[] = {
    {.key = "n_components", .type = API_INTEGER,
     FIELD(km_kpca_params, n_components), .range = API_RANGE_API, .min = 1,
     .max = INT_MAX, .required = 1,
     .data_bound = "the number of rows of X",
     .doc = "components kept; above n_samples is 422"},
    {.key = "fit_inverse_transform", .type = API_BOOL,
     FIELD(km_kpca_params, fit_inverse_transform),
     .doc = "learn the map back to input space (project with inverse)"},
    {.key = "alpha", .type = API_NUMBER, FIELD(km_kpca_params, alpha),
     POSITIVE, .doc = "ridge of the inverse map"},
    {.key = "eigen_solver", .type = API_ENUM,
     FIELD(km_kpca_params, solver), .names = kpca_solver_name,
     .count = KM_KPCA_SOLVER_COUNT,
     .doc = "auto: restarted block Lanczos when n >= 1000 and "
            "n_components <= n/50, else dense LAPACK; randomized (the "
            "randomized range finder) only when asked; nystrom: "
            "eigenvectors of the centred Nystrom approximation on "
            "n_centres centres, memory O(m^2), never the n x n matrix, "
            "no fit_inverse_transform"},
    {.key = "n_centres", .type = API_INTEGER,
     FIELD(km_kpca_params, n_centres), .range = API_RANGE_API, .min = 1,
     .max = INT_MAX, .data_default = 1,
     .data_bound = "the number of rows of X", KPCA_NYSTROM,
     .doc = "nystrom only: centres, drawn uniformly from the rows; "
            "default min(n, 1000); above n_samples, or not above "
            "n_components, is 422"},
    {.key = "seed", .type = API_INTEGER, FIELD(km_kpca_params, seed),
     .range = API_RANGE_API, .min = 0, .max = 2147483647, KPCA_NYSTROM,
     .doc = "nystrom only: seed of the centres' draw (core's PRNG)"},
    {0},
};

/* Only with optimizer "lbfgs"; only with solver "nystrom" or "auto" (as
 * krr's NYSTROM). */
#define LBFGS .only_if = "optimizer", .only_value = KM_GPR_OPTIMIZER_LBFGS
#define GPR_NYSTROM .only_if = "solver", .only_value = KM_GPR_SOLVER_NYSTROM, \
                    .only_also = 1u << KM_GPR_SOLVER_AUTO

static const api_param gpr_rows[] = {
    {.key = "noise", .type = API_NUMBER, FIELD(km_gpr_params, noise),
     POSITIVE, .doc = "added to the kernel matrix's diagonal (scikit-learn's "
                      "alpha); with lbfgs, the optimizer's start"},
    {.key = "signal_variance", .type = API_NUMBER,
     FIELD(km_gpr_params, signal_variance), POSITIVE,
     .doc = "s of the prior covariance s k(x, z) (ConstantKernel); with "
            "lbfgs, the optimizer's start"},
    {.key = "normalize_y", .type = API_BOOL,
     FIELD(km_gpr_params, normalize_y),
     .doc = "fit (y - mean) / std and answer in y's units, as "
            "scikit-learn's normalize_y"},
    {.key = "optimizer", .type = API_ENUM, FIELD(km_gpr_params, optimizer),
     .names = gpr_optimizer_name, .count = KM_GPR_OPTIMIZER_COUNT,
     .doc = "none: the given hyperparameters; lbfgs: maximise the log "
            "marginal likelihood over log signal_variance, log noise and "
            "log gamma (rbf, laplacian, laplacian_l2, exponential only)"},
    {.key = "n_restarts", .type = API_INTEGER,
     FIELD(km_gpr_params, n_restarts), .range = API_RANGE_API, .min = 0,
     .max = KM_GPR_MAX_RESTARTS, LBFGS,
     .doc = "lbfgs only: starts drawn in the bounds after the given one"},
    {.key = "seed", .type = API_INTEGER, FIELD(km_gpr_params, seed),
     .range = API_RANGE_API, .min = 0, .max = 2147483647, LBFGS,
     .or_if = "solver", .or_value = KM_GPR_SOLVER_NYSTROM,
     .or_also = 1u << KM_GPR_SOLVER_AUTO,
     .doc = "lbfgs, nystrom and auto only: seed of the restarts' or the "
            "centres' draw (core's PRNG)"},
    {.key = "max_iter", .type = API_INTEGER, FIELD(km_gpr_params, max_iter),
     .range = API_RANGE_API, .min = 1, .max = KM_GPR_MAX_ITER, LBFGS,
     .doc = "lbfgs only: iterations per start"},
    {.key = "solver", .type = API_ENUM, FIELD(km_gpr_params, solver),
     .names = gpr_solver_name, .count = KM_GPR_SOLVER_COUNT,
     .doc = "exact: Cholesky of the n x n kernel matrix; nystrom: m "
            "centres, the mean by krr's nystrom solver (Falkon) and, with "
            "variance, the DTC variance, memory O(m^2 + n), no optimizer; "
            "auto: exact when its estimate is at most half the server's "
            "memory budget, else nystrom (training.solver says which)"},
    NYS_N_CENTRES_ROW(km_gpr_params, GPR_NYSTROM),
    NYS_CG_ROWS(km_gpr_params, GPR_NYSTROM),
    NYS_CENTRES_ROW(km_gpr_params, GPR_NYSTROM),
    {.key = "variance", .type = API_BOOL, FIELD(km_gpr_params, variance),
     GPR_NYSTROM,
     .doc = "nystrom and auto only: also keep the DTC variance's two m x m "
            "factors (n m^2 more work at fit), so that output std, var and "
            "cov and the log marginal likelihood are available"},
    {0},
};
_Static_assert(sizeof(km_gpr_optimizer) == sizeof(int) &&
                   sizeof(km_gpr_solver) == sizeof(int),
               "API_ENUM fields are int-sized");
/* n_clusters: its type and lower bound here (400); its upper bound,
 * n_samples, in km_kkmeans_check (422), as kpca's n_components. */
static const api_param kkmeans_rows[] = {
    {.key = "n_clusters", .type = API_INTEGER,
     FIELD(km_kkmeans_params, n_clusters), .range = API_RANGE_API, .min = 1,
     .max = INT_MAX, .required = 1,
     .data_bound = "the number of rows of X",
     .doc = "clusters k; above n_samples is 422"},
    {.key = "n_init", .type = API_INTEGER, FIELD(km_kkmeans_params, n_init),
     .range = API_RANGE_API, .min = 1, .max = KM_KKMEANS_MAX_INIT,
     .doc = "runs from different k-means++ centres; the one of lowest "
            "inertia is kept"},
    {.key = "max_iter", .type = API_INTEGER,
     FIELD(km_kkmeans_params, max_iter), .range = API_RANGE_API, .min = 1,
     .max = KM_KKMEANS_MAX_ITER, .doc = "most assignments per run"},
    {.key = "tol", .type = API_NUMBER, FIELD(km_kkmeans_params, tol),
     .range = API_RANGE_CORE, .min = 0, .max = HUGE_VAL,
     .doc = "stop when the centroids' squared shift in feature space is at "
            "most tol times the mean variance per input feature"},
    {.key = "seed", .type = API_INTEGER, FIELD(km_kkmeans_params, seed),
     .range = API_RANGE_API, .min = 0, .max = 2147483647,
     .doc = "seed of the k-means++ draws (core's PRNG)"},
    {0},
};

/* Only with solver "nystrom". */
#define KLR_NYSTROM .only_if = "solver", .only_value = KM_KLR_SOLVER_NYSTROM

/* n_centres: its type and lower bound here (400); its upper bound,
 * n_samples, in km_klr_check (422), as krr's. */
static const api_param klr_rows[] = {
    {.key = "lambda", .type = API_NUMBER, FIELD(km_klr_params, lambda),
     POSITIVE, .doc = "weight of the RKHS norm's penalty (lambda/2) |f|^2; "
                      "scikit-learn's C is 1/lambda"},
    {.key = "tol", .type = API_NUMBER, FIELD(km_klr_params, tol), POSITIVE,
     .doc = "stop when the 2-norm of the objective's gradient is at most "
            "this"},
    {.key = "max_iter", .type = API_INTEGER, FIELD(km_klr_params, max_iter),
     .range = API_RANGE_CORE, .min = 1, .max = KM_KLR_MAX_ITER,
     .doc = "most Newton iterations (multinomial: sweeps over the classes)"},
    {.key = "fit_intercept", .type = API_BOOL,
     FIELD(km_klr_params, fit_intercept),
     .doc = "learn an unpenalised intercept per function"},
    {.key = "multi_class", .type = API_ENUM,
     FIELD(km_klr_params, multi_class), .names = klr_multi_name,
     .count = KM_KLR_MULTI_COUNT,
     .doc = "more than two classes: multinomial (softmax loss) or ovr (one "
            "binary problem per class); two classes always fit one binary "
            "function"},
    {.key = "solver", .type = API_ENUM, FIELD(km_klr_params, solver),
     .names = klr_solver_name, .count = KM_KLR_SOLVER_COUNT,
     .doc = "exact: Newton on the n dual coefficients, a Cholesky of an "
            "n x n matrix per step, memory O(n^2); nystrom: Newton on m "
            "Nystrom features (klr restricted to the span of m centres), "
            "memory O(n m + k m^2), the model keeps the m centres"},
    {.key = "n_centres", .type = API_INTEGER,
     FIELD(km_klr_params, n_centres), .range = API_RANGE_API, .min = 1,
     .max = INT_MAX, .data_default = 1,
     .data_bound = "the number of rows of X", KLR_NYSTROM,
     .doc = "nystrom only: centres; default min(n, ceil(sqrt(n) ln n) "
            "within [1000, 10000]); above n_samples is 422"},
    {.key = "seed", .type = API_INTEGER, FIELD(km_klr_params, seed),
     .range = API_RANGE_API, .min = 0, .max = 2147483647, KLR_NYSTROM,
     .doc = "nystrom only: seed of the centres' draw (core's PRNG)"},
    {.key = "centres", .type = API_ENUM, FIELD(km_klr_params, centres),
     .names = krr_centres_name, .count = KM_KRR_CENTRES_COUNT, KLR_NYSTROM,
     .doc = "nystrom only: how the centres are picked: uniform (without "
            "replacement) or rpcholesky (randomly pivoted Cholesky, which "
            "holds an n x m factor while it runs)"},
    {0},
};
_Static_assert(sizeof(km_klr_multi) == sizeof(int) &&
                   sizeof(km_klr_solver) == sizeof(int),
               "API_ENUM fields are int-sized");

static void krr_defaults(void *p)
{
    *(km_krr_params *)p = km_krr_params_default();
}

static void svm_defaults(void *p)
{
    *(km_svm_params *)p = km_svm_params_default();
}

static void kpca_defaults(void *p)
{
    *(km_kpca_params *)p = km_kpca_params_default();
}

static void gpr_defaults(void *p)
{
    *(km_gpr_params *)p = km_gpr_params_default();
}

static void kkmeans_defaults(void *p)
{
    *(km_kkmeans_params *)p = km_kkmeans_params_default();
}

static void klr_defaults(void *p)
{
    *(km_klr_params *)p = km_klr_params_default();
}

static const api_schema params_schemas[] = {
    [KM_ALGO_KRR] = {krr_rows, sizeof(km_krr_params), krr_defaults},
    [KM_ALGO_SVC] = {svc_rows, sizeof(km_svm_params), svm_defaults},
    [KM_ALGO_SVR] = {svr_rows, sizeof(km_svm_params), svm_defaults},
    [KM_ALGO_KPCA] = {kpca_rows, sizeof(km_kpca_params), kpca_defaults},
    [KM_ALGO_GPR] = {gpr_rows, sizeof(km_gpr_params), gpr_defaults},
    [KM_ALGO_KKMEANS] = {kkmeans_rows, sizeof(km_kkmeans_params),
                         kkmeans_defaults},
    [KM_ALGO_KLR] = {klr_rows, sizeof(km_klr_params), klr_defaults},
};
_Static_assert(sizeof params_schemas / sizeof *params_schemas ==
               KM_ALGO_COUNT, "one params schema per algorithm");
_Static_assert(sizeof(km_kpca_solver) == sizeof(int),
               "API_ENUM fields are int-sized");

/* ---------------------------------------------------------------- preprocess */

static const api_param preprocess_rows[] = {
    {.key = "scale", .type = API_ENUM, FIELD(km_preprocess, x),
     .names = scale_name, .count = KM_SCALE_COUNT,
     .doc = "per feature, learnt from the training rows: standardize "
            "(x - mean) / std (population std; 1 for a constant feature), "
            "minmax to [-1, 1] (a constant feature to -1)"},
    {.key = "center_y", .type = API_BOOL, FIELD(km_preprocess, center_y),
     .doc = "krr, svr: fit y - mean(y), add the mean to predictions"},
    {.key = "x_shift", .type = API_READ_ONLY,
     .doc = "metadata only, with a scale: x' = (x - x_shift) / x_scale"},
    {.key = "x_scale", .type = API_READ_ONLY,
     .doc = "metadata only, with a scale; every value > 0"},
    {.key = "y_mean", .type = API_READ_ONLY,
     .doc = "metadata only, with center_y: one per output"},
    {0},
};

static void preprocess_defaults(void *p)
{
    memset(p, 0, sizeof(km_preprocess));
}

static const api_schema preprocess_schema = {
    preprocess_rows, sizeof(km_preprocess), preprocess_defaults};
_Static_assert(sizeof(km_scale) == sizeof(int), "API_ENUM fields are int-sized");

const api_schema *api_schema_preprocess(void)
{
    return &preprocess_schema;
}

const api_schema *api_schema_params(km_algorithm a)
{
    return (unsigned)a < KM_ALGO_COUNT ? &params_schemas[a] : NULL;
}

/* ---------------------------------------------------------------- kernels */

/* sigma is gamma = 1/(2 sigma^2), which must itself be a gamma. */
static int sigma_to_gamma(double s, double *gamma)
{
    *gamma = 1.0 / (2.0 * s * s);
    return isfinite(*gamma) && *gamma != 0 ? 0 : -1;
}

static const api_param kernel_rows[] = {
    {.key = "type", .type = API_DISCRIMINATOR, FIELD(km_kernel, type),
     .required = 1, .names = api_kernel_type_name,
     .count = KM_KERNEL_TYPE_COUNT},
    {.key = "gamma", .type = API_NUMBER, FIELD(km_kernel, gamma),
     .range = API_RANGE_API, .min = 0, .max = HUGE_VAL, .min_open = 1,
     .data_default = 1, .doc = "default 1/n_features"},
    {.key = "sigma", .type = API_NUMBER, FIELD(km_kernel, gamma),
     .range = API_RANGE_API, .min = 0, .max = HUGE_VAL, .min_open = 1,
     .alias_of = "gamma", .convert = sigma_to_gamma, .data_default = 1,
     .doc = "gamma = 1/(2 sigma^2); not with gamma"},
    {.key = "degree", .type = API_INTEGER, FIELD(km_kernel, degree),
     .range = API_RANGE_API, .min = 0, .max = 64},
    {.key = "coef0", .type = API_NUMBER, FIELD(km_kernel, coef0),
     .doc = "polynomial default 1, sigmoid default 0"},
    {.key = "kernels", .type = API_PARTS, FIELD(km_kernel, parts),
     .range = API_RANGE_API, .min = 1, .max = KM_KERNEL_MAX_PARTS,
     .doc = "the parts; nesting at most 4 deep"},
    {.key = "weights", .type = API_PART_WEIGHTS, FIELD(km_kernel, weights),
     .range = API_RANGE_API, .min = 0, .max = HUGE_VAL,
     .doc = "one per part; default all 1; not all 0"},
    {0},
};

static void kernel_defaults(void *k)
{
    km_kernel_init(k, KM_KERNEL_LINEAR);
}

static const api_schema kernel_schema = {kernel_rows, sizeof(km_kernel),
                                         kernel_defaults};

/*
 * The rows each kernel type takes, in the order metadata shows them, come
 * from core's kernel table (km_kernel_type_info: which parameters apply),
 * so a kernel added to core needs no row here. "sigma" is the API's own
 * way to give an rbf kernel's gamma (gamma = 1/(2 sigma^2)): rbf only.
 */
#define KERNEL_KEYS_MAX 8

static const char *kernel_keys[KM_KERNEL_TYPE_COUNT][KERNEL_KEYS_MAX];
static pthread_once_t kernel_keys_once = PTHREAD_ONCE_INIT;

static void kernel_keys_init(void)
{
    static const struct {
        unsigned flag;
        const char *key;
    } order[] = {
        {KM_KPARAM_DEGREE, "degree"}, {KM_KPARAM_GAMMA, "gamma"},
        {KM_KPARAM_GAMMA, "sigma"},   {KM_KPARAM_COEF0, "coef0"},
        {KM_KPARAM_PARTS, "kernels"}, {KM_KPARAM_WEIGHTS, "weights"},
    };
    for (int t = 0; t < KM_KERNEL_TYPE_COUNT; t++) {
        unsigned params = km_kernel_type_info((km_kernel_type)t)->params;
        size_t n = 0;
        for (size_t i = 0; i < sizeof order / sizeof *order; i++) {
            if (!(params & order[i].flag) ||
                (!strcmp(order[i].key, "sigma") && t != KM_KERNEL_RBF))
                continue;
            kernel_keys[t][n++] = order[i].key;
        }
        kernel_keys[t][n] = NULL;
    }
}

const api_schema *api_schema_kernel(void)
{
    return &kernel_schema;
}

const char *const *api_schema_kernel_keys(km_kernel_type t)
{
    static const char *const none[] = {NULL};
    pthread_once(&kernel_keys_once, kernel_keys_init);
    return (unsigned)t < KM_KERNEL_TYPE_COUNT ? kernel_keys[t] : none;
}

int api_schema_kernel_takes(km_kernel_type t, const char *key)
{
    if (!strcmp(key, "type"))
        return 1;
    for (const char *const *k = api_schema_kernel_keys(t); *k; k++)
        if (!strcmp(*k, key))
            return 1;
    return 0;
}

/* ---------------------------------------------------------------- reader */

const api_param *api_schema_find(const api_schema *s, const char *key)
{
    for (const api_param *r = s->rows; r->key; r++)
        if (!strcmp(r->key, key))
            return r;
    return NULL;
}

/* Most rows a table may have. */
#define MAX_ROWS 32

int api_schema_check_keys(const cJSON *obj, const char *path,
                          const api_schema *s, api_error *e)
{
    const char *keys[MAX_ROWS + 1];
    size_t n = 0;
    for (const api_param *r = s->rows; r->key && n < MAX_ROWS; r++)
        if (r->type != API_READ_ONLY)
            keys[n++] = r->key;
    keys[n] = NULL;
    return api_check_keys(obj, path, keys, e);
}

/* "params.alpha", or "async" at the top. */
static const char *field(char *buf, size_t len, const char *path,
                         const char *key)
{
    snprintf(buf, len, "%s%s%s", path, *path ? "." : "", key);
    return buf;
}

static void store_int(void *at, size_t size, long v)
{
    if (size == sizeof(int)) {
        int i = (int)v;
        memcpy(at, &i, sizeof i);
    } else {
        size_t z = (size_t)v;
        memcpy(at, &z, sizeof z);
    }
}

static long load_int(const void *at, size_t size)
{
    if (size == sizeof(int)) {
        int i;
        memcpy(&i, at, sizeof i);
        return i;
    }
    size_t z;
    memcpy(&z, at, sizeof z);
    return (long)z;
}

/* A number the reader checks: one message for anything outside. */
static int read_checked_number(const cJSON *v, const char *name,
                               const api_param *r, double *out, api_error *e)
{
    double x = v->valuedouble;
    int ok = cJSON_IsNumber(v) && isfinite(x) &&
             (r->min_open ? x > r->min : x >= r->min) && x <= r->max;
    if (ok && r->convert)
        ok = r->convert(x, &x) == 0;
    if (!ok && r->max < HUGE_VAL)
        return api_invalid(e, "%s must be a finite number %s %g and <= %g",
                           name, r->min_open ? ">" : ">=", r->min, r->max);
    if (!ok)
        return api_invalid(e, "%s must be a finite number %s %g", name,
                           r->min_open ? ">" : ">=", r->min);
    *out = x;
    return 0;
}

static int read_row(const cJSON *obj, const char *path, const api_param *r,
                    const api_schema *s, char *base, api_error *e)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, r->key);
    const api_param *target = r->alias_of ? api_schema_find(s, r->alias_of)
                                          : r;
    char *at = base + target->offset;
    char name[160];
    field(name, sizeof name, path, r->key);
    switch (r->type) {
    case API_NUMBER: {
        double x;
        if (r->range == API_RANGE_API) {
            if (read_checked_number(v, name, r, &x, e))
                return -1;
        } else if (api_opt_number(obj, path, r->key, &x, e)) {
            return -1;
        }
        memcpy(at, &x, sizeof x);
        return 0;
    }
    case API_INTEGER: {
        long x = load_int(at, r->size);
        if (api_opt_integer(obj, path, r->key, (long)r->min, (long)r->max, &x,
                            e))
            return -1;
        store_int(at, r->size, x);
        return 0;
    }
    case API_BOOL: {
        int b;
        if (api_opt_bool(obj, path, r->key, &b, e))
            return -1;
        memcpy(at, &b, sizeof b);
        return 0;
    }
    case API_ENUM:
        for (int i = 0; i < r->count && cJSON_IsString(v); i++)
            if (!strcmp(v->valuestring, r->names(i))) {
                memcpy(at, &i, sizeof i);
                return 0;
            }
        char list[256];
        api_name_list(list, sizeof list, r->names, r->count);
        return api_invalid(e, "%s must be one of %s", name, list);
    default:
        return 0; /* the caller's */
    }
}

int api_schema_read_row(const cJSON *obj, const char *path,
                        const api_schema *s, const api_param *r, void *params,
                        api_error *e)
{
    return read_row(obj, path, r, s, params, e);
}

/* Whether the enum row named key of s holds value (or one of also's) in
 * params; the condition's words ("params.solver \"nystrom\" or
 * \"auto\"") into buf. */
static int holds(const api_schema *s, const char *key, int value,
                 unsigned also, const void *params, const char *path,
                 char *buf, size_t len)
{
    const api_param *dep = api_schema_find(s, key);
    int v;
    memcpy(&v, (const char *)params + dep->offset, sizeof v);
    char by[160];
    field(by, sizeof by, path, dep->key);
    size_t used = (size_t)snprintf(buf, len, "%s \"%s\"", by,
                                   dep->names(value));
    for (int i = 0; i < 32 && i < dep->count && used < len; i++)
        if (also >> i & 1u)
            used += (size_t)snprintf(buf + used, len - used, " or \"%s\"",
                                     dep->names(i));
    return v == value || (v >= 0 && v < 32 && (also >> v & 1u));
}

int api_schema_applies(const api_schema *s, const api_param *r,
                       const void *params, const char *path, api_error *e)
{
    if (!r->only_if)
        return 0;
    char name[160], one[256], two[256] = "";
    if (holds(s, r->only_if, r->only_value, r->only_also, params, path, one,
              sizeof one) ||
        (r->or_if && holds(s, r->or_if, r->or_value, r->or_also, params,
                           path, two, sizeof two)))
        return 0;
    field(name, sizeof name, path, r->key);
    return api_invalid(e, "%s applies only with %s%s%s", name, one,
                       *two ? ", or with " : "", two);
}

int api_schema_read(const cJSON *obj, const char *path, const api_schema *s,
                    void *params, size_t data_n, api_error *e)
{
    char name[160];
    for (const api_param *r = s->rows; r->key; r++) {
        if (!r->required || r->type == API_DISCRIMINATOR ||
            (obj && cJSON_GetObjectItemCaseSensitive(obj, r->key)))
            continue;
        field(name, sizeof name, path, r->key);
        if (r->data_bound)
            return api_invalid(e, "%s is required: a whole number from %ld "
                               "to %s (%zu)", name, (long)r->min,
                               r->data_bound, data_n);
        return api_invalid(e, "%s is required", name);
    }
    for (const api_param *r = s->rows; obj && r->key; r++)
        if (cJSON_GetObjectItemCaseSensitive(obj, r->key) &&
            read_row(obj, path, r, s, params, e))
            return -1;
    for (const api_param *r = s->rows; obj && r->key; r++)
        if (cJSON_GetObjectItemCaseSensitive(obj, r->key) &&
            api_schema_applies(s, r, params, path, e))
            return -1;
    return 0;
}

/* ---------------------------------------------------------------- writer */

cJSON *api_schema_value_json(const api_param *r, const void *params)
{
    const char *at = (const char *)params + r->offset;
    switch (r->type) {
    case API_NUMBER: {
        double x;
        memcpy(&x, at, sizeof x);
        return api_json_number(x);
    }
    case API_INTEGER:
        return api_json_number((double)load_int(at, r->size));
    case API_BOOL: {
        int b;
        memcpy(&b, at, sizeof b);
        return cJSON_CreateBool(b != 0);
    }
    case API_ENUM: {
        int i;
        memcpy(&i, at, sizeof i);
        return cJSON_CreateString(r->names(i));
    }
    default:
        return NULL;
    }
}

/* ---------------------------------------------------------------- OpenAPI */

const char *api_param_type_json(api_param_type t)
{
    static const char *const types[] = {
        [API_NUMBER] = "number", [API_INTEGER] = "integer",
        [API_BOOL] = "boolean", [API_ENUM] = "string",
        [API_DISCRIMINATOR] = "string", [API_LABEL_WEIGHTS] = "object",
        [API_PARTS] = "array", [API_PART_WEIGHTS] = "array",
        [API_READ_ONLY] = "array"};
    return (unsigned)t < sizeof types / sizeof *types ? types[t] : NULL;
}

unsigned api_param_bounds(const api_param *r, double *min, double *max)
{
    unsigned has = 0;
    if (r->range == API_RANGE_NONE)
        return 0;
    if (r->min > -HUGE_VAL) {
        *min = r->min;
        has |= API_HAS_MIN;
    }
    if (r->max < HUGE_VAL && !r->data_bound) {
        *max = r->max;
        has |= API_HAS_MAX;
    }
    return has;
}

static void add_range(cJSON *o, const api_param *r)
{
    double min, max;
    unsigned has = api_param_bounds(r, &min, &max);
    if (has & API_HAS_MIN)
        cJSON_AddItemToObject(o, "minimum", api_json_number(min));
    if (r->min_open && r->range != API_RANGE_NONE)
        cJSON_AddTrueToObject(o, "exclusiveMinimum");
    if (has & API_HAS_MAX)
        cJSON_AddItemToObject(o, "maximum", api_json_number(max));
}

/* member: the schema of the numbers a container row holds. */
static void add_numbers(cJSON *o, const char *member, const api_param *r)
{
    cJSON *w = cJSON_AddObjectToObject(o, member);
    if (w) {
        cJSON_AddStringToObject(w, "type", "number");
        add_range(w, r);
    }
}

static cJSON *enum_json(const api_param *r)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < r->count; i++)
        cJSON_AddItemToArray(a, cJSON_CreateString(r->names(i)));
    return a;
}

/* The default of kernel row r: the one km_kernel_init gives every type
 * that takes it, or NULL when they differ or the data set it. */
cJSON *api_schema_default_json(const api_param *r, const void *defaults)
{
    if (r->required || r->data_default || r->alias_of ||
        r->type == API_READ_ONLY)
        return NULL;
    return api_schema_value_json(r, defaults);
}

static cJSON *kernel_default(const api_param *r)
{
    cJSON *def = NULL;
    if (r->type != API_NUMBER && r->type != API_INTEGER)
        return NULL;
    for (int t = 0; t < KM_KERNEL_TYPE_COUNT; t++) {
        if (!api_schema_kernel_takes((km_kernel_type)t, r->key))
            continue;
        km_kernel k;
        km_kernel_init(&k, (km_kernel_type)t);
        cJSON *v = api_schema_default_json(r, &k);
        if (!v)
            return def;
        if (def && !cJSON_Compare(def, v, 1)) {
            cJSON_Delete(v);
            cJSON_Delete(def);
            return NULL;
        }
        cJSON_Delete(def);
        def = v;
    }
    return def;
}

static cJSON *property_json(const api_schema *s, const api_param *r,
                            const void *defaults)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddStringToObject(o, "type", api_param_type_json(r->type));
    switch (r->type) {
    case API_ENUM:
    case API_DISCRIMINATOR:
        cJSON_AddItemToObject(o, "enum", enum_json(r));
        break;
    case API_LABEL_WEIGHTS:
        add_numbers(o, "additionalProperties", r);
        break;
    case API_PARTS: {
        cJSON_AddItemToObject(o, "minItems", api_json_number(r->min));
        cJSON_AddItemToObject(o, "maxItems", api_json_number(r->max));
        cJSON *items = cJSON_AddObjectToObject(o, "items");
        if (items)
            cJSON_AddStringToObject(items, "$ref",
                                    "#/components/schemas/Kernel");
        break;
    }
    case API_PART_WEIGHTS:
        add_numbers(o, "items", r);
        break;
    case API_READ_ONLY:
        add_numbers(o, "items", r);
        cJSON_AddTrueToObject(o, "readOnly");
        break;
    default:
        add_range(o, r);
        break;
    }
    if (r->doc)
        cJSON_AddStringToObject(o, "description", r->doc);
    cJSON *def = NULL;
    if (s == &kernel_schema)
        def = kernel_default(r);
    else
        def = api_schema_default_json(r, defaults);
    if (def)
        cJSON_AddItemToObject(o, "default", def);
    return o;
}

static cJSON *schema_json(const api_schema *s, const char *algorithm,
                          int closed)
{
    _Alignas(max_align_t) unsigned char defaults[256];
    if (s->size > sizeof defaults)
        return NULL;
    s->defaults(defaults);
    cJSON *o = cJSON_CreateObject();
    cJSON *props = cJSON_CreateObject(), *req = cJSON_CreateArray();
    if (!o || !props || !req) {
        cJSON_Delete(o);
        cJSON_Delete(props);
        cJSON_Delete(req);
        return NULL;
    }
    cJSON_AddStringToObject(o, "type", "object");
    if (algorithm || closed)
        cJSON_AddFalseToObject(o, "additionalProperties");
    if (algorithm)
        cJSON_AddStringToObject(o, "x-algorithm", algorithm);
    for (const api_param *r = s->rows; r->key; r++) {
        cJSON_AddItemToObject(props, r->key, property_json(s, r, defaults));
        if (r->required)
            cJSON_AddItemToArray(req, cJSON_CreateString(r->key));
    }
    if (cJSON_GetArraySize(req))
        cJSON_AddItemToObject(o, "required", req);
    else
        cJSON_Delete(req);
    cJSON_AddItemToObject(o, "properties", props);
    return o;
}

cJSON *api_schema_openapi(void)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddItemToObject(o, "Kernel", schema_json(&kernel_schema, NULL, 0));
    cJSON_AddItemToObject(o, "Preprocess",
                          schema_json(&preprocess_schema, NULL, 1));
    for (int a = 0; a < KM_ALGO_COUNT; a++) {
        const char *name = km_algorithm_name((km_algorithm)a);
        char title[64];
        snprintf(title, sizeof title, "%c%sParams",
                 name[0] - 'a' + 'A', name + 1);
        cJSON_AddItemToObject(o, title,
                              schema_json(&params_schemas[a], name, 1));
    }
    return o;
}
