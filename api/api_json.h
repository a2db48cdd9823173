/*
 * api_json.h - reading request bodies: JSON parsing with a nesting bound,
 * and typed field access with messages that name the field's path.
 *
 * Thread-safety: reentrant (cJSON_ParseWithLengthOpts with its own end
 * pointer; never cJSON's global error pointer, which races).
 */
#ifndef API_JSON_H
#define API_JSON_H

#include <cJSON.h>
#include <stddef.h>

#include "api_error.h"

/* Deepest nesting a request may have (a fit with nested sum kernels needs
 * about 2 + 2 * KM_KERNEL_MAX_DEPTH + 2). */
#define API_MAX_DEPTH 32

/*
 * Parses a body of len bytes (need not be NUL-terminated) into a JSON
 * object. Not JSON → invalid_json; JSON but not an object, or nested
 * deeper than API_MAX_DEPTH → invalid_argument. A string (value or
 * member name) that is not UTF-8 or holds an unescaped control character
 * → invalid_json; one that holds an escaped NUL (\u0000) →
 * invalid_argument; each message names the field ("y[3]"). Caller owns
 * *out (cJSON_Delete).
 */
int api_parse_object(const char *body, size_t len, cJSON **out, api_error *e);

/* v as a JSON number node whose text is exact (api_format_number: the
 * shortest of %.15g/%.17g that reads back as v; cJSON's own printer can
 * round, e.g. 2^53 to 9.00719925474099e+15); null when v is not finite.
 * The node is cJSON_Raw with valuedouble and valueint set as a number's
 * would be. NULL when out of memory. */
cJSON *api_json_number(double v);
/* An array of api_json_number nodes of v[0..n); NULL when out of
 * memory (an element that could not be made is left out). */
cJSON *api_json_numbers(const double *v, size_t n);
/* The most numbers a JSON body of len bytes can hold: every number but
 * the last of its array is followed by a comma, and rows are separated
 * by one, so numbers <= commas + 1 (for memory estimates). */
size_t api_json_max_numbers(const char *body, size_t len);

/*
 * A request body with its matrix read straight into doubles. Predict and
 * fit bodies are mostly one matrix of numbers; a cJSON node per number
 * costs about 64 bytes and a malloc, so the member named by one of the
 * matrix keys is, when it is a well-formed matrix (rows of equal length
 * of finite numbers in strict JSON syntax), read directly into M and
 * left out of root. Any other shape, and any error anywhere in the body,
 * falls back to api_parse_object, which keeps the matrix in root for
 * api_get_matrix: so errors and their messages are the same either way.
 * The first member of a name wins, as in cJSON.
 */
struct km_model;
/* Who is shown the rows a model route reads (the server's drift
 * reservoir): rows is called once per request with the input rows (n of
 * the model's n_features doubles, validated) before the answer is
 * computed; it must be quick and must not keep X. */
typedef struct api_observer {
    void (*rows)(void *ctx, const struct km_model *m, const double *X,
                 size_t n);
    void *ctx;
} api_observer;

/* The bytes after a body's JSON header (Inference-Header-Content-Length:
 * api_tensor.h); used: how many the binary tensors read so far took.
 * given: the request had the header. */
typedef struct api_tail {
    const char *bytes;
    size_t len, used;
    int given;
} api_tail;

typedef struct {
    cJSON *root;
    const char *key;  /* the matrix key read into M, or NULL */
    double *M;        /* n x d, row-major */
    size_t n, d;
    const api_observer *observer; /* NULL: none; set after parsing */
    api_tail tail; /* fit and update: binary members' bytes (api_tensor.h) */
} api_body;

/* Parses body (len bytes, need not be NUL-terminated); matrix_keys is
 * NULL-terminated. Errors as api_parse_object. Always api_body_free. */
int api_parse_body(const char *body, size_t len,
                   const char *const *matrix_keys, api_body *b, api_error *e);
void api_body_free(api_body *b);

/* Whether the body has a member called name. */
int api_body_has(const api_body *b, const char *name);

/* The matrix member name, as api_get_matrix reads it; when it was read
 * directly, *X is handed over (the body no longer owns it). */
int api_body_matrix(api_body *b, const char *name, size_t expect_d,
                    double **X, size_t *n, size_t *d, api_error *e);

/*
 * Reads a matrix field (an array of rows of numbers) into one contiguous
 * row-major buffer. name is the field's name in messages ("X").
 * expect_d, when nonzero, is the number of features every row must have
 * (messages then say "the model expects"). Caller owns *X (free).
 */
int api_get_matrix(const cJSON *item, const char *name, size_t expect_d,
                   double **X, size_t *n, size_t *d, api_error *e);

/* Optional number field of obj; *out keeps its default when absent.
 * path prefixes the key in messages ("params"). Finite numbers only. */
int api_opt_number(const cJSON *obj, const char *path, const char *key,
                   double *out, api_error *e);
/* The same for a whole number in [lo, hi]. */
int api_opt_integer(const cJSON *obj, const char *path, const char *key,
                    long lo, long hi, long *out, api_error *e);
int api_opt_bool(const cJSON *obj, const char *path, const char *key,
                 int *out, api_error *e);

/* Rejects keys of obj not in the NULL-terminated list allowed. */
int api_check_keys(const cJSON *obj, const char *path,
                   const char *const *allowed, api_error *e);

/* "array", "string", ... for messages. */
const char *api_type_name(const cJSON *item);

#endif
