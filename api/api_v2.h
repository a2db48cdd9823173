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
 * The binary tensor data extension: a body may start with a JSON header
 * of Inference-Header-Content-Length bytes, the input's raw little-endian
 * bytes after it (inputs[0].parameters.binary_data_size); outputs asked
 * for as binary (outputs[i].parameters.binary_data, or the request's
 * parameters.binary_data_output) are answered the same way.
 *
 * Thread-safety: reentrant; models are only read.
 */
#ifndef API_V2_H
#define API_V2_H

#include <cJSON.h>
#include <stdint.h>

#include "api_error.h"
#include "api_json.h"
#include "api_tensor.h"
#include "api_text.h"

/* The matrix keys of infer bodies for api_parse_body: none (the tensor
 * is inside inputs[0]). */
extern const char *const api_v2_matrix_keys[];

/* Model metadata: name, versions (as strings, given newest first),
 * platform, inputs and outputs with datatype and shape (-1 for a
 * variable dimension). NULL on OOM. */
cJSON *api_v2_model_json(const km_model *m, const uint64_t *versions,
                         size_t n_versions);


/* An infer answer: len bytes of buf, of which the first header_len are
 * its JSON (0: all of it is JSON, no output is binary). */
typedef struct api_v2_answer {
    char *buf;
    size_t len, header_len, rows;
} api_v2_answer;

/* Reads the Inference-Header-Content-Length value of a body of len
 * bytes into *header_len: 400 unless a decimal number of bytes from 1 to
 * len. */
int api_v2_header_length(const char *value, size_t len, size_t *header_len,
                         api_error *e);

/* Answers an infer body with m's outputs (those named in "outputs", or
 * its main one), with the bytes after the JSON header (tail NULL: none);
 * binary outputs when asked. Caller owns out->buf; out->rows the rows
 * inferred. 0, or -1 with e set (400 for a malformed tensor or an
 * unknown output, 409 for an output the model was fitted without, 413,
 * 422 as predict; a binary input that does not match its shape and
 * datatype, or bytes that no input claims, are 400. */
int api_v2_infer_binary(const km_model *m, api_body *body,
                        const api_tail *tail, api_v2_answer *out,
                        api_error *e);

/* The most working memory an infer body of len bytes can take (see
 * api_predict_bytes; the body is parsed into cJSON nodes). */
size_t api_v2_infer_bytes(const km_model *m, const char *body, size_t len);
/* An infer request: header is the Inference-Header-Content-Length
 * header's value, NULL when the request has none (then the body is all
 * JSON; it may still ask for binary outputs). The body's JSON header
 * parsed (errors as api_parse_body), then api_v2_infer_binary, whose
 * input rows observer (may be NULL) is shown (api_observer). */
int api_v2_infer_request(const km_model *m, const char *body, size_t len,
                         const char *header, const api_observer *observer,
                         api_v2_answer *out, api_error *e);
/* The most working memory api_v2_infer_request can take (0 when the
 * header is refused before anything is allocated; api_v2_infer_bytes
 * without a header). */
size_t api_v2_request_bytes(const km_model *m, const char *body, size_t len,
                            const char *header);

#endif
