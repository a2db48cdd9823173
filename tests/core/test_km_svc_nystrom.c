/*
 * test_km_svc_nystrom.c - svc's nystrom solver (params.solver NYSTROM):
 * decision values against numpy's Nystrom features on the same centres
 * and liblinear's dual coordinate descent per pair (scikit-learn's
 * LinearSVC, tests/fixtures/gen_svc_nystrom_refs.py), with class weights,
 * the linear kernel with m = d against LinearSVC on X itself, the vote's
 * labels, the figures, the model file (format version 4) and its
 * corruptions, progress and cancel, the checks' messages, the memory
 * estimate, and a search over nystrom points. With params.centres
 * rpcholesky: core's pivots and decisions against the same features on
 * gen_rpcholesky_refs.py's pivots, m = n (all rows, or the rank) against
 * the exact linear SVM on the whole kernel's features, progress and
 * cancel (as uniform's); the pairs on several threads give the same answer.
 * With params.precision float32: the decisions against the same
 * references (and the float64 path's, for a kernel of L1 distances) to
 * FLOAT_TOL, the same labels, the figure and the file, the checks and
 * the estimate.
 */
#include "../check_main.h"
#include "model_bytes.h"
#include "km.h"
#include "base/km_base_internal.h"
#include "solvers/km_solvers_internal.h"

#define N 400
#define DIM 5
#define K 4
#define NP 6
#define M 60

typedef struct data {
    double *X, *T, *rbf_dec, *cw_dec, *lin_dec, *labels;
    int y[N];
    size_t nt;
    size_t centres[M], lin_centres[DIM];
} data;

static double *fixture(const char *name, size_t want)
{
    size_t n;
    double *v = km_read_fixture(name, &n);
    if (want)
        ck_assert_uint_eq(n, want);
    return v;
}

static void load(data *dt)
{
    dt->X = fixture("svn_X.txt", N * DIM);
    double *y = fixture("svn_y.txt", N);
    for (size_t i = 0; i < N; i++)
        dt->y[i] = (int)y[i];
    free(y);
    size_t n;
    dt->T = km_read_fixture("svn_T.txt", &n);
    dt->nt = n / DIM;
    dt->rbf_dec = fixture("svn_rbf_dec.txt", dt->nt * NP);
    dt->cw_dec = fixture("svn_cw_dec.txt", dt->nt * NP);
    dt->lin_dec = fixture("svn_lin_dec.txt", dt->nt * NP);
    dt->labels = fixture("svn_rbf_labels.txt", dt->nt);
    double *c = fixture("svn_centres.txt", M);
    for (size_t i = 0; i < M; i++)
        dt->centres[i] = (size_t)c[i];
    free(c);
    c = fixture("svn_lin_centres.txt", DIM);
    for (size_t i = 0; i < DIM; i++)
        dt->lin_centres[i] = (size_t)c[i];
    free(c);
}

static void unload(data *dt)
{
    free(dt->X);
    free(dt->T);
    free(dt->rbf_dec);
    free(dt->cw_dec);
    free(dt->lin_dec);
    free(dt->labels);
}

static km_kernel rbf(void)
{
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_RBF);
    k.gamma = 0.3;
    return k;
}

static km_svm_params nystrom(size_t m, uint64_t seed, double C)
{
    km_svm_params p = km_svm_params_default();
    p.C = C;
    p.solver = KM_SVM_SOLVER_NYSTROM;
    p.n_centres = m;
    p.seed = seed;
    p.tol = 1e-9;
    p.max_iter = 1000000;
    return p;
}

static double fig(const km_info *info, const char *key)
{
    const km_info_entry *e = km_info_find(info, key);
    ck_assert_msg(e != NULL, "no figure %s", key);
    return e->values[0];
}

static double max_abs(const double *a, const double *b, size_t n)
{
    double w = 0;
    for (size_t i = 0; i < n; i++)
        w = fabs(a[i] - b[i]) > w ? fabs(a[i] - b[i]) : w;
    return w;
}

static km_model *fit(const km_kernel *k, const km_svm_params *p,
                     const data *dt)
{
    km_model *m = NULL;
    km_error err = {0};
    ck_assert_msg(km_svc_fit(k, p, dt->X, N, DIM, dt->y, K, NULL, &m, &err)
                      == KM_OK, "%s", err.message);
    return m;
}

/* Core's draw picks the fixture's centres; the decisions are liblinear's
 * on numpy's features of them to 1e-6, and the vote's labels equal. */
START_TEST(rbf_against_liblinear)
{
    data dt;
    load(&dt);
    size_t idx[N];
    km_krr_draw_centres(5, N, M, idx);
    for (size_t i = 0; i < M; i++)
        ck_assert_uint_eq(idx[i], dt.centres[i]);
    km_kernel k = rbf();
    km_svm_params p = nystrom(M, 5, 1.0);
    km_model *m = fit(&k, &p, &dt);
    ck_assert_uint_eq(km_model_n_samples(m), M);
    ck_assert_uint_eq(km_svc_n_classes(m), K);
    double *dec = malloc(dt.nt * NP * sizeof *dec);
    ck_assert_int_eq(km_svc_decision(m, dt.T, dt.nt, dec, NULL), KM_OK);
    double e = max_abs(dec, dt.rbf_dec, dt.nt * NP);
    ck_assert_msg(e <= 1e-6, "decisions off by %g", e);
    int lab[200];
    ck_assert_uint_le(dt.nt, 200);
    ck_assert_int_eq(km_svc_predict(m, dt.T, dt.nt, lab, NULL), KM_OK);
    for (size_t i = 0; i < dt.nt; i++)
        ck_assert_int_eq(lab[i], (int)dt.labels[i]);

    /* the figures */
    const km_info *pi = km_model_params(m), *ti = km_model_training(m);
    ck_assert_double_eq(fig(pi, "solver"), KM_SVM_SOLVER_NYSTROM);
    ck_assert_double_eq(fig(pi, "n_centres"), M);
    ck_assert_double_eq(fig(pi, "seed"), 5);
    ck_assert_double_eq(fig(pi, "max_iter"), 1000000);
    ck_assert_double_eq(fig(pi, "C"), 1.0);
    ck_assert_ptr_null(km_info_find(pi, "cache_mb"));
    ck_assert_ptr_null(km_info_find(pi, "probability"));
    ck_assert_double_eq(fig(ti, "solver"), KM_SVM_SOLVER_NYSTROM);
    ck_assert_double_ge(fig(ti, "epochs"), NP);
    ck_assert_double_le(fig(ti, "gap"), p.tol);
    ck_assert_ptr_null(km_info_find(ti, "epochs_capped"));
    const km_info_entry *obj = km_info_find(ti, "objective");
    ck_assert_uint_eq(obj->count, NP);
    for (size_t q = 0; q < NP; q++)
        ck_assert_double_lt(obj->values[q], 0);
    /* no support vectors: centres */
    ck_assert_uint_eq(km_svm_support_count(m), 0);
    ck_assert_ptr_null(km_svc_n_support(m));
    ck_assert_ptr_null(km_svm_dual_coef(m));

    /* km_fit is the same fit, to the bit; another seed other centres */
    km_model *g = NULL;
    km_problem pb = {dt.X, N, DIM, NULL, 0, dt.y, K};
    ck_assert_int_eq(km_fit(KM_ALGO_SVC, &k, &p, NULL, &pb, NULL, &g, NULL),
                     KM_OK);
    double *d2 = malloc(dt.nt * NP * sizeof *d2);
    ck_assert_int_eq(km_svc_decision(g, dt.T, dt.nt, d2, NULL), KM_OK);
    ck_assert_mem_eq(dec, d2, dt.nt * NP * sizeof *dec);
    km_model_free(g);
    p.seed = 6;
    g = fit(&k, &p, &dt);
    ck_assert_int_eq(km_svc_decision(g, dt.T, dt.nt, d2, NULL), KM_OK);
    ck_assert_double_gt(max_abs(dec, d2, dt.nt * NP), 1e-3);
    km_model_free(g);
    free(d2);
    free(dec);
    km_model_free(m);
    unload(&dt);
}
END_TEST

/* C of class c is C w[c], on each side of each pair (LinearSVC's
 * class_weight); without shrinking the optimum is the same. */
START_TEST(class_weight_and_no_shrinking)
{
    data dt;
    load(&dt);
    km_kernel k = rbf();
    const double w[K] = {1.0, 2.0, 0.5, 1.0};
    km_svm_params p = nystrom(M, 5, 1.0);
    p.class_weight = w;
    double *dec = malloc(dt.nt * NP * sizeof *dec);
    for (int shrink = 1; shrink >= 0; shrink--) {
        p.shrinking = shrink;
        km_model *m = fit(&k, &p, &dt);
        ck_assert_int_eq(km_svc_decision(m, dt.T, dt.nt, dec, NULL), KM_OK);
        double e = max_abs(dec, dt.cw_dec, dt.nt * NP);
        ck_assert_msg(e <= 1e-6, "shrinking %d: decisions off by %g", shrink,
                      e);
        ck_assert_int_eq(km_info_find(km_model_params(m), "class_weight")
                             ->count, K);
        km_model_free(m);
    }
    free(dec);
    unload(&dt);
}
END_TEST

/* Linear kernel, m = d centres: K_mm = Z Z^T is invertible and the
 * features' Gram is X X^T, so the answer is LinearSVC's on X itself. */
START_TEST(linear_kernel_m_equals_d_is_linear_svm)
{
    data dt;
    load(&dt);
    size_t idx[N];
    km_krr_draw_centres(9, N, DIM, idx);
    for (size_t i = 0; i < DIM; i++)
        ck_assert_uint_eq(idx[i], dt.lin_centres[i]);
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_LINEAR);
    km_svm_params p = nystrom(DIM, 9, 0.5);
    km_model *m = fit(&k, &p, &dt);
    double *dec = malloc(dt.nt * NP * sizeof *dec);
    ck_assert_int_eq(km_svc_decision(m, dt.T, dt.nt, dec, NULL), KM_OK);
    double e = max_abs(dec, dt.lin_dec, dt.nt * NP);
    ck_assert_msg(e <= 1e-6, "decisions off by %g", e);
    free(dec);
    km_model_free(m);
    unload(&dt);
}
END_TEST

/* Binary: one pair, positive for class 0 (LIBSVM's sign, as the exact
 * model's); the epoch cap is reported when it stops the solve. */
START_TEST(binary_and_epoch_cap)
{
    data dt;
    load(&dt);
    int y2[N];
    for (size_t i = 0; i < N; i++)
        y2[i] = dt.y[i] >= 2;
    km_kernel k = rbf();
    km_svm_params p = nystrom(M, 5, 1.0);
    km_model *m = NULL;
    ck_assert_int_eq(km_svc_fit(&k, &p, dt.X, N, DIM, y2, 2, NULL, &m, NULL),
                     KM_OK);
    double dec[200];
    int lab[200];
    ck_assert_int_eq(km_svc_decision(m, dt.T, dt.nt, dec, NULL), KM_OK);
    ck_assert_int_eq(km_svc_predict(m, dt.T, dt.nt, lab, NULL), KM_OK);
    size_t right = 0;
    for (size_t i = 0; i < dt.nt; i++) {
        ck_assert_int_eq(lab[i], dec[i] > 0 ? 0 : 1);
        right += lab[i] == ((int)dt.labels[i] >= 2);
    }
    ck_assert_uint_ge(right, dt.nt * 3 / 4);
    km_model_free(m);
    p.max_iter = 2;
    ck_assert_int_eq(km_svc_fit(&k, &p, dt.X, N, DIM, y2, 2, NULL, &m, NULL),
                     KM_OK);
    ck_assert_double_eq(fig(km_model_training(m), "epochs"), 2);
    ck_assert_double_eq(fig(km_model_training(m), "epochs_capped"), 1);
    ck_assert_double_gt(fig(km_model_training(m), "gap"), p.tol);
    km_model_free(m);
    unload(&dt);
}
END_TEST

/* Version 4 with the form tag; loads back to bit-identical answers; an
 * exact svc model is still written as version 2; corruptions of the
 * form's fields are refused, naming them. */
START_TEST(model_file_round_trip)
{
    data dt;
    load(&dt);
    km_kernel k = rbf();
    km_svm_params p = nystrom(M, 5, 1.0);
    p.tol = 1e-3;
    km_model *m = fit(&k, &p, &dt);
    /* a file holds one label per class */
    const char *labels[K] = {"0", "1", "2", "3"};
    ck_assert_int_eq(km_model_set_labels(m, labels, K, 1, NULL), KM_OK);
    unsigned char *buf;
    size_t len;
    ck_assert_int_eq(km_model_save_buffer(m, &buf, &len, NULL), KM_OK);
    ck_assert_int_eq(buf[4], 4);
    km_model *back = NULL;
    km_error err = {0};
    ck_assert_msg(km_model_load_buffer(buf, len, &back, &err) == KM_OK, "%s",
                  err.message);
    double a[200 * NP], b[200 * NP];
    ck_assert_int_eq(km_svc_decision(m, dt.T, dt.nt, a, NULL), KM_OK);
    ck_assert_int_eq(km_svc_decision(back, dt.T, dt.nt, b, NULL), KM_OK);
    ck_assert_mem_eq(a, b, dt.nt * NP * sizeof *a);
    ck_assert_double_eq(fig(km_model_params(back), "solver"),
                        KM_SVM_SOLVER_NYSTROM);
    /* the same bytes again */
    unsigned char *buf2;
    size_t len2;
    ck_assert_int_eq(km_model_save_buffer(back, &buf2, &len2, NULL), KM_OK);
    ck_assert_uint_eq(len2, len);
    ck_assert_mem_eq(buf, buf2, len);
    free(buf2);
    km_model_free(back);

    /* The payload is the last part: tag, k, m, centres, coef, rho, CRC.
     * Change a field, fix the CRC, and the load names what is wrong. */
    size_t pay = len - 4 - (8 + 8 * NP) - (8 + 8 * M * NP) -
                 (8 + 8 * M * DIM) - 8 - 8 - 4;
    uint32_t v;
    memcpy(&v, buf + pay, 4);
    ck_assert_uint_eq(v, 1); /* the nystrom form */
    struct {
        size_t at, size;
        uint64_t value;
        const char *says;
    } bad[] = {
        {pay, 4, 2, "form 2"},
        {pay + 4, 8, 1, "1 classes"},
        {pay + 12, 8, M - 1, "59 centres"},
    };
    for (size_t c = 0; c < sizeof bad / sizeof *bad; c++) {
        unsigned char *x = malloc(len);
        memcpy(x, buf, len);
        memcpy(x + bad[c].at, &bad[c].value, bad[c].size);
        fix_crc(x, len);
        back = NULL;
        ck_assert_int_eq(km_model_load_buffer(x, len, &back, &err),
                         KM_ECORRUPT);
        ck_assert_msg(strstr(err.message, bad[c].says) != NULL, "%s",
                      err.message);
        free(x);
    }
    /* a coefficient that is not finite */
    {
        unsigned char *x = malloc(len);
        memcpy(x, buf, len);
        double inf = INFINITY;
        memcpy(x + pay + 20 + (8 + 8 * M * DIM) + 8, &inf, 8);
        fix_crc(x, len);
        ck_assert_int_eq(km_model_load_buffer(x, len, &back, &err),
                         KM_ECORRUPT);
        ck_assert_ptr_nonnull(strstr(err.message, "not all finite"));
        free(x);
    }
    free(buf);
    km_model_free(m);

    /* an exact fit is written as before: version 2 */
    km_svm_params ex = km_svm_params_default();
    m = NULL;
    ck_assert_int_eq(km_svc_fit(&k, &ex, dt.X, N, DIM, dt.y, K, NULL, &m,
                                NULL), KM_OK);
    ck_assert_int_eq(km_model_save_buffer(m, &buf, &len, NULL), KM_OK);
    ck_assert_int_eq(buf[4], 2);
    free(buf);
    km_model_free(m);
    unload(&dt);
}
END_TEST

typedef struct stopper {
    int calls, stop_after;
    double last;
} stopper;

static int stop_cb(void *ctx, double f)
{
    stopper *s = ctx;
    ck_assert(f >= s->last);
    s->last = f;
    return ++s->calls > s->stop_after;
}

/* Progress rises to 1 (through the features or rpcholesky's pivots, then
 * the pairs), once per centres rule; a cancel anywhere stops the fit. */
START_TEST(progress_and_cancel)
{
    data dt;
    load(&dt);
    km_kernel k = rbf();
    km_svm_params p = nystrom(M, 5, 1.0);
    p.centres = (km_krr_centre_rule)_i;
    stopper all = {0, 1 << 30, 0};
    km_fit_control ctl = {stop_cb, &all, 0};
    km_model *m = NULL;
    ck_assert_int_eq(km_svc_fit(&k, &p, dt.X, N, DIM, dt.y, K, &ctl, &m,
                                NULL), KM_OK);
    ck_assert_double_eq(all.last, 1.0);
    int calls = all.calls;
    ck_assert_int_ge(calls, 10);
    km_model_free(m);
    /* a cancel anywhere: at the start, in the features (or the pivots),
     * mid-epochs */
    int at[] = {0, 1, 2, calls / 2, calls - 2};
    for (size_t i = 0; i < sizeof at / sizeof *at; i++) {
        stopper s = {0, at[i], 0};
        ctl.ctx = &s;
        m = NULL;
        km_error err = {0};
        ck_assert_int_eq(km_svc_fit(&k, &p, dt.X, N, DIM, dt.y, K, &ctl, &m,
                                    &err), KM_ECANCELLED);
        ck_assert_ptr_null(m);
        ck_assert_str_eq(err.message, "fit cancelled");
    }
    unload(&dt);
}
END_TEST

START_TEST(checks_name_the_field)
{
    km_svm_params p = nystrom(10, 0, 1.0);
    km_error err;
    ck_assert_int_eq(km_svm_check(&p, KM_ALGO_SVC, 3, &err), KM_OK);
    ck_assert_int_eq(km_svm_check_centres(&p, 10, 3, &err), KM_OK);
    ck_assert_int_eq(km_svm_check_centres(&p, 9, 3, &err), KM_EPROBLEM);
    ck_assert_ptr_nonnull(strstr(err.message, "params.n_centres is 10"));
    ck_assert_ptr_nonnull(strstr(err.message, "9 rows"));
    p.n_centres = 2;
    ck_assert_int_eq(km_svm_check_centres(&p, 10, 3, &err), KM_EPROBLEM);
    ck_assert_ptr_nonnull(strstr(err.message, "3 classes"));
    p.n_centres = 0; /* the default: min(n, 1000) */
    ck_assert_uint_eq(km_svm_centres(&p, 10), 10);
    ck_assert_uint_eq(km_svm_centres(&p, 5000), 1000);
    ck_assert_int_eq(km_svm_check_centres(&p, 2, 3, &err), KM_EPROBLEM);
    ck_assert_ptr_nonnull(strstr(err.message, "(the default)"));
    p.probability = 1;
    ck_assert_int_eq(km_svm_check(&p, KM_ALGO_SVC, 3, &err), KM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "params.probability"));
    p.probability = 0;
    p.seed = ((uint64_t)1 << 53) + 1;
    ck_assert_int_eq(km_svm_check(&p, KM_ALGO_SVC, 3, &err), KM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "params.seed"));
    p.seed = 0;
    ck_assert_int_eq(km_svm_check(&p, KM_ALGO_SVR, 0, &err), KM_EINVAL);
    ck_assert_str_eq(err.message, "params.solver nystrom applies to svc only");
    p.solver = KM_SVM_SOLVER_COUNT;
    ck_assert_int_eq(km_svm_check(&p, KM_ALGO_SVC, 3, &err), KM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "params.solver"));
    /* the exact solver takes the old fields alone, as before */
    km_svm_params old = {.C = 1, .tol = 1e-3, .cache_mb = 100};
    ck_assert_int_eq(km_svm_check(&old, KM_ALGO_SVC, 3, &err), KM_OK);
    ck_assert_int_eq(km_svm_check_centres(&old, 1, 3, &err), KM_OK);
    ck_assert_str_eq(km_svm_solver_name(KM_SVM_SOLVER_EXACT), "exact");
    ck_assert_str_eq(km_svm_solver_name(KM_SVM_SOLVER_NYSTROM), "nystrom");
    ck_assert_ptr_null(km_svm_solver_name(KM_SVM_SOLVER_COUNT));
    /* the descriptor's check: both */
    km_problem pb = {NULL, 5, 2, NULL, 0, NULL, 3};
    p.solver = KM_SVM_SOLVER_NYSTROM;
    p.n_centres = 6;
    ck_assert_int_eq(km_algorithm_check(KM_ALGO_SVC, &p, &pb, &err),
                     KM_EPROBLEM);
}
END_TEST

/* Admission: Phi (8 n m bytes) dominates; 60,000 x 784 with m = 4000 is
 * about 1.9 GB plus the data, where the exact SMO's cache is cache_mb. */
START_TEST(fit_bytes)
{
    km_svm_params p = nystrom(4000, 0, 10.0);
    size_t b = km_svc_fit_bytes(60000, 784, 10, &p);
    ck_assert_uint_ge(b, (size_t)8 * 60000 * 4000);
    ck_assert_uint_le(b, (size_t)8 * 60000 * 4000 + ((size_t)800 << 20));
    km_problem pb = {NULL, 60000, 784, NULL, 0, NULL, 10};
    ck_assert_uint_eq(km_algorithm_fit_bytes(KM_ALGO_SVC, &p, &pb), b);
    p.n_centres = 0; /* m = 1000 */
    ck_assert_uint_lt(km_svc_fit_bytes(60000, 784, 10, &p), b / 2);
    /* saturates rather than wraps */
    p.n_centres = (size_t)1 << 40;
    ck_assert_uint_eq(km_svc_fit_bytes((size_t)1 << 40, 784, 10, &p),
                      SIZE_MAX);
}
END_TEST

/* A search over nystrom points fits each point on each fold (no shared
 * Gram): fold 0's accuracy by hand is among what the mean averages. */
START_TEST(search_fits_nystrom_points)
{
    data dt;
    load(&dt);
    km_kernel ks[2] = {rbf(), rbf()};
    km_svm_params ps[2] = {nystrom(40, 5, 1.0), nystrom(40, 5, 0.01)};
    ps[0].tol = ps[1].tol = 1e-3;
    km_search_spec s = {KM_ALGO_SVC, {KM_SCALE_NONE, 0}, KM_SCORING_ACCURACY,
                        {KM_CV_KFOLD, 2, 0, 0, 0, NULL}, 2, ks, ps};
    km_problem pb = {dt.X, N, DIM, NULL, 0, dt.y, K};
    km_search_result r;
    km_error err = {0};
    ck_assert_msg(km_search(&s, &pb, NULL, &r, &err) == KM_OK, "%s",
                  err.message);
    /* fold 0: rows 200..399 train, 0..199 test */
    km_model *m = NULL;
    ck_assert_int_eq(km_svc_fit(&ks[0], &ps[0], dt.X + 200 * DIM, 200, DIM,
                                dt.y + 200, K, NULL, &m, NULL), KM_OK);
    int lab[200];
    ck_assert_int_eq(km_svc_predict(m, dt.X, 200, lab, NULL), KM_OK);
    double acc = 0;
    for (size_t i = 0; i < 200; i++)
        acc += (lab[i] == dt.y[i]) / 200.0;
    km_model_free(m);
    ck_assert(r.mean[0] > 0.6 && r.mean[0] <= 1);
    ck_assert(fabs(r.mean[0] - acc) <= r.std[0] + 1e-12);
    km_search_result_cleanup(&r);
    unload(&dt);
}
END_TEST

static double *decisions(const km_kernel *k, const km_svm_params *p,
                          const double *X, size_t n, const int *y,
                          const km_fit_control *ctl, const data *dt,
                          size_t *kept)
{
    km_model *m = NULL;
    km_error err = {0};
    ck_assert_msg(km_svc_fit(k, p, X, n, DIM, y, K, ctl, &m, &err) == KM_OK,
                  "%s", err.message);
    double *dec = malloc(dt->nt * NP * sizeof *dec);
    ck_assert_int_eq(km_svc_decision(m, dt->T, dt->nt, dec, NULL), KM_OK);
    if (kept)
        *kept = km_model_n_samples(m);
    km_model_free(m);
    return dec;
}

/* m (labels set) saved and loaded: the loaded model (the caller's), whose
 * decisions on the test rows are dec to the bit. */
static km_model *round_trip(km_model *m, const double *dec, const data *dt)
{
    const char *labels[K] = {"0", "1", "2", "3"};
    ck_assert_int_eq(km_model_set_labels(m, labels, K, 1, NULL), KM_OK);
    km_model *back = km_test_round_trip(m);
    double *d2 = malloc(dt->nt * NP * sizeof *d2);
    ck_assert_int_eq(km_svc_decision(back, dt->T, dt->nt, d2, NULL), KM_OK);
    ck_assert_mem_eq(dec, d2, dt->nt * NP * sizeof *dec);
    free(d2);
    return back;
}

/* rpcholesky centres: core's pivots (the feature path's, F kept) are the
 * fixture's, and the decisions liblinear's on numpy's features of them
 * (F used as the features, folded back over the pivots) to 1e-6. */
START_TEST(rpcholesky_against_liblinear)
{
    data dt;
    load(&dt);
    km_kernel k = rbf();
    double *want = fixture("svn_rpc_pivots.txt", M);
    size_t idx[N], kept = 0;
    double *F = NULL;
    ck_assert_int_eq(km_nys_centres(&k, KM_KRR_CENTRES_RPCHOLESKY, 5, dt.X,
                                    N, DIM, M, idx, &kept, &F, NULL, 0, 1,
                                    NULL), KM_OK);
    ck_assert_uint_eq(kept, M);
    for (size_t i = 0; i < M; i++)
        ck_assert_uint_eq(idx[i], (size_t)want[i]);
    /* F(P, :) is lower triangular (to rounding) with F(P,:) F(P,:)^T =
     * K(P, P): row a against row b */
    for (size_t a = 0; a < M; a += 7)
        for (size_t b = 0; b < M; b += 5) {
            double dot = 0;
            for (size_t c = 0; c < M; c++)
                dot += F[idx[a] * M + c] * F[idx[b] * M + c];
            double kab = km_kernel_eval(&k, dt.X + idx[a] * DIM,
                                        dt.X + idx[b] * DIM, DIM);
            ck_assert_double_eq_tol(dot, kab, 1e-12);
            if (b > a)
                ck_assert_double_le(fabs(F[idx[a] * M + b]), 1e-12);
        }
    free(F);
    free(want);
    km_svm_params p = nystrom(M, 5, 1.0);
    p.centres = KM_KRR_CENTRES_RPCHOLESKY;
    km_model *m = fit(&k, &p, &dt);
    ck_assert_uint_eq(km_model_n_samples(m), M);
    double *dec = malloc(dt.nt * NP * sizeof *dec);
    ck_assert_int_eq(km_svc_decision(m, dt.T, dt.nt, dec, NULL), KM_OK);
    double *ref = fixture("svn_rpc_dec.txt", dt.nt * NP);
    double e = max_abs(dec, ref, dt.nt * NP);
    free(ref);
    ck_assert_msg(e <= 1e-6, "decisions off by %g", e);
    ck_assert_double_eq(fig(km_model_params(m), "centres"),
                        KM_KRR_CENTRES_RPCHOLESKY);
    ck_assert_double_eq(fig(km_model_params(m), "n_centres"), M);
    /* the centres are rows of X, sorted: a file round trip keeps them */
    km_model *back = round_trip(m, dec, &dt);
    free(dec);
    km_model_free(back);
    km_model_free(m);
    unload(&dt);
}
END_TEST

/* m = n: rpcholesky with every row (the first 120, K well conditioned:
 * all are drawn) or until the rank (the linear kernel: 5 of 400 asked)
 * is the exact linear SVM on the whole kernel matrix's features (the
 * kernel SVM with the bias as a feature); so is uniform with m = n. */
START_TEST(rpcholesky_m_equals_n_is_exact)
{
    data dt;
    load(&dt);
    km_kernel k = rbf();
    double *full = fixture("svn_full_dec.txt", dt.nt * NP);
    for (int rule = 0; rule < KM_KRR_CENTRES_COUNT; rule++) {
        km_svm_params p = nystrom(120, 7, 1.0);
        p.centres = (km_krr_centre_rule)rule;
        size_t kept;
        double *dec = decisions(&k, &p, dt.X, 120, dt.y, NULL, &dt, &kept);
        ck_assert_uint_eq(kept, 120);
        double e = max_abs(dec, full, dt.nt * NP);
        ck_assert_msg(e <= 1e-6, "%s: decisions off by %g",
                      km_krr_centres_name(p.centres), e);
        free(dec);
    }
    free(full);
    km_kernel lin;
    km_kernel_init(&lin, KM_KERNEL_LINEAR);
    km_svm_params p = nystrom(N, 9, 0.5);
    p.centres = KM_KRR_CENTRES_RPCHOLESKY;
    size_t kept;
    double *dec = decisions(&lin, &p, dt.X, N, dt.y, NULL, &dt, &kept);
    double *piv = fixture("svn_lin_rpc_pivots.txt", DIM);
    ck_assert_uint_eq(kept, DIM);
    free(piv);
    double e = max_abs(dec, dt.lin_dec, dt.nt * NP);
    ck_assert_msg(e <= 1e-6, "linear: decisions off by %g", e);
    free(dec);
    unload(&dt);
}
END_TEST

/* The pairs on 2 or 3 threads: the same answer to the bit as on one,
 * progress never backwards, and a cancel from any thread's report. */
START_TEST(threads_same_answer)
{
    data dt;
    load(&dt);
    km_kernel k = rbf();
    for (int rule = 0; rule < KM_KRR_CENTRES_COUNT; rule++) {
        km_svm_params p = nystrom(M, 5, 1.0);
        p.centres = (km_krr_centre_rule)rule;
        double *one = decisions(&k, &p, dt.X, N, dt.y, NULL, &dt, NULL);
        for (int t = 2; t <= 3; t++) {
            stopper all = {0, 1 << 30, 0};
            km_fit_control ctl = {stop_cb, &all, t};
            double *dec = decisions(&k, &p, dt.X, N, dt.y, &ctl, &dt, NULL);
            ck_assert_mem_eq(one, dec, dt.nt * NP * sizeof *dec);
            ck_assert_double_eq(all.last, 1.0);
            free(dec);
            stopper s = {0, all.calls / 2, 0};
            ctl.ctx = &s;
            km_model *m = NULL;
            ck_assert_int_eq(km_svc_fit(&k, &p, dt.X, N, DIM, dt.y, K, &ctl,
                                        &m, NULL), KM_ECANCELLED);
            ck_assert_ptr_null(m);
        }
        free(one);
    }
    unload(&dt);
}
END_TEST

/* params.centres (krr's rule check) and params.precision are checked
 * with nystrom only, named; rpcholesky's estimate adds its workspace to
 * the same Phi; float32 halves Phi (uniform: rpcholesky's factor is
 * double while it runs). */
START_TEST(options_checks_and_bytes)
{
    km_error err;
    for (int opt = 0; opt < 2; opt++) {
        km_svm_params p = nystrom(10, 0, 1.0);
        if (opt == 0)
            p.centres = KM_KRR_CENTRES_COUNT;
        else
            p.precision = KM_SVM_PRECISION_COUNT;
        ck_assert_int_eq(km_svm_check(&p, KM_ALGO_SVC, 3, &err), KM_EINVAL);
        ck_assert_str_eq(err.message,
                         opt == 0
                             ? "params.centres must be uniform or rpcholesky"
                             : "params.precision must be float64 or float32");
        p.solver = KM_SVM_SOLVER_EXACT;
        ck_assert_int_eq(km_svm_check(&p, KM_ALGO_SVC, 3, &err), KM_OK);
    }
    ck_assert_str_eq(km_svm_precision_name(KM_SVM_PRECISION_FLOAT64),
                     "float64");
    ck_assert_str_eq(km_svm_precision_name(KM_SVM_PRECISION_FLOAT32),
                     "float32");
    ck_assert_ptr_null(km_svm_precision_name(KM_SVM_PRECISION_COUNT));
    km_svm_params p = nystrom(4000, 0, 10.0);
    size_t u = km_svc_fit_bytes(60000, 784, 10, &p);
    p.centres = KM_KRR_CENTRES_RPCHOLESKY;
    size_t r = km_svc_fit_bytes(60000, 784, 10, &p);
    ck_assert_uint_eq(r, u + km_nys_rpcholesky_bytes(60000, 784, 4000));
    ck_assert_uint_le(r, u + ((size_t)16 << 20));
    p.precision = KM_SVM_PRECISION_FLOAT32;
    ck_assert_uint_eq(km_svc_fit_bytes(60000, 784, 10, &p), r);
    p.centres = KM_KRR_CENTRES_UNIFORM;
    size_t f = km_svc_fit_bytes(60000, 784, 10, &p);
    ck_assert_uint_ge(f, (size_t)4 * 60000 * 4000);
    ck_assert_uint_le(f, u - (size_t)4 * 60000 * 4000 + ((size_t)200 << 20));
}
END_TEST

/* Float features against the references to this (absolute, on
 * decisions of order 1: float's rounding, 6e-8 relative, of the
 * features moves the optimum by that times the features'
 * conditioning; measured 1e-7 to 1.2e-6 here). */
#define FLOAT_TOL 1e-5

/* precision float32: each rule's decisions within FLOAT_TOL of
 * liblinear's on numpy's double features (the fixtures that the float64
 * path meets to 1e-6), the vote's labels equal; for the L1 Laplacian
 * (kernel values by km_gram_cross_sn, then rounded) within FLOAT_TOL of
 * the float64 path; the same answer on 2 threads; the params figure
 * and a file round trip. */
START_TEST(float32_against_references)
{
    data dt;
    load(&dt);
    km_kernel k = rbf();
    const char *refs[KM_KRR_CENTRES_COUNT] = {"svn_rbf_dec.txt",
                                              "svn_rpc_dec.txt"};
    for (int rule = 0; rule < KM_KRR_CENTRES_COUNT; rule++) {
        km_svm_params p = nystrom(M, 5, 1.0);
        p.centres = (km_krr_centre_rule)rule;
        p.precision = KM_SVM_PRECISION_FLOAT32;
        km_model *m = fit(&k, &p, &dt);
        double *dec = malloc(dt.nt * NP * sizeof *dec);
        ck_assert_int_eq(km_svc_decision(m, dt.T, dt.nt, dec, NULL), KM_OK);
        double *ref = fixture(refs[rule], dt.nt * NP);
        double e = max_abs(dec, ref, dt.nt * NP);
        ck_assert_msg(e <= FLOAT_TOL, "%s: decisions off by %g",
                      km_krr_centres_name(p.centres), e);
        free(ref);
        if (rule == KM_KRR_CENTRES_UNIFORM) {
            int lab[200];
            ck_assert_int_eq(km_svc_predict(m, dt.T, dt.nt, lab, NULL),
                             KM_OK);
            for (size_t i = 0; i < dt.nt; i++)
                ck_assert_int_eq(lab[i], (int)dt.labels[i]);
        }
        ck_assert_double_eq(fig(km_model_params(m), "precision"),
                            KM_SVM_PRECISION_FLOAT32);
        km_fit_control ctl = {NULL, NULL, 2};
        double *two = decisions(&k, &p, dt.X, N, dt.y, &ctl, &dt, NULL);
        ck_assert_mem_eq(dec, two, dt.nt * NP * sizeof *dec);
        free(two);
        km_model *back = round_trip(m, dec, &dt);
        ck_assert_double_eq(fig(km_model_params(back), "precision"),
                            KM_SVM_PRECISION_FLOAT32);
        km_model_free(back);
        km_model_free(m);
        free(dec);
    }
    /* float64 shows no figure (files as before) */
    km_svm_params p = nystrom(M, 5, 1.0);
    km_model *m = fit(&k, &p, &dt);
    ck_assert_ptr_null(km_info_find(km_model_params(m), "precision"));
    km_model_free(m);
    km_kernel lap;
    km_kernel_init(&lap, KM_KERNEL_LAPLACIAN);
    lap.gamma = 0.2;
    double *d64 = decisions(&lap, &p, dt.X, N, dt.y, NULL, &dt, NULL);
    p.precision = KM_SVM_PRECISION_FLOAT32;
    double *d32 = decisions(&lap, &p, dt.X, N, dt.y, NULL, &dt, NULL);
    double e = max_abs(d64, d32, dt.nt * NP);
    ck_assert_msg(e <= FLOAT_TOL, "laplacian: decisions off by %g", e);
    free(d64);
    free(d32);
    unload(&dt);
}
END_TEST

static Suite *svc_nystrom_suite(void)
{
    Suite *s = suite_create("km_svc_nystrom");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, rbf_against_liblinear);
    tcase_add_test(tc, class_weight_and_no_shrinking);
    tcase_add_test(tc, linear_kernel_m_equals_d_is_linear_svm);
    tcase_add_test(tc, binary_and_epoch_cap);
    tcase_add_test(tc, model_file_round_trip);
    tcase_add_loop_test(tc, progress_and_cancel, 0, KM_KRR_CENTRES_COUNT);
    tcase_add_test(tc, checks_name_the_field);
    tcase_add_test(tc, fit_bytes);
    tcase_add_test(tc, search_fits_nystrom_points);
    tcase_add_test(tc, rpcholesky_against_liblinear);
    tcase_add_test(tc, rpcholesky_m_equals_n_is_exact);
    tcase_add_test(tc, threads_same_answer);
    tcase_add_test(tc, options_checks_and_bytes);
    tcase_add_test(tc, float32_against_references);
    suite_add_tcase(s, tc);
    return s;
}

KM_TEST_MAIN(svc_nystrom_suite)
