/*
 * km_gpr.c - Gaussian-process regression: KRR's solve, plus predictive
 * variances, the log marginal likelihood and its maximisation.
 *
 * The fit is kernel ridge regression's (km_krr_solve: the blocked
 * Cholesky of K + noise I, K = s k(X, X), with progress and cancel), and
 * the model keeps what KRR's does (X, the dual coefficients) and the
 * Cholesky factor L, which the variances need: var(x) = s k(x, x) -
 * |L^-1 k_x|^2, computed for row blocks of a batch with one DTRSM each.
 *
 * The optimizer maximises the log marginal likelihood (LML) over
 * theta = (log s, log gamma, log noise) by a projected L-BFGS on the box
 * of the bounds (km.h): two-loop recursion on the free variables (those
 * not held at a bound by the gradient), a backtracking line search along
 * the projected path with Armijo's condition, and stops when the
 * projected gradient or the relative decrease is negligible, when no
 * step decreases, or after max_iter iterations. The gradient is
 * analytic (Rasmussen and Williams, eq. 5.9):
 *   dLML/dtheta_j = tr((a a^T - K^-1) dK/dtheta_j) / 2,
 *   dK/dlog s = s k,  dK/dlog noise = noise I,
 *   dK/dlog gamma = s k log k   (for k = exp(gamma t)),
 * with K^-1 from L (DPOTRI), so one evaluation costs about n^3 flops
 * (factor and inverse) and holds two n x n matrices: k(X, X) for the
 * current gamma and K, its factor, then its inverse.
 *
 * Precision: the factor stays in double. krr's mixed path (km_spd.c: a
 * float factor, the solution refined in double) does not carry over: the
 * model keeps L for the variances and the log marginal likelihood reads
 * log det from L's diagonal, and a float L is only accurate to about
 * 1e-7 cond(K) relative: the variances and LML would miss the 1e-9 they
 * are tested to, and recovering a double L costs the double factorisation
 * the float one was to save. The optimizer's K^-1 (DPOTRI) likewise.
 *
 * Model file payload: f64 signal_variance, noise, y_mean, y_std; f64s X
 * (n x d); f64s a (n); f64s L's lower triangle by rows (n (n + 1) / 2).
 *
 * Thread-safety: reentrant.
 */
#include <cblas.h>
#include <float.h>
#include <lapacke.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../base/km_base_internal.h"
#include "../model/km_model_internal.h"
#include "../solvers/km_solvers_internal.h"
#include "km_gpr.h"
#include "km_gpr_internal.h"
/* sklearn's default bounds: ConstantKernel's and WhiteKernel's (1e-5,
 * 1e5); RBF's length scale l in (1e-5, 1e5), gamma = 1/(2 l^2). */
static const double bound_lo[TH_COUNT] = {1e-5, 5e-11, 1e-5};
static const double bound_hi[TH_COUNT] = {1e5, 5e9, 1e5};

km_gpr_params km_gpr_params_default(void)
{
    km_krr_params k = km_krr_params_default(); /* nystrom's, as krr's */
    km_gpr_params p = {1e-10, 1.0, 0, KM_GPR_OPTIMIZER_NONE, 0, 0, 200,
                       KM_GPR_SOLVER_EXACT, 0, k.cg_tol, k.cg_max_iter,
                       k.centres, 0, 0};
    return p;
}

KM_CHOICES_DEFINE(km_gpr_solver_choices, KM_GPR_SOLVER_MAP,
                  KM_GPR_SOLVER_COUNT);
KM_CHOICES_DEFINE(km_gpr_optimizer_choices, KM_GPR_OPTIMIZER_MAP,
                  KM_GPR_OPTIMIZER_COUNT);

const char *km_gpr_solver_name(km_gpr_solver s)
{
    return km_choice_name(&km_gpr_solver_choices, (int)s);
}

const char *km_gpr_optimizer_name(km_gpr_optimizer o)
{
    return km_choice_name(&km_gpr_optimizer_choices, (int)o);
}

km_status km_gpr_check(const km_gpr_params *p, km_error *err)
{
    if (!(p->noise > 0) || !isfinite(p->noise))
        return km_error_set(err, KM_EINVAL,
                            "params.noise must be a finite number > 0");
    if (!(p->signal_variance > 0) || !isfinite(p->signal_variance))
        return km_error_set(err, KM_EINVAL, "params.signal_variance must be "
                            "a finite number > 0");
    char list[64];
    if ((unsigned)p->optimizer >= KM_GPR_OPTIMIZER_COUNT) {
        km_choice_list(&km_gpr_optimizer_choices, " or ", list, sizeof list);
        return km_error_set(err, KM_EINVAL, "params.optimizer must be %s",
                            list);
    }
    if (p->n_restarts > KM_GPR_MAX_RESTARTS)
        return km_error_set(err, KM_EINVAL, "params.n_restarts must be at "
                            "most %d", KM_GPR_MAX_RESTARTS);
    if (p->max_iter < 1 || p->max_iter > KM_GPR_MAX_ITER)
        return km_error_set(err, KM_EINVAL, "params.max_iter must be 1 .. %d",
                            KM_GPR_MAX_ITER);
    if (p->seed > ((uint64_t)1 << 53))
        return km_error_set(err, KM_EINVAL,
                            "params.seed must be at most 2^53");
    if ((unsigned)p->solver >= KM_GPR_SOLVER_COUNT) {
        km_choice_list(&km_gpr_solver_choices, " or ", list, sizeof list);
        return km_error_set(err, KM_EINVAL, "params.solver must be %s", list);
    }
    if (p->solver == KM_GPR_SOLVER_EXACT)
        return KM_OK;
    if (p->optimizer == KM_GPR_OPTIMIZER_LBFGS)
        return km_error_set(err, KM_EINVAL, "params.optimizer lbfgs needs "
                            "params.solver exact (the optimizer's gradient "
                            "is the exact likelihood's); give "
                            "params.optimizer none with params.solver %s",
                            km_gpr_solver_name(p->solver));
    double alpha = p->noise / p->signal_variance;
    if (!(alpha > 0) || !isfinite(alpha))
        return km_error_set(err, KM_EINVAL, "params.noise / "
                            "params.signal_variance must be a finite number "
                            "> 0 with params.solver %s (it is the ridge of "
                            "krr's nystrom solver)",
                            km_gpr_solver_name(p->solver));
    return km_nys_check_params(p->centres, p->cg_tol, p->cg_max_iter,
                               p->seed, err);
}

km_gpr_solver km_gpr_resolve_solver(const km_gpr_params *p, size_t n,
                                    size_t d, size_t budget)
{
    if (!p)
        return KM_GPR_SOLVER_EXACT;
    if (p->solver != KM_GPR_SOLVER_AUTO)
        return p->solver;
    km_gpr_params q = *p;
    q.solver = KM_GPR_SOLVER_EXACT;
    return km_gpr_fit_bytes(n, d, &q) <= budget / 2 ? KM_GPR_SOLVER_EXACT
                                                    : KM_GPR_SOLVER_NYSTROM;
}

size_t km_gpr_fit_bytes(size_t n, size_t d, const km_gpr_params *p)
{
    if (p && p->solver == KM_GPR_SOLVER_AUTO) {
        km_gpr_params q = *p;
        q.solver = km_gpr_resolve_solver(p, n, d, km_memory_budget());
        return km_gpr_fit_bytes(n, d, &q);
    }
    uint64_t v;
    if (p && p->solver == KM_GPR_SOLVER_NYSTROM) {
        /* y's normalised copy and the model's centres, norms, a and
         * weights; then the larger of krr's nystrom fit of the mean (its
         * own estimate, which counts the centres and its model, freed
         * once copied) and, with the variance, K_mm's factor, the m x m
         * sum that becomes the second factor, a block of K_nm (b x m)
         * and its product with y */
        km_krr_params q = km_gpr_mean_params(p);
        size_t m = km_krr_centres(&q, n), b = km_nys_block_rows(n, m);
        uint64_t mean = km_krr_fit_bytes(n, d, 1, &q), var = 0;
        if (p->variance) /* after the mean's fit has freed its own */
            var = km_mul_sat(sizeof(double),
                             km_add_sat(km_mul_sat(2, km_mul_sat(m, m)),
                                        km_mul_sat(b + 1, m)));
        v = km_mul_sat(sizeof(double), km_add_sat(n, km_mul_sat(m, d + 3)));
        v = km_add_sat(v, mean > var ? mean : var);
        if (p->keep_factor) /* [y' 1] (2 n), the kept G and Kt, P and Pt
                             * (2 m^2 + 4 m), km_nys_stats_add's block */
            v = km_add_sat(v, km_mul_sat(sizeof(double),
                                         km_add_sat(km_mul_sat(2, n),
                                                    km_mul_sat(m,
                                                               2 * m + 4 +
                                                                   b))));
    } else {
        /* K (its factor becomes the model's L) and, with the optimizer,
         * k(X, X); the model's X and norms, y's normalised copy, a, the
         * mean's weights and the solve's copy of y (saturating). */
        uint64_t grams = p && p->optimizer == KM_GPR_OPTIMIZER_LBFGS ? 2 : 1;
        v = km_mul_sat(grams, km_mul_sat(n, n));
        v = km_add_sat(v, km_mul_sat(n, d));
        v = km_add_sat(v, km_mul_sat(n, 6));
        v = km_mul_sat(sizeof(double), v);
    }
    return v > SIZE_MAX ? SIZE_MAX : (size_t)v;
}

/* ------------------------------------------------------------ evaluation */

/* Whether the optimizer tunes k's gamma: k = exp(gamma t), so that
 * dk/dlog gamma = k log k. */
static int tunes_gamma(const km_kernel *k)
{
    return (km_kernel_type_caps(k->type) & KM_KERNEL_CAP_TUNE_GAMMA) != 0;
}

/* One problem's likelihood evaluations. */
typedef struct gpr_eval {
    km_kernel k;       /* the fit's kernel (shallow: gamma is set here) */
    const double *X;
    size_t n, d;
    const double *y;   /* n targets, normalised */
    double *G;         /* n x n lower: k(X, X) at gamma G_gamma, or NULL
                          (built in A directly) */
    double G_gamma;
    double *A;         /* n x n lower: K, then L, then K^-1 */
    double *a;         /* n: K^-1 y */
    double *Yc;        /* n: the solve's right-hand side */
    const km_fit_control *ctl;
    int note;          /* a Cholesky that fails names the smallest
                          eigenvalue (the final factor, not the
                          optimizer's steps) */
} gpr_eval;

/* K = s k(X, X) + noise I, factored into e->A, a = K^-1 y; *lml. KM_ENOTPD
 * when K cannot be factored (or its values are not finite numbers, as a
 * gamma far out can make them). Progress stays at frac. */
static km_status factor(gpr_eval *e, const double h[TH_COUNT], double f0,
                        double f1, double *lml, km_error *err)
{
    size_t n = e->n;
    km_status st;
    if (tunes_gamma(&e->k))
        e->k.gamma = h[TH_GAMMA];
    const km_dense_engine *de = e->ctl ? e->ctl->dense : NULL;
    if (de) { /* K formed, factored and solved elsewhere; L back in A */
        if (km_progress(e->ctl, f0))
            return km_error_set(err, KM_ECANCELLED, "fit cancelled");
        st = de->solve(de->ctx, &e->k, h[TH_SIGNAL], e->X, n, e->d,
                       h[TH_NOISE], e->y, 1, e->a, e->A, e->ctl, f0, f1, err);
        goto solved;
    }
    if (e->G && e->G_gamma != e->k.gamma) {
        if ((st = km_gram_sym(&e->k, e->X, n, e->d, e->G, 0, err)) != KM_OK)
            return st;
        e->G_gamma = e->k.gamma;
    }
    if (!e->G && (st = km_gram_sym(&e->k, e->X, n, e->d, e->A, 0, err)) !=
                     KM_OK)
        return st;
    const double *src = e->G ? e->G : e->A;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j <= i; j++) {
            double v = h[TH_SIGNAL] * src[i * n + j];
            if (!isfinite(v))
                return km_error_set(err, KM_ENOTPD, "the kernel matrix is "
                                    "not finite");
            e->A[i * n + j] = v;
        }
    if (km_progress(e->ctl, f0))
        return km_error_set(err, KM_ECANCELLED, "fit cancelled");
    st = km_krr_solve(e->A, n, h[TH_NOISE], e->y, 1, e->a, "the kernel matrix",
                      e->ctl, f0, f1, err);
solved:
    if (st == KM_ENOTPD) {
        km_error_set(err, KM_ENOTPD, "signal_variance * K + noise * I is not "
                     "positive definite (Cholesky failed); use a larger "
                     "params.noise or a positive definite kernel");
        if (e->note && !de)
            km_kernel_note_min_eigenvalue(&e->k, e->X, n, e->d, h[TH_SIGNAL],
                                          h[TH_NOISE], e->A, "its", err);
        return KM_ENOTPD;
    }
    if (st != KM_OK)
        return st;
    km_ksum q = {0, 0};
    for (size_t i = 0; i < n; i++) {
        km_ksum_add(&q, -0.5 * e->y[i] * e->a[i]);
        km_ksum_add(&q, -log(e->A[i * n + i]));
    }
    km_ksum_add(&q, -0.5 * (double)n * log(2.0 * M_PI));
    *lml = km_ksum_get(&q);
    if (!isfinite(*lml) || !km_all_finite(e->a, n))
        return km_error_set(err, KM_ENOTPD, "the log marginal likelihood is "
                            "not a finite number: the kernel matrix is "
                            "numerically singular; use a larger params.noise");
    return KM_OK;
}

/* After factor: grad = dLML/dtheta (TH_* order) from K^-1 (DPOTRI on A,
 * which it destroys) and k(X, X) (e->G, which must be there). */
static km_status gradient(gpr_eval *e, const double h[TH_COUNT],
                          double grad[TH_COUNT], km_error *err)
{
    size_t n = e->n;
    /* row-major lower triangle == column-major upper triangle */
    lapack_int info = LAPACKE_dpotri(LAPACK_COL_MAJOR, 'U', (lapack_int)n,
                                     e->A, (lapack_int)n);
    if (info != 0)
        return km_error_set(err, info > 0 ? KM_ENOTPD : KM_EINTERNAL,
                            "dpotri: %d", (int)info);
    int tg = tunes_gamma(&e->k);
    km_ksum gs = {0, 0}, gg = {0, 0}, gn = {0, 0};
    for (size_t i = 0; i < n; i++) {
        const double *Ai = e->A + i * n, *Gi = e->G + i * n;
        double ai = e->a[i], rs = 0, rg = 0;
        for (size_t j = 0; j < i; j++) {
            double w = ai * e->a[j] - Ai[j], g = Gi[j];
            rs += w * g;
            if (tg && g > 0)
                rg += w * g * log(g);
        }
        double w = ai * ai - Ai[i], g = Gi[i];
        km_ksum_add(&gs, 2 * rs + w * g);
        if (tg)
            km_ksum_add(&gg, 2 * rg + (g > 0 ? w * g * log(g) : 0));
        km_ksum_add(&gn, w);
    }
    grad[TH_SIGNAL] = 0.5 * h[TH_SIGNAL] * km_ksum_get(&gs);
    grad[TH_GAMMA] = 0.5 * h[TH_SIGNAL] * km_ksum_get(&gg);
    grad[TH_NOISE] = 0.5 * h[TH_NOISE] * km_ksum_get(&gn);
    return KM_OK;
}

static void eval_cleanup(gpr_eval *e)
{
    free(e->G);
    free(e->A);
    free(e->a);
    free(e->Yc);
}

/* Allocates e's buffers for a problem (G only when grads) and y's
 * normalised copy (e->Yc; e->y points to it). */
static km_status eval_init(gpr_eval *e, const km_kernel *k, const double *X,
                           size_t n, size_t d, const double *y, int normalize,
                           int grads, double *mean, double *std,
                           const km_fit_control *ctl, km_error *err)
{
    memset(e, 0, sizeof *e);
    e->k = *k;
    e->X = X;
    e->n = n;
    e->d = d;
    e->ctl = ctl;
    e->A = malloc(n * n * sizeof *e->A);
    e->G = grads ? malloc(n * n * sizeof *e->G) : NULL;
    e->a = malloc(n * sizeof *e->a);
    e->Yc = malloc(n * sizeof *e->Yc);
    if (!e->A || (grads && !e->G) || !e->a || !e->Yc)
        return km_error_set(err, KM_ENOMEM, "out of memory for a %zu x %zu "
                            "kernel matrix", n, n);
    km_gpr_normalise(y, n, normalize, e->Yc, mean, std);
    e->y = e->Yc;
    return KM_OK;
}

km_status km_gpr_log_marginal_likelihood(const km_kernel *k,
                                         const km_gpr_params *p,
                                         const double *X, size_t n, size_t d,
                                         const double *y, double *lml,
                                         double *grad, km_error *err)
{
    km_problem pb = {X, n, d, y, 1, NULL, 0};
    km_fit_frame f;
    gpr_eval e;
    double mean, std;
    memset(&e, 0, sizeof e);
    km_status st = km_fit_begin(&f, KM_ALGO_GPR, k, p, &pb, err);
    if (st == KM_OK)
        st = eval_init(&e, &f.k, X, n, d, y, p->normalize_y, 1, &mean, &std,
                       NULL, err);
    double h[TH_COUNT] = {p->signal_variance, f.k.gamma, p->noise};
    if (st == KM_OK)
        st = factor(&e, h, 0, 0, lml, err);
    if (st == KM_OK && grad) {
        st = gradient(&e, h, grad, err);
        if (!tunes_gamma(&f.k))
            grad[TH_GAMMA] = 0;
    }
    eval_cleanup(&e);
    km_fit_cleanup(&f);
    return st;
}

/* ------------------------------------------------------------ optimizer */

/* L-BFGS's memory and its stopping rules: the projected gradient's
 * largest entry relative to max(1, |f|), the relative decrease of f. */
#define LBFGS_M 10
#define LBFGS_GTOL 1e-9
#define LBFGS_FTOL 1e-13
#define LBFGS_ARMIJO 1e-4
#define LBFGS_HALVINGS 30

/* f = -LML and its gradient at x = log h; f = +inf where K cannot be
 * factored (the line search then steps back). */
static km_status objective(gpr_eval *e, const double x[TH_COUNT],
                           double frac, double *f, double g[TH_COUNT],
                           km_error *err)
{
    double h[TH_COUNT], lml;
    for (int i = 0; i < TH_COUNT; i++)
        h[i] = exp(x[i]);
    km_status st = factor(e, h, frac, frac, &lml, err);
    if (st == KM_ENOTPD) {
        *f = HUGE_VAL;
        return KM_OK;
    }
    if (st == KM_OK)
        st = gradient(e, h, g, err);
    if (st == KM_ENOTPD) {
        *f = HUGE_VAL;
        return KM_OK;
    }
    if (st != KM_OK)
        return st;
    *f = -lml;
    for (int i = 0; i < TH_COUNT; i++)
        g[i] = -g[i];
    return KM_OK;
}

/* x within [lo, hi]. */
static void project(double x[TH_COUNT], const double lo[TH_COUNT],
                    const double hi[TH_COUNT])
{
    for (int i = 0; i < TH_COUNT; i++)
        x[i] = x[i] < lo[i] ? lo[i] : x[i] > hi[i] ? hi[i] : x[i];
}

static double dot3(const double *a, const double *b)
{
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

/*
 * Minimises the objective from x (log-parameters; variables with lo ==
 * hi are fixed) within [lo, hi]: *fs gets the value at the start
 * (+inf: it could not be factored), x and *fx the last iterate and its
 * value, *iters the iterations. Progress goes from f0 to f1 by
 * iterations over max_iter.
 */
static km_status lbfgs(gpr_eval *e, double x[TH_COUNT],
                       const double lo[TH_COUNT], const double hi[TH_COUNT],
                       size_t max_iter, double f0, double f1, double *fs,
                       double *fx, size_t *iters, km_error *err)
{
    double S[LBFGS_M][TH_COUNT], Y[LBFGS_M][TH_COUNT], rho[LBFGS_M];
    double g[TH_COUNT], pg[TH_COUNT], d[TH_COUNT], xn[TH_COUNT], gn[TH_COUNT];
    size_t mlen = 0, newest = 0, it = 0;
    project(x, lo, hi);
    km_status st = objective(e, x, f0, fx, g, err);
    *fs = *fx;
    if (st != KM_OK || !isfinite(*fx))
        goto out;
    for (; it < max_iter; it++) {
        double frac = f0 + (f1 - f0) * (double)it / (double)max_iter;
        if (km_progress(e->ctl, frac)) {
            st = km_error_set(err, KM_ECANCELLED, "fit cancelled");
            goto out;
        }
        /* the projected gradient: 0 where a bound holds the variable */
        double pmax = 0, pnorm = 0;
        for (int i = 0; i < TH_COUNT; i++) {
            int held = lo[i] == hi[i] || (x[i] <= lo[i] && g[i] > 0) ||
                       (x[i] >= hi[i] && g[i] < 0);
            pg[i] = held ? 0 : g[i];
            pmax = fabs(pg[i]) > pmax ? fabs(pg[i]) : pmax;
            pnorm += pg[i] * pg[i];
        }
        if (pmax <= LBFGS_GTOL * (fabs(*fx) > 1 ? fabs(*fx) : 1))
            break;
        /* d = -H pg by the two-loop recursion, on the free variables */
        double q[TH_COUNT], al[LBFGS_M];
        memcpy(q, pg, sizeof q);
        for (size_t k = 0; k < mlen; k++) {
            size_t j = (newest + LBFGS_M - k) % LBFGS_M;
            al[j] = rho[j] * dot3(S[j], q);
            for (int i = 0; i < TH_COUNT; i++)
                q[i] -= al[j] * Y[j][i];
        }
        double h0 = mlen ? dot3(S[newest], Y[newest]) /
                               dot3(Y[newest], Y[newest])
                         : 1.0 / sqrt(pnorm);
        for (int i = 0; i < TH_COUNT; i++)
            q[i] *= h0;
        for (size_t k = mlen; k-- > 0;) {
            size_t j = (newest + LBFGS_M - k) % LBFGS_M;
            double b = rho[j] * dot3(Y[j], q);
            for (int i = 0; i < TH_COUNT; i++)
                q[i] += S[j][i] * (al[j] - b);
        }
        for (int i = 0; i < TH_COUNT; i++)
            d[i] = pg[i] == 0 ? 0 : -q[i];
        if (!(dot3(d, pg) < 0)) { /* not a descent direction: restart */
            mlen = 0;
            for (int i = 0; i < TH_COUNT; i++)
                d[i] = -pg[i] / sqrt(pnorm);
        }
        /* backtracking along the projected path */
        double t = 1, fn = HUGE_VAL;
        int taken = 0;
        for (int ls = 0; ls < LBFGS_HALVINGS; ls++, t *= 0.5) {
            double step[TH_COUNT];
            for (int i = 0; i < TH_COUNT; i++)
                xn[i] = x[i] + t * d[i];
            project(xn, lo, hi);
            for (int i = 0; i < TH_COUNT; i++)
                step[i] = xn[i] - x[i];
            if (step[0] == 0 && step[1] == 0 && step[2] == 0)
                break;
            if ((st = objective(e, xn, frac, &fn, gn, err)) != KM_OK)
                goto out;
            if (fn <= *fx + LBFGS_ARMIJO * dot3(g, step)) {
                taken = 1;
                break;
            }
        }
        if (!taken)
            break; /* no step decreases f: as good as it gets */
        double s[TH_COUNT], yv[TH_COUNT];
        for (int i = 0; i < TH_COUNT; i++) {
            s[i] = xn[i] - x[i];
            yv[i] = gn[i] - g[i];
        }
        double sy = dot3(s, yv);
        if (sy > DBL_EPSILON * dot3(yv, yv)) {
            newest = mlen ? (newest + 1) % LBFGS_M : 0;
            memcpy(S[newest], s, sizeof s);
            memcpy(Y[newest], yv, sizeof yv);
            rho[newest] = 1.0 / sy;
            mlen += mlen < LBFGS_M;
        }
        double df = *fx - fn, scale = fabs(*fx) > fabs(fn) ? fabs(*fx)
                                                           : fabs(fn);
        memcpy(x, xn, sizeof xn);
        memcpy(g, gn, sizeof gn);
        *fx = fn;
        if (df <= LBFGS_FTOL * (scale > 1 ? scale : 1)) {
            it++;
            break;
        }
    }
out:
    *iters = it;
    return st;
}

/* Runs every start (the given h, clamped, then n_restarts drawn) and
 * keeps the best; progress from f0 to f1. KM_ENOTPD when no start could
 * be factored. */
static km_status optimise(gpr_eval *e, const km_gpr_params *p,
                          const double h0[TH_COUNT], double f0, double f1,
                          gpr_optimum *o, km_error *err)
{
    double lo[TH_COUNT], hi[TH_COUNT];
    km_rng rng = {p->seed};
    size_t runs = p->n_restarts + 1;
    int tg = tunes_gamma(&e->k);
    memset(o, 0, sizeof *o);
    o->lml = -HUGE_VAL;
    o->initial_lml = NAN;
    for (int i = 0; i < TH_COUNT; i++) {
        lo[i] = log(bound_lo[i]);
        hi[i] = log(bound_hi[i]);
    }
    if (!tg) /* gamma is held */
        lo[TH_GAMMA] = hi[TH_GAMMA] = log(h0[TH_GAMMA]);
    for (size_t r = 0; r < runs; r++) {
        double x[TH_COUNT], fx;
        size_t its = 0;
        for (int i = 0; i < TH_COUNT; i++) {
            /* a restart draws all three, in theta's order */
            double u = r ? (1.0 + km_rng_uniform(&rng)) / 2 : 0;
            x[i] = r == 0 || lo[i] == hi[i] ? log(h0[i])
                                            : lo[i] + (hi[i] - lo[i]) * u;
        }
        double a = f0 + (f1 - f0) * (double)r / (double)runs;
        double b = f0 + (f1 - f0) * (double)(r + 1) / (double)runs;
        double fs;
        km_status st = lbfgs(e, x, lo, hi, p->max_iter, a, b, &fs, &fx,
                             &its, err);
        if (st != KM_OK)
            return st;
        o->iterations += its;
        if (r == 0 && isfinite(fs))
            o->initial_lml = -fs;
        if (!isfinite(fx))
            continue;
        o->starts++;
        if (-fx > o->lml) {
            o->lml = -fx;
            for (int i = 0; i < TH_COUNT; i++)
                o->h[i] = exp(x[i]);
        }
    }
    if (!o->starts) {
        km_error_set(err, KM_ENOTPD, "signal_variance * K + noise * I is not "
                     "positive definite at any start of the optimizer; use "
                     "a larger params.noise or a positive definite kernel");
        e->k.gamma = h0[TH_GAMMA];
        km_kernel_note_min_eigenvalue(&e->k, e->X, e->n, e->d, h0[TH_SIGNAL],
                                      h0[TH_NOISE], e->A, "at the given "
                                      "hyperparameters its", err);
        return KM_ENOTPD;
    }
    return KM_OK;
}

/* ------------------------------------------------------------ payload */

/* The descriptors' free_payload (km_gpr_payload_free, km_gpr_model.c). */
static void gpr_free(void *payload)
{
    km_gpr_payload_free(payload);
}

/* The format version a model needs: 6 for the nystrom form (its payload
 * starts with the form), 11 for it with the sums of params.keep_factor,
 * else the default. */
static uint32_t gpr_file_format(const void *payload)
{
    const gpr_payload *p = payload;
    return p->form != GPR_FORM_NYSTROM ? 0 : p->G ? 11 : 6;
}

static size_t gpr_factor_blocks(const void *payload, uint64_t *bytes)
{
    const gpr_payload *p = payload;
    return p->F ? (*bytes = km_factor_bytes(p->F), p->F->nb) : 0;
}

static void gpr_save(const void *payload, const km_model *m, km_writer *w)
{
    const gpr_payload *p = payload;
    size_t n = km_model_n_samples(m);
    if (p->form == GPR_FORM_NYSTROM) /* version 6, or 11 with the sums */
        km_write_u32(w, p->G ? GPR_FORM_NYS_SUMS : GPR_FORM_NYSTROM);
    else if (w->format >= 6) /* version 12: the form, the factor's blocks */
        km_write_u32(w, GPR_FORM_EXACT);
    km_write_f64(w, p->signal);
    km_write_f64(w, p->noise);
    km_write_f64(w, p->y_mean);
    km_write_f64(w, p->y_std);
    km_write_f64s(w, p->X, n * km_model_n_features(m));
    km_write_f64s(w, p->coef, n);
    if (p->form == GPR_FORM_NYSTROM) {
        km_write_u32(w, p->L != NULL);
        if (p->L) {
            km_tri_write(w, p->L, n);
            km_tri_write(w, p->C, n);
        }
        if (p->G)
            km_gpr_save_sums(p, n, w);
        return;
    }
    km_factor_write(w, p->F);
}

/* KM_ECORRUPT unless the n x n factor L (what names it) is finite with a
 * diagonal > 0. */
static km_status check_factor(const double *L, size_t n, const char *what,
                              km_error *err)
{
    if (!km_all_finite(L, n * n))
        return km_error_set(err, KM_ECORRUPT, "model file: gaussian process "
                            "%s holds a value that is not a finite number",
                            what);
    for (size_t i = 0; i < n; i++)
        if (!(L[i * n + i] > 0))
            return km_error_set(err, KM_ECORRUPT, "model file: gaussian "
                                "process %s[%zu][%zu] is not > 0", what, i,
                                i);
    return KM_OK;
}

static km_status gpr_load(km_reader *r, const km_model *m, void **payload,
                          km_error *err)
{
    size_t n = km_model_n_samples(m), d = km_model_n_features(m);
    size_t nx = km_mul3(n, d, 1), nl = km_mul3(n, n, 1);
    if (!nx || !nl)
        return km_error_set(err, KM_ECORRUPT, "model file: gaussian process "
                            "of %zu rows is too large", n);
    unsigned form = GPR_FORM_EXACT;
    int sums = 0;
    if (km_model_file_format(m) >= 6) { /* the payload starts with its form */
        uint32_t f = km_read_u32(r);
        if (r->failed || f >= GPR_FORM_COUNT ||
            (f == GPR_FORM_NYS_SUMS && km_model_file_format(m) < 11))
            return km_error_set(err, KM_ECORRUPT, "model file: gaussian "
                                "process payload form %u is not 0 (exact), "
                                "1 (nystrom) or from version 11 2 (nystrom "
                                "with sums)", (unsigned)f);
        sums = f == GPR_FORM_NYS_SUMS;
        form = sums ? GPR_FORM_NYSTROM : f;
    }
    gpr_payload *p = calloc(1, sizeof *p);
    if (!p)
        return km_error_set(err, KM_ENOMEM, "out of memory reading a model");
    p->form = form;
    p->signal = km_read_f64(r);
    p->noise = km_read_f64(r);
    p->y_mean = km_read_f64(r);
    p->y_std = km_read_f64(r);
    p->X = km_read_f64s(r, nx);
    p->coef = p->X ? km_read_f64s(r, n) : NULL;
    uint32_t has = 1; /* the factors: always in the exact form */
    if (p->coef && form == GPR_FORM_NYSTROM && (has = km_read_u32(r)) > 1)
        r->failed = 1;
    km_status st = KM_OK;
    if (p->coef && has && !r->failed && form == GPR_FORM_EXACT &&
        !(p->F = km_factor_read(r, n,
                                km_model_file_format(m) >= KM_FORMAT_BLOCKS,
                                err)))
        st = r->failed ? KM_ECORRUPT : KM_ENOMEM; /* err says why */
    else if (p->coef && has && !r->failed && form == GPR_FORM_NYSTROM)
        p->L = km_tri_read(r, n);
    if (p->L)
        p->C = km_tri_read(r, n);
    if (sums && p->coef && (!has || p->C) && !r->failed)
        km_gpr_read_sums(r, p, n);
    if (st != KM_OK)
        ; /* the factor's message */
    else if (!p->X || !p->coef || (has && !p->L && !p->F) ||
        (has && form == GPR_FORM_NYSTROM && !p->C) ||
        (sums && (!p->G || !p->Kt || (has && (!p->P || !p->Pt)))) ||
        r->failed)
        st = km_error_set(err, r->failed ? KM_ECORRUPT : KM_ENOMEM,
                          "model file: bad gaussian process payload");
    else if (!(p->signal > 0) || !isfinite(p->signal) || !(p->noise > 0) ||
             !isfinite(p->noise) || !(p->y_std > 0) || !isfinite(p->y_std) ||
             !isfinite(p->y_mean))
        st = km_error_set(err, KM_ECORRUPT, "model file: gaussian process "
                          "signal_variance, noise and y_std must be finite "
                          "numbers > 0 and y_mean a finite number");
    else if (form == GPR_FORM_NYSTROM &&
             (!(p->noise / p->signal > 0) || !isfinite(p->noise / p->signal)))
        st = km_error_set(err, KM_ECORRUPT, "model file: gaussian process "
                          "noise / signal_variance is not a finite number "
                          "> 0");
    else if (!km_all_finite(p->X, nx) || !km_all_finite(p->coef, n))
        st = km_error_set(err, KM_ECORRUPT, "model file: gaussian process "
                          "training rows or coefficients are not all "
                          "finite numbers");
    if (st == KM_OK && p->F)
        st = km_factor_check(p->F, "gaussian process factor L", err);
    if (st == KM_OK && p->L)
        st = check_factor(p->L, n, "factor L", err);
    if (st == KM_OK && p->C)
        st = check_factor(p->C, n, "factor C", err);
    if (st == KM_OK && p->G)
        st = km_gpr_check_sums(p, n, err);
    if (st == KM_OK && km_gpr_derive(p, n, d) != KM_OK)
        st = km_error_set(err, KM_ENOMEM, "out of memory reading a model");
    if (st != KM_OK) {
        gpr_free(p);
        return st;
    }
    *payload = p;
    return KM_OK;
}

/* The heap of a payload of m's sizes with this many n x n matrices (L,
 * and the nystrom form's C; with the sums of params.keep_factor G and,
 * with the variance, P) and n x 2 sums (Kt, and with the variance Pt):
 * X, the coefficients, the norms and the weights, the sums, and the
 * matrices, each of which the file stores as a triangle and read_tri
 * makes whole. */
static size_t heap_bytes(const km_model *m, unsigned factors, unsigned sums)
{
    uint64_t n = km_model_n_samples(m);
    uint64_t values = km_mul_sat(n, km_add_sat(km_model_n_features(m),
                                               3 + 2 * sums));
    values = km_add_sat(values, km_mul_sat(factors, km_mul_sat(n, n)));
    return (size_t)km_add_sat(sizeof(gpr_payload),
                              km_mul_sat(values, sizeof(double)));
}

static size_t gpr_bytes(const void *payload, const km_model *m)
{
    const gpr_payload *p = payload;
    return heap_bytes(m, (p->F || p->L) + (p->C != NULL) + (p->G != NULL) +
                             (p->P != NULL),
                      (p->Kt != NULL) + (p->Pt != NULL));
}

/* The factors and sums from the form and the nystrom form's flag (after
 * the four numbers, X and the coefficients). */
static void gpr_load_bytes(km_reader r, const km_model *m, size_t *kept,
                           size_t *peak)
{
    unsigned factors = 1, sums = 0;
    uint32_t f = km_model_file_format(m) >= 6 ? km_read_u32(&r) : 0;
    if (f == GPR_FORM_NYSTROM || f == GPR_FORM_NYS_SUMS) {
        for (int i = 0; i < 4; i++)
            km_read_f64(&r);
        km_skip_array(&r, 8); /* X */
        km_skip_array(&r, 8); /* the coefficients */
        factors = km_read_u32(&r) ? 2 : 0;
        if (f == GPR_FORM_NYS_SUMS) /* G and Kt, P and Pt with the variance */
            sums = factors ? 2 : 1;
        factors += sums;
    }
    *kept = *peak = heap_bytes(m, factors, sums);
}

/* The auto solver: the fit of the solver it resolves to, with krr's auto
 * figures; the params checked as auto's first (the exact fit would not
 * look at nystrom's, nor refuse the optimizer). */
static km_status gpr_fit_auto(const km_kernel *kernel,
                              const km_gpr_params *params, const double *X,
                              size_t n, size_t d, const double *y,
                              const km_fit_control *ctl, km_model **out,
                              km_error *err)
{
    km_problem pb = {X, n, d, y, 1, NULL, 0};
    km_status st = km_fit_validate(KM_ALGO_GPR, kernel, params, &pb, err);
    if (st != KM_OK)
        return st;
    size_t budget = km_memory_budget();
    km_gpr_params q = *params;
    q.solver = km_gpr_resolve_solver(params, n, d, budget);
    km_model *model = NULL;
    if ((st = km_gpr_fit(kernel, &q, X, n, d, y, ctl, &model, err)) != KM_OK)
        return st;
    if (km_auto_figures(model, KM_GPR_SOLVER_AUTO, q.solver, budget) !=
        KM_OK) {
        km_model_free(model);
        return km_error_set(err, KM_ENOMEM, "out of memory for the model");
    }
    *out = model;
    return KM_OK;
}

km_status km_gpr_fit(const km_kernel *kernel, const km_gpr_params *params,
                     const double *X, size_t n, size_t d, const double *y,
                     const km_fit_control *ctl, km_model **out, km_error *err)
{
    if (params && params->solver == KM_GPR_SOLVER_AUTO)
        return gpr_fit_auto(kernel, params, X, n, d, y, ctl, out, err);
    if (params && params->solver == KM_GPR_SOLVER_NYSTROM)
        return km_gpr_fit_nystrom(kernel, params, X, n, d, y, NULL, ctl, out,
                                  err);
    km_problem pb = {X, n, d, y, 1, NULL, 0};
    km_fit_frame f;
    gpr_eval e;
    gpr_payload *pl = NULL;
    gpr_optimum o;
    double lml;
    memset(&e, 0, sizeof e);
    memset(&o, 0, sizeof o);
    km_status st = km_fit_begin(&f, KM_ALGO_GPR, kernel, params, &pb, err);
    if (st != KM_OK)
        goto out;
    int lb = params->optimizer == KM_GPR_OPTIMIZER_LBFGS;
    if (lb && ctl && ctl->dense) { /* each step would need all of K^-1 */
        st = km_error_set(err, KM_EINVAL, "a distributed gpr fit needs "
                          "params.optimizer none");
        goto out;
    }
    pl = calloc(1, sizeof *pl);
    if (!pl) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for the model");
        goto out;
    }
    if ((st = eval_init(&e, &f.k, X, n, d, y, params->normalize_y, lb,
                        &pl->y_mean, &pl->y_std, ctl, err)) != KM_OK)
        goto out;
    if (km_progress(ctl, 0.0)) {
        st = km_error_set(err, KM_ECANCELLED, "fit cancelled");
        goto out;
    }
    double h[TH_COUNT] = {params->signal_variance, f.k.gamma, params->noise};
    double f0 = 0.1;
    if (lb) {
        if ((st = optimise(&e, params, h, 0.02, 0.85, &o, err)) != KM_OK)
            goto out;
        memcpy(h, o.h, sizeof h);
        free(e.G); /* the final factor needs K only */
        e.G = NULL;
        f0 = 0.85;
    }
    e.note = 1;
    if ((st = factor(&e, h, f0, 0.95, &lml, err)) != KM_OK)
        goto out;
    if (tunes_gamma(&f.k))
        f.k.gamma = h[TH_GAMMA];
    pl->signal = h[TH_SIGNAL];
    pl->noise = h[TH_NOISE];
    for (size_t i = 0; i < n; i++) /* the upper triangle: 0 */
        memset(e.A + i * n + i + 1, 0, (n - i - 1) * sizeof *e.A);
    pl->F = km_factor_wrap(e.A, n);
    pl->coef = e.a;
    e.A = e.a = NULL;
    if (!pl->F) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for the model");
        goto out;
    }
    if (!(pl->X = malloc(n * d * sizeof *pl->X))) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for the model");
        goto out;
    }
    memcpy(pl->X, X, n * d * sizeof *X);
    if (km_gpr_derive(pl, n, d) != KM_OK) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for the model");
        goto out;
    }
    eval_cleanup(&e);
    memset(&e, 0, sizeof e);

    st = km_gpr_finish(&f, d, n, pl, params, lml, &o, NULL, ctl, out, err);
    pl = NULL; /* owned by the model, or freed */
out:
    gpr_free(pl);
    eval_cleanup(&e);
    km_fit_cleanup(&f);
    return st;
}


static void params_default(void *params)
{
    *(km_gpr_params *)params = km_gpr_params_default();
}

static uint64_t max_outputs(uint64_t ns)
{
    (void)ns;
    return 1;
}

/* Four numbers, X, a, then the count and values of L's lower triangle:
 * exactly. From version 6 the form first; the nystrom form has a flag
 * after a, then nothing or two triangles; from version 11 its form 2 then
 * the sums (24 bytes, G's triangle, Kt and, with the flag, P's triangle
 * and Pt). */
static void payload_range(uint32_t format, uint64_t ns, uint64_t nf,
                          uint64_t no, uint64_t *lo, uint64_t *hi)
{
    (void)no;
    uint64_t v = km_add_sat(32, km_f64s_bytes(km_mul_sat(ns, nf)));
    v = km_add_sat(v, km_f64s_bytes(ns));
    *lo = *hi = km_add_sat(v, km_f64s_bytes(km_tri_values(ns)));
    if (format < 6)
        return;
    *lo = km_add_sat(v, 8); /* form, flag */
    uint64_t tri = km_f64s_bytes(km_tri_values(ns));
    *hi = km_add_sat(*lo, km_mul_sat(2, tri));
    if (format < 11)
        return;
    /* and the sums: rows, sy, syy, G, Kt; with the factors P and Pt */
    uint64_t kt = km_f64s_bytes(km_mul_sat(2, ns));
    *hi = km_add_sat(*hi, km_add_sat(24, km_mul_sat(2, km_add_sat(tri, kt))));
    if (format < KM_FORMAT_BLOCKS)
        return;
    /* the exact form's factor as 1 to n block references */
    uint64_t a = km_add_sat(v, 4), b;
    km_factor_refs_range(ns, &a, &b);
    *lo = a < *lo ? a : *lo;
    *hi = b > *hi ? b : *hi;
}

/* The variance and covariance only with the factors: nystrom fits
 * without params.variance have none. */
static unsigned model_outputs(const km_model *m)
{
    const gpr_payload *p = km_model_payload(m);
    return KM_OUT_VALUES |
           (p->F || p->L ? KM_OUT_VARIANCES | KM_OUT_COVARIANCE : 0);
}

static unsigned params_outputs(const void *params)
{
    const km_gpr_params *p = params;
    return KM_OUT_VALUES | (p->solver == KM_GPR_SOLVER_EXACT || p->variance
                                ? KM_OUT_VARIANCES | KM_OUT_COVARIANCE
                                : 0);
}

/* The typed fit takes one target per row. */
static km_status check_targets(const km_problem *pb, km_error *err)
{
    if (!pb->y || pb->m != 1)
        return km_error_set(err, KM_EINVAL, "y must be one number per row: "
                            "gpr fits one output (y has %zu columns)",
                            pb->y ? pb->m : 0);
    return KM_OK;
}

static km_status check(const void *params, const km_problem *pb,
                       km_error *err)
{
    const km_gpr_params *p = params;
    km_status st = km_gpr_check(p, err);
    if (st == KM_OK && p->solver != KM_GPR_SOLVER_EXACT)
        st = km_nys_check_centres(p->n_centres, pb->n, err);
    return st == KM_OK ? check_targets(pb, err) : st;
}

static size_t fit_bytes(const void *params, const km_problem *pb)
{
    return km_gpr_fit_bytes(pb->n, pb->d, params);
}

static km_status fit(const km_kernel *k, const void *params,
                     const km_problem *pb, const km_fit_control *ctl,
                     km_model **out, km_error *err)
{
    km_status st = check_targets(pb, err);
    if (st != KM_OK)
        return st;
    return km_gpr_fit(k, params, pb->X, pb->n, pb->d, pb->y, ctl, out, err);
}

/* ------------------------------------------------------------ capabilities */

static const char *mpi_refusal(const void *params, char *buf, size_t len)
{
    (void)buf, (void)len;
    const km_gpr_params *p = params;
    if (p->solver != KM_GPR_SOLVER_EXACT)
        return "gpr's nystrom or auto solver cannot run distributed "
               "(only params.solver exact)";
    return p->optimizer == KM_GPR_OPTIMIZER_NONE
               ? NULL
               : "gpr with an optimizer cannot run distributed (only "
                 "params.optimizer none)";
}

/* krr's, and the factor L the model keeps */
static size_t mpi_rank_bytes(const void *params, const km_problem *pb,
                             size_t nb, size_t rows, size_t cols)
{
    (void)params;
    uint64_t l = km_mul_sat(8, km_mul_sat(pb->n, pb->n));
    return km_mpi_dense_rank_bytes(pb, nb, rows, cols, (size_t)l);
}

/* the staging buffer, the model file read back and the model with L */
static size_t mpi_local_bytes(const void *params, const km_problem *pb)
{
    (void)params;
    uint64_t v = km_mul_sat(8, km_mul_sat(pb->n, pb->d + (pb->m ? pb->m : 1)));
    uint64_t l = km_mul_sat(12, km_mul_sat(pb->n, pb->n));
    return (size_t)km_add_sat(km_mul_sat(3, v), l);
}

static const km_algo_mpi mpi = {.refusal = mpi_refusal,
                                .rank_bytes = mpi_rank_bytes,
                                .local_bytes = mpi_local_bytes};

/* ------------------------------------------------------------ params
 *
 * The keys a request's params may give (km_param, km_base.h): their
 * types, bounds, choices, the solver values they apply with and docs,
 * read by the API through km_algorithm_params. */

/* Only with optimizer "lbfgs"; only with solver "nystrom" or "auto" (as
 * krr's NYSTROM). */
#define LBFGS .only_if = "optimizer", .only_value = KM_GPR_OPTIMIZER_LBFGS
#define GPR_NYSTROM .only_if = "solver", .only_value = KM_GPR_SOLVER_NYSTROM, \
                    .only_also = 1u << KM_GPR_SOLVER_AUTO

static const km_param gpr_rows[] = {
    {.key = "noise", .type = KM_PARAM_NUMBER,
     KM_PARAM_FIELD(km_gpr_params, noise),
     KM_PARAM_POSITIVE,
     .doc = "added to the kernel matrix's diagonal (scikit-learn's "
                      "alpha); with lbfgs, the optimizer's start"},
    {.key = "signal_variance", .type = KM_PARAM_NUMBER,
     KM_PARAM_FIELD(km_gpr_params, signal_variance), KM_PARAM_POSITIVE,
     .doc = "s of the prior covariance s k(x, z) (ConstantKernel); with "
            "lbfgs, the optimizer's start"},
    {.key = "normalize_y", .type = KM_PARAM_BOOL,
     KM_PARAM_FIELD(km_gpr_params, normalize_y),
     .doc = "fit (y - mean) / std and answer in y's units, as "
            "scikit-learn's normalize_y"},
    {.key = "optimizer", .type = KM_PARAM_CHOICE,
     KM_PARAM_FIELD(km_gpr_params, optimizer),
     .choices = &km_gpr_optimizer_choices,
     .doc = "none: the given hyperparameters; lbfgs: maximise the log "
            "marginal likelihood over log signal_variance, log noise and "
            "log gamma (rbf, laplacian, laplacian_l2, exponential only)"},
    {.key = "n_restarts", .type = KM_PARAM_INTEGER,
     KM_PARAM_FIELD(km_gpr_params, n_restarts),
     .range = KM_PARAM_RANGE_READER, .min = 0,
     .max = KM_GPR_MAX_RESTARTS, LBFGS,
     .doc = "lbfgs only: starts drawn in the bounds after the given one"},
    {.key = "seed", .type = KM_PARAM_INTEGER,
     KM_PARAM_FIELD(km_gpr_params, seed),
     .range = KM_PARAM_RANGE_READER, .min = 0, .max = 2147483647, LBFGS,
     .or_if = "solver", .or_value = KM_GPR_SOLVER_NYSTROM,
     .or_also = 1u << KM_GPR_SOLVER_AUTO,
     .doc = "lbfgs, nystrom and auto only: seed of the restarts' or the "
            "centres' draw (core's PRNG)"},
    {.key = "max_iter", .type = KM_PARAM_INTEGER,
     KM_PARAM_FIELD(km_gpr_params, max_iter),
     .range = KM_PARAM_RANGE_READER, .min = 1, .max = KM_GPR_MAX_ITER, LBFGS,
     .doc = "lbfgs only: iterations per start"},
    {.key = "solver", .type = KM_PARAM_CHOICE, .solver = 1,
     KM_PARAM_FIELD(km_gpr_params, solver),
     .choices = &km_gpr_solver_choices,
     .doc = "exact: Cholesky of the n x n kernel matrix; nystrom: m "
            "centres, the mean by krr's nystrom solver (Falkon) and, with "
            "variance, the DTC variance, memory O(m^2 + n), no optimizer; "
            "auto: exact when its estimate is at most half the server's "
            "memory budget, else nystrom (training.solver says which)"},
    KM_NYS_N_CENTRES_ROW(km_gpr_params, GPR_NYSTROM),
    KM_NYS_CG_ROWS(km_gpr_params, GPR_NYSTROM),
    KM_NYS_CENTRES_ROW(km_gpr_params, GPR_NYSTROM),
    {.key = "variance", .type = KM_PARAM_BOOL,
     KM_PARAM_FIELD(km_gpr_params, variance),
     GPR_NYSTROM,
     .doc = "nystrom and auto only: also keep the DTC variance's two m x m "
            "factors (n m^2 more work at fit), so that output std, var and "
            "cov and the log marginal likelihood are available"},
    {.key = "keep_factor", .type = KM_PARAM_BOOL,
     KM_PARAM_FIELD(km_gpr_params, keep_factor),
     GPR_NYSTROM,
     .doc = "nystrom and auto only (an exact model is always updatable): "
            "keep what POST /v1/models/{name}/update needs to add rows "
            "without a refit, the normal equations' sums K_nm^T K_nm and "
            "K_nm^T [y 1] of the centres and, with variance, Phi^T Phi and "
            "Phi^T [y 1] (8 m (m + 2) bytes more, 8 m (2 m + 4) with "
            "variance, and one more pass over the rows at fit)"},
    {0},
};
_Static_assert(sizeof(km_gpr_optimizer) == sizeof(int) &&
                   sizeof(km_gpr_solver) == sizeof(int),
               "KM_PARAM_CHOICE fields are int-sized");

static const km_param_set param_set = {gpr_rows, sizeof(km_gpr_params),
                                        params_default};

const km_algo km_gpr_algo = {
    .outputs = KM_OUT_VALUES | KM_OUT_VARIANCES | KM_OUT_COVARIANCE,
    .self_of_new = 1,
    .model_outputs = model_outputs,
    .params_outputs = params_outputs,
    .params = &param_set,
    .check = check,
    .fit_bytes = fit_bytes,
    .fit = fit,
    .values = km_gpr_predict,
    .variances = km_gpr_variance,
    .covariance = km_gpr_covariance,
    .max_outputs = max_outputs,
    .payload_range = payload_range,
    .free_payload = gpr_free,
    .save = gpr_save,
    .load = gpr_load,
    .file_format = gpr_file_format,
    .factor_blocks = gpr_factor_blocks,
    .bytes = gpr_bytes,
    .load_bytes = gpr_load_bytes,
    .target = KM_TARGET_VALUES,
    .check_targets = 1,
    .mpi = &mpi,
    .coefs = km_gpr_coefs,
    .update = &km_gpr_update,
};
