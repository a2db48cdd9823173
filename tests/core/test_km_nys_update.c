/*
 * test_km_nys_update.c - updates of krr nystrom models fitted with
 * params.keep_factor (km_model_update; the model keeps its centres and
 * the normal equations' sums K_nm^T K_nm and K_nm^T Y): after each of
 * several updates in a row, the predictions equal (a) a direct solve
 * written here of (K_nm^T K_nm + alpha K_mm) C = K_nm^T Y over all the
 * rows so far with the same centres (kernel values by km_kernel_eval,
 * a dense Cholesky of this file) and (b) a nystrom refit on all the rows
 * with those centres given, both to 1e-6 relative with cg_tol 1e-10 (CG
 * stops at a relative residual of the preconditioned system of 1e-10;
 * the preconditioned system's condition number, well below 10^4 here,
 * bounds the coefficients' error), for 1 and 3 outputs. The file form
 * (version 10) round-trips and its sums are checked on load; admission
 * counts them; the solvers keep_factor does not apply to are refused.
 * gpr nystrom models fitted with params.keep_factor likewise (with and
 * without normalize_y and the variance), against the normal equations
 * and the DTC formulas written here (below: "gpr"), their file form
 * (version 11) and its hostile variants.
 */
#include <stdint.h>

#include "../check_main.h"
#include "model_bytes.h"
#include "algorithms/km_algorithms_internal.h"
#include "algorithms/km_gpr.h"
#include "km.h"
#include "model/km_model_internal.h"

#define TOL 1e-6
#define D 3
#define NT 25
#define NC 30 /* centres */

#include "update_data.h"

static km_krr_params nys_params(void)
{
    km_krr_params p = km_krr_params_default();
    p.alpha = 0.05;
    p.solver = KM_KRR_SOLVER_NYSTROM;
    p.n_centres = NC;
    p.cg_tol = 1e-10;
    p.cg_max_iter = 1000;
    p.keep_factor = 1;
    return p;
}

static km_model *fit_nys(const km_kernel *k, const km_krr_params *p,
                         const double *X, size_t n, const double *Y, size_t q,
                         const size_t *centres)
{
    km_model *m = NULL;
    km_error err = {0};
    ck_assert_msg(km_krr_fit_nystrom(k, p, X, n, D, Y, q, centres, NULL,
                                     NULL, NULL, &m, &err) == KM_OK,
                  "%s", err.message);
    return m;
}

static km_model *update(const km_model *m, const double *X, size_t k,
                        const double *Y, size_t q)
{
    km_model *out = NULL;
    km_error err = {0};
    ck_assert_msg(km_model_update(m, X, k, D, Y, q, NULL, &out, &err) ==
                      KM_OK, "%s", err.message);
    return out;
}

/* Solves S C = R in place (S m x m symmetric positive definite, R m x q,
 * both row-major) by a plain Cholesky. */
static void chol_solve(double *S, size_t m, double *R, size_t q)
{
    for (size_t j = 0; j < m; j++) {
        for (size_t k = 0; k < j; k++)
            S[j * m + j] -= S[j * m + k] * S[j * m + k];
        ck_assert(S[j * m + j] > 0);
        S[j * m + j] = sqrt(S[j * m + j]);
        for (size_t i = j + 1; i < m; i++) {
            for (size_t k = 0; k < j; k++)
                S[i * m + j] -= S[i * m + k] * S[j * m + k];
            S[i * m + j] /= S[j * m + j];
        }
    }
    for (size_t c = 0; c < q; c++) {
        for (size_t i = 0; i < m; i++) { /* L z = r */
            for (size_t k = 0; k < i; k++)
                R[i * q + c] -= S[i * m + k] * R[k * q + c];
            R[i * q + c] /= S[i * m + i];
        }
        for (size_t i = m; i-- > 0;) { /* L^T c = z */
            for (size_t k = i + 1; k < m; k++)
                R[i * q + c] -= S[k * m + i] * R[k * q + c];
            R[i * q + c] /= S[i * m + i];
        }
    }
}

/* The reference predictions on T (NT x q): C of the normal equations of
 * X's n rows for the centres X[idx[j]], then k(T, Z) C. */
static void reference(const km_kernel *k, const double *X, size_t n,
                      const double *Y, size_t q, const size_t *idx,
                      double alpha, const double *T, double *out)
{
    double *S = calloc(NC * NC, sizeof *S), *R = calloc(NC * q, sizeof *R);
    double *kr = malloc(NC * sizeof *kr);
    for (size_t i = 0; i < n; i++) {
        for (size_t a = 0; a < NC; a++)
            kr[a] = km_kernel_eval(k, X + i * D, X + idx[a] * D, D);
        for (size_t a = 0; a < NC; a++) {
            for (size_t b = 0; b < NC; b++)
                S[a * NC + b] += kr[a] * kr[b];
            for (size_t c = 0; c < q; c++)
                R[a * q + c] += kr[a] * Y[i * q + c];
        }
    }
    for (size_t a = 0; a < NC; a++)
        for (size_t b = 0; b < NC; b++)
            S[a * NC + b] += alpha * km_kernel_eval(k, X + idx[a] * D,
                                                    X + idx[b] * D, D);
    chol_solve(S, NC, R, q);
    for (size_t t = 0; t < NT; t++)
        for (size_t c = 0; c < q; c++) {
            double s = 0;
            for (size_t a = 0; a < NC; a++)
                s += km_kernel_eval(k, T + t * D, X + idx[a] * D, D) *
                     R[a * q + c];
            out[t * q + c] = s;
        }
    free(S);
    free(R);
    free(kr);
}

static void close_to(const double *a, const double *b, size_t n,
                     const char *what, size_t step)
{
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(fabs(a[i] - b[i]) <= TOL * fmax(1.0, fabs(b[i])),
                      "%s after update %zu [%zu]: update %.17g, reference "
                      "%.17g", what, step, i, a[i], b[i]);
}

static void nys_case(size_t q)
{
    const size_t ks[] = {1, 7, 60, 3}, n0 = 120;
    size_t total = n0, idx[NC];
    for (size_t i = 0; i < 4; i++)
        total += ks[i];
    double *X, *Y, *T, *YT;
    make_data(total, q, &X, &Y);
    make_data(NT, q, &T, &YT);
    for (size_t j = 0; j < NC; j++) /* sorted, distinct, among the first */
        idx[j] = 4 * j + 1;
    km_kernel k = rbf(0.5);
    km_krr_params p = nys_params();
    km_model *m = fit_nys(&k, &p, X, n0, Y, q, idx);
    ck_assert_ptr_null(km_model_update_refusal(m));
    double *a = malloc(NT * q * sizeof *a), *ref = malloc(NT * q * sizeof *a);
    double *b = malloc(NT * q * sizeof *a);
    km_error err = {0};
    size_t n = n0;
    for (size_t i = 0; i < 4; i++) {
        km_model *u = update(m, X + n * D, ks[i], Y + n * q, q);
        n += ks[i];
        ck_assert_uint_eq(km_model_n_samples(u), NC);
        ck_assert(km_predict(u, KM_OUT_VALUES, T, NT, a, &err) == KM_OK);
        reference(&k, X, n, Y, q, idx, p.alpha, T, ref);
        close_to(a, ref, NT * q, "direct solve", i);
        km_model *r = fit_nys(&k, &p, X, n, Y, q, idx);
        ck_assert(km_predict(r, KM_OUT_VALUES, T, NT, b, &err) == KM_OK);
        close_to(a, b, NT * q, "refit with the centres", i);
        const km_info_entry *e = km_info_find(km_model_training(u),
                                              "residual");
        ck_assert(e && e->count == 1 && e->values[0] <= p.cg_tol);
        km_model_free(r);
        km_model_free(m);
        m = u;
    }
    const km_info_entry *e = km_info_find(km_model_training(m), "updates");
    ck_assert(e && e->count == 1 && e->values[0] == 4);
    km_model_free(m);
    free(a);
    free(b);
    free(ref);
    free(X);
    free(Y);
    free(T);
    free(YT);
}

START_TEST(nys_equals_refit)
{
    seed_state = 11;
    nys_case(1);
    nys_case(3);
}
END_TEST

/* buf with the 8 bytes at `at` set to v and the checksum refreshed: load
 * refuses it naming the nystrom statistics. */
static void refused(const unsigned char *buf, size_t len, size_t at,
                    double v)
{
    refused_at(buf, len, at, v, "nystrom statistics");
}

/* The file: version 10, the same answers and update after a round trip,
 * its bytes known before the read; G's numbers checked on load. */
START_TEST(nys_file)
{
    seed_state = 12;
    size_t n = 80, k = 9, q = 2;
    double *X, *Y;
    make_data(n + k, q, &X, &Y);
    km_kernel kr = rbf(0.5);
    km_krr_params p = nys_params();
    km_model *m = fit_nys(&kr, &p, X, n, Y, q, NULL);
    unsigned char *buf = NULL;
    size_t len = 0;
    km_error err = {0};
    ck_assert(km_model_save_buffer(m, &buf, &len, &err) == KM_OK);
    ck_assert_uint_eq(get32(buf + 4), 10);
    km_load_bytes lb;
    ck_assert(km_model_load_bytes(buf, len, &lb, &err) == KM_OK);
    km_model *back = NULL;
    ck_assert_msg(km_model_load_buffer(buf, len, &back, &err) == KM_OK, "%s",
                  err.message);
    ck_assert_uint_eq(km_model_bytes(back), km_model_bytes(m));
    ck_assert_uint_eq(lb.kept, km_model_bytes(back));
    ck_assert_uint_ge(km_model_bytes(m), 8 * NC * NC);
    km_model *u1 = update(m, X + n * D, k, Y + n * q, q);
    km_model *u2 = update(back, X + n * D, k, Y + n * q, q);
    double a[10 * 2], b[10 * 2];
    ck_assert(km_predict(u1, KM_OUT_VALUES, X, 10, a, &err) == KM_OK);
    ck_assert(km_predict(u2, KM_OUT_VALUES, X, 10, b, &err) == KM_OK);
    for (size_t i = 0; i < 20; i++)
        ck_assert_double_eq(a[i], b[i]);
    /* the end: G's triangle (count, values), KtY (count, NC q values),
     * the checksum; G's last value is its diagonal's last */
    size_t kty = len - 4 - NC * q * 8, g_end = kty - 8;
    refused(buf, len, g_end - 8, -1.0);
    refused(buf, len, g_end - 8, NAN);
    refused(buf, len, g_end - 8 * NC, 1e300); /* G[NC-1][0] */
    refused(buf, len, kty, INFINITY);
    free(buf);
    km_model_free(u1);
    km_model_free(u2);
    km_model_free(back);
    km_model_free(m);
    free(X);
    free(Y);
}
END_TEST

/* Without keep_factor a nystrom model names it; keep_factor does not
 * apply to the rff and auto solvers; bad rows are refused as a fit's. */
START_TEST(nys_refusals)
{
    seed_state = 13;
    size_t n = 60, q = 1;
    double *X, *Y;
    make_data(n, q, &X, &Y);
    km_kernel kr = rbf(0.5);
    km_krr_params p = nys_params();
    p.keep_factor = 0;
    km_model *plain = fit_nys(&kr, &p, X, n, Y, q, NULL), *out = NULL;
    km_error err = {0};
    ck_assert_int_eq(km_model_update(plain, X, 2, D, Y, q, NULL, &out, &err),
                     KM_ECONFLICT);
    ck_assert_msg(strstr(err.message, "keep_factor") &&
                      strstr(err.message, "nystrom"), "%s", err.message);
    ck_assert_uint_eq(km_model_update_bytes(plain, 2), SIZE_MAX);
    km_krr_params o = km_krr_params_default();
    o.keep_factor = 1;
    o.solver = KM_KRR_SOLVER_RFF;
    ck_assert_int_eq(km_krr_check(&o, n, &err), KM_EINVAL);
    ck_assert_msg(strstr(err.message, "keep_factor"), "%s", err.message);
    o.solver = KM_KRR_SOLVER_AUTO;
    ck_assert_int_eq(km_krr_check(&o, n, &err), KM_EINVAL);
    o.solver = KM_KRR_SOLVER_NYSTROM;
    ck_assert_int_eq(km_krr_check(&o, n, &err), KM_OK);

    /* admission counts the kept sums, G and KtY */
    km_problem pb = {X, n, D, Y, q, NULL, 0};
    size_t without = km_algorithm_fit_bytes(KM_ALGO_KRR, &p, &pb);
    p.keep_factor = 1;
    size_t with = km_algorithm_fit_bytes(KM_ALGO_KRR, &p, &pb);
    ck_assert_uint_ge(with - without, 8 * NC * (NC + q));
    km_model *m = fit_nys(&kr, &p, X, n, Y, q, NULL);
    ck_assert(km_model_update_bytes(m, 5) > 8 * NC * NC);
    ck_assert_int_eq(km_model_update(m, X, 2, D - 1, Y, q, NULL, &out, &err),
                     KM_EINVAL);
    double bad[D] = {1, NAN, 0}, y1 = 1;
    ck_assert_int_eq(km_model_update(m, bad, 1, D, &y1, q, NULL, &out, &err),
                     KM_EINVAL);
    ck_assert_msg(strstr(err.message, "X[0][1]"), "%s", err.message);
    km_model_free(plain);
    km_model_free(m);
    free(X);
    free(Y);
}
END_TEST


/* ------------------------------------------------------------ gpr
 *
 * gpr nystrom models fitted with params.keep_factor: after each of
 * several updates in a row (new rows whose targets drift, so that
 * normalize_y's mean and std move), against a reference written here
 * over all the rows so far with the same centres Z (kernel values by
 * km_kernel_eval, dense Cholesky solves of this file), y' = (y - mean) /
 * std over all the rows (population std) with normalize_y, else y, alpha
 * = noise / s, G = K_nm^T K_nm, r = K_nm^T y':
 *   mean   std k(x, Z) c + mean, (G + alpha K_mm) c = r (CG's tolerance:
 *          1e-6 relative, as krr's above);
 *   var    s std^2 (k(x, x) - k_x^T K_mm^-1 k_x + alpha k_x^T (G + alpha
 *          K_mm)^-1 k_x), the DTC variance written without Phi (alpha I
 *          + Phi^T Phi = L^-1 (G + alpha K_mm) L^-T), to 1e-9 relative;
 *   lml    -(y'^T y' - r^T (G + alpha K_mm)^-1 r) / (2 s alpha) - (n log s
 *          + (n - m) log alpha + log det(G + alpha K_mm) - log det K_mm) /
 *          2 - n log(2 pi) / 2, to 1e-9 relative.
 * And a refit of the nystrom solver on all the rows with those centres
 * to the same tolerances. */

#define GPR_NOISE 0.05
#define GPR_SIGNAL 2.0
#define GPR_TOL 1e-9

static km_gpr_params gpr_params(int normalize, int variance)
{
    km_gpr_params p = km_gpr_params_default();
    p.noise = GPR_NOISE;
    p.signal_variance = GPR_SIGNAL;
    p.normalize_y = normalize;
    p.solver = KM_GPR_SOLVER_NYSTROM;
    p.n_centres = NC;
    p.cg_tol = 1e-12;
    p.cg_max_iter = 1000;
    p.variance = variance;
    p.keep_factor = 1;
    return p;
}

static km_model *fit_gpr(const km_kernel *k, const km_gpr_params *p,
                         const double *X, size_t n, const double *y,
                         const size_t *centres)
{
    km_model *m = NULL;
    km_error err = {0};
    ck_assert_msg(km_gpr_fit_nystrom(k, p, X, n, D, y, centres, NULL, &m,
                                     &err) == KM_OK, "%s", err.message);
    ck_assert_ptr_null(km_info_find(km_model_training(m), "kmm_shift"));
    return m;
}

/* log det of the m x m symmetric positive definite S, whose lower
 * triangle becomes its Cholesky factor (chol_solve's, with no right-hand
 * side). */
static double chol_logdet(double *S, size_t m)
{
    chol_solve(S, m, NULL, 0);
    double ld = 0;
    for (size_t i = 0; i < m; i++)
        ld += 2 * log(S[i * m + i]);
    return ld;
}

/* x := F^-T F^-1 x for the lower factor F (m x m) of chol_solve. */
static void chol_apply(const double *F, size_t m, double *x)
{
    for (size_t i = 0; i < m; i++) {
        for (size_t k = 0; k < i; k++)
            x[i] -= F[i * m + k] * x[k];
        x[i] /= F[i * m + i];
    }
    for (size_t i = m; i-- > 0;) {
        for (size_t k = i + 1; k < m; k++)
            x[i] -= F[k * m + i] * x[k];
        x[i] /= F[i * m + i];
    }
}

/* The reference mean, variance on T and the lml of X's n rows. */
static void gpr_reference(const km_kernel *k, const double *X, size_t n,
                          const double *y, const size_t *idx, int normalize,
                          const double *T, double *mean, double *var,
                          double *lml)
{
    double mu = 0, sd = 1, alpha = GPR_NOISE / GPR_SIGNAL;
    if (normalize) {
        double s = 0, v = 0;
        for (size_t i = 0; i < n; i++)
            s += y[i];
        mu = s / (double)n;
        for (size_t i = 0; i < n; i++)
            v += (y[i] - mu) * (y[i] - mu);
        sd = sqrt(v / (double)n);
    }
    double *S = calloc(NC * NC, sizeof *S), *Kmm = calloc(NC * NC, sizeof *S);
    double *r = calloc(NC, sizeof *r), *c = malloc(NC * sizeof *c);
    double *kr = malloc(NC * sizeof *kr), *u = malloc(NC * sizeof *u);
    double yy = 0;
    for (size_t i = 0; i < n; i++) {
        double t = (y[i] - mu) / sd;
        yy += t * t;
        for (size_t a = 0; a < NC; a++)
            kr[a] = km_kernel_eval(k, X + i * D, X + idx[a] * D, D);
        for (size_t a = 0; a < NC; a++) {
            for (size_t b = 0; b < NC; b++)
                S[a * NC + b] += kr[a] * kr[b];
            r[a] += kr[a] * t;
        }
    }
    for (size_t a = 0; a < NC; a++)
        for (size_t b = 0; b < NC; b++) {
            Kmm[a * NC + b] = km_kernel_eval(k, X + idx[a] * D,
                                             X + idx[b] * D, D);
            S[a * NC + b] += alpha * Kmm[a * NC + b];
        }
    double ld_s = chol_logdet(S, NC), ld_k = chol_logdet(Kmm, NC);
    memcpy(c, r, NC * sizeof *c);
    chol_apply(S, NC, c);
    double rc = 0;
    for (size_t a = 0; a < NC; a++)
        rc += r[a] * c[a];
    *lml = -(yy - rc) / (2 * GPR_SIGNAL * alpha) -
           ((double)n * log(GPR_SIGNAL) + (double)(n - NC) * log(alpha) +
            ld_s - ld_k) / 2 -
           (double)n * log(2 * M_PI) / 2;
    for (size_t t = 0; t < NT; t++) {
        double f = 0, q1 = 0, q2 = 0;
        for (size_t a = 0; a < NC; a++) {
            kr[a] = km_kernel_eval(k, T + t * D, X + idx[a] * D, D);
            f += kr[a] * c[a];
        }
        mean[t] = sd * f + mu;
        memcpy(u, kr, NC * sizeof *u);
        chol_apply(Kmm, NC, u);
        for (size_t a = 0; a < NC; a++)
            q1 += kr[a] * u[a];
        memcpy(u, kr, NC * sizeof *u);
        chol_apply(S, NC, u);
        for (size_t a = 0; a < NC; a++)
            q2 += kr[a] * u[a];
        var[t] = GPR_SIGNAL * sd * sd *
                 (km_kernel_eval(k, T + t * D, T + t * D, D) - q1 +
                  alpha * q2);
    }
    free(S);
    free(Kmm);
    free(r);
    free(c);
    free(kr);
    free(u);
}

static void near(double a, double b, double tol, int relative,
                 const char *what, size_t step, size_t i)
{
    double scale = relative ? fabs(b) : fmax(1.0, fabs(b));
    ck_assert_msg(fabs(a - b) <= tol * scale,
                  "%s after update %zu [%zu]: update %.17g, reference "
                  "%.17g", what, step, i, a, b);
}

/* u's mean, variances and lml against the reference's (what says
 * which). */
static void gpr_compare(const km_model *u, const double *T,
                        const double *mean, const double *var, double lml,
                        int variance, const char *what, size_t step)
{
    double a[NT];
    km_error err = {0};
    ck_assert(km_predict(u, KM_OUT_VALUES, T, NT, a, &err) == KM_OK);
    for (size_t i = 0; i < NT; i++)
        near(a[i], mean[i], TOL, 0, what, step, i);
    const km_info_entry *e = km_info_find(km_model_training(u),
                                          "log_marginal_likelihood");
    if (!variance) {
        ck_assert_ptr_null(e);
        ck_assert_int_eq(km_predict(u, KM_OUT_VARIANCES, T, NT, a, &err),
                         KM_ECONFLICT);
        return;
    }
    ck_assert(km_predict(u, KM_OUT_VARIANCES, T, NT, a, &err) == KM_OK);
    for (size_t i = 0; i < NT; i++)
        near(a[i], var[i], GPR_TOL, 1, what, step, i);
    ck_assert(e && e->count == 1);
    near(e->values[0], lml, GPR_TOL, 1, what, step, NT);
}

/* n rows of targets that drift with the row (so that normalize_y's mean
 * and std move with each update). */
static void gpr_data(size_t n, double **X, double **y)
{
    make_data(n, 1, X, y);
    for (size_t i = 0; i < n; i++)
        (*y)[i] = 3 + 1.5 * (*y)[i] + 0.02 * (double)i;
}

static void gpr_case(int normalize, int variance)
{
    const size_t ks[] = {1, 7, 60, 3}, n0 = 120;
    size_t total = n0, idx[NC];
    for (size_t i = 0; i < 4; i++)
        total += ks[i];
    double *X, *y, *T, *yt;
    gpr_data(total, &X, &y);
    gpr_data(NT, &T, &yt);
    for (size_t j = 0; j < NC; j++) /* sorted, distinct, among the first */
        idx[j] = 4 * j + 1;
    km_kernel k = rbf(0.5);
    km_gpr_params p = gpr_params(normalize, variance);
    km_model *m = fit_gpr(&k, &p, X, n0, y, idx);
    ck_assert_ptr_null(km_model_update_refusal(m));
    double mean[NT], var[NT], lml;
    size_t n = n0;
    for (size_t i = 0; i < 4; i++) {
        km_model *u = update(m, X + n * D, ks[i], y + n, 1);
        n += ks[i];
        ck_assert_uint_eq(km_model_n_samples(u), NC);
        gpr_reference(&k, X, n, y, idx, normalize, T, mean, var, &lml);
        gpr_compare(u, T, mean, var, lml, variance, "direct formulas", i);
        km_model *r = fit_gpr(&k, &p, X, n, y, idx);
        gpr_compare(r, T, mean, var, lml, variance, "refit (the reference's "
                    "own check)", i);
        const km_info_entry *e = km_info_find(km_model_training(u),
                                              "residual");
        ck_assert(e && e->count == 1 && e->values[0] <= p.cg_tol);
        km_model_free(r);
        km_model_free(m);
        m = u;
    }
    const km_info_entry *e = km_info_find(km_model_training(m), "updates");
    ck_assert(e && e->count == 1 && e->values[0] == 4);
    km_model_free(m);
    free(X);
    free(y);
    free(T);
    free(yt);
}

START_TEST(gpr_equals_formulas)
{
    for (int normalize = 0; normalize < 2; normalize++)
        for (int variance = 0; variance < 2; variance++) {
            seed_state = 21 + (uint64_t)(2 * normalize + variance);
            gpr_case(normalize, variance);
        }
}
END_TEST

/* buf with the 8 bytes at `at` set to v and the checksum refreshed: load
 * refuses it naming the gpr sums. */
static void gpr_refused(const unsigned char *buf, size_t len, size_t at,
                        double v)
{
    refused_at(buf, len, at, v, "gaussian process sums");
}

/* m saved and loaded back: version 11, the same bytes, answers (values,
 * variances on T's 10 rows) and next update by X's k rows; returns the
 * loaded model. */
static km_model *gpr_round_trip(const km_model *m, const double *X,
                                const double *y, size_t k, const double *T,
                                unsigned char **buf, size_t *len)
{
    km_error err = {0};
    ck_assert(km_model_save_buffer(m, buf, len, &err) == KM_OK);
    ck_assert_uint_eq(get32(*buf + 4), 11);
    km_load_bytes lb;
    ck_assert(km_model_load_bytes(*buf, *len, &lb, &err) == KM_OK);
    km_model *back = NULL;
    ck_assert_msg(km_model_load_buffer(*buf, *len, &back, &err) == KM_OK,
                  "%s", err.message);
    ck_assert_uint_eq(km_model_bytes(back), km_model_bytes(m));
    ck_assert_uint_eq(lb.kept, km_model_bytes(back));
    ck_assert_uint_ge(km_model_bytes(m), 8 * 4 * NC * NC);
    km_model *u1 = update(m, X, k, y, 1), *u2 = update(back, X, k, y, 1);
    double a[10], b[10], va[10], vb[10];
    ck_assert(km_predict(u1, KM_OUT_VALUES, T, 10, a, &err) == KM_OK);
    ck_assert(km_predict(u2, KM_OUT_VALUES, T, 10, b, &err) == KM_OK);
    ck_assert(km_predict(u1, KM_OUT_VARIANCES, T, 10, va, &err) == KM_OK);
    ck_assert(km_predict(u2, KM_OUT_VARIANCES, T, 10, vb, &err) == KM_OK);
    for (size_t i = 0; i < 10; i++) {
        ck_assert_double_eq(a[i], b[i]);
        ck_assert_double_eq(va[i], vb[i]);
    }
    km_model_free(u1);
    km_model_free(u2);
    return back;
}

/* The file of a fitted and of an updated model (version 11) round-trips;
 * its sums are checked on load; a truncated file is refused. */
START_TEST(gpr_file)
{
    seed_state = 31;
    size_t n = 80, k = 9;
    double *X, *y;
    gpr_data(n + 2 * k, &X, &y);
    km_kernel kr = rbf(0.5);
    km_gpr_params p = gpr_params(1, 1);
    km_model *m = fit_gpr(&kr, &p, X, n, y, NULL);
    unsigned char *buf = NULL, *buf2 = NULL;
    size_t len = 0, len2 = 0;
    km_model *back = gpr_round_trip(m, X + n * D, y + n, k, X, &buf, &len);
    km_model *u = update(m, X + n * D, k, y + n, 1);
    km_model *uback = gpr_round_trip(u, X + (n + k) * D, y + n + k, k, X,
                                     &buf2, &len2);
    /* The end: rows, sy, syy, G's triangle (count, values), Kt (count,
     * 2 NC values), P's triangle, Pt, the checksum. */
    size_t tri = 8 * (NC * (NC + 1) / 2), kt = 8 * 2 * NC;
    size_t pt = len - 4 - kt, p_end = pt - 8, kt_at = p_end - tri - 8 - kt;
    size_t g_end = kt_at - 8, syy = g_end - tri - 8 - 8;
    gpr_refused(buf, len, p_end - 8, NAN);       /* P's last diagonal */
    gpr_refused(buf, len, p_end - 8, -1.0);
    gpr_refused(buf, len, p_end - 8 * NC, 1e300); /* P[NC-1][0] */
    gpr_refused(buf, len, pt + 8, 1e300);         /* Phi^T 1 [0] */
    gpr_refused(buf, len, pt, INFINITY);
    gpr_refused(buf, len, kt_at + 8, NAN);        /* K^T 1 [0] */
    gpr_refused(buf, len, kt_at + 8, 1e300);
    gpr_refused(buf, len, g_end - 8, NAN);        /* G's last diagonal */
    gpr_refused(buf, len, g_end - 8 * NC, 1e300); /* G[NC-1][0] */
    gpr_refused(buf, len, syy, -1.0);
    gpr_refused(buf, len, syy - 8, 1e300);        /* sy */
    gpr_refused(buf, len, syy - 16, 1.0);         /* rows: 2^62 and more */
    /* truncated: the last value of Pt gone, the checksum refreshed */
    unsigned char *t = malloc(len);
    memcpy(t, buf, len - 12);
    fix_crc(t, len - 8);
    km_model *x = NULL;
    km_error err = {0};
    ck_assert_int_ne(km_model_load_buffer(t, len - 8, &x, &err), KM_OK);
    ck_assert_ptr_null(x);
    free(t);
    /* the mean only (no variance): its sums round-trip too */
    km_gpr_params pm = gpr_params(0, 0);
    km_model *mm = fit_gpr(&kr, &pm, X, n, y, NULL), *mb = NULL;
    unsigned char *b3 = NULL;
    size_t len3 = 0;
    km_load_bytes lb;
    ck_assert(km_model_save_buffer(mm, &b3, &len3, &err) == KM_OK);
    ck_assert_uint_eq(get32(b3 + 4), 11);
    ck_assert(km_model_load_bytes(b3, len3, &lb, &err) == KM_OK);
    ck_assert_msg(km_model_load_buffer(b3, len3, &mb, &err) == KM_OK, "%s",
                  err.message);
    ck_assert_uint_eq(lb.kept, km_model_bytes(mb));
    ck_assert_uint_eq(km_model_bytes(mb), km_model_bytes(mm));
    km_model *v1 = update(mm, X + n * D, k, y + n, 1);
    km_model *v2 = update(mb, X + n * D, k, y + n, 1);
    double a[10], b[10];
    ck_assert(km_predict(v1, KM_OUT_VALUES, X, 10, a, &err) == KM_OK);
    ck_assert(km_predict(v2, KM_OUT_VALUES, X, 10, b, &err) == KM_OK);
    for (size_t i = 0; i < 10; i++)
        ck_assert_double_eq(a[i], b[i]);
    gpr_refused(b3, len3, len3 - 4 - 8 * 2 * NC, NAN); /* Kt[0][0] */
    km_model_free(v1);
    km_model_free(v2);
    km_model_free(mm);
    km_model_free(mb);
    free(b3);
    free(buf);
    free(buf2);
    km_model_free(back);
    km_model_free(uback);
    km_model_free(u);
    km_model_free(m);
    free(X);
    free(y);
}
END_TEST

/* Without keep_factor a gpr nystrom model names it; admission counts the
 * kept sums and the update's peak. */
START_TEST(gpr_refusals)
{
    seed_state = 32;
    size_t n = 60;
    double *X, *y;
    gpr_data(n, &X, &y);
    km_kernel kr = rbf(0.5);
    km_gpr_params p = gpr_params(0, 1);
    p.keep_factor = 0;
    km_model *plain = fit_gpr(&kr, &p, X, n, y, NULL), *out = NULL;
    km_error err = {0};
    ck_assert_int_eq(km_model_update(plain, X, 2, D, y, 1, NULL, &out, &err),
                     KM_ECONFLICT);
    ck_assert_msg(strstr(err.message, "keep_factor") &&
                      strstr(err.message, "nystrom"), "%s", err.message);
    ck_assert_uint_eq(km_model_update_bytes(plain, 2), SIZE_MAX);
    km_problem pb = {X, n, D, y, 1, NULL, 0};
    size_t without = km_algorithm_fit_bytes(KM_ALGO_GPR, &p, &pb);
    p.keep_factor = 1;
    size_t with = km_algorithm_fit_bytes(KM_ALGO_GPR, &p, &pb);
    ck_assert_uint_ge(with - without, 8 * (2 * n + NC * (2 * NC + 4)));
    km_model *m = fit_gpr(&kr, &p, X, n, y, NULL);
    ck_assert_uint_ge(km_model_update_bytes(m, 5), 8 * 6 * NC * NC);
    ck_assert_int_eq(km_model_update(m, X, 2, D - 1, y, 1, NULL, &out, &err),
                     KM_EINVAL);
    km_model_free(plain);
    km_model_free(m);
    free(X);
    free(y);
}
END_TEST

Suite *nys_update_suite(void)
{
    Suite *s = suite_create("nys_update");
    TCase *tc = tcase_create("nys_update");
    tcase_add_test(tc, nys_equals_refit);
    tcase_add_test(tc, nys_file);
    tcase_add_test(tc, nys_refusals);
    tcase_add_test(tc, gpr_equals_formulas);
    tcase_add_test(tc, gpr_file);
    tcase_add_test(tc, gpr_refusals);
    tcase_set_timeout(tc, 120);
    suite_add_tcase(s, tc);
    return s;
}

KM_TEST_MAIN(nys_update_suite)
