/*
 * api_score.h - score requests: how good a model's answers are on rows
 * whose answers the client knows (POST /v1/models/{name}/score).
 *
 * Thread-safety: reentrant; the model is only read.
 */
#ifndef API_SCORE_H
#define API_SCORE_H

#include "api_error.h"
#include "api_json.h"
#include "api_text.h"

/* The matrix keys of score bodies, for api_parse_body. */
extern const char *const api_score_matrix_keys[];

/* An upper bound on the working memory of answering this score body
 * (api_predict_bytes, plus y's JSON nodes and its copy), computed from
 * its length before it is parsed, for admission control. */
size_t api_score_bytes(const km_model *m, const char *body, size_t len);

/* Answers a score body {"X": [[...]], "y": [...]} (y absent for kpca):
 * *out is the answer's JSON text (caller owns out->buf), *rows the rows
 * scored. The same signature as api_predict. */
int api_score(const km_model *m, api_body *body, api_text *out, size_t *rows,
              api_error *e);

#endif
