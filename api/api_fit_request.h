/*
 * api_fit_request.h - a parsed fit request (api_fit_parse fills it,
 * api_fit_request_cleanup frees it: api_fit.h) and its data as core's
 * problem, what the fit and its search (api_search.h) both read: below
 * both, so that the search needs nothing of the fit.
 *
 * Thread-safety: reentrant; a request is owned by one thread at a time.
 */
#ifndef API_FIT_REQUEST_H
#define API_FIT_REQUEST_H

#include <stddef.h>

#include "../core/km.h"

/* Room for the largest params struct of an algorithm (its rows' size;
 * test_api_schema checks each, api_fit_parse refuses a bigger one). */
#define API_PARAMS_BYTES 128

typedef struct api_search api_search; /* api_search.h */

typedef struct api_fit_request {
    km_algorithm algo;
    km_kernel kernel;
    /* The algorithm's params, stored where core's rows say
     * (km_algorithm_params); krr, svm and kpca are typed views of them. */
    union {
        _Alignas(max_align_t) unsigned char params[API_PARAMS_BYTES];
        km_krr_params krr;
        km_svm_params svm;
        km_kpca_params kpca;
    };
    double *X; /* n x d */
    size_t n, d;
    double *Y; /* n x m targets (krr, svr) */
    size_t m;
    int *classes;      /* svc: n class indices into labels */
    char **labels;     /* svc: sorted distinct labels, as text */
    size_t n_labels;
    int labels_numeric;
    double *class_weight; /* svc: one weight per label, or NULL */
    km_preprocess pre;    /* "preprocess"; none when absent */
    size_t max_length;    /* string kernels: the longest string the model
                             takes (the body's, or the default); else 0 */
    api_search *search;   /* the "search" member, or NULL */
    int async;
    /* Points a search runs at once (km_search_spec.threads; 0 or 1:
     * one): not in the body, the caller's (the server's BLAS threads per
     * fit worker), set after api_fit_parse and before api_fit_bytes,
     * which counts that many workers; api_fit_run runs
     * min(threads, ctl->threads) of them. */
    int threads;
    /* "distributed": run on the MPI cluster (server/srv_mpi.h); the
     * server also sets it for krr's auto solver when only the cluster
     * holds the exact fit. */
    int distributed;
    /* An update (api_update_parse): the model it adds rows to, borrowed
     * until api_fit_request_cleanup calls base_release(base_ref) (the
     * caller sets both: a server's reference); NULL for a fit. */
    const km_model *base;
    void (*base_release)(void *);
    void *base_ref;
} api_fit_request;

/* The request's data as core's one problem shape (borrowed views). */
static inline km_problem api_fit_problem(const api_fit_request *req)
{
    km_problem pb = {req->X, req->n, req->d, req->Y, req->m, req->classes,
                     req->n_labels};
    return pb;
}

#endif
