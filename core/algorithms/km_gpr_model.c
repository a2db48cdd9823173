/*
 * km_gpr_model.c - what gpr's exact and nystrom solvers build their model
 * with: the targets' normalisation (normalize_y, as scikit-learn's), krr's
 * params for the nystrom mean, the payload's release and derived arrays,
 * the model's figures and the fits' epilogue.
 *
 * Thread-safety: reentrant.
 */
#include <math.h>
#include <stdlib.h>

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
    free(p->L);
    free(p->C);
    free(p->xn);
    free(p->w);
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
