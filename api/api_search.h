/*
 * api_search.h - hyperparameter search: a fit body's "search" member.
 *
 * A fit with "search" first scores candidate points (a grid, or random
 * draws) by cross-validation through core's km_search, then fits the best
 * point on all rows; the model keeps the table of every point's scores
 * (km_search_table), which metadata shows (api_search_json, api_model.h).
 * The request parses and checks every point before anything is queued,
 * so a bad grid answers 4xx at once.
 *
 * Thread-safety: reentrant; a search is owned by its request.
 */
#ifndef API_SEARCH_H
#define API_SEARCH_H

#include <cJSON.h>

#include "api_error.h"
#include "api_fit_request.h"

/* Most points one search may try (a larger grid is 400). */
#define API_SEARCH_MAX_POINTS KM_SEARCH_MAX_POINTS

/*
 * Parses item (the "search" member; NULL: no search, *out NULL) for req,
 * whose algorithm, kernel, params and data are parsed and checked. Every
 * point's kernel and params are built and checked against the data here.
 * Caller owns *out (api_search_free).
 */
int api_search_parse(const cJSON *item, const api_fit_request *req,
                     api_search **out, api_error *e);
void api_search_free(api_search *s);

/* Peak bytes of the search and of the refit that follows it. */
size_t api_search_bytes(const api_search *s, const api_fit_request *req);

/*
 * Runs the search (progress through ctl over the first part of the job)
 * and points *kernel and *params at the best point's (owned by s, valid
 * while s lives); *refit is the control the refit should use (its
 * progress mapped to the rest of the job). s keeps the result.
 */
int api_search_select(api_search *s, const api_fit_request *req,
                      const km_fit_control *ctl, const km_kernel **kernel,
                      const void **params, km_fit_control *refit,
                      api_error *e);
/* Records the result of api_search_select in the model fitted with the
 * best point. */
int api_search_record(const api_search *s, km_model *m, api_error *e);

#endif
