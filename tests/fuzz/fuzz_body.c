/*
 * fuzz_body.c - libFuzzer target for the request body reader.
 *
 * Each input is a request body. It goes through:
 *   - api_parse_body with the fit keys and api_parse_object (the direct
 *     matrix reader and the cJSON fallback), which must agree: both
 *     succeed or both fail with the same status, code and message, and
 *     when both succeed X reads to the same doubles either way;
 *   - api_fit_parse and api_fit_bytes (no fit is run), preprocess and
 *     search members included, all JSON and as a binary body (the JSON
 *     up to the last '}', the rest the tensors' bytes);
 *   - api_predict on a small krr and a small svc model (labels), and
 *     api_project on a small kpca model, with the predict keys; api_score
 *     on all three; the Open Inference Protocol's infer on all three,
 *     all JSON and with the binary tensor data extension (the JSON
 *     header up to the last '}', the rest its tail); api_predict,
 *     api_score and infer on a krr model of
 *     strings (spectrum kernel, max_length 16) and one of a precomputed
 *     kernel, whose X (BYTES tensors, kernel values) is read otherwise.
 * Every answer and error must be UTF-8 JSON text with no inf or nan in
 * it. A disagreement or a bad answer aborts, so libFuzzer reports it.
 *
 * Thread-safety: libFuzzer calls it from one thread; the models are
 * built once and only read.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api_fit.h"
#include "api_json.h"
#include "api_predict.h"
#include "api_score.h"
#include "api_text.h"
#include "api_v2.h"
#include "km.h"

static km_model *krr, *svc, *kpca, *str, *pre;

static void fail(const char *what, const char *detail)
{
    fprintf(stderr, "fuzz_body: %s: %s\n", what, detail ? detail : "");
    abort();
}

/* Text an answer or an error may hold: UTF-8; in an answer, no inf or
 * nan outside its strings (a v2 answer echoes the client's id). An error
 * may quote the client's "inf". */
static void check_text(const char *s, size_t len, const char *what,
                       int answer)
{
    int in_string = 0;
    for (size_t i = 0; i < len;) {
        size_t n = api_utf8_char(s + i, len - i);
        if (!n)
            fail(what, "not UTF-8");
        if (s[i] == '"')
            in_string = !in_string;
        else if (in_string && s[i] == '\\')
            n++; /* the escaped character */
        else if (answer && !in_string && (!strncasecmp(s + i, "nan", 3) ||
                                          !strncasecmp(s + i, "inf", 3)))
            fail(what, s);
        i += n;
    }
}

static void check_error(const api_error *e)
{
    char *json = api_error_json(e);
    if (!json)
        fail("api_error_json", "out of memory");
    check_text(json, strlen(json), "error", 0);
    free(json);
}

static km_model *fitted(km_status st, km_model *m, const km_error *err)
{
    if (st != KM_OK)
        fail("setting up the models", err->message);
    km_model_set_identity(m, "fz", 1, 0);
    return m;
}

static void setup(void)
{
    static const double X[] = {0, 0, 1, 0, 0, 1, 1, 1, 2, 1, 1, 2};
    static const double y[] = {0, 1, 1, 0, 2, 3};
    static const int cls[] = {0, 1, 1, 0, 1, 0};
    static const char *const labels[] = {"hi", "lo"};
    km_kernel k;
    km_error err;
    km_model *m = NULL;
    km_krr_params kp = km_krr_params_default();
    km_svm_params sp = km_svm_params_default();
    km_kpca_params pp = km_kpca_params_default();
    pp.n_components = 2;
    km_kernel_init(&k, KM_KERNEL_LINEAR);
    krr = fitted(km_krr_fit(&k, &kp, X, 6, 2, y, 1, NULL, &m, &err), m, &err);
    km_kernel_init(&k, KM_KERNEL_RBF);
    svc = fitted(km_svc_fit(&k, &sp, X, 6, 2, cls, 2, NULL, &m, &err), m, &err);
    if (km_model_set_labels(svc, labels, 2, 0, &err) != KM_OK)
        fail("labels", err.message);
    kpca = fitted(km_kpca_fit(&k, &pp, X, 6, 2, NULL, &m, &err), m, &err);

    /* strings, packed as the API packs them; a precomputed Gram */
    static const char *const s[] = {"acgt", "ggca", "tacg", "ccgga", "at", ""};
    size_t len[6], d = km_string_width(16);
    double S[6 * 4], G[6 * 6], P[6 * 7];
    for (int i = 0; i < 6; i++)
        len[i] = strlen(s[i]);
    if (d > 4 || km_strings_pack(s, len, 6, d, S, &err) != KM_OK)
        fail("packing the strings", err.message);
    km_kernel_init(&k, KM_KERNEL_SPECTRUM);
    k.length = 2;
    str = fitted(km_krr_fit(&k, &kp, S, 6, d, y, 1, NULL, &m, &err), m, &err);
    if (km_model_set_max_length(str, 16, &err) != KM_OK)
        fail("max_length", err.message);
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 6; j++)
            G[i * 6 + j] = i == j ? 2.0 : 1.0 / (1 + i + j);
    km_precomputed_pack(G, 6, 6, 1, P);
    km_kernel_init(&k, KM_KERNEL_PRECOMPUTED);
    pre = fitted(km_krr_fit(&k, &kp, P, 6, 7, y, 1, NULL, &m, &err), m, &err);
}

/* The direct reader and cJSON agree on the body and on its X. */
static void same_either_way(const char *body, size_t len)
{
    api_body b;
    cJSON *root = NULL;
    api_error e1 = {0}, e2 = {0};
    int r1 = api_parse_body(body, len, api_fit_matrix_keys, &b, &e1);
    int r2 = api_parse_object(body, len, &root, &e2);
    if (r1 != r2)
        fail("direct reader and cJSON disagree", r1 ? e1.message : e2.message);
    if (r1) {
        if (e1.http != e2.http || strcmp(e1.code, e2.code) ||
            strcmp(e1.message, e2.message))
            fail("the two errors differ", e1.message);
        check_error(&e1);
        api_body_free(&b);
        return;
    }
    double *X1 = NULL, *X2 = NULL;
    size_t n1 = 0, d1 = 0, n2 = 0, d2 = 0;
    r1 = api_body_matrix(&b, "X", 0, &X1, &n1, &d1, &e1);
    r2 = api_get_matrix(cJSON_GetObjectItemCaseSensitive(root, "X"), "X", 0,
                        &X2, &n2, &d2, &e2);
    if (r1 != r2 || (r1 && strcmp(e1.message, e2.message)))
        fail("X reads differently", r1 ? e1.message : e2.message);
    if (!r1 && (n1 != n2 || d1 != d2 ||
                memcmp(X1, X2, n1 * d1 * sizeof *X1)))
        fail("X reads to other numbers", "");
    free(X1);
    free(X2);
    cJSON_Delete(root);
    api_body_free(&b);
}

/* A fit body as the route takes it (read_body): all JSON, and as a
 * binary body, its JSON ending at the body's last '}' and the bytes after
 * it the tensors' (json < len). */
static void fit_parse(const char *body, size_t len, size_t json)
{
    api_body b;
    api_error e;
    api_fit_request req;
    if (api_parse_body(body, json, api_fit_matrix_keys, &b, &e) == 0) {
        b.tail = (api_tail){body + json, len - json, 0, json < len};
        if (api_fit_parse(&b, &req, &e) == 0)
            (void)api_fit_bytes(&req);
        else
            check_error(&e);
        api_fit_request_cleanup(&req);
    }
    api_body_free(&b);
}

typedef int (*answer_fn)(const km_model *, api_body *, api_text *, size_t *,
                         api_error *);

static void answer(const char *body, size_t len, const km_model *m,
                   answer_fn fn, const char *const *keys)
{
    api_body b;
    api_error e;
    api_text out = {0};
    size_t rows = 0;
    if (api_parse_body(body, len, keys, &b, &e) == 0) {
        if (fn(m, &b, &out, &rows, &e) == 0) {
            check_text(out.buf, out.len, "answer", 1);
            free(out.buf);
        } else {
            check_error(&e);
        }
    }
    api_body_free(&b);
}

/* An infer as the route takes it: all JSON (no header), and with the
 * binary tensor data extension, the JSON header ending at the body's last
 * '}' and the bytes after it its tail. A binary answer's JSON header must
 * be JSON text as any answer. */
static void infer(const char *body, size_t len, const km_model *m)
{
    char header[24];
    const char *last = NULL;
    for (size_t i = 0; i < len; i++)
        if (body[i] == '}')
            last = body + i;
    for (int binary = 0; binary < 2; binary++) {
        api_v2_answer out;
        api_error e;
        if (binary) {
            if (!last)
                return;
            snprintf(header, sizeof header, "%zu",
                     (size_t)(last - body) + 1);
        }
        if (api_v2_infer_request(m, body, len, binary ? header : NULL, NULL,
                                 &out, &e) == 0) {
            check_text(out.buf, out.header_len ? out.header_len : out.len,
                       "infer answer", 1);
            free(out.buf);
        } else {
            check_error(&e);
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!krr)
        setup();
    /* Not NUL-terminated, as bodies from the network are not. */
    char *body = malloc(size ? size : 1);
    if (!body)
        return 0;
    memcpy(body, data, size);
    same_either_way(body, size);
    fit_parse(body, size, size);
    size_t json = size;
    while (json > 0 && body[json - 1] != '}')
        json--;
    if (json > 0 && json < size)
        fit_parse(body, size, json);
    answer(body, size, krr, api_predict, api_predict_matrix_keys);
    answer(body, size, svc, api_predict, api_predict_matrix_keys);
    answer(body, size, kpca, api_project, api_predict_matrix_keys);
    answer(body, size, krr, api_score, api_score_matrix_keys);
    answer(body, size, svc, api_score, api_score_matrix_keys);
    answer(body, size, kpca, api_score, api_score_matrix_keys);
    infer(body, size, krr);
    infer(body, size, svc);
    infer(body, size, kpca);
    for (int i = 0; i < 2; i++) {
        const km_model *m = i ? pre : str;
        answer(body, size, m, api_predict, api_predict_matrix_keys);
        answer(body, size, m, api_score, api_score_matrix_keys);
        infer(body, size, m);
    }
    free(body);
    return 0;
}
