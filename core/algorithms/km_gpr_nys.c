/*
 * km_gpr_nys.c - Gaussian-process regression's nystrom solver: the mean
 * through krr's nystrom fit (km_krr_fit_nystrom), and with
 * params.variance the DTC variance's two m x m factors over row blocks
 * and the approximation's log marginal likelihood; with
 * params.keep_factor the sums an update needs, the update itself, and
 * those sums' part of the model file (format version 11).
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

/* A += Phi^T Phi (lower triangle) and PtY += Phi^T Y (m x q row-major)
 * for X's n rows and Y's q columns (n x q), Phi = K_nm L^-T of the m
 * centres Z (zn their norms, L K_mm's lower factor), computed in row
 * blocks of X (DSYRK per block: n m^2 flops), never whole. Progress from
 * f0 to f1 by blocks, which may cancel. */
static km_status phi_sums(const km_kernel *k, const double *X, size_t n,
                          size_t d, const double *Y, size_t q,
                          const double *Z, const double *zn, const double *L,
                          size_t m, double *A, double *PtY,
                          const km_fit_control *ctl, double f0, double f1,
                          km_error *err)
{
    size_t block = km_nys_block_rows(n, m);
    double *Kb = malloc(km_mul3(block, m, sizeof *Kb));
    km_status st = KM_OK;
    if (!Kb)
        return km_error_set(err, KM_ENOMEM, "out of memory for the "
                            "variance's sums of %zu centres", m);
    for (size_t i0 = 0; i0 < n; i0 += block) {
        size_t nb = n - i0 < block ? n - i0 : block;
        if ((st = km_gram_cross_sn(k, X + i0 * d, nb, Z, m, zn, d, Kb, m,
                                   err)) != KM_OK)
            break;
        cblas_dtrsm(CblasRowMajor, CblasRight, CblasLower, CblasTrans,
                    CblasNonUnit, (int)nb, (int)m, 1.0, L, (int)m, Kb,
                    (int)m);
        cblas_dsyrk(CblasRowMajor, CblasLower, CblasTrans, (int)m, (int)nb,
                    1.0, Kb, (int)m, 1.0, A, (int)m);
        cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)m, (int)q,
                    (int)nb, 1.0, Kb, (int)m, Y + i0 * q, (int)q, 1.0, PtY,
                    (int)q);
        if (km_progress(ctl, f0 + (f1 - f0) * (double)(i0 + nb) / (double)n)) {
            st = km_error_set(err, KM_ECANCELLED, "cancelled");
            break;
        }
    }
    free(Kb);
    return st;
}

/*
 * The DTC factor and likelihood from the sums over n rows: *C := the
 * lower factor of alpha I + A (A = Phi^T Phi, lower; upper 0), and with
 * b = C^-1 Phi^T y (Pty's first of q columns) and yy = y^T y, Q = s Phi
 * Phi^T (the Nystrom approximation of s K), the likelihood of y under
 * N(0, Q + noise I) = N(0, s (Phi Phi^T + alpha I)) is, by the matrix
 * determinant lemma and Woodbury's identity,
 *   -(y^T y - |C^-1 b|^2) / (2 s alpha)
 *   - (n log s + (n - m) log alpha + 2 sum_i log C_ii) / 2
 *   - (n / 2) log(2 pi).
 */
static km_status dtc_solve(const double *A, const double *Pty, size_t q,
                           size_t m, uint64_t n, double alpha, double signal,
                           double yy, double **C, double *lml, km_error *err)
{
    double *F = malloc(km_mul3(m, m, sizeof *F)), *b = malloc(m * sizeof *b);
    km_status st = KM_OK;
    if (!F || !b) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for the variance's "
                          "factors of %zu centres", m);
        goto out;
    }
    memcpy(F, A, m * m * sizeof *F);
    for (size_t i = 0; i < m; i++) {
        F[i * m + i] += alpha;
        b[i] = Pty[i * q];
    }
    /* column-major upper == row-major lower */
    lapack_int info = LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'U', (lapack_int)m, F,
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
                F, (int)m, b, 1);
    km_ksum r = {0, 0}, det = {0, 0};
    km_ksum_add(&r, yy);
    for (size_t i = 0; i < m; i++) {
        km_ksum_add(&r, -b[i] * b[i]);
        km_ksum_add(&det, 2 * log(F[i * m + i]));
    }
    km_ksum_add(&det, (double)n * log(signal));
    km_ksum_add(&det, ((double)n - (double)m) * log(alpha));
    *lml = -0.5 * km_ksum_get(&r) / (signal * alpha) -
           0.5 * km_ksum_get(&det) - 0.5 * (double)n * log(2.0 * M_PI);
    if (!km_all_finite(F, m * m)) {
        st = km_error_set(err, KM_ENOTPD, "the variance's factors are not "
                          "finite numbers; use a larger params.noise");
        goto out;
    }
    *C = F;
    F = NULL;
out:
    free(F);
    free(b);
    return st;
}

/* y^T y, compensated. */
static double sum_sq(const double *y, size_t n, size_t stride)
{
    km_ksum q = {0, 0};
    for (size_t i = 0; i < n; i++)
        km_ksum_add(&q, y[i * stride] * y[i * stride]);
    return km_ksum_get(&q);
}

/*
 * The DTC variance's factors and the approximation's log marginal
 * likelihood, for the centres Z = p->X (m rows) and the normalised
 * targets Y's first column (n x q): p->L := K_mm's lower Cholesky factor
 * (unshifted, or with krr's tiny shift when K_mm is numerically
 * singular), then p->C and *lml from phi_sums's sums (dtc_solve). With
 * params.keep_factor (q = 2, Y = [y' 1]) the sums are kept as p->P and
 * p->Pt. Progress from f0 to f1 by blocks, which may cancel. *shift: the
 * shift of K_mm's diagonal its factor needed (0 unless singular or
 * indefinite).
 */
static km_status dtc_factors(const km_kernel *k, const double *X, size_t n,
                             size_t d, const double *Y, size_t q,
                             gpr_payload *p, size_t m, double alpha,
                             const km_fit_control *ctl, double f0, double f1,
                             double *lml, double *shift, km_error *err)
{
    double *L = malloc(km_mul3(m, m, sizeof *L));
    double *A = calloc(km_mul3(m, m, 1), sizeof *A);
    double *Pt = calloc(m * q, sizeof *Pt), *C = NULL;
    km_status st = KM_OK;
    if (!L || !A || !Pt) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for the variance's "
                          "factors of %zu centres", m);
        goto out;
    }
    if ((st = km_nys_factor_kmm(k, p->X, m, d, 1, L, shift, err)) != KM_OK)
        goto out;
    if ((st = phi_sums(k, X, n, d, Y, q, p->X, p->xn, L, m, A, Pt, ctl, f0,
                       f1, err)) != KM_OK) {
        if (st == KM_ECANCELLED)
            km_error_set(err, st, "fit cancelled");
        goto out;
    }
    if ((st = dtc_solve(A, Pt, q, m, n, alpha, p->signal, sum_sq(Y, n, q), &C,
                        lml, err)) != KM_OK)
        goto out;
    if (!km_all_finite(L, m * m)) {
        st = km_error_set(err, KM_ENOTPD, "the variance's factors are not "
                          "finite numbers; use a larger params.noise");
        goto out;
    }
    p->L = L;
    p->C = C;
    L = C = NULL;
    if (q == 2) { /* params.keep_factor */
        p->P = A;
        p->Pt = Pt;
        A = Pt = NULL;
    }
out:
    free(L);
    free(A);
    free(Pt);
    free(C);
    return st;
}

/* The sums of params.keep_factor of the normalised targets Y = [y' 1]
 * (n x 2) but the variance's: G, Kt, sy, syy, rows. */
static km_status keep_sums(const km_kernel *k, const double *X, size_t n,
                           size_t d, const double *Y, gpr_payload *p,
                           size_t m, km_error *err)
{
    if (!(p->G = calloc(km_mul3(m, m, 1), sizeof *p->G)) ||
        !(p->Kt = calloc(2 * m, sizeof *p->Kt)))
        return km_error_set(err, KM_ENOMEM, "out of memory for the normal "
                            "equations' sums of %zu centres", m);
    km_ksum s = {0, 0};
    for (size_t i = 0; i < n; i++)
        km_ksum_add(&s, Y[2 * i]);
    p->sy = km_ksum_get(&s);
    p->syy = sum_sq(Y, n, 2);
    p->rows = n;
    return km_nys_stats_add(k, X, n, d, Y, 2, p->X, p->xn, m, p->G, p->Kt,
                            err);
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
    double *yn = NULL, *y2 = NULL, lml = NAN, its = 0, res = 0;
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
    if (params->keep_factor) { /* [y' 1], the sums' two columns */
        if (!(y2 = malloc(km_mul3(n, 2, sizeof *y2)))) {
            st = km_error_set(err, KM_ENOMEM, "out of memory for the model");
            goto out;
        }
        for (size_t i = 0; i < n; i++) {
            y2[2 * i] = yn[i];
            y2[2 * i + 1] = 1.0;
        }
    }

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
    if (y2 && (st = keep_sums(&f.k, X, n, d, y2, pl, m, err)) != KM_OK)
        goto out;
    double shift = 0;
    if (params->variance &&
        (st = dtc_factors(&f.k, X, n, d, y2 ? y2 : yn, y2 ? 2 : 1, pl, m,
                          q.alpha, ctl, f1, 0.95, &lml, &shift, err)) !=
            KM_OK)
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
    free(y2);
    km_fit_cleanup(&f);
    return st;
}

/* ------------------------------------------------------------ updates
 *
 * A nystrom model with the sums of params.keep_factor keeps its centres
 * (and K_mm's factor L): the new rows' sums are added to G, Kt and, with
 * the variance, P and Pt; the mean's coefficients are re-solved by
 * Falkon's CG on the sums (no pass over the old rows), warm-started at
 * the old ones, to the model's cg_tol as a fit's; the variance's C and
 * the likelihood come from P, Pt and y^T y (dtc_solve: O(m^3)). The
 * answer is a fit's with these centres on all the rows.
 *
 * With normalize_y the new mean and std are those of all the rows, as a
 * refit's and as the exact model's update: the old rows' targets are
 * not kept, but their sums sy, syy in the old normalisation give their
 * mean and spread, and the new normalisation y'' = a y' + c (a = std /
 * std', c = (mean - mean') / std') is affine in the old, so every kept
 * sum of y' maps to y'': K^T y'' = a K^T y' + c K^T 1 (hence the sums'
 * column of ones), sum y'' = a sy + c n, sum y''^2 = a^2 syy + 2 a c sy
 * + c^2 n. */

/* The targets' mean and std over all rows (population, as
 * km_gpr_normalise; std 1 when 0), from the old rows' sums in p's
 * normalisation and the k new targets. */
static void renormalise(const gpr_payload *p, const double *y, size_t k,
                        double *mean, double *std)
{
    double n = (double)p->rows, m1 = p->sy / n, mt, sd;
    /* in the old normalisation's units */
    km_gpr_pooled(n, m1, fmax(p->syy / n - m1 * m1, 0), y, k, 1 / p->y_std,
                  -p->y_mean / p->y_std, &mt, &sd);
    *mean = p->y_mean + p->y_std * mt;
    *std = sd > 0 ? p->y_std * sd : 1;
}

/* The kept sums (np's copies of p's) mapped to np's normalisation, y'' =
 * a y' + c. */
static void remap_sums(const gpr_payload *p, gpr_payload *np, size_t m)
{
    double a = p->y_std / np->y_std, c = (p->y_mean - np->y_mean) / np->y_std;
    double n = (double)p->rows;
    np->syy = a * a * p->syy + 2 * a * c * p->sy + c * c * n;
    np->sy = a * p->sy + c * n;
    for (size_t i = 0; i < m; i++) {
        np->Kt[2 * i] = a * p->Kt[2 * i] + c * p->Kt[2 * i + 1];
        if (np->Pt)
            np->Pt[2 * i] = a * p->Pt[2 * i] + c * p->Pt[2 * i + 1];
    }
}

/* np: p's centres, norms, L and sums (copies), and room for the
 * coefficients; NULL members on ENOMEM. */
static int copy_payload(const gpr_payload *p, gpr_payload *np, size_t m,
                        size_t d)
{
    np->form = GPR_FORM_NYSTROM;
    np->signal = p->signal;
    np->noise = p->noise;
    np->rows = p->rows;
    if (!(np->X = km_doubles_dup(p->X, m * d)) ||
        !(np->xn = km_doubles_dup(p->xn, m)) ||
        !(np->coef = malloc(m * sizeof *np->coef)) ||
        !(np->w = malloc(m * sizeof *np->w)) ||
        !(np->G = km_doubles_dup(p->G, m * m)) ||
        !(np->Kt = km_doubles_dup(p->Kt, 2 * m)))
        return 0;
    if (p->P && (!(np->L = km_doubles_dup(p->L, m * m)) ||
                 !(np->P = km_doubles_dup(p->P, m * m)) ||
                 !(np->Pt = km_doubles_dup(p->Pt, 2 * m))))
        return 0;
    return 1;
}

/* The k new rows' targets [y'' 1] (k x 2) in np's normalisation, and
 * their sums added to np's. */
static void new_targets(gpr_payload *np, const double *y, size_t k,
                        double *y2)
{
    km_ksum s = {0, 0}, q = {0, 0};
    km_ksum_add(&s, np->sy);
    km_ksum_add(&q, np->syy);
    for (size_t i = 0; i < k; i++) {
        double t = (y[i] - np->y_mean) / np->y_std;
        y2[2 * i] = t;
        y2[2 * i + 1] = 1.0;
        km_ksum_add(&s, t);
        km_ksum_add(&q, t * t);
    }
    np->sy = km_ksum_get(&s);
    np->syy = km_ksum_get(&q);
}

/* The new model around np (the model's, or freed) with CG's figures and,
 * with the variance, the likelihood. */
static km_status update_model(const km_model *m, gpr_payload *np,
                              size_t its, double worst, double lml,
                              km_model **out, km_error *err)
{
    km_model *nm = NULL;
    km_status st = km_update_model_create(m, km_model_n_samples(m), np, &nm,
                                          err);
    if (st != KM_OK)
        return st;
    km_info *ti = km_model_training_mut(nm);
    double fi = (double)its;
    if (km_info_set(ti, "iterations", KM_INFO_INTEGER, 0, &fi, 1) != KM_OK ||
        km_info_set(ti, "residual", KM_INFO_NUMBER, 0, &worst, 1) != KM_OK ||
        (isfinite(lml) &&
         km_info_set(ti, "log_marginal_likelihood", KM_INFO_NUMBER, 0, &lml,
                     1) != KM_OK)) {
        km_model_free(nm);
        return km_error_set(err, KM_ENOMEM, "out of memory for the model");
    }
    *out = nm;
    return KM_OK;
}

km_status km_gpr_nys_update(const km_model *m, const double *X, size_t k,
                            const double *y, const km_fit_control *ctl,
                            km_model **out, km_error *err)
{
    const gpr_payload *p = km_model_payload(m);
    size_t c = km_model_n_samples(m), d = km_model_n_features(m), its = 0;
    const km_kernel *ker = km_model_kernel(m);
    const km_info_entry *ne = km_info_find(km_model_params(m), "normalize_y");
    int normalize = ne && ne->count == 1 && ne->values[0] != 0;
    double alpha = p->noise / p->signal, worst = 0, lml = NAN, rkhs;
    gpr_payload *np = calloc(1, sizeof *np);
    double *y2 = malloc(km_mul3(k, 2, sizeof *y2));
    double *kty = malloc(c * sizeof *kty), *c0 = malloc(c * sizeof *c0);
    km_status st = KM_OK;
    if (!np || !y2 || !kty || !c0 || !copy_payload(p, np, c, d)) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for the update");
        goto out;
    }
    if (p->rows + k > ((uint64_t)1 << 53)) {
        st = km_error_set(err, KM_EINVAL, "a model of more than 2^53 rows");
        goto out;
    }
    np->y_mean = p->y_mean;
    np->y_std = p->y_std;
    if (normalize)
        renormalise(p, y, k, &np->y_mean, &np->y_std);
    if (!isfinite(np->y_mean) || !isfinite(np->y_std)) {
        st = km_error_set(err, KM_EPROBLEM, "the targets' mean or std over "
                          "all the rows is not a finite number");
        goto out;
    }
    remap_sums(p, np, c);
    new_targets(np, y, k, y2);
    np->rows = p->rows + k;
    if ((st = km_nys_stats_add(ker, X, k, d, y2, 2, np->X, np->xn, c, np->G,
                               np->Kt, err)) != KM_OK)
        goto out;
    if (np->P && (st = phi_sums(ker, X, k, d, y2, 2, np->X, np->xn, np->L, c,
                                np->P, np->Pt, ctl, 0.0, 0.1, err)) != KM_OK) {
        if (st == KM_ECANCELLED)
            km_error_set(err, st, "update cancelled");
        goto out;
    }
    if (km_progress(ctl, 0.1)) {
        st = km_error_set(err, KM_ECANCELLED, "update cancelled");
        goto out;
    }
    /* krr's coefficients s a; the warm start the old ones, rescaled */
    double a = p->y_std / np->y_std;
    for (size_t i = 0; i < c; i++) {
        kty[i] = np->Kt[2 * i];
        c0[i] = a * p->coef[i] * p->signal;
    }
    km_falkon fk = {ker, NULL, (size_t)np->rows, d, NULL, 1, np->X, np->xn,
                    c, alpha, km_model_param(m, "cg_tol", 1e-7),
                    (size_t)km_model_param(m, "cg_max_iter", 100), ctl, 0.15,
                    np->G, kty, c0};
    if ((st = km_falkon_solve(&fk, np->coef, &rkhs, &its, &worst, NULL, NULL,
                              err)) != KM_OK)
        goto out;
    for (size_t i = 0; i < c; i++) {
        np->coef[i] /= np->signal; /* the mean s k_x^T a is k_x^T c */
        np->w[i] = np->signal * np->y_std * np->coef[i];
    }
    if (np->P && (st = dtc_solve(np->P, np->Pt, 2, c, np->rows, alpha,
                                 np->signal, np->syy, &np->C, &lml, err)) !=
                     KM_OK)
        goto out;
    st = update_model(m, np, its, worst, lml, out, err);
    np = NULL; /* the model's, or freed */
out:
    km_gpr_payload_free(np);
    free(y2);
    free(kty);
    free(c0);
    return st;
}

/* The new payload (centres, norms, coefficients, weights, and with the
 * variance L, C and P: c (d + 4) + 3 c^2, the sums G, Kt and Pt: c^2 +
 * 4 c), the new rows' [y'' 1] (2 k), a block of K_nm (the sums' passes,
 * one at a time) and Falkon's two c x c factors, its right-hand side,
 * warm start and eight c-vectors (10 c + 8). */
size_t km_gpr_nys_update_bytes(const km_model *m, size_t k)
{
    uint64_t c = km_model_n_samples(m), b = km_nys_block_rows(k, c);
    uint64_t v = km_mul_sat(c, km_add_sat(km_model_n_features(m), 18));
    v = km_add_sat(v, km_mul_sat(6, km_mul_sat(c, c)));
    v = km_add_sat(v, km_add_sat(km_mul_sat(2, k), km_mul_sat(b, c)));
    v = km_add_sat(v, 8);
    return (size_t)km_mul_sat(v, sizeof(double));
}

/* ---------------------------------------------- the sums' file form
 *
 * Version 11's payload form 2 (km_gpr.c writes and reads the rest of the
 * payload): the sums of params.keep_factor after the factors. */

/* The sums of params.keep_factor (version 11, after the factors): rows,
 * sy, syy, G's triangle, Kt; with the variance P's triangle and Pt. */
void km_gpr_save_sums(const gpr_payload *p, size_t m, km_writer *w)
{
    km_write_u64(w, p->rows);
    km_write_f64(w, p->sy);
    km_write_f64(w, p->syy);
    km_tri_write(w, p->G, m);
    km_write_f64s(w, p->Kt, 2 * m);
    if (!p->P)
        return;
    km_tri_write(w, p->P, m);
    km_write_f64s(w, p->Pt, 2 * m);
}

/* KM_ECORRUPT unless the sums of params.keep_factor could be a fit's: at
 * least as many rows as centres (at most 2^53), sy and syy finite with
 * syy >= 0 and sy^2 <= rows syy (Cauchy-Schwarz), G and P as
 * km_sums_check says, Kt and Pt finite, and the sums' column of ones K^T 1 within
 * sqrt(rows G_ii) (P's likewise). */
km_status km_gpr_check_sums(const gpr_payload *p, size_t m, km_error *err)
{
    if (p->rows < m || p->rows > ((uint64_t)1 << 53))
        return km_error_set(err, KM_ECORRUPT, "model file: gaussian process "
                            "sums of %llu rows (between %zu centres and 2^53 "
                            "expected)", (unsigned long long)p->rows, m);
    double n = (double)p->rows;
    if (!isfinite(p->sy) || !isfinite(p->syy) || !(p->syy >= 0) ||
        p->sy * p->sy > n * p->syy * (1 + 1e-6) + 1e-300)
        return km_error_set(err, KM_ECORRUPT, "model file: gaussian process "
                            "sums of the targets are not those of %llu "
                            "numbers", (unsigned long long)p->rows);
    km_status st = km_sums_check(p->G, m, "gaussian process sums G", err);
    if (st == KM_OK && p->P)
        st = km_sums_check(p->P, m, "gaussian process sums P", err);
    if (st != KM_OK)
        return st;
    if (!km_all_finite(p->Kt, 2 * m) || (p->P && !km_all_finite(p->Pt, 2 * m)))
        return km_error_set(err, KM_ECORRUPT, "model file: gaussian process "
                            "sums K^T y hold a value that is not a finite "
                            "number");
    for (size_t i = 0; i < m; i++)
        if (fabs(p->Kt[2 * i + 1]) >
                sqrt(n * p->G[i * m + i]) * (1 + 1e-6) + 1e-300 ||
            (p->P && fabs(p->Pt[2 * i + 1]) >
                         sqrt(n * p->P[i * m + i]) * (1 + 1e-6) + 1e-300))
            return km_error_set(err, KM_ECORRUPT, "model file: gaussian "
                                "process sums K^T 1 [%zu] is larger than a "
                                "sum of %llu kernel values can be", i,
                                (unsigned long long)p->rows);
    return KM_OK;
}

/* The sums of params.keep_factor into p (G made symmetric); r->failed
 * or NULL members on failure. */
void km_gpr_read_sums(km_reader *r, gpr_payload *p, size_t m)
{
    p->rows = km_read_u64(r);
    p->sy = km_read_f64(r);
    p->syy = km_read_f64(r);
    if (r->failed || !(p->G = km_tri_read_sym(r, m)))
        return;
    if (!(p->Kt = km_read_f64s(r, 2 * m)) || !p->L)
        return;
    if ((p->P = km_tri_read(r, m)))
        p->Pt = km_read_f64s(r, 2 * m);
}
