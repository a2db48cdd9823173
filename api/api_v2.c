/*
 * api_v2.c - the Open Inference Protocol's model metadata and infer.
 *
 * The outputs a model offers come from core's table of answers
 * (KM_ANSWER_MAP: v2 name, datatype, KM_OUT_* flag; km_answer_offered
 * for the algorithm, less what the model's fit did not prepare:
 * km_model_outputs), so an answer or algorithm added to core needs
 * nothing new in this file. The values
 * come from api_answer_compute and are written by api_answer_text, as in
 * /v1 predict: the same numbers, the same shortest round-trip text.
 *
 * An input tensor is read strictly, as the model's kernel takes X (its
 * input kind, km_kernel_input): its name "X"; for rows of numbers a
 * datatype of the protocol's that is a number (FP64, FP32, the INT and
 * UINT types), a shape [rows, n_features] whose product is the number of
 * values in data, and data flat or nested as the shape (row-major), every
 * value a finite number that the datatype can hold; for a precomputed
 * kernel the same with shape [rows, n_training] (the kernel values
 * against the training rows, packed with their index column as /v1
 * does); for strings datatype BYTES, shape [rows] or [rows, 1], and data
 * rows strings (flat, or for [rows, 1] each in an array of one), read as
 * /v1 reads them (api_rows_from_strings, the model's max_length). Errors
 * name the member (inputs[0].data[3][1]) and what was expected; a
 * datatype of the wrong kind says what the model takes.
 *
 * Thread-safety: reentrant.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_json.h"
#include "api_predict.h"
#include "api_rows.h"
#include "api_tensor.h"
#include "api_v2.h"

const char *const api_v2_matrix_keys[] = {NULL};

/* The outputs are the answers of core's table (KM_ANSWER_MAP) that have a
 * v2 name, in its order: the first a model offers is its main one
 * (infer's default). Most outputs one request may name (each at most
 * once): every row. */
#define MAX_REQUESTED KM_ANSWER_COUNT

/* Whether m's algorithm offers o as a v2 output (the model may still lack
 * it). */
static int algorithm_offers(const km_model *m, const km_answer *o)
{
    return o->v2_name && km_answer_offered(o, km_model_algorithm(m));
}

static int model_offers(const km_model *m, const km_answer *o)
{
    return algorithm_offers(m, o) && (km_model_outputs(m) & o->flag);
}

/* The table's datatype, or for labels the model's: numeric class labels
 * are INT64 when every one is a whole number that a double holds
 * exactly, else FP64; text labels are BYTES. */
static const char *datatype_of(const km_model *m, const km_answer *o)
{
    if (o->v2_datatype)
        return o->v2_datatype;
    if (!km_model_labels_numeric(m))
        return "BYTES";
    for (size_t i = 0; i < km_model_n_labels(m); i++) {
        double v = strtod(km_model_label(m, i), NULL);
        if (v != floor(v) || fabs(v) > 9007199254740992.0)
            return "FP64";
    }
    return "INT64";
}

/* [rows] or [rows, width]; rows or width < 0 written as -1. */
static cJSON *shape_json(long long rows, long long width, int matrix)
{
    cJSON *a = cJSON_CreateArray();
    cJSON_AddItemToArray(a, cJSON_CreateNumber((double)rows));
    if (matrix)
        cJSON_AddItemToArray(a, cJSON_CreateNumber((double)width));
    return a;
}

static cJSON *tensor_json(const char *name, const char *datatype,
                          cJSON *shape)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", name);
    cJSON_AddStringToObject(o, "datatype", datatype);
    cJSON_AddItemToObject(o, "shape", shape);
    return o;
}

/* Whether an answer of this width is a matrix (rows of values). */
static int is_matrix(unsigned answer, size_t width)
{
    return width != 1 || answer == KM_OUT_COVARIANCE;
}

static km_input_kind input_kind(const km_model *m)
{
    return km_kernel_input(km_model_kernel(m));
}

/* Columns of a numeric X: n_features, or a precomputed model's kernel
 * values (one per training row). */
static size_t input_width(const km_model *m)
{
    return km_kernel_input_width(km_model_kernel(m), km_model_n_features(m));
}

cJSON *api_v2_model_json(const km_model *m, const uint64_t *versions,
                         size_t n_versions)
{
    char platform[64];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", km_model_name(m));
    cJSON *v = cJSON_AddArrayToObject(o, "versions");
    for (size_t i = 0; i < n_versions; i++) {
        char num[24];
        snprintf(num, sizeof num, "%llu", (unsigned long long)versions[i]);
        cJSON_AddItemToArray(v, cJSON_CreateString(num));
    }
    snprintf(platform, sizeof platform, "kmserve_%s",
             km_algorithm_name(km_model_algorithm(m)));
    cJSON_AddStringToObject(o, "platform", platform);
    cJSON *in = cJSON_AddArrayToObject(o, "inputs");
    /* X: strings (BYTES, one per row), or rows of numbers (a precomputed
     * model's: a kernel value per training row) */
    int strings = input_kind(m) == KM_INPUT_STRINGS;
    cJSON_AddItemToArray(in, tensor_json("X", strings ? "BYTES" : "FP64",
                                         shape_json(-1, (long long)
                                                    input_width(m),
                                                    !strings)));
    cJSON *out = cJSON_AddArrayToObject(o, "outputs");
    for (size_t i = 0; i < km_answer_count(); i++) {
        const km_answer *d = km_answer_at(i);
        if (!model_offers(m, d))
            continue;
        size_t w = km_model_answer_width(m, d->flag, 2);
        long long width = d->flag == KM_OUT_COVARIANCE ? -1 : (long long)w;
        cJSON_AddItemToArray(out, tensor_json(d->v2_name, datatype_of(m, d),
                                              shape_json(-1, width,
                                                         is_matrix(d->flag,
                                                                   w))));
    }
    return o;
}

size_t api_v2_infer_bytes(const km_model *m, const char *body, size_t len)
{
    /* the predict's bound twice (several outputs' text), and a cJSON node
     * and its text per number */
    size_t numbers = api_json_max_numbers(body, len);
    return 2 * api_predict_bytes(m, body, len) +
           numbers * (sizeof(cJSON) + 32);
}

/* ------------------------------------------------------------ the input */

/* What model m takes as X, for messages. */
static void input_takes(const km_model *m, char *buf, size_t len)
{
    size_t w = input_width(m);
    char list[128];
    api_datatype_list(list, sizeof list);
    switch (input_kind(m)) {
    case KM_INPUT_STRINGS:
        snprintf(buf, len, "strings of at most %zu bytes (its kernel takes "
                 "strings): datatype BYTES, shape [-1] or [-1, 1]",
                 km_model_max_length(m));
        break;
    case KM_INPUT_PRECOMPUTED:
        snprintf(buf, len, "kernel values against its %zu training rows (a "
                 "precomputed kernel): shape [-1, %zu] of a numeric datatype "
                 "(%s)", w, w, list);
        break;
    default:
        snprintf(buf, len, "rows of %zu numbers: shape [-1, %zu] of a "
                 "numeric datatype (%s)", w, w, list);
    }
}

/* The datatype: *dt one of datatypes, or NULL for BYTES; 400 when it is
 * not what model m takes. */
static int read_datatype(const km_model *m, const cJSON *t,
                         const api_datatype **dt, api_error *e)
{
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(t, "datatype");
    char takes[256];
    int strings = input_kind(m) == KM_INPUT_STRINGS;
    input_takes(m, takes, sizeof takes);
    if (!cJSON_IsString(d))
        return api_invalid(e, "inputs[0].datatype must be a string; model "
                           "\"%s\" takes %s", km_model_name(m), takes);
    *dt = api_datatype_find(d->valuestring);
    if (!*dt && strcmp(d->valuestring, "BYTES"))
        return api_invalid(e, "inputs[0].datatype %.40s is not supported: "
                           "model \"%s\" takes %s", d->valuestring,
                           km_model_name(m), takes);
    if (strings != !*dt)
        return api_invalid(e, "inputs[0].datatype is %s, but model \"%s\" "
                           "takes %s", d->valuestring, km_model_name(m),
                           takes);
    return 0;
}

/* shape's dimensions into dim (at most 2): 400 unless whole numbers from
 * 0 to 2^53 (expect describes the shape wanted). */
static int read_dims(const cJSON *s, int min, const char *expect,
                     double dim[2], int *n, api_error *e)
{
    *n = cJSON_IsArray(s) ? cJSON_GetArraySize(s) : 0;
    if (*n < min || *n > 2)
        return api_invalid(e, "inputs[0].shape must be %s", expect);
    for (int i = 0; i < *n; i++) {
        const cJSON *x = cJSON_GetArrayItem(s, i);
        if (!cJSON_IsNumber(x) || x->valuedouble != floor(x->valuedouble) ||
            x->valuedouble < 0 || x->valuedouble > API_TENSOR_MAX_DIM)
            return api_invalid(e, "inputs[0].shape[%d] must be a whole "
                               "number from 0 to 2^53", i);
        dim[i] = x->valuedouble;
    }
    if (dim[0] < 1)
        return api_invalid(e, "inputs[0].shape[0] is 0; give at least one "
                           "row");
    return 0;
}

/* shape: [rows, width], rows >= 1 (width: input_width). */
static int read_shape(const km_model *m, const cJSON *t, size_t *rows,
                      api_error *e)
{
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(t, "shape");
    size_t nf = input_width(m);
    int pre = input_kind(m) == KM_INPUT_PRECOMPUTED, n;
    char expect[96];
    double dim[2];
    snprintf(expect, sizeof expect, "an array of two whole numbers, [rows, "
             "%zu]", nf);
    if (read_dims(s, 2, expect, dim, &n, e))
        return -1;
    if (dim[1] != (double)nf)
        return api_invalid(e, "inputs[0].shape is [%.0f, %.0f]; the model "
                           "expects [-1, %zu] (%s %zu %s)", dim[0], dim[1],
                           nf, pre ? "kernel values against its" : "rows of",
                           nf, pre ? "training rows" : "features");
    /* rows * nf <= 2^53 * 2^24 would overflow size_t: the data bounds it */
    if (dim[0] > (double)(SIZE_MAX / (nf + 1)))
        return api_invalid(e, "inputs[0].shape [%.0f, %zu] holds more values "
                           "than a request can", dim[0], nf);
    *rows = (size_t)dim[0];
    return 0;
}

/* One value of data, checked against the datatype, into *out. */
static int read_value(const cJSON *x, const api_datatype *dt,
                      const char *where, double *out, api_error *e)
{
    if (!cJSON_IsNumber(x))
        return api_invalid(e, "inputs[0].data%s must be a number, not %s",
                           where, api_type_name(x));
    double v = x->valuedouble;
    if (!isfinite(v))
        return api_invalid(e, "inputs[0].data%s is not a finite number",
                           where);
    if (v < dt->lo || v > dt->hi || (dt->whole && v != floor(v)))
        return api_invalid(e, "inputs[0].data%s is %.17g, which %s cannot "
                           "hold", where, v, dt->name);
    *out = dt->fp32 ? (double)(float)v : v;
    return 0;
}

/* data: rows * d values, flat or as rows of d values (row-major). */
static int read_data(const cJSON *t, const api_datatype *dt, size_t rows,
                     size_t d, double *X, api_error *e)
{
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(t, "data");
    char where[64];
    if (!cJSON_IsArray(data))
        return api_invalid(e, "inputs[0].data must be an array of numbers, "
                           "flat or nested as shape [%zu, %zu]", rows, d);
    size_t n = (size_t)cJSON_GetArraySize(data);
    const cJSON *first = data->child;
    int nested = first && cJSON_IsArray(first);
    if (n != (nested ? rows : rows * d))
        return api_invalid(e, "inputs[0].data has %zu %s; shape [%zu, %zu] "
                           "needs %zu", n, nested ? "rows" : "values", rows,
                           d, nested ? rows : rows * d);
    size_t i = 0;
    for (const cJSON *x = data->child; x; x = x->next, i++) {
        if (!nested) {
            snprintf(where, sizeof where, "[%zu]", i);
            if (read_value(x, dt, where, &X[i], e))
                return -1;
            continue;
        }
        if (!cJSON_IsArray(x) || (size_t)cJSON_GetArraySize(x) != d)
            return api_invalid(e, "inputs[0].data[%zu] must be an array of "
                               "%zu numbers (data nested as shape [%zu, "
                               "%zu]), not %s of %d", i, d, rows, d,
                               api_type_name(x),
                               cJSON_IsArray(x) ? cJSON_GetArraySize(x) : 1);
        size_t j = 0;
        for (const cJSON *y = x->child; y; y = y->next, j++) {
            snprintf(where, sizeof where, "[%zu][%zu]", i, j);
            if (read_value(y, dt, where, &X[i * d + j], e))
                return -1;
        }
    }
    return 0;
}

/* ------------------------------------------------------------ binary */

/* What inputs[0].parameters claim of the bytes after the JSON header. */
typedef struct binary_in {
    const api_tail *tail; /* NULL or not given: the body is all JSON */
    int binary;              /* parameters.binary_data_size is there */
    size_t size;             /* its value */
} binary_in;

/* inputs[0].parameters: binary_data_size, when there, a whole number of
 * bytes, in a body with a JSON header, with no data beside it. */
static int read_input_parameters(const cJSON *t, binary_in *b, api_error *e)
{
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(t, "parameters");
    b->binary = 0;
    b->size = 0;
    if (!p)
        return 0;
    if (!cJSON_IsObject(p))
        return api_invalid(e, "inputs[0].parameters must be an object");
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(p, "binary_data_size");
    if (!s)
        return 0;
    if (!cJSON_IsNumber(s) || s->valuedouble != floor(s->valuedouble) ||
        s->valuedouble < 0 || s->valuedouble > API_TENSOR_MAX_DIM)
        return api_invalid(e, "inputs[0].parameters.binary_data_size must be "
                           "a whole number of bytes from 0 to 2^53");
    if (!b->tail || !b->tail->given)
        return api_invalid(e, "inputs[0].parameters.binary_data_size needs "
                           "the Inference-Header-Content-Length header (the "
                           "length of the JSON before the tensor's bytes)");
    if (cJSON_GetObjectItemCaseSensitive(t, "data"))
        return api_invalid(e, "inputs[0] has both data and "
                           "parameters.binary_data_size; give one of them");
    b->binary = 1;
    b->size = (size_t)s->valuedouble;
    return 0;
}

/* rows x nf values of datatype dt from the bytes after the JSON header:
 * binary_data_size must be what the shape takes, and be in the body;
 * every value finite (as JSON's numbers are). */
static int read_binary(const api_datatype *dt, const binary_in *b,
                       size_t rows, size_t nf, double **G, api_error *e)
{
    size_t values = rows * nf; /* read_shape: rows * (nf + 1) fits */
    if (values > SIZE_MAX / dt->width || values * dt->width != b->size)
        return api_invalid(e, "inputs[0].parameters.binary_data_size is %zu "
                           "bytes; shape [%zu, %zu] of %s (%zu bytes each) "
                           "takes %.0f", b->size, rows, nf, dt->name,
                           dt->width, (double)values * (double)dt->width);
    if (b->size > b->tail->len)
        return api_invalid(e, "inputs[0].parameters.binary_data_size is %zu "
                           "bytes, but only %zu follow the JSON header "
                           "(Inference-Header-Content-Length)", b->size,
                           b->tail->len);
    return api_tensor_values(dt, b->tail->bytes, rows, nf, "inputs[0]", G, e);
}

/* ------------------------------------------------------------ numbers */

/* A numeric X: rows x input_width values (JSON data, or binary), for a
 * precomputed model packed with their index column (new rows:
 * km_precomputed_pack). */
static int read_numbers(const km_model *m, const cJSON *t,
                        const api_datatype *dt, const binary_in *b,
                        double **X, size_t *rows, api_error *e)
{
    size_t nf = input_width(m);
    double *G = NULL;
    if (read_shape(m, t, rows, e))
        return -1;
    if (b->binary) {
        if (read_binary(dt, b, *rows, nf, &G, e))
            return -1;
    } else {
        /* the shape's values must all be in the body: data is checked
         * against it before anything of that size is allocated */
        const cJSON *data = cJSON_GetObjectItemCaseSensitive(t, "data");
        size_t have = cJSON_IsArray(data) ? (size_t)cJSON_GetArraySize(data)
                                          : 0;
        if (have != *rows && have != *rows * nf)
            return read_data(t, dt, *rows, nf, NULL, e); /* the mismatch */
        G = malloc(*rows * nf * sizeof *G);
        if (!G)
            return api_raise(e, API_PAYLOAD_TOO_LARGE, "not enough memory "
                             "for %zu rows", *rows);
        if (read_data(t, dt, *rows, nf, G, e)) {
            free(G);
            return -1;
        }
    }
    if (input_kind(m) != KM_INPUT_PRECOMPUTED) {
        *X = G;
        return 0;
    }
    *X = malloc(*rows * (nf + 1) * sizeof **X);
    if (*X)
        km_precomputed_pack(G, *rows, nf, 0, *X);
    free(G);
    if (!*X)
        return api_raise(e, API_PAYLOAD_TOO_LARGE, "not enough memory for "
                         "%zu rows", *rows);
    return 0;
}

/* A string model's X: shape [rows] or [rows, 1], data rows strings, flat
 * or (shape [rows, 1]) as rows of one string; read as /v1 reads them
 * (api_rows_from_strings, the model's max_length). */
static int read_strings(const km_model *m, const cJSON *t, double **X,
                        size_t *rows, api_error *e)
{
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(t, "shape");
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(t, "data");
    double dim[2];
    int nd;
    if (read_dims(s, 1, "[rows] or [rows, 1]: one string per row", dim, &nd,
                  e))
        return -1;
    if (nd == 2 && dim[1] != 1)
        return api_invalid(e, "inputs[0].shape is [%.0f, %.0f]; the model "
                           "expects [-1] or [-1, 1] (one string per row)",
                           dim[0], dim[1]);
    if (!cJSON_IsArray(data))
        return api_invalid(e, "inputs[0].data must be an array of %.0f "
                           "strings%s, not %s", dim[0],
                           nd == 2 ? " (flat, or each in an array of one)" : "",
                           api_type_name(data));
    size_t n = (size_t)cJSON_GetArraySize(data);
    if ((double)n != dim[0])
        return api_invalid(e, "inputs[0].data has %zu items; shape [%.0f%s] "
                           "needs %.0f strings", n, dim[0],
                           nd == 2 ? ", 1" : "", dim[0]);
    int nested = nd == 2 && cJSON_IsArray(data->child);
    const char **str = malloc(n * sizeof *str);
    size_t *len = malloc(n * sizeof *len), i = 0, d;
    int rc = 0;
    if (!str || !len)
        rc = api_raise(e, API_PAYLOAD_TOO_LARGE, "not enough memory for %zu "
                       "strings", n);
    for (const cJSON *c = data->child; c && !rc; c = c->next, i++) {
        const cJSON *x = nested && cJSON_IsArray(c) &&
                                 cJSON_GetArraySize(c) == 1 ? c->child : c;
        if (!cJSON_IsString(x))
            rc = api_invalid(e, "inputs[0].data[%zu] must be %s, not %s: "
                             "model \"%s\" takes strings (BYTES)", i,
                             nested ? "an array of one string"
                                    : "a string",
                             api_type_name(c), km_model_name(m));
        else {
            str[i] = x->valuestring;
            len[i] = strlen(x->valuestring);
        }
    }
    api_rows_spec rs = {km_model_kernel(m), km_model_n_features(m),
                        km_model_max_length(m)};
    if (!rc)
        rc = api_rows_from_strings(str, len, n, &rs, "inputs[0].data", X, &d,
                                   e);
    free(str);
    free(len);
    if (!rc)
        *rows = n;
    return rc;
}

/* The one input tensor, X, as the model's rows (n_features doubles);
 * b->tail the bytes after the JSON header, b->size set to the bytes the
 * input claims of them. */
static int read_input(const km_model *m, const cJSON *inputs, binary_in *b,
                      double **X, size_t *rows, api_error *e)
{
    static const char *const keys[] = {"name", "shape", "datatype",
                                       "parameters", "data", NULL};
    const api_datatype *dt = NULL;
    char takes[256];
    *X = NULL;
    if (!cJSON_IsArray(inputs) || cJSON_GetArraySize(inputs) != 1 ||
        !cJSON_IsObject(inputs->child)) {
        input_takes(m, takes, sizeof takes);
        return api_invalid(e, "inputs must be an array of one tensor, X: "
                           "model \"%s\" takes %s", km_model_name(m), takes);
    }
    const cJSON *t = inputs->child;
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(t, "name");
    if (api_check_keys(t, "inputs[0]", keys, e))
        return -1;
    if (!cJSON_IsString(name) || strcmp(name->valuestring, "X"))
        return api_invalid(e, "inputs[0].name must be \"X\", the model's one "
                           "input");
    if (read_datatype(m, t, &dt, e) || read_input_parameters(t, b, e))
        return -1;
    if (!dt && b->binary) {
        char list[128];
        api_datatype_list(list, sizeof list);
        return api_invalid(e, "inputs[0].parameters.binary_data_size: binary "
                           "data is taken for numeric datatypes (%s); send a "
                           "BYTES tensor's strings as JSON data", list);
    }
    return dt ? read_numbers(m, t, dt, b, X, rows, e)
              : read_strings(m, t, X, rows, e);
}

/* ------------------------------------------------------------ outputs */

/* "labels, decision_values": the outputs m offers. */
static void offered_list(const km_model *m, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < km_answer_count() && used < len; i++) {
        if (!model_offers(m, km_answer_at(i)))
            continue;
        int w = snprintf(buf + used, len - used, "%s%s", used ? ", " : "",
                         km_answer_at(i)->v2_name);
        used += w > 0 ? (size_t)w : 0;
    }
}

/* An optional boolean parameter key of obj's parameters (path names
 * obj); *out keeps its default when absent. */
static int read_flag(const cJSON *obj, const char *path, const char *key,
                     int *out, api_error *e)
{
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(obj, "parameters");
    if (p && !cJSON_IsObject(p))
        return api_invalid(e, "%sparameters must be an object", path);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(p, key);
    if (v && !cJSON_IsBool(v))
        return api_invalid(e, "%sparameters.%s must be true or false, not %s",
                           path, key, api_type_name(v));
    if (v)
        *out = cJSON_IsTrue(v);
    return 0;
}

/* The outputs a request names (each once), or m's main one; binary[k]
 * whether chosen[k] is answered as binary data (its parameters'
 * binary_data, else all_binary: the request's binary_data_output). */
static int read_outputs(const km_model *m, const cJSON *outputs,
                        int all_binary, const km_answer **chosen,
                        int *binary, size_t *n, api_error *e)
{
    static const char *const keys[] = {"name", "parameters", NULL};
    char list[256], path[40];
    *n = 0;
    offered_list(m, list, sizeof list);
    if (!outputs || (cJSON_IsArray(outputs) && !outputs->child)) {
        for (size_t i = 0; i < km_answer_count() && !*n; i++)
            if (model_offers(m, km_answer_at(i))) {
                binary[*n] = all_binary;
                chosen[(*n)++] = km_answer_at(i);
            }
        return 0;
    }
    if (!cJSON_IsArray(outputs))
        return api_invalid(e, "outputs must be an array of {\"name\": ...}, "
                           "names among %s", list);
    size_t i = 0;
    for (const cJSON *o = outputs->child; o; o = o->next, i++) {
        snprintf(path, sizeof path, "outputs[%zu]", i);
        if (!cJSON_IsObject(o))
            return api_invalid(e, "%s must be an object", path);
        if (api_check_keys(o, path, keys, e))
            return -1;
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(o, "name");
        const km_answer *d = NULL;
        for (size_t k = 0; cJSON_IsString(name) && k < km_answer_count();
             k++)
            if (algorithm_offers(m, km_answer_at(k)) &&
                !strcmp(name->valuestring, km_answer_at(k)->v2_name))
                d = km_answer_at(k);
        if (!d)
            return api_invalid(e, "%s.name must be one of %s", path, list);
        if (!model_offers(m, d))
            return api_raise(e, API_CONFLICT, "model \"%s\" was fitted "
                             "without what %s needs; it offers %s",
                             km_model_name(m), d->v2_name, list);
        for (size_t k = 0; k < *n; k++)
            if (chosen[k] == d)
                return api_invalid(e, "%s.name %s is asked for twice", path,
                                   d->v2_name);
        binary[*n] = all_binary;
        strcat(path, ".");
        if (read_flag(o, path, "binary_data", &binary[*n], e))
            return -1;
        chosen[(*n)++] = d;
    }
    return 0;
}

int api_v2_header_length(const char *value, size_t len, size_t *header_len,
                         api_error *e)
{
    size_t v = 0, i = 0;
    for (; value[i] >= '0' && value[i] <= '9' && i < 20; i++)
        v = v * 10 + (size_t)(value[i] - '0');
    if (!i || value[i] || i >= 20 || v < 1 || v > len)
        return api_invalid(e, "Inference-Header-Content-Length is '%.24s'; "
                           "expected the JSON header's length: a whole "
                           "number of bytes from 1 to the body's %zu",
                           value, len);
    *header_len = v;
    return 0;
}

/* ------------------------------------------------------------ answers */

/* The binary bytes of an answer (after its JSON header). */
typedef struct bytes_buf {
    unsigned char *p;
    size_t len, cap;
    int failed;
} bytes_buf;

static unsigned char *bytes_room(bytes_buf *b, size_t n)
{
    if (b->failed || n > SIZE_MAX / 2 - b->len) {
        b->failed = 1;
        return NULL;
    }
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n)
            cap *= 2;
        unsigned char *q = realloc(b->p, cap);
        if (!q) {
            b->failed = 1;
            return NULL;
        }
        b->p = q;
        b->cap = cap;
    }
    unsigned char *at = b->p + b->len;
    b->len += n;
    return at;
}

/* Label i of m's as a number (numeric labels: INT64 or FP64 outputs). */
static double label_value(const km_model *m, size_t i)
{
    return strtod(km_model_label(m, i), NULL);
}

/* a's values as binary data of its datatype: numbers in the table's
 * width, BYTES (text labels) each a 4-byte little-endian length and the
 * bytes. */
static void put_binary(bytes_buf *b, const km_model *m, const km_answer *o,
                       const api_answer *a)
{
    const char *name = datatype_of(m, o);
    const api_datatype *dt = api_datatype_find(name);
    if (!dt) { /* BYTES */
        for (size_t i = 0; i < a->rows; i++) {
            const char *l = km_model_label(m, (size_t)a->idx[i]);
            size_t n = strlen(l);
            unsigned char *p = bytes_room(b, 4 + n);
            if (!p)
                return;
            for (int k = 0; k < 4; k++)
                p[k] = (unsigned char)((uint32_t)n >> (8 * k));
            memcpy(p + 4, l, n);
        }
        return;
    }
    size_t n = a->v ? a->rows * a->width : a->rows;
    unsigned char *p = bytes_room(b, n * dt->width);
    if (!p)
        return;
    size_t nl = a->v || a->answer != KM_OUT_LABELS ? 0 : km_model_n_labels(m);
    double *lv = nl ? malloc(nl * sizeof *lv) : NULL;
    if (nl && !lv) {
        b->failed = 1;
        return;
    }
    for (size_t i = 0; i < nl; i++)
        lv[i] = label_value(m, i);
    for (size_t i = 0; i < n; i++, p += dt->width)
        api_datatype_put(dt, a->v ? a->v[i] : lv ? lv[a->idx[i]] : a->idx[i],
                         p);
    free(lv);
}

/* Output k's JSON (its data, or for a binary one its binary_data_size,
 * the bytes put in bin). */
static void put_output(api_text *t, bytes_buf *bin, const km_model *m,
                       const km_answer *o, const api_answer *a, size_t n,
                       int binary, int first)
{
    api_text_raw(t, first ? "{\"name\":" : ",{\"name\":");
    api_text_string(t, o->v2_name);
    api_text_raw(t, ",\"datatype\":");
    api_text_string(t, datatype_of(m, o));
    api_text_raw(t, ",\"shape\":[");
    api_text_uint(t, (unsigned long long)n);
    if (is_matrix(a->answer, a->width)) {
        api_text_raw(t, ",");
        api_text_uint(t, (unsigned long long)a->width);
    }
    if (binary) {
        size_t before = bin->len;
        put_binary(bin, m, o, a);
        api_text_raw(t, "],\"parameters\":{\"binary_data_size\":");
        api_text_uint(t, (unsigned long long)(bin->len - before));
        api_text_raw(t, "}}");
        return;
    }
    api_text_raw(t, "],\"data\":");
    api_answer_text(t, m, a, 1);
    api_text_raw(t, "}");
}

/* The answer's JSON header and, after it, the binary outputs' bytes. */
static int join_answer(api_text *t, bytes_buf *bin, int any_binary,
                       api_v2_answer *out, api_error *e)
{
    if (t->failed || bin->failed) {
        free(t->buf);
        free(bin->p);
        return api_raise(e, API_INTERNAL, "out of memory building the answer");
    }
    if (!any_binary) {
        free(bin->p);
        out->buf = t->buf;
        out->len = t->len;
        out->header_len = 0;
        return 0;
    }
    out->buf = malloc(t->len + bin->len + 1);
    if (out->buf) {
        memcpy(out->buf, t->buf, t->len);
        if (bin->len)
            memcpy(out->buf + t->len, bin->p, bin->len);
    }
    out->len = t->len + bin->len;
    out->header_len = t->len;
    free(t->buf);
    free(bin->p);
    if (!out->buf)
        return api_raise(e, API_INTERNAL, "out of memory building the answer");
    return 0;
}

int api_v2_infer_binary(const km_model *m, api_body *body,
                        const api_tail *tail, api_v2_answer *out,
                        api_error *e)
{
    static const char *const keys[] = {"id", "parameters", "inputs",
                                       "outputs", NULL};
    const cJSON *root = body->root;
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(root, "id");
    const km_answer *chosen[MAX_REQUESTED];
    int binary[MAX_REQUESTED], all_binary = 0, any = 0;
    size_t n_out, n = 0;
    double *X = NULL;
    api_text t = {0};
    bytes_buf bin = {0};
    binary_in b = {tail, 0, 0};

    memset(out, 0, sizeof *out);
    if (api_check_keys(root, "", keys, e) ||
        read_flag(root, "", "binary_data_output", &all_binary, e))
        return -1;
    if (id && !cJSON_IsString(id))
        return api_invalid(e, "id must be a string");
    if (read_outputs(m, cJSON_GetObjectItemCaseSensitive(root, "outputs"),
                     all_binary, chosen, binary, &n_out, e) ||
        read_input(m, cJSON_GetObjectItemCaseSensitive(root, "inputs"), &b,
                   &X, &n, e))
        return -1;
    if (body->observer && !(tail && tail->given && b.size != tail->len))
        body->observer->rows(body->observer->ctx, m, X, n);
    if (tail && tail->given && b.size != tail->len) {
        free(X);
        return api_invalid(e, "the body has %zu bytes after its JSON header "
                           "(Inference-Header-Content-Length) but "
                           "inputs[0].parameters.binary_data_size claims %zu",
                           tail->len, b.size);
    }
    api_text_raw(&t, "{\"model_name\":");
    api_text_string(&t, km_model_name(m));
    api_text_raw(&t, ",\"model_version\":\"");
    api_text_uint(&t, (unsigned long long)km_model_version(m));
    api_text_raw(&t, "\"");
    if (id) {
        api_text_raw(&t, ",\"id\":");
        api_text_string(&t, id->valuestring);
    }
    api_text_raw(&t, ",\"outputs\":[");
    for (size_t k = 0; k < n_out; k++) {
        api_answer a;
        if (api_answer_compute(m, chosen[k]->flag, chosen[k]->each, X, n,
                               chosen[k]->v2_name, &a, e)) {
            free(X);
            free(t.buf);
            free(bin.p);
            return -1;
        }
        put_output(&t, &bin, m, chosen[k], &a, n, binary[k], k == 0);
        any |= binary[k];
        api_answer_free(&a);
    }
    free(X);
    api_text_raw(&t, "]}");
    out->rows = n;
    return join_answer(&t, &bin, any, out, e);
}

int api_v2_infer_request(const km_model *m, const char *body, size_t len,
                         const char *header, const api_observer *observer,
                         api_v2_answer *out, api_error *e)
{
    size_t hl = len;
    api_body b;
    memset(out, 0, sizeof *out);
    if (header && api_v2_header_length(header, len, &hl, e))
        return -1;
    if (api_parse_body(body, hl, api_v2_matrix_keys, &b, e)) {
        api_body_free(&b);
        return -1;
    }
    api_tail tail = {body + hl, len - hl, 0, header != NULL};
    b.observer = observer;
    int rc = api_v2_infer_binary(m, &b, &tail, out, e);
    api_body_free(&b);
    return rc;
}

size_t api_v2_request_bytes(const km_model *m, const char *body, size_t len,
                            const char *header)
{
    size_t header_len, width = 1;
    api_error e;
    if (!header) /* all JSON: binary outputs take less than their text */
        return api_v2_infer_bytes(m, body, len);
    if (api_v2_header_length(header, len, &header_len, &e))
        return 0; /* refused before anything is allocated */
    size_t tail = len - header_len;
    size_t nf = input_width(m), ns = km_model_n_samples(m), per_row = 0;
    cJSON *root = NULL;
    /* the input's datatype sets how many values the tail holds; when the
     * header is not what it must be (infer will say why), one byte each */
    if (api_parse_object(body, header_len, &root, &e) == 0) {
        const cJSON *in = cJSON_GetObjectItemCaseSensitive(root, "inputs");
        const cJSON *dt = cJSON_GetObjectItemCaseSensitive(
            cJSON_IsArray(in) ? in->child : NULL, "datatype");
        if (cJSON_IsString(dt) && api_datatype_find(dt->valuestring))
            width = api_datatype_find(dt->valuestring)->width;
    }
    cJSON_Delete(root);
    size_t rows = tail / width / (nf ? nf : 1) + 1;
    /* per row: X and a precomputed model's packed copy; every answer's
     * values, their text and their binary bytes */
    per_row = 2 * (nf + 1) * sizeof(double);
    for (size_t i = 0; i < km_answer_count(); i++)
        if (model_offers(m, km_answer_at(i)))
            per_row += km_model_answer_width(m, km_answer_at(i)->flag, 2) *
                       (2 * sizeof(double) + 26);
    size_t block = rows * ns < ((size_t)4 << 20) ? rows * ns
                                                 : ((size_t)4 << 20);
    size_t c = rows < KM_COV_MAX_ROWS ? rows : KM_COV_MAX_ROWS;
    size_t cov = km_model_outputs(m) & KM_OUT_COVARIANCE
                     ? c * c * (2 * sizeof(double) + 26) + c * ns * 8
                     : 0;
    return api_v2_infer_bytes(m, body, header_len) + rows * per_row +
           block * sizeof(double) + cov;
}
