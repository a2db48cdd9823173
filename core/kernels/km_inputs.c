/*
 * km_inputs.c - what a kernel takes as X: the input kinds of the kernel
 * table's families (rows of numbers, strings, precomputed values), their
 * checks, and the precomputed kernel, whose values X holds.
 *
 * A precomputed kernel's rows carry their index in front
 * (km_precomputed_pack): a training row's number, or -1 for a new row;
 * k(x, z) is x's entry for z's index (or z's for x's), so that a subset
 * of the training rows (a search's fold, svm's support vectors) keeps
 * its values.
 *
 * Thread-safety: reentrant.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../base/km_base_internal.h"
#include "km_kernel_internal.h"

/* The names of the types whose rows take parameter flag kparam. */
static void params_names(unsigned kparam, char *buf, size_t len)
{
    const char *names[KM_KERNEL_TYPE_COUNT];
    int k = 0;
    for (int t = 0; t < KM_KERNEL_TYPE_COUNT; t++)
        if (km_kernel_type_info((km_kernel_type)t)->params & kparam)
            names[k++] = km_kernel_type_name((km_kernel_type)t);
    km_join_names(names, k, " and ", buf, len);
}

km_status km_kernel_check_leaf(const km_kernel *k, const char *path, int depth,
                            km_error *err)
{
    const km_kernel_info *in = km_kernel_type_info(k->type);
    if ((in->params & KM_KPARAM_LENGTH) &&
        (k->length < 1 || k->length > KM_STRING_MAX_K))
        return km_error_set(err, KM_EINVAL, "%s.length must be an integer "
                            "from 1 to %d", path, KM_STRING_MAX_K);
    if ((in->params & KM_KPARAM_LAMBDA) &&
        !(isfinite(k->lambda) &&
          (in->lambda_min_open ? k->lambda > in->lambda_min
                               : k->lambda >= in->lambda_min) &&
          k->lambda <= in->lambda_max)) {
        if (in->lambda_max < HUGE_VAL)
            return km_error_set(err, KM_EINVAL, "%s.lambda must be a number "
                                "%s %g and <= %g for a %s kernel", path,
                                in->lambda_min_open ? ">" : ">=",
                                in->lambda_min, in->lambda_max,
                                km_kernel_type_name(k->type));
        return km_error_set(err, KM_EINVAL, "%s.lambda must be a finite "
                            "number %s %g for a %s kernel", path,
                            in->lambda_min_open ? ">" : ">=", in->lambda_min,
                            km_kernel_type_name(k->type));
    }
    if (in->family == KM_KFAMILY_PRECOMPUTED && depth > 0)
        return km_error_set(err, KM_EINVAL, "%s: a precomputed kernel is the "
                            "whole kernel, not a part of a sum, product or "
                            "normalized kernel", path);
    if (k->n_columns == 0)
        return KM_OK;
    if (!(in->params & KM_KPARAM_COLUMNS)) {
        char names[256];
        params_names(KM_KPARAM_COLUMNS, names, sizeof names);
        return km_error_set(err, KM_EINVAL, "%s.columns apply only to the "
                            "kernels of rows of numbers (%s), not to a %s "
                            "kernel", path, names, km_kernel_type_name(k->type));
    }
    if (k->n_columns < 0 || k->n_columns > KM_KERNEL_MAX_COLUMNS ||
        !k->columns)
        return km_error_set(err, KM_EINVAL, "%s.columns must list 1 to %d "
                            "columns", path, KM_KERNEL_MAX_COLUMNS);
    unsigned char seen[KM_KERNEL_MAX_COLUMNS / 8] = {0};
    for (int i = 0; i < k->n_columns; i++) {
        int c = k->columns[i];
        if (c < 0 || c >= KM_KERNEL_MAX_COLUMNS)
            return km_error_set(err, KM_EINVAL, "%s.columns[%d] must be an "
                                "integer from 0 to %d", path, i,
                                KM_KERNEL_MAX_COLUMNS - 1);
        if (seen[c / 8] >> (c % 8) & 1)
            return km_error_set(err, KM_EINVAL, "%s.columns[%d]: column %d "
                                "is listed twice", path, i, c);
        seen[c / 8] |= (unsigned char)(1u << (c % 8));
    }
    return KM_OK;
}

/* ------------------------------------------------------------ inputs */

static const char *const input_names[KM_INPUT_COUNT] = {
    [KM_INPUT_VECTORS] = "vectors", [KM_INPUT_STRINGS] = "strings",
    [KM_INPUT_PRECOMPUTED] = "precomputed"};
const km_choices km_input_kind_choices = {input_names, KM_INPUT_COUNT};

km_input_kind km_kernel_type_input(km_kernel_type t)
{
    if ((unsigned)t >= KM_KERNEL_TYPE_COUNT)
        return KM_INPUT_VECTORS;
    switch (km_kernel_desc_of(t)->info.family) {
    case KM_KFAMILY_STRING:
        return KM_INPUT_STRINGS;
    case KM_KFAMILY_PRECOMPUTED:
        return KM_INPUT_PRECOMPUTED;
    default:
        return KM_INPUT_VECTORS;
    }
}

km_input_kind km_kernel_input(const km_kernel *k)
{
    while (k->n_parts > 0 && k->parts)
        k = &k->parts[0];
    return km_kernel_type_input(k->type);
}

size_t km_kernel_input_width(const km_kernel *k, size_t d)
{
    switch (km_kernel_input(k)) {
    case KM_INPUT_STRINGS:
        return km_string_max_length(d);
    case KM_INPUT_PRECOMPUTED:
        return d ? d - 1 : 0;
    default:
        return d;
    }
}

size_t km_kernel_input_d(const km_kernel *k, size_t width)
{
    switch (km_kernel_input(k)) {
    case KM_INPUT_STRINGS:
        return km_string_width(width);
    case KM_INPUT_PRECOMPUTED:
        return width + 1;
    default:
        return width;
    }
}

void km_precomputed_pack(const double *G, size_t n, size_t m, int training,
                         double *X)
{
    for (size_t i = 0; i < n; i++) {
        X[i * (m + 1)] = training ? (double)i : -1.0;
        memcpy(X + i * (m + 1) + 1, G + i * m, m * sizeof *G);
    }
}

/* A precomputed kernel's value: x's entry for z's index, or z's for
 * x's; NAN between two new rows (index -1). */
double km_precomputed_value(const double *x, const double *z, size_t d)
{
    double m = d ? (double)(d - 1) : 0;
    if (z[0] >= 0 && z[0] < m && z[0] == floor(z[0]))
        return x[1 + (size_t)z[0]];
    if (x[0] >= 0 && x[0] < m && x[0] == floor(x[0]))
        return z[1 + (size_t)x[0]];
    return NAN;
}

km_status km_kernel_check_rows(const km_kernel *k, const double *X, size_t n,
                               size_t d, int training, km_error *err)
{
    for (int p = 0; p < k->n_parts; p++) {
        km_status st = km_kernel_check_rows(&k->parts[p], X, n, d, training,
                                            err);
        if (st != KM_OK)
            return st;
    }
    for (int i = 0; i < k->n_columns; i++)
        if ((size_t)k->columns[i] >= d)
            return km_error_set(err, KM_EINVAL, "kernel.columns lists column "
                                "%d, but X has %zu column%s", k->columns[i],
                                d, d == 1 ? "" : "s");
    if (k->n_parts)
        return KM_OK;
    switch (km_kernel_desc_of(k->type)->info.family) {
    case KM_KFAMILY_STRING:
        for (size_t i = 0; i < n; i++)
            if (d < 1 || km_string_row_check(X + i * d, d) != 0)
                return km_error_set(err, KM_EINVAL, "X[%zu] is not a string "
                                    "row (a %s kernel takes strings)", i,
                                    km_kernel_type_name(k->type));
        return KM_OK;
    case KM_KFAMILY_PRECOMPUTED:
        break;
    default:
        return KM_OK;
    }
    /* training rows: each its index among the d - 1 training rows, so
     * that a fold of a search (a subset) checks as the whole does */
    double top = 0, asym = 0, m = d ? (double)(d - 1) : 0;
    for (size_t i = 0; i < n; i++) {
        double ix = X[i * d];
        if (!(ix >= 0 && ix < m && ix == floor(ix)) &&
            (training || ix != -1.0))
            return km_error_set(err, KM_EINVAL, "X[%zu] of a precomputed "
                                "kernel does not carry its index (%s)", i,
                                training ? "a training row's number"
                                         : "-1 for a new row, or a training "
                                           "row's number");
        for (size_t j = 0; training && j <= i; j++) {
            double a = X[i * d + 1 + (size_t)X[j * d]];
            double b = X[j * d + 1 + (size_t)ix];
            top = fmax(top, fabs(a));
            asym = fmax(asym, fabs(a - b));
        }
    }
    if (training && asym > KM_PSD_SYM_TOL * top)
        return km_error_set(err, KM_EINVAL, "X, a precomputed Gram matrix, is "
                            "not symmetric: max |X[i][j] - X[j][i]| = %.3g "
                            "exceeds %g times max |X[i][j]| = %.3g", asym,
                            KM_PSD_SYM_TOL, top);
    return KM_OK;
}

/* A precomputed kernel's block (pre_value); KM_EINVAL if a pair has no
 * value (two new rows). */
km_status km_precomputed_cross(const double *X, size_t nx,
                                   const double *Z, size_t nz, size_t d,
                                   double *K, size_t ldk, km_error *err)
{
    for (size_t i = 0; i < nx; i++)
        for (size_t j = 0; j < nz; j++) {
            double v = km_precomputed_value(X + i * d, Z + j * d, d);
            if (isnan(v))
                return km_error_set(err, KM_EINVAL, "a precomputed kernel "
                                    "has values against its training rows "
                                    "only, not between two new rows");
            K[i * ldk + j] = v;
        }
    return KM_OK;
}

