/*
 * api_transfer.h - models in and out: the bodies of
 * POST /v1/models/{name}/import and GET /v1/models/{name}/export, in
 * LIBSVM's model file format (text) or kmserve's own model file (kmm,
 * docs/model-format.md).
 *
 * Thread-safety: reentrant; reads models only.
 */
#ifndef API_TRANSFER_H
#define API_TRANSFER_H

#include <stddef.h>

#include "api_error.h"

typedef enum { API_FORMAT_LIBSVM, API_FORMAT_KMM } api_format;

/* The media types of the two formats. */
#define API_MEDIA_LIBSVM "text/plain"
#define API_MEDIA_KMM "application/octet-stream"

/* Whether the Content-Type ct is the media type mt, parameters such as
 * "; charset=utf-8" allowed after it (ct may be NULL: no). */
int api_media_is(const char *ct, const char *mt);

/* The query parameters an import or export takes: the format and, for a
 * LIBSVM import, n_features or n_training (given as text; NULL when
 * absent). */
typedef struct api_transfer_query {
    const char *format;
    const char *n_features;
    const char *n_training;
} api_transfer_query;

/* A LIBSVM import's width, which its file does not record (core's
 * km_libsvm_read): n_features of a kernel on rows of numbers, n_training
 * of a precomputed one; 0 when not given. */
typedef struct api_import_width {
    size_t n_features, n_training;
} api_import_width;

/* Checks a query parameter's name: 0 if the route takes it, else -1
 * with a 400 naming it (export: format; import: also n_features and
 * n_training). */
int api_transfer_param(const char *name, int import, api_error *e);

/*
 * The format of an import: from the Content-Type (text/plain: libsvm,
 * application/octet-stream: kmm) and the query's format, which, when
 * given, must agree with it (else 415). *w: the query's n_features and
 * n_training, or 0; given only with libsvm (else 400).
 */
int api_import_format(const api_transfer_query *q, const char *content_type,
                      api_format *f, api_import_width *w, api_error *e);
/* The format of an export: the query's format, libsvm or kmm (400 when
 * missing or another). */
int api_export_format(const api_transfer_query *q, api_format *f,
                      api_error *e);

/* Checks an import's body without building the model (a LIBSVM file in
 * full, a kmm file's header against its size and its records before the
 * payload) and gives the bytes the import holds at its peak, the body's
 * own included: the body, and the read's peak or the model with the
 * store's file of it (core's km_model_load_bytes and km_libsvm_bytes
 * give the read's). 400 naming the line and field (libsvm) or the fault
 * (kmm). */
int api_import_bytes(api_format f, const char *body, size_t len,
                     const api_import_width *w, size_t *bytes, api_error *e);
/* The model of an import's body (caller owns *out): a kmm file through
 * core's reader (checksum and every check of a load), a LIBSVM file
 * through km_libsvm_read. 400 when the body is not one. */
int api_import(api_format f, const char *body, size_t len,
               const api_import_width *w, km_model **out, api_error *e);
/* The body of an export (caller frees *out) and its media type: 409 when
 * LIBSVM cannot hold the model, saying why. */
int api_export(const km_model *m, api_format f, char **out, size_t *len,
               const char **media_type, api_error *e);

#endif
