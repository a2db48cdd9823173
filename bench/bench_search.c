/*
 * bench_search.c - what krr's closed-form search costs: a leave-one-out
 * sweep over many alphas (one eigendecomposition of the Gram serves them
 * all) against one plain km_fit (one Cholesky) at the same size, on
 * synthetic data; and, for reference, a 5-fold search of the same alphas
 * (one eigendecomposition per fold).
 *
 * usage: bench_search [n [d [n_alphas [reps]]]]   (default 5000 20 20 1)
 * Prints one JSON line: seconds of each (medians over reps) and the
 * ratios to the fit, and the process's peak memory.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench_util.h"
#include "km.h"

static uint64_t state = 0x2545f4914f6cdd1dull;

static double uniform(void) /* xorshift64*, in [-1, 1) */
{
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    return (double)((state * 2685821657736338717ull) >> 11) * 0x1p-52 - 1.0;
}

int main(int argc, char **argv)
{
    size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 5000;
    size_t d = argc > 2 ? strtoul(argv[2], NULL, 10) : 20;
    size_t na = argc > 3 ? strtoul(argv[3], NULL, 10) : 20;
    int reps = argc > 4 ? atoi(argv[4]) : 1;
    if (n < 10 || d < 1 || na < 1 || reps < 1 || reps > 32) {
        fprintf(stderr, "usage: %s [n [d [n_alphas [reps]]]]\n", argv[0]);
        return 2;
    }
    double *X = malloc(n * d * sizeof *X), *y = malloc(n * sizeof *y);
    for (size_t i = 0; i < n; i++) {
        double s = 0;
        for (size_t j = 0; j < d; j++)
            s += (X[i * d + j] = uniform()) * (j % 3 == 0);
        y[i] = sin(3 * s) + 0.1 * uniform();
    }
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_RBF);
    k.gamma = 1.0 / (double)d;
    km_kernel *ks = malloc(na * sizeof *ks);
    km_krr_params *ps = malloc(na * sizeof *ps);
    for (size_t i = 0; i < na; i++) {
        ks[i] = k;
        ps[i].alpha = pow(10.0, -4.0 + 5.0 * (double)i / (double)(na > 1 ? na - 1 : 1));
    }
    km_problem pb = {X, n, d, y, 1, NULL, 0};
    km_search_spec s = {KM_ALGO_KRR, {KM_SCALE_NONE, 0}, KM_SCORING_NEG_MSE,
                        {KM_CV_LOO, 0, 0, 0, 0, NULL}, na, ks, ps};
    double tf[32], tl[32], tk[32];
    size_t best = 0;
    km_error err;
    for (int r = 0; r < reps; r++) {
        km_model *m = NULL;
        double t0 = bench_now();
        if (km_fit(KM_ALGO_KRR, &k, &ps[0], NULL, &pb, NULL, &m, &err) !=
            KM_OK) {
            fprintf(stderr, "fit: %s\n", err.message);
            return 1;
        }
        tf[r] = bench_now() - t0;
        km_model_free(m);

        km_search_result res;
        s.cv = (km_cv){KM_CV_LOO, 0, 0, 0, 0, NULL};
        t0 = bench_now();
        if (km_search(&s, &pb, NULL, &res, &err) != KM_OK) {
            fprintf(stderr, "loo search: %s\n", err.message);
            return 1;
        }
        tl[r] = bench_now() - t0;
        best = res.best;
        km_search_result_cleanup(&res);

        s.cv = (km_cv){KM_CV_KFOLD, 5, 0, 0, 0, NULL};
        t0 = bench_now();
        if (km_search(&s, &pb, NULL, &res, &err) != KM_OK) {
            fprintf(stderr, "kfold search: %s\n", err.message);
            return 1;
        }
        tk[r] = bench_now() - t0;
        km_search_result_cleanup(&res);
    }
    double fit = bench_median(tf, (size_t)reps);
    double loo = bench_median(tl, (size_t)reps);
    double kf = bench_median(tk, (size_t)reps);
    printf("{\"n\": %zu, \"d\": %zu, \"alphas\": %zu, \"fit_s\": %.3f, "
           "\"loo_search_s\": %.3f, \"loo_over_fit\": %.1f, "
           "\"kfold5_search_s\": %.3f, \"kfold5_over_fit\": %.1f, "
           "\"best_alpha\": %g, \"peak_mib\": %.0f}\n",
           n, d, na, fit, loo, loo / fit, kf, kf / fit, ps[best].alpha,
           bench_peak_mib());
    free(X);
    free(y);
    free(ks);
    free(ps);
    return 0;
}
