/*
 * update_data.h - what the update tests share (test_km_update.c,
 * test_km_nys_update.c): seeded uniform numbers, rows with smooth
 * targets, the rbf kernel. The includer defines D, the rows' features,
 * and may define DATA_OFFSET, added to every target (default 0).
 */
#ifndef TESTS_UPDATE_DATA_H
#define TESTS_UPDATE_DATA_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "km.h"

#ifndef DATA_OFFSET
#define DATA_OFFSET 0.0
#endif

/* The generator's state: a test sets it for its own sequence. */
static uint64_t seed_state;

/* Uniform in [0, 1), from a 64-bit LCG (Knuth's MMIX constants). */
static double unif(void)
{
    seed_state = seed_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(seed_state >> 11) / 9007199254740992.0;
}

/* n rows of D features and q targets each (a smooth function of the
 * row's sum, DATA_OFFSET, and noise). */
static void make_data(size_t n, size_t q, double **X, double **Y)
{
    *X = malloc(n * D * sizeof **X);
    *Y = malloc(n * q * sizeof **Y);
    for (size_t i = 0; i < n; i++) {
        double s = 0;
        for (size_t j = 0; j < D; j++) {
            (*X)[i * D + j] = 4 * unif() - 2;
            s += (*X)[i * D + j];
        }
        for (size_t j = 0; j < q; j++)
            (*Y)[i * q + j] = sin(s + (double)j) * (1 + (double)j) +
                              DATA_OFFSET + 0.1 * (unif() - 0.5);
    }
}

static km_kernel rbf(double gamma)
{
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_RBF);
    k.gamma = gamma;
    return k;
}

#endif
