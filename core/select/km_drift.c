/*
 * km_drift.c - drift of a model's inputs by a kernel two-sample test: the
 * unbiased MMD^2 (Gretton et al., JMLR 2012), its permutation p-value on
 * one pooled Gram (permutations batched as quadratic forms through one
 * DSYMM), the median-heuristic rbf for a kernel that is not
 * characteristic, and km_drift, which tests a model's drift reference
 * against rows it was asked. km_select.h says what each computes.
 *
 * Thread-safety: reentrant.
 */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../base/km_base_internal.h"
#include "../model/km_model_internal.h"
#include "km_select_internal.h"

/* ------------------------------------------------------------ the Gram */

/* The pooled rows [X; Y] (N x d) and their full Gram K (N x N), both
 * malloc'd into *Z and *K. */
static km_status pooled_gram(const km_kernel *k, const double *X, size_t nx,
                             const double *Y, size_t ny, size_t d,
                             double **Zp, double **Kp, km_error *err)
{
    size_t N = nx + ny;
    if (nx < 2 || ny < 2)
        return km_error_set(err, KM_EINVAL, "the two-sample test needs at "
                            "least 2 rows in each sample (has %zu and %zu)",
                            nx, ny);
    double *Z = malloc(N * d * sizeof *Z), *K = malloc(N * N * sizeof *K);
    if (!Z || !K) {
        free(Z);
        free(K);
        return km_error_set(err, KM_ENOMEM, "out of memory for the "
                            "two-sample test's Gram (%zu rows)", N);
    }
    memcpy(Z, X, nx * d * sizeof *Z);
    memcpy(Z + nx * d, Y, ny * d * sizeof *Z);
    km_status st = km_gram_sym(k, Z, N, d, K, 1, err);
    if (st != KM_OK) {
        free(Z);
        free(K);
        return st;
    }
    *Zp = Z;
    *Kp = K;
    return KM_OK;
}

/* The unbiased MMD^2 of the first nx rows of K against the rest, from its
 * blocks (the sums in row order). */
static double mmd2_blocks(const double *K, size_t nx, size_t N)
{
    size_t ny = N - nx;
    double sxx = 0, syy = 0, sxy = 0;
    for (size_t i = 0; i < N; i++) {
        const double *row = K + i * N;
        for (size_t j = 0; j < N; j++) {
            if (i == j)
                continue;
            if (i < nx && j < nx)
                sxx += row[j];
            else if (i >= nx && j >= nx)
                syy += row[j];
            else if (i < nx)
                sxy += row[j];
        }
    }
    return sxx / ((double)nx * (double)(nx - 1)) +
           syy / ((double)ny * (double)(ny - 1)) -
           2.0 * sxy / ((double)nx * (double)ny);
}

km_status km_mmd2(const km_kernel *k, const double *X, size_t nx,
                  const double *Y, size_t ny, size_t d, double *out,
                  km_error *err)
{
    double *Z, *K;
    km_status st = pooled_gram(k, X, nx, Y, ny, d, &Z, &K, err);
    if (st != KM_OK)
        return st;
    *out = mmd2_blocks(K, nx, nx + ny);
    free(Z);
    free(K);
    return KM_OK;
}

/* ------------------------------------------------------------ permutations */

/* The statistic of indicator column c of U (N x nb, row-major) from the
 * same column of KU = K U: the quadratic forms of km_select.h. */
static double perm_stat(const double *U, const double *KU, size_t nb,
                        size_t c, const double *r, const double *dg,
                        size_t N, size_t nx, double T, double tr)
{
    double q = 0, s = 0, t = 0;
    for (size_t i = 0; i < N; i++) {
        double a = U[i * nb + c];
        if (a != 0.0) {
            q += KU[i * nb + c];
            s += r[i];
            t += dg[i];
        }
    }
    size_t ny = N - nx;
    double xx = q - t, yy = T - 2.0 * s + q - (tr - t), xy = s - q;
    return xx / ((double)nx * (double)(nx - 1)) +
           yy / ((double)ny * (double)(ny - 1)) -
           2.0 * xy / ((double)nx * (double)ny);
}

/* The scratch of a test: row sums r, diagonal dg, the index array p, the
 * indicators U and K U (N x KM_MMD_BATCH each). */
typedef struct perm_work {
    double *r, *dg, *U, *KU;
    size_t *p;
} perm_work;

static void perm_work_free(perm_work *w)
{
    free(w->r);
    free(w->dg);
    free(w->U);
    free(w->KU);
    free(w->p);
}

static int perm_work_alloc(perm_work *w, size_t N)
{
    memset(w, 0, sizeof *w);
    w->r = malloc(N * sizeof *w->r);
    w->dg = malloc(N * sizeof *w->dg);
    w->U = malloc(N * KM_MMD_BATCH * sizeof *w->U);
    w->KU = malloc(N * KM_MMD_BATCH * sizeof *w->KU);
    w->p = malloc(N * sizeof *w->p);
    return w->r && w->dg && w->U && w->KU && w->p ? 0 : -1;
}

/* Counts the permutations of B whose statistic reaches T_obs - tol. */
static km_status count_perms(const double *K, size_t N, size_t nx, size_t B,
                             uint64_t seed, const km_fit_control *ctl,
                             double t_obs, perm_work *w, size_t *count,
                             km_error *err)
{
    double T = 0, tr = 0, top = 0;
    for (size_t i = 0; i < N; i++) {
        double s = 0;
        for (size_t j = 0; j < N; j++)
            s += K[i * N + j];
        w->r[i] = s;
        w->dg[i] = K[i * N + i];
        T += s;
        tr += w->dg[i];
        top = fmax(top, fabs(w->dg[i]));
        w->p[i] = i;
    }
    double tol = 1e-12 * top;
    km_rng rng = {seed};
    size_t hits = 0;
    for (size_t b0 = 0; b0 < B; b0 += KM_MMD_BATCH) {
        size_t nb = B - b0 < KM_MMD_BATCH ? B - b0 : KM_MMD_BATCH;
        memset(w->U, 0, N * nb * sizeof *w->U);
        for (size_t c = 0; c < nb; c++) {
            for (size_t i = 0; i < nx; i++) {
                size_t j = i + km_rng_below(&rng, N - i), tmp = w->p[i];
                w->p[i] = w->p[j];
                w->p[j] = tmp;
            }
            for (size_t i = 0; i < nx; i++)
                w->U[w->p[i] * nb + c] = 1.0;
        }
        cblas_dsymm(CblasRowMajor, CblasLeft, CblasLower, (int)N, (int)nb,
                    1.0, K, (int)N, w->U, (int)nb, 0.0, w->KU, (int)nb);
        for (size_t c = 0; c < nb; c++)
            if (perm_stat(w->U, w->KU, nb, c, w->r, w->dg, N, nx, T, tr) >=
                t_obs - tol)
                hits++;
        if (ctl && ctl->progress &&
            ctl->progress(ctl->ctx, (double)(b0 + nb) / (double)B))
            return km_error_set(err, KM_ECANCELLED, "the two-sample test was "
                                "cancelled");
    }
    *count = hits;
    return KM_OK;
}

km_status km_mmd_test(const km_kernel *k, const double *X, size_t nx,
                      const double *Y, size_t ny, size_t d, size_t B,
                      uint64_t seed, const km_fit_control *ctl, double *mmd2,
                      double *p_value, km_error *err)
{
    if (B < 1 || B > KM_DRIFT_MAX_PERMUTATIONS)
        return km_error_set(err, KM_EINVAL, "permutations %zu is outside "
                            "1..%d", B, KM_DRIFT_MAX_PERMUTATIONS);
    double *Z, *K;
    km_status st = pooled_gram(k, X, nx, Y, ny, d, &Z, &K, err);
    if (st != KM_OK)
        return st;
    free(Z);
    size_t N = nx + ny, hits = 0;
    perm_work w;
    if (perm_work_alloc(&w, N) != 0)
        st = km_error_set(err, KM_ENOMEM, "out of memory for the "
                          "permutations (%zu rows)", N);
    double t = mmd2_blocks(K, nx, N);
    if (st == KM_OK)
        st = count_perms(K, N, nx, B, seed, ctl, t, &w, &hits, err);
    perm_work_free(&w);
    free(K);
    if (st != KM_OK)
        return st;
    *mmd2 = t;
    *p_value = (1.0 + (double)hits) / (1.0 + (double)B);
    return KM_OK;
}

size_t km_mmd_test_bytes(size_t nx, size_t ny, size_t d)
{
    uint64_t N = (uint64_t)nx + ny;
    uint64_t b = km_mul_sat(N, km_add_sat(d, N));
    b = km_add_sat(b, km_mul_sat(N, 2 * KM_MMD_BATCH + 3));
    b = km_mul_sat(b, sizeof(double));
    return b > SIZE_MAX ? SIZE_MAX : (size_t)b;
}

/* ------------------------------------------------------------ median */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of v[0 .. n) (sorted in place), numpy's convention. */
static double median_of(double *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double km_median_gamma(const double *X, size_t n, size_t d)
{
    if (n < 2)
        return 1.0;
    size_t pairs = n * (n - 1) / 2, m = 0;
    double *v = malloc(pairs * sizeof *v);
    if (!v)
        return 1.0;
    for (size_t i = 1; i < n; i++)
        for (size_t j = 0; j < i; j++) {
            double s = 0;
            for (size_t f = 0; f < d; f++) {
                double e = X[i * d + f] - X[j * d + f];
                s += e * e;
            }
            v[m++] = sqrt(s);
        }
    double med = median_of(v, pairs);
    if (!(med > 0)) { /* v is sorted: the positive ones are its tail */
        size_t z = 0;
        while (z < pairs && !(v[z] > 0))
            z++;
        med = z < pairs ? median_of(v + z, pairs - z) : 0;
    }
    free(v);
    return med > 0 && isfinite(1.0 / (2.0 * med * med))
               ? 1.0 / (2.0 * med * med) : 1.0;
}

/* ------------------------------------------------------------ a model */

/* The kernel the test uses for m, on the preprocessed reference R
 * (rows x d), into *k (initialised here; the caller cleans it up). */
static km_status drift_kernel(const km_model *m, const double *R,
                              size_t rows, km_kernel *k, km_drift_result *out,
                              km_error *err)
{
    const km_kernel *own = km_model_kernel(m);
    km_kernel_init(k, KM_KERNEL_RBF);
    if (km_kernel_characteristic(own)) {
        out->own_kernel = 1;
        out->kernel = own->type;
        out->gamma = 0;
        km_kernel_cleanup(k);
        return km_kernel_copy(k, own, err);
    }
    if (km_kernel_input(own) != KM_INPUT_VECTORS) {
        km_kernel_cleanup(k);
        km_kernel_init(k, KM_KERNEL_RBF);
        return km_error_set(err, KM_ECONFLICT, "kernel %s on strings is not "
                            "characteristic, and strings have no rbf to "
                            "test drift with", km_kernel_type_name(own->type));
    }
    k->gamma = km_median_gamma(R, rows, km_model_n_features(m));
    out->own_kernel = 0;
    out->kernel = KM_KERNEL_RBF;
    out->gamma = k->gamma;
    return KM_OK;
}

/* Rows X (n) of m through its preprocessing into a malloc'd copy. */
static km_status drift_rows(const km_model *m, const double *X, size_t n,
                            double **out, km_error *err)
{
    size_t d = km_model_n_features(m);
    double *C = malloc(n * d * sizeof *C);
    if (!C)
        return km_error_set(err, KM_ENOMEM, "out of memory for the drift "
                            "test's rows");
    const km_pre_stats *ps = km_model_pre(m);
    km_status st = KM_OK;
    if (ps->spec.x != KM_SCALE_NONE)
        st = km_pre_transform(ps, X, n, d, 0, C, err);
    else
        memcpy(C, X, n * d * sizeof *C);
    if (st != KM_OK) {
        free(C);
        return st;
    }
    *out = C;
    return KM_OK;
}

km_status km_drift(const km_model *m, const double *Y, size_t ny,
                   size_t permutations, uint64_t seed,
                   const km_fit_control *ctl, km_drift_result *out,
                   km_error *err)
{
    size_t rows, d = km_model_n_features(m);
    const double *ref = km_model_reference(m, &rows);
    memset(out, 0, sizeof *out);
    if (km_kernel_input(km_model_kernel(m)) == KM_INPUT_PRECOMPUTED)
        return km_error_set(err, KM_ECONFLICT, "a precomputed model's rows "
                            "are kernel values against its training rows: "
                            "there is no input sample to test for drift");
    if (!ref)
        return km_error_set(err, KM_ECONFLICT, "the model keeps no drift "
                            "reference (its file is older than format "
                            "version 8): refit it to get one");
    if (ny < 2)
        return km_error_set(err, KM_EINVAL, "the drift test needs at least 2 "
                            "recent rows (has %zu)", ny);
    km_status st = km_model_check_input(m, Y, ny, d, err);
    if (st != KM_OK)
        return st;
    double *R = NULL, *C = NULL;
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_RBF);
    if ((st = drift_rows(m, ref, rows, &R, err)) == KM_OK &&
        (st = drift_rows(m, Y, ny, &C, err)) == KM_OK &&
        (st = drift_kernel(m, R, rows, &k, out, err)) == KM_OK)
        st = km_mmd_test(&k, R, rows, C, ny, d, permutations, seed, ctl,
                         &out->mmd2, &out->p_value, err);
    km_kernel_cleanup(&k);
    free(R);
    free(C);
    if (st != KM_OK)
        return st;
    out->n_reference = rows;
    out->n_recent = ny;
    out->permutations = permutations;
    out->seed = seed;
    return KM_OK;
}

size_t km_drift_bytes(const km_model *m, size_t ny)
{
    size_t rows, d = km_model_n_features(m);
    (void)km_model_reference(m, &rows);
    uint64_t b = km_mmd_test_bytes(rows, ny, d);
    /* the preprocessed copies, and the median's distances */
    b = km_add_sat(b, km_mul_sat(km_mul_sat((uint64_t)rows + ny, d), 8));
    b = km_add_sat(b, km_mul_sat((uint64_t)rows * rows / 2, 8));
    b = km_add_sat(b, km_gram_work_bytes(km_model_kernel(m), rows + ny, rows + ny, d));
    return b > SIZE_MAX ? SIZE_MAX : (size_t)b;
}
