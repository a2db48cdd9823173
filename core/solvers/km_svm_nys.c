/*
 * km_svm_nys.c - svc's nystrom solver: a linear SVM on Nystrom features,
 * one-vs-one, folded back into a kernel expansion over m centres.
 *
 * 1. Centres and features, by params.centres (km_nys_centres, krr's
 *    rules):
 *    uniform: m rows of X drawn uniformly without replacement by core's
 *    PRNG seeded with params.seed (km_krr_draw_centres), in the order of
 *    X. With T the upper Cholesky factor of K_mm + s I (s a tiny shift,
 *    0 in effect unless K_mm is singular: km_nys_factor_kmm),
 *    phi(x) = T^-T k_m(x), so that phi(x)^T phi(x') = k_m(x)^T (K_mm +
 *    sI)^-1 k_m(x'), the Nystrom approximation of k(x, x'). Phi (n x m)
 *    is computed in row blocks (the kernel against the centres, then one
 *    DTRSM).
 *    rpcholesky: the pivots P of randomly pivoted Cholesky (km_nystrom.c),
 *    whose factor F (n x m, F F^T = K_nP K_PP^-1 K_Pn) is itself the
 *    Nystrom feature map on P: F = K_nP T^-1 with T = F(P, :)^T (upper
 *    triangular in pivot order, T^T T = K_PP), so Phi = F and no kernel
 *    block or triangular solve is computed again. Fewer than m pivots
 *    when K's numerical rank is reached.
 *    Phi is held whole: every pair's solve passes over its rows once per
 *    epoch, and recomputing them would cost n m (d + m) per epoch instead
 *    of n m.
 * 2. Solve. For each class pair (a, b), a < b, class a as +1: LIBLINEAR's
 *    dual coordinate descent for the L2-regularised L1-loss (hinge) SVM
 *    (Hsieh, Chang, Lin, Keerthi, Sundararajan, "A dual coordinate descent
 *    method for large-scale linear SVM", ICML 2008; LIBLINEAR's
 *    solve_l2r_l1l2_svc with D_ii = 0, U = C_i), on the features with a
 *    constant 1 appended (LIBLINEAR's bias B = 1: the intercept is a
 *    weight and regularised with the others, as scikit-learn's LinearSVC
 *    with intercept_scaling 1):
 *        min_a  a^T Q a / 2 - sum a,  0 <= a_i <= C_i,
 *        Q_ij = y_i y_j (phi_i^T phi_j + 1),  w = sum a_i y_i (phi_i, 1).
 *    Each epoch visits the active variables in a random order (a
 *    Fisher-Yates shuffle by km_rng, seeded per pair from params.seed) and
 *    minimises over each in closed form; with shrinking, variables at a
 *    bound whose gradient points out of the box beyond the last epoch's
 *    extremes are set aside, and all are taken back before stopping. A
 *    pair stops when the projected gradient's spread, max PG - min PG over
 *    the variables visited in an epoch, is at most params.tol (on all
 *    variables), or after params.max_iter epochs. The pairs are
 *    independent: they run on up to ctl->threads threads (at most
 *    SVC_MAX_WORKERS), each pair's answer the same on any number.
 * 3. Model. f_ab(x) = w^T phi(x) + w_B = (T^-1 w)^T k_m(x) + w_B: the
 *    centres (sorted by row), an m x P matrix of coefficients T^-1 w (one
 *    column per pair, LIBSVM's pair order) and one intercept per pair,
 *    kept as rho = -w_B (decision = k_m(x)^T coef - rho, as the exact
 *    model's).
 *
 * Thread-safety: reentrant; the pairs' threads share only the read-only
 * features and a locked queue of pairs and progress.
 */
#include <cblas.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../base/km_base_internal.h"
#include "../kernels/km_kernel_internal.h"
#include "km_svm_solve.h"

/* Values of Phi computed per block (kernel and DTRSM), for progress. */
#define PHI_BLOCK_VALUES ((size_t)1 << 21)
/* Share of the progress for the features; the pairs share the rest. */
#define PHI_SHARE 0.3

size_t km_svm_centres(const km_svm_params *p, size_t n)
{
    if (p->n_centres)
        return p->n_centres;
    return n < KM_SVM_DEFAULT_CENTRES ? n : KM_SVM_DEFAULT_CENTRES;
}

static long max_epochs(const km_svm_params *p)
{
    return p->max_iter > 0 ? p->max_iter : KM_SVM_DEFAULT_EPOCHS;
}

/* Rows of Phi per block (kernel and triangular solve) of n rows, within
 * BLAS's ints and n (the float path's buffers hold a block's rows). */
static size_t phi_block(size_t n, size_t m)
{
    size_t block = PHI_BLOCK_VALUES / (m ? m : 1);
    block = block > INT_MAX / (m ? m : 1) ? INT_MAX / (m ? m : 1) : block;
    block = block < n ? block : n;
    return block < 1 ? 1 : block;
}

size_t km_svc_nys_fit_bytes(size_t n, size_t d, size_t k,
                            const km_svm_params *p)
{
    /* Phi and its row norms; the grouped X and the original's order (in
     * svc_fit_rows); the centres' n indices; T (m^2); the pairs' weights,
     * coefficients and figures (3 m P + 6 P); every worker's alpha and
     * order (2 n each); the centres and their norms, twice (here and the
     * model's); the model's coefficients; with rpcholesky, its workspace
     * (Phi being its factor, in double while it runs, whatever the
     * precision). Float features: Phi in float (n m / 2 doubles) and,
     * while they are computed, T, the centres and a block of rows in
     * float and a block of kernel values in double (features). */
    uint64_t m = km_svm_centres(p, n), P = km_n_pairs(k);
    int rpc = p->centres == KM_KRR_CENTRES_RPCHOLESKY;
    uint64_t v = km_mul_sat(n, m);
    if (p->precision == KM_SVM_PRECISION_FLOAT32 && !rpc) {
        uint64_t b = phi_block(n, m);
        v = (v + 1) / 2;
        v = km_add_sat(v, (km_mul_sat(m, m + d) + b * d) / 2 + 1);
        v = km_add_sat(v, km_mul_sat(b, m));
    }
    v = km_add_sat(v, n);
    v = km_add_sat(v, km_mul_sat(n, d + 4));
    v = km_add_sat(v, km_mul_sat(2 * SVC_MAX_WORKERS, n));
    v = km_add_sat(v, km_mul_sat(m, m));
    v = km_add_sat(v, km_mul_sat(3 * (m + 2), P));
    v = km_add_sat(v, km_mul_sat(2 * m, d + 1));
    v = km_mul_sat(v, sizeof(double));
    if (rpc)
        v = km_add_sat(v, km_nys_rpcholesky_bytes(n, d, m));
    return v > SIZE_MAX ? SIZE_MAX : (size_t)v;
}

/* The pairs of one fit, shared by its threads. */
typedef struct pairs_run {
    const km_svm_params *p;
    const double *Phi, *qd; /* n x m, rows in X's order; |phi_i|^2 + 1 */
    const float *Phif;      /* Phi in float (precision float32) instead */
    const size_t *order, *start;
    size_t m, P;
    const size_t *pa, *pb;  /* pair pi is classes (pa[pi], pb[pi]) */
    double *W;              /* (m + 1) x P: pair pi's weights, bias last */
    double *objective, *gap;
    long *epochs;
    int *capped;
    double *margin;         /* NULL, or n x (k - 1): see km_svc_nys_solve */
    size_t k;
    svc_pairs q;            /* the queue (km_svm_pairs.c) */
} pairs_run;

/* The dual coordinate descent of one pair: its positives are grouped rows
 * [a0, a0 + na), its negatives [b0, b0 + nb) (rows order[.] of Phi). w
 * gets m + 1 weights (the last the bias's). */
typedef struct dcd {
    pairs_run *run;
    size_t pi;
    size_t a0, na, b0, nb;
    double Cp, Cn;
    km_rng rng;
    double *w, *alpha;
    size_t *index;
    double done;   /* share of the progress reported */
    long epochs;
    double gap;
    int capped;
} dcd;

static size_t dcd_row(const dcd *s, size_t t)
{
    return s->run->order[t < s->na ? s->a0 + t : s->b0 + (t - s->na)];
}

/* |phi_i|^2 in double, from either precision's features. */
static double phi_sqnorm(const double *Phi, const float *Phif, size_t m,
                         size_t i)
{
    if (!Phif)
        return cblas_ddot((int)m, Phi + i * m, 1, Phi + i * m, 1);
    double s = 0;
    for (size_t j = 0; j < m; j++)
        s += (double)Phif[i * m + j] * Phif[i * m + j];
    return s;
}

/* w^T phi_row (the bias apart), and w += a phi_row, in double from
 * either precision's features. phi_dot first asks for row next's
 * features to be fetched into cache (none when next is SIZE_MAX): the
 * descent is bound by memory, and the next row's fetch overlaps this
 * one's (measured at m = 5000, float rows in random order: 1.8 against
 * 2.5 microseconds a row). */
static double phi_dot(const pairs_run *r, const double *w, size_t row,
                      size_t next)
{
    const size_t m = r->m;
    if (next != SIZE_MAX)
        km_prefetch(r->Phif ? (const void *)(r->Phif + next * m)
                            : (const void *)(r->Phi + next * m),
                    m * (r->Phif ? sizeof *r->Phif : sizeof *r->Phi));
    return r->Phif ? km_vdot_f(w, r->Phif + row * m, m)
                   : cblas_ddot((int)m, w, 1, r->Phi + row * m, 1);
}

static void phi_axpy(const pairs_run *r, double a, size_t row, double *w)
{
    if (r->Phif)
        km_vaxpy_f(a, r->Phif + row * r->m, w, r->m);
    else
        cblas_daxpy((int)r->m, a, r->Phi + row * r->m, 1, w, 1);
}

static km_status dcd_solve(dcd *s, km_error *err)
{
    const pairs_run *r = s->run;
    const size_t l = s->na + s->nb, m = r->m;
    const double tol = r->p->tol;
    const long cap = max_epochs(r->p);
    double *w = s->w, *alpha = s->alpha;
    size_t *index = s->index;
    memset(w, 0, (m + 1) * sizeof *w);
    memset(alpha, 0, l * sizeof *alpha);
    for (size_t i = 0; i < l; i++)
        index[i] = i;
    size_t active = l;
    double pgmax_old = HUGE_VAL, pgmin_old = -HUGE_VAL;
    double g0 = 0; /* the first epoch's gap, for progress */
    s->epochs = 0;
    s->capped = 0;
    s->gap = HUGE_VAL;
    while (s->epochs < cap) {
        double pgmax = -HUGE_VAL, pgmin = HUGE_VAL;
        for (size_t i = 0; i + 1 < active; i++) {
            size_t j = i + km_rng_below(&s->rng, active - i), t = index[i];
            index[i] = index[j];
            index[j] = t;
        }
        for (size_t q = 0; q < active; q++) {
            size_t i = index[q], row = dcd_row(s, i);
            const double yi = i < s->na ? 1.0 : -1.0;
            const double C = i < s->na ? s->Cp : s->Cn;
            size_t next = q + 1 < active ? dcd_row(s, index[q + 1]) : SIZE_MAX;
            double G = yi * (phi_dot(r, w, row, next) + w[m]) - 1;
            double PG = 0;
            if (alpha[i] == 0) {
                if (G > pgmax_old) { /* shrink: stays at 0 */
                    active--;
                    index[q] = index[active];
                    index[active] = i;
                    q--;
                    continue;
                }
                if (G < 0)
                    PG = G;
            } else if (alpha[i] == C) {
                if (G < pgmin_old) { /* shrink: stays at C */
                    active--;
                    index[q] = index[active];
                    index[active] = i;
                    q--;
                    continue;
                }
                if (G > 0)
                    PG = G;
            } else {
                PG = G;
            }
            pgmax = PG > pgmax ? PG : pgmax;
            pgmin = PG < pgmin ? PG : pgmin;
            if (fabs(PG) > 1e-12) {
                double old = alpha[i];
                double a = old - G / r->qd[row];
                alpha[i] = a < 0 ? 0 : a > C ? C : a;
                double dlt = (alpha[i] - old) * yi;
                phi_axpy(r, dlt, row, w);
                w[m] += dlt;
            }
        }
        s->epochs++;
        double gap = active ? pgmax - pgmin : 0;
        if (s->epochs == 1)
            g0 = gap;
        if (gap <= tol) {
            if (active == l) {
                s->gap = gap;
                break;
            }
            /* converged on the active set: check all variables */
            active = l;
            pgmax_old = HUGE_VAL;
            pgmin_old = -HUGE_VAL;
        } else {
            s->gap = gap;
            if (r->p->shrinking) {
                pgmax_old = pgmax > 0 ? pgmax : HUGE_VAL;
                pgmin_old = pgmin < 0 ? pgmin : -HUGE_VAL;
            }
        }
        /* progress: epochs against the cap, or the gap's way down to tol
         * on a log scale, whichever is further */
        double f = (double)s->epochs / (double)cap;
        if (g0 > tol && gap > 0 && gap < g0) {
            double h = log(g0 / gap) / log(g0 / tol);
            f = h > f ? h : f;
        }
        f = f < 1 ? f : 1;
        s->done = f > s->done ? f : s->done; /* never back */
        if (svc_pairs_progress(&s->run->q, s->pi, s->done))
            return km_error_set(err, KM_ECANCELLED, "fit cancelled");
    }
    if (s->epochs >= cap && !(s->gap <= tol))
        s->capped = 1;
    return KM_OK;
}

/* A worker's state: the run, and alpha and index for the largest
 * pair's rows. */
typedef struct pair_worker {
    pairs_run *run;
    double *alpha;
    size_t *index;
} pair_worker;

/* Pair pi on a worker (svc_pairs' solve). */
static km_status pair_solve(void *state, size_t pi, km_error *err)
{
    const pair_worker *wk = state;
    pairs_run *r = wk->run;
    double *alpha = wk->alpha;
    size_t *index = wk->index;
    const km_svm_params *p = r->p;
    const size_t a = r->pa[pi], b = r->pb[pi], m = r->m;
    double wa = p->class_weight ? p->class_weight[a] : 1;
    double wb = p->class_weight ? p->class_weight[b] : 1;
    dcd s = {r, pi, r->start[a], r->start[a + 1] - r->start[a], r->start[b],
             r->start[b + 1] - r->start[b], p->C * wa, p->C * wb,
             {p->seed ^ (0x9e3779b97f4a7c15ull * (pi + 1))},
             r->W + pi * (m + 1), alpha, index, 0, 0, 0, 0};
    km_status st = dcd_solve(&s, err);
    if (st != KM_OK)
        return st;
    r->epochs[pi] = s.epochs;
    r->capped[pi] = s.capped;
    r->gap[pi] = s.gap;
    /* each row's y f(x) in this pair: class a's rows at column b - 1,
     * class b's at column a (pairs write disjoint entries) */
    for (size_t t = 0; r->margin && t < s.na + s.nb; t++) {
        size_t g = t < s.na ? s.a0 + t : s.b0 + (t - s.na);
        double f = phi_dot(r, s.w, r->order[g], SIZE_MAX) + s.w[m];
        r->margin[g * (r->k - 1) + (t < s.na ? b - 1 : a)] =
            t < s.na ? f : -f;
    }
    /* the dual objective a^T Q a / 2 - sum a = |w|^2 / 2 - sum a */
    km_ksum o = {0, 0};
    km_ksum_add(&o, 0.5 * cblas_ddot((int)(m + 1), s.w, 1, s.w, 1));
    for (size_t t = 0; t < s.na + s.nb; t++)
        km_ksum_add(&o, -alpha[t]);
    r->objective[pi] = km_ksum_get(&o);
    return KM_OK;
}

/* The pairs on nw workers (the calling thread and those it can start),
 * each with 2 x maxpair of workspace at ws. */
static km_status run_pairs(pairs_run *r, size_t nw, size_t maxpair,
                           double *ws, km_error *err)
{
    pair_worker wk[SVC_MAX_WORKERS];
    nw = nw < SVC_MAX_WORKERS ? nw : SVC_MAX_WORKERS;
    for (size_t t = 0; t < nw; t++) {
        wk[t].run = r;
        wk[t].alpha = ws + 2 * maxpair * t;
        wk[t].index = (size_t *)(wk[t].alpha + maxpair);
    }
    return svc_pairs_run(&r->q, wk, sizeof *wk, nw, err);
}

static void round_to_float(const double *v, size_t len, float *f)
{
    for (size_t i = 0; i < len; i++)
        f[i] = (float)v[i];
}

/* One block of float features, rows X (nb x d) into P (nb x m floats),
 * before the triangular solve: for kernels of inner products, SGEMM of
 * the rows (rounded into xf, nb x d) against the centres' (zf), then each
 * row's kernel map in double (row, m doubles); other kernels in double
 * by km_gram_cross_sn (into kb, nb x m), rounded. */
static km_status block_f(const km_kernel *k, const double *X, size_t nb,
                         size_t d, const double *Z, const double *zn,
                         const float *zf, size_t m, float *xf, double *kb,
                         double *row, float *P, km_error *err)
{
    if (!zf) {
        km_status st = km_gram_cross_sn(k, X, nb, Z, m, zn, d, kb, m, err);
        if (st == KM_OK)
            round_to_float(kb, nb * m, P);
        return st;
    }
    round_to_float(X, nb * d, xf);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)nb, (int)m,
                (int)d, 1.0f, xf, (int)d, zf, (int)d, 0.0f, P, (int)m);
    for (size_t i = 0; i < nb; i++) {
        float *Pi = P + i * m;
        for (size_t j = 0; j < m; j++)
            row[j] = Pi[j];
        km_kernel_map_row(k, row, m, km_vdot(X + i * d, X + i * d, d), zn,
                          -1);
        round_to_float(row, m, Pi);
    }
    return KM_OK;
}

/* The float path's buffers (features): T, the centres and a block of
 * rows rounded, and a block of kernel values (other kernels) or one row
 * (kernels of inner products) in double. */
typedef struct fbufs {
    float *T, *zf, *xf;
    double *w;
} fbufs;

static int fbufs_init(fbufs *b, const km_kernel *k, const double *T,
                      const double *Z, size_t m, size_t d, size_t block)
{
    int dots = km_kernel_uses_dots(k);
    b->T = malloc(m * m * sizeof *b->T);
    b->zf = dots ? malloc(m * d * sizeof *b->zf) : NULL;
    b->xf = dots ? malloc(block * d * sizeof *b->xf) : NULL;
    b->w = malloc((dots ? m : block * m) * sizeof *b->w);
    if (!b->T || !b->w || (dots && (!b->zf || !b->xf)))
        return 0;
    round_to_float(T, m * m, b->T);
    if (dots)
        round_to_float(Z, m * d, b->zf);
    return 1;
}

static void fbufs_free(fbufs *b)
{
    free(b->T);
    free(b->zf);
    free(b->xf);
    free(b->w);
}

/* Phi (n x m, row-major) := T^-T k_m(x_i) for the rows of X, in blocks:
 * in double into Phi (the kernel against the centres, then DTRSM), or,
 * when Phif is not NULL, in float into it (block_f, then STRSM with T
 * rounded). */
static km_status features(const km_kernel *k, const double *X, size_t n,
                          size_t d, const double *Z, const double *zn,
                          size_t m, const double *T, double *Phi,
                          float *Phif, const km_fit_control *ctl,
                          km_error *err)
{
    size_t block = phi_block(n, m);
    fbufs f = {NULL, NULL, NULL, NULL};
    km_status st = KM_OK;
    if (Phif && !fbufs_init(&f, k, T, Z, m, d, block)) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for the float "
                          "features of %zu centres", m);
        goto out;
    }
    for (size_t i0 = 0; i0 < n; i0 += block) {
        size_t nb = n - i0 < block ? n - i0 : block;
        /* a block, row-major nb x m, is column-major m x nb (K^T):
         * T^T P = K^T */
        if (Phif) {
            float *P = Phif + i0 * m;
            if ((st = block_f(k, X + i0 * d, nb, d, Z, zn, f.zf, m, f.xf,
                              f.zf ? NULL : f.w, f.zf ? f.w : NULL, P,
                              err)) != KM_OK)
                goto out;
            cblas_strsm(CblasColMajor, CblasLeft, CblasUpper, CblasTrans,
                        CblasNonUnit, (int)m, (int)nb, 1.0f, f.T, (int)m, P,
                        (int)m);
        } else {
            double *P = Phi + i0 * m;
            if ((st = km_gram_cross_sn(k, X + i0 * d, nb, Z, m, zn, d, P, m,
                                       err)) != KM_OK)
                goto out;
            cblas_dtrsm(CblasColMajor, CblasLeft, CblasUpper, CblasTrans,
                        CblasNonUnit, (int)m, (int)nb, 1.0, T, (int)m, P,
                        (int)m);
        }
        if (km_progress(ctl, PHI_SHARE * (double)(i0 + nb) / (double)n)) {
            st = km_error_set(err, KM_ECANCELLED, "fit cancelled");
            goto out;
        }
    }
out:
    fbufs_free(&f);
    return st;
}

/* F (len doubles) rounded to floats in its own buffer, shrunk to them; in
 * chunks through copies, so that no value is read after its bytes were
 * written (float i ends at byte 4 (i + 1) <= 8 i, where double i
 * starts, for i >= 1). */
static float *shrink_to_float(double *F, size_t len)
{
    enum { CHUNK = 512 };
    double v[CHUNK];
    float f[CHUNK];
    for (size_t i0 = 0; i0 < len; i0 += CHUNK) {
        size_t c = len - i0 < CHUNK ? len - i0 : CHUNK;
        memcpy(v, F + i0, c * sizeof *v);
        round_to_float(v, c, f);
        memcpy((char *)F + i0 * sizeof *f, f, c * sizeof *f);
    }
    float *out = realloc(F, (len ? len : 1) * sizeof *out);
    return out ? out : (float *)(void *)F;
}

/* Centres idx (n entries of room, m asked, *m kept), T (m x m, upper,
 * column-major) and the features, n x m with rows in X's order, by p's
 * rule: *Phi in double, or *Phif in float with precision float32 (the
 * other NULL). With rpcholesky idx is in pivot order; T = F(P, :)^T. */
static km_status centres_features(const km_kernel *k, const km_svm_params *p,
                                  const double *X, size_t n, size_t d,
                                  size_t *m, size_t *idx, double **T,
                                  double **Phi, float **Phif,
                                  const km_fit_control *ctl, km_error *err)
{
    const int f32 = p->precision == KM_SVM_PRECISION_FLOAT32;
    double *Z = NULL, *zn = NULL, shift;
    km_status st = km_nys_centres(k, p->centres, p->seed, X, n, d, *m, idx, m,
                                  p->centres == KM_KRR_CENTRES_RPCHOLESKY
                                      ? Phi
                                      : NULL,
                                  ctl, 0.0, PHI_SHARE, err);
    const size_t mm = *m;
    *Phif = NULL;
    if (st != KM_OK)
        return st;
    if (!(*T = malloc(mm * mm * sizeof **T)))
        return km_error_set(err, KM_ENOMEM, "out of memory for the nystrom "
                            "factor of %zu centres", mm);
    if (*Phi) { /* rpcholesky: column a of T is row idx[a] of F, to a */
        for (size_t a = 0; a < mm; a++) {
            memcpy(*T + a * mm, *Phi + idx[a] * mm, (a + 1) * sizeof **T);
            memset(*T + a * mm + a + 1, 0, (mm - a - 1) * sizeof **T);
        }
        if (f32) {
            *Phif = shrink_to_float(*Phi, n * mm);
            *Phi = NULL;
        }
        return KM_OK;
    }
    if ((f32 ? !(*Phif = malloc(n * mm * sizeof **Phif))
             : !(*Phi = malloc(n * mm * sizeof **Phi))) ||
        !(Z = malloc(mm * d * sizeof *Z))) {
        free(Z);
        return km_error_set(err, KM_ENOMEM, "out of memory for the nystrom "
                            "features of %zu rows and %zu centres", n, mm);
    }
    for (size_t i = 0; i < mm; i++)
        memcpy(Z + i * d, X + idx[i] * d, d * sizeof *X);
    if (!(zn = km_sqnorms(Z, mm, d)))
        st = km_error_set(err, KM_ENOMEM, "out of memory for the centres");
    else if ((st = km_nys_factor_kmm(k, Z, mm, d, 0, *T, &shift, err)) ==
             KM_OK)
        st = features(k, X, n, d, Z, zn, mm, *T, *Phi, *Phif, ctl, err);
    free(Z);
    free(zn);
    return st;
}

void km_svc_nys_free(svc_nys_result *r)
{
    free(r->Z);
    free(r->coef);
    free(r->rho);
    free(r->objective);
    memset(r, 0, sizeof *r);
}

static int cmp_pos(const void *a, const void *b)
{
    const size_t *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0];
}

km_status km_svc_nys_solve(const km_kernel *k, const km_svm_params *p,
                           const double *X, size_t n, size_t d,
                           const size_t *order, const size_t *start, size_t K,
                           const km_fit_control *ctl, double *margin,
                           svc_nys_result *res, km_error *err)
{
    const size_t P = K * (K - 1) / 2;
    size_t m = km_svm_centres(p, n);
    size_t *idx = NULL, *pos = NULL, *pab = NULL;
    double *T = NULL, *Phi = NULL, *qd = NULL, *W = NULL, *ws = NULL;
    float *Phif = NULL;
    double *fig = NULL;
    long *epochs = NULL;
    int *capped = NULL;
    km_status st = KM_OK;
    memset(res, 0, sizeof *res);
    if (m > INT_MAX / (P + 1) || m > INT_MAX / (d + 1)) {
        /* BLAS's ints (rpcholesky's: km_nys_centres) */
        return km_error_set(err, KM_EINVAL, "params.n_centres (%zu) times "
                            "the class pairs (%zu) must be below 2^31", m,
                            P);
    }
    size_t maxpair = 0;
    for (size_t a = 0; a < K; a++)
        for (size_t b = a + 1; b < K; b++) {
            size_t c = start[a + 1] - start[a] + start[b + 1] - start[b];
            maxpair = c > maxpair ? c : maxpair;
        }
    size_t nw = ctl && ctl->threads > 1 ? (size_t)ctl->threads : 1;
    nw = nw < P ? nw : P;
    nw = nw < SVC_MAX_WORKERS ? nw : SVC_MAX_WORKERS;
    if (!(idx = malloc(n * sizeof *idx))) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for the centres");
        goto out;
    }
    if (km_progress(ctl, 0.0)) {
        st = km_error_set(err, KM_ECANCELLED, "fit cancelled");
        goto out;
    }
    double t0 = km_now();
    if ((st = centres_features(k, p, X, n, d, &m, idx, &T, &Phi, &Phif,
                               ctl, err)) != KM_OK)
        goto out;
    if (m < K) { /* rpcholesky stopped at K's numerical rank */
        st = km_error_set(err, KM_EPROBLEM, "params.centres rpcholesky finds "
                          "only %zu centres (the kernel matrix's numerical "
                          "rank) but y has %zu classes: at least one centre "
                          "per class; use params.centres uniform", m, K);
        goto out;
    }
    res->m = m;
    res->Z = malloc(m * d * sizeof *res->Z);
    res->coef = malloc(m * P * sizeof *res->coef);
    res->rho = malloc(P * sizeof *res->rho);
    res->objective = malloc(P * sizeof *res->objective);
    pos = malloc(2 * m * sizeof *pos);
    pab = malloc(2 * P * sizeof *pab);
    qd = malloc(n * sizeof *qd);
    W = malloc((m + 1) * P * sizeof *W);
    ws = malloc(2 * nw * maxpair * sizeof *ws);
    fig = calloc(P, sizeof *fig);
    epochs = calloc(P, sizeof *epochs);
    capped = calloc(P, sizeof *capped);
    if (!res->Z || !res->coef || !res->rho || !res->objective || !pos ||
        !pab || !qd || !W || !ws || !fig || !epochs || !capped) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for the nystrom "
                          "solver of %zu rows and %zu centres", n, m);
        goto out;
    }
    for (size_t i = 0; i < n; i++)
        qd[i] = phi_sqnorm(Phi, Phif, m, i) + 1.0;
    res->feature_seconds = km_now() - t0;

    pairs_run r = {p, Phi, qd, Phif, order, start, m, P, pab, pab + P, W,
                   res->objective, fig, epochs, capped, margin, K, {0}};
    r.q.ctl = ctl;
    r.q.P = P;
    r.q.lo = PHI_SHARE;
    r.q.hi = PHI_SHARE + (1 - PHI_SHARE) * 0.99;
    r.q.solve = pair_solve;
    for (size_t a = 0, pi = 0; a < K; a++)
        for (size_t b = a + 1; b < K; b++, pi++) {
            pab[pi] = a;
            pab[P + pi] = b;
        }
    st = run_pairs(&r, nw, maxpair, ws, err);
    if (st != KM_OK)
        goto out;
    for (size_t pi = 0; pi < P; pi++) {
        res->epochs += epochs[pi];
        res->capped += capped[pi];
        res->gap = fig[pi] > res->gap ? fig[pi] : res->gap;
        res->rho[pi] = -W[pi * (m + 1) + m];
    }
    /* coefficients T^-1 w, column p of W (leading dimension m + 1) */
    cblas_dtrsm(CblasColMajor, CblasLeft, CblasUpper, CblasNoTrans,
                CblasNonUnit, (int)m, (int)P, 1.0, T, (int)m, W, (int)(m + 1));
    /* the centres by row (rpcholesky's are in pivot order) */
    for (size_t i = 0; i < m; i++) {
        pos[2 * i] = idx[i];
        pos[2 * i + 1] = i;
    }
    qsort(pos, m, 2 * sizeof *pos, cmp_pos);
    for (size_t i = 0; i < m; i++) {
        memcpy(res->Z + i * d, X + pos[2 * i] * d, d * sizeof *X);
        for (size_t q = 0; q < P; q++)
            res->coef[i * P + q] = W[q * (m + 1) + pos[2 * i + 1]];
    }
out:
    if (st != KM_OK)
        km_svc_nys_free(res);
    free(idx);
    free(pos);
    free(pab);
    free(T);
    free(Phi);
    free(Phif);
    free(qd);
    free(W);
    free(ws);
    free(fig);
    free(epochs);
    free(capped);
    return st;
}
