/*
 * kmw_engine.c - kmserve-mpi's dense engine: the distributed Cholesky
 * solve and kpca's distributed eigen-problem; see kmw_engine.h.
 */
#include <cblas.h>
#include <limits.h>
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kmw_engine.h"

/*
 * Every rank's part of one solve; rank 0 passes the problem (others
 * receive it), and gets C (and L).
 */
km_status solve_all(worker *w, solve_head *h, const km_kernel *k0,
                           const double *X0, const double *Y0, double *C,
                           double *L, const km_fit_control *ctl, double f0,
                           double f1, km_error *err)
{
    km_kernel k;
    km_status st = share_problem(w, h, k0, &k, err);
    if (st != KM_OK)
        return st;
    size_t n = h->n, d = h->d, m = h->m;

    dist g;
    double *v[3], *xn = NULL; /* X, Y, C */
    set_phase(w, "allocating");
    st = dist_init(w, &g, n, d, m, err);
    st = rank_arrays(w, st, v, (double *[]){(double *)X0, (double *)Y0, C},
                     (size_t[]){n * d, n * m, n * m}, err);
    double *X = v[0], *Y = v[1], *Cg = v[2];
    if (st != KM_OK)
        goto out;
    bcast_doubles(Y, n * m);
    st = share_tiles(w, &g, &k, X, d, h->scale, h->shift, 1, ctl, f0, &xn,
                     err);
    if (st != KM_OK)
        goto out;

    enter(w, ctl, "factor", f0 + 0.1 * (f1 - f0));
    int one = 1, info = 0, lld = g.mloc > 1 ? g.mloc : 1;
    pdpotrf_("L", &g.n, g.A, &one, &one, g.desc_a, &info, 1);
    if (info > 0) {
        st = set_err(err, KM_ENOTPD, "the kernel matrix plus alpha*I is not "
                     "positive definite (Cholesky failed at row %zu); use a "
                     "larger params.alpha or a positive definite kernel",
                     (size_t)info);
        goto out;
    }
    if (info < 0) {
        st = set_err(err, KM_EINTERNAL, "pdpotrf argument %d", -info);
        goto out;
    }

    enter(w, ctl, "solve", f0 + 0.85 * (f1 - f0));
    for (int lj = 0; lj < g.bloc; lj++) {
        size_t j = global_of(lj, g.nb, w->mycol, w->npcol);
        for (int li = 0; li < g.mloc; li++)
            g.B[(size_t)li + (size_t)lj * (size_t)lld] =
                Y[global_of(li, g.nb, w->myrow, w->nprow) * m + j];
    }
    pdpotrs_("L", &g.n, &g.m, g.A, &one, &one, g.desc_a, g.B, &one, &one,
             g.desc_b, &info, 1);
    if (info != 0) {
        st = set_err(err, KM_EINTERNAL, "pdpotrs argument %d", -info);
        goto out;
    }
    set_phase(w, "gather");
    gather_cols(w, &g, g.B, g.bloc, 0, m, Cg, m, 1);
    if (h->want_l)
        st = gather_l(w, &g, L, err);
out:
    rank_free(w, v);
    free(xn);
    dist_free(&g);
    km_kernel_cleanup(&k);
    return st;
}

/* The engine core's fits call on rank 0: tells the others to join. */
km_status engine_solve(void *ctx, const km_kernel *k, double scale,
                              const double *X, size_t n, size_t d,
                              double shift, const double *Y, size_t m,
                              double *C, double *L, const km_fit_control *ctl,
                              double f0, double f1, km_error *err)
{
    worker *w = ctx;
    int cmd = CMD_SOLVE;
    MPI_Bcast(&cmd, 1, MPI_INT, 0, MPI_COMM_WORLD);
    solve_head h = {n, d, m, 0, L != NULL, scale, shift};
    km_status st = solve_all(w, &h, k, X, Y, C, L, ctl, f0, f1, err);
    set_phase(w, "model");
    return st;
}

/* ------------------------------------------------------------ kpca */

/*
 * One eigen-problem's share: A (the centred matrix, lower triangle) in
 * g, Z (PDSYEVR's n x n vectors with A's descriptor: the first mz
 * columns get the top mz, ascending), W (n eigenvalues, on every rank)
 * and PDSYEVR's workspace, its size queried.
 *
 * mz = max(nev, nb), at most n, not nev: ScaLAPACK 2.2's PDSYEVR sizes
 * the workspace it hands PDORMTR (the back-transformation) from the
 * number of vectors asked for, which is too small below one block
 * (about NP0 x mz against the (NP0 + nb) x nb PDORMTR needs). PDORMTR
 * then refuses, PDSYEVR prints it and still returns info 0 with the
 * tridiagonal's vectors in Z. With mz >= nb and n >= nb the sizes agree
 * ((NP0 - nb)(mz - nb) >= 0); below one block of rows the block is n.
 * The extra vectors cost 2 n^2 mz flops, a few per cent of the
 * reduction's 4 n^3 / 3 at n = 8000.
 */
typedef struct eig {
    dist g;
    int nev, mz, lwork, liwork;
    double *Z, *W, *work;
    int *iwork;
} eig;

static void eig_free(eig *e)
{
    dist_free(&e->g);
    free(e->Z);
    free(e->W);
    free(e->work);
    free(e->iwork);
}

/* PDSYEVR for the top mz eigenpairs (index range n - mz + 1 .. n) of
 * A (e's shape) into W and Z; with lwork -1 (and liwork -1) a workspace
 * query, into work[0] and iwork[0]. */
static int eig_run(const eig *e, double *A, double *W, double *Z,
                   double *work, int lwork, int *iwork, int liwork)
{
    int one = 1, il = e->g.n - e->mz + 1, iu = e->g.n, found = 0, nz = 0,
        info = 0;
    double v0 = 0, v1 = 0;
    pdsyevr_("V", "I", "L", &e->g.n, A, &one, &one, e->g.desc_a, &v0, &v1,
             &il, &iu, &found, &nz, W, Z, &one, &one, e->g.desc_a, work,
             &lwork, iwork, &liwork, &info, 1, 1, 1);
    if (info == 0 && lwork != -1 && (found != e->mz || nz != e->mz))
        return INT_MAX; /* fewer than asked for */
    return info;
}

/*
 * PDSYEVR's minimum workspace for the top mz vectors (its LWMIN, from
 * ScaLAPACK 2.2's source): 5n + 2 + max(18n, NP00 MQ00 + 2 nb^2) +
 * (ceil(mz / P) + 2) n, NP00 and MQ00 the largest local sizes of n rows
 * and of mz columns.
 */
static size_t eig_lwmin(const worker *w, const eig *e)
{
    int zero = 0, n = e->g.n, nb = e->g.nb, mz = e->mz;
    size_t np00 = (size_t)numroc_(&n, &nb, &zero, &zero, &w->nprow);
    size_t mq00 = (size_t)numroc_(&mz, &nb, &zero, &zero, &w->npcol);
    size_t p = (size_t)w->nprow * (size_t)w->npcol, un = (size_t)n;
    size_t a = 18 * un, b = np00 * mq00 + 2 * (size_t)nb * (size_t)nb;
    return 5 * un + 2 + (a > b ? a : b) + ((size_t)mz + p - 1) / p * un +
           2 * un;
}

/*
 * Local sizes, PDSYEVR's workspace, the budget check and the
 * allocations: A and Z (two shares of the n x n matrix), the workspace,
 * and beside them X (broadcast), its norms, the column sums, W, the
 * gather of the vectors and, on rank 0, what km_fit holds (the model's X
 * and projections, the vectors, a preprocessed copy of X).
 *
 * The workspace: the optimum that PDSYEVR's query (lwork -1) answers
 * when every rank's budget holds it, else its minimum. The optimum lets
 * PDSYNTRD copy the whole matrix onto the largest square grid of ranks
 * (n^2 / floor(sqrt(P))^2 values a rank: all of it on one rank for 2 or
 * 3) and reduce it there, faster; with the minimum it reduces in place
 * (PDSYTRD's blocked code), so a rank holds about two shares.
 */
static km_status eig_init(const worker *w, eig *e, size_t n, size_t d,
                          size_t nev, km_error *err)
{
    memset(e, 0, sizeof *e);
    if (nev < 1 || nev > n || n > INT_MAX)
        return set_err(err, KM_EINVAL, "%zu eigenpairs of a %zu-row matrix",
                       nev, n);
    int nb = (size_t)w->nb < n ? w->nb : (int)n; /* see eig */
    km_status st = dist_shape(w, &e->g, n, 0, nb, err);
    if (st != KM_OK)
        return st;
    e->nev = (int)nev;
    e->mz = e->nev > nb ? e->nev : nb;
    double wq = 0, dummy = 0;
    int iq = 0;
    int info = eig_run(e, &dummy, &dummy, &dummy, &wq, -1, &iq, -1);
    size_t lwmin = eig_lwmin(w, e);
    if (info != 0 || !(wq >= 1) || iq < 1 || lwmin > INT_MAX)
        return set_err(err, KM_EINTERNAL, "pdsyevr's workspace query "
                       "failed (info %d)", info);
    size_t lwopt = wq > (double)INT_MAX ? SIZE_MAX : (size_t)wq;
    size_t share = (size_t)e->g.mloc * (size_t)e->g.nloc;
    size_t beside = 8 * (2 * share + 3 * n * d + 3 * n * nev + 6 * n) +
                    4 * (size_t)iq;
    int opt = lwopt <= INT_MAX &&
              (!w->budget || beside + 8 * lwopt <= w->budget), all = 0;
    MPI_Allreduce(&opt, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    e->lwork = (int)(all ? lwopt : lwmin);
    if (!all && w->rank == 0) /* in the job's log */
        fprintf(stderr, "kmserve-mpi: pdsyevr with its minimum workspace "
                "(%zu values; the optimum, %zu, is above a rank's "
                "budget)\n", lwmin, lwopt);
    e->liwork = iq;
    if ((st = check_budget(w, beside + 8 * (size_t)e->lwork, err)) != KM_OK)
        return st;
    e->g.A = share_alloc(&e->g, e->g.nloc);
    e->Z = share_alloc(&e->g, e->g.nloc);
    e->W = malloc(n * sizeof *e->W);
    e->work = malloc((size_t)e->lwork * sizeof *e->work);
    e->iwork = malloc((size_t)e->liwork * sizeof *e->iwork);
    if (!e->g.A || !e->Z || !e->W || !e->work || !e->iwork)
        return set_err(err, KM_ENOMEM, "out of memory for a %zu-row share "
                       "of the %zu-row kernel matrix and its eigenvectors",
                       (size_t)e->g.mloc, n);
    return KM_OK;
}

/*
 * Centres this rank's lower tiles of A in place, Kc = K - 1 m^T - m 1^T
 * + g (core's centring, km_kpca.c, distributed): the column sums of the
 * symmetric K from the stored triangle (an entry off the diagonal counts
 * for its row and its column) summed over all ranks, then the update;
 * col_mean (n) gets the column means m and *grand their mean g on every
 * rank, *trace the trace of Kc.
 */
static void center_tiles(const worker *w, dist *g, double *col_mean,
                         double *grand, double *trace)
{
    size_t n = (size_t)g->n, lld = g->mloc > 1 ? (size_t)g->mloc : 1;
    memset(col_mean, 0, n * sizeof *col_mean);
    for (int lj = 0; lj < g->nloc; lj++) {
        size_t j = global_of(lj, g->nb, w->mycol, w->npcol);
        const double *col = g->A + (size_t)lj * lld;
        for (int li = 0; li < g->mloc; li++) {
            size_t i = global_of(li, g->nb, w->myrow, w->nprow);
            if (i < j) /* above the diagonal: not filled */
                continue;
            col_mean[j] += col[li];
            if (i != j)
                col_mean[i] += col[li];
        }
    }
    MPI_Allreduce(MPI_IN_PLACE, col_mean, g->n, MPI_DOUBLE, MPI_SUM,
                  MPI_COMM_WORLD);
    double gm = 0, tr = 0;
    for (size_t i = 0; i < n; i++) {
        col_mean[i] /= (double)n;
        gm += col_mean[i];
    }
    gm /= (double)n;
    for (int lj = 0; lj < g->nloc; lj++) {
        size_t j = global_of(lj, g->nb, w->mycol, w->npcol);
        double *col = g->A + (size_t)lj * lld;
        for (int li = 0; li < g->mloc; li++) {
            size_t i = global_of(li, g->nb, w->myrow, w->nprow);
            if (i < j)
                continue;
            col[li] += gm - col_mean[i] - col_mean[j];
            if (i == j)
                tr += col[li];
        }
    }
    MPI_Allreduce(MPI_IN_PLACE, &tr, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    *grand = gm;
    *trace = tr;
}

/*
 * Every rank's part of one kpca eigen-problem (km_dense_engine.eigen);
 * rank 0 passes the kernel and X (others receive them), and gets the
 * column means, grand mean, trace, the nev eigenvalues descending and
 * their vectors U (n x nev, column-major).
 */
km_status eigen_all(worker *w, solve_head *h, const km_kernel *k0,
                           const double *X0, double *col_mean, double *grand,
                           double *trace, double *lambda, double *U,
                           const km_fit_control *ctl, double f0, double f1,
                           km_error *err)
{
    km_kernel k;
    km_status st = share_problem(w, h, k0, &k, err);
    if (st != KM_OK)
        return st;
    size_t n = h->n, d = h->d, nev = h->m;

    eig e;
    double *v[3], *xn = NULL, gm = 0, tr = 0; /* X, column means, U */
    set_phase(w, "allocating");
    st = eig_init(w, &e, n, d, nev, err);
    st = rank_arrays(w, st, v, (double *[]){(double *)X0, col_mean, U},
                     (size_t[]){n * d, n, n * nev}, err);
    double *X = v[0], *cm = v[1], *Ug = v[2];
    if (st != KM_OK)
        goto out;
    st = share_tiles(w, &e.g, &k, X, d, 1.0, 0.0, 0, ctl, f0, &xn, err);
    if (st != KM_OK)
        goto out;

    enter(w, ctl, "centring", f0 + 0.1 * (f1 - f0));
    center_tiles(w, &e.g, cm, &gm, &tr);
    if (!isfinite(gm) || !isfinite(tr)) /* the caller refuses it */
        goto out;

    enter(w, ctl, "eigen", f0 + 0.15 * (f1 - f0));
    int info = eig_run(&e, e.g.A, e.W, e.Z, e.work, e.lwork, e.iwork,
                       e.liwork);
    if (info != 0) {
        st = info < 0 ? set_err(err, KM_EINTERNAL, "pdsyevr argument %d",
                                -info)
                      : set_err(err, KM_EINTERNAL, "pdsyevr found fewer "
                                "than the %zu eigenpairs asked for (info "
                                "%d)", nev, info == INT_MAX ? 0 : info);
        goto out;
    }

    enter(w, ctl, "gather", f0 + 0.95 * (f1 - f0));
    /* Z's last nev of mz columns, ascending, become U's descending. */
    gather_cols(w, &e.g, e.Z, e.g.nloc, (size_t)(e.mz - e.nev), nev, Ug, 1,
                n);
    if (w->rank == 0)
        for (size_t j = 0; j < nev; j++) {
            lambda[j] = e.W[e.mz - 1 - j];
            if (j < nev / 2)
                cblas_dswap((int)n, Ug + j * n, 1, Ug + (nev - 1 - j) * n, 1);
        }
out:
    if (w->rank == 0) {
        *grand = gm;
        *trace = tr;
    }
    rank_free(w, v);
    free(xn);
    eig_free(&e);
    km_kernel_cleanup(&k);
    return st;
}

/* The engine's eigen on rank 0: tells the others to join. */
km_status engine_eigen(void *ctx, const km_kernel *k, const double *X,
                              size_t n, size_t d, size_t nev,
                              double *col_mean, double *grand, double *trace,
                              double *lambda, double *U,
                              const km_fit_control *ctl, double f0, double f1,
                              km_error *err)
{
    worker *w = ctx;
    int cmd = CMD_EIGEN;
    MPI_Bcast(&cmd, 1, MPI_INT, 0, MPI_COMM_WORLD);
    solve_head h = {n, d, nev, 0, 0, 1.0, 0.0};
    km_status st = eigen_all(w, &h, k, X, col_mean, grand, trace, lambda, U,
                             ctl, f0, f1, err);
    set_phase(w, "model");
    return st;
}
