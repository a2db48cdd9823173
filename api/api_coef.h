/*
 * api_coef.h - a model's coefficients as JSON (GET
 * /v1/models/{name}/coefficients): the arrays core lists for it
 * (km_model_coefs), written generically, paged over the rows of the
 * arrays that run over training rows, support vectors or centres.
 *
 * Thread-safety: reentrant; reads models only.
 */
#ifndef API_COEF_H
#define API_COEF_H

#include "api_error.h"
#include "api_text.h"

/* The page's rows: limit defaults to API_COEF_LIMIT, at most
 * API_COEF_MAX_LIMIT, and a page holds at most API_COEF_MAX_VALUES
 * values (a wider model takes a smaller limit): an answer of at most
 * about 25 MB of text, which is not admitted against the memory budget
 * as a predict's working memory is. */
#define API_COEF_LIMIT 1000
#define API_COEF_MAX_LIMIT 100000
#define API_COEF_MAX_VALUES 1000000

/* 0 if name is a query parameter of the route (offset, limit), else a
 * 400 naming it. */
int api_coef_param(const char *name, api_error *e);

/* A query parameter that is a whole number in [min, max] (a page's
 * offset or limit: here and GET /v1/jobs), from its text, or a 400
 * naming it ("offset \"x\" must be a whole number from 0 to N"). */
int api_query_count(const char *s, const char *name, size_t min, size_t max,
                    size_t *out, api_error *e);

/* The answer for m, the page from offset and limit (the query's text, or
 * NULL when absent): 400 naming the parameter when one is not a whole
 * number in range. */
int api_coefficients(const km_model *m, const char *offset,
                     const char *limit, api_text *out, api_error *e);

#endif
