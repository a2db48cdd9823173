/*
 * km_klr_nys.c - kernel logistic regression's nystrom solver: Newton on
 * the coefficients of m centres, each block's system solved by CG with a
 * Cholesky preconditioner kept across steps until stale, K_nm in row
 * blocks (the method: the comment below).
 *
 * Thread-safety: reentrant.
 */
#include <cblas.h>
#include <float.h>
#include <lapacke.h>
#include <limits.h>
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

/* ------------------------------------------------------------ nystrom */

/*
 * The nystrom solver. With m centres Z (km_nys_pick: uniform or
 * rpcholesky, as krr's nystrom solver), T upper triangular with
 * T^T T = K_mm + s I (km_nys_factor_kmm: s a tiny shift, raised only when
 * K_mm is singular) and the features phi(x) = T^-T k(Z, x) (Phi = K_nm
 * T^-1, n x m, held whole: computed once, in row blocks), the fit
 * minimises, over the primal weights w_c (m each) and intercepts b_c,
 *     sum_i loss_i(Phi w + b) + (lambda/2) sum_c |w_c|^2.
 * This is klr restricted to f_c = sum_j c_jc k(z_j, .) + b_c with
 * c_c = T^-1 w_c: then |f_c|_H^2 = c^T K_mm c = |w|^2 - s |c|^2 (exactly
 * |w|^2 when s = 0) and f_c(x_i) = phi(x_i)^T w_c. With m = n (every row
 * a centre) it is the exact klr problem up to the shift; with m < n it is
 * scikit-learn's Nystroem features (the same centres: phi differs from
 * its K_mm^-1/2 k(Z, x) by an orthogonal map, which the loss and the
 * penalty do not see) followed by LogisticRegression(C = 1/lambda).
 *
 * Newton on the unknowns u_c = (w_c, b_c) (p = m + 1 with the intercept,
 * else m): the gradient is Phi^T r_c + lambda w_c and 1^T r_c, the
 * Hessian's block of function c is
 *     H_c = [Phi^T W_c Phi + lambda I, Phi^T w_c; w_c^T Phi, 1^T w_c],
 * W_c = diag(p_c (1 - p_c)): built in row blocks of Phi by DSYRK on
 * W^1/2-scaled rows (n m^2 flops; progress and cancel per block) and
 * factored by Cholesky (m^3/3). Every Newton direction is computed by
 * conjugate gradients on the exact Hessian, each product by two passes
 * over Phi (4 n m flops per function: DGEMV, or DGEMM for several),
 * preconditioned by the factors H_c, to a relative residual
 * min(0.1, sqrt(|g| / |g_0|)) (an inexact Newton method, superlinear
 * near the optimum). The factors are kept across steps and refreshed
 * when CG needed more than twice the products it needed with fresh ones
 * (plus NYS_CG_SLACK) or did not converge within NYS_CG_CAP: a
 * factorisation costs n m^2, a product 4 n m. Binary and ovr: H_c is
 * the whole Hessian of function c's problem, so with a fresh factor CG
 * takes one product (Newton's step), and each function has its own CG
 * and Armijo line search. Multinomial: the whole Hessian couples the
 * classes (row i's block diag(p_i) - p_i p_i^T), so CG runs on the full
 * (q p) x (q p) system with the q factors as a block-Jacobi
 * preconditioner, then one line search on the whole objective. The
 * figures cg_iterations and factorizations count the products and
 * factorisations. With the intercept the
 * multinomial Hessian is singular along a common shift of the b_c (the
 * softmax does not see it); the gradient is orthogonal to that
 * direction, so CG's system is consistent.
 *
 * It stops as the exact solver does, on the 2-norm of the gradient in
 * (w, b). The model: the centres as training rows, c = T^-1 w.
 * Memory: Phi (8 n m bytes), T and a factor per function (m^2 each),
 * O(n q + m q) vectors (km_klr_fit_bytes).
 */
typedef struct klr_nys {
    klr_fit *f;       /* its kind, n, q, y, lambda, intercept and F */
    size_t m, p;      /* centres; unknowns per function */
    size_t block;     /* rows per block of the Hessian's passes */
    const double *PhiT; /* m x n column-major: column i is phi(x_i) */
    double *S;        /* m x block: W^1/2-scaled columns of PhiT */
    double *H;        /* p x p column-major factors, one per function */
    double *U;        /* p x q: (w_c, b_c) */
    double *R, *W;    /* n x q: p - t and p (1 - p) */
    double frac;
} klr_nys;

/* Out (n x nc) = Phi V + (V's intercept row), V p x nc. */
static void nys_values(const klr_nys *s, const double *V, size_t nc,
                       double *out)
{
    size_t n = s->f->n, m = s->m, p = s->p;
    /* one column by DGEMV: DGEMM would copy all of Phi into its panels */
    if (nc == 1)
        cblas_dgemv(CblasColMajor, CblasTrans, (int)m, (int)n, 1.0, s->PhiT,
                    (int)m, V, 1, 0.0, out, 1);
    else
        cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, (int)n, (int)nc,
                    (int)m, 1.0, s->PhiT, (int)m, V, (int)p, 0.0, out,
                    (int)n);
    if (p > m)
        for (size_t c = 0; c < nc; c++)
            for (size_t i = 0; i < n; i++)
                out[c * n + i] += V[c * p + m];
}

/* Out (p x nc) = [Phi^T A; 1^T A] + lambda [V's weights; 0], A n x nc. */
static void nys_adjoint(const klr_nys *s, const double *A, const double *V,
                        size_t nc, double *out)
{
    size_t n = s->f->n, m = s->m, p = s->p;
    if (nc == 1)
        cblas_dgemv(CblasColMajor, CblasNoTrans, (int)m, (int)n, 1.0,
                    s->PhiT, (int)m, A, 1, 0.0, out, 1);
    else
        cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)m,
                    (int)nc, (int)n, 1.0, s->PhiT, (int)m, A, (int)n, 0.0,
                    out, (int)p);
    for (size_t c = 0; c < nc; c++) {
        for (size_t j = 0; j < m; j++)
            out[c * p + j] += s->f->lambda * V[c * p + j];
        if (p > m) {
            km_ksum t = {0, 0};
            for (size_t i = 0; i < n; i++)
                km_ksum_add(&t, A[c * n + i]);
            out[c * p + m] = km_ksum_get(&t);
        }
    }
}

/* The gradient G (p x q) at the current point, R and W refreshed; its
 * 2-norm. */
static double nys_gradient(klr_nys *s, double *G)
{
    size_t n = s->f->n, q = s->f->q;
    for (size_t c = 0; c < q; c++)
        km_klr_block_residual(s->f, c, s->R + c * n, s->W + c * n);
    nys_adjoint(s, s->R, s->U, q, G);
    return cblas_dnrm2((int)(s->p * q), G, 1);
}

/* H_c's Cholesky factor (upper) into s->H's c-th, from W's column c. */
static km_status nys_hessian(klr_nys *s, size_t c, km_error *err)
{
    size_t n = s->f->n, m = s->m, p = s->p;
    const double *w = s->W + c * n;
    double *Hc = s->H + c * p * p;
    memset(Hc, 0, p * p * sizeof *Hc);
    for (size_t i0 = 0; i0 < n; i0 += s->block) {
        size_t nb = n - i0 < s->block ? n - i0 : s->block;
        for (size_t i = 0; i < nb; i++) {
            double sw = sqrt(w[i0 + i]);
            const double *ph = s->PhiT + (i0 + i) * m;
            for (size_t j = 0; j < m; j++)
                s->S[i * m + j] = sw * ph[j];
        }
        cblas_dsyrk(CblasColMajor, CblasUpper, CblasNoTrans, (int)m, (int)nb,
                    1.0, s->S, (int)m, 1.0, Hc, (int)p);
        if (km_progress(s->f->ctl, s->frac))
            return km_error_set(err, KM_ECANCELLED, "fit cancelled");
    }
    for (size_t j = 0; j < m; j++)
        Hc[j * p + j] += s->f->lambda;
    if (p > m) {
        cblas_dgemv(CblasColMajor, CblasNoTrans, (int)m, (int)n, 1.0,
                    s->PhiT, (int)m, w, 1, 0.0, Hc + m * p, 1);
        km_ksum t = {0, 0};
        for (size_t i = 0; i < n; i++)
            km_ksum_add(&t, w[i]);
        Hc[m * p + m] = km_ksum_get(&t);
    }
    lapack_int info = LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'U', (lapack_int)p, Hc,
                                     (lapack_int)p);
    if (info == (lapack_int)p && p > m) {
        /* Only the intercept's pivot failed (every p (1 - p) rounds to 0:
         * separable data): decouple it; the step stays a descent. */
        memset(Hc + m * p, 0, m * sizeof *Hc);
        Hc[m * p + m] = 1;
        info = 0;
    }
    if (info > 0)
        return km_error_set(err, KM_ENOTPD, "Phi^T W Phi + lambda I is not "
                            "positive definite (Cholesky failed at row %d); "
                            "use a larger params.lambda", (int)info);
    if (info < 0)
        return km_error_set(err, KM_EINTERNAL, "dpotrf argument %d",
                            (int)-info);
    return KM_OK;
}

/* V (p x nc) := blockdiag(H_c0 .. )^-1 V with the factors in s->H. */
static void nys_precondition(const klr_nys *s, size_t c0, size_t nc,
                             double *V)
{
    size_t p = s->p;
    for (size_t c = 0; c < nc; c++) {
        const double *Hc = s->H + (c0 + c) * p * p;
        cblas_dtrsv(CblasColMajor, CblasUpper, CblasTrans, CblasNonUnit,
                    (int)p, Hc, (int)p, V + c * p, 1);
        cblas_dtrsv(CblasColMajor, CblasUpper, CblasNoTrans, CblasNonUnit,
                    (int)p, Hc, (int)p, V + c * p, 1);
    }
}

/* Out (p x nc) = the Hessian of functions c0 .. c0 + nc - 1 times V
 * (multinomial: all of them, which the Hessian couples); T (n x nc)
 * work. */
static void nys_hessian_times(const klr_nys *s, size_t c0, size_t nc,
                              const double *V, double *T, double *out)
{
    const klr_fit *f = s->f;
    size_t n = f->n, q = f->q;
    nys_values(s, V, nc, T);
    if (f->kind != KLR_MULTINOMIAL) {
        for (size_t c = 0; c < nc; c++)
            for (size_t i = 0; i < n; i++)
                T[c * n + i] *= s->W[(c0 + c) * n + i];
    } else {
        for (size_t i = 0; i < n; i++) {
            double pv = 0;
            for (size_t c = 0; c < q; c++)
                pv += (s->R[c * n + i] + km_klr_target(f, c, i)) *
                      T[c * n + i];
            for (size_t c = 0; c < q; c++)
                T[c * n + i] = (s->R[c * n + i] + km_klr_target(f, c, i)) *
                               (T[c * n + i] - pv);
        }
    }
    nys_adjoint(s, T, V, nc, out);
}

/* The Newton direction of functions c0 .. c0 + nc - 1: X (p x nc) by CG
 * on H X = -G from 0, preconditioned by their factors in s->H, to
 * |residual| <= eta |G| (over those functions) or cap products; work:
 * Rr, Z, Dd (p x nc), T (n x nc). All pointers at function c0. *its gets
 * the products made, *met whether the residual reached eta |G|. Every
 * iterate from 0 is a descent direction (G^T X = -X^T H X' < 0). */
static km_status nys_cg(const klr_nys *s, size_t c0, size_t nc,
                        const double *G, double eta, size_t cap, double *X,
                        double *Rr, double *Z, double *Dd, double *T,
                        size_t *its, int *met, km_error *err)
{
    size_t len = s->p * nc;
    double stop = eta * cblas_dnrm2((int)len, G, 1);
    memset(X, 0, len * sizeof *X);
    for (size_t j = 0; j < len; j++)
        Rr[j] = -G[j];
    memcpy(Z, Rr, len * sizeof *Z);
    nys_precondition(s, c0, nc, Z);
    memcpy(Dd, Z, len * sizeof *Dd);
    double rz = cblas_ddot((int)len, Rr, 1, Z, 1);
    *met = 0;
    *its = 0;
    while (*its < cap) {
        nys_hessian_times(s, c0, nc, Dd, T, Z); /* Z := H Dd */
        ++*its;
        if (km_progress(s->f->ctl, s->frac))
            return km_error_set(err, KM_ECANCELLED, "fit cancelled");
        double dhd = cblas_ddot((int)len, Dd, 1, Z, 1);
        if (!(dhd > 0) || !isfinite(dhd))
            break;
        double a = rz / dhd;
        cblas_daxpy((int)len, a, Dd, 1, X, 1);
        cblas_daxpy((int)len, -a, Z, 1, Rr, 1);
        if (cblas_dnrm2((int)len, Rr, 1) <= stop) {
            *met = 1;
            break;
        }
        memcpy(Z, Rr, len * sizeof *Z);
        nys_precondition(s, c0, nc, Z);
        double rz2 = cblas_ddot((int)len, Rr, 1, Z, 1);
        double beta = rz2 / rz;
        rz = rz2;
        for (size_t j = 0; j < len; j++)
            Dd[j] = Z[j] + beta * Dd[j];
    }
    return KM_OK;
}

/* The loss along D (n x q) at step t: function c's terms, or with
 * c == q (multinomial) all of them. */
static double nys_loss(const klr_nys *s, size_t c, double t, const double *D)
{
    const klr_fit *f = s->f;
    size_t n = f->n, q = f->q;
    if (c < q)
        return km_klr_block_loss(f, c, t, D + c * n);
    km_ksum sum = {0, 0};
    for (size_t i = 0; i < n; i++) {
        double mx = -HUGE_VAL, e = 0;
        for (size_t j = 0; j < q; j++) {
            double v = f->F[j * n + i] + t * D[j * n + i];
            mx = v > mx ? v : mx;
        }
        for (size_t j = 0; j < q; j++)
            e += exp(f->F[j * n + i] + t * D[j * n + i] - mx);
        size_t yi = (size_t)f->y[i];
        km_ksum_add(&sum, mx + log(e) - (f->F[yi * n + i] +
                                         t * D[yi * n + i]));
    }
    return km_ksum_get(&sum);
}

/* An Armijo line search along the direction X (p x q; D = its change of
 * F) over functions c0 .. c1 - 1 together, with slope G.X over them;
 * moves U and F by the step accepted. Whether it moved. */
static int nys_search(klr_nys *s, size_t c0, size_t c1, const double *G,
                      const double *X, const double *D)
{
    klr_fit *f = s->f;
    size_t n = f->n, q = f->q, m = s->m, p = s->p;
    size_t off = c0 * p, len = (c1 - c0) * p, which = c1 - c0 == 1 ? c0 : q;
    double slope = cblas_ddot((int)len, G + off, 1, X + off, 1);
    if (!(slope < 0) || !isfinite(slope))
        return 0; /* no descent left (rounding) */
    double wx = 0, xx = 0; /* the penalty's w.dw and dw.dw */
    for (size_t c = c0; c < c1; c++) {
        wx += cblas_ddot((int)m, s->U + c * p, 1, X + c * p, 1);
        xx += cblas_ddot((int)m, X + c * p, 1, X + c * p, 1);
    }
    double l0 = nys_loss(s, which, 0, D);
    double eps = 8 * DBL_EPSILON * (fabs(l0) + 1);
    double t = 1;
    for (int tries = 0; tries < 60; tries++, t *= 0.5) {
        double l = nys_loss(s, which, t, D);
        double dp = 0.5 * f->lambda * (2 * t * wx + t * t * xx);
        if (isfinite(l) && l + dp - l0 <= 1e-4 * t * slope + eps) {
            cblas_daxpy((int)len, t, X + off, 1, s->U + off, 1);
            cblas_daxpy((int)((c1 - c0) * n), t, D + c0 * n, 1,
                        f->F + c0 * n, 1);
            return 1;
        }
    }
    return 0;
}

/* CG's products per Newton step at most; the products beyond twice
 * those of a fresh factor that make a factor stale. */
#define NYS_CG_CAP 200
#define NYS_CG_SLACK 5

/* T (the upper factor of K_mm, km_nys_factor_kmm) and Phi^T = T^-T K_mn
 * (m x n column-major) by row blocks of X; progress from f0 to f1. */
static km_status nys_features(const km_kernel *kern, const double *X,
                              size_t n, size_t d, const klr_payload *pl,
                              size_t m, size_t block, double *T,
                              double *PhiT, const km_fit_control *ctl,
                              double f0, double f1, km_error *err)
{
    double shift = 0;
    km_status st = km_nys_factor_kmm(kern, pl->X, m, d, 0, T, &shift, err);
    if (st != KM_OK)
        return st;
    for (size_t i0 = 0; i0 < n; i0 += block) {
        size_t nb = n - i0 < block ? n - i0 : block;
        double *Pb = PhiT + i0 * m; /* row-major nb x m: column-major m x nb */
        if ((st = km_gram_cross_sn(kern, X + i0 * d, nb, pl->X, m, pl->xn, d,
                                   Pb, m, err)) != KM_OK)
            return st;
        cblas_dtrsm(CblasColMajor, CblasLeft, CblasUpper, CblasTrans,
                    CblasNonUnit, (int)m, (int)nb, 1.0, T, (int)m, Pb,
                    (int)m);
        if (km_progress(ctl, f0 + (f1 - f0) * (double)(i0 + nb) / (double)n))
            return km_error_set(err, KM_ECANCELLED, "fit cancelled");
    }
    return KM_OK;
}

/* The Newton iterations' blocks: p x q each, the gradient G and CG's
 * solution Xd, residual Rr, preconditioned residual Zc and direction Dd;
 * n x q, D (a step's values); per group, whether to refactor its Hessian
 * before its next CG (refresh) and the products CG needed right after its
 * last refactoring (base). */
typedef struct nys_work {
    double *G, *Xd, *Rr, *Zc, *Dd, *D;
    int *refresh;
    size_t *base;
} nys_work;

/* Newton from the start (km_klr_start) until the gradient is at most
 * params->tol, params->max_iter steps or no descent is left: per group
 * (multinomial: one of q coupled functions; else q of one) CG on its
 * system with a kept Cholesky preconditioner, then a line search.
 * Progress from f0 to 0.95. *its, *cg_its (CG's products), *factors and
 * *g (the last gradient's norm). */
static km_status nys_newton(klr_nys *s, const km_klr_params *params,
                            const size_t *counts, size_t k, nys_work *w,
                            double f0, const km_fit_control *ctl,
                            size_t *its_out, size_t *cg_out,
                            size_t *factors_out, double *g_out, km_error *err)
{
    klr_fit *f = s->f;
    size_t q = f->q, p = s->p, n = f->n;
    double *G = w->G, *Xd = w->Xd, *Rr = w->Rr, *Zc = w->Zc, *Dd = w->Dd;
    double *D = w->D;
    km_status st = KM_OK;
    km_klr_start(f, counts, k);
    if (p > s->m)
        for (size_t c = 0; c < q; c++)
            s->U[c * p + s->m] = f->b[c];
    s->frac = f->frac = f0;
    double tol = params->tol, g = nys_gradient(s, G);
    f->g0 = g;
    size_t its = 0, cg_its = 0, factors = 0;
    size_t groups = f->kind == KLR_MULTINOMIAL ? 1 : q, width = q / groups;
    for (size_t gi = 0; gi < groups; gi++)
        w->refresh[gi] = 1;
    while (st == KM_OK && g > tol && its < params->max_iter) {
        int any = 0;
        double eta = sqrt(g / f->g0);
        eta = eta < 0.1 ? eta : 0.1;
        for (size_t gi = 0; gi < groups && st == KM_OK; gi++) {
            size_t c0 = gi * width, used;
            int met;
            if (w->refresh[gi]) {
                for (size_t c = c0; c < c0 + width && st == KM_OK; c++)
                    st = nys_hessian(s, c, err);
                if (st != KM_OK)
                    break;
                factors += width;
            }
            if ((st = nys_cg(s, c0, width, G + c0 * p, eta, NYS_CG_CAP,
                             Xd + c0 * p, Rr + c0 * p, Zc + c0 * p,
                             Dd + c0 * p, D + c0 * n, &used, &met, err)) !=
                KM_OK)
                break;
            cg_its += used;
            if (w->refresh[gi])
                w->base[gi] = used;
            /* refactor for the next step when this one's factor has gone
             * stale: CG needed twice as many products as with a fresh
             * one (and more than a handful), or did not converge */
            w->refresh[gi] = !met || used > 2 * w->base[gi] + NYS_CG_SLACK;
        }
        if (st != KM_OK)
            break;
        nys_values(s, Xd, q, D);
        if (f->kind == KLR_MULTINOMIAL)
            any = nys_search(s, 0, q, G, Xd, D);
        else
            for (size_t c = 0; c < q; c++)
                any |= nys_search(s, c, c + 1, G, Xd, D);
        its++;
        g = nys_gradient(s, G);
        km_klr_advance(f, g, tol, f0);
        s->frac = f->frac;
        if (km_progress(ctl, f->frac))
            st = km_error_set(err, KM_ECANCELLED, "fit cancelled");
        else if (!any)
            break; /* no descent left: the optimum within rounding */
    }
    *its_out = its;
    *cg_out = cg_its;
    *factors_out = factors;
    *g_out = g;
    return st;
}

/* The objective at the end: the loss and (lambda/2) |w|^2. */
static double nys_objective(klr_nys *s, double *D)
{
    const klr_fit *f = s->f;
    size_t q = f->q, p = s->p;
    km_ksum o = {0, 0};
    km_ksum_add(&o, f->kind == KLR_OVR ? 0 : nys_loss(s, q == 1 ? 0 : q, 0,
                                                      D));
    for (size_t c = 0; f->kind == KLR_OVR && c < q; c++)
        km_ksum_add(&o, nys_loss(s, c, 0, D));
    for (size_t c = 0; c < q; c++)
        km_ksum_add(&o, 0.5 * f->lambda *
                            cblas_ddot((int)s->m, s->U + c * p, 1,
                                       s->U + c * p, 1));
    return km_ksum_get(&o);
}

/* The payload's coefficients c = T^-1 w (m x q, row-major) and
 * intercepts. */
static km_status nys_coef(klr_nys *s, const double *T, klr_payload *pl,
                          km_error *err)
{
    size_t m = s->m, p = s->p, q = s->f->q;
    cblas_dtrsm(CblasColMajor, CblasLeft, CblasUpper, CblasNoTrans,
                CblasNonUnit, (int)m, (int)q, 1.0, T, (int)m, s->U, (int)p);
    pl->coef = malloc(m * q * sizeof *pl->coef);
    pl->b = calloc(q, sizeof *pl->b);
    if (!pl->coef || !pl->b)
        return km_error_set(err, KM_ENOMEM, "out of memory for the model");
    for (size_t i = 0; i < m; i++)
        for (size_t c = 0; c < q; c++)
            pl->coef[i * q + c] = s->U[c * p + i];
    for (size_t c = 0; p > m && c < q; c++)
        pl->b[c] = s->U[c * p + m];
    return KM_OK;
}

km_status km_klr_fit_nys(km_fit_frame *fr, const km_klr_params *params,
                         const double *X, size_t n, size_t d, const int *y,
                         size_t k, const size_t *counts,
                         const km_fit_control *ctl, klr_result *res,
                         km_error *err)
{
    const km_kernel *kern = &fr->k;
    klr_payload *pl = res->pl;
    klr_fit f;
    klr_nys s;
    nys_work w;
    double *T = NULL, *PhiT = NULL, *buf = NULL;
    km_status st = KM_OK;
    size_t q = km_klr_n_functions(k);
    size_t m = km_nys_n_centres(params->n_centres, n);
    int rpc = params->centres == KM_KRR_CENTRES_RPCHOLESKY;
    /* progress: rpcholesky to f_sel, Phi to f_phi, then Newton to 0.95 */
    double f_sel = rpc ? 0.3 : 0.0, f_phi = f_sel + 0.1 * (1.0 - f_sel);
    km_klr_fit_init(&f, pl->kind, n, q, y, params, ctl);
    memset(&s, 0, sizeof s);
    memset(&w, 0, sizeof w);
    if (n > INT_MAX || m >= INT_MAX / (q + 1)) /* BLAS's ints */
        return km_error_set(err, KM_EINVAL, "params.n_centres (%zu) times "
                            "the functions (%zu) and the rows (%zu) must "
                            "be below 2^31", m, q, n);
    if (!(pl->X = malloc(m * d * sizeof *pl->X)))
        return km_error_set(err, KM_ENOMEM, "out of memory for %zu centres",
                            m);
    if ((st = km_nys_pick(kern, X, n, d, NULL, params->centres, params->seed,
                          &m, pl->X, ctl, 0.0, f_sel, err)) != KM_OK)
        return st;
    size_t p = m + (params->fit_intercept ? 1 : 0);
    s.block = km_nys_block_rows(n, m);
    T = malloc(m * m * sizeof *T);
    PhiT = malloc(km_mul3(n, m, sizeof *PhiT));
    /* S (m x block), H (q p x p), F, D, R, W (n x q each), U, G, X and
     * CG's three (p x q each), b (q) */
    buf = calloc(s.block * m + q * p * p + 4 * n * q + 6 * p * q + q,
                 sizeof *buf);
    w.refresh = calloc(q, sizeof *w.refresh);
    w.base = calloc(q, sizeof *w.base);
    if (!(pl->xn = km_sqnorms(pl->X, m, d)) || !T || !PhiT || !buf ||
        !w.refresh || !w.base) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for the nystrom "
                          "solver of %zu centres (it holds an n x m matrix: "
                          "%zu x %zu)", m, n, m);
        goto out;
    }
    s.S = buf;
    s.H = s.S + s.block * m;
    f.F = s.H + q * p * p;
    w.D = f.F + n * q;
    s.R = w.D + n * q;
    s.W = s.R + n * q;
    s.U = s.W + n * q;
    w.G = s.U + p * q, w.Xd = w.G + p * q, w.Rr = w.Xd + p * q;
    w.Zc = w.Rr + p * q, w.Dd = w.Zc + p * q;
    f.b = w.Dd + p * q;
    s.f = &f;
    s.m = m;
    s.p = p;
    s.PhiT = PhiT;

    size_t its = 0, cg_its = 0, factors = 0;
    double g = 0;
    if ((st = nys_features(kern, X, n, d, pl, m, s.block, T, PhiT, ctl,
                           f_sel, f_phi, err)) != KM_OK ||
        (st = nys_newton(&s, params, counts, k, &w, f_phi, ctl, &its,
                         &cg_its, &factors, &g, err)) != KM_OK)
        goto out;
    res->obj = nys_objective(&s, w.D);
    if ((st = nys_coef(&s, T, pl, err)) != KM_OK)
        goto out;
    res->rows = m;
    res->its = its;
    res->cg_its = cg_its;
    res->factors = factors;
    res->g = g;
out:
    free(T);
    free(PhiT);
    free(buf);
    free(w.refresh);
    free(w.base);
    return st;
}
