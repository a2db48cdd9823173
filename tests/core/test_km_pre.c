/*
 * test_km_pre.c - preprocessing kept in the model, and model file format
 * version 2.
 *
 * Against scikit-learn (tests/fixtures/gen_pre_refs.py, cases of
 * tests/fixtures/pre_cases.py, written again below as CASES): km_fit with
 * a km_preprocess and km_predict on the raw test rows give what a
 * Pipeline(StandardScaler or MinMaxScaler(-1, 1), estimator) gives.
 * Tolerances (|got - want| / max(|want|, floor)):
 *   statistics       StandardScaler mean_ and scale_ to 1e-15 relative;
 *                    MinMaxScaler's scale_ and min_ as 1/scale and
 *                    -shift/scale to 1e-15 (floor 1)
 *   scaled rows      the scaler's transform of the test rows to 1e-14
 *                    absolute (values of order 1)
 *   krr, kpca        predictions, projections and the inverse map (in
 *                    input units) to 1e-10, floor 1e-3 times the largest
 *                    reference value
 *   svc, svr         SMO (tol 1e-10) against LIBSVM inside scikit-learn:
 *                    labels equal, decision values and predictions to
 *                    1e-6 (the two solvers stop at different points of
 *                    the same optimum: about 3e-7 apart here, as in
 *                    tests/integration/kernels.py); and, to 1e-9, equal
 *                    to the typed fit (km_svc_fit, km_svr_fit) on the
 *                    training rows scaled by scikit-learn's own formula
 *                    and statistics (plus y_mean), which isolates the
 *                    preprocessing from the solver
 * A model saved to a buffer and loaded back predicts bit for bit the same
 * and shows the same statistics; a version-1 file loads with no
 * preprocessing and no search record; corrupt version-2 sections are
 * KM_ECORRUPT with a message naming the field; the search record
 * round-trips.
 */
#include <float.h>

#include "../check_main.h"
#include "model_bytes.h"
#include "../testdata.h"
#include "km.h"

/* ------------------------------------------------------------ the cases */

#define N_TRAIN 150
#define N_TEST 50
#define CONST 7.0

typedef enum { D_CLS, D_REG, D_REG2, D_KPCA } data_kind;

typedef struct pre_case {
    const char *name;
    data_kind data;
    km_algorithm algo;
    km_scale scale;
    int center_y;
    double gamma;
    double a, b; /* krr: alpha; svm: C, epsilon; kpca: alpha */
} pre_case;

/* As tests/fixtures/pre_cases.py. */
static const pre_case CASES[] = {
    {"krr_std", D_REG, KM_ALGO_KRR, KM_SCALE_STANDARDIZE, 0, 0.05, 0.1, 0},
    {"krr_mm", D_REG, KM_ALGO_KRR, KM_SCALE_MINMAX, 0, 0.2, 0.1, 0},
    {"krr_std_cy", D_REG2, KM_ALGO_KRR, KM_SCALE_STANDARDIZE, 1, 0.05, 0.5, 0},
    {"krr_none_cy", D_REG, KM_ALGO_KRR, KM_SCALE_NONE, 1, 1e-5, 1.0, 0},
    {"svc_std", D_CLS, KM_ALGO_SVC, KM_SCALE_STANDARDIZE, 0, 0.03, 1.0, 0},
    {"svc_mm", D_CLS, KM_ALGO_SVC, KM_SCALE_MINMAX, 0, 0.1, 2.0, 0},
    {"svr_std_cy", D_REG, KM_ALGO_SVR, KM_SCALE_STANDARDIZE, 1, 0.05, 10.0, 0.1},
    {"svr_mm", D_REG, KM_ALGO_SVR, KM_SCALE_MINMAX, 0, 0.2, 10.0, 0.1},
    {"kpca_std", D_KPCA, KM_ALGO_KPCA, KM_SCALE_STANDARDIZE, 0, 0.1, 0.1, 0},
    {"kpca_mm", D_KPCA, KM_ALGO_KPCA, KM_SCALE_MINMAX, 0, 0.5, 0.1, 0},
};
#define N_CASES (sizeof CASES / sizeof *CASES)

/* One case's data: X (200 rows), y or labels. */
typedef struct data {
    size_t d, m;
    double *X, *y;
    int *labels;
} data;

static data make_data(data_kind kind)
{
    km_dataset ds;
    ck_assert_msg(km_dataset_load("breast_cancer.csv", N_TRAIN + N_TEST,
                                  &ds) == 0, "cannot read breast_cancer.csv");
    ck_assert_uint_eq(ds.n, N_TRAIN + N_TEST);
    data out = {0};
    size_t first = kind == D_REG || kind == D_REG2 ? 1 : 0;
    size_t last = kind == D_KPCA ? 10 : ds.d; /* feature columns [first, last) */
    out.d = last - first + 1;
    out.X = malloc(ds.n * out.d * sizeof *out.X);
    for (size_t i = 0; i < ds.n; i++) {
        for (size_t j = first; j < last; j++)
            out.X[i * out.d + j - first] = ds.X[i * ds.d + j];
        out.X[i * out.d + out.d - 1] = CONST;
    }
    if (kind == D_CLS) {
        out.labels = malloc(ds.n * sizeof *out.labels);
        for (size_t i = 0; i < ds.n; i++)
            out.labels[i] = (int)ds.y[i];
    } else if (kind != D_KPCA) {
        out.m = kind == D_REG2 ? 2 : 1;
        out.y = malloc(ds.n * out.m * sizeof *out.y);
        for (size_t i = 0; i < ds.n; i++) {
            out.y[i * out.m] = ds.X[i * ds.d + 0];
            if (out.m == 2)
                out.y[i * 2 + 1] = ds.X[i * ds.d + 3];
        }
    }
    km_dataset_free(&ds);
    return out;
}

static void free_data(data *dt)
{
    free(dt->X);
    free(dt->y);
    free(dt->labels);
}

/* The case's kernel, params (into buf) and preprocessing; fits it. */
static km_model *fit_case(const pre_case *c, const data *dt, km_error *err,
                          km_status *st)
{
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_RBF);
    k.gamma = c->gamma;
    union {
        km_krr_params krr;
        km_svm_params svm;
        km_kpca_params kpca;
    } p;
    if (c->algo == KM_ALGO_KRR) {
        p.krr = km_krr_params_default();
        p.krr.alpha = c->a;
    } else if (c->algo == KM_ALGO_KPCA) {
        p.kpca = km_kpca_params_default();
        p.kpca.n_components = 3;
        p.kpca.fit_inverse_transform = 1;
        p.kpca.alpha = c->a;
        p.kpca.solver = KM_KPCA_SOLVER_DENSE;
    } else {
        p.svm = km_svm_params_default();
        p.svm.C = c->a;
        p.svm.epsilon = c->b;
        p.svm.tol = 1e-10;
    }
    km_problem pb = {dt->X, N_TRAIN, dt->d, dt->y, dt->m, dt->labels,
                     dt->labels ? 2 : 0};
    km_preprocess pre = {c->scale, c->center_y};
    km_model *m = NULL;
    *st = km_fit(c->algo, &k, &p, &pre, &pb, NULL, &m, err);
    km_kernel_cleanup(&k);
    return m;
}

static double max_abs(const double *v, size_t n)
{
    double a = 0;
    for (size_t i = 0; i < n; i++)
        a = fmax(a, fabs(v[i]));
    return a;
}

/* Reads pre_<case>_<what>.txt, checking its length. */
static double *fixture(const pre_case *c, const char *what, size_t want)
{
    char file[128];
    size_t n;
    snprintf(file, sizeof file, "pre_%s_%s.txt", c->name, what);
    double *v = km_read_fixture(file, &n);
    ck_assert_msg(n == want, "%s has %zu values, not %zu", file, n, want);
    return v;
}

/* Every answer the case's model gives on the test rows, concatenated:
 * what round trips compare bit for bit. */
static double *answers(const km_model *m, const pre_case *c, const data *dt,
                       const double *proj_in, size_t *len)
{
    const double *T = dt->X + N_TRAIN * dt->d;
    size_t w = c->algo == KM_ALGO_KPCA ? 3 + dt->d : dt->m ? dt->m : 2;
    double *out = calloc(N_TEST * w, sizeof *out);
    km_error err;
    switch (c->algo) {
    case KM_ALGO_SVC: {
        int lab[N_TEST];
        ck_assert_int_eq(km_predict(m, KM_OUT_SCORES, T, N_TEST, out, &err),
                         KM_OK);
        ck_assert_int_eq(km_predict_labels(m, T, N_TEST, lab, &err), KM_OK);
        for (size_t i = 0; i < N_TEST; i++)
            out[N_TEST + i] = lab[i];
        break;
    }
    case KM_ALGO_KPCA:
        ck_assert_int_eq(km_predict(m, KM_OUT_PROJECTIONS, T, N_TEST, out,
                                    &err), KM_OK);
        ck_assert_msg(km_predict(m, KM_OUT_INVERSE, proj_in, N_TEST,
                                 out + N_TEST * 3, &err) == KM_OK, "%s",
                      err.message);
        break;
    default:
        ck_assert_msg(km_predict(m, KM_OUT_VALUES, T, N_TEST, out, &err) ==
                      KM_OK, "%s", err.message);
        break;
    }
    *len = N_TEST * w;
    return out;
}

static void same_view(const km_model *a, const km_model *b)
{
    km_preprocess_view va = km_model_preprocess(a), vb = km_model_preprocess(b);
    size_t d = km_model_n_features(a), m = km_model_n_outputs(a);
    ck_assert_int_eq(va.spec.x, vb.spec.x);
    ck_assert_int_eq(va.spec.center_y, vb.spec.center_y);
    ck_assert_int_eq(!va.x_shift, !vb.x_shift);
    ck_assert_int_eq(!va.y_mean, !vb.y_mean);
    if (va.x_shift) {
        ck_assert_mem_eq(va.x_shift, vb.x_shift, d * sizeof(double));
        ck_assert_mem_eq(va.x_scale, vb.x_scale, d * sizeof(double));
    }
    if (va.y_mean)
        ck_assert_mem_eq(va.y_mean, vb.y_mean, m * sizeof(double));
}

/* ------------------------------------------------------------ sklearn */

/* The svm case c refitted with the typed function on its training rows
 * scaled by scikit-learn's formula and statistics (pre_C_stats.txt: x -=
 * mean_, x /= scale_; or x *= scale_, x += min_) and y less y_mean: its
 * answers on the test rows (scaled the same way, y_mean added back) must
 * be got's (km_fit with the preprocessing, km_predict on raw rows). */
static void check_against_typed(const pre_case *c, const data *dt,
                                const km_model *m, const double *got)
{
    size_t d = dt->d, n = N_TRAIN + N_TEST;
    double *stats = fixture(c, "stats", 2 * d);
    double *S = malloc(n * d * sizeof *S);
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < d; j++) {
            double x = dt->X[i * d + j];
            if (c->scale == KM_SCALE_STANDARDIZE) {
                x -= stats[j];
                x /= stats[d + j];
            } else {
                x *= stats[j];
                x += stats[d + j];
            }
            S[i * d + j] = x;
        }
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_RBF);
    k.gamma = c->gamma;
    km_svm_params p = km_svm_params_default();
    p.C = c->a;
    p.epsilon = c->b;
    p.tol = 1e-10;
    km_model *t = NULL;
    double want[N_TEST];
    const double *ym = km_model_preprocess(m).y_mean;
    if (c->algo == KM_ALGO_SVC) {
        ck_assert_int_eq(km_svc_fit(&k, &p, S, N_TRAIN, d, dt->labels, 2, NULL,
                                    &t, NULL), KM_OK);
        ck_assert_int_eq(km_svc_decision(t, S + N_TRAIN * d, N_TEST, want,
                                         NULL), KM_OK);
    } else {
        double y[N_TRAIN];
        for (size_t i = 0; i < N_TRAIN; i++)
            y[i] = dt->y[i] - (ym ? ym[0] : 0);
        ck_assert_int_eq(km_svr_fit(&k, &p, S, N_TRAIN, d, y, NULL, &t, NULL),
                         KM_OK);
        ck_assert_int_eq(km_svr_predict(t, S + N_TRAIN * d, N_TEST, want,
                                        NULL), KM_OK);
        for (size_t i = 0; i < N_TEST; i++)
            want[i] += ym ? ym[0] : 0;
    }
    double e = km_max_rel_err(got, want, N_TEST, 1e-3 * max_abs(want, N_TEST));
    ck_assert_msg(e <= 1e-9, "%s: answers off the typed fit on scikit-learn's "
                  "scaling by %g", c->name, e);
    km_model_free(t);
    km_kernel_cleanup(&k);
    free(S);
    free(stats);
}

START_TEST(against_sklearn)
{
    const pre_case *c = &CASES[_i];
    data dt = make_data(c->data);
    km_error err = {KM_OK, ""};
    km_status st;
    km_model *m = fit_case(c, &dt, &err, &st);
    ck_assert_msg(st == KM_OK, "%s: %s", c->name, err.message);
    if (c->algo == KM_ALGO_SVC) {
        const char *labels[2] = {"0", "1"};
        ck_assert_int_eq(km_model_set_labels(m, labels, 2, 1, NULL), KM_OK);
    }
    size_t d = dt.d;
    const double *T = dt.X + N_TRAIN * d;

    /* the statistics and the scaled rows */
    km_preprocess_view v = km_model_preprocess(m);
    ck_assert_int_eq(v.spec.x, c->scale);
    ck_assert_int_eq(v.spec.center_y, c->center_y);
    if (c->scale == KM_SCALE_NONE) {
        ck_assert_ptr_null(v.x_shift);
        ck_assert_ptr_null(v.x_scale);
    } else {
        double *stats = fixture(c, "stats", 2 * d);
        double *Xt = fixture(c, "Xt", N_TEST * d);
        double worst = 0;
        for (size_t j = 0; j < d; j++) {
            double e1, e2;
            if (c->scale == KM_SCALE_STANDARDIZE) {
                e1 = fabs(v.x_shift[j] - stats[j]) / fmax(fabs(stats[j]), 1e-300);
                e2 = fabs(v.x_scale[j] - stats[d + j]) / stats[d + j];
            } else { /* x scale_ + min_ = (x - shift) / scale */
                double s = stats[j], mn = stats[d + j];
                e1 = fabs(1 / v.x_scale[j] - s) / s;
                e2 = fabs(-v.x_shift[j] / v.x_scale[j] - mn) / fmax(fabs(mn), 1);
            }
            worst = fmax(worst, fmax(e1, e2));
        }
        ck_assert_msg(worst <= 1e-15, "%s: statistics off by %g", c->name,
                      worst);
        worst = 0;
        for (size_t i = 0; i < N_TEST; i++)
            for (size_t j = 0; j < d; j++)
                worst = fmax(worst, fabs((T[i * d + j] - v.x_shift[j]) /
                                         v.x_scale[j] - Xt[i * d + j]));
        ck_assert_msg(worst <= 1e-14, "%s: scaled rows off by %g", c->name,
                      worst);
        /* the constant column: scale 1 (standardize: x - mean = 0) or
         * -1 (minmax: range counted as 1) */
        ck_assert_double_eq(v.x_scale[d - 1],
                            c->scale == KM_SCALE_STANDARDIZE ? 1.0 : 0.5);
        ck_assert_double_eq((CONST - v.x_shift[d - 1]) / v.x_scale[d - 1],
                            c->scale == KM_SCALE_STANDARDIZE ? 0.0 : -1.0);
        free(stats);
        free(Xt);
    }
    if (c->center_y) {
        double *ym = fixture(c, "ymean", dt.m);
        ck_assert_ptr_nonnull(v.y_mean);
        ck_assert_msg(km_max_rel_err(v.y_mean, ym, dt.m, 1e-300) <= 1e-14,
                      "%s: y_mean", c->name);
        free(ym);
    } else {
        ck_assert_ptr_null(v.y_mean);
    }

    /* the answers */
    double *proj = NULL;
    int smo = c->algo == KM_ALGO_SVC || c->algo == KM_ALGO_SVR;
    double tol = smo ? 1e-6 : 1e-10;
    size_t len;
    if (c->algo == KM_ALGO_KPCA)
        proj = fixture(c, "proj", N_TEST * 3);
    double *got = answers(m, c, &dt, proj, &len);
    if (c->algo == KM_ALGO_KPCA) {
        double *inv = fixture(c, "inverse", N_TEST * d);
        double e = km_max_rel_err(got, proj, N_TEST * 3,
                                  1e-3 * max_abs(proj, N_TEST * 3));
        ck_assert_msg(e <= tol, "%s: projections off by %g", c->name, e);
        e = km_max_rel_err(got + N_TEST * 3, inv, N_TEST * d,
                           1e-3 * max_abs(inv, N_TEST * d));
        ck_assert_msg(e <= tol, "%s: inverse map off by %g", c->name, e);
        free(inv);
    } else if (c->algo == KM_ALGO_SVC) {
        double *dec = fixture(c, "pred", N_TEST);
        double *lab = fixture(c, "labels", N_TEST);
        for (size_t i = 0; i < N_TEST; i++) {
            got[i] = -got[i]; /* scikit-learn's sign: positive is class 1 */
            ck_assert_msg(got[N_TEST + i] == lab[i], "%s: label %zu",
                          c->name, i);
        }
        double e = km_max_rel_err(got, dec, N_TEST, 1e-3 * max_abs(dec, N_TEST));
        ck_assert_msg(e <= tol, "%s: decision values off by %g", c->name, e);
        for (size_t i = 0; i < N_TEST; i++)
            got[i] = -got[i];
        free(dec);
        free(lab);
    } else {
        double *want = fixture(c, "pred", N_TEST * dt.m);
        double e = km_max_rel_err(got, want, N_TEST * dt.m,
                                  1e-3 * max_abs(want, N_TEST * dt.m));
        ck_assert_msg(e <= tol, "%s: predictions off by %g", c->name, e);
        free(want);
    }

    if (smo)
        check_against_typed(c, &dt, m, got);

    /* a round trip through a buffer: the same answers bit for bit */
    unsigned char *buf;
    size_t blen;
    ck_assert_int_eq(km_model_save_buffer(m, &buf, &blen, &err), KM_OK);
    km_model *back = NULL;
    ck_assert_msg(km_model_load_buffer(buf, blen, &back, &err) == KM_OK, "%s",
                  err.message);
    same_view(m, back);
    ck_assert_ptr_null(km_model_search(back));
    size_t len2;
    double *got2 = answers(back, c, &dt, proj, &len2);
    ck_assert_uint_eq(len, len2);
    ck_assert_mem_eq(got, got2, len * sizeof *got);
    free(got2);
    free(buf);
    km_model_free(back);
    free(got);
    free(proj);
    km_model_free(m);
    free_data(&dt);
}
END_TEST

/* The typed predicts work in the model's own space: km_krr_predict of the
 * scaled rows (plus y_mean) is km_predict of the raw ones. */
START_TEST(typed_predict_model_space)
{
    const pre_case *c = &CASES[2]; /* krr_std_cy: two outputs */
    data dt = make_data(c->data);
    km_error err;
    km_status st;
    km_model *m = fit_case(c, &dt, &err, &st);
    ck_assert_int_eq(st, KM_OK);
    size_t d = dt.d;
    km_preprocess_view v = km_model_preprocess(m);
    double *T = malloc(N_TEST * d * sizeof *T);
    for (size_t i = 0; i < N_TEST; i++)
        for (size_t j = 0; j < d; j++)
            T[i * d + j] = (dt.X[(N_TRAIN + i) * d + j] - v.x_shift[j]) /
                           v.x_scale[j];
    double a[N_TEST * 2], b[N_TEST * 2];
    ck_assert_int_eq(km_krr_predict(m, T, N_TEST, a, NULL), KM_OK);
    ck_assert_int_eq(km_predict(m, KM_OUT_VALUES, dt.X + N_TRAIN * d, N_TEST,
                                b, NULL), KM_OK);
    for (size_t i = 0; i < N_TEST * 2; i++)
        ck_assert_double_eq(a[i] + v.y_mean[i % 2], b[i]);
    free(T);
    km_model_free(m);
    free_data(&dt);
}
END_TEST

/* More rows than one block of the scaled copy (km_pre.c: 2^17 values,
 * 4228 rows of 31 features): every block's answers land in their rows.
 * The test rows repeated 200 times answer as the 50 rows do (to 1e-12:
 * BLAS may round another batch shape differently). */
START_TEST(many_rows_in_blocks)
{
    static const size_t cases[] = {4, 2}; /* svc_std; krr_std_cy (2 outputs) */
    for (size_t c_i = 0; c_i < 2; c_i++) {
        const pre_case *c = &CASES[cases[c_i]];
        data dt = make_data(c->data);
        km_error err;
        km_status st;
        km_model *m = fit_case(c, &dt, &err, &st);
        ck_assert_int_eq(st, KM_OK);
        if (c->algo == KM_ALGO_SVC) {
            const char *labels[2] = {"0", "1"};
            ck_assert_int_eq(km_model_set_labels(m, labels, 2, 1, NULL), KM_OK);
        }
        size_t d = dt.d, reps = 200, n = N_TEST * reps, w = dt.m ? dt.m : 1;
        double *X = malloc(n * d * sizeof *X);
        for (size_t r = 0; r < reps; r++)
            memcpy(X + r * N_TEST * d, dt.X + N_TRAIN * d,
                   N_TEST * d * sizeof *X);
        unsigned answer = c->algo == KM_ALGO_SVC ? KM_OUT_SCORES : KM_OUT_VALUES;
        double *big = malloc(n * w * sizeof *big), one[N_TEST * 2];
        ck_assert_int_eq(km_predict(m, answer, X, n, big, &err), KM_OK);
        ck_assert_int_eq(km_predict(m, answer, X, N_TEST, one, &err), KM_OK);
        for (size_t i = 0; i < n * w; i++)
            ck_assert_msg(fabs(big[i] - one[i % (N_TEST * w)]) <=
                          1e-12 * fmax(1, fabs(one[i % (N_TEST * w)])),
                          "%s: value %zu", c->name, i);
        if (c->algo == KM_ALGO_SVC) {
            int *lab = malloc(n * sizeof *lab), l1[N_TEST];
            ck_assert_int_eq(km_predict_labels(m, X, n, lab, &err), KM_OK);
            ck_assert_int_eq(km_predict_labels(m, X, N_TEST, l1, &err), KM_OK);
            for (size_t i = 0; i < n; i++)
                ck_assert_int_eq(lab[i], l1[i % N_TEST]);
            free(lab);
        }
        /* an entry far outside the scaling (mean smoothness, std about
         * 0.014: 1e308 scales past the doubles) is named */
        size_t j = c->data == D_CLS ? 4 : 3;
        X[(n - 1) * d + j] = 1e308;
        ck_assert_int_eq(km_predict(m, answer, X, n, big, &err), KM_EINVAL);
        char want[64];
        snprintf(want, sizeof want, "X[%zu][%zu]", n - 1, j);
        ck_assert_msg(strstr(err.message, want), "%s", err.message);
        free(big);
        free(X);
        km_model_free(m);
        free_data(&dt);
    }
}
END_TEST

/* A classifier of 4 classes, scaled, on a batch of three blocks of the
 * scaled copy (2^17 / 512 features = 256 rows a block; 704 rows, the
 * last block part full): every answer it offers has the row width the
 * docs give (labels 1; decision values klr k, svc k(k-1)/2;
 * probabilities k) and km_model_answer_width says so; the batch's answer
 * fills a buffer of exactly n such rows (issue 24: klr's decision values
 * were placed k(k-1)/2 a row apart, past the buffer's end, which ASan
 * reports) and each row equals that row predicted alone: the first and
 * last row of every block and some between (numbers to 1e-12 of the
 * answer's largest value, as above; labels exactly). */
#define CB_D 512
#define CB_BLOCK (((size_t)1 << 17) / CB_D)
#define CB_N (2 * CB_BLOCK + 3 * CB_BLOCK / 4)
#define CB_TRAIN 40
#define CB_K 4

static const struct {
    const char *name;
    km_algorithm algo;
    km_klr_multi multi;
    size_t scores; /* decision values a row */
} CB_CASES[] = {
    {"klr multinomial", KM_ALGO_KLR, KM_KLR_MULTINOMIAL, CB_K},
    {"klr ovr", KM_ALGO_KLR, KM_KLR_OVR, CB_K},
    {"svc", KM_ALGO_SVC, KM_KLR_MULTINOMIAL, CB_K * (CB_K - 1) / 2},
};
#define N_CB_CASES (sizeof CB_CASES / sizeof *CB_CASES)

/* n rows of class i % CB_K: a class's mark on its features, noise, and
 * features of unequal shift and scale (so that the scaling matters). */
static void cb_rows(double *X, int *cls, size_t n, uint64_t *s)
{
    for (size_t i = 0; i < n; i++) {
        int c = (int)(i % CB_K);
        if (cls)
            cls[i] = c;
        for (size_t j = 0; j < CB_D; j++) {
            *s = *s * 6364136223846793005u + 1442695040888963407u;
            double noise = (double)(*s >> 11) / 9007199254740992.0 - 0.5;
            double z = (j % CB_K == (size_t)c ? 0.6 : 0) + noise;
            X[i * CB_D + j] = z * (1 + (double)(j % 7)) + (double)(j % 5);
        }
    }
}

START_TEST(classes_in_three_blocks)
{
    const char *labels[CB_K] = {"a", "b", "c", "d"};
    uint64_t seed = 24;
    double *Xtr = malloc(CB_TRAIN * CB_D * sizeof *Xtr);
    double *X = malloc(CB_N * CB_D * sizeof *X);
    int cls[CB_TRAIN];
    ck_assert(Xtr && X);
    cb_rows(Xtr, cls, CB_TRAIN, &seed);
    cb_rows(X, NULL, CB_N, &seed);
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_RBF);
    k.gamma = 0.5 / CB_D;
    union {
        km_klr_params klr;
        km_svm_params svm;
    } p;
    if (CB_CASES[_i].algo == KM_ALGO_KLR) {
        p.klr = km_klr_params_default();
        p.klr.multi_class = CB_CASES[_i].multi;
    } else {
        p.svm = km_svm_params_default();
    }
    km_problem pb = {Xtr, CB_TRAIN, CB_D, NULL, 0, cls, CB_K};
    km_preprocess pre = {KM_SCALE_STANDARDIZE, 0};
    km_model *m = NULL;
    km_error err;
    ck_assert_int_eq(km_fit(CB_CASES[_i].algo, &k, &p, &pre, &pb, NULL, &m,
                            &err), KM_OK);
    ck_assert_int_eq(km_model_set_labels(m, labels, CB_K, 0, NULL), KM_OK);

    /* rows asked alone: the first and last of each block, and some more */
    size_t rows[12], nr = 0;
    for (size_t b = 0; b < CB_N; b += CB_BLOCK) {
        rows[nr++] = b;
        rows[nr++] = (b + CB_BLOCK < CB_N ? b + CB_BLOCK : CB_N) - 1;
    }
    rows[nr++] = CB_BLOCK / 3;
    rows[nr++] = CB_BLOCK + CB_BLOCK / 2 + 1;
    rows[nr++] = 2 * CB_BLOCK + 7;

    int *lab = malloc(CB_N * sizeof *lab);
    ck_assert_int_eq(km_predict_labels(m, X, CB_N, lab, &err), KM_OK);
    for (size_t r = 0; r < nr; r++) {
        int one = -1;
        ck_assert_int_eq(km_predict_labels(m, X + rows[r] * CB_D, 1, &one,
                                           &err), KM_OK);
        ck_assert_msg(lab[rows[r]] == one, "%s: label of row %zu",
                      CB_CASES[_i].name, rows[r]);
    }
    free(lab);

    static const unsigned answers[] = {KM_OUT_SCORES, KM_OUT_PROBABILITIES};
    for (size_t a = 0; a < 2; a++) {
        if (!(km_model_outputs(m) & answers[a]))
            continue; /* svc fitted without probability */
        size_t w = answers[a] == KM_OUT_SCORES ? CB_CASES[_i].scores : CB_K;
        ck_assert_uint_eq(km_model_answer_width(m, answers[a], CB_N), w);
        double *big = malloc(CB_N * w * sizeof *big), one[CB_K * CB_K];
        ck_assert_int_eq(km_predict(m, answers[a], X, CB_N, big, &err), KM_OK);
        double scale = max_abs(big, CB_N * w);
        for (size_t r = 0; r < nr; r++) {
            ck_assert_int_eq(km_predict(m, answers[a], X + rows[r] * CB_D, 1,
                                        one, &err), KM_OK);
            for (size_t j = 0; j < w; j++)
                ck_assert_msg(fabs(big[rows[r] * w + j] - one[j]) <=
                              1e-12 * scale, "%s: answer 0x%x, row %zu, "
                              "value %zu: %.17g in the batch, %.17g alone",
                              CB_CASES[_i].name, answers[a], rows[r], j,
                              big[rows[r] * w + j], one[j]);
        }
        free(big);
    }
    km_model_free(m);
    km_kernel_cleanup(&k);
    free(Xtr);
    free(X);
}
END_TEST

/* What km_fit refuses, and the generic sizes. */
START_TEST(checks_and_sizes)
{
    data dt = make_data(D_CLS);
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_RBF);
    km_svm_params p = km_svm_params_default();
    km_problem pb = {dt.X, N_TRAIN, dt.d, NULL, 0, dt.labels, 2};
    km_model *m = NULL;
    km_error err;
    km_preprocess cy = {KM_SCALE_NONE, 1};
    ck_assert_int_eq(km_fit(KM_ALGO_SVC, &k, &p, &cy, &pb, NULL, &m, &err),
                     KM_EINVAL);
    ck_assert_msg(strstr(err.message, "preprocess.center_y") &&
                  strstr(err.message, "krr, svr"), "%s", err.message);
    ck_assert_ptr_null(m);
    km_preprocess bad = {(km_scale)7, 0};
    ck_assert_int_eq(km_fit(KM_ALGO_SVC, &k, &p, &bad, &pb, NULL, &m, &err),
                     KM_EINVAL);
    ck_assert_msg(strstr(err.message, "preprocess.scale"), "%s", err.message);
    /* not finite: refused before any statistic is computed */
    km_preprocess std = {KM_SCALE_STANDARDIZE, 0};
    double keep = dt.X[5 * dt.d + 2];
    dt.X[5 * dt.d + 2] = NAN;
    ck_assert_int_eq(km_fit(KM_ALGO_SVC, &k, &p, &std, &pb, NULL, &m, &err),
                     KM_EINVAL);
    ck_assert_msg(strstr(err.message, "X[5][2]"), "%s", err.message);
    dt.X[5 * dt.d + 2] = keep;
    /* a bad param is still the algorithm's message */
    p.C = -1;
    ck_assert_int_eq(km_fit(KM_ALGO_SVC, &k, &p, &std, &pb, NULL, &m, &err),
                     KM_EINVAL);
    ck_assert_msg(strstr(err.message, "params.C"), "%s", err.message);
    p.C = 1;

    /* sizes: the copies count in the estimate, the statistics in the model */
    ck_assert_uint_eq(km_preprocess_fit_bytes(NULL, &pb), 0);
    ck_assert_uint_ge(km_preprocess_fit_bytes(&std, &pb),
                      N_TRAIN * dt.d * sizeof(double));
    {   /* krr's payload does not depend on the data: the two models differ
         * by the statistics, 2 d + m doubles */
        double X[6] = {0, 1, 1, 0, 2, 2}, y[6] = {1, 2, 3, 4, 5, 7};
        km_krr_params kp = km_krr_params_default();
        km_problem kb = {X, 3, 2, y, 2, NULL, 0};
        km_preprocess both = {KM_SCALE_MINMAX, 1};
        km_model *plain = NULL;
        ck_assert_int_eq(km_fit(KM_ALGO_KRR, &k, &kp, NULL, &kb, NULL, &plain,
                                &err), KM_OK);
        ck_assert_int_eq(km_fit(KM_ALGO_KRR, &k, &kp, &both, &kb, NULL, &m,
                                &err), KM_OK);
        ck_assert_uint_eq(km_model_bytes(m),
                          km_model_bytes(plain) + 6 * sizeof(double));
        ck_assert_uint_ge(km_preprocess_fit_bytes(&both, &kb),
                          (3 * 2 + 3 * 2) * sizeof(double));
        km_model_free(plain);
        km_model_free(m);
    }
    /* names */
    for (int s = 0; s < KM_SCALE_COUNT; s++) {
        km_scale back;
        ck_assert_int_eq(km_scale_parse(km_scale_name((km_scale)s), &back), 0);
        ck_assert_int_eq(back, s);
    }
    km_scale none;
    ck_assert_int_eq(km_scale_parse("zscore", &none), -1);
    ck_assert_ptr_null(km_scale_name(KM_SCALE_COUNT));
    ck_assert_str_eq(km_scale_name(KM_SCALE_MINMAX), "minmax");
    km_kernel_cleanup(&k);
    free_data(&dt);
}
END_TEST

/* ------------------------------------------------------------ the file */

/* Where the version-2 sections start: the preprocessing section (after
 * the labels), and the search record. */
typedef struct sections {
    size_t pre, search;
} sections;

static sections sections_of(const unsigned char *b)
{
    size_t p = 36 + 4 + get32(b + 36) + 16;
    p = skip_info(b, skip_info(b, skip_kernel(b, p)));
    uint64_t n = get64(b + p);
    p += 12;
    for (uint64_t i = 0; i < n; i++)
        p += 4 + get32(b + p);
    sections s = {p, p + 8};
    if (get32(b + p))
        s.search += 2 * (8 + 8 * get64(b + p + 8));
    if (get32(b + p + 4))
        s.search += 8 + 8 * get64(b + s.search);
    return s;
}

/* A file to alter, with room to grow. */
typedef struct file {
    unsigned char *buf;
    size_t len;
    sections at;
} file;

static file save(const km_model *m)
{
    file f;
    unsigned char *b;
    ck_assert_int_eq(km_model_save_buffer(m, &b, &f.len, NULL), KM_OK);
    f.buf = malloc(f.len + 4096);
    memcpy(f.buf, b, f.len);
    free(b);
    f.at = sections_of(f.buf);
    return f;
}

static file copy(const file *f)
{
    file c = *f;
    c.buf = malloc(f->len + 4096);
    memcpy(c.buf, f->buf, f->len);
    return c;
}

/* Replaces bytes [at, at + old) by n bytes of with; fixes the CRC. */
static void splice(file *f, size_t at, size_t old, const void *with, size_t n)
{
    memmove(f->buf + at + n, f->buf + at + old, f->len - at - old);
    memcpy(f->buf + at, with, n);
    f->len = f->len - old + n;
    fix_crc(f->buf, f->len);
}

static void set32(file *f, size_t at, uint32_t v)
{
    put32(f->buf + at, v);
    fix_crc(f->buf, f->len);
}

static void set64(file *f, size_t at, uint64_t v)
{
    put64(f->buf + at, v);
    fix_crc(f->buf, f->len);
}

static void setf64(file *f, size_t at, double v)
{
    uint64_t u;
    memcpy(&u, &v, 8);
    set64(f, at, u);
}

/* Expects f refused with st and a message holding what; frees f. */
static void expect(file f, km_status st, const char *what)
{
    km_model *m = NULL;
    km_error err = {KM_OK, ""};
    km_status got = km_model_load_buffer(f.buf, f.len, &m, &err);
    ck_assert_msg(got == st, "%s: got %s (%s)", what, km_status_name(got),
                  err.message);
    ck_assert_ptr_null(m);
    ck_assert_msg(strstr(err.message, what) != NULL,
                  "message \"%s\" does not name \"%s\"", err.message, what);
    free(f.buf);
}

/* A small krr model (4 rows, 2 features, 2 outputs) with standardize and
 * center_y, and a search record of 3 points over 2 parameters. */
static const double SX[8] = {0, 10, 1, 20, 2, 10, 5, 40};
static const double SY[8] = {1, 100, 2, 200, 4, 150, 3, 120};
static const double SVALS[6] = {0.1, 0.5, 1, 0.5, 10, 0.25};
static const double SMEAN[3] = {0.5, 0.75, -0.25};
static const double SSTD[3] = {0.1, 0, 0.2};
static const double SSECS[3] = {0.01, 0.02, 0.03};

static km_search_table small_table(void)
{
    km_search_table t;
    memset(&t, 0, sizeof t);
    t.scoring = (km_scoring)1;
    t.cv = KM_CV_KFOLD;
    t.n_splits = 5;
    t.n_params = 2;
    strcpy(t.names[0], "alpha");
    strcpy(t.names[1], "kernel.gamma");
    t.n_points = 3;
    t.values = SVALS;
    t.mean = SMEAN;
    t.std = SSTD;
    t.fit_seconds = SSECS;
    t.best = 1;
    return t;
}

static km_model *small_model(int with_search)
{
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_RBF);
    km_krr_params p = km_krr_params_default();
    km_problem pb = {SX, 4, 2, SY, 2, NULL, 0};
    km_preprocess pre = {KM_SCALE_STANDARDIZE, 1};
    km_model *m = NULL;
    km_error err;
    ck_assert_msg(km_fit(KM_ALGO_KRR, &k, &p, &pre, &pb, NULL, &m, &err) ==
                  KM_OK, "%s", err.message);
    if (with_search) {
        km_search_table t = small_table();
        ck_assert_int_eq(km_model_set_search(m, &t, &err), KM_OK);
    }
    return m;
}

START_TEST(search_record_round_trip)
{
    km_model *m = small_model(1);
    const km_search_table *t = km_model_search(m);
    ck_assert_ptr_nonnull(t);
    ck_assert_ptr_ne(t->values, SVALS); /* a copy */
    unsigned char *buf;
    size_t len;
    ck_assert_int_eq(km_model_save_buffer(m, &buf, &len, NULL), KM_OK);
    km_model *b = NULL;
    km_error err;
    ck_assert_msg(km_model_load_buffer(buf, len, &b, &err) == KM_OK, "%s",
                  err.message);
    const km_search_table *u = km_model_search(b);
    ck_assert_ptr_nonnull(u);
    ck_assert_int_eq(u->scoring, 1);
    ck_assert_int_eq(u->cv, KM_CV_KFOLD);
    ck_assert_uint_eq(u->n_splits, 5);
    ck_assert_uint_eq(u->n_params, 2);
    ck_assert_str_eq(u->names[0], "alpha");
    ck_assert_str_eq(u->names[1], "kernel.gamma");
    ck_assert_uint_eq(u->n_points, 3);
    ck_assert_mem_eq(u->values, SVALS, sizeof SVALS);
    ck_assert_mem_eq(u->mean, SMEAN, sizeof SMEAN);
    ck_assert_mem_eq(u->std, SSTD, sizeof SSTD);
    ck_assert_mem_eq(u->fit_seconds, SSECS, sizeof SSECS);
    ck_assert_uint_eq(u->best, 1);
    same_view(m, b);
    ck_assert_uint_eq(km_model_bytes(b), km_model_bytes(m));
    /* and the statistics: numpy's mean and population std of SX, SY */
    km_preprocess_view v = km_model_preprocess(b);
    ck_assert_double_eq(v.x_shift[0], 2.0);
    ck_assert_double_eq_tol(v.x_scale[0], sqrt(3.5), 1e-15);
    ck_assert_double_eq(v.x_shift[1], 20.0);
    ck_assert_double_eq_tol(v.x_scale[1], sqrt(150.0), 1e-14);
    ck_assert_double_eq(v.y_mean[0], 2.5);
    ck_assert_double_eq(v.y_mean[1], 142.5);
    km_model_free(b);
    free(buf);

    /* what km_model_set_search refuses */
    km_search_table bad = small_table();
    bad.n_points = 0;
    ck_assert_int_eq(km_model_set_search(m, &bad, &err), KM_EINVAL);
    ck_assert_msg(strstr(err.message, "n_points"), "%s", err.message);
    bad = small_table();
    bad.n_points = KM_SEARCH_MAX_POINTS + 1;
    ck_assert_int_eq(km_model_set_search(m, &bad, &err), KM_EINVAL);
    bad = small_table();
    bad.n_params = KM_SEARCH_MAX_PARAMS + 1;
    ck_assert_int_eq(km_model_set_search(m, &bad, &err), KM_EINVAL);
    bad = small_table();
    strcpy(bad.names[1], "kernel gamma");
    ck_assert_int_eq(km_model_set_search(m, &bad, &err), KM_EINVAL);
    ck_assert_msg(strstr(err.message, "name 1"), "%s", err.message);
    bad = small_table();
    bad.names[0][0] = '\0';
    ck_assert_int_eq(km_model_set_search(m, &bad, &err), KM_EINVAL);
    bad = small_table();
    bad.best = 3;
    ck_assert_int_eq(km_model_set_search(m, &bad, &err), KM_EINVAL);
    ck_assert_msg(strstr(err.message, "best"), "%s", err.message);
    bad = small_table();
    bad.scoring = KM_SCORING_COUNT;
    ck_assert_int_eq(km_model_set_search(m, &bad, &err), KM_EINVAL);
    bad = small_table();
    bad.cv = (km_cv_kind)(KM_CV_PREDEFINED + 1);
    ck_assert_int_eq(km_model_set_search(m, &bad, &err), KM_EINVAL);
    double nan_mean[3] = {0.5, NAN, 0};
    bad = small_table();
    bad.mean = nan_mean;
    ck_assert_int_eq(km_model_set_search(m, &bad, &err), KM_EINVAL);
    /* the record set first is still there, unchanged */
    ck_assert_uint_eq(km_model_search(m)->best, 1);
    ck_assert_double_eq(km_model_search(m)->mean[1], 0.75);
    km_model_free(m);
}
END_TEST

START_TEST(version_1_loads)
{
    /* a file an earlier server wrote */
    FILE *f = fopen(KM_FIXTURES "models/krr-rbf.kmm", "rb");
    ck_assert_ptr_nonnull(f);
    unsigned char head[8];
    ck_assert_uint_eq(fread(head, 1, 8, f), 8);
    ck_assert_uint_eq(get32(head + 4), 1);
    rewind(f);
    km_model *m = NULL;
    km_error err;
    ck_assert_msg(km_model_load_file(f, 1 << 26, &m, &err) == KM_OK, "%s",
                  err.message);
    fclose(f);
    km_preprocess_view v = km_model_preprocess(m);
    ck_assert_int_eq(v.spec.x, KM_SCALE_NONE);
    ck_assert_int_eq(v.spec.center_y, 0);
    ck_assert_ptr_null(v.x_shift);
    ck_assert_ptr_null(v.x_scale);
    ck_assert_ptr_null(v.y_mean);
    ck_assert_ptr_null(km_model_search(m));
    km_model_free(m);

    /* and one written here by hand: a version-2 file of a model without
     * preprocessing, less its two empty sections, as version 1 */
    double X[6] = {0, 1, 1, 0, 2, 2}, y[3] = {1, 2, 3}, T[2] = {0.5, 0.5};
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_RBF);
    km_krr_params p = km_krr_params_default();
    ck_assert_int_eq(km_krr_fit(&k, &p, X, 3, 2, y, 1, NULL, &m, NULL), KM_OK);
    file v2 = save(m);
    ck_assert_uint_eq(get32(v2.buf + 4), 2);
    file v1 = copy(&v2);
    splice(&v1, v1.at.pre, 12, "", 0);
    set32(&v1, 4, 1);
    km_model *b = NULL;
    ck_assert_msg(km_model_load_buffer(v1.buf, v1.len, &b, &err) == KM_OK,
                  "%s", err.message);
    double a1, a2;
    ck_assert_int_eq(km_predict(m, KM_OUT_VALUES, T, 1, &a1, NULL), KM_OK);
    ck_assert_int_eq(km_predict(b, KM_OUT_VALUES, T, 1, &a2, NULL), KM_OK);
    ck_assert_double_eq(a1, a2);
    ck_assert_int_eq(km_model_preprocess(b).spec.x, KM_SCALE_NONE);
    uint64_t most = 0;
    ck_assert_int_eq(km_model_check_header(v1.buf, 36, v1.len, &most, NULL),
                     KM_OK);
    ck_assert_uint_ge(most, v1.len);
    ck_assert_int_eq(km_model_check_header(v2.buf, 36, v2.len, &most, NULL),
                     KM_OK);
    /* a version-1 file holding the sections is not version 1 */
    set32(&v2, 4, 1);
    expect(v2, KM_ECORRUPT, "payload");
    km_model_free(b);
    km_model_free(m);
    free(v1.buf);
    km_kernel_cleanup(&k);
}
END_TEST

START_TEST(corrupt_sections)
{
    km_model *m = small_model(1);
    file f = save(m);
    size_t pre = f.at.pre, se = f.at.search;
    size_t shift = pre + 8, scale = shift + 8 + 16, ymean = scale + 8 + 16;
    size_t names = se + 28;
    size_t npoints = names + (4 + 5) + (4 + 12);
    size_t values = npoints + 8, mean = values + 8 + 48, sd = mean + 8 + 24;
    size_t best = sd + 2 * (8 + 24);
    ck_assert_uint_eq(ymean + 8 + 16, se);
    ck_assert_uint_eq(get64(f.buf + best), 1);
    { /* the unaltered file loads */
        km_model *b = NULL;
        km_error err;
        ck_assert_msg(km_model_load_buffer(f.buf, f.len, &b, &err) == KM_OK,
                      "%s", err.message);
        km_model_free(b);
    }
    file g;
    /* preprocessing section */
    g = copy(&f); set32(&g, pre, 3); expect(g, KM_ECORRUPT, "scale 3");
    g = copy(&f); set32(&g, pre, 0xFFFFFFFFu); expect(g, KM_ECORRUPT, "scale");
    g = copy(&f); set32(&g, pre + 4, 2); expect(g, KM_ECORRUPT, "center_y 2");
    g = copy(&f); setf64(&g, scale + 8, 0); expect(g, KM_ECORRUPT, "scale[0]");
    g = copy(&f); setf64(&g, scale + 16, -1); expect(g, KM_ECORRUPT, "scale[1]");
    g = copy(&f); setf64(&g, scale + 8, NAN); expect(g, KM_ECORRUPT, "scale[0]");
    g = copy(&f); setf64(&g, scale + 16, INFINITY);
    expect(g, KM_ECORRUPT, "scale[1]");
    g = copy(&f); setf64(&g, shift + 16, NAN); expect(g, KM_ECORRUPT, "shift[1]");
    g = copy(&f); setf64(&g, ymean + 8, -INFINITY);
    expect(g, KM_ECORRUPT, "y_mean");
    /* truncated arrays: a count one short, and the file one value short */
    g = copy(&f); set64(&g, shift, 1); splice(&g, shift + 16, 8, "", 0);
    expect(g, KM_ECORRUPT, "shift and scale");
    g = copy(&f); set64(&g, ymean, 1); splice(&g, ymean + 16, 8, "", 0);
    expect(g, KM_ECORRUPT, "y_mean");
    g = copy(&f); set64(&g, ymean, (uint64_t)1 << 60);
    expect(g, KM_ECORRUPT, "y_mean");
    /* scale none, but the arrays still there: they are read as what
     * follows, and the file no longer parses */
    g = copy(&f); set32(&g, pre, 0); expect(g, KM_ECORRUPT, "model file");
    /* the whole file cut inside the sections: the size check or the
     * parse refuses it, never a crash */
    for (size_t cut = pre; cut < best + 8; cut += 3) {
        g = copy(&f);
        splice(&g, cut, g.len - 4 - cut, "", 0);
        km_model *b = NULL;
        ck_assert_int_eq(km_model_load_buffer(g.buf, g.len, &b, NULL),
                         KM_ECORRUPT);
        free(g.buf);
    }
    /* search record */
    g = copy(&f); set32(&g, se, 2); expect(g, KM_ECORRUPT, "search record");
    g = copy(&f); set32(&g, se + 4, 99); expect(g, KM_ECORRUPT, "scoring 99");
    g = copy(&f); set32(&g, se + 8, 9); expect(g, KM_ECORRUPT, "cv kind 9");
    g = copy(&f); set64(&g, se + 12, UINT64_MAX);
    expect(g, KM_ECORRUPT, "n_splits");
    g = copy(&f); set64(&g, se + 20, 17); expect(g, KM_ECORRUPT, "parameters");
    g = copy(&f); set64(&g, se + 20, UINT64_MAX);
    expect(g, KM_ECORRUPT, "parameters");
    g = copy(&f); g.buf[names + 4 + 2] = ' '; fix_crc(g.buf, g.len);
    expect(g, KM_ECORRUPT, "name 0");
    g = copy(&f); g.buf[names + 9 + 4 + 6] = '/'; fix_crc(g.buf, g.len);
    expect(g, KM_ECORRUPT, "name 1");
    g = copy(&f); set32(&g, names, 0); splice(&g, names + 4, 5, "", 0);
    expect(g, KM_ECORRUPT, "name 0");
    {   /* a name of 32 bytes */
        unsigned char longname[36];
        put32(longname, 32);
        memset(longname + 4, 'a', 32);
        g = copy(&f); splice(&g, names, 9, longname, 36);
        expect(g, KM_ECORRUPT, "name 0");
    }
    g = copy(&f); set64(&g, npoints, 0); expect(g, KM_ECORRUPT, "n_points 0");
    g = copy(&f); set64(&g, npoints, (uint64_t)1 << 40);
    expect(g, KM_ECORRUPT, "n_points");
    g = copy(&f); set64(&g, npoints, KM_SEARCH_MAX_POINTS);
    expect(g, KM_ECORRUPT, "arrays");
    g = copy(&f); set64(&g, values, 5); expect(g, KM_ECORRUPT, "arrays");
    g = copy(&f); set64(&g, mean, (uint64_t)1 << 61);
    expect(g, KM_ECORRUPT, "arrays");
    g = copy(&f); setf64(&g, values + 8 + 8, NAN);
    expect(g, KM_ECORRUPT, "values");
    g = copy(&f); setf64(&g, mean + 8, INFINITY);
    expect(g, KM_ECORRUPT, "mean");
    g = copy(&f); setf64(&g, sd + 8 + 8, -0.5); expect(g, KM_ECORRUPT, "std[1]");
    g = copy(&f); set64(&g, best, 3); expect(g, KM_ECORRUPT, "best 3");
    g = copy(&f); set64(&g, best, UINT64_MAX); expect(g, KM_ECORRUPT, "best");
    /* center_y on a model that answers no values */
    {
        double X[12] = {0, 0, 0, 1, 3, 3, 3, 4, -3, 3, -3, 4};
        int y[6] = {0, 0, 1, 1, 0, 1};
        km_kernel k;
        km_kernel_init(&k, KM_KERNEL_RBF);
        km_svm_params p = km_svm_params_default();
        km_problem pb = {X, 6, 2, NULL, 0, y, 2};
        km_preprocess pre2 = {KM_SCALE_NONE, 0};
        km_model *s = NULL;
        ck_assert_int_eq(km_fit(KM_ALGO_SVC, &k, &p, &pre2, &pb, NULL, &s,
                                NULL), KM_OK);
        const char *labels[2] = {"0", "1"};
        ck_assert_int_eq(km_model_set_labels(s, labels, 2, 1, NULL), KM_OK);
        file h = save(s);
        set32(&h, h.at.pre + 4, 1);
        unsigned char one[16];
        put64(one, 1);
        memset(one + 8, 0, 8);
        splice(&h, h.at.pre + 8, 0, one, 16);
        expect(h, KM_ECORRUPT, "center_y");
        km_model_free(s);
    }
    free(f.buf);
    km_model_free(m);
}
END_TEST

static Suite *pre_suite(void)
{
    Suite *s = suite_create("km_pre");
    TCase *tc = tcase_create("pre");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, against_sklearn, 0, (int)N_CASES);
    tcase_add_test(tc, typed_predict_model_space);
    tcase_add_test(tc, many_rows_in_blocks);
    tcase_add_loop_test(tc, classes_in_three_blocks, 0, (int)N_CB_CASES);
    tcase_add_test(tc, checks_and_sizes);
    tcase_add_test(tc, search_record_round_trip);
    tcase_add_test(tc, version_1_loads);
    tcase_add_test(tc, corrupt_sections);
    suite_add_tcase(s, tc);
    return s;
}

KM_TEST_MAIN(pre_suite)
