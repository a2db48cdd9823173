/*
 * km_klr.c - kernel logistic regression: minimise
 *     sum_i loss_i(f(x_i)) + (lambda / 2) sum_c |f_c|_H^2,
 * f_c = sum_j a_jc k(x_j, .) + b_c, b_c an unpenalised intercept (with
 * params.fit_intercept), over q functions:
 *   binary (k = 2 classes, whatever multi_class says, as scikit-learn's
 *           multi_class="auto"): q = 1, loss log(1 + exp(-y f)), y = +1
 *           for the second class;
 *   multinomial (k > 2, the default): q = k, softmax loss
 *           logsumexp_c f_c - f_y;
 *   ovr (k > 2): q = k independent binary problems, class c against the
 *           rest; probabilities are the k sigmoids normalised to sum 1
 *           (as scikit-learn's ovr).
 *
 * Precision: B's factor stays in double. krr's mixed path (km_spd.c) was
 * not applied here: the fit keeps K in double beside B for the gradients
 * and the objective, so a float factor would save no memory, only part
 * of the factorisations' time (SPOTRF-speed factors would need each
 * Newton solve refined in double, or inexact Newton steps). Measured for
 * krr: the float factor runs at about twice DPOTRF's speed at n = 10000.
 * Left for later (bench/RESULTS.md, issue 28).
 *
 * The solver: Newton's method on the dual coefficients, one function
 * (block) at a time. For block c with the others fixed the loss's
 * Hessian in f_c is the diagonal W = diag(p_c (1 - p_c)) (exact for
 * binary and ovr, the block's own for multinomial), so the Newton system
 * in (a_c, b_c) is, with q = r + lambda a_c (r = p_c - t_c the loss's
 * gradient in f_c; the gradient in a_c is K q and in b_c is 1^T r):
 *     (W K + lambda I) da = -(q + W 1 db)
 *     db = (1^T a_c - 1^T M q) / (1^T M W 1),   M = (W K + lambda I)^-1
 * and M v = (v - S B^-1 S K v) / lambda with S = W^1/2 and
 *     B = S K S + lambda I,
 * symmetric with eigenvalues >= lambda however small W is (Woodbury; the
 * form of Rasmussen and Williams' Laplace approximation, algorithm 3.1):
 * one blocked Cholesky of B (LAPACK DPOTRF / DTRSM / DSYRK by panels, so
 * progress and cancel are reported between panels) and two solves per
 * step. A backtracking (Armijo) line search on the objective along
 * (da, db) keeps every step a descent; the objective along the line costs
 * O(n q) since K da is computed once. The fixed point of the step has
 * r + lambda a_c = 0 exactly, the representer condition, whatever the
 * rank of K.
 *
 * Binary and ovr: each block is its own problem, so this is Newton's
 * method, quadratically convergent. Binary also keeps B's factor across
 * steps: while it is not stale, a step is a chord step, the Newton step
 * of the W of that factorisation (exact gradient, approximate Hessian:
 * still positive definite, so still a descent direction), costing O(n^2)
 * (DSYMV and DTRSV, no factorisation) instead of O(n^3). The factor is
 * refreshed after a chord step that did not take the gradient's norm
 * down by a fifth, after CHORD_STEPS chord steps in a row, or when a
 * chord direction does not descend (that step is redone with the new
 * factor). The fixed point is the same, so is the optimum; measured on
 * the benchmark's data (n = 5000, rbf, lambda 1e-3, tol 1e-8): 6
 * factorisations and 27 steps instead of 10 and 10, 36 % less CPU time.
 * (ovr and multinomial would need q factors of n x n kept.) The figure
 * "factorizations" counts them. Multinomial: the k blocks are visited
 * in turn (block Gauss-Seidel Newton, each step exact for its block and
 * a descent on the whole objective), which converges to the exact
 * optimum (strictly convex, smooth) at a linear rate. Why not a full
 * Newton: its system is (n k) x (n k), 20 GB at n = 5000, k = 10; a
 * block-diagonal Newton (Jacobi) needs the same k factorisations per
 * sweep and converges more slowly than Gauss-Seidel; Newton-CG with
 * Hessian-vector products needs a preconditioner as costly as these
 * factorisations to converge in few iterations at small lambda. The
 * iteration stops when the 2-norm of the whole gradient (in every a_c
 * and, with the intercept, every b_c) is at most params.tol, after
 * params.max_iter sweeps, or when no block can decrease the objective
 * any more (rounding): the figures "iterations" and "gradient_norm" say
 * where it stopped. Multinomial intercepts are centred to sum 0 at the
 * end (the softmax does not see a shift), as scikit-learn's are.
 *
 * Memory: one n x n buffer holds K in its lower triangle (row-major) and
 * B, then B's Cholesky factor, in its upper triangle, the diagonals
 * apart (K's is kept in a vector); products with K (DSYMV, or DSYMM
 * for more than four columns, on the lower triangle) correct the
 * diagonal. O(n q) vectors besides.
 *
 * The model keeps the training X, the n x q coefficients and the q
 * intercepts; decision values are km_kernel_expand in row blocks.
 *
 * params.solver "nystrom" solves the problem restricted to m centres in
 * the primal of their Nystrom features: see the nystrom section below.
 *
 * Thread-safety: reentrant.
 */
#include <cblas.h>
#include <float.h>
#include <limits.h>
#include <lapacke.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../base/km_base_internal.h"
#include "../kernels/km_kernel_internal.h"
#include "../model/km_model_internal.h"
#include "../solvers/km_solvers_internal.h"
#include "km_klr.h"
#include "km_klr_internal.h"


KM_CHOICES_DEFINE(km_klr_multi_choices, KM_KLR_MULTI_MAP, KM_KLR_MULTI_COUNT);
KM_CHOICES_DEFINE(km_klr_solver_choices, KM_KLR_SOLVER_MAP,
                  KM_KLR_SOLVER_COUNT);

const char *km_klr_multi_name(km_klr_multi m)
{
    return km_choice_name(&km_klr_multi_choices, (int)m);
}

const char *km_klr_solver_name(km_klr_solver s)
{
    return km_choice_name(&km_klr_solver_choices, (int)s);
}

km_klr_params km_klr_params_default(void)
{
    km_klr_params p = {1.0, 1e-8, 100, 1, KM_KLR_MULTINOMIAL,
                       KM_KLR_SOLVER_EXACT, 0, 0, KM_KRR_CENTRES_UNIFORM};
    return p;
}

km_status km_klr_check(const km_klr_params *p, size_t n_samples,
                       size_t n_classes, km_error *err)
{
    if (!(p->lambda > 0) || !isfinite(p->lambda))
        return km_error_set(err, KM_EINVAL,
                            "params.lambda must be a finite number > 0");
    if (!(p->tol > 0) || !isfinite(p->tol))
        return km_error_set(err, KM_EINVAL,
                            "params.tol must be a finite number > 0");
    if (p->max_iter < 1 || p->max_iter > KM_KLR_MAX_ITER)
        return km_error_set(err, KM_EINVAL, "params.max_iter must be in "
                            "[1, %d]", KM_KLR_MAX_ITER);
    if (p->fit_intercept != 0 && p->fit_intercept != 1)
        return km_error_set(err, KM_EINVAL,
                            "params.fit_intercept must be true or false");
    char list[64];
    if ((unsigned)p->multi_class >= KM_KLR_MULTI_COUNT) {
        km_choice_list(&km_klr_multi_choices, " or ", list, sizeof list);
        return km_error_set(err, KM_EINVAL, "params.multi_class must be %s",
                            list);
    }
    if ((unsigned)p->solver >= KM_KLR_SOLVER_COUNT) {
        km_choice_list(&km_klr_solver_choices, " or ", list, sizeof list);
        return km_error_set(err, KM_EINVAL, "params.solver must be %s", list);
    }
    if (p->solver == KM_KLR_SOLVER_NYSTROM) {
        km_status st = km_nys_check_rule(p->centres, err);
        if (st != KM_OK)
            return st;
        if (p->seed > ((uint64_t)1 << 53))
            return km_error_set(err, KM_EINVAL,
                                "params.seed must be at most 2^53");
        if (p->n_centres > n_samples)
            return km_error_set(err, KM_EPROBLEM, "params.n_centres is %zu "
                                "but X has %zu rows: at most one centre per "
                                "row", p->n_centres, n_samples);
    }
    if (n_classes == 1)
        return km_error_set(err, KM_EPROBLEM, "y has 1 distinct class; klr "
                            "needs at least 2");
    return KM_OK;
}

/* The nystrom solver's peak (km_klr_fit_nys's buffers, km_klr_nys.c). */
static size_t nys_fit_bytes(size_t n, size_t d, size_t n_classes,
                            const km_klr_params *p)
{
    size_t k = n_classes < 2 ? 2 : n_classes, q = km_klr_n_functions(k);
    size_t m = km_nys_n_centres(p->n_centres, n), P = m + 1;
    /* The centres and their norms (the model's), T (m x m), Phi (n x m),
     * a scaled block of it, the Hessians' factors (one per function), F,
     * D, R and W (n x q each), U, G, the direction and CG's three vectors
     * (P x q each), the model's coefficients (m x q); the intercepts
     * twice, the refresh flags and counts (q each), the class counts;
     * picking the centres. */
    size_t v = km_mul_sat(m, d + 1);
    v = km_add_sat(v, km_mul_sat(m, m));
    v = km_add_sat(v, km_mul_sat(n, m));
    v = km_add_sat(v, km_mul_sat(km_nys_block_rows(n, m), m));
    v = km_add_sat(v, km_mul_sat(q, km_mul_sat(P, P)));
    v = km_add_sat(v, km_mul_sat(4, km_mul_sat(n, q)));
    v = km_add_sat(v, km_mul_sat(6, km_mul_sat(P, q)));
    v = km_add_sat(v, km_add_sat(km_mul_sat(m, q), 4 * q + k));
    v = km_add_sat(v, km_nys_centres_values(n, d, m, p->centres));
    return km_mul_sat(sizeof(double), v);
}

size_t km_klr_fit_bytes(size_t n, size_t d, size_t n_classes,
                        const km_klr_params *p)
{
    if (p && p->solver == KM_KLR_SOLVER_NYSTROM)
        return nys_fit_bytes(n, d, n_classes, p);
    size_t q = km_klr_n_functions(n_classes < 2 ? 2 : n_classes);
    /* The n x n buffer; the fit's A, K A, F, Q and its gradient, the
     * model's coefficients (n x q each, 6), the block's eleven n-vectors
     * (K's diagonal among them), the counts; the model's X, coefficients,
     * intercepts and norms. */
    size_t v = km_mul_sat(n, n);
    v = km_add_sat(v, km_mul_sat(6, km_mul_sat(n, q)));
    v = km_add_sat(v, km_mul_sat(n, 11));
    v = km_add_sat(v, km_mul_sat(n, km_add_sat(d, q + 1)));
    v = km_add_sat(v, 3 * q + n_classes);
    return km_mul_sat(sizeof(double), v);
}

/* ------------------------------------------------------------ algebra */

/* Y (n x m, column-major) = K V: DSYMM on the lower triangle, whose
 * diagonal may hold B's; K's own is Kd. */
static void k_times(const klr_fit *f, const double *V, size_t m, double *Y)
{
    size_t n = f->n;
    /* a few columns by DSYMV: DSYMM would first copy all of K (4 times
     * the time at n = 5000) */
    if (m <= 4)
        for (size_t j = 0; j < m; j++)
            cblas_dsymv(CblasColMajor, CblasUpper, (int)n, 1.0, f->G, (int)n,
                        V + j * n, 1, 0.0, Y + j * n, 1);
    else
        cblas_dsymm(CblasColMajor, CblasLeft, CblasUpper, (int)n, (int)m,
                    1.0, f->G, (int)n, V, (int)n, 0.0, Y, (int)n);
    /* Row-major lower == column-major upper. */
    for (size_t j = 0; j < m; j++)
        for (size_t i = 0; i < n; i++)
            Y[j * n + i] += (f->Kd[i] - f->G[i * n + i]) * V[j * n + i];
}

/* Tiles of the transposing copy into B. */
#define TILE 64
/* Columns per panel of the Cholesky factorisation. */
#define CHOL_BLOCK 512

/* B = S K S + lambda I into the upper triangle (row-major), then its
 * Cholesky factor (column-major lower: the same storage), by panels. */
static km_status factor_b(klr_fit *f, km_error *err)
{
    size_t n = f->n;
    double *G = f->G;
    const double *s = f->s;
    for (size_t i0 = 0; i0 < n; i0 += TILE)
        for (size_t j0 = i0; j0 < n; j0 += TILE) {
            size_t ie = i0 + TILE < n ? i0 + TILE : n;
            size_t je = j0 + TILE < n ? j0 + TILE : n;
            for (size_t i = i0; i < ie; i++)
                for (size_t j = j0 > i + 1 ? j0 : i + 1; j < je; j++)
                    G[i * n + j] = s[i] * s[j] * G[j * n + i];
        }
    for (size_t i = 0; i < n; i++)
        G[i * n + i] = f->lambda + s[i] * s[i] * f->Kd[i];
    for (size_t k = 0; k < n; k += CHOL_BLOCK) {
        size_t kb = n - k < CHOL_BLOCK ? n - k : CHOL_BLOCK, m = n - k - kb;
        double *A11 = G + k * n + k, *A21 = A11 + kb;
        lapack_int info = LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L',
                                         (lapack_int)kb, A11, (lapack_int)n);
        if (info > 0)
            return km_error_set(err, KM_ENOTPD, "W^1/2 K W^1/2 + lambda I "
                                "is not positive definite (Cholesky failed "
                                "at row %zu): the kernel is not positive "
                                "semi-definite on X; use a positive "
                                "definite kernel or a larger params.lambda",
                                k + (size_t)info);
        if (info < 0)
            return km_error_set(err, KM_EINTERNAL, "dpotrf argument %d",
                                (int)-info);
        if (m == 0)
            break;
        cblas_dtrsm(CblasColMajor, CblasRight, CblasLower, CblasTrans,
                    CblasNonUnit, (int)m, (int)kb, 1.0, A11, (int)n, A21,
                    (int)n);
        cblas_dsyrk(CblasColMajor, CblasLower, CblasNoTrans, (int)m, (int)kb,
                    -1.0, A21, (int)n, 1.0, A21 + kb * n, (int)n);
        if (km_progress(f->ctl, f->frac))
            return km_error_set(err, KM_ECANCELLED, "fit cancelled");
    }
    return KM_OK;
}

/* V (n x m column-major, with KV = K V) := M V = (V - S B^-1 S K V) /
 * lambda, B factored (with the S of its factorisation). */
static void apply_m(klr_fit *f, double *V, double *KV, size_t m)
{
    size_t n = f->n;
    for (size_t j = 0; j < m; j++)
        for (size_t i = 0; i < n; i++)
            KV[j * n + i] *= f->s[i];
    for (size_t j = 0; j < m; j++) { /* B^-1 by DTRSV: as DSYMV above */
        cblas_dtrsv(CblasColMajor, CblasLower, CblasNoTrans, CblasNonUnit,
                    (int)n, f->G, (int)n, KV + j * n, 1);
        cblas_dtrsv(CblasColMajor, CblasLower, CblasTrans, CblasNonUnit,
                    (int)n, f->G, (int)n, KV + j * n, 1);
    }
    for (size_t j = 0; j < m; j++)
        for (size_t i = 0; i < n; i++)
            V[j * n + i] = (V[j * n + i] - f->s[i] * KV[j * n + i]) /
                           f->lambda;
}

/* The whole gradient at the current point: Q = R + lambda A and KQ = K Q
 * per block; the b parts into gb (q). Its 2-norm. */
static double gradient(klr_fit *f, double *gb)
{
    size_t n = f->n, q = f->q;
    for (size_t c = 0; c < q; c++) {
        double *Qc = f->Q + c * n;
        km_klr_block_residual(f, c, Qc, NULL);
        km_ksum s = {0, 0};
        for (size_t i = 0; i < n; i++) {
            km_ksum_add(&s, Qc[i]);
            Qc[i] += f->lambda * f->A[c * n + i];
        }
        gb[c] = f->intercept ? km_ksum_get(&s) : 0;
    }
    k_times(f, f->Q, q, f->KQ);
    km_ksum g = {0, 0};
    for (size_t c = 0; c < q; c++) {
        km_ksum_add(&g, gb[c] * gb[c]);
        for (size_t i = 0; i < n; i++)
            km_ksum_add(&g, f->KQ[c * n + i] * f->KQ[c * n + i]);
    }
    return sqrt(km_ksum_get(&g));
}

/* The most chord steps (binary, exact) in a row. */
#define CHORD_STEPS 10

/* One Newton step on block c with a line search; *moved: whether it
 * changed the point. KQ's column c must be K q_c at the current point
 * when fresh (else it is recomputed). With f->reuse and a factor that is
 * not stale, the step is a chord step: the Newton step of the weights W
 * of the kept factorisation (S = W^1/2 in f->s), exact in the gradient,
 * approximate in the Hessian, and still a descent direction (the
 * approximate Hessian is positive definite); a chord step that does not
 * descend is redone with a new factor. */
static km_status block_step(klr_fit *f, size_t c, int fresh, int *moved,
                            km_error *err)
{
    size_t n = f->n;
    double lam = f->lambda, *a = f->A + c * n, *ka = f->KA + c * n;
    double *r = f->r, *w = f->w, *V = f->z, *KV = f->v2;
    *moved = 0;
    km_klr_block_residual(f, c, r, w);
    for (int attempt = 0; attempt < 2; attempt++) {
        int factor = !f->reuse || f->stale || attempt > 0;
        if (factor)
            for (size_t i = 0; i < n; i++)
                f->s[i] = sqrt(w[i]);
        f->kept = !factor;
        /* V = [q, S^2 1], KV = K V */
        for (size_t i = 0; i < n; i++) {
            V[i] = r[i] + lam * a[i];
            V[n + i] = f->s[i] * f->s[i];
        }
        size_t m = f->intercept ? 2 : 1;
        if (fresh) {
            memcpy(KV, f->KQ + c * n, n * sizeof *KV);
            if (m == 2)
                k_times(f, V + n, 1, KV + n);
        } else {
            k_times(f, V, m, KV);
        }
        /* the slope's gradient part in a: K q, kept before KV is solved
         * on */
        memcpy(f->kv2, KV, n * sizeof *KV);
        if (factor) {
            km_status st = factor_b(f, err);
            if (st != KM_OK)
                return st;
            f->factors++;
            f->stale = 0;
        }
        apply_m(f, V, KV, m); /* V = [M q, M w] */
        double db = 0, gb = 0;
        if (f->intercept) {
            km_ksum sa = {0, 0}, smq = {0, 0}, smw = {0, 0}, sr = {0, 0};
            for (size_t i = 0; i < n; i++) {
                km_ksum_add(&sa, a[i]);
                km_ksum_add(&smq, V[i]);
                km_ksum_add(&smw, V[n + i]);
                km_ksum_add(&sr, r[i]);
            }
            double den = km_ksum_get(&smw);
            gb = km_ksum_get(&sr);
            if (den > 0 && isfinite(den))
                db = (km_ksum_get(&sa) - km_ksum_get(&smq)) / den;
        }
        double *da = f->da, *kda = f->kda;
        for (size_t i = 0; i < n; i++)
            da[i] = -(V[i] + (f->intercept ? db * V[n + i] : 0));
        k_times(f, da, 1, kda);
        /* D = K da + db: the change of f_c per unit step */
        km_ksum sl = {0, 0}, q2 = {0, 0}, q1 = {0, 0};
        for (size_t i = 0; i < n; i++) {
            km_ksum_add(&sl, f->kv2[i] * da[i]);
            km_ksum_add(&q2, da[i] * kda[i]);
            km_ksum_add(&q1, da[i] * ka[i]);
        }
        double slope_s = km_ksum_get(&sl) + gb * db;
        double dkd = km_ksum_get(&q2), dka = km_ksum_get(&q1);
        for (size_t i = 0; i < n; i++)
            kda[i] += db; /* now D */
        if (!(slope_s < 0) || !isfinite(slope_s)) {
            if (factor)
                return KM_OK; /* no descent left (rounding) */
            continue; /* CG's direction: again with a new factor */
        }
        double l0 = km_klr_block_loss(f, c, 0, kda);
        double eps = 8 * DBL_EPSILON * (fabs(l0) + 1);
        double t = 1;
        for (int tries = 0; tries < 60; tries++, t *= 0.5) {
            double l = km_klr_block_loss(f, c, t, kda);
            /* the penalty's change: lambda/2 ((a + t da)^T K (a + t da) -
             * a^T K a) */
            double dp = 0.5 * lam * (2 * t * dka + t * t * dkd);
            if (isfinite(l) && l + dp - l0 <= 1e-4 * t * slope_s + eps) {
                for (size_t i = 0; i < n; i++) {
                    a[i] += t * da[i];
                    ka[i] += t * (kda[i] - db);
                }
                f->b[c] += t * db;
                for (size_t i = 0; i < n; i++)
                    f->F[c * n + i] = ka[i] + f->b[c];
                *moved = 1;
                return KM_OK;
            }
        }
        if (factor)
            return KM_OK;
    }
    return KM_OK;
}

static void klr_free(void *payload)
{
    klr_payload *p = payload;
    if (!p)
        return;
    free(p->X);
    free(p->coef);
    free(p->b);
    free(p->xn);
    free(p);
}

/* Multinomial intercepts centred to sum 0 (the softmax does not see a
 * shift), as scikit-learn's are. */
static void centre_intercepts(double *b, size_t q)
{
    double mb = 0;
    for (size_t c = 0; c < q; c++)
        mb += b[c] / (double)q;
    for (size_t c = 0; c < q; c++)
        b[c] -= mb;
}

/* The exact solver: Newton on the n x q dual coefficients. */
static km_status fit_exact(km_fit_frame *fr, const km_klr_params *params,
                           const double *X, size_t n, size_t d, const int *y,
                           size_t k, const size_t *counts,
                           const km_fit_control *ctl, klr_result *res,
                           km_error *err)
{
    klr_fit f;
    double *gb = NULL, *buf = NULL;
    klr_payload *pl = res->pl;
    size_t q = km_klr_n_functions(k);
    km_status st = KM_OK;
    km_klr_fit_init(&f, pl->kind, n, q, y, params, ctl);
    f.G = malloc(n * n * sizeof *f.G);
    f.reuse = q == 1;
    f.stale = 1;
    buf = calloc(6 * n * q + 11 * n + q, sizeof *buf);
    gb = calloc(q, sizeof *gb);
    if (!f.G || !buf || !gb) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for a %zu x %zu "
                          "kernel matrix", n, n);
        goto out;
    }
    /* n x q each: A, K A, F, Q, K Q, the model's coefficients; n each:
     * K's diagonal, r, w, s, da, K da, K q; 2 n each: z, v2; q: b */
    f.A = buf;
    f.KA = f.A + n * q;
    f.F = f.KA + n * q;
    f.Q = f.F + n * q;
    f.KQ = f.Q + n * q;
    double *coef = f.KQ + n * q; /* n x q, the model's layout */
    f.Kd = coef + n * q;
    f.r = f.Kd + n;
    f.w = f.r + n;
    f.s = f.w + n;
    f.da = f.s + n;
    f.kda = f.da + n;
    f.kv2 = f.kda + n;
    f.z = f.kv2 + n;
    f.v2 = f.z + 2 * n;
    f.b = f.v2 + 2 * n;

    if ((st = km_gram_sym(&fr->k, X, n, d, f.G, 0, err)) != KM_OK)
        goto out;
    for (size_t i = 0; i < n; i++)
        f.Kd[i] = f.G[i * n + i];
    f.frac = 0.1;
    if (km_progress(ctl, f.frac)) {
        st = km_error_set(err, KM_ECANCELLED, "fit cancelled");
        goto out;
    }
    km_klr_start(&f, counts, k);
    double tol = params->tol, g = gradient(&f, gb);
    f.g0 = g;
    size_t its = 0, chords = 0;
    while (g > tol && its < params->max_iter) {
        int any = 0;
        double g_was = g;
        for (size_t c = 0; c < q; c++) {
            int moved = 0;
            if ((st = block_step(&f, c, c == 0, &moved, err)) != KM_OK)
                goto out;
            any |= moved;
        }
        its++;
        g = gradient(&f, gb);
        /* refactor after a chord step that did not take the gradient
         * down by a fifth, or after CHORD_STEPS chord steps in a row (a
         * chord step costs O(n^2), a factorisation O(n^3): about 15 of
         * them at n = 5000; Newton's own rate improves as it converges,
         * a chord step's does not) */
        chords = f.kept ? chords + 1 : 0;
        f.stale = f.kept && (!(g <= 0.8 * g_was) || chords >= CHORD_STEPS);
        km_klr_advance(&f, g, tol, 0.1);
        if (km_progress(ctl, f.frac)) {
            st = km_error_set(err, KM_ECANCELLED, "fit cancelled");
            goto out;
        }
        if (!any)
            break; /* no block can descend: the optimum within rounding */
    }
    res->its = its;
    res->g = g;
    res->obj = km_klr_objective(&f);
    res->factors = f.factors;
    for (size_t i = 0; i < n; i++)
        for (size_t c = 0; c < q; c++)
            coef[i * q + c] = f.A[c * n + i];
    free(f.G);
    f.G = NULL;
    pl->X = malloc(n * d * sizeof *pl->X);
    pl->coef = malloc(n * q * sizeof *pl->coef);
    pl->b = malloc(q * sizeof *pl->b);
    if (!pl->X || !pl->coef || !pl->b) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for the model");
        goto out;
    }
    memcpy(pl->X, X, n * d * sizeof *X);
    memcpy(pl->coef, coef, n * q * sizeof *coef);
    memcpy(pl->b, f.b, q * sizeof *f.b);
    res->rows = n;
out:
    free(f.G);
    free(buf);
    free(gb);
    return st;
}

km_status km_klr_fit(const km_kernel *kernel, const km_klr_params *params,
                     const double *X, size_t n, size_t d, const int *y,
                     size_t n_classes, const km_fit_control *ctl,
                     km_model **out, km_error *err)
{
    km_problem pb = {X, n, d, NULL, 0, y, n_classes};
    km_fit_frame fr;
    size_t *counts = NULL;
    klr_result res;
    km_model *model = NULL;
    memset(&res, 0, sizeof res);
    km_status st = km_fit_begin(&fr, KM_ALGO_KLR, kernel, params, &pb, err);
    if (st != KM_OK)
        goto out;
    size_t k = n_classes, q = km_klr_n_functions(k);
    int nys = params->solver == KM_KLR_SOLVER_NYSTROM;
    if (!(counts = calloc(k, sizeof *counts)) ||
        !(res.pl = calloc(1, sizeof *res.pl))) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for a klr fit");
        goto out;
    }
    for (size_t i = 0; i < n; i++)
        counts[y[i]]++;
    for (size_t c = 0; c < k; c++)
        if (!counts[c]) {
            st = km_error_set(err, KM_EPROBLEM, "class %zu has no rows in y",
                              c);
            goto out;
        }
    res.pl->kind = k == 2 ? KLR_BINARY
                   : params->multi_class == KM_KLR_OVR ? KLR_OVR
                                                       : KLR_MULTINOMIAL;
    if (km_progress(ctl, 0.0)) {
        st = km_error_set(err, KM_ECANCELLED, "fit cancelled");
        goto out;
    }
    st = nys ? km_klr_fit_nys(&fr, params, X, n, d, y, k, counts, ctl, &res,
                           err)
             : fit_exact(&fr, params, X, n, d, y, k, counts, ctl, &res, err);
    if (st == KM_ENOTPD && !nys) /* factor_b's: the kernel is indefinite */
        km_kernel_note_min_eigenvalue(&fr.k, X, n, d, 1.0, 0.0, NULL, "K's",
                                      err);
    if (st != KM_OK)
        goto out;
    klr_payload *pl = res.pl;
    size_t rows = res.rows;
    if (!km_all_finite(pl->coef, rows * q) || !km_all_finite(pl->b, q) ||
        !isfinite(res.obj)) {
        st = km_error_set(err, KM_ENOTPD, "the Newton iteration gave "
                          "non-finite coefficients; use a larger "
                          "params.lambda");
        goto out;
    }
    if (pl->kind == KLR_MULTINOMIAL && params->fit_intercept)
        centre_intercepts(pl->b, q);
    if (!pl->xn && !(pl->xn = km_sqnorms(pl->X, rows, d))) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for the model");
        goto out;
    }
    st = km_fit_model(&fr, d, rows, q, pl, &model, err);
    res.pl = NULL; /* owned by the model now, also on failure */
    if (st != KM_OK)
        goto out;
    km_info *pi = km_model_params_mut(model), *ti = km_model_training_mut(model);
    if (km_info_add1(pi, "lambda", KM_INFO_NUMBER, params->lambda) != KM_OK ||
        km_info_add1(pi, "tol", KM_INFO_NUMBER, params->tol) != KM_OK ||
        km_info_add1(pi, "max_iter", KM_INFO_INTEGER,
                     (double)params->max_iter) != KM_OK ||
        km_info_add1(pi, "fit_intercept", KM_INFO_BOOLEAN,
                     params->fit_intercept) != KM_OK ||
        km_info_add1(pi, "multi_class", KM_INFO_INTEGER,
                     params->multi_class) != KM_OK ||
        km_info_add1(pi, "solver", KM_INFO_INTEGER, params->solver) !=
            KM_OK ||
        (nys && (km_info_add1(pi, "n_centres", KM_INFO_INTEGER,
                              (double)rows) != KM_OK ||
                 km_info_add1(pi, "seed", KM_INFO_INTEGER,
                              (double)params->seed) != KM_OK ||
                 km_info_add1(pi, "centres", KM_INFO_INTEGER,
                              params->centres) != KM_OK)) ||
        km_info_add1(ti, "solver", KM_INFO_INTEGER, params->solver) !=
            KM_OK ||
        km_info_add1(ti, "iterations", KM_INFO_INTEGER, (double)res.its) !=
            KM_OK ||
        km_info_add1(ti, "gradient_norm", KM_INFO_NUMBER, res.g) != KM_OK ||
        km_info_add1(ti, "objective", KM_INFO_NUMBER, res.obj) != KM_OK ||
        km_info_add1(ti, "factorizations", KM_INFO_INTEGER,
                     (double)res.factors) != KM_OK ||
        (nys && km_info_add1(ti, "cg_iterations", KM_INFO_INTEGER,
                             (double)res.cg_its) != KM_OK)) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for the model");
        goto out;
    }
    km_progress(ctl, 1.0);
    *out = model;
    model = NULL;
out:
    km_model_free(model);
    klr_free(res.pl);
    free(counts);
    km_fit_cleanup(&fr);
    return st;
}

/* ------------------------------------------------------------ predict */

static size_t model_classes(const km_model *m)
{
    const klr_payload *p = km_model_payload(m);
    return p->kind == KLR_BINARY ? 2 : km_model_n_outputs(m);
}

km_status km_klr_decision(const km_model *m, const double *X, size_t n,
                          double *out, km_error *err)
{
    km_status st = km_model_expect_input(m, KM_ALGO_KLR, "predict", X, n,
                                         err);
    if (st != KM_OK)
        return st;
    const klr_payload *p = km_model_payload(m);
    return km_kernel_expand(km_model_kernel(m), p->X, km_model_n_samples(m),
                            km_model_n_features(m), p->xn, p->coef,
                            km_model_n_outputs(m), p->b, X, n, out, err);
}

/* Row v of q decision values to k probabilities. */
static void to_probabilities(unsigned kind, const double *v, size_t k,
                             double *p)
{
    if (kind == KLR_BINARY) {
        p[1] = km_klr_sigmoid(v[0]);
        p[0] = km_klr_sigmoid(-v[0]);
        return;
    }
    double s = 0;
    if (kind == KLR_OVR) {
        for (size_t c = 0; c < k; c++)
            s += p[c] = km_klr_sigmoid(v[c]);
    } else {
        double mx = -HUGE_VAL;
        for (size_t c = 0; c < k; c++)
            mx = v[c] > mx ? v[c] : mx;
        for (size_t c = 0; c < k; c++)
            s += p[c] = exp(v[c] - mx);
    }
    for (size_t c = 0; c < k; c++)
        p[c] /= s;
}

km_status km_klr_probability(const km_model *m, const double *X, size_t n,
                             double *out, km_error *err)
{
    km_status st = km_model_expect_input(m, KM_ALGO_KLR, "predict", X, n,
                                         err);
    if (st != KM_OK || n == 0)
        return st;
    const klr_payload *p = km_model_payload(m);
    size_t k = model_classes(m), q = km_model_n_outputs(m);
    double *v = malloc(n * q * sizeof *v);
    if (!v)
        return km_error_set(err, KM_ENOMEM, "out of memory for a prediction");
    if ((st = km_klr_decision(m, X, n, v, err)) == KM_OK)
        for (size_t i = 0; i < n; i++)
            to_probabilities(p->kind, v + i * q, k, out + i * k);
    free(v);
    return st;
}

km_status km_klr_predict(const km_model *m, const double *X, size_t n,
                         int *labels, km_error *err)
{
    km_status st = km_model_expect_input(m, KM_ALGO_KLR, "predict", X, n,
                                         err);
    if (st != KM_OK || n == 0)
        return st;
    size_t k = model_classes(m);
    double *P = malloc(n * k * sizeof *P);
    if (!P)
        return km_error_set(err, KM_ENOMEM, "out of memory for a prediction");
    if ((st = km_klr_probability(m, X, n, P, err)) == KM_OK)
        for (size_t i = 0; i < n; i++) {
            size_t best = 0;
            for (size_t c = 1; c < k; c++)
                if (P[i * k + c] > P[i * k + best])
                    best = c;
            labels[i] = (int)best;
        }
    free(P);
    return st;
}

/* ------------------------------------------------------------ payload */

static void klr_save(const void *payload, const km_model *m, km_writer *w)
{
    const klr_payload *p = payload;
    size_t n = km_model_n_samples(m), q = km_model_n_outputs(m);
    km_write_u32(w, p->kind);
    km_write_f64s(w, p->X, n * km_model_n_features(m));
    km_write_f64s(w, p->coef, n * q);
    km_write_f64s(w, p->b, q);
}

static km_status klr_load(km_reader *r, const km_model *m, void **payload,
                          km_error *err)
{
    size_t n = km_model_n_samples(m), d = km_model_n_features(m);
    size_t q = km_model_n_outputs(m), nl = km_model_n_labels(m);
    uint32_t kind = km_read_u32(r);
    if (r->failed || kind >= KLR_KIND_COUNT)
        return km_error_set(err, KM_ECORRUPT, "model file: klr payload kind "
                            "%u is not 0 (binary), 1 (multinomial) or 2 "
                            "(ovr)", (unsigned)kind);
    size_t k = kind == KLR_BINARY ? 2 : q;
    if ((kind == KLR_BINARY) != (q == 1) || k < 2 ||
        k > km_max_classes(n) || nl != k)
        return km_error_set(err, KM_ECORRUPT, "model file: klr of kind %u "
                            "with %zu functions has %zu labels",
                            (unsigned)kind, q, nl);
    size_t nx = km_mul3(n, d, 1), nc = km_mul3(n, q, 1);
    klr_payload *p = calloc(1, sizeof *p);
    if (!p)
        return km_error_set(err, KM_ENOMEM, "out of memory reading a model");
    p->kind = kind;
    p->X = nx ? km_read_f64s(r, nx) : NULL;
    p->coef = p->X && nc ? km_read_f64s(r, nc) : NULL;
    p->b = p->coef ? km_read_f64s(r, q) : NULL;
    p->xn = p->b ? km_sqnorms(p->X, n, d) : NULL;
    if (!p->xn) {
        klr_free(p);
        return km_error_set(err, r->failed ? KM_ECORRUPT : KM_ENOMEM,
                            "model file: bad klr payload");
    }
    /* A fit checks its X, coefficients and intercepts finite. */
    if (!km_all_finite(p->X, nx) || !km_all_finite(p->coef, nc) ||
        !km_all_finite(p->b, q)) {
        klr_free(p);
        return km_error_set(err, KM_ECORRUPT, "model file: klr training "
                            "rows, coefficients or intercepts are not all "
                            "finite numbers");
    }
    *payload = p;
    return KM_OK;
}

/* The heap of a payload of m's sizes: X, the coefficients, the norms
 * and the intercepts. */
static size_t klr_bytes(const void *payload, const km_model *m)
{
    (void)payload;
    uint64_t q = km_model_n_outputs(m);
    uint64_t per_row = km_add_sat(km_model_n_features(m), km_add_sat(q, 1));
    uint64_t values = km_add_sat(km_mul_sat(km_model_n_samples(m), per_row),
                                 q);
    return (size_t)km_add_sat(sizeof(klr_payload),
                              km_mul_sat(values, sizeof(double)));
}

/* All from the header: nothing but the payload is allocated. */
static void klr_load_bytes(km_reader r, const km_model *m, size_t *kept,
                           size_t *peak)
{
    (void)r;
    *kept = *peak = klr_bytes(NULL, m);
}

/* ------------------------------------------------------------ descriptor */

static void params_default(void *params)
{
    *(km_klr_params *)params = km_klr_params_default();
}

static km_status check(const void *params, const km_problem *pb,
                       km_error *err)
{
    return km_klr_check(params, pb->n, pb->n_classes, err);
}

static size_t fit_bytes(const void *params, const km_problem *pb)
{
    return km_klr_fit_bytes(pb->n, pb->d, pb->n_classes, params);
}

static km_status fit(const km_kernel *k, const void *params,
                     const km_problem *pb, const km_fit_control *ctl,
                     km_model **out, km_error *err)
{
    return km_klr_fit(k, params, pb->X, pb->n, pb->d, pb->labels,
                      pb->n_classes, ctl, out, err);
}

/* Binary: one function; else one per class. */
static uint64_t max_outputs(uint64_t ns)
{
    return km_max_classes(ns);
}

/* kind, X, coefficients, intercepts: exactly. */
static void payload_range(uint32_t format, uint64_t ns, uint64_t nf,
                          uint64_t no, uint64_t *lo, uint64_t *hi)
{
    (void)format; /* one layout in every version */
    uint64_t b = km_add_sat(4, km_f64s_bytes(km_mul_sat(ns, nf)));
    b = km_add_sat(b, km_f64s_bytes(km_mul_sat(ns, no)));
    *lo = *hi = km_add_sat(b, km_f64s_bytes(no));
}

/* ------------------------------------------------------------ params
 *
 * The keys a request's params may give (km_param, km_base.h): their
 * types, bounds, choices, the solver values they apply with and docs,
 * read by the API through km_algorithm_params. */

/* Only with solver "nystrom". */
#define KLR_NYSTROM .only_if = "solver", .only_value = KM_KLR_SOLVER_NYSTROM

/* n_centres: its type and lower bound here (400); its upper bound,
 * n_samples, in km_klr_check (422), as krr's. */
static const km_param klr_rows[] = {
    {.key = "lambda", .type = KM_PARAM_NUMBER,
     KM_PARAM_FIELD(km_klr_params, lambda),
     KM_PARAM_POSITIVE,
     .doc = "weight of the RKHS norm's penalty (lambda/2) |f|^2; "
                      "scikit-learn's C is 1/lambda"},
    {.key = "tol", .type = KM_PARAM_NUMBER,
     KM_PARAM_FIELD(km_klr_params, tol), KM_PARAM_POSITIVE,
     .doc = "stop when the 2-norm of the objective's gradient is at most "
            "this"},
    {.key = "max_iter", .type = KM_PARAM_INTEGER,
     KM_PARAM_FIELD(km_klr_params, max_iter),
     .range = KM_PARAM_RANGE_CHECK, .min = 1, .max = KM_KLR_MAX_ITER,
     .doc = "most Newton iterations (multinomial: sweeps over the classes)"},
    {.key = "fit_intercept", .type = KM_PARAM_BOOL,
     KM_PARAM_FIELD(km_klr_params, fit_intercept),
     .doc = "learn an unpenalised intercept per function"},
    {.key = "multi_class", .type = KM_PARAM_CHOICE,
     KM_PARAM_FIELD(km_klr_params, multi_class),
     .choices = &km_klr_multi_choices,
     .doc = "more than two classes: multinomial (softmax loss) or ovr (one "
            "binary problem per class); two classes always fit one binary "
            "function"},
    {.key = "solver", .type = KM_PARAM_CHOICE, .solver = 1,
     KM_PARAM_FIELD(km_klr_params, solver),
     .choices = &km_klr_solver_choices,
     .doc = "exact: Newton on the n dual coefficients, a Cholesky of an "
            "n x n matrix per step, memory O(n^2); nystrom: Newton on m "
            "Nystrom features (klr restricted to the span of m centres), "
            "memory O(n m + k m^2), the model keeps the m centres"},
    {.key = "n_centres", .type = KM_PARAM_INTEGER,
     KM_PARAM_FIELD(km_klr_params, n_centres), .range = KM_PARAM_RANGE_READER,
     .min = 1,
     .max = INT_MAX, .data_default = 1,
     .data_bound = "the number of rows of X", KLR_NYSTROM,
     .doc = "nystrom only: centres; default min(n, ceil(sqrt(n) ln n) "
            "within [1000, 10000]); above n_samples is 422"},
    {.key = "seed", .type = KM_PARAM_INTEGER,
     KM_PARAM_FIELD(km_klr_params, seed),
     .range = KM_PARAM_RANGE_READER, .min = 0, .max = 2147483647, KLR_NYSTROM,
     .doc = "nystrom only: seed of the centres' draw (core's PRNG)"},
    {.key = "centres", .type = KM_PARAM_CHOICE,
     KM_PARAM_FIELD(km_klr_params, centres),
     .choices = &km_krr_centres_choices, KLR_NYSTROM,
     .doc = "nystrom only: how the centres are picked: uniform (without "
            "replacement) or rpcholesky (randomly pivoted Cholesky, which "
            "holds an n x m factor while it runs)"},
    {0},
};
_Static_assert(sizeof(km_klr_multi) == sizeof(int) &&
                   sizeof(km_klr_solver) == sizeof(int),
               "KM_PARAM_CHOICE fields are int-sized");

static const km_param_set param_set = {klr_rows, sizeof(km_klr_params),
                                        params_default};

/* The training rows (nystrom: its centres), the dual coefficients
 * (n x q: one column for a binary model, one per class otherwise) and the
 * q intercepts (0 without fit_intercept). */
static size_t klr_coefs(const km_model *m, km_coef *out)
{
    const klr_payload *p = km_model_payload(m);
    size_t n = km_model_n_samples(m), q = km_model_n_outputs(m);
    int nys = km_info_find(km_model_params(m), "n_centres") != NULL;
    out[0] = km_coef_input_rows(m, nys ? "centres_" : "X_fit_", p->X, n,
                                km_model_n_features(m),
                                nys ? KM_COEF_ROWS_CENTRES : KM_COEF_ROWS_ALL);
    out[1] = km_coef_f64("dual_coef_", p->coef, n, q, 1);
    out[2] = km_coef_f64("intercept_", p->b, q, 0, 0);
    return 3;
}

const km_algo km_klr_algo = {
    .outputs = KM_OUT_LABELS | KM_OUT_SCORES | KM_OUT_PROBABILITIES,
    .params = &param_set,
    .check = check,
    .fit_bytes = fit_bytes,
    .fit = fit,
    .labels = km_klr_predict,
    .scores = km_klr_decision,
    .probabilities = km_klr_probability,
    .classes = 1,
    .n_classes = model_classes,
    .decision_columns = KM_DECISION_CLASSES,
    .max_outputs = max_outputs,
    .payload_range = payload_range,
    .free_payload = klr_free,
    .save = klr_save,
    .load = klr_load,
    .bytes = klr_bytes,
    .load_bytes = klr_load_bytes,
    .target = KM_TARGET_CLASSES,
    .check_targets = 1,
    .coefs = klr_coefs,
};
