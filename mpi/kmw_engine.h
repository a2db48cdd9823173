/*
 * kmw_engine.h - kmserve-mpi's dense engine (km_fit_control.dense): the
 * Cholesky solve (PDPOTRF, PDPOTRS) and kpca's eigen-problem (PDSYEVR) on
 * all ranks. Rank 0's core fit calls engine_solve and engine_eigen, which
 * send the others the command to join; the others, waiting for a
 * command, call solve_all and eigen_all.
 *
 * Thread-safety: the rank's work thread only.
 */
#ifndef KMW_ENGINE_H
#define KMW_ENGINE_H

#include "kmw_dist.h"

/* What rank 0 tells the others, broadcast before each part. */
enum { CMD_DONE = 0, CMD_SOLVE = 1, CMD_EIGEN = 2 };


/* Every rank's part of one solve; rank 0 passes the problem (others
 * receive it), and gets C (and L). */
km_status solve_all(worker *w, solve_head *h, const km_kernel *k0,
                    const double *X0, const double *Y0, double *C, double *L,
                    const km_fit_control *ctl, double f0, double f1,
                    km_error *err);
/* km_dense_engine.solve, on rank 0 (ctx: the worker). */
km_status engine_solve(void *ctx, const km_kernel *k, double scale,
                       const double *X, size_t n, size_t d, double shift,
                       const double *Y, size_t m, double *C, double *L,
                       const km_fit_control *ctl, double f0, double f1,
                       km_error *err);
/* Every rank's part of one kpca eigen-problem; see kmw_engine.c. */
km_status eigen_all(worker *w, solve_head *h, const km_kernel *k0,
                    const double *X0, double *col_mean, double *grand,
                    double *trace, double *lambda, double *U,
                    const km_fit_control *ctl, double f0, double f1,
                    km_error *err);
/* km_dense_engine.eigen, on rank 0 (ctx: the worker). */
km_status engine_eigen(void *ctx, const km_kernel *k, const double *X,
                       size_t n, size_t d, size_t nev, double *col_mean,
                       double *grand, double *trace, double *lambda,
                       double *U, const km_fit_control *ctl, double f0,
                       double f1, km_error *err);

#endif
