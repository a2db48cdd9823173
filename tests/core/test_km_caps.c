/*
 * test_km_caps.c - the capability tables of the algorithm and kernel
 * descriptors (km_caps.c, km_kernel.c) against themselves and against
 * the code that acts on them: every algorithm has a target kind that
 * agrees with its outputs and classes; solver names are unique and
 * named; the layout of decision values is set where they are answered; a solver accepts a kernel exactly when the algorithm's kernel
 * check passes; every kernel of KM_KERNEL_CAP_RFF can be sampled by
 * km_krr_rff_draw and no other; the search and distributed descriptors
 * are complete where they are set, and the messages that list them are
 * generated from them.
 */
#include <math.h>
#include <string.h>

#include "../check_main.h"
#include "km.h"
#include "kernels/km_kernel_internal.h"
#include "model/km_model_internal.h"
#include "algorithms/km_algorithms_internal.h"

START_TEST(test_targets)
{
    for (int i = 0; i < KM_ALGO_COUNT; i++) {
        km_algorithm a = (km_algorithm)i;
        km_target t = km_algorithm_target(a);
        unsigned outs = km_algorithm_outputs(a);
        const km_algo *al = km_algo_of(a);
        ck_assert_msg(t >= KM_TARGET_NONE && t <= KM_TARGET_CLASSES, "%s",
                      km_algorithm_name(a));
        /* classes: exactly the classifiers' */
        ck_assert_int_eq(t == KM_TARGET_CLASSES, al->classes);
        /* values or rows: exactly the algorithms that predict values */
        ck_assert_int_eq(t == KM_TARGET_VALUES || t == KM_TARGET_ROWS,
                         (outs & KM_OUT_VALUES) != 0);
        /* a check that reads y needs a y */
        if (km_algorithm_checks_targets(a))
            ck_assert_int_ne(t, KM_TARGET_NONE);
    }
    ck_assert_int_eq(km_algorithm_target(KM_ALGO_KRR), KM_TARGET_ROWS);
    ck_assert_int_eq(km_algorithm_target(KM_ALGO_SVR), KM_TARGET_VALUES);
    ck_assert_int_eq(km_algorithm_target(KM_ALGO_KPCA), KM_TARGET_NONE);
    ck_assert_int_eq(km_algorithm_target((km_algorithm)KM_ALGO_COUNT),
                     KM_TARGET_NONE);
}
END_TEST

START_TEST(test_solvers)
{
    for (int i = 0; i < KM_ALGO_COUNT; i++) {
        km_algorithm a = (km_algorithm)i;
        size_t n = km_algorithm_solver_count(a);
        const char *key = km_algorithm_solver_param(a);
        ck_assert_int_eq(n > 0, key != NULL);
        for (size_t s = 0; s < n; s++) {
            const char *name = km_algorithm_solver_name(a, s);
            ck_assert_msg(name && *name, "%s solver %zu",
                          km_algorithm_name(a), s);
            for (size_t u = 0; u < s; u++)
                ck_assert_str_ne(name, km_algorithm_solver_name(a, u));
        }
        ck_assert_ptr_null(km_algorithm_solver_name(a, n));
        ck_assert_int_eq(km_algorithm_solver_accepts(a, n, KM_KERNEL_RBF),
                         0);
    }
    ck_assert_str_eq(km_algorithm_solver_param(KM_ALGO_KPCA),
                     "eigen_solver");
    ck_assert_ptr_null(km_algorithm_solver_param(KM_ALGO_SVR));
    ck_assert_ptr_null(km_algorithm_solver_param(KM_ALGO_KKMEANS));
    ck_assert_str_eq(km_algorithm_solver_name(KM_ALGO_KRR,
                                              KM_KRR_SOLVER_RFF), "rff");
}
END_TEST

/* The layout of decision values is set exactly for the algorithms that
 * answer them, and named (GET /v1's decision_columns). */
START_TEST(test_decision_columns)
{
    for (int i = 0; i < KM_ALGO_COUNT; i++) {
        km_algorithm a = (km_algorithm)i;
        km_decision_columns dc = km_algorithm_decision_columns(a);
        int scores = (km_algorithm_outputs(a) & KM_OUT_SCORES) != 0;
        ck_assert_int_eq(dc != KM_DECISION_COLUMNS_COUNT, scores);
        ck_assert_int_eq(km_choice_name(&km_decision_columns_choices,
                                        (int)dc) != NULL,
                         scores);
    }
    ck_assert_int_eq(km_algorithm_decision_columns(KM_ALGO_SVC),
                     KM_DECISION_PAIRS);
    ck_assert_int_eq(km_algorithm_decision_columns(KM_ALGO_KLR),
                     KM_DECISION_CLASSES);
    ck_assert_int_eq(km_algorithm_decision_columns(KM_ALGO_COUNT),
                     KM_DECISION_COLUMNS_COUNT);
    ck_assert_str_eq(km_choice_name(&km_decision_columns_choices,
                                    KM_DECISION_PAIRS), "pairs");
}
END_TEST

/* A solver accepts a kernel exactly when the algorithm's kernel check
 * (what a fit and the API run) passes: krr's, by its solver; an
 * algorithm without a kernel check takes, with every solver, every
 * kernel of an input kind it takes (gpr and kkmeans no precomputed). */
START_TEST(test_solver_kernels)
{
    for (size_t s = 0; s < km_algorithm_solver_count(KM_ALGO_KRR); s++)
        for (int t = 0; t < KM_KERNEL_TYPE_COUNT; t++) {
            km_krr_params p = km_krr_params_default();
            p.solver = (km_krr_solver)s;
            km_kernel k;
            km_kernel_init(&k, (km_kernel_type)t);
            km_error e;
            int ok = km_algorithm_check_kernel(KM_ALGO_KRR, &p, &k, &e) ==
                     KM_OK;
            ck_assert_int_eq(ok, km_algorithm_solver_accepts(
                                     KM_ALGO_KRR, s, (km_kernel_type)t));
        }
    for (int i = 0; i < KM_ALGO_COUNT; i++) {
        km_algorithm a = (km_algorithm)i;
        if (km_algo_of(a)->check_kernel)
            continue;
        for (size_t s = 0; s < km_algorithm_solver_count(a); s++)
            for (int t = 0; t < KM_KERNEL_TYPE_COUNT; t++)
                ck_assert_int_eq(
                    km_algorithm_solver_accepts(a, s, (km_kernel_type)t),
                    km_algorithm_takes_input(
                        a, km_kernel_type_input((km_kernel_type)t), NULL));
    }
}
END_TEST

/* Every kernel of CAP_RFF is sampled; every other one refused, with the
 * message naming the list from the table. */
START_TEST(test_rff_kernels)
{
    enum { D = 16, d = 3 };
    double W[D * d], b[D];
    for (int t = 0; t < KM_KERNEL_TYPE_COUNT; t++) {
        km_kernel k;
        km_kernel_init(&k, (km_kernel_type)t);
        k.gamma = 0.5;
        km_error e;
        km_status st = km_krr_rff_draw(&k, 7, D, d, W, b, &e);
        int rff = (km_kernel_type_caps((km_kernel_type)t) &
                   KM_KERNEL_CAP_RFF) != 0;
        ck_assert_int_eq(st == KM_OK, rff);
        if (rff) {
            for (size_t i = 0; i < D * d; i++)
                ck_assert(isfinite(W[i]));
        } else {
            ck_assert_int_eq(st, KM_EINVAL);
            ck_assert_ptr_nonnull(strstr(e.message, "(kernel.type rbf, "
                                         "laplacian or laplacian_l2)"));
        }
    }
}
END_TEST

START_TEST(test_kernel_caps)
{
    for (int t = 0; t < KM_KERNEL_TYPE_COUNT; t++) {
        unsigned c = km_kernel_type_caps((km_kernel_type)t);
        const km_kernel_info *in = km_kernel_type_info((km_kernel_type)t);
        ck_assert_int_eq((c & KM_KERNEL_CAP_COMPOSITE) != 0,
                         in->family == KM_KFAMILY_COMPOSITE);
        /* what the optimizer tunes, the kernel has */
        if (c & KM_KERNEL_CAP_TUNE_GAMMA)
            ck_assert(in->params & KM_KPARAM_GAMMA);
        /* a spectral density is a leaf's */
        if (c & KM_KERNEL_CAP_RFF)
            ck_assert(!(c & KM_KERNEL_CAP_COMPOSITE));
    }
    ck_assert_uint_eq(km_kernel_type_caps((km_kernel_type)
                                              KM_KERNEL_TYPE_COUNT), 0);
    char names[128];
    km_kernel_caps_names(KM_KERNEL_CAP_TUNE_GAMMA, " or ", names,
                         sizeof names);
    ck_assert_str_eq(names, "rbf, laplacian, laplacian_l2 or exponential");
}
END_TEST

START_TEST(test_search)
{
    for (int i = 0; i < KM_ALGO_COUNT; i++) {
        const km_algo *al = km_algo_of((km_algorithm)i);
        const km_algo_search *se = al->search;
        if (!se)
            continue;
        if (se->caps & (KM_SEARCH_CLOSED_FORM | KM_SEARCH_SHARED_GRAM))
            ck_assert_ptr_nonnull(se->serves);
        if (se->caps & KM_SEARCH_SHARED_GRAM)
            ck_assert_ptr_nonnull(se->cache_bytes);
        ck_assert_int_eq(se->is_auto != NULL, se->resolve_auto != NULL);
        /* a one-output algorithm predicts one value per row */
        if (se->one_output)
            ck_assert_int_eq(al->target, KM_TARGET_VALUES);
    }
    ck_assert(km_algorithm_search_caps(KM_ALGO_KRR) & KM_SEARCH_CLOSED_FORM);
    ck_assert(km_algorithm_search_caps(KM_ALGO_SVR) & KM_SEARCH_SHARED_GRAM);
    ck_assert_uint_eq(km_algorithm_search_caps(KM_ALGO_KLR), 0);
}
END_TEST

/* A tiny problem for the memory figures. */
static const double X6[6 * 2] = {0, 1, 1, 0, 1, 1, 2, 0, 0, 2, 2, 2};
static const double y6[6] = {0, 1, 2, 1, 0, 2};

START_TEST(test_distributed)
{
    km_problem pb = {X6, 6, 2, y6, 1, NULL, 0};
    char names[64];
    km_algorithm_distributed_names(" and ", names, sizeof names);
    ck_assert_str_eq(names, "krr, kpca and gpr");
    for (int i = 0; i < KM_ALGO_COUNT; i++) {
        km_algorithm a = (km_algorithm)i;
        unsigned char params[256];
        km_algorithm_params_default(a, params);
        char buf[200];
        const char *why = km_algorithm_mpi_refusal(a, params, buf, sizeof buf);
        /* what can be handed to the worker is what runs distributed */
        km_kernel k;
        km_kernel_init(&k, KM_KERNEL_RBF);
        unsigned char *req = NULL;
        size_t len = 0;
        km_error e;
        km_status st = km_request_save_buffer(a, &k, params, NULL, &pb, &req,
                                              &len, &e);
        free(req);
        if (!km_algorithm_distributed(a)) {
            ck_assert_ptr_nonnull(why);
            ck_assert_ptr_nonnull(strstr(why, names));
            ck_assert_int_eq(st, KM_EINVAL);
            ck_assert_ptr_nonnull(strstr(e.message, names));
            ck_assert_uint_eq(km_algorithm_mpi_rank_bytes(a, params, &pb,
                                                          256, 1, 2), 0);
            continue;
        }
        ck_assert_int_eq(st, KM_OK);
        ck_assert_uint_gt(km_algorithm_mpi_rank_bytes(a, params, &pb, 256,
                                                      1, 2), 0);
        ck_assert_uint_gt(km_algorithm_mpi_local_bytes(a, params, &pb), 0);
    }
    /* krr: auto is routed and resolved to exact; rff refused */
    km_krr_params p = km_krr_params_default(), ex;
    p.solver = KM_KRR_SOLVER_AUTO;
    ck_assert(km_algorithm_mpi_routes_auto(KM_ALGO_KRR, &p, &ex));
    ck_assert_int_eq(ex.solver, KM_KRR_SOLVER_EXACT);
    km_error e;
    ck_assert_int_eq(km_algorithm_mpi_resolve(KM_ALGO_KRR, &p, &e), KM_OK);
    ck_assert_int_eq(p.solver, KM_KRR_SOLVER_EXACT);
    p.solver = KM_KRR_SOLVER_RFF;
    char buf[200];
    ck_assert_ptr_nonnull(km_algorithm_mpi_refusal(KM_ALGO_KRR, &p, buf,
                                                   sizeof buf));
    ck_assert_int_eq(km_algorithm_mpi_resolve(KM_ALGO_KRR, &p, &e),
                     KM_EINVAL);
    /* kpca: only auto and dense */
    km_kpca_params q = km_kpca_params_default();
    q.solver = KM_KPCA_SOLVER_RANDOMIZED;
    ck_assert_str_eq(km_algorithm_mpi_refusal(KM_ALGO_KPCA, &q, buf,
                                              sizeof buf),
                     "params.eigen_solver randomized cannot run "
                     "distributed (kpca: only auto or dense, which run "
                     "ScaLAPACK's pdsyevr)");
    ck_assert_int_eq(km_algorithm_mpi_resolve(KM_ALGO_KPCA, &q, &e),
                     KM_EINVAL);
}
END_TEST

/* The row named key of set, or NULL. */
static const km_param *param_row(const km_param_set *set, const char *key)
{
    for (const km_param *r = set->rows; key && r->key; r++)
        if (!strcmp(r->key, key))
            return r;
    return NULL;
}

/* Every row of set within its struct, its key once, a choice row with
 * choices, and every condition naming a choice row of the same set. */
static void check_param_set(const km_param_set *set, const char *what)
{
    ck_assert_ptr_nonnull(set);
    ck_assert_ptr_nonnull(set->defaults);
    for (const km_param *r = set->rows; r->key; r++) {
        ck_assert_msg(param_row(set, r->key) == r, "%s.%s twice", what,
                      r->key);
        if (r->type != KM_PARAM_READ_ONLY)
            ck_assert_msg(r->size > 0 && r->offset + r->size <= set->size,
                          "%s.%s outside its struct", what, r->key);
        if (r->type == KM_PARAM_CHOICE || r->type == KM_PARAM_DISCRIMINATOR)
            ck_assert_msg(r->choices && r->choices->count > 0 &&
                              r->size == sizeof(int),
                          "%s.%s: choices", what, r->key);
        const char *deps[] = {r->only_if, r->or_if};
        for (size_t i = 0; i < 2; i++) {
            const km_param *dep = param_row(set, deps[i]);
            ck_assert_msg(!deps[i] || (dep && dep->type == KM_PARAM_CHOICE),
                          "%s.%s applies with %s, no choice row", what,
                          r->key, deps[i]);
        }
        if (r->alias_of)
            ck_assert_ptr_nonnull(param_row(set, r->alias_of));
    }
}

/* Each algorithm's params rows (next to its descriptor) describe its
 * struct, and at most one of them, a choice, is marked its solver
 * choice, whose key, count and names the solver accessors give; the
 * kernel object's rows are each taken by some type; preprocessing's
 * describe a km_preprocess. */
START_TEST(test_params_rows)
{
    for (int i = 0; i < KM_ALGO_COUNT; i++) {
        km_algorithm a = (km_algorithm)i;
        const km_param_set *set = km_algorithm_params(a);
        check_param_set(set, km_algorithm_name(a));
        ck_assert_uint_eq(set->size, km_algorithm_params_size(a));
        const char *key = km_algorithm_solver_param(a);
        const km_param *row = param_row(set, key);
        ck_assert_int_eq(row != NULL, key != NULL);
        int marked = 0;
        for (const km_param *r = set->rows; r->key; r++)
            if (r->solver) {
                marked++;
                ck_assert_ptr_eq(r, row);
                ck_assert_int_eq(r->type, KM_PARAM_CHOICE);
            }
        ck_assert_int_eq(marked, row != NULL);
        for (size_t s = 0; row && s < km_algorithm_solver_count(a); s++)
            ck_assert_str_eq(km_choice_name(row->choices, (int)s),
                             km_algorithm_solver_name(a, s));
        ck_assert_int_eq(row ? (size_t)row->choices->count : 0,
                         km_algorithm_solver_count(a));
    }
    ck_assert_ptr_null(km_algorithm_params(KM_ALGO_COUNT));
    const km_param_set *ks = km_kernel_params();
    check_param_set(ks, "kernel");
    ck_assert_uint_eq(ks->size, sizeof(km_kernel));
    for (const km_param *r = ks->rows; r->key; r++) {
        int takers = 0;
        for (int t = 0; t < KM_KERNEL_TYPE_COUNT; t++)
            takers += (km_kernel_type_info((km_kernel_type)t)->params &
                       r->kparam) != 0;
        ck_assert_msg(r->type == KM_PARAM_DISCRIMINATOR ? r->kparam == 0
                                                        : takers > 0,
                      "kernel.%s: no type takes it", r->key);
    }
    ck_assert(km_kernel_type_info(KM_KERNEL_RBF)->params & KM_KPARAM_SIGMA);
    check_param_set(km_preprocess_params(), "preprocess");
    ck_assert_uint_eq(km_preprocess_params()->size, sizeof(km_preprocess));
}
END_TEST

static Suite *caps_suite(void)
{
    Suite *s = suite_create("km_caps");
    TCase *tc = tcase_create("tables");
    tcase_add_test(tc, test_targets);
    tcase_add_test(tc, test_solvers);
    tcase_add_test(tc, test_solver_kernels);
    tcase_add_test(tc, test_decision_columns);
    tcase_add_test(tc, test_rff_kernels);
    tcase_add_test(tc, test_kernel_caps);
    tcase_add_test(tc, test_search);
    tcase_add_test(tc, test_distributed);
    tcase_add_test(tc, test_params_rows);
    suite_add_tcase(s, tc);
    return s;
}

KM_TEST_MAIN(caps_suite)
