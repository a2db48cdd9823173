/*
 * fuzz_libsvm.c - libFuzzer target: LIBSVM model files as hostile input.
 *
 * The input is the text of a LIBSVM model file, as the body of
 * POST /v1/models/{name}/import?format=libsvm. It goes through
 * api_import_bytes (the scan: nothing built) and, when the model it
 * describes is small enough to build quickly, api_import (the read);
 * the two must agree (both succeed or both fail with the same message),
 * and the bytes the first gives hold the body and the model the second
 * makes.
 * Every error must be a 400 whose message names the LIBSVM model. A
 * model that reads is used as the server would: its metadata as JSON, a
 * one-row prediction of zeros with each output it offers; then it is
 * exported as LIBSVM text (always possible for an import) and that text
 * must read back to a model whose export is the same text (writing is a
 * fixed point) and whose prediction of the row is equal to the bit. It
 * is also saved as a kmm file, which must load back. Any crash, leak,
 * sanitizer report or disagreement aborts.
 *
 * A file that says "kernel_type precomputed" is read with n_training
 * PRE_TRAINING (its SV lines' rows must be within it); any other with
 * no width given.
 *
 * Seed corpus: tests/fuzz/corpus/fuzz_libsvm/, small model files of
 * each svm_type and kernel (one with CRLF line ends).
 */
#include <cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_model.h"
#include "api_transfer.h"
#include "km.h"

/* Builds only models of at most this many bytes: the scan is what
 * bounds the rest (a server admits larger ones against its budget). */
#define MAX_BUILD_BYTES ((size_t)64 << 20)
/* The training rows of a precomputed file's import. */
#define PRE_TRAINING 64

#define CHECK(cond)                                                          \
    do {                                                                     \
        if (!(cond)) {                                                       \
            fprintf(stderr, "fuzz_libsvm: %s failed at line %d\n", #cond,    \
                    __LINE__);                                               \
            abort();                                                         \
        }                                                                    \
    } while (0)

/* One row of zeros through every output m offers, into out (room for
 * 256 * 255 / 2 values); returns how many were written. */
static size_t predict_zeros(const km_model *m, double *out)
{
    size_t d = km_model_n_features(m), n = 0;
    double *x = calloc(d, sizeof *x);
    int label;
    km_error err;
    CHECK(x);
    unsigned outs = km_model_outputs(m);
    if (outs & KM_OUT_LABELS) {
        CHECK(km_predict_labels(m, x, 1, &label, &err) == KM_OK);
        CHECK(label >= 0 && (size_t)label < km_model_n_labels(m));
        out[n++] = label;
    }
    static const unsigned answers[] = {KM_OUT_VALUES, KM_OUT_SCORES,
                                       KM_OUT_PROBABILITIES};
    for (size_t i = 0; i < sizeof answers / sizeof *answers; i++)
        if (outs & answers[i]) {
            km_status st = km_predict(m, answers[i], x, 1, out + n, &err);
            /* a kernel of huge parameters may overflow: not an error */
            CHECK(st == KM_OK || st == KM_EPROBLEM);
            n += km_model_answer_width(m, answers[i], 1);
        }
    free(x);
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    size_t bytes = 0;
    api_error e1, e2;
    static const char pre[] = "kernel_type precomputed";
    api_import_width w = {0, 0};
    for (size_t i = 0; i + sizeof pre - 1 <= size && !w.n_training; i++)
        if (!memcmp(text + i, pre, sizeof pre - 1))
            w.n_training = PRE_TRAINING;
    int bad = api_import_bytes(API_FORMAT_LIBSVM, text, size, &w, &bytes, &e1);
    if (bad) {
        CHECK(e1.http == 400 && strstr(e1.message, "LIBSVM model"));
        return 0;
    }
    if (bytes > MAX_BUILD_BYTES)
        return 0;
    km_model *m = NULL, *back = NULL;
    CHECK(api_import(API_FORMAT_LIBSVM, text, size, &w, &m, &e2) == 0);
    /* the import's estimate holds the body and the model it makes */
    CHECK(bytes >= size + km_model_bytes(m));
    cJSON *meta = api_model_json(m);
    CHECK(meta);
    cJSON_Delete(meta);
    static double a[40000], b[40000];
    size_t na = predict_zeros(m, a);

    char *out1 = NULL, *out2 = NULL;
    size_t len1, len2;
    const char *media;
    CHECK(api_export(m, API_FORMAT_LIBSVM, &out1, &len1, &media, &e1) == 0);
    /* the model's own width back: its features, or its training rows */
    api_import_width wb = {km_model_n_features(m), 0};
    if (km_kernel_input(km_model_kernel(m)) == KM_INPUT_PRECOMPUTED)
        wb = (api_import_width){0, km_kernel_input_width(km_model_kernel(m),
                                                         wb.n_features)};
    CHECK(api_import(API_FORMAT_LIBSVM, out1, len1, &wb, &back, &e2) == 0);
    CHECK(api_export(back, API_FORMAT_LIBSVM, &out2, &len2, &media, &e1) == 0);
    CHECK(len1 == len2 && !memcmp(out1, out2, len1));
    CHECK(predict_zeros(back, b) == na && !memcmp(a, b, na * sizeof *a));

    unsigned char *kmm;
    size_t klen;
    km_model *again = NULL;
    km_error err;
    CHECK(km_model_save_buffer(m, &kmm, &klen, &err) == KM_OK);
    CHECK(km_model_load_buffer(kmm, klen, &again, &err) == KM_OK);
    CHECK(predict_zeros(again, b) == na && !memcmp(a, b, na * sizeof *a));
    free(kmm);
    free(out1);
    free(out2);
    km_model_free(m);
    km_model_free(back);
    km_model_free(again);
    return 0;
}
