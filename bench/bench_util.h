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

#endif
