/*
 * km_kernel_internal.h - what core's rooms share of kernels/ and the
 * public header hides: the kernel table's row (km_kernel_desc) and what
 * reads it, a kernel in the model format, X's scale check, and the
 * expansion and cross-Gram helpers of prediction (km_kernel.c).
 *
 * Not installed; never included outside core/ (and its tests). Includes
 * base's internal header, nothing of a room above. Thread-safety as km.h.
 */
#ifndef KM_KERNEL_INTERNAL_H
#define KM_KERNEL_INTERNAL_H

#include "../base/km_base_internal.h"
#include "km_kernel.h"

/* ------------------------------------------------------- kernels */

/*
 * A kernel type's row of the kernel table (km_kernel.c): what it is
 * (info, public) and its one map, the only place its formula is written.
 * A leaf has map: it turns a row of len base quantities of its family,
 * in place, into kernel values k(x, z_j):
 *   INNER, L2  row[j] = <x, z_j>, xn = |x|^2, zn[j] = |z_j|^2 (norms are
 *              given to L2 kernels only; INNER ones must not read them)
 *   L1         row[j] = |x - z_j|_1
 * A composite has combine: it folds part p's block src (nx x nz) into
 * its own block dst (rows of lddst), p = 0, 1, ... in order; xs[i] and
 * zs[j] are the part's self values k_p(x_i, x_i), k_p(z_j, z_j) when
 * needs_self (else NULL); diag >= 0 says x_i is z_{i + diag}. caps:
 * its KM_KERNEL_CAP_* flags less COMPOSITE (which family says).
 */
typedef struct km_kernel_desc {
    km_kernel_info info;
    void (*map)(const km_kernel *k, double *row, size_t len, double xn,
                const double *zn);
    void (*combine)(const km_kernel *k, int p, double *dst, size_t lddst,
                    const double *src, size_t nx, size_t nz,
                    const double *xs, const double *zs, long diag);
    int needs_self;
    unsigned caps; /* KM_KERNEL_CAP_* but RFF and COMPOSITE (derived) */
    /* one frequency vector from the kernel's spectral density (shift-
     * invariant kernels; NULL otherwise: no random Fourier features) */
    void (*spectral)(double gamma, size_t d, km_rng *r, double *w);
} km_kernel_desc;

/* The row of t; NULL for an invalid type. */
const km_kernel_desc *km_kernel_desc_of(km_kernel_type t);

/* One frequency vector w (d values) drawn from r by k's spectral density
 * (its descriptor's spectral); k must have KM_KERNEL_CAP_RFF. A leaf on
 * chosen columns draws its k->n_columns values into tmp (room for them)
 * and puts them at its columns, the other entries 0, so that w x is the
 * frequency of those columns only; tmp may be NULL otherwise. */
void km_kernel_spectral_draw(const km_kernel *k, km_rng *r, size_t d,
                             double *w, double *tmp);

/* The names of the kernel types that have all of caps, in list order,
 * into buf: "a, b, c" with last between the last two (", " or " or "). */
void km_kernel_caps_names(unsigned caps, const char *last, char *buf,
                          size_t len);

/* 1 if k is a leaf whose base quantities are inner products (INNER, L2). */
int km_kernel_uses_dots(const km_kernel *k);

/* k's map on a row of inner products (or L1 distances) to k(x, z_j);
 * diag >= 0 is x's own index in the row (an L2 distance exactly 0 there).
 * k must be a leaf. */
void km_kernel_map_row(const km_kernel *k, double *row, size_t len,
                       double xn, const double *zn, long diag);

void km_kernel_write(km_writer *w, const km_kernel *k);
/* Reads a kernel and checks it as km_kernel_check does, and that every
 * gamma is resolved (> 0), as a fit leaves it: KM_ECORRUPT otherwise. */
km_status km_kernel_read(km_reader *r, km_kernel *k, int depth,
                         km_error *err);

/*
 * Whether the data fit this kernel in double precision: KM_EPROBLEM
 * naming the row when k(x, x) of a row x of X (n x d) is not a finite
 * number, or, for kernels of inner products (linear, polynomial, sigmoid,
 * or sums and products with one of them), when its squared norm is not:
 * then every inner product of two rows is finite too (|<x, z>| <=
 * |x| |z|). O(n d); k must be resolved. Fits call it before their work.
 */
km_status km_kernel_check_scale(const km_kernel *k, const double *X, size_t n,
                                size_t d, km_error *err);

/* The members a leaf's inputs bring: a string kernel's length and
 * lambda in its type's range, a leaf's columns (distinct, in range, on a
 * kernel of rows of numbers), precomputed only as the whole kernel
 * (depth 0); path names it in messages (km_inputs.c). */
km_status km_kernel_check_leaf(const km_kernel *k, const char *path,
                               int depth, km_error *err);

/* ------------------------------------------------------- precomputed */

/* A precomputed kernel's value of rows x, z (d doubles, index in front):
 * x's entry for z's index, or z's for x's; NAN between two new rows
 * (km_inputs.c). */
double km_precomputed_value(const double *x, const double *z, size_t d);
/* Its block K[i*ldk + j] = value(X_i, Z_j); KM_EINVAL if a pair has none. */
km_status km_precomputed_cross(const double *X, size_t nx, const double *Z,
                               size_t nz, size_t d, double *K, size_t ldk,
                               km_error *err);

/* ------------------------------------------------------- strings */

/* The string kernels (km_strings.c): leaf k (its family STRING) on X's
 * nx rows against Z's nz (d doubles each) into K (rows of ldk); diag >= 0
 * says X_i is Z_{i + diag}, and lower then computes only the columns
 * j <= i + diag (a Gram's lower triangle). */
km_status km_strings_cross(const km_kernel *k, const double *X, size_t nx,
                           const double *Z, size_t nz, size_t d, double *K,
                           size_t ldk, long diag, int lower, km_error *err);
/* k(x_i, x_i) of X's n rows into out, each as a block computes it, from
 * the rows' set (made or cached once for all of them). */
km_status km_strings_self(const km_kernel *k, const double *X, size_t n,
                          size_t d, double *out, km_error *err);
/* k(x, z) of one pair (NAN when out of memory). */
double km_strings_eval(const km_kernel *k, const double *x, const double *z,
                       size_t d);
/* Makes and caches the sets of X's rows for k's string leaves before a
 * Gram's blocks (their columns grow with each block; km_strings_cross
 * keeps a block's columns itself otherwise). */
void km_strings_prepare(const km_kernel *k, const double *X, size_t n,
                        size_t d);
/* What km_strings_cross holds for nx x nz rows of d doubles (k NULL:
 * the most any string kernel holds). */
size_t km_strings_work_bytes(const km_kernel *k, size_t nx, size_t nz,
                             size_t d);

/* ------------------------------------------------------- prediction */

/*
 * For a batch X (n x d): out (n x m) = K(X, S) W, where S is ns x d and
 * W is ns x m, computed in row blocks so K is never held whole. S_norms
 * are the squared norms of S's rows, or NULL to compute them here.
 * Shared by KRR (S = training X, W = dual coefficients) and others.
 * If bias is not NULL, bias[j] is added to column j.
 */
km_status km_kernel_expand(const km_kernel *k, const double *S, size_t ns,
                           size_t d, const double *S_norms, const double *W,
                           size_t m, const double *bias, const double *X,
                           size_t n, double *out, km_error *err);

/* km_gram_cross with the squared norms of Z's rows given (zn; NULL:
 * computed here). Models keep their rows' norms so that a one-row predict
 * does not recompute them for every training row. */
km_status km_gram_cross_sn(const km_kernel *k, const double *X, size_t nx,
                           const double *Z, size_t nz, const double *zn,
                           size_t d, double *K, size_t ldk, km_error *err);

/* km_sqnorms: km.h. */

/* ------------------------------------------------------- PSD (km_psd.c) */

/* n * DBL_EPSILON * top: how far below 0 an eigenvalue of an m x m Gram
 * whose largest eigenvalue magnitude is top must be to count as negative
 * beyond round-off (the PSD report's rule, and the fits'). */
double km_psd_threshold(size_t m, double top);
/* m of n row indices (m <= n), drawn without replacement by a partial
 * Fisher-Yates shuffle of km_rng seeded seed, ascending, into idx: the PSD
 * report's subsample. KM_ENOMEM (nothing set) out of memory. */
km_status km_psd_subsample(size_t n, size_t m, uint64_t seed, size_t *idx);
/* The eigenvalue figures of km_psd_report (min_eig, max_eig, threshold,
 * n_negative; n = n_given = m; alpha 1) of k's Gram on all m rows of X
 * (km_gram_sym, as a fit computes it), centred (H K H, H = I - 11^T/m:
 * kpca's matrix) when centred. KM_EPROBLEM when K is not finite. */
km_status km_kernel_psd_rows(const km_kernel *k, const double *X, size_t m,
                             size_t d, int centred, km_psd_report *out,
                             km_error *err) KM_MUST_CHECK;

/*
 * After an exact solve found scale K + shift I not positive definite: the
 * smallest eigenvalue of scale k(X, X) + shift I (X: n rows of d; LAPACK
 * dsyevr, that one only) appended to err's message as " (WHAT smallest
 * eigenvalue is V)", so that the 422 says how far from positive definite
 * the matrix is. K: an n x n buffer to use (the failed factor's), or
 * NULL (allocated here). Only when n <= KM_PSD_FIT_ROWS. Best effort: on
 * any failure the message stays as it was.
 */
void km_kernel_note_min_eigenvalue(const km_kernel *k, const double *X,
                                   size_t n, size_t d, double scale,
                                   double shift, double *K, const char *what,
                                   km_error *err);

#endif /* KM_KERNEL_INTERNAL_H */
