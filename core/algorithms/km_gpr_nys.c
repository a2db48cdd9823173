/*
 * km_gpr_nys.c - Gaussian-process regression's nystrom solver: the mean
 * through krr's nystrom fit (km_krr_fit_nystrom), and with
 * params.variance the DTC variance's two m x m factors over row blocks
 * and the approximation's log marginal likelihood.
 *
 * Thread-safety: reentrant.
 */
#include <cblas.h>
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../base/km_base_internal.h"
#include "../kernels/km_kernel_internal.h"
#include "../model/km_model_internal.h"
#include "../solvers/km_solvers_internal.h"
#include "km_gpr.h"
#include "km_gpr_internal.h"

/*
 * The DTC variance's factors and the approximation's log marginal
 * likelihood, for the centres Z = p->X (m rows) and the normalised
 * targets y (n): p->L := K_mm's lower Cholesky factor (unshifted, or with
 * krr's tiny shift when K_mm is numerically singular), then, with
 * Phi = K_nm L^-T (computed in row blocks of X, never whole), p->C :=
 * the lower factor of alpha I + Phi^T Phi (DSYRK per block: n m^2
 * flops), and b = Phi^T y along the way. With Q = s Phi Phi^T (the
 * Nystrom approximation of s K) the likelihood of y under
 * N(0, Q + noise I) = N(0, s (Phi Phi^T + alpha I)) is, by the matrix
 * determinant lemma and Woodbury's identity,
 *   -(y^T y - |C^-1 b|^2) / (2 s alpha)
 *   - (n log s + (n - m) log alpha + 2 sum_i log C_ii) / 2
 *   - (n / 2) log(2 pi).
 * Progress from f0 to f1 by blocks, which may cancel. *shift: the shift
 * of K_mm's diagonal its factor needed (0 unless singular or indefinite).
 */
static km_status dtc_factors(const km_kernel *k, const double *X, size_t n,
                             size_t d, const double *y, gpr_payload *p,
                             size_t m, double alpha,
                             const km_fit_control *ctl, double f0, double f1,
                             double *lml, double *shift, km_error *err)
{
    size_t block = km_nys_block_rows(n, m);
    double *L = malloc(m * m * sizeof *L), *A = calloc(m * m, sizeof *A);
    double *Kb = malloc(block * m * sizeof *Kb), *b = calloc(m, sizeof *b);
    km_status st = KM_OK;
    if (!L || !A || !Kb || !b) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for the variance's "
                          "factors of %zu centres", m);
        goto out;
    }
    /* column-major upper == row-major lower */
    if ((st = km_nys_factor_kmm(k, p->X, m, d, 1, L, shift, err)) != KM_OK)
        goto out;
    for (size_t i0 = 0; i0 < n; i0 += block) {
        size_t nb = n - i0 < block ? n - i0 : block;
        if ((st = km_gram_cross_sn(k, X + i0 * d, nb, p->X, m, p->xn, d, Kb,
                                   m, err)) != KM_OK)
            goto out;
        cblas_dtrsm(CblasRowMajor, CblasRight, CblasLower, CblasTrans,
                    CblasNonUnit, (int)nb, (int)m, 1.0, L, (int)m, Kb,
                    (int)m);
        cblas_dsyrk(CblasRowMajor, CblasLower, CblasTrans, (int)m, (int)nb,
                    1.0, Kb, (int)m, 1.0, A, (int)m);
        cblas_dgemv(CblasRowMajor, CblasTrans, (int)nb, (int)m, 1.0, Kb,
                    (int)m, y + i0, 1, 1.0, b, 1);
        if (km_progress(ctl, f0 + (f1 - f0) * (double)(i0 + nb) / (double)n)) {
            st = km_error_set(err, KM_ECANCELLED, "fit cancelled");
            goto out;
        }
    }
    for (size_t i = 0; i < m; i++)
        A[i * m + i] += alpha;
    lapack_int info = LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'U', (lapack_int)m, A,
                                     (lapack_int)m);
    if (info != 0) {
        st = info > 0 ? km_error_set(err, KM_ENOTPD, "alpha I + Phi^T Phi of "
                                     "the variance is not positive definite; "
                                     "use a larger params.noise")
                      : km_error_set(err, KM_EINTERNAL, "dpotrf argument %d",
                                     (int)-info);
        goto out;
    }
    cblas_dtrsv(CblasRowMajor, CblasLower, CblasNoTrans, CblasNonUnit, (int)m,
                A, (int)m, b, 1);
    km_ksum q = {0, 0}, det = {0, 0};
    for (size_t i = 0; i < n; i++)
        km_ksum_add(&q, y[i] * y[i]);
    for (size_t i = 0; i < m; i++) {
        km_ksum_add(&q, -b[i] * b[i]);
        km_ksum_add(&det, 2 * log(A[i * m + i]));
    }
    km_ksum_add(&det, (double)n * log(p->signal));
    km_ksum_add(&det, (double)(n - m) * log(alpha));
    *lml = -0.5 * km_ksum_get(&q) / (p->signal * alpha) -
           0.5 * km_ksum_get(&det) - 0.5 * (double)n * log(2.0 * M_PI);
    if (!km_all_finite(L, m * m) || !km_all_finite(A, m * m)) {
        st = km_error_set(err, KM_ENOTPD, "the variance's factors are not "
                          "finite numbers; use a larger params.noise");
        goto out;
    }
    p->L = L;
    p->C = A;
    L = A = NULL;
out:
    free(L);
    free(A);
    free(Kb);
    free(b);
    return st;
}

/* The conjugate gradients' iterations and residual of krr's fit. */
static km_status mean_figures(const km_model *mean, double *its, double *res)
{
    const km_info *mt = km_model_training(mean);
    const km_info_entry *i = km_info_find(mt, "iterations");
    const km_info_entry *r = km_info_find(mt, "residual");
    if (!i || !r)
        return KM_EINTERNAL;
    /* an absent figure (no value) stays absent in gpr's */
    *its = i->count == 1 ? i->values[0] : NAN;
    *res = r->count == 1 ? r->values[0] : NAN;
    return KM_OK;
}

km_status km_gpr_fit_nystrom(const km_kernel *kernel,
                             const km_gpr_params *params, const double *X,
                             size_t n, size_t d, const double *y,
                             const size_t *centres, const km_fit_control *ctl,
                             km_model **out, km_error *err)
{
    km_problem pb = {X, n, d, y, 1, NULL, 0};
    km_fit_frame f;
    gpr_payload *pl = NULL;
    km_model *mean = NULL;
    double *yn = NULL, lml = NAN, its = 0, res = 0;
    km_status st = km_fit_begin(&f, KM_ALGO_GPR, kernel, params, &pb, err);
    if (st != KM_OK)
        goto out;
    if (params->solver != KM_GPR_SOLVER_NYSTROM) {
        st = km_error_set(err, KM_EINVAL, "params.solver is not nystrom");
        goto out;
    }
    pl = calloc(1, sizeof *pl);
    yn = malloc(n * sizeof *yn);
    if (!pl || !yn) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for the model");
        goto out;
    }
    pl->form = GPR_FORM_NYSTROM;
    pl->signal = params->signal_variance;
    pl->noise = params->noise;
    km_gpr_normalise(y, n, params->normalize_y, yn, &pl->y_mean, &pl->y_std);

    /* The mean: krr's nystrom solver (Falkon) on y' with alpha = noise / s. */
    km_krr_params q = km_gpr_mean_params(params);
    double f1 = params->variance ? 0.6 : 0.95;
    km_progress_span sp = {ctl, 0.0, f1};
    km_fit_control sub = {km_progress_span_report, &sp,
                          ctl ? ctl->threads : 0, NULL};
    if ((st = km_krr_fit_nystrom(&f.k, &q, X, n, d, yn, 1, centres, NULL,
                                 NULL, &sub, &mean, err)) != KM_OK) {
        if (st == KM_ENOTPD && err) { /* krr's alpha is noise / s here */
            char inner[sizeof err->message];
            snprintf(inner, sizeof inner, "%s", err->message);
            km_error_set(err, st, "%.180s (here alpha is params.noise / "
                         "params.signal_variance)", inner);
        }
        goto out;
    }
    size_t m = km_model_n_samples(mean);
    const double *Z, *c;
    if (km_krr_dual(mean, &Z, &c) != KM_OK) {
        st = km_error_set(err, KM_EINTERNAL, "the nystrom mean is not a "
                          "dual krr model");
        goto out;
    }
    pl->X = malloc(m * d * sizeof *pl->X);
    pl->coef = malloc(m * sizeof *pl->coef);
    if (!pl->X || !pl->coef) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for the model");
        goto out;
    }
    memcpy(pl->X, Z, m * d * sizeof *Z);
    for (size_t i = 0; i < m; i++) /* the mean s k_x^T a is k_x^T c */
        pl->coef[i] = c[i] / pl->signal;
    if (km_gpr_derive(pl, m, d) != KM_OK ||
        mean_figures(mean, &its, &res) != KM_OK) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for the model");
        goto out;
    }
    km_model_free(mean);
    mean = NULL;
    double shift = 0;
    if (params->variance &&
        (st = dtc_factors(&f.k, X, n, d, yn, pl, m, q.alpha, ctl, f1, 0.95,
                          &lml, &shift, err)) != KM_OK)
        goto out;

    gpr_optimum none;
    memset(&none, 0, sizeof none);
    double cg[2] = {its, res};
    st = km_gpr_finish(&f, d, m, pl, params, lml, &none, cg, ctl, out, err);
    pl = NULL; /* owned by the model, or freed */
    /* the variance's K_mm needed a shift (jitter): say so */
    if (st == KM_OK && shift > 0 &&
        km_info_add1(km_model_training_mut(*out), "kmm_shift", KM_INFO_NUMBER,
                     shift) != KM_OK) {
        km_model_free(*out);
        *out = NULL;
        st = km_error_set(err, KM_ENOMEM, "out of memory for the model");
    }
out:
    km_model_free(mean);
    km_gpr_payload_free(pl);
    free(yn);
    km_fit_cleanup(&f);
    return st;
}
