/*
 * test_km_kernel.c - kernels against closed forms; Gram matrices: symmetry,
 * agreement of the BLAS paths with direct evaluation, blocked composites;
 * validation messages; the vectorised exp against libm; the kernels added
 * through the kernel table (laplacian_l2, exponential, normalized) against
 * closed forms and numpy (tests/fixtures/gen_kernel_refs.py).
 */
#include <float.h>

#include "../check_main.h"
#include "km.h"
#include "base/km_base_internal.h"
#include "kernels/km_kernel_internal.h"

static const double x3[3] = {1.0, -2.0, 0.5};
static const double z3[3] = {0.5, 1.0, -1.5};
/* <x,z> = 0.5 - 2 - 0.75 = -2.25; |x-z|^2 = 0.25 + 9 + 4 = 13.25;
 * |x-z|_1 = 0.5 + 3 + 2 = 5.5 */

START_TEST(closed_forms)
{
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_LINEAR);
    ck_assert_double_eq_tol(km_kernel_eval(&k, x3, z3, 3), -2.25, 1e-15);

    km_kernel_init(&k, KM_KERNEL_POLYNOMIAL);
    k.gamma = 0.5; /* (0.5 * -2.25 + 1)^3 = (-0.125)^3 */
    ck_assert_double_eq_tol(km_kernel_eval(&k, x3, z3, 3), -0.001953125, 1e-17);
    k.degree = 0;
    ck_assert_double_eq(km_kernel_eval(&k, x3, z3, 3), 1.0);

    km_kernel_init(&k, KM_KERNEL_RBF);
    k.gamma = 0.1;
    ck_assert_double_eq_tol(km_kernel_eval(&k, x3, z3, 3), exp(-1.325), 1e-16);

    km_kernel_init(&k, KM_KERNEL_LAPLACIAN);
    k.gamma = 0.2;
    ck_assert_double_eq_tol(km_kernel_eval(&k, x3, z3, 3), exp(-1.1), 1e-16);

    km_kernel_init(&k, KM_KERNEL_SIGMOID);
    k.gamma = 0.3;
    k.coef0 = 0.25; /* tanh(-0.675 + 0.25) */
    ck_assert_double_eq_tol(km_kernel_eval(&k, x3, z3, 3), tanh(-0.425), 1e-16);
}
END_TEST

static void make_sum(km_kernel *k, double w0, double w1)
{
    km_kernel *parts = malloc(2 * sizeof *parts);
    double *w = malloc(2 * sizeof *w);
    km_kernel_init(&parts[0], KM_KERNEL_RBF);
    parts[0].gamma = 0.1;
    km_kernel_init(&parts[1], KM_KERNEL_LINEAR);
    w[0] = w0;
    w[1] = w1;
    km_kernel_init(k, KM_KERNEL_SUM);
    km_kernel_set_parts(k, parts, w, 2);
}

START_TEST(composite_closed_forms)
{
    km_kernel k;
    make_sum(&k, 2.0, 0.5);
    ck_assert_double_eq_tol(km_kernel_eval(&k, x3, z3, 3),
                            2.0 * exp(-1.325) + 0.5 * -2.25, 1e-15);
    k.type = KM_KERNEL_PRODUCT;
    free(k.weights);
    k.weights = NULL;
    ck_assert_double_eq_tol(km_kernel_eval(&k, x3, z3, 3),
                            exp(-1.325) * -2.25, 1e-15);
    km_kernel_cleanup(&k);
}
END_TEST

/* Deterministic pseudo-random matrix. */
static double *rand_matrix(size_t n, size_t d, unsigned seed)
{
    double *X = malloc(n * d * sizeof *X);
    for (size_t i = 0; i < n * d; i++) {
        seed = seed * 1103515245u + 12345u;
        X[i] = ((seed >> 8) & 0xFFFF) / 32768.0 - 1.0;
    }
    return X;
}

/* The checks of gram_paths_agree and of the kernels added later:
 * km_gram_sym (full) is symmetric and equals direct evaluation, and so do
 * km_gram_cross and its one-row path; K and C hold n x n. t names the
 * kernel in messages. */
static void check_paths_agree(const km_kernel *k, const double *X, size_t n,
                              size_t d, double *K, double *C, int t)
{
    ck_assert_int_eq(km_kernel_check(k, NULL), KM_OK);
    ck_assert_int_eq(km_gram_sym(k, X, n, d, K, 1, NULL), KM_OK);
    ck_assert_int_eq(km_gram_cross(k, X, n, X, n, d, C, n, NULL), KM_OK);
    double worst = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++) {
            double ref = km_kernel_eval(k, X + i * d, X + j * d, d);
            double e1 = fabs(K[i * n + j] - ref), e2 = fabs(C[i * n + j] - ref);
            ck_assert_msg(K[i * n + j] == K[j * n + i],
                          "type %d not symmetric at %zu,%zu", t, i, j);
            worst = fmax(worst, fmax(e1, e2) / fmax(fabs(ref), 1.0));
        }
    ck_assert_msg(worst < 1e-13, "kernel %d: worst error %g", t, worst);
    /* One row at a time (the DGEMV path) agrees too. */
    for (size_t i = 0; i < n; i += 37) {
        ck_assert_int_eq(km_gram_cross(k, X + i * d, 1, X, n, d, C, n, NULL),
                         KM_OK);
        for (size_t j = 0; j < n; j++) {
            double ref = km_kernel_eval(k, X + i * d, X + j * d, d);
            ck_assert_msg(fabs(C[j] - ref) <= 1e-13 * fmax(fabs(ref), 1.0),
                          "kernel %d, one row %zu: %g vs %g", t, i, C[j], ref);
        }
    }
}

/* Every kernel type: km_gram_sym (full) is symmetric and equals direct
 * evaluation; km_gram_cross equals it too. n = 300 > the 256-row block,
 * so composites and the Laplacian cross a block edge. */
START_TEST(gram_paths_agree)
{
    const size_t n = 300, d = 7;
    double *X = rand_matrix(n, d, 7);
    double *K = malloc(n * n * sizeof *K), *C = malloc(n * n * sizeof *C);
    km_kernel kernels[7];
    km_kernel_init(&kernels[0], KM_KERNEL_LINEAR);
    km_kernel_init(&kernels[1], KM_KERNEL_POLYNOMIAL);
    km_kernel_init(&kernels[2], KM_KERNEL_RBF);
    km_kernel_init(&kernels[3], KM_KERNEL_LAPLACIAN);
    km_kernel_init(&kernels[4], KM_KERNEL_SIGMOID);
    make_sum(&kernels[5], 0.3, 1.5);
    make_sum(&kernels[6], 1, 1);
    kernels[6].type = KM_KERNEL_PRODUCT;
    free(kernels[6].weights);
    kernels[6].weights = NULL;
    for (int t = 0; t < 7; t++) {
        km_kernel *k = &kernels[t];
        km_kernel_resolve(k, d);
        check_paths_agree(k, X, n, d, K, C, t);
        km_kernel_cleanup(k);
    }
    free(X);
    free(K);
    free(C);
}
END_TEST

/* One row against many (the predict path: blocks of eight rows with a
 * vector tail, then what is left): every shape of rows and features,
 * each matrix allocated to its exact size so the sanitizer build sees any
 * read past it. */
START_TEST(one_row_dots)
{
    static const size_t ds[] = {1, 3, 7, 8, 9, 12, 15, 16, 17, 20, 23, 64};
    for (size_t di = 0; di < sizeof ds / sizeof *ds; di++)
        for (size_t nz = 1; nz <= 41; nz += (nz < 20 ? 1 : 7)) {
            size_t d = ds[di];
            double *Z = rand_matrix(nz, d, (unsigned)(nz * 100 + d));
            double *x = rand_matrix(1, d, 3), *K = malloc(nz * sizeof *K);
            km_kernel k;
            km_kernel_init(&k, KM_KERNEL_LINEAR);
            km_kernel_resolve(&k, d);
            ck_assert_int_eq(km_gram_cross(&k, x, 1, Z, nz, d, K, nz, NULL),
                             KM_OK);
            for (size_t j = 0; j < nz; j++) {
                double ref = 0, mag = 0;
                for (size_t f = 0; f < d; f++) {
                    ref += x[f] * Z[j * d + f];
                    mag += fabs(x[f] * Z[j * d + f]);
                }
                ck_assert_msg(fabs(K[j] - ref) <= 1e-15 * mag + 1e-300,
                              "d %zu, %zu rows, row %zu: %.17g vs %.17g", d,
                              nz, j, K[j], ref);
            }
            km_kernel_cleanup(&k);
            free(Z);
            free(x);
            free(K);
        }
}
END_TEST

/* km_kernel_expand on one thread and, past its threshold, in blocks on
 * workers: out = K(X, S) W + bias against the sums written here (rbf
 * and polynomial, one output and three), to 1e-12 relative; and the
 * same bits whatever the rows' count asks of the workers. */
START_TEST(expand_on_workers)
{
    const size_t ns = 700, d = 5, nbig = 3100; /* 2.17e6 values: workers */
    double *S = rand_matrix(ns, d, 11), *X = rand_matrix(nbig, d, 12);
    double *W = rand_matrix(ns, 3, 13), bias[3] = {0.5, -1, 2};
    double *out = malloc(nbig * 3 * sizeof *out);
    double *one = malloc(3 * sizeof *one);
    for (int kt = 0; kt < 2; kt++)
        for (size_t m = 1; m <= 3; m += 2) {
            km_kernel k;
            km_kernel_init(&k, kt ? KM_KERNEL_POLYNOMIAL : KM_KERNEL_RBF);
            k.gamma = 0.3;
            km_kernel_resolve(&k, d);
            ck_assert_int_eq(km_kernel_expand(&k, S, ns, d, NULL, W, m, bias,
                                              X, nbig, out, NULL), KM_OK);
            for (size_t i = 0; i < nbig; i += 7) {
                for (size_t j = 0; j < m; j++) {
                    double ref = bias[j], mag = fabs(bias[j]);
                    for (size_t t = 0; t < ns; t++) {
                        double v = km_kernel_eval(&k, X + i * d, S + t * d, d);
                        ref += v * W[t * m + j];
                        mag += fabs(v * W[t * m + j]);
                    }
                    ck_assert_msg(fabs(out[i * m + j] - ref) <= 1e-12 * mag,
                                  "kernel %d, m %zu, row %zu: %.17g vs %.17g",
                                  kt, m, i, out[i * m + j], ref);
                }
                /* the row alone (one thread, one block) */
                ck_assert_int_eq(km_kernel_expand(&k, S, ns, d, NULL, W, m,
                                                  bias, X + i * d, 1, one,
                                                  NULL), KM_OK);
                for (size_t j = 0; j < m; j++)
                    ck_assert_double_eq_tol(one[j], out[i * m + j],
                                            1e-12 * (1 + fabs(one[j])));
            }
            km_kernel_cleanup(&k);
        }
    free(S);
    free(X);
    free(W);
    free(out);
    free(one);
}
END_TEST

/* The rbf training diagonal is exactly 1 (distance forced to 0). */
START_TEST(rbf_diagonal_exact)
{
    const size_t n = 50, d = 3;
    double *X = rand_matrix(n, d, 3);
    for (size_t i = 0; i < n * d; i++)
        X[i] *= 1e4; /* large norms make |x|^2+|x|^2-2<x,x> round off */
    double *K = malloc(n * n * sizeof *K);
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_RBF);
    k.gamma = 1.0;
    ck_assert_int_eq(km_gram_sym(&k, X, n, d, K, 0, NULL), KM_OK);
    for (size_t i = 0; i < n; i++)
        ck_assert_double_eq(K[i * n + i], 1.0);
    free(X);
    free(K);
}
END_TEST

START_TEST(validation_names_field)
{
    km_kernel k;
    km_error err;
    km_kernel_init(&k, KM_KERNEL_RBF);
    k.gamma = -1;
    ck_assert_int_eq(km_kernel_check(&k, &err), KM_EINVAL);
    ck_assert_str_eq(err.message, "kernel.gamma must be a finite number > 0");
    k.gamma = NAN;
    ck_assert_int_eq(km_kernel_check(&k, &err), KM_EINVAL);

    km_kernel_init(&k, KM_KERNEL_POLYNOMIAL);
    k.degree = -2;
    ck_assert_int_eq(km_kernel_check(&k, &err), KM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "kernel.degree"));

    make_sum(&k, 0, 0);
    ck_assert_int_eq(km_kernel_check(&k, &err), KM_EINVAL);
    ck_assert_str_eq(err.message, "kernel.weights must not all be 0");
    k.weights[1] = -1;
    ck_assert_int_eq(km_kernel_check(&k, &err), KM_EINVAL);
    ck_assert_str_eq(err.message,
                     "kernel.weights[1] must be a finite number >= 0");
    k.weights[1] = 1;
    k.parts[0].gamma = -3;
    ck_assert_int_eq(km_kernel_check(&k, &err), KM_EINVAL);
    ck_assert_str_eq(err.message,
                     "kernel.kernels[0].gamma must be a finite number > 0");
    km_kernel_cleanup(&k);

    km_kernel_init(&k, KM_KERNEL_SUM); /* no parts */
    ck_assert_int_eq(km_kernel_check(&k, &err), KM_EINVAL);

    /* default gamma resolves to 1/n_features */
    km_kernel_init(&k, KM_KERNEL_RBF);
    ck_assert_int_eq(km_kernel_check(&k, NULL), KM_OK);
    km_kernel_resolve(&k, 4);
    ck_assert_double_eq(k.gamma, 0.25);
}
END_TEST

START_TEST(type_names_round_trip)
{
    for (int t = 0; t < KM_KERNEL_TYPE_COUNT; t++) {
        km_kernel_type back;
        ck_assert_int_eq(km_kernel_type_parse(km_kernel_type_name(t), &back), 0);
        ck_assert_int_eq(back, t);
    }
    km_kernel_type t;
    ck_assert_int_eq(km_kernel_type_parse("gaussian", &t), -1);
    ck_assert_ptr_null(km_kernel_type_name(KM_KERNEL_TYPE_COUNT));
}
END_TEST

/* km_vexp against libm over the whole range it serves, with the edges. */
START_TEST(vexp_accuracy)
{
    enum { N = 200003 };
    double *v = malloc(N * sizeof *v), *x = malloc(N * sizeof *x);
    for (int i = 0; i < N; i++)
        x[i] = v[i] = -745.0 + 1454.0 * i / (N - 1);
    km_vexp(v, N);
    double worst = 0;
    for (int i = 0; i < N; i++) {
        double ref = exp(x[i]);
        if (x[i] < -708)
            ck_assert_double_eq(v[i], 0.0);
        else if (x[i] > 709)
            ck_assert(isinf(v[i]));
        else
            worst = fmax(worst, fabs(v[i] - ref) / ref);
    }
    ck_assert_msg(worst < 4e-16, "worst relative error %g", worst);
    double edge[4] = {0.0, -0.0, NAN, 1.0};
    km_vexp(edge, 4);
    ck_assert_double_eq(edge[0], 1.0);
    ck_assert_double_eq(edge[1], 1.0);
    ck_assert(isnan(edge[2]));
    ck_assert_double_eq_tol(edge[3], M_E, 1e-15);
    free(v);
    free(x);
}
END_TEST

/* km_vdot_tile (the nystrom pass's inner products, no BLAS) against sums
 * in long double, for every row count it takes, centre counts off its
 * 16- and 8-wide steps and feature counts below and above a vector. */
START_TEST(vdot_tile_against_sums)
{
    static const size_t ms[] = {1, 7, 8, 15, 16, 17, 40, 203};
    static const size_t ds[] = {1, 3, 8, 20, 33};
    km_rng state = {7};
    for (size_t a = 0; a < sizeof ms / sizeof *ms; a++)
        for (size_t b = 0; b < sizeof ds / sizeof *ds; b++)
            for (size_t nr = 1; nr <= 4; nr++) {
                size_t m = ms[a], d = ds[b], ldk = m + 3;
                double *X = malloc(nr * d * sizeof *X);
                double *Zt = malloc(d * m * sizeof *Zt);
                double *K = malloc(nr * ldk * sizeof *K);
                for (size_t i = 0; i < nr * d; i++)
                    X[i] = km_rng_uniform(&state) * 4 - 2;
                for (size_t i = 0; i < d * m; i++)
                    Zt[i] = km_rng_uniform(&state) * 4 - 2;
                for (size_t i = 0; i < nr * ldk; i++)
                    K[i] = NAN; /* the gaps past m must stay untouched */
                km_vdot_tile(X, nr, d, Zt, m, K, ldk);
                for (size_t r = 0; r < nr; r++) {
                    for (size_t j = 0; j < m; j++) {
                        long double s = 0, mag = 0;
                        for (size_t f = 0; f < d; f++) {
                            s += (long double)X[r * d + f] * Zt[f * m + j];
                            mag += fabsl((long double)X[r * d + f] *
                                         Zt[f * m + j]);
                        }
                        ck_assert_msg(fabsl(K[r * ldk + j] - s) <=
                                          4e-16L * mag * d,
                                      "m %zu d %zu rows %zu: K[%zu][%zu]",
                                      m, d, nr, r, j);
                    }
                    for (size_t j = m; j < ldk; j++)
                        ck_assert(isnan(K[r * ldk + j]));
                }
                free(X);
                free(Zt);
                free(K);
            }
}
END_TEST

/* ------------------------------------------------- kernels of the table
 * added after the first seven: laplacian_l2, exponential, normalized. */

/* A normalized kernel over one part of type t (parameters set after). */
static void make_normalized(km_kernel *k, km_kernel_type t)
{
    km_kernel *part = malloc(sizeof *part);
    km_kernel_init(part, t);
    km_kernel_init(k, KM_KERNEL_NORMALIZED);
    km_kernel_set_parts(k, part, NULL, 1);
}

/* Hand-computed with x3 and z3: |x-z|_2 = sqrt(13.25), <x,z> = -2.25,
 * |x|^2 = 5.25, |z|^2 = 3.5. */
START_TEST(new_kernels_closed_forms)
{
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_LAPLACIAN_L2);
    k.gamma = 0.2;
    ck_assert_double_eq_tol(km_kernel_eval(&k, x3, z3, 3),
                            exp(-0.2 * sqrt(13.25)), 1e-16);
    ck_assert_double_eq(km_kernel_eval(&k, x3, x3, 3), 1.0);

    km_kernel_init(&k, KM_KERNEL_EXPONENTIAL);
    k.gamma = 0.5;
    ck_assert_double_eq_tol(km_kernel_eval(&k, x3, z3, 3), exp(-1.125),
                            1e-16);
    ck_assert_double_eq_tol(km_kernel_eval(&k, x3, x3, 3), exp(2.625),
                            1e-14);

    /* normalized linear: the cosine of the angle */
    make_normalized(&k, KM_KERNEL_LINEAR);
    ck_assert_double_eq_tol(km_kernel_eval(&k, x3, z3, 3),
                            -2.25 / sqrt(5.25 * 3.5), 1e-16);
    ck_assert_double_eq_tol(km_kernel_eval(&k, x3, x3, 3), 1.0, 1e-16);
    /* k(x,x) = 0 (a zero row): the cosine is undefined, the value 0 */
    static const double zero3[3] = {0, 0, 0};
    ck_assert_double_eq(km_kernel_eval(&k, x3, zero3, 3), 0.0);
    km_kernel_cleanup(&k);

    /* normalized exponential: exp(g<x,z>) / exp(g(|x|^2+|z|^2)/2)
     * = exp(-g |x-z|^2 / 2), an rbf of gamma g/2 */
    make_normalized(&k, KM_KERNEL_EXPONENTIAL);
    k.parts[0].gamma = 0.5;
    ck_assert_double_eq_tol(km_kernel_eval(&k, x3, z3, 3),
                            exp(-0.25 * 13.25), 1e-15);
    km_kernel_cleanup(&k);

    /* normalized rbf is the rbf itself (k(x,x) = 1) */
    make_normalized(&k, KM_KERNEL_RBF);
    k.parts[0].gamma = 0.1;
    ck_assert_double_eq_tol(km_kernel_eval(&k, x3, z3, 3), exp(-1.325),
                            1e-16);
    km_kernel_cleanup(&k);
}
END_TEST

/* Gram (blocked past 256 rows), cross Gram, one-row cross and direct
 * evaluation agree for the new kernels, including normalized around a
 * sum; the training diagonal of laplacian_l2 and normalized is exactly 1. */
START_TEST(new_kernels_paths_agree)
{
    const size_t n = 300, d = 5;
    double *X = rand_matrix(n, d, 11);
    double *K = malloc(n * n * sizeof *K), *C = malloc(n * n * sizeof *C);
    km_kernel ks[4];
    km_kernel_init(&ks[0], KM_KERNEL_LAPLACIAN_L2);
    ks[0].gamma = 0.3;
    km_kernel_init(&ks[1], KM_KERNEL_EXPONENTIAL);
    ks[1].gamma = 0.2;
    make_normalized(&ks[2], KM_KERNEL_POLYNOMIAL);
    ks[2].parts[0].gamma = 0.5;
    ks[2].parts[0].degree = 2;
    make_sum(&ks[3], 1.0, 0.5); /* rbf + linear, then normalized */
    {
        km_kernel *inner = malloc(sizeof *inner);
        *inner = ks[3];
        km_kernel_init(&ks[3], KM_KERNEL_NORMALIZED);
        km_kernel_set_parts(&ks[3], inner, NULL, 1);
    }
    for (int t = 0; t < 4; t++) {
        check_paths_agree(&ks[t], X, n, d, K, C, t);
        if (t != 1) /* exponential's k(x,x) is not 1 */
            for (size_t i = 0; i < n; i++)
                ck_assert_double_eq(K[i * n + i], 1.0);
    }
    for (int t = 0; t < 4; t++)
        km_kernel_cleanup(&ks[t]);
    free(X);
    free(K);
    free(C);
}
END_TEST

/* The kernels as tests/fixtures/gen_kernel_refs.py defines its cases. */
static void make_ref_kernel(const char *name, km_kernel *k)
{
    if (strcmp(name, "laplacian_l2") == 0) {
        km_kernel_init(k, KM_KERNEL_LAPLACIAN_L2);
        k->gamma = 0.7;
    } else if (strcmp(name, "exponential") == 0) {
        km_kernel_init(k, KM_KERNEL_EXPONENTIAL);
        k->gamma = 0.3;
    } else if (strcmp(name, "normalized_poly") == 0) {
        make_normalized(k, KM_KERNEL_POLYNOMIAL);
        k->parts[0].gamma = 0.5;
        k->parts[0].coef0 = 1.0;
        k->parts[0].degree = 3;
    } else if (strcmp(name, "normalized_exponential") == 0) {
        make_normalized(k, KM_KERNEL_EXPONENTIAL);
        k->parts[0].gamma = 0.3;
    } else {
        make_normalized(k, KM_KERNEL_RBF);
        k->parts[0].gamma = 0.4;
    }
}

/* Against numpy (gen_kernel_refs.py): the cross Gram K(T, X) to 1e-13;
 * a kernel ridge fit (alpha 0.5) to numpy's solve of (K + alpha I) a = y
 * to 1e-10 relative (the system's condition number is below 1e3 and the
 * two Choleskys round differently), and its predictions on T. */
START_TEST(new_kernels_against_numpy)
{
    static const char *const cases[] = {"laplacian_l2", "exponential",
                                        "normalized_poly",
                                        "normalized_exponential",
                                        "normalized_rbf"};
    const size_t d = 4;
    size_t nx, nt, ny;
    double *X = km_read_fixture("kref_X.txt", &nx);
    double *T = km_read_fixture("kref_T.txt", &nt);
    double *y = km_read_fixture("kref_y.txt", &ny);
    size_t n = nx / d, t = nt / d;
    ck_assert_uint_eq(ny, n);
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        char file[96];
        size_t len;
        km_kernel k;
        make_ref_kernel(cases[c], &k);
        snprintf(file, sizeof file, "kref_%s_cross.txt", cases[c]);
        double *cross = km_read_fixture(file, &len);
        ck_assert_uint_eq(len, t * n);
        double *K = malloc(t * n * sizeof *K);
        ck_assert_int_eq(km_gram_cross(&k, T, t, X, n, d, K, n, NULL), KM_OK);
        double e = km_max_rel_err(K, cross, t * n, 1.0);
        ck_assert_msg(e < 1e-13, "%s: cross Gram error %g", cases[c], e);

        km_krr_params p = {.alpha = 0.5};
        km_model *m = NULL;
        km_error err;
        ck_assert_int_eq(km_krr_fit(&k, &p, X, n, d, y, 1, NULL, &m, &err),
                         KM_OK);
        snprintf(file, sizeof file, "kref_%s_coef.txt", cases[c]);
        double *coef = km_read_fixture(file, &len);
        ck_assert_uint_eq(len, n);
        e = km_max_rel_err(km_krr_dual_coef(m), coef, n, 1e-3);
        ck_assert_msg(e < 1e-10, "%s: coefficient error %g", cases[c], e);
        snprintf(file, sizeof file, "kref_%s_pred.txt", cases[c]);
        double *pred = km_read_fixture(file, &len);
        double *out = malloc(t * sizeof *out);
        ck_assert_int_eq(km_krr_predict(m, T, t, out, NULL), KM_OK);
        e = km_max_rel_err(out, pred, t, 1e-3);
        ck_assert_msg(e < 1e-10, "%s: prediction error %g", cases[c], e);
        /* a one-row predict is the same path's value */
        for (size_t i = 0; i < t; i++) {
            double one;
            ck_assert_int_eq(km_krr_predict(m, T + i * d, 1, &one, NULL),
                             KM_OK);
            ck_assert(fabs(one - out[i]) <= 1e-13 * fmax(fabs(out[i]), 1));
        }
        free(out);
        free(pred);
        free(coef);
        km_model_free(m);
        free(K);
        free(cross);
        km_kernel_cleanup(&k);
    }
    free(X);
    free(T);
    free(y);
}
END_TEST

/* The table's rows as the API reads them, and the checks they drive. */
START_TEST(new_kernels_table_and_checks)
{
    const km_kernel_info *i = km_kernel_type_info(KM_KERNEL_LAPLACIAN_L2);
    ck_assert_int_eq(i->family, KM_KFAMILY_L2);
    ck_assert_uint_eq(i->params, KM_KPARAM_GAMMA | KM_KPARAM_COLUMNS);
    i = km_kernel_type_info(KM_KERNEL_EXPONENTIAL);
    ck_assert_int_eq(i->family, KM_KFAMILY_INNER);
    ck_assert_uint_eq(i->params, KM_KPARAM_GAMMA | KM_KPARAM_COLUMNS);
    i = km_kernel_type_info(KM_KERNEL_NORMALIZED);
    ck_assert_int_eq(i->family, KM_KFAMILY_COMPOSITE);
    ck_assert_uint_eq(i->params, KM_KPARAM_PARTS);
    ck_assert_int_eq(i->min_parts, 1);
    ck_assert_int_eq(i->max_parts, 1);
    i = km_kernel_type_info(KM_KERNEL_POLYNOMIAL);
    ck_assert_uint_eq(i->params, KM_KPARAM_GAMMA | KM_KPARAM_DEGREE |
                                     KM_KPARAM_COEF0 | KM_KPARAM_COLUMNS);
    ck_assert_double_eq(i->coef0, 1.0);
    ck_assert_ptr_null(km_kernel_type_info(KM_KERNEL_TYPE_COUNT));
    /* the stored ids of km_maps.h */
    ck_assert_int_eq(KM_KERNEL_PRODUCT, 6);
    ck_assert_int_eq(KM_KERNEL_LAPLACIAN_L2, 7);
    ck_assert_int_eq(KM_KERNEL_EXPONENTIAL, 8);
    ck_assert_int_eq(KM_KERNEL_NORMALIZED, 9);
    ck_assert_str_eq(km_kernel_type_name(KM_KERNEL_LAPLACIAN_L2),
                     "laplacian_l2");

    km_kernel k;
    km_error err;
    km_kernel_init(&k, KM_KERNEL_NORMALIZED);
    ck_assert_int_eq(km_kernel_check(&k, &err), KM_EINVAL);
    ck_assert_str_eq(err.message, "kernel.kernels must list exactly 1 kernel");
    make_sum(&k, 1.0, 1.0);
    k.type = KM_KERNEL_NORMALIZED;
    ck_assert_int_eq(km_kernel_check(&k, &err), KM_EINVAL);
    ck_assert_str_eq(err.message, "kernel.kernels must list exactly 1 kernel");
    km_kernel_cleanup(&k);
    make_normalized(&k, KM_KERNEL_LINEAR);
    k.weights = malloc(sizeof *k.weights);
    k.weights[0] = 1.0;
    ck_assert_int_eq(km_kernel_check(&k, &err), KM_EINVAL);
    ck_assert_str_eq(err.message, "kernel.weights apply only to a sum kernel");
    km_kernel_cleanup(&k);
}
END_TEST


/* The PSD report against closed forms: the linear kernel on orthogonal
 * rows of lengths 1 and 2 has K = diag(1, 4); a sigmoid Gram with a
 * negative eigenvalue; the subsample's size, seed and repeatability. */
START_TEST(psd_report)
{
    km_kernel k;
    km_error err;
    km_psd_report r;
    km_kernel_init(&k, KM_KERNEL_LINEAR);
    const double X[4] = {1, 0, 0, 2};
    ck_assert_int_eq(km_kernel_psd(&k, X, 2, 2, 1.0, 0, 0, &r, &err), KM_OK);
    ck_assert_uint_eq(r.n, 2);
    ck_assert_int_eq(r.subsampled, 0);
    ck_assert_int_eq(r.symmetric, 1);
    ck_assert_double_eq(r.asymmetry, 0);
    ck_assert_double_eq_tol(r.min_eig, 1, 1e-14);
    ck_assert_double_eq_tol(r.max_eig, 4, 1e-14);
    ck_assert_uint_eq(r.n_negative, 0);
    ck_assert_double_eq_tol(r.threshold, 2 * DBL_EPSILON * 4, 1e-30);
    ck_assert_double_eq_tol(r.condition, 5.0 / 2.0, 1e-14);
    ck_assert_double_eq_tol(r.effective_dim, 0.5 + 0.8, 1e-14);

    /* sigmoid(gamma 1, coef0 0) on 1 and -1: [[tanh 1, -tanh 1], [-tanh 1,
     * tanh 1]] has eigenvalues 0 and 2 tanh 1; on 1 and 2 the 2 x 2
     * [[tanh 1, tanh 2], [tanh 2, tanh 4]] has determinant < 0 */
    km_kernel_init(&k, KM_KERNEL_SIGMOID);
    k.gamma = 1;
    const double Y[2] = {1, 2};
    ck_assert_int_eq(km_kernel_psd(&k, Y, 2, 1, 0.5, 0, 0, &r, &err), KM_OK);
    double a = tanh(1), b = tanh(2), c = tanh(4);
    double mid = (a + c) / 2, rad = sqrt((a - c) * (a - c) / 4 + b * b);
    ck_assert_double_eq_tol(r.min_eig, mid - rad, 1e-14);
    ck_assert_double_eq_tol(r.max_eig, mid + rad, 1e-14);
    ck_assert(r.min_eig < 0);
    ck_assert_uint_eq(r.n_negative, 1);
    ck_assert_double_eq_tol(r.effective_dim, (mid + rad) / (mid + rad + 0.5),
                            1e-14);
    ck_assert_double_eq_tol(r.condition, fabs(mid + rad + 0.5) /
                            fabs(mid - rad + 0.5), 1e-12);

    /* 50 rows, at most 20: a subsample, the same for the same seed */
    double Z[50];
    for (int i = 0; i < 50; i++)
        Z[i] = i;
    km_psd_report r2;
    km_kernel_init(&k, KM_KERNEL_RBF);
    k.gamma = 0.01;
    ck_assert_int_eq(km_kernel_psd(&k, Z, 50, 1, 1, 7, 20, &r, &err), KM_OK);
    ck_assert_int_eq(km_kernel_psd(&k, Z, 50, 1, 1, 7, 20, &r2, &err), KM_OK);
    ck_assert_uint_eq(r.n_given, 50);
    ck_assert_uint_eq(r.n, 20);
    ck_assert_int_eq(r.subsampled, 1);
    ck_assert_uint_eq(r.seed, 7);
    ck_assert_double_eq(r.min_eig, r2.min_eig);
    ck_assert_double_eq(r.max_eig, r2.max_eig);
    ck_assert(km_kernel_psd_bytes(NULL, 50, 1, 20) >= 20 * 20 * 8);

    /* the Gram's working memory: a sum holds a block of values beside K
     * (cross_composite), a leaf only norms; NULL bounds any kernel */
    km_kernel sum;
    make_sum(&sum, 1.0, 1.0);
    ck_assert(km_gram_work_bytes(&sum, 20, 30, 1) >= 20 * 30 * 8);
    ck_assert(km_gram_work_bytes(&k, 20, 30, 1) < 20 * 30 * 8);
    ck_assert(km_gram_work_bytes(NULL, 20, 30, 1) >=
              km_gram_work_bytes(&sum, 20, 30, 1));
    ck_assert(km_kernel_psd_bytes(&sum, 50, 1, 20) >
              km_kernel_psd_bytes(&k, 50, 1, 20));
    km_kernel_cleanup(&sum);

    /* alpha must be > 0; a NaN is named */
    ck_assert_int_eq(km_kernel_psd(&k, Z, 50, 1, 0, 7, 20, &r, &err), KM_EINVAL);
    Z[3] = NAN;
    ck_assert_int_ne(km_kernel_psd(&k, Z, 50, 1, 1, 7, 20, &r, &err), KM_OK);
}
END_TEST

/* What a fit says of its kernel: which kernels may be indefinite (by
 * construction, the others are PSD), and the eigenvalues of a Gram on all
 * its rows, plain and centred, against the closed forms of 2 x 2. */
START_TEST(psd_fit_rows)
{
    km_kernel k;
    km_error err;
    km_psd_report r;
    km_kernel_init(&k, KM_KERNEL_RBF);
    ck_assert_int_eq(km_kernel_maybe_indefinite(&k), 0);
    km_kernel_init(&k, KM_KERNEL_LINEAR);
    ck_assert_int_eq(km_kernel_maybe_indefinite(&k), 0);
    km_kernel_init(&k, KM_KERNEL_POLYNOMIAL);
    k.coef0 = 1;
    ck_assert_int_eq(km_kernel_maybe_indefinite(&k), 0);
    k.coef0 = -1;
    ck_assert_int_eq(km_kernel_maybe_indefinite(&k), 1);
    k.degree = 0; /* (.)^0 = 1 */
    ck_assert_int_eq(km_kernel_maybe_indefinite(&k), 0);
    km_kernel sum;
    make_sum(&sum, 1.0, 1.0); /* rbf + linear */
    ck_assert_int_eq(km_kernel_maybe_indefinite(&sum), 0);
    km_kernel_init(&sum.parts[1], KM_KERNEL_SIGMOID);
    ck_assert_int_eq(km_kernel_maybe_indefinite(&sum), 1);
    km_kernel_cleanup(&sum);

    /* sigmoid(gamma 1) on 1 and 2: K = [[a, b], [b, c]]; centred, H K H
     * = (a + c - 2b)/2 v v^T with v = (1, -1)/sqrt 2, eigenvalues 0 and
     * (a + c - 2b)/2 < 0 */
    km_kernel_init(&k, KM_KERNEL_SIGMOID);
    k.gamma = 1;
    ck_assert_int_eq(km_kernel_maybe_indefinite(&k), 1);
    const double Y[2] = {1, 2};
    double a = tanh(1), b = tanh(2), c = tanh(4);
    double mid = (a + c) / 2, rad = sqrt((a - c) * (a - c) / 4 + b * b);
    ck_assert_int_eq(km_kernel_psd_rows(&k, Y, 2, 1, 0, &r, &err), KM_OK);
    ck_assert_uint_eq(r.n, 2);
    ck_assert_double_eq_tol(r.min_eig, mid - rad, 1e-14);
    ck_assert_double_eq_tol(r.max_eig, mid + rad, 1e-14);
    ck_assert_uint_eq(r.n_negative, 1);
    ck_assert_int_eq(km_kernel_psd_rows(&k, Y, 2, 1, 1, &r, &err), KM_OK);
    ck_assert_double_eq_tol(r.min_eig, (a + c - 2 * b) / 2, 1e-14);
    ck_assert_double_eq_tol(r.max_eig, 0, 1e-14);
    ck_assert_double_eq(km_psd_threshold(2, 4), 2 * DBL_EPSILON * 4);

    /* the subsample of the PSD report: m ascending distinct rows, the
     * same for the same seed */
    size_t i1[20], i2[20];
    ck_assert_int_eq(km_psd_subsample(50, 20, 7, i1), KM_OK);
    ck_assert_int_eq(km_psd_subsample(50, 20, 7, i2), KM_OK);
    for (int i = 0; i < 20; i++) {
        ck_assert_uint_eq(i1[i], i2[i]);
        ck_assert(i1[i] < 50 && (i == 0 || i1[i] > i1[i - 1]));
    }
}
END_TEST

static Suite *kernel_suite(void)
{
    Suite *s = suite_create("km_kernel");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, closed_forms);
    tcase_add_test(tc, composite_closed_forms);
    tcase_add_test(tc, gram_paths_agree);
    tcase_add_test(tc, one_row_dots);
    tcase_add_test(tc, expand_on_workers);
    tcase_add_test(tc, rbf_diagonal_exact);
    tcase_add_test(tc, validation_names_field);
    tcase_add_test(tc, type_names_round_trip);
    tcase_add_test(tc, vexp_accuracy);
    tcase_add_test(tc, vdot_tile_against_sums);
    tcase_add_test(tc, new_kernels_closed_forms);
    tcase_add_test(tc, new_kernels_paths_agree);
    tcase_add_test(tc, new_kernels_against_numpy);
    tcase_add_test(tc, new_kernels_table_and_checks);
    tcase_add_test(tc, psd_report);
    tcase_add_test(tc, psd_fit_rows);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    return s;
}

KM_TEST_MAIN(kernel_suite)
