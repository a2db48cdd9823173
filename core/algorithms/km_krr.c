/*
 * km_krr.c - kernel ridge regression: solve (K + alpha I) C = Y.
 *
 * The fit allocates one n x n buffer, fills its lower triangle with the
 * Gram matrix (DSYRK + vectorised map), and hands it to km_krr_solve
 * (also KPCA's inverse map), which adds alpha to the diagonal and factors
 * it in place with Cholesky. LAPACKE's row-major interface would
 * transpose into a second n x n copy, so the buffer is handed to the
 * column-major interface as what it also is: the upper triangle of the
 * same symmetric matrix. All outputs are solved with one DPOTRS.
 *
 * The factorisation is right-looking and blocked (DPOTRF on a diagonal
 * block, DTRSM below it, DSYRK on the trailing matrix), so a long fit
 * reports progress and can stop between blocks. Measured against one
 * OpenBLAS DPOTRF call at n = 6000 on 2 cores: 0.95-1.01x the time, the
 * same factor to 3e-15 (DSYRK does almost all the work either way).
 *
 * The model keeps a copy of the training X and the n x m dual
 * coefficients; prediction is km_kernel_expand in row blocks.
 *
 * Thread-safety: reentrant.
 */
#include <cblas.h>
#include <lapacke.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../km_internal.h"

/* Two forms: the dual (exact and nystrom solvers: training rows or
 * centres and their coefficients) and rff (random Fourier features:
 * frequencies W, phases b, primal weights w; n_samples is D). */
enum { KRR_FORM_DUAL = 0, KRR_FORM_RFF = 1, KRR_FORM_COUNT };

typedef struct krr_payload {
    unsigned form; /* KRR_FORM_* */
    double *X;     /* dual: n x d training rows; rff: W, D x d */
    double *coef;  /* dual: n x m dual coefficients; rff: w, D x m */
    double *xn;    /* dual: n squared norms of X's rows (derived) */
    double *b;     /* rff: D phases */
} krr_payload;

km_krr_params km_krr_params_default(void)
{
    km_krr_params p = {1.0, KM_KRR_SOLVER_EXACT, 0, 0, 1e-7, 100,
                       KM_KRR_DEFAULT_COMPONENTS};
    return p;
}

KM_CHOICES_DEFINE(km_krr_solver_choices, KM_KRR_SOLVER_MAP,
                  KM_KRR_SOLVER_COUNT);
KM_CHOICES_DEFINE(km_krr_centres_choices, KM_KRR_CENTRES_MAP,
                  KM_KRR_CENTRES_COUNT);

const char *km_krr_solver_name(km_krr_solver s)
{
    return km_choice_name(&km_krr_solver_choices, (int)s);
}

const char *km_krr_centres_name(km_krr_centre_rule c)
{
    return km_choice_name(&km_krr_centres_choices, (int)c);
}

size_t km_nys_n_centres(size_t asked, size_t n)
{
    if (asked)
        return asked;
    /* Falkon's m of the order of sqrt(n) log n, within [1000, 10000] */
    double c = ceil(sqrt((double)n) * log(n > 1 ? (double)n : 1.0));
    size_t m = c < KM_KRR_DEFAULT_CENTRES       ? KM_KRR_DEFAULT_CENTRES
               : c > KM_KRR_MAX_DEFAULT_CENTRES ? KM_KRR_MAX_DEFAULT_CENTRES
                                                : (size_t)c;
    return n < m ? n : m;
}

size_t km_krr_centres(const km_krr_params *p, size_t n)
{
    return km_nys_n_centres(p->n_centres, n);
}

km_krr_solver km_krr_resolve_solver(const km_krr_params *p, size_t n,
                                    size_t d, size_t m, size_t budget)
{
    if (!p)
        return KM_KRR_SOLVER_EXACT;
    if (p->solver != KM_KRR_SOLVER_AUTO)
        return p->solver;
    return km_krr_fit_bytes(n, d, m, NULL) <= budget / 2
               ? KM_KRR_SOLVER_EXACT
               : KM_KRR_SOLVER_NYSTROM;
}

km_status km_krr_check(const km_krr_params *p, size_t n_samples,
                       km_error *err)
{
    if (!(p->alpha > 0) || !isfinite(p->alpha))
        return km_error_set(err, KM_EINVAL,
                            "params.alpha must be a finite number > 0");
    if ((unsigned)p->solver >= KM_KRR_SOLVER_COUNT) {
        char list[64];
        km_choice_list(&km_krr_solver_choices, " or ", list, sizeof list);
        return km_error_set(err, KM_EINVAL, "params.solver must be %s", list);
    }
    if (p->solver == KM_KRR_SOLVER_RFF) {
        if (p->seed > ((uint64_t)1 << 53))
            return km_error_set(err, KM_EINVAL,
                                "params.seed must be at most 2^53");
        if (p->n_components > KM_KRR_MAX_COMPONENTS)
            return km_error_set(err, KM_EINVAL, "params.n_components must "
                                "be at most %d", KM_KRR_MAX_COMPONENTS);
        return KM_OK;
    }
    if (p->solver != KM_KRR_SOLVER_NYSTROM && p->solver != KM_KRR_SOLVER_AUTO)
        return KM_OK;
    km_status st = km_nys_check_params(p->centres, p->cg_tol, p->cg_max_iter,
                                       p->seed, err);
    return st == KM_OK ? km_nys_check_centres(p->n_centres, n_samples, err)
                       : st;
}

km_status km_nys_check_params(km_krr_centre_rule centres, double cg_tol,
                              size_t cg_max_iter, uint64_t seed,
                              km_error *err)
{
    km_status st = km_nys_check_rule(centres, err);
    if (st != KM_OK)
        return st;
    if (!(cg_tol > 0) || !isfinite(cg_tol))
        return km_error_set(err, KM_EINVAL,
                            "params.cg_tol must be a finite number > 0");
    if (cg_max_iter < 1)
        return km_error_set(err, KM_EINVAL,
                            "params.cg_max_iter must be at least 1");
    if (seed > ((uint64_t)1 << 53))
        return km_error_set(err, KM_EINVAL,
                            "params.seed must be at most 2^53");
    return KM_OK;
}

km_status km_nys_check_centres(size_t n_centres, size_t n_samples,
                               km_error *err)
{
    if (n_centres > n_samples)
        return km_error_set(err, KM_EPROBLEM,
                            "params.n_centres is %zu but X has %zu rows: "
                            "at most one centre per row", n_centres,
                            n_samples);
    return KM_OK;
}

/* Values of K_nm a nystrom fit holds at once: rows per block. */
#define NYS_BLOCK_VALUES ((size_t)1 << 21)

/* The fused pass (kernels of inner products, at most NYS_FUSED_OUTPUTS
 * outputs; see nys_pass_fused) runs on at most NYS_MAX_THREADS threads. */
#define NYS_FUSED_OUTPUTS 8
#define NYS_MAX_THREADS 8
#define NYS_TILE 4 /* rows per km_vdot_tile */

size_t km_nys_block_rows(size_t n, size_t m)
{
    size_t b = NYS_BLOCK_VALUES / (m ? m : 1);
    b = b < 1 ? 1 : b;
    return b < n ? b : n;
}

/* The rff solver's D. */
static size_t rff_components(const km_krr_params *p)
{
    return p->n_components ? p->n_components : KM_KRR_DEFAULT_COMPONENTS;
}

/* Values of Z an rff fit or prediction holds at once: rows per block. */
#define RFF_BLOCK_VALUES ((size_t)1 << 20)

static size_t rff_block_rows(size_t n, size_t D)
{
    size_t b = RFF_BLOCK_VALUES / (D ? D : 1);
    b = b < 1 ? 1 : b;
    return b < n ? b : n;
}

/* Overflow-saturating size arithmetic for the estimates. */
static size_t add_sat(size_t a, size_t b)
{
    return a + b < a ? SIZE_MAX : a + b;
}

static size_t mul_sat(size_t a, size_t b)
{
    size_t r;
    return __builtin_mul_overflow(a, b, &r) ? SIZE_MAX : r;
}

/* Proposals per round of rpcholesky's rejection sampling. */
#define RPC_BLOCK 64

size_t km_krr_fit_bytes(size_t n, size_t d, size_t m, const km_krr_params *p)
{
    const size_t D = sizeof(double);
    if (p && p->solver == KM_KRR_SOLVER_AUTO) {
        km_krr_params q = *p;
        q.solver = km_krr_resolve_solver(p, n, d, m, km_memory_budget());
        return km_krr_fit_bytes(n, d, m, &q);
    }
    if (p && p->solver == KM_KRR_SOLVER_RFF) {
        /* km_krr_fit_rff: W, b, Z^T Z (D x D), Z^T Y and w (D x m each),
         * a block of Z (b x D) and of Y's copy; the model's copies of W,
         * b and w. */
        size_t f = rff_components(p), b = rff_block_rows(n, f);
        size_t v = mul_sat(2, add_sat(mul_sat(f, d), f));
        v = add_sat(v, mul_sat(f, f));
        v = add_sat(v, mul_sat(3, mul_sat(f, m)));
        v = add_sat(v, add_sat(mul_sat(b, f), mul_sat(b, m)));
        return mul_sat(D, v);
    }
    if (!p || p->solver != KM_KRR_SOLVER_NYSTROM)
        /* The Gram buffer, the kept X and coefficients, the solve's copy
         * of Y, and the norms. */
        return add_sat(mul_sat(D, mul_sat(n, n)),
                       mul_sat(D, add_sat(mul_sat(n, d),
                                          add_sat(mul_sat(3 * n, m), n))));
    /* The nystrom solver (km_krr_fit_nystrom): the draw's n indices; the
     * two m x m Cholesky factors; a block of K_nm (b x m), its norms and
     * its product with the directions (b x outputs); the centres, their
     * norms, and CG's eight m x outputs blocks (solution, residual,
     * direction, its image, two work blocks, the smoothed solution and
     * residual); the model's copies of the
     * centres, norms and coefficients; the fused pass's norms of X's rows
     * and its accumulators (m x outputs per thread). The fused pass holds
     * no block of K_nm but the centres feature-major and NYS_TILE rows
     * per thread, fewer values than the block counted here. */
    size_t c = km_krr_centres(p, n), b = km_nys_block_rows(n, c);
    size_t v = mul_sat(n, sizeof(size_t) / D + 2);
    v = add_sat(v, mul_sat(NYS_MAX_THREADS, mul_sat(c, m)));
    v = add_sat(v, mul_sat(2, mul_sat(c, c)));
    v = add_sat(v, add_sat(mul_sat(b, c), mul_sat(b, m + 1)));
    v = add_sat(v, mul_sat(2, mul_sat(c, d + 1)));
    v = add_sat(v, mul_sat(9, mul_sat(c, m)));
    v = add_sat(v, 4 * m);
    v = add_sat(v, km_nys_centres_values(n, d, c, p->centres));
    return mul_sat(D, v);
}

/* Doubles randomly pivoted Cholesky holds beside its n x m factor: the
 * residual diagonal, its running sums and X's norms (n each), the
 * proposals' rows, their residual block twice and their rows of F, the
 * accepted ones' rows of F. */
static size_t rpc_work_values(size_t n, size_t d, size_t m)
{
    return add_sat(mul_sat(n, 3),
                   mul_sat(RPC_BLOCK, 2 * RPC_BLOCK + d + 2 * m));
}

size_t km_nys_centres_values(size_t n, size_t d, size_t m,
                             km_krr_centre_rule rule)
{
    if (rule != KM_KRR_CENTRES_RPCHOLESKY)
        return 0;
    /* km_krr_rpcholesky: the n x m factor F and its workspace */
    return add_sat(mul_sat(n, m), rpc_work_values(n, d, m));
}

static void krr_free(void *payload)
{
    krr_payload *p = payload;
    if (!p)
        return;
    free(p->X);
    free(p->coef);
    free(p->xn);
    free(p->b);
    free(p);
}

/* The format version a model needs: 3 for the rff form (its payload
 * starts with the form), else the default. */
static uint32_t krr_file_format(const void *payload)
{
    return ((const krr_payload *)payload)->form == KRR_FORM_RFF ? 3 : 0;
}

static void krr_save(const void *payload, const km_model *m, km_writer *w)
{
    const krr_payload *p = payload;
    size_t n = km_model_n_samples(m);
    if (p->form == KRR_FORM_RFF) { /* version 3: form, W, b, w */
        km_write_u32(w, KRR_FORM_RFF);
        km_write_f64s(w, p->X, n * km_model_n_features(m));
        km_write_f64s(w, p->b, n);
        km_write_f64s(w, p->coef, n * km_model_n_outputs(m));
        return;
    }
    km_write_f64s(w, p->X, n * km_model_n_features(m));
    km_write_f64s(w, p->coef, n * km_model_n_outputs(m));
}

static km_status krr_load(km_reader *r, const km_model *m, void **payload,
                          km_error *err)
{
    size_t n = km_model_n_samples(m), d = km_model_n_features(m);
    size_t nx = km_mul3(n, d, 1), nc = km_mul3(n, km_model_n_outputs(m), 1);
    unsigned form = KRR_FORM_DUAL;
    if (km_model_file_format(m) >= 3) { /* the payload starts with its form */
        uint32_t f = km_read_u32(r);
        if (r->failed || f >= KRR_FORM_COUNT)
            return km_error_set(err, KM_ECORRUPT, "model file: kernel ridge "
                                "payload form %u is not 0 (dual) or 1 (rff)",
                                (unsigned)f);
        form = f;
    }
    if (form == KRR_FORM_RFF) {
        km_kernel_type t = km_model_kernel(m)->type;
        if (!(km_kernel_type_caps(t) & KM_KERNEL_CAP_RFF)) {
            char names[96];
            km_kernel_caps_names(KM_KERNEL_CAP_RFF, ", ", names,
                                 sizeof names);
            return km_error_set(err, KM_ECORRUPT, "model file: random "
                                "Fourier features of a %s kernel (only %s)",
                                km_kernel_type_name(t), names);
        }
        if (n > KM_KRR_MAX_COMPONENTS)
            return km_error_set(err, KM_ECORRUPT, "model file: %zu random "
                                "Fourier features is above %d", n,
                                KM_KRR_MAX_COMPONENTS);
    }
    krr_payload *p = calloc(1, sizeof *p);
    if (!p)
        return km_error_set(err, KM_ENOMEM, "out of memory reading a model");
    p->form = form;
    p->X = nx ? km_read_f64s(r, nx) : NULL;
    if (form == KRR_FORM_RFF) {
        p->b = p->X ? km_read_f64s(r, n) : NULL;
        p->coef = p->b && nc ? km_read_f64s(r, nc) : NULL;
        p->xn = NULL;
    } else {
        p->coef = p->X && nc ? km_read_f64s(r, nc) : NULL;
        p->xn = p->coef ? km_sqnorms(p->X, n, d) : NULL;
    }
    if (!p->X || !p->coef || (form == KRR_FORM_DUAL ? !p->xn : !p->b)) {
        krr_free(p);
        return km_error_set(err, r->failed ? KM_ECORRUPT : KM_ENOMEM,
                            "model file: bad kernel ridge payload");
    }
    /* A fit checks its X and its coefficients finite. */
    if (!km_all_finite(p->X, nx) || !km_all_finite(p->coef, nc)) {
        krr_free(p);
        return km_error_set(err, KM_ECORRUPT, "model file: kernel ridge "
                            "%s are not all finite numbers",
                            form == KRR_FORM_RFF
                                ? "random frequencies or weights"
                                : "training rows or coefficients");
    }
    if (form == KRR_FORM_RFF)
        for (size_t i = 0; i < n; i++)
            if (!(p->b[i] >= 0 && p->b[i] <= 2 * M_PI)) {
                krr_free(p);
                return km_error_set(err, KM_ECORRUPT, "model file: random "
                                    "Fourier phase b[%zu] is not in "
                                    "[0, 2 pi]", i);
            }
    *payload = p;
    return KM_OK;
}

/* The heap of a payload of m's sizes, either form (rff: b instead of the
 * norms, as many): X, the coefficients, n more. */
static size_t krr_bytes(const void *payload, const km_model *m)
{
    (void)payload;
    uint64_t per_row = km_add_sat(km_model_n_features(m),
                                  km_add_sat(km_model_n_outputs(m), 1));
    return (size_t)km_add_sat(sizeof(krr_payload),
                              km_mul_sat(km_mul_sat(km_model_n_samples(m),
                                                    per_row),
                                         sizeof(double)));
}

/* All from the header: nothing but the payload is allocated. */
static void krr_load_bytes(km_reader r, const km_model *m, size_t *kept,
                           size_t *peak)
{
    (void)r;
    *kept = *peak = krr_bytes(NULL, m);
}

static km_status krr_fit_rff(const km_kernel *kernel,
                             const km_krr_params *params, const double *X,
                             size_t n, size_t d, const double *Y, size_t p,
                             const km_fit_control *ctl, km_model **out,
                             km_error *err);

/* Columns per block of the Cholesky factorisation. */
#define CHOL_BLOCK 768

/*
 * Cholesky A = L L^T in place on the lower triangle of the row-major n x n
 * A, reporting progress from f0 to f1 by the share of flops done.
 */
static km_status cholesky(double *A, size_t n, const char *what,
                          const km_fit_control *ctl, double f0, double f1,
                          km_error *err)
{
    for (size_t k = 0; k < n; k += CHOL_BLOCK) {
        size_t kb = n - k < CHOL_BLOCK ? n - k : CHOL_BLOCK, m = n - k - kb;
        double *A11 = A + k * n + k, *A21 = A11 + kb * n;
        lapack_int info = LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'U',
                                         (lapack_int)kb, A11, (lapack_int)n);
        if (info > 0)
            return km_error_set(err, KM_ENOTPD,
                                "%s plus alpha*I is not positive definite "
                                "(Cholesky failed at row %zu); use a larger "
                                "params.alpha or a positive definite kernel",
                                what, k + (size_t)info);
        if (info == -4) /* LAPACKE's check: a NaN in A11 (an overflow) */
            return km_error_set(err, KM_EPROBLEM, "%s has values that are "
                                "not finite numbers (overflow); use a "
                                "smaller gamma, degree or scale of X", what);
        if (info < 0)
            return km_error_set(err, KM_EINTERNAL, "dpotrf argument %d",
                                (int)-info);
        if (m == 0)
            break;
        cblas_dtrsm(CblasRowMajor, CblasRight, CblasLower, CblasTrans,
                    CblasNonUnit, (int)m, (int)kb, 1.0, A11, (int)n, A21,
                    (int)n);
        cblas_dsyrk(CblasRowMajor, CblasLower, CblasNoTrans, (int)m, (int)kb,
                    -1.0, A21, (int)n, 1.0, A21 + kb, (int)n);
        double left = (double)m / (double)n;
        if (km_progress(ctl, f0 + (f1 - f0) * (1.0 - left * left * left)))
            return km_error_set(err, KM_ECANCELLED, "fit cancelled");
    }
    return KM_OK;
}

km_status km_krr_solve(double *G, size_t n, double alpha, const double *Y,
                       size_t m, double *C, const char *what,
                       const km_fit_control *ctl, double f0, double f1,
                       km_error *err)
{
    for (size_t i = 0; i < n; i++)
        G[i * n + i] += alpha;
    km_status st = cholesky(G, n, what, ctl, f0, f1, err);
    if (st != KM_OK)
        return st;
    /* B is column-major n x m: output j is contiguous. */
    double *B = malloc(n * m * sizeof *B);
    if (!B)
        return km_error_set(err, KM_ENOMEM, "out of memory for a solve");
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < m; j++)
            B[j * n + i] = Y[i * m + j];
    /* Row-major lower triangle == column-major upper triangle. */
    lapack_int info = LAPACKE_dpotrs(LAPACK_COL_MAJOR, 'U', (lapack_int)n,
                                     (lapack_int)m, G, (lapack_int)n, B,
                                     (lapack_int)n);
    if (info == 0)
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < m; j++)
                C[i * m + j] = B[j * n + i];
    free(B);
    if (info == -7) /* LAPACKE's check: a NaN in the targets */
        return km_error_set(err, KM_EPROBLEM, "the solve with %s has "
                            "targets that are not finite numbers (overflow); "
                            "rescale y", what);
    if (info != 0)
        return km_error_set(err, KM_EINTERNAL, "dpotrs argument %d",
                            (int)-info);
    return KM_OK;
}

/*
 * The training figure "rkhs_norm_sq", per output: |f|_H^2 = a^T K a of
 * the output's dual coefficients a, without K: (K + alpha I) a = y gives
 * a^T K a = a^T y - alpha a^T a.
 */
static km_status add_rkhs_norm(km_model *model, const double *Y, double alpha)
{
    size_t n = km_model_n_samples(model), m = km_model_n_outputs(model);
    const double *C = ((const krr_payload *)km_model_payload(model))->coef;
    double *v = malloc(m * sizeof *v);
    if (!v)
        return KM_ENOMEM;
    for (size_t j = 0; j < m; j++) {
        km_ksum s = {0, 0};
        for (size_t i = 0; i < n; i++) {
            double a = C[i * m + j];
            km_ksum_add(&s, a * Y[i * m + j]);
            km_ksum_add(&s, -alpha * (a * a));
        }
        v[j] = km_ksum_get(&s);
    }
    km_status st = km_info_add(km_model_training_mut(model), "rkhs_norm_sq",
                               KM_INFO_NUMBER, m > 1, v, m);
    free(v);
    return st;
}

/* Sets the figure key of info to value, adding it when absent. */
static km_status set_figure(km_info *info, const char *key, double value)
{
    for (size_t i = 0; i < info->count; i++)
        if (!strcmp(info->entries[i].key, key) &&
            info->entries[i].count == 1) {
            info->entries[i].values[0] = value;
            return KM_OK;
        }
    return km_info_add1(info, key, KM_INFO_INTEGER, value);
}

/* The auto solver: the fit of the solver it resolves to, with the params
 * figure "solver" auto and the training figures "solver" (the one run)
 * and "memory_budget_mb". */
static km_status krr_fit_auto(const km_kernel *kernel,
                              const km_krr_params *params, const double *X,
                              size_t n, size_t d, const double *Y, size_t m,
                              const km_fit_control *ctl, km_model **out,
                              km_error *err)
{
    size_t budget = km_memory_budget();
    km_krr_params q = *params;
    q.solver = km_krr_resolve_solver(params, n, d, m, budget);
    km_model *model = NULL;
    km_status st = km_krr_fit(kernel, &q, X, n, d, Y, m, ctl, &model, err);
    if (st != KM_OK)
        return st;
    if (km_auto_figures(model, KM_KRR_SOLVER_AUTO, q.solver, budget) !=
        KM_OK) {
        km_model_free(model);
        return km_error_set(err, KM_ENOMEM, "out of memory for the model");
    }
    *out = model;
    return KM_OK;
}

km_status km_auto_figures(km_model *model, int auto_solver, int run,
                          size_t budget)
{
    km_info *ti = km_model_training_mut(model);
    if (set_figure(km_model_params_mut(model), "solver", auto_solver) !=
            KM_OK ||
        set_figure(ti, "solver", run) != KM_OK ||
        km_info_add1(ti, "memory_budget_mb", KM_INFO_NUMBER,
                     (double)budget / 1048576.0) != KM_OK)
        return KM_ENOMEM;
    return KM_OK;
}

km_status km_krr_fit(const km_kernel *kernel, const km_krr_params *params,
                     const double *X, size_t n, size_t d, const double *Y,
                     size_t m, const km_fit_control *ctl, km_model **out,
                     km_error *err)
{
    if (params && params->solver == KM_KRR_SOLVER_AUTO)
        return krr_fit_auto(kernel, params, X, n, d, Y, m, ctl, out, err);
    if (params && params->solver == KM_KRR_SOLVER_NYSTROM)
        return km_krr_fit_nystrom(kernel, params, X, n, d, Y, m, NULL, NULL,
                                  NULL, ctl, out, err);
    if (params && params->solver == KM_KRR_SOLVER_RFF)
        return krr_fit_rff(kernel, params, X, n, d, Y, m, ctl, out, err);
    km_problem pb = {X, n, d, Y, m, NULL, 0};
    km_fit_frame f;
    double *K = NULL;
    krr_payload *p = NULL;
    km_model *model = NULL;
    km_status st = km_fit_begin(&f, KM_ALGO_KRR, kernel, params, &pb, err);
    if (st != KM_OK)
        goto out;
    const km_kernel *k = &f.k;
    const km_dense_engine *de = ctl ? ctl->dense : NULL;

    K = de ? NULL : malloc(n * n * sizeof *K);
    p = calloc(1, sizeof *p);
    if ((!de && !K) || !p) {
        st = km_error_set(err, KM_ENOMEM,
                          "out of memory for a %zu x %zu kernel matrix", n, n);
        goto out;
    }
    if (km_progress(ctl, 0.0)) {
        st = km_error_set(err, KM_ECANCELLED, "fit cancelled");
        goto out;
    }
    if (!de && (st = km_gram_sym(k, X, n, d, K, 0, err)) != KM_OK)
        goto out;
    if (km_progress(ctl, 0.1)) {
        st = km_error_set(err, KM_ECANCELLED, "fit cancelled");
        goto out;
    }
    if (!(p->coef = malloc(n * m * sizeof *p->coef))) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for the model");
        goto out;
    }
    /* The engine forms K and solves elsewhere (km.h: km_dense_engine). */
    st = de ? de->solve(de->ctx, k, 1.0, X, n, d, params->alpha, Y, m,
                        p->coef, NULL, ctl, 0.1, 0.9, err)
            : km_krr_solve(K, n, params->alpha, Y, m, p->coef,
                           "the kernel matrix", ctl, 0.1, 0.9, err);
    if (st != KM_OK)
        goto out;
    free(K);
    K = NULL;
    if (!(p->X = malloc(n * d * sizeof *p->X)) ||
        !(p->xn = km_sqnorms(X, n, d))) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for the model");
        goto out;
    }
    memcpy(p->X, X, n * d * sizeof *X);
    if (!km_all_finite(p->coef, n * m)) {
        st = km_error_set(err, KM_ENOTPD,
                          "the solve gave non-finite coefficients: the "
                          "kernel matrix is numerically singular; use "
                          "a larger params.alpha");
        goto out;
    }

    st = km_fit_model(&f, d, n, m, p, &model, err);
    p = NULL; /* owned by the model now, also on failure */
    if (st != KM_OK)
        goto out;
    if (km_info_add1(km_model_params_mut(model), "alpha", KM_INFO_NUMBER,
                     params->alpha) != KM_OK ||
        add_rkhs_norm(model, Y, params->alpha) != KM_OK) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for the model");
        goto out;
    }
    km_progress(ctl, 1.0);
    *out = model;
    model = NULL;
out:
    km_model_free(model);
    krr_free(p);
    free(K);
    km_fit_cleanup(&f);
    return st;
}

/* ------------------------------------------------------------ nystrom */

/*
 * The nystrom solver (Falkon: Rudi, Carratino and Rosasco, "FALKON: an
 * optimal large scale kernel method", 2017), in this file's
 * parameterisation.
 *
 * The system. With centres Z (m rows of X), K_nm = k(X, Z) and
 * K_mm = k(Z, Z), the coefficients C (m x p) solve
 *     H C = K_nm^T Y,    H = K_nm^T K_nm + alpha K_mm,
 * the normal equations of min |Y - K_nm C|^2 + alpha C^T K_mm C. With
 * m = n (Z = X) this is K (K + alpha I) C = K Y, whose solution is the
 * exact solver's (K + alpha I)^-1 Y, so alpha means the same in both. It
 * is also what scikit-learn's Nystroem(n_components=m) features
 * phi(x) = k(x, Z) K_mm^-1/2 followed by Ridge(alpha, fit_intercept=
 * False) solve: (Phi^T Phi + alpha I) w = Phi^T y with C = K_mm^-1/2 w
 * (when K_mm is invertible).
 *
 * The preconditioner. Falkon's paper writes H = K_nm^T K_nm + lambda n
 * K_mm; here lambda n = alpha. The centres are a uniform sample of the
 * rows, so K_nm^T K_nm (a sum over n rows of k_i k_i^T) is approximated
 * by n/m times the same sum over the m centres, (n/m) K_mm K_mm:
 *     H ~ P = (n/m) K_mm^2 + alpha K_mm.
 * Let T be upper triangular with T^T T = K_mm (Cholesky). Then
 *     P = T^T ((n/m) T T^T + alpha I) T = n T^T (T T^T / m + (alpha/n) I) T,
 * and with A upper triangular, A^T A = T T^T / m + (alpha/n) I,
 *     P = n T^T A^T A T,  P^-1 = (1/n) T^-1 A^-1 A^-T T^-T = B B^T
 * for B = n^-1/2 T^-1 A^-1. CG runs on the well-conditioned
 *     (B^T H B) V = B^T K_nm^T Y,   C = B V,
 * (Falkon's lambda' = alpha / n in A). K_mm may be singular (a linear
 * kernel, repeated rows), so T factors K_mm + s I with the small shift
 * s = 1e-13 m mean(diag K_mm) (Falkon's eps m), raised 1000-fold while
 * the factorisation fails; the shift changes only the preconditioner:
 * the operator applies K_mm itself, as T^T T - s I.
 *
 * One application of B^T H B to a block of p directions: U = B V (two
 * triangular solves), then K_nm^T (K_nm U) over row blocks of X, plus
 * alpha (T^T (T U) - s U), then B^T (two triangular solves). For kernels
 * of inner products (rbf, polynomial, ...) and at most NYS_FUSED_OUTPUTS
 * outputs the pass is fused (nys_pass_fused): X's rows are split over the
 * fit's ctl->threads threads, and each takes four rows at a time through
 * their inner products with the centres (km_vdot_tile, register-blocked,
 * no BLAS), each row's kernel map and its two products (k_i . u, then
 * acc += (k_i . u) k_i) while the rows are in cache, into one accumulator
 * per thread. Other kernels and outputs: a block's kernel values by
 * km_gram_cross_sn, then two GEMMs. Measured at n = 100,000, d = 20 on
 * this project's 2 cores: at m = 10,000 the unfused pass (GEMM, a
 * one-thread map, two GEMMs over a 16 MB block) took about 3.3 s; the
 * first fused pass (a DGEMM of inner products per block on BLAS's
 * threads, then the map and products on the fit's) 3.65 CPU-seconds,
 * about a quarter of them OpenBLAS's idle threads spinning in
 * sched_yield beside the fit's and zeroing the block for beta = 0; this
 * one 2.4 CPU-seconds, of which the rbf map's exponentials are about
 * two thirds. Memory: T,
 * A (2 m^2), one block of K_nm (NYS_BLOCK_VALUES; the fused pass: the
 * centres feature-major and NYS_TILE rows per thread), and O(m p) vectors
 * per thread (km_krr_fit_bytes). The preconditioner costs two Choleskys
 * of m^3 / 3 and T T^T by dlauum (m^3 / 3; DSYRK would take m^3: 22 s
 * against about 7 s at m = 10,000).
 *
 * Every output runs its own CG (its own step lengths) on the shared
 * passes over the data. CG's residual need not fall at every step (it
 * minimises the error's energy norm, not the residual), so each output
 * also keeps a minimal-residual smoothing of its iterates (Schoenauer;
 * Zhou and Walker 1994): after each step, (Vs, Rs) += eta ((V, R) -
 * (Vs, Rs)) with the eta that minimises |Rs|, which costs no product
 * with the operator and never lets |Rs| rise. The smoothed iterate is
 * the answer, and its residual the one reported: an output stops when
 * |Rs| / |r_0| (of the preconditioned system, r_0 = B^T K_nm^T y) is at
 * most cg_tol, and the fit when every output has stopped or after
 * cg_max_iter iterations.
 */
typedef struct nys {
    const km_kernel *k;
    const double *X, *xn; /* xn: squared norms of X's rows (fused path) */
    size_t n, d;
    const double *Z, *zn; /* centres and their squared norms */
    size_t m, p, block;
    const double *T, *A; /* column-major upper factors, m x m */
    double shift, alpha;
    double *Kb, *tmp; /* block x m row-major; block x p */
    double *acc;      /* fused path: threads accumulators of m x p */
    const double *Zt; /* fused path: the centres feature-major, d x m */
    double *rows;     /* fused path: NYS_TILE x m per thread */
    atomic_int *stop; /* fused path: set on cancel */
    size_t threads;
    const km_fit_control *ctl;
    double frac; /* progress so far */
} nys;

/* Rows [r0, r1) of K_nm for one thread of the fused pass: four rows at a
 * time, their inner products with the centres (km_vdot_tile), each row's
 * kernel map, then its share of K_nm^T (K_nm U) (or of K_nm^T Y when U
 * is NULL), all while the rows are in cache. The calling thread (first)
 * reports progress and raises stop on cancel; the others watch stop. */
typedef struct nys_rows {
    const nys *s;
    size_t r0, r1;
    const double *U, *Y;
    double *acc;  /* m x p column-major */
    double *rows; /* NYS_TILE x m */
    int first;
} nys_rows;

static void *nys_rows_run(void *arg)
{
    const nys_rows *w = arg;
    const nys *s = w->s;
    size_t m = s->m, p = s->p, d = s->d, since = 0;
    for (size_t i0 = w->r0; i0 < w->r1; i0 += NYS_TILE) {
        size_t nr = w->r1 - i0 < NYS_TILE ? w->r1 - i0 : NYS_TILE;
        km_vdot_tile(s->X + i0 * d, nr, d, s->Zt, m, w->rows, m);
        for (size_t r = 0; r < nr; r++) {
            double *row = w->rows + r * m;
            size_t i = i0 + r;
            km_kernel_map_row(s->k, row, m, s->xn[i], s->zn, -1);
            for (size_t j = 0; j < p; j++) {
                double t = w->U ? km_vdot(row, w->U + j * m, m)
                                : w->Y[i * p + j];
                km_vaxpy(t, row, w->acc + j * m, m);
            }
        }
        if ((since += nr) < s->block)
            continue;
        since = 0;
        if (atomic_load_explicit(s->stop, memory_order_relaxed))
            break;
        if (w->first && km_progress(s->ctl, s->frac))
            atomic_store(s->stop, 1);
    }
    return NULL;
}

/* The fused pass: X's rows split evenly over s->threads threads (this one
 * the first), each into its own accumulator; out is their sum. No BLAS
 * inside, so OpenBLAS's threads stay idle instead of spinning beside
 * ours between GEMMs. */
static km_status nys_pass_fused(nys *s, const double *U, const double *Y,
                                double *out, km_error *err)
{
    size_t m = s->m, p = s->p, nt = s->threads, mp = m * p;
    nys_rows w[NYS_MAX_THREADS];
    pthread_t tid[NYS_MAX_THREADS];
    int started[NYS_MAX_THREADS] = {0};
    memset(s->acc, 0, nt * mp * sizeof *s->acc);
    atomic_store(s->stop, 0);
    for (size_t t = 0; t < nt; t++) {
        w[t] = (nys_rows){s, s->n * t / nt, s->n * (t + 1) / nt, U, Y,
                          s->acc + t * mp, s->rows + t * NYS_TILE * m, t == 0};
        /* thread 0 is this one; a thread that cannot start runs here */
        if (t > 0)
            started[t] = pthread_create(&tid[t], NULL, nys_rows_run,
                                        &w[t]) == 0;
    }
    for (size_t t = 0; t < nt; t++)
        if (!started[t])
            nys_rows_run(&w[t]);
    for (size_t t = 1; t < nt; t++)
        if (started[t])
            pthread_join(tid[t], NULL);
    if (atomic_load(s->stop) || km_progress(s->ctl, s->frac))
        return km_error_set(err, KM_ECANCELLED, "fit cancelled");
    memcpy(out, s->acc, mp * sizeof *out);
    for (size_t t = 1; t < nt; t++)
        cblas_daxpy((int)mp, 1.0, s->acc + t * mp, 1, out, 1);
    return KM_OK;
}

/* Out (m x p, column-major) = K_nm^T (K_nm U); with Y (n x p row-major)
 * instead of U (NULL): out = K_nm^T Y. */
static km_status nys_pass(nys *s, const double *U, const double *Y,
                          double *out, km_error *err)
{
    if (s->acc)
        return nys_pass_fused(s, U, Y, out, err);
    size_t m = s->m, p = s->p;
    memset(out, 0, m * p * sizeof *out);
    for (size_t i0 = 0; i0 < s->n; i0 += s->block) {
        size_t nb = s->n - i0 < s->block ? s->n - i0 : s->block;
        km_status st = km_gram_cross_sn(s->k, s->X + i0 * s->d, nb, s->Z, m,
                                        s->zn, s->d, s->Kb, m, err);
        if (st != KM_OK)
            return st;
        /* Kb row-major nb x m is column-major m x nb (Kb^T). */
        if (U) {
            cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, (int)nb,
                        (int)p, (int)m, 1.0, s->Kb, (int)m, U, (int)m, 0.0,
                        s->tmp, (int)nb);
            cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)m,
                        (int)p, (int)nb, 1.0, s->Kb, (int)m, s->tmp, (int)nb,
                        1.0, out, (int)m);
        } else {
            cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, (int)m,
                        (int)p, (int)nb, 1.0, s->Kb, (int)m, Y + i0 * p,
                        (int)p, 1.0, out, (int)m);
        }
        if (km_progress(s->ctl, s->frac))
            return km_error_set(err, KM_ECANCELLED, "fit cancelled");
    }
    return KM_OK;
}

/* V (m x p column-major) := B V = n^-1/2 T^-1 A^-1 V. */
static void nys_apply_b(const nys *s, double *V)
{
    cblas_dtrsm(CblasColMajor, CblasLeft, CblasUpper, CblasNoTrans,
                CblasNonUnit, (int)s->m, (int)s->p, 1.0, s->A, (int)s->m, V,
                (int)s->m);
    cblas_dtrsm(CblasColMajor, CblasLeft, CblasUpper, CblasNoTrans,
                CblasNonUnit, (int)s->m, (int)s->p, 1.0 / sqrt((double)s->n),
                s->T, (int)s->m, V, (int)s->m);
}

/* V := B^T V = n^-1/2 A^-T T^-T V. */
static void nys_apply_bt(const nys *s, double *V)
{
    cblas_dtrsm(CblasColMajor, CblasLeft, CblasUpper, CblasTrans,
                CblasNonUnit, (int)s->m, (int)s->p, 1.0, s->T, (int)s->m, V,
                (int)s->m);
    cblas_dtrsm(CblasColMajor, CblasLeft, CblasUpper, CblasTrans,
                CblasNonUnit, (int)s->m, (int)s->p, 1.0 / sqrt((double)s->n),
                s->A, (int)s->m, V, (int)s->m);
}

/* W := K_mm U = T^T (T U) - shift U (all m x p column-major). */
static void nys_kmm(const nys *s, const double *U, double *W)
{
    memcpy(W, U, s->m * s->p * sizeof *W);
    cblas_dtrmm(CblasColMajor, CblasLeft, CblasUpper, CblasNoTrans,
                CblasNonUnit, (int)s->m, (int)s->p, 1.0, s->T, (int)s->m, W,
                (int)s->m);
    cblas_dtrmm(CblasColMajor, CblasLeft, CblasUpper, CblasTrans,
                CblasNonUnit, (int)s->m, (int)s->p, 1.0, s->T, (int)s->m, W,
                (int)s->m);
    cblas_daxpy((int)(s->m * s->p), -s->shift, U, 1, W, 1);
}

/* Q := (B^T H B) D, with work blocks U, W (m x p each). */
static km_status nys_operator(nys *s, const double *D, double *Q, double *U,
                              double *W, km_error *err)
{
    size_t mp = s->m * s->p;
    memcpy(U, D, mp * sizeof *U);
    nys_apply_b(s, U);
    km_status st = nys_pass(s, U, NULL, Q, err);
    if (st != KM_OK)
        return st;
    nys_kmm(s, U, W);
    cblas_daxpy((int)mp, s->alpha, W, 1, Q, 1);
    nys_apply_bt(s, Q);
    return KM_OK;
}

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

void km_krr_draw_centres(uint64_t seed, size_t n, size_t m, size_t *idx)
{
    km_rng r = {seed};
    for (size_t i = 0; i < n; i++)
        idx[i] = i;
    for (size_t i = 0; i < m && i + 1 < n; i++) {
        size_t j = i + km_rng_below(&r, n - i), t = idx[i];
        idx[i] = idx[j];
        idx[j] = t;
    }
    qsort(idx, m, sizeof *idx, cmp_size);
}

km_status km_nys_pick(const km_kernel *k, const double *X, size_t n,
                      size_t d, const size_t *given, km_krr_centre_rule rule,
                      uint64_t seed, size_t *m, double *Z,
                      const km_fit_control *ctl, double f0, double f1,
                      km_error *err)
{
    size_t *idx = malloc(n * sizeof *idx);
    if (!idx)
        return km_error_set(err, KM_ENOMEM, "out of memory for %zu centres",
                            *m);
    km_status st = KM_OK;
    if (given)
        memcpy(idx, given, *m * sizeof *idx);
    else
        st = km_nys_centres(k, rule, seed, X, n, d, *m, idx, m, NULL, ctl,
                            f0, f1, err);
    for (size_t i = 0; st == KM_OK && i < *m; i++)
        memcpy(Z + i * d, X + idx[i] * d, d * sizeof *X);
    free(idx);
    return st;
}

/* F's next t columns, column-major F (n x m, leading dimension n), from
 * the accepted rows XP (t x d), their rows of F so far FT (t x s) and L:
 * G = K(:, T) - F F(T, :)^T, then G L^-T. */
static km_status rpc_extend_cols(const km_kernel *k, const double *X,
                                 const double *xn, size_t n, size_t d,
                                 size_t s, size_t t, const double *XP,
                                 const double *FT, const double *L, double *F,
                                 km_error *err)
{
    double *Fn = F + s * n;
    /* column-major n x t is row-major t x n: k(x_T, X) */
    km_status st = km_gram_cross_sn(k, XP, t, X, n, xn, d, Fn, n, err);
    if (st != KM_OK)
        return st;
    if (s)
        /* FT row-major t x s is column-major s x t: F(T, :)^T */
        cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)n,
                    (int)t, (int)s, -1.0, F, (int)n, FT, (int)s, 1.0, Fn,
                    (int)n);
    cblas_dtrsm(CblasColMajor, CblasRight, CblasLower, CblasTrans,
                CblasNonUnit, (int)n, (int)t, 1.0, L, (int)t, Fn, (int)n);
    return KM_OK;
}

/* The same for row-major F (n x m, leading dimension m): columns s ..
 * s + t of every row. */
static km_status rpc_extend_rows(const km_kernel *k, const double *X,
                                 size_t n, size_t d, size_t m, size_t s,
                                 size_t t, const double *XP, const double *FT,
                                 const double *L, double *F, km_error *err)
{
    double *Fn = F + s;
    km_status st = km_gram_cross_sn(k, X, n, XP, t, NULL, d, Fn, m, err);
    if (st != KM_OK)
        return st;
    if (s)
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)n, (int)t,
                    (int)s, -1.0, F, (int)m, FT, (int)s, 1.0, Fn, (int)m);
    /* Fn (row-major n x t) is column-major t x n, Fn^T: L^-1 Fn^T */
    cblas_dtrsm(CblasColMajor, CblasLeft, CblasLower, CblasNoTrans,
                CblasNonUnit, (int)t, (int)n, 1.0, L, (int)t, Fn, (int)m);
    return KM_OK;
}

/*
 * Randomly pivoted Cholesky (Chen, Epperly, Tropp and Webber, "Randomly
 * pivoted Cholesky: practical approximation of a kernel matrix with few
 * entry evaluations", 2022), accelerated by rejection sampling (Epperly,
 * Tropp and Webber, "Embrace rejection: kernel matrix approximation by
 * accelerated randomly pivoted Cholesky", 2024).
 *
 * The definition: F = 0 (n x 0), r = diag K; for i = 1 .. m, draw s with
 * probability r_s / sum(r), g = K(:, s) - F F(s, :)^T, append the column
 * g / sqrt(g_s) to F, r := max(r - (that column)^2, 0). Then F F^T is a
 * Nystrom approximation of K on the pivots, and r the diagonal of the
 * residual K - F F^T.
 *
 * The accelerated form draws RPC_BLOCK proposals p_1 .. p_b at once from
 * r / sum(r) and accepts them in order: with H the residual on the
 * proposals, K(P, P) - F(P, :) F(P, :)^T, proposal j is accepted with
 * probability h_jj / r_pj, where h_jj is its residual given the pivots
 * accepted before it in this round (H after the Schur complements of
 * those). Since that residual is the diagonal the sequential algorithm
 * would draw from next, and h_jj <= r_pj, each accepted pivot is an
 * exact draw of the sequential algorithm (rejection sampling). The
 * accepted block T then extends F by G L^-T, G = K(:, T) - F F(T, :)^T
 * and L L^T = H(T, T) (L from the same Schur complements), one kernel
 * block and one GEMM per round instead of m matrix-vector products.
 *
 * The draws, from one km_rng seeded with seed (tests/fixtures/
 * gen_rpcholesky_refs.py draws the same): per round, b values
 * u = (1 + km_rng_uniform) / 2 in [0, 1), proposal j being the first i
 * whose running sum r_0 + .. + r_i exceeds u times the total (the last
 * row of nonzero r if rounding leaves none); then, for each proposal in
 * turn while fewer than m pivots are held, one more u, and acceptance
 * when u r_pj < h_jj and the proposal is not already accepted this
 * round. r of a pivot is set to 0, so it is never proposed again. The
 * rounds stop at m pivots, or when sum(r) is at most 1e-12 of trace(K)
 * (K's numerical rank is reached: *kept < m).
 *
 * piv gets the pivots in the order chosen (m entries of room), *kept
 * their number. k is the resolved kernel. Progress goes from f0 to f1 by
 * the pivots held. Memory: km_krr_fit_bytes's rpcholesky share.
 */
/* F's layout: column-major n x m (krr's, leading dimension n) or
 * row-major n x m (svc's features, leading dimension m); *keep, when not
 * NULL, gets F (then the caller's) instead of its being freed. */
#define FAT(i, c) (rows ? (i) * m + (c) : (c) * n + (i))
static km_status rpc_run(const km_kernel *k, const double *X, size_t n,
                         size_t d, size_t m, uint64_t seed, int rows,
                         size_t *piv, size_t *kept, double **keep,
                         const km_fit_control *ctl, double f0, double f1,
                         km_error *err)
{
    const size_t B = RPC_BLOCK;
    km_status st = KM_OK;
    size_t fb = km_mul3(n, m, sizeof(double));
    double *F = fb ? malloc(fb) : NULL;
    double *r = malloc(n * sizeof *r), *cum = malloc(n * sizeof *cum);
    double *xn = km_sqnorms(X, n, d), *XP = malloc(B * d * sizeof *XP);
    double *H = malloc(B * B * sizeof *H), *L = malloc(B * B * sizeof *L);
    double *FP = malloc(B * m * sizeof *FP), *FT = malloc(B * m * sizeof *FT);
    size_t P[RPC_BLOCK], T[RPC_BLOCK], s = 0;
    km_rng g = {seed};
    *kept = 0;
    if (!F || !r || !cum || !xn || !XP || !H || !L || !FP || !FT) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for randomly "
                          "pivoted Cholesky of %zu centres (it holds an "
                          "n x m factor: %zu x %zu)", m, n, m);
        goto out;
    }
    double tr = 0;
    for (size_t i = 0; i < n; i++) {
        double v = km_kernel_eval(k, X + i * d, X + i * d, d);
        r[i] = v > 0 ? v : 0;
        tr += r[i];
    }
    while (s < m) {
        double run = 0;
        for (size_t i = 0; i < n; i++)
            cum[i] = run += r[i];
        if (!(run > 1e-12 * tr))
            break;
        /* b proposals from r / sum(r) */
        for (size_t j = 0; j < B; j++) {
            double t = 0.5 * (1.0 + km_rng_uniform(&g)) * run;
            size_t lo = 0, hi = n; /* the first i with cum[i] > t */
            while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (cum[mid] > t)
                    hi = mid;
                else
                    lo = mid + 1;
            }
            if (lo == n)
                for (lo = n; lo-- > 0 && !(r[lo] > 0);)
                    ;
            P[j] = lo;
            memcpy(XP + j * d, X + lo * d, d * sizeof *XP);
            for (size_t c = 0; c < s; c++) /* F(P, :s), b x s row-major */
                FP[j * s + c] = F[FAT(lo, c)];
        }
        /* H = K(P, P) - F(P, :) F(P, :)^T */
        if ((st = km_gram_cross_sn(k, XP, B, XP, B, NULL, d, H, B, err)) !=
            KM_OK)
            goto out;
        if (s)
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)B,
                        (int)B, (int)s, -1.0, FP, (int)s, FP, (int)s, 1.0, H,
                        (int)B);
        /* rejection sampling in order, Schur complements of the accepted */
        size_t t = 0;
        for (size_t j = 0; j < B && s + t < m; j++) {
            double u = 0.5 * (1.0 + km_rng_uniform(&g)), h = H[j * B + j];
            int again = 0;
            for (size_t q = 0; q < t; q++)
                again |= P[T[q]] == P[j];
            if (again || !(u * r[P[j]] < h))
                continue;
            T[t++] = j;
            for (size_t a = j + 1; a < B; a++)
                for (size_t c = j + 1; c < B; c++)
                    H[a * B + c] -= H[a * B + j] * H[j * B + c] / h;
        }
        /* None accepted, so F stays as it is: the proposals' residuals r
         * take H's diagonal, the same quantity computed afresh. Where
         * rounding left r far above it (identical rows, or rows near
         * 1e150, whose kernel values round differently), the draws would
         * otherwise repeat for ever: now they accept, or the residual's
         * sum falls below the stopping rule. */
        for (size_t j = 0; t == 0 && j < B; j++)
            r[P[j]] = H[j * B + j] > 0 ? H[j * B + j] : 0;
        /* L (t x t, column-major lower) with L L^T = H(T, T) as it was:
         * column q is H(T, T_q) / sqrt(h of T_q) after the Schur
         * complements (later ones do not touch column T_q) */
        for (size_t q = 0; q < t; q++) {
            double dq = sqrt(H[T[q] * B + T[q]]);
            for (size_t a = 0; a < t; a++)
                L[q * t + a] = a < q ? 0 : a == q ? dq
                                                 : H[T[a] * B + T[q]] / dq;
        }
        /* G = K(:, T) - F F(T, :)^T into F's next t columns (column-major
         * n x t is row-major t x n: k(x_T, X)), then G L^-T */
        for (size_t q = 0; q < t; q++) {
            memcpy(XP + q * d, X + P[T[q]] * d, d * sizeof *XP);
            for (size_t c = 0; c < s; c++)
                FT[q * s + c] = F[FAT(P[T[q]], c)];
        }
        if (t && (st = rows ? rpc_extend_rows(k, X, n, d, m, s, t, XP, FT, L,
                                              F, err)
                            : rpc_extend_cols(k, X, xn, n, d, s, t, XP, FT,
                                              L, F, err)) != KM_OK)
            goto out;
        for (size_t i = 0; i < n; i++) /* in column order, either way */
            for (size_t q = 0; q < t; q++) {
                double f = F[FAT(i, s + q)], v = r[i] - f * f;
                r[i] = v > 0 ? v : 0;
            }
        for (size_t q = 0; q < t; q++) {
            piv[s + q] = P[T[q]];
            r[P[T[q]]] = 0;
        }
        s += t;
        if (km_progress(ctl, f0 + (f1 - f0) * (double)s / (double)m)) {
            st = km_error_set(err, KM_ECANCELLED, "fit cancelled");
            goto out;
        }
    }
    *kept = s;
    if (keep) {
        *keep = F;
        F = NULL;
    }
out:
    free(F);
    free(r);
    free(cum);
    free(xn);
    free(XP);
    free(H);
    free(L);
    free(FP);
    free(FT);
    return st;
}
#undef FAT

km_status km_krr_rpcholesky(const km_kernel *k, const double *X, size_t n,
                            size_t d, size_t m, uint64_t seed, size_t *piv,
                            size_t *kept, const km_fit_control *ctl,
                            double f0, double f1, km_error *err)
{
    return rpc_run(k, X, n, d, m, seed, 0, piv, kept, NULL, ctl, f0, f1,
                   err);
}

/* km_internal.h (the nystrom solvers' centres). */
km_status km_nys_centres(const km_kernel *k, km_krr_centre_rule rule,
                         uint64_t seed, const double *X, size_t n, size_t d,
                         size_t m, size_t *idx, size_t *kept, double **F,
                         const km_fit_control *ctl, double f0, double f1,
                         km_error *err)
{
    if (F)
        *F = NULL;
    if (rule == KM_KRR_CENTRES_RPCHOLESKY &&
        (n > INT_MAX || m > INT_MAX / RPC_BLOCK)) /* BLAS's ints */
        return km_error_set(err, KM_EINVAL, "params.n_centres (%zu) times "
                            "%d and the rows (%zu) must be below 2^31 for "
                            "rpcholesky centres", m, RPC_BLOCK, n);
    if (rule != KM_KRR_CENTRES_RPCHOLESKY) {
        km_krr_draw_centres(seed, n, m, idx);
        *kept = m;
        return KM_OK;
    }
    km_status st = rpc_run(k, X, n, d, m, seed, F != NULL, idx, kept, F, ctl,
                           f0, f1, err);
    if (st == KM_OK && *kept == 0) { /* a model of no rows is no model */
        st = km_error_set(err, KM_EPROBLEM, "params.centres rpcholesky finds "
                          "no centre: the kernel matrix of X is 0 in double "
                          "precision (no row has a residual above 0); use "
                          "params.centres uniform, or rescale X");
    }
    if (st != KM_OK) {
        if (F) {
            free(*F);
            *F = NULL;
        }
        return st;
    }
    if (!F) {
        qsort(idx, *kept, sizeof *idx, cmp_size);
        return KM_OK;
    }
    /* rows of m values to rows of the kept ones (never overlapping
     * forwards) */
    for (size_t i = 1; *kept < m && i < n; i++)
        memmove(*F + i * *kept, *F + i * m, *kept * sizeof **F);
    return KM_OK;
}

km_status km_nys_check_rule(km_krr_centre_rule rule, km_error *err)
{
    if ((unsigned)rule >= KM_KRR_CENTRES_COUNT) {
        char list[64];
        km_choice_list(&km_krr_centres_choices, " or ", list, sizeof list);
        return km_error_set(err, KM_EINVAL, "params.centres must be %s",
                            list);
    }
    return KM_OK;
}

size_t km_nys_rpcholesky_bytes(size_t n, size_t d, size_t m)
{
    return mul_sat(sizeof(double), rpc_work_values(n, d, m));
}

/* km_internal.h (also the nystrom solvers of svc and kpca). */
km_status km_nys_factor_kmm(const km_kernel *k, const double *Z, size_t m,
                            size_t d, int unshifted_first, double *T,
                            double *shift, km_error *err)
{
    double mean = 0;
    for (int tries = unshifted_first ? -1 : 0; tries < 5; tries++) {
        km_status st = km_gram_sym(k, Z, m, d, T, 1, err);
        if (st != KM_OK)
            return st;
        if (tries <= 0 && mean == 0) {
            km_ksum tr = {0, 0};
            for (size_t i = 0; i < m; i++)
                km_ksum_add(&tr, T[i * m + i]);
            mean = km_ksum_get(&tr) / (double)m;
            if (!(mean > 0) || !isfinite(mean))
                mean = 1.0;
        }
        double s = tries < 0 ? 0 : 1e-13 * (double)m * mean;
        for (int t = 0; t < tries; t++)
            s *= 1000;
        for (size_t i = 0; i < m; i++)
            T[i * m + i] += s;
        /* Symmetric: the row-major matrix is also its column-major one. */
        lapack_int info = LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'U', (lapack_int)m,
                                         T, (lapack_int)m);
        if (info < 0)
            return km_error_set(err, KM_EINTERNAL, "dpotrf argument %d",
                                (int)-info);
        if (info == 0) {
            for (size_t j = 0; j < m; j++) /* column j below the diagonal */
                memset(T + j * m + j + 1, 0, (m - j - 1) * sizeof *T);
            *shift = s;
            return KM_OK;
        }
    }
    return km_error_set(err, KM_ENOTPD, "the kernel matrix of the centres "
                        "cannot be factored even with a shift of its "
                        "diagonal: the kernel is not positive semi-definite "
                        "on them");
}

km_status km_krr_fit_nystrom(const km_kernel *kernel,
                             const km_krr_params *params, const double *X,
                             size_t n, size_t d, const double *Y, size_t p,
                             const size_t *centres, double *history,
                             size_t *n_history, const km_fit_control *ctl,
                             km_model **out, km_error *err)
{
    km_problem pb = {X, n, d, Y, p, NULL, 0};
    km_fit_frame f;
    double *T = NULL, *A = NULL, *Kb = NULL, *tmp = NULL, *work = NULL;
    double *rr = NULL, *r0 = NULL, *res = NULL, *v = NULL;
    double *xr = NULL, *acc = NULL, *zt = NULL, *rows = NULL;
    atomic_int stop = 0;
    int *done = NULL;
    krr_payload *pl = NULL;
    km_model *model = NULL;
    size_t its = 0, nh = 0;
    if (n_history)
        *n_history = 0;
    km_status st = km_fit_begin(&f, KM_ALGO_KRR, kernel, params, &pb, err);
    if (st != KM_OK)
        goto out;
    if (params->solver != KM_KRR_SOLVER_NYSTROM) {
        st = km_error_set(err, KM_EINVAL, "params.solver is not nystrom");
        goto out;
    }
    const km_kernel *k = &f.k;
    size_t m = km_krr_centres(params, n);
    size_t block = km_nys_block_rows(n, m);
    double alpha = params->alpha;
    int rpc = !centres && params->centres == KM_KRR_CENTRES_RPCHOLESKY;
    /* progress: rpcholesky to f_sel, the preconditioner to f_pre, then CG
     * to 0.95 */
    double f_sel = rpc ? 0.3 : 0.0, f_pre = f_sel + 0.05 * (1.0 - f_sel);
    if (m > INT_MAX / p || block > INT_MAX / m) { /* BLAS's ints */
        st = km_error_set(err, KM_EINVAL, "params.n_centres (%zu) times the "
                          "outputs (%zu) must be below 2^31", m, p);
        goto out;
    }
    if (km_progress(ctl, 0.0)) {
        st = km_error_set(err, KM_ECANCELLED, "fit cancelled");
        goto out;
    }

    /* The centres, kept as the model's training rows. */
    pl = calloc(1, sizeof *pl);
    if (!pl || !(pl->X = malloc(m * d * sizeof *pl->X))) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for %zu centres", m);
        goto out;
    }
    if ((st = km_nys_pick(k, X, n, d, centres, params->centres, params->seed,
                          &m, pl->X, ctl, 0.0, f_sel, err)) != KM_OK)
        goto out;
    block = km_nys_block_rows(n, m);
    size_t mp = m * p;
    if (!(pl->xn = km_sqnorms(pl->X, m, d))) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for the centres");
        goto out;
    }

    /* The preconditioner's factors. */
    T = malloc(m * m * sizeof *T);
    A = malloc(m * m * sizeof *A);
    tmp = malloc(block * p * sizeof *tmp);
    work = malloc(8 * mp * sizeof *work);
    rr = malloc(p * sizeof *rr);
    r0 = malloc(p * sizeof *r0);
    res = malloc(p * sizeof *res);
    done = calloc(p, sizeof *done);
    if (!T || !A || !tmp || !work || !rr || !r0 || !res || !done) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for the nystrom "
                          "solver of %zu centres", m);
        goto out;
    }
    /* The fused pass, for kernels of inner products and few outputs, on
     * the threads the fit may use. */
    size_t nt = ctl && ctl->threads > 1 ? (size_t)ctl->threads : 1;
    nt = nt < NYS_MAX_THREADS ? nt : NYS_MAX_THREADS;
    if (km_kernel_uses_dots(k) && p <= NYS_FUSED_OUTPUTS) {
        xr = km_sqnorms(X, n, d);
        acc = malloc(nt * mp * sizeof *acc);
        zt = malloc(m * d * sizeof *zt);
        rows = malloc(nt * NYS_TILE * m * sizeof *rows);
        if (zt)
            for (size_t j = 0; j < m; j++)
                for (size_t f = 0; f < d; f++)
                    zt[f * m + j] = pl->X[j * d + f];
    } else {
        Kb = malloc(block * m * sizeof *Kb);
    }
    if (acc ? !xr || !zt || !rows : !Kb) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for the nystrom "
                          "solver of %zu centres", m);
        goto out;
    }
    nys s = {k, X, xr, n, d, pl->X, pl->xn, m, p, block, T, A, 0, alpha, Kb,
             tmp, acc, zt, rows, &stop, nt, ctl, 0.0};
    if ((st = km_nys_factor_kmm(k, pl->X, m, d, 0, T, &s.shift, err)) != KM_OK)
        goto out;
    /* A^T A = T T^T / m + (alpha / n) I: T T^T of the triangular T by
     * dlauum (m^3 / 3 flops; DSYRK of the full m x m would take m^3) */
    memcpy(A, T, m * m * sizeof *A);
    lapack_int info = LAPACKE_dlauum(LAPACK_COL_MAJOR, 'U', (lapack_int)m, A,
                                     (lapack_int)m);
    for (size_t j = 0; j < m && info == 0; j++) { /* column j's upper part */
        for (size_t i = 0; i <= j; i++)
            A[j * m + i] /= (double)m;
        A[j * m + j] += alpha / (double)n;
    }
    if (info == 0)
        info = LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'U', (lapack_int)m, A,
                              (lapack_int)m);
    if (info != 0) {
        st = info > 0 ? km_error_set(err, KM_ENOTPD, "the nystrom "
                                     "preconditioner is not positive "
                                     "definite; use a larger params.alpha")
                      : km_error_set(err, KM_EINTERNAL, "dpotrf argument %d",
                                     (int)-info);
        goto out;
    }
    if (km_progress(ctl, f_pre)) {
        st = km_error_set(err, KM_ECANCELLED, "fit cancelled");
        goto out;
    }
    s.frac = f_pre;

    /* CG on (B^T H B) V = B^T K_nm^T Y from V = 0, every output with its
     * own step lengths; columns of m values, column-major. */
    double *V = work, *R = V + mp, *Dd = R + mp, *Q = Dd + mp, *U = Q + mp,
           *W = U + mp, *Vs = W + mp, *Rs = Vs + mp;
    memset(V, 0, mp * sizeof *V);
    memset(Vs, 0, mp * sizeof *Vs);
    if ((st = nys_pass(&s, NULL, Y, R, err)) != KM_OK)
        goto out;
    nys_apply_bt(&s, R);
    memcpy(Dd, R, mp * sizeof *R);
    memcpy(Rs, R, mp * sizeof *R);
    double worst = 0;
    size_t left = p;
    for (size_t j = 0; j < p; j++) {
        rr[j] = cblas_ddot((int)m, R + j * m, 1, R + j * m, 1);
        r0[j] = sqrt(rr[j]);
        res[j] = r0[j] > 0 ? 1.0 : 0.0;
        if (!(r0[j] > 0) || !isfinite(r0[j])) { /* y = 0: C = 0 */
            done[j] = 1;
            left--;
            memset(Dd + j * m, 0, m * sizeof *Dd);
            memset(R + j * m, 0, m * sizeof *R);
            res[j] = 0;
        }
        worst = res[j] > worst ? res[j] : worst;
    }
    if (history)
        history[nh++] = worst;
    double tol = params->cg_tol, cap = (double)params->cg_max_iter;
    while (left > 0 && its < params->cg_max_iter) {
        if ((st = nys_operator(&s, Dd, Q, U, W, err)) != KM_OK)
            goto out;
        its++;
        worst = 0;
        for (size_t j = 0; j < p; j++) {
            if (done[j]) {
                worst = res[j] > worst ? res[j] : worst;
                continue;
            }
            double *dj = Dd + j * m, *qj = Q + j * m, *rj = R + j * m;
            double dq = cblas_ddot((int)m, dj, 1, qj, 1);
            if (!(dq > 0) || !isfinite(dq)) {
                /* no descent left (a singular direction): stop here */
                done[j] = 1;
                left--;
                memset(dj, 0, m * sizeof *dj);
                worst = res[j] > worst ? res[j] : worst;
                continue;
            }
            double a = rr[j] / dq;
            double *vj = V + j * m, *vs = Vs + j * m, *rs = Rs + j * m;
            cblas_daxpy((int)m, a, dj, 1, vj, 1);
            cblas_daxpy((int)m, -a, qj, 1, rj, 1);
            double rn = cblas_ddot((int)m, rj, 1, rj, 1);
            /* minimal residual smoothing: (Vs, Rs) moves towards (V, R)
             * by the step eta that minimises |Rs|, so |Rs| never rises */
            double tt = 0, st_ = 0;
            for (size_t i = 0; i < m; i++) {
                double t = rj[i] - rs[i];
                tt += t * t;
                st_ += rs[i] * t;
            }
            if (tt > 0) {
                double eta = -st_ / tt;
                for (size_t i = 0; i < m; i++) {
                    vs[i] += eta * (vj[i] - vs[i]);
                    rs[i] += eta * (rj[i] - rs[i]);
                }
            }
            double rsn = sqrt(cblas_ddot((int)m, rs, 1, rs, 1)) / r0[j];
            res[j] = rsn < res[j] ? rsn : res[j];
            if (res[j] <= tol) {
                done[j] = 1;
                left--;
                memset(dj, 0, m * sizeof *dj);
            } else {
                double b = rn / rr[j];
                for (size_t i = 0; i < m; i++)
                    dj[i] = rj[i] + b * dj[i];
                rr[j] = rn;
            }
            worst = res[j] > worst ? res[j] : worst;
        }
        if (history)
            history[nh++] = worst;
        /* progress: iterations against the cap, or the residual's way
         * down to cg_tol on a log scale, whichever is further */
        double g = (double)its / cap;
        if (worst > 0 && worst < 1) {
            double h = log(worst) / log(tol < 1 ? tol : 0.5);
            g = h > g ? h : g;
        } else if (worst == 0) {
            g = 1;
        }
        g = f_pre + (0.95 - f_pre) * (g < 1 ? g : 1);
        s.frac = g > s.frac ? g : s.frac;
        if (km_progress(ctl, s.frac)) {
            st = km_error_set(err, KM_ECANCELLED, "fit cancelled");
            goto out;
        }
    }
    V = Vs;
    nys_apply_b(&s, V); /* C = B V, of the smoothed iterate */

    /* The model: centres, C row-major, norms; figures. */
    if (!(pl->coef = malloc(mp * sizeof *pl->coef))) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for the model");
        goto out;
    }
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < p; j++)
            pl->coef[i * p + j] = V[j * m + i];
    if (!km_all_finite(pl->coef, mp)) {
        st = km_error_set(err, KM_ENOTPD, "the nystrom solve gave non-finite "
                          "coefficients; use a larger params.alpha");
        goto out;
    }
    /* rkhs_norm_sq: C^T K_mm C per output */
    nys_kmm(&s, V, W);
    if (!(v = malloc(p * sizeof *v))) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for the model");
        goto out;
    }
    for (size_t j = 0; j < p; j++)
        v[j] = cblas_ddot((int)m, V + j * m, 1, W + j * m, 1);
    free(T);
    free(A);
    free(Kb);
    free(work);
    T = A = Kb = work = NULL;

    st = km_fit_model(&f, d, m, p, pl, &model, err);
    pl = NULL; /* owned by the model now, also on failure */
    if (st != KM_OK)
        goto out;
    km_info *pi = km_model_params_mut(model), *ti = km_model_training_mut(model);
    if (km_info_add1(pi, "alpha", KM_INFO_NUMBER, alpha) != KM_OK ||
        km_info_add1(pi, "solver", KM_INFO_INTEGER, params->solver) != KM_OK ||
        km_info_add1(pi, "n_centres", KM_INFO_INTEGER, (double)m) != KM_OK ||
        km_info_add1(pi, "seed", KM_INFO_INTEGER, (double)params->seed) !=
            KM_OK ||
        km_info_add1(pi, "cg_tol", KM_INFO_NUMBER, params->cg_tol) != KM_OK ||
        km_info_add1(pi, "cg_max_iter", KM_INFO_INTEGER,
                     (double)params->cg_max_iter) != KM_OK ||
        km_info_add1(pi, "centres", KM_INFO_INTEGER,
                     params->centres) != KM_OK ||
        km_info_add(ti, "rkhs_norm_sq", KM_INFO_NUMBER, p > 1, v, p) !=
            KM_OK ||
        km_info_add1(ti, "solver", KM_INFO_INTEGER, params->solver) !=
            KM_OK ||
        km_info_add1(ti, "iterations", KM_INFO_INTEGER, (double)its) !=
            KM_OK ||
        km_info_add1(ti, "residual", KM_INFO_NUMBER, worst) != KM_OK) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for the model");
        goto out;
    }
    km_progress(ctl, 1.0);
    *out = model;
    model = NULL;
out:
    if (n_history)
        *n_history = nh;
    km_model_free(model);
    krr_free(pl);
    free(T);
    free(A);
    free(Kb);
    free(tmp);
    free(work);
    free(rr);
    free(r0);
    free(res);
    free(done);
    free(v);
    free(xr);
    free(acc);
    free(zt);
    free(rows);
    km_fit_cleanup(&f);
    return st;
}

/* ------------------------------------------------------------ rff */

/*
 * The rff solver (Rahimi and Recht, "Random features for large-scale
 * kernel machines", 2007). By Bochner's theorem a continuous
 * shift-invariant kernel k(x - x') with k(0) = 1 is the Fourier transform
 * of a probability density p(w):
 *     k(x - x') = E_w[cos(w^T (x - x'))] = E_{w,b}[2 cos(w^T x + b)
 *                                                  cos(w^T x' + b)],
 * b ~ U[0, 2 pi). With D draws, z(x) = sqrt(2/D) cos(W x + b) gives
 * z(x)^T z(x') -> k(x, x') at rate 1/sqrt(D). The densities:
 *   rbf exp(-gamma |d|^2): Gaussian N(0, 2 gamma I);
 *   laplacian exp(-gamma |d|_1) = prod_j exp(-gamma |d_j|): each
 *     coordinate Cauchy of scale gamma, density gamma / (pi (gamma^2 +
 *     w^2));
 *   laplacian_l2 exp(-gamma |d|_2): the multivariate Cauchy (Student t
 *     with one degree of freedom) of scale gamma, w = gamma g / |h| with
 *     g ~ N(0, I_d), h ~ N(0, 1).
 * The fit is ridge regression on z: (Z^T Z + alpha I) w = Z^T Y, D x D,
 * with Z^T Z and Z^T Y accumulated over row blocks of Z (DSYRK, DGEMM)
 * and solved by km_krr_solve (blocked Cholesky). alpha means what it
 * means for the exact solver: as D grows, z(x)^T z(x') -> k and the
 * predictions z(x) w = z(x) Z^T (Z Z^T + alpha I)^-1 Y tend to exact
 * KRR's k(x, X) (K + alpha I)^-1 Y.
 */

/* rff samples the kernel's spectral density (km_krr_rff_draw):
 * the one list of the kernels it takes, km_kernel.c's CAP_RFF */
static const unsigned solver_needs[KM_KRR_SOLVER_COUNT] = {
    [KM_KRR_SOLVER_RFF] = KM_KERNEL_CAP_RFF};

km_status km_krr_check_kernel(const km_krr_params *p, const km_kernel *k,
                              km_error *err)
{
    if (!p || (unsigned)p->solver >= KM_KRR_SOLVER_COUNT)
        return KM_OK;
    unsigned need = solver_needs[p->solver];
    if ((km_kernel_type_caps(k->type) & need) == need)
        return KM_OK;
    const char *name = km_kernel_type_name(k->type);
    char names[96];
    km_kernel_caps_names(need, " or ", names, sizeof names);
    return km_error_set(err, KM_EINVAL, "params.solver %s needs a "
                        "shift-invariant kernel (kernel.type %s), not "
                        "kernel.type %s", km_krr_solver_name(p->solver),
                        names, name ? name : "unknown");
}

km_status km_krr_rff_draw(const km_kernel *k, uint64_t seed, size_t D,
                          size_t d, double *W, double *b, km_error *err)
{
    km_krr_params p = km_krr_params_default();
    p.solver = KM_KRR_SOLVER_RFF;
    km_status st = km_krr_check_kernel(&p, k, err);
    if (st != KM_OK)
        return st;
    km_rng r = {seed};
    double g = k->gamma, s = sqrt(2.0 * g);
    for (size_t i = 0; i < D; i++) {
        double *w = W + i * d;
        if (k->type == KM_KERNEL_RBF) {
            for (size_t j = 0; j < d; j++)
                w[j] = s * km_rng_gauss(&r);
        } else if (k->type == KM_KERNEL_LAPLACIAN) {
            for (size_t j = 0; j < d; j++)
                w[j] = g * tan(M_PI_2 * km_rng_uniform(&r));
        } else {
            for (size_t j = 0; j < d; j++)
                w[j] = km_rng_gauss(&r);
            double h = fabs(km_rng_gauss(&r));
            double c = g / (h > 1e-300 ? h : 1e-300);
            for (size_t j = 0; j < d; j++)
                w[j] *= c;
        }
        b[i] = M_PI * (1.0 + km_rng_uniform(&r));
    }
    return KM_OK;
}

/* Zb := z of nb rows of X: sqrt(2/D) cos(X W^T + b), nb x D row-major. */
static void rff_map(const double *W, const double *b, size_t D, size_t d,
                    const double *X, size_t nb, double *Zb)
{
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)nb, (int)D,
                (int)d, 1.0, X, (int)d, W, (int)d, 0.0, Zb, (int)D);
    double s = sqrt(2.0 / (double)D);
    for (size_t i = 0; i < nb; i++) {
        double *z = Zb + i * D;
        for (size_t j = 0; j < D; j++)
            z[j] = s * cos(z[j] + b[j]);
    }
}

km_status km_krr_rff_features(const km_model *m, const double **W,
                              const double **b)
{
    if (km_model_algorithm(m) != KM_ALGO_KRR)
        return KM_ECONFLICT;
    const krr_payload *p = km_model_payload(m);
    if (p->form != KRR_FORM_RFF)
        return KM_ECONFLICT;
    *W = p->X;
    *b = p->b;
    return KM_OK;
}

km_status km_krr_dual(const km_model *m, const double **X,
                      const double **coef)
{
    if (km_model_algorithm(m) != KM_ALGO_KRR)
        return KM_ECONFLICT;
    const krr_payload *p = km_model_payload(m);
    if (p->form != KRR_FORM_DUAL)
        return KM_ECONFLICT;
    *X = p->X;
    *coef = p->coef;
    return KM_OK;
}

static km_status krr_fit_rff(const km_kernel *kernel,
                             const km_krr_params *params, const double *X,
                             size_t n, size_t d, const double *Y, size_t p,
                             const km_fit_control *ctl, km_model **out,
                             km_error *err)
{
    km_problem pb = {X, n, d, Y, p, NULL, 0};
    km_fit_frame f;
    double *A = NULL, *c = NULL, *Zb = NULL, *v = NULL;
    krr_payload *pl = NULL;
    km_model *model = NULL;
    km_status st = km_fit_begin(&f, KM_ALGO_KRR, kernel, params, &pb, err);
    if (st != KM_OK)
        goto out;
    if ((st = km_krr_check_kernel(params, &f.k, err)) != KM_OK)
        goto out;
    size_t D = rff_components(params), block = rff_block_rows(n, D);
    double alpha = params->alpha;
    if (d > INT_MAX || p > INT_MAX || !km_mul3(D, d, 1) ||
        !km_mul3(D, p, 1)) { /* BLAS's int sizes */
        st = km_error_set(err, KM_EINVAL, "params.n_components (%zu) times "
                          "the columns (%zu) or outputs (%zu) is too large",
                          D, d, p);
        goto out;
    }
    if (km_progress(ctl, 0.0)) {
        st = km_error_set(err, KM_ECANCELLED, "fit cancelled");
        goto out;
    }
    pl = calloc(1, sizeof *pl);
    if (pl) {
        pl->form = KRR_FORM_RFF;
        pl->X = malloc(D * d * sizeof *pl->X);
        pl->b = malloc(D * sizeof *pl->b);
        pl->coef = malloc(D * p * sizeof *pl->coef);
    }
    A = calloc(D * D, sizeof *A);
    c = calloc(D * p, sizeof *c);
    Zb = malloc(block * D * sizeof *Zb);
    if (!pl || !pl->X || !pl->b || !pl->coef || !A || !c || !Zb) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for %zu random "
                          "Fourier features", D);
        goto out;
    }
    if ((st = km_krr_rff_draw(&f.k, params->seed, D, d, pl->X, pl->b,
                              err)) != KM_OK)
        goto out;

    /* Z^T Z (lower triangle) and Z^T Y, block by block */
    for (size_t i0 = 0; i0 < n; i0 += block) {
        size_t nb = n - i0 < block ? n - i0 : block;
        rff_map(pl->X, pl->b, D, d, X + i0 * d, nb, Zb);
        for (size_t i = 0; i < nb; i++)
            if (!km_all_finite(Zb + i * D, D)) { /* x.w overflowed */
                st = km_error_set(err, KM_EPROBLEM, "the random features of "
                                  "X[%zu] are not finite numbers: the values "
                                  "of X are too large for params.solver rff "
                                  "in double precision (overflow); rescale "
                                  "X", i0 + i);
                goto out;
            }
        cblas_dsyrk(CblasRowMajor, CblasLower, CblasTrans, (int)D, (int)nb,
                    1.0, Zb, (int)D, 1.0, A, (int)D);
        cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)D, (int)p,
                    (int)nb, 1.0, Zb, (int)D, Y + i0 * p, (int)p, 1.0, c,
                    (int)p);
        if (km_progress(ctl, 0.6 * (double)(i0 + nb) / (double)n)) {
            st = km_error_set(err, KM_ECANCELLED, "fit cancelled");
            goto out;
        }
    }
    free(Zb);
    Zb = NULL;
    if ((st = km_krr_solve(A, D, alpha, c, p, pl->coef,
                           "Z^T Z of the random features", ctl, 0.6, 0.95,
                           err)) != KM_OK)
        goto out;
    if (!km_all_finite(pl->coef, D * p)) {
        st = km_error_set(err, KM_ENOTPD, "the rff solve gave non-finite "
                          "weights; use a larger params.alpha");
        goto out;
    }
    free(A);
    free(c);
    A = c = NULL;
    /* rkhs_norm_sq: |w|^2 per output, the norm in the feature space */
    if (!(v = malloc(p * sizeof *v))) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for the model");
        goto out;
    }
    for (size_t j = 0; j < p; j++) {
        km_ksum t = {0, 0};
        for (size_t i = 0; i < D; i++)
            km_ksum_add(&t, pl->coef[i * p + j] * pl->coef[i * p + j]);
        v[j] = km_ksum_get(&t);
    }

    st = km_fit_model(&f, d, D, p, pl, &model, err);
    pl = NULL; /* owned by the model now, also on failure */
    if (st != KM_OK)
        goto out;
    km_info *pi = km_model_params_mut(model), *ti = km_model_training_mut(model);
    if (km_info_add1(pi, "alpha", KM_INFO_NUMBER, alpha) != KM_OK ||
        km_info_add1(pi, "solver", KM_INFO_INTEGER, params->solver) != KM_OK ||
        km_info_add1(pi, "n_components", KM_INFO_INTEGER, (double)D) !=
            KM_OK ||
        km_info_add1(pi, "seed", KM_INFO_INTEGER, (double)params->seed) !=
            KM_OK ||
        km_info_add(ti, "rkhs_norm_sq", KM_INFO_NUMBER, p > 1, v, p) !=
            KM_OK ||
        km_info_add1(ti, "solver", KM_INFO_INTEGER, params->solver) !=
            KM_OK) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for the model");
        goto out;
    }
    km_progress(ctl, 1.0);
    *out = model;
    model = NULL;
out:
    km_model_free(model);
    krr_free(pl);
    free(A);
    free(c);
    free(Zb);
    free(v);
    km_fit_cleanup(&f);
    return st;
}

static km_status rff_predict(const km_model *m, const krr_payload *p,
                             const double *X, size_t n, double *out,
                             km_error *err)
{
    size_t D = km_model_n_samples(m), d = km_model_n_features(m);
    size_t q = km_model_n_outputs(m), block = rff_block_rows(n, D);
    if (n == 0)
        return KM_OK;
    double *Zb = malloc(block * D * sizeof *Zb);
    if (!Zb)
        return km_error_set(err, KM_ENOMEM, "out of memory for a prediction");
    for (size_t i0 = 0; i0 < n; i0 += block) {
        size_t nb = n - i0 < block ? n - i0 : block;
        rff_map(p->X, p->b, D, d, X + i0 * d, nb, Zb);
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)nb,
                    (int)q, (int)D, 1.0, Zb, (int)D, p->coef, (int)q, 0.0,
                    out + i0 * q, (int)q);
    }
    free(Zb);
    return KM_OK;
}

km_status km_krr_predict(const km_model *m, const double *X, size_t n,
                         double *out, km_error *err)
{
    km_status st = km_model_expect_input(m, KM_ALGO_KRR, "predict", X, n, err);
    if (st != KM_OK)
        return st;
    size_t d = km_model_n_features(m);
    const krr_payload *p = km_model_payload(m);
    if (p->form == KRR_FORM_RFF)
        return rff_predict(m, p, X, n, out, err);
    return km_kernel_expand(km_model_kernel(m), p->X, km_model_n_samples(m),
                            d, p->xn, p->coef, km_model_n_outputs(m), NULL, X, n,
                            out, err);
}

const double *km_krr_dual_coef(const km_model *m)
{
    if (km_model_algorithm(m) != KM_ALGO_KRR)
        return NULL;
    return ((const krr_payload *)km_model_payload(m))->coef;
}

/* ------------------------------------------------------------ descriptor */

static void params_default(void *params)
{
    *(km_krr_params *)params = km_krr_params_default();
}

static uint64_t max_outputs(uint64_t ns)
{
    (void)ns;
    return KM_MODEL_MAX_OUTPUTS;
}

/* Versions 1 and 2: X, coefficients, exactly. Version 3: the form (4
 * bytes), then that or W, b, w: the two sizes. */
static void payload_range(uint32_t format, uint64_t ns, uint64_t nf,
                          uint64_t no, uint64_t *lo, uint64_t *hi)
{
    uint64_t dual = km_add_sat(km_f64s_bytes(km_mul_sat(ns, nf)),
                               km_f64s_bytes(km_mul_sat(ns, no)));
    *lo = *hi = dual;
    if (format >= 3) {
        *lo = km_add_sat(4, dual);
        *hi = km_add_sat(*lo, km_f64s_bytes(ns));
    }
}

static km_status check(const void *params, const km_problem *pb,
                       km_error *err)
{
    return km_krr_check(params, pb->n, err);
}

static size_t fit_bytes(const void *params, const km_problem *pb)
{
    return km_krr_fit_bytes(pb->n, pb->d, pb->m, params);
}

static km_status fit(const km_kernel *k, const void *params,
                     const km_problem *pb, const km_fit_control *ctl,
                     km_model **out, km_error *err)
{
    return km_krr_fit(k, params, pb->X, pb->n, pb->d, pb->y, pb->m, ctl, out,
                      err);
}

/* ------------------------------------------------------------ capabilities */

static const char *solver_name(size_t i)
{
    return km_krr_solver_name((km_krr_solver)i);
}

static const km_algo_solvers solvers = {"solver", KM_KRR_SOLVER_COUNT,
                                        solver_name, solver_needs};

static km_status check_kernel(const void *params, const km_kernel *k,
                              km_error *err)
{
    return km_krr_check_kernel(params, k, err);
}

static int search_serves(const void *params)
{
    return ((const km_krr_params *)params)->solver == KM_KRR_SOLVER_EXACT;
}

static int search_is_auto(const void *params)
{
    return ((const km_krr_params *)params)->solver == KM_KRR_SOLVER_AUTO;
}

static void search_resolve_auto(void *params, const km_problem *pb,
                                size_t budget)
{
    km_krr_params *p = params;
    p->solver = km_krr_resolve_solver(p, pb->n, pb->d, pb->y ? pb->m : 1,
                                      budget);
}

static const km_algo_search search = {
    .caps = KM_SEARCH_CLOSED_FORM,
    .serves = search_serves,
    .is_auto = search_is_auto,
    .resolve_auto = search_resolve_auto,
};

static const char *mpi_refusal(const void *params, char *buf, size_t len)
{
    (void)buf, (void)len;
    km_krr_solver s = ((const km_krr_params *)params)->solver;
    return s == KM_KRR_SOLVER_EXACT || s == KM_KRR_SOLVER_AUTO
               ? NULL
               : "krr's nystrom or rff solver cannot run distributed "
                 "(only exact or auto)";
}

/* auto is resolved to exact on the cluster */
static km_status mpi_resolve(void *params, km_error *err)
{
    km_krr_params *p = params;
    if (p->solver == KM_KRR_SOLVER_AUTO)
        p->solver = KM_KRR_SOLVER_EXACT;
    if (p->solver != KM_KRR_SOLVER_EXACT)
        return km_error_set(err, KM_EINVAL, "kmserve-mpi runs krr's exact "
                            "solver");
    return KM_OK;
}

static int mpi_routes_auto(const void *params, void *exact)
{
    const km_krr_params *p = params;
    if (p->solver != KM_KRR_SOLVER_AUTO)
        return 0;
    km_krr_params e = *p;
    e.solver = KM_KRR_SOLVER_EXACT;
    memcpy(exact, &e, sizeof e);
    return 1;
}

static size_t mpi_rank_bytes(const void *params, const km_problem *pb,
                             size_t nb, size_t rows, size_t cols)
{
    (void)params;
    return km_mpi_dense_rank_bytes(pb, nb, rows, cols, 0);
}

/* the staging buffer, the model file read back and the model */
static size_t mpi_local_bytes(const void *params, const km_problem *pb)
{
    (void)params;
    uint64_t v = km_mul_sat(8, km_mul_sat(pb->n, pb->d + (pb->m ? pb->m : 1)));
    return (size_t)km_mul_sat(3, v);
}

static const km_algo_mpi mpi = {mpi_refusal, mpi_resolve, mpi_routes_auto,
                                mpi_rank_bytes, mpi_local_bytes};

/* ------------------------------------------------------------ params
 *
 * The keys a request's params may give (km_param, km_base.h): their
 * types, bounds, choices, the solver values they apply with and docs,
 * read by the API through km_algorithm_params. */

/* Only with solver "nystrom" (or "auto", which may resolve to it);
 * "rff"; either. */
#define ONLY_NYSTROM .only_if = "solver", .only_value = KM_KRR_SOLVER_NYSTROM
#define NYSTROM ONLY_NYSTROM, .only_also = 1u << KM_KRR_SOLVER_AUTO
#define RFF .only_if = "solver", .only_value = KM_KRR_SOLVER_RFF
#define NYSTROM_OR_RFF ONLY_NYSTROM, \
    .only_also = 1u << KM_KRR_SOLVER_AUTO | 1u << KM_KRR_SOLVER_RFF

static const km_param krr_rows[] = {
    {.key = "alpha", .type = KM_PARAM_NUMBER,
     KM_PARAM_FIELD(km_krr_params, alpha),
     KM_PARAM_POSITIVE, .doc = "ridge added to the kernel matrix's diagonal"},
    {.key = "solver", .type = KM_PARAM_CHOICE,
     KM_PARAM_FIELD(km_krr_params, solver),
     .choices = &km_krr_solver_choices,
     .doc = "exact: Cholesky of the n x n kernel matrix; nystrom: m "
            "centres and preconditioned conjugate gradients (Falkon), "
            "memory O(m^2 + n); rff: D random Fourier features and a "
            "D x D ridge solve, memory O(D^2), kernels rbf, laplacian "
            "and laplacian_l2 only; auto: exact when its estimate is at "
            "most half the server's memory budget, else nystrom "
            "(training.solver says which)"},
    KM_NYS_N_CENTRES_ROW(km_krr_params, NYSTROM),
    {.key = "seed", .type = KM_PARAM_INTEGER,
     KM_PARAM_FIELD(km_krr_params, seed),
     .range = KM_PARAM_RANGE_READER, .min = 0, .max = 2147483647,
     NYSTROM_OR_RFF,
     .doc = "nystrom, auto and rff only: seed of the centres' or the "
            "random features' draw (core's PRNG)"},
    KM_NYS_CG_ROWS(km_krr_params, NYSTROM),
    {.key = "n_components", .type = KM_PARAM_INTEGER,
     KM_PARAM_FIELD(km_krr_params, n_components),
     .range = KM_PARAM_RANGE_READER, .min = 1,
     .max = KM_KRR_MAX_COMPONENTS, RFF,
     .doc = "rff only: D, the number of random Fourier features"},
    KM_NYS_CENTRES_ROW(km_krr_params, NYSTROM),
    {0},
};
_Static_assert(sizeof(km_krr_solver) == sizeof(int) &&
                   sizeof(km_krr_centre_rule) == sizeof(int),
               "KM_PARAM_CHOICE fields are int-sized");
_Static_assert(sizeof(uint64_t) == sizeof(size_t),
               "KM_PARAM_INTEGER fields are int or size_t sized");

static const km_param_set param_set = {krr_rows, sizeof(km_krr_params),
                                        params_default};

const km_algo km_krr_algo = {
    .outputs = KM_OUT_VALUES,
    .params = &param_set,
    .check = check,
    .fit_bytes = fit_bytes,
    .fit = fit,
    .values = km_krr_predict,
    .max_outputs = max_outputs,
    .payload_range = payload_range,
    .free_payload = krr_free,
    .save = krr_save,
    .load = krr_load,
    .file_format = krr_file_format,
    .bytes = krr_bytes,
    .load_bytes = krr_load_bytes,
    .target = KM_TARGET_ROWS,
    .solvers = &solvers,
    .check_kernel = check_kernel,
    .search = &search,
    .mpi = &mpi,
};
