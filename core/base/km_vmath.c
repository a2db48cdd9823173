/*
 * km_vmath.c - vectorised elementwise maths for kernel maps.
 *
 * The RBF and Laplacian maps apply exp to n^2 entries, which with libm's
 * scalar exp costs as much as the GEMM before it. km_vexp is branch-free
 * (clamps and selects instead of ifs) so the compiler vectorises the loop;
 * target_clones builds AVX-512, AVX2 and baseline versions and picks one at
 * load time, so one binary runs everywhere and uses what the CPU has.
 *
 * Method: x = n ln2 + r with |r| <= ln2/2, exp(r) by its Taylor series to
 * degree 13 (truncation < 2e-17 relative), and 2^n put into the exponent
 * bits. ln2 is split in two parts so n ln2 is exact. Max error is about 2 ulp.
 * Results below exp(-708) are 0 (the normal range ends there); above 709
 * they are +inf; NaN stays NaN.
 *
 * Thread-safety: reentrant.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "km_base_internal.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(KM_NO_CLONES)
#define KM_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define KM_CLONES
#endif

static inline uint64_t as_u64(double x)
{
    uint64_t u;
    memcpy(&u, &x, 8);
    return u;
}

static inline double as_f64(uint64_t u)
{
    double x;
    memcpy(&x, &u, 8);
    return x;
}

/* exp(x), branch-free so that loops calling it vectorise. */
static inline double exp_core(double x)
{
    const double log2e = 1.4426950408889634;
    const double ln2_hi = 6.93147180369123816490e-01;
    const double ln2_lo = 1.90821492927058770002e-10;
    const double shifter = 0x1.8p52; /* adding it rounds to an integer */
    const double lo = -708.0, hi = 709.0;
    double xc = x < lo ? lo : x;
    xc = xc > hi ? hi : xc;
    double t = xc * log2e + shifter;
    double kd = t - shifter;                  /* round(x / ln2) */
    uint64_t k = as_u64(t) - as_u64(shifter); /* the same, as integer */
    double r = (xc - kd * ln2_hi) - kd * ln2_lo;
    double p = 1.0 / 6227020800.0;            /* 1/13! */
    p = p * r + 1.0 / 479001600.0;
    p = p * r + 1.0 / 39916800.0;
    p = p * r + 1.0 / 3628800.0;
    p = p * r + 1.0 / 362880.0;
    p = p * r + 1.0 / 40320.0;
    p = p * r + 1.0 / 5040.0;
    p = p * r + 1.0 / 720.0;
    p = p * r + 1.0 / 120.0;
    p = p * r + 1.0 / 24.0;
    p = p * r + 1.0 / 6.0;
    p = p * r + 0.5;
    p = p * r + 1.0;
    p = p * r + 1.0;
    double y = p * as_f64((k + 1023) << 52);
    y = x < lo ? 0.0 : y;
    y = x > hi ? INFINITY : y;
    return x != x ? x : y;
}

KM_CLONES
void km_vexp(double *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        v[i] = exp_core(v[i]);
}

/* One pass from inner products to rbf values: reading and writing the row
 * once instead of twice halves the memory traffic, which is what the map
 * costs (at n = 10000: 0.06 s fused against 0.17 s in two passes, and
 * DSYRK's 0.09 s). */
KM_CLONES
void km_vmap_rbf(double *row, size_t len, double xn, const double *zn,
                 double gamma)
{
    for (size_t j = 0; j < len; j++) {
        double d2 = xn + zn[j] - 2.0 * row[j];
        row[j] = exp_core(-gamma * (d2 > 0 ? d2 : 0.0));
    }
}

/* Eight doubles, loaded and stored at any alignment through memcpy. The
 * compiler maps it to one AVX-512 register, two AVX2 ones or four SSE2
 * ones, per clone. */
typedef double v8d __attribute__((vector_size(64)));

/* gcc warns that passing such vectors by value differs between the clones'
 * ABIs; these helpers are static and always inlined, so none crosses. */
#pragma GCC diagnostic ignored "-Wpsabi"

static inline __attribute__((always_inline)) v8d load8(const double *p)
{
    v8d v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* The lane sums of a0..a7 as one vector: three rounds of pairwise
 * shuffles and adds (21 operations) instead of eight horizontal sums
 * (each a chain of dependent shuffles). */
static inline __attribute__((always_inline)) v8d
sum_lanes8(v8d a0, v8d a1, v8d a2, v8d a3, v8d a4, v8d a5, v8d a6, v8d a7)
{
#define PAIRS(u, v) (__builtin_shufflevector(u, v, 0, 8, 2, 10, 4, 12, 6, 14) + \
                     __builtin_shufflevector(u, v, 1, 9, 3, 11, 5, 13, 7, 15))
#define QUADS(u, v) (__builtin_shufflevector(u, v, 0, 1, 8, 9, 4, 5, 12, 13) + \
                     __builtin_shufflevector(u, v, 2, 3, 10, 11, 6, 7, 14, 15))
    /* b01: rows 0 (even lanes) and 1 (odd lanes), 4 partial sums each */
    v8d b01 = PAIRS(a0, a1), b23 = PAIRS(a2, a3);
    v8d b45 = PAIRS(a4, a5), b67 = PAIRS(a6, a7);
    /* c03: rows 0-3 in lanes 0-3 and again in 4-7, 2 partial sums each */
    v8d c03 = QUADS(b01, b23), c47 = QUADS(b45, b67);
#undef PAIRS
#undef QUADS
    return __builtin_shufflevector(c03, c47, 0, 1, 2, 3, 8, 9, 10, 11) +
           __builtin_shufflevector(c03, c47, 4, 5, 6, 7, 12, 13, 14, 15);
}

/*
 * K[j] = <x, Z_j> for the nz rows of Z (d features each), in the calling
 * thread. For one row DGEMM would pack all of Z for a single product, and
 * OpenBLAS threads a DGEMV of this size: with several HTTP threads
 * predicting at once their calls then queue on OpenBLAS's one thread pool
 * (measured: 22k single-row predicts a second on one connection, 2k on
 * 64).
 *
 * Typical models have few features, so the horizontal sums, not the
 * multiply-adds, are the cost of a row-by-row loop. With d >= 8, eight
 * rows go at once: a vector of partial sums per row over the features in
 * blocks of eight, then all eight summed across lanes together
 * (sum_lanes8). The tail reads a row's last d % 8 features as a vector
 * running into the next row, whose values meet zeros in xt: they add
 * nothing as long as they are finite, which training rows are (the API
 * refuses others, and a model with a non-finite row predicts nothing
 * finite anyway). 1000 rows of 16 (AVX-512): 4.7 us row by row
 * (four at a time), 1.7 us so; of 20: 6.9 us, 2.0 us.
 */
KM_CLONES
void km_vdot_rows(const double *x, const double *Z, size_t nz, size_t d,
                  double *K)
{
    size_t j = 0, d8 = d & ~(size_t)7;
    v8d xt = {0}; /* x's last d % 8 features, then zeros */
    memcpy(&xt, x + d8, (d - d8) * sizeof *x);
    if (d8)
        for (; j + 8 <= nz; j += 8) {
            const double *z = Z + j * d;
            v8d a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};
            v8d a4 = {0}, a5 = {0}, a6 = {0}, a7 = {0};
            /* the eight rows' partial sums += xv times 8 values at off */
#define MADD8(xv, off)                                                     \
    do {                                                                   \
        a0 += (xv) * load8(z + (off));                                     \
        a1 += (xv) * load8(z + d + (off));                                 \
        a2 += (xv) * load8(z + 2 * d + (off));                             \
        a3 += (xv) * load8(z + 3 * d + (off));                             \
        a4 += (xv) * load8(z + 4 * d + (off));                             \
        a5 += (xv) * load8(z + 5 * d + (off));                             \
        a6 += (xv) * load8(z + 6 * d + (off));                             \
        a7 += (xv) * load8(z + 7 * d + (off));                             \
    } while (0)
            for (size_t f = 0; f < d8; f += 8)
                MADD8(load8(x + f), f);
            int tail = d8 < d; /* the last d % 8 features */
            if (tail && j + 8 < nz) {
                /* Eight values from each row's tail on: those past the
                 * row belong to the next row (there is one) and meet the
                 * zeros of xt. */
                MADD8(xt, d8);
                tail = 0;
            }
#undef MADD8
            v8d s = sum_lanes8(a0, a1, a2, a3, a4, a5, a6, a7);
            for (size_t f = d8; tail && f < d; f++)
                for (int r = 0; r < 8; r++)
                    s[r] += x[f] * z[(size_t)r * d + f];
            memcpy(K + j, &s, sizeof s);
        }
    /* Fewer features: four rows per pass share the loads of x. */
    for (; j + 4 <= nz; j += 4) {
        const double *z = Z + j * d;
        double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
#pragma omp simd reduction(+ : s0, s1, s2, s3)
        for (size_t f = 0; f < d; f++) {
            double xf = x[f];
            s0 += xf * z[f];
            s1 += xf * z[d + f];
            s2 += xf * z[2 * d + f];
            s3 += xf * z[3 * d + f];
        }
        K[j] = s0;
        K[j + 1] = s1;
        K[j + 2] = s2;
        K[j + 3] = s3;
    }
    for (; j < nz; j++) {
        const double *z = Z + j * d;
        double s = 0;
#pragma omp simd reduction(+ : s)
        for (size_t f = 0; f < d; f++)
            s += x[f] * z[f];
        K[j] = s;
    }
}

static inline __attribute__((always_inline)) void store8(double *p, v8d v)
{
    memcpy(p, &v, sizeof v);
}

/*
 * K (nr x m, row stride ldk) = the inner products of nr <= 4 rows of X
 * (d features each) with m centres given feature-major (Zt[f * m + j] is
 * centre j's feature f), in the calling thread. A 4 x 16 tile of
 * products stays in eight vector registers over all d features, which
 * makes it compute-bound where a row at a time (km_vdot_rows) is bound
 * by the horizontal sums and DGEMM by writing its output block to memory
 * before the kernel map reads it back (it also zeroes that block first
 * when beta is 0). The fused nystrom pass calls it for a few rows at a
 * time, so their products are still in cache for the map and the
 * products that follow.
 */
KM_CLONES
void km_vdot_tile(const double *X, size_t nr, size_t d, const double *Zt,
                  size_t m, double *K, size_t ldk)
{
    size_t j = 0;
    if (nr == 4) {
        const double *x0 = X, *x1 = X + d, *x2 = X + 2 * d, *x3 = X + 3 * d;
        for (; j + 16 <= m; j += 16) {
            v8d a0 = {0}, b0 = {0}, a1 = {0}, b1 = {0};
            v8d a2 = {0}, b2 = {0}, a3 = {0}, b3 = {0};
            for (size_t f = 0; f < d; f++) {
                const double *z = Zt + f * m + j;
                v8d za = load8(z), zb = load8(z + 8);
                a0 += x0[f] * za;
                b0 += x0[f] * zb;
                a1 += x1[f] * za;
                b1 += x1[f] * zb;
                a2 += x2[f] * za;
                b2 += x2[f] * zb;
                a3 += x3[f] * za;
                b3 += x3[f] * zb;
            }
            store8(K + j, a0);
            store8(K + j + 8, b0);
            store8(K + ldk + j, a1);
            store8(K + ldk + j + 8, b1);
            store8(K + 2 * ldk + j, a2);
            store8(K + 2 * ldk + j + 8, b2);
            store8(K + 3 * ldk + j, a3);
            store8(K + 3 * ldk + j + 8, b3);
        }
    }
    /* fewer rows, and the last m % 16 centres: a row at a time */
    for (size_t r = 0; r < nr; r++) {
        const double *x = X + r * d;
        double *k = K + r * ldk;
        size_t c = j;
        for (; c + 8 <= m; c += 8) {
            v8d a = {0};
            for (size_t f = 0; f < d; f++)
                a += x[f] * load8(Zt + f * m + c);
            store8(k + c, a);
        }
        for (; c < m; c++) {
            double s = 0;
            for (size_t f = 0; f < d; f++)
                s += x[f] * Zt[f * m + c];
            k[c] = s;
        }
    }
}

/* sum_j a[j] b[j], vectorised (in the calling thread, unlike BLAS's ddot
 * which may hand a long vector to its thread pool). */
KM_CLONES
double km_vdot(const double *a, const double *b, size_t n)
{
    double s = 0;
#pragma omp simd reduction(+ : s)
    for (size_t j = 0; j < n; j++)
        s += a[j] * b[j];
    return s;
}

/* y[j] += a x[j], vectorised, in the calling thread. */
KM_CLONES
void km_vaxpy(double a, const double *x, double *y, size_t n)
{
#pragma omp simd
    for (size_t j = 0; j < n; j++)
        y[j] += a * x[j];
}

/* sum_j a[j] b[j] with b in float, each product and the sum in double
 * (svc's nystrom descent on float features), in the calling thread. */
KM_CLONES
double km_vdot_f(const double *a, const float *b, size_t n)
{
    double s = 0;
#pragma omp simd reduction(+ : s)
    for (size_t j = 0; j < n; j++)
        s += a[j] * (double)b[j];
    return s;
}

/* y[j] += a x[j] with x in float, in double, in the calling thread. */
KM_CLONES
void km_vaxpy_f(double a, const float *x, double *y, size_t n)
{
#pragma omp simd
    for (size_t j = 0; j < n; j++)
        y[j] += a * (double)x[j];
}

/* Asks for the bytes [p, p + bytes) to be brought into cache, a line of
 * 64 bytes at a time (a hint: no effect on any value). */
void km_prefetch(const void *p, size_t bytes)
{
    const char *c = p;
    for (size_t j = 0; j < bytes; j += 64)
        __builtin_prefetch(c + j, 0, 3);
}
