/*
 * km_internal.h - what core modules share and the public header hides:
 * error helpers, the little-endian byte writer and reader of the model
 * format, info lists, and the per-algorithm operations a model dispatches to.
 *
 * Not installed; never included outside core/. Thread-safety as km.h.
 */
#ifndef KM_INTERNAL_H
#define KM_INTERNAL_H

#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>

#include "km.h"

#if defined(__GNUC__)
#define KM_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define KM_PRINTF(a, b)
#endif

/* Fills err (when not NULL) and returns st, so callers can write
 * `return km_error_set(err, KM_EINVAL, "alpha must be > 0");`. */
km_status km_error_set(km_error *err, km_status st, const char *fmt, ...)
    KM_PRINTF(3, 4);

/* row[j] = exp(-gamma * max(0, xn + zn[j] - 2 row[j])): inner products to
 * rbf kernel values in one vectorised pass (km_vmath.c). */
void km_vmap_rbf(double *row, size_t len, double xn, const double *zn,
                 double gamma);

/* K[j] = <x, Z_j> for nz rows of d features, vectorised, no BLAS: for one
 * row at a time (km_vmath.c says why). */
void km_vdot_rows(const double *x, const double *Z, size_t nz, size_t d,
                  double *K);

/* K (nr x m, row stride ldk) = <X_r, Z_j> for nr <= 4 rows of X and m
 * centres stored feature-major (Zt[f * m + j]); no BLAS (km_vmath.c). */
void km_vdot_tile(const double *X, size_t nr, size_t d, const double *Zt,
                  size_t m, double *K, size_t ldk);

/* sum_j a[j] b[j]; y += a x: vectorised, in the calling thread (BLAS's
 * level 1 may hand long vectors to its thread pool) (km_vmath.c). */
double km_vdot(const double *a, const double *b, size_t n);
void km_vaxpy(double a, const double *x, double *y, size_t n);
/* The same with the vector x (b) in float, products and sums in double
 * (svc's nystrom solver's float features) (km_vmath.c). */
double km_vdot_f(const double *a, const float *b, size_t n);
void km_vaxpy_f(double a, const float *x, double *y, size_t n);
/* A hint to bring [p, p + bytes) into cache (svc's nystrom descent asks
 * for the next row while it reads this one; rows in random order defeat
 * the hardware's prefetch across rows) (km_vmath.c). */
void km_prefetch(const void *p, size_t bytes);

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

/* KM_EPROBLEM when one of the n values of a fitted solution (what: "dual
 * coefficients") is not a finite number. */
km_status km_check_solution(const char *what, const double *v, size_t n,
                            km_error *err);

/* Index of name in names[0..n) (the tables generated from km_maps.h);
 * -1 if absent. */
int km_name_index(const char *const *names, int n, const char *name);

/* Defines the km_choices var (declared in an area's header) from the
 * option's list MAP (km_base.h): its names by value, then the table of
 * count (the enum's COUNT) names. */
#define KM_CHOICE_NAME(e, name) [e] = name,
#define KM_CHOICES_DEFINE(var, MAP, count)                                   \
    static const char *const var##_names[count] = {MAP(KM_CHOICE_NAME)};     \
    const km_choices var = {var##_names, count}

/* ---------------------------------------------------------------- params
 *
 * What a km_param row (km_base.h) is written with: each algorithm's rows
 * next to its descriptor, the kernel's in km_kernel.c, preprocessing's in
 * km_pre.c. */

/* .offset and .size of a field. */
#define KM_PARAM_FIELD(type, field) \
    .offset = offsetof(type, field), .size = sizeof(((type *)0)->field)
/* x > 0, checked by core. */
#define KM_PARAM_POSITIVE .range = KM_PARAM_RANGE_CHECK, .min = 0, \
                          .max = HUGE_VAL, .min_open = 1

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

/* Monotonic seconds, for training figures. */
double km_now(void);

/* Calls the progress callback; nonzero means cancel. */
int km_progress(const km_fit_control *ctl, double fraction);

/* Neumaier's compensated sum: km_ksum s = {0, 0}; km_ksum_add(&s, x);
 * ...; km_ksum_get(&s). Within a few ulps of the exact sum of its terms
 * in any order (scores, training figures). Needs <math.h>. */
typedef struct km_ksum {
    double s, c;
} km_ksum;

static inline void km_ksum_add(km_ksum *k, double x)
{
    double t = k->s + x;
    if (__builtin_fabs(k->s) >= __builtin_fabs(x))
        k->c += (k->s - t) + x;
    else
        k->c += (x - t) + k->s;
    k->s = t;
}

static inline double km_ksum_get(const km_ksum *k)
{
    return k->s + k->c;
}

/* Overflow-checked a*b*c element counts; returns 0 on overflow. */
size_t km_mul3(size_t a, size_t b, size_t c);

/* ------------------------------------------------------- byte writer */

typedef struct km_writer {
    unsigned char *buf;
    size_t len, cap;
    int failed; /* an allocation failed; later writes are dropped */
    int counting; /* km_writer_init_count: len counts, nothing is kept */
} km_writer;

void km_writer_init(km_writer *w);
/* A writer that keeps nothing: len becomes the bytes a serialiser
 * writes, so a second pass can allocate exactly that (buf stays NULL). */
void km_writer_init_count(km_writer *w);
/* Allocates room for n bytes in all (0, or -1 with failed set), so
 * writing up to n never moves the buffer (a growing buffer's copy would
 * hold the bytes twice for a moment). */
int km_writer_reserve(km_writer *w, size_t n);
void km_writer_cleanup(km_writer *w);
void km_write_u32(km_writer *w, uint32_t v);
void km_write_u64(km_writer *w, uint64_t v);
void km_write_f64(km_writer *w, double v);
void km_write_f64s(km_writer *w, const double *v, size_t n);
void km_write_i32s(km_writer *w, const int *v, size_t n);
void km_write_str(km_writer *w, const char *s);
void km_write_bytes(km_writer *w, const void *p, size_t n);

/* Saturating arithmetic for the sizes a model file's header implies. */
static inline uint64_t km_add_sat(uint64_t a, uint64_t b)
{
    return a + b < a ? UINT64_MAX : a + b;
}

static inline uint64_t km_mul_sat(uint64_t a, uint64_t b)
{
    uint64_t p;
    return __builtin_mul_overflow(a, b, &p) ? UINT64_MAX : p;
}

/* Bytes of an f64s array of count values (its count, then the values). */
static inline uint64_t km_f64s_bytes(uint64_t count)
{
    return km_add_sat(8, km_mul_sat(8, count));
}

static inline uint64_t km_n_pairs(uint64_t k)
{
    return k * (k - 1) / 2;
}

/* Most classes a classifier of ns training rows can have: each class has
 * at least one row. */
static inline uint64_t km_max_classes(uint64_t ns)
{
    return ns < KM_MODEL_MAX_CLASSES ? ns : KM_MODEL_MAX_CLASSES;
}

/* ------------------------------------------------------- byte reader */

/* Every read checks the bytes left; the first short read sets failed and
 * later reads return zeros, so a parser checks failed once at the end. */
typedef struct km_reader {
    const unsigned char *p;
    size_t left;
    int failed;
} km_reader;

uint32_t km_read_u32(km_reader *r);
uint64_t km_read_u64(km_reader *r);
double km_read_f64(km_reader *r);
/* Reads a stored count, which must equal n, then allocates and reads n
 * values; NULL on failure (r->failed set for a short or mismatched read,
 * else the allocation failed). */
double *km_read_f64s(km_reader *r, size_t n);
int *km_read_i32s(km_reader *r, size_t n);
/* Reads a string of at most max bytes into dst (size max + 1); one with
 * a NUL byte inside fails the reader. */
void km_read_str(km_reader *r, char *dst, size_t max);
/* 1 if all n values are finite numbers. */
int km_all_finite(const double *v, size_t n);
/* 1 if s is well-formed UTF-8 (no overlong forms, no surrogates). */
int km_utf8_valid(const char *s);
/* A count of elements of elem_size bytes that must fit in what is left. */
size_t km_read_count(km_reader *r, size_t elem_size);
/* Steps over a stored count and that many elements of elem_size bytes
 * (an f64s: 8, an i32s: 4), allocating nothing. */
void km_skip_array(km_reader *r, size_t elem_size);

uint32_t km_crc32(const unsigned char *p, size_t n);

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
 * (its descriptor's spectral); k must have KM_KERNEL_CAP_RFF. */
void km_kernel_spectral_draw(const km_kernel *k, km_rng *r, size_t d,
                             double *w);

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

/* ------------------------------------------------------- info lists */

void km_info_cleanup(km_info *info);
/* Appends (copies values). When some value is not a finite value of its
 * kind (a whole number for integers, 0 or 1 for booleans), the entry is
 * added without values (count 0): the figure is absent, as km_info_write
 * stores it. Returns KM_ENOMEM on failure. */
km_status km_info_add(km_info *info, const char *key, km_info_kind kind,
                      int is_array, const double *values, size_t count);
km_status km_info_add1(km_info *info, const char *key, km_info_kind kind,
                       double value);
/* Writes the list; an entry holding a value km_info_read would refuse is
 * written without values (absent), so whatever it writes reads back. */
void km_info_write(km_writer *w, const km_info *info);
/* Reads a list written by km_info_write: at most KM_MODEL_MAX_FIGURES
 * entries of at most max_values values each (0: an absent figure), keys
 * of [A-Za-z0-9_], values finite (booleans 0 or 1, integers whole).
 * KM_ECORRUPT otherwise. */
km_status km_info_read(km_reader *r, km_info *info, size_t max_values,
                       km_error *err);

/* ------------------------------------------------------- models */

/*
 * An algorithm's descriptor: its whole life cycle, as Redis's module
 * types give theirs. Each algorithm's file defines one (the symbol named
 * in KM_ALGO_MAP); km_algo.c, km_model.c and km_predict.c dispatch
 * through them. The rule: what differs between algorithms is an entry of
 * this descriptor (add one when a new difference appears), never a test
 * or switch on the algorithm elsewhere in core, api/ or server/.
 *   outputs         KM_OUT_* flags: what its models can answer
 *   model_outputs   what one model can answer, when that depends on how
 *                   it was fitted (svc: probabilities only with
 *                   probability; kpca: inverse only with the inverse map);
 *                   NULL: outputs
 *   params_outputs  the same from the parameters alone, before a fit (a
 *                   search's or a scoring's check); NULL: outputs
 *   params          its parameter struct (km_krr_params, ...): the
 *                   rows describing each key a request may give (their
 *                   types, bounds, choices, the solver values they apply
 *                   with, docs), its size, and how to fill one with the
 *                   defaults (km_param_set, km_base.h; written next to
 *                   the descriptor; km_algorithm_params publishes it)
 *   check           the parameters against a problem (sizes, classes),
 *                   before any work: KM_EINVAL / KM_EPROBLEM naming the
 *                   field
 *   fit_bytes       peak bytes of a fit (admission control)
 *   fit             fits a problem; the typed km_*_fit does the work
 *   cv_params       adjusts a fold fit's copy of params for a scoring
 *                   that reads needs (its KM_OUT_* answers,
 *                   km_scoring_needs: the search computes them, so the
 *                   algorithm knows no scoring): a search's fold fits
 *                   drop what only the model kept needs (svc:
 *                   probability, unless needs holds probabilities);
 *                   NULL: none
 *   values ...      predict, one function per KM_OUT_* answer it gives
 *                   (NULL where it gives none); each checks the model's
 *                   algorithm and X (covariance: one n x n answer for
 *                   the whole batch)
 *   classes         1 if its models hold class labels (at most one per
 *                   training row and KM_MODEL_MAX_CLASSES)
 *   n_classes       a classifier's class count from its payload (what a
 *                   fit knows before the labels are set)
 *   decision_columns  the layout of its decision values (scores), by
 *                   which km_model_score_columns counts them per row
 *                   (km_decision_columns: svc pairs, klr classes; 0:
 *                   outputs)
 *   scores_first    1 when a binary model's one decision value is positive
 *                   for the first class (svc: LIBSVM's convention), which
 *                   scikit-learn's decision_function negates
 *   max_outputs     the largest n_outputs a model file may give
 *   payload_range   the bytes its payload takes in a file of this format
 *                   version whose header gives these sizes, [*lo, *hi]
 *                   (saturating: km_add_sat)
 *   file_format     the format version a file of this payload must have
 *                   (e.g. krr's rff form: 3; each algorithm's forms at
 *                   FORMAT_VERSION in km_model.c); NULL or 0: the oldest
 *                   current one, 2
 *   free_payload, save, load, bytes: the payload (the algorithm's own
 *                   struct, owned by the model). save writes it; load
 *                   reads it back (r is positioned at it and must be
 *                   consumed exactly); bytes counts its heap memory (m
 *                   gives the sizes).
 *   load_bytes      before a load, what it will take (admission control):
 *                   *kept, the bytes (as bytes counts them) of the
 *                   payload it makes, and *peak, the most heap it holds
 *                   at once (at least *kept), from m's sizes and the
 *                   payload's leading fields, read from r (a copy,
 *                   positioned as load's r). Computed by the function
 *                   bytes uses, so the two cannot drift apart; on a
 *                   payload load refuses, still a bound of what load
 *                   allocates before refusing it.
 *   target          what y it learns from (km_algorithm_target)
 *   check_targets   1 if check reads the problem's targets (sizes of y,
 *                   classes), so that a caller reads y before it checks
 *                   params; 0: params can be checked before y is read
 *   solver_needs    the KM_KERNEL_CAP_* flags a kernel must have for
 *                   each solver, indexed by the value of its params' solver
 *                   row (the row marked solver: its key, count and names;
 *                   km_caps.c); NULL: every solver takes every kernel
 *   check_kernel    KM_EINVAL when the solver params names does not take
 *                   k (by solver_needs); NULL: every solver takes every
 *                   kernel
 *   search          what a search does for it beyond the generic engine
 *                   (km_algo_search); NULL: nothing
 *   mpi             how it runs distributed (km_algo_mpi); NULL: it does
 *                   not (its params may hold pointers)
 */
typedef km_status (*km_predict_fn)(const km_model *m, const double *X,
                                   size_t n, double *out, km_error *err);

/*
 * What a search (km_search.c) does for an algorithm beyond fitting and
 * scoring each point's folds:
 *   caps          KM_SEARCH_* flags (km_algorithm_search_caps)
 *   serves        1 if a point of these params is served by the engine
 *                 of caps (CLOSED_FORM: krr's exact solver; SHARED_GRAM:
 *                 svm's exact solver, which takes kernel values given)
 *   cache_bytes   the kernel cache a point allows (svm's cache_mb), which
 *                 bounds a shared Gram (SHARED_GRAM)
 *   fold_classes  rewrites a fold fit's copy of params whose per-class
 *                 arrays index all classes to index the fold's k classes
 *                 (cls[c]: the class of the fold's class c), into
 *                 scratch (k values) (svc: class_weight); NULL: none
 *   one_output    1 if y must have one output (svr)
 *   is_auto, resolve_auto  a point whose solver is auto (is_auto) is
 *                 resolved once on the whole problem under budget
 *                 (resolve_auto, krr) before the search; NULL: none
 */
typedef struct km_algo_search {
    unsigned caps;
    int (*serves)(const void *params);
    double (*cache_bytes)(const void *params);
    void (*fold_classes)(void *params, const int *cls, size_t k,
                         double *scratch);
    int one_output;
    int (*is_auto)(const void *params);
    void (*resolve_auto)(void *params, const km_problem *pb, size_t budget);
} km_algo_search;

/*
 * How an algorithm runs distributed (server/srv_mpi.c routes, the worker
 * mpi/kmserve_mpi.c fits; the functions behind km_algorithm_mpi_*):
 *   refusal       NULL if a fit of params can run distributed, else why
 *                 not (in buf of len, or static)
 *   resolve       the worker's side: params as the worker runs them (an
 *                 auto solver resolved), KM_EINVAL if it cannot
 *   routes_auto   1 if a local fit of params may be moved to the cluster
 *                 when it does not fit here, with *exact (params->size
 *                 bytes) what the local fit would run instead (krr's
 *                 auto: exact); NULL: never
 *   rank_bytes    the largest rank's bytes on a rows x cols grid of
 *                 nb x nb blocks
 *   local_bytes   what the daemon holds for the fit
 */
typedef struct km_algo_mpi {
    const char *(*refusal)(const void *params, char *buf, size_t len);
    km_status (*resolve)(void *params, km_error *err);
    int (*routes_auto)(const void *params, void *exact);
    size_t (*rank_bytes)(const void *params, const km_problem *pb,
                         size_t nb, size_t rows, size_t cols);
    size_t (*local_bytes)(const void *params, const km_problem *pb);
} km_algo_mpi;

/* The names of the algorithms for which has(a) is nonzero, in list
 * order, into buf: "a, b and c" with last between the last two
 * (km_caps.c), for messages that list the algorithms that can do a
 * thing. */
void km_algorithm_names_where(int (*has)(km_algorithm a), const char *last,
                              char *buf, size_t len);

/* The distributed rank bytes of a dense n x n fit (krr's, gpr's): the
 * largest rank's share of the matrix, the broadcast X and Y, the gathers
 * and km_fit's copies on rank 0, plus extra (gpr: the factor L); and the
 * most rows of n one of p ranks holds in nb blocks (km_request.c). */
size_t km_mpi_dense_rank_bytes(const km_problem *pb, size_t nb, size_t rows,
                               size_t cols, size_t extra);
size_t km_mpi_local_max(size_t n, size_t nb, size_t p);

typedef struct km_algo {
    unsigned outputs;
    unsigned (*model_outputs)(const km_model *m);
    unsigned (*params_outputs)(const void *params);
    const km_param_set *params;
    km_status (*check)(const void *params, const km_problem *pb,
                       km_error *err);
    size_t (*fit_bytes)(const void *params, const km_problem *pb);
    km_status (*fit)(const km_kernel *k, const void *params,
                     const km_problem *pb, const km_fit_control *ctl,
                     km_model **out, km_error *err);
    void (*cv_params)(void *params, unsigned needs);
    km_predict_fn values, scores, probabilities, projections, inverse;
    km_predict_fn variances, covariance;
    km_status (*labels)(const km_model *m, const double *X, size_t n,
                        int *out, km_error *err);
    int classes; /* models hold classes: labels, one per class */
    size_t (*n_classes)(const km_model *m);
    km_decision_columns decision_columns;
    int scores_first;
    uint64_t (*max_outputs)(uint64_t n_samples);
    void (*payload_range)(uint32_t format, uint64_t n_samples,
                          uint64_t n_features, uint64_t n_outputs,
                          uint64_t *lo, uint64_t *hi);
    uint32_t (*file_format)(const void *payload);
    void (*free_payload)(void *payload);
    void (*save)(const void *payload, const km_model *m, km_writer *w);
    km_status (*load)(km_reader *r, const km_model *m, void **payload,
                      km_error *err);
    size_t (*bytes)(const void *payload, const km_model *m);
    void (*load_bytes)(km_reader r, const km_model *m, size_t *kept,
                       size_t *peak);
    km_target target;
    int check_targets;
    const unsigned *solver_needs;
    km_status (*check_kernel)(const void *params, const km_kernel *k,
                              km_error *err);
    const km_algo_search *search;
    const km_algo_mpi *mpi;
} km_algo;

#define KM_ALGO_EXTERN(e, id, name, desc) extern const km_algo desc;
KM_ALGO_MAP(KM_ALGO_EXTERN)
#undef KM_ALGO_EXTERN

/* The descriptor of a; NULL if invalid. */
const km_algo *km_algo_of(km_algorithm a);

/*
 * Creates a model that takes ownership of payload (freed with the model,
 * also on failure) and copies kernel. n_outputs as km_model_n_outputs.
 */
km_status km_model_create(km_algorithm algo, const km_kernel *kernel,
                          size_t n_features, size_t n_samples,
                          size_t n_outputs, void *payload, km_model **out,
                          km_error *err);
void *km_model_payload(const km_model *m);
/* The format version of the file a model was loaded from (FORMAT_OLDEST
 * to FORMAT_VERSION of km_model.c); 0 for a model fitted here. A
 * payload's load reads it for its layout. */
uint32_t km_model_file_format(const km_model *m);
/* Mutable lists, for the fit that builds the model. */
km_info *km_model_params_mut(km_model *m);
km_info *km_model_training_mut(km_model *m);
/* KM_ECONFLICT unless m is of algorithm a; names what was asked. */
km_status km_model_expect(const km_model *m, km_algorithm a, const char *op,
                          km_error *err);
/* The same, then km_model_check_input of X (n rows of the model's
 * features): the preamble of every predict. */
km_status km_model_expect_input(const km_model *m, km_algorithm a,
                                const char *op, const double *X, size_t n,
                                km_error *err);

/*
 * What a model keeps of its preprocessing (km_pre_stats.c): what was asked
 * and
 * the statistics learnt from the training rows, owned (NULL where they do
 * not apply). x' = (x - x_shift) / x_scale; value = model value + y_mean.
 */
typedef struct km_pre_stats {
    km_preprocess spec;
    double *x_shift, *x_scale; /* n_features each, when spec.x != NONE */
    double *y_mean;            /* n_outputs, when spec.center_y */
} km_pre_stats;

/* The model's own (km_model.c); a fit sets it before sharing. */
const km_pre_stats *km_model_pre(const km_model *m);
km_pre_stats *km_model_pre_mut(km_model *m);

/* The rest of this section is km_pre_stats.c's (core/model: what the
 * model holds and stores), save km_pre_learn and km_pre_fit (km_pre.c,
 * core/select) and km_pre_predict, km_pre_predict_labels (km_predict.c,
 * core/model). */
void km_pre_stats_cleanup(km_pre_stats *s);
/* Heap bytes of s for a model of nf features and no outputs. */
size_t km_pre_stats_bytes(const km_pre_stats *s, size_t nf, size_t no);
/* The file's preprocessing section (format version 2): u32 scale, u32
 * center_y, then f64s shift and scale (nf each) when scale is not none,
 * f64s y_mean (no) with center_y. */
void km_pre_write(km_writer *w, const km_pre_stats *s, size_t nf, size_t no);
/* bad (KM_EINVAL from a fit, KM_ECORRUPT from a model file) naming the
 * field after prefix when pre does not apply to a: an unknown scale, or
 * center_y for an algorithm that does not answer values. */
km_status km_pre_check_spec(const km_preprocess *pre, km_algorithm a,
                             km_status bad, const char *prefix,
                             km_error *err);
/* Reads and checks it (known scale, center_y 0 or 1 and only for an
 * algorithm that answers values, every number finite, every scale > 0):
 * KM_ECORRUPT naming what is wrong. s is filled also on failure (the
 * caller cleans it up). */
km_status km_pre_read(km_reader *r, km_pre_stats *s, km_algorithm a,
                      size_t nf, size_t no, km_error *err);
/* Bytes the section takes in a file with these sizes: [*lo, *hi]. */
void km_pre_file_range(uint64_t nf, uint64_t no, uint64_t *lo, uint64_t *hi);

/* The statistics of pre learnt from pb's rows into s (allocated here;
 * filled also on failure: the caller cleans it up): x's shift and scale
 * when pre->x is not none (from pb->X), y's mean with center_y (from
 * pb->y, which must then be given). KM_EPROBLEM for a feature too large to
 * standardize, KM_ENOMEM. km_pre_fit's, and the krr search's per fold. */
km_status km_pre_learn(const km_preprocess *pre, const km_problem *pb,
                       km_pre_stats *s, km_error *err);
/* Rows [0, n) of X (d features) into out through s's x statistics (out
 * may be X: in place). KM_EINVAL naming the entry X[row0 + i][j] when one
 * leaves the doubles (x far outside the training range). */
km_status km_pre_transform(const km_pre_stats *s, const double *X, size_t n,
                           size_t d, size_t row0, double *out, km_error *err);
/* km_fit with a preprocessing that does something (km_pre.c). */
km_status km_pre_fit(km_algorithm a, const km_kernel *k, const void *params,
                     const km_preprocess *pre, const km_problem *pb,
                     const km_fit_control *ctl, km_model **out,
                     km_error *err);
/* km_predict and km_predict_labels through a model's preprocessing: fn
 * (or labels) is the descriptor's function for answer. */
km_status km_pre_predict(const km_model *m, unsigned answer, km_predict_fn fn,
                         const double *X, size_t n, double *out,
                         km_error *err);
km_status km_pre_predict_labels(const km_model *m,
                                km_status (*labels)(const km_model *,
                                                    const double *, size_t,
                                                    int *, km_error *),
                                const double *X, size_t n, int *out,
                                km_error *err);

/* b^e for a whole e >= 0, by squaring. */
static inline double km_ipow(double b, int e)
{
    double r = 1.0;
    while (e > 0) {
        if (e & 1)
            r *= b;
        b *= b;
        e >>= 1;
    }
    return r;
}

/* ------------------------------------------------------- fits */

/* What every fit shares (km_fit.c). */
typedef struct km_fit_frame {
    km_algorithm algo;
    double t0;   /* km_now() at the start */
    km_kernel k; /* the caller's kernel, copied, default gamma resolved */
} km_fit_frame;

/* The checks of km_fit_begin, in its order, without the kernel's copy and
 * the scale check: what km_fit runs before it computes a preprocessing's
 * statistics from pb (so never from data that are not finite). */
km_status km_fit_validate(km_algorithm a, const km_kernel *kernel,
                          const void *params, const km_problem *pb,
                          km_error *err);

/*
 * The prologue of every fit: checks the kernel, the problem (sizes within
 * the same limits for every algorithm and what a model file holds; X, y
 * finite; labels in range) and, through a's descriptor, params; then
 * copies and resolves the kernel into f->k and checks X's scale against
 * it (km_kernel_check_scale). Call km_fit_cleanup(f) afterwards, also on
 * failure. Borrows kernel, params and pb.
 */
km_status km_fit_begin(km_fit_frame *f, km_algorithm a, const km_kernel *kernel,
                       const void *params, const km_problem *pb,
                       km_error *err);
/*
 * The epilogue: the model of f's algorithm and kernel, taking ownership of
 * payload (freed also on failure), with the training figure "seconds"
 * since km_fit_begin first. The caller adds its own figures after it.
 */
km_status km_fit_model(km_fit_frame *f, size_t n_features, size_t n_samples,
                       size_t n_outputs, void *payload, km_model **out,
                       km_error *err);
void km_fit_cleanup(km_fit_frame *f);

/*
 * km_fit, with the figures that only a model kept needs when figures is
 * nonzero: the training score (km_training_score, one predict over the
 * training rows). km_fit passes 1; a search's fold fits, whose models
 * only answer their test rows and are freed, pass 0.
 */
km_status km_fit_inner(km_algorithm a, const km_kernel *k,
                       const void *params, const km_preprocess *pre,
                       const km_problem *pb, const km_fit_control *ctl,
                       int figures, km_model **out, km_error *err);

/*
 * The training figure "training_score": the algorithm's default scoring
 * (km_scoring_default) of m on its own training problem pb, through the
 * fitted model (km_model_score: one predict over the training rows),
 * appended to m's training figures. None for a kpca model without the
 * inverse map, nor when the score is not a number (r2 of one row).
 * km_fit calls it after the descriptor's fit (km_fit_inner with figures).
 */
km_status km_training_score(km_model *m, const km_problem *pb, km_error *err);

/* ------------------------------------------------------- scores */

/* The KM_OUT_* answers scoring s needs of a model (km_score.c): values,
 * labels (and probabilities), projections and the inverse map; 0 for an
 * unknown s. */
unsigned km_scoring_needs(km_scoring s);

/*
 * Answers to n rows and what they are scored against (borrowed), for
 * km_score_answers:
 *   values          Y (truth) and P (predictions), n x m
 *   labels          truth and pred (n class indices in [0, k)), proba
 *                   (n x k; read by neg_log_loss only)
 *   reconstruction  Y (the rows X) and P (their reconstructions), n x m
 *                   (m features)
 */
typedef struct km_answers {
    size_t n, m, k;
    const double *Y, *P;
    const int *truth, *pred;
    const double *proba;
} km_answers;

/* The score s of a (higher is better): km_score_regression's or
 * km_score_classes' figure (errors negated), or minus the mean over rows
 * and features of (Y - P)^2 (compensated sums). Their statuses, and
 * KM_EPROBLEM when the reconstruction error is not a finite number. The
 * one place a scoring is computed: km_model_score and km_search. */
km_status km_score_answers(km_scoring s, const km_answers *a, double *out,
                           km_error *err);

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
/* gpr's nystrom solver (km_gpr_nys.c), with the centres, when not NULL,
 * given as m sorted, distinct row indices (m = p->n_centres, or its
 * default) instead of the seeded draw, as km_krr_fit_nystrom's.
 * p->solver must be NYSTROM. */
km_status km_gpr_fit_nystrom(const km_kernel *k, const km_gpr_params *p,
                             const double *X, size_t n, size_t d,
                             const double *y, const size_t *centres,
                             const km_fit_control *ctl, km_model **out,
                             km_error *err);
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

/* A standard normal draw: Box-Muller on two km_rng_uniform values,
 * u1 = (1 - a)/2 in (0, 1], u2 = (1 + b)/2, g = sqrt(-2 ln u1)
 * cos(2 pi u2) (the sine half is not used). */
double km_rng_gauss(km_rng *r);

/*
 * The rff solver's draw: for feature i = 0 .. D-1 in turn, its row of W
 * (d values) then its phase b[i] = pi (1 + u) from one km_rng_uniform u
 * (so in [0, 2 pi)), from one km_rng seeded with seed. A row of W is
 * drawn by the kernel's spectral density (km_kernel_spectral_draw: the
 * kernel table's, kernels/km_kernel.c, says how for each type).
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
/* The nystrom solvers' checks of their params that do not depend on the
 * data (krr's and gpr's): KM_EINVAL naming params.centres (not a rule),
 * params.cg_tol (not a finite number > 0), params.cg_max_iter (0) or
 * params.seed (above 2^53). */
km_status km_nys_check_params(km_krr_centre_rule centres, double cg_tol,
                              size_t cg_max_iter, uint64_t seed,
                              km_error *err);
/* An auto fit's figures (krr's and gpr's): the params figure "solver"
 * set to auto_solver, the training figures "solver" (run, the one that
 * ran) and "memory_budget_mb" (budget, in MiB). KM_ENOMEM on failure. */
km_status km_auto_figures(km_model *model, int auto_solver, int run,
                          size_t budget);

/* ------------------------------------------------------- eigensolvers */

/*
 * The top nc eigenpairs of the symmetric K (n x n, row-major lower
 * triangle; destroyed) by the solver s asks for (km_eigen.c: dense,
 * iterative, randomized; auto: iterative when km_eig_use_iterative, else
 * dense), dense taking over when an iterative one does not converge:
 * lambda descending, U (n x nc, column-major) in the same order; *solver
 * the one that gave them, *fallback whether dense took over, *products
 * the block products made. ctl (may be NULL) may cancel.
 */
km_status km_eig_top(double *K, size_t n, size_t nc, km_kpca_solver s,
                     const km_fit_control *ctl, double *lambda, double *U,
                     int *solver, int *fallback, size_t *products,
                     km_error *err);
/* The dense solver alone (km_eig_top's fallback), at most 36 n doubles
 * of work beyond U. */
km_status km_eig_dense(double *K, size_t n, size_t k, double *lambda,
                       double *U, km_error *err);
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

/* km_search's checks of s against pb, and its folds: fold[i] (n entries,
 * caller-allocated) gets row i's test fold, -1 for a row always trained
 * on; *n_splits the number of splits. For tests (km_search.c). */
km_status km_search_folds(const km_search_spec *s, const km_problem *pb,
                          int *fold, size_t *n_splits, km_error *err);

#endif /* KM_INTERNAL_H */
