/*
 * km_base_internal.h - what core's rooms share of base/ and the public
 * header hides: error helpers, the vectorised loops of km_vmath.c, names
 * and choices, what a km_param row is written with, time and progress,
 * compensated sums, overflow-checked counts, the little-endian byte
 * writer and reader of the model format, and the PRNG's Gaussian draw
 * (km_status.c, km_io.c, km_vmath.c, km_choice.c).
 *
 * Not installed; never included outside core/ (and its tests). Every
 * room's internal header includes it; it includes nothing of a room
 * above. Thread-safety as km.h.
 */
#ifndef KM_BASE_INTERNAL_H
#define KM_BASE_INTERNAL_H

#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>

#include "km_base.h"

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
    int failed; /* an allocation or the sink failed; later writes are dropped */
    int counting; /* km_writer_init_count: len counts, nothing is kept */
    km_sink_fn sink; /* km_writer_init_sink: buf stages what goes to it */
    void *sink_ctx;
    uint32_t crc; /* sink: the CRC-32 of what went to it so far */
    /* a model file's: where its factor goes when it is stored in block
     * files (km_model_save_sink_blocks), else NULL: in the file; and the
     * format version written (its payload's layout) */
    const struct km_blocks *blocks;
    uint32_t format;
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
/* A writer that streams to sink through a buffer of its own (1 MiB;
 * arrays larger than that go to the sink from where they are), keeping
 * the CRC-32 of everything that went: the file is never whole in memory.
 * -1 (failed set) when the buffer cannot be had. */
int km_writer_init_sink(km_writer *w, km_sink_fn sink, void *ctx);
/* Sends what is staged, then the CRC-32 of all of it (4 bytes, as
 * km_write_u32), and frees the buffer. 0, or -1 if anything failed. */
int km_writer_finish_sink(km_writer *w);
void km_write_u32(km_writer *w, uint32_t v);
void km_write_u64(km_writer *w, uint64_t v);
void km_write_f64(km_writer *w, double v);
void km_write_f64s(km_writer *w, const double *v, size_t n);
void km_write_i32s(km_writer *w, const int *v, size_t n);
void km_write_str(km_writer *w, const char *s);
void km_write_bytes(km_writer *w, const void *p, size_t n);

/* B (c x r) = A (r x c) transposed, both row-major: a row-major matrix
 * into LAPACK's column-major layout and back. */
static inline void km_transpose(const double *A, size_t r, size_t c,
                                double *B)
{
    for (size_t i = 0; i < r; i++)
        for (size_t j = 0; j < c; j++)
            B[j * r + i] = A[i * c + j];
}

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

/* ------------------------------------------------------- byte reader */

/* Every read checks the bytes left; the first short read sets failed and
 * later reads return zeros, so a parser checks failed once at the end. */
typedef struct km_reader {
    const unsigned char *p;
    size_t left;
    int failed;
    /* a model file's: where its factor's block files are read from, and
     * the model's version (km_model_load_buffer_blocks), else NULL */
    const struct km_blocks *blocks;
    uint64_t version;
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
/* The CRC-32 of the bytes a CRC of crc was taken over followed by p's n
 * (km_crc32(p, n) == km_crc32_update(0, p, n)). */
uint32_t km_crc32_update(uint32_t crc, const unsigned char *p, size_t n);

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

/* A standard normal draw: Box-Muller on two km_rng_uniform values,
 * u1 = (1 - a)/2 in (0, 1], u2 = (1 + b)/2, g = sqrt(-2 ln u1)
 * cos(2 pi u2) (the sine half is not used). */
double km_rng_gauss(km_rng *r);

#endif /* KM_BASE_INTERNAL_H */
