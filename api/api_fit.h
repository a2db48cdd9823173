/*
 * api_fit.h - fit requests: parse and validate everything first (so a bad
 * request answers 4xx before any work or queueing), estimate the memory a
 * fit needs, then run it through core.
 *
 * Thread-safety: reentrant; a request is owned by one thread at a time.
 */
#ifndef API_FIT_H
#define API_FIT_H

#include <cJSON.h>
#include <stddef.h>

#include "api_error.h"
#include "api_json.h"

/* Room for the largest params struct of an algorithm (its schema's size;
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
} api_fit_request;

/* The matrix keys of fit bodies, for api_parse_body. */
extern const char *const api_fit_matrix_keys[];

/* Parses and validates a fit body (X is taken from it). On failure req
 * holds nothing to free beyond what api_fit_request_cleanup releases
 * (always call it). */
int api_fit_parse(api_body *body, api_fit_request *req, api_error *e);
void api_fit_request_cleanup(api_fit_request *req);

/* The request's data as core's one problem shape (borrowed views). */
km_problem api_fit_problem(const api_fit_request *req);

/* Peak bytes the fit will use, its search's included (admission
 * control). */
size_t api_fit_bytes(const api_fit_request *req);

/* Runs the fit (with a search: the search, then the fit of its best
 * point, which keeps the search's record). Caller owns *out. */
int api_fit_run(const api_fit_request *req, const km_fit_control *ctl,
                km_model **out, api_error *e);

#endif
