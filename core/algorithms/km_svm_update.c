/*
 * km_svm_update.c - svc and svr models that take new rows (issue 29):
 * with params.keep_rows a model keeps every training row as fitted
 * (after its preprocessing), its target (svc: the class index), its
 * dual variables (svc: each pair's y alpha in LIBSVM's coefficient
 * layout; svr: alpha+ and alpha-) and their gradients and G_bar. An
 * update refits on the old rows and the new ones by SMO warm-started
 * from the old solution, the new rows' variables at zero (which leaves
 * the old rows' gradients as kept: only the new rows' are computed, k
 * nsv kernel values): a feasible start (each pair's sum of y alpha stays
 * zero, every alpha within its bound, C and the class weights being the
 * model's), so SMO runs to the same tolerance as a fit from zero and
 * reaches the same optimum, in fewer iterations when the new rows move it
 * little. An svc update cannot add a class: the model's label set is
 * fixed (the API answers 409 naming the class; a refit can add it).
 * Also the kept rows' section of the file (format version 9).
 *
 * Thread-safety: reentrant; the model updated is only read.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../base/km_base_internal.h"
#include "../model/km_model_internal.h"
#include "km_svm.h"
#include "km_svm_payload.h"

/* ------------------------------------------------------------ file */

void km_svm_keep_save(const svm_payload *p, km_writer *w)
{
    km_write_f64s(w, p->kx, p->kn * p->d);
    km_write_f64s(w, p->ky, p->kn);
    km_write_f64s(w, p->ka, p->kn * n_keep_cols(p));
    km_write_f64s(w, p->kg, p->kn * n_keep_cols(p));
    km_write_f64s(w, p->kgb, p->kn * n_keep_cols(p));
}

uint64_t km_svm_keep_bytes(uint64_t kn, uint64_t d, uint64_t k)
{
    uint64_t cols = k ? k - 1 : 2;
    return km_mul_sat(km_mul_sat(kn, km_add_sat(d, 3 * cols + 1)), 8);
}

/* svc: each row's class whole in [0, k), every class present, and each
 * row's coefficient in pair (c, b) of the sign of its side: >= 0 when
 * c < b (class c is +1), <= 0 when c > b. svr: alphas >= 0. */
static const char *keep_invalid(const svm_payload *p)
{
    size_t n = p->kn, K = p->k, cols = n_keep_cols(p);
    if (!km_all_finite(p->kx, n * p->d) || !km_all_finite(p->ky, n) ||
        !km_all_finite(p->ka, n * cols) || !km_all_finite(p->kg, n * cols) ||
        !km_all_finite(p->kgb, n * cols))
        return "are not all finite numbers";
    if (!K) {
        for (size_t i = 0; i < 2 * n; i++)
            if (p->ka[i] < 0)
                return "hold a negative alpha";
        return NULL;
    }
    unsigned char *seen = calloc(K, 1);
    if (!seen)
        return "could not be checked (out of memory)";
    const char *why = NULL;
    for (size_t i = 0; i < n && !why; i++) {
        double c = p->ky[i];
        if (!(c >= 0 && c < (double)K && c == floor(c))) {
            why = "hold a class index outside the model's classes";
            continue;
        }
        seen[(size_t)c] = 1;
        for (size_t j = 0; j + 1 < K; j++) {
            size_t b = j < (size_t)c ? j : j + 1;
            double v = p->ka[i * cols + j];
            if ((b > (size_t)c && v < 0) || (b < (size_t)c && v > 0))
                why = "hold a dual variable of the wrong sign for its "
                      "pair";
        }
    }
    for (size_t c = 0; c < K && !why; c++)
        if (!seen[c])
            why = "leave a class without rows";
    free(seen);
    return why;
}

/* The equality constraint of each pair (svr: of the one problem): the
 * sum of y alpha is 0, to rounding (SMO moves two variables by opposite
 * amounts), here 1e-9 of the sum of their sizes. */
static const char *keep_unbalanced(const svm_payload *p)
{
    size_t n = p->kn, K = p->k, cols = n_keep_cols(p);
    size_t P = K ? n_pairs(K) : 1;
    double *sum = calloc(2 * P, sizeof *sum);
    if (!sum)
        return "could not be checked (out of memory)";
    for (size_t i = 0; i < n; i++) {
        if (!K) {
            sum[0] += p->ka[2 * i] - p->ka[2 * i + 1];
            sum[1] += p->ka[2 * i] + p->ka[2 * i + 1];
            continue;
        }
        size_t c = (size_t)p->ky[i];
        for (size_t j = 0; j + 1 < K; j++) {
            size_t b = j < c ? j : j + 1, lo = c < b ? c : b,
                   hi = c < b ? b : c;
            /* pair (lo, hi)'s index among the pairs in order */
            size_t pi = lo * (2 * K - lo - 1) / 2 + (hi - lo - 1);
            sum[2 * pi] += p->ka[i * cols + j];
            sum[2 * pi + 1] += fabs(p->ka[i * cols + j]);
        }
    }
    const char *why = NULL;
    for (size_t q = 0; q < P && !why; q++)
        if (!(fabs(sum[2 * q]) <= 1e-9 * sum[2 * q + 1]))
            why = "break a pair's equality constraint (the sum of y alpha "
                  "is not 0)";
    free(sum);
    return why;
}

km_status km_svm_keep_load(km_reader *r, svm_payload *p, size_t ns,
                           km_error *err)
{
    size_t cols = n_keep_cols(p);
    if (ns && (p->d > r->left / 8 / ns || cols > r->left / 8 / ns))
        return km_error_set(err, KM_ECORRUPT, "model file: kept rows larger "
                            "than the file");
    p->kn = ns;
    if (!(p->kx = km_read_f64s(r, ns * p->d)) ||
        !(p->ky = km_read_f64s(r, ns)) ||
        !(p->ka = km_read_f64s(r, ns * cols)) ||
        !(p->kg = km_read_f64s(r, ns * cols)) ||
        !(p->kgb = km_read_f64s(r, ns * cols)))
        return km_error_set(err, r->failed ? KM_ECORRUPT : KM_ENOMEM,
                            "model file: bad kept rows (params.keep_rows)");
    const char *why = keep_invalid(p);
    if (!why)
        why = keep_unbalanced(p);
    if (why)
        return km_error_set(err, KM_ECORRUPT, "model file: the kept rows "
                            "(params.keep_rows) %s", why);
    return KM_OK;
}

/* ------------------------------------------------------------ updates */

/* SVR's start from w (its rows X): alpha+ and alpha- (clipped to C), the
 * old rows' gradient and G_bar as kept, the new rows' from the kernel:
 * with f_i = sum_j (a+_j - a-_j) k(x_i, x_j), G+_i = f_i + p+_i and G-_i
 * = -f_i + p-_i; G_bar the same sum over the variables at C, without
 * p. */
void km_svr_warm_start(const km_kernel *k, const double *X, size_t n,
                       size_t d, const km_svm_warm *w, double C,
                       const double *p, double *alpha, double *G, double *Gb)
{
    for (size_t i = 0; i < n; i++) {
        alpha[i] = fmin(fmax(w->alpha[2 * i], 0), C);
        alpha[n + i] = fmin(fmax(w->alpha[2 * i + 1], 0), C);
    }
    for (size_t i = 0; i < n; i++) {
        if (i < w->n_old) {
            G[i] = w->G[2 * i];
            G[n + i] = w->G[2 * i + 1];
            Gb[i] = w->Gbar[2 * i];
            Gb[n + i] = w->Gbar[2 * i + 1];
            continue;
        }
        double f = 0, fb = 0;
        for (size_t j = 0; j < n; j++) {
            if (alpha[j] == alpha[n + j] && alpha[j] < C)
                continue;
            double kv = km_kernel_eval(k, X + i * d, X + j * d, d);
            f += (alpha[j] - alpha[n + j]) * kv;
            fb += ((alpha[j] >= C) - (alpha[n + j] >= C)) * C * kv;
        }
        G[i] = f + p[i];
        G[n + i] = -f + p[n + i];
        Gb[i] = fb;
        Gb[n + i] = -fb;
    }
}


static double figure(const km_model *m, const char *key, double def)
{
    const km_info_entry *e = km_info_find(km_model_params(m), key);
    return e && e->count == 1 ? e->values[0] : def;
}

/* The fit's params from the model's figures (what add_params wrote):
 * exact, keep_rows, class_weight borrowed from m. */
static km_svm_params params_of(const km_model *m)
{
    km_svm_params p = km_svm_params_default();
    p.C = figure(m, "C", p.C);
    p.epsilon = figure(m, "epsilon", p.epsilon);
    p.tol = figure(m, "tol", p.tol);
    p.cache_mb = figure(m, "cache_mb", p.cache_mb);
    p.shrinking = figure(m, "shrinking", p.shrinking) != 0;
    p.probability = figure(m, "probability", 0) != 0;
    p.max_iter = (long)figure(m, "max_iter", 0);
    const km_info_entry *w = km_info_find(km_model_params(m), "class_weight");
    const svm_payload *pl = km_model_payload(m);
    if (w && pl->k && w->count == pl->k)
        p.class_weight = w->values;
    p.solver = KM_SVM_SOLVER_EXACT;
    p.keep_rows = 1;
    return p;
}

static const char *update_refusal(const km_model *m)
{
    const svm_payload *p = km_model_payload(m);
    return p->kn ? NULL
                 : "an svc or svr model keeps its training rows only when "
                   "fitted with params.keep_rows (exact solver)";
}

/* The fit's own peak on all rows, and the joined rows, targets and
 * starting variables. */
static size_t update_bytes(const km_model *m, size_t k)
{
    const svm_payload *p = km_model_payload(m);
    km_svm_params sp = params_of(m);
    uint64_t N = km_add_sat(km_model_n_samples(m), k), d = p->d;
    size_t fit = p->k ? km_svc_fit_bytes((size_t)N, d, p->k, &sp)
                      : km_svm_fit_bytes((size_t)N, d, &sp);
    uint64_t b = km_add_sat(fit, km_svm_keep_bytes(N, d, p->k));
    return (size_t)km_add_sat(b, km_mul_sat(N, sizeof(int)));
}

/* fm's payload moved into a new one (fm keeps an empty one to free). */
static svm_payload *take_payload(km_model *fm)
{
    svm_payload *src = km_model_payload(fm), *p = malloc(sizeof *p);
    if (p) {
        *p = *src;
        memset(src, 0, sizeof *src);
    }
    return p;
}

/* nm's training figures from the fit's (iterations, objective, n_support,
 * ...), over m's. */
static km_status copy_training(km_model *nm, const km_model *fm)
{
    const km_info *src = km_model_training(fm);
    for (size_t i = 0; i < src->count; i++) {
        const km_info_entry *e = &src->entries[i];
        if (km_info_set(km_model_training_mut(nm), e->key, e->kind,
                        e->is_array, e->values, e->count) != KM_OK)
            return KM_ENOMEM;
    }
    return KM_OK;
}

/* The joined problem: rows, svc's class indices (new rows' from Y, which
 * must be the model's) or svr's targets, and the start's alphas (the
 * kept gradients are the model's). */
static km_status join(const km_model *m, const double *X, size_t k,
                      const double *Y, double **Xa, int **cls, double **ya,
                      double **warm, km_error *err)
{
    const svm_payload *p = km_model_payload(m);
    size_t n = p->kn, N = n + k, d = p->d, cols = n_keep_cols(p);
    for (size_t i = 0; p->k && i < k; i++)
        if (!(Y[i] >= 0 && Y[i] < (double)p->k && Y[i] == floor(Y[i])))
            return km_error_set(err, KM_EINVAL, "y[%zu] is not one of the "
                                "model's %zu classes: an update cannot add "
                                "a class (refit to add one)", i, p->k);
    *Xa = km_rows_concat(p->kx, n, X, k, d);
    *warm = calloc(N * cols, sizeof **warm);
    if (p->k)
        *cls = malloc(N * sizeof **cls);
    else
        *ya = malloc(N * sizeof **ya);
    if (!*Xa || !*warm || (p->k ? !*cls : !*ya))
        return km_error_set(err, KM_ENOMEM, "out of memory for the update");
    memcpy(*warm, p->ka, n * cols * sizeof **warm);
    for (size_t i = 0; i < N; i++) {
        double v = i < n ? p->ky[i] : Y[i - n];
        if (p->k)
            (*cls)[i] = (int)v;
        else
            (*ya)[i] = v;
    }
    return KM_OK;
}

static km_status update(const km_model *m, const double *X, size_t k,
                        const double *Y, const km_fit_control *ctl,
                        km_model **out, km_error *err)
{
    const svm_payload *p = km_model_payload(m);
    size_t N = p->kn + k;
    km_svm_params sp = params_of(m);
    double *Xa = NULL, *ya = NULL, *warm = NULL;
    int *cls = NULL;
    km_model *fm = NULL, *nm = NULL;
    km_status st = join(m, X, k, Y, &Xa, &cls, &ya, &warm, err);
    km_problem pb = {Xa, N, p->d, ya, ya ? 1 : 0, cls, p->k};
    km_svm_warm w = {p->kn, warm, p->kg, p->kgb};
    if (st == KM_OK)
        st = km_svm_fit_warm(km_model_algorithm(m), km_model_kernel(m), &sp,
                             &pb, &w, ctl, &fm, err);
    if (st == KM_OK) {
        svm_payload *np = take_payload(fm);
        if (!np)
            st = km_error_set(err, KM_ENOMEM, "out of memory for the model");
        else
            st = km_update_model_create(m, N, np, &nm, err);
    }
    if (st == KM_OK && copy_training(nm, fm) != KM_OK)
        st = km_error_set(err, KM_ENOMEM, "out of memory for the model");
    if (st == KM_OK) {
        *out = nm;
        nm = NULL;
    }
    km_model_free(nm);
    km_model_free(fm);
    free(Xa);
    free(ya);
    free(cls);
    free(warm);
    return st;
}

const km_algo_update km_svc_update_entry = {
    .what = "svc and svr models fitted with params.keep_rows",
    .refusal = update_refusal,
    .bytes = update_bytes,
    .update = update,
};

const km_algo_update km_svr_update_entry = {
    .what = "svc and svr models fitted with params.keep_rows",
    .refusal = update_refusal,
    .bytes = update_bytes,
    .update = update,
};
