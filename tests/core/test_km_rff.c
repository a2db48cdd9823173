/*
 * test_km_rff.c - krr's rff solver (params.solver RFF, random Fourier
 * features): predictions against an independent solve on the same draws
 * (the test builds Z whole from the model's W and b and solves the dual
 * (Z Z^T + alpha I) a = y, w = Z^T a, instead of the solver's blocked
 * primal D x D system), convergence towards exact KRR as D grows, the
 * spectral densities (the empirical kernel z(x)^T z(x') within a
 * 3-sigma bound of k(x, x') for rbf, laplacian and laplacian_l2, and a
 * wrong density caught by the same bound), the model file's version-3
 * payload (round trip, the dual form in version 3, corrupt payloads
 * refused), the checks' messages and memory estimate, progress and
 * cancel.
 */
#include <math.h>
#include <string.h>

#include "../check_main.h"
#include "km.h"
#include "algorithms/km_algorithms_internal.h"
#include "model_bytes.h"
#include "chol_ref.h"

/* Deterministic synthetic data: rows in [-1, 1)^d, a smooth target. */
static void synth(uint64_t seed, size_t n, size_t d, double *X, double *y)
{
    km_rng r = {seed};
    for (size_t i = 0; i < n; i++) {
        double s = 0;
        for (size_t j = 0; j < d; j++) {
            X[i * d + j] = km_rng_uniform(&r);
            s += sin(2.0 * X[i * d + j]) * (double)(j + 1);
        }
        if (y)
            y[i] = s + 0.05 * km_rng_uniform(&r);
    }
}

static km_krr_params rff(size_t D, double alpha, uint64_t seed)
{
    km_krr_params p = km_krr_params_default();
    p.alpha = alpha;
    p.solver = KM_KRR_SOLVER_RFF;
    p.n_components = D;
    p.seed = seed;
    return p;
}

/* In place Cholesky of the n x n row-major SPD A (lower), then solve
 * A x = b in place on b: the test's own, no LAPACK. */
static void chol_solve(double *A, size_t n, double *b)
{
    chol_ref(A, n);
    for (size_t i = 0; i < n; i++) {
        double t = b[i];
        for (size_t k = 0; k < i; k++)
            t -= A[i * n + k] * b[k];
        b[i] = t / A[i * n + i];
    }
    for (size_t i = n; i-- > 0;) {
        double t = b[i];
        for (size_t k = i + 1; k < n; k++)
            t -= A[k * n + i] * b[k];
        b[i] = t / A[i * n + i];
    }
}

/* z(x) of one row, by the definition. */
static void zrow(const double *W, const double *b, size_t D, size_t d,
                 const double *x, double *z)
{
    for (size_t i = 0; i < D; i++) {
        double t = b[i];
        for (size_t j = 0; j < d; j++)
            t += W[i * d + j] * x[j];
        z[i] = sqrt(2.0 / (double)D) * cos(t);
    }
}

START_TEST(same_as_dual_solve_on_the_draws)
{
    enum { N = 200, DIM = 4, D = 120, NT = 50 };
    const km_kernel_type types[] = {KM_KERNEL_RBF, KM_KERNEL_LAPLACIAN,
                                    KM_KERNEL_LAPLACIAN_L2};
    static double X[N * DIM], y[N], T[NT * DIM], Z[N * D], G[N * N], a[N],
        w[D], zt[D], want[NT], got[NT];
    synth(11, N, DIM, X, y);
    synth(12, NT, DIM, T, NULL);
    for (size_t t = 0; t < 3; t++) {
        km_kernel k = km_test_kernel(types[t], 0.3);
        km_krr_params p = rff(D, 0.1, 5);
        km_model *m = NULL;
        km_error err;
        ck_assert_int_eq(km_krr_fit(&k, &p, X, N, DIM, y, 1, NULL, &m, &err),
                         KM_OK);
        ck_assert_uint_eq(km_model_n_samples(m), D);
        const double *W, *b;
        ck_assert_int_eq(km_krr_rff_features(m, &W, &b), KM_OK);
        for (size_t i = 0; i < N; i++)
            zrow(W, b, D, DIM, X + i * DIM, Z + i * D);
        for (size_t i = 0; i < N; i++)
            for (size_t j = 0; j < N; j++) {
                double s = i == j ? 0.1 : 0.0;
                for (size_t l = 0; l < D; l++)
                    s += Z[i * D + l] * Z[j * D + l];
                G[i * N + j] = s;
            }
        memcpy(a, y, sizeof a);
        chol_solve(G, N, a); /* (Z Z^T + alpha I) a = y */
        for (size_t l = 0; l < D; l++) {
            w[l] = 0;
            for (size_t i = 0; i < N; i++)
                w[l] += Z[i * D + l] * a[i];
        }
        for (size_t r = 0; r < NT; r++) {
            zrow(W, b, D, DIM, T + r * DIM, zt);
            want[r] = 0;
            for (size_t l = 0; l < D; l++)
                want[r] += zt[l] * w[l];
        }
        ck_assert_int_eq(km_krr_predict(m, T, NT, got, &err), KM_OK);
        double e = km_max_rel_err(got, want, NT, 1.0);
        ck_assert_msg(e < 1e-9, "%s: rff vs the dual solve: %g",
                      km_kernel_type_name(types[t]), e);
        /* the same seed draws the same features; another seed others */
        km_model *m2 = NULL, *m3 = NULL;
        ck_assert_int_eq(km_krr_fit(&k, &p, X, N, DIM, y, 1, NULL, &m2, &err),
                         KM_OK);
        p.seed = 6;
        ck_assert_int_eq(km_krr_fit(&k, &p, X, N, DIM, y, 1, NULL, &m3, &err),
                         KM_OK);
        const double *W2, *b2, *W3, *b3;
        ck_assert_int_eq(km_krr_rff_features(m2, &W2, &b2), KM_OK);
        ck_assert_int_eq(km_krr_rff_features(m3, &W3, &b3), KM_OK);
        ck_assert(memcmp(W, W2, D * DIM * sizeof *W) == 0);
        ck_assert(memcmp(b, b2, D * sizeof *b) == 0);
        ck_assert(memcmp(W, W3, D * DIM * sizeof *W) != 0);
        const km_info_entry *e1 = km_info_find(km_model_params(m),
                                               "n_components");
        ck_assert(e1 && e1->values[0] == D);
        km_model_free(m);
        km_model_free(m2);
        km_model_free(m3);
    }
}
END_TEST

/* RMS difference of two prediction vectors. */
static double rms(const double *a, const double *b, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += (a[i] - b[i]) * (a[i] - b[i]);
    return sqrt(s / (double)n);
}

START_TEST(converges_towards_exact)
{
    enum { N = 500, DIM = 3, NT = 200 };
    static double X[N * DIM], y[N], T[NT * DIM], exact[NT], p500[NT],
        p4000[NT];
    synth(21, N, DIM, X, y);
    synth(22, NT, DIM, T, NULL);
    km_kernel k = km_test_kernel(KM_KERNEL_RBF, 0.5);
    km_krr_params pe = km_krr_params_default();
    pe.alpha = 0.1;
    km_model *me = NULL, *m1 = NULL, *m2 = NULL;
    km_error err;
    ck_assert_int_eq(km_krr_fit(&k, &pe, X, N, DIM, y, 1, NULL, &me, &err),
                     KM_OK);
    km_krr_params p1 = rff(500, 0.1, 3), p2 = rff(4000, 0.1, 3);
    ck_assert_int_eq(km_krr_fit(&k, &p1, X, N, DIM, y, 1, NULL, &m1, &err),
                     KM_OK);
    ck_assert_int_eq(km_krr_fit(&k, &p2, X, N, DIM, y, 1, NULL, &m2, &err),
                     KM_OK);
    ck_assert_int_eq(km_krr_predict(me, T, NT, exact, &err), KM_OK);
    ck_assert_int_eq(km_krr_predict(m1, T, NT, p500, &err), KM_OK);
    ck_assert_int_eq(km_krr_predict(m2, T, NT, p4000, &err), KM_OK);
    double e500 = rms(p500, exact, NT), e4000 = rms(p4000, exact, NT);
    double scale = rms(exact, (double[NT]){0}, NT);
    printf("rff vs exact KRR (n %d, rbf gamma 0.5, alpha 0.1): RMS "
           "difference %.3g at D = 500, %.3g at D = 4000 (predictions' RMS "
           "%.3g)\n", N, e500, e4000, scale);
    ck_assert_msg(e4000 < e500, "D = 4000: %g, D = 500: %g", e4000, e500);
    ck_assert_msg(e4000 < 0.05 * scale, "D = 4000: %g of %g", e4000, scale);
    km_model_free(me);
    km_model_free(m1);
    km_model_free(m2);
}
END_TEST

/* The empirical kernel of D draws at (x, x'): mean and standard error of
 * the terms 2 cos(w x + b) cos(w x' + b). */
static void empirical(const double *W, const double *b, size_t D, size_t d,
                      const double *x, const double *x2, double *mean,
                      double *se)
{
    double s = 0, ss = 0;
    for (size_t i = 0; i < D; i++) {
        double t1 = b[i], t2 = b[i];
        for (size_t j = 0; j < d; j++) {
            t1 += W[i * d + j] * x[j];
            t2 += W[i * d + j] * x2[j];
        }
        double v = 2.0 * cos(t1) * cos(t2);
        s += v;
        ss += v * v;
    }
    *mean = s / (double)D;
    double var = (ss / (double)D - *mean * *mean) * (double)D / (double)(D - 1);
    *se = sqrt(var / (double)D);
}

START_TEST(spectral_densities)
{
    enum { D = 20000, DIM = 3, PAIRS = 6 };
    const km_kernel_type types[] = {KM_KERNEL_RBF, KM_KERNEL_LAPLACIAN,
                                    KM_KERNEL_LAPLACIAN_L2};
    const double gammas[] = {0.5, 0.7, 0.6};
    static double W[D * DIM], b[D], P[2 * PAIRS * DIM];
    synth(31, 2 * PAIRS, DIM, P, NULL);
    for (size_t t = 0; t < 3; t++) {
        km_kernel k = km_test_kernel(types[t], gammas[t]);
        km_error err;
        ck_assert_int_eq(km_krr_rff_draw(&k, 9, D, DIM, W, b, &err), KM_OK);
        for (size_t i = 0; i < D; i++)
            ck_assert(b[i] >= 0 && b[i] < 2 * M_PI);
        for (size_t q = 0; q < PAIRS; q++) {
            const double *x = P + 2 * q * DIM, *x2 = x + DIM;
            double kv, mean, se;
            kv = km_kernel_eval(&k, x, x2, DIM);
            empirical(W, b, D, DIM, x, x2, &mean, &se);
            ck_assert_msg(fabs(mean - kv) <= 3 * se,
                          "%s pair %zu: empirical %g, k %g, 3 sigma %g",
                          km_kernel_type_name(types[t]), q, mean, kv, 3 * se);
            if (t == 0) {
                /* power: half the rbf density's variance (gamma I instead
                 * of 2 gamma I) is caught by the same bound */
                for (size_t i = 0; i < D * DIM; i++)
                    W[i] *= M_SQRT1_2;
                empirical(W, b, D, DIM, x, x2, &mean, &se);
                ck_assert_msg(fabs(mean - kv) > 3 * se, "a wrong density "
                              "passed: %g vs %g", mean, kv);
                for (size_t i = 0; i < D * DIM; i++)
                    W[i] *= M_SQRT2;
            }
        }
    }
    /* composites and kernels without a spectral density are refused */
    km_kernel poly = km_test_kernel(KM_KERNEL_POLYNOMIAL, 0.5);
    km_error err;
    ck_assert_int_eq(km_krr_rff_draw(&poly, 9, 4, DIM, W, b, &err), KM_EINVAL);
}
END_TEST

START_TEST(model_file_version_3)
{
    enum { N = 80, DIM = 3, D = 40, NT = 20 };
    static double X[N * DIM], y[N], Y[N * 2], T[NT * DIM], a[NT * 2],
        c[NT * 2];
    synth(41, N, DIM, X, y);
    for (size_t i = 0; i < N; i++) { /* two outputs: y and y^2 */
        Y[2 * i] = y[i];
        Y[2 * i + 1] = y[i] * y[i];
    }
    synth(43, NT, DIM, T, NULL);
    km_kernel k = km_test_kernel(KM_KERNEL_LAPLACIAN, 0.4);
    km_krr_params p = rff(D, 0.05, 1);
    km_model *m = NULL, *back = NULL;
    km_error err;
    ck_assert_int_eq(km_krr_fit(&k, &p, X, N, DIM, Y, 2, NULL, &m, &err),
                     KM_OK);
    unsigned char *buf;
    size_t len;
    ck_assert_int_eq(km_model_save_buffer(m, &buf, &len, &err), KM_OK);
    ck_assert_uint_eq(get32(buf + 4), 3);
    ck_assert_int_eq(km_model_load_buffer(buf, len, &back, &err), KM_OK);
    ck_assert_int_eq(km_krr_predict(m, T, NT, a, &err), KM_OK);
    ck_assert_int_eq(km_krr_predict(back, T, NT, c, &err), KM_OK);
    ck_assert(memcmp(a, c, sizeof a) == 0); /* bit-identical */
    km_model_free(back);

    /* The payload from its end: form, W (D x d), b (D), w (D x 2), CRC. */
    size_t w_at = len - 4 - (8 + 8 * D * 2), b_at = w_at - (8 + 8 * D);
    size_t W_at = b_at - (8 + 8 * D * DIM), form_at = W_at - 4;
    ck_assert_uint_eq(get32(buf + form_at), 1);
    ck_assert_uint_eq(get64(buf + W_at), D * DIM);
    unsigned char *bad = malloc(len);
    struct {
        size_t at;
        int kind; /* 0 u32, 1 f64 */
        uint64_t v32;
        double v;
        const char *msg;
    } cases[] = {
        {form_at, 0, 2, 0, "form 2"},
        {form_at, 0, 0, 0, "bad kernel ridge payload"},
        {b_at + 8, 1, 0, 7.0, "phase b[0]"},
        {b_at + 8 + 8 * 3, 1, 0, -0.5, "phase b[3]"},
        {W_at + 8, 1, 0, NAN, "not all finite"},
        {w_at + 8 + 8 * 5, 1, 0, INFINITY, "not all finite"},
        {4, 0, 2, 0, "bad kernel ridge payload"}, /* read as version 2 */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        memcpy(bad, buf, len);
        if (cases[i].kind == 0) {
            put32(bad + cases[i].at, (uint32_t)cases[i].v32);
        } else {
            uint64_t u;
            memcpy(&u, &cases[i].v, 8);
            put64(bad + cases[i].at, u);
        }
        put32(bad + len - 4, crc32_ref(bad, len - 4));
        km_model *x = NULL;
        km_status st = km_model_load_buffer(bad, len, &x, &err);
        ck_assert_msg(st == KM_ECORRUPT, "case %zu: %d", i, (int)st);
        ck_assert_msg(strstr(err.message, cases[i].msg), "case %zu: %s", i,
                      err.message);
    }
    free(bad);
    free(buf);
    km_model_free(m);

    /* An exact model is written as version 2, byte for byte as before;
     * the same payload as version 3 with form 0 loads and answers the
     * same. */
    km_krr_params pe = km_krr_params_default();
    pe.alpha = 0.05;
    ck_assert_int_eq(km_krr_fit(&k, &pe, X, N, DIM, y, 1, NULL, &m, &err),
                     KM_OK);
    ck_assert_int_eq(km_model_save_buffer(m, &buf, &len, &err), KM_OK);
    ck_assert_uint_eq(get32(buf + 4), 2);
    size_t pay = len - 4 - (8 + 8 * N) - (8 + 8 * N * DIM);
    unsigned char *v3 = malloc(len + 4);
    memcpy(v3, buf, pay);
    put32(v3 + pay, 0);
    memcpy(v3 + pay + 4, buf + pay, len - pay);
    put32(v3 + 4, 3);
    put32(v3 + len, crc32_ref(v3, len));
    ck_assert_int_eq(km_model_load_buffer(v3, len + 4, &back, &err), KM_OK);
    ck_assert_int_eq(km_krr_predict(m, T, NT, a, &err), KM_OK);
    ck_assert_int_eq(km_krr_predict(back, T, NT, c, &err), KM_OK);
    ck_assert(memcmp(a, c, NT * sizeof *a) == 0);
    km_model_free(back);
    free(v3);
    free(buf);
    km_model_free(m);
}
END_TEST

START_TEST(checks_name_the_field)
{
    enum { N = 30, DIM = 2 };
    static double X[N * DIM], y[N];
    synth(51, N, DIM, X, y);
    km_model *m = NULL;
    km_error err;
    km_krr_params p = rff(10, 1.0, 0);
    km_kernel poly = km_test_kernel(KM_KERNEL_POLYNOMIAL, 0.5);
    ck_assert_int_eq(km_krr_fit(&poly, &p, X, N, DIM, y, 1, NULL, &m, &err),
                     KM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "params.solver"));
    ck_assert_ptr_nonnull(strstr(err.message, "kernel.type polynomial"));
    ck_assert_int_eq(km_krr_check_kernel(&p, &poly, &err), KM_EINVAL);
    km_kernel rbf = km_test_kernel(KM_KERNEL_RBF, 0.5);
    ck_assert_int_eq(km_krr_check_kernel(&p, &rbf, &err), KM_OK);
    p.n_components = KM_KRR_MAX_COMPONENTS + 1;
    ck_assert_int_eq(km_krr_check(&p, N, &err), KM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "params.n_components"));
    p.n_components = 10;
    p.seed = ((uint64_t)1 << 53) + 1;
    ck_assert_int_eq(km_krr_check(&p, N, &err), KM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "params.seed"));
    /* the exact solver ignores a polynomial kernel's lack of a density */
    km_krr_params pe = km_krr_params_default();
    ck_assert_int_eq(km_krr_check_kernel(&pe, &poly, &err), KM_OK);
    /* admission: 10^6 rows, d 20, D 1000: O(D^2 + block D), not n^2 */
    km_krr_params big = rff(1000, 1.0, 0);
    size_t bytes = km_krr_fit_bytes(1000000, 20, 1, &big);
    ck_assert_msg(bytes < ((size_t)64 << 20), "%zu", bytes);
    ck_assert(bytes > 1000 * 1000 * 8);
    ck_assert(km_krr_fit_bytes(1000000, 20, 1, &pe) > ((size_t)1 << 40));
}
END_TEST

START_TEST(progress_and_cancel)
{
    /* D 1600 over n 1000: two row blocks of Z, three Cholesky blocks */
    enum { N = 1000, DIM = 3, D = 1600 };
    static double X[N * DIM], y[N];
    synth(61, N, DIM, X, y);
    km_kernel k = km_test_kernel(KM_KERNEL_RBF, 0.5);
    km_krr_params p = rff(D, 0.1, 2);
    km_stopper all = {0, 1 << 30, 0};
    km_fit_control ctl = {km_stop_cb, &all, 1};
    km_model *m = NULL;
    ck_assert_int_eq(km_krr_fit(&k, &p, X, N, DIM, y, 1, &ctl, &m, NULL),
                     KM_OK);
    ck_assert_double_eq(all.last, 1.0);
    int calls = all.calls;
    ck_assert_int_ge(calls, 5);
    km_model_free(m);
    /* a cancel anywhere: at the start, in the blocks of Z, in Cholesky */
    for (int at = 0; at < calls - 1; at++) {
        km_stopper s = {0, at, 0};
        ctl.ctx = &s;
        m = NULL;
        km_error err = {0};
        ck_assert_int_eq(km_krr_fit(&k, &p, X, N, DIM, y, 1, &ctl, &m, &err),
                         KM_ECANCELLED);
        ck_assert_ptr_null(m);
        ck_assert_str_eq(err.message, "fit cancelled");
    }
}
END_TEST

static Suite *rff_suite(void)
{
    Suite *s = suite_create("km_rff");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, same_as_dual_solve_on_the_draws);
    tcase_add_test(tc, converges_towards_exact);
    tcase_add_test(tc, spectral_densities);
    tcase_add_test(tc, model_file_version_3);
    tcase_add_test(tc, checks_name_the_field);
    tcase_add_test(tc, progress_and_cancel);
    tcase_set_timeout(tc, 120);
    suite_add_tcase(s, tc);
    return s;
}

KM_TEST_MAIN(rff_suite)
