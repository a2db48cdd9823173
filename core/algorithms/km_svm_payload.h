/*
 * km_svm_payload.h - the payload of an svc or svr model, shared by the
 * files of the two algorithms (km_svm.c: checks, its file form,
 * prediction, descriptors; km_svm_fit.c: the fits; km_svm_payload.c: its
 * release and getters). Not installed; core/algorithms only.
 */
#ifndef KM_SVM_PAYLOAD_H
#define KM_SVM_PAYLOAD_H

#include "../km_internal.h"

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
} svm_payload;

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

#endif /* KM_SVM_PAYLOAD_H */
