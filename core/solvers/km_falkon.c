/*
 * km_falkon.c - krr's nystrom solve (Falkon): preconditioned conjugate
 * gradients on the normal equations of the centres' coefficients, with
 * K_nm computed in row blocks at every pass (fused for kernels of inner
 * products). km_krr_fit_nystrom (km_krr.c) picks the centres and builds
 * the model around what km_falkon_solve returns; gpr's nystrom solver
 * takes its mean from that fit. The update's form (krr's keep_factor):
 * the same CG on kept sums K_nm^T K_nm and K_nm^T Y instead of passes
 * over rows, warm-started (km_nys_stats_add makes and extends the sums).
 *
 * Thread-safety: reentrant; a fused pass runs its rows on the fit's
 * threads, each into its own accumulator.
 */
#include <cblas.h>
#include <lapacke.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "../base/km_base_internal.h"
#include "../kernels/km_kernel_internal.h"
#include "km_solvers_internal.h"

/* The fused pass (kernels of inner products, at most NYS_FUSED_OUTPUTS
 * outputs; see nys_pass_fused) runs on at most NYS_MAX_THREADS threads
 * (KM_FALKON_MAX_THREADS, which km_krr_fit_bytes counts). */
#define NYS_FUSED_OUTPUTS 8
#define NYS_MAX_THREADS KM_FALKON_MAX_THREADS
#define NYS_TILE 4 /* rows per km_vdot_tile */

/*
 * The nystrom solver (Falkon: Rudi, Carratino and Rosasco, "FALKON: an
 * optimal large scale kernel method", 2017), in this file's
 * parameterisation.
 *
 * The system. With centres Z (m rows of X), K_nm = k(X, Z) and
 * K_mm = k(Z, Z), the coefficients C (m x p) solve
 *     H C = K_nm^T Y,    H = K_nm^T K_nm + alpha K_mm,
 * the normal equations of min |Y - K_nm C|^2 + alpha C^T K_mm C. With
 * m = n (Z = X) this is K (K + alpha I) C = K Y, whose solution is the
 * exact solver's (K + alpha I)^-1 Y, so alpha means the same in both. It
 * is also what scikit-learn's Nystroem(n_components=m) features
 * phi(x) = k(x, Z) K_mm^-1/2 followed by Ridge(alpha, fit_intercept=
 * False) solve: (Phi^T Phi + alpha I) w = Phi^T y with C = K_mm^-1/2 w
 * (when K_mm is invertible).
 *
 * The preconditioner. Falkon's paper writes H = K_nm^T K_nm + lambda n
 * K_mm; here lambda n = alpha. The centres are a uniform sample of the
 * rows, so K_nm^T K_nm (a sum over n rows of k_i k_i^T) is approximated
 * by n/m times the same sum over the m centres, (n/m) K_mm K_mm:
 *     H ~ P = (n/m) K_mm^2 + alpha K_mm.
 * Let T be upper triangular with T^T T = K_mm (Cholesky). Then
 *     P = T^T ((n/m) T T^T + alpha I) T = n T^T (T T^T / m + (alpha/n) I) T,
 * and with A upper triangular, A^T A = T T^T / m + (alpha/n) I,
 *     P = n T^T A^T A T,  P^-1 = (1/n) T^-1 A^-1 A^-T T^-T = B B^T
 * for B = n^-1/2 T^-1 A^-1. CG runs on the well-conditioned
 *     (B^T H B) V = B^T K_nm^T Y,   C = B V,
 * (Falkon's lambda' = alpha / n in A). K_mm may be singular (a linear
 * kernel, repeated rows), so T factors K_mm + s I with the small shift
 * s = 1e-13 m mean(diag K_mm) (Falkon's eps m), raised 1000-fold while
 * the factorisation fails; the shift changes only the preconditioner:
 * the operator applies K_mm itself, as T^T T - s I.
 *
 * One application of B^T H B to a block of p directions: U = B V (two
 * triangular solves), then K_nm^T (K_nm U) over row blocks of X, plus
 * alpha (T^T (T U) - s U), then B^T (two triangular solves). For kernels
 * of inner products (rbf, polynomial, ...) and at most NYS_FUSED_OUTPUTS
 * outputs the pass is fused (nys_pass_fused): X's rows are split over the
 * fit's ctl->threads threads, and each takes four rows at a time through
 * their inner products with the centres (km_vdot_tile, register-blocked,
 * no BLAS), each row's kernel map and its two products (k_i . u, then
 * acc += (k_i . u) k_i) while the rows are in cache, into one accumulator
 * per thread. Other kernels and outputs: a block's kernel values by
 * km_gram_cross_sn, then two GEMMs. Measured at n = 100,000, d = 20 on
 * this project's 2 cores: at m = 10,000 the unfused pass (GEMM, a
 * one-thread map, two GEMMs over a 16 MB block) took about 3.3 s; the
 * first fused pass (a DGEMM of inner products per block on BLAS's
 * threads, then the map and products on the fit's) 3.65 CPU-seconds,
 * about a quarter of them OpenBLAS's idle threads spinning in
 * sched_yield beside the fit's and zeroing the block for beta = 0; this
 * one 2.4 CPU-seconds, of which the rbf map's exponentials are about
 * two thirds. Memory: T,
 * A (2 m^2), one block of K_nm (NYS_BLOCK_VALUES; the fused pass: the
 * centres feature-major and NYS_TILE rows per thread), and O(m p) vectors
 * per thread (km_krr_fit_bytes). The preconditioner costs two Choleskys
 * of m^3 / 3 and T T^T by dlauum (m^3 / 3; DSYRK would take m^3: 22 s
 * against about 7 s at m = 10,000).
 *
 * Every output runs its own CG (its own step lengths) on the shared
 * passes over the data. CG's residual need not fall at every step (it
 * minimises the error's energy norm, not the residual), so each output
 * also keeps a minimal-residual smoothing of its iterates (Schoenauer;
 * Zhou and Walker 1994): after each step, (Vs, Rs) += eta ((V, R) -
 * (Vs, Rs)) with the eta that minimises |Rs|, which costs no product
 * with the operator and never lets |Rs| rise. The smoothed iterate is
 * the answer, and its residual the one reported: an output stops when
 * |Rs| / |r_0| (of the preconditioned system, r_0 = B^T K_nm^T y) is at
 * most cg_tol, and the fit when every output has stopped or after
 * cg_max_iter iterations.
 *
 * The update's form. With G = K_nm^T K_nm and K_nm^T Y kept (m^2 and m p
 * values, sums over the rows, so new rows add to them), a pass is G U
 * (DSYMM, O(m^2 p)) and the right-hand side is read, not computed: no
 * row is visited. CG may start from old coefficients C0 (V0 = B^-1 C0 =
 * n^1/2 A T C0, R0 = B^T K_nm^T Y - (B^T H B) V0), and an output stops,
 * as a fit's, when |Rs| is at most cg_tol times |B^T K_nm^T Y| (the
 * residual at C = 0, not at C0): the answer meets the tolerance of a
 * fit on all the rows with these centres.
 */
typedef struct nys {
    const km_kernel *k;
    const double *X, *xn; /* xn: squared norms of X's rows (fused path) */
    size_t n, d;
    const double *Z, *zn; /* centres and their squared norms */
    size_t m, p, block;
    const double *T, *A; /* column-major upper factors, m x m */
    double shift, alpha;
    double *Kb, *tmp; /* block x m row-major; block x p */
    double *acc;      /* fused path: threads accumulators of m x p */
    const double *Zt; /* fused path: the centres feature-major, d x m */
    double *rows;     /* fused path: NYS_TILE x m per thread */
    atomic_int *stop; /* fused path: set on cancel */
    size_t threads;
    const km_fit_control *ctl;
    double frac; /* progress so far */
    const double *G, *KtY; /* the update's form: K_nm^T K_nm, K_nm^T Y */
} nys;

/* Rows [r0, r1) of K_nm for one thread of the fused pass: four rows at a
 * time, their inner products with the centres (km_vdot_tile), each row's
 * kernel map, then its share of K_nm^T (K_nm U) (or of K_nm^T Y when U
 * is NULL), all while the rows are in cache. The calling thread (first)
 * reports progress and raises stop on cancel; the others watch stop. */
typedef struct nys_rows {
    const nys *s;
    size_t r0, r1;
    const double *U, *Y;
    double *acc;  /* m x p column-major */
    double *rows; /* NYS_TILE x m */
    int first;
} nys_rows;

static void *nys_rows_run(void *arg)
{
    const nys_rows *w = arg;
    const nys *s = w->s;
    size_t m = s->m, p = s->p, d = s->d, since = 0;
    for (size_t i0 = w->r0; i0 < w->r1; i0 += NYS_TILE) {
        size_t nr = w->r1 - i0 < NYS_TILE ? w->r1 - i0 : NYS_TILE;
        km_vdot_tile(s->X + i0 * d, nr, d, s->Zt, m, w->rows, m);
        for (size_t r = 0; r < nr; r++) {
            double *row = w->rows + r * m;
            size_t i = i0 + r;
            km_kernel_map_row(s->k, row, m, s->xn[i], s->zn, -1);
            for (size_t j = 0; j < p; j++) {
                double t = w->U ? km_vdot(row, w->U + j * m, m)
                                : w->Y[i * p + j];
                km_vaxpy(t, row, w->acc + j * m, m);
            }
        }
        if ((since += nr) < s->block)
            continue;
        since = 0;
        if (atomic_load_explicit(s->stop, memory_order_relaxed))
            break;
        if (w->first && km_progress(s->ctl, s->frac))
            atomic_store(s->stop, 1);
    }
    return NULL;
}

/* The fused pass: X's rows split evenly over s->threads threads (this one
 * the first), each into its own accumulator; out is their sum. No BLAS
 * inside, so OpenBLAS's threads stay idle instead of spinning beside
 * ours between GEMMs. */
static km_status nys_pass_fused(nys *s, const double *U, const double *Y,
                                double *out, km_error *err)
{
    size_t m = s->m, p = s->p, nt = s->threads, mp = m * p;
    nys_rows w[NYS_MAX_THREADS];
    pthread_t tid[NYS_MAX_THREADS];
    int started[NYS_MAX_THREADS] = {0};
    memset(s->acc, 0, nt * mp * sizeof *s->acc);
    atomic_store(s->stop, 0);
    for (size_t t = 0; t < nt; t++) {
        w[t] = (nys_rows){s, s->n * t / nt, s->n * (t + 1) / nt, U, Y,
                          s->acc + t * mp, s->rows + t * NYS_TILE * m, t == 0};
        /* thread 0 is this one; a thread that cannot start runs here */
        if (t > 0)
            started[t] = pthread_create(&tid[t], NULL, nys_rows_run,
                                        &w[t]) == 0;
    }
    for (size_t t = 0; t < nt; t++)
        if (!started[t])
            nys_rows_run(&w[t]);
    for (size_t t = 1; t < nt; t++)
        if (started[t])
            pthread_join(tid[t], NULL);
    if (atomic_load(s->stop) || km_progress(s->ctl, s->frac))
        return km_error_set(err, KM_ECANCELLED, "fit cancelled");
    memcpy(out, s->acc, mp * sizeof *out);
    for (size_t t = 1; t < nt; t++)
        cblas_daxpy((int)mp, 1.0, s->acc + t * mp, 1, out, 1);
    return KM_OK;
}

/*
 * A CG iteration's products with the m x m factors, for p columns: with
 * few columns (KM_FEW_COLUMNS) the level-2 routines. The solves always
 * (DTRSV runs on the calling thread); the products (DTRMV, DSYMV, which
 * OpenBLAS runs on its threads) only in the update's form, without a
 * pass over the rows: in a fit, OpenBLAS's threads, spinning after such
 * a call, took the cores from the pass's own threads (a fit of 10,000
 * rows, m = 1000, on 2 threads: 1.06 s with DTRMM, 1.24 s with DTRMV).
 * A krr nystrom update of 100 rows to that model: 0.095 s with the
 * level-3 routines, 0.055-0.07 s so.
 */
/* Out (m x p, column-major) = K_nm^T (K_nm U); with Y (n x p row-major)
 * instead of U (NULL): out = K_nm^T Y. */
static km_status nys_pass(nys *s, const double *U, const double *Y,
                          double *out, km_error *err)
{
    if (s->G) { /* the update's form: the sums, no rows */
        if (U && s->p > KM_FEW_COLUMNS)
            cblas_dsymm(CblasColMajor, CblasLeft, CblasUpper, (int)s->m,
                        (int)s->p, 1.0, s->G, (int)s->m, U, (int)s->m, 0.0,
                        out, (int)s->m);
        else if (U)
            for (size_t j = 0; j < s->p; j++)
                cblas_dsymv(CblasColMajor, CblasUpper, (int)s->m, 1.0, s->G,
                            (int)s->m, U + j * s->m, 1, 0.0, out + j * s->m,
                            1);
        else
            for (size_t i = 0; i < s->m; i++)
                for (size_t j = 0; j < s->p; j++)
                    out[j * s->m + i] = s->KtY[i * s->p + j];
        return KM_OK;
    }
    if (s->acc)
        return nys_pass_fused(s, U, Y, out, err);
    size_t m = s->m, p = s->p;
    memset(out, 0, m * p * sizeof *out);
    for (size_t i0 = 0; i0 < s->n; i0 += s->block) {
        size_t nb = s->n - i0 < s->block ? s->n - i0 : s->block;
        km_status st = km_gram_cross_sn(s->k, s->X + i0 * s->d, nb, s->Z, m,
                                        s->zn, s->d, s->Kb, m, err);
        if (st != KM_OK)
            return st;
        /* Kb row-major nb x m is column-major m x nb (Kb^T). */
        if (U) {
            cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, (int)nb,
                        (int)p, (int)m, 1.0, s->Kb, (int)m, U, (int)m, 0.0,
                        s->tmp, (int)nb);
            cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)m,
                        (int)p, (int)nb, 1.0, s->Kb, (int)m, s->tmp, (int)nb,
                        1.0, out, (int)m);
        } else {
            cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, (int)m,
                        (int)p, (int)nb, 1.0, s->Kb, (int)m, Y + i0 * p,
                        (int)p, 1.0, out, (int)m);
        }
        if (km_progress(s->ctl, s->frac))
            return km_error_set(err, KM_ECANCELLED, "fit cancelled");
    }
    return KM_OK;
}


/* V := a op(U)^-1 V, U upper (m x m), V m x p, column-major. */
static void tri_solve(const nys *s, const double *U, enum CBLAS_TRANSPOSE t,
                      double a, double *V)
{
    int m = (int)s->m;
    if (s->p > KM_FEW_COLUMNS) {
        cblas_dtrsm(CblasColMajor, CblasLeft, CblasUpper, t, CblasNonUnit,
                    m, (int)s->p, a, U, m, V, m);
        return;
    }
    for (size_t j = 0; j < s->p; j++) {
        cblas_dtrsv(CblasColMajor, CblasUpper, t, CblasNonUnit, m, U, m,
                    V + j * s->m, 1);
        if (a != 1.0)
            cblas_dscal(m, a, V + j * s->m, 1);
    }
}

/* V := op(U) V (U upper). */
static void tri_mul(const nys *s, const double *U, enum CBLAS_TRANSPOSE t,
                    double *V)
{
    int m = (int)s->m;
    if (s->p > KM_FEW_COLUMNS || !s->G) {
        cblas_dtrmm(CblasColMajor, CblasLeft, CblasUpper, t, CblasNonUnit,
                    m, (int)s->p, 1.0, U, m, V, m);
        return;
    }
    for (size_t j = 0; j < s->p; j++)
        cblas_dtrmv(CblasColMajor, CblasUpper, t, CblasNonUnit, m, U, m,
                    V + j * s->m, 1);
}

/* V (m x p column-major) := B V = n^-1/2 T^-1 A^-1 V. */
static void nys_apply_b(const nys *s, double *V)
{
    tri_solve(s, s->A, CblasNoTrans, 1.0, V);
    tri_solve(s, s->T, CblasNoTrans, 1.0 / sqrt((double)s->n), V);
}

/* V := B^T V = n^-1/2 A^-T T^-T V. */
static void nys_apply_bt(const nys *s, double *V)
{
    tri_solve(s, s->T, CblasTrans, 1.0, V);
    tri_solve(s, s->A, CblasTrans, 1.0 / sqrt((double)s->n), V);
}

/* W := K_mm U = T^T (T U) - shift U (all m x p column-major). */
static void nys_kmm(const nys *s, const double *U, double *W)
{
    memcpy(W, U, s->m * s->p * sizeof *W);
    tri_mul(s, s->T, CblasNoTrans, W);
    tri_mul(s, s->T, CblasTrans, W);
    cblas_daxpy((int)(s->m * s->p), -s->shift, U, 1, W, 1);
}

/* Q := (B^T H B) D, with work blocks U, W (m x p each). */
static km_status nys_operator(nys *s, const double *D, double *Q, double *U,
                              double *W, km_error *err)
{
    size_t mp = s->m * s->p;
    memcpy(U, D, mp * sizeof *U);
    nys_apply_b(s, U);
    km_status st = nys_pass(s, U, NULL, Q, err);
    if (st != KM_OK)
        return st;
    nys_kmm(s, U, W);
    cblas_daxpy((int)mp, s->alpha, W, 1, Q, 1);
    nys_apply_bt(s, Q);
    return KM_OK;
}

/* ------------------------------------------------------------ the solve */

/*
 * CG's state: eight m x p blocks, column-major, in one buffer (the
 * iterate V, residual R, direction D, its image Q, two work blocks U and
 * W, the smoothed iterate Vs and residual Rs), and per output its squared
 * residual rr, initial residual norm r0, smoothed relative residual res
 * and whether it has stopped; left outputs have not.
 */
typedef struct falkon_cg {
    double *work;
    double *V, *R, *D, *Q, *U, *W, *Vs, *Rs;
    double *rr, *r0, *res;
    int *done;
    size_t left;
} falkon_cg;

/* What a solve allocates beside the caller's: the pass's state (s: T, A,
 * the unfused block Kb and tmp, the fused pass's norms, accumulators,
 * feature-major centres and rows) and CG's. */
typedef struct falkon_bufs {
    nys s;
    atomic_int stop;
    double *xr;
    falkon_cg cg;
} falkon_bufs;

static void falkon_free(falkon_bufs *b)
{
    free((double *)b->s.T);
    free((double *)b->s.A);
    free(b->s.Kb);
    free(b->s.tmp);
    free(b->xr);
    free(b->s.acc);
    free((double *)b->s.Zt);
    free(b->s.rows);
    free(b->cg.work);
    free(b->cg.rr);
    free(b->cg.r0);
    free(b->cg.res);
    free(b->cg.done);
}

/* The buffers of fk's solve and the pass's state b->s: the fused pass
 * for kernels of inner products and few outputs, on the threads the fit
 * may use; else blocks of K_nm. */
static km_status falkon_alloc(const km_falkon *fk, falkon_bufs *b,
                              km_error *err)
{
    size_t n = fk->n, d = fk->d, m = fk->m, p = fk->p, mp = m * p;
    size_t block = km_nys_block_rows(n, m);
    double *T = malloc(m * m * sizeof *T);
    double *A = malloc(m * m * sizeof *A);
    double *tmp = fk->G ? NULL : malloc(block * p * sizeof *tmp);
    double *Kb = NULL;
    double *acc = NULL, *zt = NULL, *rows = NULL;
    falkon_cg *c = &b->cg;
    c->work = malloc(8 * mp * sizeof *c->work);
    c->rr = malloc(p * sizeof *c->rr);
    c->r0 = malloc(p * sizeof *c->r0);
    c->res = malloc(p * sizeof *c->res);
    c->done = calloc(p, sizeof *c->done);
    b->s.T = T;
    b->s.A = A;
    b->s.tmp = tmp;
    if (!T || !A || (!tmp && !fk->G) || !c->work || !c->rr || !c->r0 ||
        !c->res || !c->done)
        return km_error_set(err, KM_ENOMEM, "out of memory for the nystrom "
                            "solver of %zu centres", m);
    const km_fit_control *ctl = fk->ctl;
    size_t nt = ctl && ctl->threads > 1 ? (size_t)ctl->threads : 1;
    nt = nt < NYS_MAX_THREADS ? nt : NYS_MAX_THREADS;
    if (fk->G) {
        /* the update's form: products with G, no pass over rows */
    } else if (km_kernel_uses_dots(fk->k) && p <= NYS_FUSED_OUTPUTS) {
        b->xr = km_sqnorms(fk->X, n, d);
        acc = malloc(nt * mp * sizeof *acc);
        zt = malloc(m * d * sizeof *zt);
        rows = malloc(nt * NYS_TILE * m * sizeof *rows);
        if (zt)
            for (size_t j = 0; j < m; j++)
                for (size_t f = 0; f < d; f++)
                    zt[f * m + j] = fk->Z[j * d + f];
    } else {
        Kb = malloc(block * m * sizeof *Kb);
    }
    b->s = (nys){fk->k, fk->X, b->xr, n, d, fk->Z, fk->zn, m, p, block, T,
                 A, 0, fk->alpha, Kb, tmp, acc, zt, rows, &b->stop, nt, ctl,
                 0.0, fk->G, fk->KtY};
    if (fk->G ? 0 : acc ? !b->xr || !zt || !rows : !Kb)
        return km_error_set(err, KM_ENOMEM, "out of memory for the nystrom "
                            "solver of %zu centres", m);
    double *w = c->work;
    c->V = w, c->R = w + mp, c->D = w + 2 * mp, c->Q = w + 3 * mp;
    c->U = w + 4 * mp, c->W = w + 5 * mp, c->Vs = w + 6 * mp;
    c->Rs = w + 7 * mp;
    return KM_OK;
}

/* The preconditioner's factors: T (K_mm's, shifted) and A, A^T A =
 * T T^T / m + (alpha / n) I; then progress at fk->f_pre. */
static km_status falkon_precondition(const km_falkon *fk, nys *s,
                                     km_error *err)
{
    size_t m = s->m;
    double *T = (double *)s->T, *A = (double *)s->A;
    km_status st = km_nys_factor_kmm(s->k, s->Z, m, s->d, 0, T, &s->shift,
                                     err);
    if (st != KM_OK)
        return st;
    /* A^T A = T T^T / m + (alpha / n) I: T T^T of the triangular T by
     * dlauum (m^3 / 3 flops; DSYRK of the full m x m would take m^3) */
    memcpy(A, T, m * m * sizeof *A);
    lapack_int info = LAPACKE_dlauum(LAPACK_COL_MAJOR, 'U', (lapack_int)m, A,
                                     (lapack_int)m);
    for (size_t j = 0; j < m && info == 0; j++) { /* column j's upper part */
        for (size_t i = 0; i <= j; i++)
            A[j * m + i] /= (double)m;
        A[j * m + j] += s->alpha / (double)s->n;
    }
    if (info == 0)
        info = LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'U', (lapack_int)m, A,
                              (lapack_int)m);
    if (info != 0)
        return info > 0 ? km_error_set(err, KM_ENOTPD, "the nystrom "
                                       "preconditioner is not positive "
                                       "definite; use a larger params.alpha")
                        : km_error_set(err, KM_EINTERNAL, "dpotrf argument "
                                       "%d", (int)-info);
    if (km_progress(fk->ctl, fk->f_pre))
        return km_error_set(err, KM_ECANCELLED, "fit cancelled");
    s->frac = fk->f_pre;
    return KM_OK;
}

/* The warm start V = B^-1 C0 = n^1/2 A T C0 (C0 row-major m x p) and
 * R -= (B^T H B) V. */
static km_status falkon_warm(nys *s, const double *C0, falkon_cg *c,
                             km_error *err)
{
    size_t m = s->m, p = s->p, mp = m * p;
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < p; j++)
            c->V[j * m + i] = C0[i * p + j];
    cblas_dtrmm(CblasColMajor, CblasLeft, CblasUpper, CblasNoTrans,
                CblasNonUnit, (int)m, (int)p, 1.0, s->T, (int)m, c->V,
                (int)m);
    cblas_dtrmm(CblasColMajor, CblasLeft, CblasUpper, CblasNoTrans,
                CblasNonUnit, (int)m, (int)p, sqrt((double)s->n), s->A,
                (int)m, c->V, (int)m);
    memcpy(c->Vs, c->V, mp * sizeof *c->V);
    km_status st = nys_operator(s, c->V, c->Q, c->U, c->W, err);
    if (st == KM_OK)
        cblas_daxpy((int)mp, -1.0, c->Q, 1, c->R, 1);
    return st;
}

/* CG's start from V = 0, or from V = B^-1 C0: R = B^T K_nm^T Y (minus
 * the warm start's image), the directions and smoothed residuals R too;
 * r0 is always |B^T K_nm^T Y| (the residual at C = 0, a fit's), and an
 * output whose r0 is 0 (y = 0: C = 0) stops at once. *worst gets the
 * largest relative residual. */
static km_status falkon_cg_start(nys *s, const double *Y, const double *C0,
                                 double tol, falkon_cg *c, double *worst,
                                 km_error *err)
{
    size_t m = s->m, p = s->p, mp = m * p;
    memset(c->V, 0, mp * sizeof *c->V);
    memset(c->Vs, 0, mp * sizeof *c->Vs);
    km_status st = nys_pass(s, NULL, Y, c->R, err);
    if (st != KM_OK)
        return st;
    nys_apply_bt(s, c->R);
    for (size_t j = 0; j < p; j++)
        c->r0[j] = sqrt(cblas_ddot((int)m, c->R + j * m, 1, c->R + j * m, 1));
    if (C0 && (st = falkon_warm(s, C0, c, err)) != KM_OK)
        return st;
    memcpy(c->D, c->R, mp * sizeof *c->R);
    memcpy(c->Rs, c->R, mp * sizeof *c->R);
    *worst = 0;
    c->left = p;
    for (size_t j = 0; j < p; j++) {
        c->rr[j] = cblas_ddot((int)m, c->R + j * m, 1, c->R + j * m, 1);
        c->res[j] = c->r0[j] > 0 ? sqrt(c->rr[j]) / c->r0[j] : 0.0;
        if (c->r0[j] > 0 && isfinite(c->r0[j]) && c->res[j] <= tol) {
            /* the warm start already meets the tolerance */
            c->done[j] = 1;
            c->left--;
            memset(c->D + j * m, 0, m * sizeof *c->D);
        } else if (!(c->r0[j] > 0) || !isfinite(c->r0[j])) { /* C = 0 */
            memset(c->V + j * m, 0, m * sizeof *c->V);
            memset(c->Vs + j * m, 0, m * sizeof *c->Vs);
            c->done[j] = 1;
            c->left--;
            memset(c->D + j * m, 0, m * sizeof *c->D);
            memset(c->R + j * m, 0, m * sizeof *c->R);
            c->res[j] = 0;
        }
        *worst = c->res[j] > *worst ? c->res[j] : *worst;
    }
    return KM_OK;
}

/* One CG step of output j, its direction's image Q_j computed: the
 * iterate and residual, their minimal residual smoothing, and the next
 * direction. 1 when output j stops (its smoothed relative residual at
 * most tol, or no descent left), its direction then zeroed. */
static int falkon_cg_step(falkon_cg *c, size_t m, size_t j, double tol)
{
    double *dj = c->D + j * m, *qj = c->Q + j * m, *rj = c->R + j * m;
    double dq = cblas_ddot((int)m, dj, 1, qj, 1);
    if (!(dq > 0) || !isfinite(dq)) {
        /* no descent left (a singular direction): stop here */
        memset(dj, 0, m * sizeof *dj);
        return 1;
    }
    double a = c->rr[j] / dq;
    double *vj = c->V + j * m, *vs = c->Vs + j * m, *rs = c->Rs + j * m;
    cblas_daxpy((int)m, a, dj, 1, vj, 1);
    cblas_daxpy((int)m, -a, qj, 1, rj, 1);
    double rn = cblas_ddot((int)m, rj, 1, rj, 1);
    /* minimal residual smoothing: (Vs, Rs) moves towards (V, R) by the
     * step eta that minimises |Rs|, so |Rs| never rises */
    double tt = 0, st_ = 0;
    for (size_t i = 0; i < m; i++) {
        double t = rj[i] - rs[i];
        tt += t * t;
        st_ += rs[i] * t;
    }
    if (tt > 0) {
        double eta = -st_ / tt;
        for (size_t i = 0; i < m; i++) {
            vs[i] += eta * (vj[i] - vs[i]);
            rs[i] += eta * (rj[i] - rs[i]);
        }
    }
    double rsn = sqrt(cblas_ddot((int)m, rs, 1, rs, 1)) / c->r0[j];
    c->res[j] = rsn < c->res[j] ? rsn : c->res[j];
    if (c->res[j] <= tol) {
        memset(dj, 0, m * sizeof *dj);
        return 1;
    }
    double b = rn / c->rr[j];
    for (size_t i = 0; i < m; i++)
        dj[i] = rj[i] + b * dj[i];
    c->rr[j] = rn;
    return 0;
}

/* CG on (B^T H B) V = B^T K_nm^T Y from V = 0, every output with its own
 * step lengths, until every output has stopped or cg_max_iter
 * iterations; history as km_falkon_solve's. */
static km_status falkon_cg_run(const km_falkon *fk, nys *s, falkon_cg *c,
                               double *history, size_t *n_history,
                               size_t *iterations, double *residual,
                               km_error *err)
{
    size_t p = s->p, its = 0, nh = 0;
    double worst = 0, f_pre = fk->f_pre;
    km_status st = falkon_cg_start(s, fk->Y, fk->C0, fk->cg_tol, c, &worst,
                                   err);
    if (st == KM_OK && history)
        history[nh++] = worst;
    double tol = fk->cg_tol, cap = (double)fk->cg_max_iter;
    while (st == KM_OK && c->left > 0 && its < fk->cg_max_iter) {
        if ((st = nys_operator(s, c->D, c->Q, c->U, c->W, err)) != KM_OK)
            break;
        its++;
        worst = 0;
        for (size_t j = 0; j < p; j++) {
            if (!c->done[j] && falkon_cg_step(c, s->m, j, tol)) {
                c->done[j] = 1;
                c->left--;
            }
            worst = c->res[j] > worst ? c->res[j] : worst;
        }
        if (history)
            history[nh++] = worst;
        /* progress: iterations against the cap, or the residual's way
         * down to cg_tol on a log scale, whichever is further */
        double g = (double)its / cap;
        if (worst > 0 && worst < 1) {
            double h = log(worst) / log(tol < 1 ? tol : 0.5);
            g = h > g ? h : g;
        } else if (worst == 0) {
            g = 1;
        }
        g = f_pre + (0.95 - f_pre) * (g < 1 ? g : 1);
        s->frac = g > s->frac ? g : s->frac;
        if (km_progress(fk->ctl, s->frac))
            st = km_error_set(err, KM_ECANCELLED, "fit cancelled");
    }
    if (n_history)
        *n_history = nh;
    *iterations = its;
    *residual = worst;
    return st;
}

/* C = B Vs (of the smoothed iterate) into C (row-major), checked finite,
 * and rkhs[j] = C_j^T K_mm C_j. */
static km_status falkon_coef(nys *s, falkon_cg *c, double *C, double *rkhs,
                             km_error *err)
{
    size_t m = s->m, p = s->p;
    double *V = c->Vs;
    nys_apply_b(s, V);
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < p; j++)
            C[i * p + j] = V[j * m + i];
    if (!km_all_finite(C, m * p))
        return km_error_set(err, KM_ENOTPD, "the nystrom solve gave "
                            "non-finite coefficients; use a larger "
                            "params.alpha");
    /* rkhs_norm_sq: C^T K_mm C per output */
    nys_kmm(s, V, c->W);
    for (size_t j = 0; j < p; j++)
        rkhs[j] = cblas_ddot((int)m, V + j * m, 1, c->W + j * m, 1);
    return KM_OK;
}

km_status km_falkon_solve(const km_falkon *fk, double *C, double *rkhs,
                          size_t *iterations, double *residual,
                          double *history, size_t *n_history, km_error *err)
{
    falkon_bufs b;
    memset(&b, 0, sizeof b);
    atomic_init(&b.stop, 0);
    *iterations = 0;
    *residual = 0;
    km_status st = falkon_alloc(fk, &b, err);
    if (st == KM_OK)
        st = falkon_precondition(fk, &b.s, err);
    if (st == KM_OK)
        st = falkon_cg_run(fk, &b.s, &b.cg, history, n_history, iterations,
                           residual, err);
    if (st == KM_OK)
        st = falkon_coef(&b.s, &b.cg, C, rkhs, err);
    falkon_free(&b);
    return st;
}

km_status km_nys_stats_add(const km_kernel *k, const double *X, size_t n,
                           size_t d, const double *Y, size_t p,
                           const double *Z, const double *zn, size_t m,
                           double *G, double *KtY, km_error *err)
{
    size_t block = km_nys_block_rows(n, m);
    double *Kb = malloc(km_mul3(block, m, sizeof *Kb));
    if (!Kb)
        return km_error_set(err, KM_ENOMEM, "out of memory for a block of "
                            "%zu centres' kernel values", m);
    km_status st = KM_OK;
    for (size_t i0 = 0; i0 < n && st == KM_OK; i0 += block) {
        size_t nb = n - i0 < block ? n - i0 : block;
        st = km_gram_cross_sn(k, X + i0 * d, nb, Z, m, zn, d, Kb, m, err);
        if (st == KM_OK && !km_all_finite(Kb, nb * m))
            st = km_error_set(err, KM_EPROBLEM, "the kernel values of rows "
                              "%zu to %zu with the centres are not all "
                              "finite numbers", i0, i0 + nb - 1);
        if (st != KM_OK)
            break;
        /* Kb row-major nb x m: G += Kb^T Kb (upper, column-major), KtY
         * (row-major m x p) += Kb^T Y_block */
        cblas_dsyrk(CblasColMajor, CblasUpper, CblasNoTrans, (int)m, (int)nb,
                    1.0, Kb, (int)m, 1.0, G, (int)m);
        cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)m, (int)p,
                    (int)nb, 1.0, Kb, (int)m, Y + i0 * p, (int)p, 1.0, KtY,
                    (int)p);
    }
    free(Kb);
    for (size_t j = 0; st == KM_OK && j < m; j++) /* lower from upper */
        for (size_t i = j + 1; i < m; i++)
            G[j * m + i] = G[i * m + j];
    return st;
}
