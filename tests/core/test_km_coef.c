/*
 * test_km_coef.c - the descriptors' coefs hook (km_model_coefs,
 * km_coef.c): every algorithm lists arrays for a model fitted with its
 * defaults, each named once, of one or two axes, finite, whole where it
 * says integer, and every paged array runs over the same rows
 * (km_coef_rows); the answers recomputed from the arrays alone equal
 * km_predict's (krr's values, a binary and a three-class svc's decision
 * values in scikit-learn's signs (core's binary score is LIBSVM's,
 * negated), svr's values); kpca's eigenvectors have
 * unit norm; the views transpose and scale as documented.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../check_main.h"
#include "km.h"
#include "model/km_model_internal.h"

enum { N = 30, D = 3 };

static double X[N * D], Y[N];
static int L2[N], L3[N];

static void data(void)
{
    unsigned s = 7;
    for (size_t i = 0; i < N * D; i++) {
        s = s * 1103515245u + 12345u;
        X[i] = (double)(s >> 8 & 0xffff) / 65536.0 * 4.0 - 2.0;
    }
    for (size_t i = 0; i < N; i++) {
        Y[i] = sin(X[i * D]) + X[i * D + 1];
        L2[i] = X[i * D] + X[i * D + 2] > 0;
        L3[i] = (int)(i % 3);
    }
}

static km_model *fit(km_algorithm a, size_t classes)
{
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_RBF);
    k.gamma = 0.5;
    void *p = calloc(1, km_algorithm_params_size(a));
    ck_assert_ptr_nonnull(p);
    km_algorithm_params_default(a, p);
    km_problem pb = {X, N, D, NULL, 1, NULL, 0};
    km_target t = km_algorithm_target(a);
    if (t == KM_TARGET_VALUES || t == KM_TARGET_ROWS)
        pb.y = Y;
    if (t == KM_TARGET_CLASSES) {
        pb.labels = classes == 3 ? L3 : L2;
        pb.n_classes = classes;
    }
    km_preprocess pre = {KM_SCALE_NONE, 0};
    km_model *m = NULL;
    km_error err;
    km_status st = km_fit(a, &k, p, &pre, &pb, NULL, &m, &err);
    ck_assert_msg(st == KM_OK, "%s: %s", km_algorithm_name(a), err.message);
    free(p);
    km_kernel_cleanup(&k);
    return m;
}

static const km_coef *find(const km_coef *c, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(c[i].name, name))
            return &c[i];
    ck_abort_msg("no array %s", name);
    return NULL;
}

START_TEST(test_every_algorithm)
{
    data();
    for (int i = 0; i < KM_ALGO_COUNT; i++) {
        km_algorithm a = (km_algorithm)i;
        km_model *m = fit(a, 2);
        km_coef c[KM_COEF_MAX];
        size_t n = km_model_coefs(m, c);
        const char *an = km_algorithm_name(a);
        ck_assert_msg(n >= 2 && n <= KM_COEF_MAX, "%s: %zu arrays", an, n);
        size_t rows = km_coef_rows(c, n);
        ck_assert_msg(rows >= 1, "%s: no paged array", an);
        for (size_t j = 0; j < n; j++) {
            ck_assert_msg(c[j].name && *c[j].name, "%s", an);
            for (size_t u = 0; u < j; u++)
                ck_assert_str_ne(c[j].name, c[u].name);
            ck_assert(c[j].ndim == 1 || c[j].ndim == 2);
            ck_assert(c[j].ndim == 2 || c[j].shape[1] == 1);
            ck_assert(c[j].page_axis >= -1 && c[j].page_axis < (int)c[j].ndim);
            if (c[j].page_axis >= 0)
                ck_assert_msg(c[j].shape[c[j].page_axis] == rows,
                              "%s: %s runs over other rows", an, c[j].name);
            for (size_t r = 0; r < c[j].shape[0]; r++)
                for (size_t s = 0; s < c[j].shape[1]; s++) {
                    double v = km_coef_at(&c[j], r, s);
                    ck_assert_msg(isfinite(v), "%s %s", an, c[j].name);
                    if (c[j].integer)
                        ck_assert(v == floor(v));
                }
        }
        km_model_free(m);
    }
    ck_assert_uint_eq(km_model_coefs(NULL, NULL), 0);
}
END_TEST

/* krr: K(x, X_fit_) dual_coef_ is predict's value. */
START_TEST(test_krr)
{
    data();
    km_model *m = fit(KM_ALGO_KRR, 0);
    km_coef c[KM_COEF_MAX];
    size_t n = km_model_coefs(m, c);
    const km_coef *xf = find(c, n, "X_fit_"), *dc = find(c, n, "dual_coef_");
    ck_assert_uint_eq(dc->shape[0], N);
    ck_assert_uint_eq(dc->shape[1], 1);
    double pred[N], row[D];
    km_error err;
    ck_assert_int_eq(km_predict(m, KM_OUT_VALUES, X, N, pred, &err), KM_OK);
    for (size_t i = 0; i < N; i++) {
        double v = 0;
        for (size_t j = 0; j < N; j++) {
            for (size_t f = 0; f < D; f++)
                row[f] = km_coef_at(xf, j, f);
            v += km_kernel_eval(km_model_kernel(m), X + i * D, row, D) *
                 km_coef_at(dc, j, 0);
        }
        ck_assert_double_eq_tol(v, pred[i], 1e-10 * (1 + fabs(pred[i])));
    }
    km_model_free(m);
}
END_TEST

/* svc (two and three classes) and svr: scikit-learn's one-vs-one
 * decision values from support_vectors_, dual_coef_ ((k-1) x n_SV),
 * intercept_ and n_support_ are predict's. */
static void check_svm(km_algorithm a, size_t k)
{
    km_model *m = fit(a, k);
    km_coef c[KM_COEF_MAX];
    size_t n = km_model_coefs(m, c);
    const km_coef *sv = find(c, n, "support_vectors_");
    const km_coef *dc = find(c, n, "dual_coef_");
    const km_coef *ic = find(c, n, "intercept_");
    const km_coef *ix = find(c, n, "support_");
    size_t nsv = sv->shape[0], np = a == KM_ALGO_SVC ? k * (k - 1) / 2 : 1;
    ck_assert_uint_eq(dc->shape[0], a == KM_ALGO_SVC ? k - 1 : 1);
    ck_assert_uint_eq(dc->shape[1], nsv);
    ck_assert_int_eq(dc->page_axis, 1);
    ck_assert_uint_eq(ic->shape[0], np);
    size_t start[4] = {0, nsv, nsv, nsv};
    if (a == KM_ALGO_SVC) {
        const km_coef *ns = find(c, n, "n_support_");
        for (size_t j = 0; j < k; j++)
            start[j + 1] = start[j] + (size_t)km_coef_at(ns, j, 0);
        ck_assert_uint_eq(start[k], nsv);
    }
    double *dec = malloc(N * np * sizeof *dec), *kv = malloc(nsv * sizeof *kv);
    km_error err;
    ck_assert_int_eq(km_predict(m, a == KM_ALGO_SVC ? KM_OUT_SCORES
                                                    : KM_OUT_VALUES,
                                X, N, dec, &err), KM_OK);
    for (size_t i = 0; i < N; i++) {
        for (size_t s = 0; s < nsv; s++) {
            double row[D];
            for (size_t f = 0; f < D; f++)
                row[f] = km_coef_at(sv, s, f);
            kv[s] = km_kernel_eval(km_model_kernel(m), X + i * D, row, D);
            ck_assert_double_eq(km_coef_at(ix, s, 0),
                                floor(km_coef_at(ix, s, 0)));
        }
        if (a == KM_ALGO_SVR) {
            double v = km_coef_at(ic, 0, 0);
            for (size_t s = 0; s < nsv; s++)
                v += km_coef_at(dc, 0, s) * kv[s];
            ck_assert_double_eq_tol(v, dec[i], 1e-10 * (1 + fabs(v)));
            continue;
        }
        for (size_t p = 0, u = 0; u < k; u++)
            for (size_t w = u + 1; w < k; w++, p++) {
                double v = km_coef_at(ic, p, 0);
                for (size_t s = start[u]; s < start[u + 1]; s++)
                    v += km_coef_at(dc, w - 1, s) * kv[s];
                for (size_t s = start[w]; s < start[w + 1]; s++)
                    v += km_coef_at(dc, u, s) * kv[s];
                /* core's binary score is LIBSVM's (scores_first: the
                 * API negates it, as scikit-learn) */
                double want = k == 2 ? -dec[i] : dec[i * np + p];
                ck_assert_double_eq_tol(v, want, 1e-10 * (1 + fabs(v)));
            }
    }
    free(dec);
    free(kv);
    km_model_free(m);
}

START_TEST(test_svm)
{
    data();
    check_svm(KM_ALGO_SVC, 2);
    check_svm(KM_ALGO_SVC, 3);
    check_svm(KM_ALGO_SVR, 0);
}
END_TEST

START_TEST(test_kpca_unit_vectors)
{
    data();
    km_model *m = fit(KM_ALGO_KPCA, 0);
    km_coef c[KM_COEF_MAX];
    size_t n = km_model_coefs(m, c);
    const km_coef *v = find(c, n, "eigenvectors_");
    ck_assert_uint_eq(v->shape[0], N);
    for (size_t j = 0; j < v->shape[1]; j++) {
        double s = 0;
        for (size_t i = 0; i < N; i++)
            s += km_coef_at(v, i, j) * km_coef_at(v, i, j);
        ck_assert_double_eq_tol(s, 1.0, 1e-12);
    }
    km_model_free(m);
}
END_TEST

START_TEST(test_views)
{
    const double a[6] = {1, 2, 3, 4, 5, 6}; /* 3 x 2 */
    km_coef c = km_coef_f64("a", a, 3, 2, 1);
    ck_assert_double_eq(km_coef_at(&c, 2, 1), 6);
    km_coef t = km_coef_transposed(c);
    ck_assert_uint_eq(t.shape[0], 2);
    ck_assert_uint_eq(t.shape[1], 3);
    ck_assert_int_eq(t.page_axis, 1);
    ck_assert_double_eq(km_coef_at(&t, 1, 2), 6);
    ck_assert_double_eq(km_coef_at(&t, 0, 1), 3);
    t.scale = -1;
    ck_assert_double_eq(km_coef_at(&t, 0, 1), -3);
    const double z = 0;
    km_coef zc = km_coef_f64("z", &z, 1, 0, 0);
    zc.scale = -1;
    ck_assert(!signbit(km_coef_at(&zc, 0, 0))); /* written 0, not -0 */
    const int ix[2] = {4, 9};
    km_coef ic = km_coef_i32("i", ix, 2, 0);
    ck_assert(ic.integer && ic.ndim == 1 && ic.page_axis == -1);
    ck_assert_double_eq(km_coef_at(&ic, 1, 0), 9);
    km_coef both[2] = {c, ic};
    ck_assert_uint_eq(km_coef_rows(both, 2), 3);
    ck_assert_uint_eq(km_coef_rows(&ic, 1), 0);
}
END_TEST

static Suite *coef_suite(void)
{
    Suite *s = suite_create("km_coef");
    TCase *tc = tcase_create("coefs");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_every_algorithm);
    tcase_add_test(tc, test_krr);
    tcase_add_test(tc, test_svm);
    tcase_add_test(tc, test_kpca_unit_vectors);
    tcase_add_test(tc, test_views);
    suite_add_tcase(s, tc);
    return s;
}

KM_TEST_MAIN(coef_suite)
