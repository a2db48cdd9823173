/*
 * km_train.c - the generic fit, km_fit: the preprocessing a fit asks for
 * (km_pre_fit), the algorithm's own fit through its descriptor, and the
 * training score of the fitted model on its training rows
 * (km_training_score). It sits above the model, the preprocessing and the
 * scores, which it calls and which never call it.
 *
 * Thread-safety: reentrant.
 */
#include "../base/km_base_internal.h"
#include "../model/km_model_internal.h"
#include "km_select_internal.h"

km_status km_fit_inner(km_algorithm a, const km_kernel *k,
                       const void *params, const km_preprocess *pre,
                       const km_problem *pb, const km_fit_control *ctl,
                       int figures, km_model **out, km_error *err)
{
    const km_algo *al = km_algo_of(a);
    if (!al)
        return km_error_set(err, KM_EINVAL, "unknown algorithm %d", (int)a);
    km_status st = pre && (pre->x != KM_SCALE_NONE || pre->center_y)
                       ? km_pre_fit(a, k, params, pre, pb, ctl, out, err)
                       : al->fit(k, params, pb, ctl, out, err);
    if (st == KM_OK && figures &&
        (st = km_training_score(*out, pb, err)) != KM_OK) {
        km_model_free(*out);
        *out = NULL;
    }
    return st;
}

km_status km_fit(km_algorithm a, const km_kernel *k, const void *params,
                 const km_preprocess *pre, const km_problem *pb,
                 const km_fit_control *ctl, km_model **out, km_error *err)
{
    return km_fit_inner(a, k, params, pre, pb, ctl, 1, out, err);
}
