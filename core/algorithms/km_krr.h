/*
 * km_krr.h - kernel ridge regression (algorithms/km_krr.c).
 *
 * Part of libkm's public interface; include km.h, which includes every
 * area. Conventions and thread-safety as km.h says.
 */
#ifndef KM_KRR_H
#define KM_KRR_H

#include "../model/km_model.h"
#include "../solvers/km_solvers.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- KRR */

/* The solver of a krr fit. The numbers are those of the params figure
 * "solver" (an entry's place in the list: km_base.h's choices). */
#define KM_KRR_SOLVER_MAP(X)                                                 \
    /* Cholesky of the n x n K + alpha I */                                  \
    X(KM_KRR_SOLVER_EXACT, "exact")                                          \
    /* m centres, Falkon's preconditioned CG */                              \
    X(KM_KRR_SOLVER_NYSTROM, "nystrom")                                      \
    /* D random Fourier features, D x D ridge */                             \
    X(KM_KRR_SOLVER_RFF, "rff")                                              \
    /* exact when it fits the memory budget comfortably, else nystrom        \
     * (km_krr_resolve_solver) */                                            \
    X(KM_KRR_SOLVER_AUTO, "auto")
typedef enum km_krr_solver {
    KM_KRR_SOLVER_MAP(KM_CHOICE_ENUM)
    KM_KRR_SOLVER_COUNT
} km_krr_solver;
extern const km_choices km_krr_solver_choices;

/* How the exact solver factors K + alpha I (params.precision; the
 * numbers are those of the params and training figures "precision"):
 * mixed (the default) factors in float and refines in double, falling
 * back to the double factor by itself when refinement stalls; double
 * factors in double only. Both keep one packed triangle (km_spd.c). */
#define KM_KRR_PRECISION_MAP(X)                                              \
    X(KM_KRR_PRECISION_MIXED, "mixed")                                       \
    X(KM_KRR_PRECISION_DOUBLE, "double")
typedef enum km_krr_precision {
    KM_KRR_PRECISION_MAP(KM_CHOICE_ENUM)
    KM_KRR_PRECISION_COUNT
} km_krr_precision;
extern const km_choices km_krr_precision_choices;

/* The nystrom solver's centre rules (km_krr_centre_rule) and its default
 * centre counts are the solver's: solvers/km_solvers.h. */

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
    km_krr_precision precision; /* exact (and auto): default MIXED */
    int keep_factor;      /* exact: keep the double Cholesky factor
                           * of K + alpha I in the model (8 n^2 bytes more
                           * at fit and while served; the factor is
                           * double, precision is not read), so that the
                           * model can be updated by new rows
                           * (km_model_update); nystrom: keep the sums
                           * K_nm^T K_nm and K_nm^T Y of the normal
                           * equations (8 m (m + outputs) bytes more);
                           * default 0 */
} km_krr_params;

/* The rff solver's default and largest number of features D. */
#define KM_KRR_DEFAULT_COMPONENTS 1000
#define KM_KRR_MAX_COMPONENTS 65536


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
/* The name (KM_KRR_SOLVER_MAP); NULL if invalid. */
const char *km_krr_solver_name(km_krr_solver s);
/* The number of centres a nystrom fit of n rows asks for (n_centres, or
 * its default: min(n, ceil(sqrt(n) ln n)) bounded to [1000, 10000], the
 * order of centres Falkon's analysis asks for exact KRR's accuracy; 1000
 * up to n = 11,449, 3,641 at 10^5, 10,000 from 569,300 on). An rpcholesky
 * fit may keep fewer (km_krr_fit). */
size_t km_krr_centres(const km_krr_params *p, size_t n);
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
 * Solves (K + alpha I) C = Y by Cholesky of K + alpha I held as one
 * packed lower triangle (km_spd.h): with params.precision MIXED (the
 * default) in float, refined in double to the double solve's backward
 * error, or in double (DOUBLE, and MIXED's automatic fallback).
 * X: n x d; Y: n x m (m outputs). Borrows all inputs; caller owns *out.
 * KM_ENOTPD when K + alpha I is not positive definite. Training figures:
 * "seconds" and "rkhs_norm_sq", per output (a list when m > 1): the
 * squared RKHS norm of the fitted function, a^T K a for the output's
 * dual coefficients a, computed without K as a^T y - alpha a^T a;
 * "precision" (the factor the solution came from: MIXED or DOUBLE) and,
 * when the mixed path ran, "refinement_steps" (products with K + alpha I),
 * "backward_error" and, when it fell back, "fallback" (1: the float
 * factorisation failed, 2: refinement stalled). Params figure
 * "precision" only when DOUBLE was asked for.
 *
 * Every fit (km_fit_begin's check) answers KM_EPROBLEM, naming the row,
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
 * the exact solver's packed n x n triangle in double (4 n^2: what a
 * mixed fit that falls back holds), the nystrom solver's
 * O(m^2 + block m + n outputs) (plus 8 n m with rpcholesky centres), or
 * the rff solver's O(D^2 + block D + D d) (km_krr.c); auto's is that of
 * the solver it resolves to under km_memory_budget(). p NULL: the exact
 * solver. */
size_t km_krr_fit_bytes(size_t n, size_t d, size_t m,
                        const km_krr_params *p);

#ifdef __cplusplus
}
#endif
#endif /* KM_KRR_H */
