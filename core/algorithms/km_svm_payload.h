/*
 * km_svm_payload.h - the payload of an svc or svr model, shared by the
 * files of the two algorithms (km_svm.c: checks, its file form,
 * prediction, descriptors; km_svm_fit.c: the fits; km_svm_payload.c: its
 * release and getters, models from arrays; km_libsvm.c: LIBSVM's model
 * files). The solvers the fits call are solvers/km_svm_solve.h's, Platt's
 * probabilities km_svm_prob.h's. Not installed; core/algorithms only.
 */
#ifndef KM_SVM_PAYLOAD_H
#define KM_SVM_PAYLOAD_H

#include "km_algorithms_internal.h"

/* Two forms of an svc payload: the dual (SMO's support vectors, LIBSVM's
 * layout) and nystrom (km_svm_nys.c: m centres, an m x P coefficient
 * matrix, one column per pair; n_support, sv_index and prob are NULL). */
enum { SVC_FORM_DUAL = 0, SVC_FORM_NYSTROM = 1, SVC_FORM_COUNT };

typedef struct svm_payload {
    unsigned form;     /* SVC_FORM_*; svr: DUAL */
    size_t k;          /* classes (SVC, >= 2); 0 for SVR */
    size_t nsv, d;
    int *n_support;    /* k counts (SVC) */
    int *sv_index;     /* nsv training-row indices */
    double *sv;        /* nsv x d */
    double *coef;      /* nsv x ncoef: k-1 for SVC, 1 for SVR;
                          nystrom: m x P */
    double *rho;       /* one per pair (SVC) or 1 (SVR) */
    double *probA, *probB; /* one per pair, or NULL */
    int *vote;         /* k classes in the order votes break ties (svc
                          read from LIBSVM's file: its label order), or
                          NULL: ascending class index */
    double *svn;       /* nsv squared norms of sv's rows (derived) */
    /* params.keep_rows (format version 9): every training row (kn =
     * n_samples, 0: none kept), in training order, as fitted (after the
     * model's preprocessing): kx (kn x d), ky (svc: the class index;
     * svr: the target) and ka, the dual variables, kn x n_keep_cols:
     * svc, LIBSVM's coefficient layout (y alpha per pair, 0 off a row's
     * pairs); svr, alpha+ and alpha- */
    size_t kn;
    double *kx, *ky, *ka;
    double *kg, *kgb; /* kn x n_keep_cols, as ka: each variable's gradient
                         Q alpha + p at the solution and LIBSVM's G_bar,
                         an update's start for these rows */
} svm_payload;

/* Columns of ka: svc k-1, svr 2. */
static inline size_t n_keep_cols(const svm_payload *p)
{
    return p->k ? p->k - 1 : 2;
}

static inline size_t n_pairs(size_t k)
{
    return k * (k - 1) / 2;
}

static inline size_t n_coef(const svm_payload *p)
{
    if (p->form == SVC_FORM_NYSTROM)
        return n_pairs(p->k);
    return p->k ? p->k - 1 : 1;
}

static inline km_status oom(km_error *err)
{
    return km_error_set(err, KM_ENOMEM, "out of memory for an SVM fit");
}

/* Frees a payload (NULL: nothing) and every array it holds. */
void km_svm_payload_free(void *v);

/* ------------------------------------------------ payloads from arrays */

/* An svc or svr payload in the layout of km_svm.c (see its comment and
 * docs/model-format.md): k classes (svc) or 0 (svr), nsv support vectors
 * grouped by class, nsv x d rows, nsv x (k-1 or 1) coefficients, one rho
 * per pair (svr: one), probA and probB per pair or NULL, and the vote
 * order of ties. */
typedef struct km_svm_parts {
    size_t k, nsv;
    const int *n_support;     /* k counts (svc), NULL for svr */
    const int *sv_index;      /* nsv rows, each below n_samples */
    const double *sv, *coef, *rho;
    const double *probA, *probB;
    const int *vote;          /* svc: the classes in the order votes break
                                 ties (a permutation of 0..k-1), or NULL:
                                 ascending */
} km_svm_parts;

/* The arrays of an svc or svr payload in the layout of km_svm_parts, each
 * from malloc or NULL (n_support of an svr, probA and probB without
 * probabilities, vote in ascending order). */
typedef struct km_svm_arrays {
    int *n_support, *sv_index;
    double *sv, *coef, *rho, *probA, *probB;
    int *vote;
} km_svm_arrays;

/* Frees a's arrays and zeroes it. */
void km_svm_arrays_free(km_svm_arrays *a);

/* A model of algo (svc or svr; k classes, or 0) and nsv support vectors
 * of d features that takes a's arrays (zeroing a: the model frees them,
 * also on failure), for a reader other than the model file's
 * (km_libsvm.c). Nothing is checked here but the allocation: the caller
 * has checked what km_svm.c's loader checks. It adds the rows' norms
 * (its heap is km_svm_dual_bytes). Labels and figures are the caller's to
 * add. */
km_status km_svm_model_new(km_algorithm algo, const km_kernel *kernel,
                           size_t d, size_t n_samples, size_t k, size_t nsv,
                           km_svm_arrays *a, km_model **out,
                           km_error *err) KM_MUST_CHECK;
/* The heap of a dual-form payload of k classes (0: svr), nsv rows of d
 * features, probA and probB or not, a vote order or not: what the
 * model's bytes counts, and what its load keeps. */
size_t km_svm_dual_bytes(size_t k, size_t nsv, size_t d, int prob, int vote);
/* The payload of an svc or svr model, borrowed (valid while m is). */
void km_svm_parts_of(const km_model *m, km_svm_parts *out);

/* ------------------------------------------------ kept rows (km_svm_update.c) */

/* The kept rows' section of a payload (params.keep_rows, format version
 * 9, after the dual form's arrays when flag bit 2 is set): f64s kx, ky,
 * ka of n_samples rows. */
void km_svm_keep_save(const svm_payload *p, km_writer *w);
/* Reads and checks it as hostile input into p (k and d set; ns rows):
 * every number finite, svc's class indices whole in [0, k) with every
 * class present, each row's dual variables of the sign of its side of
 * each pair (0 off its pairs), svr's alphas >= 0, each pair's sum of
 * y alpha 0 (to rounding). KM_ECORRUPT naming what is wrong, KM_ENOMEM. */
km_status km_svm_keep_load(km_reader *r, svm_payload *p, size_t ns,
                           km_error *err);
/* Heap bytes of the kept rows: kn rows of d features, k classes (0:
 * svr). */
uint64_t km_svm_keep_bytes(uint64_t kn, uint64_t d, uint64_t k);
/* The descriptors' update entries of svc and svr models kept with
 * params.keep_rows. */
extern const km_algo_update km_svc_update_entry, km_svr_update_entry;

/* An SMO start (an update's), in the rows' training order and the kept
 * rows' layout (n_keep_cols columns): alpha for all n rows (svc: y alpha
 * per pair, LIBSVM's layout; svr: alpha+, alpha-; the new rows' 0), and
 * for the first n_old rows the gradient and G_bar at the old solution
 * (unchanged by new variables at zero); the new rows' are computed. */
typedef struct km_svm_warm {
    size_t n_old;
    const double *alpha, *G, *Gbar;
} km_svm_warm;

/* A fit (svc or svr, params.solver exact) whose SMO starts from w. A
 * feasible start (each pair's sum of y alpha zero, 0 <= alpha <= C) gives
 * the optimum a fit from zero gives, to the solver's tolerance
 * (km_svm_fit.c). */
km_status km_svm_fit_warm(km_algorithm a, const km_kernel *k,
                          const km_svm_params *p, const km_problem *pb,
                          const km_svm_warm *w, const km_fit_control *ctl,
                          km_model **out, km_error *err) KM_MUST_CHECK;

/* svr's start from w over its n rows X (2n variables, p their linear
 * term): alpha (clipped to C), and the gradient G and G_bar, the old
 * rows' as kept, the new rows' from the kernel (km_svm_update.c). */
void km_svr_warm_start(const km_kernel *k, const double *X, size_t n,
                       size_t d, const km_svm_warm *w, double C,
                       const double *p, double *alpha, double *G, double *Gb);

/* The descriptors' coefs hook (svc and svr; km_model.h's km_coef). */
size_t km_svm_coefs(const km_model *m, km_coef *out);

#endif /* KM_SVM_PAYLOAD_H */
