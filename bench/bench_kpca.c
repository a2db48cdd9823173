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
 */
#include <stdio.h>
#include <stdlib.h>

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

int main(int argc, char **argv)
{
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
