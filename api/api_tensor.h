/*
 * api_tensor.h - binary tensors: the Open Inference Protocol's numeric
 * datatypes (the one table of them), and the bytes a body carries after
 * its JSON header (Inference-Header-Content-Length), which /v2 infer's
 * input and the X and y of /v1 fit and update bodies take in turn.
 *
 * A /v1 body member given as a binary tensor is an object
 *   {"datatype": "FP64", "shape": [n, d], "binary_data_size": bytes}
 * whose bytes are the next ones after the JSON header, little-endian,
 * row-major, the members taking theirs in the order the parser reads
 * them (the route's documentation says which).
 *
 * Thread-safety: reentrant; no mutable state.
 */
#ifndef API_TENSOR_H
#define API_TENSOR_H

#include <cJSON.h>
#include <stddef.h>

#include "api_error.h"
#include "api_json.h"

/* A numeric datatype: the range of values it holds, and its width in
 * bytes and kind in binary tensors ('f' IEEE float, 'i' two's
 * complement, 'u' unsigned). BYTES, whose elements have no fixed width,
 * is not one. */
typedef struct api_datatype {
    const char *name;
    double lo, hi; /* inclusive; integers when whole */
    int whole, fp32;
    size_t width;
    char kind;
} api_datatype;

/* The table's row of name, or NULL (BYTES, or not a datatype). */
const api_datatype *api_datatype_find(const char *name);
/* The table's names, "FP64, FP32, ..., UINT64", into buf. */
void api_datatype_list(char *buf, size_t len);
/* The value of dt whose little-endian bytes are at p. */
double api_datatype_value(const api_datatype *dt, const unsigned char *p);
/* v as dt's little-endian bytes at p (integers: v whole and in range). */
void api_datatype_put(const api_datatype *dt, double v, unsigned char *p);

/* 2^53: the largest whole number a JSON number holds exactly, the most
 * a shape's dimension or a binary_data_size can be. */
#define API_TENSOR_MAX_DIM 9007199254740992.0

/* rows x cols values of dt from the little-endian bytes at p into *out
 * (caller frees): 400 naming "name's binary value [i][j]" when one is not
 * finite (as JSON's numbers are), 413 without the memory. */
int api_tensor_values(const api_datatype *dt, const char *p, size_t rows,
                      size_t cols, const char *name, double **out,
                      api_error *e);

/* Member name's binary tensor t (an object, as above) into *out (caller
 * frees; rows x cols doubles, every one finite and in its datatype's
 * range): a shape of one dimension [rows] (cols 1, *dims 1) when
 * max_dims allows only 1 or the shape has one, else [rows, cols]. Takes
 * its bytes from tail. 400 naming the member and what was expected, 413
 * when the memory cannot be had. */
int api_tensor_read(const cJSON *t, const char *name, int max_dims,
                    api_tail *tail, double **out, size_t *rows, size_t *cols,
                    int *dims, api_error *e);

/* 400 unless the binary tensors took every byte after the header. */
int api_tail_done(const api_tail *tail, api_error *e);

#endif
