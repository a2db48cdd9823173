/*
 * km_klr.h - kernel logistic regression (algorithms/km_klr.c).
 *
 * Part of libkm's public interface; include km.h, which includes every
 * area. Conventions and thread-safety as km.h says.
 */
#ifndef KM_KLR_H
#define KM_KLR_H

#include "../model/km_model.h"
#include "../solvers/km_solvers.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- KLR */

/*
 * Kernel logistic regression (km_klr.c says how it is solved): minimise
 *     sum_i loss_i + (lambda / 2) sum_c |f_c|_H^2,
 *     f_c(x) = sum_j a_jc k(x_j, x) + b_c,
 * b_c an unpenalised intercept (fit_intercept; else 0). Two classes: one
 * function, loss log(1 + exp(-y f)) with y = +1 for the second class
 * (whatever multi_class says, as scikit-learn's multi_class="auto");
 * more: multinomial (softmax loss over k functions) or ovr (k binary
 * problems, class c against the rest). With the linear kernel it is
 * scikit-learn's LogisticRegression(C = 1/lambda) with w_c = X^T a_c.
 */
#define KM_KLR_MULTI_MAP(X)                                                  \
    X(KM_KLR_MULTINOMIAL, "multinomial")                                     \
    X(KM_KLR_OVR, "ovr")
typedef enum km_klr_multi {
    KM_KLR_MULTI_MAP(KM_CHOICE_ENUM)
    KM_KLR_MULTI_COUNT
} km_klr_multi;
extern const km_choices km_klr_multi_choices;

#define KM_KLR_MAX_ITER 100000

/* How a klr fit solves (the numbers are those of the figure "solver":
 * an entry's place in the list, km_base.h's choices). */
#define KM_KLR_SOLVER_MAP(X)                                                 \
    /* Newton on the n dual coefficients */                                  \
    X(KM_KLR_SOLVER_EXACT, "exact")                                          \
    /* Newton on m Nystrom features */                                       \
    X(KM_KLR_SOLVER_NYSTROM, "nystrom")
typedef enum km_klr_solver {
    KM_KLR_SOLVER_MAP(KM_CHOICE_ENUM)
    KM_KLR_SOLVER_COUNT
} km_klr_solver;
extern const km_choices km_klr_solver_choices;

typedef struct km_klr_params {
    double lambda;       /* > 0, default 1 (scikit-learn's C = 1/lambda) */
    double tol;          /* > 0, default 1e-8: stop when the gradient's
                            2-norm is at most this */
    size_t max_iter;     /* 1 .. KM_KLR_MAX_ITER, default 100: Newton
                            iterations (multinomial: sweeps over the
                            classes, one Newton step each) */
    int fit_intercept;   /* default 1 */
    km_klr_multi multi_class; /* more than two classes; default
                                 MULTINOMIAL */
    km_klr_solver solver;     /* default EXACT */
    size_t n_centres;         /* nystrom: m, 1 .. n; 0 (default): as krr's
                               * (km_krr_centres) */
    uint64_t seed;            /* nystrom: the centres' draw, <= 2^53 */
    km_krr_centre_rule centres; /* nystrom: default UNIFORM */
} km_klr_params;

km_klr_params km_klr_params_default(void);
/* KM_EINVAL naming the field: params.lambda or params.tol not a finite
 * number > 0, params.max_iter outside [1, KM_KLR_MAX_ITER],
 * params.fit_intercept not 0 or 1, params.multi_class, params.solver or
 * params.centres unknown, params.seed above 2^53; KM_EPROBLEM for one
 * class or (nystrom) params.n_centres above n_samples (422 in the
 * API). */
km_status km_klr_check(const km_klr_params *p, size_t n_samples,
                       size_t n_classes, km_error *err) KM_MUST_CHECK;
/* The name (KM_KLR_SOLVER_MAP); NULL if invalid. */
const char *km_klr_solver_name(km_klr_solver s);
/* The name (KM_KLR_MULTI_MAP); NULL if invalid. */
const char *km_klr_multi_name(km_klr_multi m);

/*
 * y: n class indices in [0, n_classes), every class present (KM_EPROBLEM
 * otherwise). Borrows all inputs; caller owns *out. n_outputs of the
 * model: 1 for two classes, else n_classes (the functions). Params
 * figures: "lambda", "tol", "max_iter", "fit_intercept" (boolean),
 * "multi_class" (integer: KM_KLR_*), "solver" (integer: KM_KLR_SOLVER_*)
 * and, for nystrom, "n_centres" (kept), "seed", "centres". Training
 * figures: "seconds", "iterations" (Newton iterations; exact
 * multinomial: sweeps over the classes), "gradient_norm" (2-norm of the
 * objective's gradient in the coefficients and intercepts where it
 * stopped: at most tol unless max_iter or rounding stopped it first; for
 * nystrom in the primal weights w of the features), "objective" (its
 * value there), "solver", "factorizations" (Cholesky factorisations
 * made: exact binary keeps one across chord steps), and for nystrom
 * "cg_iterations" (Hessian products of its Newton-CG steps).
 * KM_ENOTPD when the kernel is not positive semi-definite enough for the
 * Newton system's Cholesky; KM_ECANCELLED when ctl asks (between panels
 * of each factorisation, or row blocks of nystrom's passes).
 *
 * params.solver NYSTROM: m = km_krr_centres-like n_centres centres Z
 * (uniform or rpcholesky, seeded, as krr's nystrom), features
 * phi(x) = T^-T k(Z, x) with T^T T = K_mm (+ a tiny shift if singular),
 * and Newton on the penalised logistic loss in the m primal weights w
 * per function (+ intercepts): klr restricted to f = sum_j c_j k(z_j, .),
 * c = T^-1 w. The model is an ordinary klr model whose training rows are
 * the m centres and whose coefficients are c: predict costs O(m d) per
 * row. Memory O(n m + q m^2) (Phi is held whole).
 */
km_status km_klr_fit(const km_kernel *k, const km_klr_params *p,
                     const double *X, size_t n, size_t d, const int *y,
                     size_t n_classes, const km_fit_control *ctl,
                     km_model **out, km_error *err) KM_MUST_CHECK;
/* Class indices (labels[n]): the argmax of km_klr_probability's row, the
 * first on ties. KM_ECONFLICT if not klr. */
km_status km_klr_predict(const km_model *m, const double *X, size_t n,
                         int *labels, km_error *err) KM_MUST_CHECK;
/* Decision values f_c(x): n rows of n_outputs values (two classes: one,
 * positive for the second class, as scikit-learn's). */
km_status km_klr_decision(const km_model *m, const double *X, size_t n,
                          double *out, km_error *err) KM_MUST_CHECK;
/* n rows of k class probabilities, each row summing to 1: sigmoid (two
 * classes), softmax (multinomial), normalised sigmoids (ovr). */
km_status km_klr_probability(const km_model *m, const double *X, size_t n,
                             double *out, km_error *err) KM_MUST_CHECK;
/* Bytes a fit of this size needs at its peak (for admission control):
 * exact: one n x n matrix plus O(n (d + k)); nystrom: O(n m + k m^2 +
 * n (d + k)) (plus rpcholesky's n x m factor while it runs). */
size_t km_klr_fit_bytes(size_t n, size_t d, size_t n_classes,
                        const km_klr_params *p);

#ifdef __cplusplus
}
#endif
#endif /* KM_KLR_H */
