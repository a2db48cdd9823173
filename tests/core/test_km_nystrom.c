/*
 * test_km_nystrom.c - krr's nystrom solver (params.solver NYSTROM):
 * predictions against scikit-learn's Nystroem + Ridge on the same centres
 * (tests/fixtures/gen_nystrom_refs.py: given centres, and those core's
 * seeded draw picks, drawn again there from their definition), m = n
 * against the exact solver, the conjugate gradients' residual history,
 * cancellation, the checks' messages, and the memory estimate.
 */
#include "../check_main.h"
#include "km.h"
#include "solvers/km_solvers_internal.h"
#include "algorithms/km_algorithms_internal.h"

#define N 600
#define DIM 5
#define M 80

typedef struct data {
    double *X, *y, *T, *pred, *seed_pred;
    size_t nt;
    size_t centres[M], seed_centres[M];
} data;

static void load(data *dt)
{
    size_t n;
    dt->X = km_read_fixture("nys_X.txt", &n);
    ck_assert_uint_eq(n, N * DIM);
    dt->y = km_read_fixture("nys_y.txt", &n);
    ck_assert_uint_eq(n, N);
    dt->T = km_read_fixture("nys_T.txt", &n);
    dt->nt = n / DIM;
    dt->pred = km_read_fixture("nys_pred.txt", &n);
    ck_assert_uint_eq(n, dt->nt);
    dt->seed_pred = km_read_fixture("nys_seed_pred.txt", &n);
    ck_assert_uint_eq(n, dt->nt);
    double *c = km_read_fixture("nys_centres.txt", &n);
    ck_assert_uint_eq(n, M);
    for (size_t i = 0; i < M; i++)
        dt->centres[i] = (size_t)c[i];
    free(c);
    c = km_read_fixture("nys_seed_centres.txt", &n);
    ck_assert_uint_eq(n, M);
    for (size_t i = 0; i < M; i++)
        dt->seed_centres[i] = (size_t)c[i];
    free(c);
}

static void unload(data *dt)
{
    free(dt->X);
    free(dt->y);
    free(dt->T);
    free(dt->pred);
    free(dt->seed_pred);
}

static km_kernel rbf(void)
{
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_RBF);
    k.gamma = 0.2;
    return k;
}

static km_krr_params nystrom(size_t m, double tol)
{
    km_krr_params p = km_krr_params_default();
    p.alpha = 0.01;
    p.solver = KM_KRR_SOLVER_NYSTROM;
    p.n_centres = m;
    p.seed = 7;
    p.cg_tol = tol;
    p.cg_max_iter = 200;
    return p;
}

static double fig(const km_info *info, const char *key)
{
    const km_info_entry *e = km_info_find(info, key);
    ck_assert_msg(e != NULL, "no figure %s", key);
    return e->values[0];
}

/* The fixture's own centres, through the internal hook: Nystroem + Ridge
 * to 1e-8, and a residual that falls at every iteration. */
START_TEST(same_as_sklearn_on_given_centres)
{
    data dt;
    load(&dt);
    km_kernel k = rbf();
    km_krr_params p = nystrom(M, 1e-13);
    double hist[201];
    size_t nh = 0;
    km_model *m = NULL;
    km_error err = {0};
    ck_assert_msg(km_krr_fit_nystrom(&k, &p, dt.X, N, DIM, dt.y, 1,
                                     dt.centres, hist, &nh, NULL, &m, &err)
                      == KM_OK, "%s", err.message);
    double *out = malloc(dt.nt * sizeof *out);
    ck_assert_int_eq(km_krr_predict(m, dt.T, dt.nt, out, NULL), KM_OK);
    double e = km_max_rel_err(out, dt.pred, dt.nt, 1e-3);
    ck_assert_msg(e <= 1e-8, "predictions off by %g relative", e);

    /* PCG's history: from 1, down at every step, to cg_tol within the cap */
    size_t its = (size_t)fig(km_model_training(m), "iterations");
    ck_assert_uint_eq(nh, its + 1);
    ck_assert_uint_ge(nh, 3);
    ck_assert_uint_le(its, p.cg_max_iter);
    ck_assert_double_eq(hist[0], 1.0);
    for (size_t i = 1; i < nh; i++)
        ck_assert_msg(hist[i] <= hist[i - 1], "residual rose at iteration "
                      "%zu: %g after %g", i, hist[i], hist[i - 1]);
    ck_assert_double_le(hist[nh - 1], p.cg_tol);
    ck_assert_double_eq(hist[nh - 1], fig(km_model_training(m), "residual"));
    free(out);
    km_model_free(m);
    unload(&dt);
}
END_TEST

/* The public path: core's seeded draw picks the fixture's indices (drawn
 * again in Python from km_rng's definition), and the fit predicts as
 * Nystroem + Ridge on them; the figures; a round trip through the file. */
START_TEST(seeded_draw_and_figures)
{
    data dt;
    load(&dt);
    size_t idx[N];
    km_krr_draw_centres(7, N, M, idx);
    for (size_t i = 0; i < M; i++)
        ck_assert_uint_eq(idx[i], dt.seed_centres[i]);

    km_kernel k = rbf();
    km_krr_params p = nystrom(M, 1e-12);
    km_model *m = NULL;
    km_error err = {0};
    ck_assert_msg(km_krr_fit(&k, &p, dt.X, N, DIM, dt.y, 1, NULL, &m, &err)
                      == KM_OK, "%s", err.message);
    ck_assert_uint_eq(km_model_n_samples(m), M);
    double *out = malloc(dt.nt * sizeof *out);
    ck_assert_int_eq(km_krr_predict(m, dt.T, dt.nt, out, NULL), KM_OK);
    double e = km_max_rel_err(out, dt.seed_pred, dt.nt, 1e-3);
    ck_assert_msg(e <= 1e-8, "predictions off by %g relative", e);

    const km_info *pi = km_model_params(m), *ti = km_model_training(m);
    ck_assert_double_eq(fig(pi, "alpha"), 0.01);
    ck_assert_double_eq(fig(pi, "solver"), KM_KRR_SOLVER_NYSTROM);
    ck_assert_double_eq(fig(pi, "n_centres"), M);
    ck_assert_double_eq(fig(pi, "seed"), 7);
    ck_assert_double_eq(fig(pi, "cg_tol"), 1e-12);
    ck_assert_double_eq(fig(pi, "cg_max_iter"), 200);
    ck_assert_double_eq(fig(ti, "solver"), KM_KRR_SOLVER_NYSTROM);
    ck_assert_double_le(fig(ti, "residual"), 1e-12);
    ck_assert_double_ge(fig(ti, "iterations"), 1);
    ck_assert_double_gt(fig(ti, "rkhs_norm_sq"), 0);

    /* km_fit is the same fit, to the bit */
    km_model *g = NULL;
    km_problem pb = {dt.X, N, DIM, dt.y, 1, NULL, 0};
    ck_assert_int_eq(km_fit(KM_ALGO_KRR, &k, &p, NULL, &pb, NULL, &g, NULL),
                     KM_OK);
    ck_assert_mem_eq(km_krr_dual_coef(g), km_krr_dual_coef(m),
                     M * sizeof(double));
    km_model_free(g);

    /* another seed, other centres */
    p.seed = 8;
    ck_assert_int_eq(km_krr_fit(&k, &p, dt.X, N, DIM, dt.y, 1, NULL, &g,
                                NULL), KM_OK);
    double *out2 = malloc(dt.nt * sizeof *out2);
    ck_assert_int_eq(km_krr_predict(g, dt.T, dt.nt, out2, NULL), KM_OK);
    ck_assert(km_max_rel_err(out2, out, dt.nt, 1e-3) > 1e-6);
    km_model_free(g);

    unsigned char *buf;
    size_t len;
    ck_assert_int_eq(km_model_save_buffer(m, &buf, &len, NULL), KM_OK);
    km_model *back = NULL;
    ck_assert_int_eq(km_model_load_buffer(buf, len, &back, NULL), KM_OK);
    ck_assert_int_eq(km_krr_predict(back, dt.T, dt.nt, out2, NULL), KM_OK);
    ck_assert_mem_eq(out, out2, dt.nt * sizeof *out);
    km_model_free(back);
    free(buf);
    free(out2);
    free(out);
    km_model_free(m);
    unload(&dt);
}
END_TEST

/* m = n: the system is K (K + alpha I) c = K y, exact KRR's solution;
 * two outputs, each with its own CG. */
START_TEST(all_rows_as_centres_is_exact)
{
    data dt;
    load(&dt);
    const size_t n = 300;
    double *Y = malloc(2 * n * sizeof *Y);
    for (size_t i = 0; i < n; i++) {
        Y[2 * i] = dt.y[i];
        Y[2 * i + 1] = dt.X[i * DIM] - 3 * dt.y[i];
    }
    km_kernel k = rbf();
    km_krr_params p = nystrom(n, 1e-12), ex = km_krr_params_default();
    p.alpha = ex.alpha = 0.1;
    km_model *a = NULL, *b = NULL;
    km_error err = {0};
    ck_assert_msg(km_krr_fit(&k, &p, dt.X, n, DIM, Y, 2, NULL, &a, &err)
                      == KM_OK, "%s", err.message);
    ck_assert_int_eq(km_krr_fit(&k, &ex, dt.X, n, DIM, Y, 2, NULL, &b, NULL),
                     KM_OK);
    double *pa = malloc(2 * dt.nt * sizeof *pa),
           *pb = malloc(2 * dt.nt * sizeof *pb);
    ck_assert_int_eq(km_krr_predict(a, dt.T, dt.nt, pa, NULL), KM_OK);
    ck_assert_int_eq(km_krr_predict(b, dt.T, dt.nt, pb, NULL), KM_OK);
    double e = km_max_rel_err(pa, pb, 2 * dt.nt, 1e-3);
    ck_assert_msg(e <= 1e-6, "m = n: off the exact solver by %g", e);
    const km_info_entry *r = km_info_find(km_model_training(a),
                                          "rkhs_norm_sq");
    const km_info_entry *s = km_info_find(km_model_training(b),
                                          "rkhs_norm_sq");
    ck_assert_uint_eq(r->count, 2);
    for (size_t j = 0; j < 2; j++)
        ck_assert_double_le(fabs(r->values[j] - s->values[j]),
                            1e-6 * fabs(s->values[j]));
    /* the exact model shows its own params: alpha, and keep_factor
     * (false: the factor is kept only when asked) */
    ck_assert_uint_eq(km_model_params(b)->count, 2);
    const km_info_entry *kf = km_info_find(km_model_params(b), "keep_factor");
    ck_assert(kf && kf->count == 1 && kf->values[0] == 0.0);
    ck_assert_ptr_null(km_info_find(km_model_training(b), "iterations"));
    ck_assert_ptr_null(km_info_find(km_model_training(b), "solver"));
    free(pa);
    free(pb);
    free(Y);
    km_model_free(a);
    km_model_free(b);
    unload(&dt);
}
END_TEST

/* The accuracy claim at a size where the exact solver still runs:
 * n = 5000 rows of a smooth target with noise, 1000 test rows; with
 * m = 2000 uniform centres the test RMSE (against the noise-free target)
 * is within 2 % of exact KRR's, and with m = 200 it is measurably worse
 * (so the comparison can fail). */
static double test_rmse(const km_model *m, const double *T, const double *f,
                        size_t nt)
{
    double *p = malloc(nt * sizeof *p), s = 0;
    ck_assert_int_eq(km_krr_predict(m, T, nt, p, NULL), KM_OK);
    for (size_t i = 0; i < nt; i++)
        s += (p[i] - f[i]) * (p[i] - f[i]);
    free(p);
    return sqrt(s / (double)nt);
}

START_TEST(accuracy_near_exact_at_n_5000)
{
    enum { NBIG = 5000, NTEST = 1000, D5 = 5 };
    double *X = malloc((NBIG + NTEST) * D5 * sizeof *X), *y = malloc(NBIG * sizeof *y);
    double *f = malloc((NBIG + NTEST) * sizeof *f);
    km_rng r = {12345};
    for (size_t i = 0; i < NBIG + NTEST; i++) {
        double *x = X + i * D5;
        for (size_t j = 0; j < D5; j++)
            x[j] = 2 * km_rng_uniform(&r);
        f[i] = sin(2 * x[0]) + 0.5 * x[1] * x[2] - x[3] * x[3] + 0.3 * x[4];
        if (i < NBIG)
            y[i] = f[i] + 0.1 * km_rng_uniform(&r);
    }
    const double *T = X + NBIG * D5, *fT = f + NBIG;
    km_kernel k = rbf();
    km_krr_params ex = km_krr_params_default();
    ex.alpha = 1.0;
    km_krr_params big = nystrom(2000, 1e-9), small = nystrom(200, 1e-9);
    big.alpha = small.alpha = ex.alpha;
    km_model *me = NULL, *mb = NULL, *ms = NULL;
    km_error err = {0};
    ck_assert_int_eq(km_krr_fit(&k, &ex, X, NBIG, D5, y, 1, NULL, &me, &err),
                     KM_OK);
    ck_assert_msg(km_krr_fit(&k, &big, X, NBIG, D5, y, 1, NULL, &mb, &err)
                      == KM_OK, "%s", err.message);
    ck_assert_msg(km_krr_fit(&k, &small, X, NBIG, D5, y, 1, NULL, &ms, &err)
                      == KM_OK, "%s", err.message);
    double re = test_rmse(me, T, fT, NTEST), rb = test_rmse(mb, T, fT, NTEST),
           rs = test_rmse(ms, T, fT, NTEST);
    fprintf(stderr, "# test RMSE: exact %.5f, nystrom m=2000 %.5f, "
            "m=200 %.5f\n", re, rb, rs);
    ck_assert_msg(rb <= 1.02 * re, "m = 2000: RMSE %g, exact %g", rb, re);
    ck_assert_msg(rs > rb, "m = 200 (%g) should be worse than m = 2000 (%g)",
                  rs, rb);
    km_model_free(me);
    km_model_free(mb);
    km_model_free(ms);
    free(X);
    free(y);
    free(f);
}
END_TEST

/* _i: the centres' rule; with rpcholesky the draw reports progress up to
 * 0.3, and a cancel in it (calls 1 and 2: its rounds) stops the fit. */
START_TEST(progress_and_cancel)
{
    data dt;
    load(&dt);
    km_kernel k = rbf();
    km_krr_params p = nystrom(M, 1e-13);
    p.centres = (km_krr_centre_rule)_i;
    km_stopper all = {0, 1 << 30, 0};
    km_fit_control ctl = {km_stop_cb, &all};
    km_model *m = NULL;
    ck_assert_int_eq(km_krr_fit(&k, &p, dt.X, N, DIM, dt.y, 1, &ctl, &m,
                                NULL), KM_OK);
    ck_assert_double_eq(all.last, 1.0);
    int calls = all.calls;
    ck_assert_int_ge(calls, 5);
    km_model_free(m);
    /* a cancel anywhere: at the start, in the first pass (or the draw),
     * mid-CG */
    int at[] = {0, 1, 2, calls / 2, calls - 2};
    for (size_t i = 0; i < sizeof at / sizeof *at; i++) {
        km_stopper s = {0, at[i], 0};
        ctl.ctx = &s;
        m = NULL;
        km_error err = {0};
        ck_assert_int_eq(km_krr_fit(&k, &p, dt.X, N, DIM, dt.y, 1, &ctl, &m,
                                    &err), KM_ECANCELLED);
        ck_assert_ptr_null(m);
        ck_assert_str_eq(err.message, "fit cancelled");
        if (_i == KM_KRR_CENTRES_RPCHOLESKY && at[i] <= 2)
            ck_assert_double_le(s.last, 0.3);
    }
    unload(&dt);
}
END_TEST

START_TEST(checks_name_the_field)
{
    km_krr_params p = nystrom(10, 1e-7);
    km_error err;
    ck_assert_int_eq(km_krr_check(&p, 10, &err), KM_OK);
    p.n_centres = 11;
    ck_assert_int_eq(km_krr_check(&p, 10, &err), KM_EPROBLEM);
    ck_assert_ptr_nonnull(strstr(err.message, "params.n_centres"));
    p.n_centres = 0; /* the default, min(n, 1000) */
    ck_assert_int_eq(km_krr_check(&p, 10, &err), KM_OK);
    ck_assert_uint_eq(km_krr_centres(&p, 10), 10);
    ck_assert_uint_eq(km_krr_centres(&p, 5000), 1000);
    p.cg_tol = 0;
    ck_assert_int_eq(km_krr_check(&p, 10, &err), KM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "params.cg_tol"));
    p.cg_tol = NAN;
    ck_assert_int_eq(km_krr_check(&p, 10, &err), KM_EINVAL);
    p.cg_tol = 1e-7;
    p.cg_max_iter = 0;
    ck_assert_int_eq(km_krr_check(&p, 10, &err), KM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "params.cg_max_iter"));
    p.cg_max_iter = 1;
    p.solver = KM_KRR_SOLVER_COUNT;
    ck_assert_int_eq(km_krr_check(&p, 10, &err), KM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "params.solver"));
    /* the exact solver neither checks nor uses the others: {alpha} as
     * before they existed */
    km_krr_params old = {.alpha = 0.5};
    ck_assert_int_eq(km_krr_check(&old, 10, &err), KM_OK);
    ck_assert_str_eq(km_krr_solver_name(KM_KRR_SOLVER_EXACT), "exact");
    ck_assert_str_eq(km_krr_solver_name(KM_KRR_SOLVER_NYSTROM), "nystrom");
    ck_assert_ptr_null(km_krr_solver_name(KM_KRR_SOLVER_COUNT));
}
END_TEST

/* Admission: a 10^6-row nystrom fit needs O(m^2 + block m + n), well
 * within any default budget (75 % of a machine's memory), where its
 * exact version needs 4 n^2 = 4 TB (the packed double factor). */
START_TEST(fit_bytes_of_each_solver)
{
    const size_t n = 1000000, d = 20;
    km_krr_params ex = km_krr_params_default(), ny = ex;
    ny.solver = KM_KRR_SOLVER_NYSTROM;
    size_t exact = km_krr_fit_bytes(n, d, 1, &ex);
    ck_assert_uint_eq(exact, km_krr_fit_bytes(n, d, 1, NULL));
    ck_assert_uint_ge(exact, (size_t)4e12);
    ny.n_centres = 1000;
    size_t nys = km_krr_fit_bytes(n, d, 1, &ny);
    /* T and A (16 MB), a block of 2^21 values (16.8 MB), the draw's
     * indices (8 MB), the data-sized rest small */
    ck_assert_uint_ge(nys, 2 * 8 * 1000 * 1000 + 8 * ((size_t)1 << 21));
    ck_assert_uint_le(nys, (size_t)64 << 20);
    ny.n_centres = 10000; /* T and A: 1.6 GB */
    nys = km_krr_fit_bytes(n, d, 1, &ny);
    ck_assert_uint_ge(nys, (size_t)16e8);
    ck_assert_uint_le(nys, (size_t)17e8);
    /* through the descriptor, as the API asks */
    km_problem pb = {NULL, n, d, NULL, 1, NULL, 0};
    ck_assert_uint_eq(km_algorithm_fit_bytes(KM_ALGO_KRR, &ny, &pb), nys);
    ck_assert_uint_eq(km_algorithm_fit_bytes(KM_ALGO_KRR, &ex, &pb), exact);
    /* the exact solver's estimate: the packed double triangle (8 n (n +
     * 1) / 2 bytes), a block of at most 2^20 kernel values, O(n) more */
    size_t e1000 = km_krr_fit_bytes(1000, 2, 1, NULL);
    ck_assert_uint_ge(e1000, (size_t)8 * 1000 * 1001 / 2);
    ck_assert_uint_le(e1000, (size_t)8 * 1000 * 1001 / 2 +
                                 8 * ((size_t)1 << 20) + 8 * 100 * 1000);
}
END_TEST

/* A search of nystrom points is fitted point by point (krr's closed
 * forms are the exact solver's): its scores are those of the fits. */
START_TEST(search_fits_nystrom_points)
{
    data dt;
    load(&dt);
    km_kernel ks[2] = {rbf(), rbf()};
    km_krr_params ps[2] = {nystrom(40, 1e-10), nystrom(40, 1e-10)};
    ps[1].alpha = 1.0;
    km_search_spec s = {KM_ALGO_KRR, {KM_SCALE_NONE, 0}, KM_SCORING_NEG_MSE,
                        {KM_CV_KFOLD, 3, 0, 0, 0, NULL}, 2, ks, ps};
    km_problem pb = {dt.X, 300, DIM, dt.y, 1, NULL, 0};
    km_search_result r;
    km_error err = {0};
    ck_assert_msg(km_search(&s, &pb, NULL, &r, &err) == KM_OK, "%s",
                  err.message);
    /* fold 0 of point 0 by hand: rows 100..299 train, 0..99 test */
    km_model *m = NULL;
    ck_assert_int_eq(km_krr_fit(&ks[0], &ps[0], dt.X + 100 * DIM, 200, DIM,
                                dt.y + 100, 1, NULL, &m, NULL), KM_OK);
    double out[100], mse = 0;
    ck_assert_int_eq(km_krr_predict(m, dt.X, 100, out, NULL), KM_OK);
    for (size_t i = 0; i < 100; i++)
        mse += (out[i] - dt.y[i]) * (out[i] - dt.y[i]) / 100;
    km_model_free(m);
    ck_assert(r.mean[0] < 0 && r.std[0] > 0);
    /* the mean of three folds includes this one's -mse */
    ck_assert(fabs(r.mean[0]) > 0.2 * mse && fabs(r.mean[0]) < 5 * mse);
    km_search_result_cleanup(&r);
    s.cv.kind = KM_CV_GCV;
    ck_assert_int_eq(km_search(&s, &pb, NULL, &r, &err), KM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "params.solver"));
    km_search_result_cleanup(&r);
    unload(&dt);
}
END_TEST

/* The fused pass on three threads (each row block split three ways,
 * three accumulators summed), with two outputs y and -y: both equal
 * Nystroem + Ridge on the fixture's centres to 1e-8. */
START_TEST(threads_and_outputs_same_as_sklearn)
{
    data dt;
    load(&dt);
    km_kernel k = rbf();
    km_krr_params p = nystrom(M, 1e-13);
    double *Y = malloc(2 * N * sizeof *Y);
    for (size_t i = 0; i < N; i++) {
        Y[2 * i] = dt.y[i];
        Y[2 * i + 1] = -dt.y[i];
    }
    km_fit_control ctl = {NULL, NULL, 3};
    km_model *m = NULL;
    km_error err = {0};
    ck_assert_msg(km_krr_fit_nystrom(&k, &p, dt.X, N, DIM, Y, 2, dt.centres,
                                     NULL, NULL, &ctl, &m, &err) == KM_OK,
                  "%s", err.message);
    double *out = malloc(2 * dt.nt * sizeof *out);
    double *o0 = malloc(dt.nt * sizeof *o0), *o1 = malloc(dt.nt * sizeof *o1);
    ck_assert_int_eq(km_krr_predict(m, dt.T, dt.nt, out, NULL), KM_OK);
    for (size_t i = 0; i < dt.nt; i++) {
        o0[i] = out[2 * i];
        o1[i] = -out[2 * i + 1];
    }
    double e0 = km_max_rel_err(o0, dt.pred, dt.nt, 1e-3);
    double e1 = km_max_rel_err(o1, dt.pred, dt.nt, 1e-3);
    ck_assert_msg(e0 <= 1e-8 && e1 <= 1e-8, "predictions off by %g and %g "
                  "relative", e0, e1);
    free(o0);
    free(o1);
    free(out);
    free(Y);
    km_model_free(m);
    unload(&dt);
}
END_TEST

static Suite *nystrom_suite(void)
{
    Suite *s = suite_create("km_nystrom");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, same_as_sklearn_on_given_centres);
    tcase_add_test(tc, seeded_draw_and_figures);
    tcase_add_test(tc, all_rows_as_centres_is_exact);
    tcase_add_test(tc, accuracy_near_exact_at_n_5000);
    tcase_add_loop_test(tc, progress_and_cancel, 0, KM_KRR_CENTRES_COUNT);
    tcase_add_test(tc, checks_name_the_field);
    tcase_add_test(tc, fit_bytes_of_each_solver);
    tcase_add_test(tc, search_fits_nystrom_points);
    tcase_add_test(tc, threads_and_outputs_same_as_sklearn);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    return s;
}

KM_TEST_MAIN(nystrom_suite)
