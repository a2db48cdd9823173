/*
 * km_chol_update.c - the block update of an exact fit's Cholesky factor,
 * shared by gpr's and krr's model updates (km_algorithms_internal.h).
 *
 * For A = [A11 A12; A21 A22] with A11 = L11 L11^T known, the factor of A
 * is [L11 0; L21 L22] with L21 = A21 L11^-T and L22 L22^T = A22 - L21
 * L21^T: O(n^2 k + k^3) for k new rows where a refit costs O(n^3). The
 * factor's block form and its routines are km_factor.c's; here the new
 * rows' kernel values. The solve reuses the factor: z1 = L11^-1 y1 =
 * L11^T a (a = A11^-1 y1, the old coefficients), z2 = L22^-1 (y2 - L21
 * z1), and a' = L^-T z.
 *
 * The factor's form in a model file (km_tri_*) is here too, and the small
 * helpers the nystrom updates share.
 *
 * Thread-safety: reentrant.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../base/km_base_internal.h"
#include "../kernels/km_kernel_internal.h"
#include "../solvers/km_solvers_internal.h"
#include "km_algorithms_internal.h"

double *km_doubles_dup(const double *src, size_t n)
{
    double *d = malloc(km_mul3(n, 1, sizeof *d));
    return d ? memcpy(d, src, n * sizeof *d) : NULL;
}

double km_model_param(const km_model *m, const char *key, double def)
{
    const km_info_entry *e = km_info_find(km_model_params(m), key);
    return e && e->count == 1 ? e->values[0] : def;
}

double *km_rows_concat(const double *X, size_t n, const double *Xn, size_t k,
                       size_t d)
{
    double *R = malloc(km_mul3(n + k, d, sizeof *R));
    if (!R)
        return NULL;
    memcpy(R, X, n * d * sizeof *R);
    memcpy(R + n * d, Xn, k * d * sizeof *R);
    return R;
}

km_status km_chol_extend(const km_kernel *ker, double s, double shift,
                         const km_factor *F, const double *X, size_t d,
                         const double *Xn, size_t k, km_factor **out,
                         km_error *err)
{
    size_t n = F->n, N = n + k;
    double *A = malloc(km_mul3(k, N, sizeof *A));
    double *T = malloc(km_mul3(k, k, sizeof *T));
    if (!A || !T) {
        free(A);
        free(T);
        return km_error_set(err, KM_ENOMEM, "out of memory for an update");
    }
    km_status st = km_gram_cross(ker, Xn, k, X, n, d, A, N, err);
    if (st == KM_OK)
        st = km_gram_sym(ker, Xn, k, d, T, 0, err);
    for (size_t i = 0; st == KM_OK && i < k; i++) {
        double *row = A + i * N;
        for (size_t j = 0; j < n; j++)
            row[j] *= s;
        for (size_t j = 0; j <= i; j++)
            row[n + j] = s * T[i * k + j] + (i == j ? shift : 0);
        for (size_t j = i + 1; j < k; j++)
            row[n + j] = 0;
        if (!km_all_finite(row, n + i + 1))
            st = km_error_set(err, KM_EPROBLEM, "the kernel values of the "
                              "new row %zu are not finite numbers", i);
    }
    free(T);
    if (st != KM_OK) {
        free(A);
        return st;
    }
    return km_factor_grow(F, A, k, out, err);
}

uint64_t km_tri_values(uint64_t n)
{
    return n % 2 ? km_mul_sat(n, (n + 1) / 2) : km_mul_sat(n / 2, n + 1);
}

void km_tri_rows_write(km_writer *w, const double *v, size_t ld, size_t r0,
                       size_t rows)
{
    for (size_t i = 0; i < rows; i++) {
        const double *row = v + i * ld;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        km_write_bytes(w, row, (r0 + i + 1) * sizeof *row); /* the file's */
#else
        for (size_t j = 0; j <= r0 + i; j++)
            km_write_f64(w, row[j]);
#endif
    }
}

void km_tri_rows_read(km_reader *r, double *v, size_t ld, size_t r0,
                      size_t rows)
{
    for (size_t i = 0; i < rows && !r->failed; i++)
        for (size_t j = 0; j <= r0 + i; j++)
            v[i * ld + j] = km_read_f64(r);
}

void km_tri_write(km_writer *w, const double *L, size_t n)
{
    km_write_u64(w, km_tri_values(n));
    km_tri_rows_write(w, L, n, 0, n);
}

double *km_tri_read(km_reader *r, size_t n)
{
    size_t count = km_read_count(r, sizeof(double));
    if (r->failed || count != km_tri_values(n)) {
        r->failed = 1;
        return NULL;
    }
    double *L = calloc(km_mul3(n, n, 1), sizeof *L);
    if (L)
        km_tri_rows_read(r, L, n, 0, n);
    return L;
}

double *km_tri_read_sym(km_reader *r, size_t n)
{
    double *S = km_tri_read(r, n);
    for (size_t i = 0; S && i < n; i++)
        for (size_t j = 0; j < i; j++)
            S[j * n + i] = S[i * n + j];
    return S;
}

km_status km_sums_check(const double *S, size_t n, const char *what,
                        km_error *err)
{
    if (!km_all_finite(S, n * n))
        return km_error_set(err, KM_ECORRUPT, "model file: %s holds a value "
                            "that is not a finite number", what);
    for (size_t i = 0; i < n; i++) {
        if (!(S[i * n + i] >= 0))
            return km_error_set(err, KM_ECORRUPT, "model file: %s[%zu][%zu] "
                                "is below 0", what, i, i);
        for (size_t j = 0; j < i; j++)
            if (fabs(S[i * n + j]) >
                sqrt(S[i * n + i] * S[j * n + j]) * (1 + 1e-6) + 1e-300)
                return km_error_set(err, KM_ECORRUPT, "model file: "
                                    "%s[%zu][%zu] is larger than sums of "
                                    "products can be", what, i, j);
    }
    return KM_OK;
}
