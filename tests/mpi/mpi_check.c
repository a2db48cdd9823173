/*
 * mpi_check.c - the test driver of kmserve-mpi (tests/integration/mpi.py
 * runs it): writes a fit request staging file, and compares a model the
 * worker wrote with the single-process km_fit of the same request.
 *
 *   mpi_check write FILE ALGO N D SEED   krr, gpr, kpca (5 components
 *                                        with the inverse map) or
 *                                        kpca-dense (5 components,
 *                                        eigen_solver dense, no inverse
 *                                        map: bench_mpi.py's), rbf
 *                                        kernel, random X (N x D) and y
 *                                        from SEED
 *   mpi_check compare FILE MODEL         fits FILE here, loads MODEL;
 *                                        prints the largest relative
 *                                        differences of the coefficients
 *                                        (krr), predictions and variances
 *                                        (gpr) at 200 other points; for
 *                                        kpca of the eigenvalues, the
 *                                        projections of those points (up
 *                                        to each component's sign) and
 *                                        their images by the inverse map
 *
 * The reference is core's single-process fit (km_krr_solve's blocked
 * Cholesky on one buffer), itself tested against scikit-learn in
 * tests/core; the runner asserts the tolerance.
 *
 * Thread-safety: a program.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "km.h"

static double uniform(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(*s >> 11) / 9007199254740992.0;
}

static unsigned char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)n + 1);
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    fclose(f);
    *len = (size_t)n;
    return b;
}

static int write_request(const char *path, const char *algo, size_t n,
                         size_t d, uint64_t seed)
{
    double *X = malloc(n * d * sizeof *X), *y = malloc(n * sizeof *y);
    for (size_t i = 0; i < n; i++) {
        double s = 0;
        for (size_t j = 0; j < d; j++)
            s += (X[i * d + j] = 2 * uniform(&seed) - 1);
        y[i] = sin(3 * s) + 0.1 * (uniform(&seed) - 0.5);
    }
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_RBF);
    k.gamma = 0.5;
    km_problem pb = {X, n, d, y, 1, NULL, 0};
    km_krr_params kp = km_krr_params_default();
    km_gpr_params gp = km_gpr_params_default();
    km_kpca_params cp = km_kpca_params_default();
    kp.alpha = 0.1;
    gp.noise = 0.05;
    gp.signal_variance = 2.0;
    cp.n_components = 5;
    cp.fit_inverse_transform = 1;
    cp.alpha = 0.1;
    km_preprocess pre = {KM_SCALE_STANDARDIZE, 1};
    km_algorithm a = KM_ALGO_KRR;
    void *params = &kp;
    if (!strcmp(algo, "gpr")) {
        a = KM_ALGO_GPR;
        params = &gp;
    } else if (!strcmp(algo, "kpca") || !strcmp(algo, "kpca-dense")) {
        a = KM_ALGO_KPCA;
        params = &cp;
        if (strcmp(algo, "kpca")) {
            cp.solver = KM_KPCA_SOLVER_DENSE;
            cp.fit_inverse_transform = 0;
        }
        pre.center_y = 0;
        pb.y = NULL; /* unsupervised */
        pb.m = 0;
    }
    unsigned char *buf = NULL;
    size_t len = 0;
    km_error err;
    km_status st = km_request_save_buffer(a, &k, params, &pre, &pb, &buf,
                                          &len, &err);
    free(X);
    free(y);
    if (st != KM_OK) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
    }
    FILE *f = fopen(path, "wb");
    int bad = !f || fwrite(buf, 1, len, f) != len;
    if (f)
        bad |= fclose(f) != 0;
    free(buf);
    return bad;
}

static double rel(const double *a, const double *b, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        double e = fabs(a[i] - b[i]);
        num = e > num ? e : num;
        den = fabs(b[i]) > den ? fabs(b[i]) : den;
    }
    return den > 0 ? num / den : num;
}

/* krr and gpr: predictions at T (t rows), krr's coefficients, gpr's
 * variances. */
static int compare_values(const km_request *rq, const km_model *local,
                          const km_model *dist, const double *T, size_t t)
{
    km_error err;
    double *p1 = malloc(t * sizeof *p1), *p2 = malloc(t * sizeof *p2);
    int bad = km_predict(local, KM_OUT_VALUES, T, t, p1, &err) != KM_OK ||
              km_predict(dist, KM_OUT_VALUES, T, t, p2, &err) != KM_OK;
    if (!bad)
        printf("predictions %.3e\n", rel(p2, p1, t));
    if (!bad && rq->algo == KM_ALGO_KRR)
        printf("coefficients %.3e\n",
               rel(km_krr_dual_coef(dist), km_krr_dual_coef(local), rq->n));
    if (!bad && rq->algo == KM_ALGO_GPR) {
        bad = km_predict(local, KM_OUT_VARIANCES, T, t, p1, &err) != KM_OK ||
              km_predict(dist, KM_OUT_VARIANCES, T, t, p2, &err) != KM_OK;
        if (!bad)
            printf("variances %.3e\n", rel(p2, p1, t));
    }
    if (bad)
        fprintf(stderr, "predict: %s\n", err.message);
    free(p1);
    free(p2);
    return bad;
}

/* rel of b against a after flipping each of b's k columns (t rows,
 * row-major) to a's sign: components are unique up to sign. */
static double rel_signed(const double *a, double *b, size_t t, size_t k)
{
    for (size_t j = 0; j < k; j++) {
        double dot = 0;
        for (size_t i = 0; i < t; i++)
            dot += a[i * k + j] * b[i * k + j];
        if (dot < 0)
            for (size_t i = 0; i < t; i++)
                b[i * k + j] = -b[i * k + j];
    }
    return rel(b, a, t * k);
}

/* kpca: eigenvalues, projections of T up to sign, and the inverse map (if
 * fitted) of each model's own projections. */
static int compare_kpca(const km_model *local, const km_model *dist,
                        const double *T, size_t t, size_t d)
{
    size_t k = km_model_n_outputs(local);
    km_error err;
    if (km_model_n_outputs(dist) != k) {
        fprintf(stderr, "components: %zu here, %zu distributed\n", k,
                km_model_n_outputs(dist));
        return 1;
    }
    double *p1 = malloc(t * k * sizeof *p1), *p2 = malloc(t * k * sizeof *p2),
           *x1 = malloc(t * d * sizeof *x1), *x2 = malloc(t * d * sizeof *x2);
    int inv = km_kpca_has_inverse(local);
    int bad = km_kpca_project(local, T, t, p1, &err) != KM_OK ||
              km_kpca_project(dist, T, t, p2, &err) != KM_OK ||
              (inv && (km_kpca_inverse(local, p1, t, x1, &err) != KM_OK ||
                       km_kpca_inverse(dist, p2, t, x2, &err) != KM_OK));
    if (bad)
        fprintf(stderr, "project: %s\n", err.message);
    else {
        printf("eigenvalues %.3e\n", rel(km_kpca_eigenvalues(dist),
                                         km_kpca_eigenvalues(local), k));
        printf("projections %.3e\n", rel_signed(p1, p2, t, k));
        if (inv)
            printf("inverse %.3e\n", rel(x2, x1, t * d));
    }
    free(p1);
    free(p2);
    free(x1);
    free(x2);
    return bad;
}

static int compare(const char *req_path, const char *model_path)
{
    size_t rl = 0, ml = 0;
    unsigned char *rb = read_file(req_path, &rl), *mb = read_file(model_path,
                                                                  &ml);
    km_request rq;
    km_model *dist = NULL, *local = NULL;
    km_error err;
    if (!rb || !mb || km_request_load_buffer(rb, rl, &rq, &err) != KM_OK ||
        km_model_load_buffer(mb, ml, &dist, &err) != KM_OK) {
        fprintf(stderr, "cannot read the files\n");
        return 1;
    }
    km_problem pb = km_request_problem(&rq);
    if (km_fit(rq.algo, &rq.kernel, rq.params, &rq.pre, &pb, NULL, &local,
               &err) != KM_OK) {
        fprintf(stderr, "local fit: %s\n", err.message);
        return 1;
    }
    size_t t = 200, d = rq.d;
    uint64_t seed = 99;
    double *T = malloc(t * d * sizeof *T);
    for (size_t i = 0; i < t * d; i++)
        T[i] = 2 * uniform(&seed) - 1;
    int bad = rq.algo == KM_ALGO_KPCA ? compare_kpca(local, dist, T, t, d)
                                      : compare_values(&rq, local, dist, T, t);
    free(T);
    free(rb);
    free(mb);
    km_model_free(dist);
    km_model_free(local);
    km_request_cleanup(&rq);
    return bad;
}

int main(int argc, char **argv)
{
    if (argc == 7 && !strcmp(argv[1], "write"))
        return write_request(argv[2], argv[3], strtoul(argv[4], NULL, 10),
                             strtoul(argv[5], NULL, 10),
                             strtoull(argv[6], NULL, 10));
    if (argc == 4 && !strcmp(argv[1], "compare"))
        return compare(argv[2], argv[3]);
    fprintf(stderr, "usage: mpi_check write FILE krr|gpr|kpca|kpca-dense N D "
            "SEED | "
            "compare FILE MODEL\n");
    return 2;
}
