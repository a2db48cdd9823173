/*
 * test_km_choice.c - options' choices (km_choices, core/base/km_choice.c)
 * and the tables generated from their X(ENUM, "name") lists:
 *   - km_choice_name, km_choice_value and km_choice_list, at and beyond
 *     the ends;
 *   - every option's names by value, as model files store the values
 *     (a second witness to the lists: a reordered list fails here), and
 *     its accessor and choices agreeing;
 *   - the "must be a, b or c" messages built from the lists, byte for
 *     byte as they were written by hand.
 */
#include "../check_main.h"
#include "km.h"

START_TEST(test_helpers)
{
    const km_choices *c = &km_krr_solver_choices;
    ck_assert_int_eq(c->count, 4);
    ck_assert_str_eq(km_choice_name(c, 0), "exact");
    ck_assert_str_eq(km_choice_name(c, 3), "auto");
    ck_assert_ptr_null(km_choice_name(c, 4));
    ck_assert_ptr_null(km_choice_name(c, -1));
    ck_assert_int_eq(km_choice_value(c, "rff"), KM_KRR_SOLVER_RFF);
    ck_assert_int_eq(km_choice_value(c, "RFF"), -1);
    ck_assert_int_eq(km_choice_value(c, ""), -1);
    ck_assert_int_eq(km_choice_value(c, NULL), -1);

    char buf[64];
    km_choice_list(c, " or ", buf, sizeof buf);
    ck_assert_str_eq(buf, "exact, nystrom, rff or auto");
    km_choice_list(c, ", ", buf, sizeof buf);
    ck_assert_str_eq(buf, "exact, nystrom, rff, auto");
    km_choice_list(&km_klr_multi_choices, " or ", buf, sizeof buf);
    ck_assert_str_eq(buf, "multinomial or ovr");
    km_choice_list(c, " or ", buf, 10); /* truncated, terminated */
    ck_assert_str_eq(buf, "exact, ny");
    const char *one[] = {"only"};
    km_choices single = {one, 1};
    km_choice_list(&single, " or ", buf, sizeof buf);
    ck_assert_str_eq(buf, "only");
}
END_TEST

/* Each option's names by stored value, and its accessor. */
START_TEST(test_names_by_value)
{
    static const struct {
        const km_choices *c;
        const char *names[8];
    } want[] = {
        {&km_krr_solver_choices, {"exact", "nystrom", "rff", "auto"}},
        {&km_krr_centres_choices, {"uniform", "rpcholesky"}},
        {&km_gpr_solver_choices, {"exact", "nystrom", "auto"}},
        {&km_gpr_optimizer_choices, {"none", "lbfgs"}},
        {&km_klr_multi_choices, {"multinomial", "ovr"}},
        {&km_klr_solver_choices, {"exact", "nystrom"}},
        {&km_kpca_solver_choices,
         {"auto", "dense", "iterative", "randomized", "nystrom"}},
        {&km_svm_solver_choices, {"exact", "nystrom", "screened", "auto"}},
        {&km_svm_precision_choices, {"float64", "float32"}},
        {&km_scale_choices, {"none", "standardize", "minmax"}},
        {&km_scoring_choices,
         {"r2", "neg_mean_squared_error", "neg_mean_absolute_error",
          "accuracy", "balanced_accuracy", "neg_log_loss",
          "neg_reconstruction_error"}},
        {&km_cv_choices, {"kfold", "loo", "gcv", "predefined"}},
    };
    for (size_t t = 0; t < sizeof want / sizeof *want; t++) {
        int n = 0;
        while (n < 8 && want[t].names[n])
            n++;
        ck_assert_int_eq(want[t].c->count, n);
        for (int v = 0; v < n; v++) {
            ck_assert_str_eq(km_choice_name(want[t].c, v), want[t].names[v]);
            ck_assert_int_eq(km_choice_value(want[t].c, want[t].names[v]), v);
        }
    }
    ck_assert_int_eq(KM_KRR_SOLVER_COUNT, 4);
    ck_assert_str_eq(km_krr_solver_name(KM_KRR_SOLVER_AUTO), "auto");
    ck_assert_str_eq(km_krr_centres_name(KM_KRR_CENTRES_RPCHOLESKY),
                     "rpcholesky");
    ck_assert_str_eq(km_gpr_solver_name(KM_GPR_SOLVER_AUTO), "auto");
    ck_assert_str_eq(km_gpr_optimizer_name(KM_GPR_OPTIMIZER_LBFGS), "lbfgs");
    ck_assert_str_eq(km_klr_multi_name(KM_KLR_OVR), "ovr");
    ck_assert_str_eq(km_klr_solver_name(KM_KLR_SOLVER_NYSTROM), "nystrom");
    ck_assert_str_eq(km_kpca_solver_name(KM_KPCA_SOLVER_NYSTROM), "nystrom");
    ck_assert_str_eq(km_svm_solver_name(KM_SVM_SOLVER_SCREENED), "screened");
    ck_assert_str_eq(km_svm_precision_name(KM_SVM_PRECISION_FLOAT32),
                     "float32");
    ck_assert_str_eq(km_scale_name(KM_SCALE_MINMAX), "minmax");
    ck_assert_str_eq(km_scoring_name(KM_SCORING_NEG_RECONSTRUCTION),
                     "neg_reconstruction_error");
    ck_assert_str_eq(km_cv_kind_name(KM_CV_PREDEFINED), "predefined");
    ck_assert_ptr_null(km_cv_kind_name(KM_CV_COUNT));
    ck_assert_ptr_null(km_svm_solver_name(KM_SVM_SOLVER_COUNT));
    km_scale s = KM_SCALE_NONE;
    ck_assert_int_eq(km_scale_parse("standardize", &s), 0);
    ck_assert_int_eq(s, KM_SCALE_STANDARDIZE);
    ck_assert_int_eq(km_scale_parse("Standardize", &s), -1);
    km_scoring sc = KM_SCORING_R2;
    ck_assert_int_eq(km_scoring_parse("neg_log_loss", &sc), 0);
    ck_assert_int_eq(sc, KM_SCORING_NEG_LOG_LOSS);
    ck_assert_int_eq(km_scoring_parse(NULL, &sc), -1);
}
END_TEST

/* The messages of the checks the other suites do not cover. */
START_TEST(test_messages)
{
    km_error err;
    km_krr_params krr = km_krr_params_default();
    krr.solver = KM_KRR_SOLVER_COUNT;
    ck_assert_int_eq(km_krr_check(&krr, 10, &err), KM_EINVAL);
    ck_assert_str_eq(err.message,
                     "params.solver must be exact, nystrom, rff or auto");

    km_kpca_params kpca = km_kpca_params_default();
    kpca.solver = (km_kpca_solver)9;
    ck_assert_int_eq(km_kpca_check(&kpca, 10, &err), KM_EINVAL);
    ck_assert_str_eq(err.message, "params.solver must be auto, dense, "
                                  "iterative, randomized or nystrom");

    km_svm_params svm = km_svm_params_default();
    svm.solver = KM_SVM_SOLVER_COUNT;
    ck_assert_int_eq(km_svm_check(&svm, KM_ALGO_SVC, 2, &err), KM_EINVAL);
    ck_assert_str_eq(err.message,
                     "params.solver must be exact, nystrom, screened or auto");

    /* a preprocess scale out of range, through km_fit */
    double X[4] = {0, 1, 2, 3}, y[4] = {0, 1, 2, 3};
    km_problem pb = {X, 4, 1, y, 1, NULL, 0};
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_LINEAR);
    km_krr_params p = km_krr_params_default();
    km_preprocess pre = {(km_scale)7, 0};
    km_model *m = NULL;
    ck_assert_int_eq(km_fit(KM_ALGO_KRR, &k, &p, &pre, &pb, NULL, &m, &err),
                     KM_EINVAL);
    ck_assert_ptr_null(m);
    ck_assert_str_eq(err.message, "preprocess.scale 7 is not one of none, "
                                  "standardize, minmax");
}
END_TEST

static Suite *choice_suite(void)
{
    Suite *s = suite_create("km_choice");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_helpers);
    tcase_add_test(tc, test_names_by_value);
    tcase_add_test(tc, test_messages);
    suite_add_tcase(s, tc);
    return s;
}

KM_TEST_MAIN(choice_suite)
