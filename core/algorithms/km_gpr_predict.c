/*
 * km_gpr_predict.c - a Gaussian-process regression model's answers: the
 * predictive mean, and the predictive variances and covariance (the
 * exact form through the kept Cholesky factor, one DTRSM per row block;
 * the nystrom form through the DTC variance's two factors).
 *
 * Thread-safety: reentrant; a fitted model is only read.
 */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../base/km_base_internal.h"
#include "../kernels/km_kernel_internal.h"
#include "../model/km_model_internal.h"
#include "km_gpr.h"
#include "km_gpr_internal.h"

/* ------------------------------------------------------------ predict */

/* Kernel values a variance or covariance holds at once: rows per block. */
#define VAR_BLOCK_VALUES ((size_t)1 << 22)

km_status km_gpr_predict(const km_model *m, const double *X, size_t n,
                         double *out, km_error *err)
{
    km_status st = km_model_expect_input(m, KM_ALGO_GPR, "predict", X, n, err);
    if (st != KM_OK)
        return st;
    const gpr_payload *p = km_model_payload(m);
    return km_kernel_expand(km_model_kernel(m), p->X, km_model_n_samples(m),
                            km_model_n_features(m), p->xn, p->w, 1,
                            &p->y_mean, X, n, out, err);
}

/* B (nb x ns) = s k(X, S) L^-T: row i is (L^-1 k_x)^T for x = X_i (the
 * nystrom form: k(X, Z) L^-T, the rows phi(x) of its features). */
static km_status whitened(const km_model *m, const gpr_payload *p,
                          const double *X, size_t nb, double *B,
                          km_error *err)
{
    size_t ns = km_model_n_samples(m), d = km_model_n_features(m);
    km_status st = km_gram_cross_sn(km_model_kernel(m), X, nb, p->X, ns,
                                    p->xn, d, B, ns, err);
    if (st != KM_OK)
        return st;
    if (p->F)
        km_factor_solve_rt(p->F, p->signal, B, nb, ns);
    else
        cblas_dtrsm(CblasRowMajor, CblasRight, CblasLower, CblasTrans,
                    CblasNonUnit, (int)nb, (int)ns, 1.0, p->L, (int)ns, B,
                    (int)ns);
    return KM_OK;
}

/* B (nb x m) := B C^-T: the nystrom form's rows psi(x) = C^-1 phi(x). */
static void nys_psi(const gpr_payload *p, size_t nb, size_t m, double *B)
{
    cblas_dtrsm(CblasRowMajor, CblasRight, CblasLower, CblasTrans,
                CblasNonUnit, (int)nb, (int)m, 1.0, p->C, (int)m, B, (int)m);
}

/* The preamble of the variance and the covariance: the model's and X's
 * checks, and KM_ECONFLICT for a nystrom model without the variance. */
static km_status expect_spread(const km_model *m, const double *X, size_t n,
                               km_error *err)
{
    km_status st = km_model_expect_input(m, KM_ALGO_GPR, "predict", X, n, err);
    const gpr_payload *p = km_model_payload(m);
    if (st == KM_OK && !p->F && !p->L)
        return km_error_set(err, KM_ECONFLICT, "the variance needs a gpr "
                            "model fitted with params.variance = true (this "
                            "nystrom model answers the mean only)");
    return st;
}

/*
 * The variances: exact, s k(x, x) - |L^-1 k_x|^2; nystrom (DTC), with
 * phi = L^-1 k(Z, x) and psi = C^-1 phi,
 *   s (k(x, x) - |phi|^2 + alpha |psi|^2),  alpha = noise / s,
 * that is s k(x, x) minus the Nystrom approximation of it plus the
 * posterior variance of the weights; both clipped at 0 and times y_std^2.
 */
km_status km_gpr_variance(const km_model *m, const double *X, size_t n,
                          double *out, km_error *err)
{
    km_status st = expect_spread(m, X, n, err);
    if (st != KM_OK || n == 0)
        return st;
    const gpr_payload *p = km_model_payload(m);
    const km_kernel *k = km_model_kernel(m);
    size_t ns = km_model_n_samples(m), d = km_model_n_features(m);
    size_t block = VAR_BLOCK_VALUES / ns ? VAR_BLOCK_VALUES / ns : 1;
    block = block < n ? block : n;
    int nys = p->form == GPR_FORM_NYSTROM;
    double *B = malloc(km_mul3(block, ns, (nys ? 2 : 1) * sizeof *B));
    if (!B)
        return km_error_set(err, KM_ENOMEM, "out of memory for a prediction");
    double scale = p->y_std * p->y_std, alpha = p->noise / p->signal;
    double *P = B + block * ns; /* nystrom: psi */
    for (size_t i0 = 0; i0 < n && st == KM_OK; i0 += block) {
        size_t nb = n - i0 < block ? n - i0 : block;
        if ((st = whitened(m, p, X + i0 * d, nb, B, err)) != KM_OK)
            break;
        if (nys) {
            memcpy(P, B, nb * ns * sizeof *P);
            nys_psi(p, nb, ns, P);
        }
        for (size_t i = 0; i < nb; i++) {
            const double *x = X + (i0 + i) * d, *b = B + i * ns;
            double kxx = km_kernel_eval(k, x, x, d), v;
            if (nys) {
                const double *q = P + i * ns;
                v = p->signal * (kxx - cblas_ddot((int)ns, b, 1, b, 1) +
                                 alpha * cblas_ddot((int)ns, q, 1, q, 1));
            } else {
                v = p->signal * kxx - cblas_ddot((int)ns, b, 1, b, 1);
            }
            out[i0 + i] = (v > 0 ? v : 0) * scale; /* sklearn clips at 0 */
        }
    }
    free(B);
    return st;
}

km_status km_gpr_covariance(const km_model *m, const double *X, size_t n,
                            double *out, km_error *err)
{
    km_status st = expect_spread(m, X, n, err);
    if (st != KM_OK || n == 0)
        return st;
    if (n > KM_COV_MAX_ROWS)
        return km_error_set(err, KM_EINVAL, "output cov answers at most %d "
                            "rows at once (an n x n matrix); X has %zu: ask "
                            "for var or std, or split the rows",
                            KM_COV_MAX_ROWS, n);
    const gpr_payload *p = km_model_payload(m);
    size_t ns = km_model_n_samples(m), d = km_model_n_features(m);
    int nys = p->form == GPR_FORM_NYSTROM;
    double *B = malloc(km_mul3(n, ns, sizeof *B));
    if (!B)
        return km_error_set(err, KM_ENOMEM, "out of memory for a prediction");
    if ((st = km_gram_sym(km_model_kernel(m), X, n, d, out, 0, err)) ==
            KM_OK &&
        (st = whitened(m, p, X, n, B, err)) == KM_OK) {
        /* lower triangle: s k(X, X) - B B^T (nystrom: s (k(X, X) -
         * Phi Phi^T + alpha Psi Psi^T)), then mirrored and scaled */
        cblas_dsyrk(CblasRowMajor, CblasLower, CblasNoTrans, (int)n, (int)ns,
                    -1.0, B, (int)ns, nys ? 1.0 : p->signal, out, (int)n);
        double scale = p->y_std * p->y_std;
        if (nys) {
            nys_psi(p, n, ns, B);
            cblas_dsyrk(CblasRowMajor, CblasLower, CblasNoTrans, (int)n,
                        (int)ns, p->noise / p->signal, B, (int)ns, 1.0, out,
                        (int)n);
            scale *= p->signal;
        }
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j <= i; j++)
                out[j * n + i] = out[i * n + j] *= scale;
    }
    free(B);
    return st;
}

