/*
 * km_kpca_predict.c - a kernel PCA model's answers: projections of new
 * rows (the dual form through sklearn's centring, the nystrom form
 * through the centres' mean), the inverse map back to feature space, and
 * the eigenvalues.
 *
 * Thread-safety: reentrant; a fitted model is only read.
 */
#include <stdlib.h>
#include <string.h>

#include "../base/km_base_internal.h"
#include "../kernels/km_kernel_internal.h"
#include "../model/km_model_internal.h"
#include "km_kpca.h"
#include "km_kpca_internal.h"

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

/* scikit-learn's eigenvectors_ (unit norm): proj's alpha_j / sqrt(l_j)
 * times sqrt(l_j). */
static double eigenvector_at(const km_coef *c, size_t i, size_t j)
{
    return c->f64[i * c->stride[0] + j] * sqrt(c->aux[j]);
}

/* dual: KernelPCA's X_fit_, eigenvalues_ and eigenvectors_ (n x k, each
 * up to its sign); nystrom: the centres, the eigenvalues, the m x k
 * coefficients W of k(x, Z) and the centres' kernel mean mu (a
 * projection is k(x, Z) W - mu^T W). */
size_t km_kpca_coefs(const km_model *m, km_coef *out)
{
    const kpca_payload *p = km_model_payload(m);
    int nys = p->form == KPCA_FORM_NYSTROM;
    out[0] = km_coef_input_rows(m, nys ? "centres_" : "X_fit_", p->X, p->n,
                                p->d,
                                nys ? KM_COEF_ROWS_CENTRES : KM_COEF_ROWS_ALL);
    out[1] = km_coef_f64("eigenvalues_", p->eigval, p->k, 0, 0);
    out[2] = km_coef_f64(nys ? "coef_" : "eigenvectors_", p->proj, p->n,
                         p->k, 1);
    out[2].stride[0] = p->k + 1;
    if (nys) {
        out[3] = km_coef_f64("kernel_mean_", p->col_mean, p->n, 0, 1);
        return 4;
    }
    out[2].at = eigenvector_at;
    out[2].aux = p->eigval;
    return 3;
}
