/*
 * test_km_auto.c - krr's solver "auto" (KM_KRR_SOLVER_AUTO): the choice
 * against the memory budget (exact while its estimate is at most half of
 * it), the estimate admission uses (the resolved solver's: a 10^6-row
 * fit is admitted as nystrom, its exact version is not), the fit's
 * figures and its identity with the explicit solver's fit, searches
 * (auto resolved once on all rows), the checks, and the default number
 * of centres.
 */
#include "../check_main.h"
#include "km.h"

static km_krr_params auto_params(void)
{
    km_krr_params p = km_krr_params_default();
    p.solver = KM_KRR_SOLVER_AUTO;
    p.alpha = 0.1;
    p.cg_tol = 1e-12;
    p.cg_max_iter = 300;
    return p;
}

static double fig(const km_info *info, const char *key)
{
    const km_info_entry *e = km_info_find(info, key);
    ck_assert_msg(e != NULL, "no figure %s", key);
    return e->values[0];
}

/* exact exactly while 8 n^2 + ... is at most half the budget */
START_TEST(choice_at_the_threshold)
{
    km_krr_params p = auto_params();
    const size_t d = 5, n = 2000;
    size_t exact = km_krr_fit_bytes(n, d, 1, NULL);
    ck_assert_int_eq(km_krr_resolve_solver(&p, n, d, 1, 2 * exact),
                     KM_KRR_SOLVER_EXACT);
    ck_assert_int_eq(km_krr_resolve_solver(&p, n + 1, d, 1, 2 * exact),
                     KM_KRR_SOLVER_NYSTROM);
    ck_assert_int_eq(km_krr_resolve_solver(&p, n, d, 1, 2 * exact - 1),
                     KM_KRR_SOLVER_NYSTROM);
    /* more outputs, a bigger estimate */
    ck_assert_int_eq(km_krr_resolve_solver(&p, n, d, 4, 2 * exact),
                     KM_KRR_SOLVER_NYSTROM);
    /* the other solvers are themselves */
    for (int s = 0; s < KM_KRR_SOLVER_AUTO; s++) {
        p.solver = (km_krr_solver)s;
        ck_assert_int_eq(km_krr_resolve_solver(&p, 1000000, d, 1, 1), s);
    }
    ck_assert_int_eq(km_krr_resolve_solver(NULL, 10, d, 1, 0),
                     KM_KRR_SOLVER_EXACT);
    ck_assert_str_eq(km_krr_solver_name(KM_KRR_SOLVER_AUTO), "auto");
}
END_TEST

/* Admission, as the server asks (km_algorithm_fit_bytes under the
 * budget it set): at n = 10^6, d = 20 and this machine's default budget,
 * auto estimates nystrom's fit (10,000 centres: 1.6 GB of factors) and
 * fits within the budget; the exact solver's 8 TB does not. */
START_TEST(estimate_is_the_resolved_solvers)
{
    const size_t n = 1000000, d = 20;
    km_krr_params a = auto_params(), ny = a, ex = km_krr_params_default();
    ny.solver = KM_KRR_SOLVER_NYSTROM;
    km_problem pb = {NULL, n, d, NULL, 1, NULL, 0};
    size_t budget = km_memory_budget();
    ck_assert_uint_eq(budget, km_default_memory_budget());
    size_t ba = km_algorithm_fit_bytes(KM_ALGO_KRR, &a, &pb);
    ck_assert_uint_eq(ba, km_algorithm_fit_bytes(KM_ALGO_KRR, &ny, &pb));
    ck_assert_uint_eq(km_krr_centres(&a, n), 10000);
    ck_assert_uint_ge(ba, (size_t)16e8);
    ck_assert_uint_le(ba, budget);
    ck_assert_uint_gt(km_algorithm_fit_bytes(KM_ALGO_KRR, &ex, &pb), budget);
    /* small n under the same budget: exact's estimate */
    pb.n = 3000;
    ck_assert_uint_eq(km_algorithm_fit_bytes(KM_ALGO_KRR, &a, &pb),
                      km_krr_fit_bytes(3000, d, 1, NULL));
    /* a budget set by the server replaces the default */
    km_set_memory_budget(km_krr_fit_bytes(3000, d, 1, NULL));
    ck_assert_uint_eq(km_algorithm_fit_bytes(KM_ALGO_KRR, &a, &pb),
                      km_krr_fit_bytes(3000, d, 1, &ny));
    km_set_memory_budget(0);
    ck_assert_uint_eq(km_memory_budget(), budget);
}
END_TEST

/* The fit: under a small budget nystrom, under a big one exact, each the
 * explicit solver's fit to the bit; params.solver shows auto, training
 * shows the solver run and the budget. */
static double *data(size_t n, size_t d, double **y)
{
    double *X = malloc(n * d * sizeof *X);
    *y = malloc(n * sizeof **y);
    km_rng r = {5};
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < d; j++)
            X[i * d + j] = km_rng_uniform(&r);
        (*y)[i] = sin(3 * X[i * d]) + X[i * d + 1];
    }
    return X;
}

START_TEST(fit_runs_the_resolved_solver)
{
    const size_t n = 600, d = 3;
    double *y, *X = data(n, d, &y);
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_RBF);
    k.gamma = 1;
    km_krr_params a = auto_params(), ny = a, ex = a;
    ny.solver = KM_KRR_SOLVER_NYSTROM;
    ex.solver = KM_KRR_SOLVER_EXACT;
    size_t exact = km_krr_fit_bytes(n, d, 1, NULL);
    for (int big = 0; big < 2; big++) {
        size_t budget = big ? 2 * exact : 2 * exact - 1;
        km_set_memory_budget(budget);
        km_model *ma = NULL, *me = NULL;
        km_error err = {0};
        ck_assert_msg(km_krr_fit(&k, &a, X, n, d, y, 1, NULL, &ma, &err) ==
                          KM_OK, "%s", err.message);
        ck_assert_int_eq(km_krr_fit(&k, big ? &ex : &ny, X, n, d, y, 1, NULL,
                                    &me, NULL), KM_OK);
        size_t ns = km_model_n_samples(ma);
        ck_assert_uint_eq(ns, big ? n : 600); /* min(n, 1000) centres */
        ck_assert_mem_eq(km_krr_dual_coef(ma), km_krr_dual_coef(me),
                         ns * sizeof(double));
        const km_info *pi = km_model_params(ma), *ti = km_model_training(ma);
        ck_assert_double_eq(fig(pi, "solver"), KM_KRR_SOLVER_AUTO);
        ck_assert_double_eq(fig(ti, "solver"), big ? KM_KRR_SOLVER_EXACT
                                                   : KM_KRR_SOLVER_NYSTROM);
        ck_assert_double_eq(fig(ti, "memory_budget_mb"),
                            (double)budget / 1048576.0);
        if (!big) {
            ck_assert_double_eq(fig(pi, "n_centres"), 600);
            ck_assert_double_ge(fig(ti, "iterations"), 1);
        }
        /* a round trip keeps the figures */
        unsigned char *buf;
        size_t len;
        km_model *back = NULL;
        ck_assert_int_eq(km_model_save_buffer(ma, &buf, &len, NULL), KM_OK);
        ck_assert_int_eq(km_model_load_buffer(buf, len, &back, NULL), KM_OK);
        ck_assert_double_eq(fig(km_model_training(back), "solver"),
                            fig(ti, "solver"));
        free(buf);
        km_model_free(back);
        km_model_free(ma);
        km_model_free(me);
    }
    free(X);
    free(y);
}
END_TEST

/* A search of auto points resolves once, on all rows: with a budget
 * that makes 300 rows nystrom but a fold's 200 exact, every fold fits
 * nystrom (the scores are those of explicit nystrom points); generalised
 * cross-validation, exact KRR's closed form, is refused then and runs
 * (as exact) under a big budget. */
START_TEST(search_resolves_on_all_rows)
{
    const size_t n = 300, d = 3;
    double *y, *X = data(n, d, &y);
    km_kernel ks[2];
    km_kernel_init(&ks[0], KM_KERNEL_RBF);
    ks[0].gamma = 1;
    ks[1] = ks[0];
    km_krr_params pa[2] = {auto_params(), auto_params()}, pn[2];
    pa[0].n_centres = pa[1].n_centres = 50;
    pa[1].alpha = 1;
    pn[0] = pa[0];
    pn[1] = pa[1];
    pn[0].solver = pn[1].solver = KM_KRR_SOLVER_NYSTROM;
    km_problem pb = {X, n, d, y, 1, NULL, 0};
    size_t e200 = km_krr_fit_bytes(200, d, 1, NULL);
    ck_assert_uint_gt(km_krr_fit_bytes(n, d, 1, NULL), e200);
    km_set_memory_budget(2 * e200);
    km_search_spec s = {KM_ALGO_KRR, {KM_SCALE_NONE, 0}, KM_SCORING_NEG_MSE,
                        {KM_CV_KFOLD, 3, 0, 0, 0, NULL}, 2, ks, pa};
    km_search_result ra, rn;
    km_error err = {0};
    ck_assert_msg(km_search(&s, &pb, NULL, &ra, &err) == KM_OK, "%s",
                  err.message);
    s.params = pn;
    ck_assert_int_eq(km_search(&s, &pb, NULL, &rn, NULL), KM_OK);
    for (size_t i = 0; i < 2; i++)
        ck_assert_double_eq(ra.mean[i], rn.mean[i]);
    /* and the estimate is the nystrom search's */
    size_t bn = km_search_bytes(&s, &pb);
    s.params = pa;
    ck_assert_uint_eq(km_search_bytes(&s, &pb), bn);
    km_search_result_cleanup(&ra);
    km_search_result_cleanup(&rn);
    s.params = pa;
    pa[0].n_centres = pa[1].n_centres = 0;
    s.cv.kind = KM_CV_GCV;
    ck_assert_int_eq(km_search_check(&s, &pb, &err), KM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "params.solver"));
    km_set_memory_budget((size_t)1 << 40);
    ck_assert_msg(km_search(&s, &pb, NULL, &ra, &err) == KM_OK, "%s",
                  err.message);
    km_search_result_cleanup(&ra);
    free(X);
    free(y);
}
END_TEST

/* auto checks what nystrom checks (it may resolve to it) */
START_TEST(checks_and_default_centres)
{
    km_krr_params p = auto_params();
    km_error err;
    ck_assert_int_eq(km_krr_check(&p, 10, &err), KM_OK);
    p.cg_tol = 0;
    ck_assert_int_eq(km_krr_check(&p, 10, &err), KM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "params.cg_tol"));
    p = auto_params();
    p.n_centres = 11;
    ck_assert_int_eq(km_krr_check(&p, 10, &err), KM_EPROBLEM);
    p = auto_params();
    p.solver = KM_KRR_SOLVER_COUNT;
    ck_assert_int_eq(km_krr_check(&p, 10, &err), KM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "auto"));
    /* min(n, ceil(sqrt(n) ln n)) within [1000, 10000] */
    p = auto_params();
    ck_assert_uint_eq(km_krr_centres(&p, 500), 500);
    ck_assert_uint_eq(km_krr_centres(&p, 11449), 1000);
    ck_assert_uint_eq(km_krr_centres(&p, 20000), 1401);
    ck_assert_uint_eq(km_krr_centres(&p, 100000), 3641);
    ck_assert_uint_eq(km_krr_centres(&p, 569300), 10000);
    ck_assert_uint_eq(km_krr_centres(&p, 100000000), 10000);
    p.n_centres = 7;
    ck_assert_uint_eq(km_krr_centres(&p, 100000), 7);
}
END_TEST

static Suite *auto_suite(void)
{
    Suite *s = suite_create("km_auto");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, choice_at_the_threshold);
    tcase_add_test(tc, estimate_is_the_resolved_solvers);
    tcase_add_test(tc, fit_runs_the_resolved_solver);
    tcase_add_test(tc, search_resolves_on_all_rows);
    tcase_add_test(tc, checks_and_default_centres);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    return s;
}

KM_TEST_MAIN(auto_suite)
