/*
 * svm_data.h - what the SVM tests share (test_km_svm.c,
 * test_km_svc_screened.c): a data set of data/ with its class indices,
 * and the rbf kernel.
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

static km_kernel rbf(double gamma)
{
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_RBF);
    k.gamma = gamma;
    return k;
}

#endif
