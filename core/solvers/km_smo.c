/*
 * km_smo.c - sequential minimal optimisation for the SVM dual, the
 * algorithm of LIBSVM (Chang & Lin) written afresh for libkm:
 *
 *   min 1/2 a'Qa + p'a   s.t.  y'a = const,  0 <= a_t <= C_t
 *
 * Each iteration picks a pair (i, j) by second-order working-set
 * selection (Fan, Chen & Lin 2005, "WSS 3"): i maximises the violation
 * -y_t G_t over I_up, j minimises the second-order decrease of the
 * objective over I_low. The pair is solved analytically and clipped to
 * the box. Shrinking (every min(n, 1000) iterations) moves variables that
 * are stuck at a bound and not expected to move to the tail of the
 * ordering, so that the loops run over the active prefix only; the full
 * gradient is rebuilt from G_bar before stopping. The stopping rule is
 * m(a) - M(a) < tol on the maximal violating pair; the bias is the mean
 * of y_t G_t over free variables, else the middle of the feasible range.
 * These choices follow LIBSVM so that the answers agree with it.
 *
 * Q is reached through qmat, in one of two storages:
 *   cached  an LRU cache of columns under a byte budget (at least two
 *           columns); a column is computed for the active prefix only,
 *           or gathered from a Gram that several solves share;
 *   dense   the whole n x n Q, computed once with km_gram_sym (or
 *           gathered from the shared Gram) and used in place.
 * AUTO takes the cache: measured on letter, satellite, digits and
 * breast_cancer, SMO touches a fraction of the columns and the lazy cache
 * beat the whole Gram by 1.5x to 5x even when Q fits (the figures are in
 * bench/RESULTS.md); the dense storage stays for callers that ask for it.
 * Shrinking permutes variables; both storages follow the permutation
 * physically (rows and columns of the dense Q, entries of each cached
 * column, the cache's copies of the points) so every loop reads
 * contiguous memory. A cached column that holds entry lo but not hi of a
 * swap is truncated to lo entries (LIBSVM drops it).
 *
 * Invariants: positions [0, active) are the active variables; perm[t]
 * is the caller's index of the variable at position t; G is exact on the
 * active set, and G_bar[t] = sum over upper-bounded u of C_u Q_tu. A
 * cached column always comes from the same routine (computed, or
 * gathered from the shared Gram), so for a given source the solve does
 * not depend on the cache size: eviction is exact, bit for bit.
 * The dense storage rounds some products differently (DSYRK), so it
 * agrees with the cache to the solver's tolerance.
 *
 * Thread-safety: reentrant; a solve owns all it writes.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../base/km_base_internal.h"
#include "../kernels/km_kernel_internal.h"
#include "km_svm_solve.h"

/* The loops over all active variables run twice per iteration and
 * dominate a solve: build AVX-512, AVX2 and baseline versions of them
 * (as km_vmath.c does) and let the vectoriser take unknown trip counts. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(KM_NO_CLONES)
#define HOT __attribute__((target_clones("avx512f", "avx2", "default"), \
                           optimize("tree-vectorize",                   \
                                    "vect-cost-model=dynamic")))
#else
#define HOT
#endif

#define TAU 1e-12            /* curvature floor for non-PSD kernels */
#define NONE ((size_t)-1)
/* Work (variables visited, kernel entries computed) between looks at
 * the caller's stop flag through the progress callback: some
 * milliseconds of solver time, whatever n, so that a cancel or a fit
 * timeout acts well within half a second. Counting iterations instead
 * would make the interval grow with n (2048 iterations over 2 * 10^5
 * svr variables took 2 s). */
#define POLL_WORK ((size_t)1 << 23)

enum { AT_LOWER, AT_UPPER, IS_FREE };

/* ------------------------------------------------------------ Q storage */

typedef struct qmat {
    size_t n, d;
    const km_kernel *k;
    double *QD;       /* diagonal, current order */
    double *Q;        /* dense: n x n, current order; NULL when cached */
    /* cached storage */
    double *X;        /* n x d points in current order */
    double *sgn;      /* y in current order, as doubles */
    double *xn;       /* squared norms in current order (rbf) */
    const double *K;  /* shared Gram of the points, or NULL */
    size_t np;        /* its order */
    size_t *prow;     /* point of each variable, current order (with K) */
    double *XT;       /* d x n: the points transposed, current order, for
                         kernels of an inner product; else NULL */
    double *pool;     /* cap columns of n entries */
    int pool_lent;    /* the caller's (smo_options.pool): not freed */
    size_t cap, used;
    size_t *slot;     /* per variable: its slot or NONE */
    size_t *owner;    /* per slot: its variable */
    size_t *len;      /* per slot: valid entries */
    size_t *prev, *next, head, tail; /* LRU list, head most recent */
    km_error *err;
    km_status st;     /* first failure of a column computation */
    size_t computed;  /* work of the kernel entries computed, since the
                         solver last counted it (see poll_stop) */
} qmat;

static void q_free(qmat *q)
{
    free(q->QD);
    free(q->Q);
    free(q->X);
    free(q->sgn);
    free(q->xn);
    free(q->XT);
    free(q->prow);
    if (!q->pool_lent)
        free(q->pool);
    free(q->slot);
    free(q->owner);
    free(q->len);
    free(q->prev);
    free(q->next);
}

static size_t pt(const smo_problem *pb, size_t t)
{
    return pb->row ? pb->row[t] : t;
}

static km_status q_init_dense(qmat *q, const smo_problem *pb, km_error *err)
{
    size_t n = pb->n, np = pb->n_points;
    q->Q = malloc(n * n * sizeof *q->Q);
    if (!q->Q)
        return km_error_set(err, KM_ENOMEM,
                            "out of memory for a %zu x %zu kernel matrix", n,
                            n);
    const double *K = pb->K;
    double *own = NULL;
    int in_place = !K && !pb->row && n == np;
    if (in_place) {
        km_status st = km_gram_sym(q->k, pb->X, n, pb->d, q->Q, 1, err);
        if (st != KM_OK)
            return st;
        for (size_t t = 0; t < n; t++) {
            double *r = q->Q + t * n;
            if (pb->y[t] < 0)
                for (size_t u = 0; u < n; u++)
                    r[u] = -r[u];
            for (size_t u = 0; u < n; u++)
                if (pb->y[u] < 0)
                    r[u] = -r[u];
        }
    } else {
        if (!K) {
            own = malloc(np * np * sizeof *own);
            if (!own)
                return km_error_set(err, KM_ENOMEM,
                                    "out of memory for a kernel matrix");
            km_status st = km_gram_sym(q->k, pb->X, np, pb->d, own, 1, err);
            if (st != KM_OK) {
                free(own);
                return st;
            }
            K = own;
        }
        for (size_t t = 0; t < n; t++) {
            const double *kr = K + pt(pb, t) * np;
            double *r = q->Q + t * n;
            for (size_t u = 0; u < n; u++) {
                double v = kr[pt(pb, u)];
                r[u] = pb->y[t] == pb->y[u] ? v : -v;
            }
        }
        free(own);
    }
    for (size_t t = 0; t < n; t++)
        q->QD[t] = q->Q[t * n + t];
    return KM_OK;
}

static km_status q_init_cached(qmat *q, const smo_problem *pb,
                               size_t budget, double *lent, size_t lent_size,
                               km_error *err)
{
    size_t n = pb->n, d = pb->d;
    size_t cap = budget / (n * sizeof(double));
    if (cap < 2)
        cap = 2; /* a pair must fit, whatever the budget */
    if (cap > n)
        cap = n;
    q->cap = cap;
    /* the points and their norms only to compute kernel values: a shared
     * Gram needs neither (a copy of every round's working set, not made) */
    q->X = pb->K ? NULL : malloc(n * d * sizeof *q->X);
    q->sgn = malloc(n * sizeof *q->sgn);
    q->xn = pb->K ? NULL : malloc(n * sizeof *q->xn);
    if (pb->K) {
        q->K = pb->K;
        q->np = pb->n_points;
        if (!(q->prow = malloc(n * sizeof *q->prow)))
            return km_error_set(err, KM_ENOMEM,
                                "out of memory for the kernel cache");
        for (size_t t = 0; t < n; t++)
            q->prow[t] = pt(pb, t);
    } else if (km_kernel_uses_dots(q->k) &&
               !(q->XT = malloc(n * d * sizeof *q->XT)))
        return km_error_set(err, KM_ENOMEM,
                            "out of memory for the kernel cache");
    q->pool_lent = lent && lent_size >= cap * n;
    q->pool = q->pool_lent ? lent : malloc(cap * n * sizeof *q->pool);
    q->slot = malloc(n * sizeof *q->slot);
    q->owner = malloc(cap * sizeof *q->owner);
    q->len = malloc(cap * sizeof *q->len);
    q->prev = malloc(cap * sizeof *q->prev);
    q->next = malloc(cap * sizeof *q->next);
    if ((!pb->K && (!q->X || !q->xn)) || !q->sgn || !q->pool || !q->slot ||
        !q->owner || !q->len || !q->prev || !q->next)
        return km_error_set(err, KM_ENOMEM,
                            "out of memory for the kernel cache");
    q->head = q->tail = NONE;
    for (size_t t = 0; t < n; t++) {
        q->sgn[t] = pb->y[t];
        q->slot[t] = NONE;
        if (q->K)
            continue;
        memcpy(q->X + t * d, pb->X + pt(pb, t) * d, d * sizeof *q->X);
        double s2 = 0;
        for (size_t u = 0; u < d; u++)
            s2 += q->X[t * d + u] * q->X[t * d + u];
        q->xn[t] = s2;
        if (q->XT)
            for (size_t u = 0; u < d; u++)
                q->XT[u * n + t] = q->X[t * d + u];
    }
    /* The diagonal as km_gram_sym computes it (rbf: exactly 1), point by
     * point; SVR's two variables of a point get the same value. */
    for (size_t t = 0; t < n && q->K; t++)
        q->QD[t] = q->K[q->prow[t] * (q->np + 1)];
    for (size_t t = 0; t < n && !q->K; t++) {
        if (pb->row && t > 0 && pb->row[t] == pb->row[t - 1]) {
            q->QD[t] = q->QD[t - 1];
            continue;
        }
        km_status st = km_gram_sym(q->k, q->X + t * d, 1, d, &q->QD[t], 1,
                                   err);
        if (st != KM_OK)
            return st;
    }
    return KM_OK;
}

static void lru_unlink(qmat *q, size_t s)
{
    if (q->prev[s] != NONE)
        q->next[q->prev[s]] = q->next[s];
    else
        q->head = q->next[s];
    if (q->next[s] != NONE)
        q->prev[q->next[s]] = q->prev[s];
    else
        q->tail = q->prev[s];
}

static void lru_push(qmat *q, size_t s)
{
    q->prev[s] = NONE;
    q->next[s] = q->head;
    if (q->head != NONE)
        q->prev[q->head] = s;
    q->head = s;
    if (q->tail == NONE)
        q->tail = s;
}


HOT static void scale_signs(double *restrict col, const double *restrict sgn,
                            double si, size_t n)
{
    for (size_t t = 0; t < n; t++)
        col[t] *= si * sgn[t];
}

/*
 * c[t] = <XT[., t], x> for t < m, XT with row stride n. Feature by feature
 * over blocks of rows, so the loop vectorises across rows while each sum
 * is taken in feature order: the result does not depend on where the
 * block starts, on the CPU's vector width or on threads.
 */
HOT static void dots(double *restrict c, const double *restrict XT, size_t n,
                     size_t m, size_t d, const double *restrict x)
{
    const size_t B = 512; /* c stays in L1 */
    for (size_t t0 = 0; t0 < m; t0 += B) {
        size_t nb = m - t0 < B ? m - t0 : B;
        double *cb = c + t0;
        const double *row = XT + t0;
        for (size_t t = 0; t < nb; t++)
            cb[t] = row[t] * x[0];
        for (size_t u = 1; u < d; u++) {
            const double xu = x[u], *r = row + u * n;
            for (size_t t = 0; t < nb; t++)
                cb[t] += r[t] * xu;
        }
    }
}

/*
 * Entries [a, len) of column i of Q. Kernels of an inner product take
 * the dot products from dots() over the transposed points and the map of
 * km_kernel.c: km_gram_cross would recompute the norms and repack the
 * points for every column, and OpenBLAS's threaded DGEMV spends more in
 * thread hand-offs than in arithmetic on columns this short (measured on
 * letter: 1.26 s against 1.01 s with one thread) and rounds differently
 * with the thread count. Other kernels go through km_gram_cross. Either
 * way a column is computed by one routine whatever the cache size, so
 * eviction never changes a value.
 */
static km_status kernel_column(qmat *q, size_t i, double *col, size_t a,
                               size_t len)
{
    const km_kernel *k = q->k;
    const size_t d = q->d, m = len - a;
    double *c = col + a;
    if (q->K) {
        /* A Gram shared by several solves: gather, nothing to compute. */
        const double *kr = q->K + q->prow[i] * q->np;
        const size_t *pr = q->prow + a;
        for (size_t t = 0; t < m; t++)
            c[t] = kr[pr[t]];
        scale_signs(c, q->sgn + a, q->sgn[i], m);
        if (i >= a && i < len)
            col[i] = q->QD[i];
        return KM_OK;
    }
    if (km_kernel_uses_dots(k)) {
        dots(c, q->XT + a, q->n, m, d, q->X + i * d);
        km_kernel_map_row(k, c, m, q->xn[i], q->xn + a, -1);
    } else {
        km_status st = km_gram_cross(k, q->X + i * d, 1, q->X + a * d, m, d,
                                     c, m, q->err);
        if (st != KM_OK)
            return st;
    }
    scale_signs(c, q->sgn + a, q->sgn[i], m);
    if (i >= a && i < len)
        col[i] = q->QD[i];
    return KM_OK;
}

/*
 * Column i of Q, valid for entries [0, len). The pointer stays valid until
 * the next q_col or q_swap (the two most recent columns are never evicted
 * from each other: the cache holds at least two). NULL on failure.
 */
static const double *q_col(qmat *q, size_t i, size_t len)
{
    if (q->Q)
        return q->Q + i * q->n;
    size_t s = q->slot[i];
    if (s == NONE) {
        if (q->used < q->cap) {
            s = q->used++;
        } else {
            s = q->tail;
            lru_unlink(q, s);
            q->slot[q->owner[s]] = NONE;
        }
        q->owner[s] = i;
        q->len[s] = 0;
        q->slot[i] = s;
    } else {
        lru_unlink(q, s);
    }
    lru_push(q, s);
    double *col = q->pool + s * q->n;
    size_t a = q->len[s];
    if (a < len) {
        km_status st = kernel_column(q, i, col, a, len);
        if (st != KM_OK) {
            q->st = st;
            return NULL;
        }
        /* An entry costs d products and the kernel's function. */
        q->computed += (len - a) * (q->d + 8);
        q->len[s] = len;
    }
    return col;
}

static void swap_d(double *a, double *b)
{
    double t = *a;
    *a = *b;
    *b = t;
}

static void q_swap(qmat *q, size_t i, size_t j)
{
    size_t n = q->n, lo = i < j ? i : j, hi = i < j ? j : i;
    swap_d(&q->QD[i], &q->QD[j]);
    if (q->Q) {
        double *ri = q->Q + i * n, *rj = q->Q + j * n;
        for (size_t u = 0; u < n; u++)
            swap_d(&ri[u], &rj[u]);
        for (size_t t = 0; t < n; t++)
            swap_d(&q->Q[t * n + i], &q->Q[t * n + j]);
        return;
    }
    for (size_t u = 0; q->X && u < q->d; u++)
        swap_d(&q->X[i * q->d + u], &q->X[j * q->d + u]);
    swap_d(&q->sgn[i], &q->sgn[j]);
    if (q->xn)
        swap_d(&q->xn[i], &q->xn[j]);
    if (q->XT)
        for (size_t u = 0; u < q->d; u++)
            swap_d(&q->XT[u * n + i], &q->XT[u * n + j]);
    if (q->prow) {
        size_t r = q->prow[i];
        q->prow[i] = q->prow[j];
        q->prow[j] = r;
    }
    for (size_t s = 0; s < q->used; s++) {
        if (q->len[s] > hi)
            swap_d(&q->pool[s * n + i], &q->pool[s * n + j]);
        else if (q->len[s] > lo)
            q->len[s] = lo; /* entry hi unknown: keep what is still right */
    }
    size_t si = q->slot[i], sj = q->slot[j];
    q->slot[i] = sj;
    q->slot[j] = si;
    if (si != NONE)
        q->owner[si] = j;
    if (sj != NONE)
        q->owner[sj] = i;
}

/* ------------------------------------------------------------ solver */

typedef struct solver {
    size_t l, active;
    double *G, *G_bar, *alpha, *p, *C;
    double *y;        /* +1 / -1 as doubles, current order */
    unsigned char *status;
    /* Membership as additive penalties, so the selection loops need no
     * branches: up_pen[t] is 0 if t is in I_up (a can move in the
     * direction that raises y a) else -inf; low_pen[t] is 0 if t is in
     * I_low else +inf. */
    double *up_pen, *low_pen;
    size_t *perm;
    qmat q;
    double tol;
    int unshrink;
    const smo_options *o;
    long iter;
    size_t work;      /* since the last look at the stop flag */
    int stopped;      /* the caller asked to stop */
} solver;

/* Counts work (plus the kernel entries computed meanwhile) and, every
 * POLL_WORK of it, reports progress; 1 once the caller has asked to stop
 * (and from then on). */
static int poll_stop(solver *s, size_t work)
{
    s->work += work + s->q.computed;
    s->q.computed = 0;
    if (s->stopped || s->work < POLL_WORK)
        return s->stopped;
    s->work = 0;
    const smo_options *o = s->o;
    double f = (double)s->iter / ((double)s->iter + 10.0 * (double)s->l);
    s->stopped = km_progress(o->ctl, o->progress_lo +
                                         (o->progress_hi - o->progress_lo) * f);
    return s->stopped;
}

static void set_status(solver *s, size_t t)
{
    if (s->alpha[t] >= s->C[t])
        s->status[t] = AT_UPPER;
    else if (s->alpha[t] <= 0)
        s->status[t] = AT_LOWER;
    else
        s->status[t] = IS_FREE;
    int pos = s->y[t] > 0;
    int up = s->status[t] != (pos ? AT_UPPER : AT_LOWER);
    int low = s->status[t] != (pos ? AT_LOWER : AT_UPPER);
    s->up_pen[t] = up ? 0.0 : -INFINITY;
    s->low_pen[t] = low ? 0.0 : INFINITY;
}

static void swap_vars(solver *s, size_t i, size_t j)
{
    q_swap(&s->q, i, j);
    swap_d(&s->y[i], &s->y[j]);
    swap_d(&s->G[i], &s->G[j]);
    swap_d(&s->G_bar[i], &s->G_bar[j]);
    swap_d(&s->alpha[i], &s->alpha[j]);
    swap_d(&s->p[i], &s->p[j]);
    swap_d(&s->C[i], &s->C[j]);
    swap_d(&s->up_pen[i], &s->up_pen[j]);
    swap_d(&s->low_pen[i], &s->low_pen[j]);
    unsigned char st = s->status[i];
    s->status[i] = s->status[j];
    s->status[j] = st;
    size_t pi = s->perm[i];
    s->perm[i] = s->perm[j];
    s->perm[j] = pi;
}

/* Restores G on the inactive variables from G_bar and the free ones. */
static int reconstruct_gradient(solver *s)
{
    size_t l = s->l, act = s->active, n_free = 0;
    if (act == l)
        return 0;
    for (size_t j = act; j < l; j++)
        s->G[j] = s->G_bar[j] + s->p[j];
    for (size_t j = 0; j < act; j++)
        n_free += s->status[j] == IS_FREE;
    /* Whichever way touches fewer kernel entries (LIBSVM's rule). */
    if ((double)n_free * (double)l > 2.0 * (double)act * (double)(l - act)) {
        for (size_t i = act; i < l; i++) {
            const double *Qi = q_col(&s->q, i, act);
            if (!Qi || poll_stop(s, act))
                return -1;
            double g = 0;
            for (size_t j = 0; j < act; j++)
                if (s->status[j] == IS_FREE)
                    g += s->alpha[j] * Qi[j];
            s->G[i] += g;
        }
    } else {
        for (size_t i = 0; i < act; i++) {
            if (s->status[i] != IS_FREE)
                continue;
            const double *Qi = q_col(&s->q, i, l);
            if (!Qi || poll_stop(s, l))
                return -1;
            double a = s->alpha[i];
            for (size_t j = act; j < l; j++)
                s->G[j] += a * Qi[j];
        }
    }
    return 0;
}

/* Lanes of the selection loops: each lane keeps its own best value and
 * the last index that reached it, so the loops vectorise (a running
 * arg-max carries a dependence from one entry to the next); the lanes
 * are merged afterwards. The answer is the serial loop's, tie for tie. */
#define LANES 8

/* The most violating i: the last t of I_up with the largest -y_t G_t;
 * also the largest y_t G_t over I_low (for the stopping test). */
HOT static size_t wss_first(const double *restrict y, const double *restrict G,
                            const double *restrict up_pen,
                            const double *restrict low_pen, size_t n,
                            double *Gmax_out, double *Gmax2_out)
{
    /* -DBL_MAX, not -inf, so that excluded entries (-inf) never win. */
    double m1[LANES], m2[LANES];
    size_t ix[LANES];
    for (size_t l = 0; l < LANES; l++) {
        m1[l] = -DBL_MAX;
        m2[l] = -INFINITY;
        ix[l] = NONE;
    }
    size_t t0 = 0;
    for (; t0 + LANES <= n; t0 += LANES)
        for (size_t l = 0; l < LANES; l++) {
            double yg = y[t0 + l] * G[t0 + l];
            double a = up_pen[t0 + l] - yg, b = yg - low_pen[t0 + l];
            int win = a >= m1[l];
            ix[l] = win ? t0 + l : ix[l];
            m1[l] = win ? a : m1[l];
            m2[l] = b > m2[l] ? b : m2[l];
        }
    for (size_t t = t0; t < n; t++) { /* the tail in lane 0: later indices */
        double yg = y[t] * G[t];
        double a = up_pen[t] - yg, b = yg - low_pen[t];
        if (a >= m1[0]) {
            m1[0] = a;
            ix[0] = t;
        }
        m2[0] = b > m2[0] ? b : m2[0];
    }
    double Gmax = -DBL_MAX, Gmax2 = -INFINITY;
    size_t i = NONE;
    for (size_t l = 0; l < LANES; l++) {
        Gmax2 = m2[l] > Gmax2 ? m2[l] : Gmax2;
        if (ix[l] == NONE)
            continue;
        if (i == NONE || m1[l] > Gmax || (m1[l] == Gmax && ix[l] > i)) {
            Gmax = m1[l];
            i = ix[l];
        }
    }
    *Gmax_out = Gmax;
    *Gmax2_out = Gmax2;
    return i;
}

/* The j of WSS 3 for i: the last t with the smallest second-order
 * objective change of the pair (i, t), over the t in I_low that violate
 * with i; NONE when there is none. */
HOT static size_t wss_second(const double *restrict y,
                             const double *restrict G,
                             const double *restrict QD,
                             const double *restrict Qi,
                             const double *restrict low_pen, size_t n,
                             double Gmax, double QDi, double yi)
{
    double mn[LANES];
    size_t ix[LANES];
    for (size_t l = 0; l < LANES; l++) {
        mn[l] = DBL_MAX;
        ix[l] = NONE;
    }
    size_t t0 = 0;
    for (;; t0 += LANES) {
        size_t nl = n - t0 < LANES ? n - t0 : LANES;
        if (nl == 0)
            break;
        if (nl < LANES) { /* the tail in lane 0, in order */
            for (size_t t = t0; t < n; t++) {
                double gd = Gmax + y[t] * G[t];
                double quad = QDi + QD[t] - 2.0 * yi * y[t] * Qi[t];
                quad = quad > 0 ? quad : TAU;
                double o = (gd > 0 ? -(gd * gd) / quad : INFINITY) +
                           low_pen[t];
                if (o <= mn[0]) {
                    mn[0] = o;
                    ix[0] = t;
                }
            }
            break;
        }
        for (size_t l = 0; l < LANES; l++) {
            size_t t = t0 + l;
            double gd = Gmax + y[t] * G[t];
            double quad = QDi + QD[t] - 2.0 * yi * y[t] * Qi[t];
            quad = quad > 0 ? quad : TAU;
            double o = -(gd * gd) / quad;
            o = (gd > 0 ? o : INFINITY) + low_pen[t];
            int win = o <= mn[l];
            ix[l] = win ? t : ix[l];
            mn[l] = win ? o : mn[l];
        }
    }
    double best = DBL_MAX;
    size_t j = NONE;
    for (size_t l = 0; l < LANES; l++) {
        if (ix[l] == NONE)
            continue;
        if (j == NONE || mn[l] < best || (mn[l] == best && ix[l] > j)) {
            best = mn[l];
            j = ix[l];
        }
    }
    return j;
}

HOT static void grad_update(double *restrict G, const double *restrict Qi,
                            const double *restrict Qj, double dai,
                            double daj, size_t n)
{
    for (size_t t = 0; t < n; t++)
        G[t] += Qi[t] * dai + Qj[t] * daj;
}

/*
 * WSS 3. Returns 1 when optimal within tol, 0 with a pair, -1 on failure.
 * Ties go as in LIBSVM: the last i with the largest violation, the last j
 * with the smallest objective change.
 */
static int select_pair(solver *s, size_t *out_i, size_t *out_j)
{
    const size_t act = s->active;
    double Gmax, Gmax2;
    size_t i = wss_first(s->y, s->G, s->up_pen, s->low_pen, act, &Gmax,
                         &Gmax2);
    if (i == NONE || Gmax + Gmax2 < s->tol)
        return 1;
    const double *Qi = q_col(&s->q, i, act);
    if (!Qi)
        return -1;
    size_t j = wss_second(s->y, s->G, s->q.QD, Qi, s->low_pen, act, Gmax,
                          s->q.QD[i], s->y[i]);
    if (j == NONE)
        return 1;
    *out_i = i;
    *out_j = j;
    return 0;
}

static int be_shrunk(const solver *s, size_t t, double Gmax1, double Gmax2)
{
    if (s->status[t] == AT_UPPER)
        return s->y[t] > 0 ? -s->G[t] > Gmax1 : -s->G[t] > Gmax2;
    if (s->status[t] == AT_LOWER)
        return s->y[t] > 0 ? s->G[t] > Gmax2 : s->G[t] > Gmax1;
    return 0;
}

static int shrink(solver *s)
{
    double Gmax1 = -INFINITY, Gmax2 = -INFINITY;
    for (size_t t = 0; t < s->active; t++) {
        double g = s->G[t];
        if (s->y[t] > 0) {
            if (s->status[t] != AT_UPPER && -g >= Gmax1)
                Gmax1 = -g;
            if (s->status[t] != AT_LOWER && g >= Gmax2)
                Gmax2 = g;
        } else {
            if (s->status[t] != AT_UPPER && -g >= Gmax2)
                Gmax2 = -g;
            if (s->status[t] != AT_LOWER && g >= Gmax1)
                Gmax1 = g;
        }
    }
    /* Close to the end: bring everything back once, so that variables
     * shrunk too early get a second chance. */
    if (!s->unshrink && Gmax1 + Gmax2 <= s->tol * 10) {
        s->unshrink = 1;
        if (reconstruct_gradient(s) != 0)
            return -1;
        s->active = s->l;
    }
    for (size_t t = 0; t < s->active; t++) {
        if (!be_shrunk(s, t, Gmax1, Gmax2))
            continue;
        s->active--;
        while (s->active > t) {
            if (!be_shrunk(s, s->active, Gmax1, Gmax2)) {
                swap_vars(s, t, s->active);
                break;
            }
            s->active--;
        }
    }
    return 0;
}

/* Solves the two-variable subproblem on (i, j) and updates G, G_bar. */
static int update_pair(solver *s, size_t i, size_t j)
{
    const size_t act = s->active;
    const double *Qi = q_col(&s->q, i, act);
    const double *Qj = Qi ? q_col(&s->q, j, act) : NULL;
    if (!Qj)
        return -1;
    double *a = s->alpha, *G = s->G;
    const double Ci = s->C[i], Cj = s->C[j];
    const double ai0 = a[i], aj0 = a[j];
    const double *QD = s->q.QD;

    if (s->y[i] != s->y[j]) {
        double quad = QD[i] + QD[j] + 2 * Qi[j];
        double delta = (-G[i] - G[j]) / (quad > 0 ? quad : TAU);
        double diff = a[i] - a[j];
        a[i] += delta;
        a[j] += delta;
        if (diff > 0) {
            if (a[j] < 0) {
                a[j] = 0;
                a[i] = diff;
            }
        } else if (a[i] < 0) {
            a[i] = 0;
            a[j] = -diff;
        }
        if (diff > Ci - Cj) {
            if (a[i] > Ci) {
                a[i] = Ci;
                a[j] = Ci - diff;
            }
        } else if (a[j] > Cj) {
            a[j] = Cj;
            a[i] = Cj + diff;
        }
    } else {
        double quad = QD[i] + QD[j] - 2 * Qi[j];
        double delta = (G[i] - G[j]) / (quad > 0 ? quad : TAU);
        double sum = a[i] + a[j];
        a[i] -= delta;
        a[j] += delta;
        if (sum > Ci) {
            if (a[i] > Ci) {
                a[i] = Ci;
                a[j] = sum - Ci;
            }
        } else if (a[j] < 0) {
            a[j] = 0;
            a[i] = sum;
        }
        if (sum > Cj) {
            if (a[j] > Cj) {
                a[j] = Cj;
                a[i] = sum - Cj;
            }
        } else if (a[i] < 0) {
            a[i] = 0;
            a[j] = sum;
        }
    }

    grad_update(G, Qi, Qj, a[i] - ai0, a[j] - aj0, act);

    int upper_i = s->status[i] == AT_UPPER, upper_j = s->status[j] == AT_UPPER;
    set_status(s, i);
    set_status(s, j);
    const size_t l = s->l;
    if (upper_i != (s->status[i] == AT_UPPER)) {
        const double *Q = q_col(&s->q, i, l);
        if (!Q)
            return -1;
        double c = upper_i ? -Ci : Ci;
        for (size_t t = 0; t < l; t++)
            s->G_bar[t] += c * Q[t];
    }
    if (upper_j != (s->status[j] == AT_UPPER)) {
        const double *Q = q_col(&s->q, j, l);
        if (!Q)
            return -1;
        double c = upper_j ? -Cj : Cj;
        for (size_t t = 0; t < l; t++)
            s->G_bar[t] += c * Q[t];
    }
    return 0;
}

static double compute_rho(const solver *s)
{
    double ub = INFINITY, lb = -INFINITY, sum_free = 0;
    size_t n_free = 0;
    for (size_t t = 0; t < s->active; t++) {
        double yG = s->y[t] * s->G[t];
        if (s->status[t] == AT_UPPER) {
            if (s->y[t] < 0)
                ub = yG < ub ? yG : ub;
            else
                lb = yG > lb ? yG : lb;
        } else if (s->status[t] == AT_LOWER) {
            if (s->y[t] > 0)
                ub = yG < ub ? yG : ub;
            else
                lb = yG > lb ? yG : lb;
        } else {
            n_free++;
            sum_free += yG;
        }
    }
    return n_free > 0 ? sum_free / (double)n_free : (ub + lb) / 2;
}

static void solver_free(solver *s)
{
    free(s->G);
    free(s->G_bar);
    free(s->alpha);
    free(s->p);
    free(s->C);
    free(s->y);
    free(s->status);
    free(s->up_pen);
    free(s->low_pen);
    free(s->perm);
    q_free(&s->q);
}

/* The status of a step that returned -1: the caller asked to stop, or
 * q_col failed (its status and message are then already in place). */
static km_status fail(solver *s, km_error *err)
{
    if (s->stopped)
        return km_error_set(err, KM_ECANCELLED, "fit cancelled");
    return s->q.st != KM_OK ? s->q.st : KM_EINTERNAL;
}

size_t km_svm_budget_bytes(const km_svm_params *p)
{
    double b = p->cache_mb * 1048576.0;
    return b >= (double)(SIZE_MAX / 2) ? SIZE_MAX / 2 : (size_t)b;
}

void km_smo_options_of(smo_options *o, const km_svm_params *p,
                       const km_fit_control *ctl, double lo, double hi)
{
    o->tol = p->tol;
    o->shrinking = p->shrinking != 0;
    o->max_iter = p->max_iter;
    o->cache_bytes = km_svm_budget_bytes(p);
    o->storage = SMO_AUTO;
    o->ctl = ctl;
    o->progress_lo = lo;
    o->progress_hi = hi;
    o->pool = NULL;
    o->pool_size = 0;
}

km_status km_smo_solve(const km_kernel *k, const smo_problem *pb,
                       const smo_options *o, smo_result *res, km_error *err)
{
    const size_t l = pb->n;
    km_status st = KM_OK;
    solver s;
    memset(&s, 0, sizeof s);
    memset(res, 0, sizeof *res);
    if (l == 0)
        return KM_OK;
    s.l = s.active = l;
    s.tol = o->tol;
    s.o = o;
    s.q.n = l;
    s.q.d = pb->d;
    s.q.k = k;
    s.q.err = err;
    s.G = malloc(l * sizeof *s.G);
    s.G_bar = calloc(l, sizeof *s.G_bar);
    s.alpha = malloc(l * sizeof *s.alpha);
    s.p = malloc(l * sizeof *s.p);
    s.C = malloc(l * sizeof *s.C);
    s.y = malloc(l * sizeof *s.y);
    s.status = malloc(l);
    s.up_pen = malloc(l * sizeof *s.up_pen);
    s.low_pen = malloc(l * sizeof *s.low_pen);
    s.perm = malloc(l * sizeof *s.perm);
    s.q.QD = malloc(l * sizeof *s.q.QD);
    if (!s.G || !s.G_bar || !s.alpha || !s.p || !s.C || !s.y || !s.status ||
        !s.up_pen || !s.low_pen || !s.perm || !s.q.QD) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for the solver");
        goto out;
    }
    for (size_t t = 0; t < l; t++) {
        s.alpha[t] = pb->alpha[t];
        s.p[t] = pb->p[t];
        s.C[t] = pb->C[t];
        s.y[t] = pb->y[t] > 0 ? 1.0 : -1.0;
        s.perm[t] = t;
        set_status(&s, t);
    }

    /* Measured on letter, satellite, digits and breast_cancer (C from 1
     * to 1e5, with and without probability): SMO touches a fraction of
     * Q's columns, so the lazy cache beats computing Q whole, by 1.5x to
     * 5x, even when Q fits. AUTO therefore always caches; a shared Gram
     * is read through the cache too. */
    int dense = o->storage == SMO_DENSE;
    st = dense ? q_init_dense(&s.q, pb, err)
               : q_init_cached(&s.q, pb, o->cache_bytes, o->pool,
                               o->pool_size, err);
    if (st != KM_OK)
        goto out;
    res->dense = dense;

    for (size_t t = 0; t < l; t++) {
        s.G[t] = pb->G0 ? pb->G0[t] : s.p[t];
        if (pb->G0)
            s.G_bar[t] = pb->Gbar0[t];
    }
    for (size_t i = 0; i < l && !pb->G0; i++) {
        if (s.status[i] == AT_LOWER)
            continue;
        const double *Qi = q_col(&s.q, i, l);
        if (!Qi || poll_stop(&s, l)) {
            st = fail(&s, err);
            goto out;
        }
        double ai = s.alpha[i];
        for (size_t t = 0; t < l; t++)
            s.G[t] += ai * Qi[t];
        if (s.status[i] == AT_UPPER)
            for (size_t t = 0; t < l; t++)
                s.G_bar[t] += s.C[i] * Qi[t];
    }

    long max_iter = o->max_iter > 0
                        ? o->max_iter
                        : (l > 2147483647 / 100 ? 2147483647
                           : (long)l * 100 > 10000000 ? (long)l * 100
                                                       : 10000000);
    long iter = 0;
    size_t every = l < 1000 ? l : 1000, counter = every + 1;
    while (iter < max_iter) {
        if (--counter == 0) {
            counter = every;
            if (o->shrinking && shrink(&s) != 0) {
                st = fail(&s, err);
                goto out;
            }
        }
        size_t i, j;
        int r = select_pair(&s, &i, &j);
        if (r == 1) {
            /* Optimal on the active set: check it on all variables. */
            if (reconstruct_gradient(&s) != 0) {
                st = fail(&s, err);
                goto out;
            }
            s.active = l;
            r = select_pair(&s, &i, &j);
            if (r == 1)
                break;
            counter = 1; /* shrink again at once */
        }
        if (r < 0 || update_pair(&s, i, j) != 0) {
            st = fail(&s, err);
            goto out;
        }
        s.iter = ++iter;
        /* An iteration reads the active variables some four times (the
         * two selection passes, the two gradient updates). */
        if (poll_stop(&s, 4 * s.active)) {
            st = fail(&s, err);
            goto out;
        }
    }
    if (iter >= max_iter) {
        res->capped = 1;
        if (s.active < l) {
            if (reconstruct_gradient(&s) != 0) {
                st = fail(&s, err);
                goto out;
            }
            s.active = l;
        }
    }

    res->rho = compute_rho(&s);
    double obj = 0;
    for (size_t t = 0; t < l; t++)
        obj += s.alpha[t] * (s.G[t] + s.p[t]);
    res->objective = obj / 2;
    res->iterations = iter;
    for (size_t t = 0; t < l; t++)
        pb->alpha[s.perm[t]] = s.alpha[t];
    for (size_t t = 0; pb->G_out && t < l; t++) {
        pb->G_out[s.perm[t]] = s.G[t];
        pb->Gbar_out[s.perm[t]] = s.G_bar[t];
    }
out:
    solver_free(&s);
    return st;
}
