/*
 * test_km_svc_screened.c - svc's screened solver (params.solver
 * SCREENED, core/solvers/km_svm_screen.c): SMO on working sets a nystrom screen
 * picks, grown until every row meets the optimality conditions.
 *
 * Parity with LIBSVM 3.24 (svm-train / svm-predict; tests/fixtures/svm_*
 * from gen_svm_refs.py, the exact solver's references) on satellite and
 * digits with the exact solver's tolerances (test_km_svm.c): accuracy
 * within 0.2 points, labels equal on >= 99.5 % of the test rows, support
 * vectors within 2 % per class; the screen must have left rows out.
 * Against the exact solver at a tight tolerance: decision values equal to
 * 1e-5 for a good screen, a screen of one centre per class (so poor that
 * rounds add rows), a kernel budget too small for the working set's Gram
 * or the check's columns (their fallbacks), and two workers. Model files,
 * progress and cancel, the checks and the memory estimate.
 */
#include <unistd.h>

#include "../check_main.h"
#include "svm_data.h"
#include "km.h"
#include "solvers/km_svm_solve.h"

static km_svm_params screened(double C, size_t m)
{
    km_svm_params p = km_svm_params_default();
    p.C = C;
    p.solver = KM_SVM_SOLVER_SCREENED;
    p.n_centres = m;
    return p;
}

static double fig(const km_info *info, const char *key)
{
    const km_info_entry *e = km_info_find(info, key);
    ck_assert_msg(e != NULL, "no figure %s", key);
    return e->values[0];
}

static km_model *fit(const km_kernel *k, const km_svm_params *p,
                     const double *X, size_t n, size_t d, const int *y,
                     size_t K, const km_fit_control *ctl)
{
    km_model *m = NULL;
    km_error err = {0};
    ck_assert_msg(km_svc_fit(k, p, X, n, d, y, K, ctl, &m, &err) == KM_OK,
                  "%s", err.message);
    return m;
}

/* ------------------------------------------------------------ parity */

static void parity_case(const char *name, const char *file, size_t n_train,
                        size_t n_test, double C, double gamma, size_t m)
{
    km_dataset ds;
    size_t k;
    int *y = load_classes(file, n_train, &ds, &k);
    const size_t t0 = ds.n - n_test;
    km_kernel kern = rbf(gamma);
    km_svm_params p = screened(C, m);
    km_model *mo = fit(&kern, &p, ds.X, n_train, ds.d, y, k, NULL);

    check_libsvm_parity(name, mo, ds.X + t0 * ds.d, y + t0, n_test, k);
    /* the screen left rows out: the pairs' rows number (k - 1) n */
    const km_info *ti = km_model_training(mo);
    ck_assert_double_lt(fig(ti, "working_rows"), 0.8 * (k - 1) * n_train);
    ck_assert_double_eq(fig(ti, "solver"), KM_SVM_SOLVER_SCREENED);
    ck_assert_double_ge(fig(ti, "rounds"), 1);
    ck_assert_double_eq(fig(km_model_params(mo), "n_centres"), (double)m);
    free(y);
    km_model_free(mo);
    km_dataset_free(&ds);
}

START_TEST(parity_satellite)
{
    parity_case("sat", "satellite.csv", 4435, 2000, 10, 0.5, 300);
}
END_TEST

START_TEST(parity_digits)
{
    parity_case("digits", "digits.csv", 1300, 497, 10, 0.02, 200);
}
END_TEST

/* ------------------------------------------------- against exact SMO */

#define NE 2000 /* satellite's even training rows (the file is sorted
                  by class in parts: every class occurs in them) */

typedef struct sat {
    km_dataset ds;
    size_t k, P;
    int *y;          /* NE labels */
    double *X;       /* NE rows */
    const double *T; /* the last 500 rows */
} sat;

static void sat_load(sat *s)
{
    int *all = load_classes("satellite.csv", 4435, &s->ds, &s->k);
    const size_t d = s->ds.d;
    s->P = s->k * (s->k - 1) / 2;
    s->T = s->ds.X + (s->ds.n - 500) * d;
    s->X = malloc(NE * d * sizeof *s->X);
    s->y = malloc(NE * sizeof *s->y);
    for (size_t i = 0; i < NE; i++) {
        memcpy(s->X + i * d, s->ds.X + 2 * i * d, d * sizeof *s->X);
        s->y[i] = all[2 * i];
    }
    free(all);
}

static void sat_free(sat *s)
{
    free(s->X);
    free(s->y);
    km_dataset_free(&s->ds);
}

static double *decisions(const sat *s, const km_svm_params *p,
                         const km_fit_control *ctl, km_model **keep)
{
    km_kernel kern = rbf(0.5);
    km_model *m = fit(&kern, p, s->X, NE, s->ds.d, s->y, s->k, ctl);
    double *dec = malloc(500 * s->P * sizeof *dec);
    ck_assert_int_eq(km_svc_decision(m, s->T, 500, dec, NULL), KM_OK);
    if (keep)
        *keep = m;
    else
        km_model_free(m);
    return dec;
}

static double max_abs(const double *a, const double *b, size_t n)
{
    double w = 0;
    for (size_t i = 0; i < n; i++)
        w = fabs(a[i] - b[i]) > w ? fabs(a[i] - b[i]) : w;
    return w;
}

/* Both solvers to tol 1e-8 reach the one optimum: decision values equal
 * to 1e-5, whatever the screen, the budget and the workers. A screen of
 * one centre per class misplaces many rows: the rounds add them. */
START_TEST(equals_exact)
{
    sat s;
    sat_load(&s);
    km_svm_params ex = km_svm_params_default();
    ex.C = 10;
    ex.tol = 1e-8;
    double *ref = decisions(&s, &ex, NULL, NULL);
    struct {
        size_t m;
        double cache_mb;
        int threads;
    } cases[] = {
        {300, 200, 1},      /* Gram and columns kept */
        {0, 200, 1},        /* centres 0: the default, min(n, 1000) */
        {6, 200, 1},        /* one centre per class */
        {300, 0.5, 1},      /* no Gram (SMO's own columns), no kept
                               columns (the kernel against the SVs) */
        {6, 8, 1},          /* Gram only for small working sets */
        {300, 200, 2},      /* two workers */
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        km_svm_params p = screened(10, cases[c].m);
        p.tol = 1e-8;
        p.cache_mb = cases[c].cache_mb;
        km_fit_control ctl = {NULL, NULL, cases[c].threads, NULL};
        km_model *m;
        double *dec = decisions(&s, &p, &ctl, &m);
        double w = max_abs(dec, ref, 500 * s.P);
        ck_assert_msg(w <= 1e-5, "case %zu: decision values off by %g", c,
                      w);
        const km_info *ti = km_model_training(m);
        if (cases[c].m == 6) {
            ck_assert_double_gt(fig(ti, "rows_added"), 0);
            ck_assert_double_ge(fig(ti, "rounds"), 2);
        }
        km_model_free(m);
        free(dec);
    }
    free(ref);
    sat_free(&s);
}
END_TEST

/* Two workers asked or three (two run on this machine's CPUs, or
 * three): the same decisions to the bit, each pair's answer being its
 * own. One worker keeps BLAS's own thread count, whose calls may round
 * differently: the same to 1e-9. */
START_TEST(threads_same_answer)
{
    sat s;
    sat_load(&s);
    km_svm_params p = screened(10, 100);
    km_fit_control one = {NULL, NULL, 1, NULL};
    km_fit_control two = {NULL, NULL, 2, NULL};
    km_fit_control three = {NULL, NULL, 3, NULL};
    double *a = decisions(&s, &p, &one, NULL);
    double *b = decisions(&s, &p, &two, NULL);
    double *c = decisions(&s, &p, &three, NULL);
    ck_assert_mem_eq(b, c, 500 * s.P * sizeof *b);
    double w = max_abs(a, b, 500 * s.P);
    ck_assert_msg(w <= 1e-9, "one worker against two: off by %g", w);
    free(b);
    free(c);
    free(a);
    sat_free(&s);
}
END_TEST

/* A sigmoid kernel that is not positive semi-definite on the centres: no
 * screen can be built (K_mm cannot be factored), every row starts in the
 * working sets, and the answer is the exact solver's. */
START_TEST(no_screen_is_exact)
{
    sat s;
    sat_load(&s);
    km_kernel kern;
    km_kernel_init(&kern, KM_KERNEL_SIGMOID);
    kern.gamma = 0.5;
    kern.coef0 = -1;
    km_svm_params ex = km_svm_params_default(), p = screened(1, 100);
    km_model *me = fit(&kern, &ex, s.X, NE, s.ds.d, s.y, s.k, NULL);
    km_model *ms = fit(&kern, &p, s.X, NE, s.ds.d, s.y, s.k, NULL);
    double *a = malloc(500 * s.P * sizeof *a), *b = malloc(500 * s.P *
                                                           sizeof *b);
    ck_assert_int_eq(km_svc_decision(me, s.T, 500, a, NULL), KM_OK);
    ck_assert_int_eq(km_svc_decision(ms, s.T, 500, b, NULL), KM_OK);
    double w = max_abs(a, b, 500 * s.P);
    ck_assert_msg(w <= 1e-6, "decision values off by %g", w);
    const km_info *ti = km_model_training(ms);
    ck_assert_double_eq(fig(ti, "working_rows"), (double)(s.k - 1) * NE);
    ck_assert_double_eq(fig(ti, "rows_added"), 0);
    ck_assert_double_eq(fig(km_model_params(ms), "n_centres"), 100);
    free(a);
    free(b);
    km_model_free(me);
    km_model_free(ms);
    sat_free(&s);
}
END_TEST

/* ------------------------------------------------------------ auto */

/* auto runs exact with probability, up to 2000 rows, or when the exact
 * solver's shared Gram fits half of cache_mb; screened otherwise. Its
 * model is the one of the solver it ran (the same decisions to the bit),
 * metadata says auto in params and the solver run in training; the
 * estimate is the solver run's. */
START_TEST(auto_picks)
{
    km_svm_params p = screened(10, 0);
    p.solver = KM_SVM_SOLVER_AUTO;
    ck_assert_int_eq(km_svm_resolve_solver(&p, 2000, 10), KM_SVM_SOLVER_EXACT);
    ck_assert_int_eq(km_svm_resolve_solver(&p, 5000, 10),
                     KM_SVM_SOLVER_SCREENED); /* 200 MB > 200 / 2 MiB */
    p.cache_mb = 400;
    ck_assert_int_eq(km_svm_resolve_solver(&p, 5000, 10), KM_SVM_SOLVER_EXACT);
    ck_assert_int_eq(km_svm_resolve_solver(&p, 5000, 2), /* one pair */
                     KM_SVM_SOLVER_SCREENED);
    p.probability = 1;
    ck_assert_int_eq(km_svm_resolve_solver(&p, 60000, 10),
                     KM_SVM_SOLVER_EXACT);
    p.probability = 0;
    p.solver = KM_SVM_SOLVER_NYSTROM;
    ck_assert_int_eq(km_svm_resolve_solver(&p, 60000, 10),
                     KM_SVM_SOLVER_NYSTROM);
    ck_assert_str_eq(km_svm_solver_name(KM_SVM_SOLVER_AUTO), "auto");

    km_dataset ds;
    size_t k;
    int *y = load_classes("satellite.csv", 4435, &ds, &k);
    km_kernel kern = rbf(0.5);
    for (int big = 0; big < 2; big++) {
        /* 4435 rows: a 157 MB Gram; with cache_mb 200 it is not shared
         * (screened), with 400 it is (exact) */
        km_svm_params a = screened(10, 200), want = a;
        a.solver = KM_SVM_SOLVER_AUTO;
        a.cache_mb = want.cache_mb = big ? 400 : 200;
        want.solver = big ? KM_SVM_SOLVER_EXACT : KM_SVM_SOLVER_SCREENED;
        km_model *ma = fit(&kern, &a, ds.X, 4435, ds.d, y, k, NULL);
        km_model *mw = fit(&kern, &want, ds.X, 4435, ds.d, y, k, NULL);
        size_t P = k * (k - 1) / 2;
        double *da = malloc(500 * P * sizeof *da), *dw = malloc(500 * P *
                                                                sizeof *dw);
        const double *T = ds.X + (ds.n - 500) * ds.d;
        ck_assert_int_eq(km_svc_decision(ma, T, 500, da, NULL), KM_OK);
        ck_assert_int_eq(km_svc_decision(mw, T, 500, dw, NULL), KM_OK);
        ck_assert_mem_eq(da, dw, 500 * P * sizeof *da);
        ck_assert_double_eq(fig(km_model_params(ma), "solver"),
                            KM_SVM_SOLVER_AUTO);
        ck_assert_double_eq(fig(km_model_params(ma), "n_centres"), 200);
        ck_assert_double_eq(fig(km_model_training(ma), "solver"),
                            want.solver);
        ck_assert_int_eq(km_info_find(km_model_training(ma), "rounds") !=
                             NULL,
                         !big);
        ck_assert_uint_eq(km_svc_fit_bytes(4435, ds.d, k, &a),
                          km_svc_fit_bytes(4435, ds.d, k, &want));
        free(da);
        free(dw);
        km_model_free(ma);
        km_model_free(mw);
    }
    free(y);
    km_dataset_free(&ds);
}
END_TEST

/* ------------------------------------------------------------ model */

START_TEST(model_file_round_trip)
{
    sat s;
    sat_load(&s);
    km_svm_params p = screened(10, 100);
    p.seed = 3;
    km_model *m;
    double *a = decisions(&s, &p, NULL, &m);
    const char *labels[] = {"1", "2", "3", "4", "5", "7"};
    ck_assert_uint_eq(s.k, 6);
    ck_assert_int_eq(km_model_set_labels(m, labels, s.k, 1, NULL), KM_OK);
    unsigned char *buf;
    size_t len;
    ck_assert_int_eq(km_model_save_buffer(m, &buf, &len, NULL), KM_OK);
    km_model *back = NULL;
    km_error err = {0};
    ck_assert_msg(km_model_load_buffer(buf, len, &back, &err) == KM_OK, "%s",
                  err.message);
    double *b = malloc(500 * s.P * sizeof *b);
    ck_assert_int_eq(km_svc_decision(back, s.T, 500, b, NULL), KM_OK);
    ck_assert_mem_eq(a, b, 500 * s.P * sizeof *a);
    const km_info *pi = km_model_params(back);
    ck_assert_double_eq(fig(pi, "solver"), KM_SVM_SOLVER_SCREENED);
    ck_assert_double_eq(fig(pi, "seed"), 3);
    ck_assert_double_eq(fig(pi, "cache_mb"), 200);
    ck_assert_uint_eq(km_svm_support_count(back), km_svm_support_count(m));
    free(buf);
    free(a);
    free(b);
    km_model_free(m);
    km_model_free(back);
    sat_free(&s);
}
END_TEST

/* ------------------------------------------------- progress, cancel */

typedef struct stopper {
    int calls, stop_after;
    double last;
} stopper;

static int stop_cb(void *ctx, double f)
{
    stopper *s = ctx;
    ck_assert(f >= s->last);
    s->last = f;
    return ++s->calls > s->stop_after;
}

int openblas_get_num_threads(void);
void openblas_set_num_threads(int n);

/* Progress rises to 1 through the screen and the pairs, on one worker or
 * two; a cancel anywhere stops the fit. BLAS's thread count (1 while
 * two workers' pairs run) is back to what it was after every fit, done
 * or cancelled. */
START_TEST(progress_and_cancel)
{
    sat s;
    sat_load(&s);
    km_kernel kern = rbf(0.5);
    km_svm_params p = screened(10, 6);
    openblas_set_num_threads(3);
    for (int t = 1; t <= 2; t++) {
        stopper all = {0, 1 << 30, 0};
        km_fit_control ctl = {stop_cb, &all, t, NULL};
        km_model *m = fit(&kern, &p, s.X, NE, s.ds.d, s.y, s.k, &ctl);
        ck_assert_int_eq(openblas_get_num_threads(), 3);
        ck_assert_double_eq(all.last, 1.0);
        int calls = all.calls;
        ck_assert_int_ge(calls, 20);
        km_model_free(m);
        int at[] = {0, 2, calls / 4, calls / 2, calls - 2};
        for (size_t i = 0; i < sizeof at / sizeof *at; i++) {
            stopper st = {0, at[i], 0};
            ctl.ctx = &st;
            m = NULL;
            km_error err = {0};
            ck_assert_int_eq(km_svc_fit(&kern, &p, s.X, NE, s.ds.d, s.y,
                                        s.k, &ctl, &m, &err),
                             KM_ECANCELLED);
            ck_assert_ptr_null(m);
            ck_assert_str_eq(err.message, "fit cancelled");
            ck_assert_int_eq(openblas_get_num_threads(), 3);
        }
        ck_assert_int_eq(openblas_get_num_threads(), 3);
    }
    sat_free(&s);
}
END_TEST

/* ------------------------------------------------- checks, estimate */

START_TEST(checks_name_the_field)
{
    km_svm_params p = screened(1, 10);
    km_error err;
    ck_assert_str_eq(km_svm_solver_name(KM_SVM_SOLVER_SCREENED), "screened");
    ck_assert_int_eq(km_svm_check(&p, KM_ALGO_SVC, 3, &err), KM_OK);
    p.probability = 1;
    ck_assert_int_eq(km_svm_check(&p, KM_ALGO_SVC, 3, &err), KM_EINVAL);
    ck_assert_str_eq(err.message, "params.probability is not available "
                                  "with params.solver screened");
    p.probability = 0;
    ck_assert_int_eq(km_svm_check(&p, KM_ALGO_SVR, 0, &err), KM_EINVAL);
    ck_assert_str_eq(err.message,
                     "params.solver screened applies to svc only");
    ck_assert_int_eq(km_svm_check_centres(&p, 5, 3, &err), KM_EPROBLEM);
    ck_assert_int_eq(km_svm_check_centres(&p, 100, 11, &err), KM_EPROBLEM);
    ck_assert_int_eq(km_svm_check_centres(&p, 100, 3, &err), KM_OK);
}
END_TEST

/* The estimate holds the screen's (a float nystrom fit), the rows'
 * copies and the kernel budget, and is what admission asks. */
START_TEST(fit_bytes)
{
    km_svm_params p = screened(10, 1000);
    p.cache_mb = 2000;
    size_t b = km_svc_fit_bytes(60000, 784, 10, &p);
    km_svm_params s = p;
    s.solver = KM_SVM_SOLVER_NYSTROM;
    s.precision = KM_SVM_PRECISION_FLOAT32;
    /* the grouped rows and each worker's three copies of a pair's (as
     * many workers as CPUs, at most 8) */
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    size_t w = cpus < 1 ? 1 : cpus > 8 ? 8 : (size_t)cpus;
    size_t rows = (size_t)8 * 60000 * 784;
    ck_assert_uint_ge(b, km_svc_fit_bytes(60000, 784, 10, &s) +
                             ((size_t)2000 << 20) + (1 + 3 * w) * rows);
    ck_assert_uint_le(b, km_svc_fit_bytes(60000, 784, 10, &s) +
                             ((size_t)2000 << 20) + (3 + 3 * w) * rows);
    km_problem pb = {NULL, 60000, 784, NULL, 0, NULL, 10};
    ck_assert_uint_eq(km_algorithm_fit_bytes(KM_ALGO_SVC, &p, &pb), b);
    /* a budget past what the pairs can hold (4 n^2 doubles a worker)
     * counts that */
    p.cache_mb = 1048576.0 * 1024;
    size_t kernel = (size_t)32 * w * 60000 * 60000;
    ck_assert_uint_ge(km_svc_fit_bytes(60000, 784, 10, &p), kernel);
    ck_assert_uint_le(km_svc_fit_bytes(60000, 784, 10, &p),
                      kernel + km_svc_fit_bytes(60000, 784, 10, &s) +
                          (3 + 3 * w) * rows);
}
END_TEST

static Suite *svc_screened_suite(void)
{
    Suite *s = suite_create("km_svc_screened");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, parity_satellite);
    tcase_add_test(tc, parity_digits);
    tcase_add_test(tc, equals_exact);
    tcase_add_test(tc, threads_same_answer);
    tcase_add_test(tc, no_screen_is_exact);
    tcase_add_test(tc, auto_picks);
    tcase_add_test(tc, model_file_round_trip);
    tcase_add_test(tc, progress_and_cancel);
    tcase_add_test(tc, checks_name_the_field);
    tcase_add_test(tc, fit_bytes);
    suite_add_tcase(s, tc);
    return s;
}

KM_TEST_MAIN(svc_screened_suite)
