/*
 * km_eigen.c - the top k eigenpairs of a symmetric matrix (kernel PCA's
 * centred Gram, or its nystrom solver's m x m covariance): dense (dsytrd,
 * the top k by index, dstein), block Lanczos with restarts, and the
 * randomized range finder with power iterations, and the choice among
 * them (km_eig_top); the centring of a Gram matrix and the eigenvectors'
 * sign convention that kernel PCA applies around them. Start vectors and Gaussian samples come from core's
 * PRNG with fixed seeds, so fits repeat.
 *
 * Thread-safety: reentrant.
 */
#include <cblas.h>
#include <float.h>
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../base/km_base_internal.h"
#include "km_solvers_internal.h"

/*
 * AUTO picks the iterative solver when n >= ITER_MIN_N and
 * k <= n / ITER_MAX_K_FRACTION. Measured on this project's machine (2
 * cores, OpenBLAS 0.3.21), rbf, d = 20, decaying feature scales, best of
 * 3 fits, seconds, dense / iterative:
 *   n =  500   k = 2: 0.008 / 0.008   k = 10: 0.010 / 0.021
 *   n = 1000   k = 2: 0.042 / 0.018   k = 10: 0.084 / 0.053
 *              k = 20: 0.086 / 0.094
 *   n = 2000   k = 10: 0.37 / 0.082   k = 40: 0.67 / 0.71
 *              k = 50: 0.41 / 1.07
 *   n = 3000   k = 10: 1.7 / 0.19     k = 60: 2.9 / 1.1
 *   n = 8000   k = 10: 33 (scikit-learn's, the same dsyevr) / 0.89
 * Dense costs O(n^3) whatever k; iterative about 8 passes over Kc plus
 * Rayleigh-Ritz steps of O(n (k ITER_DEPTH)^2), which dominate once k is
 * a sizeable share of n.
 */
#define ITER_MIN_N 1000
#define ITER_MAX_K_FRACTION 50

/* Residual tolerance relative to |Kc| (its largest Ritz value in
 * magnitude). */
#define ITER_TOL 1e-12
/* Krylov blocks per restart cycle. */
#define ITER_DEPTH KM_EIG_ITER_DEPTH
/* Budget of block products before dense takes over: n / 20, about what
 * dense would have cost (a product at n = 8000 takes 70 ms, dense 30 s). */
#define ITER_PRODUCTS_PER_N 20
#define ITER_MIN_PRODUCTS 50

/*
 * The randomized solver (Halko, Martinsson and Tropp 2011, algorithms 4.4
 * and 5.3, with the symmetric Kc): a sample of l = k + p columns (p =
 * max(k, RAND_MIN_OVERSAMPLE), l rounded up to a multiple of 8, at most
 * n; GEMM cost is flat in l up to about 32), Gaussian from core's PRNG
 * with the fixed seed RAND_SEED, so fits are repeatable. The number of
 * power iterations q is not fixed: how many the stated accuracy needs
 * depends on the spectrum's decay past k (measured on the first 600 or
 * all 1797 rows of digits, rbf, k 8 to 10, l = 24, the top eigenvalues
 * reach 1e-6 relative after q = 5 at gamma 0.02 but q = 9 at gamma 0.1).
 * After each product the top k Ritz pairs are tested as the iterative
 * solver's are, by their residual |Kc u - theta u| <= RAND_TOL |Kc| (from
 * the products already made: no extra pass), and the iterations stop
 * there. The residual bounds the eigenvector's error by RAND_TOL over the
 * relative gap and the eigenvalue's by its square over the gap: RAND_TOL
 * is the iterative solver's 1e-12, so eigenvalues come out at rounding
 * level and vectors within 1e-6 for relative gaps down to 1e-6 (1e-10
 * was measured too loose for the 1e-8 agreement with scikit-learn's
 * projections the other solvers meet: 1.6e-8 on digits). After
 * RAND_MAX_POWER power iterations without convergence dense takes over,
 * on the untouched Kc. Power iteration finds the largest eigenvalues in
 * magnitude: for an indefinite Kc (sigmoid) whose negative eigenvalues
 * outweigh the wanted positive ones it may miss some; use dense or
 * iterative there.
 */
#define RAND_MIN_OVERSAMPLE 10
#define RAND_TOL 1e-12
#define RAND_MAX_POWER 100
#define RAND_SEED 0x6b6d7365u /* "kmse" */

#define SQRT_HALF 0.70710678118654752

/* Block size of the iterative solver: some room beyond k so that the
 * wanted eigenvalues are separated from the first unwanted one, rounded
 * up to a multiple of 8 (GEMM cost is flat in b up to about 32 columns:
 * the n x n read dominates). */
size_t km_eig_iter_block(size_t k)
{
    size_t b = k + (k > 8 ? k : 8);
    return (b + 7) / 8 * 8;
}

/* Columns of the randomized solver's sample: k plus an oversampling of
 * max(k, RAND_MIN_OVERSAMPLE), rounded up to a multiple of 8, at most n. */
size_t km_eig_rand_width(size_t k, size_t n)
{
    size_t l = k + (k > RAND_MIN_OVERSAMPLE ? k : RAND_MIN_OVERSAMPLE);
    l = (l + 7) / 8 * 8;
    return l < n ? l : n;
}

int km_eig_use_iterative(size_t n, size_t k, km_kpca_solver s)
{
    if (s == KM_KPCA_SOLVER_DENSE || s == KM_KPCA_SOLVER_RANDOMIZED)
        return 0;
    /* The Krylov basis must fit well inside the space. */
    if (ITER_DEPTH * km_eig_iter_block(k) * 2 > n)
        return 0;
    if (s == KM_KPCA_SOLVER_ITERATIVE)
        return 1;
    return n >= ITER_MIN_N && k <= n / ITER_MAX_K_FRACTION;
}

/* ------------------------------------------------------------ solvers */

/*
 * Dense: the top k eigenpairs; lambda descending, U (n x k, column-major:
 * vector j is contiguous) in the same order. Destroys K.
 *
 * Not dsyevr with an index range. For a subset of the eigenpairs dsyevr
 * calls dstebz, which turns the index range n - k + 1 .. n into a value
 * interval by bisection on the whole tridiagonal T, then keeps, block by
 * block of T's splitting, the eigenvalues that fall inside it. When the
 * k-th eigenvalue lies in a cluster equal to rounding (rbf with a large
 * gamma on spread-out rows: Kc is close to I - 1/n, n - 1 eigenvalues at
 * 1, and T splits into many blocks), the blocks' counts at the interval's
 * ends disagree with the whole's and it keeps fewer than k; dsyevr then
 * loses dstebz's error code (its dstein call overwrites info) and answers
 * info 0 with fewer found (LAPACK 3.11, measured: 32 of 50 at n = 1000,
 * 12 of 100 at n = 2000). So here the same steps, with the selection by
 * index made exact:
 *   dsytrd  T = Q^T K Q, the reflectors in the stored triangle;
 *           T splits where an off-diagonal is negligible (dstebz's rule);
 *   dsterf  every block's eigenvalues (O(n^2) in all, against dsytrd's
 *           4/3 n^3);
 *   sort    the k largest: exactly k, whatever the clusters (values tied
 *           at the k-th are equal to rounding, any of them will do);
 *   dstein  their eigenvectors of T by inverse iteration, reorthogonalised
 *           within clusters (dsyevr's own step for a subset);
 *   dormtr  U = Q Z.
 * K is scaled first when its largest entry lies outside [rmin, rmax], as
 * dsyevr does, so that no step overflows or underflows. Work space beyond
 * U, at most 36 n doubles (as dsyevr's): d, e and tau with dsytrd's nb n
 * (nb = 32), then about 13 n for dsterf and dstein, then dormtr's nb k.
 */
typedef struct eig_entry {
    double value;
    lapack_int block; /* 1-based, as dstein's iblock */
    lapack_int row;   /* index in T: makes the orders total */
} eig_entry;

static int by_value_desc(const void *a, const void *b)
{
    const eig_entry *x = a, *y = b;
    if (x->value != y->value)
        return x->value > y->value ? -1 : 1;
    return (x->row > y->row) - (x->row < y->row);
}

/* dstein's order: by block, ascending within a block. */
static int by_block_asc(const void *a, const void *b)
{
    const eig_entry *x = a, *y = b;
    if (x->block != y->block)
        return x->block < y->block ? -1 : 1;
    if (x->value != y->value)
        return x->value < y->value ? -1 : 1;
    return (x->row > y->row) - (x->row < y->row);
}

static km_status lapack_failed(const char *what, lapack_int info,
                               km_error *err)
{
    if (info == LAPACK_WORK_MEMORY_ERROR)
        return km_error_set(err, KM_ENOMEM,
                            "out of memory for the eigensolver");
    if (info > 0) /* an iteration that did not converge */
        return km_error_set(err, KM_ENOCONV, "the dense eigensolver did "
                            "not converge (%s, info %d)", what, (int)info);
    return km_error_set(err, KM_EINTERNAL, "%s failed (info %d)", what,
                        (int)info);
}

km_status km_eig_dense(double *K, size_t n, size_t k, double *lambda,
                       double *U, double *min_eig, km_error *err)
{
    if (min_eig)
        *min_eig = NAN;
    km_status st = KM_OK;
    lapack_int info, ln = (lapack_int)n, lk = (lapack_int)k;
    double *d = malloc(n * sizeof *d), *e = malloc(n * sizeof *e);
    double *tau = malloc(n * sizeof *tau), *w = NULL, *work = NULL;
    eig_entry *all = NULL;
    lapack_int *isplit = NULL, *iblock = NULL, *iwork = NULL, *ifail = NULL;
    if (!d || !e || !tau) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for the eigensolver");
        goto out;
    }
    /* dsyevr's scaling bounds: rmin = sqrt(safmin / eps), rmax =
     * min(1 / rmin, safmin^-1/4). */
    const double rmin = sqrt(DBL_MIN / DBL_EPSILON);
    const double rmax = fmin(1.0 / rmin, 1.0 / sqrt(sqrt(DBL_MIN)));
    double anrm = 0, sigma = 1;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j <= i; j++)
            anrm = fmax(anrm, fabs(K[i * n + j]));
    if (anrm > 0 && anrm < rmin)
        sigma = rmin / anrm;
    else if (anrm > rmax)
        sigma = rmax / anrm;
    if (sigma != 1)
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j <= i; j++)
                K[i * n + j] *= sigma;

    /* Row-major lower triangle == column-major upper triangle. */
    info = LAPACKE_dsytrd(LAPACK_COL_MAJOR, 'U', ln, K, ln, d, e, tau);
    if (info != 0) {
        st = lapack_failed("dsytrd", info, err);
        goto out;
    }
    /* dstein's arrays (w and iblock of size n, as documented), after
     * dsytrd's work space is gone. */
    w = calloc(n, sizeof *w);
    work = malloc(5 * n * sizeof *work);
    all = malloc(n * sizeof *all);
    isplit = malloc(n * sizeof *isplit);
    iblock = calloc(n, sizeof *iblock);
    iwork = malloc(n * sizeof *iwork);
    ifail = malloc(k * sizeof *ifail);
    if (!w || !work || !all || !isplit || !iblock || !iwork || !ifail) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for the eigensolver");
        goto out;
    }
    /* The blocks [b0, b1) of T: it splits between j - 1 and j when
     * e_{j-1}^2 < ulp^2 |d_{j-1} d_j| + safmin. isplit gets each block's
     * last row (1-based), all every block's eigenvalues (dsterf on a copy
     * of the block, in dstein's work space). */
    double *bd = work, *be = work + n;
    size_t nsplit = 0;
    for (size_t b0 = 0; b0 < n;) {
        size_t b1 = b0 + 1;
        while (b1 < n && !(fabs(d[b1] * d[b1 - 1]) * DBL_EPSILON *
                                   DBL_EPSILON + DBL_MIN >
                           e[b1 - 1] * e[b1 - 1]))
            b1++;
        isplit[nsplit++] = (lapack_int)b1;
        memcpy(bd, d + b0, (b1 - b0) * sizeof *bd);
        memcpy(be, e + b0, (b1 - b0 - 1) * sizeof *be);
        info = LAPACKE_dsterf((lapack_int)(b1 - b0), bd, be);
        if (info != 0) {
            st = lapack_failed("dsterf", info, err);
            goto out;
        }
        for (size_t i = b0; i < b1; i++)
            all[i] = (eig_entry){bd[i - b0], (lapack_int)nsplit,
                                 (lapack_int)i};
        b0 = b1;
    }
    /* The k largest, in dstein's order; the smallest, for the report of
     * a kernel that is not PSD. */
    qsort(all, n, sizeof *all, by_value_desc);
    if (min_eig)
        *min_eig = all[n - 1].value / sigma;
    qsort(all, k, sizeof *all, by_block_asc);
    for (size_t j = 0; j < k; j++) {
        w[j] = all[j].value;
        iblock[j] = all[j].block;
    }
    /* The _work forms: LAPACKE_dstein's NaN check reads n values of w,
     * LAPACKE_dormtr's the whole n x n of K, whose other triangle is never
     * written. */
    info = LAPACKE_dstein_work(LAPACK_COL_MAJOR, ln, d, e, lk, w, iblock,
                               isplit, U, ln, work, iwork, ifail);
    if (info != 0) {
        st = lapack_failed("dstein", info, err);
        goto out;
    }
    free(work); /* dormtr's work space in their place */
    free(all);
    free(iwork);
    free(iblock);
    free(isplit);
    all = NULL;
    iwork = iblock = isplit = NULL;
    double query = 0;
    info = LAPACKE_dormtr_work(LAPACK_COL_MAJOR, 'L', 'U', 'N', ln, lk, K, ln,
                               tau, U, ln, &query, -1);
    lapack_int lwork = query > 1 ? (lapack_int)query : 1;
    work = info == 0 ? malloc((size_t)lwork * sizeof *work) : NULL;
    if (info == 0 && !work)
        info = LAPACK_WORK_MEMORY_ERROR;
    if (info == 0)
        info = LAPACKE_dormtr_work(LAPACK_COL_MAJOR, 'L', 'U', 'N', ln, lk, K,
                                   ln, tau, U, ln, work, lwork);
    if (info != 0) {
        st = lapack_failed("dormtr", info, err);
        goto out;
    }
    /* Descending, vectors with their values (selection: at most k swaps),
     * unscaled. */
    for (size_t j = 0; j < k; j++) {
        size_t best = j;
        for (size_t i = j + 1; i < k; i++)
            if (w[i] > w[best])
                best = i;
        if (best != j) {
            double t = w[j];
            w[j] = w[best];
            w[best] = t;
            cblas_dswap((int)n, U + j * n, 1, U + best * n, 1);
        }
        lambda[j] = w[j] / sigma;
    }
out:
    free(ifail);
    free(iwork);
    free(iblock);
    free(isplit);
    free(all);
    free(work);
    free(w);
    free(tau);
    free(e);
    free(d);
    return st;
}

/*
 * W (n x b) = K V for the symmetric K of which only the column-major upper
 * triangle (row-major lower) is stored, by panels of PANEL columns: for
 * the panel [j0, j1), its diagonal block by DSYMM, and the block
 * A = K[0:j0, j0:j1] above it twice, by DGEMM, as W[0:j0] += A V[j0:j1]
 * and W[j0:j1] += A^T V[0:j0] while A is still in cache. One DSYMM over
 * the whole triangle costs 1.5x this: OpenBLAS rebuilds the full matrix
 * from the triangle in every call, a strided copy that took 45% of an
 * n = 8000 fit (perf). Measured at n = 8000, 24 columns, seconds per
 * product: panels of 32, 64, 128, 256, 512 columns 0.086, 0.072, 0.067,
 * 0.065, 0.067; DGEMM on both triangles 0.067 (which would need them
 * filled: 0.4 s and twice the touched memory); DSYMM 0.087.
 */
#define PANEL 256
static void sym_product(const double *K, size_t n, size_t b, const double *V,
                        double *W)
{
    int ln = (int)n, lb = (int)b;
    for (size_t j0 = 0; j0 < n; j0 += PANEL) {
        int h = (int)(n - j0 < PANEL ? n - j0 : PANEL), m = (int)j0;
        const double *A = K + j0 * n;
        cblas_dsymm(CblasColMajor, CblasLeft, CblasUpper, h, lb, 1.0, A + j0,
                    ln, V + j0, ln, 0.0, W + j0, ln);
        if (j0 == 0)
            continue;
        cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, m, lb, h, 1.0,
                    A, ln, V + j0, ln, 1.0, W, ln);
        cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, h, lb, m, 1.0, A,
                    ln, V, ln, 1.0, W + j0, ln);
    }
}

/* The work space of the iterative solver; all blocks column-major with
 * leading dimension n. */
typedef struct lanczos {
    const double *K;   /* the centered n x n matrix (lower triangle) */
    size_t n, k, b, m; /* sizes: wanted, block, basis (ITER_DEPTH b) */
    double *Q, *AQ;    /* n x m basis and K times it */
    double *Y, *AY;    /* n x b Ritz vectors and K times them */
    double *H;         /* m x m projected matrix Q^T K Q */
    double *E;         /* m x m eigenvectors of its leading part */
    double *theta;     /* m Ritz values, ascending */
    double *S;         /* m x b wanted eigenvectors of H, descending */
    double *C;         /* m x b projection coefficients */
    double *tau;       /* b Householder scalars */
    double *rdiag;     /* b |diagonal of R| of the last QR */
    km_rng g;            /* start and replacement vectors */
    double norm;             /* estimate of |Kc| from the Ritz values */
    size_t products, budget; /* K times a block: done, allowed */
} lanczos;

/* W (n x b) = K V: one pass over K's stored triangle (sym_product). */
static void product(lanczos *L, const double *V, double *W)
{
    sym_product(L->K, L->n, L->b, V, W);
    L->products++;
}

/* W -= Q[:, :mq] (Q[:, :mq]^T W), classical Gram-Schmidt with GEMM. */
static void project_out(lanczos *L, size_t mq, double *W)
{
    if (mq == 0)
        return;
    int n = (int)L->n, b = (int)L->b;
    cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, (int)mq, b, n, 1.0,
                L->Q, n, W, n, 0.0, L->C, (int)mq);
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, n, b, (int)mq,
                -1.0, L->Q, n, L->C, (int)mq, 1.0, W, n);
}

/* Householder QR of W; W becomes the orthonormal factor, rdiag gets the
 * magnitudes of R's diagonal. */
static km_status qr(lanczos *L, double *W, km_error *err)
{
    int n = (int)L->n, b = (int)L->b;
    lapack_int info = LAPACKE_dgeqrf(LAPACK_COL_MAJOR, n, b, W, n, L->tau);
    if (info == 0) {
        for (int j = 0; j < b; j++)
            L->rdiag[j] = fabs(W[(size_t)j * L->n + (size_t)j]);
        info = LAPACKE_dorgqr(LAPACK_COL_MAJOR, n, b, b, W, n, L->tau);
    }
    if (info != 0)
        return info == LAPACK_WORK_MEMORY_ERROR
                   ? km_error_set(err, KM_ENOMEM,
                                  "out of memory for the eigensolver")
                   : km_error_set(err, KM_EINTERNAL, "QR failed (info %d)",
                                  (int)info);
    return KM_OK;
}

/*
 * Makes the block W (n x b) orthonormal and orthogonal to Q[:, :mq]:
 * Gram-Schmidt twice and QR, then Gram-Schmidt and QR once more, which
 * removes what cancellation in the first QR left along Q.
 *
 * A column may come out of the first QR as noise: the block was
 * (numerically) in the span so far, an invariant subspace was found. Noise
 * is as good a new direction as any, so nothing is discarded there; in
 * particular a tiny column is not noise but the residual of a nearly
 * converged vector, and the QR has already removed its direction from the
 * other columns, so dropping it would drop what they share (measured: it
 * stalls convergence at 1e-8). Only in the second pass, where the columns
 * are unit vectors, is a column that loses more than 1/sqrt(2) of its
 * norm to Q replaced by a random unit vector, and the pass repeated.
 */
static km_status orthonormalize(lanczos *L, size_t mq, double *W,
                                km_error *err)
{
    size_t n = L->n, b = L->b;
    km_status st;
    project_out(L, mq, W);
    project_out(L, mq, W);
    if ((st = qr(L, W, err)) != KM_OK)
        return st;
    for (int attempt = 0;; attempt++) {
        project_out(L, mq, W);
        if ((st = qr(L, W, err)) != KM_OK)
            return st;
        int junk = 0;
        for (size_t j = 0; j < b; j++)
            if (!(L->rdiag[j] > SQRT_HALF)) {
                double *w = W + j * n, s = 0;
                junk = 1;
                for (size_t i = 0; i < n; i++) {
                    w[i] = km_rng_uniform(&L->g);
                    s += w[i] * w[i];
                }
                cblas_dscal((int)n, 1.0 / sqrt(s), w, 1);
            }
        if (!junk)
            return KM_OK;
        if (attempt == 3)
            return km_error_set(err, KM_ENOCONV,
                                "the Krylov basis cannot be extended");
    }
}

/*
 * Rayleigh-Ritz on the basis Q[:, :cur]: H gains the columns of the block
 * that ends at cur (H is symmetric, so its rows too), its leading part is
 * diagonalised, and Y, AY get the b best Ritz vectors and their products
 * (as combinations of the stored products, without a pass over K).
 */
static km_status rayleigh_ritz(lanczos *L, size_t cur, km_error *err)
{
    size_t n = L->n, b = L->b, m = L->m;
    size_t j0 = cur - b;
    cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, (int)cur, (int)b,
                (int)n, 1.0, L->Q, (int)n, L->AQ + j0 * n, (int)n, 0.0,
                L->H + j0 * m, (int)m);
    /* The new columns' upper part is their rows too; within the new
     * diagonal block both halves are computed, and averaged. */
    for (size_t j = j0; j < cur; j++)
        for (size_t i = 0; i < j; i++) {
            double a = i < j0 ? L->H[j * m + i]
                              : 0.5 * (L->H[j * m + i] + L->H[i * m + j]);
            L->H[j * m + i] = L->H[i * m + j] = a;
        }
    for (size_t j = 0; j < cur; j++)
        memcpy(L->E + j * cur, L->H + j * m, cur * sizeof *L->E);
    lapack_int info = LAPACKE_dsyev(LAPACK_COL_MAJOR, 'V', 'U',
                                    (lapack_int)cur, L->E, (lapack_int)cur,
                                    L->theta);
    if (info != 0)
        return km_error_set(err, info == LAPACK_WORK_MEMORY_ERROR
                                     ? KM_ENOMEM
                                     : KM_EINTERNAL,
                            "dsyev failed (info %d)", (int)info);
    /* |Kc| >= the Ritz values at either end: the tolerance's scale. */
    L->norm = fmax(fabs(L->theta[0]), fabs(L->theta[cur - 1]));
    /* Descending; theta follows so that theta[j] belongs to Y[:, j]. */
    for (size_t j = 0; j < b; j++)
        memcpy(L->S + j * cur, L->E + (cur - 1 - j) * cur,
               cur * sizeof *L->S);
    for (size_t j = 0; j < b; j++)
        L->theta[j] = L->theta[cur - 1 - j];
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)b,
                (int)cur, 1.0, L->Q, (int)n, L->S, (int)cur, 0.0, L->Y,
                (int)n);
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)b,
                (int)cur, 1.0, L->AQ, (int)n, L->S, (int)cur, 0.0, L->AY,
                (int)n);
    return KM_OK;
}

/* The largest residual |K y_j - theta_j y_j| of the k wanted Ritz pairs. */
static double worst_residual(const lanczos *L)
{
    size_t n = L->n;
    double worst = 0;
    for (size_t j = 0; j < L->k; j++) {
        double t = L->theta[j], s = 0;
        const double *y = L->Y + j * n, *ay = L->AY + j * n;
        for (size_t i = 0; i < n; i++)
            s += (ay[i] - t * y[i]) * (ay[i] - t * y[i]);
        s = sqrt(s);
        worst = s > worst ? s : worst;
    }
    return worst;
}

/* Starts the basis over from Y, AY (orthonormal, and K times them). */
static void restart(lanczos *L)
{
    size_t n = L->n, b = L->b, m = L->m;
    memcpy(L->Q, L->Y, n * b * sizeof *L->Q);
    memcpy(L->AQ, L->AY, n * b * sizeof *L->AQ);
    cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, (int)b, (int)b,
                (int)n, 1.0, L->Q, (int)n, L->AQ, (int)n, 0.0, L->H, (int)m);
}

/*
 * The top k eigenpairs by restarted block Lanczos. The basis Q grows one
 * block at a time: K times the newest block, orthogonalised against all
 * before it, with its product stored in AQ. After each block, Rayleigh-Ritz
 * gives Ritz pairs and their residuals; when the basis is full it starts
 * over from the b best Ritz vectors Y, whose products K Y are known as
 * combinations of AQ, so a restart costs no pass over K.
 *
 * So AY is K Y up to the rounding of the combinations made since the last
 * true product: about restarts * m * eps |K|, which for DRIFT_CYCLES
 * restarts is far below the tolerance (4 * 160 * 1.1e-16 = 7e-14 against
 * 1e-12). The residual test is then a test on K itself; after more
 * restarts a converged result is confirmed with a fresh product first.
 * KM_ENOCONV when the budget of products runs out.
 */
#define DRIFT_CYCLES 4

static km_status solve_iterative(lanczos *L, const km_fit_control *ctl,
                                 double *lambda, double *U, km_error *err)
{
    size_t n = L->n, b = L->b, m = L->m, k = L->k, cur = b;
    km_status st;
    double res0 = 0, reached = 0.2;
    int drift = 0; /* restarts since AY was a true product */

    for (size_t i = 0; i < n * b; i++)
        L->Y[i] = km_rng_uniform(&L->g);
    if ((st = orthonormalize(L, 0, L->Y, err)) != KM_OK)
        return st;
    product(L, L->Y, L->AY);
    restart(L);

    for (;;) {
        double *W = L->Q + cur * n;
        memcpy(W, L->AQ + (cur - b) * n, n * b * sizeof *W);
        if ((st = orthonormalize(L, cur, W, err)) != KM_OK)
            return st;
        product(L, W, L->AQ + cur * n);
        cur += b;
        if ((st = rayleigh_ritz(L, cur, err)) != KM_OK)
            return st;

        double tol = ITER_TOL * L->norm;
        double worst = worst_residual(L);
        if (!(worst > tol) && drift > DRIFT_CYCLES) {
            product(L, L->Y, L->AY);
            drift = -1; /* the restart below makes it 0 */
            worst = worst_residual(L);
            cur = m; /* continue from the true products */
        }
        if (!(worst > tol)) {
            memcpy(lambda, L->theta, k * sizeof *lambda);
            memcpy(U, L->Y, n * k * sizeof *U);
            return KM_OK;
        }
        if (!isfinite(worst))
            return km_error_set(err, KM_EPROBLEM,
                                "the kernel matrix has values that are not "
                                "finite numbers");
        if (cur + b > m) {
            restart(L);
            cur = b;
            drift++;
        }
        /* Progress from 0.2 to 0.9 with the digits gained. */
        if (res0 == 0)
            res0 = worst;
        double f = 0.2 + 0.7 * log(res0 / worst) / log(res0 / tol + 1.0);
        reached = f > reached && f < 0.9 ? f : reached;
        if (km_progress(ctl, reached))
            return km_error_set(err, KM_ECANCELLED, "fit cancelled");
        if (L->products >= L->budget)
            return km_error_set(err, KM_ENOCONV,
                                "block Lanczos did not converge in %zu "
                                "products", L->products);
    }
}

static void lanczos_cleanup(lanczos *L)
{
    free(L->Q);
    free(L->AQ);
    free(L->Y);
    free(L->AY);
    free(L->H);
    free(L->E);
    free(L->theta);
    free(L->S);
    free(L->C);
    free(L->tau);
    free(L->rdiag);
}

static km_status lanczos_init(lanczos *L, const double *K, size_t n,
                              size_t k, km_error *err)
{
    memset(L, 0, sizeof *L);
    L->K = K;
    L->n = n;
    L->k = k;
    L->b = km_eig_iter_block(k);
    L->m = ITER_DEPTH * L->b;
    L->budget = n / ITER_PRODUCTS_PER_N;
    if (L->budget < ITER_MIN_PRODUCTS)
        L->budget = ITER_MIN_PRODUCTS;
    L->g.s = 0; /* a fixed seed: fits are repeatable */
    size_t b = L->b, m = L->m;
    L->Q = malloc(n * m * sizeof *L->Q);
    L->AQ = malloc(n * m * sizeof *L->AQ);
    L->Y = malloc(n * b * sizeof *L->Y);
    L->AY = malloc(n * b * sizeof *L->AY);
    L->H = malloc(m * m * sizeof *L->H);
    L->E = malloc(m * m * sizeof *L->E);
    L->theta = malloc(m * sizeof *L->theta);
    L->S = malloc(m * b * sizeof *L->S);
    L->C = malloc(m * b * sizeof *L->C);
    L->tau = malloc(b * sizeof *L->tau);
    L->rdiag = malloc(b * sizeof *L->rdiag);
    if (!L->Q || !L->AQ || !L->Y || !L->AY || !L->H || !L->E || !L->theta ||
        !L->S || !L->C || !L->tau || !L->rdiag) {
        lanczos_cleanup(L);
        return km_error_set(err, KM_ENOMEM,
                            "out of memory for the eigensolver");
    }
    return KM_OK;
}

/* ------------------------------------------------------------ randomized */

/* A standard normal draw (Marsaglia's polar method on km_rng_uniform). */
static double rng_gauss(km_rng *g)
{
    double u, v, s;
    do {
        u = km_rng_uniform(g);
        v = km_rng_uniform(g);
        s = u * u + v * v;
    } while (s >= 1.0 || s == 0.0);
    return u * sqrt(-2.0 * log(s) / s);
}

/* W (n x l) = K V, one pass over the stored triangle. */
static void rand_product(const double *K, size_t n, size_t l, const double *V,
                         double *W, size_t *products)
{
    sym_product(K, n, l, V, W);
    (*products)++;
}

/*
 * The top k eigenpairs of K (n x n, the centered Gram, only read) by the
 * randomized range finder with power iterations (see RAND_* above):
 *
 *   W = K Omega; repeat { Q = qr(W); W = K Q; B = Q^T W;
 *                         Ritz pairs (theta, S) of B, U = Q S;
 *                         stop when |W s_j - theta_j u_j| <= tol }
 *
 * lambda descending, U (n x k, column-major) as km_eig_dense's. *products
 * counts the passes over K (q power iterations take q + 2). KM_ENOCONV
 * after RAND_MAX_POWER power iterations; KM_ECANCELLED when ctl asks,
 * checked after each.
 */
static km_status solve_randomized(const double *K, size_t n, size_t k,
                                  const km_fit_control *ctl, double *lambda,
                                  double *U, size_t *products, km_error *err)
{
    size_t l = km_eig_rand_width(k, n);
    km_status st = KM_OK;
    km_rng g = {RAND_SEED};
    double res0 = 0, reached = 0.2;
    double *Q = malloc(n * l * sizeof *Q), *W = malloc(n * l * sizeof *W);
    double *R = malloc(n * k * sizeof *R), *B = malloc(l * l * sizeof *B);
    double *Z = malloc(l * l * sizeof *Z), *theta = malloc(l * sizeof *theta);
    double *S = malloc(l * k * sizeof *S), *tau = malloc(l * sizeof *tau);
    lapack_int *isuppz = malloc(2 * l * sizeof *isuppz);
    if (!Q || !W || !R || !B || !Z || !theta || !S || !tau || !isuppz) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for the eigensolver");
        goto out;
    }
    for (size_t i = 0; i < n * l; i++)
        Q[i] = rng_gauss(&g);
    rand_product(K, n, l, Q, W, products);

    for (size_t power = 0;; power++) {
        /* Q = orth(W): Householder QR keeps Q orthonormal even when W is
         * rank-deficient (a kernel of rank below l). */
        memcpy(Q, W, n * l * sizeof *Q);
        lapack_int info = LAPACKE_dgeqrf(LAPACK_COL_MAJOR, (lapack_int)n,
                                         (lapack_int)l, Q, (lapack_int)n, tau);
        if (info == 0)
            info = LAPACKE_dorgqr(LAPACK_COL_MAJOR, (lapack_int)n,
                                  (lapack_int)l, (lapack_int)l, Q,
                                  (lapack_int)n, tau);
        if (info != 0) {
            st = info == LAPACK_WORK_MEMORY_ERROR
                     ? km_error_set(err, KM_ENOMEM,
                                    "out of memory for the eigensolver")
                     : km_error_set(err, KM_EINTERNAL, "QR failed (info %d)",
                                    (int)info);
            goto out;
        }
        rand_product(K, n, l, Q, W, products);
        /* B = Q^T K Q, symmetrised; all its l eigenpairs (ascending). */
        cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, (int)l, (int)l,
                    (int)n, 1.0, Q, (int)n, W, (int)n, 0.0, B, (int)l);
        for (size_t j = 0; j < l; j++)
            for (size_t i = 0; i < j; i++)
                B[j * l + i] = B[i * l + j] =
                    0.5 * (B[j * l + i] + B[i * l + j]);
        lapack_int found = 0;
        info = LAPACKE_dsyevr(LAPACK_COL_MAJOR, 'V', 'A', 'U', (lapack_int)l,
                              B, (lapack_int)l, 0.0, 0.0, 0, 0, 0.0, &found,
                              theta, Z, (lapack_int)l, isuppz);
        if (info != 0 || (size_t)found != l) {
            st = info == LAPACK_WORK_MEMORY_ERROR
                     ? km_error_set(err, KM_ENOMEM,
                                    "out of memory for the eigensolver")
                     : km_error_set(err, KM_EINTERNAL,
                                    "dsyevr failed (info %d)", (int)info);
            goto out;
        }
        /* |K| >= the Ritz values at either end: the tolerance's scale. */
        double norm = fmax(fabs(theta[0]), fabs(theta[l - 1]));
        /* The top k, descending: S (l x k), lambda; U = Q S, R = W S. */
        for (size_t j = 0; j < k; j++) {
            memcpy(S + j * l, Z + (l - 1 - j) * l, l * sizeof *S);
            lambda[j] = theta[l - 1 - j];
        }
        cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)k,
                    (int)l, 1.0, Q, (int)n, S, (int)l, 0.0, U, (int)n);
        cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)k,
                    (int)l, 1.0, W, (int)n, S, (int)l, 0.0, R, (int)n);
        double worst = 0;
        for (size_t j = 0; j < k; j++) {
            const double *u = U + j * n, *r = R + j * n;
            double s = 0;
            for (size_t i = 0; i < n; i++)
                s += (r[i] - lambda[j] * u[i]) * (r[i] - lambda[j] * u[i]);
            s = sqrt(s);
            worst = s > worst || isnan(s) ? s : worst;
        }
        double tol = RAND_TOL * norm;
        if (!isfinite(worst)) {
            st = km_error_set(err, KM_EPROBLEM, "the kernel matrix has values "
                              "that are not finite numbers");
            goto out;
        }
        if (!(worst > tol))
            goto out; /* converged: lambda and U are the result */
        /* Progress from 0.2 to 0.9 with the digits gained. */
        if (res0 == 0)
            res0 = worst;
        double f = 0.2 + 0.7 * log(res0 / worst) / log(res0 / tol + 1.0);
        reached = f > reached && f < 0.9 ? f : reached;
        if (km_progress(ctl, reached)) {
            st = km_error_set(err, KM_ECANCELLED, "fit cancelled");
            goto out;
        }
        if (power >= RAND_MAX_POWER) {
            st = km_error_set(err, KM_ENOCONV,
                              "the randomized range finder did not converge "
                              "in %d power iterations", RAND_MAX_POWER);
            goto out;
        }
    }
out:
    free(isuppz);
    free(tau);
    free(S);
    free(theta);
    free(Z);
    free(B);
    free(R);
    free(W);
    free(Q);
    return st;
}

/* ------------------------------------------------------------ choice */

km_status km_eig_top(double *K, size_t n, size_t nc, km_kpca_solver s,
                     const km_fit_control *ctl, double *lambda, double *U,
                     int *solver, int *fallback, size_t *products,
                     double *min_eig, km_error *err)
{
    km_status st = KM_OK;
    *solver = KM_KPCA_SOLVER_DENSE;
    *min_eig = NAN;
    if (s == KM_KPCA_SOLVER_RANDOMIZED) {
        st = solve_randomized(K, n, nc, ctl, lambda, U, products, err);
        if (st == KM_OK)
            *solver = KM_KPCA_SOLVER_RANDOMIZED;
    } else if (km_eig_use_iterative(n, nc, s)) {
        lanczos L;
        if ((st = lanczos_init(&L, K, n, nc, err)) != KM_OK)
            return st;
        st = solve_iterative(&L, ctl, lambda, U, err);
        *products = L.products;
        lanczos_cleanup(&L);
        if (st == KM_OK)
            *solver = KM_KPCA_SOLVER_ITERATIVE;
    }
    if (st == KM_ENOCONV)
        *fallback = 1;
    else if (st != KM_OK)
        return st;
    if (*solver == KM_KPCA_SOLVER_DENSE)
        st = km_eig_dense(K, n, nc, lambda, U, min_eig, err);
    return st;
}

/* ------------------------------------------------------------ centering, signs */

/*
 * Centers the symmetric K (n x n, lower triangle of the row-major buffer)
 * in place; col_mean gets the column means, *grand their mean, *trace the
 * trace of the centered matrix. Two passes over the triangle: the column
 * sums (each stored entry counts for its row and its column), then the
 * update.
 */
void km_eig_center(double *K, size_t n, double *col_mean, double *grand,
                   double *trace)
{
    double g = 0, tr = 0;
    memset(col_mean, 0, n * sizeof *col_mean);
    for (size_t i = 0; i < n; i++) {
        const double *row = K + i * n;
        double s = 0;
        for (size_t j = 0; j < i; j++) {
            s += row[j];
            col_mean[j] += row[j];
        }
        col_mean[i] += s + row[i];
    }
    for (size_t i = 0; i < n; i++) {
        col_mean[i] /= (double)n;
        g += col_mean[i];
    }
    g /= (double)n;
    for (size_t i = 0; i < n; i++) {
        double *row = K + i * n;
        const double a = g - col_mean[i];
        for (size_t j = 0; j <= i; j++)
            row[j] += a - col_mean[j];
        tr += row[i];
    }
    *grand = g;
    *trace = tr;
}

/* Flips each column of U (n x k, column-major) so that its entry of
 * largest magnitude (the first, on ties) is positive. */
void km_eig_flip_signs(double *U, size_t n, size_t k)
{
    for (size_t j = 0; j < k; j++) {
        double *u = U + j * n;
        size_t best = 0;
        for (size_t i = 1; i < n; i++)
            if (fabs(u[i]) > fabs(u[best]))
                best = i;
        if (u[best] < 0)
            for (size_t i = 0; i < n; i++)
                u[i] = -u[i];
    }
}
