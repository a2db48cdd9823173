/*
 * bench_util.h - what the C benchmark programs share: a monotonic clock,
 * the process's peak resident memory, medians, and reading the drivers'
 * data files.
 *
 * The drivers (bench/bench_*.py) run a C program for our side and
 * scikit-learn or LIBSVM for the reference in the same run, and print ratios.
 */
#ifndef BENCH_UTIL_H
#define BENCH_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

static inline double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Peak resident set size of this process so far, in MiB. */
static inline double bench_peak_mib(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss / 1024.0;
}

static int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of n values (sorts v). */
static inline double bench_median(double *v, size_t n)
{
    qsort(v, n, sizeof *v, bench_cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* count raw little-endian doubles from path (the drivers' .bin files);
 * exits with status 2 when they cannot be read. */
static inline double *bench_read_bin(const char *path, size_t count)
{
    FILE *f = fopen(path, "rb");
    double *v = malloc(count * sizeof *v);
    if (!f || !v || fread(v, sizeof *v, count, f) != count) {
        fprintf(stderr, "cannot read %zu doubles from %s\n", count, path);
        exit(2);
    }
    fclose(f);
    return v;
}

/* The regression drivers' common first arguments, "X.bin y.bin T.bin n d
 * n_test": training rows X (n x d), targets y (n) and test rows T
 * (n_test x d); exits with status 2 when a file cannot be read. */
typedef struct bench_data {
    size_t n, d, nt;
    double *X, *y, *T;
} bench_data;

static inline bench_data bench_read_data(char **argv)
{
    bench_data b;
    b.n = strtoul(argv[4], NULL, 10);
    b.d = strtoul(argv[5], NULL, 10);
    b.nt = strtoul(argv[6], NULL, 10);
    b.X = bench_read_bin(argv[1], b.n * b.d);
    b.y = bench_read_bin(argv[2], b.n);
    b.T = bench_read_bin(argv[3], b.nt * b.d);
    return b;
}

#endif
