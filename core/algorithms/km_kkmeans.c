/*
 * km_kkmeans.c - kernel k-means: Lloyd's iterations in feature space from
 * the Gram matrix alone, k-means++ seeding in feature space, restarts,
 * and the assignment of new points (the rules are in km.h).
 *
 * A fit holds the full n x n Gram matrix K (both triangles: every step
 * reads whole rows). The centroids are kept as a membership: cl[j] is the
 * cluster whose mean row j's features enter (-1: none, for the initial
 * single-row centres), with cnt[c] members. From it, one pass over K gives
 *   F[i][c] = sum_{j: cl[j] = c} K_ij          (n x k)
 *   C[c]    = (1/cnt_c^2) sum_{j: cl[j] = c} F[j][c] = |mu_c|^2
 * and the squared distance of row i to centroid c is
 *   K_ii - 2 F[i][c] / cnt_c + C[c].
 * A pass costs O(n^2) whatever k is. The shift of a centroid when its
 * members change from S to S' is |mu'|^2 - 2 <mu', mu> + |mu|^2, with
 * <mu', mu> = (1/(|S'| |S|)) sum_{j in S'} F_old[j][c]: the old F gives it
 * before the new one replaces it.
 *
 * The model keeps X, the final membership and C; predict computes
 * k(x, X) W with W[j][c] = 1/cnt_c for j in c (one km_kernel_expand pass)
 * and k(x, x) per row.
 *
 * Invariants of a model: 1 <= k <= n_samples, every cluster has at least
 * one member, C and X finite, n_outputs 1.
 *
 * Thread-safety: reentrant; a fitted model is only read.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../base/km_base_internal.h"
#include "../kernels/km_kernel_internal.h"
#include "../model/km_model_internal.h"
#include "km_algorithms_internal.h"
#include "km_kkmeans.h"

typedef struct kkm_payload {
    size_t n, d, k;
    double *X;      /* n x d training rows */
    int *member;    /* n: the cluster whose centroid row j enters */
    double *cconst; /* k: C_c = |mu_c|^2 */
    double *W;      /* n x k: 1/cnt_c at (j, member[j]) (derived) */
    double *xn;     /* n squared norms of X's rows (derived) */
} kkm_payload;

km_kkmeans_params km_kkmeans_params_default(void)
{
    km_kkmeans_params p = {1, 10, 300, 1e-4, 0};
    return p;
}

km_status km_kkmeans_check(const km_kkmeans_params *p, size_t n_samples,
                           km_error *err)
{
    /* As kpca's n_components: below 1 the parameter is invalid (400);
     * above n_samples it is valid but these data cannot have that many
     * clusters (422). */
    if (p->n_clusters < 1)
        return km_error_set(err, KM_EINVAL,
                            "params.n_clusters must be an integer >= 1");
    if (p->n_init < 1 || p->n_init > KM_KKMEANS_MAX_INIT)
        return km_error_set(err, KM_EINVAL, "params.n_init must be an "
                            "integer in 1..%d", KM_KKMEANS_MAX_INIT);
    if (p->max_iter < 1 || p->max_iter > KM_KKMEANS_MAX_ITER)
        return km_error_set(err, KM_EINVAL, "params.max_iter must be an "
                            "integer in 1..%d", KM_KKMEANS_MAX_ITER);
    if (!(p->tol >= 0) || !isfinite(p->tol))
        return km_error_set(err, KM_EINVAL,
                            "params.tol must be a finite number >= 0");
    if (p->seed > ((uint64_t)1 << 53))
        return km_error_set(err, KM_EINVAL,
                            "params.seed must be an integer in 0..2^53");
    if (p->n_clusters > n_samples)
        return km_error_set(err, KM_EPROBLEM,
                            "params.n_clusters (%zu) is above n_samples "
                            "(%zu): X has too few rows for that many "
                            "clusters", p->n_clusters, n_samples);
    return KM_OK;
}

size_t km_kkmeans_fit_bytes(size_t n, size_t d, const km_kkmeans_params *p)
{
    size_t k = p->n_clusters;
    if (n > ((size_t)1 << 26) || d > ((size_t)1 << 26) || k > n)
        return SIZE_MAX; /* far beyond any budget; avoids overflow */
    /* K; F; per row: membership, labels (current, previous, kept), the
     * distances and the seeding's buffers; per cluster: counts, C, the
     * shifts; then the model: X, membership, C, W and the norms. */
    size_t fit = n * n * 8 + n * k * 8 + n * (4 * 4 + 8 + 3 * 8) +
                 k * 8 * 8;
    size_t model = n * d * 8 + n * 4 + k * 8 + n * k * 8 + n * 8;
    return fit + model;
}

/* ------------------------------------------------------------ payload */

static void kkm_free(void *payload)
{
    kkm_payload *p = payload;
    if (!p)
        return;
    free(p->X);
    free(p->member);
    free(p->cconst);
    free(p->W);
    free(p->xn);
    free(p);
}

/* W and the norms from the membership; -1 when out of memory. */
static int derive(kkm_payload *p)
{
    size_t n = p->n, k = p->k;
    size_t *cnt = calloc(k, sizeof *cnt);
    free(p->W);
    free(p->xn);
    p->W = calloc(n * k, sizeof *p->W);
    p->xn = km_sqnorms(p->X, n, p->d);
    if (!cnt || !p->W || !p->xn) {
        free(cnt);
        return -1;
    }
    for (size_t j = 0; j < n; j++)
        cnt[p->member[j]]++;
    for (size_t j = 0; j < n; j++)
        p->W[j * k + (size_t)p->member[j]] =
            1.0 / (double)cnt[p->member[j]];
    free(cnt);
    return 0;
}

/* Payload format: u64 k; i32s member (n); f64s C (k); f64s X (n x d). */
static void kkm_save(const void *payload, const km_model *m, km_writer *w)
{
    const kkm_payload *p = payload;
    (void)m; /* the payload keeps its own sizes */
    km_write_u64(w, p->k);
    km_write_i32s(w, p->member, p->n);
    km_write_f64s(w, p->cconst, p->k);
    km_write_f64s(w, p->X, p->n * p->d);
}

/* KM_ECORRUPT unless every row's cluster is in [0, k) and every cluster
 * has a row, as a fit leaves them. */
static km_status check_members(const int *member, size_t n, size_t k,
                               km_error *err)
{
    unsigned char *seen = calloc(k, 1);
    if (!seen)
        return km_error_set(err, KM_ENOMEM, "out of memory reading a model");
    km_status st = KM_OK;
    for (size_t j = 0; j < n && st == KM_OK; j++) {
        if (member[j] < 0 || (size_t)member[j] >= k)
            st = km_error_set(err, KM_ECORRUPT, "model file: kernel k-means "
                              "row %zu is in cluster %d, not one of 0..%zu",
                              j, member[j], k - 1);
        else
            seen[member[j]] = 1;
    }
    for (size_t c = 0; c < k && st == KM_OK; c++)
        if (!seen[c])
            st = km_error_set(err, KM_ECORRUPT, "model file: kernel k-means "
                              "cluster %zu has no rows", c);
    free(seen);
    return st;
}

static km_status kkm_load(km_reader *r, const km_model *m, void **payload,
                          km_error *err)
{
    size_t n = km_model_n_samples(m), d = km_model_n_features(m);
    km_status st = KM_OK;
    uint64_t k = km_read_u64(r);
    if (r->failed || km_model_n_outputs(m) != 1 || k < 1 || k > n ||
        !km_mul3(n, k, 8) || !km_mul3(n, d, 8))
        return km_error_set(err, KM_ECORRUPT, "model file: bad kernel "
                            "k-means sizes (k %llu, n_samples %zu)",
                            (unsigned long long)k, n);
    kkm_payload *p = calloc(1, sizeof *p);
    if (!p)
        return km_error_set(err, KM_ENOMEM, "out of memory reading a model");
    p->n = n;
    p->d = d;
    p->k = (size_t)k;
    p->member = km_read_i32s(r, n);
    p->cconst = p->member ? km_read_f64s(r, p->k) : NULL;
    p->X = p->cconst ? km_read_f64s(r, n * d) : NULL;
    if (!p->X) {
        st = km_error_set(err, r->failed ? KM_ECORRUPT : KM_ENOMEM,
                          "model file: bad kernel k-means payload");
        goto out;
    }
    if ((st = check_members(p->member, n, p->k, err)) != KM_OK)
        goto out;
    /* What a prediction computes with must be finite, as a fit makes it. */
    if (!km_all_finite(p->cconst, p->k) || !km_all_finite(p->X, n * d)) {
        st = km_error_set(err, KM_ECORRUPT, "model file: kernel k-means "
                          "centroid constants or training rows are not all "
                          "finite numbers");
        goto out;
    }
    if (derive(p) != 0) {
        st = km_error_set(err, KM_ENOMEM, "out of memory reading a model");
        goto out;
    }
    *payload = p;
    p = NULL;
out:
    kkm_free(p);
    return st;
}

/* The heap of a payload of n rows, d features and k clusters: X, the
 * memberships, the centroid constants, W (n x k) and the norms. */
static size_t heap_bytes(uint64_t n, uint64_t d, uint64_t k)
{
    uint64_t v = km_add_sat(km_mul_sat(n, d),
                            km_add_sat(km_mul_sat(n, k), km_add_sat(n, k)));
    return (size_t)km_add_sat(km_add_sat(sizeof(kkm_payload),
                                         km_mul_sat(n, 4)),
                              km_mul_sat(v, 8));
}

static size_t kkm_bytes(const void *payload, const km_model *m)
{
    (void)m;
    const kkm_payload *p = payload;
    return heap_bytes(p->n, p->d, p->k);
}

/* k from the payload's start (at most n, as the load checks); while it
 * loads, check_members's marks and derive's counts too. */
static void kkm_load_bytes(km_reader r, const km_model *m, size_t *kept,
                           size_t *peak)
{
    uint64_t n = km_model_n_samples(m), k = km_read_u64(&r);
    k = k < 1 ? 1 : k > n ? n : k;
    *kept = heap_bytes(n, km_model_n_features(m), k);
    *peak = (size_t)km_add_sat(*kept, km_mul_sat(k, 1 + sizeof(size_t)));
}

/* ------------------------------------------------------------ Lloyd */

/* A fit's work space: K and what one run needs. */
typedef struct lloyd {
    const double *K;
    size_t n, k;
    double *F;      /* n x k */
    double *C;      /* k */
    double *C_old;  /* k */
    size_t *cnt;    /* k */
    size_t *cnt_old;/* k */
    double *cross;  /* k */
    int *cl;        /* n: centroid membership, -1: none */
    int *labels;    /* n: the last assignment */
    int *prev;      /* n: the one before it */
    double *mind;   /* n: squared distance to the assigned centroid */
} lloyd;

static void lloyd_cleanup(lloyd *L)
{
    free(L->F);
    free(L->C);
    free(L->C_old);
    free(L->cnt);
    free(L->cnt_old);
    free(L->cross);
    free(L->cl);
    free(L->labels);
    free(L->prev);
    free(L->mind);
    memset(L, 0, sizeof *L);
}

static km_status lloyd_init(lloyd *L, const double *K, size_t n, size_t k,
                            km_error *err)
{
    memset(L, 0, sizeof *L);
    L->K = K;
    L->n = n;
    L->k = k;
    L->F = malloc(n * k * sizeof *L->F);
    L->C = malloc(k * sizeof *L->C);
    L->C_old = malloc(k * sizeof *L->C_old);
    L->cnt = malloc(k * sizeof *L->cnt);
    L->cnt_old = malloc(k * sizeof *L->cnt_old);
    L->cross = malloc(k * sizeof *L->cross);
    L->cl = malloc(n * sizeof *L->cl);
    L->labels = malloc(n * sizeof *L->labels);
    L->prev = malloc(n * sizeof *L->prev);
    L->mind = malloc(n * sizeof *L->mind);
    if (!L->F || !L->C || !L->C_old || !L->cnt || !L->cnt_old ||
        !L->cross || !L->cl || !L->labels || !L->prev || !L->mind) {
        lloyd_cleanup(L);
        return km_error_set(err, KM_ENOMEM, "out of memory for kernel "
                            "k-means of %zu rows and %zu clusters", n, k);
    }
    return KM_OK;
}

/* F and C from the membership cl and the counts cnt. */
static void centroid_terms(lloyd *L)
{
    size_t n = L->n, k = L->k;
    memset(L->F, 0, n * k * sizeof *L->F);
    for (size_t i = 0; i < n; i++) {
        const double *Ki = L->K + i * n;
        double *Fi = L->F + i * k;
        for (size_t j = 0; j < n; j++)
            if (L->cl[j] >= 0)
                Fi[L->cl[j]] += Ki[j];
    }
    for (size_t c = 0; c < k; c++)
        L->C[c] = 0;
    for (size_t j = 0; j < n; j++)
        if (L->cl[j] >= 0)
            L->C[L->cl[j]] += L->F[j * k + (size_t)L->cl[j]];
    for (size_t c = 0; c < k; c++)
        L->C[c] /= (double)L->cnt[c] * (double)L->cnt[c];
}

/* Every row to its nearest centroid (the lowest index on ties): labels
 * and mind. */
static void assign(lloyd *L)
{
    size_t n = L->n, k = L->k;
    for (size_t i = 0; i < n; i++) {
        const double *Fi = L->F + i * k;
        double kii = L->K[i * n + i], best = HUGE_VAL;
        int arg = 0;
        for (size_t c = 0; c < k; c++) {
            double dist = kii - 2.0 * Fi[c] / (double)L->cnt[c] + L->C[c];
            if (dist < best) {
                best = dist;
                arg = (int)c;
            }
        }
        L->labels[i] = arg;
        L->mind[i] = best;
    }
}

/* The membership of the next centroids: the assignment, then each empty
 * cluster in turn takes the row farthest from its centroid among the rows
 * of clusters with at least two (km.h). Returns how many moved. */
static size_t update_members(lloyd *L)
{
    size_t n = L->n, k = L->k, moved = 0;
    memcpy(L->cl, L->labels, n * sizeof *L->cl);
    for (size_t c = 0; c < k; c++)
        L->cnt[c] = 0;
    for (size_t j = 0; j < n; j++)
        L->cnt[L->cl[j]]++;
    for (size_t c = 0; c < k; c++) {
        if (L->cnt[c])
            continue;
        size_t far = n;
        for (size_t j = 0; j < n; j++)
            if (L->cnt[L->cl[j]] >= 2 &&
                (far == n || L->mind[j] > L->mind[far]))
                far = j;
        /* k <= n leaves a donor for every empty cluster */
        L->cnt[L->cl[far]]--;
        L->cl[far] = (int)c;
        L->cnt[c] = 1;
        moved++;
    }
    return moved;
}

/* How far a run has come, for progress: runs r of nr, iteration it. */
static double run_fraction(size_t r, size_t nr, size_t it, size_t max_iter)
{
    return 0.1 + 0.9 * ((double)r + (double)it / (double)max_iter) /
                     (double)nr;
}

/*
 * One run from the centres init (k rows), as km.h says. tol_abs is tol
 * times the mean variance per feature. Leaves in L: labels (the final
 * assignment), mind, and the final centroids' cl, cnt, C; *inertia and
 * *n_iter. Progress through ctl between iterations of run r of nr.
 */
static km_status run(lloyd *L, const size_t *init, size_t max_iter,
                     double tol_abs, const km_fit_control *ctl, size_t r,
                     size_t nr, double *inertia, size_t *n_iter,
                     km_error *err)
{
    size_t n = L->n, k = L->k, it = 0, moved = 0;
    int strict = 0;
    for (size_t j = 0; j < n; j++) {
        L->cl[j] = -1;
        L->prev[j] = -1;
    }
    for (size_t c = 0; c < k; c++) {
        L->cl[init[c]] = (int)c;
        L->cnt[c] = 1;
    }
    centroid_terms(L);
    for (;;) {
        assign(L);
        it++;
        if (!moved && !memcmp(L->labels, L->prev, n * sizeof *L->prev)) {
            strict = 1;
            break;
        }
        memcpy(L->C_old, L->C, k * sizeof *L->C);
        memcpy(L->cnt_old, L->cnt, k * sizeof *L->cnt);
        moved = update_members(L);
        /* <mu', mu> from the old F, before it is replaced */
        for (size_t c = 0; c < k; c++)
            L->cross[c] = 0;
        for (size_t j = 0; j < n; j++)
            L->cross[L->cl[j]] += L->F[j * k + (size_t)L->cl[j]];
        centroid_terms(L);
        double shift = 0;
        for (size_t c = 0; c < k; c++)
            shift += L->C[c] - 2.0 * L->cross[c] /
                                   ((double)L->cnt[c] * (double)L->cnt_old[c]) +
                     L->C_old[c];
        if (it >= max_iter || shift <= tol_abs)
            break;
        memcpy(L->prev, L->labels, n * sizeof *L->prev);
        if (km_progress(ctl, run_fraction(r, nr, it, max_iter)))
            return km_error_set(err, KM_ECANCELLED, "fit cancelled");
    }
    if (!strict)
        assign(L); /* to the final centroids */
    km_ksum s = {0, 0};
    for (size_t i = 0; i < n; i++)
        km_ksum_add(&s, L->mind[i] > 0 ? L->mind[i] : 0.0);
    *inertia = km_ksum_get(&s);
    *n_iter = it;
    return KM_OK;
}

km_status km_kkmeans_plusplus(const double *K, size_t n, size_t k, km_rng *r,
                              size_t *centres, km_error *err)
{
    size_t trials = 2 + (size_t)log((double)k);
    double *closest = malloc(n * sizeof *closest);
    double *cum = malloc(n * sizeof *cum);
    double *cand = malloc(trials * n * sizeof *cand);
    size_t *ids = malloc(trials * sizeof *ids);
    if (!closest || !cum || !cand || !ids) {
        free(closest);
        free(cum);
        free(cand);
        free(ids);
        return km_error_set(err, KM_ENOMEM, "out of memory for k-means++");
    }
#define SQD(i, j) fmax(K[(i) * n + (i)] + K[(j) * n + (j)] - 2 * K[(i) * n + (j)], 0.0)
    size_t first = km_rng_below(r, n);
    centres[0] = first;
    double pot = 0;
    for (size_t j = 0; j < n; j++) {
        closest[j] = SQD(first, j);
        pot += closest[j];
    }
    for (size_t c = 1; c < k; c++) {
        double run_sum = 0;
        for (size_t j = 0; j < n; j++)
            cum[j] = (run_sum += closest[j]);
        size_t best = 0;
        double best_pot = HUGE_VAL;
        for (size_t t = 0; t < trials; t++) {
            double u = 0.5 * (1.0 + km_rng_uniform(r)) * pot;
            /* the first j with cum[j] >= u (numpy's searchsorted) */
            size_t lo = 0, hi = n;
            while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (cum[mid] < u)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            ids[t] = lo < n ? lo : n - 1;
            double p = 0, *row = cand + t * n;
            for (size_t j = 0; j < n; j++) {
                double dj = SQD(ids[t], j);
                row[j] = dj < closest[j] ? dj : closest[j];
                p += row[j];
            }
            if (p < best_pot) {
                best_pot = p;
                best = t;
            }
        }
#undef SQD
        pot = best_pot;
        memcpy(closest, cand + best * n, n * sizeof *closest);
        centres[c] = ids[best];
    }
    free(closest);
    free(cum);
    free(cand);
    free(ids);
    return KM_OK;
}

/* tol times the mean variance per feature: trace(H K H) / (n d) =
 * (mean of K's diagonal - mean of K) / d. */
static double tol_scale(const double *K, size_t n, size_t d, double tol)
{
    km_ksum diag = {0, 0}, all = {0, 0};
    for (size_t i = 0; i < n; i++) {
        km_ksum row = {0, 0};
        for (size_t j = 0; j < n; j++)
            km_ksum_add(&row, K[i * n + j]);
        km_ksum_add(&all, km_ksum_get(&row));
        km_ksum_add(&diag, K[i * n + i]);
    }
    double var = km_ksum_get(&diag) / (double)n -
                 km_ksum_get(&all) / ((double)n * (double)n);
    return tol * (var > 0 ? var : 0) / (double)d;
}

/* The params and training figures of a fitted model. */
static km_status add_figures(km_model *m, const km_kkmeans_params *p,
                             double inertia, const int *labels, size_t n,
                             size_t n_iter, size_t best, km_error *err)
{
    size_t k = p->n_clusters;
    double *sizes = calloc(k, sizeof *sizes);
    km_info *pi = km_model_params_mut(m), *ti = km_model_training_mut(m);
    if (sizes)
        for (size_t i = 0; i < n; i++)
            sizes[labels[i]] += 1;
    if (!sizes ||
        km_info_add1(pi, "n_clusters", KM_INFO_INTEGER, (double)k) ||
        km_info_add1(pi, "n_init", KM_INFO_INTEGER, (double)p->n_init) ||
        km_info_add1(pi, "max_iter", KM_INFO_INTEGER, (double)p->max_iter) ||
        km_info_add1(pi, "tol", KM_INFO_NUMBER, p->tol) ||
        km_info_add1(pi, "seed", KM_INFO_INTEGER, (double)p->seed) ||
        km_info_add1(ti, "inertia", KM_INFO_NUMBER, inertia) ||
        km_info_add(ti, "cluster_sizes", KM_INFO_INTEGER, 1, sizes, k) ||
        km_info_add1(ti, "n_iter", KM_INFO_INTEGER, (double)n_iter) ||
        km_info_add1(ti, "best_init", KM_INFO_INTEGER, (double)best)) {
        free(sizes);
        return km_error_set(err, KM_ENOMEM, "out of memory for the model");
    }
    free(sizes);
    return KM_OK;
}

/* The fit: the runs from k-means++ centres, or the one run from init. */
static km_status fit_runs(const km_kernel *kernel, const km_kkmeans_params *p,
                          const double *X, size_t n, size_t d,
                          const size_t *init, const km_fit_control *ctl,
                          km_model **out, km_error *err)
{
    km_problem problem = {X, n, d, NULL, 0, NULL, 0};
    km_fit_frame fr;
    double *K = NULL;
    size_t *centres = NULL;
    int *best_labels = NULL;
    kkm_payload *pl = NULL;
    km_model *model = NULL;
    lloyd L;
    memset(&L, 0, sizeof L);
    km_status st = km_fit_begin(&fr, KM_ALGO_KKMEANS, kernel, p, &problem,
                                err);
    if (st != KM_OK)
        goto out;
    size_t k = p->n_clusters, nr = init ? 1 : p->n_init;
    for (size_t c = 0; init && c < k; c++)
        if (init[c] >= n) {
            st = km_error_set(err, KM_EINVAL, "init[%zu] = %zu is not a row "
                              "of X (%zu rows)", c, init[c], n);
            goto out;
        }
    K = malloc(n * n * sizeof *K);
    centres = malloc(k * sizeof *centres);
    best_labels = malloc(n * sizeof *best_labels);
    pl = calloc(1, sizeof *pl);
    if (!K || !centres || !best_labels || !pl) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for a %zu x %zu "
                          "kernel matrix", n, n);
        goto out;
    }
    pl->n = n;
    pl->d = d;
    pl->k = k;
    pl->X = malloc(n * d * sizeof *pl->X);
    pl->member = malloc(n * sizeof *pl->member);
    pl->cconst = malloc(k * sizeof *pl->cconst);
    if (!pl->X || !pl->member || !pl->cconst) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for the model");
        goto out;
    }
    memcpy(pl->X, X, n * d * sizeof *X);
    if (km_progress(ctl, 0.0)) {
        st = km_error_set(err, KM_ECANCELLED, "fit cancelled");
        goto out;
    }
    if ((st = km_gram_sym(&fr.k, X, n, d, K, 1, err)) != KM_OK)
        goto out;
    if (!km_all_finite(K, n * n)) {
        st = km_error_set(err, KM_EPROBLEM, "the kernel matrix has values "
                          "that are not finite numbers (overflow); use a "
                          "smaller gamma, degree or scale of X");
        goto out;
    }
    if ((st = lloyd_init(&L, K, n, k, err)) != KM_OK)
        goto out;
    double tol_abs = tol_scale(K, n, d, p->tol), best_inertia = HUGE_VAL;
    size_t best = 0, best_iter = 0;
    km_rng rng = {p->seed};
    for (size_t r = 0; r < nr; r++) {
        if (km_progress(ctl, run_fraction(r, nr, 0, 1))) {
            st = km_error_set(err, KM_ECANCELLED, "fit cancelled");
            goto out;
        }
        if (init)
            memcpy(centres, init, k * sizeof *centres);
        else if ((st = km_kkmeans_plusplus(K, n, k, &rng, centres, err)) !=
                 KM_OK)
            goto out;
        double inertia = 0;
        size_t n_iter = 0;
        if ((st = run(&L, centres, p->max_iter, tol_abs, ctl, r, nr,
                      &inertia, &n_iter, err)) != KM_OK)
            goto out;
        if (inertia < best_inertia || r == 0) {
            best_inertia = inertia;
            best = r;
            best_iter = n_iter;
            memcpy(best_labels, L.labels, n * sizeof *best_labels);
            memcpy(pl->member, L.cl, n * sizeof *pl->member);
            memcpy(pl->cconst, L.C, k * sizeof *pl->cconst);
        }
    }
    lloyd_cleanup(&L);
    free(K);
    K = NULL;
    if (!km_all_finite(pl->cconst, k) || !isfinite(best_inertia)) {
        st = km_error_set(err, KM_EPROBLEM, "the centroids' norms are not "
                          "finite numbers (overflow); use a smaller gamma, "
                          "degree or scale of X");
        goto out;
    }
    if (derive(pl) != 0) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for the model");
        goto out;
    }
    st = km_fit_model(&fr, d, n, 1, pl, &model, err);
    pl = NULL; /* owned by the model now, also on failure */
    if (st != KM_OK ||
        (st = add_figures(model, p, best_inertia, best_labels, n, best_iter,
                          best, err)) != KM_OK)
        goto out;
    km_progress(ctl, 1.0);
    *out = model;
    model = NULL;
out:
    km_model_free(model);
    kkm_free(pl);
    lloyd_cleanup(&L);
    free(best_labels);
    free(centres);
    free(K);
    km_fit_cleanup(&fr);
    return st;
}

km_status km_kkmeans_fit(const km_kernel *k, const km_kkmeans_params *p,
                         const double *X, size_t n, size_t d,
                         const km_fit_control *ctl, km_model **out,
                         km_error *err)
{
    return fit_runs(k, p, X, n, d, NULL, ctl, out, err);
}

km_status km_kkmeans_fit_init(const km_kernel *k, const km_kkmeans_params *p,
                              const double *X, size_t n, size_t d,
                              const size_t *init, const km_fit_control *ctl,
                              km_model **out, km_error *err)
{
    return fit_runs(k, p, X, n, d, init, ctl, out, err);
}

/* ------------------------------------------------------------ use */

size_t km_kkmeans_n_clusters(const km_model *m)
{
    if (km_model_algorithm(m) != KM_ALGO_KKMEANS)
        return 0;
    return ((const kkm_payload *)km_model_payload(m))->k;
}

/* The distances of X's rows (checked) to the centroids into out (n x k). */
static km_status distances(const km_model *m, const double *X, size_t n,
                           double *out, km_error *err)
{
    const kkm_payload *p = km_model_payload(m);
    const km_kernel *kern = km_model_kernel(m);
    size_t k = p->k, d = p->d;
    km_status st = km_kernel_expand(kern, p->X, p->n, d, p->xn, p->W, k,
                                    NULL, X, n, out, err);
    for (size_t i = 0; st == KM_OK && i < n; i++) {
        double kxx = km_kernel_eval(kern, X + i * d, X + i * d, d);
        for (size_t c = 0; c < k; c++)
            out[i * k + c] = kxx - 2.0 * out[i * k + c] + p->cconst[c];
    }
    return st;
}

km_status km_kkmeans_distances(const km_model *m, const double *X, size_t n,
                               double *out, km_error *err)
{
    km_status st = km_model_expect_input(m, KM_ALGO_KKMEANS, "distances", X,
                                         n, err);
    return st != KM_OK ? st : distances(m, X, n, out, err);
}

/* Nearest centroids (labels, may be NULL) and the clamped sum of the
 * squared distances (inertia, may be NULL) of X's checked rows, in blocks
 * of KM_KKMEANS_PREDICT_BLOCK distances (at least one row). */
static km_status nearest(const km_model *m, const double *X, size_t n,
                         int *labels, double *inertia, km_error *err)
{
    size_t k = km_kkmeans_n_clusters(m), d = km_model_n_features(m);
    size_t b = KM_KKMEANS_PREDICT_BLOCK / k ? KM_KKMEANS_PREDICT_BLOCK / k : 1;
    if (b > n)
        b = n;
    double *D = malloc((b ? b : 1) * k * sizeof *D);
    if (!D)
        return km_error_set(err, KM_ENOMEM, "out of memory for %zu "
                            "predictions", n);
    km_status st = KM_OK;
    km_ksum s = {0, 0};
    for (size_t r = 0; r < n && st == KM_OK; r += b) {
        size_t len = n - r < b ? n - r : b;
        st = distances(m, X + r * d, len, D, err);
        for (size_t i = 0; st == KM_OK && i < len; i++) {
            const double *Di = D + i * k;
            size_t arg = 0;
            for (size_t c = 1; c < k; c++)
                if (Di[c] < Di[arg])
                    arg = c;
            if (labels)
                labels[r + i] = (int)arg;
            km_ksum_add(&s, Di[arg] > 0 ? Di[arg] : 0.0);
        }
    }
    free(D);
    if (st == KM_OK && inertia)
        *inertia = km_ksum_get(&s);
    return st;
}

km_status km_kkmeans_predict(const km_model *m, const double *X, size_t n,
                             int *labels, km_error *err)
{
    km_status st = km_model_expect_input(m, KM_ALGO_KKMEANS, "predict", X, n,
                                         err);
    return st != KM_OK ? st : nearest(m, X, n, labels, NULL, err);
}

km_status km_kkmeans_score(const km_model *m, const double *X, size_t n,
                           int *labels, double *inertia, km_error *err)
{
    km_status st = km_model_expect_input(m, KM_ALGO_KKMEANS, "score", X, n,
                                         err);
    if (st != KM_OK)
        return st;
    const km_pre_stats *s = km_model_pre(m);
    if (!s->x_shift)
        return nearest(m, X, n, labels, inertia, err);
    /* scaled a block of rows at a time, as km_pre.c's predicts */
    size_t d = km_model_n_features(m);
    size_t b = ((size_t)1 << 17) / d ? ((size_t)1 << 17) / d : 1;
    if (b > n)
        b = n;
    double *T = malloc(b * d * sizeof *T);
    if (!T)
        return km_error_set(err, KM_ENOMEM, "out of memory for X's scaled "
                            "copy");
    km_ksum sum = {0, 0};
    for (size_t r = 0; r < n && st == KM_OK; r += b) {
        size_t len = n - r < b ? n - r : b;
        double part = 0;
        st = km_pre_transform(s, X + r * d, len, d, r, T, err);
        if (st == KM_OK)
            st = nearest(m, T, len, labels ? labels + r : NULL, &part, err);
        km_ksum_add(&sum, part);
    }
    free(T);
    if (st == KM_OK && inertia)
        *inertia = km_ksum_get(&sum);
    return st;
}

/* ------------------------------------------------------------ descriptor */

static void params_default(void *params)
{
    *(km_kkmeans_params *)params = km_kkmeans_params_default();
}

static uint64_t max_outputs(uint64_t ns)
{
    (void)ns;
    return 1; /* one cluster id per row */
}

/* k, member, C (1 .. n_samples values), X. */
static void payload_range(uint32_t format, uint64_t ns, uint64_t nf,
                          uint64_t no, uint64_t *lo, uint64_t *hi)
{
    (void)format; /* one layout in every version */
    (void)no;
    uint64_t base = km_add_sat(km_add_sat(8, km_add_sat(8, km_mul_sat(4, ns))),
                               km_f64s_bytes(km_mul_sat(ns, nf)));
    *lo = km_add_sat(base, km_f64s_bytes(1));
    *hi = km_add_sat(base, km_f64s_bytes(ns));
}

static km_status check(const void *params, const km_problem *pb,
                       km_error *err)
{
    return km_kkmeans_check(params, pb->n, err);
}

static size_t fit_bytes(const void *params, const km_problem *pb)
{
    return km_kkmeans_fit_bytes(pb->n, pb->d, params);
}

static km_status fit(const km_kernel *k, const void *params,
                     const km_problem *pb, const km_fit_control *ctl,
                     km_model **out, km_error *err)
{
    return km_kkmeans_fit(k, params, pb->X, pb->n, pb->d, ctl, out, err);
}

/* ------------------------------------------------------------ params
 *
 * The keys a request's params may give (km_param, km_base.h): their
 * types, bounds, choices, the solver values they apply with and docs,
 * read by the API through km_algorithm_params. */

/* n_clusters: its type and lower bound here (400); its upper bound,
 * n_samples, in km_kkmeans_check (422), as kpca's n_components. */
static const km_param kkmeans_rows[] = {
    {.key = "n_clusters", .type = KM_PARAM_INTEGER,
     KM_PARAM_FIELD(km_kkmeans_params, n_clusters),
     .range = KM_PARAM_RANGE_READER, .min = 1,
     .max = INT_MAX, .required = 1,
     .data_bound = "the number of rows of X",
     .doc = "clusters k; above n_samples is 422"},
    {.key = "n_init", .type = KM_PARAM_INTEGER,
     KM_PARAM_FIELD(km_kkmeans_params, n_init),
     .range = KM_PARAM_RANGE_READER, .min = 1, .max = KM_KKMEANS_MAX_INIT,
     .doc = "runs from different k-means++ centres; the one of lowest "
            "inertia is kept"},
    {.key = "max_iter", .type = KM_PARAM_INTEGER,
     KM_PARAM_FIELD(km_kkmeans_params, max_iter),
     .range = KM_PARAM_RANGE_READER, .min = 1,
     .max = KM_KKMEANS_MAX_ITER, .doc = "most assignments per run"},
    {.key = "tol", .type = KM_PARAM_NUMBER,
     KM_PARAM_FIELD(km_kkmeans_params, tol),
     .range = KM_PARAM_RANGE_CHECK, .min = 0, .max = HUGE_VAL,
     .doc = "stop when the centroids' squared shift in feature space is at "
            "most tol times the mean variance per input feature"},
    {.key = "seed", .type = KM_PARAM_INTEGER,
     KM_PARAM_FIELD(km_kkmeans_params, seed),
     .range = KM_PARAM_RANGE_READER, .min = 0, .max = 2147483647,
     .doc = "seed of the k-means++ draws (core's PRNG)"},
    {0},
};

static const km_param_set param_set = {kkmeans_rows, sizeof(km_kkmeans_params),
                                        params_default};

/* KernelKMeans's X_fit_ and labels_ (each training row's cluster), and
 * each centroid's squared norm |mu_c|^2. */
static size_t kkm_coefs(const km_model *m, km_coef *out)
{
    const kkm_payload *p = km_model_payload(m);
    out[0] = km_coef_input_rows(m, "X_fit_", p->X, p->n, p->d,
                                KM_COEF_ROWS_ALL);
    out[1] = km_coef_i32("labels_", p->member, p->n, 1);
    out[2] = km_coef_f64("cluster_sq_norms_", p->cconst, p->k, 0, 0);
    return 3;
}

const km_algo km_kkmeans_algo = {
    .outputs = KM_OUT_CLUSTERS,
    .self_of_new = 1,
    .params = &param_set,
    .check = check,
    .fit_bytes = fit_bytes,
    .fit = fit,
    .labels = km_kkmeans_predict,
    .max_outputs = max_outputs,
    .payload_range = payload_range,
    .free_payload = kkm_free,
    .save = kkm_save,
    .load = kkm_load,
    .bytes = kkm_bytes,
    .load_bytes = kkm_load_bytes,
    .target = KM_TARGET_NONE,
    .coefs = kkm_coefs,
};
