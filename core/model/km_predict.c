/*
 * km_predict.c - the generic predicts, km_predict and km_predict_labels:
 * the descriptor's function for the answer asked, through the model's
 * preprocessing when it keeps one (inputs scaled in row blocks, y_mean
 * added, kpca's inverse mapped back).
 *
 * Thread-safety: reentrant; a shared model is only read.
 */
#include <stdlib.h>

#include "../base/km_base_internal.h"
#include "km_model_internal.h"

/* ------------------------------------------------------------ through the preprocessing */

size_t km_pre_block_rows(size_t d)
{
    size_t r = ((size_t)1 << 17) / (d ? d : 1);
    return r ? r : 1;
}

typedef km_status (*labels_fn)(const km_model *, const double *, size_t,
                               int *, km_error *);

/* fn (out: w doubles a row) or, when fn is NULL, labels (out: one int a
 * row) of m on X's n rows scaled by s, through a scaled copy of b rows at
 * a time: what km_pre_predict and km_pre_predict_labels share. */
static km_status scaled_blocks(const km_model *m, const km_pre_stats *s,
                               const double *X, size_t n, size_t b,
                               km_predict_fn fn, size_t w, labels_fn labels,
                               void *out, km_error *err)
{
    size_t d = km_model_n_features(m);
    km_status st = km_model_check_input(m, X, n, d, err);
    if (st != KM_OK)
        return st;
    double *T = malloc(km_mul3(b < n ? b : n, d, sizeof *T));
    if (!T)
        return km_error_set(err, KM_ENOMEM, "out of memory for X's scaled "
                            "copy");
    for (size_t r = 0; r < n && st == KM_OK; r += b) {
        size_t len = n - r < b ? n - r : b;
        st = km_pre_transform(s, X + r * d, len, d, r, T, err);
        if (st == KM_OK)
            st = fn ? fn(m, T, len, (double *)out + r * w, err)
                    : labels(m, T, len, (int *)out + r, err);
    }
    free(T);
    return st;
}

km_status km_pre_predict(const km_model *m, unsigned answer, km_predict_fn fn,
                         const double *X, size_t n, double *out,
                         km_error *err)
{
    const km_pre_stats *s = km_model_pre(m);
    size_t d = km_model_n_features(m);
    size_t w = km_model_answer_width(m, answer, n);
    km_status st;
    if (answer == KM_OUT_INVERSE) {
        /* X holds projections; the answer is in the model's space */
        if ((st = fn(m, X, n, out, err)) != KM_OK || !s->x_shift)
            return st;
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < d; j++)
                out[i * d + j] = out[i * d + j] * s->x_scale[j] +
                                 s->x_shift[j];
        return KM_OK;
    }
    /* The row width is the model's (km_model_answer_width, what fn
     * writes a row); without one the rows go in one block, and so does a
     * covariance, one answer for the whole batch. */
    if (answer == KM_OUT_COVARIANCE)
        w = 0;
    size_t block = w ? km_pre_block_rows(d) : n;
    st = s->x_shift ? scaled_blocks(m, s, X, n, block, fn, w, NULL, out, err)
                    : fn(m, X, n, out, err);
    if (st == KM_OK && answer == KM_OUT_VALUES && s->y_mean)
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < w; j++)
                out[i * w + j] += s->y_mean[j];
    return st;
}

km_status km_pre_predict_labels(const km_model *m, labels_fn labels,
                                const double *X, size_t n, int *out,
                                km_error *err)
{
    const km_pre_stats *s = km_model_pre(m);
    if (!s->x_shift)
        return labels(m, X, n, out, err);
    size_t block = km_pre_block_rows(km_model_n_features(m));
    return scaled_blocks(m, s, X, n, block, NULL, 0, labels, out, err);
}

/* ------------------------------------------------------------ the generic predicts */

km_status km_predict(const km_model *m, unsigned answer, const double *X,
                     size_t n, double *out, km_error *err)
{
    km_algorithm a = km_model_algorithm(m);
    const km_algo *al = km_algo_of(a);
    km_predict_fn fn = !al ? NULL
                       : answer == KM_OUT_VALUES        ? al->values
                       : answer == KM_OUT_SCORES        ? al->scores
                       : answer == KM_OUT_PROBABILITIES ? al->probabilities
                       : answer == KM_OUT_PROJECTIONS   ? al->projections
                       : answer == KM_OUT_INVERSE       ? al->inverse
                       : answer == KM_OUT_VARIANCES     ? al->variances
                       : answer == KM_OUT_COVARIANCE    ? al->covariance
                                                        : NULL;
    if (!fn)
        return km_error_set(err, KM_EINVAL, "a %s model does not answer "
                            "that (outputs 0x%x)",
                            km_algorithm_name(a), al ? al->outputs : 0);
    const km_pre_stats *s = km_model_pre(m);
    if (s->x_shift || s->y_mean)
        return km_pre_predict(m, answer, fn, X, n, out, err);
    return fn(m, X, n, out, err);
}

km_status km_predict_labels(const km_model *m, const double *X, size_t n,
                            int *out, km_error *err)
{
    km_algorithm a = km_model_algorithm(m);
    const km_algo *al = km_algo_of(a);
    if (!al || !al->labels)
        return km_error_set(err, KM_EINVAL, "a %s model answers no labels",
                            km_algorithm_name(a));
    if (km_model_pre(m)->x_shift)
        return km_pre_predict_labels(m, al->labels, X, n, out, err);
    return al->labels(m, X, n, out, err);
}
