/*
 * km_pre_stats.c - the preprocessing a model keeps: the scalings' names,
 * its statistics (a
 * per-feature shift and scale of X, the mean of y) as the model holds and
 * stores them: the check of what was asked against an algorithm, the
 * transform of X (applied to every input of km_predict and
 * km_predict_labels: km_predict.c), and the model file's preprocessing
 * section.
 *
 * Learning the statistics from training rows, and the fit through them,
 * are km_pre.c's (core/select), above the model.
 *
 * Thread-safety: reentrant; a model's statistics are only read once it is
 * shared.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../base/km_base_internal.h"
#include "km_model_internal.h"

KM_CHOICES_DEFINE(km_scale_choices, KM_SCALE_MAP, KM_SCALE_COUNT);

const char *km_scale_name(km_scale s)
{
    return km_choice_name(&km_scale_choices, (int)s);
}

int km_scale_parse(const char *name, km_scale *s)
{
    int i = km_choice_value(&km_scale_choices, name);
    if (i >= 0)
        *s = (km_scale)i;
    return i >= 0 ? 0 : -1;
}

void km_pre_stats_cleanup(km_pre_stats *s)
{
    free(s->x_shift);
    free(s->x_scale);
    free(s->y_mean);
    memset(s, 0, sizeof *s);
}

size_t km_pre_stats_bytes(const km_pre_stats *s, size_t nf, size_t no)
{
    size_t b = 0;
    if (s->x_shift)
        b += 2 * nf * sizeof(double);
    if (s->y_mean)
        b += no * sizeof(double);
    return b;
}

/* The algorithms that answer values, for messages ("krr, svr"). */
static void value_algorithms(char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int a = 0; a < KM_ALGO_COUNT && used < len; a++) {
        if (!(km_algorithm_outputs((km_algorithm)a) & KM_OUT_VALUES))
            continue;
        int w = snprintf(buf + used, len - used, "%s%s", used ? ", " : "",
                         km_algorithm_name((km_algorithm)a));
        used += w > 0 ? (size_t)w : 0;
    }
}

km_status km_pre_check_spec(const km_preprocess *pre, km_algorithm a,
                             km_status bad, const char *prefix,
                             km_error *err)
{
    if ((unsigned)pre->x >= KM_SCALE_COUNT) {
        char list[64];
        km_choice_list(&km_scale_choices, ", ", list, sizeof list);
        return km_error_set(err, bad, "%spreprocess.scale %d is not one of "
                            "%s", prefix, (int)pre->x, list);
    }
    if (pre->center_y && !(km_algorithm_outputs(a) & KM_OUT_VALUES)) {
        char list[64];
        value_algorithms(list, sizeof list);
        return km_error_set(err, bad, "%spreprocess.center_y applies to "
                            "algorithms that predict values (%s), not %s",
                            prefix, list, km_algorithm_name(a));
    }
    return KM_OK;
}

/* ------------------------------------------------------------ transform */

km_status km_pre_transform(const km_pre_stats *s, const double *X, size_t n,
                           size_t d, size_t row0, double *out, km_error *err)
{
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < d; j++) {
            double v = (X[i * d + j] - s->x_shift[j]) / s->x_scale[j];
            if (!isfinite(v))
                return km_error_set(err, KM_EINVAL, "X[%zu][%zu] is too large "
                                    "for the model's scaling (it is not a "
                                    "finite number once scaled)", row0 + i,
                                    j);
            out[i * d + j] = v;
        }
    return KM_OK;
}

/* ------------------------------------------------------------ file */

void km_pre_write(km_writer *w, const km_pre_stats *s, size_t nf, size_t no)
{
    km_write_u32(w, (uint32_t)s->spec.x);
    km_write_u32(w, s->spec.center_y ? 1u : 0u);
    if (s->spec.x != KM_SCALE_NONE) {
        km_write_f64s(w, s->x_shift, nf);
        km_write_f64s(w, s->x_scale, nf);
    }
    if (s->spec.center_y)
        km_write_f64s(w, s->y_mean, no);
}

void km_pre_file_range(uint64_t nf, uint64_t no, uint64_t *lo, uint64_t *hi)
{
    *lo = 8;
    *hi = km_add_sat(8, km_add_sat(km_mul_sat(2, km_f64s_bytes(nf)),
                                   km_f64s_bytes(no)));
}

km_status km_pre_read(km_reader *r, km_pre_stats *s, km_algorithm a,
                      size_t nf, size_t no, km_error *err)
{
    memset(s, 0, sizeof *s);
    uint32_t scale = km_read_u32(r), center = km_read_u32(r);
    if (r->failed)
        return km_error_set(err, KM_ECORRUPT, "model file: truncated "
                            "preprocessing section");
    if (scale >= KM_SCALE_COUNT)
        return km_error_set(err, KM_ECORRUPT, "model file: preprocessing "
                            "scale %u is not a known scaling", scale);
    if (center > 1)
        return km_error_set(err, KM_ECORRUPT, "model file: preprocessing "
                            "center_y %u is not 0 or 1", center);
    s->spec.x = (km_scale)scale;
    s->spec.center_y = (int)center;
    km_status st = km_pre_check_spec(&s->spec, a, KM_ECORRUPT, "model file: ",
                                     err);
    if (st != KM_OK)
        return st;
    if (scale != KM_SCALE_NONE) {
        s->x_shift = km_read_f64s(r, nf);
        s->x_scale = s->x_shift ? km_read_f64s(r, nf) : NULL;
        if (!s->x_scale)
            return r->failed
                       ? km_error_set(err, KM_ECORRUPT, "model file: "
                                      "preprocessing shift and scale do not "
                                      "hold n_features values each")
                       : km_error_set(err, KM_ENOMEM, "out of memory "
                                      "reading a model");
        for (size_t j = 0; j < nf; j++) {
            if (!isfinite(s->x_shift[j]))
                return km_error_set(err, KM_ECORRUPT, "model file: "
                                    "preprocessing shift[%zu] is not a "
                                    "finite number", j);
            if (!isfinite(s->x_scale[j]) || !(s->x_scale[j] > 0))
                return km_error_set(err, KM_ECORRUPT, "model file: "
                                    "preprocessing scale[%zu] is not a "
                                    "finite number > 0", j);
        }
    }
    if (center) {
        s->y_mean = km_read_f64s(r, no);
        if (!s->y_mean)
            return r->failed
                       ? km_error_set(err, KM_ECORRUPT, "model file: "
                                      "preprocessing y_mean does not hold "
                                      "n_outputs values")
                       : km_error_set(err, KM_ENOMEM, "out of memory "
                                      "reading a model");
        if (!km_all_finite(s->y_mean, no))
            return km_error_set(err, KM_ECORRUPT, "model file: "
                                "preprocessing y_mean is not finite");
    }
    return KM_OK;
}
