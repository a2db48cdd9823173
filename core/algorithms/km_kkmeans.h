/*
 * km_kkmeans.h - kernel k-means (algorithms/km_kkmeans.c).
 *
 * Part of libkm's public interface; include km.h, which includes every
 * area. Conventions and thread-safety as km.h says.
 */
#ifndef KM_KKMEANS_H
#define KM_KKMEANS_H

#include "../model/km_model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- kernel k-means */

/*
 * Kernel k-means: Lloyd's iterations in the kernel's feature space, from
 * the Gram matrix K alone. A centroid is the mean of its member rows'
 * features, mu_c = (1/|S_c|) sum_{j in S_c} phi(x_j), so the squared
 * distance of a point x to it is
 *     k(x, x) - (2/|S_c|) sum_{j in S_c} k(x, x_j) + C_c,
 *     C_c = |mu_c|^2 = (1/|S_c|^2) sum_{j, l in S_c} K_jl.
 * One run, from k initial centres (rows of X): repeat { assign every row
 * to its nearest centroid (the lowest index on ties); the centroids
 * become the means of their rows } as scikit-learn's KMeans(algorithm=
 * "lloyd"): it stops when an assignment repeats the previous one, or when
 * the sum over clusters of |mu_c(new) - mu_c(old)|^2 is at most tol times
 * the mean variance per input feature, trace(H K H) / (n d) (scikit-
 * learn's rule, exactly, for the linear kernel), or after max_iter
 * assignments; in the last two cases the rows are assigned once more to
 * the final centroids. So with the linear kernel and the same initial
 * centres, the assignments, iteration count and inertia are those of
 * KMeans(init=centres, n_init=1, algorithm="lloyd").
 *
 * A cluster left empty by an assignment takes the row farthest from its
 * own centroid (the largest squared distance; the lowest index on ties)
 * among the rows of clusters that keep at least one other row: that row
 * alone is the empty cluster's new centroid (scikit-learn relocates the
 * same way). Empty clusters are taken in index order.
 *
 * Initial centres: greedy k-means++ in feature space, as scikit-learn's
 * (2 + floor(ln k) candidates per centre, the one that lowers the
 * potential most is kept), drawing from core's km_rng seeded with
 * params.seed: the first centre is row km_rng_below(n), each candidate
 * the first row whose cumulative squared distance reaches u times the
 * potential, u = (1 + km_rng_uniform) / 2. The n_init runs draw from one
 * generator in turn; the run of lowest inertia is kept (the first of
 * equal ones).
 */
typedef struct km_kkmeans_params {
    size_t n_clusters; /* k, 1 .. n_samples; required (default 1) */
    size_t n_init;     /* runs from different centres, 1 .. 1000;
                          default 10 */
    size_t max_iter;   /* assignments per run, 1 .. 100000; default 300 */
    double tol;        /* >= 0, default 1e-4 */
    uint64_t seed;     /* of the centres' draw, 0 .. 2^53; default 0 */
} km_kkmeans_params;

#define KM_KKMEANS_MAX_INIT 1000
/* Distances a predict holds at once: rows of k values, at least one. */
#define KM_KKMEANS_PREDICT_BLOCK ((size_t)1 << 16)
#define KM_KKMEANS_MAX_ITER 100000

km_kkmeans_params km_kkmeans_params_default(void);
/* KM_EINVAL naming the field: params.n_clusters below 1, params.n_init
 * outside 1..KM_KKMEANS_MAX_INIT, params.max_iter outside
 * 1..KM_KKMEANS_MAX_ITER, params.tol not a finite number >= 0,
 * params.seed above 2^53; KM_EPROBLEM (422 in the API) for
 * params.n_clusters above n_samples. */
km_status km_kkmeans_check(const km_kkmeans_params *p, size_t n_samples,
                           km_error *err) KM_MUST_CHECK;

/*
 * Fits kernel k-means on X (n x d). Borrows all inputs; caller owns *out.
 * The model keeps the training rows, each row's centroid (the clusters
 * whose means are the final centroids) and the constants C_c; predict
 * (km_kkmeans_predict, or km_predict_labels) assigns new rows to the
 * nearest centroid. Peak memory: the n x n Gram matrix and O(n k)
 * (km_kkmeans_fit_bytes).
 *
 * Params figures: "n_clusters", "n_init", "max_iter", "tol", "seed".
 * Training figures: "seconds"; "inertia" (the sum over the training rows
 * of the squared distance to their cluster's centroid, each clamped at
 * 0); "cluster_sizes" (k: rows of each cluster in the final assignment);
 * "n_iter" (assignments of the kept run, as scikit-learn's n_iter_);
 * "best_init" (which run was kept, from 0). KM_ECANCELLED when ctl asks.
 */
km_status km_kkmeans_fit(const km_kernel *k, const km_kkmeans_params *p,
                         const double *X, size_t n, size_t d,
                         const km_fit_control *ctl, km_model **out,
                         km_error *err) KM_MUST_CHECK;
/* Cluster ids (labels[n], 0 .. k-1) of X's rows: the nearest centroid,
 * the lowest id on ties. KM_ECONFLICT if not kkmeans. */
km_status km_kkmeans_predict(const km_model *m, const double *X, size_t n,
                             int *labels, km_error *err) KM_MUST_CHECK;
/* Squared feature-space distances of X's rows to the k centroids: out
 * (n x k, caller-allocated), not clamped. */
km_status km_kkmeans_distances(const km_model *m, const double *X, size_t n,
                               double *out, km_error *err) KM_MUST_CHECK;
/* The score of rows X: their cluster ids (labels, n; may be NULL) and
 * *inertia, the sum of their squared distances to the nearest centroid
 * (each clamped at 0), through the model's preprocessing as
 * km_predict_labels. */
km_status km_kkmeans_score(const km_model *m, const double *X, size_t n,
                           int *labels, double *inertia,
                           km_error *err) KM_MUST_CHECK;
/* k; 0 for a model that is not kkmeans. */
size_t km_kkmeans_n_clusters(const km_model *m);
/* Bytes a fit of this size needs at its peak (for admission control). */
size_t km_kkmeans_fit_bytes(size_t n, size_t d, const km_kkmeans_params *p);

#ifdef __cplusplus
}
#endif
#endif /* KM_KKMEANS_H */
