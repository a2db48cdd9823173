/*
 * km_solvers_internal.h - what the algorithms share of solvers/ and the
 * public header hides: the param rows of the nystrom solvers' settings,
 * the centres' rules and the Nystrom machinery (km_nystrom.c), Falkon's
 * solve (km_falkon.c) and the eigensolvers (km_eigen.c). The SVM
 * solvers' own are km_svm_solve.h's.
 *
 * Not installed; never included outside core/ (and its tests). Includes
 * the internal header of kernels/ (and through it base's), nothing of a
 * room above. Thread-safety as km.h.
 */
#ifndef KM_SOLVERS_INTERNAL_H
#define KM_SOLVERS_INTERNAL_H

#include "../kernels/km_kernel_internal.h"
#include "km_solvers.h"

/* ------------------------------------------------------- params */

/* The rows of the nystrom solvers' settings that krr and gpr share (the
 * members of the same names of T), applying where cond says.
 * n_centres: its type and lower bound in the row (the reader's 400); its
 * upper bound, n_samples, in core's check (km_nys_check_centres: 422), as
 * kpca's n_components. */
#define KM_NYS_N_CENTRES_ROW(T, cond)                                        \
    {.key = "n_centres", .type = KM_PARAM_INTEGER,                           \
     KM_PARAM_FIELD(T, n_centres), .range = KM_PARAM_RANGE_READER,           \
     .min = 1, .max = INT_MAX, .data_default = 1,                            \
     .data_bound = "the number of rows of X", cond,                          \
     .doc = "nystrom and auto only: centres; default min(n, "                \
            "ceil(sqrt(n) ln n) within [1000, 10000]); above n_samples "     \
            "is 422"}
#define KM_NYS_CG_ROWS(T, cond)                                              \
    {.key = "cg_tol", .type = KM_PARAM_NUMBER, KM_PARAM_FIELD(T, cg_tol),    \
     KM_PARAM_POSITIVE, cond,                                                \
     .doc = "nystrom and auto only: stop when every output's "               \
            "relative residual is at most this"},                            \
    {.key = "cg_max_iter", .type = KM_PARAM_INTEGER,                         \
     KM_PARAM_FIELD(T, cg_max_iter), .range = KM_PARAM_RANGE_READER,         \
     .min = 1, .max = INT_MAX, cond,                                         \
     .doc = "nystrom and auto only: most conjugate-gradient iterations"}
/* params.centres of a nystrom solver (krr's, gpr's, svc's): the same
 * rule, names and check (km_nys_check_rule); which solvers it applies to
 * (the condition, last: it expands to several members) and what its
 * factor is for differ. */
#define KM_CENTRES_ROW(T, scope, factor, ...)                                \
    {.key = "centres", .type = KM_PARAM_CHOICE, KM_PARAM_FIELD(T, centres),  \
     .choices = &km_krr_centres_choices, __VA_ARGS__,                        \
     .doc = scope ": how the centres are picked: uniform (without "          \
                  "replacement) or rpcholesky (randomly pivoted Cholesky, "  \
                  factor ")"}
#define KM_NYS_CENTRES_ROW(T, cond)                                          \
    KM_CENTRES_ROW(T, "nystrom and auto only",                               \
                   "which holds an n x m factor while it runs", cond)

/* ------------------------------------------------------- nystrom */

/*
 * Falkon's solve for krr's nystrom solver (km_falkon.c, where the method
 * is written out): the coefficients C (m x p) of the centres Z (m rows of
 * d features, zn their squared norms) solving (K_nm^T K_nm + alpha K_mm)
 * C = K_nm^T Y for X's n rows and Y's p outputs (n x p), by CG with
 * Falkon's preconditioner from C = 0, each output until its relative
 * residual is at most cg_tol, at most cg_max_iter iterations. k is
 * resolved. ctl (may be NULL) may cancel; its threads run the fused pass
 * (at most KM_FALKON_MAX_THREADS). Progress: f_pre once the
 * preconditioner is factored, then to 0.95.
 */
#define KM_FALKON_MAX_THREADS 8
/* Up to this many right-hand sides, a triangular or symmetric product
 * with an n x n matrix runs the level-2 routine column by column, which
 * OpenBLAS runs about four times faster than the level-3 one on so few
 * columns (n = 10,000, one column: 0.03 s against 0.12 s a pass over an
 * exact factor): km_chol_update.c's and the falkon CG's. */
#define KM_FEW_COLUMNS 4
typedef struct km_falkon {
    const km_kernel *k;
    const double *X;
    size_t n, d;
    const double *Y;
    size_t p;
    const double *Z, *zn;
    size_t m;
    double alpha, cg_tol;
    size_t cg_max_iter;
    const km_fit_control *ctl;
    double f_pre;
    /* The update's form (krr's keep_factor): with G (m x m, symmetric,
     * K_nm^T K_nm) and KtY (m x p row-major, K_nm^T Y) of n rows, X and Y
     * are not read (NULL) and a pass over the data is a product with G.
     * C0 (m x p row-major, or NULL: zero): CG's warm start; the
     * tolerance is still relative to the residual at C = 0, |B^T K_nm^T
     * Y|, as a fit's. */
    const double *G, *KtY, *C0;
} km_falkon;
/* C (m x p, row-major, caller-allocated) and rkhs[j] = C_j^T K_mm C_j (p
 * values); *iterations and *residual (the largest relative residual of
 * the outputs at the end); history, when not NULL, gets that residual
 * before the first iteration and after each (at most cg_max_iter + 1
 * values), *n_history how many. KM_ENOTPD when the preconditioner does
 * not factor or C is not finite, KM_ENOMEM, KM_ECANCELLED. */
km_status km_falkon_solve(const km_falkon *fk, double *C, double *rkhs,
                          size_t *iterations, double *residual,
                          double *history, size_t *n_history, km_error *err);

/* The sufficient statistics of the nystrom normal equations, added to:
 * G += K_nm^T K_nm (m x m, both triangles) and KtY += K_nm^T Y (m x p
 * row-major) for X's n rows (d features) and Y's p outputs, K_nm of
 * centres Z (zn their squared norms) in row blocks. k resolved.
 * KM_EPROBLEM when a kernel value is not finite, KM_ENOMEM. */
km_status km_nys_stats_add(const km_kernel *k, const double *X, size_t n,
                           size_t d, const double *Y, size_t p,
                           const double *Z, const double *zn, size_t m,
                           double *G, double *KtY, km_error *err);

/* The centres' draw of the nystrom solver: m sorted distinct indices of
 * [0, n) into idx (n entries of room: a partial Fisher-Yates shuffle by
 * km_rng seeded with seed, then the first m sorted). */
void km_krr_draw_centres(uint64_t seed, size_t n, size_t m, size_t *idx);
/* The rpcholesky centres of the nystrom solver (km_nystrom.c, where the
 * algorithm and its draws are written out): at most m pivots of K =
 * k(X, X) into piv (m entries of room), in the order chosen, *kept how
 * many (fewer than m when K's numerical rank is reached). k is resolved
 * (its gamma set). Progress from f0 to f1 through ctl (may be NULL),
 * which may cancel. KM_ENOMEM when the n x m factor cannot be held. */
km_status km_krr_rpcholesky(const km_kernel *k, const double *X, size_t n,
                            size_t d, size_t m, uint64_t seed, size_t *piv,
                            size_t *kept, const km_fit_control *ctl,
                            double f0, double f1, km_error *err);
/*
 * The centres of the nystrom solvers by rule (params.centres; krr's,
 * klr's and kpca's through km_nys_pick, svc's with F): m indices of X's
 * n rows into idx (n entries of room), *kept how many (m, or fewer with
 * RPCHOLESKY when K's numerical rank is reached; KM_EINVAL when n or m
 * times its block of proposals passes BLAS's ints). UNIFORM: km_krr_draw_centres, sorted. RPCHOLESKY:
 * km_krr_rpcholesky's pivots, sorted when F is NULL; with F, in the order
 * chosen, and *F (the caller's to free) gets randomly pivoted Cholesky's
 * own factor, row-major n x *kept: F F^T = K(:, P) K(P, P)^-1 K(P, :) for
 * the pivots P (to rounding), F(P, :) lower triangular, so F = K(:, P)
 * L^-T with L = F(P, :), L L^T = K(P, P): Nystrom features on P, as
 * cheap as the pivots themselves. With UNIFORM *F is NULL. Progress from
 * f0 to f1 (RPCHOLESKY only).
 */
km_status km_nys_centres(const km_kernel *k, km_krr_centre_rule rule,
                         uint64_t seed, const double *X, size_t n, size_t d,
                         size_t m, size_t *idx, size_t *kept, double **F,
                         const km_fit_control *ctl, double f0, double f1,
                         km_error *err);
/* KM_EINVAL naming params.centres unless it is a rule of
 * km_krr_centre_rule (krr's and gpr's through km_nys_check_params,
 * klr's and svc's checks). */
km_status km_nys_check_rule(km_krr_centre_rule rule, km_error *err);
/* Bytes randomly pivoted Cholesky of m pivots on n rows of d features
 * holds beside its n x m factor. */
size_t km_nys_rpcholesky_bytes(size_t n, size_t d, size_t m);
/* KM_EPROBLEM naming params.n_centres when it is above n_samples (the
 * nystrom solvers of krr, svc, kpca and gpr); KM_OK otherwise. */
km_status km_nys_check_centres(size_t n_centres, size_t n_samples,
                               km_error *err);
/* T (m x m) := the upper Cholesky factor of K_mm + s I of the centres Z
 * (column-major, strict lower part zeroed), computing K_mm into T, with
 * the smallest shift s = 1e-13 m mean(diag K_mm) times 1, 10^3, ...,
 * 10^12 that factors (s = 0 first when unshifted_first: kpca, whose
 * answer the shift would perturb by about s over K_mm's smallest
 * eigenvalue, where krr uses T only as a preconditioner); *shift gets s
 * (every nystrom solver). KM_ENOTPD when none does. */
km_status km_nys_factor_kmm(const km_kernel *k, const double *Z, size_t m,
                            size_t d, int unshifted_first, double *T,
                            double *shift, km_error *err);

/*
 * The Nystrom machinery the nystrom solvers share (km_nystrom.c).
 * km_nys_n_centres: m for n rows, asked when not 0, else min(n,
 * ceil(sqrt(n) ln n)) within [KM_KRR_DEFAULT_CENTRES,
 * KM_KRR_MAX_DEFAULT_CENTRES]. km_nys_pick: the centres' rows into Z
 * (*m x d, row-major, in the order of X): given (*m sorted, distinct
 * indices) when not NULL, else by rule (km_nys_centres, sorted, seeded
 * with seed; *m may fall to the number
 * rpcholesky kept), progress from f0 to f1 through ctl. km_nys_centres_values:
 * the doubles picking by rule holds beyond Z (rpcholesky's n x m factor
 * and its work; 0 for uniform). km_nys_block_rows: rows of a block of
 * K_nm (about 2^21 values; krr's, klr's, kpca's and gpr's nystrom
 * solvers). The
 * K_mm factor is km_nys_factor_kmm above.
 */
size_t km_nys_n_centres(size_t asked, size_t n);
km_status km_nys_pick(const km_kernel *k, const double *X, size_t n,
                      size_t d, const size_t *given, km_krr_centre_rule rule,
                      uint64_t seed, size_t *m, double *Z,
                      const km_fit_control *ctl, double f0, double f1,
                      km_error *err);
size_t km_nys_centres_values(size_t n, size_t d, size_t m,
                             km_krr_centre_rule rule);
size_t km_nys_block_rows(size_t n, size_t m);

/* The nystrom solvers' checks of their params that do not depend on the
 * data (krr's and gpr's): KM_EINVAL naming params.centres (not a rule),
 * params.cg_tol (not a finite number > 0), params.cg_max_iter (0) or
 * params.seed (above 2^53). */
km_status km_nys_check_params(km_krr_centre_rule centres, double cg_tol,
                              size_t cg_max_iter, uint64_t seed,
                              km_error *err);

/* ------------------------------------------------------- eigensolvers */

/*
 * The top nc eigenpairs of the symmetric K (n x n, row-major lower
 * triangle; destroyed) by the solver s asks for (km_eigen.c: dense,
 * iterative, randomized; auto: iterative when km_eig_use_iterative, else
 * dense), dense taking over when an iterative one does not converge:
 * lambda descending, U (n x nc, column-major) in the same order; *solver
 * the one that gave them, *fallback whether dense took over, *products
 * the block products made; *min_eig the smallest eigenvalue when the
 * dense solver gave them (it computes them all), else NaN. ctl (may be
 * NULL) may cancel.
 */
km_status km_eig_top(double *K, size_t n, size_t nc, km_kpca_solver s,
                     const km_fit_control *ctl, double *lambda, double *U,
                     int *solver, int *fallback, size_t *products,
                     double *min_eig, km_error *err);
/* The dense solver alone (km_eig_top's fallback), at most 36 n doubles
 * of work beyond U; *min_eig (min_eig may be NULL) the smallest
 * eigenvalue. */
km_status km_eig_dense(double *K, size_t n, size_t k, double *lambda,
                       double *U, double *min_eig, km_error *err);
/* Centres the symmetric K (n x n, row-major lower triangle) in place as
 * kernel PCA does (sklearn's KernelCenterer): col_mean gets the column
 * means, *grand their mean, *trace the trace of the centred matrix. */
void km_eig_center(double *K, size_t n, double *col_mean, double *grand,
                   double *trace);
/* Flips each column of U (n x k, column-major) so that its entry of
 * largest magnitude (the first, on ties) is positive. */
void km_eig_flip_signs(double *U, size_t n, size_t k);
/* The iterative solver's block for k pairs, the randomized one's sample
 * width for k of n, and whether s (auto) runs the iterative one: what
 * kpca's memory estimate counts. */
size_t km_eig_iter_block(size_t k);
/* Krylov blocks per restart cycle of the iterative solver: its basis is
 * KM_EIG_ITER_DEPTH blocks. */
#define KM_EIG_ITER_DEPTH 6
size_t km_eig_rand_width(size_t k, size_t n);
int km_eig_use_iterative(size_t n, size_t k, km_kpca_solver s);

#endif /* KM_SOLVERS_INTERNAL_H */
