/*
 * test_km_centres.c - the nystrom solver's rpcholesky centres
 * (params.centres RPCHOLESKY): the pivots against randomly pivoted
 * Cholesky written in numpy with core's PRNG (tests/fixtures/
 * gen_rpcholesky_refs.py: the same draws, so the same pivots), the fit on
 * them against scikit-learn's Nystroem + Ridge, the distribution of the
 * accelerated sampler against the sequential definition's exact
 * probabilities, the early stop at a kernel's rank, seed determinism,
 * accuracy against uniform centres on clustered data, the check and the
 * memory estimate (progress and cancel: test_km_nystrom.c).
 */
#include "../check_main.h"
#include "km.h"
#include "base/km_base_internal.h"
#include "solvers/km_solvers_internal.h"

#define N 500
#define DIM 3
#define M 100
#define SEED 11

static km_kernel rbf(double gamma)
{
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_RBF);
    k.gamma = gamma;
    return k;
}

static km_krr_params rpc(size_t m, uint64_t seed)
{
    km_krr_params p = km_krr_params_default();
    p.alpha = 0.01;
    p.solver = KM_KRR_SOLVER_NYSTROM;
    p.centres = KM_KRR_CENTRES_RPCHOLESKY;
    p.n_centres = m;
    p.seed = seed;
    p.cg_tol = 1e-13;
    p.cg_max_iter = 500;
    return p;
}

static double *fixture(const char *name, size_t expect)
{
    size_t n;
    double *v = km_read_fixture(name, &n);
    ck_assert_uint_eq(n, expect);
    return v;
}

static double fig(const km_info *info, const char *key)
{
    const km_info_entry *e = km_info_find(info, key);
    ck_assert_msg(e != NULL, "no figure %s", key);
    return e->values[0];
}

/* The pivots, in the order chosen, are numpy's on the same draws. */
START_TEST(pivots_match_reference)
{
    double *X = fixture("rpc_X.txt", N * DIM);
    double *ref = fixture("rpc_pivots.txt", M);
    km_kernel k = rbf(0.5);
    size_t piv[M], kept = 0;
    km_error err = {0};
    ck_assert_msg(km_krr_rpcholesky(&k, X, N, DIM, M, SEED, piv, &kept, NULL,
                                    0, 1, &err) == KM_OK, "%s", err.message);
    ck_assert_uint_eq(kept, M);
    for (size_t i = 0; i < M; i++)
        ck_assert_msg(piv[i] == (size_t)ref[i], "pivot %zu: %zu, numpy %g", i,
                      piv[i], ref[i]);
    /* the same seed draws the same pivots; another, others */
    size_t again[M], other[M], kept2;
    ck_assert_int_eq(km_krr_rpcholesky(&k, X, N, DIM, M, SEED, again, &kept2,
                                       NULL, 0, 1, NULL), KM_OK);
    ck_assert_mem_eq(again, piv, sizeof piv);
    ck_assert_int_eq(km_krr_rpcholesky(&k, X, N, DIM, M, SEED + 1, other,
                                       &kept2, NULL, 0, 1, NULL), KM_OK);
    ck_assert(memcmp(other, piv, sizeof piv) != 0);
    free(X);
    free(ref);
}
END_TEST

/* A linear kernel on 3 features has rank 3: three pivots (numpy's), then
 * the residual is rounding and the draw stops; the fit keeps 3 centres
 * and says so. */
START_TEST(stops_at_the_rank)
{
    double *X = fixture("rpc_X.txt", N * DIM), *y = fixture("rpc_y.txt", N);
    double *ref = fixture("rpc_linear_pivots.txt", 3);
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_LINEAR);
    size_t piv[10], kept = 0;
    ck_assert_int_eq(km_krr_rpcholesky(&k, X, N, DIM, 10, SEED, piv, &kept,
                                       NULL, 0, 1, NULL), KM_OK);
    ck_assert_uint_eq(kept, 3);
    for (size_t i = 0; i < 3; i++)
        ck_assert_uint_eq(piv[i], (size_t)ref[i]);
    km_krr_params p = rpc(10, SEED);
    km_model *m = NULL;
    km_error err = {0};
    ck_assert_msg(km_krr_fit(&k, &p, X, N, DIM, y, 1, NULL, &m, &err) ==
                      KM_OK, "%s", err.message);
    ck_assert_uint_eq(km_model_n_samples(m), 3);
    ck_assert_double_eq(fig(km_model_params(m), "n_centres"), 3);
    km_model_free(m);
    free(X);
    free(y);
    free(ref);
}
END_TEST

/* The fit on the rpcholesky centres predicts what scikit-learn's
 * Nystroem + Ridge predict on them (1e-8 relative); its figures. */
START_TEST(fit_matches_sklearn_on_the_pivots)
{
    double *X = fixture("rpc_X.txt", N * DIM), *y = fixture("rpc_y.txt", N);
    size_t nt;
    double *T = km_read_fixture("rpc_T.txt", &nt);
    nt /= DIM;
    double *ref = fixture("rpc_pred.txt", nt), *out = malloc(nt * sizeof *out);
    km_kernel k = rbf(0.5);
    km_krr_params p = rpc(M, SEED);
    km_model *m = NULL;
    km_error err = {0};
    ck_assert_msg(km_krr_fit(&k, &p, X, N, DIM, y, 1, NULL, &m, &err) ==
                      KM_OK, "%s", err.message);
    ck_assert_int_eq(km_krr_predict(m, T, nt, out, NULL), KM_OK);
    double e = km_max_rel_err(out, ref, nt, 1e-3);
    ck_assert_msg(e <= 1e-8, "predictions off by %g relative", e);
    const km_info *pi = km_model_params(m);
    ck_assert_double_eq(fig(pi, "centres"), KM_KRR_CENTRES_RPCHOLESKY);
    ck_assert_double_eq(fig(pi, "n_centres"), M);
    ck_assert_double_le(fig(km_model_training(m), "residual"), 1e-13);
    /* seeded: the same fit to the bit */
    km_model *again = NULL;
    ck_assert_int_eq(km_krr_fit(&k, &p, X, N, DIM, y, 1, NULL, &again, NULL),
                     KM_OK);
    ck_assert_mem_eq(km_krr_dual_coef(again), km_krr_dual_coef(m),
                     M * sizeof(double));
    km_model_free(again);
    km_model_free(m);
    free(out);
    free(ref);
    free(T);
    free(X);
    free(y);
}
END_TEST

/* The accelerated sampler draws pivots as the sequential definition
 * does: over 20000 seeds, the frequency of each ordered pair of the
 * first two pivots of 5 points (two of them close) is within 4.5
 * standard errors of the sequential algorithm's exact probability
 * (gen_rpcholesky_refs.py). Accepting every proposal (the second pivot
 * drawn from the first diagonal) fails it: the close pair (0, 1) then
 * comes 4.9 % of the time, against its probability of 0.14 %. */
START_TEST(distributed_as_the_sequential_definition)
{
    enum { NP = 5, RUNS = 20000 };
    double *X = fixture("rpc_dist_X.txt", NP);
    double *prob = fixture("rpc_dist_prob.txt", NP * NP);
    km_kernel k = rbf(1.0);
    double count[NP * NP] = {0};
    for (uint64_t seed = 0; seed < RUNS; seed++) {
        size_t piv[2], kept;
        ck_assert_int_eq(km_krr_rpcholesky(&k, X, NP, 1, 2, seed, piv, &kept,
                                           NULL, 0, 1, NULL), KM_OK);
        ck_assert_uint_eq(kept, 2);
        count[piv[0] * NP + piv[1]]++;
    }
    for (size_t c = 0; c < NP * NP; c++) {
        double p = prob[c], f = count[c] / RUNS;
        double se = sqrt(p * (1 - p) / RUNS);
        ck_assert_msg(fabs(f - p) <= 4.5 * se + 1e-12, "pair (%zu, %zu): "
                      "frequency %g, probability %g", c / NP, c % NP, f, p);
    }
    free(X);
    free(prob);
}
END_TEST

/* Clustered data: 95 % of the rows in one blob, the rest in 12 small far
 * clusters, a target that differs between them. With 40 centres, uniform
 * centres leave most far clusters without one; rpcholesky's pivots
 * follow the residual there. Test RMSE against the noise-free target,
 * averaged over seeds 1 to 3 of each. */
static void clustered(km_rng *r, size_t n, double *X, double *f)
{
    enum { K = 12 };
    double c[K][2];
    km_rng rc = {99};
    for (size_t j = 0; j < K; j++) {
        c[j][0] = 4 * km_rng_gauss(&rc);
        c[j][1] = 4 * km_rng_gauss(&rc);
    }
    for (size_t i = 0; i < n; i++) {
        double *x = X + 2 * i;
        if (km_rng_uniform(r) < 0.9) { /* [-1, 1): 95 % */
            x[0] = 0.5 * km_rng_gauss(r);
            x[1] = 0.5 * km_rng_gauss(r);
        } else {
            size_t j = km_rng_below(r, K);
            x[0] = c[j][0] + 0.1 * km_rng_gauss(r);
            x[1] = c[j][1] + 0.1 * km_rng_gauss(r);
        }
        f[i] = sin(x[0]) + cos(0.7 * x[1]) + 0.1 * x[0] * x[1];
    }
}

START_TEST(beats_uniform_on_clustered_data)
{
    enum { NC = 3000, NT = 2000, MC = 40 };
    double *X = malloc(NC * 2 * sizeof *X), *f = malloc(NC * sizeof *f);
    double *T = malloc(NT * 2 * sizeof *T), *fT = malloc(NT * sizeof *fT);
    double *out = malloc(NT * sizeof *out);
    km_rng r = {2024};
    clustered(&r, NC, X, f);
    clustered(&r, NT, T, fT);
    for (size_t i = 0; i < NC; i++)
        f[i] += 0.05 * km_rng_gauss(&r);
    km_kernel k = rbf(1.0);
    double rmse[2] = {0, 0};
    for (int rule = 0; rule < 2; rule++)
        for (uint64_t seed = 1; seed <= 3; seed++) {
            km_krr_params p = rpc(MC, seed);
            p.alpha = 1e-3;
            p.cg_tol = 1e-10;
            p.centres = rule ? KM_KRR_CENTRES_RPCHOLESKY
                             : KM_KRR_CENTRES_UNIFORM;
            km_model *m = NULL;
            km_error err = {0};
            ck_assert_msg(km_krr_fit(&k, &p, X, NC, 2, f, 1, NULL, &m, &err)
                              == KM_OK, "%s", err.message);
            ck_assert_int_eq(km_krr_predict(m, T, NT, out, NULL), KM_OK);
            double s = 0;
            for (size_t i = 0; i < NT; i++)
                s += (out[i] - fT[i]) * (out[i] - fT[i]);
            rmse[rule] += sqrt(s / NT) / 3;
            km_model_free(m);
        }
    fprintf(stderr, "# clustered, m = %d: test RMSE uniform %.4f, "
            "rpcholesky %.4f\n", MC, rmse[0], rmse[1]);
    ck_assert_msg(rmse[1] < 0.5 * rmse[0], "rpcholesky %g, uniform %g",
                  rmse[1], rmse[0]);
    free(X);
    free(f);
    free(T);
    free(fT);
    free(out);
}
END_TEST

/* The check names params.centres; the estimate counts the n x m factor:
 * 80 GB at n = 10^6, m = 10^4, which no budget of this machine admits,
 * where uniform centres need 1.6 GB. */
START_TEST(check_and_fit_bytes)
{
    km_krr_params p = rpc(10, 0);
    km_error err;
    ck_assert_int_eq(km_krr_check(&p, 100, &err), KM_OK);
    p.centres = KM_KRR_CENTRES_COUNT;
    ck_assert_int_eq(km_krr_check(&p, 100, &err), KM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "params.centres"));
    ck_assert_str_eq(km_krr_centres_name(KM_KRR_CENTRES_UNIFORM), "uniform");
    ck_assert_str_eq(km_krr_centres_name(KM_KRR_CENTRES_RPCHOLESKY),
                     "rpcholesky");
    ck_assert_ptr_null(km_krr_centres_name(KM_KRR_CENTRES_COUNT));

    const size_t n = 1000000, d = 20;
    km_krr_params u = rpc(10000, 0), c = u;
    u.centres = KM_KRR_CENTRES_UNIFORM;
    size_t bu = km_krr_fit_bytes(n, d, 1, &u), bc = km_krr_fit_bytes(n, d, 1,
                                                                       &c);
    ck_assert_uint_le(bu, (size_t)17e8);
    ck_assert_uint_ge(bc - bu, (size_t)8 * n * 10000);
    ck_assert_uint_le(bc - bu, (size_t)8 * n * 10004 + ((size_t)64 << 20));
}
END_TEST

static Suite *centres_suite(void)
{
    Suite *s = suite_create("km_centres");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, pivots_match_reference);
    tcase_add_test(tc, stops_at_the_rank);
    tcase_add_test(tc, fit_matches_sklearn_on_the_pivots);
    tcase_add_test(tc, distributed_as_the_sequential_definition);
    tcase_add_test(tc, beats_uniform_on_clustered_data);
    tcase_add_test(tc, check_and_fit_bytes);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    return s;
}

KM_TEST_MAIN(centres_suite)
