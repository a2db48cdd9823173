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
 */
#include <stdint.h>

#include "../check_main.h"
#include "algorithms/km_algorithms_internal.h"
#include "km.h"
#include "model/km_model_internal.h"

#define TOL 1e-6
#define D 3
#define NT 25
#define NC 30 /* centres */

static uint64_t seed_state;

static double unif(void)
{
    seed_state = seed_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(seed_state >> 11) / 9007199254740992.0;
}

/* n rows of D features and q targets each (a smooth function and noise). */
static void make_data(size_t n, size_t q, double **X, double **Y)
{
    *X = malloc(n * D * sizeof **X);
    *Y = malloc(n * q * sizeof **Y);
    for (size_t i = 0; i < n; i++) {
        double s = 0;
        for (size_t j = 0; j < D; j++) {
            (*X)[i * D + j] = 4 * unif() - 2;
            s += (*X)[i * D + j];
        }
        for (size_t j = 0; j < q; j++)
            (*Y)[i * q + j] = sin(s + (double)j) * (1 + (double)j) +
                              0.1 * (unif() - 0.5);
    }
}

static km_kernel rbf(double gamma)
{
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_RBF);
    k.gamma = gamma;
    return k;
}

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

static uint32_t get32(const unsigned char *b)
{
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
           (uint32_t)b[3] << 24;
}

/* buf with the 8 bytes at `at` set to v and the checksum refreshed: load
 * refuses it naming the nystrom statistics. */
static void refused(const unsigned char *buf, size_t len, size_t at,
                    double v)
{
    unsigned char *c = malloc(len);
    memcpy(c, buf, len);
    memcpy(c + at, &v, 8);
    uint32_t crc = km_crc32(c, len - 4);
    for (int j = 0; j < 4; j++)
        c[len - 4 + j] = (unsigned char)(crc >> (8 * j));
    km_model *x = NULL;
    km_error err = {0};
    ck_assert_int_eq(km_model_load_buffer(c, len, &x, &err), KM_ECORRUPT);
    ck_assert_msg(strstr(err.message, "nystrom statistics"), "%g: %s", v,
                  err.message);
    free(c);
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

Suite *nys_update_suite(void)
{
    Suite *s = suite_create("nys_update");
    TCase *tc = tcase_create("nys_update");
    tcase_add_test(tc, nys_equals_refit);
    tcase_add_test(tc, nys_file);
    tcase_add_test(tc, nys_refusals);
    tcase_set_timeout(tc, 120);
    suite_add_tcase(s, tc);
    return s;
}

KM_TEST_MAIN(nys_update_suite)
