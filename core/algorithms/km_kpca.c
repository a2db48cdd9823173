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
 *              index, their vectors by inverse iteration (km_eig_dense:
 *              not dsyevr, whose index range loses eigenvalues in a
 *              cluster); its own work space is O(n).
 *   iterative  restarted block Lanczos (block Krylov with full
 *              reorthogonalisation and Rayleigh-Ritz after each block),
 *              whose only use of Kc is its product with a block of b ~ 2k
 *              vectors (km_eigen.c's sym_product: DSYMM and DGEMM by
 *              panels): each reads the triangle once, so b vectors
 *              cost little more than one. Converged when every wanted Ritz
 *              pair has a residual |Kc v - theta v| <= 1e-12 |Kc|. If it
 *              has not converged within a budget of products, dense takes
 *              over on the same, untouched, buffer.
 *   randomized Halko, Martinsson and Tropp's range finder: a Gaussian
 *              sample of l = k + p columns, power iterations (product, then
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

#include "../base/km_base_internal.h"
#include "../kernels/km_kernel_internal.h"
#include "../model/km_model_internal.h"
#include "../solvers/km_solvers_internal.h"
#include "km_kpca.h"
#include "km_kpca_internal.h"

/* sklearn's _check_psd_eigenvalues: below this share of the largest an
 * eigenvalue is zero. */
#define SMALL_POS_RATIO 1e-12

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

/* The nystrom solver (kpca_fit_nystrom): the draw's n indices; T and
 * the covariance (2 m^2); a block of K_nm and of its projections; the
 * centres, their norms, mu; km_eig_dense's work (m + 36 m) and vectors
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
    size_t k = p->n_components, b = km_eig_iter_block(k);
    size_t m = KM_EIG_ITER_DEPTH * b;
    if (n > ((size_t)1 << 26) || d > ((size_t)1 << 26) || k > n)
        return SIZE_MAX; /* far beyond any budget; avoids overflow */
    if (p->solver == KM_KPCA_SOLVER_NYSTROM)
        return nystrom_fit_bytes(n, d, p);
    /* The Gram buffer, the kept X, proj and means; the solver's work: for
     * dense the eigenvalues, vectors and km_eig_dense's 36n work space,
     * for iterative the basis, its product, the Ritz block and its
     * product. */
    size_t bytes = n * n * 8 + n * d * 8 + n * (k + 1) * 8 + 2 * n * 8;
    size_t dense = n * 8 + n * k * 8 + 36 * n * 8;
    size_t iter = (2 * n * m + 2 * n * b + 2 * m * m) * 8;
    /* randomized: Q, Kc Q, the residuals */
    size_t l = km_eig_rand_width(k, n);
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

/*
 * A kernel that is not PSD on the training rows, where the dense solver
 * found it (it computes every eigenvalue of the centred Gram Kc = H K H,
 * which is PSD when K is): km_fit_note_psd's figures from the smallest,
 * min_eig, and the largest, top. Nothing when min_eig is NaN (another
 * solver: the generic fit's figures look then, km_train.c). On OOM the
 * model is freed.
 */
static km_status note_not_psd(km_model *model, size_t n, double top,
                              double min_eig, km_error *err)
{
    if (isnan(min_eig))
        return KM_OK;
    km_status st = km_fit_note_psd(model, min_eig, top, n, n, err);
    if (st != KM_OK)
        km_model_free(model);
    return st;
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
 * dsygst, km_eig_dense on m x m. Memory: T and Gc (2 m^2), a block, and
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

/* The centres (krr's draw, seeded) into p->X and their norms; T := the
 * upper factor of K_mm (km_nys_factor_kmm, unshifted first). */
static km_status nys_pick_factor(km_fit_frame *fr,
                                 const km_kpca_params *params,
                                 const double *X, size_t n, size_t d,
                                 kpca_payload *p, size_t *idx, double *T,
                                 km_error *err)
{
    size_t m = p->n;
    double shift = 0;
    km_krr_draw_centres(params->seed, n, m, idx);
    for (size_t i = 0; i < m; i++)
        memcpy(p->X + i * d, X + idx[i] * d, d * sizeof *X);
    if (!(p->xn = km_sqnorms(p->X, m, d)))
        return km_error_set(err, KM_ENOMEM, "out of memory for the centres");
    return km_nys_factor_kmm(&fr->k, p->X, m, d, 1, T, &shift, err);
}

/* Passes 1 and 2: mu (p->col_mean) and Gc into G, then G := C = T^-T Gc
 * T^-1 (upper triangle, column-major) and *trace its trace. */
static km_status nys_covariance(const kpca_nys *s, kpca_payload *p,
                                double *G, double *T, double *trace,
                                km_error *err)
{
    size_t m = s->m, n = s->n;
    nys_cov cov = {p->col_mean, G};
    memset(p->col_mean, 0, m * sizeof *p->col_mean);
    memset(G, 0, m * m * sizeof *G);
    km_status st = nys_sweep(s, 0.05, 0.15, add_rows, p->col_mean, err);
    for (size_t j = 0; j < m; j++)
        p->col_mean[j] /= (double)n;
    if (st == KM_OK)
        st = nys_sweep(s, 0.15, 0.6, add_cov, &cov, err);
    if (st != KM_OK)
        return st;
    /* C = T^-T Gc T^-1, in place (upper triangle) */
    lapack_int info = LAPACKE_dsygst(LAPACK_COL_MAJOR, 1, 'U', (lapack_int)m,
                                     G, (lapack_int)m, T, (lapack_int)m);
    if (info != 0) /* LAPACKE's NaN check: T or Gc overflowed */
        return km_error_set(err, KM_EPROBLEM, "the centres' covariance is "
                            "not finite in double precision (the kernel "
                            "values of X overflow; dsygst info %d): rescale "
                            "X", (int)info);
    *trace = 0;
    for (size_t j = 0; j < m; j++)
        *trace += G[j * m + j];
    if (!isfinite(*trace))
        return km_error_set(err, KM_EPROBLEM, "the kernel matrix has values "
                            "that are not finite numbers (overflow); use a "
                            "smaller gamma, degree or scale of X");
    return KM_OK;
}

/* The top nc eigenpairs of C (G, destroyed): lambda, and W = T^-1 V
 * signed by pass 3 (the training projections) into p->proj (with its 1/m
 * column), p->eigval, ratio (lambda / trace) and the derived sums. V is
 * m x nc and P a block x nc work buffer. */
static km_status nys_components(const kpca_nys *s, kpca_payload *p,
                                double *G, const double *T, double trace,
                                double *V, double *lambda, double *ratio,
                                double *P, km_error *err)
{
    size_t m = s->m, nc = p->k;
    km_status st;
    /* Column-major upper == what km_eig_dense reads. */
    if ((st = km_eig_dense(G, m, nc, lambda, V, NULL, err)) != KM_OK ||
        (st = check_positive(lambda, nc, err)) != KM_OK)
        return st;
    if (km_progress(s->ctl, 0.85))
        return cancelled(err);
    /* W = T^-1 V, signed by the training projections */
    cblas_dtrsm(CblasColMajor, CblasLeft, CblasUpper, CblasNoTrans,
                CblasNonUnit, (int)m, (int)nc, 1.0, T, (int)m, V, (int)m);
    if ((st = nys_fix_signs(s, p->col_mean, V, nc, P, err)) != KM_OK)
        return st;
    for (size_t j = 0; j < nc; j++) {
        p->eigval[j] = lambda[j];
        ratio[j] = trace > 0 ? lambda[j] / trace : 0;
        for (size_t i = 0; i < m; i++)
            p->proj[i * (nc + 1) + j] = V[j * m + i];
    }
    for (size_t i = 0; i < m; i++)
        p->proj[i * (nc + 1) + nc] = 1.0 / (double)m;
    p->grand_mean = 0;
    if (!km_all_finite(p->proj, m * (nc + 1)))
        return km_error_set(err, KM_EPROBLEM, "the nystrom projections are "
                            "not all finite numbers");
    if (derive(p, m, nc) != 0)
        return km_error_set(err, KM_ENOMEM, "out of memory for the model");
    return KM_OK;
}

/* The nystrom solver (above): the centres and T, the m x m covariance C
 * of the centred features, its top eigenpairs, the model. */
static km_status kpca_fit_nystrom(km_fit_frame *fr, const km_kpca_params *params,
                                  const double *X, size_t n, size_t d,
                                  const km_fit_control *ctl, km_model **out,
                                  km_error *err)
{
    size_t nc = params->n_components, m = nys_centres(params, n);
    size_t block = km_nys_block_rows(n, m);
    size_t *idx = NULL;
    double *T = NULL, *G = NULL, *V = NULL, *lambda = NULL, *ratio = NULL;
    double *P = NULL, *Kb = NULL, trace = 0;
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
    st = nys_pick_factor(fr, params, X, n, d, p, idx, T, err);
    free(idx);
    idx = NULL;
    if (st != KM_OK)
        goto out;
    if (km_progress(ctl, 0.05)) {
        st = cancelled(err);
        goto out;
    }
    /* The block buffer: G's room until pass 2 needs it would save little
     * (a block is at most about 2^21 values: km_nys_block_rows). */
    if (!(Kb = malloc(block * m * sizeof *Kb))) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for the nystrom "
                          "solver of %zu centres", m);
        goto out;
    }
    kpca_nys s = {&fr->k, X, p->X, p->xn, n, d, m, block, Kb, ctl};
    if ((st = nys_covariance(&s, p, G, T, &trace, err)) != KM_OK ||
        (st = nys_components(&s, p, G, T, trace, V, lambda, ratio, P,
                             err)) != KM_OK)
        goto out;
    free(Kb);
    free(T);
    free(G);
    Kb = T = G = NULL;

    st = finish(fr, d, m, params, p, lambda, ratio, KM_KPCA_SOLVER_NYSTROM, 0,
                3, ctl, out, err);
    p = NULL; /* owned by the model, also on failure */
out:
    kpca_free(p);
    free(idx);
    free(Kb);
    free(T);
    free(G);
    free(V);
    free(lambda);
    free(ratio);
    free(P);
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
    double trace = 0, min_eig = NAN; /* min_eig: note_not_psd's */

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
        km_eig_center(K, n, p->col_mean, &p->grand_mean, &trace);
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
    if (!de && (st = km_eig_top(K, n, nc, params->solver, ctl, lambda, U,
                                &solver, &fallback, &products, &min_eig, err)))
        goto out;
    if (km_progress(ctl, 0.9)) {
        st = cancelled(err);
        goto out;
    }

    if ((st = check_positive(lambda, nc, err)) != KM_OK)
        goto out;
    km_eig_flip_signs(U, n, nc);

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
    if (st == KM_OK &&
        (st = note_not_psd(*out, n, lambda[0], min_eig, err)) != KM_OK)
        *out = NULL;
out:
    kpca_free(p);
    free(ratio);
    free(lambda);
    free(U);
    free(K);
    km_fit_cleanup(&fr);
    return st;
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
    {.key = "eigen_solver", .type = KM_PARAM_CHOICE, .solver = 1,
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

static int inverse_needs_vectors(const void *p) /* a map to X */
{ return ((const km_kpca_params *)p)->fit_inverse_transform; }
const km_algo km_kpca_algo = {
    .outputs = KM_OUT_PROJECTIONS | KM_OUT_INVERSE,
    .psd_centred = 1,
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
    .mpi = &mpi,
    .vectors_only = inverse_needs_vectors,
    .coefs = km_kpca_coefs,
};
