/*
 * km_update.c - model updates: new rows without a full refit.
 *
 * km_model_update checks the new rows as a fit checks its own (widths,
 * finite values, the sizes of the whole problem, the kernel's rows and
 * scale), applies the model's preprocessing statistics to them (kept from
 * the first fit, not learnt again), hands them to the descriptor's update
 * (km_algo_update: gpr's and krr's extend their Cholesky factor by a
 * block) and stamps the new model's figures "seconds", "rows_added" and
 * "updates". Which models can be updated is the descriptors' to say:
 * km_update_possible joins their words.
 *
 * Thread-safety: reentrant; the model updated is only read.
 */
#include <stdlib.h>
#include <string.h>

#include "../base/km_base_internal.h"
#include "../kernels/km_kernel_internal.h"
#include "km_model_internal.h"

/* Whether algorithm a's update entry says what an earlier one already
 * said (svc and svr share theirs). */
static int said_before(int a)
{
    const km_algo_update *u = km_algo_of((km_algorithm)a)->update;
    for (int b = 0; b < a; b++) {
        const km_algo_update *v = km_algo_of((km_algorithm)b)->update;
        if (v && !strcmp(v->what, u->what))
            return 1;
    }
    return 0;
}

void km_update_possible(char *buf, size_t len)
{
    size_t used = 0, count = 0, total = 0;
    for (int a = 0; a < KM_ALGO_COUNT; a++)
        total += km_algo_of((km_algorithm)a)->update && !said_before(a);
    buf[0] = '\0';
    for (int a = 0; a < KM_ALGO_COUNT && used < len; a++) {
        const km_algo_update *u = km_algo_of((km_algorithm)a)->update;
        if (!u || said_before(a))
            continue;
        count++;
        const char *sep = count == 1 ? "" : count == total ? " and " : ", ";
        int w = snprintf(buf + used, len - used, "%s%s", sep, u->what);
        used += w > 0 ? (size_t)w : 0;
    }
}

const char *km_model_update_refusal(const km_model *m)
{
    const km_algo *al = m ? km_algo_of(km_model_algorithm(m)) : NULL;
    if (!al || !al->update)
        return "its algorithm's models cannot be updated";
    if (km_kernel_input(km_model_kernel(m)) == KM_INPUT_PRECOMPUTED)
        return "a model of a precomputed kernel cannot be updated (its rows "
               "are kernel values of the training rows)";
    return al->update->refusal ? al->update->refusal(m) : NULL;
}

size_t km_model_update_bytes(const km_model *m, size_t k)
{
    if (km_model_update_refusal(m))
        return SIZE_MAX;
    const km_algo_update *u = km_algo_of(km_model_algorithm(m))->update;
    /* the preprocessed copies of the new rows and targets */
    uint64_t copies = km_mul_sat(km_mul_sat(k, km_model_n_features(m) +
                                                   km_model_n_outputs(m)),
                                 sizeof(double));
    return (size_t)km_add_sat(u->bytes(m, k), copies);
}

/* The statistics of src, copied into dst (cleaned up by the caller also
 * on failure). */
static km_status copy_pre(km_pre_stats *dst, const km_pre_stats *src,
                          size_t nf, size_t no)
{
    dst->spec = src->spec;
    if (src->x_shift &&
        (!(dst->x_shift = malloc(nf * sizeof(double))) ||
         !(dst->x_scale = malloc(nf * sizeof(double)))))
        return KM_ENOMEM;
    if (src->x_shift) {
        memcpy(dst->x_shift, src->x_shift, nf * sizeof(double));
        memcpy(dst->x_scale, src->x_scale, nf * sizeof(double));
    }
    if (src->y_mean) {
        if (!(dst->y_mean = malloc(no * sizeof(double))))
            return KM_ENOMEM;
        memcpy(dst->y_mean, src->y_mean, no * sizeof(double));
    }
    return KM_OK;
}

static km_status copy_info(km_info *dst, const km_info *src)
{
    for (size_t i = 0; i < src->count; i++) {
        const km_info_entry *e = &src->entries[i];
        if (km_info_set(dst, e->key, e->kind, e->is_array, e->values,
                        e->count) != KM_OK)
            return KM_ENOMEM;
    }
    return KM_OK;
}

km_status km_update_model_create(const km_model *m, size_t n_samples,
                                 void *payload, km_model **out,
                                 km_error *err)
{
    km_model *nm = NULL;
    size_t nf = km_model_n_features(m), no = km_model_n_outputs(m);
    km_status st = km_model_create(km_model_algorithm(m), km_model_kernel(m),
                                   nf, n_samples, no, payload, &nm, err);
    if (st != KM_OK)
        return st;
    size_t nl = km_model_n_labels(m);
    const char **labels = nl ? calloc(nl, sizeof *labels) : NULL;
    for (size_t i = 0; labels && i < nl; i++)
        labels[i] = km_model_label(m, i);
    const km_search_table *t = km_model_search(m);
    if ((nl && !labels) ||
        copy_info(km_model_params_mut(nm), km_model_params(m)) != KM_OK ||
        copy_info(km_model_training_mut(nm), km_model_training(m)) != KM_OK ||
        copy_pre(km_model_pre_mut(nm), km_model_pre(m), nf, no) != KM_OK)
        st = km_error_set(err, KM_ENOMEM, "out of memory for the model");
    else if (nl)
        st = km_model_set_labels(nm, labels, nl, km_model_labels_numeric(m),
                                 err);
    if (st == KM_OK && t)
        st = km_model_set_search(nm, t, err);
    free(labels);
    if (st != KM_OK) {
        km_model_free(nm);
        return st;
    }
    *out = nm;
    return KM_OK;
}

/* The new rows' checks, as a fit's: sizes, values, the whole problem's
 * size, the kernel's rows. */
static km_status check_rows(const km_model *m, const double *X, size_t k,
                            size_t d, const double *Y, size_t ny,
                            km_error *err)
{
    size_t nf = km_model_n_features(m), no = km_model_n_outputs(m);
    if (k == 0 || !X || !Y)
        return km_error_set(err, KM_EINVAL, "X and y must have at least one "
                            "row");
    if (d != nf)
        return km_error_set(err, KM_EINVAL, "X has %zu columns; the model "
                            "was fitted on %zu", d, nf);
    if (ny != no)
        return km_error_set(err, KM_EINVAL, "y has %zu outputs per row; the "
                            "model was fitted on %zu", ny, no);
    km_status st = km_check_matrix("X", X, k, d, err);
    if (st == KM_OK)
        st = km_check_matrix("y", Y, k, ny, err);
    size_t n = km_model_n_samples(m);
    km_problem pb = {NULL, n + k, d, Y, ny, NULL, 0};
    if (st == KM_OK && n + k < n)
        st = km_error_set(err, KM_EINVAL, "problem too large");
    if (st == KM_OK)
        st = km_fit_check_sizes(&pb, err);
    if (st == KM_OK)
        st = km_kernel_check_rows(km_model_kernel(m), X, k, d, 1, err);
    return st;
}

/* The new rows and targets through m's statistics, into the copies *Xc
 * and *Yc (or NULL: the caller's when there are none). */
static km_status preprocess(const km_model *m, const double *X, size_t k,
                            size_t d, const double *Y, size_t ny,
                            double **Xc, double **Yc, km_error *err)
{
    const km_pre_stats *s = km_model_pre(m);
    *Xc = *Yc = NULL;
    if (s->x_shift) {
        if (!(*Xc = malloc(km_mul3(k, d, sizeof(double)))))
            return km_error_set(err, KM_ENOMEM, "out of memory for X");
        km_status st = km_pre_transform(s, X, k, d, 0, *Xc, err);
        if (st != KM_OK)
            return st;
    }
    if (s->y_mean) {
        if (!(*Yc = malloc(km_mul3(k, ny, sizeof(double)))))
            return km_error_set(err, KM_ENOMEM, "out of memory for y");
        for (size_t i = 0; i < k; i++)
            for (size_t j = 0; j < ny; j++)
                (*Yc)[i * ny + j] = Y[i * ny + j] - s->y_mean[j];
        if (!km_all_finite(*Yc, k * ny))
            return km_error_set(err, KM_EINVAL, "y is too large for the "
                                "model's centring (not a finite number once "
                                "centred)");
    }
    return KM_OK;
}

/* The figures every update stamps; the fit's training_score (a score on
 * the rows it was fitted on, whose targets the model does not keep) and
 * its training_score_rows are dropped. */
static km_status stamp(km_model *nm, const km_model *m, size_t k, double t0)
{
    km_info *ti = km_model_training_mut(nm);
    km_info_remove(ti, "training_score");
    km_info_remove(ti, "training_score_rows");
    const km_info_entry *e = km_info_find(km_model_training(m), "updates");
    double updates = e && e->count == 1 ? e->values[0] + 1 : 1;
    double seconds = km_now() - t0, rows = (double)k;
    if (km_info_set(ti, "seconds", KM_INFO_NUMBER, 0, &seconds, 1) != KM_OK ||
        km_info_set(ti, "rows_added", KM_INFO_INTEGER, 0, &rows, 1) !=
            KM_OK ||
        km_info_set(ti, "updates", KM_INFO_INTEGER, 0, &updates, 1) != KM_OK)
        return KM_ENOMEM;
    return KM_OK;
}

km_status km_model_update(const km_model *m, const double *X, size_t k,
                          size_t d, const double *Y, size_t ny,
                          const km_fit_control *ctl, km_model **out,
                          km_error *err)
{
    double t0 = km_now();
    if (!m || !out)
        return km_error_set(err, KM_EINVAL, "no model to update");
    const char *why = km_model_update_refusal(m);
    if (why) {
        char can[256];
        km_update_possible(can, sizeof can);
        const char *name = km_algorithm_name(km_model_algorithm(m));
        /* the list when the message holds it whole, else the reason alone
         * (km_update_possible gives the list) */
        if (strlen(why) + strlen(can) + 64 < sizeof err->message)
            return km_error_set(err, KM_ECONFLICT, "this %s model cannot be "
                                "updated: %s; %s can be updated", name, why,
                                can);
        return km_error_set(err, KM_ECONFLICT, "this %s model cannot be "
                            "updated: %s", name, why);
    }
    km_status st = check_rows(m, X, k, d, Y, ny, err);
    double *Xc = NULL, *Yc = NULL;
    if (st == KM_OK)
        st = preprocess(m, X, k, d, Y, ny, &Xc, &Yc, err);
    const double *Xu = Xc ? Xc : X, *Yu = Yc ? Yc : Y;
    if (st == KM_OK)
        st = km_kernel_check_scale(km_model_kernel(m), Xu, k, d, err);
    if (st == KM_OK && km_progress(ctl, 0.0))
        st = km_error_set(err, KM_ECANCELLED, "update cancelled");
    km_model *nm = NULL;
    if (st == KM_OK)
        st = km_algo_of(km_model_algorithm(m))
                 ->update->update(m, Xu, k, Yu, ctl, &nm, err);
    free(Xc);
    free(Yc);
    if (st != KM_OK)
        return st;
    if (stamp(nm, m, k, t0) != KM_OK) {
        km_model_free(nm);
        return km_error_set(err, KM_ENOMEM, "out of memory for the model");
    }
    if ((st = km_model_update_reference(nm, m, X, k, err)) != KM_OK) {
        km_model_free(nm);
        return st;
    }
    km_progress(ctl, 1.0);
    *out = nm;
    return KM_OK;
}
