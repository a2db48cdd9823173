/*
 * km_krr.c - kernel ridge regression: solve (K + alpha I) C = Y.
 *
 * Long: the exact, nystrom and rff fits share the payload, its file form
 * and the descriptor; each fit is short and the rff part is one block at
 * the end.
 *
 * The exact fit hands X to km_spd_kernel_solve (solvers/km_spd.c), which
 * holds the lower triangle of K + alpha I once, packed, factors it in
 * float and refines the solution in double (params.precision mixed, the
 * default; the double factor when that stalls) or factors it in double.
 *
 * km_krr_solve (the rff solver's D x D system and KPCA's inverse map)
 * takes an n x n buffer whose lower triangle holds the matrix, adds
 * alpha to the diagonal and factors it in place with Cholesky. LAPACKE's
 * row-major interface would
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/km_base_internal.h"
#include "../kernels/km_kernel_internal.h"
#include "../model/km_model_internal.h"
#include "../solvers/km_solvers_internal.h"
#include "../solvers/km_spd.h"
#include "km_algorithms_internal.h"
#include "km_krr.h"

/* Two forms: the dual (exact and nystrom solvers: training rows or
 * centres and their coefficients) and rff (random Fourier features:
 * frequencies W, phases b, primal weights w; n_samples is D). */
enum { KRR_FORM_DUAL = 0, KRR_FORM_RFF = 1, KRR_FORM_FACTOR = 2,
       KRR_FORM_NYS = 3, KRR_FORM_COUNT };
/* The factor form (params.keep_factor, format version 7): the dual form
 * and the double Cholesky factor L of K + alpha I, with alpha, so that
 * the model can be updated by new rows (km_chol_update.c).
 * The nystrom statistics form (nystrom with params.keep_factor, format
 * version 10): the dual form of the centres, and the sufficient
 * statistics of the normal equations (K_nm^T K_nm + alpha K_mm) C =
 * K_nm^T Y of the rows seen, G = K_nm^T K_nm (m x m), KtY = K_nm^T Y
 * (m x outputs) and their number, with alpha: an update adds the new
 * rows' sums and re-solves by CG from the old C (km_falkon.c), with no
 * old rows. */

typedef struct krr_payload {
    unsigned form; /* KRR_FORM_* */
    double *X;     /* dual: n x d training rows; rff: W, D x d */
    double *coef;  /* dual: n x m dual coefficients; rff: w, D x m */
    double *xn;    /* dual: n squared norms of X's rows (derived) */
    double *b;     /* rff: D phases */
    km_factor *F;  /* factor: K + alpha I = L L^T (shared with the models
                      updated from this one); else NULL */
    double alpha;  /* factor, nys: the ridge L is of / of the equations */
    double *G;     /* nys: m x m K_nm^T K_nm (both triangles); else NULL */
    double *KtY;   /* nys: m x outputs K_nm^T Y, row-major */
    uint64_t rows; /* nys: the rows G and KtY sum over */
} krr_payload;

km_krr_params km_krr_params_default(void)
{
    km_krr_params p = {1.0, KM_KRR_SOLVER_EXACT, 0, 0, 1e-7, 100,
                       KM_KRR_DEFAULT_COMPONENTS};
    return p;
}

KM_CHOICES_DEFINE(km_krr_solver_choices, KM_KRR_SOLVER_MAP,
                  KM_KRR_SOLVER_COUNT);

KM_CHOICES_DEFINE(km_krr_precision_choices, KM_KRR_PRECISION_MAP,
                  KM_KRR_PRECISION_COUNT);

const char *km_krr_solver_name(km_krr_solver s)
{
    return km_choice_name(&km_krr_solver_choices, (int)s);
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
    if (p->keep_factor && p->solver != KM_KRR_SOLVER_EXACT &&
        p->solver != KM_KRR_SOLVER_NYSTROM)
        return km_error_set(err, KM_EINVAL, "params.keep_factor applies to "
                            "the exact and nystrom solvers only "
                            "(params.solver exact or nystrom)");
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
        size_t v = km_mul_sat(2, km_add_sat(km_mul_sat(f, d), f));
        v = km_add_sat(v, km_mul_sat(f, f));
        v = km_add_sat(v, km_mul_sat(3, km_mul_sat(f, m)));
        v = km_add_sat(v, km_add_sat(km_mul_sat(b, f), km_mul_sat(b, m)));
        return km_mul_sat(D, v);
    }
    if (p && p->keep_factor)
        /* km_krr_solve's n x n K, factored in place and kept, and its
         * column-major copy of Y; the coefficients, the kept X and
         * norms. */
        return km_mul_sat(D, km_add_sat(km_mul_sat(n, n),
                                        km_add_sat(km_mul_sat(n, d + 1),
                                                   km_mul_sat(2 * n, m))));
    if (!p || p->solver != KM_KRR_SOLVER_NYSTROM)
        /* The solve (km_spd.c: the larger of the mixed path's float
         * factor and the double factor a fallback holds, whatever the
         * precision asked: the safe side), the coefficients, the kept X
         * and norms. */
        return km_add_sat(km_spd_kernel_solve_bytes(n, m),
                       km_mul_sat(D, km_add_sat(km_mul_sat(n, d),
                                          km_add_sat(km_mul_sat(n, m), n))));
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
    size_t v = km_mul_sat(n, sizeof(size_t) / D + 2);
    v = km_add_sat(v, km_mul_sat(KM_FALKON_MAX_THREADS, km_mul_sat(c, m)));
    v = km_add_sat(v, km_mul_sat(2, km_mul_sat(c, c)));
    v = km_add_sat(v, km_add_sat(km_mul_sat(b, c), km_mul_sat(b, m + 1)));
    v = km_add_sat(v, km_mul_sat(2, km_mul_sat(c, d + 1)));
    v = km_add_sat(v, km_mul_sat(9, km_mul_sat(c, m)));
    v = km_add_sat(v, 4 * m);
    v = km_add_sat(v, km_nys_centres_values(n, d, c, p->centres));
    if (p->keep_factor) /* the kept G and KtY, and km_nys_stats_add's
                         * block of K_nm */
        v = km_add_sat(v, km_add_sat(km_mul_sat(c, c + m),
                                     km_mul_sat(b, c)));
    return km_mul_sat(D, v);
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
    km_factor_free(p->F);
    free(p->G);
    free(p->KtY);
    free(p);
}

/* The format version a model needs: 3 for the rff form (its payload
 * starts with the form), 7 for the factor form, 10 for the nystrom
 * statistics, else the default. */
static uint32_t krr_file_format(const void *payload)
{
    unsigned f = ((const krr_payload *)payload)->form;
    return f == KRR_FORM_RFF      ? 3
           : f == KRR_FORM_FACTOR ? 7
           : f == KRR_FORM_NYS    ? 10
                                  : 0;
}

static size_t krr_factor_blocks(const void *payload, uint64_t *bytes)
{
    const krr_payload *p = payload;
    return p->F ? (*bytes = km_factor_bytes(p->F), p->F->nb) : 0;
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
    if (p->form == KRR_FORM_FACTOR || p->form == KRR_FORM_NYS) {
        /* version 7: form, alpha, then; version 10: also the rows */
        km_write_u32(w, p->form);
        km_write_f64(w, p->alpha);
        if (p->form == KRR_FORM_NYS)
            km_write_u64(w, p->rows);
    }
    km_write_f64s(w, p->X, n * km_model_n_features(m));
    km_write_f64s(w, p->coef, n * km_model_n_outputs(m));
    if (p->form == KRR_FORM_FACTOR) /* ... X, coefficients and L */
        km_factor_write(w, p->F);
    if (p->form == KRR_FORM_NYS) { /* ... X, coefficients, G and KtY */
        km_tri_write(w, p->G, n);
        km_write_f64s(w, p->KtY, n * km_model_n_outputs(m));
    }
}

/* KM_ECORRUPT unless the kept factor is finite with a diagonal > 0 and
 * its alpha a finite number > 0. */
static km_status check_factor(const krr_payload *p, km_error *err)
{
    if (!(p->alpha > 0) || !isfinite(p->alpha))
        return km_error_set(err, KM_ECORRUPT, "model file: kernel ridge "
                            "factor's alpha is not a finite number > 0");
    return km_factor_check(p->F, "kernel ridge factor L", err);
}

/* KM_ECORRUPT unless the nystrom statistics could be sums of squares
 * and products of kernel values: alpha a finite number > 0, at least as
 * many rows as centres (at most 2^53), G finite with a diagonal >= 0 and
 * |G_ij| <= sqrt(G_ii G_jj) (Cauchy-Schwarz, with room for round-off),
 * KtY finite. */
static km_status check_nys(const krr_payload *p, size_t m, size_t q,
                           km_error *err)
{
    if (!(p->alpha > 0) || !isfinite(p->alpha))
        return km_error_set(err, KM_ECORRUPT, "model file: nystrom "
                            "statistics' alpha is not a finite number > 0");
    if (p->rows < m || p->rows > ((uint64_t)1 << 53))
        return km_error_set(err, KM_ECORRUPT, "model file: nystrom "
                            "statistics of %llu rows (between %zu centres "
                            "and 2^53 expected)",
                            (unsigned long long)p->rows, m);
    if (!km_all_finite(p->KtY, m * q))
        return km_error_set(err, KM_ECORRUPT, "model file: nystrom "
                            "statistics hold a value that is not a finite "
                            "number");
    return km_sums_check(p->G, m, "nystrom statistics G", err);
}

/* The nystrom statistics' G (a triangle in the file, made symmetric) and
 * KtY into p; r->failed or NULL on failure. */
static void read_nys(km_reader *r, krr_payload *p, size_t m, size_t nc)
{
    if (!km_mul3(m, m, 8)) {
        r->failed = 1;
        return;
    }
    if (!(p->G = km_tri_read_sym(r, m)))
        return;
    p->KtY = nc ? km_read_f64s(r, nc) : NULL;
}

static km_status krr_load(km_reader *r, const km_model *m, void **payload,
                          km_error *err)
{
    size_t n = km_model_n_samples(m), d = km_model_n_features(m);
    size_t nx = km_mul3(n, d, 1), nc = km_mul3(n, km_model_n_outputs(m), 1);
    unsigned form = KRR_FORM_DUAL;
    if (km_model_file_format(m) >= 3) { /* the payload starts with its form */
        uint32_t f = km_read_u32(r);
        if (r->failed || f >= KRR_FORM_COUNT ||
            (f == KRR_FORM_FACTOR && km_model_file_format(m) < 7) ||
            (f == KRR_FORM_NYS && km_model_file_format(m) < 10))
            return km_error_set(err, KM_ECORRUPT, "model file: kernel ridge "
                                "payload form %u is not 0 (dual), 1 (rff), "
                                "from format version 7 2 (factor) or from "
                                "version 10 3 (nystrom statistics)",
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
    if (form == KRR_FORM_FACTOR || form == KRR_FORM_NYS)
        p->alpha = km_read_f64(r);
    if (form == KRR_FORM_NYS)
        p->rows = km_read_u64(r);
    p->X = nx ? km_read_f64s(r, nx) : NULL;
    if (form == KRR_FORM_RFF) {
        p->b = p->X ? km_read_f64s(r, n) : NULL;
        p->coef = p->b && nc ? km_read_f64s(r, nc) : NULL;
        p->xn = NULL;
    } else {
        p->coef = p->X && nc ? km_read_f64s(r, nc) : NULL;
        p->xn = p->coef ? km_sqnorms(p->X, n, d) : NULL;
        if (p->xn && form == KRR_FORM_FACTOR && !km_mul3(n, n, 8))
            r->failed = 1;
        if (p->xn && form == KRR_FORM_FACTOR && !r->failed &&
            !(p->F = km_factor_read(
                  r, n, km_model_file_format(m) >= KM_FORMAT_BLOCKS, err))) {
            km_status st = r->failed ? KM_ECORRUPT : KM_ENOMEM;
            krr_free(p);
            return st; /* err says why */
        }
        if (p->xn && form == KRR_FORM_NYS && !r->failed)
            read_nys(r, p, n, nc);
    }
    if (!p->X || !p->coef || (form == KRR_FORM_RFF ? !p->b : !p->xn) ||
        (form == KRR_FORM_FACTOR && !p->F) ||
        (form == KRR_FORM_NYS && (!p->G || !p->KtY))) {
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
    km_status st = form == KRR_FORM_FACTOR ? check_factor(p, err)
                   : form == KRR_FORM_NYS
                       ? check_nys(p, n, km_model_n_outputs(m), err)
                       : KM_OK;
    if (st != KM_OK) {
        krr_free(p);
        return st;
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

/* The heap of a payload of m's sizes, every form (rff: b instead of the
 * norms, as many): X, the coefficients, n more; the factor form's n x n
 * factor (the file stores a triangle, km_factor_read makes it whole), the
 * nystrom statistics' n x n G and n x outputs KtY. */
static size_t heap_bytes(const km_model *m, unsigned form)
{
    uint64_t n = km_model_n_samples(m), q = km_model_n_outputs(m);
    uint64_t per_row = km_add_sat(km_model_n_features(m), km_add_sat(q, 1));
    if (form == KRR_FORM_FACTOR)
        per_row = km_add_sat(per_row, n);
    if (form == KRR_FORM_NYS)
        per_row = km_add_sat(per_row, km_add_sat(n, q));
    return (size_t)km_add_sat(sizeof(krr_payload),
                              km_mul_sat(km_mul_sat(n, per_row),
                                         sizeof(double)));
}

static size_t krr_bytes(const void *payload, const km_model *m)
{
    return heap_bytes(m, ((const krr_payload *)payload)->form);
}

/* From the header and, from version 7, the form (the factor's from 7,
 * the nystrom statistics' from 10). */
static void krr_load_bytes(km_reader r, const km_model *m, size_t *kept,
                           size_t *peak)
{
    uint32_t fv = km_model_file_format(m);
    unsigned form = fv >= 3 ? km_read_u32(&r) : KRR_FORM_DUAL;
    if ((form == KRR_FORM_FACTOR && fv < 7) ||
        (form == KRR_FORM_NYS && fv < 10) || form >= KRR_FORM_COUNT)
        form = KRR_FORM_DUAL;
    *kept = *peak = heap_bytes(m, form);
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
    km_transpose(Y, n, m, B);
    /* Row-major lower triangle == column-major upper triangle. */
    lapack_int info = LAPACKE_dpotrs(LAPACK_COL_MAJOR, 'U', (lapack_int)n,
                                     (lapack_int)m, G, (lapack_int)n, B,
                                     (lapack_int)n);
    if (info == 0)
        km_transpose(B, m, n, C);
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

/*
 * The exact solve's precision figures (km_krr.h). The default is the
 * mixed path: its refinement stops only at the double solve's backward
 * error (LAPACK DSPOSV's test), so its coefficients are as accurate as
 * the double factor's and the predictions agree with them far inside the
 * parity tests' 1e-10 (tests/core/test_km_krr.c compares the two); where
 * it cannot get there (K + alpha I not positive definite in float, or
 * too ill-conditioned for the float factor to precondition: tiny alpha)
 * it falls back to the double factor by itself and says so. params
 * precision "double" skips the float attempt.
 */
static km_status precision_figures(km_model *model, int mixed,
                                   const km_spd_report *rep)
{
    km_info *ti = km_model_training_mut(model);
    km_status st = km_info_add1(ti, "precision", KM_INFO_INTEGER,
                                rep->mixed ? KM_KRR_PRECISION_MIXED
                                           : KM_KRR_PRECISION_DOUBLE);
    if (!mixed)
        return st == KM_OK ? km_info_add1(km_model_params_mut(model),
                                          "precision", KM_INFO_INTEGER,
                                          KM_KRR_PRECISION_DOUBLE)
                           : st;
    if (st == KM_OK)
        st = km_info_add1(ti, "refinement_steps", KM_INFO_INTEGER,
                          (double)rep->steps);
    if (st == KM_OK && rep->backward_error >= 0)
        st = km_info_add1(ti, "backward_error", KM_INFO_NUMBER,
                          rep->backward_error);
    if (st == KM_OK && rep->fallback)
        st = km_info_add1(ti, "fallback", KM_INFO_INTEGER, rep->fallback);
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
    /* keep_factor is the exact solver's own, not auto's */
    km_info_remove(km_model_params_mut(model), "keep_factor");
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

/* The exact solve that keeps its factor (params.keep_factor): K in
 * double, factored in place by km_krr_solve and kept as the payload's L
 * (the factor form). */
static km_status solve_keep(const km_kernel *k, const double *X, size_t n,
                            size_t d, double alpha, const double *Y,
                            size_t m, krr_payload *p,
                            const km_fit_control *ctl, km_error *err)
{
    double *G = malloc(km_mul3(n, n, sizeof *G));
    if (!G)
        return km_error_set(err, KM_ENOMEM, "out of memory for a %zu x %zu "
                            "kernel matrix", n, n);
    km_status st = km_gram_sym(k, X, n, d, G, 0, err);
    if (st == KM_OK && km_progress(ctl, 0.1))
        st = km_error_set(err, KM_ECANCELLED, "fit cancelled");
    if (st == KM_OK)
        st = km_krr_solve(G, n, alpha, Y, m, p->coef, "the kernel matrix",
                          ctl, 0.1, 0.9, err);
    if (st != KM_OK) {
        free(G);
        return st;
    }
    for (size_t i = 0; i < n; i++) /* the upper triangle: 0 */
        memset(G + i * n + i + 1, 0, (n - i - 1) * sizeof *G);
    p->form = KRR_FORM_FACTOR;
    p->alpha = alpha;
    if (!(p->F = km_factor_wrap(G, n)))
        return km_error_set(err, KM_ENOMEM, "out of memory for the model");
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
    krr_payload *p = NULL;
    km_model *model = NULL;
    km_status st = km_fit_begin(&f, KM_ALGO_KRR, kernel, params, &pb, err);
    if (st != KM_OK)
        goto out;
    const km_kernel *k = &f.k;
    const km_dense_engine *de = ctl ? ctl->dense : NULL;
    km_spd_report rep = {0, 0, 0, -1};
    int mixed = params->precision != KM_KRR_PRECISION_DOUBLE;

    p = calloc(1, sizeof *p);
    if (!p || !(p->coef = malloc(n * m * sizeof *p->coef))) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for the model");
        goto out;
    }
    if (km_progress(ctl, 0.0)) {
        st = km_error_set(err, KM_ECANCELLED, "fit cancelled");
        goto out;
    }
    /* The engine forms K and solves elsewhere (km.h: km_dense_engine). */
    if (de && km_progress(ctl, 0.1)) {
        st = km_error_set(err, KM_ECANCELLED, "fit cancelled");
        goto out;
    }
    if (params->keep_factor && !de) {
        mixed = 0;
        st = solve_keep(k, X, n, d, params->alpha, Y, m, p, ctl, err);
    } else {
        st = de ? de->solve(de->ctx, k, 1.0, X, n, d, params->alpha, Y, m,
                            p->coef, NULL, ctl, 0.1, 0.9, err)
                : km_spd_kernel_solve(k, X, n, d, params->alpha, Y, m,
                                      p->coef, mixed, &rep, ctl, 0.0, 0.9,
                                      err);
    }
    if (st == KM_ENOTPD && !de)
        km_kernel_note_min_eigenvalue(k, X, n, d, 1.0, params->alpha, NULL,
                                      "its", err);
    if (st != KM_OK)
        goto out;
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
        (!de && km_info_add1(km_model_params_mut(model), "keep_factor",
                             KM_INFO_BOOLEAN, params->keep_factor != 0) !=
                    KM_OK) ||
        add_rkhs_norm(model, Y, params->alpha) != KM_OK ||
        (!de && precision_figures(model, mixed, &rep) != KM_OK)) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for the model");
        goto out;
    }
    km_progress(ctl, 1.0);
    *out = model;
    model = NULL;
out:
    km_model_free(model);
    krr_free(p);
    km_fit_cleanup(&f);
    return st;
}

/* The nystrom statistics form (params.keep_factor): G and KtY of X's n
 * rows for pl's m centres, alpha and n. */
static km_status keep_stats(const km_kernel *k, const double *X, size_t n,
                            size_t d, const double *Y, size_t p, size_t m,
                            double alpha, krr_payload *pl, km_error *err)
{
    if (!(pl->G = calloc(km_mul3(m, m, 1), sizeof *pl->G)) ||
        !(pl->KtY = calloc(m * p, sizeof *pl->KtY)))
        return km_error_set(err, KM_ENOMEM, "out of memory for the nystrom "
                            "statistics of %zu centres", m);
    pl->form = KRR_FORM_NYS;
    pl->alpha = alpha;
    pl->rows = n;
    return km_nys_stats_add(k, X, n, d, Y, p, pl->X, pl->xn, m, pl->G,
                            pl->KtY, err);
}

/* krr's nystrom fit: the centres (km_nys_pick, kept as the model's
 * training rows), Falkon's solve of their coefficients (km_falkon_solve,
 * km_falkon.c), and the model with its figures. */
km_status km_krr_fit_nystrom(const km_kernel *kernel,
                             const km_krr_params *params, const double *X,
                             size_t n, size_t d, const double *Y, size_t p,
                             const size_t *centres, double *history,
                             size_t *n_history, const km_fit_control *ctl,
                             km_model **out, km_error *err)
{
    km_problem pb = {X, n, d, Y, p, NULL, 0};
    km_fit_frame f;
    double *v = NULL, worst = 0;
    krr_payload *pl = NULL;
    km_model *model = NULL;
    size_t its = 0;
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
    if (!(pl->xn = km_sqnorms(pl->X, m, d))) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for the centres");
        goto out;
    }

    /* Their coefficients C (row-major) and C^T K_mm C per output. */
    if (!(pl->coef = malloc(m * p * sizeof *pl->coef)) ||
        !(v = malloc(p * sizeof *v))) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for the model");
        goto out;
    }
    km_falkon fk = {k,     X,     n,      d,
                    Y,     p,     pl->X,  pl->xn,
                    m,     alpha, params->cg_tol, params->cg_max_iter,
                    ctl,   f_pre};
    if ((st = km_falkon_solve(&fk, pl->coef, v, &its, &worst, history,
                              n_history, err)) != KM_OK)
        goto out;
    if (params->keep_factor &&
        (st = keep_stats(k, X, n, d, Y, p, m, alpha, pl, err)) != KM_OK)
        goto out;

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
        km_info_add1(pi, "keep_factor", KM_INFO_BOOLEAN,
                     params->keep_factor != 0) != KM_OK ||
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
    km_model_free(model);
    krr_free(pl);
    free(v);
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
    for (int c = 0; c < k->n_columns; c++)
        if ((size_t)k->columns[c] >= d)
            return km_error_set(err, KM_EINVAL, "kernel.columns lists column "
                                "%d, but X has %zu column%s", k->columns[c],
                                d, d == 1 ? "" : "s");
    /* a leaf on chosen columns: its frequencies, put at its columns */
    double *tmp = NULL;
    if (k->n_columns &&
        !(tmp = malloc((size_t)k->n_columns * sizeof *tmp)))
        return km_error_set(err, KM_ENOMEM, "out of memory drawing the "
                            "random features");
    km_rng r = {seed};
    for (size_t i = 0; i < D; i++) {
        km_kernel_spectral_draw(k, &r, d, W + i * d, tmp);
        b[i] = M_PI * (1.0 + km_rng_uniform(&r));
    }
    free(tmp);
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

/* ------------------------------------------------------------ updates
 *
 * A factor-form model extends its factor by a block (km_chol_update.c):
 * with z = L^-1 Y (the old rows' part is L^T C), the new coefficients
 * are L'^-T z', and rkhs_norm_sq = C^T Y - alpha C^T C = |z|^2 - alpha
 * |C|^2 per output.
 *
 * A nystrom statistics model keeps its centres: the new rows' sums are
 * added to G and KtY, and the coefficients re-solved by Falkon's CG on
 * the sums (no pass over rows), warm-started at the old ones, to the
 * model's cg_tol relative to |B^T K_nm^T Y| as a fit's: the answer is a
 * fit's with these centres on all the rows, to that tolerance. */

static const char *update_refusal(const km_model *m)
{
    const krr_payload *p = km_model_payload(m);
    return p->form == KRR_FORM_FACTOR || p->form == KRR_FORM_NYS
               ? NULL
               : "a krr model keeps its factor (exact) or its normal "
                 "equations' sums (nystrom) only when fitted with "
                 "params.keep_factor";
}

/* The nystrom update's peak: the new payload (centres, norms,
 * coefficients, G, KtY), a block of K_nm (km_nys_stats_add), Falkon's
 * two m x m factors, eight m x outputs blocks and its outputs' vectors. */
static size_t update_nys_bytes(const km_model *m, size_t k)
{
    uint64_t c = km_model_n_samples(m), q = km_model_n_outputs(m);
    uint64_t b = km_nys_block_rows(k, c);
    uint64_t v = km_mul_sat(c, km_add_sat(km_model_n_features(m) + 1,
                                          km_add_sat(3 * c, 10 * q)));
    v = km_add_sat(v, km_mul_sat(b, c));
    v = km_add_sat(v, 8 * q);
    return (size_t)km_mul_sat(v, sizeof(double));
}

/* The new payload (X, coefficients, norms, L), z and the kernel block of
 * the new rows. */
static size_t update_bytes(const km_model *m, size_t k)
{
    if (((const krr_payload *)km_model_payload(m))->form == KRR_FORM_NYS)
        return update_nys_bytes(m, k);
    uint64_t N = km_add_sat(km_model_n_samples(m), k);
    uint64_t no = km_model_n_outputs(m);
    uint64_t v = km_factor_grow_values(
        ((const krr_payload *)km_model_payload(m))->F, k);
    v = km_add_sat(v, km_mul_sat(N, km_model_n_features(m) + 1));
    v = km_add_sat(v, km_mul_sat(2 * N, no));
    v = km_add_sat(v, km_mul_sat(k, k));
    return (size_t)km_mul_sat(v, sizeof(double));
}

static km_status update_norms(km_model *nm, const double *Z, double alpha)
{
    size_t N = km_model_n_samples(nm), q = km_model_n_outputs(nm);
    const double *C = ((const krr_payload *)km_model_payload(nm))->coef;
    double *v = malloc(q * sizeof *v);
    if (!v)
        return KM_ENOMEM;
    for (size_t j = 0; j < q; j++) {
        km_ksum s = {0, 0};
        for (size_t i = 0; i < N; i++) {
            km_ksum_add(&s, Z[i * q + j] * Z[i * q + j]);
            km_ksum_add(&s, -alpha * C[i * q + j] * C[i * q + j]);
        }
        v[j] = km_ksum_get(&s);
    }
    km_status st = km_info_set(km_model_training_mut(nm), "rkhs_norm_sq",
                               KM_INFO_NUMBER, q > 1, v, q);
    free(v);
    return st;
}

/* The new model around np (the model's, or freed) with Falkon's
 * figures. */
static km_status update_nys_model(const km_model *m, krr_payload *np,
                                  const double *rkhs, size_t its,
                                  double worst, km_model **out,
                                  km_error *err)
{
    size_t c = km_model_n_samples(m), q = km_model_n_outputs(m);
    km_model *nm = NULL;
    km_status st = km_update_model_create(m, c, np, &nm, err);
    if (st != KM_OK)
        return st;
    km_info *ti = km_model_training_mut(nm);
    double fi = (double)its;
    if (km_info_set(ti, "rkhs_norm_sq", KM_INFO_NUMBER, q > 1, rkhs, q) !=
            KM_OK ||
        km_info_set(ti, "iterations", KM_INFO_INTEGER, 0, &fi, 1) != KM_OK ||
        km_info_set(ti, "residual", KM_INFO_NUMBER, 0, &worst, 1) != KM_OK) {
        km_model_free(nm);
        return km_error_set(err, KM_ENOMEM, "out of memory for the model");
    }
    *out = nm;
    return KM_OK;
}

/* The nystrom statistics' update (see above). */
static km_status update_nys(const km_model *m, const double *X, size_t k,
                            const double *Y, const km_fit_control *ctl,
                            km_model **out, km_error *err)
{
    const krr_payload *p = km_model_payload(m);
    size_t c = km_model_n_samples(m), d = km_model_n_features(m);
    size_t q = km_model_n_outputs(m), its = 0;
    const km_kernel *ker = km_model_kernel(m);
    double worst = 0, *v = malloc(q * sizeof *v);
    krr_payload *np = calloc(1, sizeof *np);
    km_status st = KM_OK;
    if (!v || !np || !(np->X = km_doubles_dup(p->X, c * d)) ||
        !(np->xn = km_doubles_dup(p->xn, c)) ||
        !(np->coef = malloc(c * q * sizeof *v)) ||
        !(np->G = km_doubles_dup(p->G, c * c)) ||
        !(np->KtY = km_doubles_dup(p->KtY, c * q))) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for the update");
        goto out;
    }
    *np = (krr_payload){KRR_FORM_NYS, np->X, np->coef, np->xn, NULL, NULL,
                        p->alpha, np->G, np->KtY, p->rows + k};
    if (np->rows > ((uint64_t)1 << 53)) {
        st = km_error_set(err, KM_EINVAL, "a model of more than 2^53 rows");
        goto out;
    }
    if ((st = km_nys_stats_add(ker, X, k, d, Y, q, np->X, np->xn, c, np->G,
                               np->KtY, err)) != KM_OK)
        goto out;
    if (km_progress(ctl, 0.1)) {
        st = km_error_set(err, KM_ECANCELLED, "update cancelled");
        goto out;
    }
    km_falkon fk = {ker, NULL, (size_t)np->rows, d, NULL, q, np->X, np->xn,
                    c, p->alpha, km_model_param(m, "cg_tol", 1e-7),
                    (size_t)km_model_param(m, "cg_max_iter", 100), ctl, 0.15,
                    np->G, np->KtY, p->coef};
    if ((st = km_falkon_solve(&fk, np->coef, v, &its, &worst, NULL, NULL,
                              err)) != KM_OK)
        goto out;
    st = update_nys_model(m, np, v, its, worst, out, err);
    np = NULL; /* the model's, or freed */
out:
    free(v);
    krr_free(np);
    return st;
}

static km_status update(const km_model *m, const double *X, size_t k,
                        const double *Y, const km_fit_control *ctl,
                        km_model **out, km_error *err)
{
    const krr_payload *p = km_model_payload(m);
    if (p->form == KRR_FORM_NYS)
        return update_nys(m, X, k, Y, ctl, out, err);
    size_t n = km_model_n_samples(m), d = km_model_n_features(m), N = n + k;
    size_t q = km_model_n_outputs(m);
    krr_payload *np = calloc(1, sizeof *np);
    double *Z = malloc(km_mul3(N, q, sizeof *Z));
    km_model *nm = NULL;
    km_status st = KM_OK;
    if (!np || !Z || !(np->coef = malloc(N * q * sizeof *np->coef)) ||
        !(np->X = km_rows_concat(p->X, n, X, k, d)) ||
        !(np->xn = km_sqnorms(np->X, N, d))) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for the update");
        goto out;
    }
    np->form = KRR_FORM_FACTOR;
    np->alpha = p->alpha;
    if ((st = km_chol_extend(km_model_kernel(m), 1.0, p->alpha, p->F, p->X,
                             d, X, k, &np->F, err)) != KM_OK)
        goto out;
    if (km_progress(ctl, 0.8)) {
        st = km_error_set(err, KM_ECANCELLED, "update cancelled");
        goto out;
    }
    memcpy(Z, p->coef, n * q * sizeof *Z);
    km_factor_lt(p->F, Z, q);
    memcpy(Z + n * q, Y, k * q * sizeof *Z);
    km_factor_forward(np->F, n, Z, q);
    memcpy(np->coef, Z, N * q * sizeof *Z);
    km_factor_back(np->F, np->coef, q);
    if (!km_all_finite(np->coef, N * q)) {
        st = km_error_set(err, KM_ENOTPD, "the update gave non-finite "
                          "coefficients: the kernel matrix is numerically "
                          "singular; refit with a larger params.alpha");
        goto out;
    }
    st = km_update_model_create(m, N, np, &nm, err);
    np = NULL; /* the model's, or freed */
    if (st == KM_OK && update_norms(nm, Z, p->alpha) != KM_OK) {
        km_model_free(nm);
        st = km_error_set(err, KM_ENOMEM, "out of memory for the model");
    }
    if (st == KM_OK)
        *out = nm;
out:
    free(Z);
    krr_free(np);
    return st;
}

static const km_algo_update update_entry = {
    .what = "krr models fitted with params.keep_factor",
    .refusal = update_refusal,
    .bytes = update_bytes,
    .update = update,
};

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
 * bytes), then that or W, b, w: the two sizes. Version 7: also the factor
 * form, alpha (8 bytes) after the form and L's triangle at the end.
 * Version 10: also the nystrom statistics, alpha and the rows (16 bytes)
 * after the form, G's triangle and KtY at the end. */
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
    if (format >= 7) {
        uint64_t f = km_add_sat(km_add_sat(*lo, 8),
                                km_f64s_bytes(km_tri_values(ns)));
        *hi = f > *hi ? f : *hi;
    }
    if (format >= 10) {
        uint64_t f = km_add_sat(km_add_sat(*lo, 16),
                                km_f64s_bytes(km_tri_values(ns)));
        f = km_add_sat(f, km_f64s_bytes(km_mul_sat(ns, no)));
        *hi = f > *hi ? f : *hi;
    }
    if (format >= KM_FORMAT_BLOCKS) { /* the factor form's blocks */
        uint64_t a = km_add_sat(*lo, 8), b;
        km_factor_refs_range(ns, &a, &b);
        *hi = b > *hi ? b : *hi;
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
    if (((const km_krr_params *)params)->keep_factor)
        return "krr with params.keep_factor cannot run distributed (the "
               "factor stays on the cluster)";
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
#define EXACT .only_if = "solver", .only_value = KM_KRR_SOLVER_EXACT, \
    .only_also = 1u << KM_KRR_SOLVER_AUTO
#define NYSTROM_OR_RFF ONLY_NYSTROM, \
    .only_also = 1u << KM_KRR_SOLVER_AUTO | 1u << KM_KRR_SOLVER_RFF

static const km_param krr_rows[] = {
    {.key = "alpha", .type = KM_PARAM_NUMBER,
     KM_PARAM_FIELD(km_krr_params, alpha),
     KM_PARAM_POSITIVE, .doc = "ridge added to the kernel matrix's diagonal"},
    {.key = "solver", .type = KM_PARAM_CHOICE, .solver = 1,
     KM_PARAM_FIELD(km_krr_params, solver),
     .choices = &km_krr_solver_choices,
     .doc = "exact: Cholesky of the n x n kernel matrix; nystrom: m "
            "centres and preconditioned conjugate gradients (Falkon), "
            "memory O(m^2 + n); rff: D random Fourier features and a "
            "D x D ridge solve, memory O(D^2), kernels rbf, laplacian "
            "and laplacian_l2 only; auto: exact when its estimate is at "
            "most half the server's memory budget, else nystrom "
            "(training.solver says which)"},
    {.key = "precision", .type = KM_PARAM_CHOICE,
     KM_PARAM_FIELD(km_krr_params, precision),
     .choices = &km_krr_precision_choices, EXACT,
     .doc = "exact and auto only: mixed (default): factor K + alpha I in "
            "float and refine in double to the double solve's backward "
            "error, falling back to the double factor when refinement "
            "stalls (training.precision says which factor the solution "
            "came from); double: the double factor only"},
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
    {.key = "keep_factor", .type = KM_PARAM_BOOL,
     KM_PARAM_FIELD(km_krr_params, keep_factor),
     .only_if = "solver", .only_value = KM_KRR_SOLVER_EXACT,
     .only_also = 1u << KM_KRR_SOLVER_NYSTROM,
     .doc = "exact and nystrom: keep what POST /v1/models/{name}/update "
            "needs to add rows without a refit. exact: the double Cholesky "
            "factor of K + alpha I (8 n^2 bytes more, and a double "
            "factorisation: precision is not read); nystrom: the normal "
            "equations' sums K_nm^T K_nm and K_nm^T y of the centres "
            "(8 m (m + outputs) bytes more, and one more pass over the "
            "rows at fit)"},
    {0},
};
_Static_assert(sizeof(km_krr_solver) == sizeof(int) &&
                   sizeof(km_krr_precision) == sizeof(int) &&
                   sizeof(km_krr_centre_rule) == sizeof(int),
               "KM_PARAM_CHOICE fields are int-sized");
_Static_assert(sizeof(uint64_t) == sizeof(size_t),
               "KM_PARAM_INTEGER fields are int or size_t sized");

static const km_param_set param_set = {krr_rows, sizeof(km_krr_params),
                                        params_default};

/* dual: scikit-learn's KernelRidge X_fit_ and dual_coef_ (n x outputs);
 * nystrom keeps its centres as the training rows (centres_); rff:
 * RBFSampler's random_weights_ (d x D) and random_offset_, and the
 * coefficients of the D features (coef_, D x outputs). */
static size_t krr_coefs(const km_model *m, km_coef *out)
{
    const krr_payload *p = km_model_payload(m);
    size_t n = km_model_n_samples(m), d = km_model_n_features(m);
    size_t q = km_model_n_outputs(m);
    if (p->form == KRR_FORM_RFF) {
        out[0] = km_coef_transposed(
            km_coef_f64("random_weights_", p->X, n, d, 1));
        out[1] = km_coef_f64("random_offset_", p->b, n, 0, 1);
        out[2] = km_coef_f64("coef_", p->coef, n, q, 1);
        return 3;
    }
    int nys = km_info_find(km_model_params(m), "n_centres") != NULL;
    out[0] = km_coef_input_rows(m, nys ? "centres_" : "X_fit_", p->X, n, d,
                                nys ? KM_COEF_ROWS_CENTRES : KM_COEF_ROWS_ALL);
    out[1] = km_coef_f64("dual_coef_", p->coef, n, q, 1);
    return 2;
}

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
    .factor_blocks = krr_factor_blocks,
    .bytes = krr_bytes,
    .load_bytes = krr_load_bytes,
    .target = KM_TARGET_ROWS,
    .solver_needs = solver_needs,
    .check_kernel = check_kernel,
    .search = &search,
    .mpi = &mpi,
    .coefs = krr_coefs,
    .update = &update_entry,
};
