/*
 * bench_auto.c - the exact krr solver's scale limit under solver "auto",
 * and the cost of rpcholesky centres beside uniform ones.
 *
 * usage: bench_auto limit d n1 [n2 ...]
 *   The default memory budget (75 % of physical memory), the largest n
 *   that "auto" fits exactly at d features and one output (the exact
 *   estimate at most half the budget: km_krr_resolve_solver), then one
 *   exact fit (rbf, gamma 1/d, alpha 1) at each n_i: seconds, peak RSS
 *   and the estimate, and the time at the limit extrapolated as n^3
 *   from the largest n_i (Cholesky's n^3/3 dominates there).
 * usage: bench_auto centres n m d
 *   Nystrom fits of n rows with m uniform and m rpcholesky centres:
 *   seconds of each and the CG iterations.
 * Data: standard normal X, y = sum of X's row + noise (core's PRNG).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "km.h"
#include "base/km_base_internal.h"

static void data(size_t n, size_t d, double **X, double **y)
{
    km_rng r = {42};
    *X = malloc(n * d * sizeof **X);
    *y = malloc(n * sizeof **y);
    if (!*X || !*y) {
        fprintf(stderr, "out of memory for %zu x %zu\n", n, d);
        exit(2);
    }
    for (size_t i = 0; i < n; i++) {
        double s = 0;
        for (size_t j = 0; j < d; j++)
            s += (*X)[i * d + j] = km_rng_gauss(&r);
        (*y)[i] = s + 0.1 * km_rng_gauss(&r);
    }
}

static double fit_seconds(const km_krr_params *p, size_t n, size_t d,
                          double *its)
{
    double *X, *y;
    data(n, d, &X, &y);
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_RBF);
    k.gamma = 1.0 / (double)d;
    km_model *m = NULL;
    km_error err = {0};
    double t0 = bench_now();
    if (km_krr_fit(&k, p, X, n, d, y, 1, NULL, &m, &err) != KM_OK) {
        fprintf(stderr, "fit failed: %s\n", err.message);
        exit(1);
    }
    double t = bench_now() - t0;
    const km_info_entry *e = km_info_find(km_model_training(m), "iterations");
    *its = e ? e->values[0] : 0;
    km_model_free(m);
    free(X);
    free(y);
    return t;
}

static int limit(size_t d, int argc, char **argv)
{
    size_t budget = km_memory_budget();
    km_krr_params a = km_krr_params_default();
    a.solver = KM_KRR_SOLVER_AUTO;
    size_t lo = 1, hi = (size_t)1 << 24; /* exact at lo, not at hi */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (km_krr_resolve_solver(&a, mid, d, 1, budget) ==
            KM_KRR_SOLVER_EXACT)
            lo = mid;
        else
            hi = mid;
    }
    size_t est = km_krr_fit_bytes(lo, d, 1, NULL);
    printf("{\"budget_mib\": %.0f, \"d\": %zu, \"auto_exact_limit_n\": %zu, "
           "\"estimate_mib\": %.0f}\n", budget / 1048576.0, d, lo,
           est / 1048576.0);
    double last_n = 0, last_t = 0;
    for (int i = 0; i < argc; i++) {
        size_t n = strtoul(argv[i], NULL, 10);
        km_krr_params ex = km_krr_params_default();
        double its, t = fit_seconds(&ex, n, d, &its);
        printf("{\"n\": %zu, \"exact_fit_s\": %.2f, \"peak_rss_mib\": %.0f, "
               "\"estimate_mib\": %.0f}\n", n, t, bench_peak_mib(),
               km_krr_fit_bytes(n, d, 1, NULL) / 1048576.0);
        fflush(stdout);
        last_n = (double)n;
        last_t = t;
    }
    if (last_n > 0) {
        double r = (double)lo / last_n;
        printf("{\"extrapolated_exact_fit_s_at_limit\": %.0f, "
               "\"from_n\": %.0f}\n", last_t * r * r * r, last_n);
    }
    return 0;
}

static int centres(size_t n, size_t m, size_t d)
{
    for (int rule = 0; rule < 2; rule++) {
        km_krr_params p = km_krr_params_default();
        p.solver = KM_KRR_SOLVER_NYSTROM;
        p.n_centres = m;
        p.centres = rule ? KM_KRR_CENTRES_RPCHOLESKY : KM_KRR_CENTRES_UNIFORM;
        double its, t = fit_seconds(&p, n, d, &its);
        printf("{\"n\": %zu, \"m\": %zu, \"centres\": \"%s\", \"fit_s\": "
               "%.2f, \"iterations\": %.0f, \"peak_rss_mib\": %.0f}\n", n, m,
               km_krr_centres_name(p.centres), t, its, bench_peak_mib());
        fflush(stdout);
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 4 && !strcmp(argv[1], "limit"))
        return limit(strtoul(argv[2], NULL, 10), argc - 3, argv + 3);
    if (argc == 5 && !strcmp(argv[1], "centres"))
        return centres(strtoul(argv[2], NULL, 10),
                       strtoul(argv[3], NULL, 10),
                       strtoul(argv[4], NULL, 10));
    fprintf(stderr, "usage: %s limit d n1 [n2 ...]\n"
            "       %s centres n m d\n", argv[0], argv[0]);
    return 2;
}
