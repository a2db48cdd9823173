/*
 * km_gpr.h - Gaussian process regression (algorithms/km_gpr.c).
 *
 * Part of libkm's public interface; include km.h, which includes every
 * area. Conventions and thread-safety as km.h says.
 */
#ifndef KM_GPR_H
#define KM_GPR_H

#include "../model/km_model.h"
#include "../solvers/km_solvers.h"

#ifdef __cplusplus
extern "C" {
#endif

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
 * "solver" (an entry's place in the list: km_base.h's choices). */
#define KM_GPR_SOLVER_MAP(X)                                                 \
    /* Cholesky of the n x n s K + noise I */                                \
    X(KM_GPR_SOLVER_EXACT, "exact")                                          \
    /* m centres: the mean by krr's Falkon solver, the variance by DTC */    \
    X(KM_GPR_SOLVER_NYSTROM, "nystrom")                                      \
    /* exact when it fits the memory budget comfortably, else nystrom        \
     * (km_gpr_resolve_solver) */                                            \
    X(KM_GPR_SOLVER_AUTO, "auto")
typedef enum km_gpr_solver {
    KM_GPR_SOLVER_MAP(KM_CHOICE_ENUM)
    KM_GPR_SOLVER_COUNT
} km_gpr_solver;
extern const km_choices km_gpr_solver_choices;

#define KM_GPR_OPTIMIZER_MAP(X)                                              \
    /* the given hyperparameters */                                          \
    X(KM_GPR_OPTIMIZER_NONE, "none")                                         \
    /* maximise the log marginal likelihood */                               \
    X(KM_GPR_OPTIMIZER_LBFGS, "lbfgs")
typedef enum km_gpr_optimizer {
    KM_GPR_OPTIMIZER_MAP(KM_CHOICE_ENUM)
    KM_GPR_OPTIMIZER_COUNT
} km_gpr_optimizer;
extern const km_choices km_gpr_optimizer_choices;

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
    int keep_factor;        /* keep the sums an update needs (the normal
                               equations', and with variance the DTC
                               factors'): one more O(n m^2) pass at fit;
                               default 0 */
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
/* The name (KM_GPR_OPTIMIZER_MAP); NULL if invalid. */
const char *km_gpr_optimizer_name(km_gpr_optimizer o);
/* The name (KM_GPR_SOLVER_MAP); NULL if invalid. */
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

#ifdef __cplusplus
}
#endif
#endif /* KM_GPR_H */
