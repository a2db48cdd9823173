/*
 * km_nystrom.c - the Nystrom toolkit the algorithms' nystrom solvers
 * share: the centre rules' names, how many centres, their checks, the
 * centres by rule (a seeded uniform draw, or randomly pivoted Cholesky's
 * pivots and factor), the centres' rows, the K_mm factor with its
 * smallest working shift, and the sizes of K_nm's row blocks and of what
 * picking the centres holds.
 *
 * Thread-safety: reentrant.
 */
#include <cblas.h>
#include <lapacke.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../base/km_base_internal.h"
#include "../kernels/km_kernel_internal.h"
#include "km_solvers_internal.h"

/* The centre rules' names (km_krr_centre_rule, every nystrom solver's
 * params.centres). */
KM_CHOICES_DEFINE(km_krr_centres_choices, KM_KRR_CENTRES_MAP,
                  KM_KRR_CENTRES_COUNT);

const char *km_krr_centres_name(km_krr_centre_rule c)
{
    return km_choice_name(&km_krr_centres_choices, (int)c);
}

size_t km_nys_n_centres(size_t asked, size_t n)
{
    if (asked)
        return asked;
    /* Falkon's m of the order of sqrt(n) log n, within [1000, 10000] */
    double c = ceil(sqrt((double)n) * log(n > 1 ? (double)n : 1.0));
    size_t m = c < KM_KRR_DEFAULT_CENTRES       ? KM_KRR_DEFAULT_CENTRES
               : c > KM_KRR_MAX_DEFAULT_CENTRES ? KM_KRR_MAX_DEFAULT_CENTRES
                                                : (size_t)c;
    return n < m ? n : m;
}

km_status km_nys_check_params(km_krr_centre_rule centres, double cg_tol,
                              size_t cg_max_iter, uint64_t seed,
                              km_error *err)
{
    km_status st = km_nys_check_rule(centres, err);
    if (st != KM_OK)
        return st;
    if (!(cg_tol > 0) || !isfinite(cg_tol))
        return km_error_set(err, KM_EINVAL,
                            "params.cg_tol must be a finite number > 0");
    if (cg_max_iter < 1)
        return km_error_set(err, KM_EINVAL,
                            "params.cg_max_iter must be at least 1");
    if (seed > ((uint64_t)1 << 53))
        return km_error_set(err, KM_EINVAL,
                            "params.seed must be at most 2^53");
    return KM_OK;
}

km_status km_nys_check_centres(size_t n_centres, size_t n_samples,
                               km_error *err)
{
    if (n_centres > n_samples)
        return km_error_set(err, KM_EPROBLEM,
                            "params.n_centres is %zu but X has %zu rows: "
                            "at most one centre per row", n_centres,
                            n_samples);
    return KM_OK;
}

/* Values of K_nm a nystrom fit holds at once: rows per block. */
#define NYS_BLOCK_VALUES ((size_t)1 << 21)

size_t km_nys_block_rows(size_t n, size_t m)
{
    size_t b = NYS_BLOCK_VALUES / (m ? m : 1);
    b = b < 1 ? 1 : b;
    return b < n ? b : n;
}

/* Proposals per round of rpcholesky's rejection sampling. */
#define RPC_BLOCK 64

/* Doubles randomly pivoted Cholesky holds beside its n x m factor: the
 * residual diagonal, its running sums and X's norms (n each), the
 * proposals' rows, their residual block twice and their rows of F, the
 * accepted ones' rows of F. */
static size_t rpc_work_values(size_t n, size_t d, size_t m)
{
    return km_add_sat(km_mul_sat(n, 3),
                      km_mul_sat(RPC_BLOCK, 2 * RPC_BLOCK + d + 2 * m));
}

size_t km_nys_centres_values(size_t n, size_t d, size_t m,
                             km_krr_centre_rule rule)
{
    if (rule != KM_KRR_CENTRES_RPCHOLESKY)
        return 0;
    /* km_krr_rpcholesky: the n x m factor F and its workspace */
    return km_add_sat(km_mul_sat(n, m), rpc_work_values(n, d, m));
}

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

void km_krr_draw_centres(uint64_t seed, size_t n, size_t m, size_t *idx)
{
    km_rng r = {seed};
    for (size_t i = 0; i < n; i++)
        idx[i] = i;
    for (size_t i = 0; i < m && i + 1 < n; i++) {
        size_t j = i + km_rng_below(&r, n - i), t = idx[i];
        idx[i] = idx[j];
        idx[j] = t;
    }
    qsort(idx, m, sizeof *idx, cmp_size);
}

km_status km_nys_pick(const km_kernel *k, const double *X, size_t n,
                      size_t d, const size_t *given, km_krr_centre_rule rule,
                      uint64_t seed, size_t *m, double *Z,
                      const km_fit_control *ctl, double f0, double f1,
                      km_error *err)
{
    size_t *idx = malloc(n * sizeof *idx);
    if (!idx)
        return km_error_set(err, KM_ENOMEM, "out of memory for %zu centres",
                            *m);
    km_status st = KM_OK;
    if (given)
        memcpy(idx, given, *m * sizeof *idx);
    else
        st = km_nys_centres(k, rule, seed, X, n, d, *m, idx, m, NULL, ctl,
                            f0, f1, err);
    for (size_t i = 0; st == KM_OK && i < *m; i++)
        memcpy(Z + i * d, X + idx[i] * d, d * sizeof *X);
    free(idx);
    return st;
}

/* F's next t columns, column-major F (n x m, leading dimension n), from
 * the accepted rows XP (t x d), their rows of F so far FT (t x s) and L:
 * G = K(:, T) - F F(T, :)^T, then G L^-T. */
static km_status rpc_extend_cols(const km_kernel *k, const double *X,
                                 const double *xn, size_t n, size_t d,
                                 size_t s, size_t t, const double *XP,
                                 const double *FT, const double *L, double *F,
                                 km_error *err)
{
    double *Fn = F + s * n;
    /* column-major n x t is row-major t x n: k(x_T, X) */
    km_status st = km_gram_cross_sn(k, XP, t, X, n, xn, d, Fn, n, err);
    if (st != KM_OK)
        return st;
    if (s)
        /* FT row-major t x s is column-major s x t: F(T, :)^T */
        cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)n,
                    (int)t, (int)s, -1.0, F, (int)n, FT, (int)s, 1.0, Fn,
                    (int)n);
    cblas_dtrsm(CblasColMajor, CblasRight, CblasLower, CblasTrans,
                CblasNonUnit, (int)n, (int)t, 1.0, L, (int)t, Fn, (int)n);
    return KM_OK;
}

/* The same for row-major F (n x m, leading dimension m): columns s ..
 * s + t of every row. */
static km_status rpc_extend_rows(const km_kernel *k, const double *X,
                                 size_t n, size_t d, size_t m, size_t s,
                                 size_t t, const double *XP, const double *FT,
                                 const double *L, double *F, km_error *err)
{
    double *Fn = F + s;
    km_status st = km_gram_cross_sn(k, X, n, XP, t, NULL, d, Fn, m, err);
    if (st != KM_OK)
        return st;
    if (s)
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)n, (int)t,
                    (int)s, -1.0, F, (int)m, FT, (int)s, 1.0, Fn, (int)m);
    /* Fn (row-major n x t) is column-major t x n, Fn^T: L^-1 Fn^T */
    cblas_dtrsm(CblasColMajor, CblasLeft, CblasLower, CblasNoTrans,
                CblasNonUnit, (int)t, (int)n, 1.0, L, (int)t, Fn, (int)m);
    return KM_OK;
}

/*
 * Randomly pivoted Cholesky (Chen, Epperly, Tropp and Webber, "Randomly
 * pivoted Cholesky: practical approximation of a kernel matrix with few
 * entry evaluations", 2022), accelerated by rejection sampling (Epperly,
 * Tropp and Webber, "Embrace rejection: kernel matrix approximation by
 * accelerated randomly pivoted Cholesky", 2024).
 *
 * The definition: F = 0 (n x 0), r = diag K; for i = 1 .. m, draw s with
 * probability r_s / sum(r), g = K(:, s) - F F(s, :)^T, append the column
 * g / sqrt(g_s) to F, r := max(r - (that column)^2, 0). Then F F^T is a
 * Nystrom approximation of K on the pivots, and r the diagonal of the
 * residual K - F F^T.
 *
 * The accelerated form draws RPC_BLOCK proposals p_1 .. p_b at once from
 * r / sum(r) and accepts them in order: with H the residual on the
 * proposals, K(P, P) - F(P, :) F(P, :)^T, proposal j is accepted with
 * probability h_jj / r_pj, where h_jj is its residual given the pivots
 * accepted before it in this round (H after the Schur complements of
 * those). Since that residual is the diagonal the sequential algorithm
 * would draw from next, and h_jj <= r_pj, each accepted pivot is an
 * exact draw of the sequential algorithm (rejection sampling). The
 * accepted block T then extends F by G L^-T, G = K(:, T) - F F(T, :)^T
 * and L L^T = H(T, T) (L from the same Schur complements), one kernel
 * block and one GEMM per round instead of m matrix-vector products.
 *
 * The draws, from one km_rng seeded with seed (tests/fixtures/
 * gen_rpcholesky_refs.py draws the same): per round, b values
 * u = (1 + km_rng_uniform) / 2 in [0, 1), proposal j being the first i
 * whose running sum r_0 + .. + r_i exceeds u times the total (the last
 * row of nonzero r if rounding leaves none); then, for each proposal in
 * turn while fewer than m pivots are held, one more u, and acceptance
 * when u r_pj < h_jj and the proposal is not already accepted this
 * round. r of a pivot is set to 0, so it is never proposed again. The
 * rounds stop at m pivots, or when sum(r) is at most 1e-12 of trace(K)
 * (K's numerical rank is reached: *kept < m).
 *
 * piv gets the pivots in the order chosen (m entries of room), *kept
 * their number. k is the resolved kernel. Progress goes from f0 to f1 by
 * the pivots held. Memory: km_krr_fit_bytes's rpcholesky share.
 */
/* F's layout: column-major n x m (krr's, leading dimension n) or
 * row-major n x m (svc's features, leading dimension m); *keep, when not
 * NULL, gets F (then the caller's) instead of its being freed. */
#define FAT(i, c) (rows ? (i) * m + (c) : (c) * n + (i))
static km_status rpc_run(const km_kernel *k, const double *X, size_t n,
                         size_t d, size_t m, uint64_t seed, int rows,
                         size_t *piv, size_t *kept, double **keep,
                         const km_fit_control *ctl, double f0, double f1,
                         km_error *err)
{
    const size_t B = RPC_BLOCK;
    km_status st = KM_OK;
    size_t fb = km_mul3(n, m, sizeof(double));
    double *F = fb ? malloc(fb) : NULL;
    double *r = malloc(n * sizeof *r), *cum = malloc(n * sizeof *cum);
    double *xn = km_sqnorms(X, n, d), *XP = malloc(B * d * sizeof *XP);
    double *H = malloc(B * B * sizeof *H), *L = malloc(B * B * sizeof *L);
    double *FP = malloc(B * m * sizeof *FP), *FT = malloc(B * m * sizeof *FT);
    size_t P[RPC_BLOCK], T[RPC_BLOCK], s = 0;
    km_rng g = {seed};
    *kept = 0;
    if (!F || !r || !cum || !xn || !XP || !H || !L || !FP || !FT) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for randomly "
                          "pivoted Cholesky of %zu centres (it holds an "
                          "n x m factor: %zu x %zu)", m, n, m);
        goto out;
    }
    double tr = 0;
    for (size_t i = 0; i < n; i++) {
        double v = km_kernel_eval(k, X + i * d, X + i * d, d);
        r[i] = v > 0 ? v : 0;
        tr += r[i];
    }
    while (s < m) {
        double run = 0;
        for (size_t i = 0; i < n; i++)
            cum[i] = run += r[i];
        if (!(run > 1e-12 * tr))
            break;
        /* b proposals from r / sum(r) */
        for (size_t j = 0; j < B; j++) {
            double t = 0.5 * (1.0 + km_rng_uniform(&g)) * run;
            size_t lo = 0, hi = n; /* the first i with cum[i] > t */
            while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (cum[mid] > t)
                    hi = mid;
                else
                    lo = mid + 1;
            }
            if (lo == n)
                for (lo = n; lo-- > 0 && !(r[lo] > 0);)
                    ;
            P[j] = lo;
            memcpy(XP + j * d, X + lo * d, d * sizeof *XP);
            for (size_t c = 0; c < s; c++) /* F(P, :s), b x s row-major */
                FP[j * s + c] = F[FAT(lo, c)];
        }
        /* H = K(P, P) - F(P, :) F(P, :)^T */
        if ((st = km_gram_cross_sn(k, XP, B, XP, B, NULL, d, H, B, err)) !=
            KM_OK)
            goto out;
        if (s)
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)B,
                        (int)B, (int)s, -1.0, FP, (int)s, FP, (int)s, 1.0, H,
                        (int)B);
        /* rejection sampling in order, Schur complements of the accepted */
        size_t t = 0;
        for (size_t j = 0; j < B && s + t < m; j++) {
            double u = 0.5 * (1.0 + km_rng_uniform(&g)), h = H[j * B + j];
            int again = 0;
            for (size_t q = 0; q < t; q++)
                again |= P[T[q]] == P[j];
            if (again || !(u * r[P[j]] < h))
                continue;
            T[t++] = j;
            for (size_t a = j + 1; a < B; a++)
                for (size_t c = j + 1; c < B; c++)
                    H[a * B + c] -= H[a * B + j] * H[j * B + c] / h;
        }
        /* None accepted, so F stays as it is: the proposals' residuals r
         * take H's diagonal, the same quantity computed afresh. Where
         * rounding left r far above it (identical rows, or rows near
         * 1e150, whose kernel values round differently), the draws would
         * otherwise repeat for ever: now they accept, or the residual's
         * sum falls below the stopping rule. */
        for (size_t j = 0; t == 0 && j < B; j++)
            r[P[j]] = H[j * B + j] > 0 ? H[j * B + j] : 0;
        /* L (t x t, column-major lower) with L L^T = H(T, T) as it was:
         * column q is H(T, T_q) / sqrt(h of T_q) after the Schur
         * complements (later ones do not touch column T_q) */
        for (size_t q = 0; q < t; q++) {
            double dq = sqrt(H[T[q] * B + T[q]]);
            for (size_t a = 0; a < t; a++)
                L[q * t + a] = a < q ? 0 : a == q ? dq
                                                 : H[T[a] * B + T[q]] / dq;
        }
        /* G = K(:, T) - F F(T, :)^T into F's next t columns (column-major
         * n x t is row-major t x n: k(x_T, X)), then G L^-T */
        for (size_t q = 0; q < t; q++) {
            memcpy(XP + q * d, X + P[T[q]] * d, d * sizeof *XP);
            for (size_t c = 0; c < s; c++)
                FT[q * s + c] = F[FAT(P[T[q]], c)];
        }
        if (t && (st = rows ? rpc_extend_rows(k, X, n, d, m, s, t, XP, FT, L,
                                              F, err)
                            : rpc_extend_cols(k, X, xn, n, d, s, t, XP, FT,
                                              L, F, err)) != KM_OK)
            goto out;
        for (size_t i = 0; i < n; i++) /* in column order, either way */
            for (size_t q = 0; q < t; q++) {
                double f = F[FAT(i, s + q)], v = r[i] - f * f;
                r[i] = v > 0 ? v : 0;
            }
        for (size_t q = 0; q < t; q++) {
            piv[s + q] = P[T[q]];
            r[P[T[q]]] = 0;
        }
        s += t;
        if (km_progress(ctl, f0 + (f1 - f0) * (double)s / (double)m)) {
            st = km_error_set(err, KM_ECANCELLED, "fit cancelled");
            goto out;
        }
    }
    *kept = s;
    if (keep) {
        *keep = F;
        F = NULL;
    }
out:
    free(F);
    free(r);
    free(cum);
    free(xn);
    free(XP);
    free(H);
    free(L);
    free(FP);
    free(FT);
    return st;
}
#undef FAT

km_status km_krr_rpcholesky(const km_kernel *k, const double *X, size_t n,
                            size_t d, size_t m, uint64_t seed, size_t *piv,
                            size_t *kept, const km_fit_control *ctl,
                            double f0, double f1, km_error *err)
{
    return rpc_run(k, X, n, d, m, seed, 0, piv, kept, NULL, ctl, f0, f1,
                   err);
}

/* km_solvers_internal.h (the nystrom solvers' centres). */
km_status km_nys_centres(const km_kernel *k, km_krr_centre_rule rule,
                         uint64_t seed, const double *X, size_t n, size_t d,
                         size_t m, size_t *idx, size_t *kept, double **F,
                         const km_fit_control *ctl, double f0, double f1,
                         km_error *err)
{
    if (F)
        *F = NULL;
    if (rule == KM_KRR_CENTRES_RPCHOLESKY &&
        (n > INT_MAX || m > INT_MAX / RPC_BLOCK)) /* BLAS's ints */
        return km_error_set(err, KM_EINVAL, "params.n_centres (%zu) times "
                            "%d and the rows (%zu) must be below 2^31 for "
                            "rpcholesky centres", m, RPC_BLOCK, n);
    if (rule != KM_KRR_CENTRES_RPCHOLESKY) {
        km_krr_draw_centres(seed, n, m, idx);
        *kept = m;
        return KM_OK;
    }
    km_status st = rpc_run(k, X, n, d, m, seed, F != NULL, idx, kept, F, ctl,
                           f0, f1, err);
    if (st == KM_OK && *kept == 0) { /* a model of no rows is no model */
        st = km_error_set(err, KM_EPROBLEM, "params.centres rpcholesky finds "
                          "no centre: the kernel matrix of X is 0 in double "
                          "precision (no row has a residual above 0); use "
                          "params.centres uniform, or rescale X");
    }
    if (st != KM_OK) {
        if (F) {
            free(*F);
            *F = NULL;
        }
        return st;
    }
    if (!F) {
        qsort(idx, *kept, sizeof *idx, cmp_size);
        return KM_OK;
    }
    /* rows of m values to rows of the kept ones (never overlapping
     * forwards) */
    for (size_t i = 1; *kept < m && i < n; i++)
        memmove(*F + i * *kept, *F + i * m, *kept * sizeof **F);
    return KM_OK;
}

km_status km_nys_check_rule(km_krr_centre_rule rule, km_error *err)
{
    if ((unsigned)rule >= KM_KRR_CENTRES_COUNT) {
        char list[64];
        km_choice_list(&km_krr_centres_choices, " or ", list, sizeof list);
        return km_error_set(err, KM_EINVAL, "params.centres must be %s",
                            list);
    }
    return KM_OK;
}

size_t km_nys_rpcholesky_bytes(size_t n, size_t d, size_t m)
{
    return km_mul_sat(sizeof(double), rpc_work_values(n, d, m));
}

/* km_solvers_internal.h (also the nystrom solvers of svc and kpca). */
km_status km_nys_factor_kmm(const km_kernel *k, const double *Z, size_t m,
                            size_t d, int unshifted_first, double *T,
                            double *shift, km_error *err)
{
    double mean = 0;
    for (int tries = unshifted_first ? -1 : 0; tries < 5; tries++) {
        km_status st = km_gram_sym(k, Z, m, d, T, 1, err);
        if (st != KM_OK)
            return st;
        if (tries <= 0 && mean == 0) {
            km_ksum tr = {0, 0};
            for (size_t i = 0; i < m; i++)
                km_ksum_add(&tr, T[i * m + i]);
            mean = km_ksum_get(&tr) / (double)m;
            if (!(mean > 0) || !isfinite(mean))
                mean = 1.0;
        }
        double s = tries < 0 ? 0 : 1e-13 * (double)m * mean;
        for (int t = 0; t < tries; t++)
            s *= 1000;
        for (size_t i = 0; i < m; i++)
            T[i * m + i] += s;
        /* Symmetric: the row-major matrix is also its column-major one. */
        lapack_int info = LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'U', (lapack_int)m,
                                         T, (lapack_int)m);
        if (info < 0)
            return km_error_set(err, KM_EINTERNAL, "dpotrf argument %d",
                                (int)-info);
        if (info == 0) {
            for (size_t j = 0; j < m; j++) /* column j below the diagonal */
                memset(T + j * m + j + 1, 0, (m - j - 1) * sizeof *T);
            *shift = s;
            return KM_OK;
        }
    }
    return km_error_set(err, KM_ENOTPD, "the kernel matrix of the centres "
                        "cannot be factored even with a shift of its "
                        "diagonal: the kernel is not positive semi-definite "
                        "on them");
}
