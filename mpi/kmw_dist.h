/*
 * kmw_dist.h - the distributed matrices of kmserve-mpi's solves: BLACS
 * and ScaLAPACK's calls, one problem's head as rank 0 broadcasts it, a
 * block-cyclic share of A (and B), its tiles of the kernel matrix filled
 * by core's km_gram_block, the per-rank budget, and the gathers onto
 * rank 0.
 *
 * Thread-safety: the rank's work thread only.
 */
#ifndef KMW_DIST_H
#define KMW_DIST_H

#include <stddef.h>
#include <stdint.h>

#include "kmw_worker.h"

/* BLACS and ScaLAPACK (Fortran symbols; character arguments carry their
 * hidden lengths last, as gfortran passes them). */
void Cblacs_get(int ctxt, int what, int *val);
void Cblacs_gridinit(int *ctxt, const char *order, int nprow, int npcol);
void Cblacs_gridinfo(int ctxt, int *nprow, int *npcol, int *myrow,
                     int *mycol);
void Cblacs_gridexit(int ctxt);
int numroc_(const int *n, const int *nb, const int *iproc,
            const int *isrcproc, const int *nprocs);
void descinit_(int *desc, const int *m, const int *n, const int *mb,
               const int *nb, const int *irsrc, const int *icsrc,
               const int *ictxt, const int *lld, int *info);
void pdpotrf_(const char *uplo, const int *n, double *a, const int *ia,
              const int *ja, const int *desca, int *info, size_t uplo_len);
void pdpotrs_(const char *uplo, const int *n, const int *nrhs,
              const double *a, const int *ia, const int *ja,
              const int *desca, double *b, const int *ib, const int *jb,
              const int *descb, int *info, size_t uplo_len);
void pdsyevr_(const char *jobz, const char *range, const char *uplo,
              const int *n, double *a, const int *ia, const int *ja,
              const int *desca, const double *vl, const double *vu,
              const int *il, const int *iu, int *m, int *nz, double *w,
              double *z, const int *iz, const int *jz, const int *descz,
              double *work, const int *lwork, int *iwork, const int *liwork,
              int *info, size_t jobz_len, size_t range_len, size_t uplo_len);

/* What one solve is, as rank 0 broadcasts it. */
typedef struct solve_head {
    uint64_t n, d, m, kernel_len, want_l;
    double scale, shift;
} solve_head;

typedef struct dist {
    int n, m, nb, mloc, nloc, bloc, desc_a[9], desc_b[9];
    double *A, *B;
} dist;

/* Global index of local index l of a block-cyclic dimension. */
size_t global_of(int l, int nb, int me, int np);
/* Local sizes and descriptors of the n x n A and the n x m B (none when m
 * is 0) in nb x nb blocks. */
km_status dist_shape(const worker *w, dist *g, size_t n, size_t m, int nb,
                     km_error *err);
/* KM_ENOMEM when need bytes are above the per-rank budget. */
km_status check_budget(const worker *w, size_t need, km_error *err);
/* A local share of n x cols (cols local columns), at least one value. */
double *share_alloc(const dist *g, int cols);
/* Local sizes, the budget check and the allocations, agreed by all. */
km_status dist_init(const worker *w, dist *g, size_t n, size_t d, size_t m,
                    km_error *err);
void dist_free(dist *g);
/* Sums this rank's entries of columns c0 .. c0 + cols - 1 of the
 * distributed n-row src (lcols local columns) into dst on rank 0, entry
 * (i, c0 + j) at dst[i * rs + j * cs]. */
void gather_cols(const worker *w, const dist *g, const double *src,
                 int lcols, size_t c0, size_t cols, double *dst, size_t rs,
                 size_t cs);
/* Sums the lower factor into L (n x n row-major, rank 0). */
km_status gather_l(const worker *w, const dist *g, double *L, km_error *err);
/* The problem's three arrays on this rank, agreed by all: rank 0 uses
 * the caller's (mine), the others allocate len[i] doubles each (none when
 * st, the status so far, is not KM_OK). rank_free releases them. */
km_status rank_arrays(const worker *w, km_status st, double *v[3],
                      double *const mine[3], const size_t len[3],
                      km_error *err);
void rank_free(const worker *w, double *v[3]);
/* X (n x d) from rank 0 to all, then, in phase "kernel" at progress f,
 * this rank's tiles of scale k(X, X) + shift I; *xn gets X's norms (the
 * caller frees them). Agreed by all. */
km_status share_tiles(worker *w, dist *g, const km_kernel *k, double *X,
                      size_t d, double scale, double shift, int finite,
                      const km_fit_control *ctl, double f, double **xn,
                      km_error *err);
/* The head and the kernel k0, from rank 0 to all, into *h and *k (to
 * clean up when KM_OK). */
km_status share_problem(const worker *w, solve_head *h, const km_kernel *k0,
                        km_kernel *k, km_error *err);

#endif
