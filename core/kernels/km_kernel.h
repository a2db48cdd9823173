/*
 * km_kernel.h - kernels: the kernel object, its parse and check, and the Gram
 * matrices and kernel values libkm computes (kernels/km_kernel.c).
 *
 * Part of libkm's public interface; include km.h, which includes every
 * area. Conventions and thread-safety as km.h says.
 */
#ifndef KM_KERNEL_H
#define KM_KERNEL_H

#include "../base/km_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- kernels */

/* KM_KERNEL_LINEAR = 0, ... in the order and with the stored ids of
 * KM_KERNEL_MAP (km_maps.h). */
typedef enum {
#define KM_KERNEL_ENUM(e, id, name, desc) KM_KERNEL_##e = id,
    KM_KERNEL_MAP(KM_KERNEL_ENUM)
#undef KM_KERNEL_ENUM
    KM_KERNEL_TYPE_COUNT
} km_kernel_type;

/* Ids index core's tables: as many entries as ids, the last id the
 * largest, so that (no id repeated, none out of range) they run
 * 0 .. count - 1. */
#define KM_MAP_ONE(e, id, name, desc) +1
#ifndef __cplusplus
_Static_assert((0 KM_KERNEL_MAP(KM_MAP_ONE)) == KM_KERNEL_TYPE_COUNT,
               "kernel ids run 0, 1, 2, ... with the last one in the list");
#endif

#define KM_KERNEL_MAX_PARTS 16 /* parts of one sum or product */
#define KM_KERNEL_MAX_DEPTH 4  /* nesting of sums and products */
/* The most kernel values a prediction's expansion holds at once, its
 * blocks on every worker together (at least one row's when a row has
 * more): what admission counts for them. */
#define KM_PREDICT_BLOCK_VALUES ((size_t)4 << 20)

/*
 * A kernel, as a plain parameter struct with the parameterisation of
 * scikit-learn: its type (KM_KERNEL_MAP, km_maps.h) and the members the
 * type takes. Each type's formula is written once, in the comment and the
 * code of its map (or combine function) in km_kernel.c, section "the maps";
 * api.md's table of k(x, z) gives them all.
 * gamma == 0 means "default": 1/n_features, filled in by km_kernel_resolve().
 * A sum or product owns its parts and weights (set them with
 * km_kernel_set_parts). Initialise with km_kernel_init, release with
 * km_kernel_cleanup.
 */
typedef struct km_kernel {
    km_kernel_type type;
    double gamma;
    double coef0;
    int degree;
    int n_parts;
    struct km_kernel *parts; /* n_parts kernels, owned */
    double *weights;         /* n_parts weights (sum only), owned */
    int length;              /* string kernels: substring length k */
    double lambda;           /* expdecay, subsequence: the decay */
    int n_columns;           /* a numeric leaf on chosen columns of X: */
    int *columns;            /* n_columns distinct indices, owned (0: all) */
} km_kernel;

/* Sets k to the type's defaults (degree 3, coef0 1 for polynomial, 0 for
 * sigmoid, gamma 0 = default) with no parts. */
void km_kernel_init(km_kernel *k, km_kernel_type type);
/* Releases the parts and weights of k; k may then be re-initialised. */
void km_kernel_cleanup(km_kernel *k);
/* Takes ownership of parts[0..n) (allocated with malloc, each initialised)
 * and of weights (malloc'd, n entries, or NULL for all 1). */
void km_kernel_set_parts(km_kernel *k, km_kernel *parts, double *weights,
                         int n);
/* Deep copy into dst (uninitialised). */
km_status km_kernel_copy(km_kernel *dst, const km_kernel *src,
                         km_error *err) KM_MUST_CHECK;
/* Checks types, ranges, part counts and nesting; names the bad field. */
km_status km_kernel_check(const km_kernel *k, km_error *err) KM_MUST_CHECK;
/* Checks X (n rows of d doubles) as k's input: KM_EINVAL naming what is
 * wrong when a leaf's columns are not columns of X, a row is not a
 * string row (strings), or (precomputed) a row's index is not its own
 * (training: each row's index a training row's number, and the values
 * among the rows symmetric to KM_PSD_SYM_TOL of their largest; not
 * training: an index -1, a new row, or a training row's number). */
km_status km_kernel_check_rows(const km_kernel *k, const double *X, size_t n,
                               size_t d, int training,
                               km_error *err) KM_MUST_CHECK;
/* Replaces default (0) gammas by 1/n_features (a leaf on chosen columns:
 * 1/their number), recursively. */
void km_kernel_resolve(km_kernel *k, size_t n_features);
/* What a kernel type is, from its row of the kernel table (km_kernel.c):
 * the API builds its parameter rules and the client its lists from it. */
typedef enum {
    KM_KFAMILY_INNER,      /* a function of <x,z> (and of |x|, |z|) */
    KM_KFAMILY_L2,         /* a function of |x-z|_2 */
    KM_KFAMILY_L1,         /* a function of |x-z|_1 */
    KM_KFAMILY_COMPOSITE,  /* built from its parts */
    KM_KFAMILY_STRING,     /* of two strings (km_strings.c) */
    KM_KFAMILY_PRECOMPUTED /* given: X holds the values */
} km_kernel_family;

/* Parameters a kernel type takes (km_kernel_type_info's params). */
#define KM_KPARAM_GAMMA 0x01u   /* gamma (0 = 1/n_features) */
#define KM_KPARAM_DEGREE 0x02u  /* degree, 0 .. 64 */
#define KM_KPARAM_COEF0 0x04u   /* coef0 */
#define KM_KPARAM_PARTS 0x08u   /* kernels: min_parts .. max_parts parts */
#define KM_KPARAM_WEIGHTS 0x10u /* weights, one per part, >= 0 */
#define KM_KPARAM_SIGMA 0x20u   /* sigma, another way to give gamma:
                                   1/(2 sigma^2), the Gaussian's width
                                   (rbf) */
#define KM_KPARAM_LENGTH 0x40u  /* length, 1 .. KM_STRING_MAX_K */
#define KM_KPARAM_LAMBDA 0x80u  /* lambda, the decay */
#define KM_KPARAM_COLUMNS 0x100u /* columns: the leaf's columns of X */

typedef struct km_kernel_info {
    km_kernel_family family;
    unsigned params;         /* KM_KPARAM_* flags */
    int degree;              /* default degree (where it applies) */
    double coef0;            /* default coef0 (where it applies) */
    int min_parts, max_parts;/* 0, 0 unless KM_KPARAM_PARTS */
    int length;              /* default length (where it applies) */
    double lambda;           /* default lambda (where it applies) */
    double lambda_min, lambda_max; /* lambda's range (where it applies) */
    int lambda_min_open;     /* lambda_min itself excluded */
} km_kernel_info;

/* The row of type t (static); NULL for an invalid type. */
const km_kernel_info *km_kernel_type_info(km_kernel_type t);

/*
 * What a kernel type can do beyond computing values (km_kernel_type_caps),
 * for the code that needs more of it than k(x, z):
 *   RFF         shift-invariant with a spectral density that random
 *               Fourier features sample (krr's rff solver, km_krr_rff_draw)
 *   TUNE_GAMMA  k = exp(gamma t), so dk/dlog gamma = k log k: gpr's
 *               optimizer tunes its gamma
 *   COMPOSITE   built of parts (its family is KM_KFAMILY_COMPOSITE)
 *   CHARACTERISTIC  its mean embedding tells distributions apart, so a
 *               kernel two-sample test (km_drift) uses it as it is: rbf,
 *               laplacian and laplacian_l2 (shift-invariant with a spectral
 *               measure of full support: Bochner, Sriperumbudur et al.
 *               2010), and the string kernels (taken as characteristic on
 *               strings, as the drift test's documentation says); a leaf
 *               on chosen columns is not (km_kernel_characteristic)
 */
#define KM_KERNEL_CAP_RFF 0x01u
#define KM_KERNEL_CAP_TUNE_GAMMA 0x02u
#define KM_KERNEL_CAP_COMPOSITE 0x04u
#define KM_KERNEL_CAP_CHARACTERISTIC 0x08u
/* 1 when checked kernel k is characteristic on all of its input: its
 * type has KM_KERNEL_CAP_CHARACTERISTIC and it reads every column. */
int km_kernel_characteristic(const km_kernel *k);

/*
 * The inputs a kernel takes (its leaves' family says; a checked kernel's
 * leaves agree):
 *   VECTORS      rows of numbers
 *   STRINGS      strings, as rows of d doubles (km_strings_pack): row[0]
 *                the length L in bytes, row[1 + s] bytes 6s .. 6s + 5 as
 *                a whole number below 2^48; a row holds at most
 *                km_string_max_length(d) bytes
 *   PRECOMPUTED  kernel values: at fit X is the n x n Gram, at predict
 *                a row per new point of its kernel values against the n
 *                training rows. Rows carry an index column in front
 *                (km_precomputed_pack): a training row's own index
 *                0 .. n-1, -1 for a new row; k(x, z) is x[1 + index z]
 *                (or z[1 + index x]).
 */
typedef enum {
    KM_INPUT_VECTORS,
    KM_INPUT_STRINGS,
    KM_INPUT_PRECOMPUTED,
    KM_INPUT_COUNT
} km_input_kind;

/* "vectors", "strings", "precomputed". */
extern const km_choices km_input_kind_choices;
/* The input kind of type t (a composite: VECTORS; see km_kernel_input). */
km_input_kind km_kernel_type_input(km_kernel_type t);
/* The input kind of checked kernel k (a composite's is its leaves'). */
km_input_kind km_kernel_input(const km_kernel *k);
/* What a model of kernel k on rows of d doubles takes, as people count
 * it: d features, km_string_max_length(d) bytes, or d - 1 kernel values
 * (one per training row). */
size_t km_kernel_input_width(const km_kernel *k, size_t d);
/* Rows of d doubles for k's input of width w (the inverse). */
size_t km_kernel_input_d(const km_kernel *k, size_t width);

/* Caps of string inputs (400 beyond them). */
#define KM_STRING_MAX_BYTES 65536 /* bytes of one string */
#define KM_STRING_MAX_K 32        /* a string kernel's length */
/* The most columns a leaf's columns lists. */
#define KM_KERNEL_MAX_COLUMNS 4096
/* What the string kernels' cache of training strings holds at most
 * (km_strings.c) by default; a server sets its own share of its memory
 * budget, and counts what the cache holds at each admission. */
#define KM_STRING_CACHE_BYTES ((size_t)256 << 20)
void km_set_string_cache_bytes(size_t bytes);
size_t km_string_cache_bytes(void);
/* What the cache holds now (a server counts it against its budget). */
size_t km_string_cache_held(void);
/* What a fit's string sets hold beside its Gram: n rows of d doubles for
 * kernel k (0 unless k takes strings). */
size_t km_kernel_set_bytes(const km_kernel *k, size_t n, size_t d);
/* The same for the strings of X (n rows of d doubles) as they are. */
size_t km_kernel_set_bytes_of(const km_kernel *k, const double *X, size_t n,
                              size_t d);

/* A string model's max_length when a fit does not give one: twice its
 * longest training string, at least 64, at most KM_STRING_MAX_BYTES. */
size_t km_string_default_max(size_t longest);
/* Rows of d doubles for strings of at most max_len bytes, and back. */
size_t km_string_width(size_t max_len);
size_t km_string_max_length(size_t d);
/* Packs n strings (s[i], len[i] bytes) into X (n x d). KM_EINVAL naming
 * X[i] when one is longer than km_string_max_length(d). */
km_status km_strings_pack(const char *const *s, const size_t *len, size_t n,
                          size_t d, double *X, km_error *err) KM_MUST_CHECK;
/* 0 if row (d doubles) is a string row as km_strings_pack makes them. */
int km_string_row_check(const double *row, size_t d);
/* A string row's length; its bytes into out when it holds them (cap). */
size_t km_string_row_bytes(const double *row, size_t d, unsigned char *out,
                           size_t cap);
/* Rows for a precomputed kernel: n rows of m kernel values G (n x m)
 * into X (n x (m + 1)), each with its index in front: i when training
 * (n == m, a Gram), -1 when not. */
void km_precomputed_pack(const double *G, size_t n, size_t m, int training,
                         double *X);

/* KM_KERNEL_CAP_* flags of type t; 0 for an invalid type. */
unsigned km_kernel_type_caps(km_kernel_type t);

/* "rbf", "sum", ...; NULL for an invalid type. */
const char *km_kernel_type_name(km_kernel_type t);
/* The types' names, by type (KM_KERNEL_MAP). */
extern const km_choices km_kernel_type_choices;
/* The description of a kernel object (km_param_set, km_base.h): a row
 * per member a request may give, each taken by the types whose
 * km_kernel_info params have its kparam flag (the type row by all); the
 * struct is a km_kernel, its defaults km_kernel_init's of linear. */
const km_param_set *km_kernel_params(void);
/* Parses a type name; returns 0 on success, -1 if unknown. */
int km_kernel_type_parse(const char *name, km_kernel_type *t);

/* k(x, z) for two vectors of d features. Borrows x and z. */
double km_kernel_eval(const km_kernel *k, const double *x, const double *z,
                      size_t d);

/*
 * Training Gram matrix K[i][j] = k(X_i, X_j), n x n row-major, into K
 * (caller-allocated, n*n doubles). Only the lower triangle (j <= i) is
 * written unless full is nonzero. Uses DSYRK for inner products.
 */
km_status km_gram_sym(const km_kernel *k, const double *X, size_t n,
                      size_t d, double *K, int full,
                      km_error *err) KM_MUST_CHECK;

/*
 * Cross Gram matrix K[i*ldk + j] = k(X_i, Z_j) for i < nx, j < nz, into K
 * (caller-allocated, nx rows of ldk >= nz doubles). Uses DGEMM. Borrows all.
 */
km_status km_gram_cross(const km_kernel *k, const double *X, size_t nx,
                        const double *Z, size_t nz, size_t d, double *K,
                        size_t ldk, km_error *err) KM_MUST_CHECK;

/*
 * One block of the training Gram matrix of X (rows of d features):
 * K[a*ldk + b] = k(X_{i0+a}, X_{j0+b}) for a < ni, b < nj, through the
 * same maps as km_gram_sym (an L2 kernel's distance is exactly 0 where
 * i0 + a == j0 + b, when i0 >= j0; aligned tiles, as a block-cyclic
 * distribution's, always are). xn: the squared norms of X's rows
 * (km_sqnorms), or NULL to compute those of the block's rows here.
 * The one kernel code of a distributed Gram (kmserve-mpi's tiles).
 */
km_status km_gram_block(const km_kernel *k, const double *X, const double *xn,
                        size_t d, size_t i0, size_t ni, size_t j0, size_t nj,
                        double *K, size_t ldk, km_error *err) KM_MUST_CHECK;
/* Squared norms of X's n rows (d features), malloc'd; NULL on OOM. */
double *km_sqnorms(const double *X, size_t n, size_t d);


/* ---------------------------------------------------------------- PSD report */

/* Rows the PSD report works on at most: beyond, a seeded subsample of
 * this many (km_kernel_psd). Its n x n Gram and eigenvalues then take
 * 8 n^2 + O(n) bytes, 32 MB, and dsyevd about a second. */
#define KM_PSD_MAX_ROWS 2000
/* The report's tolerance of asymmetry: max |K_ij - K_ji| at most this
 * times max |K_ij| is symmetric. */
#define KM_PSD_SYM_TOL 1e-12

/*
 * What a fit says of its kernel's Gram on its training rows (the model's
 * training figures "psd" and "min_eigenvalue", docs/api.md): a kernel
 * that may be indefinite (km_kernel_maybe_indefinite) has the eigenvalues
 * of its Gram computed on at most KM_PSD_FIT_ROWS rows (a seeded
 * subsample beyond: about 0.1 s of dsyevd and 8 MB), and the 422 of an
 * exact solve that fails its Cholesky names the smallest eigenvalue up to
 * that many rows. A kernel PSD by construction costs nothing.
 */
#define KM_PSD_FIT_ROWS 1000
/* 1 when k's Gram can have negative eigenvalues on some rows: sigmoid, a
 * polynomial of coef0 < 0 (and degree > 0), or a sum, product or
 * normalized kernel with such a part; 0 for the kernels positive
 * semi-definite by construction. */
int km_kernel_maybe_indefinite(const km_kernel *k);

/*
 * What km_kernel_psd finds about the Gram matrix K of a kernel on rows:
 *   n_given, n    the rows given, and the rows used (n_given, or
 *                 KM_PSD_MAX_ROWS when it subsampled: subsampled = 1,
 *                 rows drawn without replacement by km_rng seeded seed)
 *   asymmetry     max |K_ij - K_ji| / max |K_ij| (0 for a zero K), K as
 *                 km_gram_cross computes K(X, X); symmetric when it is
 *                 at most KM_PSD_SYM_TOL. The eigenvalues are those of
 *                 (K + K^T) / 2 (LAPACK dsyevd, eigenvalues only).
 *   min_eig, max_eig   the smallest and largest eigenvalues
 *   threshold     n * DBL_EPSILON * max |eigenvalue|: round-off's reach
 *   n_negative    eigenvalues below -threshold (psd when 0)
 *   alpha, condition   cond_2(K + alpha I) = max |s + alpha| /
 *                 min |s + alpha| over the eigenvalues s; infinite when
 *                 some s + alpha is 0
 *   effective_dim sum over the eigenvalues s of c / (c + alpha), c =
 *                 max(s, 0) (negative ones clipped at 0 count nothing)
 */
typedef struct km_psd_report {
    size_t n_given, n;
    int subsampled;
    uint64_t seed;
    double asymmetry;
    int symmetric;
    double min_eig, max_eig, threshold;
    size_t n_negative;
    double alpha, condition, effective_dim;
} km_psd_report;

/* The report of kernel k (resolved: km_kernel_resolve) on X (n x d,
 * finite), alpha > 0; seed picks the subsample when n > max_rows
 * (max_rows 0: KM_PSD_MAX_ROWS). */
km_status km_kernel_psd(const km_kernel *k, const double *X, size_t n,
                        size_t d, double alpha, uint64_t seed,
                        size_t max_rows, km_psd_report *out,
                        km_error *err) KM_MUST_CHECK;
/* An upper bound on km_kernel_psd's working memory for kernel k on n rows
 * of d features (max_rows as there); k NULL: for any kernel. */
size_t km_kernel_psd_bytes(const km_kernel *k, size_t n, size_t d,
                           size_t max_rows);

/* What km_gram_cross (and km_gram_sym) hold beyond K while they compute
 * k on nx x nz rows: the rows' norms, and at each level of sums and
 * products a block of nx x nz values and the parts' self values, and for
 * string kernels the strings' k-mer lists (rows of d doubles). k NULL:
 * the most any kernel takes (KM_KERNEL_MAX_DEPTH levels), for admission
 * before a body's kernel is read. */
size_t km_gram_work_bytes(const km_kernel *k, size_t nx, size_t nz,
                          size_t d);

#ifdef __cplusplus
}
#endif
#endif /* KM_KERNEL_H */
