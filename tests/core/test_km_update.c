/*
 * test_km_update.c - model updates (km_model_update) against refits: an
 * exact gpr model updated by k new rows gives the predictive mean,
 * variance and log marginal likelihood of a full refit on all the rows
 * (at the fitted hyperparameters, also when the optimizer chose them) to
 * 1e-9, with and without normalize_y, for several k and repeated
 * updates; a krr model fitted with params.keep_factor gives a refit's
 * predictions (1, 3 and 6 outputs) and rkhs_norm_sq to 1e-9 relative; with
 * preprocessing, the stored statistics are applied (a refit on the rows
 * scaled by them); the factor form's file (version 7's payload, in a
 * version 8 file: it keeps a drift reference) round-trips and its
 * numbers are checked on load, as an updated model's version 12 file with
 * its factor's two blocks does (bit for bit); refusals and bad rows are
 * named.
 */
#include <stdint.h>

#include "../check_main.h"
#include "model_bytes.h"
#include "km.h"
#include "model/km_model_internal.h"

#define TOL 1e-9
#define D 3
#define NT 25
#define DATA_OFFSET 3.0

#include "update_data.h"

static void close_rel(const double *a, const double *b, size_t n,
                      const char *what)
{
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(fabs(a[i] - b[i]) <= TOL * fmax(1.0, fabs(b[i])),
                      "%s[%zu]: update %.17g, refit %.17g", what, i, a[i],
                      b[i]);
}

static double figure(const km_model *m, const char *key)
{
    const km_info_entry *e = km_info_find(km_model_training(m), key);
    ck_assert_msg(e && e->count >= 1, "figure %s", key);
    return e->values[0];
}

static km_model *fit(km_algorithm a, const km_kernel *k, const void *p,
                     const km_preprocess *pre, const double *X, size_t n,
                     const double *Y, size_t q)
{
    km_problem pb = {X, n, D, Y, q, NULL, 0};
    km_model *m = NULL;
    km_error err = {0};
    ck_assert_msg(km_fit(a, k, p, pre, &pb, NULL, &m, &err) == KM_OK, "%s",
                  err.message);
    return m;
}

static km_model *update(const km_model *m, const double *X, size_t k,
                        const double *Y, size_t q)
{
    km_model *out = NULL;
    km_error err = {0};
    ck_assert_msg(km_model_update(m, X, k, D, Y, q, NULL, &out, &err) ==
                      KM_OK, "%s", err.message);
    return out;
}

/* The answers of u and r on T agree (answer: KM_OUT_*, width per row). */
static void same_answer(const km_model *u, const km_model *r, unsigned ans,
                        const double *T, size_t w, const char *what)
{
    double *a = malloc(NT * w * sizeof *a), *b = malloc(NT * w * sizeof *b);
    km_error err = {0};
    ck_assert(km_predict(u, ans, T, NT, a, &err) == KM_OK);
    ck_assert(km_predict(r, ans, T, NT, b, &err) == KM_OK);
    close_rel(a, b, NT * w, what);
    free(a);
    free(b);
}

/* gpr: n rows fitted, then updates of the k's in turn, each compared with
 * a refit on all the rows so far at the model's hyperparameters. */
static void gpr_case(int normalize, int optimise, const size_t *ks,
                     size_t nk)
{
    size_t n0 = 50, total = n0;
    for (size_t i = 0; i < nk; i++)
        total += ks[i];
    double *X, *Y, *T, *YT;
    make_data(total, 1, &X, &Y);
    make_data(NT, 1, &T, &YT);
    km_kernel k = rbf(0.4);
    km_gpr_params p = km_gpr_params_default();
    p.noise = 0.05;
    p.signal_variance = 1.5;
    p.normalize_y = normalize;
    if (optimise)
        p.optimizer = KM_GPR_OPTIMIZER_LBFGS;
    km_model *m = fit(KM_ALGO_GPR, &k, &p, NULL, X, n0, Y, 1);
    /* the refits run at the fitted hyperparameters */
    km_gpr_params fixed = p;
    fixed.optimizer = KM_GPR_OPTIMIZER_NONE;
    fixed.signal_variance = figure(m, "signal_variance");
    fixed.noise = figure(m, "noise");
    km_kernel kf = rbf(km_model_kernel(m)->gamma);
    size_t n = n0;
    for (size_t i = 0; i < nk; i++) {
        km_model *u = update(m, X + n * D, ks[i], Y + n, 1);
        n += ks[i];
        ck_assert_uint_eq(km_model_n_samples(u), n);
        km_model *r = fit(KM_ALGO_GPR, &kf, &fixed, NULL, X, n, Y, 1);
        same_answer(u, r, KM_OUT_VALUES, T, 1, "mean");
        same_answer(u, r, KM_OUT_VARIANCES, T, 1, "variance");
        double lu = figure(u, "log_marginal_likelihood");
        double lr = figure(r, "log_marginal_likelihood");
        close_rel(&lu, &lr, 1, "log_marginal_likelihood");
        ck_assert_double_eq(figure(u, "rows_added"), (double)ks[i]);
        ck_assert_double_eq(figure(u, "updates"), (double)(i + 1));
        km_model_free(r);
        km_model_free(m);
        m = u;
    }
    km_model_free(m);
    free(X);
    free(Y);
    free(T);
    free(YT);
}

START_TEST(gpr_equals_refit)
{
    seed_state = 1;
    const size_t ks[] = {1, 7, 30};
    gpr_case(0, 0, ks, 3);
    gpr_case(1, 0, ks, 3);
    const size_t one[] = {12};
    gpr_case(1, 1, one, 1); /* the optimizer's hyperparameters kept */
}
END_TEST

/* krr keep_factor: the same with q outputs, against refits with
 * keep_factor and against the default (mixed precision) solver. */
static void krr_case(size_t q)
{
    const size_t ks[] = {1, 5, 40, 3}, n0 = 60;
    size_t total = n0;
    for (size_t i = 0; i < 4; i++)
        total += ks[i];
    double *X, *Y, *T, *YT;
    make_data(total, q, &X, &Y);
    make_data(NT, q, &T, &YT);
    km_kernel k = rbf(0.5);
    km_krr_params p = km_krr_params_default();
    p.alpha = 0.1;
    p.keep_factor = 1;
    km_krr_params plain = km_krr_params_default();
    plain.alpha = 0.1;
    km_model *m = fit(KM_ALGO_KRR, &k, &p, NULL, X, n0, Y, q);
    ck_assert_ptr_null(km_model_update_refusal(m));
    size_t n = n0;
    for (size_t i = 0; i < 4; i++) {
        km_model *u = update(m, X + n * D, ks[i], Y + n * q, q);
        n += ks[i];
        km_model *r = fit(KM_ALGO_KRR, &k, &p, NULL, X, n, Y, q);
        km_model *r2 = fit(KM_ALGO_KRR, &k, &plain, NULL, X, n, Y, q);
        same_answer(u, r, KM_OUT_VALUES, T, q, "prediction");
        same_answer(u, r2, KM_OUT_VALUES, T, q, "prediction (mixed refit)");
        const km_info_entry *a = km_info_find(km_model_training(u),
                                              "rkhs_norm_sq");
        const km_info_entry *b = km_info_find(km_model_training(r),
                                              "rkhs_norm_sq");
        ck_assert(a && b && a->count == q && b->count == q);
        close_rel(a->values, b->values, q, "rkhs_norm_sq");
        km_model_free(r);
        km_model_free(r2);
        km_model_free(m);
        m = u;
    }
    km_model_free(m);
    free(X);
    free(Y);
    free(T);
    free(YT);
}

START_TEST(krr_equals_refit)
{
    seed_state = 2;
    krr_case(1);
    krr_case(3); /* column by column */
    krr_case(6); /* the level-3 solves */
}
END_TEST

/* With preprocessing the statistics of the first fit are applied: the
 * update equals a refit (without preprocessing) on all rows scaled by
 * them, with y less the stored mean, its predictions plus that mean. */
START_TEST(preprocessing_kept)
{
    seed_state = 3;
    size_t n0 = 40, k = 15, n = n0 + k, q = 2;
    double *X, *Y, *T, *YT;
    make_data(n, q, &X, &Y);
    make_data(NT, q, &T, &YT);
    km_kernel kr = rbf(0.3);
    km_krr_params p = km_krr_params_default();
    p.alpha = 0.2;
    p.keep_factor = 1;
    km_preprocess pre = {KM_SCALE_STANDARDIZE, 1};
    km_model *m = fit(KM_ALGO_KRR, &kr, &p, &pre, X, n0, Y, q);
    km_model *u = update(m, X + n0 * D, k, Y + n0 * q, q);
    km_preprocess_view v = km_model_preprocess(u);
    ck_assert_ptr_nonnull(v.x_shift);
    ck_assert_ptr_nonnull(v.y_mean);
    double *Xs = malloc(n * D * sizeof *Xs), *Ys = malloc(n * q * sizeof *Ys);
    double *Ts = malloc(NT * D * sizeof *Ts);
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < D; j++)
            Xs[i * D + j] = (X[i * D + j] - v.x_shift[j]) / v.x_scale[j];
        for (size_t j = 0; j < q; j++)
            Ys[i * q + j] = Y[i * q + j] - v.y_mean[j];
    }
    for (size_t i = 0; i < NT * D; i++)
        Ts[i] = (T[i] - v.x_shift[i % D]) / v.x_scale[i % D];
    km_model *r = fit(KM_ALGO_KRR, &kr, &p, NULL, Xs, n, Ys, q);
    double *a = malloc(NT * q * sizeof *a), *b = malloc(NT * q * sizeof *b);
    km_error err = {0};
    ck_assert(km_predict(u, KM_OUT_VALUES, T, NT, a, &err) == KM_OK);
    ck_assert(km_predict(r, KM_OUT_VALUES, Ts, NT, b, &err) == KM_OK);
    for (size_t i = 0; i < NT * q; i++)
        b[i] += v.y_mean[i % q];
    close_rel(a, b, NT * q, "preprocessed prediction");
    /* the statistics are the first fit's */
    km_preprocess_view v0 = km_model_preprocess(m);
    for (size_t j = 0; j < D; j++)
        ck_assert_double_eq(v0.x_shift[j], v.x_shift[j]);
    free(a);
    free(b);
    free(Xs);
    free(Ys);
    free(Ts);
    km_model_free(r);
    km_model_free(u);
    km_model_free(m);
    free(X);
    free(Y);
    free(T);
    free(YT);
}
END_TEST

/* The factor form's file: version 8 (a fitted model keeps a drift
 * reference) whose reference section names version 7's payload layout, the
 * same answers and update after a
 * round trip; a factor with a diagonal entry <= 0 or not finite refused. */
START_TEST(factor_file)
{
    seed_state = 4;
    size_t n = 30, k = 6, q = 2;
    double *X, *Y;
    make_data(n + k, q, &X, &Y);
    km_kernel kr = rbf(0.5);
    km_krr_params p = km_krr_params_default();
    p.keep_factor = 1;
    km_model *m = fit(KM_ALGO_KRR, &kr, &p, NULL, X, n, Y, q);
    unsigned char *buf = NULL;
    size_t len = 0;
    km_error err = {0};
    ck_assert(km_model_save_buffer(m, &buf, &len, &err) == KM_OK);
    ck_assert_uint_eq(get32(buf + 4), 8);
    size_t rows;
    ck_assert_ptr_nonnull(km_model_reference(m, &rows));
    ck_assert_uint_eq(rows, n);
    /* the payload's layout: the u32 before the reference's row count */
    int found = 0;
    for (size_t i = 36; i + 20 <= len && !found; i++)
        found = get32(buf + i) == 7 && get32(buf + i + 4) == n &&
                get32(buf + i + 8) == 0 && get32(buf + i + 12) == n * D;
    ck_assert_msg(found, "no reference section naming payload format 7");
    km_model *back = NULL;
    ck_assert_msg(km_model_load_buffer(buf, len, &back, &err) == KM_OK, "%s",
                  err.message);
    ck_assert_uint_eq(km_model_bytes(back), km_model_bytes(m));
    km_model *u1 = update(m, X + n * D, k, Y + n * q, q);
    km_model *u2 = update(back, X + n * D, k, Y + n * q, q);
    same_answer(u1, u2, KM_OUT_VALUES, X, q, "after a round trip");
    /* L[0][0] is the first value of the triangle: 8 bytes before the
     * checksum and the triangle's n (n + 1) / 2 values, past its count */
    size_t tri = n * (n + 1) / 2;
    size_t at = len - 4 - tri * 8;
    const double bad[] = {0.0, -1.0, NAN};
    for (size_t i = 0; i < 3; i++)
        refused_at(buf, len, at, bad[i], "factor");
    free(buf);
    km_model_free(u1);
    km_model_free(u2);
    km_model_free(back);
    km_model_free(m);
    free(X);
    free(Y);
}
END_TEST

/* What cannot be updated says what can; bad rows are named. */
START_TEST(refusals)
{
    seed_state = 5;
    size_t n = 20, q = 1;
    double *X, *Y;
    make_data(n, q, &X, &Y);
    km_kernel kr = rbf(0.5);
    km_krr_params p = km_krr_params_default();
    km_model *plain = fit(KM_ALGO_KRR, &kr, &p, NULL, X, n, Y, q);
    km_model *out = NULL;
    km_error err = {0};
    ck_assert_int_eq(km_model_update(plain, X, 2, D, Y, q, NULL, &out, &err),
                     KM_ECONFLICT);
    /* the reason; the list of what can be updated too when the message
     * holds both (km_update_possible gives it) */
    ck_assert_msg(strstr(err.message, "keep_factor"), "%s", err.message);
    char can[256];
    km_update_possible(can, sizeof can);
    ck_assert_str_eq(can, "krr models fitted with params.keep_factor, svc "
                          "and svr models fitted with params.keep_rows and "
                          "exact gpr models and nystrom gpr models fitted "
                          "with params.keep_factor");

    km_svm_params sp = km_svm_params_default();
    int *cls = malloc(n * sizeof *cls);
    for (size_t i = 0; i < n; i++)
        cls[i] = Y[i] > 3.0;
    km_problem pb = {X, n, D, NULL, 0, cls, 2};
    km_model *svc = NULL;
    ck_assert(km_fit(KM_ALGO_SVC, &kr, &sp, NULL, &pb, NULL, &svc, &err) ==
              KM_OK);
    ck_assert_ptr_nonnull(km_model_update_refusal(svc));
    ck_assert_int_eq(km_model_update(svc, X, 2, D, Y, q, NULL, &out, &err),
                     KM_ECONFLICT);
    ck_assert_msg(strstr(err.message, "keep_rows"), "%s", err.message);
    ck_assert_uint_eq(km_model_update_bytes(svc, 2), SIZE_MAX);

    km_gpr_params gp = km_gpr_params_default();
    gp.solver = KM_GPR_SOLVER_NYSTROM;
    gp.n_centres = 10;
    km_model *nys = fit(KM_ALGO_GPR, &kr, &gp, NULL, X, n, Y, 1);
    ck_assert_msg(strstr(km_model_update_refusal(nys), "nystrom"), "%s",
                  km_model_update_refusal(nys));

    p.keep_factor = 1;
    km_model *m = fit(KM_ALGO_KRR, &kr, &p, NULL, X, n, Y, q);
    /* the new factor block (5 x 25) and the rest, not a 25 x 25 copy */
    ck_assert(km_model_update_bytes(m, 5) > 8 * 5 * 25);
    ck_assert(km_model_update_bytes(m, 5) < 8 * 25 * 25 + 8 * 25 * (D + 2));
    ck_assert_int_eq(km_model_update(m, X, 2, D - 1, Y, q, NULL, &out, &err),
                     KM_EINVAL);
    ck_assert_msg(strstr(err.message, "columns"), "%s", err.message);
    ck_assert_int_eq(km_model_update(m, X, 2, D, Y, 2, NULL, &out, &err),
                     KM_EINVAL);
    ck_assert_msg(strstr(err.message, "outputs"), "%s", err.message);
    double bad[D] = {1, NAN, 0}, y1 = 1;
    ck_assert_int_eq(km_model_update(m, bad, 1, D, &y1, q, NULL, &out, &err),
                     KM_EINVAL);
    ck_assert_msg(strstr(err.message, "X[0][1]"), "%s", err.message);
    double yn = INFINITY;
    ck_assert_int_eq(km_model_update(m, X, 1, D, &yn, q, NULL, &out, &err),
                     KM_EINVAL);
    ck_assert_int_eq(km_model_update(m, X, 0, D, Y, q, NULL, &out, &err),
                     KM_EINVAL);

    /* keep_factor belongs to the exact and nystrom solvers
     * (test_km_nys_update.c) */
    km_krr_params kn = km_krr_params_default();
    kn.keep_factor = 1;
    kn.solver = KM_KRR_SOLVER_RFF;
    ck_assert_int_eq(km_krr_check(&kn, n, &err), KM_EINVAL);
    ck_assert_msg(strstr(err.message, "keep_factor"), "%s", err.message);

    km_model_free(plain);
    km_model_free(svc);
    km_model_free(nys);
    km_model_free(m);
    free(cls);
    free(X);
    free(Y);
}
END_TEST

/* An updated model's factor has two blocks: its file is version 12 and
 * lists them with their rows (the loaded model answers bit for bit as the
 * one saved, and its next update too); a list that is empty, skips a row,
 * names a block file (no store to read it from), has an unknown place or
 * a bad diagonal in the new block is refused, naming what. */
START_TEST(block_list_file)
{
    seed_state = 5;
    size_t n = 30, k = 6, q = 1, N = n + k;
    double *X, *Y;
    make_data(N + k, q, &X, &Y);
    km_kernel kr = rbf(0.5);
    km_krr_params p = km_krr_params_default();
    p.keep_factor = 1;
    km_model *m = fit(KM_ALGO_KRR, &kr, &p, NULL, X, n, Y, q);
    km_model *u = update(m, X + n * D, k, Y + n * q, q);
    unsigned char *buf = NULL;
    size_t len = 0;
    km_error err = {0};
    ck_assert(km_model_save_buffer(u, &buf, &len, &err) == KM_OK);
    ck_assert_uint_eq(get32(buf + 4), 12);
    km_model *back = NULL;
    ck_assert_msg(km_model_load_buffer(buf, len, &back, &err) == KM_OK, "%s",
                  err.message);
    double a[NT], b[NT];
    ck_assert(km_predict(u, KM_OUT_VALUES, X, NT, a, &err) == KM_OK);
    ck_assert(km_predict(back, KM_OUT_VALUES, X, NT, b, &err) == KM_OK);
    ck_assert_msg(!memcmp(a, b, sizeof a), "loaded: not bit for bit");
    km_model *u1 = update(u, X + N * D, k, Y + N * q, q);
    km_model *u2 = update(back, X + N * D, k, Y + N * q, q);
    ck_assert(km_predict(u1, KM_OUT_VALUES, X, NT, a, &err) == KM_OK);
    ck_assert(km_predict(u2, KM_OUT_VALUES, X, NT, b, &err) == KM_OK);
    ck_assert_msg(!memcmp(a, b, sizeof a), "next update: not bit for bit");
    /* the end of the payload: u32 count, then per block 28 bytes (id,
     * first, rows, where) and its rows; block 1 (rows 30 to 35) last */
    size_t rows1 = k * n + k * (k + 1) / 2, rows0 = n * (n + 1) / 2;
    size_t h1 = len - 4 - rows1 * 8 - 28, h0 = h1 - rows0 * 8 - 28;
    size_t count = h0 - 4;
    ck_assert_uint_eq(get32(buf + count), 2);
    ck_assert_uint_eq(get64(buf + h1 + 8), n);
    struct {
        size_t at;
        int bytes;
        uint64_t v;
        const char *says;
    } cases[] = {
        {count, 4, 0, "block list"},
        {h1 + 8, 8, n + 1, "does not continue"},
        {h1 + 24, 4, 1, "block files"},
        {h1 + 24, 4, 2, "does not continue"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        unsigned char *c = malloc(len);
        memcpy(c, buf, len);
        if (cases[i].bytes == 4)
            put32(c + cases[i].at, (uint32_t)cases[i].v);
        else
            put64(c + cases[i].at, cases[i].v);
        fix_crc(c, len);
        km_model *x = NULL;
        ck_assert_int_eq(km_model_load_buffer(c, len, &x, &err), KM_ECORRUPT);
        ck_assert_msg(strstr(err.message, cases[i].says), "case %zu: %s", i,
                      err.message);
        free(c);
    }
    /* L[30][30], the new block's first diagonal value: row 30's last */
    refused_at(buf, len, h1 + 28 + n * 8, -1.0, "factor L[30][30]");
    free(buf);
    km_model_free(m);
    km_model_free(u);
    km_model_free(back);
    km_model_free(u1);
    km_model_free(u2);
    free(X);
    free(Y);
}
END_TEST

Suite *update_suite(void)
{
    Suite *s = suite_create("update");
    TCase *tc = tcase_create("update");
    tcase_add_test(tc, gpr_equals_refit);
    tcase_add_test(tc, krr_equals_refit);
    tcase_add_test(tc, preprocessing_kept);
    tcase_add_test(tc, factor_file);
    tcase_add_test(tc, block_list_file);
    tcase_add_test(tc, refusals);
    tcase_set_timeout(tc, 120);
    suite_add_tcase(s, tc);
    return s;
}

KM_TEST_MAIN(update_suite)
