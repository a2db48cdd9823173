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

/* m of the n rows of X, drawn without replacement (a partial
 * Fisher-Yates shuffle by km_rng seeded seed) and kept in their order,
 * into a new m x d matrix; NULL on OOM. */
static double *subsample(const double *X, size_t n, size_t d, size_t m,
                         uint64_t seed)
{
    size_t *idx = malloc(n * sizeof *idx);
    double *S = malloc(m * d * sizeof *S);
    if (!idx || !S) {
        free(idx);
        free(S);
        return NULL;
    }
    for (size_t i = 0; i < n; i++)
        idx[i] = i;
    km_rng r = {seed};
    for (size_t i = 0; i < m; i++) {
        size_t j = i + km_rng_below(&r, n - i), t = idx[i];
        idx[i] = idx[j];
        idx[j] = t;
    }
    qsort(idx, m, sizeof *idx, cmp_size);
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

/* The figures of the report from the m eigenvalues w (ascending). */
static void figures(const double *w, size_t m, km_psd_report *out)
{
    double alpha = out->alpha;
    out->min_eig = w[0];
    out->max_eig = w[m - 1];
    double big = fmax(fabs(w[0]), fabs(w[m - 1]));
    out->threshold = (double)m * DBL_EPSILON * big;
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
    for (size_t i = 0; i < m * m; i++)
        if (!isfinite(K[i])) {
            st = km_error_set(err, KM_EPROBLEM, "the Gram matrix has values "
                              "that are not finite numbers (overflow); use "
                              "a smaller gamma, degree or scale of X");
            goto done;
        }
    out->asymmetry = symmetrise(K, m);
    out->symmetric = out->asymmetry <= KM_PSD_SYM_TOL;
    lapack_int info = LAPACKE_dsyevd(LAPACK_ROW_MAJOR, 'N', 'L',
                                     (lapack_int)m, K, (lapack_int)m, w);
    if (info != 0) {
        st = km_error_set(err, info > 0 ? KM_ENOCONV : KM_EINTERNAL,
                          "dsyevd failed (info %d)", (int)info);
        goto done;
    }
    figures(w, m, out);
done:
    free(S);
    free(K);
    free(w);
    return st;
}

void km_kernel_note_min_eigenvalue(const km_kernel *k, const double *X,
                                   size_t n, size_t d, double alpha,
                                   double *K, km_error *err)
{
    km_error scratch;
    if (km_gram_sym(k, X, n, d, K, 0, &scratch) != KM_OK)
        return;
    for (size_t i = 0; i < n; i++)
        K[i * n + i] += alpha;
    double *w = malloc(n * sizeof *w);
    lapack_int found = 0;
    /* row-major lower triangle == column-major upper: no transposed copy */
    lapack_int info = w ? LAPACKE_dsyevr(LAPACK_COL_MAJOR, 'N', 'I', 'U',
                                         (lapack_int)n, K, (lapack_int)n, 0,
                                         0, 1, 1, 0.0, &found, w, NULL, 1,
                                         NULL) : -1;
    size_t len = strlen(err->message);
    if (info == 0 && found == 1 && len < sizeof err->message)
        snprintf(err->message + len, sizeof err->message - len,
                 " (its smallest eigenvalue is %.6g)", w[0]);
    free(w);
}
