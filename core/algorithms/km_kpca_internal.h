/*
 * km_kpca_internal.h - kernel PCA's payload, which its files share
 * (km_kpca.c: checks, fits, the payload's file form, the descriptor;
 * km_kpca_predict.c: projections, the inverse map, the eigenvalues). Not
 * installed; core/algorithms only.
 */
#ifndef KM_KPCA_INTERNAL_H
#define KM_KPCA_INTERNAL_H

#include "km_algorithms_internal.h"

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

/* The descriptor's coefs hook (km_kpca_predict.c). */
size_t km_kpca_coefs(const km_model *m, km_coef *out);

#endif /* KM_KPCA_INTERNAL_H */
