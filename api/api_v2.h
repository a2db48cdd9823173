/*
 * api_v2.h - the Open Inference Protocol (KServe v2) over REST: a model's
 * metadata and infer requests, JSON to core and back.
 *
 * A model has one input tensor, "X" (FP64, shape [-1, n_features]; a
 * string model's BYTES, shape [-1]; a precomputed model's FP64, shape
 * [-1, n_training]), and
 * the outputs its algorithm answers (the rows of core's KM_ANSWER_MAP
 * that have a v2 name and that km_answer_offered gives the model's
 * algorithm). Infer computes them through
 * api_answer_compute, as /v1 predict does, so both answer the same bits.
 *
 * Thread-safety: reentrant; models are only read.
 */
#ifndef API_V2_H
#define API_V2_H

#include <cJSON.h>
#include <stdint.h>

#include "api_error.h"
#include "api_json.h"
#include "api_text.h"

/* The matrix keys of infer bodies for api_parse_body: none (the tensor
 * is inside inputs[0]). */
extern const char *const api_v2_matrix_keys[];

/* Model metadata: name, versions (as strings, given newest first),
 * platform, inputs and outputs with datatype and shape (-1 for a
 * variable dimension). NULL on OOM. */
cJSON *api_v2_model_json(const km_model *m, const uint64_t *versions,
                         size_t n_versions);

/* Answers an infer body with m's outputs (those named in "outputs", or
 * its main one); *out is the answer's JSON text (caller owns out->buf);
 * *rows the rows inferred. 0, or -1 with e set (400 for a malformed
 * tensor or an unknown output, 409 for an output the model was fitted
 * without, 413, 422 as predict). */
int api_v2_infer(const km_model *m, api_body *body, api_text *out,
                 size_t *rows, api_error *e);

/* The most working memory an infer body of len bytes can take (see
 * api_predict_bytes; the body is parsed into cJSON nodes). */
size_t api_v2_infer_bytes(const km_model *m, const char *body, size_t len);

#endif
