/*
 * test_km_drift.c - the kernel two-sample test (core/select/km_drift.c) and
 * the drift reference a model keeps (core/model/km_model.c):
 *   - the unbiased MMD^2 equals an independent numpy implementation
 *     (tests/fixtures/gen_drift_refs.py) to 1e-12 for rbf, laplacian,
 *     linear and the spectrum kernel on strings, and the median-heuristic
 *     gamma equals numpy's;
 *   - the permutation p-value is exact on a case of 2 + 2 rows whose six
 *     relabellings are enumerated here by hand, replaying the documented
 *     draws;
 *   - seeded statistics (B = 200 permutations, rbf of gamma 0.1): under no
 *     shift (100 + 100 rows of ten standard normal features) at most 7% of
 *     200 trials reject at level 0.05; a 0.5 standard deviation mean shift
 *     in one feature of ten with 500 rows each is rejected in at least 95
 *     of 100 trials; strings of 30 letters of ACGT whose A goes from 25% to
 *     35% (150 + 150, spectrum of length 3) in at least 38 of 40, and the
 *     same distribution in at most 4 of 40; a string model (krr, spectrum)
 *     tests its own kernel: the shifted strings rejected, the same not;
 *   - a model keeps its raw training rows (a seeded subsample of 1000 past
 *     that), writes them as format version 8 and loads them back (a
 *     hostile count is refused), an update's model keeps a refit's
 *     reference (the old rows and the new), and km_drift uses its own characteristic
 *     kernel or the median-heuristic rbf, applies its preprocessing, and
 *     refuses precomputed models and models without a reference (409).
 */
#include "../check_main.h"
#include "model_bytes.h"
#include "km.h"
#include "base/km_base_internal.h"

#define TIGHT 1e-12

static double *fixture(const char *name, size_t want)
{
    size_t n;
    double *v = km_read_fixture(name, &n);
    ck_assert_msg(want == 0 || n == want, "%s has %zu numbers, expected %zu",
                  name, n, want);
    return v;
}

static void near(double got, double want, double tol, const char *what)
{
    double scale = fabs(want) > 1 ? fabs(want) : 1;
    ck_assert_msg(fabs(got - want) <= tol * scale, "%s: %.17g, expected "
                  "%.17g (tolerance %g)", what, got, want, tol);
}

/* ------------------------------------------------------------ numpy */

START_TEST(mmd2_matches_numpy)
{
    double *X = fixture("drift_X.txt", 30 * 4);
    double *Y = fixture("drift_Y.txt", 25 * 4);
    double *ref = fixture("drift_ref.txt", 5);
    km_kernel_type types[3] = {KM_KERNEL_RBF, KM_KERNEL_LAPLACIAN,
                               KM_KERNEL_LINEAR};
    double gammas[3] = {0.3, 0.2, 0};
    km_error err;
    for (int t = 0; t < 3; t++) {
        km_kernel k;
        km_kernel_init(&k, types[t]);
        k.gamma = gammas[t];
        double v;
        ck_assert_int_eq(km_mmd2(&k, X, 30, Y, 25, 4, &v, &err), KM_OK);
        near(v, ref[t], TIGHT, km_kernel_type_name(types[t]));
        km_kernel_cleanup(&k);
    }
    double g = km_median_gamma(X, 30, 4);
    near(g, ref[3], TIGHT, "median gamma");
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_RBF);
    k.gamma = g;
    double v, p;
    ck_assert_int_eq(km_mmd_test(&k, X, 30, Y, 25, 4, 100, 7, NULL, &v, &p,
                                 &err), KM_OK);
    near(v, ref[4], TIGHT, "rbf at the median gamma");
    ck_assert(p > 0 && p <= 1);
    /* too few rows, bad B */
    ck_assert_int_eq(km_mmd2(&k, X, 1, Y, 25, 4, &v, &err), KM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "at least 2 rows"));
    ck_assert_int_eq(km_mmd_test(&k, X, 30, Y, 25, 4, 0, 7, NULL, &v, &p,
                                 &err), KM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "permutations"));
    km_kernel_cleanup(&k);
    free(X);
    free(Y);
    free(ref);
}
END_TEST

START_TEST(string_mmd2_matches_numpy)
{
    size_t n;
    double *flat = km_read_fixture("drift_str.txt", &n);
    double *ref = fixture("drift_str_ref.txt", 1);
    char *s[22];
    size_t len[22], at = 0, longest = 0;
    for (int i = 0; i < 22; i++) {
        len[i] = (size_t)flat[at++];
        s[i] = malloc(len[i] + 1);
        for (size_t j = 0; j < len[i]; j++)
            s[i][j] = (char)flat[at++];
        if (len[i] > longest)
            longest = len[i];
    }
    ck_assert_uint_eq(at, n);
    size_t d = km_string_width(longest);
    double *R = malloc(22 * d * sizeof *R);
    km_error err;
    ck_assert_int_eq(km_strings_pack((const char *const *)s, len, 22, d, R,
                                     &err), KM_OK);
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_SPECTRUM);
    k.length = 3;
    double v;
    ck_assert_int_eq(km_mmd2(&k, R, 12, R + 12 * d, 10, d, &v, &err), KM_OK);
    near(v, ref[0], TIGHT, "spectrum MMD^2");
    km_kernel_cleanup(&k);
    for (int i = 0; i < 22; i++)
        free(s[i]);
    free(R);
    free(flat);
    free(ref);
}
END_TEST

/* ------------------------------------------------------------ exact p */

/* The MMD^2 of rows {a, b} against the other two of the 4 x 4 Gram K. */
static double split_stat(const double K[4][4], int a, int b)
{
    int o[2], m = 0;
    for (int i = 0; i < 4; i++)
        if (i != a && i != b)
            o[m++] = i;
    return K[a][b] + K[o[0]][o[1]] -
           0.5 * (K[a][o[0]] + K[a][o[1]] + K[b][o[0]] + K[b][o[1]]);
}

START_TEST(p_value_exact_by_hand)
{
    /* x = 0, 0.1 against y = 3, 3.2 under rbf gamma 1: the observed split
     * {0, 1} (and its mirror {2, 3}) is the largest of the six. */
    double Z[4] = {0, 0.1, 3, 3.2};
    double K[4][4];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            K[i][j] = exp(-(Z[i] - Z[j]) * (Z[i] - Z[j]));
    double obs = split_stat(K, 0, 1);
    size_t Bs[3] = {1, 7, 150};
    for (int c = 0; c < 3; c++) {
        size_t B = Bs[c];
        uint64_t seed = 11 + (uint64_t)c;
        /* replay km_select.h's draws */
        km_rng r = {seed};
        size_t p[4] = {0, 1, 2, 3}, hits = 0;
        for (size_t b = 0; b < B; b++) {
            for (size_t i = 0; i < 2; i++) {
                size_t j = i + km_rng_below(&r, 4 - i), t = p[i];
                p[i] = p[j];
                p[j] = t;
            }
            if (split_stat(K, (int)p[0], (int)p[1]) >= obs - 1e-12)
                hits++;
        }
        km_kernel k;
        km_kernel_init(&k, KM_KERNEL_RBF);
        k.gamma = 1.0;
        double v, pv;
        km_error err;
        ck_assert_int_eq(km_mmd_test(&k, Z, 2, Z + 2, 2, 1, B, seed, NULL, &v,
                                     &pv, &err), KM_OK);
        near(v, obs, TIGHT, "observed statistic");
        ck_assert_msg(pv == (1.0 + (double)hits) / (1.0 + (double)B),
                      "B %zu: p %.17g, by hand %zu hits", B, pv, hits);
        km_kernel_cleanup(&k);
    }
    /* every split's statistic is one of three values; the other four
     * splits are far below: no tie at the boundary */
    ck_assert(split_stat(K, 0, 2) < obs - 0.1 && split_stat(K, 0, 3) <
              obs - 0.1);
}
END_TEST

/* ------------------------------------------------------------ statistics */

static void gauss_rows(km_rng *r, double *X, size_t n, size_t d,
                       double shift)
{
    for (size_t i = 0; i < n * d; i++)
        X[i] = km_rng_gauss(r);
    for (size_t i = 0; i < n; i++)
        X[i * d] += shift;
}

/* Rejections at level 0.05 of trials tests of n + n rows of 10 features,
 * Y's first feature shifted by shift, under the rbf of gamma 1/10 (the
 * default of a model on 10 features). */
static int rejections(int trials, size_t n, double shift, uint64_t seed)
{
    size_t d = 10;
    double *X = malloc(n * d * sizeof *X), *Y = malloc(n * d * sizeof *Y);
    km_rng r = {seed};
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_RBF);
    k.gamma = 0.1;
    int rej = 0;
    for (int t = 0; t < trials; t++) {
        gauss_rows(&r, X, n, d, 0);
        gauss_rows(&r, Y, n, d, shift);
        double v, p;
        km_error err;
        ck_assert_int_eq(km_mmd_test(&k, X, n, Y, n, d, 200,
                                     seed + (uint64_t)t, NULL, &v, &p, &err),
                         KM_OK);
        rej += p <= 0.05;
    }
    km_kernel_cleanup(&k);
    free(X);
    free(Y);
    return rej;
}

START_TEST(null_rejects_at_most_7_percent)
{
    int rej = rejections(200, 100, 0.0, 1000);
    ck_assert_msg(rej <= 14, "no shift: %d of 200 trials rejected", rej);
}
END_TEST

START_TEST(shift_rejected_95_percent)
{
    int rej = rejections(100, 500, 0.5, 2000);
    ck_assert_msg(rej >= 95, "0.5 sd shift: %d of 100 trials rejected", rej);
}
END_TEST

/* n strings of 30 letters of ACGT, A with probability pa, into R (rows of
 * d doubles). */
static void dna_rows(km_rng *r, size_t n, double pa, size_t d, double *R)
{
    char buf[30], *s[1] = {buf};
    size_t len[1] = {30};
    for (size_t i = 0; i < n; i++) {
        for (int j = 0; j < 30; j++) {
            double u = 0.5 * (km_rng_uniform(r) + 1);
            buf[j] = u < pa ? 'A' : "CGT"[km_rng_below(r, 3)];
        }
        km_error err;
        ck_assert_int_eq(km_strings_pack((const char *const *)s, len, 1, d,
                                         R + i * d, &err), KM_OK);
    }
}

START_TEST(string_shift_rejected)
{
    size_t n = 150, d = km_string_width(30);
    double *X = malloc(n * d * sizeof *X), *Y = malloc(n * d * sizeof *Y);
    km_rng r = {3000};
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_SPECTRUM);
    k.length = 3;
    int rej_shift = 0, rej_null = 0, trials = 40;
    for (int t = 0; t < trials; t++) {
        double v, p;
        km_error err;
        dna_rows(&r, n, 0.25, d, X);
        dna_rows(&r, n, 0.35, d, Y);
        ck_assert_int_eq(km_mmd_test(&k, X, n, Y, n, d, 200, (uint64_t)t,
                                     NULL, &v, &p, &err), KM_OK);
        rej_shift += p <= 0.05;
        dna_rows(&r, n, 0.25, d, Y);
        ck_assert_int_eq(km_mmd_test(&k, X, n, Y, n, d, 200, (uint64_t)t,
                                     NULL, &v, &p, &err), KM_OK);
        rej_null += p <= 0.05;
    }
    ck_assert_msg(rej_shift >= 38, "shifted 3-mers: %d of %d rejected",
                  rej_shift, trials);
    ck_assert_msg(rej_null <= 4, "same 3-mers: %d of %d rejected", rej_null,
                  trials);
    km_kernel_cleanup(&k);
    free(X);
    free(Y);
}
END_TEST

/* A string model (krr, spectrum of length 3) tests its own kernel on the
 * strings it was fitted on against shifted and unshifted ones. */
START_TEST(string_model_drift)
{
    size_t n = 150, d = km_string_width(30);
    double *X = malloc(n * d * sizeof *X), *Y = malloc(n * d * sizeof *Y);
    double *y = malloc(n * sizeof *y);
    km_rng r = {4000};
    dna_rows(&r, n, 0.25, d, X);
    for (size_t i = 0; i < n; i++)
        y[i] = (double)(i % 3);
    km_krr_params pr;
    km_algorithm_params_default(KM_ALGO_KRR, &pr);
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_SPECTRUM);
    k.length = 3;
    km_problem pb = {X, n, d, y, 1, NULL, 0};
    km_model *m = NULL;
    km_error err;
    km_status st = km_fit(KM_ALGO_KRR, &k, &pr, NULL, &pb, NULL, &m, &err);
    ck_assert_msg(st == KM_OK, "fit: %s", err.message);
    km_drift_result res;
    dna_rows(&r, n, 0.35, d, Y);
    ck_assert_int_eq(km_drift(m, Y, n, 200, 1, NULL, &res, &err), KM_OK);
    ck_assert(res.own_kernel && res.kernel == KM_KERNEL_SPECTRUM);
    ck_assert_uint_eq(res.n_reference, n);
    double v, p;
    ck_assert_int_eq(km_mmd_test(&k, X, n, Y, n, d, 200, 1, NULL, &v, &p,
                                 &err), KM_OK);
    ck_assert(v == res.mmd2 && p == res.p_value);
    ck_assert_msg(res.p_value <= 0.05, "shifted 3-mers: p %g", res.p_value);
    dna_rows(&r, n, 0.25, d, Y);
    ck_assert_int_eq(km_drift(m, Y, n, 200, 1, NULL, &res, &err), KM_OK);
    ck_assert_msg(res.p_value > 0.05, "same 3-mers: p %g", res.p_value);
    km_model_free(m);
    km_kernel_cleanup(&k);
    free(X);
    free(Y);
    free(y);
}
END_TEST

/* ------------------------------------------------------------ models */

static km_model *fit_krr(km_kernel_type t, const double *X, size_t n,
                         size_t d, km_scale scale)
{
    double *y = malloc(n * sizeof *y);
    for (size_t i = 0; i < n; i++)
        y[i] = X[i * d] - 0.5 * X[i * d + d - 1];
    km_krr_params pr;
    km_algorithm_params_default(KM_ALGO_KRR, &pr);
    km_kernel k;
    km_kernel_init(&k, t);
    km_preprocess pre = {scale, 0};
    km_problem pb = {X, n, d, y, 1, NULL, 0};
    km_model *m = NULL;
    km_error err;
    km_status st = km_fit(KM_ALGO_KRR, &k, &pr, &pre, &pb, NULL, &m, &err);
    ck_assert_msg(st == KM_OK, "fit: %s", err.message);
    km_kernel_cleanup(&k);
    free(y);
    return m;
}

START_TEST(model_keeps_reference)
{
    size_t n = 1200, d = 3;
    double *X = malloc(n * d * sizeof *X);
    km_rng r = {5};
    gauss_rows(&r, X, n, d, 0);
    km_model *small = fit_krr(KM_KERNEL_RBF, X, 40, d, KM_SCALE_NONE);
    size_t rows;
    const double *R = km_model_reference(small, &rows);
    ck_assert_uint_eq(rows, 40);
    ck_assert(memcmp(R, X, 40 * d * sizeof *R) == 0);
    km_model *big = fit_krr(KM_KERNEL_RBF, X, n, d, KM_SCALE_NONE);
    R = km_model_reference(big, &rows);
    ck_assert_uint_eq(rows, KM_DRIFT_REFERENCE_ROWS);
    /* the rows are training rows, distinct, in their order */
    size_t at = 0;
    for (size_t i = 0; i < rows; i++) {
        while (at < n && memcmp(X + at * d, R + i * d, d * sizeof *R) != 0)
            at++;
        ck_assert_msg(at < n, "reference row %zu is not a training row in "
                      "order", i);
        at++;
    }
    /* save: version 8; load: the same rows */
    unsigned char *buf;
    size_t len;
    km_error err;
    ck_assert_int_eq(km_model_save_buffer(small, &buf, &len, &err), KM_OK);
    ck_assert_uint_eq(buf[4], 8);
    km_model *back = NULL;
    km_status st = km_model_load_buffer(buf, len, &back, &err);
    ck_assert_msg(st == KM_OK, "load: %s", err.message);
    const double *B = km_model_reference(back, &rows);
    ck_assert_uint_eq(rows, 40);
    ck_assert(memcmp(B, X, 40 * d * sizeof *B) == 0);
    ck_assert_uint_eq(km_model_bytes(back), km_model_bytes(small));
    km_load_bytes lb;
    ck_assert_int_eq(km_model_load_bytes(buf, len, &lb, &err), KM_OK);
    ck_assert(lb.kept >= km_model_bytes(back));
    ck_assert_uint_ge(km_model_bytes(small), 40 * d * sizeof(double));
    km_model_free(back);
    free(buf);
    /* a payload with its own layout (krr rff: version 3's form word)
     * keeps it inside a version 8 file */
    km_krr_params pr;
    km_algorithm_params_default(KM_ALGO_KRR, &pr);
    pr.solver = KM_KRR_SOLVER_RFF;
    pr.n_components = 64;
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_RBF);
    double *y = calloc(100, sizeof *y);
    for (size_t i = 0; i < 100; i++)
        y[i] = X[i * d] * X[i * d + 1];
    km_problem pb = {X, 100, d, y, 1, NULL, 0};
    km_model *rff = NULL;
    ck_assert_int_eq(km_fit(KM_ALGO_KRR, &k, &pr, NULL, &pb, NULL, &rff,
                            &err), KM_OK);
    ck_assert_int_eq(km_model_save_buffer(rff, &buf, &len, &err), KM_OK);
    ck_assert_uint_eq(buf[4], 8);
    st = km_model_load_buffer(buf, len, &back, &err);
    ck_assert_msg(st == KM_OK, "load rff: %s", err.message);
    ck_assert(km_model_reference(back, &rows) && rows == 100);
    double p1, p2;
    ck_assert_int_eq(km_predict(rff, KM_OUT_VALUES, X + 500 * d, 1, &p1,
                                &err), KM_OK);
    ck_assert_int_eq(km_predict(back, KM_OUT_VALUES, X + 500 * d, 1, &p2,
                                &err), KM_OK);
    ck_assert(p1 == p2 && p1 != 0);
    km_model_free(back);
    km_model_free(rff);
    free(buf);
    /* a payload of version 10 (krr nystrom keeping its sums): a version 10
     * file, the reference section naming layout 10 */
    pr.solver = KM_KRR_SOLVER_NYSTROM;
    pr.n_centres = 20;
    pr.keep_factor = 1;
    km_model *nys = NULL;
    ck_assert_int_eq(km_fit(KM_ALGO_KRR, &k, &pr, NULL, &pb, NULL, &nys,
                            &err), KM_OK);
    ck_assert_int_eq(km_model_save_buffer(nys, &buf, &len, &err), KM_OK);
    ck_assert_uint_eq(buf[4], 10);
    st = km_model_load_buffer(buf, len, &back, &err);
    ck_assert_msg(st == KM_OK, "load nystrom sums: %s", err.message);
    ck_assert(km_model_reference(back, &rows) && rows == 100);
    ck_assert_int_eq(km_predict(nys, KM_OUT_VALUES, X + 500 * d, 1, &p1,
                                &err), KM_OK);
    ck_assert_int_eq(km_predict(back, KM_OUT_VALUES, X + 500 * d, 1, &p2,
                                &err), KM_OK);
    ck_assert(p1 == p2);
    km_model_free(back);
    km_model_free(nys);
    km_kernel_cleanup(&k);
    free(y);
    free(buf);
    km_model_free(small);
    km_model_free(big);
    free(X);
}
END_TEST

/* The offset of the reference's row count in the file of m: found as the
 * first place the count and the rows' count prefix appear together. */
static size_t reference_at(const unsigned char *buf, size_t len, uint64_t rows,
                           uint64_t values)
{
    for (size_t i = 0; i + 16 <= len; i++) {
        uint64_t a, b;
        memcpy(&a, buf + i, 8);
        memcpy(&b, buf + i + 8, 8);
        if (a == rows && b == values)
            return i;
    }
    return len;
}

/* An update's model keeps the reference a refit on all the rows would. */
START_TEST(update_extends_reference)
{
    size_t n = 30, k = 5, d = 3;
    double *X = malloc((n + k) * d * sizeof *X), y[35];
    km_rng r = {12};
    gauss_rows(&r, X, n + k, d, 0);
    for (size_t i = 0; i < n + k; i++)
        y[i] = X[i * d] - X[i * d + 1];
    km_krr_params pr;
    km_algorithm_params_default(KM_ALGO_KRR, &pr);
    pr.keep_factor = 1;
    km_kernel kr;
    km_kernel_init(&kr, KM_KERNEL_RBF);
    km_problem pb = {X, n, d, y, 1, NULL, 0};
    km_model *m = NULL, *u = NULL;
    km_error err;
    ck_assert_int_eq(km_fit(KM_ALGO_KRR, &kr, &pr, NULL, &pb, NULL, &m, &err),
                     KM_OK);
    km_status st = km_model_update(m, X + n * d, k, d, y + n, 1, NULL, &u,
                                   &err);
    ck_assert_msg(st == KM_OK, "update: %s", err.message);
    size_t rows;
    const double *R = km_model_reference(u, &rows);
    ck_assert_uint_eq(rows, n + k);
    ck_assert(memcmp(R, X, (n + k) * d * sizeof *R) == 0);
    km_model_free(u);
    km_model_free(m);
    km_kernel_cleanup(&kr);
    free(X);
}
END_TEST

START_TEST(hostile_reference_refused)
{
    size_t n = 20, d = 2;
    double *X = malloc(n * d * sizeof *X);
    km_rng r = {9};
    gauss_rows(&r, X, n, d, 0);
    km_model *m = fit_krr(KM_KERNEL_RBF, X, n, d, KM_SCALE_NONE);
    unsigned char *buf;
    size_t len;
    km_error err;
    ck_assert_int_eq(km_model_save_buffer(m, &buf, &len, &err), KM_OK);
    size_t at = reference_at(buf, len, n, n * d);
    ck_assert_uint_lt(at, len);
    /* a count past the cap, checksum made good */
    uint64_t huge = (uint64_t)1 << 40;
    memcpy(buf + at, &huge, 8);
    fix_crc(buf, len);
    km_model *back = NULL;
    ck_assert_int_eq(km_model_load_buffer(buf, len, &back, &err),
                     KM_ECORRUPT);
    ck_assert_ptr_nonnull(strstr(err.message, "drift reference"));
    /* a payload format that is not one */
    uint64_t rows = n;
    memcpy(buf + at, &rows, 8);
    uint32_t pf, bad_pf = 8;
    memcpy(&pf, buf + at - 4, 4);
    ck_assert_uint_eq(pf, 2);
    memcpy(buf + at - 4, &bad_pf, 4);
    fix_crc(buf, len);
    ck_assert_int_eq(km_model_load_buffer(buf, len, &back, &err),
                     KM_ECORRUPT);
    ck_assert_ptr_nonnull(strstr(err.message, "payload format"));
    memcpy(buf + at - 4, &pf, 4);
    /* a value that is not finite */
    double bad = NAN;
    memcpy(buf + at + 16, &bad, 8);
    fix_crc(buf, len);
    ck_assert_int_eq(km_model_load_buffer(buf, len, &back, &err),
                     KM_ECORRUPT);
    ck_assert_ptr_nonnull(strstr(err.message, "drift reference"));
    free(buf);
    km_model_free(m);
    free(X);
}
END_TEST

START_TEST(model_drift_kernels)
{
    size_t n = 60, ny = 50, d = 3;
    double *X = malloc(n * d * sizeof *X), *Y = malloc(ny * d * sizeof *Y);
    km_rng r = {21};
    gauss_rows(&r, X, n, d, 0);
    gauss_rows(&r, Y, ny, d, 1.0);
    for (size_t i = 0; i < n * d; i++)
        X[i] = 3 * X[i] + 10; /* so that standardizing matters */
    for (size_t i = 0; i < ny * d; i++)
        Y[i] = 3 * Y[i] + 10;
    km_error err;
    /* own characteristic kernel */
    km_model *m = fit_krr(KM_KERNEL_LAPLACIAN, X, n, d, KM_SCALE_NONE);
    km_drift_result res;
    ck_assert_int_eq(km_drift(m, Y, ny, 100, 4, NULL, &res, &err), KM_OK);
    ck_assert_int_eq(res.own_kernel, 1);
    ck_assert_int_eq(res.kernel, KM_KERNEL_LAPLACIAN);
    double v, p;
    ck_assert_int_eq(km_mmd_test(km_model_kernel(m), X, n, Y, ny, d, 100, 4,
                                 NULL, &v, &p, &err), KM_OK);
    ck_assert(v == res.mmd2 && p == res.p_value);
    ck_assert_uint_eq(res.n_reference, n);
    ck_assert_uint_eq(res.n_recent, ny);
    km_model_free(m);
    /* polynomial: the median-heuristic rbf, on the standardized rows */
    m = fit_krr(KM_KERNEL_POLYNOMIAL, X, n, d, KM_SCALE_STANDARDIZE);
    ck_assert_int_eq(km_drift(m, Y, ny, 100, 4, NULL, &res, &err), KM_OK);
    ck_assert_int_eq(res.own_kernel, 0);
    ck_assert_int_eq(res.kernel, KM_KERNEL_RBF);
    km_preprocess_view pv = km_model_preprocess(m);
    double *SX = malloc(n * d * sizeof *SX), *SY = malloc(ny * d * sizeof *SY);
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < d; j++)
            SX[i * d + j] = (X[i * d + j] - pv.x_shift[j]) / pv.x_scale[j];
    for (size_t i = 0; i < ny; i++)
        for (size_t j = 0; j < d; j++)
            SY[i * d + j] = (Y[i * d + j] - pv.x_shift[j]) / pv.x_scale[j];
    near(res.gamma, km_median_gamma(SX, n, d), TIGHT, "fallback gamma");
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_RBF);
    k.gamma = res.gamma;
    ck_assert_int_eq(km_mmd2(&k, SX, n, SY, ny, d, &v, &err), KM_OK);
    near(res.mmd2, v, TIGHT, "drift on standardized rows");
    ck_assert(res.p_value < 0.05);
    km_kernel_cleanup(&k);
    /* hostile inputs */
    ck_assert_int_eq(km_drift(m, Y, 1, 100, 4, NULL, &res, &err), KM_EINVAL);
    ck_assert_int_eq(km_drift(m, Y, ny, 0, 4, NULL, &res, &err), KM_EINVAL);
    Y[4] = NAN;
    ck_assert_int_eq(km_drift(m, Y, ny, 100, 4, NULL, &res, &err), KM_EINVAL);
    km_model_free(m);
    free(SX);
    free(SY);
    free(X);
    free(Y);
}
END_TEST

START_TEST(model_drift_refusals)
{
    /* a precomputed model: 409 */
    size_t n = 12;
    double G[12 * 12], *P = malloc(n * (n + 1) * sizeof *P);
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++)
            G[i * n + j] = exp(-0.1 * ((double)i - (double)j) *
                               ((double)i - (double)j));
    km_precomputed_pack(G, n, n, 1, P);
    double y[12];
    for (size_t i = 0; i < n; i++)
        y[i] = (double)i;
    km_krr_params pr;
    km_algorithm_params_default(KM_ALGO_KRR, &pr);
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_PRECOMPUTED);
    km_problem pb = {P, n, n + 1, y, 1, NULL, 0};
    km_model *m = NULL;
    km_error err;
    ck_assert_int_eq(km_fit(KM_ALGO_KRR, &k, &pr, NULL, &pb, NULL, &m, &err),
                     KM_OK);
    size_t rows;
    ck_assert_ptr_null(km_model_reference(m, &rows));
    km_drift_result res;
    ck_assert_int_eq(km_drift(m, P, n, 10, 1, NULL, &res, &err),
                     KM_ECONFLICT);
    ck_assert_ptr_nonnull(strstr(err.message, "precomputed"));
    km_model_free(m);
    km_kernel_cleanup(&k);
    /* a typed fit keeps no reference: as a file older than version 8 */
    double X[40], y20[20];
    for (int i = 0; i < 40; i++)
        X[i] = sin(i);
    for (int i = 0; i < 20; i++)
        y20[i] = X[2 * i] - X[2 * i + 1];
    km_kernel_init(&k, KM_KERNEL_RBF);
    ck_assert_int_eq(km_krr_fit(&k, &pr, X, 20, 2, y20, 1, NULL, &m, &err),
                     KM_OK);
    ck_assert_int_eq(km_drift(m, X, 20, 10, 1, NULL, &res, &err),
                     KM_ECONFLICT);
    ck_assert_ptr_nonnull(strstr(err.message, "refit"));
    km_model_free(m);
    km_kernel_cleanup(&k);
    free(P);
}
END_TEST

START_TEST(characteristic_caps)
{
    /* the kernel table's flag: what the docs name */
    ck_assert(km_kernel_type_caps(KM_KERNEL_RBF) &
              KM_KERNEL_CAP_CHARACTERISTIC);
    ck_assert(km_kernel_type_caps(KM_KERNEL_SPECTRUM) &
              KM_KERNEL_CAP_CHARACTERISTIC);
    ck_assert(!(km_kernel_type_caps(KM_KERNEL_POLYNOMIAL) &
                KM_KERNEL_CAP_CHARACTERISTIC));
    ck_assert(!(km_kernel_type_caps(KM_KERNEL_PRECOMPUTED) &
                KM_KERNEL_CAP_CHARACTERISTIC));
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_RBF);
    ck_assert(km_kernel_characteristic(&k));
    int cols[1] = {0};
    k.columns = malloc(sizeof cols);
    memcpy(k.columns, cols, sizeof cols);
    k.n_columns = 1;
    ck_assert(!km_kernel_characteristic(&k));
    km_kernel_cleanup(&k);
}
END_TEST

static Suite *drift_suite(void)
{
    Suite *s = suite_create("drift");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, mmd2_matches_numpy);
    tcase_add_test(tc, string_mmd2_matches_numpy);
    tcase_add_test(tc, p_value_exact_by_hand);
    tcase_add_test(tc, model_keeps_reference);
    tcase_add_test(tc, hostile_reference_refused);
    tcase_add_test(tc, update_extends_reference);
    tcase_add_test(tc, model_drift_kernels);
    tcase_add_test(tc, model_drift_refusals);
    tcase_add_test(tc, characteristic_caps);
    suite_add_tcase(s, tc);
    TCase *st = tcase_create("statistics");
    tcase_set_timeout(st, 300);
    tcase_add_test(st, null_rejects_at_most_7_percent);
    tcase_add_test(st, shift_rejected_95_percent);
    tcase_add_test(st, string_shift_rejected);
    tcase_add_test(st, string_model_drift);
    suite_add_tcase(s, st);
    return s;
}

KM_TEST_MAIN(drift_suite)
