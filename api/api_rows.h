/*
 * api_rows.h - a request's rows as its kernel takes them: rows of numbers,
 * strings, or precomputed kernel values (core's input kinds, km_kernel.h),
 * read into the rows of doubles libkm computes on.
 *
 * Thread-safety: reentrant.
 */
#ifndef API_ROWS_H
#define API_ROWS_H

#include "api_json.h"

/*
 * What the rows are read for:
 *   kernel      the kernel (of a fit, or a model's): its input kind
 *   model_d     a model's row width (predict, score, v2); 0 at a fit
 *   max_length  strings: at a fit the request's max_length (0: the
 *               default, km_string_default_max; the reader sets it to the
 *               one used), at a predict the model's (km_model_max_length)
 * At a fit, precomputed X must be the square Gram of the training rows.
 */
typedef struct {
    const km_kernel *kernel;
    size_t model_d;
    size_t max_length;
} api_rows_spec;

/* The rows of member name into *X (n x d, caller frees): 400 naming the
 * member when they are not what the kernel takes. */
int api_body_rows(api_body *b, const char *name, api_rows_spec *s,
                  double **X, size_t *n, size_t *d, api_error *e);

/* n strings (s[i], len[i] bytes) as rows for spec s (v2's BYTES); name
 * names them in messages. */
int api_rows_from_strings(const char *const *str, const size_t *len,
                          size_t n, api_rows_spec *s, const char *name,
                          double **X, size_t *d, api_error *e);

/* String rows X (n x d) rewritten as rows of to >= d doubles (the same
 * strings: a string row's slots stay where they are); 0, or -1 out of
 * memory (X unchanged). */
int api_rows_widen(double **X, size_t n, size_t d, size_t to);

/* The names of the kernel types that take input kind k, "a, b and c". */
void api_kernels_taking(km_input_kind k, char *buf, size_t len);

#endif /* API_ROWS_H */
