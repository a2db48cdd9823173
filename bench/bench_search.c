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
 *
 *        bench_search --svc FILE ROWS [CACHE_MB [THREADS]]
 * svc on the first ROWS rows of data/FILE (features scaled to [-1, 1]),
 * a 5 x 5 grid of C x gamma, 5 folds, accuracy: km_search on THREADS
 * threads (default: the online CPUs; the points of one gamma share one
 * Gram of all rows when it takes at most half of cache_mb) against the
 * same fits one by one through km_fit on one thread (each fit its own
 * kernel columns or Gram), with the scores compared.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../tests/testdata.h"
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

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int svc_grid(const char *file, size_t rows, double cache_mb,
                    int threads)
{
    km_dataset ds;
    if (km_dataset_load(file, rows, &ds) != 0)
        return 1;
    km_dataset_scale(&ds, ds.n);
    size_t n = ds.n, d = ds.d, k = 0;
    char **names = malloc(n * sizeof *names);
    int *lab = malloc(n * sizeof *lab);
    for (size_t i = 0; i < n; i++)
        names[i] = ds.label[i];
    qsort(names, n, sizeof *names, cmp_str);
    for (size_t i = 0; i < n; i++)
        if (i == 0 || strcmp(names[i], names[k - 1]) != 0)
            names[k++] = names[i];
    for (size_t i = 0; i < n; i++)
        lab[i] = (int)((char **)bsearch(&ds.label[i], names, k, sizeof *names,
                                        cmp_str) - names);
    enum { G = 5, F = 5 };
    static const double Cs[G] = {0.1, 1, 10, 100, 1000};
    static const double gammas[G] = {0.01, 0.03, 0.1, 0.3, 1};
    km_kernel ks[G * G];
    km_svm_params ps[G * G];
    for (int a = 0; a < G; a++)
        for (int b = 0; b < G; b++) {
            km_kernel_init(&ks[a * G + b], KM_KERNEL_RBF);
            ks[a * G + b].gamma = gammas[b];
            ps[a * G + b] = km_svm_params_default();
            ps[a * G + b].C = Cs[a];
            ps[a * G + b].cache_mb = cache_mb;
        }
    km_problem pb = {ds.X, n, d, NULL, 0, lab, k};
    km_search_spec s = {KM_ALGO_SVC, {KM_SCALE_NONE, 0}, KM_SCORING_ACCURACY,
                        {KM_CV_KFOLD, F, 0, 0, 0, NULL}, G * G, ks, ps,
                        threads};
    km_fit_control ctl = {NULL, NULL, threads};
    km_search_result res;
    km_error err;
    double t0 = bench_now();
    if (km_search(&s, &pb, &ctl, &res, &err) != KM_OK) {
        fprintf(stderr, "search: %s\n", err.message);
        return 1;
    }
    double t_search = bench_now() - t0;

    /* the same fits one by one: KFold's contiguous parts */
    double *Xtr = malloc(n * d * sizeof *Xtr), *Xte = malloc(n * d * sizeof *Xte);
    int *ltr = malloc(n * sizeof *ltr), *lte = malloc(n * sizeof *lte);
    int *pred = malloc(n * sizeof *pred);
    double worst = 0;
    t0 = bench_now();
    for (size_t p = 0; p < G * G; p++) {
        double mean = 0;
        for (size_t f = 0, pos = 0; f < F; f++) {
            size_t size = n / F + (f < n % F), ntr = 0, nte = 0;
            for (size_t i = 0; i < n; i++) {
                int test = i >= pos && i < pos + size;
                memcpy((test ? Xte + nte * d : Xtr + ntr * d), ds.X + i * d,
                       d * sizeof *Xtr);
                if (test)
                    lte[nte++] = lab[i];
                else
                    ltr[ntr++] = lab[i];
            }
            pos += size;
            km_problem fp = {Xtr, ntr, d, NULL, 0, ltr, k};
            km_model *m = NULL;
            if (km_fit(KM_ALGO_SVC, &ks[p], &ps[p], NULL, &fp, NULL, &m,
                       &err) != KM_OK ||
                km_predict_labels(m, Xte, nte, pred, &err) != KM_OK) {
                fprintf(stderr, "fit: %s\n", err.message);
                return 1;
            }
            size_t hit = 0;
            for (size_t i = 0; i < nte; i++)
                hit += pred[i] == lte[i];
            mean += (double)hit / (double)nte / F;
            km_model_free(m);
        }
        double e = fabs(mean - res.mean[p]);
        worst = e > worst ? e : worst;
    }
    double t_fits = bench_now() - t0;
    printf("{\"file\": \"%s\", \"n\": %zu, \"classes\": %zu, "
           "\"points\": %d, \"folds\": %d, \"cache_mb\": %g, "
           "\"threads\": %d, "
           "\"search_s\": %.2f, \"fits_one_by_one_s\": %.2f, "
           "\"ratio\": %.2f, \"max_mean_accuracy_diff\": %g, "
           "\"best_accuracy\": %.4f, \"peak_mib\": %.0f}\n",
           file, n, k, G * G, F, cache_mb, threads, t_search, t_fits,
           t_search / t_fits, worst, res.mean[res.best], bench_peak_mib());
    km_search_result_cleanup(&res);
    free(Xtr);
    free(Xte);
    free(ltr);
    free(lte);
    free(pred);
    free(names);
    free(lab);
    km_dataset_free(&ds);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--svc") == 0) {
        if (argc < 4) {
            fprintf(stderr, "usage: %s --svc FILE ROWS [CACHE_MB [THREADS]]\n",
                    argv[0]);
            return 2;
        }
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        int threads = argc > 5 ? atoi(argv[5]) : cpus > 0 ? (int)cpus : 1;
        if (threads < 1) {
            fprintf(stderr, "THREADS must be at least 1\n");
            return 2;
        }
        return svc_grid(argv[2], strtoul(argv[3], NULL, 10),
                        argc > 4 ? atof(argv[4]) : 200, threads);
    }
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
        ps[i] = km_krr_params_default();
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
