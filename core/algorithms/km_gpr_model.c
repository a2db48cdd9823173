/*
 * km_gpr_model.c - what gpr's exact and nystrom solvers build their model
 * with: the targets' normalisation (normalize_y, as scikit-learn's), krr's
 * params for the nystrom mean, the payload's release and derived arrays,
 * the model's figures and the fits' epilogue; the exact model's update
 * by new rows (the descriptor's update entry, which hands a nystrom
 * model's to km_gpr_nys.c).
 *
 * Thread-safety: reentrant.
 */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../base/km_base_internal.h"
#include "../model/km_model_internal.h"
#include "km_gpr.h"
#include "km_gpr_internal.h"

/* krr's nystrom params for gpr's mean: the SoR mean of s k + noise I is
 * KRR on k with alpha = noise / s. */
km_krr_params km_gpr_mean_params(const km_gpr_params *p)
{
    km_krr_params q = km_krr_params_default();
    q.alpha = p->noise / p->signal_variance;
    q.solver = KM_KRR_SOLVER_NYSTROM;
    q.n_centres = p->n_centres;
    q.seed = p->seed;
    q.cg_tol = p->cg_tol;
    q.cg_max_iter = p->cg_max_iter;
    q.centres = p->centres;
    return q;
}

/* The mean and population std of y / div. */
static void mean_std(const double *y, size_t n, double div, double *mean,
                     double *std)
{
    km_ksum s = {0, 0}, v = {0, 0};
    for (size_t i = 0; i < n; i++)
        km_ksum_add(&s, y[i] / div);
    *mean = km_ksum_get(&s) / (double)n;
    for (size_t i = 0; i < n; i++)
        km_ksum_add(&v, (y[i] / div - *mean) * (y[i] / div - *mean));
    *std = sqrt(km_ksum_get(&v) / (double)n);
}

/* y' = y, or (y - mean) / std with normalize_y (std 1 when it is 0).
 * Targets so large that the sums overflow (near 1e308) are taken as
 * y / 2^k (exact), so y', the mean and the std are finite. */
void km_gpr_normalise(const double *y, size_t n, int normalize, double *out,
                      double *mean, double *std)
{
    double mu = 0, sd = 1, div = 1;
    if (normalize) {
        mean_std(y, n, div, &mu, &sd);
        if (!isfinite(mu) || !isfinite(sd)) {
            double big = 0;
            int e;
            for (size_t i = 0; i < n; i++)
                big = fmax(big, fabs(y[i]));
            frexp(big, &e); /* big < 2^e: y / 2^(e-1) within (-2, 2) */
            div = ldexp(1.0, e - 1);
            mean_std(y, n, div, &mu, &sd);
        }
    }
    *mean = mu * div;
    *std = sd > 0 ? sd * div : 1;
    for (size_t i = 0; i < n; i++)
        out[i] = sd > 0 ? (y[i] / div - mu) / sd : y[i] - *mean;
}

void km_gpr_payload_free(void *payload)
{
    gpr_payload *p = payload;
    if (!p)
        return;
    free(p->X);
    free(p->coef);
    km_factor_free(p->F);
    free(p->L);
    free(p->C);
    free(p->xn);
    free(p->w);
    free(p->G);
    free(p->Kt);
    free(p->P);
    free(p->Pt);
    free(p);
}

/* The derived arrays: X's norms and the mean's weights. */
km_status km_gpr_derive(gpr_payload *p, size_t n, size_t d)
{
    if (!(p->xn = km_sqnorms(p->X, n, d)) ||
        !(p->w = malloc(n * sizeof *p->w)))
        return KM_ENOMEM;
    for (size_t i = 0; i < n; i++)
        p->w[i] = p->signal * p->y_std * p->coef[i];
    return KM_OK;
}

/* The params and training figures of a fitted model (the likelihood
 * only when it is a number: a nystrom fit without the variance has none). */
static km_status add_figures(km_model *model, const km_gpr_params *p,
                             const gpr_payload *pl, double lml,
                             const gpr_optimum *o)
{
    km_info *pi = km_model_params_mut(model), *ti = km_model_training_mut(model);
    int lb = p->optimizer == KM_GPR_OPTIMIZER_LBFGS;
    if (km_info_add1(pi, "noise", KM_INFO_NUMBER, p->noise) != KM_OK ||
        km_info_add1(pi, "signal_variance", KM_INFO_NUMBER,
                     p->signal_variance) != KM_OK ||
        km_info_add1(pi, "normalize_y", KM_INFO_BOOLEAN, p->normalize_y != 0)
            != KM_OK ||
        km_info_add1(pi, "optimizer", KM_INFO_INTEGER, p->optimizer) != KM_OK ||
        (lb && (km_info_add1(pi, "n_restarts", KM_INFO_INTEGER,
                             (double)p->n_restarts) != KM_OK ||
                km_info_add1(pi, "seed", KM_INFO_INTEGER, (double)p->seed) !=
                    KM_OK ||
                km_info_add1(pi, "max_iter", KM_INFO_INTEGER,
                             (double)p->max_iter) != KM_OK)) ||
        (isfinite(lml) && km_info_add1(ti, "log_marginal_likelihood",
                                       KM_INFO_NUMBER, lml) != KM_OK) ||
        km_info_add1(ti, "signal_variance", KM_INFO_NUMBER, pl->signal) !=
            KM_OK ||
        km_info_add1(ti, "noise", KM_INFO_NUMBER, pl->noise) != KM_OK)
        return KM_ENOMEM;
    if (!lb)
        return KM_OK;
    if (km_info_add1(ti, "gamma", KM_INFO_NUMBER,
                     km_model_kernel(model)->gamma) != KM_OK ||
        km_info_add1(ti, "iterations", KM_INFO_INTEGER,
                     (double)o->iterations) != KM_OK ||
        km_info_add1(ti, "starts", KM_INFO_INTEGER, (double)o->starts) !=
            KM_OK ||
        (isfinite(o->initial_lml) &&
         km_info_add1(ti, "initial_log_marginal_likelihood", KM_INFO_NUMBER,
                      o->initial_lml) != KM_OK))
        return KM_ENOMEM;
    return KM_OK;
}


/* The nystrom fit's own figures, after add_figures's: its params, and
 * krr's iterations and residual. */
static km_status add_nystrom_figures(km_model *model, const km_gpr_params *p,
                                     double its, double res)
{
    km_info *pi = km_model_params_mut(model), *ti = km_model_training_mut(model);
    if (km_info_add1(pi, "solver", KM_INFO_INTEGER, p->solver) != KM_OK ||
        km_info_add1(pi, "n_centres", KM_INFO_INTEGER,
                     (double)km_model_n_samples(model)) != KM_OK ||
        km_info_add1(pi, "seed", KM_INFO_INTEGER, (double)p->seed) != KM_OK ||
        km_info_add1(pi, "cg_tol", KM_INFO_NUMBER, p->cg_tol) != KM_OK ||
        km_info_add1(pi, "cg_max_iter", KM_INFO_INTEGER,
                     (double)p->cg_max_iter) != KM_OK ||
        km_info_add1(pi, "centres", KM_INFO_INTEGER, p->centres) != KM_OK ||
        km_info_add1(pi, "variance", KM_INFO_BOOLEAN, p->variance != 0) !=
            KM_OK ||
        km_info_add1(pi, "keep_factor", KM_INFO_BOOLEAN,
                     p->keep_factor != 0) != KM_OK ||
        km_info_add1(ti, "solver", KM_INFO_INTEGER, p->solver) != KM_OK ||
        km_info_add1(ti, "iterations", KM_INFO_INTEGER, its) != KM_OK ||
        km_info_add1(ti, "residual", KM_INFO_NUMBER, res) != KM_OK)
        return KM_ENOMEM;
    return KM_OK;
}

/* The epilogue of both solvers: the model around pl (owned from here,
 * also on failure), its figures (and the nystrom solver's, with cg its
 * iterations and residual), progress 1, *out. */
km_status km_gpr_finish(km_fit_frame *f, size_t d, size_t n, gpr_payload *pl,
                        const km_gpr_params *params, double lml,
                        const gpr_optimum *o, const double *cg,
                        const km_fit_control *ctl, km_model **out,
                        km_error *err)
{
    km_model *model = NULL;
    km_status st = km_fit_model(f, d, n, 1, pl, &model, err);
    if (st != KM_OK)
        return st;
    if (add_figures(model, params, pl, lml, o) != KM_OK ||
        (cg && add_nystrom_figures(model, params, cg[0], cg[1]) != KM_OK)) {
        km_model_free(model);
        return km_error_set(err, KM_ENOMEM, "out of memory for the model");
    }
    km_progress(ctl, 1.0);
    *out = model;
    return KM_OK;
}

/* GaussianProcessRegressor's X_train_ (nystrom: the centres) and alpha_
 * = K^-1 y' (K = s k + noise I on the training rows, y' normalised), and
 * the scalars of the mean y_std s k(x, X) alpha_ + y_mean: the signal s
 * (scikit-learn's ConstantKernel), the noise, y_train_mean_ and
 * y_train_std_ (0 and 1 without normalize_y). */
size_t km_gpr_coefs(const km_model *m, km_coef *out)
{
    const gpr_payload *p = km_model_payload(m);
    size_t n = km_model_n_samples(m);
    out[0] = km_coef_input_rows(m, p->form == GPR_FORM_NYSTROM ? "centres_"
                                                               : "X_train_",
                                p->X, n, km_model_n_features(m),
                                p->form == GPR_FORM_NYSTROM
                                    ? KM_COEF_ROWS_CENTRES
                                    : KM_COEF_ROWS_ALL);
    out[1] = km_coef_f64("alpha_", p->coef, n, 0, 1);
    out[2] = km_coef_f64("signal_", &p->signal, 1, 0, 0);
    out[3] = km_coef_f64("noise_", &p->noise, 1, 0, 0);
    out[4] = km_coef_f64("y_train_mean_", &p->y_mean, 1, 0, 0);
    out[5] = km_coef_f64("y_train_std_", &p->y_std, 1, 0, 0);
    return 6;
}

/* ------------------------------------------------------------ updates
 *
 * An exact model keeps the factor L of K = s k(X, X) + noise I: new rows
 * extend it by a block (km_chol_update.c) at the fitted hyperparameters.
 * With normalize_y the mean and std are those of all the rows, as a
 * refit's: the old rows' targets are not kept, but their normalised
 * values y' give L^-1 y' = L^T a, and a new normalisation is an affine
 * map of y', so L^-1 y'' = (std / std') L^T a + ((mean - mean') / std')
 * L^-1 1. */

static const char *update_refusal(const km_model *m)
{
    const gpr_payload *p = km_model_payload(m);
    return p->form == GPR_FORM_EXACT || p->G
               ? NULL
               : "a gpr model of the nystrom solver keeps its normal "
                 "equations' sums only when fitted with params.keep_factor";
}

/* The new payload (X, the factor's new block or a merged factor,
 * coefficients, norms, weights) and the solve's two vectors and the new
 * rows' kernel block. */
static size_t update_bytes(const km_model *m, size_t k)
{
    const gpr_payload *p = km_model_payload(m);
    if (p->form == GPR_FORM_NYSTROM)
        return km_gpr_nys_update_bytes(m, k);
    uint64_t n = km_model_n_samples(m), N = km_add_sat(n, k);
    uint64_t v = km_factor_grow_values(p->F, k);
    v = km_add_sat(v, km_mul_sat(N, km_model_n_features(m) + 5));
    v = km_add_sat(v, km_add_sat(n, km_mul_sat(k, k)));
    return (size_t)km_mul_sat(v, sizeof(double));
}

void km_gpr_pooled(double n, double m1, double v1, const double *y, size_t k,
                   double a, double b, double *mean, double *sd)
{
    km_ksum s = {0, 0}, q = {0, 0};
    for (size_t i = 0; i < k; i++)
        km_ksum_add(&s, a * y[i] + b);
    double m2 = km_ksum_get(&s) / (double)k;
    for (size_t i = 0; i < k; i++) {
        double t = a * y[i] + b - m2;
        km_ksum_add(&q, t * t);
    }
    double v2 = km_ksum_get(&q) / (double)k;
    double N = n + (double)k, dm = m2 - m1;
    *mean = m1 + dm * (double)k / N;
    *sd = sqrt((n * v1 + (double)k * v2 + dm * dm * n * (double)k / N) / N);
}

/* The targets' new mean and std over all rows (population, as
 * km_gpr_normalise: 1 when 0), from the old ones and the k new targets. */
static void combined(const gpr_payload *p, size_t n, const double *y,
                     size_t k, double *mean, double *std)
{
    int zero = 1; /* y' all 0: the old targets were constant (std 0) */
    for (size_t i = 0; i < n && zero; i++)
        zero = p->coef[i] == 0;
    double sd;
    km_gpr_pooled((double)n, p->y_mean, zero ? 0 : p->y_std * p->y_std, y, k,
                  1, 0, mean, &sd);
    *std = sd > 0 ? sd : 1;
}

/* Z's first n rows: L^-1 y'' of the old rows under the new
 * normalisation; its last k: the new rows' y''. */
static km_status update_targets(const gpr_payload *p, gpr_payload *np,
                                size_t n, const double *y, size_t k,
                                int normalize, double *Z)
{
    memcpy(Z, p->coef, n * sizeof *Z);
    km_factor_lt(p->F, Z, 1);
    np->y_mean = p->y_mean;
    np->y_std = p->y_std;
    if (normalize)
        combined(p, n, y, k, &np->y_mean, &np->y_std);
    double scale = p->y_std / np->y_std;
    double shift = (p->y_mean - np->y_mean) / np->y_std;
    if (shift != 0) {
        double *u = malloc(n * sizeof *u);
        if (!u)
            return KM_ENOMEM;
        for (size_t i = 0; i < n; i++)
            u[i] = 1.0;
        km_factor_forward(p->F, 0, u, 1);
        for (size_t i = 0; i < n; i++)
            Z[i] = scale * Z[i] + shift * u[i];
        free(u);
    } else if (scale != 1) {
        for (size_t i = 0; i < n; i++)
            Z[i] *= scale;
    }
    for (size_t i = 0; i < k; i++)
        Z[n + i] = (y[i] - np->y_mean) / np->y_std;
    return KM_OK;
}

/* log p(y | X) = -|z|^2 / 2 - sum log L_ii - N log(2 pi) / 2, z = L^-1 y
 * (y^T K^-1 y = |z|^2). */
static double lml_of(const km_factor *F, const double *z, size_t N)
{
    km_ksum q = {0, 0};
    for (size_t i = 0; i < N; i++) {
        km_ksum_add(&q, -0.5 * z[i] * z[i]);
        km_ksum_add(&q, -log(km_factor_row(F, i)[i]));
    }
    km_ksum_add(&q, -0.5 * (double)N * log(2.0 * M_PI));
    return km_ksum_get(&q);
}

static km_status update(const km_model *m, const double *X, size_t k,
                        const double *Y, const km_fit_control *ctl,
                        km_model **out, km_error *err)
{
    const gpr_payload *p = km_model_payload(m);
    if (p->form == GPR_FORM_NYSTROM)
        return km_gpr_nys_update(m, X, k, Y, ctl, out, err);
    size_t n = km_model_n_samples(m), d = km_model_n_features(m), N = n + k;
    const km_info_entry *ne = km_info_find(km_model_params(m), "normalize_y");
    int normalize = ne && ne->count == 1 && ne->values[0] != 0;
    gpr_payload *np = calloc(1, sizeof *np);
    double *Z = malloc(N * sizeof *Z);
    km_status st = KM_OK;
    if (!np || !Z || !(np->X = km_rows_concat(p->X, n, X, k, d))) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for the update");
        goto out;
    }
    np->form = GPR_FORM_EXACT;
    np->signal = p->signal;
    np->noise = p->noise;
    if ((st = km_chol_extend(km_model_kernel(m), p->signal, p->noise, p->F,
                             p->X, d, X, k, &np->F, err)) != KM_OK)
        goto out;
    if (km_progress(ctl, 0.8)) {
        st = km_error_set(err, KM_ECANCELLED, "update cancelled");
        goto out;
    }
    if (update_targets(p, np, n, Y, k, normalize, Z) != KM_OK) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for the update");
        goto out;
    }
    km_factor_forward(np->F, n, Z, 1);
    double lml = lml_of(np->F, Z, N);
    km_factor_back(np->F, Z, 1);
    np->coef = Z;
    Z = NULL;
    if (!isfinite(lml) || !km_all_finite(np->coef, N)) {
        st = km_error_set(err, KM_ENOTPD, "the update's solution is not "
                          "finite: the kernel matrix is numerically "
                          "singular; refit with a larger params.noise");
        goto out;
    }
    if (km_gpr_derive(np, N, d) != KM_OK) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for the update");
        goto out;
    }
    km_model *nm = NULL;
    st = km_update_model_create(m, N, np, &nm, err);
    np = NULL; /* the model's, or freed */
    if (st == KM_OK &&
        km_info_set(km_model_training_mut(nm), "log_marginal_likelihood",
                    KM_INFO_NUMBER, 0, &lml, 1) != KM_OK) {
        km_model_free(nm);
        st = km_error_set(err, KM_ENOMEM, "out of memory for the model");
    }
    if (st == KM_OK)
        *out = nm;
out:
    free(Z);
    km_gpr_payload_free(np);
    return st;
}

const km_algo_update km_gpr_update = {
    .what = "exact gpr models and nystrom gpr models fitted with "
            "params.keep_factor",
    .refusal = update_refusal,
    .bytes = update_bytes,
    .update = update,
};
