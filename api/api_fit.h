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
#include "api_fit_request.h"
#include "api_json.h"

/* The matrix keys of fit bodies, for api_parse_body. */
extern const char *const api_fit_matrix_keys[];

/* Parses and validates a fit body (X is taken from it). On failure req
 * holds nothing to free beyond what api_fit_request_cleanup releases
 * (always call it). */
int api_fit_parse(api_body *body, api_fit_request *req, api_error *e);
void api_fit_request_cleanup(api_fit_request *req);

/* Parses and validates an update body {X, y, async} for model m: X and
 * y read as a fit of m's algorithm and kernel reads them (X as m's kernel
 * takes it, string rows up to m's max_length); req->base is m (the
 * caller sets base_release and base_ref). 409 naming what can be updated
 * when m cannot be (core's descriptors say); 400 as a fit's X and y. */
int api_update_parse(api_body *body, const km_model *m, api_fit_request *req,
                     api_error *e);

/* Peak bytes the fit will use, its search's included (admission
 * control). */
size_t api_fit_bytes(const api_fit_request *req);

/* Runs the fit (with a search: the search, then the fit of its best
 * point, which keeps the search's record; an update: km_model_update of
 * req->base). Caller owns *out. */
int api_fit_run(const api_fit_request *req, const km_fit_control *ctl,
                km_model **out, api_error *e);

#endif
