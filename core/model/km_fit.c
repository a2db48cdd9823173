/*
 * km_fit.c - what every fit does before and after its own work: the one
 * prologue (validation in one order with one set of size limits, the
 * kernel copied and resolved, the clock started) and the one epilogue
 * (the model built around the algorithm's payload, with its "seconds"),
 * and the training figures of a kernel found not PSD on the rows.
 *
 * Validation order, the same for every algorithm: the kernel; X (and y)
 * not empty; the algorithm's parameters (its descriptor's check, which
 * may look at n and the classes); the class count; the sizes; X, y and
 * the labels; then, on the copied and resolved kernel, the scale of X.
 *
 * Thread-safety: reentrant; the memory budget is one atomic value.
 */
#include <math.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "../base/km_base_internal.h"
#include "../kernels/km_kernel_internal.h"
#include "km_model_internal.h"

/* ------------------------------------------------------------ budget */

static atomic_size_t memory_budget;

void km_set_memory_budget(size_t bytes)
{
    atomic_store(&memory_budget, bytes);
}

size_t km_memory_budget(void)
{
    size_t b = atomic_load(&memory_budget);
    return b ? b : km_default_memory_budget();
}

size_t km_default_memory_budget(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGE_SIZE);
    if (pages <= 0 || size <= 0)
        return (size_t)1 << 30;
    return (size_t)(0.75 * (double)pages * (double)size);
}

/* ------------------------------------------------------------ fits */

/* Rows a fit takes: SVR's 2n solver variables and the Gram's n x n
 * elements are indexed with int in BLAS and LAPACK. */
#define MAX_ROWS ((size_t)2147483647 / 4)

/* KM_EINVAL unless the problem's sizes fit every algorithm's buffers and
 * what a model file holds (km.h), so a fitted model always loads. */
km_status km_fit_check_sizes(const km_problem *pb, km_error *err)
{
    size_t n = pb->n, d = pb->d, m = pb->y ? pb->m : 1;
    if (n > MAX_ROWS || !km_mul3(n, n, sizeof(double)) ||
        !km_mul3(n, d, 2 * sizeof(double)) ||
        !km_mul3(n, m, 2 * sizeof(double)))
        return km_error_set(err, KM_EINVAL, "problem too large");
    if (d > KM_MODEL_MAX_FEATURES)
        return km_error_set(err, KM_EINVAL, "X has %zu features; a model "
                            "holds at most %zu", d, KM_MODEL_MAX_FEATURES);
    if (pb->y && m > KM_MODEL_MAX_OUTPUTS)
        return km_error_set(err, KM_EINVAL, "y has %zu outputs; a model "
                            "holds at most %zu", m, KM_MODEL_MAX_OUTPUTS);
    return KM_OK;
}

static km_status check_data(const km_problem *pb, km_error *err)
{
    km_status st = km_check_matrix("X", pb->X, pb->n, pb->d, err);
    if (st == KM_OK && pb->y)
        st = km_check_matrix("y", pb->y, pb->n, pb->m, err);
    for (size_t i = 0; st == KM_OK && pb->labels && i < pb->n; i++)
        if (pb->labels[i] < 0 || (size_t)pb->labels[i] >= pb->n_classes)
            st = km_error_set(err, KM_EINVAL, "y[%zu] = %d is not a class "
                              "index in [0, %zu)", i, pb->labels[i],
                              pb->n_classes);
    return st;
}

km_status km_fit_validate(km_algorithm a, const km_kernel *kernel,
                          const void *params, const km_problem *pb,
                          km_error *err)
{
    const km_algo *al = km_algo_of(a);
    km_status st;
    if (!al)
        return km_error_set(err, KM_EINVAL, "unknown algorithm %d", (int)a);
    if ((st = km_kernel_check(kernel, err)) != KM_OK ||
        (st = km_algorithm_check_kernel(a, params, kernel, err)) != KM_OK)
        return st;
    if (pb->n == 0 || pb->d == 0 || (pb->y && pb->m == 0))
        return km_error_set(err, KM_EINVAL, "%s must have at least one row "
                            "and column",
                            pb->y || pb->labels ? "X and y" : "X");
    if (pb->labels && pb->n_classes < 2)
        return km_error_set(err, KM_EPROBLEM, "y has %zu distinct class%s; "
                            "%s needs at least 2", pb->n_classes,
                            pb->n_classes == 1 ? "" : "es",
                            km_algorithm_name(a));
    if ((st = al->check(params, pb, err)) != KM_OK ||
        (st = km_fit_check_sizes(pb, err)) != KM_OK)
        return st;
    return check_data(pb, err);
}

km_status km_fit_begin(km_fit_frame *f, km_algorithm a, const km_kernel *kernel,
                       const void *params, const km_problem *pb,
                       km_error *err)
{
    km_status st;
    memset(f, 0, sizeof *f);
    f->t0 = km_now();
    f->algo = a;
    km_kernel_init(&f->k, KM_KERNEL_LINEAR);
    if ((st = km_fit_validate(a, kernel, params, pb, err)) != KM_OK)
        return st;
    if ((st = km_kernel_copy(&f->k, kernel, err)) != KM_OK) {
        km_kernel_init(&f->k, KM_KERNEL_LINEAR);
        return st;
    }
    km_kernel_resolve(&f->k, pb->d);
    if ((st = km_kernel_check_rows(&f->k, pb->X, pb->n, pb->d, 1, err)) !=
        KM_OK)
        return st;
    return km_kernel_check_scale(&f->k, pb->X, pb->n, pb->d, err);
}

km_status km_fit_model(km_fit_frame *f, size_t n_features, size_t n_samples,
                       size_t n_outputs, void *payload, km_model **out,
                       km_error *err)
{
    km_model *m = NULL;
    km_status st = km_model_create(f->algo, &f->k, n_features, n_samples,
                                   n_outputs, payload, &m, err);
    if (st != KM_OK)
        return st;
    if (km_info_add1(km_model_training_mut(m), "seconds", KM_INFO_NUMBER,
                     km_now() - f->t0) != KM_OK) {
        km_model_free(m);
        return km_error_set(err, KM_ENOMEM, "out of memory for the model");
    }
    *out = m;
    return KM_OK;
}

void km_fit_cleanup(km_fit_frame *f)
{
    km_kernel_cleanup(&f->k);
}

/* ------------------------------------------------------------ PSD */

km_status km_fit_note_psd(km_model *m, double min_eig, double max_eig,
                          size_t rows, size_t n, km_error *err)
{
    double top = fmax(fabs(min_eig), fabs(max_eig));
    if (!(min_eig < -km_psd_threshold(rows, top)))
        return KM_OK;
    km_info *ti = km_model_training_mut(m);
    int whole = rows >= n;
    if (km_info_add1(ti, "psd", KM_INFO_BOOLEAN, 0) ||
        km_info_add1(ti, whole ? "min_eigenvalue" : "min_eigenvalue_at_most",
                     KM_INFO_NUMBER, min_eig) ||
        (!whole && km_info_add1(ti, "psd_rows", KM_INFO_INTEGER,
                                (double)rows)))
        return km_error_set(err, KM_ENOMEM, "out of memory for the model");
    return KM_OK;
}
