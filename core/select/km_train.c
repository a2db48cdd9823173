/*
 * km_train.c - the generic fit, km_fit: the preprocessing a fit asks for
 * (km_pre_fit), the algorithm's own fit through its descriptor, and the
 * training figures of the fitted model: whether its kernel is PSD on the
 * training rows (for a kernel that may not be) and its score on them
 * (km_training_score), and the drift reference it keeps of the raw rows
 * (km_model_set_reference). It sits above the model, the preprocessing and the
 * scores, which it calls and which never call it.
 *
 * Thread-safety: reentrant.
 */
#include <stdlib.h>

#include "../base/km_base_internal.h"
#include "../model/km_model_internal.h"
#include "km_select_internal.h"

/*
 * The training figures of a kernel that is not PSD on the training rows
 * (km_fit_note_psd), for a kernel that may be indefinite
 * (km_kernel_maybe_indefinite; any other costs nothing here) and a model
 * whose fit has not said it already (kpca's dense solver): the
 * eigenvalues of its Gram (centred for the algorithms whose descriptor
 * says psd_centred) on the rows the algorithm saw (scaled by the model's
 * preprocessing), all of them up to KM_PSD_FIT_ROWS, else the seeded
 * subsample of the PSD report (seed 0). Best effort: a Gram that cannot
 * be formed or decomposed adds nothing; out of memory for the figures is
 * KM_ENOMEM.
 */
static km_status psd_figures(km_model *m, const km_problem *pb,
                             km_error *err)
{
    const km_kernel *k = km_model_kernel(m);
    if (!km_kernel_maybe_indefinite(k) ||
        km_info_find(km_model_training(m), "psd"))
        return KM_OK;
    size_t n = pb->n, d = pb->d;
    size_t rows = n < KM_PSD_FIT_ROWS ? n : KM_PSD_FIT_ROWS;
    const km_pre_stats *ps = km_model_pre(m);
    int scaled = ps->spec.x != KM_SCALE_NONE;
    km_problem xs = {.X = pb->X, .n = n, .d = d}, sub; /* X's rows only */
    km_error scratch;
    km_psd_report r;
    km_status st = km_subproblem(&xs, rows, &sub, &scratch);
    double *S = NULL; /* the rows scaled, in place in a subsample's copy */
    if (st == KM_OK && scaled) {
        S = sub.X != pb->X ? (double *)sub.X : malloc(rows * d * sizeof *S);
        st = !S ? KM_ENOMEM
                : km_pre_transform(ps, sub.X, rows, d, 0, S, &scratch);
    }
    const km_algo *al = km_algo_of(km_model_algorithm(m));
    if (st == KM_OK)
        st = km_kernel_psd_rows(k, S ? S : sub.X, rows, d,
                                al && al->psd_centred, &r, &scratch);
    if (S != sub.X)
        free(S);
    km_subproblem_free(&xs, &sub);
    if (st != KM_OK) /* nothing learnt, nothing said */
        return KM_OK;
    return km_fit_note_psd(m, r.min_eig, r.max_eig, rows, n, err);
}

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
        ((st = psd_figures(*out, pb, err)) != KM_OK ||
         (st = km_training_score(*out, pb, err)) != KM_OK ||
         (st = km_model_set_reference(*out, pb->X, pb->n, err)) != KM_OK)) {
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
