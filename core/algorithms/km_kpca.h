/*
 * km_kpca.h - kernel PCA (algorithms/km_kpca.c).
 *
 * Part of libkm's public interface; include km.h, which includes every
 * area. Conventions and thread-safety as km.h says.
 */
#ifndef KM_KPCA_H
#define KM_KPCA_H

#include "../model/km_model.h"
#include "../solvers/km_solvers.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- KPCA */

/*
 * Kernel PCA as scikit-learn's KernelPCA: the top n_components eigenpairs
 * (lambda_j, alpha_j) of the centered training Gram matrix
 * Kc = H K H (H = I - 11^T/n), eigenvalues in descending order, unit
 * eigenvectors signed so that the entry of largest magnitude is positive
 * (sklearn's svd_flip). The projection of a training point i on
 * component j is sqrt(lambda_j) alpha_j[i]; a new point is projected with
 * its kernel row centered by the training column means, its own row mean
 * and the grand mean of K.
 */

/* The eigen-solvers (KM_KPCA_SOLVER_MAP, km_kpca_solver) are
 * solvers/km_solvers.h's; the names' table is kpca's. */
extern const km_choices km_kpca_solver_choices;

typedef struct km_kpca_params {
    size_t n_components;       /* >= 1 and <= n_samples */
    int fit_inverse_transform; /* default 0 */
    double alpha;              /* ridge of the inverse map, > 0, default 1 */
    km_kpca_solver solver;     /* default AUTO */
    size_t n_centres;          /* nystrom: m, n_components + 1 .. n; 0
                                * (default): min(n, KM_KRR_DEFAULT_CENTRES) */
    uint64_t seed;             /* nystrom: of the centres' draw; default 0 */
} km_kpca_params;

/* n_components 1 (callers set it: it has no sensible default), no inverse
 * map, alpha 1, solver AUTO. */
km_kpca_params km_kpca_params_default(void);
/* KM_EINVAL naming the field: params.n_components below 1, params.alpha
 * not a finite number > 0, params.solver unknown; with the nystrom
 * solver, params.seed above 2^53 or fit_inverse_transform set (the
 * inverse map is learned on all n rows: not built for nystrom).
 * KM_EPROBLEM (422 in the API) for params.n_components above n_samples,
 * and with nystrom for params.n_centres above n_samples or
 * params.n_components not below the centres. */
km_status km_kpca_check(const km_kpca_params *p, size_t n_samples,
                        km_error *err) KM_MUST_CHECK;
/* The name (KM_KPCA_SOLVER_MAP); NULL if invalid. */
const char *km_kpca_solver_name(km_kpca_solver s);

/*
 * Fits kernel PCA on X (n x d). Borrows k, p and X; caller owns *out
 * (free with km_model_free). Peak memory: one n x n matrix plus
 * O(n (d + n_components)) (see km_kpca_fit_bytes).
 *
 * Errors: KM_EINVAL as km_kpca_check, or for X empty or not finite;
 * KM_EPROBLEM when the centered kernel matrix has fewer than n_components
 * positive eigenvalues (an eigenvalue counts as positive when it exceeds
 * 1e-12 times the largest, scikit-learn's threshold; the message says how
 * many there are). Since Kc 1 = 0, at most n - 1 are positive.
 * KM_ENOTPD when the inverse map's ridge system is not positive definite;
 * KM_ECANCELLED when ctl asks to stop (the dense solver itself cannot be
 * interrupted: the request is honoured after it).
 *
 * With fit_inverse_transform, the model also learns the map from
 * projections back to inputs by kernel ridge regression, exactly as
 * scikit-learn: dual = (K(E, E) + alpha I)^-1 X, where E (n x
 * n_components) is the training embedding and K the same kernel with the
 * same parameters; a default gamma (0) resolves to 1/n_components there,
 * as scikit-learn's gamma=None does on the embedded points.
 *
 * Params figures: "n_components" (integer), "fit_inverse_transform"
 * (boolean), "alpha". Training figures: "seconds"; "eigenvalues" (array,
 * descending); "explained_variance_ratio" (array: lambda_j / trace(Kc),
 * i.e. the share of the total variance in feature space, all n
 * eigenvalues counted); "solver" (KM_KPCA_SOLVER_DENSE, _ITERATIVE or
 * _RANDOMIZED: the one that produced the result); "fallback" (boolean: the
 * iterative or randomized solver did not converge and dense took over);
 * "iterations" (products of Kc with a block of vectors; 0 for dense; q + 2
 * for the randomized solver's q power iterations).
 *
 * Every solver but nystrom holds the whole n x n centered Gram matrix:
 * the iterative and randomized ones save time, not memory. The nystrom
 * solver finds the eigenpairs of the centred Gram matrix of the Nystrom
 * features phi(x) = k(x, Z) L^-T of m centres Z (L L^T = k(Z, Z)), from
 * their m x m covariance accumulated over row blocks of X; its model
 * keeps the centres (n_samples = m) and projects a new row in O(m d).
 * Its figures add params "eigen_solver", "n_centres" and "seed";
 * "iterations" counts its passes over X (3).
 */
km_status km_kpca_fit(const km_kernel *k, const km_kpca_params *p,
                      const double *X, size_t n, size_t d,
                      const km_fit_control *ctl, km_model **out,
                      km_error *err) KM_MUST_CHECK;
/* out: n x n_components projections (caller-allocated). Borrows X (n x
 * n_features). KM_ECONFLICT if not kpca; KM_EINVAL for bad X. */
km_status km_kpca_project(const km_model *m, const double *X, size_t n,
                          double *out, km_error *err) KM_MUST_CHECK;
/* 1 if m is a kpca model fitted with fit_inverse_transform, else 0. */
int km_kpca_has_inverse(const km_model *m);
/* P: n x n_components projections; out: n x n_features (caller-allocated).
 * KM_ECONFLICT if not kpca or fitted without fit_inverse_transform;
 * KM_EINVAL for an empty or non-finite P. */
km_status km_kpca_inverse(const km_model *m, const double *P, size_t n,
                          double *out, km_error *err) KM_MUST_CHECK;
/* The n_components eigenvalues, descending; borrowed, valid while the
 * model lives. NULL if not kpca. */
const double *km_kpca_eigenvalues(const km_model *m);

/* Bytes a fit of this size needs at its peak (for admission control). */
size_t km_kpca_fit_bytes(size_t n, size_t d, const km_kpca_params *p);

#ifdef __cplusplus
}
#endif
#endif /* KM_KPCA_H */
