/*
 * test_km_kkmeans.c - kernel k-means (km_kkmeans.c) against independent
 * references (tests/fixtures/gen_kkmeans_refs.py): with the linear kernel
 * and the same initial centres, scikit-learn's KMeans(init=centres,
 * n_init=1, algorithm="lloyd") in four stopping settings (assignments
 * equal, n_iter equal, inertia to 1e-10 relative, predictions of new
 * rows equal); with rbf, Lloyd in feature space written in numpy (the
 * same, and the distances of new rows to the centroids to 1e-10);
 * k-means++ with core's PRNG written in numpy (the same centres) and
 * n_init keeping the run of lowest inertia; the adjusted Rand index
 * against sklearn.metrics.adjusted_rand_score to 1e-12. Then the empty
 * cluster's relocation on a case computed by hand, seeds, the checks'
 * messages, progress and cancel, km_fit equal to km_kkmeans_fit to the
 * bit, scores through a preprocessing, and model files: a round trip
 * answers the same, corrupt payloads are refused.
 */
#include <math.h>
#include <string.h>

#include "../check_main.h"
#include "km.h"
#include "algorithms/km_algorithms_internal.h"
#include "model_bytes.h"

enum { N = 300, DIM = 3, NT = 50, KC = 5, CONFIGS = 4 };
static const double tols[CONFIGS] = {1e-4, 0.0, 1e-4, 1e-2};
static const size_t iters[CONFIGS] = {300, 300, 2, 300};

typedef struct fixture {
    double *X, *T;
    size_t init[KC];
} fixture;

static fixture load(void)
{
    fixture f;
    size_t n;
    f.X = km_read_fixture("kkm_X.txt", &n);
    ck_assert_uint_eq(n, N * DIM);
    f.T = km_read_fixture("kkm_T.txt", &n);
    ck_assert_uint_eq(n, NT * DIM);
    double *init = km_read_fixture("kkm_init.txt", &n);
    ck_assert_uint_eq(n, KC);
    for (size_t c = 0; c < KC; c++)
        f.init[c] = (size_t)init[c];
    free(init);
    return f;
}

static void unload(fixture *f)
{
    free(f->X);
    free(f->T);
}

static km_kkmeans_params params(size_t k, double tol, size_t max_iter)
{
    km_kkmeans_params p = km_kkmeans_params_default();
    p.n_clusters = k;
    p.tol = tol;
    p.max_iter = max_iter;
    return p;
}

static const km_info_entry *figure(const km_model *m, const char *key)
{
    const km_info_entry *e = km_info_find(km_model_training(m), key);
    ck_assert_msg(e != NULL, "no figure %s", key);
    return e;
}

/* The fit from the fixture's centres in each setting against the
 * reference's labels (checked through predict on X: the final
 * assignment), inertia and n_iter. */
static void against_refs(km_kernel_type type, double gamma,
                         const char *labels_file, const char *ref_file,
                         km_model **first)
{
    fixture f = load();
    size_t n;
    double *labels = km_read_fixture(labels_file, &n);
    ck_assert_uint_eq(n, CONFIGS * N);
    double *ref = km_read_fixture(ref_file, &n);
    ck_assert_uint_eq(n, 2 * CONFIGS);
    km_kernel k = km_test_kernel(type, gamma);
    km_error err;
    for (int c = 0; c < CONFIGS; c++) {
        km_kkmeans_params p = params(KC, tols[c], iters[c]);
        km_model *m = NULL;
        ck_assert_int_eq(km_kkmeans_fit_init(&k, &p, f.X, N, DIM, f.init,
                                             NULL, &m, &err), KM_OK);
        double inertia = figure(m, "inertia")->values[0];
        ck_assert_msg(fabs(inertia - ref[2 * c]) <= 1e-10 * ref[2 * c],
                      "setting %d: inertia %.17g, reference %.17g", c,
                      inertia, ref[2 * c]);
        ck_assert_msg(figure(m, "n_iter")->values[0] == ref[2 * c + 1],
                      "setting %d: n_iter %g, reference %g", c,
                      figure(m, "n_iter")->values[0], ref[2 * c + 1]);
        /* the final assignment: cluster sizes, and predict on X */
        int got[N];
        double sizes[KC] = {0};
        ck_assert_int_eq(km_kkmeans_predict(m, f.X, N, got, &err), KM_OK);
        for (size_t i = 0; i < N; i++) {
            ck_assert_msg(got[i] == (int)labels[c * N + i], "setting %d: "
                          "row %zu in cluster %d, reference %g", c, i, got[i],
                          labels[c * N + i]);
            sizes[got[i]] += 1;
        }
        const km_info_entry *cs = figure(m, "cluster_sizes");
        ck_assert_uint_eq(cs->count, KC);
        ck_assert_mem_eq(cs->values, sizes, sizeof sizes);
        /* the score of the training rows is the training inertia */
        double again;
        ck_assert_int_eq(km_kkmeans_score(m, f.X, N, NULL, &again, &err),
                         KM_OK);
        ck_assert_double_le(fabs(again - inertia), 1e-10 * inertia);
        if (c == 0)
            *first = m;
        else
            km_model_free(m);
    }
    free(labels);
    free(ref);
    unload(&f);
}

/* a and b answer rows T the same, to the bit: distances, cluster ids
 * and the inertia figure. */
static void same_answers(const km_model *a, const km_model *b,
                         const double *T)
{
    double da[NT * KC], db[NT * KC];
    int la[NT], lb[NT];
    ck_assert_int_eq(km_kkmeans_distances(a, T, NT, da, NULL), KM_OK);
    ck_assert_int_eq(km_kkmeans_distances(b, T, NT, db, NULL), KM_OK);
    ck_assert_mem_eq(da, db, sizeof da);
    ck_assert_int_eq(km_predict_labels(a, T, NT, la, NULL), KM_OK);
    ck_assert_int_eq(km_predict_labels(b, T, NT, lb, NULL), KM_OK);
    ck_assert_mem_eq(la, lb, sizeof la);
    ck_assert_double_eq(figure(a, "inertia")->values[0],
                        figure(b, "inertia")->values[0]);
}

static void check_pred(const km_model *m, const char *file)
{
    fixture f = load();
    size_t n;
    double *want = km_read_fixture(file, &n);
    ck_assert_uint_eq(n, NT);
    int got[NT];
    ck_assert_int_eq(km_kkmeans_predict(m, f.T, NT, got, NULL), KM_OK);
    for (size_t i = 0; i < NT; i++)
        ck_assert_int_eq(got[i], (int)want[i]);
    /* km_predict_labels is the same answer */
    int gen[NT];
    ck_assert_int_eq(km_predict_labels(m, f.T, NT, gen, NULL), KM_OK);
    ck_assert_mem_eq(gen, got, sizeof got);
    free(want);
    unload(&f);
}

START_TEST(linear_equals_sklearn_lloyd)
{
    km_model *m = NULL;
    against_refs(KM_KERNEL_LINEAR, 0, "kkm_lin_labels.txt", "kkm_lin_ref.txt",
                 &m);
    check_pred(m, "kkm_lin_pred.txt");
    km_model_free(m);
}
END_TEST

START_TEST(rbf_equals_numpy_lloyd)
{
    km_model *m = NULL;
    against_refs(KM_KERNEL_RBF, 0.3, "kkm_rbf_labels.txt", "kkm_rbf_ref.txt",
                 &m);
    check_pred(m, "kkm_rbf_pred.txt");
    fixture f = load();
    size_t n;
    double *want = km_read_fixture("kkm_rbf_dist.txt", &n);
    ck_assert_uint_eq(n, NT * KC);
    double got[NT * KC];
    ck_assert_int_eq(km_kkmeans_distances(m, f.T, NT, got, NULL), KM_OK);
    double e = km_max_rel_err(got, want, NT * KC, 1.0);
    ck_assert_msg(e <= 1e-10, "distances differ by %g", e);
    free(want);
    unload(&f);
    km_model_free(m);
}
END_TEST

/* k-means++ draws the numpy reference's centres from core's PRNG; a fit
 * with n_init 3 keeps the run of lowest inertia. */
START_TEST(plusplus_and_n_init)
{
    fixture f = load();
    size_t n;
    double *centres = km_read_fixture("kkm_pp_centres.txt", &n);
    ck_assert_uint_eq(n, 3 * KC);
    double *ref = km_read_fixture("kkm_pp_ref.txt", &n);
    ck_assert_uint_eq(n, 5);
    double *labels = km_read_fixture("kkm_pp_labels.txt", &n);
    ck_assert_uint_eq(n, N);
    km_kernel k = km_test_kernel(KM_KERNEL_RBF, 0.3);
    double *K = malloc(N * N * sizeof *K);
    ck_assert_int_eq(km_gram_sym(&k, f.X, N, DIM, K, 1, NULL), KM_OK);
    km_rng r = {5};
    for (size_t run = 0; run < 3; run++) {
        size_t got[KC];
        ck_assert_int_eq(km_kkmeans_plusplus(K, N, KC, &r, got, NULL), KM_OK);
        for (size_t c = 0; c < KC; c++)
            ck_assert_uint_eq(got[c], (size_t)centres[run * KC + c]);
    }
    free(K);

    km_kkmeans_params p = params(KC, 1e-4, 300);
    p.n_init = 3;
    p.seed = 5;
    km_model *m = NULL;
    ck_assert_int_eq(km_kkmeans_fit(&k, &p, f.X, N, DIM, NULL, &m, NULL),
                     KM_OK);
    double best = fmin(fmin(ref[0], ref[1]), ref[2]);
    double inertia = figure(m, "inertia")->values[0];
    ck_assert_msg(fabs(inertia - best) <= 1e-10 * best, "inertia %.17g, the "
                  "lowest run's %.17g", inertia, best);
    ck_assert_double_eq(figure(m, "best_init")->values[0], ref[3]);
    ck_assert_double_eq(figure(m, "n_iter")->values[0], ref[4]);
    int got[N];
    ck_assert_int_eq(km_kkmeans_predict(m, f.X, N, got, NULL), KM_OK);
    for (size_t i = 0; i < N; i++)
        ck_assert_int_eq(got[i], (int)labels[i]);

    /* the same seed, the same model; another seed, other centres */
    km_model *again = NULL;
    ck_assert_int_eq(km_kkmeans_fit(&k, &p, f.X, N, DIM, NULL, &again, NULL),
                     KM_OK);
    same_answers(m, again, f.T);
    km_model_free(again);
    km_rng r6 = {6}, r5 = {5};
    size_t c5[KC], c6[KC];
    K = malloc(N * N * sizeof *K);
    ck_assert_int_eq(km_gram_sym(&k, f.X, N, DIM, K, 1, NULL), KM_OK);
    ck_assert_int_eq(km_kkmeans_plusplus(K, N, KC, &r5, c5, NULL), KM_OK);
    ck_assert_int_eq(km_kkmeans_plusplus(K, N, KC, &r6, c6, NULL), KM_OK);
    ck_assert(memcmp(c5, c6, sizeof c5) != 0);
    free(K);
    km_model_free(m);
    free(centres);
    free(ref);
    free(labels);
    unload(&f);
}
END_TEST

START_TEST(adjusted_rand_equals_sklearn)
{
    size_t nn, na, nb, nr;
    double *lens = km_read_fixture("kkm_ari_n.txt", &nn);
    double *a = km_read_fixture("kkm_ari_a.txt", &na);
    double *b = km_read_fixture("kkm_ari_b.txt", &nb);
    double *ref = km_read_fixture("kkm_ari_ref.txt", &nr);
    ck_assert_uint_eq(na, nb);
    ck_assert_uint_eq(nn, nr);
    size_t at = 0;
    for (size_t c = 0; c < nn; c++) {
        size_t len = (size_t)lens[c];
        int *x = malloc(len * sizeof *x), *y = malloc(len * sizeof *y);
        for (size_t i = 0; i < len; i++) {
            x[i] = (int)a[at + i];
            y[i] = (int)b[at + i];
        }
        double v = NAN, w = NAN;
        ck_assert_int_eq(km_score_adjusted_rand(x, y, len, &v, NULL), KM_OK);
        ck_assert_msg(fabs(v - ref[c]) <= 1e-12, "pair %zu: %.17g, sklearn "
                      "%.17g", c, v, ref[c]);
        /* symmetric */
        ck_assert_int_eq(km_score_adjusted_rand(y, x, len, &w, NULL), KM_OK);
        ck_assert_double_le(fabs(w - ref[c]), 1e-12);
        free(x);
        free(y);
        at += len;
    }
    ck_assert_uint_eq(at, na);
    int neg[2] = {0, -1};
    double v;
    km_error err;
    ck_assert_int_eq(km_score_adjusted_rand(neg, neg, 2, &v, &err), KM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "labels[1]"));
    free(lens);
    free(a);
    free(b);
    free(ref);
}
END_TEST

/* Rows 0 and 1 coincide and are both initial centres: every row goes to
 * cluster 0 (the lower index of a tie), cluster 1 is empty and takes the
 * row farthest from centroid 0, x = 10. Then {0, 0, 1, 2} and {10}:
 * inertia 2 (0.75)^2 + (0.25)^2 + (1.25)^2 = 2.75, after two
 * assignments (the second moves no centroid: shift 0 <= tol 0), as
 * scikit-learn's KMeans(init=X[[0, 1]], n_init=1, tol=0) gives. */
START_TEST(empty_cluster_relocation)
{
    double X[5] = {0, 0, 1, 2, 10};
    size_t init[2] = {0, 1};
    km_kernel k = km_test_kernel(KM_KERNEL_LINEAR, 0);
    km_kkmeans_params p = params(2, 0, 300);
    km_model *m = NULL;
    ck_assert_int_eq(km_kkmeans_fit_init(&k, &p, X, 5, 1, init, NULL, &m,
                                         NULL), KM_OK);
    ck_assert_double_eq_tol(figure(m, "inertia")->values[0], 2.75, 1e-12);
    ck_assert_double_eq(figure(m, "n_iter")->values[0], 2);
    const km_info_entry *cs = figure(m, "cluster_sizes");
    ck_assert_double_eq(cs->values[0], 4);
    ck_assert_double_eq(cs->values[1], 1);
    int got[5];
    ck_assert_int_eq(km_kkmeans_predict(m, X, 5, got, NULL), KM_OK);
    int want[5] = {0, 0, 0, 0, 1};
    ck_assert_mem_eq(got, want, sizeof want);
    km_model_free(m);

    /* k = n: every row its own cluster, inertia 0, from any centres */
    p = params(5, 1e-4, 300);
    p.n_init = 3;
    ck_assert_int_eq(km_kkmeans_fit(&k, &p, X, 5, 1, NULL, &m, NULL), KM_OK);
    /* rows 0 and 1 coincide: four distinct points in five clusters,
     * one cluster holds a copy; the inertia is 0 all the same */
    ck_assert_double_eq_tol(figure(m, "inertia")->values[0], 0, 1e-12);
    km_model_free(m);
}
END_TEST

START_TEST(checks_name_the_field)
{
    double X[6] = {0, 1, 2, 3, 4, 5};
    km_kernel k = km_test_kernel(KM_KERNEL_RBF, 0.5);
    km_error err;
    km_model *m = NULL;
    struct {
        km_kkmeans_params p;
        km_status st;
        const char *msg;
    } cases[] = {
        {params(0, 1e-4, 300), KM_EINVAL, "params.n_clusters"},
        {params(7, 1e-4, 300), KM_EPROBLEM, "params.n_clusters (7) is above "
                                            "n_samples (6)"},
        {params(2, -1, 300), KM_EINVAL, "params.tol"},
        {params(2, NAN, 300), KM_EINVAL, "params.tol"},
        {params(2, INFINITY, 300), KM_EINVAL, "params.tol"},
        {params(2, 1e-4, 0), KM_EINVAL, "params.max_iter"},
        {params(2, 1e-4, KM_KKMEANS_MAX_ITER + 1), KM_EINVAL,
         "params.max_iter"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        ck_assert_int_eq(km_kkmeans_fit(&k, &cases[i].p, X, 6, 1, NULL, &m,
                                        &err), cases[i].st);
        ck_assert_msg(strstr(err.message, cases[i].msg), "case %zu: %s", i,
                      err.message);
    }
    km_kkmeans_params p = params(2, 1e-4, 300);
    p.n_init = 0;
    ck_assert_int_eq(km_kkmeans_check(&p, 6, &err), KM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "params.n_init"));
    p.n_init = KM_KKMEANS_MAX_INIT + 1;
    ck_assert_int_eq(km_kkmeans_check(&p, 6, &err), KM_EINVAL);
    p = params(2, 1e-4, 300);
    p.seed = ((uint64_t)1 << 53) + 1;
    ck_assert_int_eq(km_kkmeans_check(&p, 6, &err), KM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "params.seed"));
    p = params(6, 0, 1);
    ck_assert_int_eq(km_kkmeans_check(&p, 6, &err), KM_OK);
    size_t bad[2] = {0, 6};
    p = params(2, 0, 10);
    ck_assert_int_eq(km_kkmeans_fit_init(&k, &p, X, 6, 1, bad, NULL, &m,
                                         &err), KM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "init[1]"));
    /* other models answer no kkmeans */
    km_krr_params kp = km_krr_params_default();
    double y[6] = {0};
    ck_assert_int_eq(km_krr_fit(&k, &kp, X, 6, 1, y, 1, NULL, &m, NULL),
                     KM_OK);
    int lab[6];
    ck_assert_int_eq(km_kkmeans_predict(m, X, 6, lab, &err), KM_ECONFLICT);
    ck_assert_uint_eq(km_kkmeans_n_clusters(m), 0);
    km_model_free(m);
    /* the memory estimate counts the Gram matrix */
    p = params(4, 1e-4, 300);
    ck_assert_uint_ge(km_kkmeans_fit_bytes(5000, 10, &p),
                      (size_t)5000 * 5000 * 8);
    ck_assert_uint_eq(km_algorithm_outputs(KM_ALGO_KKMEANS), KM_OUT_CLUSTERS);
    ck_assert_int_eq(km_scoring_default(KM_ALGO_KKMEANS), KM_SCORING_COUNT);
    ck_assert_int_eq(km_scoring_check(KM_SCORING_COUNT, KM_ALGO_KKMEANS,
                                      NULL, &err), KM_EINVAL);
    ck_assert_str_eq(err.message, "no scoring applies to kkmeans");
    ck_assert_int_eq(km_scoring_check(KM_SCORING_ACCURACY, KM_ALGO_KKMEANS,
                                      NULL, &err), KM_EINVAL);
}
END_TEST

START_TEST(progress_and_cancel)
{
    fixture f = load();
    km_kernel k = km_test_kernel(KM_KERNEL_RBF, 0.3);
    km_kkmeans_params p = params(KC, 1e-4, 300);
    p.n_init = 2;
    km_stopper all = {0, 1 << 30, 0};
    km_fit_control ctl = {km_stop_cb, &all, 1};
    km_model *m = NULL;
    ck_assert_int_eq(km_kkmeans_fit(&k, &p, f.X, N, DIM, &ctl, &m, NULL),
                     KM_OK);
    ck_assert_double_eq(all.last, 1.0);
    int calls = all.calls;
    ck_assert_int_ge(calls, 6); /* start, two runs and their iterations */
    km_model_free(m);
    for (int at = 0; at < calls - 1; at++) {
        km_stopper s = {0, at, 0};
        km_fit_control c = {km_stop_cb, &s, 1};
        km_error err;
        m = NULL;
        ck_assert_int_eq(km_kkmeans_fit(&k, &p, f.X, N, DIM, &c, &m, &err),
                         KM_ECANCELLED);
        ck_assert_ptr_null(m);
    }
    unload(&f);
}
END_TEST

/* km_fit is km_kkmeans_fit to the bit (beyond "seconds"); a
 * preprocessing is applied by km_predict_labels and km_kkmeans_score. */
START_TEST(generic_fit_and_preprocessing)
{
    fixture f = load();
    km_kernel k = km_test_kernel(KM_KERNEL_RBF, 0.3);
    km_kkmeans_params p = params(KC, 1e-4, 300);
    p.n_init = 2;
    p.seed = 11;
    km_problem pb = {f.X, N, DIM, NULL, 0, NULL, 0};
    km_model *a = NULL, *b = NULL;
    ck_assert_int_eq(km_kkmeans_fit(&k, &p, f.X, N, DIM, NULL, &a, NULL),
                     KM_OK);
    ck_assert_int_eq(km_fit(KM_ALGO_KKMEANS, &k, &p, NULL, &pb, NULL, &b,
                            NULL), KM_OK);
    same_answers(a, b, f.T);
    /* no default scoring: no training score */
    ck_assert_ptr_null(km_info_find(km_model_training(b), "training_score"));
    km_model_free(b);

    /* standardized: the model's own space is the scaled one */
    km_preprocess pre = {KM_SCALE_STANDARDIZE, 0};
    ck_assert_int_eq(km_fit(KM_ALGO_KKMEANS, &k, &p, &pre, &pb, NULL, &b,
                            NULL), KM_OK);
    double mean[DIM] = {0}, sd[DIM] = {0};
    for (size_t i = 0; i < N; i++)
        for (size_t j = 0; j < DIM; j++)
            mean[j] += f.X[i * DIM + j] / N;
    for (size_t i = 0; i < N; i++)
        for (size_t j = 0; j < DIM; j++)
            sd[j] += pow(f.X[i * DIM + j] - mean[j], 2) / N;
    double *S = malloc(N * DIM * sizeof *S);
    for (size_t i = 0; i < N; i++)
        for (size_t j = 0; j < DIM; j++)
            S[i * DIM + j] = (f.X[i * DIM + j] - mean[j]) / sqrt(sd[j]);
    int via_pre[N], direct[N], scored[N];
    double inertia;
    ck_assert_int_eq(km_predict_labels(b, f.X, N, via_pre, NULL), KM_OK);
    ck_assert_int_eq(km_kkmeans_predict(b, S, N, direct, NULL), KM_OK);
    ck_assert_mem_eq(via_pre, direct, sizeof direct);
    ck_assert_int_eq(km_kkmeans_score(b, f.X, N, scored, &inertia, NULL),
                     KM_OK);
    ck_assert_mem_eq(scored, direct, sizeof direct);
    double train = figure(b, "inertia")->values[0];
    ck_assert_double_le(fabs(inertia - train), 1e-9 * train);
    free(S);
    km_model_free(a);
    km_model_free(b);
    unload(&f);
}
END_TEST

START_TEST(model_file_round_trip_and_corruption)
{
    fixture f = load();
    km_kernel k = km_test_kernel(KM_KERNEL_RBF, 0.3);
    km_kkmeans_params p = params(KC, 1e-4, 300);
    p.n_init = 2;
    km_model *m = NULL, *back = NULL;
    km_error err;
    ck_assert_int_eq(km_kkmeans_fit(&k, &p, f.X, N, DIM, NULL, &m, NULL),
                     KM_OK);
    unsigned char *buf;
    size_t len;
    ck_assert_int_eq(km_model_save_buffer(m, &buf, &len, &err), KM_OK);
    ck_assert_uint_eq(get32(buf + 4), 2); /* format version 2 */
    ck_assert_uint_eq(get32(buf + 8), KM_ALGO_KKMEANS);
    ck_assert_int_eq(km_model_load_buffer(buf, len, &back, &err), KM_OK);
    same_answers(m, back, f.T);
    ck_assert_uint_eq(km_model_bytes(back), km_model_bytes(m));
    ck_assert_uint_eq(km_kkmeans_n_clusters(back), KC);
    km_model_free(back);

    /* The payload from its end: k, member (N), C (KC), X (N x DIM), CRC. */
    size_t X_at = len - 4 - (8 + 8 * N * DIM), C_at = X_at - (8 + 8 * KC);
    size_t mem_at = C_at - (8 + 4 * N), k_at = mem_at - 8;
    ck_assert_uint_eq(get64(buf + k_at), KC);
    ck_assert_uint_eq(get64(buf + mem_at), N);
    /* the row whose cluster is moved away: its cluster keeps others */
    int moved = -1;
    for (size_t j = 0; j < N && moved < 0; j++) {
        int c = (int)get32(buf + mem_at + 8 + 4 * j), others = 0;
        for (size_t i = 0; i < N; i++)
            others += i != j && (int)get32(buf + mem_at + 8 + 4 * i) == c;
        if (others)
            moved = (int)j;
    }
    unsigned char *bad = malloc(len);
    struct {
        size_t at;
        int kind; /* 0 u32, 1 u64, 2 f64 */
        uint64_t u;
        double v;
        const char *msg;
    } cases[] = {
        {k_at, 1, 0, 0, "bad kernel k-means sizes (k 0"},
        {k_at, 1, N + 1, 0, "bad kernel k-means sizes (k 301"},
        {mem_at + 8, 0, KC, 0, "row 0 is in cluster 5"},
        {mem_at + 8 + 4 * 7, 0, (uint32_t)-1, 0, "row 7 is in cluster -1"},
        {C_at + 8 + 8 * 2, 2, 0, NAN, "not all finite"},
        {X_at + 8 + 8 * 11, 2, 0, INFINITY, "not all finite"},
        {mem_at, 1, N - 1, 0, "bad kernel k-means payload"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        memcpy(bad, buf, len);
        if (cases[i].kind == 0)
            put32(bad + cases[i].at, (uint32_t)cases[i].u);
        else if (cases[i].kind == 1)
            put64(bad + cases[i].at, cases[i].u);
        else {
            uint64_t u;
            memcpy(&u, &cases[i].v, 8);
            put64(bad + cases[i].at, u);
        }
        put32(bad + len - 4, crc32_ref(bad, len - 4));
        km_model *x = NULL;
        km_status st = km_model_load_buffer(bad, len, &x, &err);
        ck_assert_msg(st == KM_ECORRUPT, "case %zu: %d", i, (int)st);
        ck_assert_msg(strstr(err.message, cases[i].msg), "case %zu: %s", i,
                      err.message);
    }
    /* a cluster without rows: every row of cluster c moved to another */
    memcpy(bad, buf, len);
    int c0 = (int)get32(bad + mem_at + 8 + 4 * (size_t)moved);
    for (size_t j = 0; j < N; j++)
        if ((int)get32(bad + mem_at + 8 + 4 * j) == c0)
            put32(bad + mem_at + 8 + 4 * j, (uint32_t)((c0 + 1) % KC));
    put32(bad + len - 4, crc32_ref(bad, len - 4));
    km_model *x = NULL;
    ck_assert_int_eq(km_model_load_buffer(bad, len, &x, &err), KM_ECORRUPT);
    ck_assert_ptr_nonnull(strstr(err.message, "has no rows"));
    /* n_outputs other than 1 is refused at the header */
    memcpy(bad, buf, len);
    put64(bad + 28, 2);
    put32(bad + len - 4, crc32_ref(bad, len - 4));
    ck_assert_int_eq(km_model_load_buffer(bad, len, &x, &err), KM_ECORRUPT);
    ck_assert_ptr_nonnull(strstr(err.message, "n_outputs 2"));
    free(bad);
    free(buf);
    km_model_free(m);
    unload(&f);
}
END_TEST

static Suite *kkmeans_suite(void)
{
    Suite *s = suite_create("km_kkmeans");
    TCase *tc = tcase_create("kkmeans");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, linear_equals_sklearn_lloyd);
    tcase_add_test(tc, rbf_equals_numpy_lloyd);
    tcase_add_test(tc, plusplus_and_n_init);
    tcase_add_test(tc, adjusted_rand_equals_sklearn);
    tcase_add_test(tc, empty_cluster_relocation);
    tcase_add_test(tc, checks_name_the_field);
    tcase_add_test(tc, progress_and_cancel);
    tcase_add_test(tc, generic_fit_and_preprocessing);
    tcase_add_test(tc, model_file_round_trip_and_corruption);
    suite_add_tcase(s, tc);
    return s;
}

KM_TEST_MAIN(kkmeans_suite)
