/*
 * test_km_gpr.c - Gaussian-process regression against scikit-learn's
 * GaussianProcessRegressor (tests/fixtures/gen_gpr_refs.py): predictive
 * mean, std, covariance and log marginal likelihood within 1e-8 relative
 * with fixed hyperparameters (with and without normalize_y), the
 * optimizer's optimum within 1e-4 in log-parameters from the same start;
 * the likelihood's gradient against central finite differences; the
 * checks' messages; cancellation; save and load giving the same answers
 * bit for bit and every payload number checked on load; km_fit equal to
 * km_gpr_fit to the bit.
 */
#include <stdint.h>

#include "../check_main.h"
#include "model_bytes.h"
#include "km.h"
#include "model/km_model_internal.h"
#include "algorithms/km_algorithms_internal.h"

#define FLOOR 1e-3
#define TOL 1e-8
#define NX 80
#define NT 30
#define DIM 3

static double *X, *T, *Y;

static void load_data(void)
{
    size_t n;
    X = km_read_fixture("gpr_X.txt", &n);
    ck_assert_uint_eq(n, NX * DIM);
    T = km_read_fixture("gpr_T.txt", &n);
    ck_assert_uint_eq(n, NT * DIM);
    Y = km_read_fixture("gpr_y.txt", &n);
    ck_assert_uint_eq(n, NX);
}

static void free_data(void)
{
    free(X);
    free(T);
    free(Y);
}

static km_kernel rbf_l(double l)
{
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_RBF);
    k.gamma = 1.0 / (2.0 * l * l);
    return k;
}

static km_model *fit_ok(const km_kernel *k, const km_gpr_params *p)
{
    km_model *m = NULL;
    km_error err = {0};
    ck_assert_msg(km_gpr_fit(k, p, X, NX, DIM, Y, NULL, &m, &err) == KM_OK,
                  "%s", err.message);
    return m;
}

static double figure(const km_info *info, const char *key)
{
    const km_info_entry *e = km_info_find(info, key);
    ck_assert_msg(e != NULL, "no figure %s", key);
    return e->values[0];
}

static void compare(const char *what, const double *got, const char *file,
                    size_t n, double tol)
{
    size_t nr;
    double *ref = km_read_fixture(file, &nr);
    ck_assert_uint_eq(nr, n);
    double e = km_max_rel_err(got, ref, n, FLOOR);
    ck_assert_msg(e <= tol, "%s: off by %g relative (tolerance %g)", what, e,
                  tol);
    free(ref);
}

/* gen_gpr_refs.py's CASES. */
static const struct {
    const char *name;
    double s, l, noise;
    int normalize;
} cases[] = {
    {"a", 2.0, 1.3, 0.05, 0},
    {"b", 0.7, 0.8, 0.01, 1},
};

START_TEST(fixed_against_sklearn)
{
    load_data();
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        km_kernel k = rbf_l(cases[c].l);
        km_gpr_params p = km_gpr_params_default();
        p.noise = cases[c].noise;
        p.signal_variance = cases[c].s;
        p.normalize_y = cases[c].normalize;
        km_model *m = fit_ok(&k, &p);
        double mean[NT], var[NT], sd[NT], cov[64], file[NT], lml;
        char name[64], what[64];
        ck_assert_int_eq(km_gpr_predict(m, T, NT, mean, NULL), KM_OK);
        ck_assert_int_eq(km_gpr_variance(m, T, NT, var, NULL), KM_OK);
        ck_assert_int_eq(km_gpr_covariance(m, T, 8, cov, NULL), KM_OK);
        for (size_t i = 0; i < NT; i++)
            sd[i] = sqrt(var[i]);
        snprintf(name, sizeof name, "gpr_%s_mean.txt", cases[c].name);
        snprintf(what, sizeof what, "case %s: mean", cases[c].name);
        compare(what, mean, name, NT, TOL);
        snprintf(name, sizeof name, "gpr_%s_std.txt", cases[c].name);
        snprintf(what, sizeof what, "case %s: std", cases[c].name);
        compare(what, sd, name, NT, TOL);
        snprintf(name, sizeof name, "gpr_%s_cov.txt", cases[c].name);
        snprintf(what, sizeof what, "case %s: cov", cases[c].name);
        compare(what, cov, name, 64, TOL);
        lml = figure(km_model_training(m), "log_marginal_likelihood");
        snprintf(name, sizeof name, "gpr_%s_lml.txt", cases[c].name);
        snprintf(what, sizeof what, "case %s: lml", cases[c].name);
        compare(what, &lml, name, 1, TOL);
        /* the generic predict gives the typed answers; the covariance's
         * diagonal is the variances */
        ck_assert_int_eq(km_predict(m, KM_OUT_VARIANCES, T, NT, file, NULL),
                         KM_OK);
        ck_assert_mem_eq(file, var, sizeof var);
        for (size_t i = 0; i < 8; i++)
            ck_assert_double_eq_tol(cov[i * 8 + i], var[i], 1e-12);
        ck_assert_double_eq(figure(km_model_params(m), "noise"),
                            cases[c].noise);
        ck_assert_double_eq(figure(km_model_params(m), "normalize_y"),
                            cases[c].normalize);
        km_model_free(m);
    }
    free_data();
}
END_TEST

/* The optimizer's optimum, as sklearn's theta (log s, log l, log noise)
 * with l = 1/sqrt(2 gamma). */
static void optimum_of(const km_model *m, double th[3])
{
    th[0] = log(figure(km_model_training(m), "signal_variance"));
    th[1] = -0.5 * log(2.0 * km_model_kernel(m)->gamma);
    th[2] = log(figure(km_model_training(m), "noise"));
    ck_assert_double_eq(figure(km_model_training(m), "gamma"),
                        km_model_kernel(m)->gamma);
}

START_TEST(optimizer_against_sklearn)
{
    load_data();
    for (int norm = 0; norm < 2; norm++) {
        km_kernel k = rbf_l(1.0);
        km_gpr_params p = km_gpr_params_default();
        p.signal_variance = 1.0;
        p.noise = 0.1;
        p.normalize_y = norm;
        p.optimizer = KM_GPR_OPTIMIZER_LBFGS;
        km_model *m = fit_ok(&k, &p);
        double th[3], lml;
        optimum_of(m, th);
        char name[64];
        size_t n;
        snprintf(name, sizeof name, "gpr_opt_%s_theta.txt",
                 norm ? "norm" : "plain");
        double *ref = km_read_fixture(name, &n);
        ck_assert_uint_eq(n, 3);
        for (int i = 0; i < 3; i++)
            ck_assert_msg(fabs(th[i] - ref[i]) <= 1e-4, "normalize_y %d: "
                          "theta[%d] = %.10g; sklearn's %.10g", norm, i,
                          th[i], ref[i]);
        lml = figure(km_model_training(m), "log_marginal_likelihood");
        snprintf(name, sizeof name, "gpr_opt_%s_lml.txt",
                 norm ? "norm" : "plain");
        compare("optimum's lml", &lml, name, 1, 1e-7);
        ck_assert_double_eq(figure(km_model_training(m), "starts"), 1);
        ck_assert(figure(km_model_training(m), "initial_log_marginal_"
                                               "likelihood") < lml);
        ck_assert_double_eq(figure(km_model_params(m), "optimizer"),
                            KM_GPR_OPTIMIZER_LBFGS);
        free(ref);
        km_model_free(m);
    }
    free_data();
}
END_TEST

/* Restarts: seeded, so repeatable; the best start is at least as good as
 * the given one alone. */
START_TEST(restarts)
{
    load_data();
    km_kernel k = rbf_l(1.0);
    km_gpr_params p = km_gpr_params_default();
    p.noise = 0.1;
    p.optimizer = KM_GPR_OPTIMIZER_LBFGS;
    km_model *one = fit_ok(&k, &p);
    p.n_restarts = 3;
    p.seed = 11;
    km_model *a = fit_ok(&k, &p), *b = fit_ok(&k, &p);
    double la = figure(km_model_training(a), "log_marginal_likelihood");
    ck_assert_double_eq(la, figure(km_model_training(b),
                                   "log_marginal_likelihood"));
    ck_assert(la >= figure(km_model_training(one), "log_marginal_likelihood")
                        - 1e-9);
    ck_assert_double_eq(figure(km_model_training(a), "starts") <= 4, 1);
    ck_assert_double_eq(figure(km_model_params(a), "n_restarts"), 3);
    ck_assert_double_eq(figure(km_model_params(a), "seed"), 11);
    ck_assert_double_eq(figure(km_model_params(a), "max_iter"), 200);
    /* a linear kernel has no gamma to tune: the kernel stays as given
     * (its unused gamma resolved to 1/d) */
    km_kernel lin;
    km_kernel_init(&lin, KM_KERNEL_LINEAR);
    p.n_restarts = 0;
    km_model *l = fit_ok(&lin, &p);
    ck_assert_double_eq(km_model_kernel(l)->gamma, 1.0 / DIM);
    ck_assert(figure(km_model_training(l), "noise") != 0.1);
    km_model_free(l);
    km_model_free(one);
    km_model_free(a);
    km_model_free(b);
    free_data();
}
END_TEST

/* The gradient of the log marginal likelihood against central
 * differences in the log-parameters. */
static void fd_case(km_kernel_type t, double gamma, int normalize)
{
    km_kernel k;
    km_kernel_init(&k, t);
    k.gamma = gamma;
    km_gpr_params p = km_gpr_params_default();
    p.signal_variance = 1.5;
    p.noise = 0.05;
    p.normalize_y = normalize;
    double lml, grad[3];
    km_error err = {0};
    ck_assert_msg(km_gpr_log_marginal_likelihood(&k, &p, X, NX, DIM, Y, &lml,
                                                 grad, &err) == KM_OK,
                  "%s", err.message);
    const double h = 1e-3; /* smaller steps meet the lml's rounding */
    for (int i = 0; i < 3; i++) {
        double v[2];
        for (int s = 0; s < 2; s++) {
            km_gpr_params q = p;
            km_kernel kq = k;
            double f = exp(s ? -h : h);
            if (i == 0)
                q.signal_variance *= f;
            else if (i == 1)
                kq.gamma *= f;
            else
                q.noise *= f;
            ck_assert_int_eq(km_gpr_log_marginal_likelihood(&kq, &q, X, NX,
                                                            DIM, Y, &v[s],
                                                            NULL, NULL),
                             KM_OK);
        }
        double fd = (v[0] - v[1]) / (2 * h);
        if (i == 1 && t == KM_KERNEL_LINEAR) {
            ck_assert_double_eq(grad[1], 0); /* not tuned: reported 0 */
            continue;
        }
        double scale = fabs(fd) > 1 ? fabs(fd) : 1;
        ck_assert_msg(fabs(grad[i] - fd) <= 1e-6 * scale, "kernel %d, "
                      "normalize_y %d: d/dtheta[%d] = %.12g; finite "
                      "differences %.12g", (int)t, normalize, i, grad[i], fd);
    }
}

START_TEST(gradient_against_finite_differences)
{
    load_data();
    fd_case(KM_KERNEL_RBF, 0.3, 0);
    fd_case(KM_KERNEL_RBF, 0.3, 1);
    fd_case(KM_KERNEL_LAPLACIAN, 0.2, 0);
    fd_case(KM_KERNEL_LAPLACIAN_L2, 0.4, 1);
    fd_case(KM_KERNEL_EXPONENTIAL, 0.05, 0);
    fd_case(KM_KERNEL_LINEAR, 0, 0);
    free_data();
}
END_TEST

static void expect_msg(const km_gpr_params *p, size_t m, km_status want,
                       const char *text)
{
    km_kernel k = rbf_l(1.0);
    km_model *out = NULL;
    km_error err = {0};
    km_problem pb = {X, NX / m, DIM, Y, m, NULL, 0};
    km_status st = km_fit(KM_ALGO_GPR, &k, p, NULL, &pb, NULL, &out, &err);
    ck_assert_msg(st == want && strstr(err.message, text), "want %s "
                  "containing \"%s\"; got %s: %s", km_status_name(want), text,
                  km_status_name(st), err.message);
    ck_assert_ptr_null(out);
}

START_TEST(checks_name_the_field)
{
    load_data();
    km_gpr_params d = km_gpr_params_default(), p;
    p = d, p.noise = 0;
    expect_msg(&p, 1, KM_EINVAL, "params.noise must be a finite number > 0");
    p = d, p.noise = NAN;
    expect_msg(&p, 1, KM_EINVAL, "params.noise");
    p = d, p.signal_variance = -1;
    expect_msg(&p, 1, KM_EINVAL, "params.signal_variance must be a finite "
                                 "number > 0");
    p = d, p.signal_variance = INFINITY;
    expect_msg(&p, 1, KM_EINVAL, "params.signal_variance");
    p = d, p.optimizer = (km_gpr_optimizer)2;
    expect_msg(&p, 1, KM_EINVAL, "params.optimizer must be none or lbfgs");
    p = d, p.n_restarts = KM_GPR_MAX_RESTARTS + 1;
    expect_msg(&p, 1, KM_EINVAL, "params.n_restarts must be at most 100");
    p = d, p.max_iter = 0;
    expect_msg(&p, 1, KM_EINVAL, "params.max_iter must be 1 .. 100000");
    p = d, p.seed = ((uint64_t)1 << 53) + 1;
    expect_msg(&p, 1, KM_EINVAL, "params.seed must be at most 2^53");
    expect_msg(&d, 2, KM_EINVAL, "gpr fits one output (y has 2 columns)");
    ck_assert_str_eq(km_gpr_optimizer_name(KM_GPR_OPTIMIZER_LBFGS), "lbfgs");
    ck_assert_ptr_null(km_gpr_optimizer_name(KM_GPR_OPTIMIZER_COUNT));
    free_data();
}
END_TEST

START_TEST(not_positive_definite)
{
    /* a rank-2 linear kernel on 20 rows with a negligible noise */
    double Xs[40], ys[20];
    for (int i = 0; i < 20; i++) {
        Xs[2 * i] = i;
        Xs[2 * i + 1] = i % 3;
        ys[i] = i;
    }
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_LINEAR);
    km_gpr_params p = km_gpr_params_default();
    p.noise = 1e-300;
    km_model *m = NULL;
    km_error err = {0};
    ck_assert_int_eq(km_gpr_fit(&k, &p, Xs, 20, 2, ys, NULL, &m, &err),
                     KM_ENOTPD);
    ck_assert_ptr_nonnull(strstr(err.message, "params.noise"));
    ck_assert_ptr_null(m);
}
END_TEST

/* normalize_y on targets whose squares overflow (near 1e308): the mean and
 * std are taken on y / 2^k, so the model is the model of y * 2^-1000 (no
 * overflow there) scaled by 2^1000 to the bit, and it saves and loads. */
START_TEST(normalize_y_near_overflow)
{
    double ybig[4] = {1.5e308, -1.5e308, 1.5e308, -1.5e308}, ysmall[4];
    for (int i = 0; i < 4; i++)
        ysmall[i] = ldexp(ybig[i], -1000);
    const double Xs[8] = {0, 0, 1, 0, 0, 1, 3, 3};
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_RBF);
    k.gamma = 0.5;
    km_gpr_params p = km_gpr_params_default();
    p.normalize_y = 1;
    p.noise = 10; /* weights y_std * coef stay below the largest double */
    km_model *big = NULL, *small = NULL, *back = NULL;
    km_error err = {0};
    ck_assert_msg(km_gpr_fit(&k, &p, Xs, 4, 2, ybig, NULL, &big, &err) ==
                  KM_OK, "%s", err.message);
    ck_assert_int_eq(km_gpr_fit(&k, &p, Xs, 4, 2, ysmall, NULL, &small,
                                NULL), KM_OK);
    unsigned char *buf;
    size_t len;
    ck_assert_int_eq(km_model_save_buffer(big, &buf, &len, NULL), KM_OK);
    ck_assert_msg(km_model_load_buffer(buf, len, &back, &err) == KM_OK, "%s",
                  err.message);
    free(buf);
    double mb[4], ms[4], mr[4];
    ck_assert_int_eq(km_predict(big, KM_OUT_VALUES, Xs, 4, mb, NULL), KM_OK);
    ck_assert_int_eq(km_predict(small, KM_OUT_VALUES, Xs, 4, ms, NULL),
                     KM_OK);
    ck_assert_int_eq(km_predict(back, KM_OUT_VALUES, Xs, 4, mr, NULL), KM_OK);
    for (int i = 0; i < 4; i++) {
        ck_assert_msg(mb[i] == ldexp(ms[i], 1000) && isfinite(mb[i]) &&
                      ms[i] != 0, "row %d: mean %.17g, scaled %.17g", i,
                      mb[i], ldexp(ms[i], 1000));
        ck_assert(memcmp(&mb[i], &mr[i], sizeof mb[i]) == 0);
    }
    km_model_free(big);
    km_model_free(small);
    km_model_free(back);
}
END_TEST

/* Cancels when progress first reaches *ctx; counts the calls. */
typedef struct cancel_at {
    double at, last;
    int calls, decreasing;
} cancel_at;

static int cancel_cb(void *ctx, double f)
{
    cancel_at *c = ctx;
    c->decreasing |= f < c->last;
    c->last = f;
    c->calls++;
    return f >= c->at;
}

START_TEST(cancelled)
{
    load_data();
    km_kernel k = rbf_l(1.0);
    km_gpr_params p = km_gpr_params_default();
    p.noise = 0.1;
    for (int opt = 0; opt < 2; opt++) {
        p.optimizer = opt ? KM_GPR_OPTIMIZER_LBFGS : KM_GPR_OPTIMIZER_NONE;
        /* a full fit reports non-decreasing progress up to 1 */
        cancel_at all = {2, 0, 0, 0};
        km_fit_control ctl = {cancel_cb, &all};
        km_model *m = NULL;
        km_error err = {0};
        ck_assert_int_eq(km_gpr_fit(&k, &p, X, NX, DIM, Y, &ctl, &m, &err),
                         KM_OK);
        ck_assert_int_eq(all.decreasing, 0);
        ck_assert_double_eq(all.last, 1.0);
        km_model_free(m);
        m = NULL;
        /* stopped in the middle (the optimizer's iterations, or the
         * factorisation) */
        cancel_at mid = {opt ? 0.3 : 0.1, 0, 0, 0};
        ctl.ctx = &mid;
        ck_assert_int_eq(km_gpr_fit(&k, &p, X, NX, DIM, Y, &ctl, &m, &err),
                         KM_ECANCELLED);
        ck_assert_ptr_null(m);
        ck_assert(mid.last < 1.0);
    }
    free_data();
}
END_TEST

/* Bit-equal answers of two models on T. */
static void same_answers(const km_model *a, const km_model *b)
{
    double ma[NT], mb[NT], va[NT], vb[NT], ca[25], cb[25];
    ck_assert_int_eq(km_predict(a, KM_OUT_VALUES, T, NT, ma, NULL), KM_OK);
    ck_assert_int_eq(km_predict(b, KM_OUT_VALUES, T, NT, mb, NULL), KM_OK);
    ck_assert_int_eq(km_predict(a, KM_OUT_VARIANCES, T, NT, va, NULL), KM_OK);
    ck_assert_int_eq(km_predict(b, KM_OUT_VARIANCES, T, NT, vb, NULL), KM_OK);
    ck_assert_int_eq(km_predict(a, KM_OUT_COVARIANCE, T, 5, ca, NULL), KM_OK);
    ck_assert_int_eq(km_predict(b, KM_OUT_COVARIANCE, T, 5, cb, NULL), KM_OK);
    ck_assert_mem_eq(ma, mb, sizeof ma);
    ck_assert_mem_eq(va, vb, sizeof va);
    ck_assert_mem_eq(ca, cb, sizeof ca);
}

START_TEST(km_fit_and_file_round_trip)
{
    load_data();
    km_kernel k = rbf_l(0.9);
    km_gpr_params p = km_gpr_params_default();
    p.noise = 0.02;
    p.signal_variance = 1.7;
    p.normalize_y = 1;
    p.optimizer = KM_GPR_OPTIMIZER_LBFGS;
    km_model *typed = fit_ok(&k, &p), *gen = NULL, *back = NULL;
    km_problem pb = {X, NX, DIM, Y, 1, NULL, 0};
    km_error err = {0};
    ck_assert_msg(km_fit(KM_ALGO_GPR, &k, &p, NULL, &pb, NULL, &gen, &err) ==
                      KM_OK, "%s", err.message);
    same_answers(typed, gen);
    ck_assert_double_eq(figure(km_model_training(typed),
                               "log_marginal_likelihood"),
                        figure(km_model_training(gen),
                               "log_marginal_likelihood"));
    ck_assert_double_eq(km_model_kernel(typed)->gamma,
                        km_model_kernel(gen)->gamma);
    ck_assert_ptr_nonnull(km_info_find(km_model_training(gen),
                                       "training_score"));
    unsigned char *buf;
    size_t len;
    ck_assert_int_eq(km_model_save_buffer(typed, &buf, &len, NULL), KM_OK);
    ck_assert_int_eq(km_model_load_buffer(buf, len, &back, &err), KM_OK);
    same_answers(typed, back);
    ck_assert_uint_eq(km_model_n_outputs(back), 1);
    ck_assert_uint_eq(km_model_bytes(back), km_model_bytes(typed));
    /* the generic predict of another algorithm's answer */
    double out[NT];
    ck_assert_int_eq(km_predict(back, KM_OUT_SCORES, T, NT, out, &err),
                     KM_EINVAL);
    /* the covariance's row limit */
    double *big = calloc((KM_COV_MAX_ROWS + 1) * DIM, sizeof *big);
    ck_assert_int_eq(km_gpr_covariance(back, big, KM_COV_MAX_ROWS + 1, out,
                                       &err), KM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "output cov answers at most "
                                              "1000 rows"));
    free(big);
    free(buf);
    km_model_free(typed);
    km_model_free(gen);
    km_model_free(back);
    free_data();
}
END_TEST

/* ------------------------------------------------------------ files */

/* A small model's file; its payload is at the end, before the CRC:
 * 4 f64, X (count, n d), a (count, n), L (count, n (n + 1) / 2). */
#define FN 6
#define FD 2

typedef struct gfile {
    unsigned char *buf;
    size_t len, payload, x, coef, l;
} gfile;

static gfile small_file(void)
{
    double Xs[FN * FD], ys[FN];
    for (int i = 0; i < FN; i++) {
        Xs[2 * i] = i * 0.5;
        Xs[2 * i + 1] = (i % 2) - 0.3;
        ys[i] = sin(i);
    }
    km_kernel k = rbf_l(1.0);
    km_gpr_params p = km_gpr_params_default();
    p.noise = 0.1;
    km_model *m = NULL;
    ck_assert_int_eq(km_gpr_fit(&k, &p, Xs, FN, FD, ys, NULL, &m, NULL), KM_OK);
    gfile f;
    ck_assert_int_eq(km_model_save_buffer(m, &f.buf, &f.len, NULL), KM_OK);
    km_model_free(m);
    size_t tri = FN * (FN + 1) / 2;
    f.payload = f.len - 4 - (32 + 8 + 8 * FN * FD + 8 + 8 * FN + 8 + 8 * tri);
    f.x = f.payload + 32 + 8;
    f.coef = f.x + 8 * FN * FD + 8;
    f.l = f.coef + 8 * FN + 8;
    ck_assert_uint_eq(get64(f.buf + f.l - 8), tri);
    return f;
}

static void expect_corrupt(const char *what, size_t at, double v,
                           const char *text)
{
    gfile f = small_file();
    km_model *m = NULL;
    km_error err = {0};
    ck_assert_int_eq(km_model_load_buffer(f.buf, f.len, &m, &err), KM_OK);
    km_model_free(m);
    m = NULL;
    uint64_t u;
    memcpy(&u, &v, 8);
    put64(f.buf + (at == SIZE_MAX ? f.l - 8 : at), at == SIZE_MAX ? (uint64_t)v
                                                                  : u);
    put32(f.buf + f.len - 4, crc32_ref(f.buf, f.len - 4));
    km_status st = km_model_load_buffer(f.buf, f.len, &m, &err);
    ck_assert_msg(st == KM_ECORRUPT && strstr(err.message, text), "%s: %s: "
                  "%s", what, km_status_name(st), err.message);
    ck_assert_ptr_null(m);
    free(f.buf);
}

START_TEST(file_numbers_checked)
{
    gfile f = small_file();
    size_t p = f.payload, x = f.x, c = f.coef, l = f.l;
    free(f.buf);
    expect_corrupt("signal 0", p, 0, "signal_variance, noise and y_std");
    expect_corrupt("noise NaN", p + 8, NAN, "signal_variance, noise and y_std");
    expect_corrupt("y_mean inf", p + 16, INFINITY, "y_mean");
    expect_corrupt("y_std -1", p + 24, -1, "y_std");
    expect_corrupt("X inf", x + 8, INFINITY, "training rows");
    expect_corrupt("coef NaN", c + 16, NAN, "coefficients");
    expect_corrupt("L NaN", l + 8, NAN, "factor");
    expect_corrupt("L[0][0] 0", l, 0, "factor L[0][0] is not > 0");
    expect_corrupt("L[2][2] < 0", l + 8 * 5, -0.5, "factor L[2][2] is not > 0");
    expect_corrupt("L count", SIZE_MAX, 20, "triangle has not n (n + 1) / 2");
}
END_TEST

/* ------------------------------------------------------------ nystrom */

/* gpr's nystrom params: m centres, the variance, CG to convergence. */
static km_gpr_params nys_params(size_t m, double s, double noise, int norm,
                                int variance)
{
    km_gpr_params p = km_gpr_params_default();
    p.solver = KM_GPR_SOLVER_NYSTROM;
    p.n_centres = m;
    p.signal_variance = s;
    p.noise = noise;
    p.normalize_y = norm;
    p.variance = variance;
    p.cg_tol = 1e-14;
    p.cg_max_iter = 1000;
    p.seed = 7;
    return p;
}

/* Mean, variances, covariance of the first 8 rows of T and the lml of a
 * model (lml NAN when it has none). */
typedef struct answers {
    double mean[64], var[64], cov[64], lml;
} answers;

static void answers_of(const km_model *m, const double *Ts, size_t nt,
                       answers *a)
{
    km_error err = {0};
    memset(a, 0, sizeof *a);
    ck_assert_uint_le(nt, 64);
    ck_assert_msg(km_predict(m, KM_OUT_VALUES, Ts, nt, a->mean, &err) ==
                      KM_OK, "%s", err.message);
    ck_assert_msg(km_predict(m, KM_OUT_VARIANCES, Ts, nt, a->var, &err) ==
                      KM_OK, "%s", err.message);
    ck_assert_msg(km_predict(m, KM_OUT_COVARIANCE, Ts, 8, a->cov, &err) ==
                      KM_OK, "%s", err.message);
    const km_info_entry *e = km_info_find(km_model_training(m),
                                          "log_marginal_likelihood");
    a->lml = e ? e->values[0] : NAN;
}

static void close_to(const char *what, const double *got, const double *want,
                     size_t n, double tol)
{
    double e = km_max_rel_err(got, want, n, FLOOR);
    ck_assert_msg(e <= tol, "%s: off by %g relative (tolerance %g)", what, e,
                  tol);
}

/* With every row a centre, DTC is exact: the nystrom model's mean,
 * variances, covariance and likelihood are exact gpr's (1e-6). */
START_TEST(nystrom_all_rows_is_exact)
{
    load_data();
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        km_kernel k = rbf_l(cases[c].l);
        km_gpr_params p = nys_params(NX, cases[c].s, cases[c].noise,
                                     cases[c].normalize, 1);
        km_gpr_params e = p;
        e.solver = KM_GPR_SOLVER_EXACT;
        km_model *ex = fit_ok(&k, &e), *ny = fit_ok(&k, &p);
        ck_assert_uint_eq(km_model_n_samples(ny), NX);
        answers a, b;
        answers_of(ex, T, NT, &a);
        answers_of(ny, T, NT, &b);
        close_to("mean", b.mean, a.mean, NT, 1e-6);
        close_to("variance", b.var, a.var, NT, 1e-6);
        close_to("covariance", b.cov, a.cov, 64, 1e-6);
        close_to("lml", &b.lml, &a.lml, 1, 1e-6);
        km_model_free(ex);
        km_model_free(ny);
    }
    free_data();
}
END_TEST

#define GN 400
#define GT 40
#define GM 40

typedef struct gdata {
    double *X, *y, *T;
    size_t centres[GM];
} gdata;

static void gload(gdata *g, const char *centres)
{
    size_t n;
    g->X = km_read_fixture("gprn_X.txt", &n);
    ck_assert_uint_eq(n, GN * DIM);
    g->y = km_read_fixture("gprn_y.txt", &n);
    ck_assert_uint_eq(n, GN);
    g->T = km_read_fixture("gprn_T.txt", &n);
    ck_assert_uint_eq(n, GT * DIM);
    double *c = km_read_fixture(centres, &n);
    ck_assert_uint_eq(n, GM);
    for (size_t i = 0; i < GM; i++)
        g->centres[i] = (size_t)c[i];
    free(c);
}

static void gunload(gdata *g)
{
    free(g->X);
    free(g->y);
    free(g->T);
}

/* A nystrom fit of g on the given centres (NULL: core's draw). */
static km_model *gfit(const gdata *g, const km_gpr_params *p,
                      const size_t *centres)
{
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_RBF);
    k.gamma = 0.3;
    km_model *m = NULL;
    km_error err = {0};
    ck_assert_msg(km_gpr_fit_nystrom(&k, p, g->X, GN, DIM, g->y, centres,
                                     NULL, &m, &err) == KM_OK,
                  "%s", err.message);
    return m;
}

static km_kernel rbf_g(void)
{
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_RBF);
    k.gamma = 0.3;
    return k;
}

/* gen_gpr_nystrom_refs.py's CASES. */
static const struct {
    const char *name;
    double s, noise;
    int normalize;
} ncases[] = {
    {"a", 1.0, 0.05, 0},
    {"b", 2.5, 0.02, 1},
};

/* On the fixture's centres, through the internal hook: mean, variances,
 * covariance and likelihood against the formulas in numpy (1e-8), the
 * mean against scikit-learn's Nystroem + Ridge (1e-8). */
START_TEST(nystrom_against_numpy_and_sklearn)
{
    gdata g;
    gload(&g, "gprn_centres.txt");
    for (size_t c = 0; c < sizeof ncases / sizeof *ncases; c++) {
        km_gpr_params p = nys_params(GM, ncases[c].s, ncases[c].noise,
                                     ncases[c].normalize, 1);
        km_model *m = gfit(&g, &p, g.centres);
        answers a;
        answers_of(m, g.T, GT, &a);
        char file[64], what[64];
        const char *part[] = {"mean", "var", "cov", "lml", "skl"};
        const double *got[] = {a.mean, a.var, a.cov, &a.lml, a.mean};
        const size_t count[] = {GT, GT, 64, 1, GT};
        for (int i = 0; i < 5; i++) {
            snprintf(file, sizeof file, "gprn_%s_%s.txt", ncases[c].name,
                     part[i]);
            snprintf(what, sizeof what, "case %s: %s", ncases[c].name,
                     part[i]);
            compare(what, got[i], file, count[i], TOL);
        }
        ck_assert_double_le(figure(km_model_training(m), "residual"), 1e-14);
        km_model_free(m);
    }
    gunload(&g);
}
END_TEST

/* Core's own draw with params.seed: the centres numpy draws again from
 * its definition, so the same answers. */
START_TEST(nystrom_seeded_draw)
{
    gdata g;
    gload(&g, "gprn_seed_centres.txt");
    km_gpr_params p = nys_params(GM, 1.0, 0.05, 0, 1);
    km_model *m = gfit(&g, &p, NULL), *given = gfit(&g, &p, g.centres);
    answers a, b;
    answers_of(m, g.T, GT, &a);
    answers_of(given, g.T, GT, &b);
    ck_assert_mem_eq(a.mean, b.mean, sizeof a.mean);
    ck_assert_mem_eq(a.var, b.var, sizeof a.var);
    compare("seeded mean", a.mean, "gprn_seed_mean.txt", GT, TOL);
    compare("seeded var", a.var, "gprn_seed_var.txt", GT, TOL);
    compare("seeded lml", &a.lml, "gprn_seed_lml.txt", 1, TOL);
    /* its figures */
    const km_info *pi = km_model_params(m), *ti = km_model_training(m);
    ck_assert_double_eq(figure(pi, "solver"), KM_GPR_SOLVER_NYSTROM);
    ck_assert_double_eq(figure(pi, "n_centres"), GM);
    ck_assert_double_eq(figure(pi, "seed"), 7);
    ck_assert_double_eq(figure(pi, "cg_tol"), 1e-14);
    ck_assert_double_eq(figure(pi, "cg_max_iter"), 1000);
    ck_assert_double_eq(figure(pi, "centres"), KM_KRR_CENTRES_UNIFORM);
    ck_assert_double_eq(figure(pi, "variance"), 1);
    ck_assert_double_eq(figure(ti, "solver"), KM_GPR_SOLVER_NYSTROM);
    ck_assert_double_ge(figure(ti, "iterations"), 1);
    ck_assert_double_le(figure(ti, "residual"), 1e-14);
    ck_assert_ptr_null(km_info_find(pi, "n_restarts"));
    km_model_free(m);
    km_model_free(given);
    gunload(&g);
}
END_TEST

/* Without params.variance: the mean alone (the same mean), no
 * likelihood, and the variance and covariance refused naming the param. */
START_TEST(nystrom_without_variance)
{
    gdata g;
    gload(&g, "gprn_centres.txt");
    km_gpr_params p = nys_params(GM, 1.0, 0.05, 0, 0);
    km_model *m = gfit(&g, &p, g.centres);
    p.variance = 1;
    km_model *v = gfit(&g, &p, g.centres);
    km_error err = {0};
    double a[GT], b[GT];
    ck_assert_int_eq(km_predict(m, KM_OUT_VALUES, g.T, GT, a, NULL), KM_OK);
    ck_assert_int_eq(km_predict(v, KM_OUT_VALUES, g.T, GT, b, NULL), KM_OK);
    ck_assert_mem_eq(a, b, sizeof a);
    ck_assert_uint_eq(km_model_outputs(m), KM_OUT_VALUES);
    ck_assert_uint_eq(km_model_outputs(v), KM_OUT_VALUES | KM_OUT_VARIANCES |
                                               KM_OUT_COVARIANCE);
    ck_assert_ptr_null(km_info_find(km_model_training(m),
                                    "log_marginal_likelihood"));
    ck_assert_double_eq(figure(km_model_params(m), "variance"), 0);
    ck_assert_int_eq(km_predict(m, KM_OUT_VARIANCES, g.T, GT, a, &err),
                     KM_ECONFLICT);
    ck_assert_ptr_nonnull(strstr(err.message, "params.variance = true"));
    ck_assert_int_eq(km_gpr_covariance(m, g.T, 4, a, &err), KM_ECONFLICT);
    ck_assert_ptr_nonnull(strstr(err.message, "params.variance"));
    /* what a fit of these params will answer, before it */
    const km_algo *al = km_algo_of(KM_ALGO_GPR);
    ck_assert_uint_eq(al->params_outputs(&p) & KM_OUT_VARIANCES,
                      KM_OUT_VARIANCES);
    p.variance = 0;
    ck_assert_uint_eq(al->params_outputs(&p), KM_OUT_VALUES);
    km_model_free(m);
    km_model_free(v);
    gunload(&g);
}
END_TEST

START_TEST(nystrom_checks)
{
    load_data();
    km_gpr_params d = nys_params(10, 1.0, 0.1, 0, 1), p;
    p = d, p.optimizer = KM_GPR_OPTIMIZER_LBFGS;
    expect_msg(&p, 1, KM_EINVAL, "params.optimizer lbfgs needs "
                                 "params.solver exact");
    p.solver = KM_GPR_SOLVER_AUTO;
    expect_msg(&p, 1, KM_EINVAL, "params.optimizer none with params.solver "
                                 "auto");
    p = d, p.n_centres = NX + 1;
    expect_msg(&p, 1, KM_EPROBLEM, "params.n_centres is 81 but X has 80 "
                                   "rows");
    p = d, p.cg_tol = 0;
    expect_msg(&p, 1, KM_EINVAL, "params.cg_tol must be a finite number > 0");
    p = d, p.cg_max_iter = 0;
    expect_msg(&p, 1, KM_EINVAL, "params.cg_max_iter must be at least 1");
    p = d, p.centres = KM_KRR_CENTRES_COUNT;
    expect_msg(&p, 1, KM_EINVAL, "params.centres must be uniform or "
                                 "rpcholesky");
    p = d, p.solver = KM_GPR_SOLVER_COUNT;
    expect_msg(&p, 1, KM_EINVAL, "params.solver must be exact, nystrom or "
                                 "auto");
    p = d, p.noise = 1e-300, p.signal_variance = 1e300;
    expect_msg(&p, 1, KM_EINVAL, "params.noise / params.signal_variance");
    /* the exact solver ignores the nystrom fields */
    p = d, p.solver = KM_GPR_SOLVER_EXACT, p.cg_tol = 0;
    km_model *m = fit_ok(&(km_kernel){.type = KM_KERNEL_RBF, .gamma = 0.5},
                         &p);
    ck_assert_ptr_null(km_info_find(km_model_params(m), "solver"));
    ck_assert_ptr_null(km_info_find(km_model_params(m), "cg_tol"));
    km_model_free(m);
    ck_assert_str_eq(km_gpr_solver_name(KM_GPR_SOLVER_NYSTROM), "nystrom");
    ck_assert_ptr_null(km_gpr_solver_name(KM_GPR_SOLVER_COUNT));
    free_data();
}
END_TEST

/* The estimate: nystrom's O(m^2 + block m) (plus 2 m^2 with the
 * variance) where exact's is n^2; auto picks exact while it takes at
 * most half the budget. */
START_TEST(nystrom_memory_and_auto)
{
    km_gpr_params p = nys_params(0, 1.0, 0.1, 0, 0);
    size_t n = 1000000, m = 10000; /* the default m at 10^6 rows */
    size_t mean = km_gpr_fit_bytes(n, 20, &p);
    ck_assert_uint_ge(mean, 2 * m * m * sizeof(double)); /* Falkon's */
    p.variance = 1;
    size_t var = km_gpr_fit_bytes(n, 20, &p);
    ck_assert_uint_ge(var, mean);
    ck_assert_uint_le(var, (size_t)2 << 30); /* admitted on this machine */
    p.solver = KM_GPR_SOLVER_EXACT;
    size_t exact = km_gpr_fit_bytes(n, 20, &p);
    ck_assert_uint_ge(exact, n * n * sizeof(double));
    p.solver = KM_GPR_SOLVER_AUTO;
    ck_assert_int_eq(km_gpr_resolve_solver(&p, n, 20, exact * 2),
                     KM_GPR_SOLVER_EXACT);
    ck_assert_int_eq(km_gpr_resolve_solver(&p, n, 20, exact * 2 - 2),
                     KM_GPR_SOLVER_NYSTROM);
    ck_assert_int_eq(km_gpr_resolve_solver(&p, n, 20, 1 << 30),
                     KM_GPR_SOLVER_NYSTROM);
    /* an auto fit says what it ran */
    load_data();
    km_kernel k = rbf_l(1.0);
    p.n_centres = 30;
    km_model *a = fit_ok(&k, &p);
    ck_assert_double_eq(figure(km_model_params(a), "solver"),
                        KM_GPR_SOLVER_AUTO);
    ck_assert_double_eq(figure(km_model_training(a), "solver"),
                        KM_GPR_SOLVER_EXACT); /* 80 rows fit */
    ck_assert_ptr_nonnull(km_info_find(km_model_training(a),
                                       "memory_budget_mb"));
    ck_assert_uint_eq(km_model_n_samples(a), NX);
    km_model_free(a);
    free_data();
}
END_TEST

/* Progress up to 1 and cancel; km_fit as the typed fit; the file: format
 * version 6 (exact models keep 2), the same answers after a load, the
 * model's bytes; and the loader's checks of the nystrom form. */
START_TEST(nystrom_fit_file_and_cancel)
{
    gdata g;
    gload(&g, "gprn_centres.txt");
    km_kernel k = rbf_g();
    for (int variance = 0; variance < 2; variance++) {
        km_gpr_params p = nys_params(GM, 2.5, 0.02, 1, variance);
        cancel_at all = {2, 0, 0, 0};
        km_fit_control ctl = {cancel_cb, &all};
        km_model *m = NULL, *gen = NULL, *back = NULL;
        km_error err = {0};
        ck_assert_int_eq(km_gpr_fit(&k, &p, g.X, GN, DIM, g.y, &ctl, &m,
                                    &err), KM_OK);
        ck_assert_int_eq(all.decreasing, 0);
        ck_assert_double_eq(all.last, 1.0);
        cancel_at mid = {variance ? 0.7 : 0.3, 0, 0, 0};
        ctl.ctx = &mid;
        ck_assert_int_eq(km_gpr_fit(&k, &p, g.X, GN, DIM, g.y, &ctl, &gen,
                                    &err), KM_ECANCELLED);
        ck_assert_ptr_null(gen);
        km_problem pb = {g.X, GN, DIM, g.y, 1, NULL, 0};
        ck_assert_int_eq(km_fit(KM_ALGO_GPR, &k, &p, NULL, &pb, NULL, &gen,
                                &err), KM_OK);
        double a[GT], b[GT];
        ck_assert_int_eq(km_predict(m, KM_OUT_VALUES, g.T, GT, a, NULL),
                         KM_OK);
        ck_assert_int_eq(km_predict(gen, KM_OUT_VALUES, g.T, GT, b, NULL),
                         KM_OK);
        ck_assert_mem_eq(a, b, sizeof a);
        unsigned char *buf;
        size_t len;
        ck_assert_int_eq(km_model_save_buffer(m, &buf, &len, NULL), KM_OK);
        ck_assert_uint_eq(get32(buf + 4), 6);
        ck_assert_int_eq(km_model_load_buffer(buf, len, &back, &err), KM_OK);
        ck_assert_uint_eq(km_model_bytes(back), km_model_bytes(m));
        ck_assert_uint_eq(km_model_outputs(back), km_model_outputs(m));
        ck_assert_int_eq(km_predict(back, KM_OUT_VALUES, g.T, GT, b, NULL),
                         KM_OK);
        ck_assert_mem_eq(a, b, sizeof a);
        if (variance) {
            answers x, y;
            answers_of(m, g.T, GT, &x);
            answers_of(back, g.T, GT, &y);
            ck_assert_mem_eq(x.var, y.var, sizeof x.var);
            ck_assert_mem_eq(x.cov, y.cov, sizeof x.cov);
        }
        /* saved again: the same bytes */
        unsigned char *again;
        size_t len2;
        ck_assert_int_eq(km_model_save_buffer(back, &again, &len2, NULL),
                         KM_OK);
        ck_assert_uint_eq(len2, len);
        ck_assert_mem_eq(again, buf, len);
        free(again);
        /* the payload's end: [form ... a] flag [L C]; C's last diagonal
         * value, or the flag, altered */
        size_t t = (size_t)GM * (GM + 1) / 2;
        size_t flag = len - 4 - 4 - (variance ? 2 * (8 + 8 * t) : 0);
        unsigned char *bad = malloc(len);
        memcpy(bad, buf, len);
        put32(bad + flag, 2);
        put32(bad + len - 4, crc32_ref(bad, len - 4));
        km_model *no = NULL;
        ck_assert_int_eq(km_model_load_buffer(bad, len, &no, &err),
                         KM_ECORRUPT);
        ck_assert_ptr_nonnull(strstr(err.message, "bad gaussian process "
                                                  "payload"));
        if (variance) {
            memcpy(bad, buf, len);
            double neg = -1;
            uint64_t u;
            memcpy(&u, &neg, 8);
            put64(bad + len - 4 - 8, u); /* C[m-1][m-1] */
            put32(bad + len - 4, crc32_ref(bad, len - 4));
            ck_assert_int_eq(km_model_load_buffer(bad, len, &no, &err),
                             KM_ECORRUPT);
            ck_assert_ptr_nonnull(strstr(err.message, "factor C[39][39] is "
                                                      "not > 0"));
        }
        /* the form: 2 is none before version 11 */
        size_t form = flag - (8 + 8 * GM) - (8 + 8 * GM * DIM) - 32 - 4;
        memcpy(bad, buf, len);
        ck_assert_uint_eq(get32(bad + form), 1);
        put32(bad + form, 2);
        put32(bad + len - 4, crc32_ref(bad, len - 4));
        ck_assert_int_eq(km_model_load_buffer(bad, len, &no, &err),
                         KM_ECORRUPT);
        ck_assert_ptr_nonnull(strstr(err.message, "payload form 2 is not 0 "
                                                  "(exact), 1 (nystrom) or "
                                                  "from version 11"));
        free(bad);
        free(buf);
        km_model_free(m);
        km_model_free(gen);
        km_model_free(back);
    }
    /* an exact model is still written as version 2 */
    gfile f = small_file();
    ck_assert_uint_eq(get32(f.buf + 4), 2);
    free(f.buf);
    gunload(&g);
}
END_TEST

Suite *gpr_suite(void)
{
    Suite *s = suite_create("gpr");
    TCase *tc = tcase_create("gpr");
    tcase_add_test(tc, fixed_against_sklearn);
    tcase_add_test(tc, optimizer_against_sklearn);
    tcase_add_test(tc, restarts);
    tcase_add_test(tc, gradient_against_finite_differences);
    tcase_add_test(tc, checks_name_the_field);
    tcase_add_test(tc, not_positive_definite);
    tcase_add_test(tc, normalize_y_near_overflow);
    tcase_add_test(tc, cancelled);
    tcase_add_test(tc, km_fit_and_file_round_trip);
    tcase_add_test(tc, file_numbers_checked);
    tcase_add_test(tc, nystrom_all_rows_is_exact);
    tcase_add_test(tc, nystrom_against_numpy_and_sklearn);
    tcase_add_test(tc, nystrom_seeded_draw);
    tcase_add_test(tc, nystrom_without_variance);
    tcase_add_test(tc, nystrom_checks);
    tcase_add_test(tc, nystrom_memory_and_auto);
    tcase_add_test(tc, nystrom_fit_file_and_cancel);
    tcase_set_timeout(tc, 120);
    suite_add_tcase(s, tc);
    return s;
}

KM_TEST_MAIN(gpr_suite)
