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

/* One answer of a model for some rows, as predict (and the Open
 * Inference Protocol's infer, api_v2.h) writes it. */
typedef struct api_answer {
    unsigned answer; /* its KM_OUT_* flag */
    double *v;       /* rows x width numbers; NULL for labels, clusters */
    int *idx;        /* rows label indices or cluster ids; else NULL */
    size_t rows, width; /* width: km_model_answer_width's */
} api_answer;

/* Computes answer (a KM_OUT_* flag; each, when not NULL, applied to each
 * of its values: the answer table's column) for X's n rows through core's
 * km_predict or km_predict_labels. 0, or -1 with e set: 422 naming
 * what[row] when a value is not finite, 413 when memory runs out, core's
 * errors. Free with api_answer_free, also after a failure. */
int api_answer_compute(const km_model *m, unsigned answer,
                       double (*each)(double),
                       const double *X, size_t n, const char *what,
                       api_answer *a, api_error *e);
void api_answer_free(api_answer *a);
/* Writes a's values as JSON: labels in their type, cluster ids as
 * integers, numbers exact; rows of width values, or one flat array when
 * width is 1 (but for a covariance) or when flat. */
void api_answer_text(api_text *t, const km_model *m, const api_answer *a,
                     int flat);

/* The same for project (kpca). */
int api_project(const km_model *m, api_body *body, api_text *out,
                size_t *rows, api_error *e);

#endif
