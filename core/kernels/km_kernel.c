/*
 * km_kernel.c - the kernel table, kernel parameters, evaluation, and Gram
 * matrices.
 *
 * Each kernel is one row of the table (its family, the parameters it
 * takes, their defaults) and one map function, the only place its
 * formula is written; the paths are generic over families and call it:
 *   INNER, L2  inner products from BLAS (the training Gram from DSYRK, one
 *              triangle; a cross Gram from DGEMM; one row from
 *              km_vdot_rows), L2 kernels with the rows' squared norms, as
 *              |x-z|^2 = |x|^2 + |z|^2 - 2<x,z> clamped at 0 and exactly 0
 *              on the training diagonal (as scikit-learn does)
 *   L1         L1 distances by a direct loop (no BLAS routine gives them)
 *   COMPOSITE  part by part through a bounded block buffer, folded by the
 *              kernel's combine
 * km_kernel_eval computes one pair's base quantity directly and calls the
 * same map; km_smo.c computes its columns' inner products itself and maps
 * them here too. Maps use the vectorised exp of km_vmath.c.
 *
 * Invariant: a checked kernel has at most KM_KERNEL_MAX_DEPTH levels and
 * its type's number of parts per level; every gamma is > 0 after resolve.
 *
 * Thread-safety: reentrant; BLAS may use its own threads inside a call.
 */
#include <cblas.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "../base/km_base_internal.h"
#include "km_kernel_internal.h"

/* Rows per block when a Gram is built block by block. */
#define BLOCK_ROWS 256

/* ------------------------------------------------------------ the maps */

/*
 * One map per kernel: the only place its formula is written. Every path
 * (km_kernel_eval, Gram, cross Gram, SMO columns, one-row predict) gets
 * its family's base quantities into a row and calls it; see
 * km_kernel_desc in km_kernel_internal.h for what the row holds.
 */

/* linear: <x,z> */
static void map_linear(const km_kernel *k, double *row, size_t len,
                       double xn, const double *zn)
{
    (void)k, (void)row, (void)len, (void)xn, (void)zn; /* <x,z> itself */
}

/* polynomial: (gamma <x,z> + coef0)^degree */
static void map_polynomial(const km_kernel *k, double *row, size_t len,
                           double xn, const double *zn)
{
    (void)xn, (void)zn;
    for (size_t j = 0; j < len; j++)
        row[j] = km_ipow(k->gamma * row[j] + k->coef0, k->degree);
}

/* sigmoid: tanh(gamma <x,z> + coef0) */
static void map_sigmoid(const km_kernel *k, double *row, size_t len,
                        double xn, const double *zn)
{
    (void)xn, (void)zn;
    for (size_t j = 0; j < len; j++)
        row[j] = tanh(k->gamma * row[j] + k->coef0);
}

/* exponential: exp(gamma <x,z>) */
static void map_exponential(const km_kernel *k, double *row, size_t len,
                            double xn, const double *zn)
{
    (void)xn, (void)zn;
    for (size_t j = 0; j < len; j++)
        row[j] = k->gamma * row[j];
    km_vexp(row, len);
}

/* rbf: exp(-gamma |x-z|^2), with |x-z|^2 = |x|^2 + |z|^2 - 2<x,z>,
 * clamped at 0, and exp in one pass (km_vmath.c says why). */
static void map_rbf(const km_kernel *k, double *row, size_t len, double xn,
                    const double *zn)
{
    km_vmap_rbf(row, len, xn, zn, k->gamma);
}

/* laplacian_l2: exp(-gamma |x-z|_2), the Euclidean-norm Laplacian */
static void map_laplacian_l2(const km_kernel *k, double *row, size_t len,
                             double xn, const double *zn)
{
    for (size_t j = 0; j < len; j++) {
        double d2 = xn + zn[j] - 2.0 * row[j];
        row[j] = -k->gamma * sqrt(d2 > 0 ? d2 : 0.0);
    }
    km_vexp(row, len);
}

/* laplacian: exp(-gamma |x-z|_1) */
static void map_laplacian(const km_kernel *k, double *row, size_t len,
                          double xn, const double *zn)
{
    (void)xn, (void)zn;
    for (size_t j = 0; j < len; j++)
        row[j] = -k->gamma * row[j];
    km_vexp(row, len);
}

/* Composites: part p's block src (nx x nz) into the composite's block dst
 * (rows of lddst). */

/* sum: sum_i weights[i] k_i(x,z) */
static void combine_sum(const km_kernel *k, int p, double *dst, size_t lddst,
                        const double *src, size_t nx, size_t nz,
                        const double *xs, const double *zs, long diag)
{
    (void)xs, (void)zs, (void)diag;
    double w = k->weights ? k->weights[p] : 1.0;
    for (size_t i = 0; i < nx; i++) {
        double *a = dst + i * lddst;
        const double *b = src + i * nz;
        if (p == 0)
            for (size_t j = 0; j < nz; j++)
                a[j] = w * b[j];
        else
            for (size_t j = 0; j < nz; j++)
                a[j] += w * b[j];
    }
}

/* product: prod_i k_i(x,z) */
static void combine_product(const km_kernel *k, int p, double *dst,
                            size_t lddst, const double *src, size_t nx,
                            size_t nz, const double *xs, const double *zs,
                            long diag)
{
    (void)k, (void)xs, (void)zs, (void)diag;
    for (size_t i = 0; i < nx; i++) {
        double *a = dst + i * lddst;
        const double *b = src + i * nz;
        if (p == 0)
            memcpy(a, b, nz * sizeof *a);
        else
            for (size_t j = 0; j < nz; j++)
                a[j] *= b[j];
    }
}

/* normalized: k_0(x,z) / sqrt(k_0(x,x) k_0(z,z)) of its one part k_0
 * (cosine normalisation); 0 where the cosine is undefined (a self
 * value <= 0); exactly 1 on the training diagonal. */
static void combine_normalized(const km_kernel *k, int p, double *dst,
                               size_t lddst, const double *src, size_t nx,
                               size_t nz, const double *xs, const double *zs,
                               long diag)
{
    (void)k, (void)p;
    for (size_t i = 0; i < nx; i++) {
        double *a = dst + i * lddst;
        const double *b = src + i * nz;
        for (size_t j = 0; j < nz; j++) {
            double s = xs[i] * zs[j];
            a[j] = s > 0 ? b[j] / sqrt(s) : 0.0;
        }
        long dj = diag >= 0 ? (long)i + diag : -1;
        if (dj >= 0 && (size_t)dj < nz && xs[i] > 0)
            a[dj] = 1.0;
    }
}

/* ------------------------------------------------- spectral densities */

/* Bochner: a shift-invariant kernel k(x - z) is the Fourier transform of
 * a probability density p(w), k(x - z) = E_w cos(w . (x - z)); random
 * Fourier features draw their frequencies from it. Each function draws
 * one frequency vector w (d values) for the kernel's resolved gamma from
 * r; the draws and their order are the model file's contract (an rff
 * model stores only its seed's W; see km_krr_rff_draw). */

/* rbf, exp(-gamma |x-z|^2): each value N(0, 2 gamma). */
static void spectral_rbf(double gamma, size_t d, km_rng *r, double *w)
{
    double s = sqrt(2.0 * gamma);
    for (size_t j = 0; j < d; j++)
        w[j] = s * km_rng_gauss(r);
}

/* laplacian, exp(-gamma |x-z|_1): each value Cauchy of scale gamma,
 * gamma tan(pi u / 2) of a uniform u. */
static void spectral_laplacian(double gamma, size_t d, km_rng *r, double *w)
{
    for (size_t j = 0; j < d; j++)
        w[j] = gamma * tan(M_PI_2 * km_rng_uniform(r));
}

/* laplacian_l2, exp(-gamma |x-z|_2): the multivariate Cauchy (a Student
 * t of one degree), gamma g / |h| of d gaussians g and one gaussian h. */
static void spectral_laplacian_l2(double gamma, size_t d, km_rng *r,
                                  double *w)
{
    for (size_t j = 0; j < d; j++)
        w[j] = km_rng_gauss(r);
    double h = fabs(km_rng_gauss(r));
    double c = gamma / (h > 1e-300 ? h : 1e-300);
    for (size_t j = 0; j < d; j++)
        w[j] *= c;
}

/* ------------------------------------------------------------ the table */

#define G KM_KPARAM_GAMMA
#define DEG KM_KPARAM_DEGREE
#define C0 KM_KPARAM_COEF0
#define PARTS KM_KPARAM_PARTS
#define W KM_KPARAM_WEIGHTS
#define LEN KM_KPARAM_LENGTH
#define LAM KM_KPARAM_LAMBDA
#define COL KM_KPARAM_COLUMNS
#define CHAR KM_KERNEL_CAP_CHARACTERISTIC

/* {family, params, degree, coef0, min_parts, max_parts}, map or
 * combine, whether combine needs the parts' self values, KM_KERNEL_CAP_*
 * (KM_KERNEL_CAP_RFF and KM_KERNEL_CAP_COMPOSITE follow from the spectral
 * density and the family), the spectral density if any. degree 3 and
 * coef0 0 are what every kernel has always stored where they do not
 * apply (model files hold them). */
static const km_kernel_desc km_kernel_linear = {
    {KM_KFAMILY_INNER, COL, 3, 0.0, 0, 0}, map_linear, NULL, 0};
static const km_kernel_desc km_kernel_polynomial = {
    {KM_KFAMILY_INNER, G | DEG | C0 | COL, 3, 1.0, 0, 0},
    map_polynomial, NULL, 0};
static const km_kernel_desc km_kernel_rbf = {
    {KM_KFAMILY_L2, G | KM_KPARAM_SIGMA | COL, 3, 0.0, 0, 0}, map_rbf, NULL,
    0, KM_KERNEL_CAP_TUNE_GAMMA | CHAR, spectral_rbf};
static const km_kernel_desc km_kernel_laplacian = {
    {KM_KFAMILY_L1, G | COL, 3, 0.0, 0, 0}, map_laplacian, NULL, 0,
    KM_KERNEL_CAP_TUNE_GAMMA | CHAR, spectral_laplacian};
static const km_kernel_desc km_kernel_sigmoid = {
    {KM_KFAMILY_INNER, G | C0 | COL, 3, 0.0, 0, 0}, map_sigmoid, NULL,
    0};
static const km_kernel_desc km_kernel_sum = {
    {KM_KFAMILY_COMPOSITE, PARTS | W, 3, 0.0, 1, KM_KERNEL_MAX_PARTS},
    NULL, combine_sum, 0};
static const km_kernel_desc km_kernel_product = {
    {KM_KFAMILY_COMPOSITE, PARTS, 3, 0.0, 1, KM_KERNEL_MAX_PARTS},
    NULL, combine_product, 0};
static const km_kernel_desc km_kernel_laplacian_l2 = {
    {KM_KFAMILY_L2, G | COL, 3, 0.0, 0, 0}, map_laplacian_l2, NULL,
    0, KM_KERNEL_CAP_TUNE_GAMMA | CHAR, spectral_laplacian_l2};
static const km_kernel_desc km_kernel_exponential = {
    {KM_KFAMILY_INNER, G | COL, 3, 0.0, 0, 0}, map_exponential, NULL,
    0, KM_KERNEL_CAP_TUNE_GAMMA};
static const km_kernel_desc km_kernel_normalized = {
    {KM_KFAMILY_COMPOSITE, PARTS, 3, 0.0, 1, 1}, NULL,
    combine_normalized, 1};
/* The string kernels (km_strings.c computes them; its comment gives the
 * formulas): kernlab's stringdot defaults, length 4 and lambda 1.1, and
 * lambda 0.5 for the subsequence kernel (Lodhi et al.'s decay is in
 * (0, 1]; expdecay's weight lambda^-|u| needs lambda >= 1). */
static const km_kernel_desc km_kernel_spectrum = {
    {KM_KFAMILY_STRING, LEN, 3, 0.0, 0, 0, 4}, NULL, NULL, 0, CHAR};
static const km_kernel_desc km_kernel_boundrange = {
    {KM_KFAMILY_STRING, LEN, 3, 0.0, 0, 0, 4}, NULL, NULL, 0, CHAR};
static const km_kernel_desc km_kernel_expdecay = {
    {KM_KFAMILY_STRING, LAM, 3, 0.0, 0, 0, 0, 1.1, 1.0, HUGE_VAL, 0}, NULL,
    NULL, 0, CHAR};
static const km_kernel_desc km_kernel_subsequence = {
    {KM_KFAMILY_STRING, LEN | LAM, 3, 0.0, 0, 0, 4, 0.5, 0.0, 1.0, 1}, NULL,
    NULL, 0, CHAR};
/* X holds the values (km_kernel.h, "inputs"). */
static const km_kernel_desc km_kernel_precomputed = {
    {KM_KFAMILY_PRECOMPUTED, 0, 3, 0.0, 0, 0}, NULL, NULL, 0};

#undef G
#undef DEG
#undef C0
#undef PARTS
#undef W
#undef LEN
#undef LAM
#undef COL
#undef CHAR

/* The tables, from the one list; stored ids index them (km.h checks that
 * they run 0 .. count - 1; a repeated id fails -Woverride-init). */
#define KERNEL_ROW(e, id, name, desc) [id] = &desc,
static const km_kernel_desc *const descs[KM_KERNEL_TYPE_COUNT] = {
    KM_KERNEL_MAP(KERNEL_ROW)};
#undef KERNEL_ROW
#define KERNEL_NAME(e, id, name, desc) [id] = name,
static const char *const type_names[KM_KERNEL_TYPE_COUNT] = {
    KM_KERNEL_MAP(KERNEL_NAME)};
#undef KERNEL_NAME

const km_kernel_desc *km_kernel_desc_of(km_kernel_type t)
{
    return (unsigned)t < KM_KERNEL_TYPE_COUNT ? descs[t] : NULL;
}

unsigned km_kernel_type_caps(km_kernel_type t)
{
    if ((unsigned)t >= KM_KERNEL_TYPE_COUNT)
        return 0;
    return descs[t]->caps |
           (descs[t]->spectral ? KM_KERNEL_CAP_RFF : 0) |
           (descs[t]->info.family == KM_KFAMILY_COMPOSITE
                ? KM_KERNEL_CAP_COMPOSITE : 0);
}

int km_kernel_characteristic(const km_kernel *k)
{
    return (km_kernel_type_caps(k->type) & KM_KERNEL_CAP_CHARACTERISTIC) &&
           k->n_columns == 0;
}

void km_kernel_spectral_draw(const km_kernel *k, km_rng *r, size_t d,
                             double *w, double *tmp)
{
    if (!k->n_columns) {
        descs[k->type]->spectral(k->gamma, d, r, w);
        return;
    }
    descs[k->type]->spectral(k->gamma, (size_t)k->n_columns, r, tmp);
    memset(w, 0, d * sizeof *w);
    for (int c = 0; c < k->n_columns; c++)
        w[k->columns[c]] = tmp[c];
}

void km_kernel_caps_names(unsigned caps, const char *last, char *buf,
                          size_t len)
{
    const char *names[KM_KERNEL_TYPE_COUNT];
    int k = 0;
    for (int t = 0; t < KM_KERNEL_TYPE_COUNT; t++)
        if ((km_kernel_type_caps((km_kernel_type)t) & caps) == caps)
            names[k++] = type_names[t];
    km_join_names(names, k, last, buf, len);
}

const km_kernel_info *km_kernel_type_info(km_kernel_type t)
{
    return (unsigned)t < KM_KERNEL_TYPE_COUNT ? &descs[t]->info : NULL;
}

const char *km_kernel_type_name(km_kernel_type t)
{
    return (unsigned)t < KM_KERNEL_TYPE_COUNT ? type_names[t] : NULL;
}

const km_choices km_kernel_type_choices = {type_names, KM_KERNEL_TYPE_COUNT};

/* ------------------------------------------------------------ params
 *
 * The members of a kernel object a request may give (km_param,
 * km_base.h), each taken by the types whose row of the table above has
 * its KM_KPARAM_* flag; read by the API through km_kernel_params. */

/* sigma is gamma = 1/(2 sigma^2), which must itself be a gamma. */
static int sigma_to_gamma(double s, double *gamma)
{
    *gamma = 1.0 / (2.0 * s * s);
    return isfinite(*gamma) && *gamma != 0 ? 0 : -1;
}

static const km_param kernel_rows[] = {
    {.key = "type", .type = KM_PARAM_DISCRIMINATOR,
     KM_PARAM_FIELD(km_kernel, type), .required = 1,
     .choices = &km_kernel_type_choices},
    {.key = "gamma", .type = KM_PARAM_NUMBER, KM_PARAM_FIELD(km_kernel, gamma),
     .range = KM_PARAM_RANGE_READER, .min = 0, .max = HUGE_VAL,
     .min_open = 1, .data_default = 1, .kparam = KM_KPARAM_GAMMA,
     .doc = "default 1/n_features"},
    {.key = "sigma", .type = KM_PARAM_NUMBER, KM_PARAM_FIELD(km_kernel, gamma),
     .range = KM_PARAM_RANGE_READER, .min = 0, .max = HUGE_VAL,
     .min_open = 1, .alias_of = "gamma", .convert = sigma_to_gamma,
     .data_default = 1, .kparam = KM_KPARAM_SIGMA,
     .doc = "gamma = 1/(2 sigma^2); not with gamma"},
    {.key = "degree", .type = KM_PARAM_INTEGER,
     KM_PARAM_FIELD(km_kernel, degree), .range = KM_PARAM_RANGE_READER,
     .min = 0, .max = 64, .kparam = KM_KPARAM_DEGREE},
    {.key = "coef0", .type = KM_PARAM_NUMBER, KM_PARAM_FIELD(km_kernel, coef0),
     .kparam = KM_KPARAM_COEF0,
     .doc = "polynomial default 1, sigmoid default 0"},
    {.key = "kernels", .type = KM_PARAM_PARTS,
     KM_PARAM_FIELD(km_kernel, parts), .range = KM_PARAM_RANGE_READER,
     .min = 1, .max = KM_KERNEL_MAX_PARTS, .kparam = KM_KPARAM_PARTS,
     .doc = "the parts; nesting at most 4 deep"},
    {.key = "weights", .type = KM_PARAM_PART_WEIGHTS,
     KM_PARAM_FIELD(km_kernel, weights), .range = KM_PARAM_RANGE_READER,
     .min = 0, .max = HUGE_VAL, .kparam = KM_KPARAM_WEIGHTS,
     .doc = "one per part; default all 1; not all 0"},
    {.key = "length", .type = KM_PARAM_INTEGER,
     KM_PARAM_FIELD(km_kernel, length), .range = KM_PARAM_RANGE_READER,
     .min = 1, .max = KM_STRING_MAX_K, .kparam = KM_KPARAM_LENGTH,
     .doc = "substring length k (boundrange: 1 .. k)"},
    {.key = "lambda", .type = KM_PARAM_NUMBER,
     KM_PARAM_FIELD(km_kernel, lambda), .range = KM_PARAM_RANGE_CHECK,
     .min = 0, .max = HUGE_VAL, .min_open = 1, .kparam = KM_KPARAM_LAMBDA,
     .doc = "decay: expdecay >= 1 (default 1.1), subsequence in (0, 1] "
            "(default 0.5)"},
    {.key = "columns", .type = KM_PARAM_INDICES,
     KM_PARAM_FIELD(km_kernel, columns), .range = KM_PARAM_RANGE_READER,
     .min = 0, .max = KM_KERNEL_MAX_COLUMNS - 1,
     .kparam = KM_KPARAM_COLUMNS,
     .doc = "the columns of X the kernel reads (distinct, < the number of "
            "columns); default all"},
    {0},
};
_Static_assert(sizeof(km_kernel_type) == sizeof(int),
               "KM_PARAM_DISCRIMINATOR fields are int-sized");

static void kernel_defaults(void *k)
{
    km_kernel_init(k, KM_KERNEL_LINEAR);
}

static const km_param_set kernel_params = {kernel_rows, sizeof(km_kernel),
                                           kernel_defaults};

const km_param_set *km_kernel_params(void)
{
    return &kernel_params;
}

int km_kernel_type_parse(const char *name, km_kernel_type *t)
{
    int i = km_name_index(type_names, KM_KERNEL_TYPE_COUNT, name);
    if (i >= 0)
        *t = (km_kernel_type)i;
    return i >= 0 ? 0 : -1;
}

static int is_composite(km_kernel_type t)
{
    return descs[t]->info.family == KM_KFAMILY_COMPOSITE;
}

void km_kernel_init(km_kernel *k, km_kernel_type type)
{
    memset(k, 0, sizeof *k);
    k->type = type;
    k->degree = 3;
    k->coef0 = 0.0;
    if ((unsigned)type < KM_KERNEL_TYPE_COUNT) {
        k->degree = descs[type]->info.degree;
        k->coef0 = descs[type]->info.coef0;
        k->length = descs[type]->info.length;
        k->lambda = descs[type]->info.lambda;
    }
}

void km_kernel_cleanup(km_kernel *k)
{
    for (int i = 0; i < k->n_parts; i++)
        km_kernel_cleanup(&k->parts[i]);
    free(k->parts);
    free(k->weights);
    free(k->columns);
    k->parts = NULL;
    k->weights = NULL;
    k->columns = NULL;
    k->n_parts = 0;
    k->n_columns = 0;
}

void km_kernel_set_parts(km_kernel *k, km_kernel *parts, double *weights,
                         int n)
{
    k->parts = parts;
    k->weights = weights;
    k->n_parts = n;
}

km_status km_kernel_copy(km_kernel *dst, const km_kernel *src, km_error *err)
{
    *dst = *src;
    dst->parts = NULL;
    dst->weights = NULL;
    dst->n_parts = 0;
    dst->columns = NULL;
    dst->n_columns = 0;
    if (src->n_columns > 0) {
        size_t b = (size_t)src->n_columns * sizeof *src->columns;
        if (!(dst->columns = malloc(b)))
            goto oom;
        memcpy(dst->columns, src->columns, b);
        dst->n_columns = src->n_columns;
    }
    if (src->n_parts == 0)
        return KM_OK;
    dst->parts = calloc((size_t)src->n_parts, sizeof *dst->parts);
    if (src->weights)
        dst->weights = malloc((size_t)src->n_parts * sizeof *dst->weights);
    if (!dst->parts || (src->weights && !dst->weights))
        goto oom;
    if (src->weights)
        memcpy(dst->weights, src->weights,
               (size_t)src->n_parts * sizeof *dst->weights);
    for (int i = 0; i < src->n_parts; i++) {
        dst->n_parts = i + 1;
        if (km_kernel_copy(&dst->parts[i], &src->parts[i], err) != KM_OK)
            goto oom;
    }
    return KM_OK;
oom:
    km_kernel_cleanup(dst);
    return km_error_set(err, KM_ENOMEM, "out of memory copying a kernel");
}

/* path names the kernel in messages: "kernel", "kernel.kernels[1]". */
static km_status check(const km_kernel *k, const char *path, int depth,
                       km_error *err)
{
    if ((unsigned)k->type >= KM_KERNEL_TYPE_COUNT)
        return km_error_set(err, KM_EINVAL, "%s.type is not a known kernel",
                            path);
    if (!(k->gamma >= 0) || !isfinite(k->gamma))
        return km_error_set(err, KM_EINVAL,
                            "%s.gamma must be a finite number > 0", path);
    if (!isfinite(k->coef0))
        return km_error_set(err, KM_EINVAL,
                            "%s.coef0 must be a finite number", path);
    const km_kernel_info *info = &descs[k->type]->info;
    if ((info->params & KM_KPARAM_DEGREE) && (k->degree < 0 || k->degree > 64))
        return km_error_set(err, KM_EINVAL,
                            "%s.degree must be an integer from 0 to 64", path);
    km_status st = km_kernel_check_leaf(k, path, depth, err);
    if (st != KM_OK)
        return st;
    if (!is_composite(k->type)) {
        if (k->n_parts != 0)
            return km_error_set(err, KM_EINVAL,
                                "%s: a %s kernel has no parts", path,
                                type_names[k->type]);
        return KM_OK;
    }
    if (depth >= KM_KERNEL_MAX_DEPTH)
        return km_error_set(err, KM_EINVAL,
                            "%s: sums and products nest at most %d deep", path,
                            KM_KERNEL_MAX_DEPTH);
    if (k->n_parts < info->min_parts || k->n_parts > info->max_parts ||
        !k->parts) {
        if (info->min_parts == info->max_parts)
            return km_error_set(err, KM_EINVAL,
                                "%s.kernels must list exactly %d kernel%s",
                                path, info->min_parts,
                                info->min_parts == 1 ? "" : "s");
        return km_error_set(err, KM_EINVAL,
                            "%s.kernels must list %d to %d kernels", path,
                            info->min_parts, info->max_parts);
    }
    if (k->weights) {
        if (!(info->params & KM_KPARAM_WEIGHTS))
            return km_error_set(err, KM_EINVAL,
                                "%s.weights apply only to a sum kernel", path);
        int any = 0;
        for (int i = 0; i < k->n_parts; i++) {
            if (!(k->weights[i] >= 0) || !isfinite(k->weights[i]))
                return km_error_set(err, KM_EINVAL,
                                    "%s.weights[%d] must be a finite number "
                                    ">= 0", path, i);
            any |= k->weights[i] > 0;
        }
        if (!any)
            return km_error_set(err, KM_EINVAL,
                                "%s.weights must not all be 0", path);
    }
    for (int i = 0; i < k->n_parts; i++) {
        char sub[200];
        snprintf(sub, sizeof sub, "%s.kernels[%d]", path, i);
        st = check(&k->parts[i], sub, depth + 1, err);
        if (st != KM_OK)
            return st;
        km_input_kind a = km_kernel_input(&k->parts[0]);
        km_input_kind b = km_kernel_input(&k->parts[i]);
        if (a != b)
            return km_error_set(err, KM_EINVAL, "%s takes %s but %s.kernels[0] "
                                "takes %s: the parts of a kernel take the "
                                "same inputs", sub,
                                km_choice_name(&km_input_kind_choices, b),
                                path,
                                km_choice_name(&km_input_kind_choices, a));
    }
    return KM_OK;
}

km_status km_kernel_check(const km_kernel *k, km_error *err)
{
    return check(k, "kernel", 0, err);
}

void km_kernel_resolve(km_kernel *k, size_t n_features)
{
    if (k->n_columns > 0) /* a leaf on chosen columns: 1/their number */
        n_features = (size_t)k->n_columns;
    if (k->gamma == 0 && n_features > 0)
        k->gamma = 1.0 / (double)n_features;
    for (int i = 0; i < k->n_parts; i++)
        km_kernel_resolve(&k->parts[i], n_features);
}

/* ------------------------------------------------------------ evaluation */

static void row_sqnorms(const double *X, size_t n, size_t d, double *out);

/* Whether k is a leaf computed from inner products (BLAS): its family is
 * INNER or L2. */
int km_kernel_uses_dots(const km_kernel *k)
{
    km_kernel_family f = descs[k->type]->info.family;
    return (f == KM_KFAMILY_INNER || f == KM_KFAMILY_L2) && !k->n_columns;
}

/* Rows restricted to a leaf's columns: out (n x c) from X (n x d). */
static void gather(const km_kernel *k, const double *X, size_t n, size_t d,
                   double *out)
{
    size_t c = (size_t)k->n_columns;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < c; j++)
            out[i * c + j] = (size_t)k->columns[j] < d
                             ? X[i * d + (size_t)k->columns[j]] : 0.0;
}

/* The leaf k without its columns (a view sharing nothing owned). */
static km_kernel all_columns(const km_kernel *k)
{
    km_kernel v = *k;
    v.n_columns = 0;
    v.columns = NULL;
    return v;
}

/*
 * Applies k's map to a row of its family's base quantities (see
 * km_kernel_desc). diag, when >= 0, is the index of x itself in the row:
 * an L2 kernel's distance there is exactly 0, as scikit-learn makes it.
 */
void km_kernel_map_row(const km_kernel *k, double *row, size_t len,
                       double xn, const double *zn, long diag)
{
    const km_kernel_desc *kd = descs[k->type];
    kd->map(k, row, len, xn, zn);
    if (kd->info.family == KM_KFAMILY_L2 && diag >= 0 && (size_t)diag < len) {
        double zero = 0.0, v = 0.0;
        kd->map(k, &v, 1, 0.0, &zero);
        row[diag] = v;
    }
}

/*
 * Direct evaluation through the same maps: the base quantity is computed
 * exactly for one pair (an L2 distance from the differences, handed to
 * the map as |x|^2 with |z|^2 = <x,z> = 0, which it then reads back
 * unchanged).
 */
double km_kernel_eval(const km_kernel *k, const double *x, const double *z,
                      size_t d)
{
    if ((unsigned)k->type >= KM_KERNEL_TYPE_COUNT)
        return NAN;
    const km_kernel_desc *kd = descs[k->type];
    double s = 0, zero = 0, v;
    if (k->n_columns > 0) {
        size_t c = (size_t)k->n_columns;
        double *xz = malloc(2 * c * sizeof *xz);
        km_kernel leaf = all_columns(k);
        if (!xz)
            return NAN;
        gather(k, x, 1, d, xz);
        gather(k, z, 1, d, xz + c);
        v = km_kernel_eval(&leaf, xz, xz + c, c);
        free(xz);
        return v;
    }
    switch (kd->info.family) {
    case KM_KFAMILY_STRING:
        return km_strings_eval(k, x, z, d);
    case KM_KFAMILY_PRECOMPUTED:
        return km_precomputed_value(x, z, d);
    case KM_KFAMILY_INNER:
        for (size_t j = 0; j < d; j++)
            s += x[j] * z[j];
        kd->map(k, &s, 1, 0.0, &zero);
        return s;
    case KM_KFAMILY_L2:
        for (size_t j = 0; j < d; j++)
            s += (x[j] - z[j]) * (x[j] - z[j]);
        v = 0.0;
        kd->map(k, &v, 1, s, &zero);
        return v;
    case KM_KFAMILY_L1:
        for (size_t j = 0; j < d; j++)
            s += fabs(x[j] - z[j]);
        kd->map(k, &s, 1, 0.0, &zero);
        return s;
    case KM_KFAMILY_COMPOSITE:
        v = 0.0;
        for (int i = 0; i < k->n_parts; i++) {
            const km_kernel *part = &k->parts[i];
            double b = km_kernel_eval(part, x, z, d), xs = 0, zs = 0;
            if (kd->needs_self) {
                xs = km_kernel_eval(part, x, x, d);
                zs = km_kernel_eval(part, z, z, d);
            }
            kd->combine(k, i, &v, 1, &b, 1, 1, &xs, &zs, -1);
        }
        return v;
    }
    return NAN;
}

/* Whether k's value is built from inner products of the rows (so the
 * squared norms must be finite too). */
static int uses_dot(const km_kernel *k)
{
    if (is_composite(k->type)) {
        for (int i = 0; i < k->n_parts; i++)
            if (uses_dot(&k->parts[i]))
                return 1;
        return 0;
    }
    return descs[k->type]->info.family == KM_KFAMILY_INNER;
}

km_status km_kernel_check_scale(const km_kernel *k, const double *X, size_t n,
                                size_t d, km_error *err)
{
    int dot = uses_dot(k);
    for (size_t i = 0; i < n; i++) {
        const double *x = X + i * d;
        double s = 0;
        for (size_t j = 0; dot && j < d; j++)
            s += x[j] * x[j];
        if (!isfinite(s) || !isfinite(km_kernel_eval(k, x, x, d)))
            return km_error_set(err, KM_EPROBLEM,
                                "the kernel of X[%zu] with itself is not a "
                                "finite number: the values of X are too "
                                "large for this kernel in double precision "
                                "(overflow); rescale X, or use a smaller "
                                "gamma, degree or coef0", i);
    }
    return KM_OK;
}

/* ------------------------------------------------------------ Gram maps */

double *km_sqnorms(const double *X, size_t n, size_t d)
{
    double *v = malloc((n ? n : 1) * sizeof *v);
    if (v)
        row_sqnorms(X, n, d, v);
    return v;
}

static void row_sqnorms(const double *X, size_t n, size_t d, double *out)
{
    for (size_t i = 0; i < n; i++) {
        const double *x = X + i * d;
        double s = 0;
        for (size_t j = 0; j < d; j++)
            s += x[j] * x[j];
        out[i] = s;
    }
}

/* L1 distances into out (rows of ldk): the base quantity of the L1
 * family, which no BLAS routine gives. */
static void l1_block(const double *X, size_t nx, const double *Z, size_t nz,
                     size_t d, double *out, size_t ldk)
{
    for (size_t i = 0; i < nx; i++) {
        const double *x = X + i * d;
        double *row = out + i * ldk;
        for (size_t j = 0; j < nz; j++) {
            const double *z = Z + j * d;
            double s = 0;
            for (size_t f = 0; f < d; f++)
                s += fabs(x[f] - z[f]);
            row[j] = s;
        }
    }
}

static km_status cross(const km_kernel *k, const double *X, size_t nx,
                       const double *xn, const double *Z, size_t nz,
                       const double *zn, size_t d, double *K, size_t ldk,
                       long diag_offset, km_error *err);

/* k(x_i, x_i) for the n rows of X, each as the Gram's diagonal makes it. */
static km_status self_values(const km_kernel *k, const double *X, size_t n,
                             const double *xn, size_t d, double *out,
                             km_error *err)
{
    if (!k->n_columns && descs[k->type]->info.family == KM_KFAMILY_STRING)
        return km_strings_self(k, X, n, d, out, err); /* one set for all */
    for (size_t i = 0; i < n; i++) {
        km_status st = cross(k, X + i * d, 1, xn ? xn + i : NULL, X + i * d,
                             1, xn ? xn + i : NULL, d, out + i, 1, 0, err);
        if (st != KM_OK)
            return st;
    }
    return KM_OK;
}

/* Composite levels on k's deepest path (0 for a leaf). */
static size_t composite_levels(const km_kernel *k)
{
    size_t most = 0;
    for (int p = 0; is_composite(k->type) && p < k->n_parts; p++) {
        size_t l = composite_levels(&k->parts[p]);
        most = l > most ? l : most;
    }
    return is_composite(k->type) ? most + 1 : 0;
}

static size_t gram_work_bytes(const km_kernel *k, size_t nx, size_t nz);

/* Whether k has a string leaf (or, NULL, may have one). */
static int has_strings(const km_kernel *k)
{
    if (!k || km_kernel_input(k) == KM_INPUT_STRINGS)
        return 1;
    return 0;
}

size_t km_gram_work_bytes(const km_kernel *k, size_t nx, size_t nz, size_t d)
{
    size_t b = gram_work_bytes(k, nx, nz);
    if (!has_strings(k))
        return b;
    /* every string leaf's sets (at most one level's at once) */
    size_t s = km_strings_work_bytes(k, nx, nz, d);
    return b > SIZE_MAX - s ? SIZE_MAX : b + s;
}

static size_t gram_work_bytes(const km_kernel *k, size_t nx, size_t nz)
{
    /* the rows' norms (nx + nz + 1); per composite level (cross_composite)
     * a block of nx x nz, the parts' self values (nx + nz) and their own
     * scratch (nx + nz) */
    uint64_t side = km_add_sat(nx, nz);
    uint64_t level = km_add_sat(km_mul_sat(nx, nz), km_mul_sat(2, side));
    uint64_t levels = k ? composite_levels(k) : KM_KERNEL_MAX_DEPTH;
    uint64_t values = km_add_sat(km_add_sat(side, 1),
                                 km_mul_sat(levels, km_add_sat(level, 1)));
    uint64_t b = km_mul_sat(values, sizeof(double));
    return b > SIZE_MAX ? SIZE_MAX : (size_t)b;
}

/* A composite, part by part through a block buffer (and, when its
 * combine needs them, the parts' self values of X's and Z's rows). */
static km_status cross_composite(const km_kernel *k, const double *X,
                                 size_t nx, const double *xn, const double *Z,
                                 size_t nz, const double *zn, size_t d,
                                 double *K, size_t ldk, long diag_offset,
                                 km_error *err)
{
    const km_kernel_desc *kd = descs[k->type];
    km_status st = KM_OK;
    double *tmp = malloc(nx * nz * sizeof *tmp);
    double *xs = kd->needs_self ? malloc((nx + nz) * sizeof *xs) : NULL;
    if (!tmp || (kd->needs_self && !xs)) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for a kernel block");
        goto out;
    }
    double *zs = xs ? xs + nx : NULL;
    for (int p = 0; p < k->n_parts && st == KM_OK; p++) {
        const km_kernel *part = &k->parts[p];
        st = cross(part, X, nx, xn, Z, nz, zn, d, tmp, nz, diag_offset, err);
        if (st == KM_OK && xs)
            st = self_values(part, X, nx, xn, d, xs, err);
        if (st == KM_OK && xs)
            st = self_values(part, Z, nz, zn, d, zs, err);
        if (st == KM_OK)
            kd->combine(k, p, K, ldk, tmp, nx, nz, xs, zs, diag_offset);
    }
out:
    free(tmp);
    free(xs);
    return st;
}

static int needs_norms(const km_kernel *k);

/* A leaf on chosen columns: the rows gathered, then the leaf on them. */
static km_status cross_columns(const km_kernel *k, const double *X,
                               size_t nx, const double *Z, size_t nz,
                               size_t d, double *K, size_t ldk,
                               long diag_offset, km_error *err)
{
    size_t c = (size_t)k->n_columns;
    for (size_t j = 0; j < c; j++)
        if ((size_t)k->columns[j] >= d)
            return km_error_set(err, KM_EINVAL, "kernel.columns lists column "
                                "%d, but X has %zu column%s", k->columns[j],
                                d, d == 1 ? "" : "s");
    km_kernel leaf = all_columns(k);
    int norms = needs_norms(&leaf);
    double *buf = malloc(((nx + nz) * c + (norms ? nx + nz : 0) + 1) *
                         sizeof *buf);
    if (!buf)
        return km_error_set(err, KM_ENOMEM, "out of memory for a kernel "
                            "block");
    double *xs = buf, *zs = buf + nx * c, *xn = NULL, *zn = NULL;
    gather(k, X, nx, d, xs);
    gather(k, Z, nz, d, zs);
    if (norms) {
        xn = zs + nz * c;
        zn = xn + nx;
        row_sqnorms(xs, nx, c, xn);
        row_sqnorms(zs, nz, c, zn);
    }
    km_status st = cross(&leaf, xs, nx, xn, zs, nz, zn, c, K, ldk,
                         diag_offset, err);
    free(buf);
    return st;
}

/*
 * The cross Gram with the norms already known (or NULL for kernels that do
 * not need them). diag_offset >= 0 says X_i is Z_{i + diag_offset}.
 */
static km_status cross(const km_kernel *k, const double *X, size_t nx,
                       const double *xn, const double *Z, size_t nz,
                       const double *zn, size_t d, double *K, size_t ldk,
                       long diag_offset, km_error *err)
{
    if (nx == 0 || nz == 0)
        return KM_OK;
    if (k->n_columns > 0)
        return cross_columns(k, X, nx, Z, nz, d, K, ldk, diag_offset, err);
    switch (descs[k->type]->info.family) {
    case KM_KFAMILY_COMPOSITE:
        return cross_composite(k, X, nx, xn, Z, nz, zn, d, K, ldk,
                               diag_offset, err);
    case KM_KFAMILY_STRING:
        return km_strings_cross(k, X, nx, Z, nz, d, K, ldk, diag_offset, 0,
                                err);
    case KM_KFAMILY_PRECOMPUTED:
        return km_precomputed_cross(X, nx, Z, nz, d, K, ldk, err);
    case KM_KFAMILY_L1:
        l1_block(X, nx, Z, nz, d, K, ldk);
        break;
    default: /* inner products */
        if (nx == 1) /* one row: see km_vdot_rows */
            km_vdot_rows(X, Z, nz, d, K);
        else
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)nx,
                        (int)nz, (int)d, 1.0, X, (int)d, Z, (int)d, 0.0, K,
                        (int)ldk);
    }
    for (size_t i = 0; i < nx; i++)
        km_kernel_map_row(k, K + i * ldk, nz, xn ? xn[i] : 0, zn,
                          diag_offset >= 0 ? (long)i + diag_offset : -1);
    return KM_OK;
}

/* Whether a kernel (or a part of it) needs squared norms of whole rows
 * (a leaf on chosen columns makes its own). */
static int needs_norms(const km_kernel *k)
{
    if (descs[k->type]->info.family == KM_KFAMILY_L2 && !k->n_columns)
        return 1;
    for (int i = 0; i < k->n_parts; i++)
        if (needs_norms(&k->parts[i]))
            return 1;
    return 0;
}

static int dims_ok(size_t a, size_t b)
{
    return a <= (size_t)2147483647 && b <= (size_t)2147483647;
}

km_status km_gram_cross_sn(const km_kernel *k, const double *X, size_t nx,
                           const double *Z, size_t nz, const double *zn,
                           size_t d, double *K, size_t ldk, km_error *err)
{
    if (!dims_ok(nx, nz) || !dims_ok(d, ldk) || ldk < nz)
        return km_error_set(err, KM_EINVAL, "Gram matrix dimensions too large");
    double *xn = NULL, *own = NULL;
    if (needs_norms(k)) {
        xn = malloc((nx + (zn ? 0 : nz) + 1) * sizeof *xn);
        if (!xn)
            return km_error_set(err, KM_ENOMEM, "out of memory for norms");
        row_sqnorms(X, nx, d, xn);
        if (!zn) {
            own = xn + nx;
            row_sqnorms(Z, nz, d, own);
            zn = own;
        }
    }
    km_status st = cross(k, X, nx, xn, Z, nz, zn, d, K, ldk, -1, err);
    free(xn);
    return st;
}

km_status km_gram_cross(const km_kernel *k, const double *X, size_t nx,
                        const double *Z, size_t nz, size_t d, double *K,
                        size_t ldk, km_error *err)
{
    return km_gram_cross_sn(k, X, nx, Z, nz, NULL, d, K, ldk, err);
}

/* Copies the lower triangle onto the upper, tile by tile for the cache. */
static void mirror_lower(double *K, size_t n)
{
    const size_t T = 64;
    for (size_t ib = 0; ib < n; ib += T)
        for (size_t jb = 0; jb <= ib; jb += T)
            for (size_t i = ib; i < ib + T && i < n; i++)
                for (size_t j = jb; j < jb + T && j < i; j++)
                    K[j * n + i] = K[i * n + j];
}

km_status km_gram_sym(const km_kernel *k, const double *X, size_t n,
                      size_t d, double *K, int full, km_error *err)
{
    if (!dims_ok(n, d))
        return km_error_set(err, KM_EINVAL, "Gram matrix dimensions too large");
    if (n == 0)
        return KM_OK;
    double *xn = NULL;
    if (needs_norms(k)) {
        xn = malloc(n * sizeof *xn);
        if (!xn)
            return km_error_set(err, KM_ENOMEM, "out of memory for norms");
        row_sqnorms(X, n, d, xn);
    }
    km_status st = KM_OK;
    if (descs[k->type]->info.family == KM_KFAMILY_STRING && !k->n_parts) {
        /* one set of the strings, the lower triangle only */
        km_strings_prepare(k, X, n, d);
        st = km_strings_cross(k, X, n, X, n, d, K, n, 0, 1, err);
    } else if (!km_kernel_uses_dots(k)) {
        /* Row blocks against the rows up to the block's end: the lower
         * triangle and a little of the upper, in bounded memory. */
        km_strings_prepare(k, X, n, d);
        for (size_t i0 = 0; i0 < n && st == KM_OK; i0 += BLOCK_ROWS) {
            size_t b = n - i0 < BLOCK_ROWS ? n - i0 : BLOCK_ROWS;
            st = cross(k, X + i0 * d, b, xn ? xn + i0 : NULL, X, i0 + b, xn,
                       d, K + i0 * n, n, (long)i0, err);
        }
    } else {
        cblas_dsyrk(CblasRowMajor, CblasLower, CblasNoTrans, (int)n, (int)d,
                    1.0, X, (int)d, 0.0, K, (int)n);
        for (size_t i = 0; i < n; i++)
            km_kernel_map_row(k, K + i * n, i + 1, xn ? xn[i] : 0, xn,
                              (long)i);
    }
    free(xn);
    if (st == KM_OK && full)
        mirror_lower(K, n);
    return st;
}

km_status km_gram_block(const km_kernel *k, const double *X, const double *xn,
                        size_t d, size_t i0, size_t ni, size_t j0, size_t nj,
                        double *K, size_t ldk, km_error *err)
{
    if (!dims_ok(ni, nj) || !dims_ok(d, ldk) || ldk < nj ||
        i0 > (size_t)LONG_MAX || j0 > (size_t)LONG_MAX)
        return km_error_set(err, KM_EINVAL, "Gram matrix dimensions too large");
    double *own = NULL;
    const double *xi = NULL, *xj = NULL;
    if (needs_norms(k)) {
        if (xn) {
            xi = xn + i0;
            xj = xn + j0;
        } else {
            if (!(own = malloc((ni + nj + 1) * sizeof *own)))
                return km_error_set(err, KM_ENOMEM, "out of memory for norms");
            row_sqnorms(X + i0 * d, ni, d, own);
            row_sqnorms(X + j0 * d, nj, d, own + ni);
            xi = own;
            xj = own + ni;
        }
    }
    /* Row i0 + a is column a + (i0 - j0) of the block. */
    long diag = i0 >= j0 && i0 - j0 < nj ? (long)(i0 - j0) : -1;
    km_status st = cross(k, X + i0 * d, ni, xi, X + j0 * d, nj, xj, d, K, ldk,
                         diag, err);
    free(own);
    return st;
}

/* ------------------------------------------------------------ expansion */

/* A prediction's expansion in blocks of rows (km_kernel_expand): what
 * the blocks read, and out, whose rows they write. */
typedef struct expand {
    const km_kernel *k;
    const double *S, *sn, *W, *bias, *X;
    size_t ns, d, m, rows;
    double *out;
} expand;

/* Rows i0 .. i0 + nb - 1: their kernel values against S (rows x ns in
 * the worker's scratch, then their norms), times W, plus the bias. */
static km_status expand_block(void *ctx, size_t i0, size_t nb,
                              void *scratch, km_error *err)
{
    const expand *e = ctx;
    const size_t ns = e->ns, d = e->d, m = e->m;
    double *Kb = scratch, *xn = e->sn ? Kb + e->rows * (ns ? ns : 1) : NULL;
    if (xn)
        row_sqnorms(e->X + i0 * d, nb, d, xn);
    km_status st = cross(e->k, e->X + i0 * d, nb, xn, e->S, ns, e->sn, d, Kb,
                         ns, -1, err);
    if (st != KM_OK)
        return st;
    double *o = e->out + i0 * m;
    if (m == 1 && nb == 1) /* a dot product: in this thread */
        km_vdot_rows(e->W, Kb, 1, ns, o);
    else if (m == 1)
        cblas_dgemv(CblasRowMajor, CblasNoTrans, (int)nb, (int)ns, 1.0, Kb,
                    (int)ns, e->W, 1, 0.0, o, 1);
    else
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)nb,
                    (int)m, (int)ns, 1.0, Kb, (int)ns, e->W, (int)m, 0.0, o,
                    (int)m);
    if (e->bias)
        for (size_t i = 0; i < nb; i++)
            for (size_t j = 0; j < m; j++)
                o[i * m + j] += e->bias[j];
    return KM_OK;
}

/*
 * Kernel values per block. On one thread, blocks of at most 8 MiB (at
 * least one row): small enough that glibc serves them from the heap after
 * the first call instead of a fresh mmap, whose page faults cost more
 * than the arithmetic, and large enough for efficient GEMM. On workers
 * (EXPAND_PARALLEL values or more, a kernel of inner products: blocks
 * that are BLAS and the vectorised maps), blocks of 2 MiB that stay in a
 * core's cache through the GEMM, the map and the product with W, as
 * svc's predictions do. Measured at 10,000 rows x 1000 training rows x 16
 * (krr, rbf, 2 cores): 54 ms on one thread with 8 MiB blocks.
 */
#define EXPAND_BLOCK ((size_t)1 << 20)
#define EXPAND_WORKER_BLOCK ((size_t)1 << 18)
#define EXPAND_PARALLEL ((size_t)1 << 21)

km_status km_kernel_expand(const km_kernel *k, const double *S, size_t ns,
                           size_t d, const double *S_norms, const double *W,
                           size_t m, const double *bias, const double *X,
                           size_t n, double *out, km_error *err)
{
    if (n == 0)
        return KM_OK;
    if (!dims_ok(ns, m) || !dims_ok(n, d))
        return km_error_set(err, KM_EINVAL, "dimensions too large");
    size_t nw = km_cpus();
    if (n < 2 || !km_kernel_uses_dots(k) ||
        (double)n * (double)ns < (double)EXPAND_PARALLEL)
        nw = 1;
    size_t rows = (nw > 1 ? EXPAND_WORKER_BLOCK : EXPAND_BLOCK) /
                  (ns ? ns : 1);
    if (rows < 1) rows = 1;
    if (rows > n) rows = n;
    /* all workers' blocks within KM_PREDICT_BLOCK_VALUES */
    size_t fit = KM_PREDICT_BLOCK_VALUES / (rows * (ns ? ns : 1));
    nw = nw < fit ? nw : (fit ? fit : 1);
    int norms = needs_norms(k);
    double *own = NULL;
    if (norms && !S_norms) {
        if (!(own = malloc((ns ? ns : 1) * sizeof *own)))
            return km_error_set(err, KM_ENOMEM, "out of memory for "
                                "prediction");
        row_sqnorms(S, ns, d, own);
    }
    expand e = {k, S, norms ? (S_norms ? S_norms : own) : NULL, W, bias, X,
                ns, d, m, rows, out};
    size_t scratch = (rows * (ns ? ns : 1) + (norms ? rows : 0)) *
                     sizeof(double);
    km_status st = km_blocks_run(n, rows, nw, scratch, expand_block, &e, err);
    free(own);
    return st;
}

