/*
 * test_km_search.c - km_search against independent references
 * (tests/fixtures/search_*.txt, from gen_search_refs.py):
 *   - krr's closed-form LOO against brute-force refits in numpy (r2, MSE,
 *     MAE of the pooled predictions per alpha), GCV against its formula
 *     from a direct solve, LOO MSE against RidgeCV on a linear kernel:
 *     all to 1e-9 relative;
 *   - GridSearchCV with PredefinedSplit: per point mean_test_score and
 *     std_test_score, and best_index_. Tolerances: krr 1e-8 relative (the
 *     fits' parity with KernelRidge), svc accuracy exactly (the same
 *     predictions as SVC), svr 1e-6 absolute on r2 (both sides solve to
 *     tol 1e-6; at the default 1e-3 the stopping rule leaves means 6e-6
 *     apart; a std of 4 fold scores, about 0.03, then differs by 1e-7,
 *     2e-6 of itself), kpca's reconstruction error 1e-7 relative;
 *   - svc and svr folds sharing one Gram agree with fits of their own;
 *     neg_log_loss;
 *   - the two krr engines agree (closed-form LOO and n predefined folds);
 *     the closed forms (LOO, GCV) against a Cholesky per alpha computed
 *     in the test, to 1e-10 relative;
 *   - folds: KFOLD sizes, order and shuffle, stratified balance,
 *     PREDEFINED validation, more folds than rows;
 *   - a failed point loses, all failed fails; cancel; km_search_bytes.
 *   - threads: svc, svr and kpca searches on 1 and 3 threads agree bit
 *     for bit; progress from one thread at a time, non-decreasing, to 1;
 *     the first failure is the points' order's; a cancel on 3 threads
 *     stops them all; km_search_bytes counts the workers.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "../check_main.h"
#include "km.h"
#include "select/km_select_internal.h"

#define KRR_TOL 1e-8
#define CLOSED_TOL 1e-9
#define SVR_TOL 1e-6

static double *fixture(const char *name, size_t expect)
{
    size_t n;
    double *v = km_read_fixture(name, &n);
    ck_assert_msg(expect == 0 || n == expect, "%s: %zu values, expected %zu",
                  name, n, expect);
    return v;
}

/* A krr search over one kernel and the given alphas. */
static km_status krr_search(const km_kernel *k, const double *alphas,
                            size_t na, const km_problem *pb, km_cv cv,
                            km_scoring sc, km_search_result *res,
                            km_error *err)
{
    km_kernel *ks = malloc(na * sizeof *ks);
    km_krr_params *ps = malloc(na * sizeof *ps);
    for (size_t i = 0; i < na; i++) {
        ks[i] = *k; /* leaves only: shared, not owned */
        ps[i] = km_krr_params_default();
        ps[i].alpha = alphas[i];
    }
    km_search_spec s = {KM_ALGO_KRR, {KM_SCALE_NONE, 0}, sc, cv, na, ks, ps};
    km_status st = km_search(&s, pb, NULL, res, err);
    free(ks);
    free(ps);
    return st;
}

/* ------------------------------------------------------------ closed form */

typedef struct loo_data {
    double *X, *Y, *alphas;
    size_t n, d, m, na;
} loo_data;

static void loo_load(loo_data *L)
{
    L->n = 80, L->d = 28, L->m = 2;
    L->X = fixture("search_loo_X.txt", L->n * L->d);
    L->Y = fixture("search_loo_Y.txt", L->n * L->m);
    L->alphas = km_read_fixture("search_loo_alphas.txt", &L->na);
}

static void loo_free(loo_data *L)
{
    free(L->X);
    free(L->Y);
    free(L->alphas);
}

static void check_closed(km_cv_kind kind, km_scoring sc, const char *file,
                         double sign)
{
    loo_data L;
    loo_load(&L);
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_RBF);
    k.gamma = 0.05;
    km_problem pb = {L.X, L.n, L.d, L.Y, L.m, NULL, 0};
    km_cv cv = {kind, 0, 0, 0, 0, NULL};
    km_search_result res;
    km_error err = {0};
    ck_assert_msg(krr_search(&k, L.alphas, L.na, &pb, cv, sc, &res, &err) ==
                      KM_OK, "%s", err.message);
    double *ref = fixture(file, L.na);
    for (size_t i = 0; i < L.na; i++)
        ref[i] *= sign;
    double e = km_max_rel_err(res.mean, ref, L.na, 1e-3);
    ck_assert_msg(e <= CLOSED_TOL, "%s: off by %g relative", file, e);
    ck_assert_uint_eq(res.n_splits, kind == KM_CV_LOO ? L.n : 1);
    for (size_t i = 0; i < L.na; i++)
        ck_assert(res.std[i] == 0);
    /* the best is the first highest */
    size_t best = 0;
    for (size_t i = 1; i < L.na; i++)
        if (ref[i] > ref[best])
            best = i;
    ck_assert_uint_eq(res.best, best);
    free(ref);
    km_search_result_cleanup(&res);
    loo_free(&L);
}

START_TEST(loo_against_brute_force)
{
    check_closed(KM_CV_LOO, KM_SCORING_R2, "search_loo_r2.txt", 1);
    check_closed(KM_CV_LOO, KM_SCORING_NEG_MSE, "search_loo_mse.txt", -1);
    check_closed(KM_CV_LOO, KM_SCORING_NEG_MAE, "search_loo_mae.txt", -1);
}
END_TEST

START_TEST(gcv_against_formula)
{
    check_closed(KM_CV_GCV, KM_SCORING_NEG_MSE, "search_gcv_mse.txt", -1);
}
END_TEST

START_TEST(loo_against_ridgecv)
{
    loo_data L;
    loo_load(&L);
    size_t na;
    double *alphas = km_read_fixture("search_ridgecv_alphas.txt", &na);
    double *ref = fixture("search_ridgecv_mse.txt", na);
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_LINEAR);
    km_problem pb = {L.X, L.n, L.d, L.Y, L.m, NULL, 0};
    km_cv cv = {KM_CV_LOO, 0, 0, 0, 0, NULL};
    km_search_result res;
    km_error err = {0};
    ck_assert_msg(krr_search(&k, alphas, na, &pb, cv, KM_SCORING_NEG_MSE, &res,
                             &err) == KM_OK, "%s", err.message);
    for (size_t i = 0; i < na; i++)
        res.mean[i] = -res.mean[i];
    double e = km_max_rel_err(res.mean, ref, na, 1e-3);
    ck_assert_msg(e <= CLOSED_TOL, "RidgeCV: off by %g relative", e);
    free(alphas);
    free(ref);
    km_search_result_cleanup(&res);
    loo_free(&L);
}
END_TEST

/* The closed form's preprocessing is learnt once on all rows: LOO with
 * standardized X (population std) and centered y scores as LOO without
 * preprocessing on X standardized and y centered beforehand (here, by
 * the test's own arithmetic); a minmax search differs from both. */
START_TEST(closed_form_preprocessing)
{
    loo_data L;
    loo_load(&L);
    size_t n = L.n, d = L.d, m = L.m;
    double *Xs = malloc(n * d * sizeof *Xs), *Yc = malloc(n * m * sizeof *Yc);
    for (size_t j = 0; j < d; j++) {
        double mean = 0, var = 0;
        for (size_t i = 0; i < n; i++)
            mean += L.X[i * d + j] / n;
        for (size_t i = 0; i < n; i++)
            var += (L.X[i * d + j] - mean) * (L.X[i * d + j] - mean) / n;
        for (size_t i = 0; i < n; i++)
            Xs[i * d + j] = (L.X[i * d + j] - mean) / sqrt(var);
    }
    for (size_t o = 0; o < m; o++) {
        double mean = 0;
        for (size_t i = 0; i < n; i++)
            mean += L.Y[i * m + o] / n;
        for (size_t i = 0; i < n; i++)
            Yc[i * m + o] = L.Y[i * m + o] - mean;
    }
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_RBF);
    k.gamma = 0.02;
    km_krr_params ps[3] = {{.alpha = 0.01}, {.alpha = 0.1}, {.alpha = 1}};
    km_search_spec s = {KM_ALGO_KRR, {KM_SCALE_STANDARDIZE, 1},
                        KM_SCORING_NEG_MSE, {KM_CV_LOO, 0, 0, 0, 0, NULL}, 3,
                        (km_kernel[]){k, k, k}, ps};
    km_problem raw = {L.X, n, d, L.Y, m, NULL, 0};
    km_problem pre = {Xs, n, d, Yc, m, NULL, 0};
    km_search_result a, b, c;
    km_error err = {0};
    ck_assert_msg(km_search(&s, &raw, NULL, &a, &err) == KM_OK, "%s",
                  err.message);
    s.pre = (km_preprocess){KM_SCALE_NONE, 0};
    ck_assert_int_eq(km_search(&s, &pre, NULL, &b, &err), KM_OK);
    double e = km_max_rel_err(a.mean, b.mean, 3, 1e-3);
    ck_assert_msg(e <= 1e-10, "preprocessed on all rows: off by %g", e);
    s.pre = (km_preprocess){KM_SCALE_MINMAX, 1};
    ck_assert_int_eq(km_search(&s, &raw, NULL, &c, &err), KM_OK);
    ck_assert(fabs(c.mean[0] - a.mean[0]) > 1e-6 * fabs(a.mean[0]));
    km_search_result_cleanup(&a);
    km_search_result_cleanup(&b);
    km_search_result_cleanup(&c);
    free(Xs);
    free(Yc);
    loo_free(&L);
}
END_TEST

/* The closed form and n one-row predefined folds (the shared-Gram fold
 * engine, one Cholesky per alpha) give the same MSE. */
START_TEST(engines_agree)
{
    loo_data L;
    loo_load(&L);
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_RBF);
    k.gamma = 0.05;
    km_problem pb = {L.X, L.n, L.d, L.Y, L.m, NULL, 0};
    int *tf = malloc(L.n * sizeof *tf);
    for (size_t i = 0; i < L.n; i++)
        tf[i] = (int)i;
    km_cv loo = {KM_CV_LOO, 0, 0, 0, 0, NULL};
    km_cv pre = {KM_CV_PREDEFINED, L.n, 0, 0, 0, tf};
    km_search_result a, b;
    km_error err = {0};
    ck_assert_int_eq(krr_search(&k, L.alphas, L.na, &pb, loo,
                                KM_SCORING_NEG_MSE, &a, &err), KM_OK);
    ck_assert_msg(krr_search(&k, L.alphas, L.na, &pb, pre, KM_SCORING_NEG_MSE,
                             &b, &err) == KM_OK, "%s", err.message);
    ck_assert_uint_eq(b.n_splits, L.n);
    double e = km_max_rel_err(b.mean, a.mean, L.na, 1e-3);
    ck_assert_msg(e <= 1e-9, "engines differ by %g relative", e);
    ck_assert(b.std[0] > 0);
    km_search_result_cleanup(&a);
    km_search_result_cleanup(&b);
    free(tf);
    loo_free(&L);
}
END_TEST

/* Cholesky of the n x n SPD matrix A in place (lower, row-major), then
 * A^-1 into Ainv column by column: the test's own direct solve. */
static void chol_inverse(double *A, size_t n, double *Ainv, double *x)
{
    for (size_t j = 0; j < n; j++) {
        for (size_t k = 0; k < j; k++)
            A[j * n + j] -= A[j * n + k] * A[j * n + k];
        ck_assert(A[j * n + j] > 0);
        A[j * n + j] = sqrt(A[j * n + j]);
        for (size_t i = j + 1; i < n; i++) {
            for (size_t k = 0; k < j; k++)
                A[i * n + j] -= A[i * n + k] * A[j * n + k];
            A[i * n + j] /= A[j * n + j];
        }
    }
    for (size_t c = 0; c < n; c++) {
        for (size_t i = 0; i < n; i++) { /* L x = e_c */
            x[i] = i == c;
            for (size_t k = 0; k < i; k++)
                x[i] -= A[i * n + k] * x[k];
            x[i] /= A[i * n + i];
        }
        for (size_t i = n; i-- > 0;) { /* L^T x = x */
            for (size_t k = i + 1; k < n; k++)
                x[i] -= A[k * n + i] * x[k];
            x[i] /= A[i * n + i];
        }
        for (size_t i = 0; i < n; i++)
            Ainv[i * n + c] = x[i];
    }
}

/* The closed forms (LOO and GCV, 2 outputs, more alphas than one batch,
 * n not a multiple of the diagonal sweep's block) against the
 * definitions computed here from (K + alpha I)^-1 by a Cholesky per
 * alpha: LOO residual_i = c_i / ((K + alpha I)^-1)_ii with c =
 * (K + alpha I)^-1 y, GCV n |alpha c|^2 / (alpha tr (K + alpha I)^-1)^2
 * per output; both as -MSE, to 1e-10 relative. */
START_TEST(closed_form_against_cholesky)
{
    enum { N = 61, D = 5, M = 2, NA = 35 };
    static double X[N * D], Y[N * M], K[N * N], A[N * N], Ai[N * N];
    double x[N], alphas[NA], loo[NA], gcv[NA];
    uint64_t st = 88172645463325252ull;
    for (size_t i = 0; i < N * D; i++) {
        st ^= st << 13, st ^= st >> 7, st ^= st << 17;
        X[i] = (double)(st >> 11) * 0x1p-53 * 2 - 1;
    }
    for (size_t i = 0; i < N; i++) {
        Y[i * M] = sin(2 * X[i * D]) + X[i * D + 1] * X[i * D + 2];
        Y[i * M + 1] = cos(X[i * D + 3]) - 0.5 * X[i * D + 4];
    }
    double gamma = 0.3;
    for (size_t i = 0; i < N; i++)
        for (size_t j = 0; j < N; j++) {
            double s = 0;
            for (size_t t = 0; t < D; t++) {
                double u = X[i * D + t] - X[j * D + t];
                s += u * u;
            }
            K[i * N + j] = exp(-gamma * s);
        }
    for (size_t a = 0; a < NA; a++) {
        alphas[a] = pow(10.0, -3.0 + 4.0 * (double)a / (NA - 1));
        memcpy(A, K, sizeof A);
        for (size_t i = 0; i < N; i++)
            A[i * N + i] += alphas[a];
        chol_inverse(A, N, Ai, x);
        double tr = 0, sl = 0, sg = 0;
        for (size_t i = 0; i < N; i++)
            tr += Ai[i * N + i];
        for (size_t o = 0; o < M; o++) {
            double rr = 0;
            for (size_t i = 0; i < N; i++) {
                double c = 0;
                for (size_t j = 0; j < N; j++)
                    c += Ai[i * N + j] * Y[j * M + o];
                sl += (c / Ai[i * N + i]) * (c / Ai[i * N + i]);
                rr += alphas[a] * c * alphas[a] * c;
            }
            sg += N * rr / ((alphas[a] * tr) * (alphas[a] * tr));
        }
        loo[a] = -sl / (N * M);
        gcv[a] = -sg / M;
    }
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_RBF);
    k.gamma = gamma;
    km_problem pb = {X, N, D, Y, M, NULL, 0};
    km_cv_kind kinds[2] = {KM_CV_LOO, KM_CV_GCV};
    for (int c = 0; c < 2; c++) {
        km_cv cv = {kinds[c], 0, 0, 0, 0, NULL};
        km_search_result res;
        km_error err = {0};
        ck_assert_msg(krr_search(&k, alphas, NA, &pb, cv, KM_SCORING_NEG_MSE,
                                 &res, &err) == KM_OK, "%s", err.message);
        double e = km_max_rel_err(res.mean, c ? gcv : loo, NA, 0);
        ck_assert_msg(e <= 1e-10, "%s: off by %g relative",
                      c ? "GCV" : "LOO", e);
        km_search_result_cleanup(&res);
    }
}
END_TEST

/* ------------------------------------------------------------ grids */

typedef struct gs_data {
    double *X, *Y, *lab;
    int *labels, *tf;
    size_t n, d, folds;
} gs_data;

static void gs_load(gs_data *G)
{
    G->n = 200, G->d = 28;
    G->X = fixture("search_gs_X.txt", G->n * G->d);
    G->Y = fixture("search_gs_Y.txt", G->n * 2);
    G->lab = fixture("search_gs_labels.txt", G->n);
    double *tf = fixture("search_gs_test_fold.txt", G->n);
    G->labels = malloc(G->n * sizeof(int));
    G->tf = malloc(G->n * sizeof(int));
    G->folds = 0;
    for (size_t i = 0; i < G->n; i++) {
        G->labels[i] = (int)G->lab[i];
        G->tf[i] = (int)tf[i];
        if (G->tf[i] + 1 > (int)G->folds)
            G->folds = (size_t)G->tf[i] + 1;
    }
    free(tf);
}

static void gs_free(gs_data *G)
{
    free(G->X);
    free(G->Y);
    free(G->lab);
    free(G->labels);
    free(G->tf);
}

/* Compares res with search_gs_NAME_{mean,std,best}.txt. tol < 0: exact. */
static void gs_compare(const char *name, const km_search_result *res,
                       double tol)
{
    char f[128];
    size_t np = res->n_points;
    snprintf(f, sizeof f, "search_gs_%s_mean.txt", name);
    double *mean = fixture(f, np);
    snprintf(f, sizeof f, "search_gs_%s_std.txt", name);
    double *sd = fixture(f, np);
    snprintf(f, sizeof f, "search_gs_%s_best.txt", name);
    double *best = fixture(f, 1);
    if (tol < 0) {
        for (size_t i = 0; i < np; i++) {
            ck_assert_msg(fabs(res->mean[i] - mean[i]) < 1e-12,
                          "%s point %zu: mean %.17g, sklearn %.17g", name, i,
                          res->mean[i], mean[i]);
            ck_assert_msg(fabs(res->std[i] - sd[i]) < 1e-12,
                          "%s point %zu: std %.17g, sklearn %.17g", name, i,
                          res->std[i], sd[i]);
        }
    } else {
        /* floor: krr relative to 1e-3; svr's r2 (0.2 .. 0.9, stds 0.02 ..
         * 0.05) absolute: floor 1 */
        double floor = tol >= SVR_TOL ? 1.0 : 1e-3;
        double e = km_max_rel_err(res->mean, mean, np, floor);
        ck_assert_msg(e <= tol, "%s: means off by %g relative", name, e);
        e = km_max_rel_err(res->std, sd, np, floor);
        ck_assert_msg(e <= tol, "%s: stds off by %g relative", name, e);
    }
    ck_assert_uint_eq(res->best, (size_t)best[0]);
    ck_assert_uint_eq(res->n_splits, 4); /* test_fold's folds 0 .. 3 */
    free(mean);
    free(sd);
    free(best);
}

static void krr_grid(const char *name, km_scoring sc, km_preprocess pre)
{
    gs_data G;
    gs_load(&G);
    char f[128];
    size_t np2;
    snprintf(f, sizeof f, "search_gs_%s_points.txt", name);
    double *pts = km_read_fixture(f, &np2);
    size_t np = np2 / 2;
    km_kernel *ks = malloc(np * sizeof *ks);
    km_krr_params *ps = malloc(np * sizeof *ps);
    for (size_t i = 0; i < np; i++) {
        km_kernel_init(&ks[i], KM_KERNEL_RBF);
        ks[i].gamma = pts[2 * i + 1];
        ps[i] = km_krr_params_default();
        ps[i].alpha = pts[2 * i];
    }
    km_problem pb = {G.X, G.n, G.d, G.Y, 2, NULL, 0};
    km_search_spec s = {KM_ALGO_KRR, pre, sc,
                        {KM_CV_PREDEFINED, G.folds, 0, 0, 0, G.tf},
                        np, ks, ps};
    km_search_result res;
    km_error err = {0};
    ck_assert_msg(km_search(&s, &pb, NULL, &res, &err) == KM_OK, "%s: %s",
                  name, err.message);
    gs_compare(name, &res, KRR_TOL);
    for (size_t i = 0; i < np; i++)
        ck_assert(res.fit_seconds[i] >= 0);
    km_search_result_cleanup(&res);
    free(ks);
    free(ps);
    free(pts);
    gs_free(&G);
}

/* 3 alphas per kernel: one Cholesky per alpha per fold. */
START_TEST(gridsearch_krr_cholesky)
{
    krr_grid("krr3", KM_SCORING_R2, (km_preprocess){KM_SCALE_NONE, 0});
}
END_TEST

/* 20 alphas per kernel: one eigendecomposition per fold. */
START_TEST(gridsearch_krr_eigen)
{
    krr_grid("krr20", KM_SCORING_NEG_MSE, (km_preprocess){KM_SCALE_NONE, 0});
}
END_TEST

/* Standardized X and centered y, learnt per fold. */
START_TEST(gridsearch_krr_preprocessed)
{
    krr_grid("krrpre", KM_SCORING_R2,
             (km_preprocess){KM_SCALE_STANDARDIZE, 1});
}
END_TEST

static void svm_grid(const char *name, km_algorithm a, double tol)
{
    gs_data G;
    gs_load(&G);
    char f[128];
    size_t np2;
    snprintf(f, sizeof f, "search_gs_%s_points.txt", name);
    double *pts = km_read_fixture(f, &np2);
    size_t np = np2 / 2;
    km_kernel *ks = malloc(np * sizeof *ks);
    km_svm_params *ps = malloc(np * sizeof *ps);
    double *y0 = malloc(G.n * sizeof *y0);
    for (size_t i = 0; i < G.n; i++)
        y0[i] = G.Y[2 * i];
    for (size_t i = 0; i < np; i++) {
        km_kernel_init(&ks[i], KM_KERNEL_RBF);
        ps[i] = km_svm_params_default();
        ps[i].C = pts[2 * i];
        if (a == KM_ALGO_SVC) {
            ks[i].gamma = pts[2 * i + 1];
        } else {
            ks[i].gamma = 0.05;
            ps[i].epsilon = pts[2 * i + 1];
            ps[i].tol = 1e-6; /* as the reference's */
        }
    }
    km_problem pb = a == KM_ALGO_SVC
                        ? (km_problem){G.X, G.n, G.d, NULL, 0, G.labels, 2}
                        : (km_problem){G.X, G.n, G.d, y0, 1, NULL, 0};
    km_search_spec s = {a, {KM_SCALE_NONE, 0},
                        a == KM_ALGO_SVC ? KM_SCORING_ACCURACY : KM_SCORING_R2,
                        {KM_CV_PREDEFINED, G.folds, 0, 0, 0, G.tf},
                        np, ks, ps};
    km_search_result res;
    km_error err = {0};
    ck_assert_msg(km_search(&s, &pb, NULL, &res, &err) == KM_OK, "%s: %s",
                  name, err.message);
    gs_compare(name, &res, tol);
    km_search_result_cleanup(&res);
    free(ks);
    free(ps);
    free(pts);
    free(y0);
    gs_free(&G);
}

START_TEST(gridsearch_svc)
{
    svm_grid("svc", KM_ALGO_SVC, -1);
}
END_TEST

START_TEST(gridsearch_svr)
{
    svm_grid("svr", KM_ALGO_SVR, SVR_TOL);
}
END_TEST

/* kpca through the generic engine: minus the mean squared
 * reconstruction error of the test rows, against GridSearchCV with that
 * scorer; 1e-7 relative (an eigendecomposition and a ridge solve per fold,
 * each at the kpca fits' parity with KernelPCA). */
START_TEST(gridsearch_kpca)
{
    gs_data G;
    gs_load(&G);
    size_t np2;
    double *pts = km_read_fixture("search_gs_kpca_points.txt", &np2);
    size_t np = np2 / 2;
    km_kernel *ks = malloc(np * sizeof *ks);
    km_kpca_params *ps = malloc(np * sizeof *ps);
    for (size_t i = 0; i < np; i++) {
        km_kernel_init(&ks[i], KM_KERNEL_RBF);
        ks[i].gamma = pts[2 * i + 1];
        ps[i] = km_kpca_params_default();
        ps[i].n_components = (size_t)pts[2 * i];
        ps[i].fit_inverse_transform = 1;
        ps[i].alpha = 0.1;
        ps[i].solver = KM_KPCA_SOLVER_DENSE;
    }
    km_problem pb = {G.X, G.n, G.d, NULL, 0, NULL, 0};
    km_search_spec s = {KM_ALGO_KPCA, {KM_SCALE_NONE, 0},
                        KM_SCORING_NEG_RECONSTRUCTION,
                        {KM_CV_PREDEFINED, G.folds, 0, 0, 0, G.tf}, np, ks,
                        ps};
    km_search_result res;
    km_error err = {0};
    ck_assert_msg(km_search(&s, &pb, NULL, &res, &err) == KM_OK, "%s",
                  err.message);
    gs_compare("kpca", &res, 1e-7);
    km_search_result_cleanup(&res);
    /* the scoring needs the inverse map */
    ps[1].fit_inverse_transform = 0;
    ck_assert_int_eq(km_search(&s, &pb, NULL, &res, &err), KM_EINVAL);
    ck_assert_str_eq(err.message, "points[1]: scoring neg_reconstruction_error "
                     "needs params.fit_inverse_transform");
    km_search_result_cleanup(&res);
    free(ks);
    free(ps);
    free(pts);
    gs_free(&G);
}
END_TEST

/* svc with probabilities scored by neg_log_loss: a finite loss, better
 * than the uniform guess; without probability the scoring is refused. */
START_TEST(svc_log_loss)
{
    gs_data G;
    gs_load(&G);
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_RBF);
    k.gamma = 0.05;
    km_svm_params p = km_svm_params_default();
    p.probability = 1;
    km_problem pb = {G.X, G.n, G.d, NULL, 0, G.labels, 2};
    km_search_spec s = {KM_ALGO_SVC, {KM_SCALE_NONE, 0},
                        KM_SCORING_NEG_LOG_LOSS,
                        {KM_CV_KFOLD, 4, 1, 5, 1, NULL}, 1, &k, &p};
    km_search_result res;
    km_error err = {0};
    ck_assert_msg(km_search(&s, &pb, NULL, &res, &err) == KM_OK, "%s",
                  err.message);
    ck_assert_msg(res.mean[0] < 0 && res.mean[0] > -log(2.0), "%g",
                  res.mean[0]);
    km_search_result_cleanup(&res);
    p.probability = 0;
    ck_assert_int_eq(km_search(&s, &pb, NULL, &res, &err), KM_EINVAL);
    ck_assert_str_eq(err.message, "points[0]: scoring neg_log_loss needs "
                     "params.probability");
    km_search_result_cleanup(&res);
    gs_free(&G);
}
END_TEST

/* The progress fractions of a search, in order. */
typedef struct trace {
    double *f;
    size_t n, cap;
} trace;

static int trace_progress(void *ctx, double f)
{
    trace *t = ctx;
    if (t->n == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 256;
        t->f = realloc(t->f, t->cap * sizeof *t->f);
        ck_assert_ptr_nonnull(t->f);
    }
    t->f[t->n++] = f;
    return 0;
}

/* svc with params.probability: unless the scoring needs probabilities,
 * the fold fits run without Platt scaling's internal cross-validation
 * (the descriptor's cv_params), so the search is, to the bit and in
 * every progress report, the one of probability 0, and so is its memory
 * estimate. With it, the 5 cross-validation solves of each pair would
 * report progress of their own (1200 overlapping rows, C 100 and a
 * small kernel cache: the solves run long enough to report) and shift
 * the final solve's span. neg_log_loss keeps probability in its fold
 * fits: finite losses (probability 0 is refused for it). */
START_TEST(svc_probability_not_in_folds)
{
    const size_t n = 1200, d = 2;
    double *X = malloc(n * d * sizeof *X);
    int *labels = malloc(n * sizeof *labels);
    km_rng rng = {12345};
    for (size_t i = 0; i < n * d; i++) /* uniform in [-1, 1) */
        X[i] = km_rng_uniform(&rng);
    for (size_t i = 0; i < n; i++) /* by the first feature, with noise */
        labels[i] = X[i * d] + 0.4 * km_rng_uniform(&rng) > 0;
    km_kernel ks[2];
    km_svm_params ps[2];
    for (int i = 0; i < 2; i++) {
        km_kernel_init(&ks[i], KM_KERNEL_RBF);
        ks[i].gamma = 2;
        ps[i] = km_svm_params_default();
        ps[i].C = i ? 10 : 100;
        ps[i].cache_mb = 0.05;
    }
    km_problem pb = {X, n, d, NULL, 0, labels, 2};
    const km_scale scales[2] = {KM_SCALE_NONE, KM_SCALE_STANDARDIZE};
    for (int sc = 0; sc < 2; sc++) {
        km_search_spec s = {KM_ALGO_SVC, {scales[sc], 0},
                            KM_SCORING_ACCURACY,
                            {KM_CV_KFOLD, 3, 0, 0, 0, NULL}, 2, ks, ps};
        km_search_result res[2];
        trace t[2] = {{NULL, 0, 0}, {NULL, 0, 0}};
        size_t bytes[2];
        for (int prob = 0; prob < 2; prob++) {
            for (int i = 0; i < 2; i++)
                ps[i].probability = prob;
            km_fit_control ctl = {trace_progress, &t[prob]};
            km_error err = {0};
            ck_assert_msg(km_search(&s, &pb, &ctl, &res[prob], &err) == KM_OK,
                          "%s", err.message);
            bytes[prob] = km_search_bytes(&s, &pb);
        }
        for (int i = 0; i < 2; i++)
            ck_assert_msg(res[1].mean[i] == res[0].mean[i] &&
                              res[1].std[i] == res[0].std[i],
                          "scale %d, point %d: %.17g (%.17g) against %.17g "
                          "(%.17g)", sc, i, res[1].mean[i], res[1].std[i],
                          res[0].mean[i], res[0].std[i]);
        ck_assert_uint_eq(res[1].best, res[0].best);
        ck_assert_msg(t[1].n == t[0].n, "scale %d: %zu progress reports "
                      "against %zu", sc, t[1].n, t[0].n);
        for (size_t j = 0; j < t[0].n; j++)
            ck_assert_msg(t[1].f[j] == t[0].f[j], "scale %d, progress %zu: "
                          "%.17g against %.17g", sc, j, t[1].f[j], t[0].f[j]);
        ck_assert_uint_eq(bytes[1], bytes[0]);
        for (int prob = 0; prob < 2; prob++) {
            km_search_result_cleanup(&res[prob]);
            free(t[prob].f);
        }
        /* neg_log_loss: the fold fits keep probability */
        for (int i = 0; i < 2; i++)
            ps[i].probability = 1;
        s.scoring = KM_SCORING_NEG_LOG_LOSS;
        km_search_result r;
        km_error err = {0};
        ck_assert_msg(km_search(&s, &pb, NULL, &r, &err) == KM_OK, "%s",
                      err.message);
        for (int i = 0; i < 2; i++)
            ck_assert_msg(isfinite(r.mean[i]) && r.mean[i] < 0 &&
                              r.mean[i] > -log(2.0),
                          "point %d: %g", i, r.mean[i]);
        km_search_result_cleanup(&r);
    }
    free(X);
    free(labels);
}
END_TEST

/* r2 is not defined on one row (km_score_regression: NAN, as sklearn's):
 * kfold with a fold per row fails every point, naming why; loo pools
 * the n predictions and scores them. */
START_TEST(r2_of_one_test_row)
{
    double X[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
    double y[6] = {0.1, 1.2, 1.9, 3.2, 4.1, 4.8};
    km_problem pb = {X, 6, 2, y, 1, NULL, 0};
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_LINEAR);
    km_krr_params p = {.alpha = 1.0};
    km_search_spec s = {KM_ALGO_KRR, {KM_SCALE_NONE, 0}, KM_SCORING_R2,
                        {KM_CV_KFOLD, 6, 0, 0, 0, NULL}, 1, &k, &p};
    km_search_result r;
    km_error err = {0};
    ck_assert_int_eq(km_search(&s, &pb, NULL, &r, &err), KM_EPROBLEM);
    ck_assert_msg(strstr(err.message, "points[0], cv fold 0: r2 is not "
                         "defined on a fold of one test row") != NULL,
                  "%s", err.message);
    km_search_result_cleanup(&r);
    s.cv = (km_cv){KM_CV_LOO, 0, 0, 0, 0, NULL};
    ck_assert_msg(km_search(&s, &pb, NULL, &r, &err) == KM_OK, "%s",
                  err.message);
    ck_assert(isfinite(r.mean[0]) && r.mean[0] > 0.5);
    km_search_result_cleanup(&r);
}
END_TEST

/* svc and svr folds gathering their columns from one Gram of all rows
 * (the default cache_mb holds it) answer as fits computing their own
 * (cache_mb too small to share) to the solver's tolerance: svc the same
 * accuracies, svr r2 within 1e-5 (measured 2e-6: a gathered entry is
 * the Gram's DSYRK value, a computed one a dot product in feature order;
 * they differ in the last bits, which moves SMO's path within tol 1e-3,
 * as an svc fit's own Gram of its rows does). */
START_TEST(shared_gram_same_results)
{
    gs_data G;
    gs_load(&G);
    double *y0 = malloc(G.n * sizeof *y0);
    for (size_t i = 0; i < G.n; i++)
        y0[i] = G.Y[2 * i];
    km_kernel ks[4];
    km_svm_params ps[4];
    for (int i = 0; i < 4; i++) {
        km_kernel_init(&ks[i], KM_KERNEL_RBF);
        ks[i].gamma = i < 2 ? 0.05 : 0.2;
        ps[i] = km_svm_params_default();
        ps[i].C = i % 2 ? 10 : 1;
    }
    for (int a = 0; a < 2; a++) {
        km_problem pb = a ? (km_problem){G.X, G.n, G.d, y0, 1, NULL, 0}
                          : (km_problem){G.X, G.n, G.d, NULL, 0, G.labels, 2};
        km_search_spec s = {a ? KM_ALGO_SVR : KM_ALGO_SVC, {KM_SCALE_NONE, 0},
                            a ? KM_SCORING_R2 : KM_SCORING_ACCURACY,
                            {KM_CV_KFOLD, 5, 1, 3, 0, NULL}, 4, ks, ps};
        km_search_result shared, own;
        km_error err = {0};
        ck_assert_msg(km_search(&s, &pb, NULL, &shared, &err) == KM_OK, "%s",
                      err.message);
        for (int i = 0; i < 4; i++)
            ps[i].cache_mb = 0.25; /* 200^2 doubles are 0.3 MB */
        ck_assert_msg(km_search(&s, &pb, NULL, &own, &err) == KM_OK, "%s",
                      err.message);
        for (int i = 0; i < 4; i++) {
            ps[i].cache_mb = 200;
            if (a)
                ck_assert_double_eq_tol(shared.mean[i], own.mean[i], 1e-5);
            else
                ck_assert_double_eq(shared.mean[i], own.mean[i]);
        }
        ck_assert_uint_eq(shared.best, own.best);
        km_search_result_cleanup(&shared);
        km_search_result_cleanup(&own);
    }
    free(y0);
    gs_free(&G);
}
END_TEST

/* svc's pooled LOO accuracy equals the mean over n one-row folds. */
START_TEST(svc_loo_pooled)
{
    gs_data G;
    gs_load(&G);
    size_t n = 40;
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_RBF);
    k.gamma = 0.1;
    km_svm_params p = km_svm_params_default();
    km_problem pb = {G.X, n, G.d, NULL, 0, G.labels, 2};
    int *tf = malloc(n * sizeof *tf);
    for (size_t i = 0; i < n; i++)
        tf[i] = (int)i;
    km_search_spec s = {KM_ALGO_SVC, {KM_SCALE_NONE, 0}, KM_SCORING_ACCURACY,
                        {KM_CV_LOO, 0, 0, 0, 0, NULL}, 1, &k, &p};
    km_search_result a, b;
    km_error err = {0};
    ck_assert_msg(km_search(&s, &pb, NULL, &a, &err) == KM_OK, "%s",
                  err.message);
    s.cv = (km_cv){KM_CV_PREDEFINED, n, 0, 0, 0, tf};
    ck_assert_msg(km_search(&s, &pb, NULL, &b, &err) == KM_OK, "%s",
                  err.message);
    ck_assert_double_eq_tol(a.mean[0], b.mean[0], 1e-12);
    ck_assert(a.mean[0] > 0.5);
    km_search_result_cleanup(&a);
    km_search_result_cleanup(&b);
    free(tf);
    gs_free(&G);
}
END_TEST

/* ------------------------------------------------------------ folds */

static km_status folds_of(km_cv cv, km_algorithm a, size_t n, const int *labels,
                          size_t k, int *fold, size_t *ns, km_error *err)
{
    double *X = calloc(n, sizeof *X), *y = calloc(n, sizeof *y);
    for (size_t i = 0; i < n; i++)
        X[i] = y[i] = (double)i / (double)n;
    km_kernel kr;
    km_kernel_init(&kr, KM_KERNEL_RBF);
    km_svm_params sp = km_svm_params_default();
    km_krr_params kp = km_krr_params_default();
    km_problem pb = {X, n, 1, labels ? NULL : y, labels ? 0 : 1, labels, k};
    km_search_spec s = {a, {KM_SCALE_NONE, 0},
                        labels ? KM_SCORING_ACCURACY : KM_SCORING_R2, cv, 1,
                        &kr, a == KM_ALGO_KRR ? (void *)&kp : (void *)&sp};
    km_status st = km_search_folds(&s, &pb, fold, ns, err);
    free(X);
    free(y);
    return st;
}

START_TEST(kfold_sizes_and_order)
{
    int fold[23];
    size_t ns, size[5] = {0};
    km_cv cv = {KM_CV_KFOLD, 5, 0, 0, 0, NULL};
    ck_assert_int_eq(folds_of(cv, KM_ALGO_KRR, 23, NULL, 0, fold, &ns, NULL),
                     KM_OK);
    ck_assert_uint_eq(ns, 5);
    for (size_t i = 0; i < 23; i++) {
        ck_assert(fold[i] >= 0 && fold[i] < 5);
        size[fold[i]]++;
        if (i)
            ck_assert(fold[i] >= fold[i - 1]); /* contiguous parts */
    }
    /* 23 = 5 + 5 + 5 + 4 + 4: the first 23 % 5 folds one larger */
    ck_assert_uint_eq(size[0], 5);
    ck_assert_uint_eq(size[2], 5);
    ck_assert_uint_eq(size[3], 4);
    ck_assert_uint_eq(size[4], 4);

    /* shuffled: the same sizes, repeatable, another order */
    int f1[23], f2[23], f3[23];
    cv.shuffle = 1;
    cv.seed = 42;
    ck_assert_int_eq(folds_of(cv, KM_ALGO_KRR, 23, NULL, 0, f1, &ns, NULL),
                     KM_OK);
    ck_assert_int_eq(folds_of(cv, KM_ALGO_KRR, 23, NULL, 0, f2, &ns, NULL),
                     KM_OK);
    cv.seed = 43;
    ck_assert_int_eq(folds_of(cv, KM_ALGO_KRR, 23, NULL, 0, f3, &ns, NULL),
                     KM_OK);
    ck_assert_mem_eq(f1, f2, sizeof f1);
    ck_assert(memcmp(f1, f3, sizeof f1) != 0);
    ck_assert(memcmp(f1, fold, sizeof f1) != 0);
    size_t s1[5] = {0};
    for (size_t i = 0; i < 23; i++)
        s1[f1[i]]++;
    ck_assert_mem_eq(s1, size, sizeof s1);

    /* more folds than rows */
    km_error err = {0};
    cv = (km_cv){KM_CV_KFOLD, 7, 0, 0, 0, NULL};
    ck_assert_int_eq(folds_of(cv, KM_ALGO_KRR, 5, NULL, 0, fold, &ns, &err),
                     KM_EPROBLEM);
    ck_assert_str_eq(err.message, "cv.folds 7 is more than the 5 rows");
    cv.folds = 1;
    ck_assert_int_eq(folds_of(cv, KM_ALGO_KRR, 5, NULL, 0, fold, &ns, &err),
                     KM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "cv.folds"));
}
END_TEST

START_TEST(kfold_stratified)
{
    /* classes of 12, 7 and 4 rows, in blocks */
    int lab[23], fold[23];
    for (size_t i = 0; i < 23; i++)
        lab[i] = i < 12 ? 0 : i < 19 ? 1 : 2;
    size_t ns, cnt[4][3] = {{0}}, size[4] = {0};
    km_cv cv = {KM_CV_KFOLD, 4, 1, 9, 1, NULL};
    km_error err = {0};
    ck_assert_msg(folds_of(cv, KM_ALGO_SVC, 23, lab, 3, fold, &ns, &err) ==
                      KM_OK, "%s", err.message);
    for (size_t i = 0; i < 23; i++) {
        cnt[fold[i]][lab[i]]++;
        size[fold[i]]++;
    }
    static const size_t per[3] = {12, 7, 4};
    for (size_t f = 0; f < 4; f++) {
        for (size_t c = 0; c < 3; c++)
            ck_assert_msg(cnt[f][c] == per[c] / 4 || cnt[f][c] == per[c] / 4 + 1,
                          "fold %zu has %zu rows of class %zu", f, cnt[f][c],
                          c);
        ck_assert(size[f] == 5 || size[f] == 6);
    }
    /* a class of 4 rows cannot be in 5 folds */
    cv.folds = 5;
    ck_assert_int_eq(folds_of(cv, KM_ALGO_SVC, 23, lab, 3, fold, &ns, &err),
                     KM_EPROBLEM);
    ck_assert_ptr_nonnull(strstr(err.message, "class 2"));
    /* regression cannot be stratified */
    cv.folds = 3;
    ck_assert_int_eq(folds_of(cv, KM_ALGO_KRR, 23, NULL, 0, fold, &ns, &err),
                     KM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "cv.stratified"));
}
END_TEST

START_TEST(predefined_validation)
{
    int fold[6];
    size_t ns;
    km_error err = {0};
    int ok[6] = {0, 1, -1, 1, 0, 2};
    km_cv cv = {KM_CV_PREDEFINED, 3, 0, 0, 0, ok};
    ck_assert_int_eq(folds_of(cv, KM_ALGO_KRR, 6, NULL, 0, fold, &ns, &err),
                     KM_OK);
    ck_assert_uint_eq(ns, 3);
    ck_assert_mem_eq(fold, ok, sizeof ok);

    int bad[6] = {0, 1, -2, 1, 0, 2};
    cv.test_fold = bad;
    ck_assert_int_eq(folds_of(cv, KM_ALGO_KRR, 6, NULL, 0, fold, &ns, &err),
                     KM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "cv.test_fold[2] = -2"));
    int high[6] = {0, 1, 3, 1, 0, 2};
    cv.test_fold = high;
    ck_assert_int_eq(folds_of(cv, KM_ALGO_KRR, 6, NULL, 0, fold, &ns, &err),
                     KM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "cv.test_fold[2] = 3"));
    int gap[6] = {0, 2, -1, 2, 0, 2};
    cv.test_fold = gap;
    ck_assert_int_eq(folds_of(cv, KM_ALGO_KRR, 6, NULL, 0, fold, &ns, &err),
                     KM_EPROBLEM);
    ck_assert_ptr_nonnull(strstr(err.message, "cv fold 1 has no rows"));
    int all[6] = {0, 0, 0, 0, 0, 0};
    cv.test_fold = all;
    cv.folds = 1;
    ck_assert_int_eq(folds_of(cv, KM_ALGO_KRR, 6, NULL, 0, fold, &ns, &err),
                     KM_EPROBLEM);
    ck_assert_ptr_nonnull(strstr(err.message, "nothing is left to train"));
    cv.test_fold = NULL;
    ck_assert_int_eq(folds_of(cv, KM_ALGO_KRR, 6, NULL, 0, fold, &ns, &err),
                     KM_EINVAL);
    cv.test_fold = ok;
    cv.folds = 7;
    ck_assert_int_eq(folds_of(cv, KM_ALGO_KRR, 6, NULL, 0, fold, &ns, &err),
                     KM_EPROBLEM);
    ck_assert_str_eq(err.message, "cv.folds 7 is more than the 6 rows");

    /* svc: a fold whose training rows hold one class */
    int lab[6] = {0, 0, 0, 0, 1, 1};
    int tf[6] = {0, 0, 0, 0, 1, 1};
    cv = (km_cv){KM_CV_PREDEFINED, 2, 0, 0, 0, tf};
    ck_assert_int_eq(folds_of(cv, KM_ALGO_SVC, 6, lab, 2, fold, &ns, &err),
                     KM_EPROBLEM);
    ck_assert_ptr_nonnull(strstr(err.message, "cv fold 0 leaves 1 class"));
}
END_TEST

START_TEST(spec_validation)
{
    loo_data L;
    loo_load(&L);
    km_problem pb = {L.X, L.n, L.d, L.Y, L.m, NULL, 0};
    km_kernel ks[2];
    km_kernel_init(&ks[0], KM_KERNEL_RBF);
    km_kernel_init(&ks[1], KM_KERNEL_RBF);
    ks[1].gamma = -1;
    km_krr_params ps[2] = {{.alpha = 1.0}, {.alpha = 1.0}};
    km_search_spec s = {KM_ALGO_KRR, {KM_SCALE_NONE, 0}, KM_SCORING_R2,
                        {KM_CV_KFOLD, 5, 0, 0, 0, NULL}, 2, ks, ps};
    km_search_result res;
    km_error err = {0};
    ck_assert_int_eq(km_search(&s, &pb, NULL, &res, &err), KM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "points[1]: kernel.gamma"));
    km_search_result_cleanup(&res);
    ks[1].gamma = 0;
    ps[0].alpha = 0;
    ck_assert_int_eq(km_search(&s, &pb, NULL, &res, &err), KM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "points[0]: params.alpha"));
    ps[0].alpha = 1;
    s.scoring = KM_SCORING_ACCURACY;
    ck_assert_int_eq(km_search(&s, &pb, NULL, &res, &err), KM_EINVAL);
    ck_assert_str_eq(err.message, "scoring accuracy applies to svc, klr, not krr");
    s.scoring = KM_SCORING_R2;
    s.n_points = 0;
    ck_assert_int_eq(km_search(&s, &pb, NULL, &res, &err), KM_EINVAL);
    s.n_points = 2;
    s.algo = KM_ALGO_SVR;
    km_svm_params sp[2] = {km_svm_params_default(), km_svm_params_default()};
    s.params = sp;
    s.cv.kind = KM_CV_GCV;
    pb.m = 1;
    double *y1 = malloc(L.n * sizeof *y1);
    for (size_t i = 0; i < L.n; i++)
        y1[i] = L.Y[2 * i];
    pb.y = y1;
    ck_assert_int_eq(km_search(&s, &pb, NULL, &res, &err), KM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "gcv"));
    s.cv.kind = KM_CV_KFOLD;
    s.pre.x = KM_SCALE_COUNT;
    ck_assert_int_eq(km_search(&s, &pb, NULL, &res, &err), KM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "pre.x"));
    km_search_result_cleanup(&res);
    free(y1);
    loo_free(&L);
}
END_TEST

/* ------------------------------------------------------------ failures */

/* A sigmoid kernel's Gram has negative eigenvalues: a tiny alpha fails
 * (not positive definite), a large one succeeds and is best. */
START_TEST(failed_point_loses)
{
    loo_data L;
    loo_load(&L);
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_SIGMOID);
    k.gamma = 0.5;
    k.coef0 = -1;
    km_problem pb = {L.X, L.n, L.d, L.Y, L.m, NULL, 0};
    double alphas[2] = {1e-8, 1e3};
    km_cv kinds[3] = {{KM_CV_LOO, 0, 0, 0, 0, NULL},
                      {KM_CV_KFOLD, 4, 0, 0, 0, NULL},
                      {KM_CV_GCV, 0, 0, 0, 0, NULL}};
    for (int c = 0; c < 3; c++) {
        km_search_result res;
        km_error err = {0};
        ck_assert_msg(krr_search(&k, alphas, 2, &pb, kinds[c],
                                 KM_SCORING_NEG_MSE, &res, &err) == KM_OK,
                      "cv %d: %s", c, err.message);
        ck_assert_msg(res.mean[0] == KM_SEARCH_FAILED_SCORE,
                      "cv %d: mean %g", c, res.mean[0]);
        ck_assert(res.std[0] == 0);
        ck_assert(isfinite(res.mean[1]) && res.mean[1] > -1e300);
        ck_assert_uint_eq(res.best, 1);
        km_search_result_cleanup(&res);
        /* all points fail: the search fails, naming the first */
        ck_assert_int_eq(krr_search(&k, alphas, 1, &pb, kinds[c],
                                    KM_SCORING_NEG_MSE, &res, &err),
                         KM_ENOTPD);
        ck_assert_msg(strstr(err.message, "points[0]") != NULL, "%s",
                      err.message);
        km_search_result_cleanup(&res);
    }
    loo_free(&L);
}
END_TEST

/* ------------------------------------------------------------ cancel */

typedef struct counter {
    int calls, stop_at;
    double last;
    int decreasing;
} counter;

static int count_progress(void *ctx, double f)
{
    counter *c = ctx;
    if (f < c->last)
        c->decreasing = 1;
    c->last = f;
    return ++c->calls >= c->stop_at;
}

START_TEST(cancel_and_progress)
{
    gs_data G;
    gs_load(&G);
    km_kernel ks[3];
    km_svm_params ps[3];
    km_krr_params kp[3] = {{.alpha = 0.1}, {.alpha = 1}, {.alpha = 10}};
    for (int i = 0; i < 3; i++) {
        km_kernel_init(&ks[i], KM_KERNEL_RBF);
        ks[i].gamma = 0.05 * (i + 1);
        ps[i] = km_svm_params_default();
    }
    km_problem svc = {G.X, G.n, G.d, NULL, 0, G.labels, 2};
    km_problem krr = {G.X, G.n, G.d, G.Y, 2, NULL, 0};
    km_search_spec specs[3] = {
        {KM_ALGO_SVC, {KM_SCALE_NONE, 0}, KM_SCORING_ACCURACY,
         {KM_CV_KFOLD, 3, 0, 0, 0, NULL}, 3, ks, ps},
        {KM_ALGO_KRR, {KM_SCALE_NONE, 0}, KM_SCORING_R2,
         {KM_CV_KFOLD, 3, 0, 0, 0, NULL}, 3, ks, kp},
        {KM_ALGO_KRR, {KM_SCALE_NONE, 0}, KM_SCORING_R2,
         {KM_CV_LOO, 0, 0, 0, 0, NULL}, 3, ks, kp}};
    const km_problem *pbs[3] = {&svc, &krr, &krr};
    for (int i = 0; i < 3; i++) {
        /* runs to the end: fractions rise to 1 */
        counter c = {0, 1 << 30, 0, 0};
        km_fit_control ctl = {count_progress, &c};
        km_search_result res;
        km_error err = {0};
        ck_assert_msg(km_search(&specs[i], pbs[i], &ctl, &res, &err) == KM_OK,
                      "%d: %s", i, err.message);
        ck_assert(!c.decreasing);
        ck_assert_double_eq(c.last, 1.0);
        km_search_result_cleanup(&res);
        /* stopped at the second call */
        c = (counter){0, 2, 0, 0};
        ck_assert_int_eq(km_search(&specs[i], pbs[i], &ctl, &res, &err),
                         KM_ECANCELLED);
        ck_assert_int_eq(c.calls, 2);
        km_search_result_cleanup(&res);
    }
    gs_free(&G);
}
END_TEST

START_TEST(bytes_grow_with_n)
{
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_RBF);
    km_krr_params kp = {.alpha = 1};
    km_svm_params sp = km_svm_params_default();
    sp.cache_mb = 1e6; /* every Gram below shared: counted */
    static const km_cv_kind kinds[3] = {KM_CV_LOO, KM_CV_KFOLD, KM_CV_GCV};
    for (int a = 0; a < 2; a++)
        for (int c = 0; c < 3; c++) {
            if (a == 1 && kinds[c] == KM_CV_GCV)
                continue;
            km_search_spec s = {a ? KM_ALGO_SVR : KM_ALGO_KRR,
                                {KM_SCALE_NONE, 0}, KM_SCORING_R2,
                                {kinds[c], 5, 0, 0, 0, NULL}, 1, &k,
                                a ? (void *)&sp : (void *)&kp};
            size_t last = 0;
            for (size_t n = 100; n <= 6400; n *= 2) {
                km_problem pb = {NULL, n, 10, NULL, 1, NULL, 0};
                size_t b = km_search_bytes(&s, &pb);
                ck_assert_msg(b > last, "algo %d cv %d n %zu: %zu bytes", a,
                              c, n, b);
                /* krr, and svr with a large cache_mb, hold at least the
                 * Gram of all rows */
                ck_assert(b >= n * n * 8);
                last = b;
            }
        }
}
END_TEST

/* ------------------------------------------------------------ threads */

/* What a progress callback sees of the threads calling it: the fractions
 * (non-decreasing), the distinct threads, and whether two calls ever
 * overlapped (core must call it from one thread at a time). */
typedef struct thread_trace {
    atomic_int inside;
    int overlapped, decreasing, calls;
    double last;
    pthread_t ids[8];
    int n_ids;
    /* cancel: ask to stop once the fraction reaches stop_at (> 1: never);
     * calls counts those after the ask */
    double stop_at, t_ask;
    int asked, after;
} thread_trace;

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int trace_threads(void *ctx, double f)
{
    thread_trace *t = ctx;
    if (atomic_fetch_add(&t->inside, 1) != 0)
        t->overlapped = 1;
    pthread_t me = pthread_self();
    int seen = 0;
    for (int i = 0; i < t->n_ids; i++)
        seen |= pthread_equal(t->ids[i], me);
    if (!seen && t->n_ids < 8)
        t->ids[t->n_ids++] = me;
    if (f < t->last)
        t->decreasing = 1;
    t->last = f;
    t->calls++;
    if (t->n_ids == 1 && t->calls <= 20) {
        /* while only one thread has called: a pause, in which the other
         * workers start and wait for their turn (calls are serialised) */
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    if (t->asked)
        t->after++;
    else if (f >= t->stop_at) {
        t->asked = 1;
        t->t_ask = mono();
    }
    int stop = t->asked;
    atomic_fetch_sub(&t->inside, 1);
    return stop;
}

/* The spec s (its points' kernels and params set) on threads 1 and 3:
 * the same means, stds and best bit for bit; progress from one thread at
 * a time, non-decreasing, to 1; with 3, from more than one thread. */
static void same_on_threads(km_search_spec *s, const km_problem *pb,
                            const char *what)
{
    km_search_result res[2];
    for (int i = 0; i < 2; i++) {
        int T = i ? 3 : 1;
        thread_trace t = {.stop_at = 2};
        km_fit_control ctl = {trace_threads, &t, T};
        km_error err = {0};
        s->threads = T;
        ck_assert_msg(km_search(s, pb, &ctl, &res[i], &err) == KM_OK,
                      "%s, %d threads: %s", what, T, err.message);
        ck_assert_msg(!t.overlapped, "%s: progress called concurrently",
                      what);
        ck_assert_msg(!t.decreasing, "%s: progress decreased", what);
        ck_assert_double_eq(t.last, 1.0);
        if (T == 1)
            ck_assert_int_eq(t.n_ids, 1);
        else
            ck_assert_msg(t.n_ids >= 2, "%s: progress from %d thread(s) on "
                          "3 threads", what, t.n_ids);
    }
    size_t P = s->n_points;
    ck_assert_uint_eq(res[0].n_points, P);
    ck_assert_uint_eq(res[1].n_points, P);
    ck_assert_msg(!memcmp(res[0].mean, res[1].mean, P * sizeof(double)),
                  "%s: means differ", what);
    ck_assert_msg(!memcmp(res[0].std, res[1].std, P * sizeof(double)),
                  "%s: stds differ", what);
    ck_assert_uint_eq(res[0].best, res[1].best);
    ck_assert_uint_eq(res[0].n_splits, res[1].n_splits);
    s->threads = 0;
    km_search_result_cleanup(&res[0]);
    km_search_result_cleanup(&res[1]);
}

/* 12 rbf points (4 gammas x 3 Cs) of svc and svr, shared Grams and not
 * (standardized), kfold and svc's pooled LOO; kpca's points. */
START_TEST(threads_same_results)
{
    gs_data G;
    gs_load(&G);
    enum { NP = 12 };
    km_kernel ks[NP];
    km_svm_params ps[NP];
    for (int i = 0; i < NP; i++) {
        km_kernel_init(&ks[i], KM_KERNEL_RBF);
        ks[i].gamma = 0.01 * (1 << (i / 3));
        ps[i] = km_svm_params_default();
        ps[i].C = i % 3 == 0 ? 0.5 : i % 3 == 1 ? 5 : 50;
    }
    double *y0 = malloc(G.n * sizeof *y0);
    for (size_t i = 0; i < G.n; i++)
        y0[i] = G.Y[2 * i];
    km_problem svc = {G.X, G.n, G.d, NULL, 0, G.labels, 2};
    km_problem svr = {G.X, G.n, G.d, y0, 1, NULL, 0};
    km_cv kf = {KM_CV_KFOLD, 5, 1, 7, 0, NULL};
    km_search_spec s = {KM_ALGO_SVC, {KM_SCALE_NONE, 0}, KM_SCORING_ACCURACY,
                        kf, NP, ks, ps};
    same_on_threads(&s, &svc, "svc");
    s.scoring = KM_SCORING_BALANCED_ACCURACY;
    s.pre.x = KM_SCALE_STANDARDIZE; /* no shared Gram: one batch */
    same_on_threads(&s, &svc, "svc standardized");
    s = (km_search_spec){KM_ALGO_SVR, {KM_SCALE_NONE, 0}, KM_SCORING_R2, kf,
                         NP, ks, ps};
    same_on_threads(&s, &svr, "svr");
    s.scoring = KM_SCORING_NEG_MAE;
    s.pre = (km_preprocess){KM_SCALE_MINMAX, 1};
    same_on_threads(&s, &svr, "svr minmax centered");
    /* pooled LOO answers, per worker */
    km_problem small = {G.X, 40, G.d, NULL, 0, G.labels, 2};
    s = (km_search_spec){KM_ALGO_SVC, {KM_SCALE_NONE, 0}, KM_SCORING_ACCURACY,
                         {KM_CV_LOO, 0, 0, 0, 0, NULL}, NP, ks, ps};
    same_on_threads(&s, &small, "svc loo");
    /* kpca: every point its own fits */
    km_kpca_params kp[6];
    for (int i = 0; i < 6; i++) {
        kp[i] = km_kpca_params_default();
        kp[i].n_components = 2 + (size_t)(i % 3);
        kp[i].fit_inverse_transform = 1;
        kp[i].alpha = 0.1;
        kp[i].solver = KM_KPCA_SOLVER_DENSE;
    }
    km_problem kpca = {G.X, G.n, G.d, NULL, 0, NULL, 0};
    s = (km_search_spec){KM_ALGO_KPCA, {KM_SCALE_NONE, 0},
                         KM_SCORING_NEG_RECONSTRUCTION,
                         {KM_CV_PREDEFINED, G.folds, 0, 0, 0, G.tf}, 6, ks,
                         kp};
    same_on_threads(&s, &kpca, "kpca");
    free(y0);
    gs_free(&G);
}
END_TEST

/* With 3 threads the first failure is the first in the points' order, as
 * on one thread, whichever thread fails first: every point fails on the
 * last fold (one test row: r2 is not defined), point 0 (a large C: slow
 * fits) after the others, yet the message names it. */
START_TEST(threads_first_failure)
{
    gs_data G;
    gs_load(&G);
    enum { NP = 9 };
    km_kernel ks[NP];
    km_svm_params ps[NP];
    double *y0 = malloc(G.n * sizeof *y0);
    int *tf = malloc(G.n * sizeof *tf);
    for (size_t i = 0; i < G.n; i++) {
        y0[i] = G.Y[2 * i];
        tf[i] = i + 1 < G.n ? (int)(i % 4) : 4;
    }
    for (int i = 0; i < NP; i++) {
        km_kernel_init(&ks[i], KM_KERNEL_RBF);
        ks[i].gamma = i ? 0.01 : 1;
        ps[i] = km_svm_params_default();
        ps[i].C = i ? 0.01 : 1000;
        ps[i].tol = i ? 1e-3 : 1e-6;
    }
    km_problem pb = {G.X, G.n, G.d, y0, 1, NULL, 0};
    km_search_spec s = {KM_ALGO_SVR, {KM_SCALE_STANDARDIZE, 0}, KM_SCORING_R2,
                        {KM_CV_PREDEFINED, 5, 0, 0, 0, tf}, NP, ks, ps, 3};
    km_fit_control ctl = {NULL, NULL, 3};
    for (int rep = 0; rep < 3; rep++) {
        km_search_result res;
        km_error err = {0};
        ck_assert_int_eq(km_search(&s, &pb, &ctl, &res, &err), KM_EPROBLEM);
        ck_assert_msg(strstr(err.message, "the first: points[0], cv fold 4")
                      != NULL, "%s", err.message);
        km_search_result_cleanup(&res);
    }
    free(y0);
    free(tf);
    gs_free(&G);
}
END_TEST

/* A cancel on 3 threads: KM_ECANCELLED, no call after the ask, and the
 * workers stop at once (the rest of the search is not run). */
START_TEST(threads_cancel)
{
    gs_data G;
    gs_load(&G);
    enum { NP = 12 };
    km_kernel ks[NP];
    km_svm_params ps[NP];
    for (int i = 0; i < NP; i++) {
        km_kernel_init(&ks[i], KM_KERNEL_RBF);
        ks[i].gamma = 0.02;
        ps[i] = km_svm_params_default();
        ps[i].C = 1 + i;
    }
    km_problem pb = {G.X, G.n, G.d, NULL, 0, G.labels, 2};
    km_search_spec s = {KM_ALGO_SVC, {KM_SCALE_STANDARDIZE, 0},
                        KM_SCORING_ACCURACY,
                        {KM_CV_LOO, 0, 0, 0, 0, NULL}, NP, ks, ps, 3};
    km_search_result res;
    km_error err = {0};
    /* the whole search, for its time */
    thread_trace full = {.stop_at = 2};
    km_fit_control ctl = {trace_threads, &full, 3};
    double t0 = mono();
    ck_assert_msg(km_search(&s, &pb, &ctl, &res, &err) == KM_OK, "%s",
                  err.message);
    double whole = mono() - t0;
    km_search_result_cleanup(&res);
    ck_assert_msg(full.n_ids >= 2, "progress from %d thread(s)", full.n_ids);
    /* asked at a tenth: stops well before the end */
    thread_trace t = {.stop_at = 0.1};
    ctl.ctx = &t;
    ck_assert_int_eq(km_search(&s, &pb, &ctl, &res, &err), KM_ECANCELLED);
    double rest = mono() - t.t_ask;
    ck_assert_str_eq(err.message, "search cancelled");
    ck_assert(t.asked);
    ck_assert_int_eq(t.after, 0);
    ck_assert(!t.overlapped);
    ck_assert_msg(rest < 0.3 * whole, "%.3f s after the ask, %.3f s in all",
                  rest, whole);
    km_search_result_cleanup(&res);
    gs_free(&G);
}
END_TEST

/* km_search_bytes counts spec.threads workers (at most the points). */
START_TEST(bytes_count_threads)
{
    km_kernel k[4];
    km_svm_params sp[4];
    for (int i = 0; i < 4; i++) {
        km_kernel_init(&k[i], KM_KERNEL_RBF);
        sp[i] = km_svm_params_default();
    }
    km_problem pb = {NULL, 2000, 10, NULL, 0, NULL, 3};
    int lab = 0;
    pb.labels = &lab;
    km_search_spec s = {KM_ALGO_SVC, {KM_SCALE_NONE, 0}, KM_SCORING_ACCURACY,
                        {KM_CV_KFOLD, 5, 0, 0, 0, NULL}, 4, k, sp};
    size_t one = km_search_bytes(&s, &pb);
    s.threads = 1;
    ck_assert_uint_eq(km_search_bytes(&s, &pb), one);
    s.threads = 2;
    size_t two = km_search_bytes(&s, &pb);
    s.threads = 3;
    size_t three = km_search_bytes(&s, &pb);
    /* each worker holds at least a fold fit's bytes */
    size_t fit = km_algorithm_fit_bytes(KM_ALGO_SVC, &sp[0], &pb);
    ck_assert_uint_ge(two, one + fit);
    ck_assert_uint_eq(three - two, two - one);
    s.threads = 64; /* as many as the 4 points */
    ck_assert_uint_eq(km_search_bytes(&s, &pb), one + 3 * (two - one));
}
END_TEST

static Suite *search_suite(void)
{
    Suite *s = suite_create("km_search");
    TCase *tc = tcase_create("search");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, loo_against_brute_force);
    tcase_add_test(tc, gcv_against_formula);
    tcase_add_test(tc, loo_against_ridgecv);
    tcase_add_test(tc, engines_agree);
    tcase_add_test(tc, closed_form_against_cholesky);
    tcase_add_test(tc, closed_form_preprocessing);
    tcase_add_test(tc, gridsearch_krr_cholesky);
    tcase_add_test(tc, gridsearch_krr_eigen);
    tcase_add_test(tc, gridsearch_krr_preprocessed);
    tcase_add_test(tc, gridsearch_svc);
    tcase_add_test(tc, gridsearch_svr);
    tcase_add_test(tc, gridsearch_kpca);
    tcase_add_test(tc, svc_log_loss);
    tcase_add_test(tc, svc_probability_not_in_folds);
    tcase_add_test(tc, r2_of_one_test_row);
    tcase_add_test(tc, shared_gram_same_results);
    tcase_add_test(tc, svc_loo_pooled);
    tcase_add_test(tc, kfold_sizes_and_order);
    tcase_add_test(tc, kfold_stratified);
    tcase_add_test(tc, predefined_validation);
    tcase_add_test(tc, spec_validation);
    tcase_add_test(tc, failed_point_loses);
    tcase_add_test(tc, cancel_and_progress);
    tcase_add_test(tc, bytes_grow_with_n);
    tcase_add_test(tc, threads_same_results);
    tcase_add_test(tc, threads_first_failure);
    tcase_add_test(tc, threads_cancel);
    tcase_add_test(tc, bytes_count_threads);
    suite_add_tcase(s, tc);
    return s;
}

KM_TEST_MAIN(search_suite)
