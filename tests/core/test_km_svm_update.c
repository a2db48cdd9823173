/*
 * test_km_svm_update.c - svc and svr updates by warm-started SMO
 * (core/algorithms/km_svm_update.c, params.keep_rows) against fresh fits
 * on all the rows.
 *
 * The references are independent of the update: (1) the optimality
 * conditions, recomputed here from the kept rows and dual variables with
 * the kernel written out (every pair's maximal violation m(a) - M(a),
 * LIBSVM's stopping rule, must be below the solver's tol, 1e-3, plus
 * 1e-9 for the rounding of the recomputed gradient); the same check on
 * the old solution with the new rows at zero must fail, so the check can;
 * (2) LIBSVM 3.24's labels on the parity sets (tests/fixtures/svm_*,
 * issue 3's tolerances, check_libsvm_parity) for a model fitted on the
 * training rows less k and updated by those k; (3) a fresh fit on all the
 * rows: labels on the held-out rows equal on >= 99.5% (issue 3's rule
 * between two solvers of the same tolerance), decision values and svr
 * predictions within 1e-2 and each pair's dual objective within 1e-3
 * relative. Two solutions that each meet the stopping rule m - M < tol
 * differ by O(tol) in the dual variables, not to rounding: 1e-2 is ten
 * times SMO's tol, the bound observed between the exact solver's own
 * storages (the cache and the dense Gram, test_km_svm.c) scaled by the
 * sizes of these sets. Also an update's pairs on two workers (bit for
 * bit as on one), class weights and probabilities read back from the
 * model, repeated updates, the file form (version
 * 9) and its checks (a class out of range or not whole, a value not
 * finite, a dual of the wrong sign, a pair's equality constraint
 * broken), memory accounting and refusals.
 */
#include "../check_main.h"
#include "model_bytes.h"
#include "svm_data.h"
#include "km.h"
#include "algorithms/km_svm_payload.h"
#include "model/km_model_internal.h"
#include "base/km_base_internal.h"

#define SMO_TOL 1e-3
#define NEAR 1e-2

static double kval(const double *a, const double *b, size_t d, double gamma)
{
    double s = 0;
    for (size_t j = 0; j < d; j++)
        s += (a[j] - b[j]) * (a[j] - b[j]);
    return exp(-gamma * s);
}

/* The largest difference between a kept gradient and the one recomputed
 * here (svc_gap with the model's own solution). */
static double grad_diff;

/* LIBSVM's maximal violation m(a) - M(a) of a binary problem: rows t of
 * X with y_t = +-1, alphas a_t in [0, C]; Gk, when not NULL, the kept
 * gradients to compare with. */
static double violation(const double *X, size_t d, const size_t *rows,
                        const double *y, const double *a, size_t n, double C,
                        double gamma, const double *Gk, const double *Gbk)
{
    double up = -INFINITY, low = INFINITY;
    for (size_t t = 0; t < n; t++) {
        double G = -1, Gb = 0;
        for (size_t u = 0; u < n; u++)
            if (a[u] != 0) {
                double q = y[t] * y[u] *
                           kval(X + rows[t] * d, X + rows[u] * d, d, gamma);
                G += q * a[u];
                Gb += a[u] >= C ? q * C : 0;
            }
        if (Gk) {
            grad_diff = fmax(grad_diff, fabs(G - Gk[t]));
            grad_diff = fmax(grad_diff, fabs(Gb - Gbk[t]));
        }
        double v = -y[t] * G;
        int in_up = (y[t] > 0 && a[t] < C) || (y[t] < 0 && a[t] > 0);
        int in_low = (y[t] > 0 && a[t] > 0) || (y[t] < 0 && a[t] < C);
        if (in_up && v > up)
            up = v;
        if (in_low && v < low)
            low = v;
    }
    return up - low;
}

/* The largest violation over an svc payload's pairs, from its kept rows,
 * classes and coefficients (ka may be another solution's, n rows). */
static double svc_gap(const svm_payload *p, const double *ka, double C,
                      double gamma)
{
    size_t K = p->k, n = p->kn, d = p->d;
    size_t *rows = malloc(n * sizeof *rows);
    double *y = malloc(n * sizeof *y), *a = malloc(n * sizeof *a);
    double *gk = malloc(n * sizeof *gk), *gbk = malloc(n * sizeof *gbk);
    double worst = 0;
    for (size_t c1 = 0; c1 < K; c1++)
        for (size_t c2 = c1 + 1; c2 < K; c2++) {
            size_t m = 0;
            for (size_t i = 0; i < n; i++) {
                size_t c = (size_t)p->ky[i];
                if (c != c1 && c != c2)
                    continue;
                size_t col = c == c1 ? c2 - 1 : c1;
                rows[m] = i;
                y[m] = c == c1 ? 1 : -1;
                gk[m] = p->kg[i * (K - 1) + col];
                gbk[m] = p->kgb[i * (K - 1) + col];
                a[m++] = fabs(ka[i * (K - 1) + col]);
            }
            double v = violation(p->kx, d, rows, y, a, m, C, gamma,
                                 ka == p->ka ? gk : NULL, gbk);
            worst = v > worst ? v : worst;
        }
    free(rows);
    free(y);
    free(a);
    free(gk);
    free(gbk);
    return worst;
}

static km_model *svc_fit(const double *X, size_t n, size_t d, const int *y,
                         size_t k, double C, double gamma, int keep)
{
    km_kernel kern = rbf(gamma);
    km_svm_params p = km_svm_params_default();
    p.C = C;
    p.keep_rows = keep;
    km_model *m = NULL;
    km_error err = {0};
    ck_assert_msg(km_svc_fit(&kern, &p, X, n, d, y, k, NULL, &m, &err) ==
                      KM_OK, "%s", err.message);
    return m;
}

static km_model *update(const km_model *m, const double *X, size_t k,
                        size_t d, const double *Y)
{
    km_model *out = NULL;
    km_error err = {0};
    ck_assert_msg(km_model_update(m, X, k, d, Y, 1, NULL, &out, &err) ==
                      KM_OK, "%s", err.message);
    return out;
}

static double *as_doubles(const int *y, size_t n)
{
    double *v = malloc(n * sizeof *v);
    for (size_t i = 0; i < n; i++)
        v[i] = y[i];
    return v;
}

/* u (updated) against f (a fresh fit on the same rows) on the held-out
 * rows X (n): labels on >= 99.5%, decision values within NEAR, each
 * pair's objective within 1e-3 relative. */
static void same_as_fresh(const char *name, const km_model *u,
                          const km_model *f, const double *X, size_t n,
                          size_t k)
{
    int *lu = malloc(n * sizeof *lu), *lf = malloc(n * sizeof *lf);
    size_t P = k * (k - 1) / 2;
    double *du = malloc(n * P * sizeof *du), *df = malloc(n * P * sizeof *df);
    ck_assert_int_eq(km_svc_predict(u, X, n, lu, NULL), KM_OK);
    ck_assert_int_eq(km_svc_predict(f, X, n, lf, NULL), KM_OK);
    ck_assert_int_eq(km_svc_decision(u, X, n, du, NULL), KM_OK);
    ck_assert_int_eq(km_svc_decision(f, X, n, df, NULL), KM_OK);
    size_t same = 0;
    double worst = 0;
    for (size_t i = 0; i < n; i++)
        same += lu[i] == lf[i];
    for (size_t i = 0; i < n * P; i++)
        worst = fmax(worst, fabs(du[i] - df[i]));
    ck_assert_msg(same >= 0.995 * n, "%s: labels equal on %zu of %zu", name,
                  same, n);
    ck_assert_msg(worst <= NEAR, "%s: decision values off by %g", name,
                  worst);
    const km_info_entry *ou = km_info_find(km_model_training(u), "objective");
    const km_info_entry *of = km_info_find(km_model_training(f), "objective");
    ck_assert_uint_eq(ou->count, of->count);
    for (size_t i = 0; i < ou->count; i++)
        ck_assert_msg(fabs(ou->values[i] - of->values[i]) <=
                          1e-3 * fabs(of->values[i]) + 1e-9,
                      "%s: pair %zu's objective %.10g, fresh %.10g", name, i,
                      ou->values[i], of->values[i]);
    free(lu);
    free(lf);
    free(du);
    free(df);
}

/* A parity set: fit on n_train - k rows with keep_rows, update by the
 * next k; the optimality conditions, LIBSVM's labels and a fresh fit. */
static void svc_case(const char *name, const char *file, size_t n_train,
                     size_t n_test, double C, double gamma, size_t k_new)
{
    km_dataset ds;
    size_t K;
    int *y = load_classes(file, n_train, &ds, &K);
    const size_t t0 = ds.n - n_test, n0 = n_train - k_new, d = ds.d;
    km_model *m = svc_fit(ds.X, n0, d, y, K, C, gamma, 1);
    double *Yn = as_doubles(y + n0, k_new);
    km_model *u = update(m, ds.X + n0 * d, k_new, d, Yn);
    ck_assert_uint_eq(km_model_n_samples(u), n_train);
    const svm_payload *p = km_model_payload(u);
    ck_assert_uint_eq(p->kn, n_train);
    grad_diff = 0;
    double gap = svc_gap(p, p->ka, C, gamma);
    ck_assert_msg(gap < SMO_TOL + 1e-9, "%s k=%zu: violation %g", name,
                  k_new, gap);
    /* the kept gradients and G_bar are the solution's (the next update
     * starts from them), to the rounding of sums of up to n products */
    ck_assert_msg(grad_diff < 1e-9, "%s k=%zu: kept gradient off by %g",
                  name, k_new, grad_diff);
    /* the old solution, the new rows at zero: not yet optimal (the check
     * can fail) when the new rows matter */
    if (k_new >= 50) {
        const svm_payload *o = km_model_payload(m);
        double *stale = calloc(n_train * (K - 1), sizeof *stale);
        memcpy(stale, o->ka, n0 * (K - 1) * sizeof *stale);
        double sg = svc_gap(p, stale, C, gamma);
        ck_assert_msg(sg > SMO_TOL, "%s: the old solution already meets "
                      "the tolerance (%g)", name, sg);
        free(stale);
    }
    check_libsvm_parity(name, u, ds.X + t0 * d, y + t0, n_test, K);
    km_model *f = svc_fit(ds.X, n_train, d, y, K, C, gamma, 1);
    same_as_fresh(name, u, f, ds.X + t0 * d, n_test, K);
    /* fewer iterations than from zero: the start is near */
    const km_info_entry *iu = km_info_find(km_model_training(u), "iterations");
    const km_info_entry *ifr = km_info_find(km_model_training(f),
                                            "iterations");
    ck_assert_msg(iu->values[0] < ifr->values[0], "%s: %g iterations, "
                  "fresh %g", name, iu->values[0], ifr->values[0]);
    free(Yn);
    free(y);
    km_model_free(u);
    km_model_free(f);
    km_model_free(m);
    km_dataset_free(&ds);
}

START_TEST(svc_binary_equals_refit)
{
    svc_case("bc", "breast_cancer.csv", 400, 169, 1, 0.1, 1);
    svc_case("bc", "breast_cancer.csv", 400, 169, 1, 0.1, 17);
    svc_case("bc", "breast_cancer.csv", 400, 169, 1, 0.1, 100);
}
END_TEST

START_TEST(svc_multiclass_equals_refit)
{
    svc_case("digits", "digits.csv", 1300, 497, 10, 0.02, 1);
    svc_case("digits", "digits.csv", 1300, 497, 10, 0.02, 100);
}
END_TEST

/* The pairs of an update on several workers: the same model as on one,
 * bit for bit (each pair's start and solve are its own). */
START_TEST(svc_update_workers_same)
{
    km_dataset ds;
    size_t K;
    int *y = load_classes("digits.csv", 600, &ds, &K);
    size_t d = ds.d, n0 = 560, k = 40;
    km_model *m = svc_fit(ds.X, n0, d, y, K, 10, 0.02, 1);
    double *Y = as_doubles(y + n0, k);
    km_fit_control two = {NULL, NULL, 2, NULL};
    km_model *u1 = update(m, ds.X + n0 * d, k, d, Y), *u2 = NULL;
    km_error err = {0};
    ck_assert_msg(km_model_update(m, ds.X + n0 * d, k, d, Y, 1, &two, &u2,
                                  &err) == KM_OK, "%s", err.message);
    const svm_payload *a = km_model_payload(u1), *b = km_model_payload(u2);
    size_t cells = a->kn * (K - 1);
    ck_assert_uint_eq(a->kn, b->kn);
    ck_assert(memcmp(a->ka, b->ka, cells * sizeof *a->ka) == 0 &&
              memcmp(a->kg, b->kg, cells * sizeof *a->kg) == 0 &&
              memcmp(a->rho, b->rho, K * (K - 1) / 2 * sizeof *a->rho) == 0);
    km_model_free(u1);
    km_model_free(u2);
    km_model_free(m);
    free(Y);
    free(y);
    km_dataset_free(&ds);
}
END_TEST

/* Three updates in a row (the model keeps its rows each time): the same
 * as a fresh fit, figures updates 3 and rows_added the last k. */
START_TEST(svc_repeated_updates)
{
    km_dataset ds;
    size_t K;
    int *y = load_classes("breast_cancer.csv", 400, &ds, &K);
    size_t d = ds.d, n0 = 340, k = 20;
    km_model *m = svc_fit(ds.X, n0, d, y, K, 1, 0.1, 1);
    double *Y = as_doubles(y, 400);
    for (int r = 0; r < 3; r++) {
        size_t at = n0 + (size_t)r * k;
        km_model *u = update(m, ds.X + at * d, k, d, Y + at);
        km_model_free(m);
        m = u;
    }
    const km_info_entry *e = km_info_find(km_model_training(m), "updates");
    ck_assert(e && e->values[0] == 3);
    const svm_payload *p = km_model_payload(m);
    ck_assert_double_lt(svc_gap(p, p->ka, 1, 0.1), SMO_TOL + 1e-9);
    check_libsvm_parity("bc", m, ds.X + (ds.n - 169) * d, y + ds.n - 169, 169,
                        K);
    km_model *f = svc_fit(ds.X, 400, d, y, K, 1, 0.1, 1);
    same_as_fresh("bc x3", m, f, ds.X + (ds.n - 169) * d, 169, K);
    km_model_free(f);
    km_model_free(m);
    free(Y);
    free(y);
    km_dataset_free(&ds);
}
END_TEST

/* The params an update reads back from the model's figures: class_weight
 * (C per class) and probability (Platt's sigmoids fitted again): as a
 * fresh fit with them. */
START_TEST(svc_weights_and_probability)
{
    km_dataset ds;
    size_t K;
    int *y = load_classes("breast_cancer.csv", 400, &ds, &K);
    size_t d = ds.d, n0 = 300, k = 60;
    double w[2] = {1.0, 3.0};
    km_kernel kern = rbf(0.1);
    km_svm_params p = km_svm_params_default();
    p.keep_rows = 1;
    p.class_weight = w;
    p.probability = 1;
    km_model *m = NULL, *f = NULL;
    km_error err = {0};
    ck_assert(km_svc_fit(&kern, &p, ds.X, n0, d, y, K, NULL, &m, &err) ==
              KM_OK);
    ck_assert(km_svc_fit(&kern, &p, ds.X, n0 + k, d, y, K, NULL, &f, &err) ==
              KM_OK);
    double *Y = as_doubles(y + n0, k);
    km_model *u = update(m, ds.X + n0 * d, k, d, Y);
    const double *T = ds.X + (ds.n - 169) * d;
    same_as_fresh("bc weighted", u, f, T, 169, K);
    double *pu = malloc(169 * 2 * sizeof *pu), *pf = malloc(169 * 2 * sizeof *pf);
    ck_assert_int_eq(km_svc_probability(u, T, 169, pu, NULL), KM_OK);
    ck_assert_int_eq(km_svc_probability(f, T, 169, pf, NULL), KM_OK);
    double worst = 0;
    for (size_t i = 0; i < 169 * 2; i++)
        worst = fmax(worst, fabs(pu[i] - pf[i]));
    /* Platt's sigmoids from each model's own cross-validation folds (the
     * same folds: the same rows and seed), whose solves agree to tol */
    ck_assert_msg(worst <= 2e-2, "probabilities off by %g", worst);
    free(pu);
    free(pf);
    free(Y);
    free(y);
    km_model_free(u);
    km_model_free(f);
    km_model_free(m);
    km_dataset_free(&ds);
}
END_TEST

/* ------------------------------------------------------------ svr */

static double *svr_rows(km_dataset *ds, double **target)
{
    ck_assert(km_dataset_load("breast_cancer.csv", (size_t)-1, ds) == 0);
    km_dataset_scale(ds, 400);
    double *X = malloc(ds->n * (ds->d - 1) * sizeof *X);
    double *y = malloc(ds->n * sizeof *y);
    for (size_t i = 0; i < ds->n; i++) {
        y[i] = ds->X[i * ds->d];
        memcpy(X + i * (ds->d - 1), ds->X + i * ds->d + 1,
               (ds->d - 1) * sizeof *X);
    }
    *target = y;
    return X;
}

static km_model *svr_fit(const double *X, size_t n, size_t d,
                         const double *y)
{
    km_kernel kern = rbf(0.1);
    km_svm_params p = km_svm_params_default();
    p.keep_rows = 1;
    km_model *m = NULL;
    km_error err = {0};
    ck_assert_msg(km_svr_fit(&kern, &p, X, n, d, y, NULL, &m, &err) == KM_OK,
                  "%s", err.message);
    return m;
}

/* The 2n-variable problem's violation from the kept alphas. */
static double svr_gap(const svm_payload *p, double C, double eps)
{
    size_t n = p->kn, d = p->d;
    double up = -INFINITY, low = INFINITY;
    double *f = calloc(n, sizeof *f);
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++) {
            double c = p->ka[2 * j] - p->ka[2 * j + 1];
            if (c != 0)
                f[i] += c * kval(p->kx + i * d, p->kx + j * d, d, 0.1);
        }
    for (size_t t = 0; t < 2 * n; t++) {
        size_t i = t % n;
        double yt = t < n ? 1 : -1, a = p->ka[2 * i + (t >= n)];
        /* G_t = yt f_i + p_t, p = eps - y_i (t < n) or eps + y_i */
        double G = yt * f[i] + eps - yt * p->ky[i];
        grad_diff = fmax(grad_diff, fabs(G - p->kg[2 * i + (t >= n)]));
        double v = -yt * G;
        if (((yt > 0 && a < C) || (yt < 0 && a > 0)) && v > up)
            up = v;
        if (((yt > 0 && a > 0) || (yt < 0 && a < C)) && v < low)
            low = v;
    }
    free(f);
    return up - low;
}

START_TEST(svr_equals_refit)
{
    km_dataset ds;
    double *y;
    double *X = svr_rows(&ds, &y);
    size_t d = ds.d - 1, nt = 400, ks[] = {1, 40};
    km_model *f = svr_fit(X, nt, d, y);
    size_t ntest = ds.n - nt;
    double *pf = malloc(ntest * sizeof *pf), *pu = malloc(ntest * sizeof *pu);
    ck_assert_int_eq(km_svr_predict(f, X + nt * d, ntest, pf, NULL), KM_OK);
    for (size_t c = 0; c < 2; c++) {
        size_t n0 = nt - ks[c];
        km_model *m = svr_fit(X, n0, d, y);
        km_model *u = update(m, X + n0 * d, ks[c], d, y + n0);
        const svm_payload *p = km_model_payload(u);
        ck_assert_uint_eq(p->kn, nt);
        grad_diff = 0;
        double gap = svr_gap(p, 1, 0.1);
        ck_assert_msg(gap < SMO_TOL + 1e-9, "svr k=%zu: violation %g", ks[c],
                      gap);
        ck_assert_msg(grad_diff < 1e-9, "svr k=%zu: kept gradient off by %g",
                      ks[c], grad_diff);
        ck_assert_int_eq(km_svr_predict(u, X + nt * d, ntest, pu, NULL),
                         KM_OK);
        double worst = 0;
        for (size_t i = 0; i < ntest; i++)
            worst = fmax(worst, fabs(pu[i] - pf[i]));
        ck_assert_msg(worst <= NEAR, "svr k=%zu: predictions off by %g",
                      ks[c], worst);
        km_model_free(u);
        km_model_free(m);
    }
    free(pf);
    free(pu);
    km_model_free(f);
    free(X);
    free(y);
    km_dataset_free(&ds);
}
END_TEST

/* ------------------------------------------------------------ file */

/* buf with the 8 bytes at at replaced by v and its checksum refreshed:
 * KM_ECORRUPT naming the kept rows. */
static void corrupt_at(const unsigned char *buf, size_t len, size_t at,
                       double v)
{
    refused_at(buf, len, at, v, "kept rows");
}

START_TEST(file_round_trip_and_checks)
{
    km_dataset ds;
    size_t K;
    int *y = load_classes("digits.csv", 300, &ds, &K);
    size_t d = ds.d, n = 300;
    km_model *plain = svc_fit(ds.X, n, d, y, K, 10, 0.02, 0);
    km_model *m = svc_fit(ds.X, n, d, y, K, 10, 0.02, 1);
    /* the kept rows counted: X, classes, coefficients */
    ck_assert_uint_ge(km_model_bytes(m) - km_model_bytes(plain),
                      n * (d + 1 + K - 1) * 8);
    const km_info_entry *kr = km_info_find(km_model_params(m), "keep_rows");
    ck_assert(kr && kr->values[0] == 1);
    unsigned char *buf = NULL;
    size_t len = 0;
    km_error err = {0};
    const char *names[] = {"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"};
    ck_assert_uint_eq(K, 10);
    ck_assert(km_model_set_labels(m, names, K, 1, &err) == KM_OK);
    ck_assert(km_model_save_buffer(m, &buf, &len, &err) == KM_OK);
    ck_assert_uint_eq(get32(buf + 4), 9);
    km_model *back = NULL;
    ck_assert_msg(km_model_load_buffer(buf, len, &back, &err) == KM_OK, "%s",
                  err.message);
    ck_assert_uint_eq(km_model_bytes(back), km_model_bytes(m));
    ck_assert_ptr_null(km_model_update_refusal(back));
    double *Y = as_doubles(y, ds.n);
    km_model *u1 = update(m, ds.X + n * d, 10, d, Y + n);
    km_model *u2 = update(back, ds.X + n * d, 10, d, Y + n);
    double a[45], b[45];
    for (size_t i = 0; i < 20; i++) {
        ck_assert_int_eq(km_svc_decision(u1, ds.X + i * d, 1, a, NULL), KM_OK);
        ck_assert_int_eq(km_svc_decision(u2, ds.X + i * d, 1, b, NULL), KM_OK);
        for (size_t j = 0; j < 45; j++)
            ck_assert_double_eq(a[j], b[j]);
    }
    /* the payload ends with ka, kg and kgb (n x 9 each, each after its
     * count) before the checksum; ky (n values) before ka */
    size_t cols = n * (K - 1) * 8;
    size_t kg_at = len - 4 - cols - 8 - cols;
    size_t ka_at = kg_at - 8 - cols;
    size_t ky_at = ka_at - 8 - n * 8;
    const svm_payload *p = km_model_payload(m);
    corrupt_at(buf, len, ky_at, 10);   /* class 10 of 10 */
    corrupt_at(buf, len, ky_at, 0.5);  /* not whole */
    corrupt_at(buf, len, ka_at, NAN);
    corrupt_at(buf, len, kg_at, INFINITY);
    /* row 0's first column is its pair with class 0 (or 1): flip its
     * sign where it is nonzero */
    for (size_t i = 0; i < n * (K - 1); i++)
        if (p->ka[i] != 0) {
            corrupt_at(buf, len, ka_at + i * 8, -p->ka[i]);
            /* the same sign, twice the size: its pair's sum of y alpha
             * is no longer 0 */
            corrupt_at(buf, len, ka_at + i * 8, 2 * p->ka[i]);
            break;
        }
    free(buf);
    free(Y);
    free(y);
    km_model_free(u1);
    km_model_free(u2);
    km_model_free(back);
    km_model_free(m);
    km_model_free(plain);
    km_dataset_free(&ds);
}
END_TEST

/* ------------------------------------------------------------ refusals */

START_TEST(refusals)
{
    km_dataset ds;
    size_t K;
    int *y = load_classes("breast_cancer.csv", 400, &ds, &K);
    size_t d = ds.d, n = 100;
    km_model *plain = svc_fit(ds.X, n, d, y, K, 1, 0.1, 0);
    km_model *out = NULL;
    km_error err = {0};
    double Y[2] = {0, 1};
    ck_assert_int_eq(km_model_update(plain, ds.X, 2, d, Y, 1, NULL, &out,
                                     &err), KM_ECONFLICT);
    ck_assert_msg(strstr(err.message, "keep_rows"), "%s", err.message);
    char can[256];
    km_update_possible(can, sizeof can);
    ck_assert_msg(strstr(can, "svc and svr models fitted with "
                          "params.keep_rows"), "%s", can);
    ck_assert_uint_eq(km_model_update_bytes(plain, 2), SIZE_MAX);
    km_model *m = svc_fit(ds.X, n, d, y, K, 1, 0.1, 1);
    ck_assert_uint_lt(km_model_update_bytes(m, 2), SIZE_MAX);
    ck_assert_uint_gt(km_model_update_bytes(m, 2), (n + 2) * d * 8);
    double bad[2] = {0, 2}; /* class 2 of 2: a new class */
    ck_assert_int_eq(km_model_update(m, ds.X, 2, d, bad, 1, NULL, &out,
                                     &err), KM_EINVAL);
    ck_assert_msg(strstr(err.message, "y[1]") &&
                      strstr(err.message, "cannot add a class"), "%s",
                  err.message);
    bad[1] = 0.5;
    ck_assert_int_eq(km_model_update(m, ds.X, 2, d, bad, 1, NULL, &out,
                                     &err), KM_EINVAL);
    /* keep_rows belongs to the exact solver */
    km_svm_params sp = km_svm_params_default();
    sp.keep_rows = 1;
    sp.solver = KM_SVM_SOLVER_NYSTROM;
    ck_assert_int_eq(km_svm_check(&sp, KM_ALGO_SVC, 2, &err), KM_EINVAL);
    ck_assert_msg(strstr(err.message, "keep_rows"), "%s", err.message);
    /* auto runs exact with it */
    sp.solver = KM_SVM_SOLVER_AUTO;
    ck_assert_int_eq(km_svm_resolve_solver(&sp, 100000, 2),
                     KM_SVM_SOLVER_EXACT);
    km_model_free(plain);
    km_model_free(m);
    free(y);
    km_dataset_free(&ds);
}
END_TEST

Suite *svm_update_suite(void)
{
    Suite *s = suite_create("svm_update");
    TCase *tc = tcase_create("svm_update");
    tcase_add_test(tc, svc_binary_equals_refit);
    tcase_add_test(tc, svc_multiclass_equals_refit);
    tcase_add_test(tc, svc_update_workers_same);
    tcase_add_test(tc, svc_repeated_updates);
    tcase_add_test(tc, svc_weights_and_probability);
    tcase_add_test(tc, svr_equals_refit);
    tcase_add_test(tc, file_round_trip_and_checks);
    tcase_add_test(tc, refusals);
    tcase_set_timeout(tc, 300);
    suite_add_tcase(s, tc);
    return s;
}

KM_TEST_MAIN(svm_update_suite)
