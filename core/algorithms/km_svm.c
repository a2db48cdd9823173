/*
 * km_svm.c - C-SVC (one-vs-one) and epsilon-SVR on top of the SMO solver
 * of km_smo.c: parameter checks, the model payload's file form, batched
 * prediction and the descriptors. The fits are km_svm_fit.c's, the
 * payload's release and getters km_svm_payload.c's.
 *
 * C-SVC: the rows are grouped by class (stable), and for each pair a < b
 * the binary problem with class a as +1 (its rows first) and class b as
 * -1 is solved with C_t = C w[class]. This is LIBSVM's construction, so
 * the decision value of pair (a, b) is positive for class a. When there
 * are many solves (several pairs, or probability's cross-validation) and
 * the Gram of all rows takes at most half of cache_mb, it is computed
 * once (km_gram_sym) and every solve's column cache gathers from it;
 * otherwise each solve's cache computes its columns. A caller may hand
 * a fit the Gram of a superset of its rows (km_svm_fit_shared: km_search's
 * folds of one kernel share one Gram of all rows); the solves, svc's and
 * svr's, then gather from it through an index map. Such a Gram (DSYRK)
 * rounds differently from the columns a solve computes, so a fit agrees
 * with one without it to the solver's tolerance, as with svc's own Gram.
 * With params.solver screened (km_svm_screen.c) the pairs' SMO runs on
 * working sets a nystrom screen picks instead, filling the same tables
 * (the same optimum); auto picks exact or screened
 * (km_svm_resolve_solver); nystrom (km_svm_nys.c) builds its own form.
 * With probability, each pair first runs LIBSVM's 5-fold
 * cross-validation (folds shuffled by core's one PRNG, km_rng, with a fixed seed) and fits
 * Platt's sigmoid to the held-out decision values.
 *
 * epsilon-SVR: 2n variables a+ (y = +1, p = eps - y_i) and a- (y = -1,
 * p = eps + y_i) over the same n points; coef_i = a+_i - a-_i.
 *
 * The model keeps only the support vectors (copied), grouped by class,
 * with LIBSVM's coefficient layout: a support vector of class c has k-1
 * coefficients, one per other class b, at column b if b < c else b-1.
 * Prediction computes the kernel between a block of rows and all support
 * vectors once, then each class's block of it times that class's
 * coefficients (one GEMM per class) gives every pair's two halves. A
 * large prediction runs its blocks (about 2 MiB each, so that the three
 * passes over one stay in cache) on as many workers as CPUs, BLAS on one
 * thread per call meanwhile.
 *
 * Invariants of a payload: sum n_support = nsv; rho and prob arrays have
 * one entry per pair (SVR: one rho, no prob); sv_index[i] < n_samples.
 *
 * Thread-safety: reentrant; a fitted model is only read.
 */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../base/km_base_internal.h"
#include "../kernels/km_kernel_internal.h"
#include "../model/km_model_internal.h"
#include "../solvers/km_solvers_internal.h"
#include "../solvers/km_svm_solve.h"
#include "km_svm.h"
#include "km_svm_payload.h"
#include "km_svm_prob.h"

#define MIN_PROB 1e-7
#define MAX_CLASSES KM_MODEL_MAX_CLASSES

/* ------------------------------------------------------------ params */

km_svm_params km_svm_params_default(void)
{
    km_svm_params p = {1.0, 0.1, 1e-3, 200.0, 1, 0, NULL, 0,
                       KM_SVM_SOLVER_EXACT, 0, 0, KM_KRR_CENTRES_UNIFORM,
                       KM_SVM_PRECISION_FLOAT64, 0};
    return p;
}

KM_CHOICES_DEFINE(km_svm_solver_choices, KM_SVM_SOLVER_MAP,
                  KM_SVM_SOLVER_COUNT);
KM_CHOICES_DEFINE(km_svm_precision_choices, KM_SVM_PRECISION_MAP,
                  KM_SVM_PRECISION_COUNT);

const char *km_svm_solver_name(km_svm_solver s)
{
    return km_choice_name(&km_svm_solver_choices, (int)s);
}

const char *km_svm_precision_name(km_svm_precision p)
{
    return km_choice_name(&km_svm_precision_choices, (int)p);
}

static int positive(double v)
{
    return v > 0 && isfinite(v);
}

km_status km_svm_check(const km_svm_params *p, km_algorithm algo,
                       size_t n_classes, km_error *err)
{
    if (algo != KM_ALGO_SVC && algo != KM_ALGO_SVR)
        return km_error_set(err, KM_EINVAL,
                            "SVM parameters apply to svc and svr only");
    if (!positive(p->C))
        return km_error_set(err, KM_EINVAL,
                            "params.C must be a finite number > 0");
    if (algo == KM_ALGO_SVR && !(p->epsilon >= 0 && isfinite(p->epsilon)))
        return km_error_set(err, KM_EINVAL,
                            "params.epsilon must be a finite number >= 0");
    if (!positive(p->tol))
        return km_error_set(err, KM_EINVAL,
                            "params.tol must be a finite number > 0");
    if (!positive(p->cache_mb) || p->cache_mb > 1048576.0 * 1024)
        return km_error_set(err, KM_EINVAL,
                            "params.cache_mb must be a finite number > 0 "
                            "(at most 2^30)");
    char list[64];
    if ((unsigned)p->solver >= KM_SVM_SOLVER_COUNT) {
        km_choice_list(&km_svm_solver_choices, " or ", list, sizeof list);
        return km_error_set(err, KM_EINVAL, "params.solver must be %s", list);
    }
    if (p->solver != KM_SVM_SOLVER_EXACT) {
        const char *name = km_svm_solver_name(p->solver);
        if (algo == KM_ALGO_SVR)
            return km_error_set(err, KM_EINVAL, "params.solver %s "
                                "applies to svc only", name);
        if (p->probability && p->solver != KM_SVM_SOLVER_AUTO)
            return km_error_set(err, KM_EINVAL, "params.probability is not "
                                "available with params.solver %s", name);
        if (p->seed > ((uint64_t)1 << 53))
            return km_error_set(err, KM_EINVAL,
                                "params.seed must be at most 2^53");
    }
    if (p->keep_rows && p->solver != KM_SVM_SOLVER_EXACT &&
        p->solver != KM_SVM_SOLVER_AUTO)
        return km_error_set(err, KM_EINVAL, "params.keep_rows applies to "
                            "params.solver exact (or auto, which then runs "
                            "exact), not %s",
                            km_svm_solver_name(p->solver));
    if (p->solver == KM_SVM_SOLVER_NYSTROM) {
        km_status st = km_nys_check_rule(p->centres, err);
        if (st != KM_OK)
            return st;
        if ((unsigned)p->precision >= KM_SVM_PRECISION_COUNT) {
            km_choice_list(&km_svm_precision_choices, " or ", list,
                           sizeof list);
            return km_error_set(err, KM_EINVAL, "params.precision must be "
                                "%s", list);
        }
    }
    if (algo == KM_ALGO_SVR) {
        if (p->class_weight)
            return km_error_set(err, KM_EINVAL,
                                "params.class_weight applies to svc only");
        if (p->probability)
            return km_error_set(err, KM_EINVAL,
                                "params.probability applies to svc only");
        return KM_OK;
    }
    if (n_classes < 2)
        return km_error_set(err, KM_EPROBLEM,
                            "y has %zu distinct class%s; svc needs at least 2",
                            n_classes, n_classes == 1 ? "" : "es");
    if (n_classes > MAX_CLASSES)
        return km_error_set(err, KM_EINVAL,
                            "y has %zu classes; svc allows at most %zu",
                            n_classes, MAX_CLASSES);
    if (p->class_weight)
        for (size_t c = 0; c < n_classes; c++)
            if (!positive(p->class_weight[c]))
                return km_error_set(err, KM_EINVAL,
                                    "params.class_weight[%zu] must be a "
                                    "finite number > 0", c);
    return KM_OK;
}

km_status km_svm_check_centres(const km_svm_params *p, size_t n_samples,
                               size_t n_classes, km_error *err)
{
    if (p->solver == KM_SVM_SOLVER_EXACT)
        return KM_OK;
    size_t m = km_svm_centres(p, n_samples);
    if (m < n_classes)
        return km_error_set(err, KM_EPROBLEM,
                            "params.n_centres is %zu%s but y has %zu "
                            "classes: at least one centre per class", m,
                            p->n_centres ? "" : " (the default)", n_classes);
    return km_nys_check_centres(p->n_centres, n_samples, err);
}

/* Kernel storage of a solve of nv variables: the column cache holds at
 * most every column, at most the budget, at least two columns. */
static size_t kernel_bytes(size_t nv, size_t budget)
{
    size_t full = km_mul3(nv, nv, sizeof(double)), two = 2 * nv * 8;
    size_t kb = full && full < budget ? full : budget;
    return kb > two ? kb : two;
}

size_t km_svc_fit_bytes(size_t n, size_t d, size_t n_classes,
                        const km_svm_params *p)
{
    size_t k = n_classes < 2 ? 2 : n_classes, budget = km_svm_budget_bytes(p);
    km_svm_solver run = km_svm_resolve_solver(p, n, k);
    if (run == KM_SVM_SOLVER_NYSTROM)
        return km_svc_nys_fit_bytes(n, d, k, p);
    if (run == KM_SVM_SOLVER_SCREENED)
        return km_svc_screen_fit_bytes(n, d, k, p);
    /* Grouped X, the pair's rows and the cache's two copies of them; the
     * coefficient table; solver and cross-validation workspace per
     * variable; the model's copies. */
    size_t b = 4 * n * d * 8 + n * (k - 1) * 8 + 20 * n * 8;
    b += n * d * 8 + n * (k - 1) * 8 + n * 8; /* support vectors */
    /* Without probability the pairs run on up to svc_most_workers()
     * workers, each with its own pair's rows, their two copies and the
     * solver's workspace (the caches split the budget between them). */
    if (!p->probability)
        b += (svc_most_workers() - 1) * (3 * n * d * 8 + 20 * n * 8);
    if (p->keep_rows) /* the model's kept rows, the grouped gradients
                         and each worker's pair gradients */
        b += (size_t)km_svm_keep_bytes(n, d, k) + 2 * n * (k - 1) * 8 +
             svc_most_workers() * 2 * n * 8;
    /* The shared Gram and the caches share the budget; a pair's cache
     * needs at most its whole Q, and at least two columns. */
    size_t gram = km_mul3(n, n, sizeof(double));
    if ((k > 2 || p->probability) && gram && gram <= budget / 2)
        return b + gram + kernel_bytes(n, budget - gram);
    return b + kernel_bytes(n, budget);
}

size_t km_svm_fit_bytes(size_t n, size_t d, const km_svm_params *p)
{
    /* epsilon-SVR: 2n variables over n points; the cache keeps a copy of
     * the points per variable. Also the bound of a binary C-SVC. */
    size_t svr = 4 * n * d * 8 + 2 * n * 16 * 8 + n * d * 8 + 2 * n * 8 +
                 kernel_bytes(2 * n, km_svm_budget_bytes(p));
    size_t svc = km_svc_fit_bytes(n, d, 2, p);
    if (p->keep_rows) /* the model's kept rows, the 2n gradients */
        svr += (size_t)km_svm_keep_bytes(n, d, 0) + 4 * n * 8;
    return svr > svc ? svr : svc;
}

/* ------------------------------------------------------------ payload */

/* The descriptors' free_payload (km_svm_payload_free, km_svm_payload.c). */
static void payload_free(void *v)
{
    km_svm_payload_free(v);
}

static void payload_save(const void *v, const km_model *m, km_writer *w)
{
    const svm_payload *p = v;
    size_t d = km_model_n_features(m);
    if (p->form == SVC_FORM_NYSTROM) { /* version 4: form, k, m, Z, coef, rho */
        km_write_u32(w, SVC_FORM_NYSTROM);
        km_write_u64(w, p->k);
        km_write_u64(w, p->nsv);
        km_write_f64s(w, p->sv, p->nsv * d);
        km_write_f64s(w, p->coef, p->nsv * n_coef(p));
        km_write_f64s(w, p->rho, n_pairs(p->k));
        return;
    }
    /* kept rows: version 9, whose svc payload starts with its form */
    if (p->kn && p->k)
        km_write_u32(w, SVC_FORM_DUAL);
    km_write_u64(w, p->k);
    km_write_u64(w, p->nsv);
    km_write_i32s(w, p->n_support, p->k);
    km_write_i32s(w, p->sv_index, p->nsv);
    km_write_f64s(w, p->sv, p->nsv * d);
    km_write_f64s(w, p->coef, p->nsv * n_coef(p));
    km_write_f64s(w, p->rho, p->k ? n_pairs(p->k) : 1);
    km_write_u32(w, (p->probA != NULL) | (p->vote ? 2u : 0u) |
                        (p->kn ? 4u : 0u));
    if (p->probA) {
        km_write_f64s(w, p->probA, n_pairs(p->k));
        km_write_f64s(w, p->probB, n_pairs(p->k));
    }
    if (p->vote)
        km_write_i32s(w, p->vote, p->k);
    if (p->kn)
        km_svm_keep_save(p, w);
}

/* The format version a model needs: 9 for kept rows (params.keep_rows);
 * 4 for svc's nystrom form (its payload starts with the form); 3 for a
 * dual payload with a vote order (older readers refuse its flags rather
 * than break ties another way); else the default. */
static uint32_t svc_file_format(const void *payload)
{
    const svm_payload *p = payload;
    return p->kn ? 9u
           : p->form == SVC_FORM_NYSTROM ? 4u
           : p->vote                     ? 3u
                                         : 0u;
}

static uint32_t svr_file_format(const void *payload)
{
    return ((const svm_payload *)payload)->kn ? 9u : 0u;
}

/* Whether v[0..k) is a permutation of 0..k-1. */
static int is_permutation(const int *v, size_t k)
{
    unsigned char *seen = calloc(k ? k : 1, 1);
    int ok = seen != NULL;
    for (size_t i = 0; ok && i < k; i++) {
        ok = v[i] >= 0 && (size_t)v[i] < k && !seen[v[i]];
        if (ok)
            seen[v[i]] = 1;
    }
    free(seen);
    return ok;
}

static km_status payload_load(km_reader *r, const km_model *m, int svc,
                              void **out, km_error *err)
{
    const char *what = km_algorithm_name(km_model_algorithm(m));
    size_t d = km_model_n_features(m), ns = km_model_n_samples(m);
    size_t kmax = (size_t)km_max_classes(ns);
    svm_payload *p = calloc(1, sizeof *p);
    if (!p)
        return km_error_set(err, KM_ENOMEM, "out of memory reading a model");
    p->d = d;
    uint64_t k = km_read_u64(r), nsv = km_read_u64(r);
    /* Sizes are checked before anything is allocated from them (the
     * readers also check each count against the bytes left). Every class
     * has a training row, so k <= n_samples. */
    if (r->failed || (svc ? k < 2 || k > kmax : k != 0) || nsv > ns ||
        (nsv && d > r->left / 8 / nsv)) {
        payload_free(p);
        return km_error_set(err, KM_ECORRUPT, "model file: %s with %llu "
                            "classes and %llu support vectors for %zu "
                            "training rows", what, (unsigned long long)k,
                            (unsigned long long)nsv, ns);
    }
    if (svc && km_model_n_labels(m) != k) {
        payload_free(p);
        return km_error_set(err, KM_ECORRUPT, "model file: svc with %llu "
                            "classes has %zu labels", (unsigned long long)k,
                            km_model_n_labels(m));
    }
    p->k = (size_t)k;
    p->nsv = (size_t)nsv;
    size_t npair = p->k ? n_pairs(p->k) : 1;
    if (!(p->n_support = km_read_i32s(r, p->k)) ||
        !(p->sv_index = km_read_i32s(r, p->nsv)) ||
        !(p->sv = km_read_f64s(r, p->nsv * d)) ||
        !(p->coef = km_read_f64s(r, p->nsv * n_coef(p))) ||
        !(p->rho = km_read_f64s(r, npair)))
        goto failed;
    /* bit 0: probability; bit 1 (format 3): a vote order follows; bit 2
     * (format 9): the kept rows follow */
    uint32_t flags = km_read_u32(r), has_prob = flags & 1;
    uint32_t fv = km_model_file_format(m);
    uint32_t most = (fv >= 3 ? 3 : 1) | (fv >= 9 ? 4 : 0);
    if (r->failed || (flags & ~most) || ((flags & 3) && !svc))
        goto corrupt;
    if (has_prob && (!(p->probA = km_read_f64s(r, npair)) ||
                     !(p->probB = km_read_f64s(r, npair))))
        goto failed;
    if ((flags & 2) && !(p->vote = km_read_i32s(r, p->k)))
        goto failed;
    km_status kst;
    if ((flags & 4) && (kst = km_svm_keep_load(r, p, ns, err)) != KM_OK) {
        payload_free(p);
        return kst;
    }
    if (p->vote && !is_permutation(p->vote, p->k)) {
        payload_free(p); /* the message reads k, not the freed p->k */
        return km_error_set(err, KM_ECORRUPT, "model file: svc vote order "
                            "is not a permutation of the %zu classes",
                            (size_t)k);
    }
    size_t total = 0;
    for (size_t c = 0; c < p->k; c++) {
        if (p->n_support[c] < 0)
            goto corrupt;
        total += (size_t)p->n_support[c];
    }
    if (svc && total != p->nsv) {
        payload_free(p);
        return km_error_set(err, KM_ECORRUPT, "model file: svc support "
                            "counts add up to %zu, not %llu", total,
                            (unsigned long long)nsv);
    }
    for (size_t i = 0; i < p->nsv; i++)
        if (p->sv_index[i] < 0 || (size_t)p->sv_index[i] >= ns) {
            int row = p->sv_index[i];
            payload_free(p);
            return km_error_set(err, KM_ECORRUPT, "model file: %s support "
                                "vector %zu has row index %d outside "
                                "0..%zu", what, i, row, ns - 1);
        }
    /* What a prediction computes with must be finite, as a fit makes it. */
    if (!km_all_finite(p->sv, p->nsv * d) ||
        !km_all_finite(p->coef, p->nsv * n_coef(p)) ||
        !km_all_finite(p->rho, npair) ||
        (p->probA && (!km_all_finite(p->probA, npair) ||
                      !km_all_finite(p->probB, npair)))) {
        payload_free(p);
        return km_error_set(err, KM_ECORRUPT, "model file: %s support "
                            "vectors, coefficients, intercepts or sigmoids "
                            "are not all finite numbers", what);
    }
    if (!(p->svn = km_sqnorms(p->sv, p->nsv, d))) {
        payload_free(p);
        return km_error_set(err, KM_ENOMEM, "out of memory reading a model");
    }
    *out = p;
    return KM_OK;
failed:
    if (!r->failed) { /* a reader returns NULL on a short read or no memory */
        payload_free(p);
        return km_error_set(err, KM_ENOMEM, "out of memory reading a model");
    }
corrupt:
    payload_free(p);
    return km_error_set(err, KM_ECORRUPT, "model file: bad %s payload", what);
}

/* The nystrom form (after its tag): k, m (= n_samples), the centres,
 * the m x P coefficients, P intercepts. */
static km_status nys_load(km_reader *r, const km_model *m, void **out,
                          km_error *err)
{
    size_t d = km_model_n_features(m), ns = km_model_n_samples(m);
    uint64_t k = km_read_u64(r), nc = km_read_u64(r);
    if (r->failed || k < 2 || k > (uint64_t)km_max_classes(ns) ||
        km_model_n_labels(m) != k || nc != ns)
        return km_error_set(err, KM_ECORRUPT, "model file: svc nystrom form "
                            "with %llu classes and %llu centres for %zu "
                            "labels and %zu training rows",
                            (unsigned long long)k, (unsigned long long)nc,
                            km_model_n_labels(m), ns);
    size_t npair = n_pairs((size_t)k);
    if (ns && (d > r->left / 8 / ns || npair > r->left / 8 / ns))
        return km_error_set(err, KM_ECORRUPT, "model file: svc nystrom "
                            "payload larger than the file");
    svm_payload *p = calloc(1, sizeof *p);
    if (!p)
        return km_error_set(err, KM_ENOMEM, "out of memory reading a model");
    p->form = SVC_FORM_NYSTROM;
    p->k = (size_t)k;
    p->nsv = ns;
    p->d = d;
    if (!(p->sv = km_read_f64s(r, ns * d)) ||
        !(p->coef = km_read_f64s(r, ns * npair)) ||
        !(p->rho = km_read_f64s(r, npair))) {
        payload_free(p);
        return km_error_set(err, r->failed ? KM_ECORRUPT : KM_ENOMEM,
                            "model file: bad svc nystrom payload");
    }
    if (!km_all_finite(p->sv, ns * d) || !km_all_finite(p->coef, ns * npair) ||
        !km_all_finite(p->rho, npair)) {
        payload_free(p);
        return km_error_set(err, KM_ECORRUPT, "model file: svc nystrom "
                            "centres, coefficients or intercepts are not "
                            "all finite numbers");
    }
    if (!(p->svn = km_sqnorms(p->sv, ns, d))) {
        payload_free(p);
        return km_error_set(err, KM_ENOMEM, "out of memory reading a model");
    }
    *out = p;
    return KM_OK;
}

static km_status svc_load(km_reader *r, const km_model *m, void **out,
                          km_error *err)
{
    if (km_model_file_format(m) >= 4) { /* the payload starts with its form */
        uint32_t f = km_read_u32(r);
        if (r->failed || f >= SVC_FORM_COUNT)
            return km_error_set(err, KM_ECORRUPT, "model file: svc payload "
                                "form %u is not 0 (dual) or 1 (nystrom)",
                                (unsigned)f);
        if (f == SVC_FORM_NYSTROM)
            return nys_load(r, m, out, err);
    }
    return payload_load(r, m, 1, out, err);
}

static km_status svr_load(km_reader *r, const km_model *m, void **out,
                          km_error *err)
{
    return payload_load(r, m, 0, out, err);
}

/* The heap of a payload of this form and these sizes: the rows, their
 * norms, the coefficients, rho (and probA, probB) per pair; the dual form
 * also the class counts, row indices and vote order. */
static size_t heap_bytes(unsigned form, uint64_t k, uint64_t nsv, uint64_t d,
                         int prob, int vote)
{
    uint64_t npair = k ? km_n_pairs(k) : 1;
    uint64_t ncoef = form == SVC_FORM_NYSTROM ? npair : k ? k - 1 : 1;
    uint64_t per_row = km_add_sat(d, km_add_sat(ncoef, 1));
    uint64_t b = km_mul_sat(km_mul_sat(nsv, per_row), 8);
    b = km_add_sat(b, km_mul_sat(npair, 8 * (prob ? 3 : 1)));
    if (form != SVC_FORM_NYSTROM)
        b = km_add_sat(b, 4 * (k + nsv + (vote ? k : 0)));
    return (size_t)km_add_sat(b, sizeof(svm_payload));
}

/* heap_bytes and the kept rows (kn of them). */
static size_t all_bytes(unsigned form, uint64_t k, uint64_t nsv, uint64_t d,
                        int prob, int vote, uint64_t kn)
{
    return (size_t)km_add_sat(heap_bytes(form, k, nsv, d, prob, vote),
                              kn ? km_svm_keep_bytes(kn, d, k) : 0);
}

size_t km_svm_dual_bytes(size_t k, size_t nsv, size_t d, int prob, int vote)
{
    return heap_bytes(SVC_FORM_DUAL, k, nsv, d, prob, vote);
}

static size_t payload_bytes(const void *v, const km_model *m)
{
    (void)m; /* the payload keeps its own sizes */
    const svm_payload *p = v;
    return all_bytes(p->form, p->k, p->nsv, p->d, p->probA != NULL,
                     p->vote != NULL, p->kn);
}

/* The form, k and the row count from the payload's start (clamped as
 * the load checks them); the dual form's flags after its arrays. */
static void load_bytes(km_reader r, const km_model *m, size_t *kept,
                       size_t *peak)
{
    int svc = km_model_algorithm(m) == KM_ALGO_SVC;
    uint64_t ns = km_model_n_samples(m), kmax = km_max_classes(ns);
    unsigned form = SVC_FORM_DUAL;
    if (svc && km_model_file_format(m) >= 4)
        form = km_read_u32(&r) == SVC_FORM_NYSTROM ? SVC_FORM_NYSTROM
                                                   : SVC_FORM_DUAL;
    uint64_t k = km_read_u64(&r), nsv = km_read_u64(&r);
    k = !svc ? 0 : k < 2 ? 2 : k > kmax ? kmax : k;
    nsv = form == SVC_FORM_NYSTROM || nsv > ns ? ns : nsv;
    uint32_t flags = 0;
    if (form == SVC_FORM_DUAL) {
        km_skip_array(&r, 4); /* n_support */
        km_skip_array(&r, 4); /* sv_index */
        for (int i = 0; i < 3; i++)
            km_skip_array(&r, 8); /* sv, coef, rho */
        flags = km_read_u32(&r);
    }
    *kept = all_bytes(form, k, nsv, km_model_n_features(m), flags & 1,
                      (flags & 2) != 0, (flags & 4) ? ns : 0);
    *peak = *kept + (size_t)k; /* and is_permutation's marks */
}


/* ------------------------------------------------------------ prediction */

typedef enum { OUT_DECISION, OUT_LABEL, OUT_PROB } svc_output;

/* Rows per block: about 32 MiB of kernel values and per-class partial
 * sums (k(k-1) a row: 520 KiB at 256 classes), at least one row. */
static size_t block_rows(size_t nsv, size_t k, size_t n)
{
    size_t per_row = nsv + k * (k - 1) + (k ? k * (k - 1) / 2 : 0);
    size_t rows = per_row ? (4u << 20) / per_row : n;
    if (rows < 1)
        rows = 1;
    return rows < n ? rows : n;
}

/* Turns one row's pair decisions into votes, a label, or probabilities. */
static void finish_row(const svm_payload *p, const double *dec, svc_output what,
                       int *label, double *prob, double *work)
{
    const size_t K = p->k;
    if (what == OUT_LABEL) {
        int *votes = (int *)work;
        memset(votes, 0, K * sizeof *votes);
        for (size_t a = 0, pi = 0; a < K; a++)
            for (size_t b = a + 1; b < K; b++, pi++)
                votes[dec[pi] > 0 ? a : b]++;
        /* ties: the first in the vote order, as LIBSVM's first in its
         * label order (ascending index unless read from its file) */
        size_t best = p->vote ? (size_t)p->vote[0] : 0;
        for (size_t r = 1; r < K; r++) {
            size_t c = p->vote ? (size_t)p->vote[r] : r;
            if (votes[c] > votes[best])
                best = c;
        }
        *label = (int)best;
        return;
    }
    double *r = work, *cw = work + K * K;
    for (size_t a = 0, pi = 0; a < K; a++)
        for (size_t b = a + 1; b < K; b++, pi++) {
            double q = km_sigmoid_predict(dec[pi], p->probA[pi], p->probB[pi]);
            q = q < MIN_PROB ? MIN_PROB : q > 1 - MIN_PROB ? 1 - MIN_PROB : q;
            r[a * K + b] = q;
            r[b * K + a] = 1 - q;
        }
    if (K == 2) {
        prob[0] = r[1];
        prob[1] = r[2];
    } else {
        km_pairwise_coupling(K, r, prob, cw);
    }
}

/* svc_run for the nystrom form: per block of rows, the kernel against
 * the m centres times the m x P coefficients, minus rho. */
static km_status nys_run(const km_model *m, const svm_payload *p,
                         const double *X, size_t n, svc_output what,
                         void *out, km_error *err)
{
    const size_t d = km_model_n_features(m), K = p->k, np = n_pairs(K);
    const size_t rows = block_rows(p->nsv + np, 0, n);
    km_status st = KM_OK;
    double *Kb = malloc(rows * p->nsv * sizeof *Kb);
    double *dec = what == OUT_DECISION ? NULL : malloc(rows * np * sizeof *dec);
    double *work = malloc((2 * K * K + K + 1) * sizeof *work);
    if (!Kb || (what != OUT_DECISION && !dec) || !work) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for prediction");
        goto out;
    }
    for (size_t i0 = 0; i0 < n; i0 += rows) {
        const size_t nb = n - i0 < rows ? n - i0 : rows;
        double *D = what == OUT_DECISION ? (double *)out + i0 * np : dec;
        st = km_gram_cross_sn(km_model_kernel(m), X + i0 * d, nb, p->sv,
                              p->nsv, p->svn, d, Kb, p->nsv, err);
        if (st != KM_OK)
            goto out;
        for (size_t r = 0; r < nb; r++)
            for (size_t q = 0; q < np; q++)
                D[r * np + q] = -p->rho[q];
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)nb,
                    (int)np, (int)p->nsv, 1.0, Kb, (int)p->nsv, p->coef,
                    (int)np, 1.0, D, (int)np);
        if (what == OUT_LABEL)
            for (size_t r = 0; r < nb; r++)
                finish_row(p, D + r * np, what, (int *)out + i0 + r, NULL,
                           work);
    }
out:
    free(Kb);
    free(dec);
    free(work);
    return st;
}

/* A prediction's blocks of rows, on one worker or several: what they
 * read and where they write (disjoint rows of out). */
typedef struct svc_pred {
    const km_model *m;
    const svm_payload *p;
    const double *X;
    size_t n, d, rows;        /* rows: per block */
    svc_output what;
    void *out;
} svc_pred;

/* Rows i0 .. i0 + nb - 1 into s->out, with a worker's buffers: Kb (rows
 * x nsv), part (rows x K x (K - 1)), dec (rows x pairs; NULL for
 * decision values) and work (finish_row's). */
static km_status svc_block(const svc_pred *s, size_t i0, size_t nb,
                           double *Kb, double *part, double *dec,
                           double *work, km_error *err)
{
    const svm_payload *p = s->p;
    const size_t d = s->d, K = p->k, K1 = K - 1, npair = n_pairs(K),
                 nsv = p->nsv;
    const svc_output what = s->what;
    double *D = what == OUT_DECISION ? (double *)s->out + i0 * npair : dec;
    km_status st = km_gram_cross_sn(km_model_kernel(s->m), s->X + i0 * d, nb,
                                    p->sv, nsv, p->svn, d, Kb,
                                    nsv ? nsv : 1, err);
    if (st != KM_OK)
        return st;
    /* part[r][c][j]: class c's support vectors against row r, with
     * their coefficients for the j-th other class. */
    memset(part, 0, nb * K * K1 * sizeof *part);
    for (size_t c = 0, s0 = 0; c < K; s0 += (size_t)p->n_support[c++]) {
        size_t nc = (size_t)p->n_support[c];
        if (nc == 0)
            continue;
        if (nb == 1) {
            /* One row: a few dot products, in this thread. An OpenBLAS
             * call takes a lock on its buffer pool, which HTTP threads
             * predicting single rows at once would queue on. */
            const double *kr = Kb + s0, *cf = p->coef + s0 * K1;
            if (K1 == 1) { /* binary: one dot product, vectorised */
                km_vdot_rows(kr, cf, 1, nc, part + c);
                continue;
            }
            for (size_t t = 0; t < nc; t++)
                for (size_t j = 0; j < K1; j++)
                    part[c * K1 + j] += kr[t] * cf[t * K1 + j];
            continue;
        }
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)nb,
                    (int)K1, (int)nc, 1.0, Kb + s0, (int)nsv,
                    p->coef + s0 * K1, (int)K1, 0.0, part + c * K1,
                    (int)(K * K1));
    }
    for (size_t r = 0; r < nb; r++) {
        const double *pr = part + r * K * K1;
        double *dr = D + r * npair;
        for (size_t a = 0, pi = 0; a < K; a++)
            for (size_t b = a + 1; b < K; b++, pi++)
                dr[pi] = pr[a * K1 + b - 1] + pr[b * K1 + a] - p->rho[pi];
        if (what == OUT_LABEL)
            finish_row(p, dr, what, (int *)s->out + i0 + r, NULL, work);
        else if (what == OUT_PROB)
            finish_row(p, dr, what, NULL, (double *)s->out + (i0 + r) * K,
                       work);
    }
    return KM_OK;
}

/* A worker's buffers, in one scratch of svc_scratch_bytes. */
static size_t svc_scratch_bytes(const svc_pred *s)
{
    const size_t K = s->p->k, rows = s->rows;
    return (rows * (s->p->nsv ? s->p->nsv : 1) + rows * K * (K - 1) +
            (s->what == OUT_DECISION ? 0 : rows * n_pairs(K)) +
            2 * K * K + K + 1) * sizeof(double);
}

/* km_blocks_run's block: svc_block with the buffers cut from scratch. */
static km_status svc_pred_block(void *ctx, size_t i0, size_t nb,
                                void *scratch, km_error *err)
{
    const svc_pred *s = ctx;
    const size_t K = s->p->k, rows = s->rows;
    double *Kb = scratch, *part = Kb + rows * (s->p->nsv ? s->p->nsv : 1);
    double *dec = part + rows * K * (K - 1);
    double *work = dec + (s->what == OUT_DECISION ? 0 : rows * n_pairs(K));
    return svc_block(s, i0, nb, Kb, part,
                     s->what == OUT_DECISION ? NULL : dec, work, err);
}

/* Kernel values (rows x support vectors) above which a prediction's
 * blocks run on workers: below it, starting threads costs more than
 * the second core gives. */
#define PRED_PARALLEL_ENTRIES ((size_t)1 << 21)
/* Rows of a block on a worker: about PRED_BLOCK_BYTES of kernel values
 * and partial sums, so that a block's three passes (the GEMM, the
 * kernel's map, the classes' GEMMs) stay in the core's cache. */
#define PRED_BLOCK_BYTES ((size_t)1 << 21)

/* Workers of a prediction: one for small ones and for kernels without
 * inner products (whose blocks are not only BLAS); else as many as the
 * CPUs (svc_most_workers), at most the blocks. */
static size_t pred_workers(const km_model *m, const svm_payload *p,
                           size_t n, size_t rows)
{
    size_t blocks = (n + rows - 1) / rows;
    if (n < 2 || !km_kernel_uses_dots(km_model_kernel(m)) ||
        km_mul3(n, p->nsv, 1) < PRED_PARALLEL_ENTRIES)
        return 1;
    size_t nw = svc_most_workers();
    return nw < blocks ? nw : blocks;
}

static km_status svc_run(const km_model *m, const double *X, size_t n,
                         svc_output what, void *out, const char *op,
                         km_error *err)
{
    km_status st = km_model_expect_input(m, KM_ALGO_SVC, op, X, n, err);
    if (st != KM_OK)
        return st;
    const size_t d = km_model_n_features(m);
    const svm_payload *p = km_model_payload(m);
    if (what == OUT_PROB && !p->probA)
        return km_error_set(err, KM_ECONFLICT,
                            "probability needs a model fitted with "
                            "params.probability = true");
    if (p->form == SVC_FORM_NYSTROM)
        return nys_run(m, p, X, n, what, out, err);
    const size_t K = p->k, per_row = p->nsv + K * (K - 1) + n_pairs(K);
    size_t rows = PRED_BLOCK_BYTES / sizeof(double) / per_row;
    rows = rows < 8 ? 8 : rows;
    svc_pred s = {m, p, X, n, d, rows, what, out};
    /* on workers (BLAS on one thread per call meanwhile), or blocks of
     * block_rows on this thread; each row's values from the same
     * routines either way */
    size_t nw = pred_workers(m, p, n, rows);
    if (nw == 1)
        s.rows = block_rows(p->nsv, K, n);
    return km_blocks_run(n, s.rows, nw, svc_scratch_bytes(&s),
                         svc_pred_block, &s, err);
}

km_status km_svc_predict(const km_model *m, const double *X, size_t n,
                         int *labels, km_error *err)
{
    return svc_run(m, X, n, OUT_LABEL, labels, "predict", err);
}

km_status km_svc_decision(const km_model *m, const double *X, size_t n,
                          double *out, km_error *err)
{
    return svc_run(m, X, n, OUT_DECISION, out, "decision_function", err);
}

km_status km_svc_probability(const km_model *m, const double *X, size_t n,
                             double *out, km_error *err)
{
    return svc_run(m, X, n, OUT_PROB, out, "probability", err);
}

km_status km_svr_predict(const km_model *m, const double *X, size_t n,
                         double *out, km_error *err)
{
    km_status st = km_model_expect_input(m, KM_ALGO_SVR, "predict", X, n, err);
    if (st != KM_OK)
        return st;
    size_t d = km_model_n_features(m);
    const svm_payload *p = km_model_payload(m);
    double bias = -p->rho[0];
    if (p->nsv == 0) {
        for (size_t i = 0; i < n; i++)
            out[i] = bias;
        return KM_OK;
    }
    return km_kernel_expand(km_model_kernel(m), p->sv, p->nsv, d, p->svn,
                            p->coef, 1,
                            &bias, X, n, out, err);
}

/* ------------------------------------------------------------ descriptors */

static void params_default(void *params)
{
    *(km_svm_params *)params = km_svm_params_default();
}

static uint64_t one_output(uint64_t ns)
{
    (void)ns;
    return 1;
}

/* k, nsv, n_support, sv_index, sv, coef, rho, has_prob, probA/B; k
 * classes (svc) or none (svr, k = 0). */
static void payload_range(uint64_t k, uint64_t ns, uint64_t nf, uint64_t *lo,
                          uint64_t *hi)
{
    uint64_t pairs = k ? km_n_pairs(k) : 1, ncoef = k ? k - 1 : 1;
    *lo = 16 + 8 + 4 * (k ? 2 : 0) + 8 + 8 + 8 + 16 + 4 +
          (k ? 2 * 4 : 0); /* and two labels */
    *hi = 16 + 8 + 4 * k + 8 + 4 * ns + 4;
    *hi = km_add_sat(*hi, km_f64s_bytes(km_mul_sat(ns, nf)));
    *hi = km_add_sat(*hi, km_f64s_bytes(km_mul_sat(ns, ncoef)));
    *hi = km_add_sat(*hi, km_mul_sat(3, km_f64s_bytes(pairs)));
    *hi = km_add_sat(*hi, 8 + 4 * k); /* a vote order */
}

/* Versions 1 to 3: the dual layout. Version 4: the form (4 bytes), then
 * the dual layout or the nystrom form's k, m, centres (m x nf), m x P
 * coefficients and P intercepts, m = ns and 2 <= k <= kmax. */
static void svc_payload_range(uint32_t format, uint64_t ns, uint64_t nf,
                              uint64_t no, uint64_t *lo, uint64_t *hi)
{
    (void)no;
    uint64_t kmax = km_max_classes(ns);
    payload_range(kmax, ns, nf, lo, hi);
    if (format >= 9) /* the kept rows: kx, ky, ka */
        *hi = km_add_sat(*hi, km_add_sat(km_f64s_bytes(km_mul_sat(
                                             ns, nf + 3 * kmax + 1)),
                                         32));
    if (format < 4)
        return;
    uint64_t base = km_add_sat(16, km_f64s_bytes(km_mul_sat(ns, nf)));
    uint64_t nlo = km_add_sat(base, km_add_sat(km_f64s_bytes(ns),
                                               km_f64s_bytes(1)));
    uint64_t pmax = km_n_pairs(kmax);
    uint64_t nhi = km_add_sat(base, km_add_sat(
                                        km_f64s_bytes(km_mul_sat(ns, pmax)),
                                        km_f64s_bytes(pmax)));
    *lo = km_add_sat(4, nlo < *lo ? nlo : *lo);
    *hi = km_add_sat(4, nhi > *hi ? nhi : *hi);
}

static void svr_payload_range(uint32_t format, uint64_t ns, uint64_t nf,
                              uint64_t no, uint64_t *lo, uint64_t *hi)
{
    (void)no;
    payload_range(0, ns, nf, lo, hi);
    if (format >= 9) /* the kept rows: kx, ky, ka */
        *hi = km_add_sat(*hi, km_add_sat(
                                  km_f64s_bytes(km_mul_sat(ns, nf + 7)), 32));
}

static km_status svc_check(const void *params, const km_problem *pb,
                           km_error *err)
{
    km_status st = km_svm_check(params, KM_ALGO_SVC, pb->n_classes, err);
    return st != KM_OK ? st
                       : km_svm_check_centres(params, pb->n, pb->n_classes,
                                              err);
}

static km_status svr_check(const void *params, const km_problem *pb,
                           km_error *err)
{
    (void)pb;
    return km_svm_check(params, KM_ALGO_SVR, 0, err);
}

static size_t svc_fit_bytes(const void *params, const km_problem *pb)
{
    return km_svc_fit_bytes(pb->n, pb->d, pb->n_classes, params);
}

static size_t svr_fit_bytes(const void *params, const km_problem *pb)
{
    return km_svm_fit_bytes(pb->n, pb->d, params);
}

static km_status svc_fit_problem(const km_kernel *k, const void *params,
                                 const km_problem *pb,
                                 const km_fit_control *ctl, km_model **out,
                                 km_error *err)
{
    return km_svc_fit(k, params, pb->X, pb->n, pb->d, pb->labels,
                      pb->n_classes, ctl, out, err);
}

static km_status svr_fit_problem(const km_kernel *k, const void *params,
                                 const km_problem *pb,
                                 const km_fit_control *ctl, km_model **out,
                                 km_error *err)
{
    return km_svr_fit(k, params, pb->X, pb->n, pb->d, pb->y, ctl, out, err);
}

static unsigned svc_model_outputs(const km_model *m)
{
    return KM_OUT_LABELS | KM_OUT_SCORES |
           (km_svc_has_probability(m) ? KM_OUT_PROBABILITIES : 0);
}

/* Probabilities only with probability. */
static unsigned svc_params_outputs(const void *params)
{
    return KM_OUT_LABELS | KM_OUT_SCORES |
           (((const km_svm_params *)params)->probability
                ? KM_OUT_PROBABILITIES
                : 0);
}

/* A search's fold fits: Platt scaling's internal 5-fold cross-validation
 * only for a scoring that reads probabilities (neg_log_loss); needs is
 * what the scoring reads (KM_OUT_*). */
static void svc_cv_params(void *params, unsigned needs)
{
    km_svm_params *p = params;
    p->probability = p->probability && (needs & KM_OUT_PROBABILITIES);
    p->keep_rows = 0; /* a fold's model is not updated */
}

/* ------------------------------------------------------------ capabilities */

/* the exact solver takes kernel values given (km_svm_fit_shared); the
 * nystrom and screened ones compute their own */
static int search_serves(const void *params)
{
    return ((const km_svm_params *)params)->solver == KM_SVM_SOLVER_EXACT;
}

static double search_cache_bytes(const void *params)
{
    return ((const km_svm_params *)params)->cache_mb * 1048576.0;
}

/* class_weight indexes all classes; a fold's fit sees its own */
static void svc_fold_classes(void *params, const int *cls, size_t k,
                             double *scratch)
{
    km_svm_params *sv = params;
    if (!sv->class_weight)
        return;
    for (size_t c = 0; c < k; c++)
        scratch[c] = sv->class_weight[cls[c]];
    sv->class_weight = scratch;
}

static const km_algo_search svc_search = {
    .caps = KM_SEARCH_SHARED_GRAM,
    .serves = search_serves,
    .cache_bytes = search_cache_bytes,
    .fold_classes = svc_fold_classes,
};

static const km_algo_search svr_search = {
    .caps = KM_SEARCH_SHARED_GRAM,
    .serves = search_serves,
    .cache_bytes = search_cache_bytes,
    .one_output = 1,
};

/* ------------------------------------------------------------ params
 *
 * The keys a request's params may give (km_param, km_base.h): their
 * types, bounds, choices, the solver values they apply with and docs,
 * read by the API through km_algorithm_params. */

/* svc: only with solver "exact" or "auto"; "nystrom"; "exact",
 * "screened" or "auto"; "nystrom", "screened" or "auto". */
#define SVC_EXACT .only_if = "solver", .only_value = KM_SVM_SOLVER_EXACT, \
                  .only_also = 1u << KM_SVM_SOLVER_AUTO
#define SVC_NYSTROM .only_if = "solver", .only_value = KM_SVM_SOLVER_NYSTROM
#define SVC_SMO .only_if = "solver", .only_value = KM_SVM_SOLVER_EXACT, \
                .only_also = 1u << KM_SVM_SOLVER_SCREENED | \
                             1u << KM_SVM_SOLVER_AUTO
#define SVC_SCREEN SVC_NYSTROM, .only_also = 1u << KM_SVM_SOLVER_SCREENED | \
                                             1u << KM_SVM_SOLVER_AUTO

/* keep_rows' doc, svc's (exact or auto) and svr's */
#define KEEP_ROWS_DOC                                                         \
    "keep every training row, its target and its dual variables in the "     \
    "model (memory and file O(n d)), so that /v1/models/{name}/update can "   \
    "add rows by warm-started SMO"

/* n_centres: its type and lower bound here (400); its bounds from the
 * data (at most n_samples, at least the classes) in km_svm_check_centres
 * (422). */
static const km_param svc_rows[] = {
    {.key = "C", .type = KM_PARAM_NUMBER, KM_PARAM_FIELD(km_svm_params, C),
     KM_PARAM_POSITIVE,
     .doc = "penalty of margin errors"},
    {.key = "tol", .type = KM_PARAM_NUMBER,
     KM_PARAM_FIELD(km_svm_params, tol), KM_PARAM_POSITIVE,
     .doc = "stopping tolerance of SMO (nystrom: of the dual coordinate "
            "descent's projected-gradient spread)"},
    {.key = "cache_mb", .type = KM_PARAM_NUMBER,
     KM_PARAM_FIELD(km_svm_params, cache_mb),
     KM_PARAM_POSITIVE, SVC_SMO,
     .doc = "MiB for kernel values (exact, screened "
                               "and auto)"},
    {.key = "shrinking", .type = KM_PARAM_BOOL,
     KM_PARAM_FIELD(km_svm_params, shrinking), .doc = "shrinking heuristic"},
    {.key = "class_weight", .type = KM_PARAM_LABEL_WEIGHTS,
     KM_PARAM_FIELD(km_svm_params, class_weight),
     .range = KM_PARAM_RANGE_READER, .min = 0,
     .max = HUGE_VAL, .min_open = 1,
     .doc = "label -> weight multiplying C for that class (default 1)"},
    {.key = "probability", .type = KM_PARAM_BOOL,
     KM_PARAM_FIELD(km_svm_params, probability), SVC_EXACT,
     .doc = "fit Platt sigmoids so that output probability is available "
            "(exact solver only; auto then runs exact)"},
    {.key = "keep_rows", .type = KM_PARAM_BOOL,
     KM_PARAM_FIELD(km_svm_params, keep_rows), SVC_EXACT,
     .doc = KEEP_ROWS_DOC " (exact solver only; auto then runs exact)"},
    {.key = "solver", .type = KM_PARAM_CHOICE, .solver = 1,
     KM_PARAM_FIELD(km_svm_params, solver),
     .choices = &km_svm_solver_choices,
     .doc = "exact: SMO on the kernel (LIBSVM); nystrom: m centres, "
            "Nystrom features and LIBLINEAR's dual coordinate descent per "
            "class pair, memory O(n m); screened: SMO per pair on the rows "
            "a nystrom screen puts near the margins, grown until every row "
            "meets the optimality conditions (the exact optimum), the "
            "kernel within cache_mb; auto: exact with probability, up to "
            "2000 rows, or when its Gram shared by the pairs fits half of "
            "cache_mb, else screened (training.solver says which)"},
    {.key = "n_centres", .type = KM_PARAM_INTEGER,
     KM_PARAM_FIELD(km_svm_params, n_centres), .range = KM_PARAM_RANGE_READER,
     .min = 1,
     .max = INT_MAX, .data_default = 1,
     .data_bound = "the number of rows of X", SVC_SCREEN,
     .doc = "nystrom, screened and auto only: centres (screened: the "
            "screen's, uniform), picked from the rows by centres; default "
            "min(n, 1000); above n_samples or below the number of classes "
            "is 422"},
    {.key = "seed", .type = KM_PARAM_INTEGER,
     KM_PARAM_FIELD(km_svm_params, seed),
     .range = KM_PARAM_RANGE_READER, .min = 0, .max = 2147483647, SVC_SCREEN,
     .doc = "nystrom, screened and auto only: seed of the centres' draw "
            "and of each epoch's order (core's PRNG)"},
    {.key = "max_iter", .type = KM_PARAM_INTEGER,
     KM_PARAM_FIELD(km_svm_params, max_iter),
     .range = KM_PARAM_RANGE_READER, .min = 1, .max = INT_MAX, SVC_NYSTROM,
     .data_default = 1, /* 0 in the struct: the solver's own, 1000 */
     .doc = "nystrom only: most epochs of dual coordinate descent per "
            "class pair (default 1000)"},
    KM_CENTRES_ROW(km_svm_params, "nystrom only",
                "whose n x m factor is itself the features", SVC_NYSTROM),
    {.key = "precision", .type = KM_PARAM_CHOICE,
     KM_PARAM_FIELD(km_svm_params, precision),
     .choices = &km_svm_precision_choices,
     SVC_NYSTROM,
     .doc = "nystrom only: the features' precision: float64 or float32 "
            "(half the memory, SGEMM and STRSM, about twice as fast; the "
            "descent's sums and the model stay double)"},
    {0},
};
_Static_assert(sizeof(km_svm_solver) == sizeof(int) &&
                   sizeof(km_krr_centre_rule) == sizeof(int) &&
                   sizeof(km_svm_precision) == sizeof(int),
               "KM_PARAM_CHOICE fields are int-sized");

static const km_param svr_rows[] = {
    {.key = "C", .type = KM_PARAM_NUMBER, KM_PARAM_FIELD(km_svm_params, C),
     KM_PARAM_POSITIVE,
     .doc = "penalty of errors beyond epsilon"},
    {.key = "epsilon", .type = KM_PARAM_NUMBER,
     KM_PARAM_FIELD(km_svm_params, epsilon),
     .range = KM_PARAM_RANGE_CHECK, .min = 0, .max = HUGE_VAL,
     .doc = "half-width of the tube without loss"},
    {.key = "tol", .type = KM_PARAM_NUMBER,
     KM_PARAM_FIELD(km_svm_params, tol), KM_PARAM_POSITIVE,
     .doc = "stopping tolerance of SMO"},
    {.key = "cache_mb", .type = KM_PARAM_NUMBER,
     KM_PARAM_FIELD(km_svm_params, cache_mb),
     KM_PARAM_POSITIVE, .doc = "MiB for kernel values"},
    {.key = "shrinking", .type = KM_PARAM_BOOL,
     KM_PARAM_FIELD(km_svm_params, shrinking), .doc = "shrinking heuristic"},
    {.key = "keep_rows", .type = KM_PARAM_BOOL,
     KM_PARAM_FIELD(km_svm_params, keep_rows), .doc = KEEP_ROWS_DOC},
    {0},
};

static const km_param_set svc_param_set = {svc_rows, sizeof(km_svm_params),
                                            params_default};
static const km_param_set svr_param_set = {svr_rows, sizeof(km_svm_params),
                                            params_default};

const km_algo km_svc_algo = {
    .outputs = KM_OUT_LABELS | KM_OUT_SCORES | KM_OUT_PROBABILITIES,
    .model_outputs = svc_model_outputs,
    .params_outputs = svc_params_outputs,
    .params = &svc_param_set,
    .check = svc_check,
    .fit_bytes = svc_fit_bytes,
    .fit = svc_fit_problem,
    .cv_params = svc_cv_params,
    .labels = km_svc_predict,
    .scores = km_svc_decision,
    .probabilities = km_svc_probability,
    .classes = 1,
    .n_classes = km_svc_n_classes,
    .decision_columns = KM_DECISION_PAIRS, /* one-vs-one */
    .scores_first = 1,
    .max_outputs = one_output,
    .payload_range = svc_payload_range,
    .free_payload = payload_free,
    .save = payload_save,
    .load = svc_load,
    .file_format = svc_file_format,
    .bytes = payload_bytes,
    .load_bytes = load_bytes,
    .update = &km_svc_update_entry,
    .target = KM_TARGET_CLASSES,
    .check_targets = 1,
    .search = &svc_search,
    .coefs = km_svm_coefs,
};

const km_algo km_svr_algo = {
    .outputs = KM_OUT_VALUES,
    .params = &svr_param_set,
    .check = svr_check,
    .fit_bytes = svr_fit_bytes,
    .fit = svr_fit_problem,
    .values = km_svr_predict,
    .max_outputs = one_output,
    .payload_range = svr_payload_range,
    .free_payload = payload_free,
    .save = payload_save,
    .load = svr_load,
    .file_format = svr_file_format,
    .bytes = payload_bytes,
    .update = &km_svr_update_entry,
    .load_bytes = load_bytes,
    .target = KM_TARGET_VALUES,
    .check_targets = 1,
    .search = &svr_search,
    .coefs = km_svm_coefs,
};
