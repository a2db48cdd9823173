/*
 * api_predict.h - predict and project requests against a model.
 *
 * Thread-safety: reentrant; the model is only read, so any number of
 * threads may answer with one model at once.
 */
#ifndef API_PREDICT_H
#define API_PREDICT_H

#include <cJSON.h>

#include "api_error.h"
#include "api_json.h"
#include "api_text.h"

/* The matrix keys of predict and project bodies, for api_parse_body. */
extern const char *const api_predict_matrix_keys[];

/* The most working memory answering this predict or project body can
 * take: the body, its numbers, the values, the answer's text and a block
 * of kernel values. An upper bound from the body's length and commas,
 * computed before it is parsed, for admission control. Borrows body. */
size_t api_predict_bytes(const km_model *m, const char *body, size_t len);

/* Answers a predict body; *out is the answer's JSON text (caller owns
 * out->buf); *rows gets the number of rows predicted. */
int api_predict(const km_model *m, api_body *body, api_text *out,
                size_t *rows, api_error *e);

/* The same for project (kpca). */
int api_project(const km_model *m, api_body *body, api_text *out,
                size_t *rows, api_error *e);

#endif
