/*
 * km_spd.h - the exact kernel solve (K + alpha I) C = Y in packed storage,
 * in mixed precision with refinement or in double (solvers/km_spd.c).
 *
 * Not installed; included by core/algorithms only. Thread-safety:
 * reentrant.
 */
#ifndef KM_SPD_H
#define KM_SPD_H

#include "../kernels/km_kernel_internal.h"

/* Why a mixed solve fell back to the double factor (the training figure
 * "fallback"): the float factorisation failed (K + alpha I is not
 * positive definite in single precision, or its values overflow float),
 * or refinement did not reach the double backward error. */
enum { KM_SPD_FALLBACK_NONE = 0, KM_SPD_FALLBACK_FLOAT_FACTOR = 1,
       KM_SPD_FALLBACK_STALLED = 2 };

/* What a solve did. */
typedef struct km_spd_report {
    int mixed;      /* 1: the solution came from the float factor refined
                     * in double; 0: from the double factor */
    int fallback;   /* KM_SPD_FALLBACK_*: why a mixed solve ran double */
    size_t steps;   /* refinement steps (products with K + alpha I) */
    double backward_error; /* max over outputs of |r|_inf / (|A|_inf
                            * |x|_inf) after refinement; -1 when none ran */
} km_spd_report;

/* Most products with K + alpha I a mixed solve's refinement runs before
 * it falls back to the double factor. */
#define KM_SPD_MAX_STEPS 12

/*
 * Solves (K + alpha I) C = Y for K = k(X, X) (X: n rows of d; Y, C: n x m
 * row-major). K's lower triangle is held once, in LAPACK's rectangular
 * full packed form (n (n + 1) / 2 values), computed in double blocks of
 * rows (km_gram_block).
 *   mixed: stored and factored in float (half the bytes of the double
 *   factor, SPOTRF/SSYRK speed), then the solution refined in double by
 *   conjugate gradients preconditioned with the float factor, each
 *   residual y - (K + alpha I) x computed in double from kernel blocks
 *   recomputed from X, until every output's residual meets LAPACK
 *   DSPOSV's backward-error test |r|_inf <= |x|_inf |A|_inf eps sqrt(n);
 *   when the float factor fails or refinement does not get there in
 *   KM_SPD_MAX_STEPS products, the double factor is computed (the float
 *   buffer freed first) and used instead.
 *   otherwise: the double factor directly.
 * Progress f0 .. f1 by blocks; KM_ECANCELLED between blocks; KM_ENOTPD
 * (naming the row) when K + alpha I is not positive definite in double;
 * KM_EPROBLEM for values that are not finite.
 */
km_status km_spd_kernel_solve(const km_kernel *k, const double *X, size_t n,
                              size_t d, double alpha, const double *Y,
                              size_t m, double *C, int mixed,
                              km_spd_report *rep, const km_fit_control *ctl,
                              double f0, double f1,
                              km_error *err) KM_MUST_CHECK;

/* The most bytes km_spd_kernel_solve holds at once, either path (a mixed
 * solve that falls back holds the double factor): saturating. */
size_t km_spd_kernel_solve_bytes(size_t n, size_t m);

#endif /* KM_SPD_H */
