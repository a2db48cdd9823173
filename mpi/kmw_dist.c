/*
 * kmw_dist.c - the distributed matrices of kmserve-mpi's solves; see
 * kmw_dist.h.
 */
#include <limits.h>
#include <math.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "kmw_dist.h"

static int local_size(int n, int nb, int iproc, int nprocs)
{
    int zero = 0;
    return numroc_(&n, &nb, &iproc, &zero, &nprocs);
}

/* Global index of local index l of a block-cyclic dimension. */
size_t global_of(int l, int nb, int me, int np)
{
    return ((size_t)(l / nb) * (size_t)np + (size_t)me) * (size_t)nb +
           (size_t)(l % nb);
}

/*
 * The lower triangle of A = scale k(X, X) + shift I in this rank's tiles,
 * each through core's km_gram_block (column-major tile = row-major block
 * of the transposed pair; the matrix is symmetric). With finite set, a
 * value that is not finite is KM_ENOTPD (the Cholesky's refusal); kpca
 * finds it in the centring's sums instead.
 */
static km_status fill_tiles(const worker *w, dist *g, const km_kernel *k,
                            const double *X, const double *xn, size_t d,
                            double scale, double shift, int finite,
                            km_error *err)
{
    int nb = g->nb, lld = g->mloc > 1 ? g->mloc : 1;
    for (int lj = 0; lj < g->nloc; lj += nb) {
        size_t j0 = global_of(lj, nb, w->mycol, w->npcol);
        size_t nj = (size_t)g->n - j0 < (size_t)nb ? (size_t)g->n - j0
                                                   : (size_t)nb;
        for (int li = 0; li < g->mloc; li += nb) {
            size_t i0 = global_of(li, nb, w->myrow, w->nprow);
            size_t ni = (size_t)g->n - i0 < (size_t)nb ? (size_t)g->n - i0
                                                       : (size_t)nb;
            if (i0 + ni <= j0) /* wholly above the diagonal */
                continue;
            double *T = g->A + (size_t)li + (size_t)lj * (size_t)lld;
            km_status st = km_gram_block(k, X, xn, d, j0, nj, i0, ni, T,
                                         (size_t)lld, err);
            if (st != KM_OK)
                return st;
            for (size_t b = 0; b < nj; b++)
                for (size_t a = 0; a < ni; a++) {
                    double *v = T + a + b * (size_t)lld;
                    *v *= scale;
                    if (i0 + a == j0 + b)
                        *v += shift;
                    if (finite && !isfinite(*v))
                        return set_err(err, KM_ENOTPD, "the kernel matrix "
                                       "is not finite (row %zu, column %zu)",
                                       i0 + a, j0 + b);
                }
        }
    }
    return KM_OK;
}

/* Local sizes and descriptors of the n x n A and the n x m B (none when m
 * is 0) in nb x nb blocks. */
km_status dist_shape(const worker *w, dist *g, size_t n, size_t m,
                            int nb, km_error *err)
{
    memset(g, 0, sizeof *g);
    if (n > INT_MAX || m > INT_MAX)
        return set_err(err, KM_EINVAL, "%zu rows or %zu outputs: too many "
                       "for ScaLAPACK's int indices", n, m);
    g->n = (int)n;
    g->m = (int)m;
    g->nb = nb;
    g->mloc = local_size(g->n, g->nb, w->myrow, w->nprow);
    g->nloc = local_size(g->n, g->nb, w->mycol, w->npcol);
    g->bloc = local_size(g->m, g->nb, w->mycol, w->npcol);
    int lld = g->mloc > 1 ? g->mloc : 1, zero = 0, info = 0;
    descinit_(g->desc_a, &g->n, &g->n, &g->nb, &g->nb, &zero, &zero,
              &w->ctxt, &lld, &info);
    if (info == 0 && m)
        descinit_(g->desc_b, &g->n, &g->m, &g->nb, &g->nb, &zero, &zero,
                  &w->ctxt, &lld, &info);
    if (info != 0)
        return set_err(err, KM_EINTERNAL, "descinit argument %d", -info);
    return KM_OK;
}

/* KM_ENOMEM when need bytes are above the per-rank budget. */
km_status check_budget(const worker *w, size_t need, km_error *err)
{
    if (w->budget && need > w->budget)
        return set_err(err, KM_ENOMEM, "a rank's share needs %.1f MB, "
                       "above the per-rank budget of %.1f MB "
                       "(--mpi-memory-budget-mb); add ranks or raise the "
                       "budget", (double)need / 1048576.0,
                       (double)w->budget / 1048576.0);
    return KM_OK;
}

/* A local share of n x cols (cols local columns), at least one value. */
double *share_alloc(const dist *g, int cols)
{
    size_t lld = g->mloc > 1 ? (size_t)g->mloc : 1;
    return malloc(lld * (size_t)(cols ? cols : 1) * sizeof(double));
}

/* Local sizes, the budget check and the allocations, agreed by all. */
km_status dist_init(const worker *w, dist *g, size_t n, size_t d,
                           size_t m, km_error *err)
{
    km_status st = dist_shape(w, g, n, m, w->nb, err);
    if (st != KM_OK)
        return st;
    /* A's tiles, B's, X and Y (broadcast), X's norms, the gathers (C,
     * one panel of L) and, on rank 0, what km_fit holds beside. */
    size_t need = 8 * ((size_t)g->mloc * (size_t)g->nloc +
                       (size_t)g->mloc * (size_t)g->bloc + n * d + n * m + n +
                       n * m + (size_t)g->nb * n);
    if ((st = check_budget(w, need, err)) != KM_OK)
        return st;
    g->A = share_alloc(g, g->nloc);
    g->B = share_alloc(g, g->bloc);
    if (!g->A || !g->B)
        return set_err(err, KM_ENOMEM, "out of memory for a %zu-row share "
                       "of the %zu-row kernel matrix", (size_t)g->mloc, n);
    return KM_OK;
}

void dist_free(dist *g)
{
    free(g->A);
    free(g->B);
}

/* Sums this rank's entries of columns c0 .. c0 + cols - 1 of the
 * distributed n-row src (lcols local columns) into dst on rank 0, entry
 * (i, c0 + j) at dst[i * rs + j * cs]. */
void gather_cols(const worker *w, const dist *g, const double *src,
                        int lcols, size_t c0, size_t cols, double *dst,
                        size_t rs, size_t cs)
{
    size_t n = (size_t)g->n;
    int lld = g->mloc > 1 ? g->mloc : 1;
    memset(dst, 0, n * cols * sizeof *dst);
    for (int lj = 0; lj < lcols; lj++) {
        size_t j = global_of(lj, g->nb, w->mycol, w->npcol);
        if (j < c0 || j - c0 >= cols)
            continue;
        j -= c0;
        for (int li = 0; li < g->mloc; li++)
            dst[global_of(li, g->nb, w->myrow, w->nprow) * rs + j * cs] =
                src[(size_t)li + (size_t)lj * (size_t)lld];
    }
    reduce_doubles(dst, n * cols, w->rank);
}

/* Sums the lower factor into L (n x n row-major, rank 0), nb rows at a
 * time through a panel buffer (nb x n per rank). */
km_status gather_l(const worker *w, const dist *g, double *L,
                          km_error *err)
{
    size_t n = (size_t)g->n, nb = (size_t)g->nb;
    int lld = g->mloc > 1 ? g->mloc : 1;
    double *P = malloc(nb * n * sizeof *P);
    if (agree(P ? KM_OK : set_err(err, KM_ENOMEM, "out of memory for a "
                                  "%zu x %zu panel", nb, n), err) != KM_OK) {
        free(P);
        return KM_ENOMEM;
    }
    int li = 0; /* this rank's next local row */
    for (size_t r0 = 0; r0 < n; r0 += nb) {
        size_t rows = n - r0 < nb ? n - r0 : nb;
        memset(P, 0, rows * n * sizeof *P);
        int owner = (int)((r0 / nb) % (size_t)w->nprow);
        if (owner == w->myrow) {
            for (size_t a = 0; a < rows; a++, li++)
                for (int lj = 0; lj < g->nloc; lj++) {
                    size_t j = global_of(lj, g->nb, w->mycol, w->npcol);
                    if (j <= r0 + a)
                        P[a * n + j] =
                            g->A[(size_t)li + (size_t)lj * (size_t)lld];
                }
        }
        reduce_doubles(P, rows * n, w->rank);
        if (w->rank == 0)
            memcpy(L + r0 * n, P, rows * n * sizeof *P);
    }
    free(P);
    return KM_OK;
}

/* The problem's three arrays on this rank, agreed by all: rank 0 uses
 * the caller's (mine), the others allocate len[i] doubles each (none when
 * st, the status so far, is not KM_OK). rank_free releases them. */
km_status rank_arrays(const worker *w, km_status st, double *v[3],
                             double *const mine[3], const size_t len[3],
                             km_error *err)
{
    for (int i = 0; i < 3; i++) {
        v[i] = w->rank == 0 ? mine[i] : NULL;
        if (w->rank != 0 && st == KM_OK &&
            !(v[i] = malloc((len[i] ? len[i] : 1) * sizeof(double))))
            st = set_err(err, KM_ENOMEM, "out of memory for %zu values of "
                         "the problem", len[i]);
    }
    return agree(st, err);
}

void rank_free(const worker *w, double *v[3])
{
    for (int i = 0; i < 3 && w->rank != 0; i++)
        free(v[i]);
}

/* X (n x d) from rank 0 to all, then, in phase "kernel" at progress f,
 * this rank's tiles of scale k(X, X) + shift I (fill_tiles); *xn gets X's
 * norms (the caller frees them). Agreed by all. */
km_status share_tiles(worker *w, dist *g, const km_kernel *k,
                             double *X, size_t d, double scale, double shift,
                             int finite, const km_fit_control *ctl, double f,
                             double **xn, km_error *err)
{
    size_t n = (size_t)g->n;
    bcast_doubles(X, n * d);
    enter(w, ctl, "kernel", f);
    *xn = km_sqnorms(X, n, d);
    km_status st = *xn ? fill_tiles(w, g, k, X, *xn, d, scale, shift, finite,
                                    err)
                       : set_err(err, KM_ENOMEM, "out of memory for %zu "
                                 "norms", n);
    return agree(st, err);
}

/* The head and the kernel k0, from rank 0 to all, into *h and *k (to
 * clean up when KM_OK). */
km_status share_problem(const worker *w, solve_head *h,
                               const km_kernel *k0, km_kernel *k,
                               km_error *err)
{
    unsigned char *kb = NULL;
    size_t klen = 0;
    km_status st = KM_OK;
    if (w->rank == 0) {
        st = km_kernel_save_buffer(k0, &kb, &klen, err);
        h->kernel_len = st == KM_OK ? klen : 0;
    }
    MPI_Bcast(h, (int)sizeof *h, MPI_BYTE, 0, MPI_COMM_WORLD);
    if (h->kernel_len == 0)
        return st != KM_OK ? st : KM_EINTERNAL;
    if (w->rank != 0)
        kb = malloc(h->kernel_len);
    if (agree(kb ? KM_OK : KM_ENOMEM, err) != KM_OK) {
        free(kb);
        return KM_ENOMEM;
    }
    MPI_Bcast(kb, (int)h->kernel_len, MPI_BYTE, 0, MPI_COMM_WORLD);
    st = km_kernel_load_buffer(kb, h->kernel_len, k, err);
    free(kb);
    return agree(st, err);
}
