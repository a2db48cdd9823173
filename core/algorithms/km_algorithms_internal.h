/*
 * km_algorithms_internal.h - what the algorithms' files share with each
 * other, with select/'s engines and with core's tests, beyond the public
 * headers: kernel ridge regression's solve (km_krr.c), which krr, gpr,
 * kpca and the krr search use; the nystrom and rff parts of krr and gpr;
 * an auto fit's figures; kernel k-means' seeding; an svm fit on a shared
 * Gram (km_svm_fit.c). An algorithm's own files share more through its
 * own header (km_gpr_internal.h, km_svm_payload.h, ...), which includes
 * this one.
 *
 * Not installed; never included outside core/ (and its tests). Includes
 * the internal headers of model/ and solvers/ (and through them those
 * of kernels/ and base/), nothing of select/. Thread-safety as km.h.
 */
#ifndef KM_ALGORITHMS_INTERNAL_H
#define KM_ALGORITHMS_INTERNAL_H

#include "../model/km_model_internal.h"
#include "../solvers/km_solvers_internal.h"
#include "km_gpr.h"
#include "km_kkmeans.h"
#include "km_krr.h"

/* ------------------------------------------------------- solves */

/*
 * Kernel ridge regression's solve, shared by KRR and KPCA's inverse map:
 * C = (G + alpha I)^-1 Y. G (n x n, row-major) holds the kernel matrix in
 * its lower triangle and is destroyed (alpha is added, then the Cholesky
 * factor replaces it); Y (n x m, row-major) is borrowed; C (n x m,
 * row-major, caller-allocated) gets the solution. what names G in the
 * KM_ENOTPD message ("the kernel matrix"). Progress goes from f0 to f1
 * through ctl (may be NULL), which may cancel (KM_ECANCELLED).
 */
km_status km_krr_solve(double *G, size_t n, double alpha, const double *Y,
                       size_t m, double *C, const char *what,
                       const km_fit_control *ctl, double f0, double f1,
                       km_error *err);

/*
 * The nystrom solver of km_krr_fit with what tests need (km_krr.c, its
 * solve km_falkon_solve):
 * centres, when not NULL, are the m sorted, distinct row indices to use
 * instead of the seeded draw (m = km_krr_centres(p, n)); history, when
 * not NULL, gets the largest relative residual of the outputs before the
 * first iteration and after each (at most p->cg_max_iter + 1 values) and
 * *n_history how many. p->solver must be NYSTROM.
 */
km_status km_krr_fit_nystrom(const km_kernel *k, const km_krr_params *p,
                             const double *X, size_t n, size_t d,
                             const double *Y, size_t m, const size_t *centres,
                             double *history, size_t *n_history,
                             const km_fit_control *ctl, km_model **out,
                             km_error *err);

/* gpr's nystrom solver (km_gpr_nys.c), with the centres, when not NULL,
 * given as m sorted, distinct row indices (m = p->n_centres, or its
 * default) instead of the seeded draw, as km_krr_fit_nystrom's.
 * p->solver must be NYSTROM. */
km_status km_gpr_fit_nystrom(const km_kernel *k, const km_gpr_params *p,
                             const double *X, size_t n, size_t d,
                             const double *y, const size_t *centres,
                             const km_fit_control *ctl, km_model **out,
                             km_error *err);

/*
 * The rff solver's draw: for feature i = 0 .. D-1 in turn, its row of W
 * (d values) then its phase b[i] = pi (1 + u) from one km_rng_uniform u
 * (so in [0, 2 pi)), from one km_rng seeded with seed. A row of W is
 * drawn by the kernel's spectral density (km_kernel_spectral_draw: the
 * kernel table's, kernels/km_kernel.c, says how for each type; a leaf on
 * chosen columns draws over those, the row's other entries 0).
 * KM_EINVAL for a kernel without one (km_krr_check_kernel).
 */
km_status km_krr_rff_draw(const km_kernel *k, uint64_t seed, size_t D,
                          size_t d, double *W, double *b, km_error *err);

/* An rff model's W (D x d) and b (D), borrowed; KM_OK, or KM_ECONFLICT
 * if m is not a krr model of the rff form. */
km_status km_krr_rff_features(const km_model *m, const double **W,
                              const double **b);
/* A dual-form krr model's training rows (the centres of a nystrom fit,
 * n_samples x n_features) and coefficients (n_samples x n_outputs),
 * borrowed; KM_OK, or KM_ECONFLICT if m is not a krr model of the dual
 * form (gpr's nystrom solver takes its mean from krr's). */
km_status km_krr_dual(const km_model *m, const double **X,
                      const double **coef);

/* An auto fit's figures (krr's and gpr's): the params figure "solver"
 * set to auto_solver, the training figures "solver" (run, the one that
 * ran) and "memory_budget_mb" (budget, in MiB). KM_ENOMEM on failure. */
km_status km_auto_figures(km_model *model, int auto_solver, int run,
                          size_t budget);

/* ------------------------------------------------------- kernel k-means */

/*
 * km_kkmeans_fit with one run from given centres, for tests (km_kkmeans.c):
 * init holds p->n_clusters row indices of X (p->n_init and p->seed are
 * not used, only recorded). KM_EINVAL for an index out of range.
 */
km_status km_kkmeans_fit_init(const km_kernel *k, const km_kkmeans_params *p,
                              const double *X, size_t n, size_t d,
                              const size_t *init, const km_fit_control *ctl,
                              km_model **out, km_error *err);
/* One run's k-means++ centres (km_kkmeans.h): k row indices into centres, from
 * the full Gram matrix K (n x n, row-major), drawing from r. KM_ENOMEM
 * when its O(n) buffers cannot be had. */
km_status km_kkmeans_plusplus(const double *K, size_t n, size_t k,
                              km_rng *r, size_t *centres, km_error *err);

/* ------------------------------------------------------- search */

/*
 * A Gram matrix of a superset of a fit's rows, for svc and svr fits of
 * several folds of one kernel setting: K (n_all x n_all, full) of the
 * points X_all, computed by the caller with km_gram_sym and the fit's
 * kernel resolved for the same d; row i of the fit's problem is point
 * index[i]. The solves gather their kernel columns from K instead of
 * computing them (as an svc fit does from its own Gram of all its rows).
 */
typedef struct km_shared_gram {
    const double *K;
    const double *X_all;
    size_t n_all;
    const size_t *index;
} km_shared_gram;
/* km_svc_fit or km_svr_fit (a) of pb with its columns from sg
 * (km_svm_fit.c). pb's rows must be X_all's rows index[i]. */
km_status km_svm_fit_shared(km_algorithm a, const km_kernel *k,
                            const km_svm_params *p, const km_problem *pb,
                            const km_shared_gram *sg,
                            const km_fit_control *ctl, km_model **out,
                            km_error *err);

/*
 * An exact fit's Cholesky factor L (n x n, lower) in row blocks shared by
 * the factors an update makes from it (km_factor.c). Row i's columns
 * 0 .. i are contiguous (km_factor_row); everything else goes through
 * the routines below. Matrices are row-major.
 */
typedef struct km_fblock km_fblock;
typedef struct km_factor {
    size_t n, nb; /* rows; blocks */
    km_fblock **b;
} km_factor;
/* Past this many blocks an update merges them into one. */
#define KM_FACTOR_BLOCKS 32

/* The factor whose one block is L (n x n row-major, its lower triangle
 * the factor), taken (freed on failure: NULL when out of memory). */
km_factor *km_factor_wrap(double *L, size_t n);
void km_factor_free(km_factor *F);
/* Row i: its columns 0 .. i. */
const double *km_factor_row(const km_factor *F, size_t i);
/* B (nr x n, row stride ldb) := scale B L^-T. */
void km_factor_solve_rt(const km_factor *F, double scale, double *B,
                        size_t nr, size_t ldb);
/* C (n x m) := L^T C. */
void km_factor_lt(const km_factor *F, double *C, size_t m);
/* Z (n x m) := L^-1 Z for the rows from `from` on (a block's first row;
 * 0: all), Z's rows above it being L^-1 Z's already. */
void km_factor_forward(const km_factor *F, size_t from, double *Z, size_t m);
/* C (n x m) := L^-T C. */
void km_factor_back(const km_factor *F, double *C, size_t m);
/* The doubles km_factor_grow allocates for k rows (the new block, or all
 * of a merged factor). */
uint64_t km_factor_grow_values(const km_factor *F, size_t k);
/* *out := the factor of [A11 A21^T; A21 A22] for F's A11 = L L^T: A
 * (k x (n + k), row stride n + k, taken) holds [A21 A22], A22's lower
 * triangle; it becomes the new block [L21 L22] (L21 = A21 L^-T by
 * km_factor_solve_rt, L22 the factor of A22 - L21 L21^T by DSYRK and
 * DPOTRF). F's blocks are shared, not copied. KM_ENOTPD naming the row
 * when the Schur complement is not positive definite. */
km_status km_factor_grow(const km_factor *F, double *A, size_t k,
                         km_factor **out, km_error *err);
/* A loader's check: KM_ECORRUPT (naming `what`) unless finite with a
 * diagonal > 0. */
km_status km_factor_check(const km_factor *F, const char *what,
                          km_error *err);
/* The factor in a model file: its lower triangle row by row (km_tri_*);
 * or, in a file of format KM_FORMAT_BLOCKS (w->format), its block list:
 * u32 count, then for each block u64 id, u64 first row, u64 rows, u32
 * where: 0 and the block's rows (row r's first r + 1 values), or 1 and
 * the rows in a block file of its own, put through w->blocks
 * (docs/model-format.md "Factor blocks"). km_factor_read reads either
 * (blocks: whether the file lists blocks; block files through
 * r->blocks); NULL with err set (KM_ECORRUPT for a bad list or block
 * file, r->failed also set; KM_ENOMEM). */
void km_factor_write(km_writer *w, const km_factor *F);
km_factor *km_factor_read(km_reader *r, size_t n, int blocks, km_error *err);
/* The bytes of the factor's triangle (what a file holds inline). */
uint64_t km_factor_bytes(const km_factor *F);
/* A payload range's (*lo, *hi) for a block list of 1 to n blocks after
 * *lo bytes: *lo := the least, *hi := the most. */
void km_factor_refs_range(uint64_t n, uint64_t *lo, uint64_t *hi);

/*
 * Updates of an exact fit by k new rows (km_chol_update.c), for gpr's and
 * krr's descriptors' update entries: A = s k(X, X) + shift I on n rows X
 * (d features) has the factor F; *out := the factor of the matrix on
 * [X; Xn] (km_factor_grow on the new rows' kernel values). The solve
 * reuses it: z1 = L^-1 y1 = L^T a (km_factor_lt on the old coefficients
 * a), then km_factor_forward from row n and km_factor_back.
 */
km_status km_chol_extend(const km_kernel *ker, double s, double shift,
                         const km_factor *F, const double *X, size_t d,
                         const double *Xn, size_t k, km_factor **out,
                         km_error *err);
/* Rows [X; Xn] (n then k rows of d) into a new buffer; NULL on OOM. */
double *km_rows_concat(const double *X, size_t n, const double *Xn, size_t k,
                       size_t d);
/* What the nystrom updates (krr's, gpr's) share: a copy of n doubles of
 * src (NULL on OOM), and a number of m's params (cg_tol, cg_max_iter),
 * or def when it has none. */
double *km_doubles_dup(const double *src, size_t n);
double km_model_param(const km_model *m, const char *key, double def);
/* An n x n row-major lower triangle in a model file, by rows, as one
 * f64s (gpr's factors, krr's kept factor): its count of values
 * (saturating), the writer, and the reader into a new n x n matrix
 * (upper triangle 0; NULL with r->failed set on a bad count, NULL alone
 * when out of memory). */
uint64_t km_tri_values(uint64_t n);
void km_tri_write(km_writer *w, const double *L, size_t n);
double *km_tri_read(km_reader *r, size_t n);
/* Rows r0 .. r0 + rows - 1 of a lower triangle, row r0 + i at v + i * ld,
 * its first r0 + i + 1 values, as the file holds them (the triangle's
 * rows above; km_factor.c's blocks): no count. The reader stops at a
 * short read (r->failed). */
void km_tri_rows_write(km_writer *w, const double *v, size_t ld, size_t r0,
                       size_t rows);
void km_tri_rows_read(km_reader *r, double *v, size_t ld, size_t r0,
                      size_t rows);
/* The same made symmetric (the nystrom sums' K_nm^T K_nm). */
double *km_tri_read_sym(km_reader *r, size_t n);
/* A loader's check of the n x n sums of products S (its lower triangle
 * and diagonal are read): KM_ECORRUPT, the message naming `what`, unless
 * every value is finite, the diagonal >= 0 and |S_ij| <= sqrt(S_ii S_jj)
 * (Cauchy-Schwarz, with room for round-off), as sums of products of real
 * rows are (krr's and gpr's nystrom sums). */
km_status km_sums_check(const double *S, size_t n, const char *what,
                        km_error *err);

#endif /* KM_ALGORITHMS_INTERNAL_H */
