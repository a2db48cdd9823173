/*
 * km_pre.c - preprocessing kept in the model: the statistics a fit learns
 * from its training rows (per-feature shift and scale of X, the mean of
 * y) and the copies of the data the algorithm is fitted on. The model
 * holds, applies and stores them (km_pre_stats.c, core/model).
 *
 * The statistics are those of scikit-learn, computed the same way so that
 * they agree to the last bits:
 *   standardize  StandardScaler: mean = (sum in row order) / n; the
 *                population variance by the corrected two-pass formula
 *                (sum (x - mean)^2 - (sum (x - mean))^2 / n) / n; a
 *                feature whose variance is within the rounding bound
 *                n eps var + (n mean eps)^2 (sklearn's
 *                _is_constant_feature) has scale 1
 *   minmax       MinMaxScaler(feature_range=(-1, 1)): the midpoint and
 *                half the range, so x' = (x - shift) / scale runs over
 *                [-1, 1]; a range below 10 eps (_handle_zeros_in_scale)
 *                counts as 1, so a constant feature maps to -1
 * Both are stored as x' = (x - shift) / scale, every scale finite and
 * > 0.
 *
 * Thread-safety: reentrant; a model's statistics are only read once it is
 * shared.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../base/km_base_internal.h"
#include "../model/km_model_internal.h"
#include "km_select_internal.h"

/* ------------------------------------------------------------ statistics */

/* Whether pre asks for anything. */
static int active(const km_preprocess *pre)
{
    return pre && (pre->x != KM_SCALE_NONE || pre->center_y);
}

/* Feature j of X (n x d): mean and population variance as scikit-learn's
 * _incremental_mean_and_var computes them on one batch. */
static void mean_var(const double *X, size_t n, size_t d, size_t j,
                     double div, double *mean, double *var)
{
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += X[i * d + j] / div;
    double mu = sum / (double)n, corr = 0, sq = 0;
    for (size_t i = 0; i < n; i++) {
        double t = X[i * d + j] / div - mu;
        corr += t;
        sq += t * t;
    }
    *mean = mu;
    *var = (sq - corr * corr / (double)n) / (double)n;
}

/* StandardScaler's statistics of feature j. Data so large that the sums
 * overflow are computed on x / 2^k (exact) and scaled back; KM_EPROBLEM
 * when even then the standard deviation is not a finite number. */
static km_status standardize(const double *X, size_t n, size_t d, size_t j,
                             double *shift, double *scale, km_error *err)
{
    double mean, var, div = 1;
    mean_var(X, n, d, j, div, &mean, &var);
    if (!isfinite(mean) || !isfinite(var)) {
        double big = 0;
        for (size_t i = 0; i < n; i++)
            big = fmax(big, fabs(X[i * d + j]));
        int e;
        frexp(big, &e);
        div = ldexp(1.0, e);
        mean_var(X, n, d, j, div, &mean, &var);
    }
    double eps = DBL_EPSILON, nn = (double)n;
    double bound = nn * eps * var + (nn * mean * eps) * (nn * mean * eps);
    double sd = var <= bound ? 1.0 / div : sqrt(var);
    *shift = mean * div;
    *scale = sd * div;
    if (!isfinite(*shift) || !isfinite(*scale) || !(*scale > 0))
        return km_error_set(err, KM_EPROBLEM, "X's feature %zu is too large "
                            "to standardize (its standard deviation is not "
                            "a finite number)", j);
    return KM_OK;
}

/* MinMaxScaler(feature_range=(-1, 1))'s statistics of feature j, as the
 * midpoint and half the range. */
static void minmax(const double *X, size_t n, size_t d, size_t j,
                   double *shift, double *scale)
{
    double lo = X[j], hi = X[j];
    for (size_t i = 1; i < n; i++) {
        double v = X[i * d + j];
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
    }
    double range = hi - lo;
    if (range < 10 * DBL_EPSILON) {
        *scale = 0.5;
        *shift = lo + 0.5;
    } else if (isfinite(range)) {
        *scale = range / 2;
        *shift = lo + *scale;
    } else { /* the range overflows; its half does not */
        *scale = hi / 2 - lo / 2;
        *shift = lo / 2 + hi / 2;
    }
}

km_status km_pre_learn(const km_preprocess *pre, const km_problem *pb,
                       km_pre_stats *s, km_error *err)
{
    size_t n = pb->n, d = pb->d;
    memset(s, 0, sizeof *s);
    s->spec = *pre;
    if (pre->x != KM_SCALE_NONE) {
        s->x_shift = malloc(d * sizeof *s->x_shift);
        s->x_scale = malloc(d * sizeof *s->x_scale);
        if (!s->x_shift || !s->x_scale)
            return km_error_set(err, KM_ENOMEM, "out of memory for the "
                                "preprocessing");
        for (size_t j = 0; j < d; j++) {
            if (pre->x == KM_SCALE_MINMAX) {
                minmax(pb->X, n, d, j, &s->x_shift[j], &s->x_scale[j]);
            } else {
                km_status st = standardize(pb->X, n, d, j, &s->x_shift[j],
                                           &s->x_scale[j], err);
                if (st != KM_OK)
                    return st;
            }
        }
    }
    if (pre->center_y) {
        size_t m = pb->m;
        s->y_mean = calloc(m, sizeof *s->y_mean);
        if (!s->y_mean)
            return km_error_set(err, KM_ENOMEM, "out of memory for the "
                                "preprocessing");
        for (size_t j = 0; j < m; j++) {
            double sum = 0;
            for (size_t i = 0; i < n; i++)
                sum += pb->y[i * m + j];
            double mu = sum / (double)n;
            if (!isfinite(mu)) { /* the sum overflowed */
                mu = 0;
                for (size_t i = 0; i < n; i++)
                    mu += pb->y[i * m + j] / (double)n;
            }
            s->y_mean[j] = mu;
        }
    }
    return KM_OK;
}

/* ------------------------------------------------------------ fit */

size_t km_preprocess_fit_bytes(const km_preprocess *pre, const km_problem *pb)
{
    if (!active(pre))
        return 0;
    size_t m = pb->y ? pb->m : 0, b = 0;
    if (pre->x != KM_SCALE_NONE) /* X's copy, shift and scale */
        b += km_mul3(pb->n + 2, pb->d, sizeof(double));
    if (pre->center_y) /* y's copy and its mean */
        b += km_mul3(pb->n + 1, m, sizeof(double));
    return b;
}

km_status km_pre_fit(km_algorithm a, const km_kernel *k, const void *params,
                     const km_preprocess *pre, const km_problem *pb,
                     const km_fit_control *ctl, km_model **out,
                     km_error *err)
{
    const km_algo *al = km_algo_of(a);
    km_status st;
    if (!al)
        return km_error_set(err, KM_EINVAL, "unknown algorithm %d", (int)a);
    if ((st = km_pre_check_spec(pre, a, KM_EINVAL, "", err)) != KM_OK ||
        (st = km_fit_validate(a, k, params, pb, err)) != KM_OK)
        return st;
    if (pre->center_y && !pb->y)
        return km_error_set(err, KM_EINVAL, "preprocess.center_y needs y");

    km_pre_stats s;
    double *Xt = NULL, *Yt = NULL;
    km_problem tp = *pb;
    st = km_pre_learn(pre, pb, &s, err);
    if (st == KM_OK && pre->x != KM_SCALE_NONE) {
        Xt = malloc(km_mul3(pb->n, pb->d, sizeof *Xt));
        st = !Xt ? km_error_set(err, KM_ENOMEM, "out of memory for X's "
                                "scaled copy")
                 : km_pre_transform(&s, pb->X, pb->n, pb->d, 0, Xt, err);
        tp.X = Xt;
    }
    if (st == KM_OK && pre->center_y) {
        size_t len = pb->n * pb->m;
        Yt = malloc(km_mul3(pb->n, pb->m, sizeof *Yt));
        if (!Yt) {
            st = km_error_set(err, KM_ENOMEM, "out of memory for y's "
                              "centered copy");
        } else {
            for (size_t i = 0; i < len; i++)
                Yt[i] = pb->y[i] - s.y_mean[i % pb->m];
            if (!km_all_finite(Yt, len))
                st = km_error_set(err, KM_EPROBLEM, "y is too large to "
                                  "center (y - mean(y) is not finite)");
        }
        tp.y = Yt;
    }
    km_model *m = NULL;
    if (st == KM_OK)
        st = al->fit(k, params, &tp, ctl, &m, err);
    free(Xt);
    free(Yt);
    if (st != KM_OK) {
        km_pre_stats_cleanup(&s);
        return st;
    }
    km_pre_stats *ms = km_model_pre_mut(m);
    km_pre_stats_cleanup(ms);
    *ms = s;
    *out = m;
    return KM_OK;
}

/* ------------------------------------------------------------ params
 *
 * The members of a fit's "preprocess" object a request may give (a
 * km_preprocess) and the statistics a model shows with them (read-only
 * rows: km_pre_stats), as km_param rows (km_base.h), read by the API
 * through km_preprocess_params. */

static const km_param preprocess_rows[] = {
    {.key = "scale", .type = KM_PARAM_CHOICE,
     KM_PARAM_FIELD(km_preprocess, x),
     .choices = &km_scale_choices,
     .doc = "per feature, learnt from the training rows: standardize "
            "(x - mean) / std (population std; 1 for a constant feature), "
            "minmax to [-1, 1] (a constant feature to -1)"},
    {.key = "center_y", .type = KM_PARAM_BOOL,
     KM_PARAM_FIELD(km_preprocess, center_y),
     .doc = "krr, svr: fit y - mean(y), add the mean to predictions"},
    {.key = "x_shift", .type = KM_PARAM_READ_ONLY,
     .doc = "metadata only, with a scale: x' = (x - x_shift) / x_scale"},
    {.key = "x_scale", .type = KM_PARAM_READ_ONLY,
     .doc = "metadata only, with a scale; every value > 0"},
    {.key = "y_mean", .type = KM_PARAM_READ_ONLY,
     .doc = "metadata only, with center_y: one per output"},
    {0},
};
_Static_assert(sizeof(km_scale) == sizeof(int),
               "KM_PARAM_CHOICE fields are int-sized");

static void preprocess_defaults(void *p)
{
    memset(p, 0, sizeof(km_preprocess));
}

static const km_param_set preprocess_params = {
    preprocess_rows, sizeof(km_preprocess), preprocess_defaults};

const km_param_set *km_preprocess_params(void)
{
    return &preprocess_params;
}
