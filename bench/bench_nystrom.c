/*
 * bench_nystrom.c - our side of the large-n KRR benchmark: one nystrom
 * (or rff) fit with libkm on data the driver wrote, then predictions of
 * the test rows, printing one JSON line (fit seconds, the process's peak
 * memory, CG iterations and residual) and writing the predictions.
 *
 * The fit is timed from the data in memory, as scikit-learn's side is:
 * reading the .bin files is not included.
 *
 * usage: bench_nystrom X.bin y.bin T.bin n d n_test gamma alpha solver m
 *        cg_tol cg_max_iter pred.bin
 * (.bin files are raw little-endian doubles, row-major; solver is nystrom
 * or rff, m the centres or features)
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "bench_util.h"
#include "km.h"

/* A training figure of the model, or -1. */
static double figure(const km_model *m, const char *key)
{
    const km_info_entry *e = km_info_find(km_model_training(m), key);
    return e && e->count ? e->values[0] : -1;
}

int main(int argc, char **argv)
{
    if (argc != 14) {
        fprintf(stderr, "usage: %s X.bin y.bin T.bin n d n_test gamma alpha "
                "solver m cg_tol cg_max_iter pred.bin\n", argv[0]);
        return 2;
    }
    bench_data b = bench_read_data(argv);
    size_t n = b.n, d = b.d, nt = b.nt;
    double *X = b.X, *y = b.y, *T = b.T, *out = malloc(nt * sizeof *out);
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_RBF);
    k.gamma = atof(argv[7]);
    km_krr_params p = km_krr_params_default();
    p.alpha = atof(argv[8]);
    p.solver = km_choice_value(&km_krr_solver_choices, argv[9]) ==
                       KM_KRR_SOLVER_RFF
                   ? KM_KRR_SOLVER_RFF
                   : KM_KRR_SOLVER_NYSTROM;
    p.n_centres = p.n_components = strtoul(argv[10], NULL, 10);
    p.cg_tol = atof(argv[11]);
    p.cg_max_iter = strtoul(argv[12], NULL, 10);
    km_model *m = NULL;
    km_error err;
    /* the threads the server gives a fit by default: one per core */
    km_fit_control ctl = {NULL, NULL, (int)sysconf(_SC_NPROCESSORS_ONLN)};
    double t0 = bench_now();
    if (km_krr_fit(&k, &p, X, n, d, y, 1, &ctl, &m, &err) != KM_OK) {
        fprintf(stderr, "fit: %s\n", err.message);
        return 1;
    }
    double fit = bench_now() - t0;
    t0 = bench_now();
    if (km_krr_predict(m, T, nt, out, &err) != KM_OK) {
        fprintf(stderr, "predict: %s\n", err.message);
        return 1;
    }
    double pred = bench_now() - t0;
    FILE *f = fopen(argv[13], "wb");
    if (!f || fwrite(out, sizeof *out, nt, f) != nt || fclose(f)) {
        fprintf(stderr, "cannot write %s\n", argv[13]);
        return 2;
    }
    printf("{\"fit\": %.6f, \"predict\": %.6f, \"peak_mib\": %.1f, "
           "\"iterations\": %.0f, \"residual\": %.3g}\n", fit, pred,
           bench_peak_mib(), figure(m, "iterations"), figure(m, "residual"));
    km_model_free(m);
    free(X);
    free(y);
    free(T);
    free(out);
    return 0;
}
