/*
 * km_kernel.c - kernel parameters, evaluation, and Gram matrices.
 *
 * Inner-product kernels (linear, polynomial, rbf, sigmoid) get their inner
 * products from BLAS: the training Gram from DSYRK (one triangle), a cross
 * Gram from DGEMM. rbf uses |x-z|^2 = |x|^2 + |z|^2 - 2<x,z>, clamped at 0
 * and exactly 0 on the training diagonal (as scikit-learn does), then the
 * vectorised exp of km_vmath.c. The Laplacian kernel needs L1 distances,
 * which no BLAS routine gives, so it is a direct loop. Sums and products
 * are computed part by part through a bounded block buffer.
 *
 * Invariant: a checked kernel has at most KM_KERNEL_MAX_DEPTH levels and
 * KM_KERNEL_MAX_PARTS parts per level; every gamma is > 0 after resolve.
 *
 * Thread-safety: reentrant; BLAS may use its own threads inside a call.
 */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "km_internal.h"

/* Rows per block when a Gram is built block by block. */
#define BLOCK_ROWS 256

static const char *const type_names[KM_KERNEL_TYPE_COUNT] = {
    "linear", "polynomial", "rbf", "laplacian", "sigmoid", "sum", "product",
};

const char *km_kernel_type_name(km_kernel_type t)
{
    return (unsigned)t < KM_KERNEL_TYPE_COUNT ? type_names[t] : NULL;
}

int km_kernel_type_parse(const char *name, km_kernel_type *t)
{
    for (int i = 0; i < KM_KERNEL_TYPE_COUNT; i++)
        if (strcmp(name, type_names[i]) == 0) {
            *t = (km_kernel_type)i;
            return 0;
        }
    return -1;
}

static int is_composite(km_kernel_type t)
{
    return t == KM_KERNEL_SUM || t == KM_KERNEL_PRODUCT;
}

void km_kernel_init(km_kernel *k, km_kernel_type type)
{
    memset(k, 0, sizeof *k);
    k->type = type;
    k->degree = 3;
    k->coef0 = type == KM_KERNEL_POLYNOMIAL ? 1.0 : 0.0;
}

void km_kernel_cleanup(km_kernel *k)
{
    for (int i = 0; i < k->n_parts; i++)
        km_kernel_cleanup(&k->parts[i]);
    free(k->parts);
    free(k->weights);
    k->parts = NULL;
    k->weights = NULL;
    k->n_parts = 0;
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
    if (k->type == KM_KERNEL_POLYNOMIAL && (k->degree < 0 || k->degree > 64))
        return km_error_set(err, KM_EINVAL,
                            "%s.degree must be an integer from 0 to 64", path);
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
    if (k->n_parts < 1 || k->n_parts > KM_KERNEL_MAX_PARTS || !k->parts)
        return km_error_set(err, KM_EINVAL,
                            "%s.kernels must list 1 to %d kernels", path,
                            KM_KERNEL_MAX_PARTS);
    if (k->weights) {
        if (k->type != KM_KERNEL_SUM)
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
        km_status st = check(&k->parts[i], sub, depth + 1, err);
        if (st != KM_OK)
            return st;
    }
    return KM_OK;
}

km_status km_kernel_check(const km_kernel *k, km_error *err)
{
    return check(k, "kernel", 0, err);
}

void km_kernel_resolve(km_kernel *k, size_t n_features)
{
    if (k->gamma == 0 && n_features > 0)
        k->gamma = 1.0 / (double)n_features;
    for (int i = 0; i < k->n_parts; i++)
        km_kernel_resolve(&k->parts[i], n_features);
}

/* ------------------------------------------------------------ evaluation */


double km_kernel_eval(const km_kernel *k, const double *x, const double *z,
                      size_t d)
{
    double s = 0, v;
    switch (k->type) {
    case KM_KERNEL_LINEAR:
    case KM_KERNEL_POLYNOMIAL:
    case KM_KERNEL_SIGMOID:
        for (size_t j = 0; j < d; j++)
            s += x[j] * z[j];
        if (k->type == KM_KERNEL_LINEAR)
            return s;
        if (k->type == KM_KERNEL_POLYNOMIAL)
            return km_ipow(k->gamma * s + k->coef0, k->degree);
        return tanh(k->gamma * s + k->coef0);
    case KM_KERNEL_RBF:
        for (size_t j = 0; j < d; j++)
            s += (x[j] - z[j]) * (x[j] - z[j]);
        return exp(-k->gamma * s);
    case KM_KERNEL_LAPLACIAN:
        for (size_t j = 0; j < d; j++)
            s += fabs(x[j] - z[j]);
        return exp(-k->gamma * s);
    case KM_KERNEL_SUM:
        for (int i = 0; i < k->n_parts; i++)
            s += (k->weights ? k->weights[i] : 1.0) *
                 km_kernel_eval(&k->parts[i], x, z, d);
        return s;
    case KM_KERNEL_PRODUCT:
        v = 1.0;
        for (int i = 0; i < k->n_parts; i++)
            v *= km_kernel_eval(&k->parts[i], x, z, d);
        return v;
    default:
        return NAN;
    }
}

/* Whether k's value is built from inner products of the rows. */
static int uses_dot(const km_kernel *k)
{
    if (k->type == KM_KERNEL_SUM || k->type == KM_KERNEL_PRODUCT) {
        for (int i = 0; i < k->n_parts; i++)
            if (uses_dot(&k->parts[i]))
                return 1;
        return 0;
    }
    return k->type == KM_KERNEL_LINEAR || k->type == KM_KERNEL_POLYNOMIAL ||
           k->type == KM_KERNEL_SIGMOID;
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

static void row_sqnorms(const double *X, size_t n, size_t d, double *out);

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

/*
 * Turns a row of inner products <x, z_j> (j < len) into kernel values.
 * xn is |x|^2, zn[j] = |z_j|^2 (rbf only). diag, when >= 0, is the index of
 * x itself in the row, whose squared distance is exactly 0.
 */
static void map_row(const km_kernel *k, double *row, size_t len, double xn,
                    const double *zn, long diag)
{
    const double g = k->gamma, c = k->coef0;
    switch (k->type) {
    case KM_KERNEL_POLYNOMIAL:
        for (size_t j = 0; j < len; j++)
            row[j] = km_ipow(g * row[j] + c, k->degree);
        break;
    case KM_KERNEL_SIGMOID:
        for (size_t j = 0; j < len; j++)
            row[j] = tanh(g * row[j] + c);
        break;
    case KM_KERNEL_RBF:
        km_vmap_rbf(row, len, xn, zn, g);
        if (diag >= 0 && (size_t)diag < len)
            row[diag] = 1.0; /* distance exactly 0, as scikit-learn */
        break;
    default: /* linear: the inner products are the values */
        break;
    }
}

/* L1 distances, then exp(-gamma d). out has rows of ldk. */
static void laplacian_block(const km_kernel *k, const double *X, size_t nx,
                            const double *Z, size_t nz, size_t d, double *out,
                            size_t ldk)
{
    for (size_t i = 0; i < nx; i++) {
        const double *x = X + i * d;
        double *row = out + i * ldk;
        for (size_t j = 0; j < nz; j++) {
            const double *z = Z + j * d;
            double s = 0;
            for (size_t f = 0; f < d; f++)
                s += fabs(x[f] - z[f]);
            row[j] = -k->gamma * s;
        }
        km_vexp(row, nz);
    }
}

/* Combines a part's block into the composite's block. */
static void combine(km_kernel_type type, double w, int first, double *dst,
                    size_t lddst, const double *src, size_t nx, size_t nz)
{
    for (size_t i = 0; i < nx; i++) {
        double *a = dst + i * lddst;
        const double *b = src + i * nz;
        if (first)
            for (size_t j = 0; j < nz; j++)
                a[j] = type == KM_KERNEL_SUM ? w * b[j] : b[j];
        else if (type == KM_KERNEL_SUM)
            for (size_t j = 0; j < nz; j++)
                a[j] += w * b[j];
        else
            for (size_t j = 0; j < nz; j++)
                a[j] *= b[j];
    }
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
    if (k->type == KM_KERNEL_LAPLACIAN) {
        laplacian_block(k, X, nx, Z, nz, d, K, ldk);
        return KM_OK;
    }
    if (is_composite(k->type)) {
        double *tmp = malloc(nx * nz * sizeof *tmp);
        if (!tmp)
            return km_error_set(err, KM_ENOMEM,
                                "out of memory for a kernel block");
        for (int p = 0; p < k->n_parts; p++) {
            km_status st = cross(&k->parts[p], X, nx, xn, Z, nz, zn, d, tmp,
                                 nz, diag_offset, err);
            if (st != KM_OK) {
                free(tmp);
                return st;
            }
            combine(k->type, k->weights ? k->weights[p] : 1.0, p == 0, K, ldk,
                    tmp, nx, nz);
        }
        free(tmp);
        return KM_OK;
    }
    if (nx == 1) /* one row: see km_vdot_rows */
        km_vdot_rows(X, Z, nz, d, K);
    else
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)nx, (int)nz,
                    (int)d, 1.0, X, (int)d, Z, (int)d, 0.0, K, (int)ldk);
    for (size_t i = 0; i < nx; i++)
        map_row(k, K + i * ldk, nz, xn ? xn[i] : 0, zn,
                diag_offset >= 0 ? (long)i + diag_offset : -1);
    return KM_OK;
}

/* Whether a kernel (or a part of it) needs squared norms. */
static int needs_norms(const km_kernel *k)
{
    if (k->type == KM_KERNEL_RBF)
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
    if (k->type == KM_KERNEL_LAPLACIAN || is_composite(k->type)) {
        /* Row blocks against the rows up to the block's end: the lower
         * triangle and a little of the upper, in bounded memory. */
        for (size_t i0 = 0; i0 < n && st == KM_OK; i0 += BLOCK_ROWS) {
            size_t b = n - i0 < BLOCK_ROWS ? n - i0 : BLOCK_ROWS;
            st = cross(k, X + i0 * d, b, xn ? xn + i0 : NULL, X, i0 + b, xn,
                       d, K + i0 * n, n, (long)i0, err);
        }
    } else {
        cblas_dsyrk(CblasRowMajor, CblasLower, CblasNoTrans, (int)n, (int)d,
                    1.0, X, (int)d, 0.0, K, (int)n);
        for (size_t i = 0; i < n; i++)
            map_row(k, K + i * n, i + 1, xn ? xn[i] : 0, xn, (long)i);
    }
    free(xn);
    if (st == KM_OK && full)
        mirror_lower(K, n);
    return st;
}

/* ------------------------------------------------------------ expansion */

km_status km_kernel_expand(const km_kernel *k, const double *S, size_t ns,
                           size_t d, const double *S_norms, const double *W,
                           size_t m, const double *bias, const double *X,
                           size_t n, double *out, km_error *err)
{
    if (n == 0)
        return KM_OK;
    if (!dims_ok(ns, m) || !dims_ok(n, d))
        return km_error_set(err, KM_EINVAL, "dimensions too large");
    /* Blocks of at most 8 MiB of kernel values (at least one row): small
     * enough that glibc serves them from the heap after the first call
     * instead of a fresh mmap, whose page faults cost more than the
     * arithmetic, and large enough for efficient GEMM. */
    size_t rows = ns ? (1u << 20) / ns : n;
    if (rows < 1) rows = 1;
    if (rows > n) rows = n;
    int norms = needs_norms(k), own = norms && !S_norms;
    double *Kb = malloc(rows * (ns ? ns : 1) * sizeof *Kb);
    double *buf = norms ? malloc(((own ? ns : 0) + rows + 1) * sizeof *buf)
                        : NULL;
    if (!Kb || (norms && !buf)) {
        free(Kb);
        free(buf);
        return km_error_set(err, KM_ENOMEM, "out of memory for prediction");
    }
    const double *sn = S_norms;
    double *xn = buf;
    if (own) {
        row_sqnorms(S, ns, d, buf);
        sn = buf;
        xn = buf + ns;
    }
    km_status st = KM_OK;
    for (size_t i0 = 0; i0 < n && st == KM_OK; i0 += rows) {
        size_t b = n - i0 < rows ? n - i0 : rows;
        if (xn)
            row_sqnorms(X + i0 * d, b, d, xn);
        st = cross(k, X + i0 * d, b, xn, S, ns, sn, d, Kb, ns, -1, err);
        if (st != KM_OK)
            break;
        double *o = out + i0 * m;
        if (m == 1 && b == 1) /* a dot product: in this thread */
            km_vdot_rows(W, Kb, 1, ns, o);
        else if (m == 1)
            cblas_dgemv(CblasRowMajor, CblasNoTrans, (int)b, (int)ns, 1.0, Kb,
                        (int)ns, W, 1, 0.0, o, 1);
        else
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)b,
                        (int)m, (int)ns, 1.0, Kb, (int)ns, W, (int)m, 0.0, o,
                        (int)m);
        if (bias)
            for (size_t i = 0; i < b; i++)
                for (size_t j = 0; j < m; j++)
                    o[i * m + j] += bias[j];
    }
    free(Kb);
    free(buf);
    return st;
}

/* ------------------------------------------------------------ file format */

void km_kernel_write(km_writer *w, const km_kernel *k)
{
    km_write_u32(w, (uint32_t)k->type);
    km_write_f64(w, k->gamma);
    km_write_f64(w, k->coef0);
    km_write_u32(w, (uint32_t)k->degree);
    km_write_u32(w, (uint32_t)k->n_parts);
    km_write_u32(w, k->weights != NULL);
    for (int i = 0; i < k->n_parts; i++)
        km_kernel_write(w, &k->parts[i]);
    if (k->weights)
        km_write_f64s(w, k->weights, (size_t)k->n_parts);
}

km_status km_kernel_read(km_reader *r, km_kernel *k, int depth, km_error *err)
{
    km_kernel_init(k, KM_KERNEL_LINEAR);
    k->type = (km_kernel_type)km_read_u32(r);
    k->gamma = km_read_f64(r);
    k->coef0 = km_read_f64(r);
    k->degree = (int)km_read_u32(r);
    uint32_t n_parts = km_read_u32(r);
    uint32_t has_weights = km_read_u32(r);
    if (r->failed || n_parts > KM_KERNEL_MAX_PARTS ||
        depth > KM_KERNEL_MAX_DEPTH || has_weights > 1 ||
        (has_weights && n_parts == 0))
        return km_error_set(err, KM_ECORRUPT, "model file: bad kernel");
    if (n_parts) {
        k->parts = calloc(n_parts, sizeof *k->parts);
        if (!k->parts)
            return km_error_set(err, KM_ENOMEM, "out of memory reading kernel");
        for (uint32_t i = 0; i < n_parts; i++) {
            k->n_parts = (int)i + 1;
            km_status st = km_kernel_read(r, &k->parts[i], depth + 1, err);
            if (st != KM_OK)
                return st;
        }
    }
    if (has_weights) {
        k->weights = km_read_f64s(r, n_parts);
        if (!k->weights)
            return km_error_set(err, r->failed ? KM_ECORRUPT : KM_ENOMEM,
                                "model file: bad kernel weights");
    }
    if (depth == 0 && km_kernel_check(k, err) != KM_OK) {
        char why[sizeof err->message];
        snprintf(why, sizeof why, "%s", err ? err->message : "");
        return km_error_set(err, KM_ECORRUPT, "model file: invalid kernel "
                            "(%s)", why);
    }
    /* A fit resolves every default gamma (0) to a number > 0. */
    if (!(k->gamma > 0))
        return km_error_set(err, KM_ECORRUPT, "model file: kernel gamma %g is "
                            "not resolved (a fitted kernel's gamma is > 0)",
                            k->gamma);
    return KM_OK;
}
