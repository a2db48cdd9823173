/*
 * test_km_krr.c - kernel ridge regression against scikit-learn's
 * KernelRidge (reference values in tests/fixtures, from gen_refs.py):
 * dual coefficients and predictions within 1e-8 relative, on
 * breast_cancer.csv (six kernels) and a synthetic two-output set.
 */
#include "../check_main.h"
#include "../testdata.h"
#include "km.h"

/* Relative error floor: values below it are compared absolutely. */
#define FLOOR 1e-3
#define TOL 1e-8

static void bc_case(const char *name, km_kernel *k)
{
    km_dataset ds;
    ck_assert_msg(km_dataset_load("breast_cancer.csv", 10000, &ds) == 0,
                  "cannot read breast_cancer.csv");
    km_dataset_scale(&ds, 400);
    km_krr_params p = {.alpha = 0.5};
    km_model *m = NULL;
    km_error err = {0};
    ck_assert_msg(km_krr_fit(k, &p, ds.X, 400, ds.d, ds.y, 1, NULL, &m, &err)
                      == KM_OK, "%s: %s", name, err.message);
    char file[128];
    size_t nc, np;
    snprintf(file, sizeof file, "krr_bc_%s_coef.txt", name);
    double *coef = km_read_fixture(file, &nc);
    snprintf(file, sizeof file, "krr_bc_%s_pred.txt", name);
    double *pred = km_read_fixture(file, &np);
    ck_assert_uint_eq(nc, 400);
    ck_assert_uint_eq(np, ds.n - 400);

    double *out = malloc(np * sizeof *out);
    ck_assert_int_eq(km_krr_predict(m, ds.X + 400 * ds.d, np, out, &err), KM_OK);
    double e = km_max_rel_err(out, pred, np, FLOOR);
    ck_assert_msg(e <= TOL, "%s: predictions off by %g relative", name, e);

    e = km_max_rel_err(km_krr_dual_coef(m), coef, nc, FLOOR);
    ck_assert_msg(e <= TOL, "%s: dual coefficients off by %g relative", name, e);

    /* A round trip through the model file predicts bit for bit the same. */
    unsigned char *buf;
    size_t len;
    ck_assert_int_eq(km_model_save_buffer(m, &buf, &len, NULL), KM_OK);
    km_model *back;
    ck_assert_int_eq(km_model_load_buffer(buf, len, &back, NULL), KM_OK);
    double *out2 = malloc(np * sizeof *out2);
    ck_assert_int_eq(km_krr_predict(back, ds.X + 400 * ds.d, np, out2, NULL),
                     KM_OK);
    ck_assert_mem_eq(out, out2, np * sizeof *out);
    free(out2);
    km_model_free(back);
    free(buf);

    const km_info_entry *a = km_info_find(km_model_params(m), "alpha");
    ck_assert_ptr_nonnull(a);
    ck_assert_double_eq(a->values[0], 0.5);
    free(coef);
    free(pred);
    free(out);
    km_model_free(m);
    km_dataset_free(&ds);
}

START_TEST(bc_linear)
{
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_LINEAR);
    bc_case("linear", &k);
}
END_TEST

START_TEST(bc_rbf)
{
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_RBF);
    k.gamma = 0.1;
    bc_case("rbf", &k);
}
END_TEST

START_TEST(bc_poly)
{
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_POLYNOMIAL);
    k.gamma = 0.05;
    bc_case("poly", &k);
}
END_TEST

START_TEST(bc_laplacian)
{
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_LAPLACIAN);
    k.gamma = 0.05;
    bc_case("laplacian", &k);
}
END_TEST

START_TEST(bc_sum_and_product)
{
    km_kernel k;
    km_kernel *parts = malloc(2 * sizeof *parts);
    double *w = malloc(2 * sizeof *w);
    km_kernel_init(&parts[0], KM_KERNEL_RBF);
    parts[0].gamma = 0.1;
    km_kernel_init(&parts[1], KM_KERNEL_POLYNOMIAL);
    parts[1].degree = 2;
    parts[1].gamma = 0.05;
    w[0] = 0.7;
    w[1] = 0.3;
    km_kernel_init(&k, KM_KERNEL_SUM);
    km_kernel_set_parts(&k, parts, w, 2);
    bc_case("sum", &k);
    km_kernel_cleanup(&k);

    parts = malloc(2 * sizeof *parts);
    km_kernel_init(&parts[0], KM_KERNEL_RBF);
    parts[0].gamma = 0.1;
    km_kernel_init(&parts[1], KM_KERNEL_LAPLACIAN);
    parts[1].gamma = 0.05;
    km_kernel_init(&k, KM_KERNEL_PRODUCT);
    km_kernel_set_parts(&k, parts, NULL, 2);
    bc_case("product", &k);
    km_kernel_cleanup(&k);
}
END_TEST

/* Checks the dual coefficients themselves on the synthetic set, with two
 * outputs solved at once. */
START_TEST(synthetic_two_outputs)
{
    size_t nx, ny, nt, nc, np;
    double *X = km_read_fixture("krr_syn_X.txt", &nx);
    double *Y = km_read_fixture("krr_syn_Y.txt", &ny);
    double *T = km_read_fixture("krr_syn_T.txt", &nt);
    double *coef = km_read_fixture("krr_syn_coef.txt", &nc);
    double *pred = km_read_fixture("krr_syn_pred.txt", &np);
    ck_assert_uint_eq(nx, 300 * 5);
    ck_assert_uint_eq(ny, 600);
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_RBF);
    k.gamma = 0.3;
    km_krr_params p = {.alpha = 0.1};
    km_model *m;
    ck_assert_int_eq(km_krr_fit(&k, &p, X, 300, 5, Y, 2, NULL, &m, NULL), KM_OK);
    ck_assert_uint_eq(km_model_n_outputs(m), 2);

    double e = km_max_rel_err(km_krr_dual_coef(m), coef, nc, FLOOR);
    ck_assert_msg(e <= TOL, "dual coefficients off by %g relative", e);
    double *out = malloc(np * sizeof *out);
    ck_assert_int_eq(km_krr_predict(m, T, 50, out, NULL), KM_OK);
    e = km_max_rel_err(out, pred, np, FLOOR);
    ck_assert_msg(e <= TOL, "predictions off by %g relative", e);

    /* (K + alpha I) c_ref = y holds for the reference; ours must predict
     * y - alpha c_ref on the training rows. */
    double *fit = malloc(600 * sizeof *fit), *want = malloc(600 * sizeof *want);
    ck_assert_int_eq(km_krr_predict(m, X, 300, fit, NULL), KM_OK);
    for (size_t i = 0; i < 600; i++)
        want[i] = Y[i] - 0.1 * coef[i];
    e = km_max_rel_err(fit, want, 600, FLOOR);
    ck_assert_msg(e <= TOL, "training fit off by %g relative", e);
    free(fit);
    free(want);
    free(out);
    free(X);
    free(Y);
    free(T);
    free(coef);
    free(pred);
    km_model_free(m);
}
END_TEST

START_TEST(not_positive_definite)
{
    /* A sigmoid kernel with a tiny ridge is indefinite. */
    const size_t n = 40;
    double X[40 * 2], y[40];
    for (size_t i = 0; i < n; i++) {
        X[2 * i] = (double)i / 4;
        X[2 * i + 1] = -(double)(i % 5);
        y[i] = (double)i;
    }
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_SIGMOID);
    k.gamma = 2;
    k.coef0 = -1;
    km_krr_params p = {.alpha = 1e-9};
    km_model *m = NULL;
    km_error err;
    ck_assert_int_eq(km_krr_fit(&k, &p, X, n, 2, y, 1, NULL, &m, &err),
                     KM_ENOTPD);
    ck_assert_ptr_null(m);
    ck_assert_ptr_nonnull(strstr(err.message, "not positive definite"));
}
END_TEST

START_TEST(invalid_inputs)
{
    double X[4] = {0, 1, 2, NAN}, y[2] = {1, 2};
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_RBF);
    km_krr_params p = {.alpha = 1.0};
    km_model *m = NULL;
    km_error err;
    ck_assert_int_eq(km_krr_fit(&k, &p, X, 2, 2, y, 1, NULL, &m, &err), KM_EINVAL);
    ck_assert_str_eq(err.message, "X[1][1] is not a finite number");
    X[3] = 3;
    y[1] = INFINITY;
    ck_assert_int_eq(km_krr_fit(&k, &p, X, 2, 2, y, 1, NULL, &m, &err), KM_EINVAL);
    ck_assert_str_eq(err.message, "y[1][0] is not a finite number");
    y[1] = 2;
    p.alpha = -1;
    ck_assert_int_eq(km_krr_fit(&k, &p, X, 2, 2, y, 1, NULL, &m, &err), KM_EINVAL);
    ck_assert_str_eq(err.message, "params.alpha must be a finite number > 0");
    p.alpha = 1;
    ck_assert_int_eq(km_krr_fit(&k, &p, X, 2, 2, y, 1, NULL, &m, NULL), KM_OK);
    double bad[3] = {1, 2, 3};
    ck_assert_int_eq(km_krr_predict(m, bad, 1, y, &err), KM_OK);
    ck_assert_int_eq(km_model_check_input(m, bad, 1, 3, &err), KM_EINVAL);
    ck_assert_str_eq(err.message, "X has 3 features; the model expects 2");
    km_model_free(m);
}
END_TEST

/* Data whose kernel overflows a double are refused before the fit, naming
 * the row; a kernel that does not overflow on them (laplacian: distances
 * of 1e300) still fits. Before this check a linear fit on such rows
 * succeeded and predicted NaN on them. */
START_TEST(overflowing_data)
{
    double X[6] = {1, 2, 1e300, 2e300, 3, 4}, y[3] = {1, 2, 3};
    static const km_kernel_type types[] = {
        KM_KERNEL_LINEAR, KM_KERNEL_POLYNOMIAL, KM_KERNEL_SIGMOID};
    km_krr_params p = {.alpha = 1.0};
    km_error err;
    for (size_t t = 0; t < sizeof types / sizeof *types; t++) {
        km_kernel k;
        km_model *m = NULL;
        km_kernel_init(&k, types[t]);
        ck_assert_int_eq(km_krr_fit(&k, &p, X, 3, 2, y, 1, NULL, &m, &err),
                         KM_EPROBLEM);
        ck_assert_ptr_null(m);
        ck_assert_ptr_nonnull(strstr(err.message, "X[1] with itself is not a "
                                                  "finite number"));
    }
    /* a polynomial of moderate values whose power overflows */
    double Y[2] = {1e100, 1};
    km_kernel k;
    km_model *m = NULL;
    km_kernel_init(&k, KM_KERNEL_POLYNOMIAL);
    k.degree = 4;
    ck_assert_int_eq(km_krr_fit(&k, &p, Y, 2, 1, y, 1, NULL, &m, &err),
                     KM_EPROBLEM);
    km_kernel_init(&k, KM_KERNEL_LAPLACIAN);
    ck_assert_int_eq(km_krr_fit(&k, &p, X, 3, 2, y, 1, NULL, &m, &err), KM_OK);
    double out[3];
    ck_assert_int_eq(km_krr_predict(m, X, 3, out, &err), KM_OK);
    for (int i = 0; i < 3; i++)
        ck_assert(isfinite(out[i]));
    km_model_free(m);
}
END_TEST

static int cancel_at_half(void *ctx, double f)
{
    (void)ctx;
    return f >= 0.05;
}

START_TEST(cancelled)
{
    double X[6] = {0, 1, 2, 3, 4, 5}, y[3] = {1, 2, 3};
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_RBF);
    km_krr_params p = {.alpha = 1.0};
    km_fit_control ctl = {cancel_at_half, NULL};
    km_model *m = NULL;
    ck_assert_int_eq(km_krr_fit(&k, &p, X, 3, 2, y, 1, &ctl, &m, NULL),
                     KM_ECANCELLED);
    ck_assert_ptr_null(m);
}
END_TEST

typedef struct progress_log {
    double last;
    int calls, decreasing;
    double stop_at; /* cancel once progress reaches it */
} progress_log;

static int record(void *ctx, double f)
{
    progress_log *p = ctx;
    p->decreasing |= f < p->last;
    p->last = f;
    p->calls++;
    return f >= p->stop_at;
}

/* n = 2000 spans three Cholesky blocks: progress moves through them and
 * a cancel between two blocks stops the fit. */
START_TEST(progress_through_cholesky)
{
    const size_t n = 2000, d = 3;
    double *X = malloc(n * d * sizeof *X), *y = malloc(n * sizeof *y);
    for (size_t i = 0; i < n * d; i++)
        X[i] = sin(0.37 * (double)i);
    for (size_t i = 0; i < n; i++)
        y[i] = cos(0.11 * (double)i);
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_RBF);
    km_krr_params p = {.alpha = 1.0};
    progress_log log = {0, 0, 0, 2.0};
    km_fit_control ctl = {record, &log};
    km_model *m = NULL;
    ck_assert_int_eq(km_krr_fit(&k, &p, X, n, d, y, 1, &ctl, &m, NULL), KM_OK);
    ck_assert_int_eq(log.decreasing, 0);
    ck_assert_double_eq(log.last, 1.0);
    ck_assert_int_ge(log.calls, 5); /* 0, 0.1, two between blocks, 1 */
    km_model_free(m);

    progress_log stop = {0, 0, 0, 0.5};
    ctl.ctx = &stop;
    m = NULL;
    ck_assert_int_eq(km_krr_fit(&k, &p, X, n, d, y, 1, &ctl, &m, NULL),
                     KM_ECANCELLED);
    ck_assert_ptr_null(m);
    ck_assert(stop.last >= 0.5 && stop.last < 0.9);
    free(X);
    free(y);
}
END_TEST

/* ---------------------------------------------------------- precision */

/* The training figure key of m, or NAN when absent. */
static double figure(const km_model *m, const char *key)
{
    const km_info_entry *e = km_info_find(km_model_training(m), key);
    return e && e->count == 1 ? e->values[0] : NAN;
}

/* Fits X (n x d), Y (n x q) with precision mixed and double; the
 * predictions on the training rows must agree to 1e-10 relative (the
 * contract: the mixed path's refinement stops at the double solve's
 * backward error); *ran gets the mixed fit's training.precision and
 * *fallback its fallback (0 when none). */
static void mixed_vs_double(const km_kernel *k, double alpha, const double *X,
                            size_t n, size_t d, const double *Y, size_t q,
                            double *ran, double *fallback)
{
    km_krr_params p = {.alpha = alpha};
    km_model *mm = NULL, *md = NULL, *m1 = NULL;
    km_error err = {0};
    km_fit_control two = {NULL, NULL, 2}; /* the fused product's threads */
    ck_assert_msg(km_krr_fit(k, &p, X, n, d, Y, q, &two, &mm, &err) == KM_OK,
                  "%s", err.message);
    /* on one thread: the same factor, the same refinement */
    ck_assert_msg(km_krr_fit(k, &p, X, n, d, Y, q, NULL, &m1, &err) == KM_OK,
                  "%s", err.message);
    p.precision = KM_KRR_PRECISION_DOUBLE;
    ck_assert_msg(km_krr_fit(k, &p, X, n, d, Y, q, NULL, &md, &err) == KM_OK,
                  "%s", err.message);
    ck_assert_double_eq(figure(md, "precision"), KM_KRR_PRECISION_DOUBLE);
    ck_assert(isnan(figure(md, "refinement_steps")));
    const km_info_entry *pe = km_info_find(km_model_params(md), "precision");
    ck_assert(pe && pe->values[0] == KM_KRR_PRECISION_DOUBLE);
    ck_assert_ptr_null(km_info_find(km_model_params(mm), "precision"));
    double *a = malloc(n * q * sizeof *a), *b = malloc(n * q * sizeof *b);
    ck_assert_int_eq(km_krr_predict(mm, X, n, a, NULL), KM_OK);
    ck_assert_int_eq(km_krr_predict(md, X, n, b, NULL), KM_OK);
    double top = 0, worst = 0;
    for (size_t i = 0; i < n * q; i++)
        top = fmax(top, fabs(b[i]));
    for (size_t i = 0; i < n * q; i++)
        worst = fmax(worst, fabs(a[i] - b[i]) / top);
    ck_assert_msg(worst <= 1e-10, "mixed vs double predictions differ by "
                  "%g relative", worst);
    ck_assert_int_eq(km_krr_predict(m1, X, n, a, NULL), KM_OK);
    worst = 0;
    for (size_t i = 0; i < n * q; i++)
        worst = fmax(worst, fabs(a[i] - b[i]) / top);
    ck_assert_msg(worst <= 1e-10, "mixed on one thread vs double differ by "
                  "%g relative", worst);
    km_model_free(m1);
    *ran = figure(mm, "precision");
    double fb = figure(mm, "fallback");
    *fallback = isnan(fb) ? 0 : fb;
    ck_assert_double_ge(figure(mm, "refinement_steps"), 0);
    if (*ran == KM_KRR_PRECISION_MIXED) {
        ck_assert_double_le(figure(mm, "backward_error"),
                            DBL_EPSILON * sqrt((double)n));
        ck_assert_double_eq(*fallback, 0);
    }
    free(a);
    free(b);
    km_model_free(mm);
    km_model_free(md);
}

/* Rows of sines: smooth, correlated features. */
static double *wave_rows(size_t n, size_t d, double f)
{
    double *X = malloc(n * d * sizeof *X);
    for (size_t i = 0; i < n * d; i++)
        X[i] = sin(f * (double)i) + 0.1 * cos(3.1 * f * (double)(i / d));
    return X;
}

/* Well-conditioned sets, odd and even n (the packed form's two layouts),
 * one and three outputs, four kernels: the mixed path runs and agrees. */
START_TEST(mixed_matches_double)
{
    const size_t sizes[] = {1, 2, 7, 300, 1001, 1600};
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        size_t n = sizes[s], d = 4, q = s % 2 ? 3 : 1;
        double *X = wave_rows(n, d, 0.37), *Y = malloc(n * q * sizeof *Y);
        for (size_t i = 0; i < n * q; i++)
            Y[i] = cos(0.11 * (double)i) + (double)(i % 5);
        km_kernel k;
        km_kernel_init(&k, s % 3 == 0   ? KM_KERNEL_RBF
                           : s % 3 == 1 ? KM_KERNEL_LAPLACIAN
                                        : KM_KERNEL_POLYNOMIAL);
        if (k.type == KM_KERNEL_POLYNOMIAL) {
            k.gamma = 0.5;
            k.degree = 2;
            k.coef0 = 1;
        }
        double ran, fb;
        mixed_vs_double(&k, s == 4 ? 0.01 : 1.0, X, n, d, Y, q, &ran, &fb);
        ck_assert_msg(ran == KM_KRR_PRECISION_MIXED, "n = %zu: precision "
                      "%g, fallback %g", n, ran, fb);
        free(X);
        free(Y);
    }
}
END_TEST

/* breast_cancer (scaled, 400 rows, rbf), the parity tests' data. */
START_TEST(mixed_matches_double_breast_cancer)
{
    km_dataset ds;
    ck_assert(km_dataset_load("breast_cancer.csv", 10000, &ds) == 0);
    km_dataset_scale(&ds, 400);
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_RBF);
    k.gamma = 0.1;
    double ran, fb;
    mixed_vs_double(&k, 0.5, ds.X, 400, ds.d, ds.y, 1, &ran, &fb);
    ck_assert_double_eq(ran, KM_KRR_PRECISION_MIXED);
    km_dataset_free(&ds);
}
END_TEST

/* Nearly duplicated rows and a tiny alpha: K + alpha I has condition
 * near 1e12, beyond what a float factor can precondition: the mixed fit
 * falls back to the double factor by itself, says so, and its solution
 * is the double one's. */
START_TEST(ill_conditioned_falls_back)
{
    const size_t n = 400, d = 2;
    double *X = malloc(n * d * sizeof *X), *y = malloc(n * sizeof *y);
    for (size_t i = 0; i < n; i++) {
        X[i * d] = (double)(i / 2) * 0.01 + (i % 2) * 1e-7;
        X[i * d + 1] = 0.3 * X[i * d];
        y[i] = sin(3 * X[i * d]);
    }
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_RBF);
    k.gamma = 1.0;
    double ran, fb;
    mixed_vs_double(&k, 1e-10, X, n, d, y, 1, &ran, &fb);
    ck_assert_double_eq(ran, KM_KRR_PRECISION_DOUBLE);
    ck_assert_msg(fb == 1 || fb == 2, "fallback %g", fb);
    free(X);
    free(y);
}
END_TEST

/* A cancel during the float factorisation and one during refinement
 * stop the mixed fit; progress never decreases. */
START_TEST(mixed_cancelled)
{
    const size_t n = 2000, d = 3;
    double *X = wave_rows(n, d, 0.37), *y = malloc(n * sizeof *y);
    for (size_t i = 0; i < n; i++)
        y[i] = cos(0.11 * (double)i);
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_RBF);
    km_krr_params p = {.alpha = 0.01};
    const double stops[] = {0.3, 0.73}; /* the factor; refinement */
    for (size_t s = 0; s < 2; s++) {
        progress_log log = {0, 0, 0, stops[s]};
        km_fit_control ctl = {record, &log};
        km_model *m = NULL;
        ck_assert_int_eq(km_krr_fit(&k, &p, X, n, d, y, 1, &ctl, &m, NULL),
                         KM_ECANCELLED);
        ck_assert_ptr_null(m);
        ck_assert_int_eq(log.decreasing, 0);
        ck_assert(log.last >= stops[s] && log.last < 0.9);
    }
    free(X);
    free(y);
}
END_TEST

static Suite *krr_suite(void)
{
    Suite *s = suite_create("km_krr");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, bc_linear);
    tcase_add_test(tc, bc_rbf);
    tcase_add_test(tc, bc_poly);
    tcase_add_test(tc, bc_laplacian);
    tcase_add_test(tc, bc_sum_and_product);
    tcase_add_test(tc, synthetic_two_outputs);
    tcase_add_test(tc, not_positive_definite);
    tcase_add_test(tc, invalid_inputs);
    tcase_add_test(tc, overflowing_data);
    tcase_add_test(tc, cancelled);
    tcase_add_test(tc, progress_through_cholesky);
    tcase_add_test(tc, mixed_matches_double);
    tcase_add_test(tc, mixed_matches_double_breast_cancer);
    tcase_add_test(tc, ill_conditioned_falls_back);
    tcase_add_test(tc, mixed_cancelled);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    return s;
}

KM_TEST_MAIN(krr_suite)
