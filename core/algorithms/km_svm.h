/*
 * km_svm.h - C-SVC and epsilon-SVR (algorithms/km_svm.c and the SVM solvers
 * of solvers/).
 *
 * Part of libkm's public interface; include km.h, which includes every
 * area. Conventions and thread-safety as km.h says.
 */
#ifndef KM_SVM_H
#define KM_SVM_H

#include "../model/km_model.h"
#include "../solvers/km_solvers.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- SVM */

/*
 * C-SVC (one-vs-one) and epsilon-SVR, trained by SMO with second-order
 * working-set selection and shrinking, as LIBSVM (same problems, same
 * stopping rule, same bias), so that answers agree with LIBSVM's.
 * Labels for C-SVC are given as indices into a sorted list of distinct
 * classes: the caller maps its labels (numbers or strings) to 0..k-1 in
 * sorted order; the model keeps the class count and answers indices.
 * The kernel is kept in cache_mb: the whole Gram when it fits (computed
 * once and shared by all pairs), else an LRU cache of kernel columns.
 *
 * The solver (KM_SVM_SOLVER_MAP), the nystrom solver's precision
 * (KM_SVM_PRECISION_MAP), their defaults and the parameters
 * (km_svm_params) are what the SVM solvers read, so they stand below
 * the algorithms, in solvers/km_solvers.h. The names' tables are svm's:
 */
extern const km_choices km_svm_solver_choices;
extern const km_choices km_svm_precision_choices;

km_svm_params km_svm_params_default(void);

/* The solver an svc fit of n rows and k classes with p runs: p->solver,
 * or for AUTO: EXACT with probability, up to KM_SVM_AUTO_EXACT_ROWS rows,
 * or when the exact solver shares one Gram among the pairs (k > 2 and
 * 8 n^2 bytes at most half of cache_mb); else SCREENED. Both reach the
 * same optimum; measured on Fashion-MNIST (rbf, C = 10): at 5000 rows
 * exact with a shared Gram 0.4 s, screened 0.5 s, exact with columns
 * cached in 200 MB 1.4 s; at 10,000 rows 2.0 s (shared), 1.1 s, 3.4 s;
 * at 20,000 rows 19.9 s, 3.1 s, 24.3 s. */
#define KM_SVM_AUTO_EXACT_ROWS 2000
km_svm_solver km_svm_resolve_solver(const km_svm_params *p, size_t n,
                                    size_t k);
/* Checks ranges, naming the field ("params.C must be a finite number > 0",
 * "params.class_weight[2] must be a finite number > 0"): KM_EINVAL;
 * probability or class_weight for svr is KM_EINVAL; for svc, n_classes
 * < 2 is KM_EPROBLEM ("y has 1 distinct class; svc needs at least 2").
 * The solver: unknown, nystrom for svr, probability with nystrom, a
 * seed above 2^53, with nystrom an unknown centres rule or precision
 * are KM_EINVAL
 * (n_centres against the rows and classes: km_svm_check_centres). */
km_status km_svm_check(const km_svm_params *p, km_algorithm algo,
                       size_t n_classes, km_error *err) KM_MUST_CHECK;
/* With the nystrom solver: n_centres above n_samples or below
 * n_classes is KM_EPROBLEM (422 in the API); KM_OK otherwise. */
km_status km_svm_check_centres(const km_svm_params *p, size_t n_samples,
                               size_t n_classes, km_error *err) KM_MUST_CHECK;
/* The name (KM_SVM_SOLVER_MAP); NULL for a value out of range. */
const char *km_svm_solver_name(km_svm_solver s);
/* The name (KM_SVM_PRECISION_MAP); NULL for an invalid value. */
const char *km_svm_precision_name(km_svm_precision p);

/* y: n class indices in [0, n_classes); every class must occur
 * (KM_EPROBLEM for fewer than 2 or a class without rows; KM_EINVAL for an
 * index out of range). Borrows all inputs; caller owns *out. The
 * training figures are "seconds", "iterations" (all solves), "objective"
 * (per pair), "n_support" (per class), "margin" (per pair, in the order
 * of "objective": 1/|w|, with |w|^2 = a^T Q a = 2 (objective + sum of
 * the pair's alphas) from LIBSVM's dual objective a^T Q a / 2 - sum a;
 * left out when some |w|^2 is not > 0, as a kernel that is not positive
 * semi-definite can give), and "iterations_capped" (solves stopped by
 * the iteration cap) when any was. KM_ECANCELLED when the progress
 * callback asks. */
km_status km_svc_fit(const km_kernel *k, const km_svm_params *p,
                     const double *X, size_t n, size_t d, const int *y,
                     size_t n_classes, const km_fit_control *ctl,
                     km_model **out, km_error *err) KM_MUST_CHECK;
/* y: n finite targets. Figures as svc with one objective and one
 * n_support. Borrows all inputs; caller owns *out. */
km_status km_svr_fit(const km_kernel *k, const km_svm_params *p,
                     const double *X, size_t n, size_t d, const double *y,
                     const km_fit_control *ctl, km_model **out,
                     km_error *err) KM_MUST_CHECK;

/* 0 / false for a model that is not svc. */
size_t km_svc_n_classes(const km_model *m);
int km_svc_has_probability(const km_model *m);

/* Predicted class indices (labels[n]), by one-vs-one voting; a tie goes
 * to the lowest class index (as LIBSVM). KM_ECONFLICT if not svc. */
km_status km_svc_predict(const km_model *m, const double *X, size_t n,
                         int *labels, km_error *err) KM_MUST_CHECK;
/* One-vs-one decision values: n rows of k(k-1)/2 values, pairs (0,1),
 * (0,2), ..., (k-2,k-1), positive meaning the first class of the pair.
 * (Binary: one value per row, and api flips the sign to sklearn's.) */
km_status km_svc_decision(const km_model *m, const double *X, size_t n,
                          double *out, km_error *err) KM_MUST_CHECK;
/* n rows of k class probabilities (Platt sigmoids per pair, coupled as
 * LIBSVM; each row sums to 1); KM_ECONFLICT without probability. */
km_status km_svc_probability(const km_model *m, const double *X, size_t n,
                             double *out, km_error *err) KM_MUST_CHECK;
/* SVR predictions, n values. KM_ECONFLICT if not svr. */
km_status km_svr_predict(const km_model *m, const double *X, size_t n,
                         double *out, km_error *err) KM_MUST_CHECK;

/* Peak bytes of a fit (kernel storage within cache_mb, solver workspace,
 * copies, the model), for admission control. km_svm_fit_bytes bounds
 * epsilon-SVR and binary C-SVC; km_svc_fit_bytes takes the class count. */
size_t km_svm_fit_bytes(size_t n, size_t d, const km_svm_params *p);
size_t km_svc_fit_bytes(size_t n, size_t d, size_t n_classes,
                        const km_svm_params *p);

/*
 * What a fitted svc or svr model keeps (borrowed, valid while the model
 * lives; 0 or NULL for other models). The nsv support vectors are grouped
 * by class (svc), in training order within a class.
 *   support_count    nsv
 *   n_support        svc: k counts, one per class
 *   support_indices  nsv indices of the training rows
 *   support_vectors  nsv x n_features
 *   dual_coef        svc: nsv x (k-1), LIBSVM's layout: a support vector
 *                    of class c has, for each other class b, its
 *                    coefficient y*alpha in pair (c, b) at column b if
 *                    b < c, else b-1; svr: nsv values alpha - alpha*
 *   rho              svc: one per pair, svr: one; decision value =
 *                    sum coef k(sv, x) - rho (scikit-learn's intercept_
 *                    is -rho, with the binary sign flipped)
 */
size_t km_svm_support_count(const km_model *m);
const int *km_svc_n_support(const km_model *m);
const int *km_svm_support_indices(const km_model *m);
const double *km_svm_support_vectors(const km_model *m);
const double *km_svm_dual_coef(const km_model *m);
const double *km_svm_rho(const km_model *m);

#ifdef __cplusplus
}
#endif
#endif /* KM_SVM_H */
