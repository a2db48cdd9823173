/*
 * test_km_kpca.c - kernel PCA against scikit-learn's KernelPCA with
 * eigen_solver="dense" (reference values in tests/fixtures/kpca_*.txt,
 * from gen_kpca_refs.py). The sign conventions match (svd_flip), so
 * values are compared as they are, not up to sign:
 *   eigenvalues, training embedding, projections of new points and the
 *   inverse map within 1e-8 relative (entries below 1e-3 of the largest
 *   compared absolutely at that scale), for every eigen-solver, on the
 *   first 600 rows of digits.csv (next 200 projected) and a synthetic set.
 * Also: orthonormal, centered components; dense and iterative agree to
 * 1e-9, dense and randomized to 1e-6 (issue 14's requirement); errors for
 * too many components; the model file round trip; wrong-algorithm calls;
 * cancellation and progress; a dense engine (the MPI worker's hook) that
 * solves here from the definition gives the same model, within 1e-8.
 */
#include <cblas.h>
#include <lapacke.h>

#include "../check_main.h"
#include "../testdata.h"
#include "km.h"
#include "solvers/km_solvers_internal.h"
#include "algorithms/km_algorithms_internal.h"

#define TOL 1e-8
/* Floor of the relative comparison, as a share of the largest reference
 * value of the array. */
#define FLOOR_SHARE 1e-3

static double max_abs(const double *v, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++)
        m = fabs(v[i]) > m ? fabs(v[i]) : m;
    return m;
}

/* Relative error of a against reference b, floored as stated above. */
static double rel_err(const double *a, const double *b, size_t n)
{
    return km_max_rel_err(a, b, n, FLOOR_SHARE * max_abs(b, n));
}

static const double *training(const km_model *m, const char *key)
{
    const km_info_entry *e = km_info_find(km_model_training(m), key);
    ck_assert_msg(e != NULL, "training figure %s missing", key);
    return e->values;
}

/* ------------------------------------------------------------ digits */

typedef struct digits {
    km_dataset ds;
    double *eig, *emb, *proj, *inv;
    size_t neig, nemb, nproj, ninv;
} digits;

static void digits_load(digits *t)
{
    ck_assert_msg(km_dataset_load("digits.csv", 800, &t->ds) == 0,
                  "cannot read digits.csv");
    ck_assert_uint_eq(t->ds.n, 800);
    km_dataset_scale(&t->ds, 600);
    t->eig = km_read_fixture("kpca_digits_eigenvalues.txt", &t->neig);
    t->emb = km_read_fixture("kpca_digits_embedding.txt", &t->nemb);
    t->proj = km_read_fixture("kpca_digits_proj.txt", &t->nproj);
    t->inv = km_read_fixture("kpca_digits_inverse.txt", &t->ninv);
    ck_assert_uint_eq(t->neig, 8);
    ck_assert_uint_eq(t->nemb, 600 * 8);
    ck_assert_uint_eq(t->nproj, 200 * 8);
    ck_assert_uint_eq(t->ninv, 50 * t->ds.d);
}

static void digits_free(digits *t)
{
    free(t->eig);
    free(t->emb);
    free(t->proj);
    free(t->inv);
    km_dataset_free(&t->ds);
}

/* The digits fit with the solver and ctl (may be NULL). */
static km_model *digits_fit_ctl(digits *t, km_kpca_solver solver,
                                const km_fit_control *ctl)
{
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_RBF);
    k.gamma = 0.02;
    km_kpca_params p = km_kpca_params_default();
    p.n_components = 8;
    p.fit_inverse_transform = 1;
    p.alpha = 0.1;
    p.solver = solver;
    km_model *m = NULL;
    km_error err = {0};
    ck_assert_msg(km_kpca_fit(&k, &p, t->ds.X, 600, t->ds.d, ctl, &m, &err)
                      == KM_OK, "%s", err.message);
    if (solver != KM_KPCA_SOLVER_AUTO)
        ck_assert_int_eq((int)training(m, "solver")[0], solver);
    ck_assert_int_eq((int)training(m, "fallback")[0], 0);
    return m;
}

static km_model *digits_fit(digits *t, km_kpca_solver solver)
{
    return digits_fit_ctl(t, solver, NULL);
}

/* Checks one fitted digits model against the references. */
static void digits_check(digits *t, const km_model *m, const char *what)
{
    size_t d = t->ds.d;
    double e = rel_err(km_kpca_eigenvalues(m), t->eig, 8);
    ck_assert_msg(e <= TOL, "%s: eigenvalues off by %g", what, e);
    e = rel_err(training(m, "eigenvalues"), t->eig, 8);
    ck_assert_msg(e <= TOL, "%s: eigenvalue figure off by %g", what, e);

    double *emb = malloc(600 * 8 * sizeof *emb);
    ck_assert_int_eq(km_kpca_project(m, t->ds.X, 600, emb, NULL), KM_OK);
    e = rel_err(emb, t->emb, 600 * 8);
    ck_assert_msg(e <= TOL, "%s: training projections off by %g", what, e);

    double *proj = malloc(200 * 8 * sizeof *proj);
    ck_assert_int_eq(km_kpca_project(m, t->ds.X + 600 * d, 200, proj, NULL),
                     KM_OK);
    e = rel_err(proj, t->proj, 200 * 8);
    ck_assert_msg(e <= TOL, "%s: projections off by %g", what, e);

    /* The inverse of sklearn's own projections. */
    double *inv = malloc(50 * d * sizeof *inv);
    ck_assert_int_eq(km_kpca_has_inverse(m), 1);
    ck_assert_int_eq(km_kpca_inverse(m, t->proj, 50, inv, NULL), KM_OK);
    e = rel_err(inv, t->inv, 50 * d);
    ck_assert_msg(e <= TOL, "%s: inverse map off by %g", what, e);
    free(inv);
    free(proj);
    free(emb);
}

START_TEST(digits_dense)
{
    digits t;
    digits_load(&t);
    km_model *m = digits_fit(&t, KM_KPCA_SOLVER_DENSE);
    digits_check(&t, m, "dense");
    ck_assert_int_eq((int)training(m, "iterations")[0], 0);
    km_model_free(m);
    digits_free(&t);
}
END_TEST

START_TEST(digits_iterative)
{
    digits t;
    digits_load(&t);
    km_model *m = digits_fit(&t, KM_KPCA_SOLVER_ITERATIVE);
    digits_check(&t, m, "iterative");
    ck_assert_int_gt((int)training(m, "iterations")[0], 0);
    km_model_free(m);
    digits_free(&t);
}
END_TEST

/* The randomized solver against scikit-learn's references, as the others
 * (its residual test puts it well within TOL on this spectrum). */
START_TEST(digits_randomized)
{
    digits t;
    digits_load(&t);
    km_model *m = digits_fit(&t, KM_KPCA_SOLVER_RANDOMIZED);
    digits_check(&t, m, "randomized");
    /* At least one power iteration: q + 2 products. */
    ck_assert_int_ge((int)training(m, "iterations")[0], 3);
    km_model_free(m);
    digits_free(&t);
}
END_TEST

/* Issue 14: on digits, randomized's top eigenvalues within 1e-6 relative
 * of dense's (each its own), its projections (training and new rows) equal
 * up to each component's sign to 1e-6 relative of the component's largest
 * value; at the fixtures' gamma and at a slower-decaying spectrum (gamma
 * 0.1, more components), where a fixed small number of power iterations
 * would not reach 1e-6 (measured: q = 5 gives 9e-5 there). */
START_TEST(randomized_matches_dense)
{
    digits t;
    digits_load(&t);
    const double gammas[2] = {0.02, 0.1};
    const size_t comps[2] = {8, 12};
    for (int c = 0; c < 2; c++) {
        km_kernel k;
        km_kernel_init(&k, KM_KERNEL_RBF);
        k.gamma = gammas[c];
        km_kpca_params p = km_kpca_params_default();
        size_t nc = comps[c];
        p.n_components = nc;
        km_model *m[2] = {NULL, NULL};
        double *proj[2];
        for (int s = 0; s < 2; s++) {
            km_error err = {0};
            p.solver = s ? KM_KPCA_SOLVER_RANDOMIZED : KM_KPCA_SOLVER_DENSE;
            ck_assert_msg(km_kpca_fit(&k, &p, t.ds.X, 600, t.ds.d, NULL,
                                      &m[s], &err) == KM_OK, "%s",
                          err.message);
            ck_assert_int_eq((int)training(m[s], "solver")[0], p.solver);
            ck_assert_int_eq((int)training(m[s], "fallback")[0], 0);
            proj[s] = malloc(800 * nc * sizeof *proj[s]);
            ck_assert_int_eq(km_kpca_project(m[s], t.ds.X, 800, proj[s],
                                             NULL), KM_OK);
        }
        const double *ld = km_kpca_eigenvalues(m[0]);
        const double *lr = km_kpca_eigenvalues(m[1]);
        for (size_t j = 0; j < nc; j++)
            ck_assert_msg(fabs(lr[j] - ld[j]) <= 1e-6 * ld[j],
                          "gamma %g: eigenvalue %zu: %.17g vs dense %.17g",
                          gammas[c], j, lr[j], ld[j]);
        for (size_t j = 0; j < nc; j++) {
            double big = 0, plus = 0, minus = 0;
            for (size_t i = 0; i < 800; i++) {
                double a = proj[1][i * nc + j], b = proj[0][i * nc + j];
                big = fabs(b) > big ? fabs(b) : big;
                plus = fmax(plus, fabs(a - b));
                minus = fmax(minus, fabs(a + b));
            }
            double e = fmin(plus, minus) / big;
            ck_assert_msg(e <= 1e-6, "gamma %g: component %zu: projections "
                          "differ by %g relative", gammas[c], j, e);
        }
        for (int s = 0; s < 2; s++) {
            free(proj[s]);
            km_model_free(m[s]);
        }
    }
    digits_free(&t);
}
END_TEST

/* The two solvers give the same model, to well below the references'
 * tolerance, and their components are orthonormal and centered. */
START_TEST(solvers_agree)
{
    digits t;
    digits_load(&t);
    km_model *a = digits_fit(&t, KM_KPCA_SOLVER_DENSE);
    km_model *b = digits_fit(&t, KM_KPCA_SOLVER_ITERATIVE);
    double *pa = malloc(800 * 8 * sizeof *pa), *pb = malloc(800 * 8 * sizeof *pb);
    ck_assert_int_eq(km_kpca_project(a, t.ds.X, 800, pa, NULL), KM_OK);
    ck_assert_int_eq(km_kpca_project(b, t.ds.X, 800, pb, NULL), KM_OK);
    double e = rel_err(pb, pa, 800 * 8);
    ck_assert_msg(e <= 1e-9, "solvers' projections differ by %g", e);
    e = rel_err(km_kpca_eigenvalues(b), km_kpca_eigenvalues(a), 8);
    ck_assert_msg(e <= 1e-12, "solvers' eigenvalues differ by %g", e);

    /* Training projections are sqrt(lambda_j) u_j: u_j must be
     * orthonormal, orthogonal to 1 (centering), and have its entry of
     * largest magnitude positive. */
    const km_model *ms[2] = {a, b};
    double *p[2] = {pa, pb};
    for (int s = 0; s < 2; s++) {
        const double *lam = km_kpca_eigenvalues(ms[s]);
        double worst = 0;
        for (size_t i = 0; i < 8; i++) {
            double sum = 0, big = 0;
            for (size_t r = 0; r < 600; r++) {
                double v = p[s][r * 8 + i];
                sum += v / sqrt(lam[i]);
                if (fabs(v) > fabs(big))
                    big = v;
            }
            ck_assert_msg(fabs(sum) < 1e-9, "component %zu not centered: %g",
                          i, sum);
            ck_assert_msg(big > 0, "component %zu has a negative peak", i);
            for (size_t j = 0; j <= i; j++) {
                double dot = 0;
                for (size_t r = 0; r < 600; r++)
                    dot += p[s][r * 8 + i] * p[s][r * 8 + j];
                dot /= sqrt(lam[i] * lam[j]);
                double want = i == j ? 1.0 : 0.0;
                worst = fabs(dot - want) > worst ? fabs(dot - want) : worst;
            }
        }
        ck_assert_msg(worst < 1e-10, "solver %d: components not orthonormal "
                      "(%g)", s, worst);
    }
    free(pa);
    free(pb);
    km_model_free(a);
    km_model_free(b);
    digits_free(&t);
}
END_TEST

/* ------------------------------------------------------------ synthetic */

typedef struct syn {
    double *X, *T;
    size_t nx, nt;
} syn;

static void syn_load(syn *s)
{
    s->X = km_read_fixture("kpca_syn_X.txt", &s->nx);
    s->T = km_read_fixture("kpca_syn_T.txt", &s->nt);
    ck_assert_uint_eq(s->nx, 300 * 5);
    ck_assert_uint_eq(s->nt, 50 * 5);
}

static void syn_free(syn *s)
{
    free(s->X);
    free(s->T);
}

/* Fits on the synthetic set and compares with the fixtures of tag. */
static km_model *syn_case(const syn *s, const char *tag, km_kernel *k,
                          const km_kpca_params *p)
{
    char file[128];
    size_t nc = p->n_components, ne, nm, np;
    km_model *m = NULL;
    km_error err = {0};
    ck_assert_msg(km_kpca_fit(k, p, s->X, 300, 5, NULL, &m, &err) == KM_OK,
                  "%s: %s", tag, err.message);
    snprintf(file, sizeof file, "kpca_%s_eigenvalues.txt", tag);
    double *eig = km_read_fixture(file, &ne);
    snprintf(file, sizeof file, "kpca_%s_embedding.txt", tag);
    double *emb = km_read_fixture(file, &nm);
    snprintf(file, sizeof file, "kpca_%s_proj.txt", tag);
    double *proj = km_read_fixture(file, &np);
    ck_assert_uint_eq(ne, nc);
    ck_assert_uint_eq(nm, 300 * nc);
    ck_assert_uint_eq(np, 50 * nc);

    double e = rel_err(km_kpca_eigenvalues(m), eig, nc);
    ck_assert_msg(e <= TOL, "%s: eigenvalues off by %g", tag, e);
    double *out = malloc(300 * nc * sizeof *out);
    ck_assert_int_eq(km_kpca_project(m, s->X, 300, out, NULL), KM_OK);
    e = rel_err(out, emb, 300 * nc);
    ck_assert_msg(e <= TOL, "%s: training projections off by %g", tag, e);
    ck_assert_int_eq(km_kpca_project(m, s->T, 50, out, NULL), KM_OK);
    e = rel_err(out, proj, 50 * nc);
    ck_assert_msg(e <= TOL, "%s: projections off by %g", tag, e);

    if (p->fit_inverse_transform) {
        size_t ni;
        snprintf(file, sizeof file, "kpca_%s_inverse.txt", tag);
        double *inv = km_read_fixture(file, &ni);
        ck_assert_uint_eq(ni, 50 * 5);
        double *back = malloc(50 * 5 * sizeof *back);
        ck_assert_int_eq(km_kpca_inverse(m, proj, 50, back, NULL), KM_OK);
        e = rel_err(back, inv, 50 * 5);
        ck_assert_msg(e <= TOL, "%s: inverse map off by %g", tag, e);
        free(back);
        free(inv);
    }
    free(out);
    free(eig);
    free(emb);
    free(proj);
    return m;
}

/* Default gamma: 1/5 for the fit and 1/n_components for the inverse map,
 * as scikit-learn's gamma=None. */
START_TEST(synthetic_rbf_default_gamma)
{
    syn s;
    syn_load(&s);
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_RBF);
    km_kpca_params p = km_kpca_params_default();
    p.n_components = 5;
    p.fit_inverse_transform = 1;
    p.alpha = 0.5;
    for (int solver = KM_KPCA_SOLVER_DENSE; solver < KM_KPCA_SOLVER_NYSTROM;
         solver++) {
        p.solver = (km_kpca_solver)solver;
        km_model *m = syn_case(&s, "syn", &k, &p);
        ck_assert_double_eq(km_model_kernel(m)->gamma, 0.2);

        /* explained_variance_ratio = lambda_j / trace(Kc); for rbf the
         * trace is n - sum(K) / n. */
        double *K = malloc(300 * 300 * sizeof *K), sum = 0;
        ck_assert_int_eq(km_gram_sym(km_model_kernel(m), s.X, 300, 5, K, 1,
                                     NULL), KM_OK);
        for (size_t i = 0; i < 300 * 300; i++)
            sum += K[i];
        double trace = 300 - sum / 300;
        const double *ratio = training(m, "explained_variance_ratio");
        const double *lam = km_kpca_eigenvalues(m);
        for (size_t j = 0; j < 5; j++)
            ck_assert_double_eq_tol(ratio[j], lam[j] / trace, 1e-12);
        free(K);
        km_model_free(m);
    }
    syn_free(&s);
}
END_TEST

START_TEST(synthetic_poly)
{
    syn s;
    syn_load(&s);
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_POLYNOMIAL);
    k.degree = 2;
    k.gamma = 0.3;
    k.coef0 = 1;
    km_kpca_params p = km_kpca_params_default();
    p.n_components = 4;
    for (int solver = KM_KPCA_SOLVER_DENSE; solver < KM_KPCA_SOLVER_NYSTROM;
         solver++) {
        p.solver = (km_kpca_solver)solver;
        km_model *m = syn_case(&s, "poly", &k, &p);
        ck_assert_int_eq(km_kpca_has_inverse(m), 0);
        double P[4] = {1, 2, 3, 4}, out[5];
        km_error err;
        ck_assert_int_eq(km_kpca_inverse(m, P, 1, out, &err), KM_ECONFLICT);
        ck_assert_ptr_nonnull(strstr(err.message, "fit_inverse_transform"));
        km_model_free(m);
    }
    syn_free(&s);
}
END_TEST

/* An indefinite kernel (sigmoid: Kc has negative eigenvalues too): the
 * two solvers still agree on the top components. */
START_TEST(sigmoid_solvers_agree)
{
    syn s;
    syn_load(&s);
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_SIGMOID);
    k.gamma = 0.5;
    k.coef0 = -1;
    km_kpca_params p = km_kpca_params_default();
    p.n_components = 3;
    km_model *m[2];
    double out[2][50 * 3];
    for (int i = 0; i < 2; i++) {
        p.solver = i ? KM_KPCA_SOLVER_ITERATIVE : KM_KPCA_SOLVER_DENSE;
        ck_assert_int_eq(km_kpca_fit(&k, &p, s.X, 300, 5, NULL, &m[i], NULL),
                         KM_OK);
        ck_assert_int_eq((int)training(m[i], "solver")[0], p.solver);
        ck_assert_int_eq(km_kpca_project(m[i], s.T, 50, out[i], NULL), KM_OK);
    }
    double e = rel_err(km_kpca_eigenvalues(m[1]), km_kpca_eigenvalues(m[0]), 3);
    ck_assert_msg(e <= 1e-12, "eigenvalues differ by %g", e);
    e = rel_err(out[1], out[0], 50 * 3);
    ck_assert_msg(e <= 1e-9, "projections differ by %g", e);
    km_model_free(m[0]);
    km_model_free(m[1]);
    syn_free(&s);
}
END_TEST

/* ------------------------------------------------------------ errors */

START_TEST(too_many_components)
{
    syn s;
    syn_load(&s);
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_RBF);
    km_kpca_params p = km_kpca_params_default();
    km_model *m = NULL;
    km_error err;

    p.n_components = 301;
    ck_assert_int_eq(km_kpca_check(&p, 300, &err), KM_EPROBLEM);
    ck_assert_ptr_nonnull(strstr(err.message, "params.n_components"));
    ck_assert_int_eq(km_kpca_fit(&k, &p, s.X, 300, 5, NULL, &m, &err),
                     KM_EPROBLEM);
    ck_assert_ptr_nonnull(strstr(err.message, "params.n_components"));
    ck_assert_ptr_null(m);
    p.n_components = 0;
    ck_assert_int_eq(km_kpca_check(&p, 300, &err), KM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "params.n_components"));
    p.n_components = 3;
    p.alpha = 0;
    ck_assert_int_eq(km_kpca_check(&p, 300, &err), KM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "params.alpha"));
    p.alpha = 1;
    p.solver = KM_KPCA_SOLVER_COUNT;
    ck_assert_int_eq(km_kpca_check(&p, 300, &err), KM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "params.solver"));
    p.solver = KM_KPCA_SOLVER_AUTO;

    /* n components of a centered n x n matrix: at most n - 1 positive. */
    p.n_components = 300;
    ck_assert_int_eq(km_kpca_check(&p, 300, NULL), KM_OK);
    ck_assert_int_eq(km_kpca_fit(&k, &p, s.X, 300, 5, NULL, &m, &err),
                     KM_EPROBLEM);
    ck_assert_ptr_nonnull(strstr(err.message, "only 299 positive"));
    ck_assert_ptr_null(m);

    double bad[2 * 5];
    memcpy(bad, s.X, sizeof bad);
    bad[7] = NAN;
    p.n_components = 1;
    ck_assert_int_eq(km_kpca_fit(&k, &p, bad, 2, 5, NULL, &m, &err),
                     KM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "X[1][2]"));
    syn_free(&s);
}
END_TEST

/* A linear kernel on points in a plane has two positive eigenvalues; both
 * solvers must say so (the iterative one exhausts its Krylov space). */
START_TEST(not_enough_positive_eigenvalues)
{
    const size_t n = 400;
    double *X = malloc(n * 3 * sizeof *X);
    for (size_t i = 0; i < n; i++) {
        double a = sin(0.37 * (double)i), b = cos(1.3 * (double)i);
        X[3 * i] = a;
        X[3 * i + 1] = b;
        X[3 * i + 2] = a - 2 * b; /* in the plane of the first two */
    }
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_LINEAR);
    km_kpca_params p = km_kpca_params_default();
    p.n_components = 3;
    for (int solver = KM_KPCA_SOLVER_DENSE; solver < KM_KPCA_SOLVER_NYSTROM;
         solver++) {
        km_model *m = NULL;
        km_error err;
        p.solver = (km_kpca_solver)solver;
        p.n_components = 3;
        ck_assert_int_eq(km_kpca_fit(&k, &p, X, n, 3, NULL, &m, &err),
                         KM_EPROBLEM);
        ck_assert_ptr_null(m);
        ck_assert_msg(strstr(err.message, "only 2 positive") != NULL, "%s",
                      err.message);
        /* Two are fine, and equal to the plain PCA of the points. */
        p.n_components = 2;
        ck_assert_int_eq(km_kpca_fit(&k, &p, X, n, 3, NULL, &m, &err), KM_OK);
        ck_assert_int_eq((int)training(m, "solver")[0], solver);
        const double *lam = km_kpca_eigenvalues(m);
        ck_assert(lam[0] >= lam[1] && lam[1] > 0);
        km_model_free(m);
    }
    free(X);
}
END_TEST

/* The iterative solver cannot resolve 100 eigenvalues 1e-9 apart at the
 * top of a spectrum that spreads over [0, 1] within its budget of
 * products: it must give up and leave the fit to dense. A linear kernel
 * on X = Q diag(sigma), with Q's 200 columns orthonormal and centered, has
 * Kc = X X^T with eigenvalues sigma_j^2: 1 - 1e-9 j for j < 100, then
 * spread evenly over (0, 0.5]. */
START_TEST(iterative_falls_back_to_dense)
{
    const size_t n = 300, d = 200;
    double *X = malloc(n * d * sizeof *X), *col = malloc(n * sizeof *col);
    unsigned long long s = 12345;
    for (size_t j = 0; j < d; j++) {
        for (size_t i = 0; i < n; i++) {
            s = s * 6364136223846793005ULL + 1442695040888963407ULL;
            col[i] = (double)(s >> 11) / 9007199254740992.0 - 0.5;
        }
        /* Orthogonal to 1 and to the columns before (Gram-Schmidt twice),
         * unit length, then scaled. */
        for (int pass = 0; pass < 2; pass++) {
            double mean = 0;
            for (size_t i = 0; i < n; i++)
                mean += col[i] / (double)n;
            for (size_t i = 0; i < n; i++)
                col[i] -= mean;
            for (size_t q = 0; q < j; q++) {
                double dot = 0, nq = 0;
                for (size_t i = 0; i < n; i++) {
                    dot += col[i] * X[i * d + q];
                    nq += X[i * d + q] * X[i * d + q];
                }
                for (size_t i = 0; i < n; i++)
                    col[i] -= dot / nq * X[i * d + q];
            }
        }
        double norm = 0;
        for (size_t i = 0; i < n; i++)
            norm += col[i] * col[i];
        double lam = j < 100 ? 1 - 1e-9 * (double)j
                             : 0.5 * (double)(j - 99) / 100;
        double sigma = sqrt(lam) / sqrt(norm);
        for (size_t i = 0; i < n; i++)
            X[i * d + j] = col[i] * sigma;
    }
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_LINEAR);
    km_kpca_params p = km_kpca_params_default();
    p.n_components = 2;
    p.solver = KM_KPCA_SOLVER_ITERATIVE;
    km_model *it = NULL, *dense = NULL;
    km_error err;
    ck_assert_msg(km_kpca_fit(&k, &p, X, n, d, NULL, &it, &err) == KM_OK,
                  "%s", err.message);
    ck_assert_int_eq((int)training(it, "solver")[0], KM_KPCA_SOLVER_DENSE);
    ck_assert_int_eq((int)training(it, "fallback")[0], 1);
    ck_assert_int_ge((int)training(it, "iterations")[0], 50);
    p.solver = KM_KPCA_SOLVER_DENSE;
    ck_assert_int_eq(km_kpca_fit(&k, &p, X, n, d, NULL, &dense, NULL), KM_OK);
    ck_assert_int_eq((int)training(dense, "fallback")[0], 0);
    const double *a = km_kpca_eigenvalues(it), *b = km_kpca_eigenvalues(dense);
    ck_assert_mem_eq(a, b, 2 * sizeof *a);
    ck_assert_double_eq_tol(a[0], 1, 1e-13);
    ck_assert_double_eq_tol(a[1], 1 - 1e-9, 1e-13);
    km_model_free(it);
    km_model_free(dense);
    free(col);
    free(X);
}
END_TEST

/* ------------------------------------------------------------ model file */

START_TEST(file_round_trip)
{
    digits t;
    digits_load(&t);
    km_model *m = digits_fit(&t, KM_KPCA_SOLVER_AUTO);
    size_t d = t.ds.d;
    unsigned char *buf;
    size_t len;
    ck_assert_int_eq(km_model_save_buffer(m, &buf, &len, NULL), KM_OK);
    km_model *back = NULL;
    km_error err;
    ck_assert_msg(km_model_load_buffer(buf, len, &back, &err) == KM_OK, "%s",
                  err.message);
    ck_assert_int_eq(km_model_algorithm(back), KM_ALGO_KPCA);
    ck_assert_uint_eq(km_model_n_outputs(back), 8);
    ck_assert_uint_eq(km_model_bytes(back), km_model_bytes(m));
    ck_assert_mem_eq(km_kpca_eigenvalues(back), km_kpca_eigenvalues(m),
                     8 * sizeof(double));

    double *a = malloc(200 * 8 * sizeof *a), *b = malloc(200 * 8 * sizeof *b);
    ck_assert_int_eq(km_kpca_project(m, t.ds.X + 600 * d, 200, a, NULL), KM_OK);
    ck_assert_int_eq(km_kpca_project(back, t.ds.X + 600 * d, 200, b, NULL),
                     KM_OK);
    ck_assert_mem_eq(a, b, 200 * 8 * sizeof *a);
    double *ia = malloc(200 * d * sizeof *ia), *ib = malloc(200 * d * sizeof *ib);
    ck_assert_int_eq(km_kpca_inverse(m, a, 200, ia, NULL), KM_OK);
    ck_assert_int_eq(km_kpca_inverse(back, a, 200, ib, NULL), KM_OK);
    ck_assert_mem_eq(ia, ib, 200 * d * sizeof *ia);

    const km_info_entry *e = km_info_find(km_model_params(back), "n_components");
    ck_assert_ptr_nonnull(e);
    ck_assert_int_eq(e->kind, KM_INFO_INTEGER);
    ck_assert_double_eq(e->values[0], 8);
    e = km_info_find(km_model_params(back), "fit_inverse_transform");
    ck_assert_ptr_nonnull(e);
    ck_assert_int_eq(e->kind, KM_INFO_BOOLEAN);
    ck_assert_double_eq(e->values[0], 1);
    e = km_info_find(km_model_params(back), "alpha");
    ck_assert_ptr_nonnull(e);
    ck_assert_double_eq(e->values[0], 0.1);
    e = km_info_find(km_model_training(back), "eigenvalues");
    ck_assert_ptr_nonnull(e);
    ck_assert_int_eq(e->is_array, 1);
    ck_assert_uint_eq(e->count, 8);

    /* A flipped byte in the payload is caught. */
    buf[len / 2] ^= 0x40;
    km_model *bad = NULL;
    ck_assert_int_eq(km_model_load_buffer(buf, len, &bad, NULL), KM_ECORRUPT);
    ck_assert_ptr_null(bad);

    free(ia);
    free(ib);
    free(a);
    free(b);
    free(buf);
    km_model_free(back);
    km_model_free(m);
    digits_free(&t);
}
END_TEST

/* A model without the inverse map round-trips too. */
START_TEST(file_round_trip_no_inverse)
{
    syn s;
    syn_load(&s);
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_LAPLACIAN);
    k.gamma = 0.1;
    km_kpca_params p = km_kpca_params_default();
    p.n_components = 6;
    km_model *m, *back;
    ck_assert_int_eq(km_kpca_fit(&k, &p, s.X, 300, 5, NULL, &m, NULL), KM_OK);
    unsigned char *buf;
    size_t len;
    ck_assert_int_eq(km_model_save_buffer(m, &buf, &len, NULL), KM_OK);
    ck_assert_int_eq(km_model_load_buffer(buf, len, &back, NULL), KM_OK);
    ck_assert_int_eq(km_kpca_has_inverse(back), 0);
    double a[50 * 6], b[50 * 6];
    ck_assert_int_eq(km_kpca_project(m, s.T, 50, a, NULL), KM_OK);
    ck_assert_int_eq(km_kpca_project(back, s.T, 50, b, NULL), KM_OK);
    ck_assert_mem_eq(a, b, sizeof a);
    /* Truncated: corrupt, not a crash. */
    km_model *bad = NULL;
    ck_assert_int_ne(km_model_load_buffer(buf, len - 9, &bad, NULL), KM_OK);
    ck_assert_ptr_null(bad);
    free(buf);
    km_model_free(back);
    km_model_free(m);
    syn_free(&s);
}
END_TEST

/* ------------------------------------------------------------ conflicts */

START_TEST(wrong_algorithm)
{
    syn s;
    syn_load(&s);
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_RBF);
    double y[300];
    for (size_t i = 0; i < 300; i++)
        y[i] = s.X[i * 5];
    km_krr_params kp = km_krr_params_default();
    km_model *krr, *kpca;
    ck_assert_int_eq(km_krr_fit(&k, &kp, s.X, 300, 5, y, 1, NULL, &krr, NULL),
                     KM_OK);
    km_kpca_params p = km_kpca_params_default();
    p.n_components = 2;
    p.fit_inverse_transform = 1;
    ck_assert_int_eq(km_kpca_fit(&k, &p, s.X, 300, 5, NULL, &kpca, NULL),
                     KM_OK);

    double out[2 * 5];
    km_error err;
    ck_assert_int_eq(km_kpca_project(krr, s.T, 1, out, &err), KM_ECONFLICT);
    ck_assert_ptr_nonnull(strstr(err.message, "kpca"));
    ck_assert_int_eq(km_kpca_inverse(krr, out, 1, out, &err), KM_ECONFLICT);
    ck_assert_int_eq(km_kpca_has_inverse(krr), 0);
    ck_assert_ptr_null(km_kpca_eigenvalues(krr));
    ck_assert_int_eq(km_krr_predict(kpca, s.T, 1, out, &err), KM_ECONFLICT);
    ck_assert_ptr_nonnull(strstr(err.message, "krr"));
    ck_assert_int_eq(km_model_n_outputs(kpca), 2);

    /* Wrong shapes and values of the inputs. */
    ck_assert_int_eq(km_kpca_project(kpca, s.T, 0, out, &err), KM_EINVAL);
    double P[2] = {0.5, NAN};
    ck_assert_int_eq(km_kpca_inverse(kpca, P, 1, out, &err), KM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "P[0][1]"));
    km_model_free(krr);
    km_model_free(kpca);
    syn_free(&s);
}
END_TEST

/* ------------------------------------------------------------ progress */

typedef struct watch {
    int calls, stop_at;
    double last;
    int decreasing;
} watch;

static int on_progress(void *ctx, double f)
{
    watch *w = ctx;
    if (f < w->last)
        w->decreasing = 1;
    w->last = f;
    return ++w->calls == w->stop_at;
}

/* For both solvers that report progress while they iterate (_i: the
 * iterative, then the randomized). */
START_TEST(progress_and_cancel)
{
    syn s;
    syn_load(&s);
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_RBF);
    km_kpca_params p = km_kpca_params_default();
    p.n_components = 5;
    p.solver = _i == 2 ? KM_KPCA_SOLVER_NYSTROM
               : _i    ? KM_KPCA_SOLVER_RANDOMIZED
                       : KM_KPCA_SOLVER_ITERATIVE;
    p.n_centres = 40; /* nystrom: 300 rows in blocks of 2^21 / 40 */
    km_model *m = NULL;
    km_error err;

    /* Uncancelled: non-decreasing, ends at 1. */
    watch w = {0, -1, 0, 0};
    km_fit_control ctl = {on_progress, &w};
    ck_assert_int_eq(km_kpca_fit(&k, &p, s.X, 300, 5, &ctl, &m, &err), KM_OK);
    ck_assert_int_eq(w.decreasing, 0);
    ck_assert_double_eq(w.last, 1.0);
    int total = w.calls;
    ck_assert_int_ge(total, 4);
    ck_assert_int_eq((int)training(m, "solver")[0], p.solver);
    if (p.solver == KM_KPCA_SOLVER_RANDOMIZED) /* one call per iteration */
        ck_assert_int_ge(total, 4 + (int)training(m, "iterations")[0] - 3);
    km_model_free(m);

    /* Cancelled at each call in turn but the last (1.0, when the model is
     * already built): no model, KM_ECANCELLED (sanitizers check leaks). */
    for (int at = 1; at < total; at++) {
        watch c = {0, at, 0, 0};
        km_fit_control cc = {on_progress, &c};
        m = NULL;
        ck_assert_int_eq(km_kpca_fit(&k, &p, s.X, 300, 5, &cc, &m, &err),
                         KM_ECANCELLED);
        ck_assert_ptr_null(m);
        ck_assert_int_eq(c.calls, at);
    }
    syn_free(&s);
}
END_TEST

START_TEST(fit_bytes)
{
    km_kpca_params p = km_kpca_params_default();
    p.n_components = 10;
    size_t n = 8000, nn = n * n * 8;
    size_t b = km_kpca_fit_bytes(n, 20, &p);
    /* One n x n matrix plus O(n k). */
    ck_assert_uint_gt(b, nn);
    ck_assert_uint_lt(b, nn + 400 * n * 8);
    p.fit_inverse_transform = 1;
    ck_assert_uint_gt(km_kpca_fit_bytes(n, 20, &p), b);
    ck_assert_str_eq(km_kpca_solver_name(KM_KPCA_SOLVER_ITERATIVE), "iterative");
    ck_assert_str_eq(km_kpca_solver_name(KM_KPCA_SOLVER_RANDOMIZED),
                     "randomized");
    ck_assert_int_eq(KM_KPCA_SOLVER_RANDOMIZED, 3); /* stored figure */
    ck_assert_ptr_null(km_kpca_solver_name(KM_KPCA_SOLVER_COUNT));
}
END_TEST

/* ------------------------------------------------------------ nystrom */

static km_kpca_params nystrom(size_t nc, size_t m, uint64_t seed)
{
    km_kpca_params p = km_kpca_params_default();
    p.n_components = nc;
    p.solver = KM_KPCA_SOLVER_NYSTROM;
    p.n_centres = m;
    p.seed = seed;
    return p;
}

/* Largest difference of a and b (n x nc row-major) per component, up to
 * its sign, relative to the component's largest |b|; the worst of them.
 * *flipped counts the components that matched only with the sign
 * flipped. */
static double up_to_sign(const double *a, const double *b, size_t n,
                         size_t nc, int *flipped)
{
    double worst = 0;
    *flipped = 0;
    for (size_t j = 0; j < nc; j++) {
        double big = 0, plus = 0, minus = 0;
        for (size_t i = 0; i < n; i++) {
            double x = a[i * nc + j], y = b[i * nc + j];
            big = fabs(y) > big ? fabs(y) : big;
            plus = fmax(plus, fabs(x - y));
            minus = fmax(minus, fabs(x + y));
        }
        *flipped += minus < plus;
        worst = fmax(worst, fmin(plus, minus) / big);
    }
    return worst;
}

/* Issue 14: with every row a centre (m = n) the nystrom solver is the
 * dense one: on digits (600 rows, 200 more projected) eigenvalues within
 * 1e-8 relative, projections equal up to sign to 1e-8 of each
 * component's largest (and, by the shared sign rule, with the same
 * signs), for rbf and for a polynomial kernel. */
START_TEST(nystrom_all_rows_is_dense)
{
    digits t;
    digits_load(&t);
    size_t nc = 8;
    for (int c = 0; c < 2; c++) {
        km_kernel k;
        km_kernel_init(&k, c ? KM_KERNEL_POLYNOMIAL : KM_KERNEL_RBF);
        k.gamma = c ? 0.01 : 0.02;
        km_kpca_params p[2] = {km_kpca_params_default(),
                               nystrom(nc, 600, 3)};
        p[0].n_components = nc;
        p[0].solver = KM_KPCA_SOLVER_DENSE;
        km_model *m[2];
        double *proj[2];
        for (int s = 0; s < 2; s++) {
            km_error err = {0};
            ck_assert_msg(km_kpca_fit(&k, &p[s], t.ds.X, 600, t.ds.d, NULL,
                                      &m[s], &err) == KM_OK, "%s",
                          err.message);
            proj[s] = malloc(800 * nc * sizeof *proj[s]);
            ck_assert_int_eq(km_kpca_project(m[s], t.ds.X, 800, proj[s],
                                             NULL), KM_OK);
        }
        ck_assert_uint_eq(km_model_n_samples(m[1]), 600);
        ck_assert_int_eq((int)training(m[1], "solver")[0],
                         KM_KPCA_SOLVER_NYSTROM);
        double e = rel_err(km_kpca_eigenvalues(m[1]),
                           km_kpca_eigenvalues(m[0]), nc);
        ck_assert_msg(e <= 1e-8, "kernel %d: eigenvalues off by %g", c, e);
        e = rel_err(training(m[1], "explained_variance_ratio"),
                    training(m[0], "explained_variance_ratio"), nc);
        ck_assert_msg(e <= 1e-8, "kernel %d: variance ratios off by %g", c,
                      e);
        int flipped;
        e = up_to_sign(proj[1], proj[0], 800, nc, &flipped);
        ck_assert_msg(e <= 1e-8, "kernel %d: projections off by %g", c, e);
        ck_assert_int_eq(flipped, 0);
        for (int s = 0; s < 2; s++) {
            free(proj[s]);
            km_model_free(m[s]);
        }
    }
    digits_free(&t);
}
END_TEST

/* Against scikit-learn's Nystroem + PCA on the centres core's seeded
 * draw picks (tests/fixtures/gen_kpca_nystrom_refs.py): eigenvalues and
 * projections of the training and new rows to 1e-8, signs included; the
 * figures. */
START_TEST(nystrom_same_as_sklearn)
{
    size_t n, nc = 5;
    double *X = km_read_fixture("kpcany_X.txt", &n);
    ck_assert_uint_eq(n, 500 * 4);
    double *T = km_read_fixture("kpcany_T.txt", &n);
    ck_assert_uint_eq(n, 100 * 4);
    double *c = km_read_fixture("kpcany_centres.txt", &n);
    ck_assert_uint_eq(n, 60);
    double *eig = km_read_fixture("kpcany_eigenvalues.txt", &n);
    ck_assert_uint_eq(n, nc);
    double *emb = km_read_fixture("kpcany_embedding.txt", &n);
    ck_assert_uint_eq(n, 500 * nc);
    double *proj = km_read_fixture("kpcany_proj.txt", &n);
    ck_assert_uint_eq(n, 100 * nc);
    size_t idx[500];
    km_krr_draw_centres(11, 500, 60, idx);
    for (size_t i = 0; i < 60; i++)
        ck_assert_uint_eq(idx[i], (size_t)c[i]);

    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_RBF);
    k.gamma = 1.0;
    km_kpca_params p = nystrom(nc, 60, 11);
    km_model *m = NULL;
    km_error err = {0};
    ck_assert_msg(km_kpca_fit(&k, &p, X, 500, 4, NULL, &m, &err) == KM_OK,
                  "%s", err.message);
    double e = rel_err(km_kpca_eigenvalues(m), eig, nc);
    ck_assert_msg(e <= TOL, "eigenvalues off by %g", e);
    double *out = malloc(500 * nc * sizeof *out);
    ck_assert_int_eq(km_kpca_project(m, X, 500, out, NULL), KM_OK);
    e = rel_err(out, emb, 500 * nc);
    ck_assert_msg(e <= TOL, "training projections off by %g", e);
    ck_assert_int_eq(km_kpca_project(m, T, 100, out, NULL), KM_OK);
    e = rel_err(out, proj, 100 * nc);
    ck_assert_msg(e <= TOL, "projections off by %g", e);

    ck_assert_uint_eq(km_model_n_samples(m), 60);
    ck_assert_int_eq(km_kpca_has_inverse(m), 0);
    const km_info *pi = km_model_params(m);
    ck_assert_double_eq(km_info_find(pi, "eigen_solver")->values[0],
                        KM_KPCA_SOLVER_NYSTROM);
    ck_assert_double_eq(km_info_find(pi, "n_centres")->values[0], 60);
    ck_assert_double_eq(km_info_find(pi, "seed")->values[0], 11);
    ck_assert_double_eq(training(m, "solver")[0], KM_KPCA_SOLVER_NYSTROM);
    ck_assert_double_eq(training(m, "iterations")[0], 3);
    ck_assert_double_eq(training(m, "fallback")[0], 0);
    const double *r = training(m, "explained_variance_ratio");
    for (size_t j = 0; j < nc; j++)
        ck_assert(r[j] > 0 && r[j] < 1 && (j == 0 || r[j] <= r[j - 1]));
    ck_assert_int_eq(km_kpca_inverse(m, out, 1, out, &err), KM_ECONFLICT);
    free(out);
    km_model_free(m);
    free(X);
    free(T);
    free(c);
    free(eig);
    free(emb);
    free(proj);
}
END_TEST

/* The model file: format version 5 with the nystrom form, the same
 * projections after a round trip; a bad form and an inverse map in the
 * nystrom form are refused as corrupt. */
START_TEST(nystrom_file_round_trip)
{
    syn s;
    syn_load(&s);
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_RBF);
    km_kpca_params p = nystrom(4, 50, 2);
    km_model *m = NULL, *back = NULL;
    km_error err = {0};
    ck_assert_msg(km_kpca_fit(&k, &p, s.X, 300, 5, NULL, &m, &err) == KM_OK,
                  "%s", err.message);
    unsigned char *buf;
    size_t len;
    ck_assert_int_eq(km_model_save_buffer(m, &buf, &len, NULL), KM_OK);
    ck_assert_int_eq(buf[4], 5);
    ck_assert_msg(km_model_load_buffer(buf, len, &back, &err) == KM_OK, "%s",
                  err.message);
    ck_assert_uint_eq(km_model_bytes(back), km_model_bytes(m));
    double *a = malloc(100 * 4 * sizeof *a), *b = malloc(100 * 4 * sizeof *b);
    ck_assert_int_eq(km_kpca_project(m, s.T, 100, a, NULL), KM_OK);
    ck_assert_int_eq(km_kpca_project(back, s.T, 100, b, NULL), KM_OK);
    ck_assert_mem_eq(a, b, 100 * 4 * sizeof *a);
    ck_assert_int_eq(km_kpca_has_inverse(back), 0);
    km_model_free(back);

    /* The form is the payload's first u32: before eigval's u64 count. */
    size_t at = 0;
    for (size_t i = 0; i + 12 <= len && !at; i++) {
        uint64_t cnt;
        uint32_t f;
        memcpy(&f, buf + i, 4);
        memcpy(&cnt, buf + i + 4, 8);
        double v;
        if (i + 20 <= len)
            memcpy(&v, buf + i + 12, 8);
        if (f == 1 && cnt == 4 && i + 20 <= len &&
            v == km_kpca_eigenvalues(m)[0])
            at = i;
    }
    ck_assert_uint_gt(at, 0);
    buf[at] = 2;
    back = NULL;
    ck_assert_int_ne(km_model_load_buffer(buf, len, &back, &err), KM_OK);
    ck_assert_ptr_null(back);
    free(a);
    free(b);
    free(buf);
    km_model_free(m);
    syn_free(&s);
}
END_TEST

/* The checks: n_centres above n, n_components not below m (422), the
 * inverse map and a seed above 2^53 (400); the memory estimate holds m^2,
 * not n^2. */
START_TEST(nystrom_checks)
{
    km_kpca_params p = nystrom(5, 301, 0);
    km_error err;
    ck_assert_int_eq(km_kpca_check(&p, 300, &err), KM_EPROBLEM);
    ck_assert_ptr_nonnull(strstr(err.message, "params.n_centres"));
    p.n_centres = 5;
    ck_assert_int_eq(km_kpca_check(&p, 300, &err), KM_EPROBLEM);
    ck_assert_ptr_nonnull(strstr(err.message, "params.n_components"));
    p.n_centres = 6;
    ck_assert_int_eq(km_kpca_check(&p, 300, &err), KM_OK);
    p.n_centres = 0; /* min(n, 1000) */
    p.n_components = 5;
    ck_assert_int_eq(km_kpca_check(&p, 5, &err), KM_EPROBLEM);
    ck_assert_int_eq(km_kpca_check(&p, 6, &err), KM_OK);
    p.fit_inverse_transform = 1;
    ck_assert_int_eq(km_kpca_check(&p, 300, &err), KM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message,
                                 "params.fit_inverse_transform"));
    p.fit_inverse_transform = 0;
    p.seed = ((uint64_t)1 << 53) + 1;
    ck_assert_int_eq(km_kpca_check(&p, 300, &err), KM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "params.seed"));

    p = nystrom(10, 2000, 0);
    size_t n = 1000000, b = km_kpca_fit_bytes(n, 20, &p);
    ck_assert_uint_gt(b, 2 * 2000 * 2000 * 8);
    ck_assert_uint_lt(b, 2 * 2000 * 2000 * 8 + 16 * n + ((size_t)64 << 20));
    ck_assert_str_eq(km_kpca_solver_name(KM_KPCA_SOLVER_NYSTROM), "nystrom");
    ck_assert_int_eq(KM_KPCA_SOLVER_NYSTROM, 4); /* stored figure */
}
END_TEST

/*
 * A dense engine (km_dense_engine, what kmserve-mpi hands ScaLAPACK) that
 * works here from the definition: Kc = K - 1K/n - K1/n + 1K1/n^2 in full,
 * LAPACK's dsyevr on all of it, the top vectors with every other one
 * negated (core must fix the signs); the inverse map's solve by
 * km_krr_solve. It counts its calls and the progress it saw.
 */
typedef struct fake_engine {
    int eigens, solves;
    double last; /* progress */
    int backwards;
} fake_engine;

static int fake_progress(void *ctx, double f)
{
    fake_engine *e = ctx;
    e->backwards |= f < e->last;
    e->last = f;
    return 0;
}

static km_status fake_eigen(void *ctx, const km_kernel *k, const double *X,
                            size_t n, size_t d, size_t nev, double *col_mean,
                            double *grand, double *trace, double *lambda,
                            double *U, const km_fit_control *ctl, double f0,
                            double f1, km_error *err)
{
    fake_engine *e = ctx;
    e->eigens++;
    ctl->progress(ctl->ctx, f0);
    double *K = malloc(n * n * sizeof *K), *w = malloc(n * sizeof *w),
           *Z = malloc(n * n * sizeof *Z);
    lapack_int *sup = malloc(2 * n * sizeof *sup), found = 0;
    ck_assert_int_eq(km_gram_sym(k, X, n, d, K, 1, err), KM_OK);
    double g = 0;
    for (size_t j = 0; j < n; j++) {
        double s = 0;
        for (size_t i = 0; i < n; i++)
            s += K[i * n + j];
        col_mean[j] = s / (double)n;
        g += col_mean[j] / (double)n;
    }
    *grand = g;
    *trace = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++) {
            K[i * n + j] += g - col_mean[i] - col_mean[j];
            *trace += i == j ? K[i * n + j] : 0;
        }
    ck_assert_int_eq(LAPACKE_dsyevr(LAPACK_COL_MAJOR, 'V', 'A', 'U',
                                    (lapack_int)n, K, (lapack_int)n, 0, 0, 0,
                                    0, 0, &found, w, Z, (lapack_int)n, sup),
                     0);
    for (size_t j = 0; j < nev; j++) {
        lambda[j] = w[n - 1 - j];
        for (size_t i = 0; i < n; i++)
            U[j * n + i] = (j % 2 ? -1 : 1) * Z[(n - 1 - j) * n + i];
    }
    free(K);
    free(w);
    free(Z);
    free(sup);
    ctl->progress(ctl->ctx, f1);
    return KM_OK;
}

static km_status fake_solve(void *ctx, const km_kernel *k, double scale,
                            const double *X, size_t n, size_t d, double shift,
                            const double *Y, size_t m, double *C, double *L,
                            const km_fit_control *ctl, double f0, double f1,
                            km_error *err)
{
    fake_engine *e = ctx;
    e->solves++;
    ck_assert(L == NULL && scale == 1.0);
    double *G = malloc(n * n * sizeof *G);
    ck_assert_int_eq(km_gram_sym(k, X, n, d, G, 0, err), KM_OK);
    km_status st = km_krr_solve(G, n, shift, Y, m, C, "G", ctl, f0, f1, err);
    free(G);
    return st;
}

START_TEST(dense_engine)
{
    digits t;
    digits_load(&t);
    fake_engine fe = {0};
    km_dense_engine eng = {&fe, fake_solve, fake_eigen};
    km_fit_control ctl = {fake_progress, &fe, 1, &eng};
    km_model *m = digits_fit_ctl(&t, KM_KPCA_SOLVER_AUTO, &ctl);
    ck_assert_int_eq(fe.eigens, 1);
    ck_assert_int_eq(fe.solves, 1);
    ck_assert_int_eq(fe.backwards, 0);
    ck_assert_double_eq(fe.last, 1.0);
    ck_assert_int_eq((int)training(m, "solver")[0], KM_KPCA_SOLVER_DENSE);
    digits_check(&t, m, "dense engine");
    km_model_free(m);
    /* Not with the other solvers: they run here. */
    m = digits_fit_ctl(&t, KM_KPCA_SOLVER_ITERATIVE, &ctl);
    ck_assert_int_eq(fe.eigens, 1);
    km_model_free(m);
    digits_free(&t);
}
END_TEST

/* ------------------------------------------------------------ clusters */

/*
 * Issue 24, defect 6: rbf with gamma 0.5 on standard normal rows of
 * d = 100 features has k(x, z) ~ exp(-100) off the diagonal, so Kc is I -
 * 1/n to rounding: n - 1 eigenvalues equal to 1. The dense solver (and
 * with it auto and iterative, which leave such k to dense) answered
 * "dsyevr failed (info 0, 32 of 50 found)" at n = 1000, k = 50: LAPACK's
 * subset path turns the index range into a value range, and a cluster
 * across the boundary makes it keep fewer. Checked against LAPACK's
 * dsyevd on the whole centred Gram matrix built here from the definition
 * (numpy.linalg.eigh's routine; the HTTP runner kpca_clusters.py checks
 * against numpy itself). Where eigenvalues are equal any basis of their
 * space is right, so the comparison is of what does not depend on it.
 */

/* n x d standard normal draws (Marsaglia's polar method on km_rng). */
static double *gaussian_rows(size_t n, size_t d, uint64_t seed)
{
    km_rng g = {seed};
    double *X = malloc(n * d * sizeof *X);
    for (size_t i = 0; i < n * d; i++) {
        double u, v, s;
        do {
            u = km_rng_uniform(&g);
            v = km_rng_uniform(&g);
            s = u * u + v * v;
        } while (s >= 1.0 || s == 0.0);
        X[i] = u * sqrt(-2.0 * log(s) / s);
    }
    return X;
}

/* The reference: Kc (n x n, full, row-major) of rbf gamma on X from the
 * definition, its eigenvalues w ascending and (if asked) unit vectors Z
 * (column j of the column-major n x n: eigenvalue w[j]). */
typedef struct cref {
    size_t n;
    double *Kc, *w, *Z;
} cref;

static void cref_init(cref *r, const double *X, size_t n, size_t d,
                      double gamma, int vectors)
{
    double *K = malloc(n * n * sizeof *K), *mean = calloc(n, sizeof *mean);
    double g = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j <= i; j++) {
            double s = 0;
            for (size_t c = 0; c < d; c++) {
                double t = X[i * d + c] - X[j * d + c];
                s += t * t;
            }
            K[i * n + j] = K[j * n + i] = exp(-gamma * s);
        }
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < n; j++)
            mean[i] += K[i * n + j] / (double)n;
        g += mean[i] / (double)n;
    }
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++)
            K[i * n + j] += g - mean[i] - mean[j];
    r->n = n;
    r->Kc = K;
    r->w = malloc(n * sizeof *r->w);
    r->Z = malloc(n * n * sizeof *r->Z);
    memcpy(r->Z, K, n * n * sizeof *K);
    ck_assert_int_eq(LAPACKE_dsyevd(LAPACK_COL_MAJOR, vectors ? 'V' : 'N',
                                    'U', (lapack_int)n, r->Z, (lapack_int)n,
                                    r->w),
                     0);
    if (!vectors) {
        free(r->Z);
        r->Z = NULL;
    }
    free(mean);
}

static void cref_free(cref *r)
{
    free(r->Kc);
    free(r->w);
    free(r->Z);
}

/*
 * m's k components against the reference, whatever rotation it chose
 * within a cluster:
 * - the eigenvalues (the model's and its training figure) equal the
 *   reference's k largest, to 1e-10 of the largest;
 * - the training projections P (n x k, = U diag(sqrt(lambda))) have
 *   P^T P = diag(lambda) and K_c P = P diag(lambda), to 1e-9 of the
 *   largest eigenvalue (column by column, relative to |p_j|): orthogonal
 *   eigenvectors of the top k eigenvalues, i.e. a right answer;
 * - each column's entry of largest magnitude is positive (the sign rule);
 * - where the reference has vectors, a column whose eigenvalue stands
 *   apart from its neighbours (by 1e-6 of the largest) equals the
 *   reference's vector times sqrt(lambda), up to its sign, to 1e-8.
 */
static void check_top(const cref *r, const double *X, const km_model *m,
                      size_t k, const char *what)
{
    size_t n = r->n;
    const double *lam = km_kpca_eigenvalues(m), *w = r->w;
    const double *fig = training(m, "eigenvalues");
    double big = w[n - 1];
    ck_assert_uint_eq(km_model_n_outputs(m), k);
    for (size_t j = 0; j < k; j++) {
        ck_assert_msg(fabs(lam[j] - w[n - 1 - j]) <= 1e-10 * big,
                      "%s: eigenvalue %zu is %.17g, reference %.17g", what,
                      j, lam[j], w[n - 1 - j]);
        ck_assert_double_eq(fig[j], lam[j]);
    }
    double *P = malloc(n * k * sizeof *P), *KP = malloc(n * k * sizeof *KP);
    ck_assert_int_eq(km_kpca_project(m, X, n, P, NULL), KM_OK);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)k,
                (int)n, 1.0, r->Kc, (int)n, P, (int)k, 0.0, KP, (int)k);
    double worst_gram = 0, worst_res = 0;
    for (size_t a = 0; a < k; a++) {
        double res = 0, norm = 0, most = 0;
        for (size_t i = 0; i < n; i++) {
            double p = P[i * k + a], t = KP[i * k + a] - lam[a] * p;
            res += t * t;
            norm += p * p;
            most = fabs(p) > fabs(most) ? p : most;
        }
        ck_assert_msg(most > 0, "%s: component %zu breaks the sign rule",
                      what, a);
        worst_res = fmax(worst_res, sqrt(res / norm) / big);
        for (size_t b = 0; b <= a; b++) {
            double s = 0;
            for (size_t i = 0; i < n; i++)
                s += P[i * k + a] * P[i * k + b];
            worst_gram = fmax(worst_gram,
                              fabs(s - (a == b ? lam[a] : 0)) / big);
        }
    }
    ck_assert_msg(worst_gram <= 1e-9, "%s: P^T P is off diag(lambda) by %g",
                  what, worst_gram);
    ck_assert_msg(worst_res <= 1e-9, "%s: |Kc p - lambda p| is %g |p|", what,
                  worst_res);
    for (size_t j = 0; r->Z && j < k; j++) {
        double up = j ? w[n - j] : INFINITY;
        double down = w[n - 2 - j], l = w[n - 1 - j];
        if (!(up - l > 1e-6 * big && l - down > 1e-6 * big))
            continue;
        const double *z = r->Z + (n - 1 - j) * n;
        double plus = 0, minus = 0, most = 0;
        for (size_t i = 0; i < n; i++) {
            double y = z[i] * sqrt(l);
            plus = fmax(plus, fabs(P[i * k + j] - y));
            minus = fmax(minus, fabs(P[i * k + j] + y));
            most = fmax(most, fabs(y));
        }
        ck_assert_msg(fmin(plus, minus) <= 1e-8 * most,
                      "%s: component %zu is off the reference's by %g", what,
                      j, fmin(plus, minus) / most);
    }
    free(KP);
    free(P);
}

/* A fit of solver s (n_centres n for nystrom: every row a centre, so
 * that it solves the same problem), checked by check_top. Returns the
 * "solver" training figure, plus 10 if dense took over (fallback). */
static int cluster_fit(const cref *r, const double *X, size_t d, size_t k,
                       km_kpca_solver s, const char *what)
{
    km_kernel kern;
    km_kernel_init(&kern, KM_KERNEL_RBF);
    kern.gamma = 0.5;
    km_kpca_params p = km_kpca_params_default();
    p.n_components = k;
    p.solver = s;
    if (s == KM_KPCA_SOLVER_NYSTROM)
        p.n_centres = r->n;
    km_model *m = NULL;
    km_error err = {0};
    char tag[128];
    snprintf(tag, sizeof tag, "%s, n %zu, k %zu, %s", what, r->n, k,
             km_kpca_solver_name(s));
    ck_assert_msg(km_kpca_fit(&kern, &p, X, r->n, d, NULL, &m, &err) ==
                      KM_OK,
                  "%s: %s", tag, err.message);
    check_top(r, X, m, k, tag);
    int used = (int)training(m, "solver")[0] +
               10 * (int)training(m, "fallback")[0];
    km_model_free(m);
    return used;
}

/* The first trigger (1000 x 100, k 50; every solver leaves it to
 * dense but randomized and nystrom), the same at 300 x 100, k 20, and at
 * 1000 x 100, k 20, where auto and iterative run block Lanczos on the
 * cluster: it must converge there or leave the fit to dense. _i: the
 * solver. */
START_TEST(cluster_of_equal_eigenvalues)
{
    km_kpca_solver s = (km_kpca_solver)_i;
    double *X = gaussian_rows(1000, 100, 24);
    cref r;
    cref_init(&r, X, 300, 100, 0.5, 0);
    cluster_fit(&r, X, 100, 20, s, "gaussian 300 x 100");
    cref_free(&r);
    cref_init(&r, X, 1000, 100, 0.5, 0);
    ck_assert_double_eq_tol(r.w[1], 1, 1e-12); /* the cluster it is */
    cluster_fit(&r, X, 100, 50, s, "gaussian 1000 x 100");
    int used = cluster_fit(&r, X, 100, 20, s, "gaussian 1000 x 100");
    if (s == KM_KPCA_SOLVER_AUTO || s == KM_KPCA_SOLVER_ITERATIVE)
        ck_assert_msg(used == KM_KPCA_SOLVER_ITERATIVE ||
                          used == 10 + KM_KPCA_SOLVER_DENSE,
                      "block Lanczos did not run (%d)", used);
    cref_free(&r);
    free(X);
}
END_TEST

/* The second trigger: 2000 x 200, k 100, every solver on one
 * reference. */
START_TEST(cluster_of_equal_eigenvalues_2000)
{
    double *X = gaussian_rows(2000, 200, 2024);
    cref r;
    cref_init(&r, X, 2000, 200, 0.5, 0);
    for (int s = KM_KPCA_SOLVER_AUTO; s < KM_KPCA_SOLVER_COUNT; s++)
        cluster_fit(&r, X, 200, 100, (km_kpca_solver)s,
                    "gaussian 2000 x 200");
    cref_free(&r);
    free(X);
}
END_TEST

/* Three tight groups of 10 rows (spreads 0.05, 0.1, 0.15 around their
 * centres) among 370 spread-out ones: three distinct top eigenvalues (about
 * 8, 4.3 and 1.9), then the cluster at 1 that the boundary of k = 16 cuts
 * (the largest k at n = 400 for which iterative runs block Lanczos). The
 * three are compared with the reference's vectors as well. */
START_TEST(distinct_then_cluster)
{
    km_kpca_solver s = (km_kpca_solver)_i;
    const size_t n = 400, d = 100;
    double *X = gaussian_rows(n, d, 7);
    for (size_t i = 0; i < 30; i++) {
        const double *c = X + (i / 10) * 10 * d; /* the group's first row */
        double spread = 0.05 * (double)(i / 10 + 1);
        if (i % 10)
            for (size_t j = 0; j < d; j++)
                X[i * d + j] = c[j] + spread * X[(i + 100) * d + j];
    }
    cref r;
    cref_init(&r, X, n, d, 0.5, 1);
    ck_assert(r.w[n - 1] > 7 && r.w[n - 2] > 4 && r.w[n - 3] > 1.5);
    cluster_fit(&r, X, d, 16, s, "groups");
    cref_free(&r);
    free(X);
}
END_TEST

/* Fewer positive eigenvalues than asked is a 422 (KM_EPROBLEM naming
 * params.n_components), also when the zero ones form a cluster that the
 * index range cuts: three distinct rows repeated 100 times each have
 * a centred Gram matrix of rank 2 (two equal eigenvalues, 100), and 298
 * zeros to rounding. Two components are fine. _i: the solver, nystrom
 * left out: with duplicate rows among its centres K_mm is singular, it
 * factors it with a shift, and a third eigenvalue of 0.02 comes out of
 * the rounding that T^-1 amplifies (a defect of its own). */
START_TEST(duplicate_rows_rank)
{
    km_kpca_solver s = (km_kpca_solver)_i;
    const size_t n = 300, d = 100;
    double *base = gaussian_rows(3, d, 99), *X = malloc(n * d * sizeof *X);
    for (size_t i = 0; i < n; i++)
        memcpy(X + i * d, base + (i % 3) * d, d * sizeof *X);
    km_kernel kern;
    km_kernel_init(&kern, KM_KERNEL_RBF);
    kern.gamma = 0.5;
    km_kpca_params p = km_kpca_params_default();
    p.solver = s;
    km_model *m = NULL;
    km_error err = {0};
    for (size_t k = 3; k <= 40; k += 37) {
        p.n_components = k;
        ck_assert_int_eq(km_kpca_fit(&kern, &p, X, n, d, NULL, &m, &err),
                         KM_EPROBLEM);
        ck_assert_ptr_null(m);
        ck_assert_msg(strstr(err.message, "only 2 positive") &&
                          strstr(err.message, "params.n_components"),
                      "%s: %s", km_kpca_solver_name(s), err.message);
    }
    p.n_components = 2;
    ck_assert_msg(km_kpca_fit(&kern, &p, X, n, d, NULL, &m, &err) == KM_OK,
                  "%s: %s", km_kpca_solver_name(s), err.message);
    cref r;
    cref_init(&r, X, n, d, 0.5, 0);
    check_top(&r, X, m, 2, km_kpca_solver_name(s));
    ck_assert_double_eq_tol(km_kpca_eigenvalues(m)[1], 100, 1e-9);
    cref_free(&r);
    km_model_free(m);
    free(X);
    free(base);
}
END_TEST

/* The dense solver scales a kernel matrix whose largest entry is outside
 * [1.5e-146, 2.6e76] before its reduction, as dsyevr does: a linear kernel
 * on the synthetic rows times 1e60 (entries near 1e120) and times 1e-80
 * (near 1e-160) gives the eigenvalues times the scale squared and the
 * projections times the scale, to 1e-10. */
START_TEST(dense_scales_extreme_matrices)
{
    syn s;
    syn_load(&s);
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_LINEAR);
    km_kpca_params p = km_kpca_params_default();
    p.n_components = 3;
    p.solver = KM_KPCA_SOLVER_DENSE;
    km_model *ref = NULL;
    ck_assert_int_eq(km_kpca_fit(&k, &p, s.X, 300, 5, NULL, &ref, NULL),
                     KM_OK);
    double *P0 = malloc(300 * 3 * sizeof *P0), *P = malloc(300 * 3 * sizeof *P);
    double *X = malloc(300 * 5 * sizeof *X);
    ck_assert_int_eq(km_kpca_project(ref, s.X, 300, P0, NULL), KM_OK);
    const double scales[] = {1e60, 1e-80};
    for (int c = 0; c < 2; c++) {
        double f = scales[c];
        for (size_t i = 0; i < 300 * 5; i++)
            X[i] = s.X[i] * f;
        km_model *m = NULL;
        km_error err = {0};
        ck_assert_msg(km_kpca_fit(&k, &p, X, 300, 5, NULL, &m, &err) == KM_OK,
                      "scale %g: %s", f, err.message);
        const double *a = km_kpca_eigenvalues(m), *b = km_kpca_eigenvalues(ref);
        for (size_t j = 0; j < 3; j++)
            ck_assert_msg(fabs(a[j] / (f * f) - b[j]) <= 1e-10 * b[0],
                          "scale %g: eigenvalue %zu", f, j);
        ck_assert_int_eq(km_kpca_project(m, X, 300, P, NULL), KM_OK);
        for (size_t i = 0; i < 300 * 3; i++)
            P[i] /= f;
        double e = rel_err(P, P0, 300 * 3);
        ck_assert_msg(e <= 1e-10, "scale %g: projections off by %g", f, e);
        km_model_free(m);
    }
    km_model_free(ref);
    free(X);
    free(P);
    free(P0);
    syn_free(&s);
}
END_TEST

/* sin of the largest principal angle between the column spaces of the
 * orthonormal A and B (n x k, column-major), bounded above by the
 * Frobenius norm of A - B (B^T A). */
static double subspace_sin(const double *A, const double *B, size_t n,
                           size_t k)
{
    double *C = malloc(k * k * sizeof *C), *R = malloc(n * k * sizeof *R);
    memcpy(R, A, n * k * sizeof *R);
    cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, (int)k, (int)k,
                (int)n, 1.0, B, (int)n, A, (int)n, 0.0, C, (int)k);
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)k,
                (int)k, -1.0, B, (int)n, C, (int)k, 1.0, R, (int)n);
    double f = cblas_dnrm2((int)(n * k), R, 1);
    free(R);
    free(C);
    return f;
}

/*
 * Issue 28: a spectrum whose top eigenvalues come in close pairs (relative
 * gaps 5e-3 to 3e-3 within a pair), K = Q diag(w) Q^T with a random
 * orthogonal Q at n = 700 (not a multiple of the products' panel of 256
 * columns). The iterative and randomized solvers against the dense one
 * and the truth: eigenvalues to 1e-8 relative, the top-10 subspace and
 * each pair's plane by principal angles; the same bits on a second run
 * (fixed seeds); and KM_ECANCELLED when the progress callback asks.
 */
START_TEST(paired_spectrum)
{
    const size_t n = 700, k = 10;
    const double top[10] = {100, 99.5, 60, 59.7, 35, 34.9, 20, 19.95, 12,
                            11.96};
    double *Q = gaussian_rows(n, n, 28), *w = malloc(n * sizeof *w);
    double *tau = malloc(n * sizeof *tau), *K = malloc(n * n * sizeof *K);
    double *A = malloc(n * n * sizeof *A), *QW = malloc(n * n * sizeof *QW);
    ck_assert_int_eq(LAPACKE_dgeqrf(LAPACK_COL_MAJOR, (int)n, (int)n, Q,
                                    (int)n, tau), 0);
    ck_assert_int_eq(LAPACKE_dorgqr(LAPACK_COL_MAJOR, (int)n, (int)n, (int)n,
                                    Q, (int)n, tau), 0);
    for (size_t j = 0; j < n; j++) {
        w[j] = j < k ? top[j] : 5.0 * pow(0.97, (double)(j - k));
        for (size_t i = 0; i < n; i++)
            QW[j * n + i] = Q[j * n + i] * w[j];
    }
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, (int)n, (int)n,
                (int)n, 1.0, QW, (int)n, Q, (int)n, 0.0, K, (int)n);
    for (size_t i = 0; i < n; i++) /* exactly symmetric */
        for (size_t j = 0; j < i; j++)
            K[i * n + j] = K[j * n + i];

    double lam_d[10], min_eig;
    double *U_d = malloc(n * k * sizeof *U_d), *U = malloc(n * k * sizeof *U);
    double *U2 = malloc(n * k * sizeof *U2);
    km_error err = {0};
    memcpy(A, K, n * n * sizeof *A);
    ck_assert_int_eq(km_eig_dense(A, n, k, lam_d, U_d, NULL, &err), KM_OK);
    ck_assert_double_le(subspace_sin(U_d, Q, n, k), 1e-10);

    const km_kpca_solver solvers[2] = {KM_KPCA_SOLVER_ITERATIVE,
                                       KM_KPCA_SOLVER_RANDOMIZED};
    for (int si = 0; si < 2; si++) {
        double lam[10], lam2[10];
        int used = -1, fallback = 0;
        size_t products = 0;
        const char *name = km_kpca_solver_name(solvers[si]);
        memcpy(A, K, n * n * sizeof *A);
        ck_assert_msg(km_eig_top(A, n, k, solvers[si], NULL, lam, U, &used,
                                 &fallback, &products, &min_eig, &err) ==
                          KM_OK,
                      "%s: %s", name, err.message);
        ck_assert_int_eq(used, solvers[si]);
        ck_assert_int_eq(fallback, 0);
        for (size_t j = 0; j < k; j++) {
            ck_assert_msg(fabs(lam[j] - lam_d[j]) <= 1e-8 * lam_d[j],
                          "%s: eigenvalue %zu is %.17g, dense %.17g", name, j,
                          lam[j], lam_d[j]);
            ck_assert_double_le(fabs(lam[j] - top[j]), 1e-8 * top[j]);
        }
        ck_assert_msg(subspace_sin(U, U_d, n, k) <= 1e-8,
                      "%s: top-10 subspace off dense's by %g", name,
                      subspace_sin(U, U_d, n, k));
        for (size_t j = 0; j < k; j += 2)
            ck_assert_msg(subspace_sin(U + j * n, Q + j * n, n, 2) <= 1e-8,
                          "%s: pair %zu's plane off the truth by %g", name,
                          j / 2, subspace_sin(U + j * n, Q + j * n, n, 2));

        /* Fixed seeds: the same bits again. */
        memcpy(A, K, n * n * sizeof *A);
        ck_assert_int_eq(km_eig_top(A, n, k, solvers[si], NULL, lam2, U2,
                                    &used, &fallback, &products, &min_eig,
                                    &err),
                         KM_OK);
        ck_assert_int_eq(memcmp(lam, lam2, sizeof lam), 0);
        ck_assert_int_eq(memcmp(U, U2, n * k * sizeof *U), 0);

        /* Cancelled at the first progress report. */
        watch c = {0, 1, 0, 0};
        km_fit_control cc = {on_progress, &c};
        memcpy(A, K, n * n * sizeof *A);
        ck_assert_int_eq(km_eig_top(A, n, k, solvers[si], &cc, lam2, U2,
                                    &used, &fallback, &products, &min_eig,
                                    &err),
                         KM_ECANCELLED);
        ck_assert_int_eq(c.calls, 1);
    }
    free(U2);
    free(U);
    free(U_d);
    free(QW);
    free(A);
    free(K);
    free(tau);
    free(w);
    free(Q);
}
END_TEST

static Suite *kpca_suite(void)
{
    Suite *s = suite_create("km_kpca");
    TCase *tc = tcase_create("kpca");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, digits_dense);
    tcase_add_test(tc, digits_iterative);
    tcase_add_test(tc, digits_randomized);
    tcase_add_test(tc, randomized_matches_dense);
    tcase_add_test(tc, solvers_agree);
    tcase_add_test(tc, synthetic_rbf_default_gamma);
    tcase_add_test(tc, synthetic_poly);
    tcase_add_test(tc, sigmoid_solvers_agree);
    tcase_add_test(tc, too_many_components);
    tcase_add_test(tc, not_enough_positive_eigenvalues);
    tcase_add_test(tc, iterative_falls_back_to_dense);
    tcase_add_test(tc, file_round_trip);
    tcase_add_test(tc, file_round_trip_no_inverse);
    tcase_add_test(tc, wrong_algorithm);
    tcase_add_loop_test(tc, progress_and_cancel, 0, 3);
    tcase_add_test(tc, fit_bytes);
    tcase_add_test(tc, nystrom_all_rows_is_dense);
    tcase_add_test(tc, nystrom_same_as_sklearn);
    tcase_add_test(tc, nystrom_file_round_trip);
    tcase_add_test(tc, nystrom_checks);
    tcase_add_test(tc, dense_engine);
    suite_add_tcase(s, tc);
    /* Issue 24, defect 6; every solver (the loop's index). */
    tc = tcase_create("clusters");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, cluster_of_equal_eigenvalues,
                        KM_KPCA_SOLVER_AUTO, KM_KPCA_SOLVER_COUNT);
    tcase_add_test(tc, cluster_of_equal_eigenvalues_2000);
    tcase_add_test(tc, dense_scales_extreme_matrices);
    tcase_add_loop_test(tc, distinct_then_cluster, KM_KPCA_SOLVER_AUTO,
                        KM_KPCA_SOLVER_COUNT);
    tcase_add_loop_test(tc, duplicate_rows_rank, KM_KPCA_SOLVER_AUTO,
                        KM_KPCA_SOLVER_NYSTROM);
    tcase_add_test(tc, paired_spectrum);
    suite_add_tcase(s, tc);
    return s;
}

KM_TEST_MAIN(kpca_suite)
