/*
 * test_km_klr.c - kernel logistic regression.
 *
 * Against scikit-learn (tests/fixtures/gen_klr_refs.py, klr_*.txt): with
 * the linear kernel klr is LogisticRegression(C = 1/lambda) with
 * w = X^T a, so the weights w = X^T a, the intercepts and the test rows'
 * probabilities must agree within 1e-6 (absolute; the reference's own
 * optimiser stops at a gradient of ~1e-8), for a binary fit with and
 * without the intercept (breast_cancer), a multinomial and a one-vs-rest
 * fit (digits, 10 classes). Accuracy beside SVC: klr (rbf, gamma 1/d,
 * lambda 1e-3) on breast_cancer (400 rows fit, 169 tested) and digits
 * (1200 fit, 597 tested) is within 0.02 of scikit-learn's SVC(C=1) on the
 * same splits (0.982 and 0.943 there). The objective and gradient at the
 * optimum with rbf are checked in numpy over HTTP (tests/integration/
 * klr.py). Also: probabilities sum to 1 and their argmax is the label,
 * the checks' messages, a single class, cancellation and progress, the
 * model file round trip (same answers to the bit; corrupt payloads
 * refused), km_fit equal to km_klr_fit to the bit, and the estimate.
 *
 * The nystrom solver: against scikit-learn's Nystroem features of the
 * same centres (core's seeded draw, redone in gen_klr_refs.py) followed
 * by LogisticRegression: probabilities and intercepts within 1e-6
 * (binary with and without the intercept, multinomial, ovr); with every
 * row a centre, the exact solver's decision values within 1e-6; its
 * checks, rpcholesky centres, progress and cancel, and its estimate.
 */
#include "../check_main.h"
#include "../testdata.h"
#include "km.h"

#define TOL 1e-6

static const double *figure(const km_info *info, const char *key)
{
    const km_info_entry *e = km_info_find(info, key);
    ck_assert_msg(e != NULL, "figure %s missing", key);
    return e->values;
}

/* Labels of ds as class indices (numbers 0 .. k-1 in these data sets). */
static int *labels_of(const km_dataset *ds, size_t n, size_t *k)
{
    int *y = malloc(n * sizeof *y);
    *k = 0;
    for (size_t i = 0; i < n; i++) {
        y[i] = (int)ds->y[i];
        if ((size_t)y[i] + 1 > *k)
            *k = (size_t)y[i] + 1;
    }
    return y;
}

static void set_labels(km_model *m, size_t k)
{
    char buf[16][24];
    const char *names[16];
    for (size_t c = 0; c < k; c++) {
        snprintf(buf[c], sizeof buf[c], "%zu", c);
        names[c] = buf[c];
    }
    ck_assert_int_eq(km_model_set_labels(m, names, k, 1, NULL), KM_OK);
}

static km_model *fit(const km_kernel *k, const km_klr_params *p,
                     const double *X, size_t n, size_t d, const int *y,
                     size_t nc)
{
    km_model *m = NULL;
    km_error err = {0};
    ck_assert_msg(km_klr_fit(k, p, X, n, d, y, nc, NULL, &m, &err) == KM_OK,
                  "%s", err.message);
    set_labels(m, nc);
    return m;
}

/* ------------------------------------------------------------ linear */

/* The weights w_c = X^T a_c, from decision values: f(e_j) - f(0) for the
 * unit vectors e_j, and b = f(0). */
static void weights(const km_model *m, size_t d, double *w, double *b)
{
    size_t q = km_model_n_outputs(m);
    double *E = calloc((d + 1) * d, sizeof *E), *F = malloc((d + 1) * q *
                                                            sizeof *F);
    for (size_t j = 0; j < d; j++)
        E[(j + 1) * d + j] = 1;
    ck_assert_int_eq(km_klr_decision(m, E, d + 1, F, NULL), KM_OK);
    for (size_t c = 0; c < q; c++) {
        b[c] = F[c];
        for (size_t j = 0; j < d; j++)
            w[c * d + j] = F[(j + 1) * q + c] - F[c];
    }
    free(E);
    free(F);
}

static double max_abs_diff(const double *a, const double *b, size_t n)
{
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        double e = fabs(a[i] - b[i]);
        if (!(e <= worst))
            worst = e;
    }
    return worst;
}

/* The first n_rows of file scaled by the first n_fit; their labels (k
 * classes) and d. */
static int *load_case(const char *file, size_t n_rows, size_t n_fit,
                      km_dataset *ds, size_t *k, size_t *d)
{
    ck_assert_int_eq(km_dataset_load(file, n_rows, ds), 0);
    km_dataset_scale(ds, n_fit);
    *d = ds->d;
    return labels_of(ds, n_fit, k);
}

/* The nt rows T's k class probabilities within TOL of the reference rp;
 * each row sums to 1 and its argmax is the label. */
static void check_probabilities(const km_model *m, const double *T,
                                size_t nt, size_t k, const double *rp,
                                const char *tag)
{
    double *P = malloc(nt * k * sizeof *P);
    int *lab = malloc(nt * sizeof *lab);
    ck_assert_int_eq(km_klr_probability(m, T, nt, P, NULL), KM_OK);
    double e = max_abs_diff(P, rp, nt * k);
    ck_assert_msg(e <= TOL, "%s: probabilities off by %g", tag, e);
    ck_assert_int_eq(km_klr_predict(m, T, nt, lab, NULL), KM_OK);
    for (size_t i = 0; i < nt; i++) {
        double s = 0;
        size_t best = 0;
        for (size_t c = 0; c < k; c++) {
            s += P[i * k + c];
            best = P[i * k + c] > P[i * k + best] ? c : best;
        }
        ck_assert_msg(fabs(s - 1) <= 1e-12, "%s: row %zu sums to %.17g",
                      tag, i, s);
        ck_assert_int_eq(lab[i], (int)best);
    }
    free(P);
    free(lab);
}

/* One case of gen_klr_refs.py. */
static void linear_case(const char *file, size_t n_rows, size_t n_fit,
                        const char *tag, double lambda, int intercept,
                        km_klr_multi multi, size_t q_want)
{
    km_dataset ds;
    size_t k, d, nt = n_rows - n_fit;
    int *y = load_case(file, n_rows, n_fit, &ds, &k, &d);
    km_kernel kern;
    km_kernel_init(&kern, KM_KERNEL_LINEAR);
    km_klr_params p = km_klr_params_default();
    p.lambda = lambda;
    p.fit_intercept = intercept;
    p.multi_class = multi;
    p.tol = 1e-10;
    p.max_iter = 1000; /* multinomial sweeps converge linearly: ~150 here */
    km_model *m = fit(&kern, &p, ds.X, n_fit, d, y, k);
    size_t q = km_model_n_outputs(m);
    ck_assert_uint_eq(q, q_want);
    ck_assert_msg(figure(km_model_training(m), "gradient_norm")[0] <= 1e-10,
                  "%s: gradient %g", tag,
                  figure(km_model_training(m), "gradient_norm")[0]);

    char name[64];
    size_t nw, nb, np;
    snprintf(name, sizeof name, "klr_%s_coef.txt", tag);
    double *rw = km_read_fixture(name, &nw);
    snprintf(name, sizeof name, "klr_%s_intercept.txt", tag);
    double *rb = km_read_fixture(name, &nb);
    snprintf(name, sizeof name, "klr_%s_proba.txt", tag);
    double *rp = km_read_fixture(name, &np);
    ck_assert_uint_eq(nw, q * d);
    ck_assert_uint_eq(nb, q);
    ck_assert_uint_eq(np, nt * k);

    double *w = malloc(q * d * sizeof *w), *b = malloc(q * sizeof *b);
    weights(m, d, w, b);
    double e = max_abs_diff(w, rw, q * d);
    ck_assert_msg(e <= TOL, "%s: w = X^T a off by %g", tag, e);
    e = max_abs_diff(b, rb, q);
    ck_assert_msg(e <= TOL, "%s: intercepts off by %g", tag, e);

    check_probabilities(m, ds.X + n_fit * d, nt, k, rp, tag);
    free(w);
    free(b);
    free(rw);
    free(rb);
    free(rp);
    free(y);
    km_model_free(m);
    km_dataset_free(&ds);
}

START_TEST(linear_binary)
{
    linear_case("breast_cancer.csv", 400, 300, "bin", 0.5, 1,
                KM_KLR_MULTINOMIAL, 1);
}
END_TEST

START_TEST(linear_binary_no_intercept)
{
    linear_case("breast_cancer.csv", 400, 300, "bin_noint", 0.5, 0,
                KM_KLR_MULTINOMIAL, 1);
}
END_TEST

START_TEST(linear_multinomial)
{
    linear_case("digits.csv", 500, 400, "multi", 2.0, 1, KM_KLR_MULTINOMIAL,
                10);
}
END_TEST

START_TEST(linear_ovr)
{
    linear_case("digits.csv", 500, 400, "ovr", 2.0, 1, KM_KLR_OVR, 10);
}
END_TEST

/* ------------------------------------------------------------ nystrom */

/* One nystrom case of gen_klr_refs.py: core's seeded uniform centres (m
 * of the first n_fit rows), rbf with gamma 1/d; the intercepts and the
 * test rows' probabilities against scikit-learn's Nystroem features of
 * the same centres and LogisticRegression (TOL). */
static void nystrom_case(const char *file, size_t n_rows, size_t n_fit,
                         const char *tag, size_t m_centres, uint64_t seed,
                         double lambda, int intercept, km_klr_multi multi)
{
    km_dataset ds;
    size_t k, d, nt = n_rows - n_fit;
    int *y = load_case(file, n_rows, n_fit, &ds, &k, &d);
    km_kernel kern;
    km_kernel_init(&kern, KM_KERNEL_RBF);
    kern.gamma = 1.0 / (double)d;
    km_klr_params p = km_klr_params_default();
    p.lambda = lambda;
    p.fit_intercept = intercept;
    p.multi_class = multi;
    p.tol = 1e-10;
    p.solver = KM_KLR_SOLVER_NYSTROM;
    p.n_centres = m_centres;
    p.seed = seed;
    km_model *m = fit(&kern, &p, ds.X, n_fit, d, y, k);
    const km_info *ti = km_model_training(m);
    ck_assert_msg(figure(ti, "gradient_norm")[0] <= 1e-10, "%s: gradient %g",
                  tag, figure(ti, "gradient_norm")[0]);
    ck_assert_uint_eq(km_model_n_samples(m), m_centres);
    ck_assert(figure(km_model_params(m), "n_centres")[0] == (double)m_centres);
    ck_assert(figure(km_model_params(m), "solver")[0] == KM_KLR_SOLVER_NYSTROM);
    ck_assert(figure(ti, "factorizations")[0] >= 1);
    fprintf(stderr, "klr nystrom %s: %g Newton steps, %g CG products, %g "
            "factorisations\n", tag, figure(ti, "iterations")[0],
            figure(ti, "cg_iterations")[0], figure(ti, "factorizations")[0]);

    char name[64];
    size_t nb, np;
    snprintf(name, sizeof name, "klr_%s_intercept.txt", tag);
    double *rb = km_read_fixture(name, &nb);
    snprintf(name, sizeof name, "klr_%s_proba.txt", tag);
    double *rp = km_read_fixture(name, &np);
    size_t q = km_model_n_outputs(m);
    ck_assert_uint_eq(nb, q);
    ck_assert_uint_eq(np, nt * k);
    /* b = f(x) - sum_j c_j k(z_j, x), from the decision value at a point
     * far from every centre (the kernel values there underflow to 0) */
    double far[64], *b = malloc(q * sizeof *b);
    ck_assert_uint_le(d, 64);
    for (size_t j = 0; j < d; j++)
        far[j] = 1e3;
    ck_assert_int_eq(km_klr_decision(m, far, 1, b, NULL), KM_OK);
    double e = max_abs_diff(b, rb, q);
    ck_assert_msg(e <= TOL, "%s: intercepts off by %g", tag, e);
    check_probabilities(m, ds.X + n_fit * d, nt, k, rp, tag);
    free(b);
    free(rb);
    free(rp);
    free(y);
    km_model_free(m);
    km_dataset_free(&ds);
}

START_TEST(nystrom_against_sklearn)
{
    if (_i < 2)
        nystrom_case("breast_cancer.csv", 400, 300,
                     _i ? "nys_bin_noint" : "nys_bin", 60, 3, 0.05, !_i,
                     KM_KLR_MULTINOMIAL);
    else
        nystrom_case("digits.csv", 500, 400,
                     _i == 2 ? "nys_multi" : "nys_ovr", 100, 5, 0.5, 1,
                     _i == 2 ? KM_KLR_MULTINOMIAL : KM_KLR_OVR);
}
END_TEST

/* With every row a centre the nystrom solver solves the exact problem:
 * decision values on held-out rows equal the exact solver's within TOL
 * (binary breast_cancer, multinomial and ovr digits; rbf). */
START_TEST(nystrom_all_rows_is_exact)
{
    const char *file = _i ? "digits.csv" : "breast_cancer.csv";
    size_t n_fit = 250, nt = 100, d, k;
    km_dataset ds;
    int *y = load_case(file, n_fit + nt, n_fit, &ds, &k, &d);
    km_kernel kern;
    km_kernel_init(&kern, KM_KERNEL_RBF);
    kern.gamma = 1.0 / (double)d;
    km_klr_params p = km_klr_params_default();
    p.lambda = _i ? 0.1 : 0.01;
    p.tol = 1e-10;
    p.max_iter = 2000; /* the exact multinomial sweeps converge linearly */
    p.multi_class = _i == 2 ? KM_KLR_OVR : KM_KLR_MULTINOMIAL;
    km_model *ex = fit(&kern, &p, ds.X, n_fit, d, y, k);
    p.solver = KM_KLR_SOLVER_NYSTROM;
    p.n_centres = n_fit;
    km_model *ny = fit(&kern, &p, ds.X, n_fit, d, y, k);
    size_t q = km_model_n_outputs(ex);
    ck_assert_uint_eq(km_model_n_outputs(ny), q);
    ck_assert_uint_eq(km_model_n_samples(ny), n_fit);
    double *f1 = malloc(nt * q * sizeof *f1), *f2 = malloc(nt * q * sizeof *f2);
    ck_assert_int_eq(km_klr_decision(ex, ds.X + n_fit * d, nt, f1, NULL),
                     KM_OK);
    ck_assert_int_eq(km_klr_decision(ny, ds.X + n_fit * d, nt, f2, NULL),
                     KM_OK);
    double e = max_abs_diff(f1, f2, nt * q);
    ck_assert_msg(e <= TOL, "%s: nystrom with m = n off the exact optimum by "
                  "%g", file, e);
    double o1 = figure(km_model_training(ex), "objective")[0];
    double o2 = figure(km_model_training(ny), "objective")[0];
    ck_assert_msg(fabs(o1 - o2) <= 1e-6 * fabs(o1), "objectives %.17g %.17g",
                  o1, o2);
    free(f1);
    free(f2);
    free(y);
    km_model_free(ex);
    km_model_free(ny);
    km_dataset_free(&ds);
}
END_TEST

/* ------------------------------------------------------------ accuracy */

/* klr's test accuracy (rbf, gamma 1/d, lambda 1e-3) on rows [n_fit, n)
 * of file, fitted on the rows before. */
static double accuracy(const char *file, size_t n_fit)
{
    km_dataset ds;
    ck_assert_int_eq(km_dataset_load(file, (size_t)-1, &ds), 0);
    km_dataset_scale(&ds, n_fit);
    size_t k, n = ds.n, d = ds.d;
    ck_assert_uint_gt(n, n_fit);
    int *y = labels_of(&ds, n, &k);
    km_kernel kern;
    km_kernel_init(&kern, KM_KERNEL_RBF);
    km_klr_params p = km_klr_params_default();
    p.lambda = 1e-3;
    p.tol = 1e-6;
    km_model *m = fit(&kern, &p, ds.X, n_fit, d, y, k);
    int *lab = malloc((n - n_fit) * sizeof *lab);
    ck_assert_int_eq(km_klr_predict(m, ds.X + n_fit * d, n - n_fit, lab,
                                    NULL), KM_OK);
    size_t right = 0;
    for (size_t i = n_fit; i < n; i++)
        right += lab[i - n_fit] == y[i];
    free(lab);
    free(y);
    km_model_free(m);
    km_dataset_free(&ds);
    return (double)right / (double)(n - n_fit);
}

START_TEST(accuracy_beside_svc)
{
    size_t na;
    double *svc = km_read_fixture("klr_accuracy.txt", &na);
    ck_assert_uint_eq(na, 2);
    double bc = accuracy("breast_cancer.csv", 400);
    double dg = accuracy("digits.csv", 1200);
    fprintf(stderr, "klr accuracy: breast_cancer %.4f (svc %.4f), digits "
            "%.4f (svc %.4f)\n", bc, svc[0], dg, svc[1]);
    ck_assert_msg(bc >= svc[0] - 0.02, "breast_cancer: klr %.4f, svc %.4f",
                  bc, svc[0]);
    ck_assert_msg(dg >= svc[1] - 0.02, "digits: klr %.4f, svc %.4f", dg,
                  svc[1]);
    free(svc);
}
END_TEST

/* ------------------------------------------------------------ small */

/* Three clusters in 2-D: 60 rows, classes 0, 1, 2 (or 0, 1 with two). */
static void blobs(double *X, int *y, size_t n, int k)
{
    km_rng r = {42};
    for (size_t i = 0; i < n; i++) {
        int c = (int)(i % (size_t)k);
        y[i] = c;
        X[2 * i] = 1.5 * c + 0.8 * km_rng_uniform(&r);
        X[2 * i + 1] = (c == 1 ? 1.0 : -0.5) + 0.8 * km_rng_uniform(&r);
    }
}

START_TEST(checks_name_the_field)
{
    km_klr_params p = km_klr_params_default();
    km_error err = {0};
    ck_assert_int_eq(km_klr_check(&p, 100, 3, &err), KM_OK);
    ck_assert(p.lambda == 1.0 && p.tol == 1e-8 && p.max_iter == 100 &&
              p.fit_intercept == 1 && p.multi_class == KM_KLR_MULTINOMIAL);
    p.lambda = 0;
    ck_assert_int_eq(km_klr_check(&p, 100, 2, &err), KM_EINVAL);
    ck_assert_str_eq(err.message, "params.lambda must be a finite number > 0");
    p.lambda = INFINITY;
    ck_assert_int_eq(km_klr_check(&p, 100, 2, &err), KM_EINVAL);
    p = km_klr_params_default();
    p.tol = -1;
    ck_assert_int_eq(km_klr_check(&p, 100, 2, &err), KM_EINVAL);
    ck_assert_str_eq(err.message, "params.tol must be a finite number > 0");
    p = km_klr_params_default();
    p.max_iter = 0;
    ck_assert_int_eq(km_klr_check(&p, 100, 2, &err), KM_EINVAL);
    ck_assert_str_eq(err.message, "params.max_iter must be in [1, 100000]");
    p.max_iter = KM_KLR_MAX_ITER + 1;
    ck_assert_int_eq(km_klr_check(&p, 100, 2, &err), KM_EINVAL);
    p = km_klr_params_default();
    p.fit_intercept = 2;
    ck_assert_int_eq(km_klr_check(&p, 100, 2, &err), KM_EINVAL);
    ck_assert_str_eq(err.message,
                     "params.fit_intercept must be true or false");
    p = km_klr_params_default();
    p.multi_class = KM_KLR_MULTI_COUNT;
    ck_assert_int_eq(km_klr_check(&p, 100, 2, &err), KM_EINVAL);
    ck_assert_str_eq(err.message,
                     "params.multi_class must be multinomial or ovr");
    ck_assert_str_eq(km_klr_multi_name(KM_KLR_OVR), "ovr");
    ck_assert_ptr_null(km_klr_multi_name(KM_KLR_MULTI_COUNT));
    p = km_klr_params_default();
    p.solver = KM_KLR_SOLVER_COUNT;
    ck_assert_int_eq(km_klr_check(&p, 100, 2, &err), KM_EINVAL);
    ck_assert_str_eq(err.message, "params.solver must be exact or nystrom");
    ck_assert_str_eq(km_klr_solver_name(KM_KLR_SOLVER_NYSTROM), "nystrom");
    ck_assert_ptr_null(km_klr_solver_name(KM_KLR_SOLVER_COUNT));
    p.solver = KM_KLR_SOLVER_NYSTROM;
    p.n_centres = 101;
    ck_assert_int_eq(km_klr_check(&p, 100, 2, &err), KM_EPROBLEM);
    ck_assert_str_eq(err.message, "params.n_centres is 101 but X has 100 "
                     "rows: at most one centre per row");
    p.n_centres = 100;
    ck_assert_int_eq(km_klr_check(&p, 100, 2, &err), KM_OK);
    p.seed = ((uint64_t)1 << 53) + 1;
    ck_assert_int_eq(km_klr_check(&p, 100, 2, &err), KM_EINVAL);
    ck_assert_str_eq(err.message, "params.seed must be at most 2^53");
    p.seed = 0;
    p.centres = KM_KRR_CENTRES_COUNT;
    ck_assert_int_eq(km_klr_check(&p, 100, 2, &err), KM_EINVAL);
    ck_assert_str_eq(err.message,
                     "params.centres must be uniform or rpcholesky");

    /* one class: 422's status, from km_fit's validation and the check */
    p = km_klr_params_default();
    ck_assert_int_eq(km_klr_check(&p, 100, 1, &err), KM_EPROBLEM);
    double X[120];
    int y[60];
    blobs(X, y, 60, 2);
    for (size_t i = 0; i < 60; i++)
        y[i] = 0;
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_RBF);
    km_model *m = NULL;
    ck_assert_int_eq(km_klr_fit(&k, &p, X, 60, 2, y, 1, NULL, &m, &err),
                     KM_EPROBLEM);
    ck_assert_str_eq(err.message, "y has 1 distinct class; klr needs at "
                     "least 2");
    /* a class index without rows */
    ck_assert_int_eq(km_klr_fit(&k, &p, X, 60, 2, y, 2, NULL, &m, &err),
                     KM_EPROBLEM);
    ck_assert_str_eq(err.message, "class 1 has no rows in y");
    ck_assert_ptr_null(m);
}
END_TEST

/* km_fit through the descriptor gives km_klr_fit's model to the bit. */
START_TEST(generic_fit_is_typed_fit)
{
    double X[120];
    int y[60];
    blobs(X, y, 60, 3);
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_RBF);
    km_klr_params p = km_klr_params_default();
    p.lambda = 0.1;
    km_model *a = NULL, *b = NULL;
    ck_assert_int_eq(km_klr_fit(&k, &p, X, 60, 2, y, 3, NULL, &a, NULL),
                     KM_OK);
    km_problem pb = {X, 60, 2, NULL, 0, y, 3};
    ck_assert_int_eq(km_fit(KM_ALGO_KLR, &k, &p, NULL, &pb, NULL, &b, NULL),
                     KM_OK);
    double fa[180], fb[180];
    ck_assert_int_eq(km_klr_decision(a, X, 60, fa, NULL), KM_OK);
    ck_assert_int_eq(km_predict(b, KM_OUT_SCORES, X, 60, fb, NULL), KM_OK);
    ck_assert(memcmp(fa, fb, sizeof fa) == 0);
    ck_assert_uint_eq(km_algorithm_outputs(KM_ALGO_KLR),
                      KM_OUT_LABELS | KM_OUT_SCORES | KM_OUT_PROBABILITIES);
    ck_assert_uint_eq(km_model_score_columns(b, NULL), 3);
    ck_assert_uint_eq(km_model_n_classes(b), 3);
    ck_assert_uint_eq(km_algorithm_fit_bytes(KM_ALGO_KLR, &p, &pb),
                      km_klr_fit_bytes(60, 2, 3, &p));
    /* the training score: accuracy, as km_model_score gives it */
    ck_assert_ptr_nonnull(km_info_find(km_model_training(b),
                                       "training_score"));
    ck_assert(figure(km_model_params(b), "lambda")[0] == 0.1);
    ck_assert(figure(km_model_training(b), "gradient_norm")[0] <= 1e-8);
    ck_assert(figure(km_model_training(b), "iterations")[0] >= 1);
    km_model_free(a);
    km_model_free(b);
}
END_TEST

/* Binary: one decision value per row, positive for the second class, and
 * P(second) = sigmoid of it; the score columns' sign needs no flip. */
START_TEST(binary_decision)
{
    double X[120], f[60], P[120];
    int y[60], lab[60];
    blobs(X, y, 60, 2);
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_RBF);
    km_klr_params p = km_klr_params_default();
    km_model *m = fit(&k, &p, X, 60, 2, y, 2);
    double sign = 0;
    ck_assert_uint_eq(km_model_score_columns(m, &sign), 1);
    ck_assert(sign == 1.0);
    ck_assert_int_eq(km_klr_decision(m, X, 60, f, NULL), KM_OK);
    ck_assert_int_eq(km_klr_probability(m, X, 60, P, NULL), KM_OK);
    ck_assert_int_eq(km_klr_predict(m, X, 60, lab, NULL), KM_OK);
    for (size_t i = 0; i < 60; i++) {
        ck_assert(fabs(P[2 * i + 1] - 1 / (1 + exp(-f[i]))) <= 1e-15);
        ck_assert_int_eq(lab[i], f[i] > 0);
    }
    km_model_free(m);
}
END_TEST

/* Save and load: the same answers to the bit; the payload's counts and
 * numbers are checked. */
START_TEST(file_round_trip)
{
    double X[120], f1[180], f2[180];
    int y[60];
    blobs(X, y, 60, 3);
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_RBF);
    km_klr_params p = km_klr_params_default();
    p.multi_class = _i ? KM_KLR_OVR : KM_KLR_MULTINOMIAL;
    km_model *m = fit(&k, &p, X, 60, 2, y, 3), *back = NULL;
    unsigned char *buf = NULL;
    size_t len = 0;
    km_error err = {0};
    ck_assert_int_eq(km_model_save_buffer(m, &buf, &len, &err), KM_OK);
    ck_assert_int_eq(km_model_load_buffer(buf, len, &back, &err), KM_OK);
    ck_assert_int_eq(km_klr_probability(m, X, 60, f1, NULL), KM_OK);
    ck_assert_int_eq(km_klr_probability(back, X, 60, f2, NULL), KM_OK);
    ck_assert(memcmp(f1, f2, sizeof f1) == 0);
    ck_assert_uint_eq(km_model_bytes(back), km_model_bytes(m));
    km_model_free(back);
    km_model_free(m);
    free(buf);
}
END_TEST

static int cancel_at(void *ctx, double f)
{
    double *log = ctx;
    ck_assert_msg(f >= log[0], "progress went back: %g after %g", f, log[0]);
    log[0] = f;
    return log[1] >= 0 && f >= log[1];
}

/* Progress never goes back and ends at 1; a cancel stops the fit with
 * KM_ECANCELLED, at the start or between Newton steps (exact, then
 * nystrom: 0.1 is where its features are done). */
START_TEST(progress_and_cancel)
{
    double X[600];
    int y[300];
    blobs(X, y, 300, 3);
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_RBF);
    km_klr_params p = km_klr_params_default();
    p.lambda = 1e-3;
    if (_i) {
        p.solver = KM_KLR_SOLVER_NYSTROM;
        p.n_centres = 100;
    }
    double log[2] = {0, -1};
    km_fit_control ctl = {cancel_at, log};
    km_model *m = NULL;
    km_error err = {0};
    ck_assert_int_eq(km_klr_fit(&k, &p, X, 300, 2, y, 3, &ctl, &m, &err),
                     KM_OK);
    ck_assert(log[0] == 1.0);
    km_model_free(m);
    m = NULL;
    double stops[] = {0.0, 0.1, 0.5};
    for (size_t i = 0; i < 3; i++) {
        double l2[2] = {0, stops[i]};
        km_fit_control c2 = {cancel_at, l2};
        ck_assert_int_eq(km_klr_fit(&k, &p, X, 300, 2, y, 3, &c2, &m, &err),
                         KM_ECANCELLED);
        ck_assert_ptr_null(m);
    }
}
END_TEST

START_TEST(wrong_algorithm)
{
    double X[120], out[120];
    int y[60];
    blobs(X, y, 60, 2);
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_RBF);
    km_krr_params kp = km_krr_params_default();
    double yv[60] = {0};
    km_model *m = NULL;
    km_error err = {0};
    ck_assert_int_eq(km_krr_fit(&k, &kp, X, 60, 2, yv, 1, NULL, &m, NULL),
                     KM_OK);
    ck_assert_int_eq(km_klr_decision(m, X, 60, out, &err), KM_ECONFLICT);
    ck_assert_int_eq(km_klr_predict(m, X, 60, y, &err), KM_ECONFLICT);
    ck_assert_int_eq(km_model_n_classes(m), 0);
    km_model_free(m);
}
END_TEST

START_TEST(fit_bytes)
{
    size_t n = 5000, nn = n * n * 8;
    km_klr_params p = km_klr_params_default();
    size_t b = km_klr_fit_bytes(n, 20, 2, &p);
    ck_assert_uint_gt(b, nn);
    ck_assert_uint_lt(b, nn + 100 * n * 8);
    ck_assert_uint_gt(km_klr_fit_bytes(n, 20, 10, &p), b);
    ck_assert_uint_eq(km_klr_fit_bytes((size_t)1 << 40, 20, 2, &p), SIZE_MAX);
    /* nystrom: Phi (8 n m), q factors of (m + 1)^2, O(n q) more: m = 1000
     * at n = 5000 (the default rule) */
    p.solver = KM_KLR_SOLVER_NYSTROM;
    size_t m = 1000, nm = n * m * 8;
    b = km_klr_fit_bytes(n, 20, 2, &p);
    ck_assert_uint_gt(b, nm + m * m * 8);
    ck_assert_uint_lt(b, nm + 4 * m * m * 8 + 100 * n * 8);
    ck_assert_uint_gt(km_klr_fit_bytes(n, 20, 10, &p), b + 9 * m * m * 8);
    p.centres = KM_KRR_CENTRES_RPCHOLESKY; /* its n x m factor besides */
    ck_assert_uint_gt(km_klr_fit_bytes(n, 20, 2, &p), b + nm);
    ck_assert_uint_eq(km_klr_fit_bytes((size_t)1 << 62, 20, 2, &p), SIZE_MAX);
}
END_TEST

/* rpcholesky centres: the model keeps at most m of them, the figure says
 * the rule, and the fit classifies the blobs. */
START_TEST(nystrom_rpcholesky)
{
    double X[600];
    int y[300], lab[300];
    blobs(X, y, 300, 3);
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_RBF);
    km_klr_params p = km_klr_params_default();
    p.lambda = 1e-2;
    p.solver = KM_KLR_SOLVER_NYSTROM;
    p.centres = KM_KRR_CENTRES_RPCHOLESKY;
    p.n_centres = 30;
    p.seed = 9;
    km_model *m = fit(&k, &p, X, 300, 2, y, 3);
    ck_assert_uint_le(km_model_n_samples(m), 30);
    ck_assert(figure(km_model_params(m), "centres")[0] ==
              KM_KRR_CENTRES_RPCHOLESKY);
    ck_assert_int_eq(km_klr_predict(m, X, 300, lab, NULL), KM_OK);
    size_t right = 0;
    for (size_t i = 0; i < 300; i++)
        right += lab[i] == y[i];
    ck_assert_uint_ge(right, 270);
    km_model_free(m);
}
END_TEST

static Suite *klr_suite(void)
{
    Suite *s = suite_create("km_klr");
    TCase *tc = tcase_create("klr");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, linear_binary);
    tcase_add_test(tc, linear_binary_no_intercept);
    tcase_add_test(tc, linear_multinomial);
    tcase_add_test(tc, linear_ovr);
    tcase_add_test(tc, accuracy_beside_svc);
    tcase_add_test(tc, checks_name_the_field);
    tcase_add_test(tc, generic_fit_is_typed_fit);
    tcase_add_test(tc, binary_decision);
    tcase_add_loop_test(tc, file_round_trip, 0, 2);
    tcase_add_loop_test(tc, progress_and_cancel, 0, 2);
    tcase_add_test(tc, wrong_algorithm);
    tcase_add_test(tc, fit_bytes);
    tcase_add_loop_test(tc, nystrom_against_sklearn, 0, 4);
    tcase_add_loop_test(tc, nystrom_all_rows_is_exact, 0, 3);
    tcase_add_test(tc, nystrom_rpcholesky);
    suite_add_tcase(s, tc);
    return s;
}

KM_TEST_MAIN(klr_suite)
