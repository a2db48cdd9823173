/*
 * bench_search.c - what krr's closed-form search costs: a leave-one-out
 * sweep over many alphas (one tridiagonal reduction of the Gram serves
 * them all) against one plain km_fit (one Cholesky) at the same size, on
 * synthetic data; and, for reference, a 5-fold search of the same alphas
 * (one eigendecomposition per fold).
 *
 * usage: bench_search [n [d [n_alphas [reps [kfold [DIR]]]]]]
 *        (default 5000 20 20 1 1; kfold 0 skips the 5-fold search; DIR:
 *        where to write the data, X.bin and y.bin, for the driver's
 *        scikit-learn reference)
 * Prints one JSON line: seconds of each (medians over reps, the fit and
 * the LOO search interleaved) and the ratios to the fit; the largest
 * relative difference of the LOO scores from an eigendecomposition
 * closed form written here (the pre-issue-28 method); the phases of the
 * LOO path (dsytrd, dorgtr) and of the fit (dpotrf), and dsyevd, timed
 * on the same Gram; the process's peak memory.
 *
 *        bench_search --svc FILE ROWS [CACHE_MB [THREADS]]
 * svc on the first ROWS rows of data/FILE (features scaled to [-1, 1]),
 * a 5 x 5 grid of C x gamma, 5 folds, accuracy: km_search on THREADS
 * threads (default: the online CPUs; the points of one gamma share one
 * Gram of all rows when it takes at most half of cache_mb) against the
 * same fits one by one through km_fit on one thread (each fit its own
 * kernel columns or Gram), with the scores compared.
 */
#include <cblas.h>
#include <lapacke.h>
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

/* count doubles to DIR/name, raw (the driver's reference reads them). */
static int dump_bin(const char *dir, const char *name, const double *v,
                    size_t count)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f)
        return 1;
    size_t w = fwrite(v, sizeof *v, count, f);
    return (fclose(f) != 0) | (w != count);
}

/* The rbf Gram of X (n x d), full, computed here (not by libkm). */
static double *gram(const double *X, size_t n, size_t d, double gamma)
{
    double *K = malloc(n * n * sizeof *K);
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j <= i; j++) {
            double s = 0;
            for (size_t t = 0; t < d; t++) {
                double u = X[i * d + t] - X[j * d + t];
                s += u * u;
            }
            K[i * n + j] = K[j * n + i] = exp(-gamma * s);
        }
    return K;
}

/* The LOO mean squared errors of the na alphas as the closed form was
 * computed before issue 28, written here independently: one
 * eigendecomposition K = V diag(w) V^T (dsyevd), then
 * c = V diag(1 / (w + a)) V^T y, ((K + aI)^-1)_ii = sum_j V_ij^2 / (w_j + a),
 * residual_i = c_i / ((K + aI)^-1)_ii. Its seconds in *secs. */
static void eigen_loo(double *K, size_t n, const double *y,
                      const km_krr_params *ps, size_t na, double *mse,
                      double *secs)
{
    double t0 = bench_now();
    double *w = malloc(n * sizeof *w), *q = malloc(n * sizeof *q);
    double *g = malloc(n * sizeof *g), *c = malloc(n * sizeof *c);
    double *dg = malloc(n * sizeof *dg);
    LAPACKE_dsyevd(LAPACK_ROW_MAJOR, 'V', 'L', (lapack_int)n, K,
                   (lapack_int)n, w); /* K = V, column j eigenvector j */
    cblas_dgemv(CblasRowMajor, CblasTrans, (int)n, (int)n, 1.0, K, (int)n, y,
                1, 0.0, q, 1);
    for (size_t a = 0; a < na; a++) {
        for (size_t j = 0; j < n; j++)
            g[j] = 1 / (w[j] + ps[a].alpha);
        for (size_t i = 0; i < n; i++) {
            double ci = 0, di = 0;
            for (size_t j = 0; j < n; j++) {
                double v = K[i * n + j];
                ci += v * g[j] * q[j];
                di += v * v * g[j];
            }
            c[i] = ci, dg[i] = di;
        }
        double s = 0;
        for (size_t i = 0; i < n; i++)
            s += (c[i] / dg[i]) * (c[i] / dg[i]);
        mse[a] = s / (double)n;
    }
    *secs = bench_now() - t0;
    free(w), free(q), free(g), free(c), free(dg);
}

/* The phases of the LOO path and of one fit on a copy of K (seconds):
 * dpotrf of K + I (the fit's Cholesky), dsytrd (the reduction to
 * tridiagonal), dorgtr (Q formed), dsyevd (the eigendecomposition the
 * closed form used before). */
static void phases(const double *K, size_t n, double *t)
{
    double *A = malloc(n * n * sizeof *A), *v = malloc(3 * n * sizeof *v);
    memcpy(A, K, n * n * sizeof *A);
    for (size_t i = 0; i < n; i++)
        A[i * n + i] += 1;
    double t0 = bench_now();
    LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'U', (lapack_int)n, A, (lapack_int)n);
    t[0] = bench_now() - t0;
    memcpy(A, K, n * n * sizeof *A);
    t0 = bench_now();
    LAPACKE_dsytrd(LAPACK_COL_MAJOR, 'U', (lapack_int)n, A, (lapack_int)n, v,
                   v + n, v + 2 * n);
    t[1] = bench_now() - t0;
    t0 = bench_now();
    LAPACKE_dorgtr(LAPACK_COL_MAJOR, 'U', (lapack_int)n, A, (lapack_int)n,
                   v + 2 * n);
    t[2] = bench_now() - t0;
    memcpy(A, K, n * n * sizeof *A);
    t0 = bench_now();
    LAPACKE_dsyevd(LAPACK_COL_MAJOR, 'V', 'U', (lapack_int)n, A,
                   (lapack_int)n, v);
    t[3] = bench_now() - t0;
    free(A), free(v);
}

/* krr, rbf: one km_fit against the LOO search over na alphas (reps
 * times, interleaved), the LOO scores against eigen_loo's, the phases;
 * and (kfold) a 5-fold search of the same alphas. */
static int krr_loo(size_t n, size_t d, size_t na, int reps, int kfold,
                   const char *dump)
{
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
    if (dump && (dump_bin(dump, "X.bin", X, n * d) ||
                 dump_bin(dump, "y.bin", y, n))) {
        fprintf(stderr, "cannot write %s/X.bin, y.bin\n", dump);
        return 1;
    }
    km_problem pb = {X, n, d, y, 1, NULL, 0};
    km_search_spec s = {KM_ALGO_KRR, {KM_SCALE_NONE, 0}, KM_SCORING_NEG_MSE,
                        {KM_CV_LOO, 0, 0, 0, 0, NULL}, na, ks, ps};
    double tf[32], tl[32], tk = 0;
    double *mse = malloc(na * sizeof *mse), *ref = malloc(na * sizeof *ref);
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
        t0 = bench_now();
        if (km_search(&s, &pb, NULL, &res, &err) != KM_OK) {
            fprintf(stderr, "loo search: %s\n", err.message);
            return 1;
        }
        tl[r] = bench_now() - t0;
        best = res.best;
        for (size_t a = 0; a < na; a++)
            mse[a] = -res.mean[a];
        km_search_result_cleanup(&res);
    }
    if (kfold) {
        km_search_result res;
        s.cv = (km_cv){KM_CV_KFOLD, 5, 0, 0, 0, NULL};
        double t0 = bench_now();
        if (km_search(&s, &pb, NULL, &res, &err) != KM_OK) {
            fprintf(stderr, "kfold search: %s\n", err.message);
            return 1;
        }
        tk = bench_now() - t0;
        km_search_result_cleanup(&res);
    }
    double ph[4], t_eig;
    double *K = gram(X, n, d, k.gamma);
    phases(K, n, ph);
    eigen_loo(K, n, y, ps, na, ref, &t_eig);
    double worst = 0;
    for (size_t a = 0; a < na; a++) {
        double e = fabs(mse[a] - ref[a]) / fabs(ref[a]);
        worst = e > worst ? e : worst;
    }
    double fit = bench_median(tf, (size_t)reps);
    double loo = bench_median(tl, (size_t)reps);
    printf("{\"n\": %zu, \"d\": %zu, \"alphas\": %zu, \"fit_s\": %.3f, "
           "\"loo_search_s\": %.3f, \"loo_over_fit\": %.2f, "
           "\"kfold5_search_s\": %.3f, \"kfold5_over_fit\": %.1f, "
           "\"eigen_loo_s\": %.3f, \"eigen_loo_over_fit\": %.2f, "
           "\"max_rel_diff\": %.3g, \"dpotrf_s\": %.3f, \"dsytrd_s\": %.3f, "
           "\"dorgtr_s\": %.3f, \"dsyevd_s\": %.3f, "
           "\"best_alpha\": %g, \"peak_mib\": %.0f, ",
           n, d, na, fit, loo, loo / fit, tk, tk / fit, t_eig, t_eig / fit,
           worst, ph[0], ph[1], ph[2], ph[3], ps[best].alpha,
           bench_peak_mib());
    printf("\"loo_mse\": [");
    for (size_t a = 0; a < na; a++)
        printf("%s%.17g", a ? ", " : "", mse[a]);
    printf("]}\n");
    free(X), free(y), free(ks), free(ps), free(mse), free(ref), free(K);
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
    int kfold = argc > 5 ? atoi(argv[5]) : 1;
    const char *dump = argc > 6 ? argv[6] : NULL;
    if (n < 10 || d < 1 || na < 1 || reps < 1 || reps > 32) {
        fprintf(stderr, "usage: %s [n [d [n_alphas [reps [kfold [DIR]]]]]]\n",
                argv[0]);
        return 2;
    }
    return krr_loo(n, d, na, reps, kfold, dump);
}
