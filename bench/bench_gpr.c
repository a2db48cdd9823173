/*
 * bench_gpr.c - our side of the GPR benchmark: a gpr fit with fixed
 * hyperparameters, then the predictive mean and standard deviation of
 * the test rows, with libkm on data the driver wrote; prints one JSON line
 * of the times, the process's peak memory and checksums.
 *
 * usage: bench_gpr X.bin y.bin T.bin n d n_test gamma noise [m out.bin]
 * (.bin files are raw little-endian doubles, row-major). With m, the
 * means then the standard deviations of the test rows are written to
 * out.bin (bench_gpr_nystrom.py compares them), and unless m is "exact"
 * the fit is the nystrom solver's with the variance (m centres; 0: its
 * default).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "km.h"

int main(int argc, char **argv)
{
    if (argc != 9 && argc != 11) {
        fprintf(stderr, "usage: %s X.bin y.bin T.bin n d n_test gamma noise "
                "[m out.bin]\n", argv[0]);
        return 2;
    }
    bench_data b = bench_read_data(argv);
    size_t n = b.n, d = b.d, nt = b.nt;
    double *X = b.X, *y = b.y, *T = b.T;
    double *mean = malloc(nt * sizeof *mean), *var = malloc(nt * sizeof *var);
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_RBF);
    k.gamma = atof(argv[7]);
    km_gpr_params p = km_gpr_params_default();
    p.noise = atof(argv[8]);
    if (argc == 11 && strcmp(argv[9], "exact")) {
        p.solver = KM_GPR_SOLVER_NYSTROM;
        p.n_centres = strtoul(argv[9], NULL, 10);
        p.variance = 1;
    }
    km_model *m = NULL;
    km_error err;
    double t0 = bench_now();
    if (km_gpr_fit(&k, &p, X, n, d, y, NULL, &m, &err) != KM_OK) {
        fprintf(stderr, "fit: %s\n", err.message);
        return 1;
    }
    double fit = bench_now() - t0;
    t0 = bench_now();
    if (km_gpr_predict(m, T, nt, mean, &err) != KM_OK ||
        km_gpr_variance(m, T, nt, var, &err) != KM_OK) {
        fprintf(stderr, "predict: %s\n", err.message);
        return 1;
    }
    double pred = bench_now() - t0, cm = 0, cs = 0;
    for (size_t i = 0; i < nt; i++) {
        cm += mean[i];
        cs += sqrt(var[i]);
        var[i] = sqrt(var[i]);
    }
    FILE *f = argc == 11 ? fopen(argv[10], "wb") : NULL;
    if (argc == 11 && (!f || fwrite(mean, sizeof *mean, nt, f) != nt ||
                       fwrite(var, sizeof *var, nt, f) != nt || fclose(f))) {
        fprintf(stderr, "cannot write %s\n", argv[10]);
        return 1;
    }
    printf("{\"fit\": %.6f, \"predict\": %.6f, \"peak_mib\": %.1f, "
           "\"mean_sum\": %.17g, \"std_sum\": %.17g}\n", fit, pred,
           bench_peak_mib(), cm, cs);
    km_model_free(m);
    free(X);
    free(y);
    free(T);
    free(mean);
    free(var);
    return 0;
}
