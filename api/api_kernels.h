/*
 * api_kernels.h - a look at a kernel on the client's rows, without a
 * model: the PSD report (POST /v1/kernels/check, core's km_kernel_psd)
 * and the Gram matrix K(X, Z) (POST /v1/kernels/gram).
 *
 * Thread-safety: reentrant.
 */
#ifndef API_KERNELS_H
#define API_KERNELS_H

#include "api_error.h"
#include "api_json.h"
#include "api_text.h"

/* The most values K(X, Z) of a gram answer may have (rows x cols): about
 * 8 MB of doubles and 25 MB of JSON text. Over it: 413. */
#define API_GRAM_MAX_CELLS 1000000

/* The matrix keys of both bodies, for api_parse_body. */
extern const char *const api_kernels_matrix_keys[];

/* Upper bounds on the working memory of answering a check or a gram body
 * of len bytes, computed before it is parsed, for admission control. */
size_t api_kernels_check_bytes(const char *body, size_t len);
size_t api_kernels_gram_bytes(const char *body, size_t len);

/* Answers a check body {"kernel", "X", "alpha"?, "seed"?} and a gram body
 * {"kernel", "X", "Z"?}: *out the answer's JSON text (caller owns
 * out->buf), *rows the rows of X read. */
int api_kernels_check(api_body *body, api_text *out, size_t *rows,
                      api_error *e);
int api_kernels_gram(api_body *body, api_text *out, size_t *rows,
                     api_error *e);

#endif
