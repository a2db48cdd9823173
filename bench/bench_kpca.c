/*
 * bench_kpca.c - times libkm's kernel PCA: fit, then projection of new
 * rows, on data that bench/bench_kpca.py writes (raw little-endian
 * doubles), so that scikit-learn sees the very same numbers.
 *
 *   bench_kpca X.bin n T.bin n_project d n_components solver repeats [out]
 *
 * solver is auto, dense, iterative or randomized; the kernel is rbf with the default
 * gamma (1/d). Prints one JSON line: median fit and project seconds, the
 * process's peak RSS (MiB), the solver used, its block products and the
 * eigenvalues. With out, the projections of the last repeat are written
 * there (raw doubles) for the driver to compare with scikit-learn's.
 *
 *   bench_kpca phases X.bin n d k
 *
 * times the dense path's LAPACK steps on the centred rbf Gram of X (what
 * km_eig_dense runs: dsytrd, dsterf, dstein on the top k, dormtr on k
 * vectors) and, for comparison, dsyevr asked for the top k by index (what
 * scikit-learn's dense solver runs). Prints one JSON line of seconds.
 */
#include <lapacke.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "km.h"

static double *read_raw(const char *path, size_t count)
{
    FILE *f = fopen(path, "rb");
    double *v = malloc(count * sizeof *v);
    if (!f || !v || fread(v, sizeof *v, count, f) != count) {
        if (f)
            fclose(f);
        free(v);
        return NULL;
    }
    fclose(f);
    return v;
}

/* The centred rbf Gram (gamma 1/d) of X, n x n, both triangles. */
static double *centred_gram(const double *X, size_t n, size_t d)
{
    double *G = malloc(n * n * sizeof *G), *mean = calloc(n, sizeof *mean);
    if (!G || !mean)
        exit(1);
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j <= i; j++) {
            double s = 0;
            for (size_t c = 0; c < d; c++)
                s += (X[i * d + c] - X[j * d + c]) * (X[i * d + c] - X[j * d + c]);
            G[i * n + j] = G[j * n + i] = exp(-s / (double)d);
        }
    double g = 0;
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < n; j++)
            mean[i] += G[i * n + j];
        mean[i] /= (double)n;
        g += mean[i] / (double)n;
    }
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++)
            G[i * n + j] += g - mean[i] - mean[j];
    free(mean);
    return G;
}

static int phases(int argc, char **argv)
{
    if (argc < 6)
        return 2;
    size_t n = strtoul(argv[3], NULL, 10), d = strtoul(argv[4], NULL, 10);
    size_t k = strtoul(argv[5], NULL, 10);
    lapack_int ln = (lapack_int)n, lk = (lapack_int)k, found = 0;
    double *X = read_raw(argv[2], n * d), *G = X ? centred_gram(X, n, d) : NULL;
    double *A = malloc(n * n * sizeof *A), *dd = malloc(n * sizeof *dd);
    double *e = malloc(n * sizeof *e), *tau = malloc(n * sizeof *tau);
    double *w = malloc(n * sizeof *w), *e2 = malloc(n * sizeof *e2);
    double *Z = malloc(n * k * sizeof *Z), *work = malloc(5 * n * sizeof *work);
    lapack_int *iblock = malloc(n * sizeof *iblock), *isplit = malloc(n * sizeof *isplit);
    lapack_int *iwork = malloc(5 * n * sizeof *iwork), *ifail = malloc(k * sizeof *ifail);
    lapack_int *isuppz = malloc(2 * k * sizeof *isuppz);
    if (!G || !A || !dd || !e || !tau || !w || !e2 || !Z || !work || !iblock ||
        !isplit || !iwork || !ifail || !isuppz)
        return 1;
    memcpy(A, G, n * n * sizeof *A);
    double t0 = bench_now();
    lapack_int info = LAPACKE_dsytrd(LAPACK_COL_MAJOR, 'U', ln, A, ln, dd, e, tau);
    double t1 = bench_now();
    memcpy(w, dd, n * sizeof *w);
    memcpy(e2, e, n * sizeof *e2);
    info |= LAPACKE_dsterf(ln, w, e2);
    double t2 = bench_now();
    /* The top k of the (unsplit) T, ascending, as dstein wants them. */
    for (size_t j = 0; j < k; j++) {
        w[j] = w[n - k + j];
        iblock[j] = 1;
    }
    isplit[0] = ln;
    info |= LAPACKE_dstein_work(LAPACK_COL_MAJOR, ln, dd, e, lk, w, iblock, isplit,
                                Z, ln, work, iwork, ifail);
    double t3 = bench_now();
    info |= LAPACKE_dormtr(LAPACK_COL_MAJOR, 'L', 'U', 'N', ln, lk, A, ln, tau, Z, ln);
    double t4 = bench_now();
    memcpy(A, G, n * n * sizeof *A);
    double t5 = bench_now();
    info |= LAPACKE_dsyevr(LAPACK_COL_MAJOR, 'V', 'I', 'U', ln, A, ln, 0, 0,
                           ln - lk + 1, ln, 0.0, &found, w, Z, ln, isuppz);
    double t6 = bench_now();
    if (info != 0) {
        fprintf(stderr, "LAPACK failed\n");
        return 1;
    }
    printf("{\"n\": %zu, \"dsytrd\": %.3f, \"dsterf\": %.3f, \"dstein\": %.3f, "
           "\"dormtr\": %.3f, \"dense total\": %.3f, \"dsyevr top k\": %.3f}\n",
           n, t1 - t0, t2 - t1, t3 - t2, t4 - t3, t4 - t0, t6 - t5);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "phases") == 0)
        return phases(argc, argv);
    if (argc < 9) {
        fprintf(stderr, "usage: %s X.bin n T.bin n_project d n_components "
                        "auto|dense|iterative|randomized repeats [out.bin]\n", argv[0]);
        return 2;
    }
    size_t n = strtoul(argv[2], NULL, 10), nt = strtoul(argv[4], NULL, 10);
    size_t d = strtoul(argv[5], NULL, 10);
    int repeats = atoi(argv[8]);
    km_kpca_params p = km_kpca_params_default();
    p.n_components = strtoul(argv[6], NULL, 10);
    int solver = km_choice_value(&km_kpca_solver_choices, argv[7]);
    if (solver >= 0) /* else auto */
        p.solver = (km_kpca_solver)solver;
    double *X = read_raw(argv[1], n * d), *T = read_raw(argv[3], nt * d);
    double *P = malloc(nt * p.n_components * sizeof *P);
    double *fit = malloc((size_t)repeats * sizeof *fit);
    double *proj = malloc((size_t)repeats * sizeof *proj);
    if (!X || !T || !P || !fit || !proj || repeats < 1) {
        fprintf(stderr, "cannot read the data\n");
        return 1;
    }
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_RBF);
    km_model *m = NULL;
    km_error err;
    for (int r = 0; r < repeats; r++) {
        km_model_free(m);
        m = NULL;
        double t0 = bench_now();
        if (km_kpca_fit(&k, &p, X, n, d, NULL, &m, &err) != KM_OK) {
            fprintf(stderr, "fit: %s\n", err.message);
            return 1;
        }
        double t1 = bench_now();
        if (km_kpca_project(m, T, nt, P, &err) != KM_OK) {
            fprintf(stderr, "project: %s\n", err.message);
            return 1;
        }
        fit[r] = t1 - t0;
        proj[r] = bench_now() - t1;
    }
    const km_info *ti = km_model_training(m);
    const double *lam = km_kpca_eigenvalues(m);
    printf("{\"fit\": %.6f, \"project\": %.6f, \"peak_mib\": %.1f, "
           "\"solver\": \"%s\", \"fallback\": %d, \"iterations\": %d, "
           "\"eigenvalues\": [",
           bench_median(fit, (size_t)repeats),
           bench_median(proj, (size_t)repeats), bench_peak_mib(),
           km_kpca_solver_name(
               (km_kpca_solver)km_info_find(ti, "solver")->values[0]),
           (int)km_info_find(ti, "fallback")->values[0],
           (int)km_info_find(ti, "iterations")->values[0]);
    for (size_t j = 0; j < p.n_components; j++)
        printf("%s%.17g", j ? ", " : "", lam[j]);
    printf("]}\n");
    if (argc > 9) {
        FILE *f = fopen(argv[9], "wb");
        if (!f || fwrite(P, sizeof *P, nt * p.n_components, f) !=
                      nt * p.n_components) {
            fprintf(stderr, "cannot write %s\n", argv[9]);
            return 1;
        }
        fclose(f);
    }
    km_model_free(m);
    free(X);
    free(T);
    free(P);
    free(fit);
    free(proj);
    return 0;
}
