/*
 * chol_ref.h - the tests' own Cholesky factorisation, no LAPACK: the
 * textbook loop (L_jj = sqrt(A_jj - sum L_jk^2), L_ij = (A_ij - sum L_ik
 * L_jk) / L_jj), in place on the lower triangle of an n x n row-major SPD
 * A (the upper triangle is left as it was). Fails the test when A is not
 * positive definite. Includes check_main.h.
 */
#ifndef TESTS_CHOL_REF_H
#define TESTS_CHOL_REF_H

#include <math.h>
#include <stddef.h>

#include "../check_main.h"

static inline void chol_ref(double *A, size_t n)
{
    for (size_t j = 0; j < n; j++) {
        double s = A[j * n + j];
        for (size_t k = 0; k < j; k++)
            s -= A[j * n + k] * A[j * n + k];
        ck_assert(s > 0);
        A[j * n + j] = sqrt(s);
        for (size_t i = j + 1; i < n; i++) {
            double t = A[i * n + j];
            for (size_t k = 0; k < j; k++)
                t -= A[i * n + k] * A[j * n + k];
            A[i * n + j] = t / A[j * n + j];
        }
    }
}

#endif
