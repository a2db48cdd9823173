/*
 * bench_krr.c - our side of the KRR benchmark: fit and predict with libkm
 * on data the driver wrote, printing one JSON line of medians, the
 * process's peak memory and the exact solve's precision figures.
 *
 * usage: bench_krr X.bin y.bin T.bin n d n_test gamma alpha reps
 *        [mixed|double]
 * (.bin files are raw little-endian doubles, row-major; the last
 * argument is params.precision, default mixed)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_util.h"
#include "km.h"

int main(int argc, char **argv)
{
    if (argc != 10 && argc != 11) {
        fprintf(stderr, "usage: %s X.bin y.bin T.bin n d n_test gamma alpha "
                "reps [mixed|double]\n", argv[0]);
        return 2;
    }
    bench_data b = bench_read_data(argv);
    size_t n = b.n, d = b.d, nt = b.nt;
    int reps = atoi(argv[9]);
    double *X = b.X, *y = b.y, *T = b.T, *out = malloc(nt * sizeof *out);
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_RBF);
    k.gamma = atof(argv[7]);
    km_krr_params p = {.alpha = atof(argv[8])};
    if (argc == 11 && !strcmp(argv[10], "double"))
        p.precision = KM_KRR_PRECISION_DOUBLE;
    /* the fit may use every core beside BLAS's threads, as the server's
     * fits do (--blas-threads) */
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    km_fit_control ctl = {NULL, NULL, cores > 1 ? (int)cores : 1};
    double fit[32], pred[32];
    km_model *m = NULL;
    km_error err;
    for (int r = 0; r < reps && r < 32; r++) {
        km_model_free(m);
        m = NULL;
        double t0 = bench_now();
        if (km_krr_fit(&k, &p, X, n, d, y, 1, &ctl, &m, &err) != KM_OK) {
            fprintf(stderr, "fit: %s\n", err.message);
            return 1;
        }
        fit[r] = bench_now() - t0;
        t0 = bench_now();
        if (km_krr_predict(m, T, nt, out, &err) != KM_OK) {
            fprintf(stderr, "predict: %s\n", err.message);
            return 1;
        }
        pred[r] = bench_now() - t0;
    }
    double checksum = 0;
    for (size_t i = 0; i < nt; i++)
        checksum += out[i];
    const km_info *ti = km_model_training(m);
    const km_info_entry *pr = km_info_find(ti, "precision");
    const km_info_entry *st = km_info_find(ti, "refinement_steps");
    printf("{\"fit\": %.6f, \"predict\": %.6f, \"peak_mib\": %.1f, "
           "\"checksum\": %.17g, \"precision\": \"%s\", \"steps\": %d}\n",
           bench_median(fit, (size_t)reps), bench_median(pred, (size_t)reps),
           bench_peak_mib(), checksum,
           pr && pr->values[0] == KM_KRR_PRECISION_MIXED ? "mixed" : "double",
           st ? (int)st->values[0] : 0);
    km_model_free(m);
    free(X);
    free(y);
    free(T);
    free(out);
    return 0;
}
