/*
 * bench_svm.c - kmserve's side of the SVM benchmark: loads a shared CSV
 * data set, scales the features to [-1, 1] by the training rows (as
 * tests/testdata.h and bench_svm.py do), maps the labels to sorted class
 * indices, fits C-SVC with an rbf kernel, predicts the test rows, and
 * prints one JSON line with the median times, the accuracy and the
 * support-vector count. bench/bench_svm.py runs it beside LIBSVM and
 * scikit-learn.
 *
 *   bench_svm FILE N_TRAIN N_TEST C GAMMA [REPEATS [CACHE_MB [TOL [PROB
 *             [THREADS]]]]]
 *
 * The first N_TRAIN rows train, the last N_TEST rows test. THREADS (by
 * default the CPUs, as kmserve gives a fit when it runs one worker) is
 * the fit's km_fit_control.threads.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../tests/testdata.h"
#include "bench_util.h"
#include "km.h"

int main(int argc, char **argv)
{
    if (argc < 6) {
        fprintf(stderr, "usage: %s FILE N_TRAIN N_TEST C GAMMA [REPEATS "
                        "[CACHE_MB [TOL [PROB [THREADS]]]]]\n", argv[0]);
        return 2;
    }
    size_t n_train = strtoul(argv[2], NULL, 10);
    size_t n_test = strtoul(argv[3], NULL, 10);
    km_svm_params p = km_svm_params_default();
    p.C = atof(argv[4]);
    double gamma = atof(argv[5]);
    int repeats = argc > 6 ? atoi(argv[6]) : 3;
    if (argc > 7)
        p.cache_mb = atof(argv[7]);
    if (argc > 8)
        p.tol = atof(argv[8]);
    if (argc > 9)
        p.probability = atoi(argv[9]);
    km_fit_control ctl = {NULL, NULL, (int)sysconf(_SC_NPROCESSORS_ONLN),
                          NULL};
    if (argc > 10)
        ctl.threads = atoi(argv[10]);

    km_dataset ds;
    if (km_dataset_load(argv[1], (size_t)-1, &ds) != 0 ||
        ds.n < n_train + n_test) {
        fprintf(stderr, "cannot read %s with %zu rows (set KM_DATA)\n",
                argv[1], n_train + n_test);
        return 1;
    }
    size_t test0 = ds.n - n_test;
    km_dataset_scale(&ds, n_train);
    size_t k;
    int *y = km_dataset_classes(&ds, n_train, &k);
    if (!y)
        return 1;

    km_kernel kern;
    km_kernel_init(&kern, KM_KERNEL_RBF);
    kern.gamma = gamma;
    double *t_fit = malloc(repeats * sizeof *t_fit);
    double *t_pred = malloc(repeats * sizeof *t_pred);
    int *pred = malloc(n_test * sizeof *pred);
    km_model *m = NULL;
    km_error err;
    for (int r = 0; r < repeats; r++) {
        km_model_free(m);
        double t0 = bench_now();
        if (km_svc_fit(&kern, &p, ds.X, n_train, ds.d, y, k, &ctl, &m,
                       &err) != KM_OK) {
            fprintf(stderr, "fit: %s\n", err.message);
            return 1;
        }
        t_fit[r] = bench_now() - t0;
        t0 = bench_now();
        if (km_svc_predict(m, ds.X + test0 * ds.d, n_test, pred, &err) !=
            KM_OK) {
            fprintf(stderr, "predict: %s\n", err.message);
            return 1;
        }
        t_pred[r] = bench_now() - t0;
    }
    size_t right = 0;
    for (size_t i = 0; i < n_test; i++)
        right += pred[i] == y[test0 + i];
    const km_info_entry *it = km_info_find(km_model_training(m), "iterations");
    printf("{\"fit_s\": %.6f, \"predict_s\": %.6f, \"accuracy\": %.6f, "
           "\"n_sv\": %zu, \"iterations\": %.0f, \"classes\": %zu, "
           "\"peak_mib\": %.1f, \"threads\": %d}\n",
           bench_median(t_fit, repeats), bench_median(t_pred, repeats),
           100.0 * right / n_test, km_svm_support_count(m),
           it ? it->values[0] : 0.0, k, bench_peak_mib(), ctl.threads);
    km_model_free(m);
    free(pred);
    free(t_fit);
    free(t_pred);
    free(y);
    km_dataset_free(&ds);
    return 0;
}
