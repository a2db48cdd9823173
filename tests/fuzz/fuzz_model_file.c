/*
 * fuzz_model_file.c - libFuzzer target: model files as hostile input.
 *
 * The input is a model file without its last four bytes, the checksum:
 * the target appends a correct CRC-32, so that mutations reach the
 * loader's own checks instead of nearly all stopping at a checksum
 * mismatch. (An input of fewer than KM_MODEL_HEADER_BYTES is used as it
 * is.) Each input is loaded from the buffer and through a stdio stream,
 * which must agree. A model that loads is used as the server would use
 * it: its metadata as JSON (which must be UTF-8 and parse back), a
 * one-row prediction or projection of zeros with every output it offers
 * (labels written as the predict answer writes them), and a save that
 * gives back the same bytes (a file of format version 1 is saved as
 * version 2, which must load and save back to itself). Any crash, leak, sanitizer report, or a
 * disagreement aborts.
 *
 * Seed corpus: tests/fuzz/corpus/fuzz_model_file/, small valid files of
 * each algorithm and kernel without their checksum (made by
 * tests/fuzz/make_model_corpus.py).
 */
#include <cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_model.h"
#include "api_text.h"
#include "km.h"

/* Predictions are skipped for wider models: what is fuzzed is the
 * loader; a row of 2^24 zeros only costs time. */
#define MAX_PREDICT_FEATURES 4096

static uint32_t crc32_ref(const unsigned char *p, size_t n)
{
    static uint32_t table[256];
    if (!table[1])
        for (uint32_t i = 0; i < 256; i++) {
            uint32_t c = i;
            for (int b = 0; b < 8; b++)
                c = c & 1 ? (c >> 1) ^ 0xEDB88320u : c >> 1;
            table[i] = c;
        }
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++)
        c = table[(c ^ p[i]) & 0xFF] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

static int utf8_ok(const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        size_t len = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2
                     : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
        if (!len || i + len > n)
            return 0;
        for (size_t j = 1; j < len; j++)
            if ((s[i + j] & 0xC0) != 0x80)
                return 0;
        i += len;
    }
    return 1;
}

#define CHECK(cond)                                                          \
    do {                                                                     \
        if (!(cond)) {                                                       \
            fprintf(stderr, "fuzz_model_file: %s failed at line %d\n",       \
                    #cond, __LINE__);                                        \
            abort();                                                         \
        }                                                                    \
    } while (0)

static void use(const km_model *m)
{
    /* Metadata, as GET /v1/models writes it. */
    cJSON *meta = api_model_json(m);
    if (meta) {
        char *text = cJSON_PrintUnformatted(meta);
        if (text) {
            CHECK(utf8_ok((const unsigned char *)text, strlen(text)));
            cJSON *back = cJSON_Parse(text);
            CHECK(back != NULL);
            cJSON_Delete(back);
            free(text);
        }
        cJSON_Delete(meta);
    }

    /* Every answer the model offers, through core's generic predict (as
     * the API asks for them: the model's preprocessing included), so an
     * algorithm added later is fuzzed without a line here. */
    size_t d = km_model_n_features(m), k = km_model_n_outputs(m);
    if (d > MAX_PREDICT_FEATURES)
        return;
    unsigned outs = km_model_outputs(m);
    size_t nl = km_model_n_labels(m), sc = km_model_score_columns(m, NULL);
    size_t width = k > d ? k : d;
    width = width > nl ? width : nl;
    width = width > sc ? width : sc;
    double *x = calloc(width ? width : 1, sizeof *x);
    double *out = calloc(width ? width : 1, sizeof *out);
    if (!x || !out)
        goto done;
    km_error err;
    km_status st = KM_OK;
    if (outs & (KM_OUT_LABELS | KM_OUT_CLUSTERS)) {
        int label = -1;
        st = km_predict_labels(m, x, 1, &label, &err);
        if (st == KM_OK && (outs & KM_OUT_LABELS)) {
            CHECK(label >= 0 && (size_t)label < nl);
            api_text t = {0};
            api_model_label_text(&t, m, (size_t)label);
            free(t.buf);
        }
        if (st == KM_OK && (outs & KM_OUT_CLUSTERS))
            CHECK(label >= 0 && (size_t)label < km_kkmeans_n_clusters(m));
    }
    /* one row in: a covariance is 1 x 1; the inverse map reads k zeros */
    static const unsigned each[] = {
        KM_OUT_VALUES,      KM_OUT_SCORES,    KM_OUT_PROBABILITIES,
        KM_OUT_PROJECTIONS, KM_OUT_VARIANCES, KM_OUT_COVARIANCE,
        KM_OUT_INVERSE};
    for (size_t i = 0; i < sizeof each / sizeof *each && st == KM_OK; i++)
        if (outs & each[i])
            st = km_predict(m, each[i], x, 1, out, &err);
    /* A loaded model predicts, or runs out of memory: nothing else; but
     * a file's scaling may be so extreme that a row of zeros scales past
     * double range, which the predict refuses (KM_EINVAL naming the row),
     * as the API's 400 does. */
    CHECK(st == KM_OK || st == KM_ENOMEM ||
          (st == KM_EINVAL && km_model_preprocess(m).x_shift));
done:
    free(x);
    free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t len = size < KM_MODEL_HEADER_BYTES ? size : size + 4;
    unsigned char *buf = malloc(len ? len : 1);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    if (len > size) {
        uint32_t c = crc32_ref(buf, size);
        for (int i = 0; i < 4; i++)
            buf[size + i] = (unsigned char)(c >> (8 * i));
    }

    km_model *m = NULL, *m2 = NULL;
    km_error err, err2;
    km_status st = km_model_load_buffer(buf, len, &m, &err);
    CHECK(st == KM_OK || st == KM_ECORRUPT || st == KM_EFORMAT ||
          st == KM_ENOMEM);
    CHECK((st == KM_OK) == (m != NULL));

    /* The stream reader agrees. */
    FILE *f = len ? fmemopen(buf, len, "rb") : NULL;
    if (f) {
        km_status st2 = km_model_load_file(f, (size_t)1 << 30, &m2, &err2);
        CHECK(st2 == st || st == KM_ENOMEM || st2 == KM_ENOMEM);
        fclose(f);
    }

    if (m) {
        use(m);
        unsigned char *again = NULL;
        size_t again_len = 0;
        if (km_model_save_buffer(m, &again, &again_len, &err) == KM_OK) {
            if (buf[4] == 2) {
                CHECK(again_len == len && memcmp(again, buf, len) == 0);
            } else {
                /* an older version is saved as the current one, which
                 * loads and saves back to the same bytes */
                km_model *m3 = NULL;
                unsigned char *third = NULL;
                size_t third_len = 0;
                CHECK(km_model_load_buffer(again, again_len, &m3, &err) ==
                      KM_OK);
                CHECK(km_model_save_buffer(m3, &third, &third_len, &err) ==
                      KM_OK);
                CHECK(third_len == again_len &&
                      memcmp(third, again, again_len) == 0);
                free(third);
                km_model_free(m3);
            }
            free(again);
        }
    }
    km_model_free(m);
    km_model_free(m2);
    free(buf);
    return 0;
}
