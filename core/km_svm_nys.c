/*
 * km_svm_nys.c - svc's nystrom solver: a linear SVM on Nystrom features,
 * one-vs-one, folded back into a kernel expansion over m centres.
 *
 * 1. Centres. m rows of X drawn uniformly without replacement by core's
 *    PRNG seeded with params.seed (km_krr_draw_centres, the draw of krr's
 *    nystrom solver), in the order of X.
 * 2. Features. With T the upper Cholesky factor of K_mm + s I (s a tiny
 *    shift, 0 in effect unless K_mm is singular: km_nys_factor_kmm),
 *    phi(x) = T^-T k_m(x), so that phi(x)^T phi(x') = k_m(x)^T (K_mm +
 *    sI)^-1 k_m(x'), the Nystrom approximation of k(x, x'). Phi (n x m,
 *    the rows grouped by class) is computed in row blocks (the kernel
 *    against the centres, then one DTRSM) and held whole: every pair's
 *    solve passes over its rows once per epoch, and recomputing them
 *    would cost n m (d + m) per epoch instead of n m.
 * 3. Solve. For each class pair (a, b), a < b, class a as +1: LIBLINEAR's
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
 *    variables), or after params.max_iter epochs.
 * 4. Model. f_ab(x) = w^T phi(x) + w_B = (T^-1 w)^T k_m(x) + w_B: the
 *    centres, an m x P matrix of coefficients T^-1 w (one column per
 *    pair, LIBSVM's pair order) and one intercept per pair, kept as
 *    rho = -w_B (decision = k_m(x)^T coef - rho, as the exact model's).
 *
 * Thread-safety: reentrant.
 */
#include <cblas.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "km_svm_internal.h"

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

size_t km_svc_nys_fit_bytes(size_t n, size_t d, size_t k,
                            const km_svm_params *p)
{
    /* Phi and its row norms; the grouped X and the original's order (in
     * svc_fit_rows); the draw's n indices; T (m^2); the pairs' weights
     * and coefficients (2 m P); a pair's alpha and order (2 n); the
     * centres and their norms, twice (here and the model's); the
     * model's coefficients. */
    uint64_t m = km_svm_centres(p, n), P = km_n_pairs(k);
    uint64_t v = km_mul_sat(n, m + 1);
    v = km_add_sat(v, km_mul_sat(n, d + 4));
    v = km_add_sat(v, km_mul_sat(m, m));
    v = km_add_sat(v, km_mul_sat(3 * (m + 1), P));
    v = km_add_sat(v, km_mul_sat(2 * m, d + 1));
    v = km_mul_sat(v, sizeof(double));
    return v > SIZE_MAX ? SIZE_MAX : (size_t)v;
}

/* The dual coordinate descent of one pair; rows [a0, a0 + na) of Phi are
 * its positives, [b0, b0 + nb) its negatives. w gets m + 1 weights (the
 * last the bias's). */
typedef struct dcd {
    const double *Phi, *qd; /* n x m; |phi_i|^2 + 1 */
    size_t m;
    size_t a0, na, b0, nb;
    double Cp, Cn, tol;
    long max_epochs;
    int shrinking;
    km_rng rng;
    double *w, *alpha;
    size_t *index;
    const km_fit_control *ctl;
    double lo, hi; /* progress range */
    double done;   /* share of it reported */
    long epochs;
    double gap;
    int capped;
} dcd;

static size_t dcd_row(const dcd *s, size_t t)
{
    return t < s->na ? s->a0 + t : s->b0 + (t - s->na);
}

static km_status dcd_solve(dcd *s, km_error *err)
{
    const size_t l = s->na + s->nb, m = s->m;
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
    while (s->epochs < s->max_epochs) {
        double pgmax = -HUGE_VAL, pgmin = HUGE_VAL;
        for (size_t i = 0; i + 1 < active; i++) {
            size_t j = i + km_rng_below(&s->rng, active - i), t = index[i];
            index[i] = index[j];
            index[j] = t;
        }
        for (size_t q = 0; q < active; q++) {
            size_t i = index[q];
            const double yi = i < s->na ? 1.0 : -1.0;
            const double C = i < s->na ? s->Cp : s->Cn;
            const double *x = s->Phi + dcd_row(s, i) * m;
            double G = yi * (cblas_ddot((int)m, w, 1, x, 1) + w[m]) - 1;
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
                double a = old - G / s->qd[dcd_row(s, i)];
                alpha[i] = a < 0 ? 0 : a > C ? C : a;
                double dlt = (alpha[i] - old) * yi;
                cblas_daxpy((int)m, dlt, x, 1, w, 1);
                w[m] += dlt;
            }
        }
        s->epochs++;
        double gap = active ? pgmax - pgmin : 0;
        if (s->epochs == 1)
            g0 = gap;
        if (gap <= s->tol) {
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
            if (s->shrinking) {
                pgmax_old = pgmax > 0 ? pgmax : HUGE_VAL;
                pgmin_old = pgmin < 0 ? pgmin : -HUGE_VAL;
            }
        }
        /* progress: epochs against the cap, or the gap's way down to tol
         * on a log scale, whichever is further */
        double f = (double)s->epochs / (double)s->max_epochs;
        if (g0 > s->tol && gap > 0 && gap < g0) {
            double h = log(g0 / gap) / log(g0 / s->tol);
            f = h > f ? h : f;
        }
        f = f < 1 ? f : 1;
        s->done = f > s->done ? f : s->done; /* never back */
        if (km_progress(s->ctl, s->lo + (s->hi - s->lo) * s->done))
            return km_error_set(err, KM_ECANCELLED, "fit cancelled");
    }
    if (s->epochs >= s->max_epochs && !(s->gap <= s->tol))
        s->capped = 1;
    return KM_OK;
}

/* Phi (n x m, row-major) := T^-T k_m(x_i) for the rows of Xg, in blocks. */
static km_status features(const km_kernel *k, const double *Xg, size_t n,
                          size_t d, const double *Z, const double *zn,
                          size_t m, const double *T, double *Phi,
                          const km_fit_control *ctl, km_error *err)
{
    size_t block = PHI_BLOCK_VALUES / m;
    block = block < 1 ? 1 : block > INT_MAX / m ? INT_MAX / m : block;
    for (size_t i0 = 0; i0 < n; i0 += block) {
        size_t nb = n - i0 < block ? n - i0 : block;
        double *P = Phi + i0 * m;
        km_status st = km_gram_cross_sn(k, Xg + i0 * d, nb, Z, m, zn, d, P,
                                        m, err);
        if (st != KM_OK)
            return st;
        /* P row-major nb x m is column-major m x nb (K^T): T^T X = K^T */
        cblas_dtrsm(CblasColMajor, CblasLeft, CblasUpper, CblasTrans,
                    CblasNonUnit, (int)m, (int)nb, 1.0, T, (int)m, P, (int)m);
        if (km_progress(ctl, PHI_SHARE * (double)(i0 + nb) / (double)n))
            return km_error_set(err, KM_ECANCELLED, "fit cancelled");
    }
    return KM_OK;
}

void km_svc_nys_free(svc_nys_result *r)
{
    free(r->Z);
    free(r->coef);
    free(r->rho);
    free(r->objective);
    memset(r, 0, sizeof *r);
}

km_status km_svc_nys_solve(const km_kernel *k, const km_svm_params *p,
                           const double *X, const double *Xg, size_t n,
                           size_t d, const size_t *start, size_t K,
                           const km_fit_control *ctl, svc_nys_result *res,
                           km_error *err)
{
    const size_t m = km_svm_centres(p, n), P = K * (K - 1) / 2;
    size_t *idx = NULL, *index = NULL;
    double *zn = NULL, *T = NULL, *Phi = NULL, *qd = NULL, *W = NULL;
    double *alpha = NULL;
    km_status st = KM_OK;
    memset(res, 0, sizeof *res);
    res->m = m;
    if (m > INT_MAX / (P + 1) || m > INT_MAX / (d + 1)) { /* BLAS's ints */
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
    idx = malloc(n * sizeof *idx);
    res->Z = malloc(m * d * sizeof *res->Z);
    res->coef = malloc(m * P * sizeof *res->coef);
    res->rho = malloc(P * sizeof *res->rho);
    res->objective = malloc(P * sizeof *res->objective);
    T = malloc(m * m * sizeof *T);
    Phi = malloc(n * m * sizeof *Phi);
    qd = malloc(n * sizeof *qd);
    W = malloc((m + 1) * P * sizeof *W);
    alpha = malloc(maxpair * sizeof *alpha);
    index = malloc(maxpair * sizeof *index);
    if (!idx || !res->Z || !res->coef || !res->rho || !res->objective ||
        !T || !Phi || !qd || !W || !alpha || !index) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for the nystrom "
                          "features of %zu rows and %zu centres", n, m);
        goto out;
    }
    if (km_progress(ctl, 0.0)) {
        st = km_error_set(err, KM_ECANCELLED, "fit cancelled");
        goto out;
    }
    km_krr_draw_centres(p->seed, n, m, idx);
    for (size_t i = 0; i < m; i++)
        memcpy(res->Z + i * d, X + idx[i] * d, d * sizeof *X);
    free(idx);
    idx = NULL;
    double shift;
    if (!(zn = km_sqnorms(res->Z, m, d))) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for the centres");
        goto out;
    }
    double t0 = km_now();
    if ((st = km_nys_factor_kmm(k, res->Z, m, d, 0, T, &shift, err)) != KM_OK ||
        (st = features(k, Xg, n, d, res->Z, zn, m, T, Phi, ctl, err)) !=
            KM_OK)
        goto out;
    for (size_t i = 0; i < n; i++)
        qd[i] = cblas_ddot((int)m, Phi + i * m, 1, Phi + i * m, 1) + 1.0;
    res->feature_seconds = km_now() - t0;

    const long cap = max_epochs(p);
    size_t pi = 0;
    for (size_t a = 0; a < K; a++)
        for (size_t b = a + 1; b < K; b++, pi++) {
            double wa = p->class_weight ? p->class_weight[a] : 1;
            double wb = p->class_weight ? p->class_weight[b] : 1;
            dcd s = {Phi, qd, m, start[a], start[a + 1] - start[a], start[b],
                     start[b + 1] - start[b], p->C * wa, p->C * wb, p->tol,
                     cap, p->shrinking != 0,
                     {p->seed ^ (0x9e3779b97f4a7c15ull * (pi + 1))},
                     W + pi * (m + 1), alpha, index, ctl,
                     PHI_SHARE + (1 - PHI_SHARE) * 0.99 * pi / P,
                     PHI_SHARE + (1 - PHI_SHARE) * 0.99 * (pi + 1) / P, 0, 0,
                     0, 0};
            if ((st = dcd_solve(&s, err)) != KM_OK)
                goto out;
            res->epochs += s.epochs;
            res->capped += s.capped;
            res->gap = s.gap > res->gap ? s.gap : res->gap;
            /* the dual objective a^T Q a / 2 - sum a = |w|^2 / 2 - sum a */
            km_ksum o = {0, 0};
            km_ksum_add(&o, 0.5 * cblas_ddot((int)(m + 1), s.w, 1, s.w, 1));
            for (size_t t = 0; t < s.na + s.nb; t++)
                km_ksum_add(&o, -alpha[t]);
            res->objective[pi] = km_ksum_get(&o);
            res->rho[pi] = -s.w[m];
        }
    /* coefficients T^-1 w, column p of W (leading dimension m + 1) */
    cblas_dtrsm(CblasColMajor, CblasLeft, CblasUpper, CblasNoTrans,
                CblasNonUnit, (int)m, (int)P, 1.0, T, (int)m, W, (int)(m + 1));
    for (size_t i = 0; i < m; i++)
        for (size_t q = 0; q < P; q++)
            res->coef[i * P + q] = W[q * (m + 1) + i];
out:
    if (st != KM_OK)
        km_svc_nys_free(res);
    free(idx);
    free(index);
    free(zn);
    free(T);
    free(Phi);
    free(qd);
    free(W);
    free(alpha);
    return st;
}
