/*
 * km_kpca.c - kernel PCA: the top eigenpairs of the centered Gram matrix,
 * projection of new points, and the learned inverse map.
 *
 * The fit holds one n x n buffer, of which it only ever writes and reads
 * the lower triangle (row-major), which is also the column-major upper
 * triangle LAPACK and BLAS are handed: LAPACKE's row-major path would
 * transpose into a second n x n copy. The other half is never touched, so
 * its pages are never mapped and the resident peak is about half the
 * matrix. The training Gram matrix is centered in place in O(n^2)
 * (Kc = K - 1 m^T - m 1^T + g with m the column means, g their mean);
 * then one of three solvers finds the top n_components = k eigenpairs:
 *
 *   dense      LAPACK's tridiagonal reduction, the top k eigenvalues by
 *              index, their vectors by inverse iteration (solve_dense:
 *              not dsyevr, whose index range loses eigenvalues in a
 *              cluster); its own work space is O(n).
 *   iterative  restarted block Lanczos (block Krylov with full
 *              reorthogonalisation and Rayleigh-Ritz after each block),
 *              whose only use of Kc is DSYMM with a block of b ~ 2k
 *              vectors: each product reads the triangle once, so b vectors
 *              cost little more than one. Converged when every wanted Ritz
 *              pair has a residual |Kc v - theta v| <= 1e-12 |Kc|. If it
 *              has not converged within a budget of products, dense takes
 *              over on the same, untouched, buffer.
 *   randomized Halko, Martinsson and Tropp's range finder: a Gaussian
 *              sample of l = k + p columns, power iterations (DSYMM, then
 *              Householder QR), Rayleigh-Ritz on the l x l Q^T Kc Q by
 *              dsyevr after each, until the top k Ritz pairs meet a
 *              residual test (see RAND_* below); dense takes over when
 *              they do not within a cap. Only ever chosen explicitly.
 *
 * All leave the eigenvectors with the entry of largest magnitude positive
 * (scikit-learn's svd_flip), eigenvalues descending.
 *
 * With a dense engine (km_fit_control.dense, km.h: the MPI worker) and
 * the dense solver (or auto), the engine forms, centres and solves the
 * matrix elsewhere (ScaLAPACK's PDSYEVR), and the inverse map's system
 * goes to its solve: no n x n buffer here; the model is built from the
 * eigenpairs as below.
 *
 * Projection: with Kt the test kernel against the training rows and r its
 * row means, sklearn's centered product is
 *   (Kt - 1 m^T - r 1^T + g) A = Kt A - r s^T + (g s - m^T A),
 * with A = [alpha_j / sqrt(lambda_j)] (n x k) and s its column sums. So the
 * model keeps A with one more column of 1/n, and one km_kernel_expand pass
 * gives Kt A and r together; s and the bias g s - m^T A are derived once.
 *
 * Invariants of a model: k = n_outputs, 1 <= k < n_samples, eigenvalues
 * positive and descending; the inverse-map fields are set iff has_inverse.
 *
 * Thread-safety: reentrant; a fitted model is only read.
 */
#include <cblas.h>
#include <float.h>
#include <lapacke.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../km_internal.h"

/*
 * AUTO picks the iterative solver when n >= ITER_MIN_N and
 * k <= n / ITER_MAX_K_FRACTION. Measured on this project's machine (2
 * cores, OpenBLAS 0.3.21), rbf, d = 20, decaying feature scales, best of
 * 3 fits, seconds, dense / iterative:
 *   n =  500   k = 2: 0.008 / 0.008   k = 10: 0.010 / 0.021
 *   n = 1000   k = 2: 0.042 / 0.018   k = 10: 0.084 / 0.053
 *              k = 20: 0.086 / 0.094
 *   n = 2000   k = 10: 0.37 / 0.082   k = 40: 0.67 / 0.71
 *              k = 50: 0.41 / 1.07
 *   n = 3000   k = 10: 1.7 / 0.19     k = 60: 2.9 / 1.1
 *   n = 8000   k = 10: 33 (scikit-learn's, the same dsyevr) / 0.89
 * Dense costs O(n^3) whatever k; iterative about 8 passes over Kc plus
 * Rayleigh-Ritz steps of O(n (k ITER_DEPTH)^2), which dominate once k is
 * a sizeable share of n.
 */
#define ITER_MIN_N 1000
#define ITER_MAX_K_FRACTION 50

/* Residual tolerance relative to |Kc| (its largest Ritz value in
 * magnitude). */
#define ITER_TOL 1e-12
/* Krylov blocks per restart cycle. */
#define ITER_DEPTH 6
/* Budget of block products before dense takes over: n / 20, about what
 * dense would have cost (a product at n = 8000 takes 70 ms, dense 30 s). */
#define ITER_PRODUCTS_PER_N 20
#define ITER_MIN_PRODUCTS 50

/*
 * The randomized solver (Halko, Martinsson and Tropp 2011, algorithms 4.4
 * and 5.3, with the symmetric Kc): a sample of l = k + p columns (p =
 * max(k, RAND_MIN_OVERSAMPLE), l rounded up to a multiple of 8, at most
 * n; GEMM cost is flat in l up to about 32), Gaussian from core's PRNG
 * with the fixed seed RAND_SEED, so fits are repeatable. The number of
 * power iterations q is not fixed: how many the stated accuracy needs
 * depends on the spectrum's decay past k (measured on the first 600 or
 * all 1797 rows of digits, rbf, k 8 to 10, l = 24, the top eigenvalues
 * reach 1e-6 relative after q = 5 at gamma 0.02 but q = 9 at gamma 0.1).
 * After each product the top k Ritz pairs are tested as the iterative
 * solver's are, by their residual |Kc u - theta u| <= RAND_TOL |Kc| (from
 * the products already made: no extra pass), and the iterations stop
 * there. The residual bounds the eigenvector's error by RAND_TOL over the
 * relative gap and the eigenvalue's by its square over the gap: RAND_TOL
 * is the iterative solver's 1e-12, so eigenvalues come out at rounding
 * level and vectors within 1e-6 for relative gaps down to 1e-6 (1e-10
 * was measured too loose for the 1e-8 agreement with scikit-learn's
 * projections the other solvers meet: 1.6e-8 on digits). After
 * RAND_MAX_POWER power iterations without convergence dense takes over,
 * on the untouched Kc. Power iteration finds the largest eigenvalues in
 * magnitude: for an indefinite Kc (sigmoid) whose negative eigenvalues
 * outweigh the wanted positive ones it may miss some; use dense or
 * iterative there.
 */
#define RAND_MIN_OVERSAMPLE 10
#define RAND_TOL 1e-12
#define RAND_MAX_POWER 100
#define RAND_SEED 0x6b6d7365u /* "kmse" */

#define SQRT_HALF 0.70710678118654752

/* sklearn's _check_psd_eigenvalues: below this share of the largest an
 * eigenvalue is zero. */
#define SMALL_POS_RATIO 1e-12

/* Two forms of the model: the dual (dense, iterative, randomized: the
 * training rows and sklearn's centring) and nystrom (the centres, W and
 * the features' mean; see kpca_fit_nystrom). One payload struct: in the
 * nystrom form X is the m centres, proj W with its 1/m column, col_mean
 * the mean mu of the rows of K_nm, grand_mean 0, sum_proj 0 and bias
 * -mu^T W, so that km_kpca_project computes k(x, Z) W - mu^T W. */
enum { KPCA_FORM_DUAL = 0, KPCA_FORM_NYSTROM = 1, KPCA_FORM_COUNT };

typedef struct kpca_payload {
    unsigned form;    /* KPCA_FORM_* */
    size_t n, d, k;   /* as the model's n_samples, n_features, n_outputs */
    double *X;        /* n x d training rows */
    double *eigval;   /* k eigenvalues, descending */
    double *proj;     /* n x (k + 1): alpha_j / sqrt(lambda_j), then 1/n */
    double *col_mean; /* n training column means of K */
    double grand_mean;
    double *sum_proj; /* k column sums s_j of proj (derived) */
    double *bias;     /* k: g s_j - m^T proj_j (derived) */
    int has_inverse;
    km_kernel inv_kernel; /* the inverse map's kernel (gamma resolved on k) */
    double *embed;        /* n x k training embedding */
    double *dual;         /* n x d dual coefficients of the inverse map */
    double *xn;           /* n squared norms of X's rows (derived) */
} kpca_payload;

KM_CHOICES_DEFINE(km_kpca_solver_choices, KM_KPCA_SOLVER_MAP,
                  KM_KPCA_SOLVER_COUNT);

/* The nystrom solver's m. */
static size_t nys_centres(const km_kpca_params *p, size_t n)
{
    if (p->n_centres)
        return p->n_centres;
    return n < KM_KRR_DEFAULT_CENTRES ? n : KM_KRR_DEFAULT_CENTRES;
}


km_kpca_params km_kpca_params_default(void)
{
    km_kpca_params p = {1, 0, 1.0, KM_KPCA_SOLVER_AUTO};
    return p;
}

const char *km_kpca_solver_name(km_kpca_solver s)
{
    return km_choice_name(&km_kpca_solver_choices, (int)s);
}

km_status km_kpca_check(const km_kpca_params *p, size_t n_samples,
                        km_error *err)
{
    /* The one place of the rule (API.md): below 1 the parameter is
     * invalid (400); above n_samples it is valid but these data cannot
     * give that many components (422). */
    if (p->n_components < 1)
        return km_error_set(err, KM_EINVAL,
                            "params.n_components must be an integer >= 1");
    if (p->n_components > n_samples)
        return km_error_set(err, KM_EPROBLEM,
                            "params.n_components (%zu) is above n_samples "
                            "(%zu): X has too few rows for that many "
                            "components", p->n_components, n_samples);
    if (!(p->alpha > 0) || !isfinite(p->alpha))
        return km_error_set(err, KM_EINVAL,
                            "params.alpha must be a finite number > 0");
    if ((unsigned)p->solver >= KM_KPCA_SOLVER_COUNT) {
        char list[64];
        km_choice_list(&km_kpca_solver_choices, " or ", list, sizeof list);
        return km_error_set(err, KM_EINVAL, "params.solver must be %s", list);
    }
    if (p->solver != KM_KPCA_SOLVER_NYSTROM)
        return KM_OK;
    if (p->seed > ((uint64_t)1 << 53))
        return km_error_set(err, KM_EINVAL,
                            "params.seed must be at most 2^53");
    if (p->fit_inverse_transform)
        return km_error_set(err, KM_EINVAL, "params.fit_inverse_transform "
                            "is not available with eigen_solver nystrom (the "
                            "inverse map is a kernel ridge regression on all "
                            "n rows); use dense, iterative or randomized");
    km_status st = km_nys_check_centres(p->n_centres, n_samples, err);
    if (st != KM_OK)
        return st;
    size_t m = nys_centres(p, n_samples);
    if (p->n_components >= m)
        return km_error_set(err, KM_EPROBLEM, "params.n_components (%zu) "
                            "must be below the number of centres (%zu) with "
                            "eigen_solver nystrom", p->n_components, m);
    return KM_OK;
}

/* Block size of the iterative solver: some room beyond k so that the
 * wanted eigenvalues are separated from the first unwanted one, rounded
 * up to a multiple of 8 (GEMM cost is flat in b up to about 32 columns:
 * the n x n read dominates). */
static size_t iter_block(size_t k)
{
    size_t b = k + (k > 8 ? k : 8);
    return (b + 7) / 8 * 8;
}

/* Columns of the randomized solver's sample: k plus an oversampling of
 * max(k, RAND_MIN_OVERSAMPLE), rounded up to a multiple of 8, at most n. */
static size_t rand_width(size_t k, size_t n)
{
    size_t l = k + (k > RAND_MIN_OVERSAMPLE ? k : RAND_MIN_OVERSAMPLE);
    l = (l + 7) / 8 * 8;
    return l < n ? l : n;
}

static int use_iterative(size_t n, size_t k, km_kpca_solver s)
{
    if (s == KM_KPCA_SOLVER_DENSE || s == KM_KPCA_SOLVER_RANDOMIZED)
        return 0;
    /* The Krylov basis must fit well inside the space. */
    if (ITER_DEPTH * iter_block(k) * 2 > n)
        return 0;
    if (s == KM_KPCA_SOLVER_ITERATIVE)
        return 1;
    return n >= ITER_MIN_N && k <= n / ITER_MAX_K_FRACTION;
}

/* The nystrom solver (kpca_fit_nystrom): the draw's n indices; T and
 * the covariance (2 m^2); a block of K_nm and of its projections; the
 * centres, their norms, mu; solve_dense's work (m + 36 m) and vectors
 * (m k);
 * the model's centres, W, mu, norms. */
static size_t nystrom_fit_bytes(size_t n, size_t d, const km_kpca_params *p)
{
    size_t k = p->n_components, m = nys_centres(p, n);
    size_t b = km_nys_block_rows(n, m);
    if (m > ((size_t)1 << 26) || k > m)
        return SIZE_MAX;
    size_t v = n + 2 * m * m + b * (m + k) + 2 * m * (d + 1) + 37 * m +
               m * k + m * (k + 1) + 2 * m + 2 * k;
    return v * 8;
}

size_t km_kpca_fit_bytes(size_t n, size_t d, const km_kpca_params *p)
{
    size_t k = p->n_components, b = iter_block(k);
    size_t m = ITER_DEPTH * b;
    if (n > ((size_t)1 << 26) || d > ((size_t)1 << 26) || k > n)
        return SIZE_MAX; /* far beyond any budget; avoids overflow */
    if (p->solver == KM_KPCA_SOLVER_NYSTROM)
        return nystrom_fit_bytes(n, d, p);
    /* The Gram buffer, the kept X, proj and means; the solver's work: for
     * dense the eigenvalues, vectors and solve_dense's 36n work space, for
     * iterative the basis, its product, the Ritz block and its product. */
    size_t bytes = n * n * 8 + n * d * 8 + n * (k + 1) * 8 + 2 * n * 8;
    size_t dense = n * 8 + n * k * 8 + 36 * n * 8;
    size_t iter = (2 * n * m + 2 * n * b + 2 * m * m) * 8;
    size_t l = rand_width(k, n); /* randomized: Q, Kc Q, the residuals */
    size_t rnd = (2 * n * l + n * k + 2 * l * l + 2 * l) * 8;
    size_t work = dense > iter ? dense : iter;
    bytes += (work > rnd ? work : rnd) + n * k * 8;
    if (p->fit_inverse_transform) /* embedding, dual, right-hand side */
        bytes += n * k * 8 + 2 * n * d * 8;
    return bytes;
}

/* ------------------------------------------------------------ payload */

static void kpca_free(void *payload)
{
    kpca_payload *p = payload;
    if (!p)
        return;
    free(p->X);
    free(p->eigval);
    free(p->proj);
    free(p->col_mean);
    free(p->sum_proj);
    free(p->bias);
    km_kernel_cleanup(&p->inv_kernel);
    free(p->embed);
    free(p->dual);
    free(p->xn);
    free(p);
}

static kpca_payload *payload_new(void)
{
    kpca_payload *p = calloc(1, sizeof *p);
    if (p)
        km_kernel_init(&p->inv_kernel, KM_KERNEL_LINEAR);
    return p;
}

/* s_j and the bias from proj, col_mean and grand_mean; the norms of X's
 * rows. -1 when out of memory. */
static int derive(kpca_payload *p, size_t n, size_t k)
{
    free(p->xn);
    if (!(p->xn = km_sqnorms(p->X, n, p->d)))
        return -1;
    for (size_t j = 0; j < k; j++) {
        double s = 0, c = 0;
        for (size_t i = 0; i < n; i++) {
            s += p->proj[i * (k + 1) + j];
            c += p->col_mean[i] * p->proj[i * (k + 1) + j];
        }
        if (p->form == KPCA_FORM_NYSTROM) { /* k(x, Z) W - mu^T W */
            p->sum_proj[j] = 0;
            p->bias[j] = -c;
            continue;
        }
        p->sum_proj[j] = s;
        p->bias[j] = p->grand_mean * s - c;
    }
    return 0;
}

/* The format version a model needs: 5 for the nystrom form (its payload
 * starts with the form), else the default. */
static uint32_t kpca_file_format(const void *payload)
{
    return ((const kpca_payload *)payload)->form == KPCA_FORM_NYSTROM ? 5 : 0;
}

/*
 * Payload format: (version 5: u32 form) f64s eigval (k); f64s proj
 * without its 1/n column (n x k); f64s col_mean (n); f64 grand_mean;
 * f64s X (n x d); u32 has_inverse; then, if set: kernel, f64s embed
 * (n x k), f64s dual. The nystrom form has the same fields (X the
 * centres, proj W, col_mean mu, grand_mean 0) and no inverse map.
 */
static void kpca_save(const void *payload, const km_model *m, km_writer *w)
{
    const kpca_payload *p = payload;
    size_t n = km_model_n_samples(m), k = km_model_n_outputs(m);
    size_t d = km_model_n_features(m);
    if (p->form == KPCA_FORM_NYSTROM)
        km_write_u32(w, KPCA_FORM_NYSTROM);
    km_write_f64s(w, p->eigval, k);
    km_write_u64(w, n * k); /* the count km_read_f64s expects */
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < k; j++)
            km_write_f64(w, p->proj[i * (k + 1) + j]);
    km_write_f64s(w, p->col_mean, n);
    km_write_f64(w, p->grand_mean);
    km_write_f64s(w, p->X, n * d);
    km_write_u32(w, (uint32_t)p->has_inverse);
    if (p->has_inverse) {
        km_kernel_write(w, &p->inv_kernel);
        km_write_f64s(w, p->embed, n * k);
        km_write_f64s(w, p->dual, n * d);
    }
}

static km_status kpca_load(km_reader *r, const km_model *m, void **payload,
                           km_error *err)
{
    size_t n = km_model_n_samples(m), k = km_model_n_outputs(m);
    size_t d = km_model_n_features(m);
    km_status st = KM_OK;
    if (k < 1 || k >= n || !km_mul3(n, k + 1, 8) || !km_mul3(n, d, 8))
        return km_error_set(err, KM_ECORRUPT,
                            "model file: bad kernel PCA dimensions");
    kpca_payload *p = payload_new();
    if (!p)
        return km_error_set(err, KM_ENOMEM, "out of memory reading a model");
    p->n = n;
    p->d = d;
    p->k = k;
    if (km_model_file_format(m) >= 5) { /* the payload starts with its form */
        uint32_t f = km_read_u32(r);
        if (r->failed || f >= KPCA_FORM_COUNT) {
            st = km_error_set(err, KM_ECORRUPT, "model file: kernel PCA "
                              "payload form %u is not 0 (dual) or 1 "
                              "(nystrom)", (unsigned)f);
            goto out;
        }
        p->form = f;
    }
    p->eigval = km_read_f64s(r, k);
    /* proj without its 1/n column, read straight into its rows (no
     * flat copy beside them) */
    p->proj = p->eigval ? malloc(n * (k + 1) * sizeof *p->proj) : NULL;
    if (p->proj && km_read_count(r, 8) != n * k)
        r->failed = 1;
    for (size_t i = 0; p->proj && !r->failed && i < n; i++) {
        for (size_t j = 0; j < k; j++)
            p->proj[i * (k + 1) + j] = km_read_f64(r);
        p->proj[i * (k + 1) + k] = 1.0 / (double)n;
    }
    p->col_mean = p->proj && !r->failed ? km_read_f64s(r, n) : NULL;
    p->grand_mean = km_read_f64(r);
    p->X = p->col_mean ? km_read_f64s(r, n * d) : NULL;
    uint32_t has_inverse = km_read_u32(r);
    if (!p->X || has_inverse > 1) {
        st = km_error_set(err, r->failed || has_inverse > 1 ? KM_ECORRUPT
                                                            : KM_ENOMEM,
                          "model file: bad kernel PCA payload");
        goto out;
    }
    for (size_t j = 0; j < k; j++)
        if (!(p->eigval[j] > 0) || !isfinite(p->eigval[j]) ||
            (j > 0 && p->eigval[j] > p->eigval[j - 1])) {
            st = km_error_set(err, KM_ECORRUPT,
                              "model file: bad kernel PCA eigenvalues");
            goto out;
        }
    /* What a projection computes with must be finite, as a fit makes it. */
    if (!km_all_finite(p->proj, n * (k + 1)) ||
        !km_all_finite(p->col_mean, n) ||
        !isfinite(p->grand_mean) || !km_all_finite(p->X, n * d)) {
        st = km_error_set(err, KM_ECORRUPT, "model file: kernel PCA "
                          "projections, means or training rows are not all "
                          "finite numbers");
        goto out;
    }
    if (has_inverse && p->form == KPCA_FORM_NYSTROM) {
        st = km_error_set(err, KM_ECORRUPT, "model file: a kernel PCA model "
                          "of the nystrom form has no inverse map");
        goto out;
    }
    if (has_inverse) {
        p->has_inverse = 1;
        if ((st = km_kernel_read(r, &p->inv_kernel, 0, err)) != KM_OK)
            goto out;
        p->embed = km_read_f64s(r, n * k);
        p->dual = p->embed ? km_read_f64s(r, n * d) : NULL;
        if (!p->dual) {
            st = km_error_set(err, r->failed ? KM_ECORRUPT : KM_ENOMEM,
                              "model file: bad kernel PCA inverse map");
            goto out;
        }
        if (!km_all_finite(p->embed, n * k) || !km_all_finite(p->dual, n * d)) {
            st = km_error_set(err, KM_ECORRUPT, "model file: kernel PCA "
                              "inverse map is not all finite numbers");
            goto out;
        }
    }
    p->sum_proj = malloc(k * sizeof *p->sum_proj);
    p->bias = malloc(k * sizeof *p->bias);
    if (!p->sum_proj || !p->bias) {
        st = km_error_set(err, KM_ENOMEM, "out of memory reading a model");
        goto out;
    }
    if (derive(p, n, k) != 0) {
        st = km_error_set(err, KM_ENOMEM, "out of memory reading a model");
        goto out;
    }
    *payload = p;
    p = NULL;
out:
    kpca_free(p);
    return st;
}

/* The heap of a payload of n rows, d features, k components, with the
 * inverse map or not: X, eigval, proj, col_mean, sum_proj, bias, the
 * norms, and the map's embedding and dual coefficients. */
static size_t heap_bytes(uint64_t n, uint64_t d, uint64_t k, int inverse)
{
    uint64_t nd = km_mul_sat(n, d), nk = km_mul_sat(n, k);
    uint64_t v = km_add_sat(nd, km_add_sat(km_mul_sat(n, k + 1),
                                           km_add_sat(2 * n, 3 * k)));
    if (inverse)
        v = km_add_sat(v, km_add_sat(nk, nd));
    return (size_t)km_add_sat(sizeof(kpca_payload), km_mul_sat(v, 8));
}

static size_t kpca_bytes(const void *payload, const km_model *m)
{
    (void)m; /* the payload keeps its own sizes */
    const kpca_payload *p = payload;
    return heap_bytes(p->n, p->d, p->k, p->has_inverse);
}

/* The inverse map's flag, after the form, eigval, proj, col_mean,
 * grand_mean and X. */
static void kpca_load_bytes(km_reader r, const km_model *m, size_t *kept,
                            size_t *peak)
{
    if (km_model_file_format(m) >= 5)
        km_read_u32(&r); /* the form */
    for (int i = 0; i < 3; i++)
        km_skip_array(&r, 8); /* eigval, proj, col_mean */
    km_read_f64(&r);
    km_skip_array(&r, 8); /* X */
    *kept = *peak = heap_bytes(km_model_n_samples(m), km_model_n_features(m),
                               km_model_n_outputs(m), km_read_u32(&r) != 0);
}


/* ------------------------------------------------------------ centering */

/*
 * Centers the symmetric K (n x n, lower triangle of the row-major buffer)
 * in place; col_mean gets the column means, *grand their mean, *trace the
 * trace of the centered matrix. Two passes over the triangle: the column
 * sums (each stored entry counts for its row and its column), then the
 * update.
 */
static void center(double *K, size_t n, double *col_mean, double *grand,
                   double *trace)
{
    double g = 0, tr = 0;
    memset(col_mean, 0, n * sizeof *col_mean);
    for (size_t i = 0; i < n; i++) {
        const double *row = K + i * n;
        double s = 0;
        for (size_t j = 0; j < i; j++) {
            s += row[j];
            col_mean[j] += row[j];
        }
        col_mean[i] += s + row[i];
    }
    for (size_t i = 0; i < n; i++) {
        col_mean[i] /= (double)n;
        g += col_mean[i];
    }
    g /= (double)n;
    for (size_t i = 0; i < n; i++) {
        double *row = K + i * n;
        const double a = g - col_mean[i];
        for (size_t j = 0; j <= i; j++)
            row[j] += a - col_mean[j];
        tr += row[i];
    }
    *grand = g;
    *trace = tr;
}

/* ------------------------------------------------------------ solvers */

/*
 * Dense: the top k eigenpairs; lambda descending, U (n x k, column-major:
 * vector j is contiguous) in the same order. Destroys K.
 *
 * Not dsyevr with an index range. For a subset of the eigenpairs dsyevr
 * calls dstebz, which turns the index range n - k + 1 .. n into a value
 * interval by bisection on the whole tridiagonal T, then keeps, block by
 * block of T's splitting, the eigenvalues that fall inside it. When the
 * k-th eigenvalue lies in a cluster equal to rounding (rbf with a large
 * gamma on spread-out rows: Kc is close to I - 1/n, n - 1 eigenvalues at
 * 1, and T splits into many blocks), the blocks' counts at the interval's
 * ends disagree with the whole's and it keeps fewer than k; dsyevr then
 * loses dstebz's error code (its dstein call overwrites info) and answers
 * info 0 with fewer found (LAPACK 3.11, measured: 32 of 50 at n = 1000,
 * 12 of 100 at n = 2000). So here the same steps, with the selection by
 * index made exact:
 *   dsytrd  T = Q^T K Q, the reflectors in the stored triangle;
 *           T splits where an off-diagonal is negligible (dstebz's rule);
 *   dsterf  every block's eigenvalues (O(n^2) in all, against dsytrd's
 *           4/3 n^3);
 *   sort    the k largest: exactly k, whatever the clusters (values tied
 *           at the k-th are equal to rounding, any of them will do);
 *   dstein  their eigenvectors of T by inverse iteration, reorthogonalised
 *           within clusters (dsyevr's own step for a subset);
 *   dormtr  U = Q Z.
 * K is scaled first when its largest entry lies outside [rmin, rmax], as
 * dsyevr does, so that no step overflows or underflows. Work space beyond
 * U, at most 36 n doubles (as dsyevr's): d, e and tau with dsytrd's nb n
 * (nb = 32), then about 13 n for dsterf and dstein, then dormtr's nb k.
 */
typedef struct eig_entry {
    double value;
    lapack_int block; /* 1-based, as dstein's iblock */
    lapack_int row;   /* index in T: makes the orders total */
} eig_entry;

static int by_value_desc(const void *a, const void *b)
{
    const eig_entry *x = a, *y = b;
    if (x->value != y->value)
        return x->value > y->value ? -1 : 1;
    return (x->row > y->row) - (x->row < y->row);
}

/* dstein's order: by block, ascending within a block. */
static int by_block_asc(const void *a, const void *b)
{
    const eig_entry *x = a, *y = b;
    if (x->block != y->block)
        return x->block < y->block ? -1 : 1;
    if (x->value != y->value)
        return x->value < y->value ? -1 : 1;
    return (x->row > y->row) - (x->row < y->row);
}

static km_status lapack_failed(const char *what, lapack_int info,
                               km_error *err)
{
    if (info == LAPACK_WORK_MEMORY_ERROR)
        return km_error_set(err, KM_ENOMEM,
                            "out of memory for the eigensolver");
    if (info > 0) /* an iteration that did not converge */
        return km_error_set(err, KM_ENOCONV, "the dense eigensolver did "
                            "not converge (%s, info %d)", what, (int)info);
    return km_error_set(err, KM_EINTERNAL, "%s failed (info %d)", what,
                        (int)info);
}

static km_status solve_dense(double *K, size_t n, size_t k, double *lambda,
                             double *U, km_error *err)
{
    km_status st = KM_OK;
    lapack_int info, ln = (lapack_int)n, lk = (lapack_int)k;
    double *d = malloc(n * sizeof *d), *e = malloc(n * sizeof *e);
    double *tau = malloc(n * sizeof *tau), *w = NULL, *work = NULL;
    eig_entry *all = NULL;
    lapack_int *isplit = NULL, *iblock = NULL, *iwork = NULL, *ifail = NULL;
    if (!d || !e || !tau) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for the eigensolver");
        goto out;
    }
    /* dsyevr's scaling bounds: rmin = sqrt(safmin / eps), rmax =
     * min(1 / rmin, safmin^-1/4). */
    const double rmin = sqrt(DBL_MIN / DBL_EPSILON);
    const double rmax = fmin(1.0 / rmin, 1.0 / sqrt(sqrt(DBL_MIN)));
    double anrm = 0, sigma = 1;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j <= i; j++)
            anrm = fmax(anrm, fabs(K[i * n + j]));
    if (anrm > 0 && anrm < rmin)
        sigma = rmin / anrm;
    else if (anrm > rmax)
        sigma = rmax / anrm;
    if (sigma != 1)
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j <= i; j++)
                K[i * n + j] *= sigma;

    /* Row-major lower triangle == column-major upper triangle. */
    info = LAPACKE_dsytrd(LAPACK_COL_MAJOR, 'U', ln, K, ln, d, e, tau);
    if (info != 0) {
        st = lapack_failed("dsytrd", info, err);
        goto out;
    }
    /* dstein's arrays (w and iblock of size n, as documented), after
     * dsytrd's work space is gone. */
    w = calloc(n, sizeof *w);
    work = malloc(5 * n * sizeof *work);
    all = malloc(n * sizeof *all);
    isplit = malloc(n * sizeof *isplit);
    iblock = calloc(n, sizeof *iblock);
    iwork = malloc(n * sizeof *iwork);
    ifail = malloc(k * sizeof *ifail);
    if (!w || !work || !all || !isplit || !iblock || !iwork || !ifail) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for the eigensolver");
        goto out;
    }
    /* The blocks [b0, b1) of T: it splits between j - 1 and j when
     * e_{j-1}^2 < ulp^2 |d_{j-1} d_j| + safmin. isplit gets each block's
     * last row (1-based), all every block's eigenvalues (dsterf on a copy
     * of the block, in dstein's work space). */
    double *bd = work, *be = work + n;
    size_t nsplit = 0;
    for (size_t b0 = 0; b0 < n;) {
        size_t b1 = b0 + 1;
        while (b1 < n && !(fabs(d[b1] * d[b1 - 1]) * DBL_EPSILON *
                                   DBL_EPSILON + DBL_MIN >
                           e[b1 - 1] * e[b1 - 1]))
            b1++;
        isplit[nsplit++] = (lapack_int)b1;
        memcpy(bd, d + b0, (b1 - b0) * sizeof *bd);
        memcpy(be, e + b0, (b1 - b0 - 1) * sizeof *be);
        info = LAPACKE_dsterf((lapack_int)(b1 - b0), bd, be);
        if (info != 0) {
            st = lapack_failed("dsterf", info, err);
            goto out;
        }
        for (size_t i = b0; i < b1; i++)
            all[i] = (eig_entry){bd[i - b0], (lapack_int)nsplit,
                                 (lapack_int)i};
        b0 = b1;
    }
    /* The k largest, in dstein's order. */
    qsort(all, n, sizeof *all, by_value_desc);
    qsort(all, k, sizeof *all, by_block_asc);
    for (size_t j = 0; j < k; j++) {
        w[j] = all[j].value;
        iblock[j] = all[j].block;
    }
    /* The _work forms: LAPACKE_dstein's NaN check reads n values of w,
     * LAPACKE_dormtr's the whole n x n of K, whose other triangle is never
     * written. */
    info = LAPACKE_dstein_work(LAPACK_COL_MAJOR, ln, d, e, lk, w, iblock,
                               isplit, U, ln, work, iwork, ifail);
    if (info != 0) {
        st = lapack_failed("dstein", info, err);
        goto out;
    }
    free(work); /* dormtr's work space in their place */
    free(all);
    free(iwork);
    free(iblock);
    free(isplit);
    all = NULL;
    iwork = iblock = isplit = NULL;
    double query = 0;
    info = LAPACKE_dormtr_work(LAPACK_COL_MAJOR, 'L', 'U', 'N', ln, lk, K, ln,
                               tau, U, ln, &query, -1);
    lapack_int lwork = query > 1 ? (lapack_int)query : 1;
    work = info == 0 ? malloc((size_t)lwork * sizeof *work) : NULL;
    if (info == 0 && !work)
        info = LAPACK_WORK_MEMORY_ERROR;
    if (info == 0)
        info = LAPACKE_dormtr_work(LAPACK_COL_MAJOR, 'L', 'U', 'N', ln, lk, K,
                                   ln, tau, U, ln, work, lwork);
    if (info != 0) {
        st = lapack_failed("dormtr", info, err);
        goto out;
    }
    /* Descending, vectors with their values (selection: at most k swaps),
     * unscaled. */
    for (size_t j = 0; j < k; j++) {
        size_t best = j;
        for (size_t i = j + 1; i < k; i++)
            if (w[i] > w[best])
                best = i;
        if (best != j) {
            double t = w[j];
            w[j] = w[best];
            w[best] = t;
            cblas_dswap((int)n, U + j * n, 1, U + best * n, 1);
        }
        lambda[j] = w[j] / sigma;
    }
out:
    free(ifail);
    free(iwork);
    free(iblock);
    free(isplit);
    free(all);
    free(work);
    free(w);
    free(tau);
    free(e);
    free(d);
    return st;
}

/* The work space of the iterative solver; all blocks column-major with
 * leading dimension n. */
typedef struct lanczos {
    const double *K;   /* the centered n x n matrix (lower triangle) */
    size_t n, k, b, m; /* sizes: wanted, block, basis (ITER_DEPTH b) */
    double *Q, *AQ;    /* n x m basis and K times it */
    double *Y, *AY;    /* n x b Ritz vectors and K times them */
    double *H;         /* m x m projected matrix Q^T K Q */
    double *E;         /* m x m eigenvectors of its leading part */
    double *theta;     /* m Ritz values, ascending */
    double *S;         /* m x b wanted eigenvectors of H, descending */
    double *C;         /* m x b projection coefficients */
    double *tau;       /* b Householder scalars */
    double *rdiag;     /* b |diagonal of R| of the last QR */
    km_rng g;            /* start and replacement vectors */
    double norm;             /* estimate of |Kc| from the Ritz values */
    size_t products, budget; /* K times a block: done, allowed */
} lanczos;

/* W (n x b) = K V: one pass over K's stored triangle (row-major lower ==
 * column-major upper). */
static void product(lanczos *L, const double *V, double *W)
{
    cblas_dsymm(CblasColMajor, CblasLeft, CblasUpper, (int)L->n, (int)L->b,
                1.0, L->K, (int)L->n, V, (int)L->n, 0.0, W, (int)L->n);
    L->products++;
}

/* W -= Q[:, :mq] (Q[:, :mq]^T W), classical Gram-Schmidt with GEMM. */
static void project_out(lanczos *L, size_t mq, double *W)
{
    if (mq == 0)
        return;
    int n = (int)L->n, b = (int)L->b;
    cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, (int)mq, b, n, 1.0,
                L->Q, n, W, n, 0.0, L->C, (int)mq);
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, n, b, (int)mq,
                -1.0, L->Q, n, L->C, (int)mq, 1.0, W, n);
}

/* Householder QR of W; W becomes the orthonormal factor, rdiag gets the
 * magnitudes of R's diagonal. */
static km_status qr(lanczos *L, double *W, km_error *err)
{
    int n = (int)L->n, b = (int)L->b;
    lapack_int info = LAPACKE_dgeqrf(LAPACK_COL_MAJOR, n, b, W, n, L->tau);
    if (info == 0) {
        for (int j = 0; j < b; j++)
            L->rdiag[j] = fabs(W[(size_t)j * L->n + (size_t)j]);
        info = LAPACKE_dorgqr(LAPACK_COL_MAJOR, n, b, b, W, n, L->tau);
    }
    if (info != 0)
        return info == LAPACK_WORK_MEMORY_ERROR
                   ? km_error_set(err, KM_ENOMEM,
                                  "out of memory for the eigensolver")
                   : km_error_set(err, KM_EINTERNAL, "QR failed (info %d)",
                                  (int)info);
    return KM_OK;
}

/*
 * Makes the block W (n x b) orthonormal and orthogonal to Q[:, :mq]:
 * Gram-Schmidt twice and QR, then Gram-Schmidt and QR once more, which
 * removes what cancellation in the first QR left along Q.
 *
 * A column may come out of the first QR as noise: the block was
 * (numerically) in the span so far, an invariant subspace was found. Noise
 * is as good a new direction as any, so nothing is discarded there; in
 * particular a tiny column is not noise but the residual of a nearly
 * converged vector, and the QR has already removed its direction from the
 * other columns, so dropping it would drop what they share (measured: it
 * stalls convergence at 1e-8). Only in the second pass, where the columns
 * are unit vectors, is a column that loses more than 1/sqrt(2) of its
 * norm to Q replaced by a random unit vector, and the pass repeated.
 */
static km_status orthonormalize(lanczos *L, size_t mq, double *W,
                                km_error *err)
{
    size_t n = L->n, b = L->b;
    km_status st;
    project_out(L, mq, W);
    project_out(L, mq, W);
    if ((st = qr(L, W, err)) != KM_OK)
        return st;
    for (int attempt = 0;; attempt++) {
        project_out(L, mq, W);
        if ((st = qr(L, W, err)) != KM_OK)
            return st;
        int junk = 0;
        for (size_t j = 0; j < b; j++)
            if (!(L->rdiag[j] > SQRT_HALF)) {
                double *w = W + j * n, s = 0;
                junk = 1;
                for (size_t i = 0; i < n; i++) {
                    w[i] = km_rng_uniform(&L->g);
                    s += w[i] * w[i];
                }
                cblas_dscal((int)n, 1.0 / sqrt(s), w, 1);
            }
        if (!junk)
            return KM_OK;
        if (attempt == 3)
            return km_error_set(err, KM_ENOCONV,
                                "the Krylov basis cannot be extended");
    }
}

/*
 * Rayleigh-Ritz on the basis Q[:, :cur]: H gains the columns of the block
 * that ends at cur (H is symmetric, so its rows too), its leading part is
 * diagonalised, and Y, AY get the b best Ritz vectors and their products
 * (as combinations of the stored products, without a pass over K).
 */
static km_status rayleigh_ritz(lanczos *L, size_t cur, km_error *err)
{
    size_t n = L->n, b = L->b, m = L->m;
    size_t j0 = cur - b;
    cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, (int)cur, (int)b,
                (int)n, 1.0, L->Q, (int)n, L->AQ + j0 * n, (int)n, 0.0,
                L->H + j0 * m, (int)m);
    /* The new columns' upper part is their rows too; within the new
     * diagonal block both halves are computed, and averaged. */
    for (size_t j = j0; j < cur; j++)
        for (size_t i = 0; i < j; i++) {
            double a = i < j0 ? L->H[j * m + i]
                              : 0.5 * (L->H[j * m + i] + L->H[i * m + j]);
            L->H[j * m + i] = L->H[i * m + j] = a;
        }
    for (size_t j = 0; j < cur; j++)
        memcpy(L->E + j * cur, L->H + j * m, cur * sizeof *L->E);
    lapack_int info = LAPACKE_dsyev(LAPACK_COL_MAJOR, 'V', 'U',
                                    (lapack_int)cur, L->E, (lapack_int)cur,
                                    L->theta);
    if (info != 0)
        return km_error_set(err, info == LAPACK_WORK_MEMORY_ERROR
                                     ? KM_ENOMEM
                                     : KM_EINTERNAL,
                            "dsyev failed (info %d)", (int)info);
    /* |Kc| >= the Ritz values at either end: the tolerance's scale. */
    L->norm = fmax(fabs(L->theta[0]), fabs(L->theta[cur - 1]));
    /* Descending; theta follows so that theta[j] belongs to Y[:, j]. */
    for (size_t j = 0; j < b; j++)
        memcpy(L->S + j * cur, L->E + (cur - 1 - j) * cur,
               cur * sizeof *L->S);
    for (size_t j = 0; j < b; j++)
        L->theta[j] = L->theta[cur - 1 - j];
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)b,
                (int)cur, 1.0, L->Q, (int)n, L->S, (int)cur, 0.0, L->Y,
                (int)n);
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)b,
                (int)cur, 1.0, L->AQ, (int)n, L->S, (int)cur, 0.0, L->AY,
                (int)n);
    return KM_OK;
}

/* The largest residual |K y_j - theta_j y_j| of the k wanted Ritz pairs. */
static double worst_residual(const lanczos *L)
{
    size_t n = L->n;
    double worst = 0;
    for (size_t j = 0; j < L->k; j++) {
        double t = L->theta[j], s = 0;
        const double *y = L->Y + j * n, *ay = L->AY + j * n;
        for (size_t i = 0; i < n; i++)
            s += (ay[i] - t * y[i]) * (ay[i] - t * y[i]);
        s = sqrt(s);
        worst = s > worst ? s : worst;
    }
    return worst;
}

/* Starts the basis over from Y, AY (orthonormal, and K times them). */
static void restart(lanczos *L)
{
    size_t n = L->n, b = L->b, m = L->m;
    memcpy(L->Q, L->Y, n * b * sizeof *L->Q);
    memcpy(L->AQ, L->AY, n * b * sizeof *L->AQ);
    cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, (int)b, (int)b,
                (int)n, 1.0, L->Q, (int)n, L->AQ, (int)n, 0.0, L->H, (int)m);
}

/*
 * The top k eigenpairs by restarted block Lanczos. The basis Q grows one
 * block at a time: K times the newest block, orthogonalised against all
 * before it, with its product stored in AQ. After each block, Rayleigh-Ritz
 * gives Ritz pairs and their residuals; when the basis is full it starts
 * over from the b best Ritz vectors Y, whose products K Y are known as
 * combinations of AQ, so a restart costs no pass over K.
 *
 * So AY is K Y up to the rounding of the combinations made since the last
 * true product: about restarts * m * eps |K|, which for DRIFT_CYCLES
 * restarts is far below the tolerance (4 * 160 * 1.1e-16 = 7e-14 against
 * 1e-12). The residual test is then a test on K itself; after more
 * restarts a converged result is confirmed with a fresh product first.
 * KM_ENOCONV when the budget of products runs out.
 */
#define DRIFT_CYCLES 4

static km_status solve_iterative(lanczos *L, const km_fit_control *ctl,
                                 double *lambda, double *U, km_error *err)
{
    size_t n = L->n, b = L->b, m = L->m, k = L->k, cur = b;
    km_status st;
    double res0 = 0, reached = 0.2;
    int drift = 0; /* restarts since AY was a true product */

    for (size_t i = 0; i < n * b; i++)
        L->Y[i] = km_rng_uniform(&L->g);
    if ((st = orthonormalize(L, 0, L->Y, err)) != KM_OK)
        return st;
    product(L, L->Y, L->AY);
    restart(L);

    for (;;) {
        double *W = L->Q + cur * n;
        memcpy(W, L->AQ + (cur - b) * n, n * b * sizeof *W);
        if ((st = orthonormalize(L, cur, W, err)) != KM_OK)
            return st;
        product(L, W, L->AQ + cur * n);
        cur += b;
        if ((st = rayleigh_ritz(L, cur, err)) != KM_OK)
            return st;

        double tol = ITER_TOL * L->norm;
        double worst = worst_residual(L);
        if (!(worst > tol) && drift > DRIFT_CYCLES) {
            product(L, L->Y, L->AY);
            drift = -1; /* the restart below makes it 0 */
            worst = worst_residual(L);
            cur = m; /* continue from the true products */
        }
        if (!(worst > tol)) {
            memcpy(lambda, L->theta, k * sizeof *lambda);
            memcpy(U, L->Y, n * k * sizeof *U);
            return KM_OK;
        }
        if (!isfinite(worst))
            return km_error_set(err, KM_EPROBLEM,
                                "the kernel matrix has values that are not "
                                "finite numbers");
        if (cur + b > m) {
            restart(L);
            cur = b;
            drift++;
        }
        /* Progress from 0.2 to 0.9 with the digits gained. */
        if (res0 == 0)
            res0 = worst;
        double f = 0.2 + 0.7 * log(res0 / worst) / log(res0 / tol + 1.0);
        reached = f > reached && f < 0.9 ? f : reached;
        if (km_progress(ctl, reached))
            return km_error_set(err, KM_ECANCELLED, "fit cancelled");
        if (L->products >= L->budget)
            return km_error_set(err, KM_ENOCONV,
                                "block Lanczos did not converge in %zu "
                                "products", L->products);
    }
}

static void lanczos_cleanup(lanczos *L)
{
    free(L->Q);
    free(L->AQ);
    free(L->Y);
    free(L->AY);
    free(L->H);
    free(L->E);
    free(L->theta);
    free(L->S);
    free(L->C);
    free(L->tau);
    free(L->rdiag);
}

static km_status lanczos_init(lanczos *L, const double *K, size_t n,
                              size_t k, km_error *err)
{
    memset(L, 0, sizeof *L);
    L->K = K;
    L->n = n;
    L->k = k;
    L->b = iter_block(k);
    L->m = ITER_DEPTH * L->b;
    L->budget = n / ITER_PRODUCTS_PER_N;
    if (L->budget < ITER_MIN_PRODUCTS)
        L->budget = ITER_MIN_PRODUCTS;
    L->g.s = 0; /* a fixed seed: fits are repeatable */
    size_t b = L->b, m = L->m;
    L->Q = malloc(n * m * sizeof *L->Q);
    L->AQ = malloc(n * m * sizeof *L->AQ);
    L->Y = malloc(n * b * sizeof *L->Y);
    L->AY = malloc(n * b * sizeof *L->AY);
    L->H = malloc(m * m * sizeof *L->H);
    L->E = malloc(m * m * sizeof *L->E);
    L->theta = malloc(m * sizeof *L->theta);
    L->S = malloc(m * b * sizeof *L->S);
    L->C = malloc(m * b * sizeof *L->C);
    L->tau = malloc(b * sizeof *L->tau);
    L->rdiag = malloc(b * sizeof *L->rdiag);
    if (!L->Q || !L->AQ || !L->Y || !L->AY || !L->H || !L->E || !L->theta ||
        !L->S || !L->C || !L->tau || !L->rdiag) {
        lanczos_cleanup(L);
        return km_error_set(err, KM_ENOMEM,
                            "out of memory for the eigensolver");
    }
    return KM_OK;
}

/* ------------------------------------------------------------ randomized */

/* A standard normal draw (Marsaglia's polar method on km_rng_uniform). */
static double rng_gauss(km_rng *g)
{
    double u, v, s;
    do {
        u = km_rng_uniform(g);
        v = km_rng_uniform(g);
        s = u * u + v * v;
    } while (s >= 1.0 || s == 0.0);
    return u * sqrt(-2.0 * log(s) / s);
}

/* W (n x l) = K V, one pass over the stored triangle. */
static void rand_product(const double *K, size_t n, size_t l, const double *V,
                         double *W, size_t *products)
{
    cblas_dsymm(CblasColMajor, CblasLeft, CblasUpper, (int)n, (int)l, 1.0, K,
                (int)n, V, (int)n, 0.0, W, (int)n);
    (*products)++;
}

/*
 * The top k eigenpairs of K (n x n, the centered Gram, only read) by the
 * randomized range finder with power iterations (see RAND_* above):
 *
 *   W = K Omega; repeat { Q = qr(W); W = K Q; B = Q^T W;
 *                         Ritz pairs (theta, S) of B, U = Q S;
 *                         stop when |W s_j - theta_j u_j| <= tol }
 *
 * lambda descending, U (n x k, column-major) as solve_dense's. *products
 * counts the passes over K (q power iterations take q + 2). KM_ENOCONV
 * after RAND_MAX_POWER power iterations; KM_ECANCELLED when ctl asks,
 * checked after each.
 */
static km_status solve_randomized(const double *K, size_t n, size_t k,
                                  const km_fit_control *ctl, double *lambda,
                                  double *U, size_t *products, km_error *err)
{
    size_t l = rand_width(k, n);
    km_status st = KM_OK;
    km_rng g = {RAND_SEED};
    double res0 = 0, reached = 0.2;
    double *Q = malloc(n * l * sizeof *Q), *W = malloc(n * l * sizeof *W);
    double *R = malloc(n * k * sizeof *R), *B = malloc(l * l * sizeof *B);
    double *Z = malloc(l * l * sizeof *Z), *theta = malloc(l * sizeof *theta);
    double *S = malloc(l * k * sizeof *S), *tau = malloc(l * sizeof *tau);
    lapack_int *isuppz = malloc(2 * l * sizeof *isuppz);
    if (!Q || !W || !R || !B || !Z || !theta || !S || !tau || !isuppz) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for the eigensolver");
        goto out;
    }
    for (size_t i = 0; i < n * l; i++)
        Q[i] = rng_gauss(&g);
    rand_product(K, n, l, Q, W, products);

    for (size_t power = 0;; power++) {
        /* Q = orth(W): Householder QR keeps Q orthonormal even when W is
         * rank-deficient (a kernel of rank below l). */
        memcpy(Q, W, n * l * sizeof *Q);
        lapack_int info = LAPACKE_dgeqrf(LAPACK_COL_MAJOR, (lapack_int)n,
                                         (lapack_int)l, Q, (lapack_int)n, tau);
        if (info == 0)
            info = LAPACKE_dorgqr(LAPACK_COL_MAJOR, (lapack_int)n,
                                  (lapack_int)l, (lapack_int)l, Q,
                                  (lapack_int)n, tau);
        if (info != 0) {
            st = info == LAPACK_WORK_MEMORY_ERROR
                     ? km_error_set(err, KM_ENOMEM,
                                    "out of memory for the eigensolver")
                     : km_error_set(err, KM_EINTERNAL, "QR failed (info %d)",
                                    (int)info);
            goto out;
        }
        rand_product(K, n, l, Q, W, products);
        /* B = Q^T K Q, symmetrised; all its l eigenpairs (ascending). */
        cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, (int)l, (int)l,
                    (int)n, 1.0, Q, (int)n, W, (int)n, 0.0, B, (int)l);
        for (size_t j = 0; j < l; j++)
            for (size_t i = 0; i < j; i++)
                B[j * l + i] = B[i * l + j] =
                    0.5 * (B[j * l + i] + B[i * l + j]);
        lapack_int found = 0;
        info = LAPACKE_dsyevr(LAPACK_COL_MAJOR, 'V', 'A', 'U', (lapack_int)l,
                              B, (lapack_int)l, 0.0, 0.0, 0, 0, 0.0, &found,
                              theta, Z, (lapack_int)l, isuppz);
        if (info != 0 || (size_t)found != l) {
            st = info == LAPACK_WORK_MEMORY_ERROR
                     ? km_error_set(err, KM_ENOMEM,
                                    "out of memory for the eigensolver")
                     : km_error_set(err, KM_EINTERNAL,
                                    "dsyevr failed (info %d)", (int)info);
            goto out;
        }
        /* |K| >= the Ritz values at either end: the tolerance's scale. */
        double norm = fmax(fabs(theta[0]), fabs(theta[l - 1]));
        /* The top k, descending: S (l x k), lambda; U = Q S, R = W S. */
        for (size_t j = 0; j < k; j++) {
            memcpy(S + j * l, Z + (l - 1 - j) * l, l * sizeof *S);
            lambda[j] = theta[l - 1 - j];
        }
        cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)k,
                    (int)l, 1.0, Q, (int)n, S, (int)l, 0.0, U, (int)n);
        cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)k,
                    (int)l, 1.0, W, (int)n, S, (int)l, 0.0, R, (int)n);
        double worst = 0;
        for (size_t j = 0; j < k; j++) {
            const double *u = U + j * n, *r = R + j * n;
            double s = 0;
            for (size_t i = 0; i < n; i++)
                s += (r[i] - lambda[j] * u[i]) * (r[i] - lambda[j] * u[i]);
            s = sqrt(s);
            worst = s > worst || isnan(s) ? s : worst;
        }
        double tol = RAND_TOL * norm;
        if (!isfinite(worst)) {
            st = km_error_set(err, KM_EPROBLEM, "the kernel matrix has values "
                              "that are not finite numbers");
            goto out;
        }
        if (!(worst > tol))
            goto out; /* converged: lambda and U are the result */
        /* Progress from 0.2 to 0.9 with the digits gained. */
        if (res0 == 0)
            res0 = worst;
        double f = 0.2 + 0.7 * log(res0 / worst) / log(res0 / tol + 1.0);
        reached = f > reached && f < 0.9 ? f : reached;
        if (km_progress(ctl, reached)) {
            st = km_error_set(err, KM_ECANCELLED, "fit cancelled");
            goto out;
        }
        if (power >= RAND_MAX_POWER) {
            st = km_error_set(err, KM_ENOCONV,
                              "the randomized range finder did not converge "
                              "in %d power iterations", RAND_MAX_POWER);
            goto out;
        }
    }
out:
    free(isuppz);
    free(tau);
    free(S);
    free(theta);
    free(Z);
    free(B);
    free(R);
    free(W);
    free(Q);
    return st;
}

/* Flips each column of U (n x k, column-major) so that its entry of
 * largest magnitude (the first, on ties) is positive. */
static void flip_signs(double *U, size_t n, size_t k)
{
    for (size_t j = 0; j < k; j++) {
        double *u = U + j * n;
        size_t best = 0;
        for (size_t i = 1; i < n; i++)
            if (fabs(u[i]) > fabs(u[best]))
                best = i;
        if (u[best] < 0)
            for (size_t i = 0; i < n; i++)
                u[i] = -u[i];
    }
}

/* ------------------------------------------------------------ inverse map */

/*
 * dual = (K(E, E) + alpha I)^-1 X by KRR's solve (km_krr_solve), in the
 * n x n buffer G that the eigensolver is done with, or by the dense
 * engine de when there is one (G NULL). E is n x k, X n x d; dual n x d
 * row-major.
 */
static km_status fit_inverse(const km_kernel *kinv, const double *E,
                             const double *X, size_t n, size_t k, size_t d,
                             double alpha, double *G, double *dual,
                             const km_dense_engine *de,
                             const km_fit_control *ctl, km_error *err)
{
    if (de) /* the same system, formed and solved by the engine */
        return de->solve(de->ctx, kinv, 1.0, E, n, k, alpha, X, d, dual, NULL,
                         ctl, 0.9, 0.95, err);
    km_status st = km_gram_sym(kinv, E, n, k, G, 0, err);
    if (st != KM_OK)
        return st;
    return km_krr_solve(G, n, alpha, X, d, dual,
                        "the inverse map's kernel matrix", NULL, 0, 0, err);
}

/* ------------------------------------------------------------ fit */

static km_status cancelled(km_error *err)
{
    return km_error_set(err, KM_ECANCELLED, "fit cancelled");
}

/* KM_EPROBLEM unless the top nc eigenvalues (descending) are positive:
 * above SMALL_POS_RATIO times the largest. */
static km_status check_positive(const double *lambda, size_t nc,
                                km_error *err)
{
    size_t positive = 0;
    while (positive < nc && lambda[positive] > 0 &&
           lambda[positive] > SMALL_POS_RATIO * lambda[0])
        positive++;
    if (positive < nc)
        return km_error_set(err, KM_EPROBLEM,
                            "the centered kernel matrix has only %zu "
                            "positive eigenvalues; params.n_components "
                            "(%zu) must not exceed that", positive, nc);
    return KM_OK;
}

/* The params and training figures of a fitted model (km.h). */
static km_status add_figures(km_model *model, const km_kpca_params *params,
                             const double *lambda, const double *ratio,
                             int solver, int fallback, size_t products,
                             km_error *err)
{
    size_t nc = params->n_components;
    km_info *pi = km_model_params_mut(model), *ti = km_model_training_mut(model);
    int bad = km_info_add1(pi, "n_components", KM_INFO_INTEGER, (double)nc) ||
              km_info_add1(pi, "fit_inverse_transform", KM_INFO_BOOLEAN,
                           params->fit_inverse_transform ? 1 : 0) ||
              km_info_add1(pi, "alpha", KM_INFO_NUMBER, params->alpha);
    if (!bad && solver == KM_KPCA_SOLVER_NYSTROM)
        bad = km_info_add1(pi, "eigen_solver", KM_INFO_INTEGER, solver) ||
              km_info_add1(pi, "n_centres", KM_INFO_INTEGER,
                           (double)km_model_n_samples(model)) ||
              km_info_add1(pi, "seed", KM_INFO_INTEGER, (double)params->seed);
    if (!bad)
        bad = km_info_add(ti, "eigenvalues", KM_INFO_NUMBER, 1, lambda, nc) ||
              km_info_add(ti, "explained_variance_ratio", KM_INFO_NUMBER, 1,
                          ratio, nc) ||
              km_info_add1(ti, "solver", KM_INFO_INTEGER, solver) ||
              km_info_add1(ti, "fallback", KM_INFO_BOOLEAN, fallback) ||
              km_info_add1(ti, "iterations", KM_INFO_INTEGER,
                           (double)products);
    return bad ? km_error_set(err, KM_ENOMEM, "out of memory for the model")
               : KM_OK;
}

/* The model of payload p (owned from here on, also on failure) with its
 * figures, into *out; progress 1. */
static km_status finish(km_fit_frame *fr, size_t d, size_t ns,
                        const km_kpca_params *params, kpca_payload *p,
                        const double *lambda, const double *ratio, int solver,
                        int fallback, size_t products,
                        const km_fit_control *ctl, km_model **out,
                        km_error *err)
{
    km_model *model = NULL;
    km_status st = km_fit_model(fr, d, ns, params->n_components, p, &model,
                                err);
    if (st == KM_OK)
        st = add_figures(model, params, lambda, ratio, solver, fallback,
                         products, err);
    if (st != KM_OK) {
        km_model_free(model);
        return st;
    }
    km_progress(ctl, 1.0);
    *out = model;
    return KM_OK;
}

/* ------------------------------------------------------------ nystrom */

/*
 * The nystrom solver. With m centres Z drawn uniformly from the rows
 * (krr's draw: km_krr_draw_centres, seeded), K_mm = k(Z, Z) = L L^T
 * (L = T^T, T the upper factor of km_nys_factor_kmm: unshifted, or
 * with its tiny shift of the diagonal only when K_mm is numerically
 * singular; measured: the shift 6e-12 at m = 60 moved the projections
 * 1e-8 relative) and K_nm = k(X, Z), the Nystrom features
 * Phi = K_nm L^-T have Phi Phi^T = K_nm K_mm^-1 K_mn, the Nystrom
 * approximation of K (exactly K when m = n). Kernel PCA on that matrix,
 * centred, is PCA on the centred features: with mu the mean of the rows
 * of K_nm (so phi's mean is L^-1 mu) and Gc = (K_nm - 1 mu^T)^T (K_nm -
 * 1 mu^T), the m x m matrix
 *     C = Phi_c^T Phi_c = T^-T Gc T^-1     (LAPACK dsygst)
 * has the nonzero eigenvalues of the centred n x n approximation (the
 * same lambda as the dense solver's when m = n), and its unit
 * eigenvectors v_j give the projections (phi(x) - phi_mean)^T v_j =
 * (k(x, Z) - mu)^T W_j with W = T^-1 V: what the dense solver computes
 * as Kc alpha_j / sqrt(lambda_j) (alpha_j = Phi_c v_j / sqrt(lambda_j)).
 * scikit-learn's Nystroem(n_components=m) maps with K_mm^-1/2 instead of
 * L^-T, a rotation of the same features, so PCA on its centred features
 * gives the same eigenvalues and projections.
 *
 * Three passes over X in row blocks (kernel values by km_gram_cross_sn
 * against the centres, about 2^21 values at a time: km_nys_block_rows):
 * mu; Gc by DSYRK on the centred block (centring each block, not subtracting n mu mu^T
 * from the raw sum, keeps the digits a kernel close to constant would
 * cancel); the training projections, only for their signs (each
 * component's entry of largest magnitude positive, the other solvers'
 * rule). Costs: n m d per pass, n m^2 for Gc, m^3 / 3 for T, m^3 for
 * dsygst, solve_dense on m x m. Memory: T and Gc (2 m^2), a block, and
 * O(m k) (nystrom_fit_bytes); never the n x n matrix.
 */
typedef struct kpca_nys {
    const km_kernel *k;
    const double *X, *Z, *zn; /* the data, the centres and their norms */
    size_t n, d, m, block;
    double *Kb; /* block x m, row-major */
    const km_fit_control *ctl;
} kpca_nys;

/* One pass over X: for each block of rows, Kb := k(X[i0 .. i0 + nb), Z),
 * then visit(s, nb, ctx); progress from f0 to f1 by the rows done, a
 * cancel honoured after each block. */
static km_status nys_sweep(const kpca_nys *s, double f0, double f1,
                           void (*visit)(const kpca_nys *, size_t, void *),
                           void *ctx, km_error *err)
{
    for (size_t i0 = 0; i0 < s->n; i0 += s->block) {
        size_t nb = s->n - i0 < s->block ? s->n - i0 : s->block;
        km_status st = km_gram_cross_sn(s->k, s->X + i0 * s->d, nb, s->Z,
                                        s->m, s->zn, s->d, s->Kb, s->m, err);
        if (st != KM_OK)
            return st;
        visit(s, nb, ctx);
        if (km_progress(s->ctl, f0 + (f1 - f0) * (double)(i0 + nb) /
                                         (double)s->n))
            return cancelled(err);
    }
    return KM_OK;
}

/* Pass 1: mu (m) += the rows of the block (then divided by n). */
static void add_rows(const kpca_nys *s, size_t nb, void *mu)
{
    for (size_t i = 0; i < nb; i++)
        km_vaxpy(1.0, s->Kb + i * s->m, mu, s->m);
}

/* Pass 2: the block centred by mu; G (m x m, column-major upper) += its
 * Gram: Gc, the centred K_nm's. */
typedef struct nys_cov {
    const double *mu;
    double *G;
} nys_cov;

static void add_cov(const kpca_nys *s, size_t nb, void *ctx)
{
    const nys_cov *c = ctx;
    size_t m = s->m;
    for (size_t i = 0; i < nb; i++)
        km_vaxpy(-1.0, c->mu, s->Kb + i * m, m);
    /* Kb row-major nb x m is column-major m x nb: G += Kb^T Kb */
    cblas_dsyrk(CblasColMajor, CblasUpper, CblasNoTrans, (int)m, (int)nb,
                1.0, s->Kb, (int)m, 1.0, c->G, (int)m);
}

/* Pass 3: each component's training projection of largest magnitude
 * (the first, on ties), best (k); P a block x k work buffer. */
typedef struct nys_signs {
    const double *W, *bias; /* m x k column-major; -mu^T W */
    size_t k;
    double *P, *best;
} nys_signs;

static void find_signs(const kpca_nys *s, size_t nb, void *ctx)
{
    nys_signs *g = ctx;
    size_t k = g->k;
    /* P (nb x k, row-major) = Kb W; W column-major is row-major k x m */
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)nb, (int)k,
                (int)s->m, 1.0, s->Kb, (int)s->m, g->W, (int)s->m, 0.0, g->P,
                (int)k);
    for (size_t i = 0; i < nb; i++)
        for (size_t j = 0; j < k; j++) {
            double v = g->P[i * k + j] + g->bias[j];
            if (fabs(v) > fabs(g->best[j]))
                g->best[j] = v;
        }
}

/* Flips W's columns so that each component's training projection of
 * largest magnitude is positive. */
static km_status nys_fix_signs(const kpca_nys *s, const double *mu, double *W,
                               size_t k, double *P, km_error *err)
{
    double *best = calloc(2 * k, sizeof *best), *bias = best + k;
    if (!best)
        return km_error_set(err, KM_ENOMEM, "out of memory for the model");
    for (size_t j = 0; j < k; j++)
        bias[j] = -km_vdot(mu, W + j * s->m, s->m);
    nys_signs g = {W, bias, k, P, best};
    km_status st = nys_sweep(s, 0.85, 0.95, find_signs, &g, err);
    for (size_t j = 0; j < k && st == KM_OK; j++)
        if (best[j] < 0)
            cblas_dscal((int)s->m, -1.0, W + j * s->m, 1);
    free(best);
    return st;
}

static km_status kpca_fit_nystrom(km_fit_frame *fr, const km_kpca_params *params,
                                  const double *X, size_t n, size_t d,
                                  const km_fit_control *ctl, km_model **out,
                                  km_error *err)
{
    size_t nc = params->n_components, m = nys_centres(params, n);
    size_t block = km_nys_block_rows(n, m);
    size_t *idx = NULL;
    double *T = NULL, *G = NULL, *V = NULL, *lambda = NULL, *ratio = NULL;
    double *P = NULL, shift = 0, trace = 0;
    kpca_payload *p = NULL;
    km_status st = KM_OK;
    if (m > INT_MAX || block > INT_MAX / m) { /* BLAS's int sizes */
        st = km_error_set(err, KM_EINVAL, "params.n_centres (%zu) must be "
                          "below 2^31", m);
        goto out;
    }
    if (km_progress(ctl, 0.0)) {
        st = cancelled(err);
        goto out;
    }
    p = payload_new();
    idx = malloc(n * sizeof *idx);
    T = malloc(m * m * sizeof *T);
    G = malloc(m * m * sizeof *G);
    V = malloc(m * nc * sizeof *V);
    lambda = malloc(nc * sizeof *lambda);
    ratio = malloc(nc * sizeof *ratio);
    P = malloc(block * nc * sizeof *P);
    if (p) {
        p->form = KPCA_FORM_NYSTROM;
        p->X = malloc(m * d * sizeof *p->X);
        p->col_mean = malloc(m * sizeof *p->col_mean);
        p->eigval = malloc(nc * sizeof *p->eigval);
        p->proj = malloc(m * (nc + 1) * sizeof *p->proj);
        p->sum_proj = malloc(nc * sizeof *p->sum_proj);
        p->bias = malloc(nc * sizeof *p->bias);
    }
    if (!p || !idx || !T || !G || !V || !lambda || !ratio || !P || !p->X ||
        !p->col_mean || !p->eigval || !p->proj || !p->sum_proj || !p->bias) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for the nystrom "
                          "solver of %zu centres", m);
        goto out;
    }
    p->n = m;
    p->d = d;
    p->k = nc;
    km_krr_draw_centres(params->seed, n, m, idx);
    for (size_t i = 0; i < m; i++)
        memcpy(p->X + i * d, X + idx[i] * d, d * sizeof *X);
    free(idx);
    idx = NULL;
    if (!(p->xn = km_sqnorms(p->X, m, d))) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for the centres");
        goto out;
    }
    if ((st = km_nys_factor_kmm(&fr->k, p->X, m, d, 1, T, &shift, err)) !=
        KM_OK)
        goto out;
    if (km_progress(ctl, 0.05)) {
        st = cancelled(err);
        goto out;
    }
    /* The block buffer: G's room until pass 2 needs it would save little
     * (a block is at most about 2^21 values: km_nys_block_rows). */
    double *Kb = malloc(block * m * sizeof *Kb);
    if (!Kb) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for the nystrom "
                          "solver of %zu centres", m);
        goto out;
    }
    kpca_nys s = {&fr->k, X, p->X, p->xn, n, d, m, block, Kb, ctl};
    nys_cov cov = {p->col_mean, G};
    memset(p->col_mean, 0, m * sizeof *p->col_mean);
    memset(G, 0, m * m * sizeof *G);
    st = nys_sweep(&s, 0.05, 0.15, add_rows, p->col_mean, err);
    for (size_t j = 0; j < m; j++)
        p->col_mean[j] /= (double)n;
    if (st == KM_OK)
        st = nys_sweep(&s, 0.15, 0.6, add_cov, &cov, err);
    if (st != KM_OK) {
        free(Kb);
        goto out;
    }
    /* C = T^-T Gc T^-1, in place (upper triangle) */
    lapack_int info = LAPACKE_dsygst(LAPACK_COL_MAJOR, 1, 'U', (lapack_int)m,
                                     G, (lapack_int)m, T, (lapack_int)m);
    if (info != 0) {
        free(Kb);
        st = km_error_set(err, KM_EINTERNAL, "dsygst failed (info %d)",
                          (int)info);
        goto out;
    }
    for (size_t j = 0; j < m; j++)
        trace += G[j * m + j];
    if (!isfinite(trace)) {
        free(Kb);
        st = km_error_set(err, KM_EPROBLEM, "the kernel matrix has values "
                          "that are not finite numbers (overflow); use a "
                          "smaller gamma, degree or scale of X");
        goto out;
    }
    /* Column-major upper == what solve_dense reads. */
    if ((st = solve_dense(G, m, nc, lambda, V, err)) != KM_OK ||
        (st = check_positive(lambda, nc, err)) != KM_OK) {
        free(Kb);
        goto out;
    }
    if (km_progress(ctl, 0.85)) {
        free(Kb);
        st = cancelled(err);
        goto out;
    }
    /* W = T^-1 V, signed by the training projections */
    cblas_dtrsm(CblasColMajor, CblasLeft, CblasUpper, CblasNoTrans,
                CblasNonUnit, (int)m, (int)nc, 1.0, T, (int)m, V, (int)m);
    st = nys_fix_signs(&s, p->col_mean, V, nc, P, err);
    free(Kb);
    if (st != KM_OK)
        goto out;
    for (size_t j = 0; j < nc; j++) {
        p->eigval[j] = lambda[j];
        ratio[j] = trace > 0 ? lambda[j] / trace : 0;
        for (size_t i = 0; i < m; i++)
            p->proj[i * (nc + 1) + j] = V[j * m + i];
    }
    for (size_t i = 0; i < m; i++)
        p->proj[i * (nc + 1) + nc] = 1.0 / (double)m;
    p->grand_mean = 0;
    if (!km_all_finite(p->proj, m * (nc + 1))) {
        st = km_error_set(err, KM_EPROBLEM, "the nystrom projections are "
                          "not all finite numbers");
        goto out;
    }
    if (derive(p, m, nc) != 0) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for the model");
        goto out;
    }
    free(T);
    free(G);
    T = G = NULL;

    st = finish(fr, d, m, params, p, lambda, ratio, KM_KPCA_SOLVER_NYSTROM, 0,
                3, ctl, out, err);
    p = NULL; /* owned by the model, also on failure */
out:
    kpca_free(p);
    free(idx);
    free(T);
    free(G);
    free(V);
    free(lambda);
    free(ratio);
    free(P);
    return st;
}

/*
 * The top nc eigenpairs of the centered K (destroyed) by the solver s asks
 * for (lambda descending, U n x nc column-major); *solver the one that
 * gave them, *fallback whether dense took over, *products the block
 * products made.
 */
static km_status solve_here(double *K, size_t n, size_t nc, km_kpca_solver s,
                            const km_fit_control *ctl, double *lambda,
                            double *U, int *solver, int *fallback,
                            size_t *products, km_error *err)
{
    km_status st = KM_OK;
    *solver = KM_KPCA_SOLVER_DENSE;
    if (s == KM_KPCA_SOLVER_RANDOMIZED) {
        st = solve_randomized(K, n, nc, ctl, lambda, U, products, err);
        if (st == KM_OK)
            *solver = KM_KPCA_SOLVER_RANDOMIZED;
    } else if (use_iterative(n, nc, s)) {
        lanczos L;
        if ((st = lanczos_init(&L, K, n, nc, err)) != KM_OK)
            return st;
        st = solve_iterative(&L, ctl, lambda, U, err);
        *products = L.products;
        lanczos_cleanup(&L);
        if (st == KM_OK)
            *solver = KM_KPCA_SOLVER_ITERATIVE;
    }
    if (st == KM_ENOCONV)
        *fallback = 1;
    else if (st != KM_OK)
        return st;
    if (*solver == KM_KPCA_SOLVER_DENSE)
        st = solve_dense(K, n, nc, lambda, U, err);
    return st;
}

km_status km_kpca_fit(const km_kernel *kernel, const km_kpca_params *params,
                      const double *X, size_t n, size_t d,
                      const km_fit_control *ctl, km_model **out,
                      km_error *err)
{
    km_problem problem = {X, n, d, NULL, 0, NULL, 0};
    km_fit_frame fr;
    double *K = NULL, *U = NULL, *lambda = NULL, *ratio = NULL;
    kpca_payload *p = NULL;
    int solver = KM_KPCA_SOLVER_DENSE, fallback = 0;
    size_t products = 0, nc = params->n_components;
    double trace = 0;

    km_status st = km_fit_begin(&fr, KM_ALGO_KPCA, kernel, params, &problem,
                                err);
    if (st != KM_OK)
        goto out;
    if (params->solver == KM_KPCA_SOLVER_NYSTROM) {
        st = kpca_fit_nystrom(&fr, params, X, n, d, ctl, out, err);
        goto out;
    }
    const km_kernel *k = &fr.k;
    /* The dense solver's work on an engine (km.h: km_dense_engine): no
     * n x n matrix here. */
    const km_dense_engine *de =
        ctl && ctl->dense && ctl->dense->eigen &&
                (params->solver == KM_KPCA_SOLVER_AUTO ||
                 params->solver == KM_KPCA_SOLVER_DENSE)
            ? ctl->dense
            : NULL;

    K = de ? NULL : malloc(n * n * sizeof *K);
    U = malloc(n * nc * sizeof *U);
    lambda = malloc(nc * sizeof *lambda);
    ratio = malloc(nc * sizeof *ratio);
    p = payload_new();
    if ((!de && !K) || !U || !lambda || !ratio || !p) {
        st = km_error_set(err, KM_ENOMEM,
                          "out of memory for a %zu x %zu kernel matrix", n, n);
        goto out;
    }
    p->col_mean = malloc(n * sizeof *p->col_mean);
    p->X = malloc(n * d * sizeof *p->X);
    p->eigval = malloc(nc * sizeof *p->eigval);
    p->proj = malloc(n * (nc + 1) * sizeof *p->proj);
    p->sum_proj = malloc(nc * sizeof *p->sum_proj);
    p->bias = malloc(nc * sizeof *p->bias);
    if (!p->col_mean || !p->X || !p->eigval || !p->proj || !p->sum_proj ||
        !p->bias) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for the model");
        goto out;
    }
    memcpy(p->X, X, n * d * sizeof *X);
    p->n = n;
    p->d = d;
    p->k = nc;
    if (km_progress(ctl, 0.0)) {
        st = cancelled(err);
        goto out;
    }

    if (de) {
        st = de->eigen(de->ctx, k, X, n, d, nc, p->col_mean, &p->grand_mean,
                       &trace, lambda, U, ctl, 0.0, 0.9, err);
        if (st != KM_OK)
            goto out;
    } else {
        if ((st = km_gram_sym(k, X, n, d, K, 0, err)) != KM_OK)
            goto out;
        center(K, n, p->col_mean, &p->grand_mean, &trace);
    }
    if (!isfinite(p->grand_mean) || !isfinite(trace)) {
        st = km_error_set(err, KM_EPROBLEM,
                          "the kernel matrix has values that are not finite "
                          "numbers (overflow); use a smaller gamma, degree "
                          "or scale of X");
        goto out;
    }
    if (!de && km_progress(ctl, 0.2)) {
        st = cancelled(err);
        goto out;
    }
    if (!de && (st = solve_here(K, n, nc, params->solver, ctl, lambda, U,
                                &solver, &fallback, &products, err)) != KM_OK)
        goto out;
    if (km_progress(ctl, 0.9)) {
        st = cancelled(err);
        goto out;
    }

    if ((st = check_positive(lambda, nc, err)) != KM_OK)
        goto out;
    flip_signs(U, n, nc);

    for (size_t j = 0; j < nc; j++) {
        double r = 1.0 / sqrt(lambda[j]);
        p->eigval[j] = lambda[j];
        ratio[j] = trace > 0 ? lambda[j] / trace : 0;
        for (size_t i = 0; i < n; i++)
            p->proj[i * (nc + 1) + j] = U[j * n + i] * r;
    }
    for (size_t i = 0; i < n; i++)
        p->proj[i * (nc + 1) + nc] = 1.0 / (double)n;
    if (derive(p, n, nc) != 0) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for the model");
        goto out;
    }

    if (params->fit_inverse_transform) {
        /* sklearn's "same kernel": same parameters, a default gamma
         * resolved on the embedded points. */
        if ((st = km_kernel_copy(&p->inv_kernel, kernel, err)) != KM_OK) {
            km_kernel_init(&p->inv_kernel, KM_KERNEL_LINEAR);
            goto out;
        }
        km_kernel_resolve(&p->inv_kernel, nc);
        p->has_inverse = 1;
        p->embed = malloc(n * nc * sizeof *p->embed);
        p->dual = malloc(n * d * sizeof *p->dual);
        if (!p->embed || !p->dual) {
            st = km_error_set(err, KM_ENOMEM, "out of memory for the model");
            goto out;
        }
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < nc; j++)
                p->embed[i * nc + j] = U[j * n + i] * sqrt(lambda[j]);
        if ((st = fit_inverse(&p->inv_kernel, p->embed, X, n, nc, d,
                              params->alpha, K, p->dual, de, ctl, err)) !=
            KM_OK)
            goto out;
    }
    free(K);
    K = NULL;

    st = finish(&fr, d, n, params, p, lambda, ratio, solver, fallback,
                products, ctl, out, err);
    p = NULL; /* owned by the model, also on failure */
out:
    kpca_free(p);
    free(ratio);
    free(lambda);
    free(U);
    free(K);
    km_fit_cleanup(&fr);
    return st;
}

/* ------------------------------------------------------------ use */

km_status km_kpca_project(const km_model *m, const double *X, size_t n,
                          double *out, km_error *err)
{
    km_status st = km_model_expect_input(m, KM_ALGO_KPCA, "project", X, n, err);
    if (st != KM_OK)
        return st;
    size_t d = km_model_n_features(m);
    const kpca_payload *p = km_model_payload(m);
    size_t k = km_model_n_outputs(m), ns = km_model_n_samples(m);
    if (!km_mul3(n, k + 1, sizeof(double)))
        return km_error_set(err, KM_EINVAL, "X has too many rows");
    /* Kt [A, 1/n]: the products and the test row means in one pass. */
    double *T = malloc(n * (k + 1) * sizeof *T);
    if (!T)
        return km_error_set(err, KM_ENOMEM, "out of memory for projection");
    st = km_kernel_expand(km_model_kernel(m), p->X, ns, d, p->xn, p->proj, k + 1,
                          NULL, X, n, T, err);
    if (st == KM_OK)
        for (size_t i = 0; i < n; i++) {
            const double *t = T + i * (k + 1);
            for (size_t j = 0; j < k; j++)
                out[i * k + j] = t[j] - t[k] * p->sum_proj[j] + p->bias[j];
        }
    free(T);
    return st;
}

int km_kpca_has_inverse(const km_model *m)
{
    if (km_model_algorithm(m) != KM_ALGO_KPCA)
        return 0;
    return ((const kpca_payload *)km_model_payload(m))->has_inverse;
}

km_status km_kpca_inverse(const km_model *m, const double *P, size_t n,
                          double *out, km_error *err)
{
    km_status st = km_model_expect(m, KM_ALGO_KPCA, "inverse", err);
    if (st != KM_OK)
        return st;
    const kpca_payload *p = km_model_payload(m);
    size_t k = km_model_n_outputs(m);
    if (!p->has_inverse)
        return km_error_set(err, KM_ECONFLICT,
                            "inverse needs a model fitted with "
                            "fit_inverse_transform");
    if (n == 0)
        return km_error_set(err, KM_EINVAL, "P must have at least one row");
    if ((st = km_check_matrix("P", P, n, k, err)) != KM_OK)
        return st;
    return km_kernel_expand(&p->inv_kernel, p->embed, km_model_n_samples(m),
                            k, NULL, p->dual, km_model_n_features(m), NULL, P, n,
                            out, err);
}

const double *km_kpca_eigenvalues(const km_model *m)
{
    if (km_model_algorithm(m) != KM_ALGO_KPCA)
        return NULL;
    return ((const kpca_payload *)km_model_payload(m))->eigval;
}

/* ------------------------------------------------------------ descriptor */

static void params_default(void *params)
{
    *(km_kpca_params *)params = km_kpca_params_default();
}

static uint64_t max_outputs(uint64_t ns)
{
    return ns - 1; /* at most n - 1 positive eigenvalues */
}

/* (version 5: the form) eigval, proj, col_mean, grand_mean, X,
 * has_inverse; then maybe the inverse map (dual and X again, at most). */
static void payload_range(uint32_t format, uint64_t ns, uint64_t nf,
                          uint64_t no, uint64_t *lo, uint64_t *hi)
{
    uint64_t nd = km_mul_sat(ns, nf);
    *lo = km_add_sat(km_add_sat(km_f64s_bytes(no),
                                km_f64s_bytes(km_mul_sat(ns, no))),
                     km_add_sat(km_f64s_bytes(ns),
                                km_add_sat(8, km_f64s_bytes(nd))));
    *lo = km_add_sat(*lo, format >= 5 ? 8 : 4); /* the form from version 5 */
    *hi = km_add_sat(*lo, km_add_sat(km_f64s_bytes(km_mul_sat(ns, no)),
                                     km_f64s_bytes(nd)));
}

static km_status check(const void *params, const km_problem *pb,
                       km_error *err)
{
    return km_kpca_check(params, pb->n, err);
}

static size_t fit_bytes(const void *params, const km_problem *pb)
{
    return km_kpca_fit_bytes(pb->n, pb->d, params);
}

static km_status fit(const km_kernel *k, const void *params,
                     const km_problem *pb, const km_fit_control *ctl,
                     km_model **out, km_error *err)
{
    return km_kpca_fit(k, params, pb->X, pb->n, pb->d, ctl, out, err);
}

static unsigned model_outputs(const km_model *m)
{
    return KM_OUT_PROJECTIONS | (km_kpca_has_inverse(m) ? KM_OUT_INVERSE : 0);
}

/* The inverse map only with fit_inverse_transform. */
static unsigned params_outputs(const void *params)
{
    return KM_OUT_PROJECTIONS |
           (((const km_kpca_params *)params)->fit_inverse_transform
                ? KM_OUT_INVERSE
                : 0);
}

/* ------------------------------------------------------------ capabilities */

static const char *solver_name(size_t i)
{
    return km_kpca_solver_name((km_kpca_solver)i);
}

static const km_algo_solvers solvers = {"eigen_solver", KM_KPCA_SOLVER_COUNT,
                                        solver_name, NULL};

/* the cluster runs ScaLAPACK's pdsyevr: the dense solver */
static int mpi_dense(km_kpca_solver s)
{
    return s == KM_KPCA_SOLVER_AUTO || s == KM_KPCA_SOLVER_DENSE;
}

static const char *mpi_refusal(const void *params, char *buf, size_t len)
{
    km_kpca_solver s = ((const km_kpca_params *)params)->solver;
    if (mpi_dense(s))
        return NULL;
    snprintf(buf, len, "params.eigen_solver %s cannot run distributed "
             "(kpca: only auto or dense, which run ScaLAPACK's pdsyevr)",
             km_kpca_solver_name(s));
    return buf;
}

/* auto: dense there */
static km_status mpi_resolve(void *params, km_error *err)
{
    km_kpca_solver s = ((const km_kpca_params *)params)->solver;
    return mpi_dense(s)
               ? KM_OK
               : km_error_set(err, KM_EINVAL, "params.eigen_solver: "
                              "kmserve-mpi runs kpca's dense solver (auto "
                              "or dense), not %s", km_kpca_solver_name(s));
}

/* The eigen-problem on a rows x cols grid (kmserve-mpi's eig_init): A and
 * Z, PDSYEVR's minimum workspace for max(k, nb) vectors (the worker takes
 * the optimum only when it fits), its integers, and X, the vectors and
 * the model's arrays beside. */
static size_t mpi_rank_bytes(const void *params, const km_problem *pb,
                             size_t nb, size_t rows, size_t cols)
{
    size_t n = pb->n, d = pb->d, p = rows * cols;
    size_t k = ((const km_kpca_params *)params)->n_components;
    if (nb > n)
        nb = n;
    size_t mz = k > nb ? k : nb;
    uint64_t share = km_mul_sat(km_mpi_local_max(n, nb, rows),
                                km_mpi_local_max(n, nb, cols));
    uint64_t t = km_add_sat(km_mul_sat(km_mpi_local_max(n, nb, rows),
                                       km_mpi_local_max(mz, nb, cols)),
                            2 * nb * nb);
    uint64_t lwmin = km_add_sat(km_add_sat(7 * n + 2, t > 18 * n ? t : 18 * n),
                                km_mul_sat((mz + p - 1) / p, n));
    size_t nnp = n > p + 1 ? n : p + 1;
    uint64_t vec = km_add_sat(km_mul_sat(n, 3 * d + 3 * k + 6), lwmin);
    return (size_t)km_add_sat(
        km_mul_sat(8, km_add_sat(km_mul_sat(2, share), vec)),
        km_mul_sat(4, 14 * nnp));
}

/* the staging buffer, the model file read back and the model: its
 * projections, means and inverse map */
static size_t mpi_local_bytes(const void *params, const km_problem *pb)
{
    const km_kpca_params *q = params;
    size_t k = q->n_components, d = pb->d;
    size_t per_row = d + k + 2 + (q->fit_inverse_transform ? k + d : 0);
    return (size_t)km_mul_sat(3, km_mul_sat(8, km_mul_sat(pb->n, per_row)));
}

static const km_algo_mpi mpi = {.refusal = mpi_refusal,
                                .resolve = mpi_resolve,
                                .rank_bytes = mpi_rank_bytes,
                                .local_bytes = mpi_local_bytes};

/* ------------------------------------------------------------ params
 *
 * The keys a request's params may give (km_param, km_base.h): their
 * types, bounds, choices, the solver values they apply with and docs,
 * read by the API through km_algorithm_params. */

/* Only with eigen_solver "nystrom". */
#define KPCA_NYSTROM .only_if = "eigen_solver", \
                     .only_value = KM_KPCA_SOLVER_NYSTROM

/* n_components: its type and lower bound here (400); its upper bound,
 * n_samples, in km_kpca_check (422). */
static const km_param kpca_rows[] = {
    {.key = "n_components", .type = KM_PARAM_INTEGER,
     KM_PARAM_FIELD(km_kpca_params, n_components),
     .range = KM_PARAM_RANGE_READER, .min = 1,
     .max = INT_MAX, .required = 1,
     .data_bound = "the number of rows of X",
     .doc = "components kept; above n_samples is 422"},
    {.key = "fit_inverse_transform", .type = KM_PARAM_BOOL,
     KM_PARAM_FIELD(km_kpca_params, fit_inverse_transform),
     .doc = "learn the map back to input space (project with inverse)"},
    {.key = "alpha", .type = KM_PARAM_NUMBER,
     KM_PARAM_FIELD(km_kpca_params, alpha),
     KM_PARAM_POSITIVE, .doc = "ridge of the inverse map"},
    {.key = "eigen_solver", .type = KM_PARAM_CHOICE,
     KM_PARAM_FIELD(km_kpca_params, solver),
     .choices = &km_kpca_solver_choices,
     .doc = "auto: restarted block Lanczos when n >= 1000 and "
            "n_components <= n/50, else dense LAPACK; randomized (the "
            "randomized range finder) only when asked; nystrom: "
            "eigenvectors of the centred Nystrom approximation on "
            "n_centres centres, memory O(m^2), never the n x n matrix, "
            "no fit_inverse_transform"},
    {.key = "n_centres", .type = KM_PARAM_INTEGER,
     KM_PARAM_FIELD(km_kpca_params, n_centres),
     .range = KM_PARAM_RANGE_READER, .min = 1,
     .max = INT_MAX, .data_default = 1,
     .data_bound = "the number of rows of X", KPCA_NYSTROM,
     .doc = "nystrom only: centres, drawn uniformly from the rows; "
            "default min(n, 1000); above n_samples, or not above "
            "n_components, is 422"},
    {.key = "seed", .type = KM_PARAM_INTEGER,
     KM_PARAM_FIELD(km_kpca_params, seed),
     .range = KM_PARAM_RANGE_READER, .min = 0, .max = 2147483647, KPCA_NYSTROM,
     .doc = "nystrom only: seed of the centres' draw (core's PRNG)"},
    {0},
};
_Static_assert(sizeof(km_kpca_solver) == sizeof(int),
               "KM_PARAM_CHOICE fields are int-sized");

static const km_param_set param_set = {kpca_rows, sizeof(km_kpca_params),
                                        params_default};

const km_algo km_kpca_algo = {
    .outputs = KM_OUT_PROJECTIONS | KM_OUT_INVERSE,
    .model_outputs = model_outputs,
    .params_outputs = params_outputs,
    .params = &param_set,
    .check = check,
    .fit_bytes = fit_bytes,
    .fit = fit,
    .projections = km_kpca_project,
    .inverse = km_kpca_inverse,
    .max_outputs = max_outputs,
    .payload_range = payload_range,
    .free_payload = kpca_free,
    .save = kpca_save,
    .load = kpca_load,
    .file_format = kpca_file_format,
    .bytes = kpca_bytes,
    .load_bytes = kpca_load_bytes,
    .target = KM_TARGET_NONE,
    .solvers = &solvers,
    .mpi = &mpi,
};
