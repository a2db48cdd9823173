/*
 * km_psd.c - the PSD report of a kernel on rows (km_kernel_psd, km_kernel.h):
 * symmetry of its Gram matrix, its extreme eigenvalues, how many are
 * negative beyond round-off, the condition number of K + alpha I and the
 * effective dimension; on a seeded subsample when the rows are many.
 *
 * Thread-safety: reentrant.
 */
#include <float.h>
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../base/km_base_internal.h"
#include "km_kernel_internal.h"

static size_t rows_cap(size_t max_rows)
{
    return max_rows ? max_rows : KM_PSD_MAX_ROWS;
}

size_t km_kernel_psd_bytes(const km_kernel *k, size_t n, size_t d,
                           size_t max_rows)
{
    size_t m = n < rows_cap(max_rows) ? n : rows_cap(max_rows);
    /* K (m x m), the eigenvalues and dsyevd's workspace (2m + 1 doubles
     * and one int without vectors), the subsample's index of all n rows
     * and its copy of m rows, and the Gram's own working memory */
    uint64_t b = km_add_sat(km_mul_sat(km_mul_sat(m, m), sizeof(double)),
                            (4 * (uint64_t)m + 8) * sizeof(double));
    b = km_add_sat(b, km_mul_sat(n, sizeof(size_t)));
    b = km_add_sat(b, km_mul_sat(km_mul_sat(m, d), sizeof(double)));
    b = km_add_sat(b, km_gram_work_bytes(k, m, m, d));
    return b > SIZE_MAX ? SIZE_MAX : (size_t)b;
}

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return (x > y) - (x < y);
}

km_status km_psd_subsample(size_t n, size_t m, uint64_t seed, size_t *idx)
{
    size_t *all = malloc(n * sizeof *all);
    if (!all)
        return KM_ENOMEM;
    for (size_t i = 0; i < n; i++)
        all[i] = i;
    km_rng r = {seed};
    for (size_t i = 0; i < m; i++) {
        size_t j = i + km_rng_below(&r, n - i), t = all[i];
        all[i] = all[j];
        all[j] = t;
    }
    qsort(all, m, sizeof *all, cmp_size);
    memcpy(idx, all, m * sizeof *idx);
    free(all);
    return KM_OK;
}

/* m of the n rows of X (km_psd_subsample) into a new m x d matrix; NULL
 * on OOM. */
static double *subsample(const double *X, size_t n, size_t d, size_t m,
                         uint64_t seed)
{
    size_t *idx = malloc(m * sizeof *idx);
    double *S = malloc(m * d * sizeof *S);
    if (!idx || !S || km_psd_subsample(n, m, seed, idx) != KM_OK) {
        free(idx);
        free(S);
        return NULL;
    }
    for (size_t i = 0; i < m; i++)
        memcpy(S + i * d, X + idx[i] * d, d * sizeof *S);
    free(idx);
    return S;
}

/* Asymmetry of the m x m K (max |K_ij - K_ji| / max |K_ij|), then K
 * replaced by its symmetric part. */
static double symmetrise(double *K, size_t m)
{
    double diff = 0, top = 0;
    for (size_t i = 0; i < m; i++) {
        double a = fabs(K[i * m + i]);
        top = a > top ? a : top;
        for (size_t j = 0; j < i; j++) {
            double u = K[i * m + j], v = K[j * m + i];
            double dv = fabs(u - v);
            diff = dv > diff ? dv : diff;
            top = fabs(u) > top ? fabs(u) : top;
            top = fabs(v) > top ? fabs(v) : top;
            K[i * m + j] = K[j * m + i] = 0.5 * (u + v);
        }
    }
    return top > 0 ? diff / top : 0;
}

double km_psd_threshold(size_t m, double top)
{
    return (double)m * DBL_EPSILON * top;
}

/* The figures of the report from the m eigenvalues w (ascending). */
static void figures(const double *w, size_t m, km_psd_report *out)
{
    double alpha = out->alpha;
    out->min_eig = w[0];
    out->max_eig = w[m - 1];
    double big = fmax(fabs(w[0]), fabs(w[m - 1]));
    out->threshold = km_psd_threshold(m, big);
    double lo = INFINITY, hi = 0, eff = 0;
    out->n_negative = 0;
    for (size_t i = 0; i < m; i++) {
        if (w[i] < -out->threshold)
            out->n_negative++;
        double s = fabs(w[i] + alpha), c = w[i] > 0 ? w[i] : 0;
        lo = s < lo ? s : lo;
        hi = s > hi ? s : hi;
        eff += c / (c + alpha);
    }
    out->condition = lo > 0 ? hi / lo : INFINITY;
    out->effective_dim = eff;
}

/* The m eigenvalues of K (m x m, its lower triangle; destroyed) into w,
 * ascending (LAPACK dsyevd, eigenvalues only). */
static km_status eigenvalues(double *K, size_t m, double *w, km_error *err)
{
    lapack_int info = LAPACKE_dsyevd(LAPACK_ROW_MAJOR, 'N', 'L',
                                     (lapack_int)m, K, (lapack_int)m, w);
    if (info != 0)
        return km_error_set(err, info > 0 ? KM_ENOCONV : KM_EINTERNAL,
                            "dsyevd failed (info %d)", (int)info);
    return KM_OK;
}

/* KM_EPROBLEM unless the m x m K is finite (all of it when full, else
 * its lower triangle). */
static km_status check_finite(const double *K, size_t m, int full,
                              km_error *err)
{
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < (full ? m : i + 1); j++)
            if (!isfinite(K[i * m + j]))
                return km_error_set(err, KM_EPROBLEM, "the Gram matrix has "
                                    "values that are not finite numbers "
                                    "(overflow); use a smaller gamma, "
                                    "degree or scale of X");
    return KM_OK;
}

km_status km_kernel_psd(const km_kernel *k, const double *X, size_t n,
                        size_t d, double alpha, uint64_t seed,
                        size_t max_rows, km_psd_report *out, km_error *err)
{
    memset(out, 0, sizeof *out);
    if (!(alpha > 0) || !isfinite(alpha))
        return km_error_set(err, KM_EINVAL, "alpha must be a finite number "
                            "> 0");
    if (n == 0 || d == 0)
        return km_error_set(err, KM_EINVAL, "X must have at least one row "
                            "and one column");
    km_status st = km_check_matrix("X", X, n, d, err);
    if (st != KM_OK)
        return st;
    size_t m = n < rows_cap(max_rows) ? n : rows_cap(max_rows);
    out->n_given = n;
    out->n = m;
    out->subsampled = m < n;
    out->seed = seed;
    out->alpha = alpha;
    double *S = m < n ? subsample(X, n, d, m, seed) : NULL;
    double *K = malloc(m * m * sizeof *K), *w = malloc(m * sizeof *w);
    if ((m < n && !S) || !K || !w) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for the %zu x %zu "
                          "Gram matrix", m, m);
        goto done;
    }
    const double *R = S ? S : X;
    st = km_gram_cross(k, R, m, R, m, d, K, m, err);
    if (st != KM_OK)
        goto done;
    if ((st = check_finite(K, m, 1, err)) != KM_OK)
        goto done;
    out->asymmetry = symmetrise(K, m);
    out->symmetric = out->asymmetry <= KM_PSD_SYM_TOL;
    if ((st = eigenvalues(K, m, w, err)) != KM_OK)
        goto done;
    figures(w, m, out);
done:
    free(S);
    free(K);
    free(w);
    return st;
}

/* ------------------------------------------------------------ fits */

int km_kernel_maybe_indefinite(const km_kernel *k)
{
    switch (k->type) {
    case KM_KERNEL_SIGMOID:
    case KM_KERNEL_PRECOMPUTED: /* a user's matrix */
        return 1;
    case KM_KERNEL_POLYNOMIAL: /* (gamma t + c)^p, gamma > 0 */
        return k->coef0 < 0 && k->degree > 0;
    case KM_KERNEL_SUM:        /* weights >= 0 */
    case KM_KERNEL_PRODUCT:    /* Schur's product theorem */
    case KM_KERNEL_NORMALIZED: /* D^-1/2 K D^-1/2 */
        for (int p = 0; p < k->n_parts; p++)
            if (km_kernel_maybe_indefinite(&k->parts[p]))
                return 1;
        return 0;
    default: /* linear, exponential (a power series of <x,z> with
              * positive terms), the shift-invariant ones (positive
              * spectral densities: Bochner) and the string kernels
              * (inner products of feature counts) */
        return 0;
    }
}

/* K (m x m, lower triangle) := H K H, H = I - 11^T/m. */
static void centre(double *K, size_t m)
{
    double *r = calloc(m, sizeof *r), g = 0;
    if (!r)
        return;
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j <= i; j++) {
            r[i] += K[i * m + j];
            if (j < i)
                r[j] += K[i * m + j];
        }
    for (size_t i = 0; i < m; i++) {
        r[i] /= (double)m;
        g += r[i];
    }
    g /= (double)m;
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j <= i; j++)
            K[i * m + j] += g - r[i] - r[j];
    free(r);
}

km_status km_kernel_psd_rows(const km_kernel *k, const double *X, size_t m,
                             size_t d, int centred, km_psd_report *out,
                             km_error *err)
{
    memset(out, 0, sizeof *out);
    out->n_given = out->n = m;
    out->alpha = 1;
    out->symmetric = 1;
    if (m == 0)
        return km_error_set(err, KM_EINVAL, "no rows");
    double *K = malloc(m * m * sizeof *K), *w = malloc(m * sizeof *w);
    km_status st = !K || !w ? km_error_set(err, KM_ENOMEM, "out of memory "
                                           "for the %zu x %zu Gram matrix",
                                           m, m)
                            : km_gram_sym(k, X, m, d, K, 0, err);
    if (st == KM_OK)
        st = check_finite(K, m, 0, err);
    if (st == KM_OK && centred)
        centre(K, m);
    if (st == KM_OK && (st = eigenvalues(K, m, w, err)) == KM_OK)
        figures(w, m, out);
    free(K);
    free(w);
    return st;
}

void km_kernel_note_min_eigenvalue(const km_kernel *k, const double *X,
                                   size_t n, size_t d, double scale,
                                   double shift, double *K, const char *what,
                                   km_error *err)
{
    if (n > KM_PSD_FIT_ROWS)
        return;
    double *own = K ? NULL : malloc(n * n * sizeof *own);
    double *A = K ? K : own, *w = malloc(n * sizeof *w);
    km_error scratch;
    lapack_int found = 0, info = -1;
    if (A && w && km_gram_sym(k, X, n, d, A, 0, &scratch) == KM_OK &&
        check_finite(A, n, 0, &scratch) == KM_OK) {
        for (size_t i = 0; i < n; i++) {
            for (size_t j = 0; j <= i; j++)
                A[i * n + j] *= scale;
            A[i * n + i] += shift;
        }
        /* row-major lower triangle == column-major upper: no transposed
         * copy */
        info = LAPACKE_dsyevr(LAPACK_COL_MAJOR, 'N', 'I', 'U', (lapack_int)n,
                              A, (lapack_int)n, 0, 0, 1, 1, 0.0, &found, w,
                              NULL, 1, NULL);
    }
    size_t len = strlen(err->message);
    if (info == 0 && found == 1 && len < sizeof err->message)
        snprintf(err->message + len, sizeof err->message - len,
                 " (%s smallest eigenvalue is %.6g)", what, w[0]);
    free(own);
    free(w);
}
