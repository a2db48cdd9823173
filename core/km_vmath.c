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

#include "km_internal.h"

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

/*
 * K[j] = <x, Z_j> for the nz rows of Z (d features each), in the calling
 * thread. For one row DGEMM would pack all of Z for a single product, and
 * OpenBLAS threads a DGEMV of this size: with several HTTP threads
 * predicting at once their calls then queue on OpenBLAS's one thread pool
 * (measured: 22k single-row predicts a second on one connection, 2k on
 * 64). The sums are vectorised over features (omp simd reduction, which
 * lets the compiler reassociate this loop only).
 */
KM_CLONES
void km_vdot_rows(const double *x, const double *Z, size_t nz, size_t d,
                  double *K)
{
    size_t j = 0;
    /* Four rows per pass share the loads of x and the loop overhead, which
     * for the few features of a typical model costs more than the
     * multiply-adds (1004 rows of 16: 3.8 us against 5.0 us one by one;
     * the rows come from L2, so little more is to be had). */
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
