/*
 * km_krr.c - kernel ridge regression: solve (K + alpha I) C = Y.
 *
 * The fit allocates one n x n buffer, fills its lower triangle with the
 * Gram matrix (DSYRK + vectorised map), and hands it to km_krr_solve
 * (also KPCA's inverse map), which adds alpha to the diagonal and factors
 * it in place with Cholesky. LAPACKE's row-major interface would
 * transpose into a second n x n copy, so the buffer is handed to the
 * column-major interface as what it also is: the upper triangle of the
 * same symmetric matrix. All outputs are solved with one DPOTRS.
 *
 * The factorisation is right-looking and blocked (DPOTRF on a diagonal
 * block, DTRSM below it, DSYRK on the trailing matrix), so a long fit
 * reports progress and can stop between blocks. Measured against one
 * OpenBLAS DPOTRF call at n = 6000 on 2 cores: 0.95-1.01x the time, the
 * same factor to 3e-15 (DSYRK does almost all the work either way).
 *
 * The model keeps a copy of the training X and the n x m dual
 * coefficients; prediction is km_kernel_expand in row blocks.
 *
 * Thread-safety: reentrant.
 */
#include <cblas.h>
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "km_internal.h"

typedef struct krr_payload {
    double *X;    /* n x d training rows */
    double *coef; /* n x m dual coefficients, row-major */
    double *xn;   /* n squared norms of X's rows (derived, not stored) */
} krr_payload;

km_krr_params km_krr_params_default(void)
{
    km_krr_params p = {1.0};
    return p;
}

km_status km_krr_check(const km_krr_params *p, km_error *err)
{
    if (!(p->alpha > 0) || !isfinite(p->alpha))
        return km_error_set(err, KM_EINVAL,
                            "params.alpha must be a finite number > 0");
    return KM_OK;
}

size_t km_krr_fit_bytes(size_t n, size_t d, size_t m)
{
    /* The Gram buffer, the kept X and coefficients, the solve's copy of Y,
     * and the norms. */
    return n * n * 8 + n * d * 8 + 3 * n * m * 8 + n * 8;
}

static void krr_free(void *payload)
{
    krr_payload *p = payload;
    if (!p)
        return;
    free(p->X);
    free(p->coef);
    free(p->xn);
    free(p);
}

static void krr_save(const void *payload, const km_model *m, km_writer *w)
{
    const krr_payload *p = payload;
    size_t n = km_model_n_samples(m);
    km_write_f64s(w, p->X, n * km_model_n_features(m));
    km_write_f64s(w, p->coef, n * km_model_n_outputs(m));
}

static km_status krr_load(km_reader *r, const km_model *m, void **payload,
                          km_error *err)
{
    size_t n = km_model_n_samples(m), d = km_model_n_features(m);
    size_t nx = km_mul3(n, d, 1), nc = km_mul3(n, km_model_n_outputs(m), 1);
    krr_payload *p = calloc(1, sizeof *p);
    if (!p)
        return km_error_set(err, KM_ENOMEM, "out of memory reading a model");
    p->X = nx ? km_read_f64s(r, nx) : NULL;
    p->coef = p->X && nc ? km_read_f64s(r, nc) : NULL;
    p->xn = p->coef ? km_sqnorms(p->X, n, d) : NULL;
    if (!p->X || !p->coef || !p->xn) {
        krr_free(p);
        return km_error_set(err, r->failed ? KM_ECORRUPT : KM_ENOMEM,
                            "model file: bad kernel ridge payload");
    }
    /* A fit checks its X and its coefficients finite. */
    if (!km_all_finite(p->X, nx) || !km_all_finite(p->coef, nc)) {
        krr_free(p);
        return km_error_set(err, KM_ECORRUPT, "model file: kernel ridge "
                            "training rows or coefficients are not all "
                            "finite numbers");
    }
    *payload = p;
    return KM_OK;
}

static size_t krr_bytes(const void *payload, const km_model *m)
{
    (void)payload;
    size_t n = km_model_n_samples(m);
    return sizeof(krr_payload) +
           n * (km_model_n_features(m) + km_model_n_outputs(m) + 1) *
               sizeof(double);
}

/* Columns per block of the Cholesky factorisation. */
#define CHOL_BLOCK 768

/*
 * Cholesky A = L L^T in place on the lower triangle of the row-major n x n
 * A, reporting progress from f0 to f1 by the share of flops done.
 */
static km_status cholesky(double *A, size_t n, const char *what,
                          const km_fit_control *ctl, double f0, double f1,
                          km_error *err)
{
    for (size_t k = 0; k < n; k += CHOL_BLOCK) {
        size_t kb = n - k < CHOL_BLOCK ? n - k : CHOL_BLOCK, m = n - k - kb;
        double *A11 = A + k * n + k, *A21 = A11 + kb * n;
        lapack_int info = LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'U',
                                         (lapack_int)kb, A11, (lapack_int)n);
        if (info > 0)
            return km_error_set(err, KM_ENOTPD,
                                "%s plus alpha*I is not positive definite "
                                "(Cholesky failed at row %zu); use a larger "
                                "params.alpha or a positive definite kernel",
                                what, k + (size_t)info);
        if (info < 0)
            return km_error_set(err, KM_EINTERNAL, "dpotrf argument %d",
                                (int)-info);
        if (m == 0)
            break;
        cblas_dtrsm(CblasRowMajor, CblasRight, CblasLower, CblasTrans,
                    CblasNonUnit, (int)m, (int)kb, 1.0, A11, (int)n, A21,
                    (int)n);
        cblas_dsyrk(CblasRowMajor, CblasLower, CblasNoTrans, (int)m, (int)kb,
                    -1.0, A21, (int)n, 1.0, A21 + kb, (int)n);
        double left = (double)m / (double)n;
        if (km_progress(ctl, f0 + (f1 - f0) * (1.0 - left * left * left)))
            return km_error_set(err, KM_ECANCELLED, "fit cancelled");
    }
    return KM_OK;
}

km_status km_krr_solve(double *G, size_t n, double alpha, const double *Y,
                       size_t m, double *C, const char *what,
                       const km_fit_control *ctl, double f0, double f1,
                       km_error *err)
{
    for (size_t i = 0; i < n; i++)
        G[i * n + i] += alpha;
    km_status st = cholesky(G, n, what, ctl, f0, f1, err);
    if (st != KM_OK)
        return st;
    /* B is column-major n x m: output j is contiguous. */
    double *B = malloc(n * m * sizeof *B);
    if (!B)
        return km_error_set(err, KM_ENOMEM, "out of memory for a solve");
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < m; j++)
            B[j * n + i] = Y[i * m + j];
    /* Row-major lower triangle == column-major upper triangle. */
    lapack_int info = LAPACKE_dpotrs(LAPACK_COL_MAJOR, 'U', (lapack_int)n,
                                     (lapack_int)m, G, (lapack_int)n, B,
                                     (lapack_int)n);
    if (info == 0)
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < m; j++)
                C[i * m + j] = B[j * n + i];
    free(B);
    if (info != 0)
        return km_error_set(err, KM_EINTERNAL, "dpotrs argument %d",
                            (int)-info);
    return KM_OK;
}

/*
 * The training figure "rkhs_norm_sq", per output: |f|_H^2 = a^T K a of
 * the output's dual coefficients a, without K: (K + alpha I) a = y gives
 * a^T K a = a^T y - alpha a^T a.
 */
static km_status add_rkhs_norm(km_model *model, const double *Y, double alpha)
{
    size_t n = km_model_n_samples(model), m = km_model_n_outputs(model);
    const double *C = ((const krr_payload *)km_model_payload(model))->coef;
    double *v = malloc(m * sizeof *v);
    if (!v)
        return KM_ENOMEM;
    for (size_t j = 0; j < m; j++) {
        km_ksum s = {0, 0};
        for (size_t i = 0; i < n; i++) {
            double a = C[i * m + j];
            km_ksum_add(&s, a * Y[i * m + j]);
            km_ksum_add(&s, -alpha * (a * a));
        }
        v[j] = km_ksum_get(&s);
    }
    km_status st = km_info_add(km_model_training_mut(model), "rkhs_norm_sq",
                               KM_INFO_NUMBER, m > 1, v, m);
    free(v);
    return st;
}

km_status km_krr_fit(const km_kernel *kernel, const km_krr_params *params,
                     const double *X, size_t n, size_t d, const double *Y,
                     size_t m, const km_fit_control *ctl, km_model **out,
                     km_error *err)
{
    km_problem pb = {X, n, d, Y, m, NULL, 0};
    km_fit_frame f;
    double *K = NULL;
    krr_payload *p = NULL;
    km_model *model = NULL;
    km_status st = km_fit_begin(&f, KM_ALGO_KRR, kernel, params, &pb, err);
    if (st != KM_OK)
        goto out;
    const km_kernel *k = &f.k;

    K = malloc(n * n * sizeof *K);
    p = calloc(1, sizeof *p);
    if (!K || !p) {
        st = km_error_set(err, KM_ENOMEM,
                          "out of memory for a %zu x %zu kernel matrix", n, n);
        goto out;
    }
    if (km_progress(ctl, 0.0)) {
        st = km_error_set(err, KM_ECANCELLED, "fit cancelled");
        goto out;
    }
    if ((st = km_gram_sym(k, X, n, d, K, 0, err)) != KM_OK)
        goto out;
    if (km_progress(ctl, 0.1)) {
        st = km_error_set(err, KM_ECANCELLED, "fit cancelled");
        goto out;
    }
    if (!(p->coef = malloc(n * m * sizeof *p->coef))) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for the model");
        goto out;
    }
    if ((st = km_krr_solve(K, n, params->alpha, Y, m, p->coef,
                           "the kernel matrix", ctl, 0.1, 0.9, err)) != KM_OK)
        goto out;
    free(K);
    K = NULL;
    if (!(p->X = malloc(n * d * sizeof *p->X)) ||
        !(p->xn = km_sqnorms(X, n, d))) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for the model");
        goto out;
    }
    memcpy(p->X, X, n * d * sizeof *X);
    if (!km_all_finite(p->coef, n * m)) {
        st = km_error_set(err, KM_ENOTPD,
                          "the solve gave non-finite coefficients: the "
                          "kernel matrix is numerically singular; use "
                          "a larger params.alpha");
        goto out;
    }

    st = km_fit_model(&f, d, n, m, p, &model, err);
    p = NULL; /* owned by the model now, also on failure */
    if (st != KM_OK)
        goto out;
    if (km_info_add1(km_model_params_mut(model), "alpha", KM_INFO_NUMBER,
                     params->alpha) != KM_OK ||
        add_rkhs_norm(model, Y, params->alpha) != KM_OK) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for the model");
        goto out;
    }
    km_progress(ctl, 1.0);
    *out = model;
    model = NULL;
out:
    km_model_free(model);
    krr_free(p);
    free(K);
    km_fit_cleanup(&f);
    return st;
}

km_status km_krr_predict(const km_model *m, const double *X, size_t n,
                         double *out, km_error *err)
{
    km_status st = km_model_expect_input(m, KM_ALGO_KRR, "predict", X, n, err);
    if (st != KM_OK)
        return st;
    size_t d = km_model_n_features(m);
    const krr_payload *p = km_model_payload(m);
    return km_kernel_expand(km_model_kernel(m), p->X, km_model_n_samples(m),
                            d, p->xn, p->coef, km_model_n_outputs(m), NULL, X, n,
                            out, err);
}

const double *km_krr_dual_coef(const km_model *m)
{
    if (km_model_algorithm(m) != KM_ALGO_KRR)
        return NULL;
    return ((const krr_payload *)km_model_payload(m))->coef;
}

/* ------------------------------------------------------------ descriptor */

static void params_default(void *params)
{
    *(km_krr_params *)params = km_krr_params_default();
}

static uint64_t max_outputs(uint64_t ns)
{
    (void)ns;
    return KM_MODEL_MAX_OUTPUTS;
}

/* X, coefficients: exactly. */
static void payload_range(uint64_t ns, uint64_t nf, uint64_t no, uint64_t *lo,
                          uint64_t *hi)
{
    *lo = *hi = km_add_sat(km_f64s_bytes(km_mul_sat(ns, nf)),
                           km_f64s_bytes(km_mul_sat(ns, no)));
}

static km_status check(const void *params, const km_problem *pb,
                       km_error *err)
{
    (void)pb;
    return km_krr_check(params, err);
}

static size_t fit_bytes(const void *params, const km_problem *pb)
{
    (void)params;
    return km_krr_fit_bytes(pb->n, pb->d, pb->m);
}

static km_status fit(const km_kernel *k, const void *params,
                     const km_problem *pb, const km_fit_control *ctl,
                     km_model **out, km_error *err)
{
    return km_krr_fit(k, params, pb->X, pb->n, pb->d, pb->y, pb->m, ctl, out,
                      err);
}

const km_algo km_krr_algo = {
    .outputs = KM_OUT_VALUES,
    .params_size = sizeof(km_krr_params),
    .params_default = params_default,
    .check = check,
    .fit_bytes = fit_bytes,
    .fit = fit,
    .values = km_krr_predict,
    .max_outputs = max_outputs,
    .payload_range = payload_range,
    .free_payload = krr_free,
    .save = krr_save,
    .load = krr_load,
    .bytes = krr_bytes,
};
