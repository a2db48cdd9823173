/*
 * km_svm_payload.c - an svc or svr model's payload (km_svm_payload.h):
 * its release, the getters of a fitted model (classes, support vectors,
 * coefficients), and models made from arrays read elsewhere (LIBSVM's
 * files, km_libsvm.c).
 *
 * Thread-safety: reentrant; a fitted model is only read.
 */
#include <stdlib.h>
#include <string.h>

#include "../model/km_model_internal.h"
#include "km_svm.h"
#include "km_svm_payload.h"

void km_svm_payload_free(void *v)
{
    svm_payload *p = v;
    if (!p)
        return;
    free(p->n_support);
    free(p->sv_index);
    free(p->sv);
    free(p->coef);
    free(p->rho);
    free(p->probA);
    free(p->probB);
    free(p->vote);
    free(p->svn);
    free(p->kx);
    free(p->ky);
    free(p->ka);
    free(p->kg);
    free(p->kgb);
    free(p);
}

/* ------------------------------------------------------------ getters */

static const svm_payload *svm_of(const km_model *m)
{
    km_algorithm a = km_model_algorithm(m);
    return a == KM_ALGO_SVC || a == KM_ALGO_SVR ? km_model_payload(m) : NULL;
}

size_t km_svc_n_classes(const km_model *m)
{
    return km_model_algorithm(m) == KM_ALGO_SVC
               ? ((const svm_payload *)km_model_payload(m))->k
               : 0;
}

int km_svc_has_probability(const km_model *m)
{
    return km_model_algorithm(m) == KM_ALGO_SVC &&
           ((const svm_payload *)km_model_payload(m))->probA != NULL;
}

/* The getters of support vectors answer 0 / NULL for the nystrom form,
 * which has centres instead. */
static const svm_payload *dual_of(const km_model *m)
{
    const svm_payload *p = svm_of(m);
    return p && p->form == SVC_FORM_DUAL ? p : NULL;
}

size_t km_svm_support_count(const km_model *m)
{
    const svm_payload *p = dual_of(m);
    return p ? p->nsv : 0;
}

const int *km_svc_n_support(const km_model *m)
{
    return km_model_algorithm(m) == KM_ALGO_SVC
               ? ((const svm_payload *)km_model_payload(m))->n_support
               : NULL;
}

const int *km_svm_support_indices(const km_model *m)
{
    const svm_payload *p = dual_of(m);
    return p ? p->sv_index : NULL;
}

const double *km_svm_support_vectors(const km_model *m)
{
    const svm_payload *p = dual_of(m);
    return p ? p->sv : NULL;
}

const double *km_svm_dual_coef(const km_model *m)
{
    const svm_payload *p = dual_of(m);
    return p ? p->coef : NULL;
}

const double *km_svm_rho(const km_model *m)
{
    const svm_payload *p = dual_of(m);
    return p ? p->rho : NULL;
}

/* ------------------------------------------------------------ made elsewhere */

void km_svm_arrays_free(km_svm_arrays *a)
{
    free(a->n_support);
    free(a->sv_index);
    free(a->sv);
    free(a->coef);
    free(a->rho);
    free(a->probA);
    free(a->probB);
    free(a->vote);
    memset(a, 0, sizeof *a);
}

/* The arrays are taken, not copied: a model read from a LIBSVM file
 * holds its rows once. */
km_status km_svm_model_new(km_algorithm algo, const km_kernel *kernel,
                           size_t d, size_t n_samples, size_t k, size_t nsv,
                           km_svm_arrays *a, km_model **out, km_error *err)
{
    svm_payload *p = calloc(1, sizeof *p);
    if (!p) {
        km_svm_arrays_free(a);
        return oom(err);
    }
    p->k = algo == KM_ALGO_SVC ? k : 0;
    p->nsv = nsv;
    p->d = d;
    p->n_support = a->n_support;
    p->sv_index = a->sv_index;
    p->sv = a->sv;
    p->coef = a->coef;
    p->rho = a->rho;
    p->probA = a->probA;
    p->probB = a->probB;
    p->vote = a->vote;
    memset(a, 0, sizeof *a); /* the payload's now */
    p->svn = p->sv ? km_sqnorms(p->sv, p->nsv, d) : NULL;
    if ((p->k && !p->n_support) || !p->sv_index || !p->sv || !p->coef ||
        !p->rho || (p->k && p->probA && !p->probB) || !p->svn) {
        km_svm_payload_free(p);
        return oom(err);
    }
    return km_model_create(algo, kernel, d, n_samples, 1, p, out, err);
}

void km_svm_parts_of(const km_model *m, km_svm_parts *out)
{
    const svm_payload *p = svm_of(m);
    memset(out, 0, sizeof *out);
    if (!p)
        return;
    out->k = p->k;
    out->nsv = p->nsv;
    out->n_support = p->k ? p->n_support : NULL;
    out->sv_index = p->sv_index;
    out->sv = p->sv;
    out->coef = p->coef;
    out->rho = p->rho;
    out->probA = p->probA;
    out->probB = p->probB;
    out->vote = p->vote;
}

/* scikit-learn's SVC and SVR attributes: support_, support_vectors_,
 * dual_coef_ ((k-1) x n_SV, kmserve's n_SV x (k-1) transposed),
 * intercept_ (one per pair, LIBSVM's order), n_support_. LIBSVM's
 * decision values and rho are kept (positive for a pair's first class);
 * scikit-learn's intercept_ is -rho, and a binary svc's is negated again
 * with its dual_coef_ (its decision_function is positive for the second
 * class). Class order is the same (ascending labels, km_libsvm.c).
 * With probabilities, probA_ and probB_ (one per pair): Platt's sigmoid
 * of LIBSVM's pair value, P(first class) = 1 / (1 + exp(A f + B)), as
 * scikit-learn's (not negated for two classes). The nystrom form: its
 * centres, their m x P coefficients (coef_) and the pairs' intercepts,
 * in the same signs. */
size_t km_svm_coefs(const km_model *m, km_coef *out)
{
    const svm_payload *p = km_model_payload(m);
    size_t d = km_model_n_features(m), np = p->k ? n_pairs(p->k) : 1;
    double sign = p->k == 2 ? -1.0 : 1.0;
    size_t n = 0;
    if (p->form == SVC_FORM_NYSTROM) {
        out[n++] = km_coef_input_rows(m, "centres_", p->sv, p->nsv, d,
                                      KM_COEF_ROWS_CENTRES);
        out[n] = km_coef_f64("coef_", p->coef, p->nsv, n_coef(p), 1);
        out[n++].scale = sign;
    } else {
        if (p->sv_index)
            out[n++] = km_coef_i32("support_", p->sv_index, p->nsv, 1);
        out[n++] = km_coef_input_rows(m, "support_vectors_", p->sv, p->nsv,
                                      d, KM_COEF_ROWS_SUPPORT);
        out[n] = km_coef_transposed(
            km_coef_f64("dual_coef_", p->coef, p->nsv, n_coef(p), 1));
        out[n++].scale = sign;
    }
    out[n] = km_coef_f64("intercept_", p->rho, np, 0, 0);
    out[n++].scale = -sign;
    if (p->n_support)
        out[n++] = km_coef_i32("n_support_", p->n_support, p->k, 0);
    if (p->probA) {
        out[n++] = km_coef_f64("probA_", p->probA, np, 0, 0);
        out[n++] = km_coef_f64("probB_", p->probB, np, 0, 0);
    }
    return n;
}
