/*
 * km_search_krr.c - the closed-form engine of model selection, for an
 * algorithm of KM_SEARCH_CLOSED_FORM (krr's exact solver; km_search.c
 * says what it does): points grouped by kernel, LOO and GCV in closed
 * form from one tridiagonal reduction of all rows' Gram (then O(n^2)
 * per alpha), KFOLD and PREDEFINED
 * from one Gram of all rows and one eigendecomposition or Cholesky per
 * fold. The run's state is km_search_run.c's.
 *
 * Thread-safety: reentrant; a run of this engine is on one thread.
 */
#include <cblas.h>
#include <float.h>
#include <lapacke.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/km_base_internal.h"
#include "../kernels/km_kernel_internal.h"
#include "../model/km_model_internal.h"
#include "../algorithms/km_algorithms_internal.h"
#include "km_search_internal.h"

/* ------------------------------------------------------------ krr */

/* Eigendecomposition in place: K (n x n, the lower triangle of a
 * row-major symmetric matrix) becomes V^T row-major (row j the unit
 * eigenvector of w[j], w ascending). */
static km_status eigen(double *K, size_t n, double *w, km_error *err)
{
    /* Row-major lower == column-major upper; LAPACK's column j (the
     * eigenvector j) is then row j of the row-major buffer. */
    lapack_int info = LAPACKE_dsyevd(LAPACK_COL_MAJOR, 'V', 'U',
                                     (lapack_int)n, K, (lapack_int)n, w);
    if (info == LAPACK_WORK_MEMORY_ERROR)
        return km_error_set(err, KM_ENOMEM, "out of memory for an "
                            "eigendecomposition of %zu x %zu", n, n);
    if (info > 0)
        return km_error_set(err, KM_ENOCONV, "the eigendecomposition of the "
                            "kernel matrix did not converge");
    if (info < 0)
        return km_error_set(err, KM_EINTERNAL, "dsyevd argument %d",
                            (int)-info);
    return KM_OK;
}

/* Points of one krr group, their alphas. */
typedef struct krr_group {
    const km_kernel *k; /* resolved */
    size_t *pts;
    size_t g;
} krr_group;

/* A failure st (message msg) of work that group gr's points share on
 * fold f (f < 0: on all rows): a point failure fails every one of them
 * and the search goes on (KM_OK); any other status ends it. */
static km_status group_failed(search_run *r, const krr_group *gr, long f,
                              km_status st, const char *msg, km_error *err)
{
    if (!km_search_is_point_failure(st))
        return km_error_set(err, st, "%s", msg);
    for (size_t a = 0; a < gr->g; a++)
        km_search_fail_point(r, gr->pts[a], f, st, msg);
    return KM_OK;
}

static double point_alpha(const km_search_spec *s, size_t p)
{
    return ((const km_krr_params *)s->params)[p].alpha;
}

/* Whether K + alpha I is positive definite by its smallest eigenvalue;
 * fails the point otherwise. */
static int eig_pd(search_run *r, size_t p, long f, double wmin, double alpha)
{
    if (wmin + alpha > 0)
        return 1;
    char msg[200];
    snprintf(msg, sizeof msg, "the kernel matrix plus alpha*I is not "
             "positive definite (smallest eigenvalue %g, alpha %g); use a "
             "larger params.alpha or a positive definite kernel", wmin, alpha);
    km_search_fail_point(r, p, f, KM_ENOTPD, msg);
    return 0;
}

/* ------------------------------------------------ closed form: T = Q^T K Q */

/* The closed form's per-alpha sweeps are O(n^2) loops over a block of
 * DIAG_IB right-hand sides: built for AVX-512, AVX2 and the baseline (as
 * km_vmath.c does). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(KM_NO_CLONES)
#define SWEEP __attribute__((target_clones("avx512f", "avx2", "default"), \
                             optimize("tree-vectorize")))
#else
#define SWEEP
#endif


/* Tridiagonal reduction in place (dsytrd): K (the lower triangle of a
 * row-major symmetric matrix, LAPACK's column-major upper) = Q T Q^T,
 * T's diagonal dg and off-diagonal e, Q's reflectors in K and tau. */
static km_status tridiag(double *K, size_t n, double *dg, double *e,
                         double *tau, km_error *err)
{
    lapack_int info = LAPACKE_dsytrd(LAPACK_COL_MAJOR, 'U', (lapack_int)n, K,
                                     (lapack_int)n, dg, e, tau);
    if (info == LAPACK_WORK_MEMORY_ERROR)
        return km_error_set(err, KM_ENOMEM, "out of memory for a "
                            "tridiagonal reduction of %zu x %zu", n, n);
    if (info != 0)
        return km_error_set(err, KM_EINTERNAL, "dsytrd argument %d",
                            (int)-info);
    return KM_OK;
}

/* T + alpha I = L diag(p) L^T, L unit lower bidiagonal with l[j] below
 * its diagonal in column j; r = 1/p. 0 when a pivot is not positive
 * (T + alpha I, hence K + alpha I, is not positive definite: the pivots'
 * signs are its inertia). */
static int tri_factor(const double *dg, const double *e, size_t n,
                      double alpha, double *l, double *r)
{
    double p = dg[0] + alpha;
    for (size_t j = 0;; j++) {
        if (!(p > 0) || !isfinite(p))
            return 0;
        r[j] = 1 / p;
        if (j + 1 == n)
            return 1;
        l[j] = e[j] * r[j];
        p = dg[j + 1] + alpha - l[j] * e[j];
    }
}

/* x = (T + alpha I)^-1 b in place, by tri_factor's l and r. */
static void tri_solve(const double *l, const double *r, size_t n, double *x)
{
    for (size_t j = 1; j < n; j++)
        x[j] -= l[j - 1] * x[j - 1];
    x[n - 1] *= r[n - 1];
    for (size_t j = n - 1; j-- > 0;)
        x[j] = x[j] * r[j] - l[j] * x[j + 1];
}

/* diag[i] = q_i^T (T + alpha I)^-1 q_i for the ib (<= DIAG_IB) rows q_i
 * of Q whose transposes are the columns of B (n x DIAG_IB, row j the
 * j-th entries): a forward sweep into Y, then a backward one that keeps
 * only the current row of the solution. */
SWEEP static void diag_block(const double *B, size_t n, const double *l,
                             const double *r, double *Y, double *diag)
{
    double x[DIAG_IB], acc[DIAG_IB];
    for (size_t t = 0; t < DIAG_IB; t++)
        Y[t] = B[t];
    for (size_t j = 1; j < n; j++) {
        double lj = l[j - 1];
        for (size_t t = 0; t < DIAG_IB; t++)
            Y[j * DIAG_IB + t] = B[j * DIAG_IB + t] -
                                 lj * Y[(j - 1) * DIAG_IB + t];
    }
    size_t last = (n - 1) * DIAG_IB;
    for (size_t t = 0; t < DIAG_IB; t++) {
        x[t] = Y[last + t] * r[n - 1];
        acc[t] = B[last + t] * x[t];
    }
    for (size_t j = n - 1; j-- > 0;) {
        double rj = r[j], lj = l[j];
        for (size_t t = 0; t < DIAG_IB; t++) {
            x[t] = Y[j * DIAG_IB + t] * rj - lj * x[t];
            acc[t] += B[j * DIAG_IB + t] * x[t];
        }
    }
    for (size_t t = 0; t < DIAG_IB; t++)
        diag[t] = acc[t];
}

/* D[c n + i] = ((K + alpha_c I)^-1)_ii = q_i^T (T + alpha_c I)^-1 q_i
 * for the nb alphas whose factors are l[c n ...], r[c n ...] (ok[c]: a
 * factor exists), Q explicit (column-major: q_i^T is row i). Each block
 * of DIAG_IB rows is gathered once and swept for every alpha. */
static void loo_diag(const double *Q, size_t n, size_t nb, const double *l,
                     const double *r, const int *ok, double *B, double *Y,
                     double *D)
{
    double diag[DIAG_IB];
    for (size_t i0 = 0; i0 < n; i0 += DIAG_IB) {
        size_t ib = n - i0 < DIAG_IB ? n - i0 : DIAG_IB;
        for (size_t j = 0; j < n; j++) {
            memcpy(B + j * DIAG_IB, Q + j * n + i0, ib * sizeof *B);
            for (size_t t = ib; t < DIAG_IB; t++)
                B[j * DIAG_IB + t] = 0;
        }
        for (size_t c = 0; c < nb; c++) {
            if (!ok[c])
                continue;
            diag_block(B, n, l + c * n, r + c * n, Y, diag);
            memcpy(D + c * n + i0, diag, ib * sizeof *D);
        }
    }
}

/* The closed form's buffers. */
typedef struct cf_bufs {
    double *K, *dg, *e, *tau, *w, *Z, *L, *Rp, *W, *C, *D, *Bk, *Yk, *P;
    int *ok;
} cf_bufs;

static void cf_free(cf_bufs *b)
{
    double *all[] = {b->K, b->dg, b->e, b->tau, b->w, b->Z, b->L, b->Rp,
                     b->W, b->C, b->D, b->Bk, b->Yk, b->P};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        free(all[i]);
    free(b->ok);
}

static int cf_alloc(cf_bufs *b, size_t n, size_t m, size_t cb, int gcv)
{
    size_t D = sizeof(double);
    memset(b, 0, sizeof *b);
    b->K = malloc(n * n * D);
    b->dg = malloc(n * D), b->e = malloc(n * D), b->tau = malloc(n * D);
    b->w = malloc(n * D), b->Z = malloc(n * m * D);
    b->L = malloc(n * cb * D), b->Rp = malloc(n * cb * D);
    b->W = malloc(n * cb * m * D), b->P = malloc(n * m * D);
    b->ok = malloc(cb * sizeof *b->ok);
    int ok = b->K && b->dg && b->e && b->tau && b->w && b->Z && b->L &&
             b->Rp && b->W && b->P && b->ok;
    if (!gcv) {
        b->C = malloc(n * cb * m * D), b->D = malloc(n * cb * D);
        b->Bk = malloc(n * DIAG_IB * D), b->Yk = malloc(n * DIAG_IB * D);
        ok = ok && b->C && b->D && b->Bk && b->Yk;
    }
    return ok;
}

/* T's eigenvalues in b->w, ascending: all of them (dsterf, O(n^2)) for
 * GCV's trace, only the smallest (dstebz's bisection, O(n)) for LOO. */
static lapack_int tri_eigenvalues(cf_bufs *b, size_t n, int all)
{
    if (all) {
        memcpy(b->w, b->dg, n * sizeof *b->w);
        memcpy(b->L, b->e, n * sizeof *b->L); /* dsterf's scratch */
        return LAPACKE_dsterf((lapack_int)n, b->w, b->L);
    }
    lapack_int found, nsplit;
    lapack_int *iw = malloc(2 * n * sizeof *iw);
    if (!iw)
        return LAPACK_WORK_MEMORY_ERROR;
    lapack_int info = LAPACKE_dstebz('I', 'E', (lapack_int)n, 0, 0, 1, 1, 0,
                                     b->dg, b->e, &found, &nsplit, b->w, iw,
                                     iw + n);
    free(iw);
    return info;
}

/* The reduction K = Q T Q^T of the group's Gram, T's eigenvalues w
 * (tri_eigenvalues), Z = Q^T Yc (column-major n x m), and with LOO Q
 * itself (dorgtr: column-major in K); GCV keeps Q's reflectors. */
static km_status cf_reduce(cf_bufs *b, const krr_group *gr, const double *Xs,
                           const double *Yc, size_t n, size_t d, size_t m,
                           int gcv, km_error *err)
{
    km_status st;
    if ((st = km_kernel_check_scale(gr->k, Xs, n, d, err)) != KM_OK ||
        (st = km_gram_sym(gr->k, Xs, n, d, b->K, 0, err)) != KM_OK ||
        (st = tridiag(b->K, n, b->dg, b->e, b->tau, err)) != KM_OK)
        return st;
    for (size_t i = 0; i < n; i++)
        for (size_t o = 0; o < m; o++)
            b->Z[o * n + i] = Yc[i * m + o];
    lapack_int info = LAPACKE_dormtr(LAPACK_COL_MAJOR, 'L', 'U', 'T',
                                     (lapack_int)n, (lapack_int)m, b->K,
                                     (lapack_int)n, b->tau, b->Z,
                                     (lapack_int)n);
    if (info == 0)
        info = tri_eigenvalues(b, n, gcv);
    if (info > 0)
        return km_error_set(err, KM_ENOCONV, "the eigenvalues of the kernel "
                            "matrix did not converge");
    if (info == 0 && !gcv)
        info = LAPACKE_dorgtr(LAPACK_COL_MAJOR, 'U', (lapack_int)n, b->K,
                              (lapack_int)n, b->tau);
    if (info == LAPACK_WORK_MEMORY_ERROR)
        return km_error_set(err, KM_ENOMEM, "out of memory for the closed "
                            "form of %zu rows", n);
    if (info != 0)
        return km_error_set(err, KM_EINTERNAL, "the closed form's LAPACK "
                            "call: argument %d", (int)-info);
    return KM_OK;
}

/* The coefficients C = (K + alpha_c I)^-1 Yc of the batch's nb alphas
 * (column-major n x nb m, column c m + o), by Q (T + alpha I)^-1 Z; with
 * LOO into b->C, with GCV in place in b->W. ok[c]: alpha c's factor
 * exists (else its columns are left 0). */
static km_status cf_solve(cf_bufs *b, const search_run *r,
                          const krr_group *gr, size_t c0, size_t nb, size_t n,
                          size_t m, int gcv, km_error *err)
{
    memset(b->W, 0, n * nb * m * sizeof *b->W);
    for (size_t c = 0; c < nb; c++) {
        double a = point_alpha(r->s, gr->pts[c0 + c]);
        double *l = b->L + c * n, *rp = b->Rp + c * n;
        b->ok[c] = tri_factor(b->dg, b->e, n, a, l, rp);
        for (size_t o = 0; b->ok[c] && o < m; o++) {
            double *x = b->W + (c * m + o) * n;
            memcpy(x, b->Z + o * n, n * sizeof *x);
            tri_solve(l, rp, n, x);
        }
    }
    if (!gcv) {
        cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)n,
                    (int)(nb * m), (int)n, 1.0, b->K, (int)n, b->W, (int)n,
                    0.0, b->C, (int)n);
        return KM_OK;
    }
    lapack_int info = LAPACKE_dormtr(LAPACK_COL_MAJOR, 'L', 'U', 'N',
                                     (lapack_int)n, (lapack_int)(nb * m),
                                     b->K, (lapack_int)n, b->tau, b->W,
                                     (lapack_int)n);
    if (info == LAPACK_WORK_MEMORY_ERROR)
        return km_error_set(err, KM_ENOMEM, "out of memory for the closed "
                            "form of %zu rows", n);
    if (info != 0)
        return km_error_set(err, KM_EINTERNAL, "dormtr argument %d",
                            (int)-info);
    return KM_OK;
}

static void fail_not_pd(search_run *r, size_t p)
{
    km_search_fail_point(r, p, -1, KM_ENOTPD, "the kernel matrix plus "
                         "alpha*I is not positive definite (a pivot of its "
                         "tridiagonal form is not positive); use a larger "
                         "params.alpha or a positive definite kernel");
}

/*
 * LOO and GCV in closed form for all alphas of group gr, from one
 * tridiagonal reduction K = Q T Q^T of the rows' Gram (dsytrd; with LOO
 * Q formed by dorgtr). For each alpha, with T + alpha I = L diag(p) L^T
 * (O(n) and its pivots' signs say whether it is positive definite):
 *   c           = (K + alpha I)^-1 y = Q (T + alpha I)^-1 Q^T y
 *   y - H y     = alpha c                     (H = K (K + alpha I)^-1)
 *   1 - H_ii    = alpha ((K + alpha I)^-1)_ii
 *               = alpha q_i^T (T + alpha I)^-1 q_i   (q_i^T: row i of Q)
 *   LOO residual_i = (y - H y)_i / (1 - H_ii) = c_i / ((K + alpha I)^-1)_ii
 *   GCV residual_i = (y - H y)_i / (tr(I - H) / n),
 *                    tr(I - H) = sum_j alpha / (w_j + alpha)
 * with w T's eigenvalues (dsterf). The diagonal costs n tridiagonal
 * solves per alpha, O(n^2), instead of an eigendecomposition's
 * eigenvectors (dstedc and dormtr on n columns: O(n^3)); no difference
 * 1 - w / (w + alpha) is formed, so small alphas keep their digits. The
 * n predictions y_i - residual_i are scored together; with GCV,
 * -neg_mean_squared_error is n |y - Hy|^2 / (n - tr H)^2 (averaged over
 * outputs), the generalised cross-validation of Golub, Heath and Wahba.
 * Xs, Yc: the rows as the closed form sees them (preprocessed on all
 * rows, y centered when asked).
 */
static km_status krr_closed_form(search_run *r, const krr_group *gr,
                                 const double *Xs, const double *Yc,
                                 km_error *err)
{
    const km_search_spec *s = r->s;
    const km_problem *pb = r->pb;
    size_t n = pb->n, d = pb->d, m = pb->m;
    int gcv = s->cv.kind == KM_CV_GCV;
    double t0 = km_now();
    size_t cb = gr->g < ALPHA_BATCH ? gr->g : ALPHA_BATCH;
    cf_bufs b;
    km_status st = KM_OK;
    km_error e = {0};
    if (!cf_alloc(&b, n, m, cb, gcv)) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for the closed-form "
                          "cross-validation of %zu rows", n);
        goto out;
    }
    if ((st = cf_reduce(&b, gr, Xs, Yc, n, d, m, gcv, &e)) != KM_OK) {
        st = group_failed(r, gr, -1, st, e.message, err);
        goto out;
    }
    if ((st = km_search_progress(
             r, r->done + 0.9 * (double)(gr->g * r->n_splits), err)) != KM_OK)
        goto out;
    const double *C = gcv ? b.W : b.C;
    for (size_t c0 = 0; c0 < gr->g; c0 += cb) {
        size_t nb = gr->g - c0 < cb ? gr->g - c0 : cb;
        if ((st = cf_solve(&b, r, gr, c0, nb, n, m, gcv, &e)) != KM_OK) {
            st = km_error_set(err, st, "%s", e.message);
            goto out;
        }
        if (!gcv)
            loo_diag(b.K, n, nb, b.L, b.Rp, b.ok, b.Bk, b.Yk, b.D);
        for (size_t c = 0; c < nb; c++) {
            size_t p = gr->pts[c0 + c];
            double a = point_alpha(s, p);
            if (!eig_pd(r, p, -1, b.w[0], a))
                continue;
            if (!b.ok[c]) {
                fail_not_pd(r, p);
                continue;
            }
            double trace = 0; /* tr(I - H) / n */
            for (size_t j = 0; gcv && j < n; j++)
                trace += a / (b.w[j] + a);
            trace /= (double)n;
            int bad = 0;
            for (size_t i = 0; i < n && !bad; i++) {
                double den = gcv ? trace : b.D[c * n + i];
                double num = gcv ? a : 1; /* y - Hy = alpha c */
                bad = !(den > 0);
                for (size_t o = 0; o < m; o++)
                    b.P[i * m + o] = pb->y[i * m + o] -
                                     num * C[(c * m + o) * n + i] / den;
            }
            if (bad) {
                km_search_fail_point(r, p, -1, KM_EPROBLEM, "a leave-one-"
                                     "out denominator 1 - H_ii is not "
                                     "positive: the fit interpolates; use "
                                     "a larger params.alpha");
                continue;
            }
            km_answers an = {.n = n, .m = m, .Y = pb->y, .P = b.P};
            if ((st = km_search_score(r, p, -1, &an, err)) != KM_OK)
                goto out;
        }
    }
out:
    {
        double each = (km_now() - t0) / (double)gr->g;
        for (size_t a = 0; a < gr->g; a++)
            r->acc[gr->pts[a]].seconds = each;
    }
    cf_free(&b);
    if (st == KM_OK) {
        r->done += (double)(gr->g * r->n_splits);
        st = km_search_progress(r, r->done, err);
    }
    return st;
}

/*
 * KFOLD and PREDEFINED for one krr group: per split, the training block
 * Ktr and the test-by-training block Kte (gathered from the Gram of all
 * rows Kall, or, with x-preprocessing, computed from the split's scaled
 * rows), y centered on the training rows when asked; then for every
 * alpha C = (Ktr + alpha I)^-1 Ytr and the test predictions Kte C (+
 * the training mean), by one eigendecomposition of Ktr for all alphas
 * (g >= KRR_EIG_CHOLESKYS) or one Cholesky per alpha.
 */
/* krr_folds' buffers, sized for the largest split. */
typedef struct fold_bufs {
    int scaled, use_eig;
    size_t cb; /* alphas per batch (1: one Cholesky per alpha) */
    split sp;
    double *Kall, *Ktr, *Kte, *w, *Ytr, *Yte, *mu, *Q, *B, *C, *Pb, *P, *Kc;
    double *Xtr, *Xte;
} fold_bufs;

static void fold_bufs_free(fold_bufs *fb)
{
    km_split_free(&fb->sp);
    double *all[] = {fb->Kall, fb->Ktr, fb->Kte, fb->w, fb->Ytr, fb->Yte,
                     fb->mu, fb->Q, fb->B, fb->C, fb->Pb, fb->P, fb->Kc,
                     fb->Xtr, fb->Xte};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        free(all[i]);
}

static km_status fold_bufs_alloc(fold_bufs *fb, const search_run *r,
                                 const krr_group *gr, km_error *err)
{
    const km_problem *pb = r->pb;
    size_t n = pb->n, d = pb->d, m = pb->m;
    memset(fb, 0, sizeof *fb);
    fb->scaled = r->s->pre.x != KM_SCALE_NONE;
    fb->use_eig = gr->g >= KRR_EIG_CHOLESKYS;
    fb->cb = fb->use_eig ? (gr->g < ALPHA_BATCH ? gr->g : ALPHA_BATCH) : 1;
    size_t cb = fb->cb;
    km_status st = km_split_alloc(&fb->sp, pb, 0, err);
    if (st != KM_OK)
        return st;
    /* the largest training block and test-by-training block */
    size_t max_tr = 0, max_x = 0;
    size_t *cnt = calloc(r->n_splits, sizeof *cnt);
    if (!cnt) {
        km_split_free(&fb->sp);
        return km_error_set(err, KM_ENOMEM, "out of memory for the folds");
    }
    for (size_t i = 0; i < n; i++)
        if (r->fold[i] >= 0)
            cnt[r->fold[i]]++;
    for (size_t f = 0; f < r->n_splits; f++) {
        size_t ntr = n - cnt[f];
        max_tr = ntr > max_tr ? ntr : max_tr;
        max_x = cnt[f] * ntr > max_x ? cnt[f] * ntr : max_x;
    }
    free(cnt);
    int ok = (fb->Ktr = malloc(max_tr * max_tr * sizeof(double))) &&
             (fb->Kte = malloc(max_x * sizeof(double))) &&
             (fb->w = malloc(n * sizeof(double))) &&
             (fb->Ytr = malloc(n * m * sizeof(double))) &&
             (fb->Yte = malloc(n * m * sizeof(double))) &&
             (fb->mu = malloc(m * sizeof(double))) &&
             (fb->Q = malloc(n * m * sizeof(double))) &&
             (fb->B = malloc(n * cb * m * sizeof(double))) &&
             (fb->C = malloc(n * cb * m * sizeof(double))) &&
             (fb->Pb = malloc(n * cb * m * sizeof(double))) &&
             (fb->P = malloc(n * m * sizeof(double))) &&
             (fb->use_eig ||
              (fb->Kc = malloc(max_tr * max_tr * sizeof(double))));
    if (ok && fb->scaled)
        ok = (fb->Xtr = malloc(n * d * sizeof(double))) &&
             (fb->Xte = malloc(n * d * sizeof(double)));
    if (ok && !fb->scaled)
        ok = (fb->Kall = malloc(n * n * sizeof(double))) != NULL;
    if (!ok) {
        fold_bufs_free(fb);
        return km_error_set(err, KM_ENOMEM, "out of memory for the folds of "
                            "%zu rows", n);
    }
    return KM_OK;
}

/* A failure of fold f's shared work: the group's points fail (*skip, the
 * fold's units done) or the search ends (the status). */
static km_status fold_failed(search_run *r, const krr_group *gr, size_t f,
                             km_status st, const char *msg, int *skip,
                             km_error *err)
{
    if ((st = group_failed(r, gr, (long)f, st, msg, err)) != KM_OK)
        return st;
    r->done += (double)gr->g;
    *skip = 1;
    return KM_OK;
}

/* Fold f's rows, preprocessing (learnt on its training rows as km_fit's
 * km_pre_learn: x scaled, y centered on their mean, mu) and blocks Ktr
 * (lower) and Kte; *skip when it failed the group's points. */
static km_status fold_prepare(search_run *r, const krr_group *gr,
                              fold_bufs *fb, size_t f, int *skip,
                              km_error *err)
{
    const km_search_spec *s = r->s;
    const km_problem *pb = r->pb;
    size_t n = pb->n, d = pb->d, m = pb->m;
    int scaled = fb->scaled;
    split *sp = &fb->sp;
    km_error e = {0};
    km_status st = KM_OK;
    km_split_take(sp, pb, r->fold, (long)f, 0);
    size_t ntr = sp->ntr, nte = sp->nte;
    for (size_t a = 0; a < ntr; a++)
        memcpy(fb->Ytr + a * m, pb->y + sp->tr[a] * m, m * sizeof(double));
    for (size_t a = 0; a < nte; a++)
        memcpy(fb->Yte + a * m, pb->y + sp->te[a] * m, m * sizeof(double));
    for (size_t a = 0; scaled && a < ntr; a++)
        memcpy(fb->Xtr + a * d, pb->X + sp->tr[a] * d, d * sizeof(double));
    km_pre_stats ps;
    memset(&ps, 0, sizeof ps);
    if (scaled || s->pre.center_y) {
        km_problem tp = {fb->Xtr, ntr, d, fb->Ytr, m, NULL, 0};
        st = km_pre_learn(&s->pre, &tp, &ps, &e);
    }
    /* row by row, so that a message names the row of X */
    for (size_t a = 0; st == KM_OK && scaled && a < ntr; a++)
        st = km_pre_transform(&ps, fb->Xtr + a * d, 1, d, sp->tr[a],
                              fb->Xtr + a * d, &e);
    for (size_t a = 0; st == KM_OK && scaled && a < nte; a++)
        st = km_pre_transform(&ps, pb->X + sp->te[a] * d, 1, d, sp->te[a],
                              fb->Xte + a * d, &e);
    for (size_t o = 0; o < m; o++)
        fb->mu[o] = ps.y_mean ? ps.y_mean[o] : 0;
    km_pre_stats_cleanup(&ps);
    if (st == KM_EINVAL) /* a row scaled out of the doubles: the data's */
        st = KM_EPROBLEM;
    /* the blocks */
    if (st == KM_OK && scaled &&
        (st = km_kernel_check_scale(gr->k, fb->Xtr, ntr, d, &e)) == KM_OK &&
        (st = km_gram_sym(gr->k, fb->Xtr, ntr, d, fb->Ktr, 0, &e)) == KM_OK)
        st = km_gram_cross(gr->k, fb->Xte, nte, fb->Xtr, ntr, d, fb->Kte,
                           ntr, &e);
    if (st != KM_OK)
        return fold_failed(r, gr, f, st, e.message, skip, err);
    if (!scaled) {
        for (size_t a = 0; a < ntr; a++) {
            const double *row = fb->Kall + sp->tr[a] * n;
            for (size_t b = 0; b <= a; b++)
                fb->Ktr[a * ntr + b] = row[sp->tr[b]];
        }
        for (size_t a = 0; a < nte; a++) {
            const double *row = fb->Kall + sp->te[a] * n;
            for (size_t b = 0; b < ntr; b++)
                fb->Kte[a * ntr + b] = row[sp->tr[b]];
        }
    }
    for (size_t a = 0; a < ntr; a++)
        for (size_t o = 0; o < m; o++)
            fb->Ytr[a * m + o] -= fb->mu[o];
    return KM_OK;
}

/* Fold f's alphas from one eigendecomposition of Ktr, cb at a time;
 * *skip when it failed the group's points. */
static km_status fold_eig(search_run *r, const krr_group *gr, fold_bufs *fb,
                          size_t f, int *skip, km_error *err)
{
    const km_search_spec *s = r->s;
    size_t m = r->pb->m, ntr = fb->sp.ntr, nte = fb->sp.nte, cb = fb->cb;
    double *w = fb->w, *Q = fb->Q, *B = fb->B, *C = fb->C, *Pb = fb->Pb;
    double *P = fb->P;
    km_error e = {0};
    km_status st;
    if ((st = eigen(fb->Ktr, ntr, w, &e)) != KM_OK)
        return fold_failed(r, gr, f, st, e.message, skip, err);
    const double *Vt = fb->Ktr;
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)ntr, (int)m,
                (int)ntr, 1.0, Vt, (int)ntr, fb->Ytr, (int)m, 0.0, Q, (int)m);
    for (size_t c0 = 0; c0 < gr->g; c0 += cb) {
        size_t nb = gr->g - c0 < cb ? gr->g - c0 : cb;
        for (size_t j = 0; j < ntr; j++)
            for (size_t c = 0; c < nb; c++) {
                double a = point_alpha(s, gr->pts[c0 + c]);
                for (size_t o = 0; o < m; o++)
                    B[(j * nb + c) * m + o] = Q[j * m + o] / (w[j] + a);
            }
        /* C = V B, then the predictions Kte C */
        cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)ntr,
                    (int)(nb * m), (int)ntr, 1.0, Vt, (int)ntr, B,
                    (int)(nb * m), 0.0, C, (int)(nb * m));
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)nte,
                    (int)(nb * m), (int)ntr, 1.0, fb->Kte, (int)ntr, C,
                    (int)(nb * m), 0.0, Pb, (int)(nb * m));
        for (size_t c = 0; c < nb; c++) {
            size_t p = gr->pts[c0 + c];
            if (!eig_pd(r, p, (long)f, w[0], point_alpha(s, p)))
                continue;
            for (size_t a = 0; a < nte; a++)
                for (size_t o = 0; o < m; o++)
                    P[a * m + o] = Pb[(a * nb + c) * m + o] + fb->mu[o];
            km_answers an = {.n = nte, .m = m, .Y = fb->Yte, .P = P};
            if ((st = km_search_score(r, p, (long)f, &an, err)) != KM_OK)
                return st;
        }
    }
    r->done += (double)gr->g;
    return KM_OK;
}

/* Fold f's alphas by one Cholesky each, on a copy of Ktr. */
static km_status fold_chol(search_run *r, const krr_group *gr, fold_bufs *fb,
                           size_t f, km_error *err)
{
    const km_search_spec *s = r->s;
    size_t m = r->pb->m, ntr = fb->sp.ntr, nte = fb->sp.nte;
    double *C = fb->C, *P = fb->P;
    km_error e = {0};
    km_status st = KM_OK;
    for (size_t c = 0; c < gr->g && st == KM_OK; c++) {
        size_t p = gr->pts[c];
        if (r->acc[p].failed) {
            r->done += 1;
            continue;
        }
        memcpy(fb->Kc, fb->Ktr, ntr * ntr * sizeof(double));
        sub_ctx sc = {r, r->done};
        km_fit_control sub = {km_search_sub_progress, &sc};
        st = km_krr_solve(fb->Kc, ntr, point_alpha(s, p), fb->Ytr, m, C,
                          "the kernel matrix", r->ctl ? &sub : NULL, 0.0,
                          1.0, &e);
        if (st == KM_OK && !km_all_finite(C, ntr * m))
            st = km_error_set(&e, KM_ENOTPD, "the solve gave non-finite "
                              "coefficients: the kernel matrix is "
                              "numerically singular; use a larger "
                              "params.alpha");
        r->done += 1;
        if (st != KM_OK) {
            if ((st = km_search_point_failed(r, p, (long)f, st, e.message,
                                             err)) != KM_OK)
                return st;
            continue;
        }
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)nte,
                    (int)m, (int)ntr, 1.0, fb->Kte, (int)ntr, C, (int)m, 0.0,
                    P, (int)m);
        for (size_t a = 0; a < nte; a++)
            for (size_t o = 0; o < m; o++)
                P[a * m + o] += fb->mu[o];
        km_answers an = {.n = nte, .m = m, .Y = fb->Yte, .P = P};
        st = km_search_score(r, p, (long)f, &an, err);
    }
    return st;
}

static km_status krr_folds(search_run *r, const krr_group *gr, km_error *err)
{
    const km_problem *pb = r->pb;
    size_t n = pb->n, d = pb->d;
    fold_bufs fb;
    km_status st = fold_bufs_alloc(&fb, r, gr, err);
    if (st != KM_OK)
        return st;
    km_error e = {0};
    double t_shared = 0;
    if (!fb.scaled) { /* one Gram of all rows serves every split */
        double t0 = km_now();
        if ((st = km_kernel_check_scale(gr->k, pb->X, n, d, &e)) != KM_OK ||
            (st = km_gram_sym(gr->k, pb->X, n, d, fb.Kall, 1, &e)) != KM_OK) {
            if ((st = group_failed(r, gr, -1, st, e.message, err)) == KM_OK)
                r->done += (double)(gr->g * r->n_splits);
            fold_bufs_free(&fb);
            return st;
        }
        t_shared = km_now() - t0;
    }
    for (size_t f = 0; f < r->n_splits && st == KM_OK; f++) {
        double t0 = km_now();
        int skip = 0;
        if ((st = km_search_progress(r, r->done, err)) != KM_OK ||
            (st = fold_prepare(r, gr, &fb, f, &skip, err)) != KM_OK || skip)
            continue;
        st = fb.use_eig ? fold_eig(r, gr, &fb, f, &skip, err)
                        : fold_chol(r, gr, &fb, f, err);
        if (st != KM_OK || skip)
            continue;
        double each = (km_now() - t0 + t_shared / (double)r->n_splits) /
                      (double)gr->g;
        for (size_t a = 0; a < gr->g; a++)
            r->acc[gr->pts[a]].seconds += each;
    }
    fold_bufs_free(&fb);
    return st;
}

/* krr: the points grouped by resolved kernel, each group by closed form
 * (LOO, GCV) or by shared Grams (KFOLD, PREDEFINED). */
km_status km_search_run_krr(search_run *r, km_error *err)
{
    const km_search_spec *s = r->s;
    const km_problem *pb = r->pb;
    size_t P = s->n_points, n = pb->n, d = pb->d, m = pb->m;
    km_kernel *rk = calloc(P, sizeof *rk);
    size_t *leader = malloc(P * sizeof *leader), *pts = malloc(P * sizeof *pts);
    double *Xs = NULL, *Yc = NULL;
    km_status st = KM_OK;
    size_t nk = 0;
    if (!rk || !leader || !pts) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for the search");
        goto out;
    }
    for (; nk < P; nk++) {
        if ((st = km_kernel_copy(&rk[nk], &s->kernels[nk], err)) != KM_OK)
            goto out;
        km_kernel_resolve(&rk[nk], d);
    }
    int closed = s->cv.kind == KM_CV_LOO || s->cv.kind == KM_CV_GCV;
    if (closed) { /* the closed form preprocesses on all rows, once */
        int scaled = s->pre.x != KM_SCALE_NONE;
        if (!(Yc = malloc(n * m * sizeof *Yc)) ||
            (scaled && !(Xs = malloc(n * d * sizeof *Xs)))) {
            st = km_error_set(err, KM_ENOMEM, "out of memory for the search");
            goto out;
        }
        km_pre_stats ps;
        km_error e = {0};
        st = km_pre_learn(&s->pre, pb, &ps, &e);
        if (st == KM_OK && scaled)
            st = km_pre_transform(&ps, pb->X, n, d, 0, Xs, &e);
        for (size_t i = 0; st == KM_OK && i < n * m; i++)
            Yc[i] = pb->y[i] - (ps.y_mean ? ps.y_mean[i % m] : 0);
        km_pre_stats_cleanup(&ps);
        if (st == KM_ENOMEM) {
            km_error_set(err, st, "%s", e.message);
            goto out;
        }
        if (st != KM_OK) { /* the data's: every point fails */
            for (size_t p = 0; p < P; p++)
                km_search_fail_point(r, p, -1, KM_EPROBLEM, e.message);
            st = KM_OK;
            goto out;
        }
    }
    /* groups in the order of their first point */
    for (size_t p = 0; p < P; p++) {
        leader[p] = p;
        for (size_t q = 0; q < p; q++)
            if (leader[q] == q && km_search_kernel_equal(&rk[p], &rk[q])) {
                leader[p] = q;
                break;
            }
    }
    for (size_t p = 0; p < P && st == KM_OK; p++) {
        if (leader[p] != p)
            continue;
        krr_group gr = {&rk[p], pts, 0};
        for (size_t q = p; q < P; q++)
            if (leader[q] == p)
                pts[gr.g++] = q;
        st = closed ? krr_closed_form(r, &gr, Xs ? Xs : pb->X, Yc, err)
                    : krr_folds(r, &gr, err);
    }
out:
    for (size_t i = 0; i < nk; i++)
        km_kernel_cleanup(&rk[i]);
    free(rk);
    free(leader);
    free(pts);
    free(Xs);
    free(Yc);
    return st;
}
