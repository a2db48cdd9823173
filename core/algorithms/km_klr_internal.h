/*
 * km_klr_internal.h - what kernel logistic regression's files share
 * (km_klr.c: checks, the exact solver, prediction, payload and
 * descriptor; km_klr_nys.c: the nystrom solver; km_klr_loss.c: the loss,
 * its residuals and the Newton iterations' start and progress): the
 * payload, a fit's state and a solver's result. Not installed;
 * core/algorithms only.
 */
#ifndef KM_KLR_INTERNAL_H
#define KM_KLR_INTERNAL_H

#include "km_algorithms_internal.h"
#include "km_klr.h"

/* What the q functions are. */
enum { KLR_BINARY = 0, KLR_MULTINOMIAL = 1, KLR_OVR = 2, KLR_KIND_COUNT };

typedef struct klr_payload {
    unsigned kind; /* KLR_* */
    double *X;     /* n x d training rows */
    double *coef;  /* n x q dual coefficients, row-major */
    double *b;     /* q intercepts (0 without fit_intercept) */
    double *xn;    /* n squared norms of X's rows (derived) */
} klr_payload;

/* What a fit works on: F column-major (n x q: F[c n + i] = f_c(x_i)). */
typedef struct klr_fit {
    unsigned kind;
    size_t n, q;
    const int *y;
    double lambda;
    int intercept;
    double *G;  /* n x n: K lower, B / its factor upper (row-major) */
    double *Kd; /* K's diagonal */
    double *A, *KA, *F, *b; /* n x q column-major each, q */
    double *Q, *KQ;         /* the gradient's parts, n x q */
    double *r, *w, *s, *z, *da, *kda, *v2, *kv2; /* n each */
    const km_fit_control *ctl;
    double frac, g0;
    /* binary: B's factor (and its S) kept across Newton steps (reuse)
     * until stale; kept: whether the last step used a kept factor; the
     * factorisations made */
    int reuse, stale, kept;
    size_t factors;
} klr_fit;

/* What a solver hands back: the payload's parts (its X, coef and b set;
 * rows of them), and the figures. */
typedef struct klr_result {
    klr_payload *pl;
    size_t rows;
    size_t its, cg_its, factors; /* nystrom: CG's products, Cholesky
                                    factorisations of H_c */
    double g, obj;
} klr_result;

/* km_klr_loss.c. The functions a fit of k classes learns (1 for 2
 * classes, else k); the logistic function; row i's target in block c (0
 * or 1). */
size_t km_klr_n_functions(size_t k);
double km_klr_sigmoid(double x);
double km_klr_target(const klr_fit *f, size_t c, size_t i);
/* The loss of row i with block c's value replaced by fc
 * (the others from F); the loss terms block c's value changes with f_c +
 * t D (all of them for multinomial; the block's own for binary and ovr);
 * the whole objective at the current point; r = p_c - t_c and w = p_c (1
 * - p_c) of block c at the current F (w may be NULL). */
double km_klr_row_loss(const klr_fit *f, size_t c, size_t i, double fc);
double km_klr_block_loss(const klr_fit *f, size_t c, double t,
                         const double *D);
double km_klr_objective(const klr_fit *f);
void km_klr_block_residual(const klr_fit *f, size_t c, double *r, double *w);
/* The starting point: a = 0, and with the intercept, b at the optimum of
 * the loss for a = 0 (the class frequencies' logits). */
void km_klr_start(klr_fit *f, const size_t *counts, size_t k);
/* Progress: how far the gradient g has come down from its first value
 * towards tol, on a log scale, from f0 to 0.95; never backwards. */
void km_klr_advance(klr_fit *f, double g, double tol, double f0);
/* f zeroed but for what both solvers set alike. */
void km_klr_fit_init(klr_fit *f, unsigned kind, size_t n, size_t q,
                     const int *y, const km_klr_params *params,
                     const km_fit_control *ctl);

/* The nystrom solver (km_klr_nys.c): Newton on the centres' coefficients
 * with CG on each block's system, into res (its payload's kind set). */
km_status km_klr_fit_nys(km_fit_frame *fr, const km_klr_params *params,
                         const double *X, size_t n, size_t d, const int *y,
                         size_t k, const size_t *counts,
                         const km_fit_control *ctl, klr_result *res,
                         km_error *err);

#endif /* KM_KLR_INTERNAL_H */
