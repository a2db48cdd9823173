/*
 * svm_data.h - what the SVM tests share (test_km_svm.c,
 * test_km_svc_screened.c): a data set of data/ with its class indices,
 * parity with LIBSVM's references, and the rbf kernel.
 */
#ifndef SVM_DATA_H
#define SVM_DATA_H

#include "../check_main.h"
#include "../testdata.h"
#include "km.h"

/* Loads a data set, scales it by the first n_train rows, and maps its
 * labels to indices into the sorted distinct training labels; every
 * row's label must be a training row's. */
static int *load_classes(const char *file, size_t n_train, km_dataset *ds,
                         size_t *k)
{
    int *y = km_dataset_load_classes(file, n_train, ds, k);
    ck_assert_msg(y != NULL, "cannot read %s", file);
    for (size_t i = 0; i < ds->n; i++)
        ck_assert_msg(y[i] >= 0, "%s: row %zu's label is not a training "
                      "row's", file, i);
    return y;
}

/* A model's parity with LIBSVM's svm-predict on the test rows X (n_test,
 * labels y) of gen_svm_refs.py's case name (tests/fixtures/svm_NAME_*),
 * with issue 3's tolerances: accuracy within 0.2 points, labels equal on
 * >= 99.5 % of the rows, support vectors within 2 % per class and in
 * all. */
static void check_libsvm_parity(const char *name, const km_model *m,
                                const double *X, const int *y,
                                size_t n_test, size_t k)
{
    char f[128];
    size_t np, nn;
    snprintf(f, sizeof f, "svm_%s_pred.txt", name);
    double *ref = km_read_fixture(f, &np);
    snprintf(f, sizeof f, "svm_%s_nsv.txt", name);
    double *ref_nsv = km_read_fixture(f, &nn);
    ck_assert_uint_eq(np, n_test);
    ck_assert_uint_eq(nn, k);
    int *pred = malloc(n_test * sizeof *pred);
    ck_assert_int_eq(km_svc_predict(m, X, n_test, pred, NULL), KM_OK);
    size_t ours = 0, theirs = 0, same = 0;
    for (size_t i = 0; i < n_test; i++) {
        ours += pred[i] == y[i];
        theirs += (int)ref[i] == y[i];
        same += pred[i] == (int)ref[i];
    }
    double acc = 100.0 * ours / n_test, lacc = 100.0 * theirs / n_test;
    ck_assert_msg(fabs(acc - lacc) <= 0.2 + 1e-9,
                  "%s: accuracy %.2f%%, LIBSVM %.2f%%", name, acc, lacc);
    ck_assert_msg(same >= 0.995 * n_test,
                  "%s: labels agree with LIBSVM on %zu of %zu rows", name,
                  same, n_test);
    const int *ns = km_svc_n_support(m);
    size_t total = 0, ref_total = 0;
    for (size_t c = 0; c < k; c++) {
        ck_assert_msg(fabs(ns[c] - ref_nsv[c]) <= 0.02 * ref_nsv[c] + 1,
                      "%s: class %zu has %d support vectors, LIBSVM %g",
                      name, c, ns[c], ref_nsv[c]);
        total += (size_t)ns[c];
        ref_total += (size_t)ref_nsv[c];
    }
    ck_assert_msg(fabs((double)total - ref_total) <= 0.02 * ref_total,
                  "%s: %zu support vectors, LIBSVM %zu", name, total,
                  ref_total);
    ck_assert_uint_eq(km_svm_support_count(m), total);
    free(pred);
    free(ref);
    free(ref_nsv);
}

static km_kernel rbf(double gamma)
{
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_RBF);
    k.gamma = gamma;
    return k;
}

#endif
