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

    size_t d = km_model_n_features(m), k = km_model_n_outputs(m);
    if (d > MAX_PREDICT_FEATURES)
        return;
    double *x = calloc(d, sizeof *x);
    size_t width = k;
    if (km_model_n_classes(m)) { /* svc, klr */
        size_t c = km_model_n_classes(m), s = km_model_score_columns(m, NULL);
        width = s > c ? s : c;
    }
    if (km_model_algorithm(m) == KM_ALGO_KPCA && d > width)
        width = d;
    double *out = calloc(width ? width : 1, sizeof *out);
    if (!x || !out)
        goto done;
    km_error err;
    km_status st = KM_OK;
    switch (km_model_algorithm(m)) {
    case KM_ALGO_KRR:
        st = km_krr_predict(m, x, 1, out, &err);
        break;
    case KM_ALGO_SVR:
        st = km_svr_predict(m, x, 1, out, &err);
        break;
    case KM_ALGO_SVC: {
        int label = -1;
        st = km_svc_predict(m, x, 1, &label, &err);
        if (st == KM_OK) {
            CHECK(label >= 0 && (size_t)label < km_svc_n_classes(m));
            api_text t = {0};
            api_model_label_text(&t, m, (size_t)label);
            free(t.buf);
        }
        if (st == KM_OK)
            st = km_svc_decision(m, x, 1, out, &err);
        if (st == KM_OK && km_svc_has_probability(m))
            st = km_svc_probability(m, x, 1, out, &err);
        break;
    }
    case KM_ALGO_KLR: {
        int label = -1;
        st = km_klr_predict(m, x, 1, &label, &err);
        if (st == KM_OK) {
            CHECK(label >= 0 && (size_t)label < km_model_n_classes(m));
            api_text t = {0};
            api_model_label_text(&t, m, (size_t)label);
            free(t.buf);
        }
        if (st == KM_OK)
            st = km_klr_decision(m, x, 1, out, &err);
        if (st == KM_OK)
            st = km_klr_probability(m, x, 1, out, &err);
        break;
    }
    case KM_ALGO_KPCA:
        st = km_kpca_project(m, x, 1, out, &err);
        if (st == KM_OK && km_kpca_has_inverse(m)) {
            double *p = calloc(k, sizeof *p);
            if (p)
                st = km_kpca_inverse(m, p, 1, out, &err);
            free(p);
        }
        break;
    default:
        CHECK(0);
    }
    /* A loaded model predicts, or runs out of memory: nothing else. */
    CHECK(st == KM_OK || st == KM_ENOMEM);
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
