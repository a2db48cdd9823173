/*
 * fuzz_model_file.c - libFuzzer target: model files as hostile input.
 *
 * The input is a model file without its last four bytes, the checksum:
 * the target appends a correct CRC-32, so that mutations reach the
 * loader's own checks instead of nearly all stopping at a checksum
 * mismatch. (An input of fewer than KM_MODEL_HEADER_BYTES is used as it
 * is.) Each input is loaded from the buffer and through a stdio stream,
 * which must agree. A model that loads is used as the server would use
 * it: its metadata as JSON (which must be UTF-8 and parse back); every
 * output its algorithm offers (the descriptor's, km_algorithm_outputs:
 * those the model was not fitted for must be refused), on one row of
 * zeros and on a batch that spans three of the blocks a preprocessed
 * model predicts in, each answer in a buffer of exactly the width core
 * gives it (km_model_answer_width), which must be written whole (labels
 * and cluster ids in range, labels written as the predict answer writes
 * them); and a save that gives back the same bytes (a file of format
 * version 1 is saved as version 2, which must load and save back to
 * itself). km_model_load_bytes (the admission of an import) refuses only
 * what the load refuses, and for a model that loads gives its bytes.
 * Any crash, leak, sanitizer report, or a disagreement aborts.
 * The batch is asked only of small models (MAX_BATCH_WORK), which every
 * seed is, so that a mutation that grows a model does not slow the run.
 *
 * Seed corpus: tests/fuzz/corpus/fuzz_model_file/, small valid files
 * without their checksum, made by tests/fuzz/make_model_corpus.py: each
 * algorithm and file form (every solver's, an imported LIBSVM file's
 * with its vote order), each with and without preprocessing, and every
 * kernel.
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
/* A preprocessed model predicts through a scaled copy of X made one
 * block at a time (km_pre_block_rows). The batch spans three blocks
 * (2.5 of them: the last one partial). */
/* The batch is asked only of models it costs at most this much work:
 * rows x training rows x (features + training rows + answer width + 32),
 * about the operations of its kernel rows (32 for a kernel map's exp), a
 * variance's solve and an answer; about 0.1 s under the sanitizers. So
 * an input that a mutation made large does not slow the run: what the
 * batch checks, that blocks join up, needs no large model. The seeds
 * have 16 features (a batch of 20480 rows) and at most 12 training rows,
 * within it. */
#define MAX_BATCH_WORK ((double)(1u << 24))
#define MAX_BATCH_VALUES ((size_t)1 << 23)

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

/* What an answer that succeeds left unwritten still holds: a quiet NaN
 * whose payload no arithmetic makes (a computed NaN is the default one;
 * one that adds to the buffer unwritten keeps this payload). */
static const uint64_t UNWRITTEN = 0x7ffab10cdeadbeefULL;

static void fill_unwritten(double *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        memcpy(&v[i], &UNWRITTEN, sizeof UNWRITTEN);
}

static int all_written(const double *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!memcmp(&v[i], &UNWRITTEN, sizeof UNWRITTEN))
            return 0;
    return 1;
}

/* Asks m for one answer (a KM_OUT_* flag) on the n rows of X, in a
 * buffer of exactly the size km_model_answer_width says (as every caller
 * sizes it: the API's answers), and checks what a caller relies on:
 * every value written, labels and cluster ids in range. */
static km_status ask(const km_model *m, unsigned answer, const double *X,
                     size_t n)
{
    km_error err;
    km_status st;
    if (answer & (KM_OUT_LABELS | KM_OUT_CLUSTERS)) {
        int *idx = malloc(n * sizeof *idx);
        if (!idx)
            return KM_ENOMEM;
        for (size_t i = 0; i < n; i++)
            idx[i] = -1;
        st = km_predict_labels(m, X, n, idx, &err);
        size_t top = answer == KM_OUT_LABELS ? km_model_n_labels(m)
                                             : km_kkmeans_n_clusters(m);
        for (size_t i = 0; st == KM_OK && i < n; i++)
            CHECK(idx[i] >= 0 && (size_t)idx[i] < top);
        if (st == KM_OK && answer == KM_OUT_LABELS) {
            /* labels written as the predict answer writes them */
            api_text t = {0};
            api_model_label_text(&t, m, (size_t)idx[0]);
            api_model_label_text(&t, m, (size_t)idx[n - 1]);
            free(t.buf);
        }
        free(idx);
        return st;
    }
    /* a covariance of more rows than it answers is refused before it
     * writes: the API makes no n x n buffer for it */
    int big_cov = answer == KM_OUT_COVARIANCE && n > KM_COV_MAX_ROWS;
    size_t cells = big_cov ? 1 : n * km_model_answer_width(m, answer, n);
    double *out = malloc((cells ? cells : 1) * sizeof *out);
    if (!out)
        return KM_ENOMEM;
    fill_unwritten(out, cells);
    st = km_predict(m, answer, X, n, out, &err);
    CHECK(!big_cov || st != KM_OK);
    if (st == KM_OK)
        CHECK(cells > 0 && all_written(out, cells));
    free(out);
    return st;
}

/* Every answer m's algorithm offers (the descriptor's outputs, so an
 * algorithm or output added later is fuzzed without a line here), on
 * the n rows of X. One the model does not offer (an svc fitted without
 * probability) is refused; one it offers answers, or runs out of
 * memory; but a file's scaling may be so extreme that a row scales past
 * double range, which the predict refuses (KM_EINVAL naming the row), as
 * the API's 400 does. */
static void ask_all(const km_model *m, const double *X, size_t n)
{
    unsigned offers = km_algorithm_outputs(km_model_algorithm(m));
    unsigned outs = km_model_outputs(m);
    CHECK((outs & ~offers) == 0);
    for (unsigned a = 1; a && a <= offers; a <<= 1) {
        if (!(offers & a))
            continue;
        km_status st = ask(m, a, X, n);
        if (!(outs & a))
            CHECK(st != KM_OK);
        else
            CHECK(st == KM_OK || st == KM_ENOMEM ||
                  (st == KM_EINVAL &&
                   (km_model_preprocess(m).x_shift ||
                    (a == KM_OUT_COVARIANCE && n > KM_COV_MAX_ROWS))));
    }
}

/* The widest answer to n rows of m, other than a covariance's. */
static size_t widest(const km_model *m, size_t n)
{
    size_t w = km_model_n_outputs(m); /* an inverse map reads as many */
    unsigned offers = km_algorithm_outputs(km_model_algorithm(m));
    for (unsigned a = 1; a && a <= offers; a <<= 1)
        if ((offers & a) && a != KM_OUT_COVARIANCE) {
            size_t aw = km_model_answer_width(m, a, n);
            w = aw > w ? aw : w;
        }
    return w;
}

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

    /* Every answer, through core's generic predict (as the API asks for
     * them: the model's preprocessing included), on one row of zeros
     * (the inverse map reads it as zero projections) ... */
    size_t d = km_model_n_features(m), ns = km_model_n_samples(m);
    if (d > MAX_PREDICT_FEATURES)
        return;
    size_t in = d > km_model_n_outputs(m) ? d : km_model_n_outputs(m);
    in = in ? in : 1;
    double *x = calloc(in, sizeof *x);
    if (!x)
        return;
    ask_all(m, x, 1);
    free(x);

    /* ... and on a batch of zeros that spans three blocks, where a
     * width computed apart from the model's (km_model_answer_width)
     * writes past the answer or leaves part of it unwritten. */
    size_t b = km_pre_block_rows(d);
    size_t n = 2 * b + (b + 1) / 2;
    size_t w = widest(m, n);
    if ((double)n * (double)ns * (double)(d + ns + w + 32) > MAX_BATCH_WORK ||
        n * (in > w ? in : w) > MAX_BATCH_VALUES)
        return;
    double *X = calloc(n * in, sizeof *X);
    if (!X)
        return;
    ask_all(m, X, n);
    free(X);
}

/* OpenBLAS's (not in its headers here, as core/solvers/km_svm_screen.c). */
void openblas_set_num_threads(int n);

/* One BLAS thread: the batch's products are small, and threads that
 * spin between them only take the CPU from the fuzzing. */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    openblas_set_num_threads(1);
    return 0;
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

    /* What an import is admitted by, read before the load: refused only
     * where the load refuses, and for a model that loads, kept is what
     * it holds (km_model_bytes), peak at least that. */
    km_load_bytes lb;
    km_status st3 = km_model_load_bytes(buf, len, &lb, &err2);
    CHECK(st3 == KM_OK || st != KM_OK);
    CHECK(!m || (lb.kept == km_model_bytes(m) && lb.peak >= lb.kept));

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
