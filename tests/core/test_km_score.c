/*
 * test_km_score.c - scores (core/select/km_score.c) and the training figures
 * rkhs_norm_sq (krr), margin (svc) and training_score (every km_fit):
 *   - every metric of km_score_classes and km_score_regression equals
 *     sklearn.metrics 1.2.1 on fixed vectors to 1e-12 (gen_score_refs.py:
 *     a class never predicted, one never true, probabilities clipped and
 *     renormalised, a constant y, several outputs);
 *   - km_model_score on fitted models equals the metrics of the model's
 *     own predictions, bit for bit, and training_score is that score on
 *     the training rows; against models scikit-learn fitted on the same
 *     data (their solvers differ in the last digits: 1e-9 to 1e-6);
 *   - beyond KM_SCORE_FIT_ROWS rows, training_score on the seeded
 *     subsample and training_score_rows;
 *   - rkhs_norm_sq and margin against a direct computation from the
 *     model's coefficients and the kernel, and against scikit-learn's;
 *   - the scorings' names, defaults and checks, and their messages.
 */
#include "../check_main.h"
#include "km.h"
#include "kernels/km_kernel_internal.h"
#include "select/km_select_internal.h"

#define TIGHT 1e-12

static double *fixture(const char *name, size_t want)
{
    size_t n;
    double *v = km_read_fixture(name, &n);
    ck_assert_msg(n == want, "%s has %zu numbers, expected %zu", name, n,
                  want);
    return v;
}

static int *as_ints(const double *v, size_t n)
{
    int *out = malloc(n * sizeof *out);
    for (size_t i = 0; i < n; i++)
        out[i] = (int)v[i];
    return out;
}

static void near(double got, double want, double tol, const char *what)
{
    double scale = fabs(want) > 1 ? fabs(want) : 1;
    ck_assert_msg(fabs(got - want) <= tol * scale, "%s: %.17g, expected "
                  "%.17g (tolerance %g)", what, got, want, tol);
}

/* ------------------------------------------------------------ metrics */

#define NCLS 40
#define KCLS 5

START_TEST(classes_match_sklearn)
{
    double *t = fixture("score_cls_truth.txt", NCLS);
    double *p = fixture("score_cls_pred.txt", NCLS);
    double *proba = fixture("score_cls_proba.txt", NCLS * KCLS);
    double *ref = fixture("score_cls_ref.txt", 3 + 2 * KCLS + KCLS * KCLS);
    int *truth = as_ints(t, NCLS), *pred = as_ints(p, NCLS);
    km_class_scores s;
    km_error err;
    ck_assert_int_eq(km_score_classes(truth, pred, proba, NCLS, KCLS, &s, &err),
                     KM_OK);
    ck_assert_uint_eq(s.k, KCLS);
    near(s.accuracy, ref[0], TIGHT, "accuracy");
    near(s.balanced_accuracy, ref[1], TIGHT, "balanced_accuracy");
    near(s.log_loss, ref[2], TIGHT, "log_loss");
    for (size_t c = 0; c < KCLS; c++) {
        near(s.precision[c], ref[3 + c], TIGHT, "precision");
        near(s.recall[c], ref[3 + KCLS + c], TIGHT, "recall");
    }
    for (size_t c = 0; c < KCLS * KCLS; c++)
        ck_assert_uint_eq(s.confusion[c], (uint64_t)ref[3 + 2 * KCLS + c]);
    /* the fixture holds the cases the rules are about */
    ck_assert_double_eq(s.precision[4], 0); /* never predicted */
    ck_assert_double_eq(s.recall[3], 0);    /* never true */
    km_class_scores_cleanup(&s);

    /* without probabilities: no log_loss, the rest the same */
    ck_assert_int_eq(km_score_classes(truth, pred, NULL, NCLS, KCLS, &s, NULL),
                     KM_OK);
    ck_assert(isnan(s.log_loss));
    near(s.accuracy, ref[0], TIGHT, "accuracy without probabilities");
    km_class_scores_cleanup(&s);

    truth[3] = 7;
    ck_assert_int_eq(km_score_classes(truth, pred, NULL, NCLS, KCLS, &s, &err),
                     KM_EINVAL);
    ck_assert_str_eq(err.message, "y[3] = 7 is not a class index in [0, 5)");
    truth[3] = 0;
    pred[9] = -1;
    ck_assert_int_eq(km_score_classes(truth, pred, NULL, NCLS, KCLS, &s, &err),
                     KM_EINVAL);
    ck_assert_str_eq(err.message,
                     "predictions[9] = -1 is not a class index in [0, 5)");
    ck_assert_int_eq(km_score_classes(truth, pred, NULL, 0, KCLS, &s, &err),
                     KM_EINVAL);
    km_class_scores_cleanup(&s); /* safe after a failure */
    free(truth);
    free(pred);
    free(t);
    free(p);
    free(proba);
    free(ref);
}
END_TEST

static void regression_case(const char *name, size_t n, size_t m)
{
    char file[64];
    snprintf(file, sizeof file, "score_reg_%s_Y.txt", name);
    double *Y = fixture(file, n * m);
    snprintf(file, sizeof file, "score_reg_%s_P.txt", name);
    double *P = fixture(file, n * m);
    snprintf(file, sizeof file, "score_reg_%s_ref.txt", name);
    double *ref = fixture(file, 3);
    km_regression_scores r;
    ck_assert_int_eq(km_score_regression(Y, P, n, m, &r, NULL), KM_OK);
    snprintf(file, sizeof file, "%s: r2", name);
    near(r.r2, ref[0], TIGHT, file);
    snprintf(file, sizeof file, "%s: mse", name);
    near(r.mse, ref[1], TIGHT, file);
    snprintf(file, sizeof file, "%s: mae", name);
    near(r.mae, ref[2], TIGHT, file);
    free(Y);
    free(P);
    free(ref);
}

START_TEST(regression_matches_sklearn)
{
    regression_case("single", 30, 1);
    regression_case("multi", 30, 3);     /* one output constant: its r2 0 */
    regression_case("constexact", 5, 1); /* constant, predicted: r2 1 */

    /* a constant y predicted badly: 0, not minus infinity */
    double y[3] = {0.1, 0.1, 0.1}, p[3] = {0.2, 0.1, 0.0};
    km_regression_scores r;
    km_error err;
    ck_assert_int_eq(km_score_regression(y, p, 3, 1, &r, &err), KM_OK);
    ck_assert_double_eq(r.r2, 0);
    /* one row: r2 is not defined (sklearn: nan) */
    ck_assert_int_eq(km_score_regression(y, p, 1, 1, &r, &err), KM_OK);
    ck_assert(isnan(r.r2));
    near(r.mse, 0.01, TIGHT, "mse of one row");
    y[1] = NAN;
    ck_assert_int_eq(km_score_regression(y, p, 3, 1, &r, &err), KM_EINVAL);
    ck_assert_str_eq(err.message, "y[1] is not a finite number");
    y[1] = 0.1;
    p[2] = INFINITY;
    ck_assert_int_eq(km_score_regression(y, p, 3, 1, &r, &err), KM_EPROBLEM);
    ck_assert_int_eq(km_score_regression(y, p, 0, 1, &r, &err), KM_EINVAL);
}
END_TEST

/* ------------------------------------------------------------ scorings */

START_TEST(scoring_names_and_checks)
{
    static const char *const names[] = {
        "r2", "neg_mean_squared_error", "neg_mean_absolute_error",
        "accuracy", "balanced_accuracy", "neg_log_loss",
        "neg_reconstruction_error"};
    ck_assert_int_eq(KM_SCORING_COUNT, 7);
    for (int s = 0; s < KM_SCORING_COUNT; s++) {
        km_scoring back;
        ck_assert_str_eq(km_scoring_name((km_scoring)s), names[s]);
        ck_assert_int_eq(km_scoring_parse(names[s], &back), 0);
        ck_assert_int_eq(back, s);
    }
    km_scoring back = KM_SCORING_R2;
    ck_assert_ptr_null(km_scoring_name(KM_SCORING_COUNT));
    ck_assert_int_eq(km_scoring_parse("R2", &back), -1);
    ck_assert_int_eq(km_scoring_parse("", &back), -1);
    ck_assert_int_eq(km_scoring_default(KM_ALGO_KRR), KM_SCORING_R2);
    ck_assert_int_eq(km_scoring_default(KM_ALGO_SVR), KM_SCORING_R2);
    ck_assert_int_eq(km_scoring_default(KM_ALGO_SVC), KM_SCORING_ACCURACY);
    ck_assert_int_eq(km_scoring_default(KM_ALGO_KPCA),
                     KM_SCORING_NEG_RECONSTRUCTION);
    ck_assert_int_eq(km_scoring_default(KM_ALGO_COUNT), KM_SCORING_COUNT);

    km_error err;
    km_svm_params sp = km_svm_params_default();
    km_kpca_params kp = km_kpca_params_default();
    km_krr_params rp = km_krr_params_default();
    ck_assert_int_eq(km_scoring_check(KM_SCORING_R2, KM_ALGO_KRR, &rp, &err),
                     KM_OK);
    ck_assert_int_eq(km_scoring_check(KM_SCORING_NEG_MAE, KM_ALGO_SVR, &sp,
                                      &err), KM_OK);
    ck_assert_int_eq(km_scoring_check(KM_SCORING_ACCURACY, KM_ALGO_KRR, &rp,
                                      &err), KM_EINVAL);
    ck_assert_str_eq(err.message, "scoring accuracy applies to svc, klr, not krr");
    ck_assert_int_eq(km_scoring_check(KM_SCORING_R2, KM_ALGO_KPCA, &kp, &err),
                     KM_EINVAL);
    ck_assert_str_eq(err.message, "scoring r2 applies to krr, svr, gpr, not kpca");
    ck_assert_int_eq(km_scoring_check(KM_SCORING_NEG_LOG_LOSS, KM_ALGO_SVC,
                                      &sp, &err), KM_EINVAL);
    ck_assert_str_eq(err.message,
                     "scoring neg_log_loss needs params.probability");
    sp.probability = 1;
    ck_assert_int_eq(km_scoring_check(KM_SCORING_NEG_LOG_LOSS, KM_ALGO_SVC,
                                      &sp, &err), KM_OK);
    ck_assert_int_eq(km_scoring_check(KM_SCORING_NEG_LOG_LOSS, KM_ALGO_SVR,
                                      &sp, &err), KM_EINVAL);
    ck_assert_str_eq(err.message,
                     "scoring neg_log_loss applies to svc, klr, not svr");
    ck_assert_int_eq(km_scoring_check(KM_SCORING_NEG_RECONSTRUCTION,
                                      KM_ALGO_KPCA, &kp, &err), KM_EINVAL);
    ck_assert_str_eq(err.message, "scoring neg_reconstruction_error needs "
                     "params.fit_inverse_transform");
    kp.fit_inverse_transform = 1;
    ck_assert_int_eq(km_scoring_check(KM_SCORING_NEG_RECONSTRUCTION,
                                      KM_ALGO_KPCA, &kp, &err), KM_OK);
    /* without params only the algorithm is checked */
    ck_assert_int_eq(km_scoring_check(KM_SCORING_NEG_LOG_LOSS, KM_ALGO_SVC,
                                      NULL, &err), KM_OK);
    ck_assert_int_eq(km_scoring_check(KM_SCORING_COUNT, KM_ALGO_SVC, NULL,
                                      &err), KM_EINVAL);
    ck_assert_int_eq(km_scoring_check(KM_SCORING_R2, KM_ALGO_COUNT, NULL,
                                      &err), KM_EINVAL);
}
END_TEST

/* ------------------------------------------------------------ models */

#define N 60
#define D 3
#define GAMMA 0.5

static double *X60;

static void load_x(void)
{
    X60 = fixture("score_X.txt", N * D);
}

static void free_x(void)
{
    free(X60);
}

static void rbf(km_kernel *k)
{
    km_kernel_init(k, KM_KERNEL_RBF);
    k->gamma = GAMMA;
}

static double figure(const km_model *m, const char *key, size_t i)
{
    const km_info_entry *e = km_info_find(km_model_training(m), key);
    ck_assert_msg(e != NULL, "no training figure %s", key);
    ck_assert_uint_gt(e->count, i);
    return e->values[i];
}


START_TEST(krr_figures)
{
    double *Y = fixture("score_krr_Y.txt", N * 2);
    double *ref = fixture("score_krr_ref.txt", 3);
    km_kernel k;
    rbf(&k);
    km_krr_params p = {.alpha = 0.7};
    km_problem pb = {X60, N, D, Y, 2, NULL, 0};
    km_model *m = NULL;
    km_error err;
    ck_assert_int_eq(km_fit(KM_ALGO_KRR, &k, &p, NULL, &pb, NULL, &m, &err),
                     KM_OK);

    /* rkhs_norm_sq: a^T K a, directly from the Gram, and sklearn's */
    double *G = malloc(N * N * sizeof *G);
    ck_assert_int_eq(km_gram_sym(km_model_kernel(m), X60, N, D, G, 1, NULL),
                     KM_OK);
    const double *A = km_krr_dual_coef(m);
    for (size_t j = 0; j < 2; j++) {
        double direct = 0;
        for (size_t a = 0; a < N; a++)
            for (size_t b = 0; b < N; b++)
                direct += A[a * 2 + j] * G[a * N + b] * A[b * 2 + j];
        near(figure(m, "rkhs_norm_sq", j), direct, 1e-10,
             "rkhs_norm_sq against a^T K a");
        near(figure(m, "rkhs_norm_sq", j), ref[j], 1e-9,
             "rkhs_norm_sq against scikit-learn's");
    }
    free(G);

    /* training_score is r2 on the training rows; km_model_score is the
     * metrics of the model's own predictions */
    double *P = malloc(N * 2 * sizeof *P), s;
    km_regression_scores r;
    ck_assert_int_eq(km_predict(m, KM_OUT_VALUES, X60, N, P, NULL), KM_OK);
    ck_assert_int_eq(km_score_regression(Y, P, N, 2, &r, NULL), KM_OK);
    ck_assert_int_eq(km_model_score(m, KM_SCORING_R2, &pb, &s, NULL), KM_OK);
    ck_assert_double_eq(s, r.r2);
    ck_assert_double_eq(figure(m, "training_score", 0), r.r2);
    near(r.r2, ref[2], 1e-10, "training r2 against scikit-learn's");
    ck_assert_int_eq(km_model_score(m, KM_SCORING_NEG_MSE, &pb, &s, NULL),
                     KM_OK);
    ck_assert_double_eq(s, -r.mse);
    ck_assert_int_eq(km_model_score(m, KM_SCORING_NEG_MAE, &pb, &s, NULL),
                     KM_OK);
    ck_assert_double_eq(s, -r.mae);
    free(P);

    km_model *back = km_test_round_trip(m);
    ck_assert_double_eq(figure(back, "training_score", 0),
                        figure(m, "training_score", 0));
    ck_assert_double_eq(figure(back, "rkhs_norm_sq", 1),
                        figure(m, "rkhs_norm_sq", 1));
    km_model_free(back);

    /* errors name what is wrong */
    ck_assert_int_eq(km_model_score(m, KM_SCORING_ACCURACY, &pb, &s, &err),
                     KM_EINVAL);
    ck_assert_str_eq(err.message, "scoring accuracy applies to svc, klr, not krr");
    km_problem bad = pb;
    bad.m = 1;
    ck_assert_int_eq(km_model_score(m, KM_SCORING_R2, &bad, &s, &err),
                     KM_EINVAL);
    ck_assert_str_eq(err.message, "y has 1 outputs; the model answers 2");
    bad = pb;
    bad.d = 2;
    ck_assert_int_eq(km_model_score(m, KM_SCORING_R2, &bad, &s, &err),
                     KM_EINVAL);
    ck_assert_str_eq(err.message, "X has 2 features; the model expects 3");
    bad = pb;
    bad.y = NULL;
    ck_assert_int_eq(km_model_score(m, KM_SCORING_R2, &bad, &s, &err),
                     KM_EINVAL);
    km_model_free(m);

    /* the typed fit has rkhs_norm_sq (a number for one output) but no
     * training_score: that is km_fit's */
    ck_assert_int_eq(km_krr_fit(&k, &p, X60, N, D, Y, 1, NULL, &m, NULL),
                     KM_OK);
    const km_info_entry *e = km_info_find(km_model_training(m),
                                          "rkhs_norm_sq");
    ck_assert_ptr_nonnull(e);
    ck_assert_int_eq(e->is_array, 0);
    ck_assert_ptr_null(km_info_find(km_model_training(m), "training_score"));
    km_model_free(m);
    km_kernel_cleanup(&k);
    free(Y);
    free(ref);
}
END_TEST

/* |w| of pair (a, c) from the model's support vectors, coefficients and
 * kernel. */
static double direct_w(const km_model *m, size_t a, size_t c)
{
    const int *ns = km_svc_n_support(m);
    const double *coef = km_svm_dual_coef(m), *sv = km_svm_support_vectors(m);
    size_t k = km_svc_n_classes(m), start[16] = {0};
    for (size_t i = 0; i < k; i++)
        start[i + 1] = start[i] + (size_t)ns[i];
    size_t idx[N], cnt = 0;
    double w[N];
    for (size_t s = start[a]; s < start[a + 1]; s++) {
        idx[cnt] = s;
        w[cnt++] = coef[s * (k - 1) + c - 1];
    }
    for (size_t s = start[c]; s < start[c + 1]; s++) {
        idx[cnt] = s;
        w[cnt++] = coef[s * (k - 1) + a];
    }
    double sum = 0;
    for (size_t i = 0; i < cnt; i++)
        for (size_t j = 0; j < cnt; j++)
            sum += w[i] * w[j] * km_kernel_eval(km_model_kernel(m),
                                                sv + idx[i] * D,
                                                sv + idx[j] * D, D);
    return sqrt(sum);
}

START_TEST(svc_figures)
{
    double *yv = fixture("score_svc_y.txt", N);
    double *ref = fixture("score_svc_ref.txt", 4);
    int *y = as_ints(yv, N);
    km_kernel k;
    rbf(&k);
    km_svm_params p = km_svm_params_default();
    p.tol = 1e-10;
    km_problem pb = {X60, N, D, NULL, 0, y, 3};
    km_model *m = NULL;
    km_error err;
    ck_assert_int_eq(km_fit(KM_ALGO_SVC, &k, &p, NULL, &pb, NULL, &m, &err),
                     KM_OK);
    size_t pair = 0;
    for (size_t a = 0; a < 3; a++)
        for (size_t c = a + 1; c < 3; c++, pair++) {
            double margin = figure(m, "margin", pair);
            near(1 / margin, direct_w(m, a, c), 1e-9,
                 "1/margin against |w| from the coefficients");
            near(1 / margin, ref[pair], 1e-6, "1/margin against sklearn's");
        }

    int pred[N];
    km_class_scores cs;
    double s;
    ck_assert_int_eq(km_predict_labels(m, X60, N, pred, NULL), KM_OK);
    ck_assert_int_eq(km_score_classes(y, pred, NULL, N, 3, &cs, NULL), KM_OK);
    ck_assert_double_eq(figure(m, "training_score", 0), cs.accuracy);
    near(cs.accuracy, ref[3], TIGHT, "training accuracy against sklearn's");
    ck_assert_int_eq(km_model_score(m, KM_SCORING_BALANCED_ACCURACY, &pb, &s,
                                    NULL), KM_OK);
    ck_assert_double_eq(s, cs.balanced_accuracy);
    km_class_scores_cleanup(&cs);
    ck_assert_int_eq(km_model_score(m, KM_SCORING_NEG_LOG_LOSS, &pb, &s, &err),
                     KM_ECONFLICT);
    ck_assert_str_eq(err.message, "model \"\" was fitted without "
                     "params.probability; scoring neg_log_loss needs it");
    static const char *const labels[] = {"0", "1", "2"};
    ck_assert_int_eq(km_model_set_labels(m, labels, 3, 1, NULL), KM_OK);
    km_model *back = km_test_round_trip(m);
    ck_assert_double_eq(figure(back, "margin", 2), figure(m, "margin", 2));
    /* with its labels, the classes are the labels' */
    ck_assert_int_eq(km_model_score(back, KM_SCORING_ACCURACY, &pb, &s, NULL),
                     KM_OK);
    ck_assert_double_eq(s, figure(m, "training_score", 0));
    km_model_free(back);
    km_model_free(m);

    /* with probabilities: neg_log_loss is minus the log_loss of them */
    p.probability = 1;
    p.tol = 1e-3;
    ck_assert_int_eq(km_fit(KM_ALGO_SVC, &k, &p, NULL, &pb, NULL, &m, &err),
                     KM_OK);
    double *proba = malloc(N * 3 * sizeof *proba);
    ck_assert_int_eq(km_predict_labels(m, X60, N, pred, NULL), KM_OK);
    ck_assert_int_eq(km_predict(m, KM_OUT_PROBABILITIES, X60, N, proba, NULL),
                     KM_OK);
    ck_assert_int_eq(km_score_classes(y, pred, proba, N, 3, &cs, NULL), KM_OK);
    ck_assert_int_eq(km_model_score(m, KM_SCORING_NEG_LOG_LOSS, &pb, &s, NULL),
                     KM_OK);
    ck_assert_double_eq(s, -cs.log_loss);
    ck_assert(cs.log_loss > 0);
    km_class_scores_cleanup(&cs);
    free(proba);
    /* labels out of the model's classes */
    y[5] = 3;
    pb.n_classes = 0;
    ck_assert_int_eq(km_model_score(m, KM_SCORING_ACCURACY, &pb, &s, &err),
                     KM_EINVAL);
    ck_assert_str_eq(err.message, "y[5] = 3 is not a class index in [0, 3)");
    km_model_free(m);
    km_kernel_cleanup(&k);
    free(y);
    free(yv);
    free(ref);
}
END_TEST

START_TEST(svr_and_kpca_figures)
{
    double *y = fixture("score_svr_y.txt", N);
    double *ref = fixture("score_svr_ref.txt", 1);
    double *kref = fixture("score_kpca_ref.txt", 1);
    km_kernel k;
    rbf(&k);
    km_svm_params p = km_svm_params_default();
    p.C = 2;
    p.epsilon = 0.05;
    p.tol = 1e-10;
    km_problem pb = {X60, N, D, y, 1, NULL, 0};
    km_model *m = NULL;
    km_error err;
    ck_assert_int_eq(km_fit(KM_ALGO_SVR, &k, &p, NULL, &pb, NULL, &m, &err),
                     KM_OK);
    near(figure(m, "training_score", 0), ref[0], 1e-6,
         "svr training r2 against sklearn's");
    ck_assert_ptr_null(km_info_find(km_model_training(m), "margin"));
    km_model_free(m);

    km_kpca_params kp = km_kpca_params_default();
    kp.n_components = 2;
    kp.alpha = 0.1;
    kp.solver = KM_KPCA_SOLVER_DENSE;
    km_problem pk = {X60, N, D, NULL, 0, NULL, 0};
    double s;
    ck_assert_int_eq(km_fit(KM_ALGO_KPCA, &k, &kp, NULL, &pk, NULL, &m, &err),
                     KM_OK);
    ck_assert_ptr_null(km_info_find(km_model_training(m), "training_score"));
    ck_assert_int_eq(km_model_score(m, KM_SCORING_NEG_RECONSTRUCTION, &pk, &s,
                                    &err), KM_ECONFLICT);
    ck_assert_str_eq(err.message, "model \"\" was fitted without "
                     "params.fit_inverse_transform; scoring "
                     "neg_reconstruction_error needs it");
    km_model_free(m);

    kp.fit_inverse_transform = 1;
    ck_assert_int_eq(km_fit(KM_ALGO_KPCA, &k, &kp, NULL, &pk, NULL, &m, &err),
                     KM_OK);
    /* the score by hand: project, map back, mean squared difference */
    double P[N * 2], R[N * D], sum = 0;
    ck_assert_int_eq(km_predict(m, KM_OUT_PROJECTIONS, X60, N, P, NULL), KM_OK);
    ck_assert_int_eq(km_predict(m, KM_OUT_INVERSE, P, N, R, NULL), KM_OK);
    for (size_t i = 0; i < N * D; i++)
        sum += (X60[i] - R[i]) * (X60[i] - R[i]);
    near(figure(m, "training_score", 0), -sum / (N * D), 1e-13,
         "kpca training score against the reconstruction by hand");
    near(figure(m, "training_score", 0), -kref[0], 1e-9,
         "kpca training score against sklearn's");
    ck_assert_int_eq(km_model_score(m, KM_SCORING_NEG_RECONSTRUCTION, &pk, &s,
                                    NULL), KM_OK);
    ck_assert_double_eq(s, figure(m, "training_score", 0));
    km_model_free(m);
    km_kernel_cleanup(&k);
    free(y);
    free(ref);
    free(kref);
}
END_TEST

/* Beyond KM_SCORE_FIT_ROWS training rows, training_score is the score on
 * the seeded subsample of that many (km_psd_subsample, seed 0), and
 * training_score_rows says how many; up to it, on every row, without
 * training_score_rows. */
START_TEST(training_score_subsample)
{
    enum { BIG = KM_SCORE_FIT_ROWS + 1000 };
    double *X = malloc(BIG * 2 * sizeof *X);
    int *y = malloc(BIG * sizeof *y), *pred = malloc(BIG * sizeof *pred);
    size_t *idx = malloc(KM_SCORE_FIT_ROWS * sizeof *idx);
    km_rng r = {11};
    for (size_t i = 0; i < BIG; i++) { /* two overlapping clouds */
        y[i] = (int)(i % 2);
        X[2 * i] = km_rng_uniform(&r) + 0.4 * y[i];
        X[2 * i + 1] = km_rng_uniform(&r);
    }
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_LINEAR);
    km_svm_params p = km_svm_params_default();
    for (size_t n = KM_SCORE_FIT_ROWS; n <= BIG; n += 1000) {
        km_problem pb = {X, n, 2, NULL, 0, y, 2};
        km_model *m = NULL;
        ck_assert_int_eq(km_fit(KM_ALGO_SVC, &k, &p, NULL, &pb, NULL, &m,
                                NULL), KM_OK);
        ck_assert_int_eq(km_predict_labels(m, X, n, pred, NULL), KM_OK);
        size_t rows = n < KM_SCORE_FIT_ROWS ? n : KM_SCORE_FIT_ROWS;
        ck_assert_int_eq(km_psd_subsample(n, rows, 0, idx), KM_OK);
        size_t right = 0, all = 0;
        for (size_t i = 0; i < rows; i++)
            right += pred[idx[i]] == y[idx[i]];
        for (size_t i = 0; i < n; i++)
            all += pred[i] == y[i];
        ck_assert_double_eq(figure(m, "training_score", 0),
                            (double)right / (double)rows);
        const km_info_entry *e = km_info_find(km_model_training(m),
                                              "training_score_rows");
        if (n > KM_SCORE_FIT_ROWS) {
            ck_assert_msg(e && e->count == 1 && e->values[0] == rows,
                          "training_score_rows");
            ck_assert_uint_ne(right * n, all * rows); /* not the whole set's */
        } else {
            ck_assert_ptr_null(e);
            ck_assert_uint_eq(right, all);
        }
        static const char *const labels[] = {"0", "1"};
        ck_assert_int_eq(km_model_set_labels(m, labels, 2, 1, NULL), KM_OK);
        km_model *back = km_test_round_trip(m);
        ck_assert_int_eq(km_info_find(km_model_training(back),
                                      "training_score_rows") != NULL,
                         e != NULL);
        km_model_free(back);
        km_model_free(m);
    }
    km_kernel_cleanup(&k);
    free(X);
    free(y);
    free(pred);
    free(idx);
}
END_TEST

static Suite *score_suite(void)
{
    Suite *s = suite_create("km_score");
    TCase *tc = tcase_create("metrics");
    tcase_add_test(tc, classes_match_sklearn);
    tcase_add_test(tc, regression_matches_sklearn);
    tcase_add_test(tc, scoring_names_and_checks);
    suite_add_tcase(s, tc);
    tc = tcase_create("models");
    tcase_add_unchecked_fixture(tc, load_x, free_x);
    tcase_add_test(tc, krr_figures);
    tcase_add_test(tc, svc_figures);
    tcase_add_test(tc, svr_and_kpca_figures);
    tcase_add_test(tc, training_score_subsample);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    return s;
}

KM_TEST_MAIN(score_suite)
