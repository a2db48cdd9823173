/*
 * km_solvers.h - what the algorithms' parameters choose of the solvers
 * (solvers/): the nystrom solver's centre rules and default centre
 * counts (km_nystrom.c), the eigen-solvers kpca picks from (km_eigen.c),
 * and the SVM solvers' choices and parameters, which svc and svr take
 * whole (km_smo.c, km_svm_nys.c, km_svm_screen.c). Written here, below
 * the algorithms, so that the solvers read them without reaching up into
 * an algorithm's header; the algorithms' headers (km_krr.h, km_kpca.h,
 * km_svm.h, ...) hold what else the algorithms define of them (their
 * names' tables, checks and defaults).
 *
 * Part of libkm's public interface; include km.h, which includes every
 * area. Conventions and thread-safety as km.h says.
 */
#ifndef KM_SOLVERS_H
#define KM_SOLVERS_H

#include "../base/km_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------ nystrom centres */

/* How the nystrom solver picks its centres. The numbers are those of the
 * params figure "centres". */
#define KM_KRR_CENTRES_MAP(X)                                                \
    /* uniformly without replacement */                                      \
    X(KM_KRR_CENTRES_UNIFORM, "uniform")                                     \
    /* randomly pivoted Cholesky */                                          \
    X(KM_KRR_CENTRES_RPCHOLESKY, "rpcholesky")
typedef enum km_krr_centre_rule {
    KM_KRR_CENTRES_MAP(KM_CHOICE_ENUM)
    KM_KRR_CENTRES_COUNT
} km_krr_centre_rule;
extern const km_choices km_krr_centres_choices;
/* The name (KM_KRR_CENTRES_MAP); NULL if invalid. */
const char *km_krr_centres_name(km_krr_centre_rule c);

/* The default number of centres of the nystrom solver for n rows:
 * min(n, ceil(sqrt(n) ln n) bounded to [KM_KRR_DEFAULT_CENTRES,
 * KM_KRR_MAX_DEFAULT_CENTRES]) (km_krr_centres). */
#define KM_KRR_DEFAULT_CENTRES 1000
#define KM_KRR_MAX_DEFAULT_CENTRES 10000

/* ------------------------------------------------------ eigen-solvers */

/* The eigen-solver. AUTO picks by problem size (see km_kpca.c); the others
 * force a solver (for tests and benchmarks). The numbers are those of the
 * "solver" training figure (an entry's place in the list: km_base.h's
 * choices). */
#define KM_KPCA_SOLVER_MAP(X)                                                \
    /* choose by n and n_components */                                       \
    X(KM_KPCA_SOLVER_AUTO, "auto")                                           \
    /* LAPACK, the top k by index */                                         \
    X(KM_KPCA_SOLVER_DENSE, "dense")                                         \
    /* restarted block Lanczos; dense when it does not converge, or when n   \
     * is below 12 block sizes (~24 n_components) */                         \
    X(KM_KPCA_SOLVER_ITERATIVE, "iterative")                                 \
    /* Halko-Martinsson-Tropp randomized range finder with power iterations  \
     * until the top Ritz pairs converge; never chosen by AUTO; dense when   \
     * it does not converge */                                               \
    X(KM_KPCA_SOLVER_RANDOMIZED, "randomized")                               \
    /* eigenvectors of the centred Nystrom approximation on n_centres        \
     * centres: memory O(m^2 + block m), never the n x n matrix; never       \
     * chosen by AUTO */                                                     \
    X(KM_KPCA_SOLVER_NYSTROM, "nystrom")
typedef enum km_kpca_solver {
    KM_KPCA_SOLVER_MAP(KM_CHOICE_ENUM)
    KM_KPCA_SOLVER_COUNT
} km_kpca_solver;

/* ------------------------------------------------------ SVM solvers */

/* The solver of an svc or svr fit (km_svm.h says how each is used). */
#define KM_SVM_SOLVER_MAP(X)                                                 \
    /* SMO on the kernel (LIBSVM) */                                         \
    X(KM_SVM_SOLVER_EXACT, "exact")                                          \
    /* svc only: m centres, Nystrom features, LIBLINEAR's dual coordinate    \
     * descent */                                                            \
    X(KM_SVM_SOLVER_NYSTROM, "nystrom")                                      \
    /* svc only: SMO on working sets that a nystrom screen picks, grown      \
     * until all rows meet the optimality conditions: the exact solver's     \
     * optimum */                                                            \
    X(KM_SVM_SOLVER_SCREENED, "screened")                                    \
    /* svc only: EXACT or SCREENED, by km_svm_resolve_solver */              \
    X(KM_SVM_SOLVER_AUTO, "auto")
typedef enum km_svm_solver {
    KM_SVM_SOLVER_MAP(KM_CHOICE_ENUM)
    KM_SVM_SOLVER_COUNT
} km_svm_solver;

/* The precision svc's nystrom solver holds its features in: FLOAT64
 * (double, the default) or FLOAT32 (float: half the memory; the kernel
 * block by SGEMM and the triangular solve by STRSM, the descent reading
 * float rows into double sums and double weights; the model is the same
 * double model, to float's rounding of the features). */
#define KM_SVM_PRECISION_MAP(X)                                              \
    X(KM_SVM_PRECISION_FLOAT64, "float64")                                   \
    X(KM_SVM_PRECISION_FLOAT32, "float32")
typedef enum km_svm_precision {
    KM_SVM_PRECISION_MAP(KM_CHOICE_ENUM)
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
    int keep_rows;        /* exact (auto: then exact): the model keeps
                             every training row, its target and its dual
                             variables, so that it can be updated by new
                             rows (warm-started SMO); default 0 */
} km_svm_params;

/* The nystrom solver's m for n rows. */
size_t km_svm_centres(const km_svm_params *p, size_t n);

#ifdef __cplusplus
}
#endif
#endif /* KM_SOLVERS_H */
