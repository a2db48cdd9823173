/*
 * km_spd.c - the exact kernel solve (K + alpha I) C = Y in rectangular
 * full packed storage, in mixed precision with refinement (LAPACK's
 * DSPOSV idea: Buttari, Dongarra et al. 2007; with conjugate gradients
 * preconditioned by the low-precision factor, as Carson and Higham's
 * GMRES-IR, CG being the Krylov method of an SPD matrix), or in double.
 *
 * Storage: LAPACK's rectangular full packed form (RFP, TRANSR 'N', UPLO
 * 'L': xPFTRF's layout) holds the lower triangle of the n x n matrix in
 * n (n + 1) / 2 values as two triangles T1 (n1 x n1, lower), T2 (n2 x n2,
 * upper: A22 transposed) and the rectangle S (n2 x n1), so that the
 * factorisation is four level-3 steps: POTRF(T1), TRSM(S), SYRK(T2),
 * POTRF(T2). The two POTRFs are blocked here (as km_krr.c's), so a long
 * factorisation reports progress and can stop between blocks. A float
 * factor thus takes 2 n^2 bytes and a double one 4 n^2: a quarter and a
 * half of the n x n double buffer a full-storage Cholesky needs.
 *
 * Refinement: conjugate gradients on (K + alpha I) x = y from x = 0,
 * preconditioned by M = L L^T, the float factor (the first direction is
 * the float solve M^-1 y), every output at once; its products with K + alpha I are computed in double from kernel
 * blocks of X (km_gram_block, the same values the double factor would
 * hold). When the recursive residual meets the test the true residual is
 * computed; only it decides. The test is DSPOSV's (|r|_inf <= |x|_inf
 * |A|_inf eps sqrt(n)): the backward error of a double Cholesky solve.
 *
 * Thread-safety: reentrant.
 */
#include <cblas.h>
#include <float.h>
#include <lapacke.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../base/km_base_internal.h"
#include "km_spd.h"

/* Columns per block of the blocked POTRFs. */
#define SPD_BLOCK 768

/* The RFP layout of an n x n lower triangle (xPFTRF, TRANSR 'N', UPLO
 * 'L'): T1 at o1, S at os, T2 at o2, all column-major with leading
 * dimension ld. */
typedef struct rfp {
    size_t n, n1, n2, ld, o1, os, o2;
} rfp;

static rfp rfp_layout(size_t n)
{
    rfp r = {n, 0, 0, 0, 0, 0, 0};
    r.n2 = n / 2;
    r.n1 = n - r.n2;
    if (n % 2 == 0) { /* a(0:n, 0:k-1): T1 at a(1), T2 at a(0), S at a(k+1) */
        r.ld = n + 1;
        r.o1 = 1;
        r.o2 = 0;
        r.os = r.n1 + 1;
    } else { /* a(0:n-1, 0:n1-1): T1 at a(0), T2 at a(n), S at a(n1) */
        r.ld = n;
        r.o1 = 0;
        r.o2 = n;
        r.os = r.n1;
    }
    return r;
}

static size_t rfp_values(size_t n)
{
    return n / 2 * (n + 1) + (n % 2 ? (n + 1) / 2 : 0);
}

/* Progress by flops done of the factorisation. */
typedef struct prog {
    const km_fit_control *ctl;
    double f0, f1, total, done;
} prog;

static int prog_add(prog *p, double flops)
{
    p->done += flops;
    double t = p->total > 0 ? p->done / p->total : 1.0;
    return km_progress(p->ctl, p->f0 + (p->f1 - p->f0) * (t < 1 ? t : 1));
}

/* The flops prog_add counts for a blocked POTRF of n and for the RFP
 * factorisation of r (so that its progress ends at f1). */
static double potrf_flops(size_t n)
{
    double f = 0;
    for (size_t k = 0; k < n; k += SPD_BLOCK) {
        size_t kb = n - k < SPD_BLOCK ? n - k : SPD_BLOCK;
        double b = (double)kb, m = (double)(n - k - kb);
        f += b * b * b / 3 + m * b * b + m * m * b;
    }
    return f;
}

static double pftrf_flops(const rfp *r)
{
    double a = (double)r->n1, b = (double)r->n2;
    return potrf_flops(r->n1) + b * a * a + b * b * a + potrf_flops(r->n2);
}

/* Return codes of the factorisations beyond LAPACK's: cancelled. */
#define SPD_CANCELLED (-1000)

/*
 * Blocked right-looking Cholesky of the column-major n x n triangle A
 * (leading dimension ld), lower or upper, in place: 0, the row (from 1)
 * where it is not positive definite, SPD_CANCELLED, or LAPACK's negative
 * argument number. One function per precision.
 */
#define DEFINE_POTRF(NAME, T, POTRF, TRSM, SYRK)                              \
    static lapack_int NAME(int upper, T *A, size_t n, size_t ld, prog *pg)   \
    {                                                                         \
        for (size_t k = 0; k < n; k += SPD_BLOCK) {                           \
            size_t kb = n - k < SPD_BLOCK ? n - k : SPD_BLOCK;                \
            size_t m = n - k - kb;                                            \
            T *A11 = A + k + k * ld;                                          \
            lapack_int info = POTRF(LAPACK_COL_MAJOR, upper ? 'U' : 'L',      \
                                    (lapack_int)kb, A11, (lapack_int)ld);     \
            if (info != 0)                                                    \
                return info > 0 ? (lapack_int)k + info : info;                \
            if (m && upper) {                                                 \
                T *A12 = A11 + kb * ld;                                       \
                TRSM(CblasColMajor, CblasLeft, CblasUpper, CblasTrans,        \
                     CblasNonUnit, (int)kb, (int)m, 1, A11, (int)ld, A12,     \
                     (int)ld);                                                \
                SYRK(CblasColMajor, CblasUpper, CblasTrans, (int)m, (int)kb,  \
                     -1, A12, (int)ld, 1, A12 + kb, (int)ld);                 \
            } else if (m) {                                                   \
                T *A21 = A11 + kb;                                            \
                TRSM(CblasColMajor, CblasRight, CblasLower, CblasTrans,       \
                     CblasNonUnit, (int)m, (int)kb, 1, A11, (int)ld, A21,     \
                     (int)ld);                                                \
                SYRK(CblasColMajor, CblasLower, CblasNoTrans, (int)m,         \
                     (int)kb, -1, A21, (int)ld, 1, A21 + kb * ld, (int)ld);   \
            }                                                                 \
            double b = (double)kb, r = (double)m;                             \
            if (prog_add(pg, b * b * b / 3 + r * b * b + r * r * b))          \
                return SPD_CANCELLED;                                         \
        }                                                                     \
        return 0;                                                             \
    }

DEFINE_POTRF(potrf_s, float, LAPACKE_spotrf_work, cblas_strsm, cblas_ssyrk)
DEFINE_POTRF(potrf_d, double, LAPACKE_dpotrf_work, cblas_dtrsm, cblas_dsyrk)

/* The RFP factorisation (xPFTRF's four steps, TRANSR 'N', UPLO 'L'). */
#define DEFINE_PFTRF(NAME, T, POTRF, TRSM, SYRK)                              \
    static lapack_int NAME(T *A, const rfp *r, prog *pg)                      \
    {                                                                         \
        int ld = (int)r->ld, n1 = (int)r->n1, n2 = (int)r->n2;                \
        lapack_int info = POTRF(0, A + r->o1, r->n1, r->ld, pg);              \
        if (info != 0 || n2 == 0)                                             \
            return info;                                                      \
        TRSM(CblasColMajor, CblasRight, CblasLower, CblasTrans,               \
             CblasNonUnit, n2, n1, 1, A + r->o1, ld, A + r->os, ld);          \
        SYRK(CblasColMajor, CblasUpper, CblasNoTrans, n2, n1, -1, A + r->os,  \
             ld, 1, A + r->o2, ld);                                           \
        double a = (double)n1, b = (double)n2;                                \
        if (prog_add(pg, b * a * a + b * b * a))                              \
            return SPD_CANCELLED;                                             \
        info = POTRF(1, A + r->o2, r->n2, r->ld, pg);                         \
        return info > 0 ? info + n1 : info;                                   \
    }

DEFINE_PFTRF(pftrf_s, float, potrf_s, cblas_strsm, cblas_ssyrk)
DEFINE_PFTRF(pftrf_d, double, potrf_d, cblas_dtrsm, cblas_dsyrk)

/* Rows per block of kernel values (8 MiB, at least one row, at most n). */
static size_t block_rows(size_t n)
{
    size_t b = n ? ((size_t)1 << 20) / n : 1;
    b = b < n ? b : n;
    return b < 1 ? 1 : b;
}

/* The solve's state. */
typedef struct spd {
    const km_kernel *k;
    const double *X, *xn;
    size_t n, d, m, rows;
    double alpha, anrm;
    double *Kb; /* rows x n kernel values */
    rfp r;
    const km_fit_control *ctl;
    size_t threads; /* the fused product's (0: none) */
    double *acc;    /* its accumulators, n per thread */
    double *row;    /* its rows of kernel values, n per thread */
} spd;

/*
 * Stores the run v[0 .. c) of lower-triangle values at RFP offset at, in
 * float (Lf) or double (Ld). diag: the run's first value is on the
 * diagonal (alpha added). rs: |A|'s row sums; the run is column j's from
 * row i (col 1) or row i's from column j (col 0). -1 when a value is not
 * finite; *overflow when one does not fit a float.
 */
static int put_run(const spd *s, double *v, size_t c, int diag, float *Lf,
                   double *Ld, size_t at, double *rs, int col, size_t i,
                   size_t j, int *overflow)
{
    if (diag)
        v[col ? 0 : c - 1] += s->alpha;
    double sum = 0;
    for (size_t t = 0; t < c; t++) {
        if (!isfinite(v[t]))
            return -1;
        double a = fabs(v[t]);
        if (rs) {
            int on_diag = diag && t == (col ? 0 : c - 1);
            if (!on_diag)
                sum += a;
            rs[col ? i + t : j + t] += a;
        }
        if (Lf && a > FLT_MAX)
            *overflow = 1;
    }
    if (rs)
        rs[col ? j : i] += sum;
    if (Ld)
        memcpy(Ld + at, v, c * sizeof *v);
    else
        for (size_t t = 0; t < c; t++)
            Lf[at + t] = (float)v[t];
    return 0;
}

/*
 * Fills the RFP lower triangle of K + alpha I in float (Lf) or double
 * (Ld), and s->anrm (|A|_inf) when rs is given; progress f0 .. f1. The
 * columns j < n1 are contiguous in the packed form (T1 over S), and so
 * are the rows i >= n1 of T2: blocks of columns, then of rows, so that
 * every value is written in order.
 */
static km_status fill(spd *s, float *Lf, double *Ld, double *rs, double f0,
                      double f1, int *overflow, km_error *err)
{
    size_t n = s->n, n1 = s->r.n1, ld = s->r.ld;
    double total = (double)n * (double)(n + 1) / 2, done = 0;
    int bad = 0;
    if (rs)
        memset(rs, 0, n * sizeof *rs);
    for (size_t j0 = 0; j0 < n1 && !bad; j0 += s->rows) {
        size_t jb = n1 - j0 < s->rows ? n1 - j0 : s->rows, w = n - j0;
        km_status st = km_gram_block(s->k, s->X, s->xn, s->d, j0, jb, j0, w,
                                     s->Kb, w, err);
        if (st != KM_OK)
            return st;
        for (size_t a = 0; a < jb && !bad; a++) {
            size_t j = j0 + a; /* column j from row j: n - j values */
            bad = put_run(s, s->Kb + a * w + a, n - j, 1, Lf, Ld,
                          s->r.o1 + j * ld + j, rs, 1, j, j, overflow);
            done += (double)(n - j);
        }
        if (km_progress(s->ctl, f0 + (f1 - f0) * done / total))
            return km_error_set(err, KM_ECANCELLED, "fit cancelled");
    }
    for (size_t i0 = n1; i0 < n && !bad; i0 += s->rows) {
        size_t b = n - i0 < s->rows ? n - i0 : s->rows, w = i0 + b - n1;
        km_status st = km_gram_block(s->k, s->X, s->xn, s->d, i0, b, n1, w,
                                     s->Kb, w, err);
        if (st != KM_OK)
            return st;
        for (size_t a = 0; a < b && !bad; a++) {
            size_t i = i0 + a; /* row i from column n1: i - n1 + 1 values */
            bad = put_run(s, s->Kb + a * w, i - n1 + 1, 1, Lf, Ld,
                          s->r.o2 + (i - n1) * ld, rs, 0, i, n1, overflow);
            done += (double)(i - n1 + 1);
        }
        if (km_progress(s->ctl, f0 + (f1 - f0) * done / total))
            return km_error_set(err, KM_ECANCELLED, "fit cancelled");
    }
    if (bad)
        return km_error_set(err, KM_EPROBLEM, "the kernel matrix has values "
                            "that are not finite numbers (overflow); use a "
                            "smaller gamma, degree or scale of X");
    if (rs) {
        s->anrm = 0;
        for (size_t i = 0; i < n; i++)
            s->anrm = rs[i] > s->anrm ? rs[i] : s->anrm;
    }
    return KM_OK;
}

/* Most threads of the fused product. */
#define SPD_MAX_THREADS 8

/* One thread's rows [r0, r1) of the fused product: each row i of the
 * lower triangle, k(x_i, x_j) for j <= i (inner products and the map, no
 * BLAS), adds row . p to acc_i and p_i row to acc_j, j < i. */
typedef struct fused_part {
    const spd *s;
    const double *P;
    double *acc, *row;
    size_t r0, r1;
} fused_part;

static void *fused_rows(void *arg)
{
    const fused_part *w = arg;
    const spd *s = w->s;
    size_t d = s->d;
    memset(w->acc, 0, s->n * sizeof *w->acc);
    for (size_t i = w->r0; i < w->r1; i++) {
        km_vdot_rows(s->X + i * d, s->X, i + 1, d, w->row);
        km_kernel_map_row(s->k, w->row, i + 1, s->xn[i], s->xn, (long)i);
        w->acc[i] += km_vdot(w->row, w->P, i + 1);
        km_vaxpy(w->P[i], w->row, w->acc, i);
    }
    return NULL;
}

/* Q := (K + alpha I) P for one output and a kernel of inner products,
 * the triangle's rows split over s->threads threads by area (this one
 * the first), each into its own accumulator. */
static void apply_fused(spd *s, const double *P, double *Q)
{
    size_t n = s->n, nt = s->threads;
    fused_part w[SPD_MAX_THREADS];
    pthread_t tid[SPD_MAX_THREADS];
    int started[SPD_MAX_THREADS] = {0};
    for (size_t t = 0; t < nt; t++) {
        size_t r0 = (size_t)((double)n * sqrt((double)t / (double)nt));
        size_t r1 = t + 1 == nt ? n : (size_t)((double)n *
                                               sqrt((double)(t + 1) /
                                                    (double)nt));
        w[t] = (fused_part){s, P, s->acc + t * n, s->row + t * n, r0, r1};
        /* thread 0 is this one; a thread that cannot start runs here */
        if (t > 0)
            started[t] = pthread_create(&tid[t], NULL, fused_rows,
                                        &w[t]) == 0;
    }
    for (size_t t = 0; t < nt; t++)
        if (!started[t])
            fused_rows(&w[t]);
    for (size_t t = 1; t < nt; t++)
        if (started[t])
            pthread_join(tid[t], NULL);
    for (size_t i = 0; i < n; i++) {
        double q = s->alpha * P[i];
        for (size_t t = 0; t < nt; t++)
            q += s->acc[t * n + i];
        Q[i] = q;
    }
}

/*
 * Q := (K + alpha I) P, n x m row-major, from the lower triangle's kernel
 * blocks in double (half of K's values: each strictly lower block is used
 * twice, as itself and as its transpose).
 */
static km_status apply(spd *s, const double *P, double *Q, km_error *err)
{
    size_t n = s->n, m = s->m;
    if (s->threads) {
        apply_fused(s, P, Q);
        return KM_OK;
    }
    for (size_t i = 0; i < n * m; i++)
        Q[i] = s->alpha * P[i];
    for (size_t i0 = 0; i0 < n; i0 += s->rows) {
        size_t b = n - i0 < s->rows ? n - i0 : s->rows, w = i0 + b;
        km_status st = km_gram_block(s->k, s->X, s->xn, s->d, i0, b, 0, w,
                                     s->Kb, w, err);
        if (st != KM_OK)
            return st;
        if (m == 1) {
            cblas_dgemv(CblasRowMajor, CblasNoTrans, (int)b, (int)w, 1.0,
                        s->Kb, (int)w, P, 1, 1.0, Q + i0, 1);
            if (i0)
                cblas_dgemv(CblasRowMajor, CblasTrans, (int)b, (int)i0, 1.0,
                            s->Kb, (int)w, P + i0, 1, 1.0, Q, 1);
        } else {
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)b,
                        (int)m, (int)w, 1.0, s->Kb, (int)w, P, (int)m, 1.0,
                        Q + i0 * m, (int)m);
            if (i0)
                cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)i0,
                            (int)m, (int)b, 1.0, s->Kb, (int)w, P + i0 * m,
                            (int)m, 1.0, Q, (int)m);
        }
    }
    return KM_OK;
}

/* Z := M^-1 R through the float factor Lf, each column scaled to its
 * largest magnitude first (no underflow of small residuals in float);
 * Bf: n x m floats. */
static void precond(const spd *s, const float *Lf, const double *R,
                    double *Z, float *Bf)
{
    size_t n = s->n, m = s->m;
    for (size_t j = 0; j < m; j++) {
        double sc = 0;
        for (size_t i = 0; i < n; i++)
            sc = fmax(sc, fabs(R[i * m + j]));
        sc = sc > 0 ? sc : 1;
        for (size_t i = 0; i < n; i++)
            Bf[j * n + i] = (float)(R[i * m + j] / sc);
        LAPACKE_spftrs_work(LAPACK_COL_MAJOR, 'N', 'L', (lapack_int)n, 1, Lf,
                            Bf + j * n, (lapack_int)n);
        for (size_t i = 0; i < n; i++)
            Z[i * m + j] = sc * (double)Bf[j * n + i];
    }
}

/* Column j's |v|_inf and the dot products of two n x m blocks. */
static double col_max(const double *V, size_t n, size_t m, size_t j)
{
    double v = 0;
    for (size_t i = 0; i < n; i++)
        v = fmax(v, fabs(V[i * m + j]));
    return v;
}

static double col_dot(const double *A, const double *B, size_t n, size_t m,
                      size_t j)
{
    double v = 0;
    for (size_t i = 0; i < n; i++)
        v += A[i * m + j] * B[i * m + j];
    return v;
}

/* Whether every column of residual R meets DSPOSV's test for X; *be the
 * largest backward error |r|_inf / (|A|_inf |x|_inf). */
static int converged(const spd *s, const double *R, const double *Xs,
                     double *be)
{
    int ok = 1;
    double cte = s->anrm * DBL_EPSILON * sqrt((double)s->n);
    *be = 0;
    for (size_t j = 0; j < s->m; j++) {
        double rn = col_max(R, s->n, s->m, j), xn = col_max(Xs, s->n, s->m, j);
        if (!(rn <= xn * cte) || !isfinite(rn) || !isfinite(xn))
            ok = 0;
        double e = rn > 0 ? rn / (s->anrm * xn) : 0;
        *be = e > *be || isnan(e) ? e : *be;
    }
    return ok;
}

/* R := Y - (K + alpha I) Xs. */
static km_status residual(spd *s, const double *Y, const double *Xs,
                          double *R, km_error *err)
{
    km_status st = apply(s, Xs, R, err);
    if (st == KM_OK)
        for (size_t i = 0; i < s->n * s->m; i++)
            R[i] = Y[i] - R[i];
    return st;
}

/*
 * Refinement with the float factor: C by preconditioned conjugate
 * gradients from 0; *done 1 when DSPOSV's test holds. W: 4 n m
 * doubles of work; Bf: n m floats.
 */
static km_status refine(spd *s, const float *Lf, const double *Y, double *C,
                        double *W, float *Bf, km_spd_report *rep, int *done,
                        double f0, double f1, km_error *err)
{
    size_t n = s->n, m = s->m, nm = n * m;
    double *R = W, *Z = W + nm, *P = W + 2 * nm, *Q = W + 3 * nm;
    double rz[64], *rzv = m <= 64 ? rz : malloc(m * sizeof *rzv);
    if (!rzv)
        return km_error_set(err, KM_ENOMEM, "out of memory for a solve");
    km_status st;
    *done = 0;
    /* From x = 0 (r = y, no product): the first step's direction is
     * M^-1 y, the float solve, scaled by CG's optimal step. */
    memset(C, 0, nm * sizeof *C);
    memcpy(R, Y, nm * sizeof *R);
    int fresh = 1; /* R is the true residual: restart the directions */
    rep->steps = 0;
    while (1) {
        if (fresh && converged(s, R, C, &rep->backward_error)) {
            *done = 1;
            break;
        }
        if (rep->steps >= KM_SPD_MAX_STEPS || isnan(rep->backward_error))
            break;
        if (km_progress(s->ctl, f0 + (f1 - f0) * (double)rep->steps /
                                         KM_SPD_MAX_STEPS)) {
            st = km_error_set(err, KM_ECANCELLED, "fit cancelled");
            goto out;
        }
        precond(s, Lf, R, Z, Bf);
        for (size_t j = 0; j < m; j++) {
            double r2 = col_dot(R, Z, n, m, j);
            double beta = fresh || rzv[j] == 0 ? 0 : r2 / rzv[j];
            rzv[j] = r2;
            /* a restart sets P = Z: P's old values (none yet: malloc's
             * bytes, maybe a NaN's) are not read */
            for (size_t i = j; i < nm; i += m)
                P[i] = beta == 0 ? Z[i] : Z[i] + beta * P[i];
        }
        if ((st = apply(s, P, Q, err)) != KM_OK)
            goto out;
        rep->steps++;
        int small = 1;
        double dummy;
        for (size_t j = 0; j < m; j++) {
            double pq = col_dot(P, Q, n, m, j);
            double a = pq > 0 ? rzv[j] / pq : 0;
            for (size_t i = j; i < nm; i += m) {
                C[i] += a * P[i];
                R[i] -= a * Q[i];
            }
        }
        small = converged(s, R, C, &dummy);
        fresh = 0;
        if (small || rep->steps % 4 == 0) { /* check the true residual */
            if (rep->steps >= KM_SPD_MAX_STEPS)
                break;
            if ((st = residual(s, Y, C, R, err)) != KM_OK)
                goto out;
            rep->steps++;
            fresh = 1;
        }
    }
    if (!fresh || !*done) { /* the report's error is the true residual's */
        if (!fresh && (st = residual(s, Y, C, R, err)) != KM_OK)
            goto out;
        *done = converged(s, R, C, &rep->backward_error);
    }
    st = KM_OK;
out:
    if (rzv != rz)
        free(rzv);
    return st;
}

/* The solve with the double factor Ld (RFP, factored): C row-major. */
static km_status solve_double(const spd *s, const double *Ld,
                              const double *Y, double *C, km_error *err)
{
    size_t n = s->n, m = s->m;
    double *B = malloc(n * m * sizeof *B);
    if (!B)
        return km_error_set(err, KM_ENOMEM, "out of memory for a solve");
    km_transpose(Y, n, m, B);
    LAPACKE_dpftrs_work(LAPACK_COL_MAJOR, 'N', 'L', (lapack_int)n,
                        (lapack_int)m, Ld, B, (lapack_int)n);
    km_transpose(B, m, n, C);
    free(B);
    return KM_OK;
}

static km_status factor_error(lapack_int info, km_error *err)
{
    if (info == SPD_CANCELLED)
        return km_error_set(err, KM_ECANCELLED, "fit cancelled");
    if (info > 0)
        return km_error_set(err, KM_ENOTPD,
                            "the kernel matrix plus alpha*I is not positive "
                            "definite (Cholesky failed at row %d); use a "
                            "larger params.alpha or a positive definite "
                            "kernel", (int)info);
    return km_error_set(err, KM_EINTERNAL, "potrf argument %d", (int)-info);
}

/* The double path: fill, factor, solve; progress f0 .. f1. */
static km_status run_double(spd *s, const double *Y, double *C, double f0,
                            double f1, km_error *err)
{
    size_t n = s->n;
    double *Ld = malloc(rfp_values(n) * sizeof *Ld);
    if (!Ld)
        return km_error_set(err, KM_ENOMEM, "out of memory for the %zu x %zu "
                            "kernel matrix's factor", n, n);
    double fm = f0 + 0.1 * (f1 - f0);
    km_status st = fill(s, NULL, Ld, NULL, f0, fm, NULL, err);
    if (st == KM_OK) {
        prog pg = {s->ctl, fm, f1, pftrf_flops(&s->r), 0};
        lapack_int info = pftrf_d(Ld, &s->r, &pg);
        st = info ? factor_error(info, err) : solve_double(s, Ld, Y, C, err);
    }
    free(Ld);
    return st;
}

/* The mixed path; *fallback set when the double one must run. */
static km_status run_mixed(spd *s, const double *Y, double *C,
                           km_spd_report *rep, double f0, double f1,
                           km_error *err)
{
    size_t n = s->n, nm = n * s->m;
    float *Lf = malloc(rfp_values(n) * sizeof *Lf);
    float *Bf = malloc(nm * sizeof *Bf);
    double *rs = malloc(n * sizeof *rs);
    double *W = malloc(5 * nm * sizeof *W), *Ys = W ? W + 4 * nm : NULL;
    double sc[64], *scv = s->m <= 64 ? sc : malloc(s->m * sizeof *scv);
    km_status st = KM_OK;
    if (!Lf || !Bf || !rs || !W || !scv) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for the %zu x %zu "
                          "kernel matrix's factor", n, n);
        goto out;
    }
    double fa = f0 + 0.1 * (f1 - f0), fb = f0 + 0.85 * (f1 - f0);
    int overflow = 0;
    if ((st = fill(s, Lf, NULL, rs, f0, fa, &overflow, err)) != KM_OK)
        goto out;
    free(rs);
    rs = NULL;
    if (overflow) {
        rep->fallback = KM_SPD_FALLBACK_FLOAT_FACTOR;
        goto out;
    }
    prog pg = {s->ctl, fa, fb, pftrf_flops(&s->r), 0};
    lapack_int info = pftrf_s(Lf, &s->r, &pg);
    if (info == SPD_CANCELLED || info < 0) {
        st = factor_error(info, err);
        goto out;
    }
    if (info > 0) {
        rep->fallback = KM_SPD_FALLBACK_FLOAT_FACTOR;
        goto out;
    }
    /* Each output scaled by a power of two (exactly) to a largest
     * magnitude near 1, so that CG's dot products of targets near the
     * double range (1e300) do not overflow; the solution scaled back. */
    for (size_t j = 0; j < s->m; j++) {
        int e = 0;
        frexp(col_max(Y, n, s->m, j), &e);
        scv[j] = isfinite(ldexp(1.0, e)) ? ldexp(1.0, e) : 1.0;
        for (size_t i = j; i < nm; i += s->m)
            Ys[i] = Y[i] / scv[j];
    }
    int done = 0;
    if ((st = refine(s, Lf, Ys, C, W, Bf, rep, &done, fb, f1, err)) != KM_OK)
        goto out;
    for (size_t i = 0; done && i < nm; i++)
        C[i] *= scv[i % s->m];
    if (!done)
        rep->fallback = KM_SPD_FALLBACK_STALLED;
    else
        rep->mixed = 1;
out:
    free(Lf);
    free(Bf);
    free(rs);
    free(W);
    if (scv != sc)
        free(scv);
    return st;
}

km_status km_spd_kernel_solve(const km_kernel *k, const double *X, size_t n,
                              size_t d, double alpha, const double *Y,
                              size_t m, double *C, int mixed,
                              km_spd_report *rep, const km_fit_control *ctl,
                              double f0, double f1, km_error *err)
{
    km_spd_report own;
    rep = rep ? rep : &own;
    *rep = (km_spd_report){0, KM_SPD_FALLBACK_NONE, 0, -1};
    if (n == 0)
        return KM_OK;
    spd s = {k, X, NULL, n, d, m, block_rows(n), alpha, 0, NULL,
             rfp_layout(n), ctl, 0, NULL, NULL};
    double *xn = km_sqnorms(X, n, d);
    s.xn = xn;
    s.Kb = malloc(s.rows * n * sizeof *s.Kb);
    km_status st;
    if (!xn || !s.Kb) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for a solve");
        goto out;
    }
    /* The fused product (one output, a kernel of inner products): on the
     * threads the fit may use, no block of kernel values between BLAS
     * calls (measured at n = 10000, d = 20: 0.10 s a product on two
     * threads against 0.25 s for blocks, a map and two DGEMVs). */
    if (mixed && m == 1 && km_kernel_uses_dots(k)) {
        size_t nt = ctl && ctl->threads > 1 ? (size_t)ctl->threads : 1;
        s.threads = nt < SPD_MAX_THREADS ? nt : SPD_MAX_THREADS;
        s.acc = malloc(s.threads * n * sizeof *s.acc);
        s.row = malloc(s.threads * n * sizeof *s.row);
        if (!s.acc || !s.row) {
            st = km_error_set(err, KM_ENOMEM, "out of memory for a solve");
            goto out;
        }
    }
    double fm = f0;
    if (mixed) {
        /* the fallback's progress is squeezed into the last 5% */
        fm = f0 + 0.95 * (f1 - f0);
        if ((st = run_mixed(&s, Y, C, rep, f0, fm, err)) != KM_OK ||
            rep->mixed)
            goto out;
    }
    st = run_double(&s, Y, C, fm, f1, err);
out:
    free(xn);
    free(s.Kb);
    free(s.acc);
    free(s.row);
    return st;
}

size_t km_spd_kernel_solve_bytes(size_t n, size_t m)
{
    /* Both paths: X's norms and the block of kernel values. The mixed
     * path: the float factor, its n m floats, the row sums, the scales
     * and five n x m blocks (four of CG's and the scaled targets); the double path (also a mixed solve's fallback, after the
     * mixed path freed its own): the double factor and its n x m copy
     * of Y. */
    size_t D = sizeof(double);
    size_t both = km_mul_sat(D, km_add_sat(n, km_mul_sat(block_rows(n), n)));
    size_t fl = km_add_sat(km_mul_sat(sizeof(float), km_add_sat(rfp_values(n),
                                                       km_mul_sat(n, m))),
                        km_mul_sat(D, km_add_sat(km_add_sat(n, m),
                                           km_mul_sat(5, km_mul_sat(n, m)))));
    /* the fused product's accumulators and rows, two per thread */
    fl = km_add_sat(fl, km_mul_sat(D, km_mul_sat(2 * SPD_MAX_THREADS, n)));
    size_t db = km_mul_sat(D, km_add_sat(rfp_values(n), km_mul_sat(n, m)));
    return km_add_sat(both, fl > db ? fl : db);
}
