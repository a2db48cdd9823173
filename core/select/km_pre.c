/*
 * km_pre.c - preprocessing kept in the model: the statistics a fit learns
 * from its training rows (per-feature shift and scale of X, the mean of
 * y), the copies of the data the algorithm is fitted on, the same
 * transform applied to every input of km_predict and km_predict_labels,
 * and the model file's preprocessing section.
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

#include "../km_internal.h"

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

km_preprocess_view km_model_preprocess(const km_model *m)
{
    const km_pre_stats *s = km_model_pre(m);
    km_preprocess_view v = {s->spec, s->x_shift, s->x_scale, s->y_mean};
    return v;
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

/* Whether pre asks for anything. */
static int active(const km_preprocess *pre)
{
    return pre && (pre->x != KM_SCALE_NONE || pre->center_y);
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

/* KM_EINVAL naming the field when pre does not apply to a. */
static km_status check_spec(const km_preprocess *pre, km_algorithm a,
                            km_status bad, const char *prefix, km_error *err)
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

/* ------------------------------------------------------------ statistics */

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
    if ((st = check_spec(pre, a, KM_EINVAL, "", err)) != KM_OK ||
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

/* ------------------------------------------------------------ predict */

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
    km_status st = check_spec(&s->spec, a, KM_ECORRUPT, "model file: ", err);
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
