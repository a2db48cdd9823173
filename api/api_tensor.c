/*
 * api_tensor.c - the numeric datatypes of binary tensors and the /v1
 * bodies' binary members; see api_tensor.h.
 *
 * Thread-safety: reentrant.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_json.h"
#include "api_tensor.h"

/* The protocol's numeric datatypes (the outputs' FP64 and INT64 are
 * looked up here too). */
static const api_datatype datatypes[] = {
    {"FP64", -DBL_MAX, DBL_MAX, 0, 0, 8, 'f'},
    {"FP32", -FLT_MAX, FLT_MAX, 0, 1, 4, 'f'},
    {"INT8", -128, 127, 1, 0, 1, 'i'},
    {"INT16", -32768, 32767, 1, 0, 2, 'i'},
    {"INT32", -2147483648.0, 2147483647.0, 1, 0, 4, 'i'},
    {"INT64", -9223372036854775808.0, 9223372036854774784.0, 1, 0, 8, 'i'},
    {"UINT8", 0, 255, 1, 0, 1, 'u'},
    {"UINT16", 0, 65535, 1, 0, 2, 'u'},
    {"UINT32", 0, 4294967295.0, 1, 0, 4, 'u'},
    {"UINT64", 0, 18446744073709549568.0, 1, 0, 8, 'u'},
};
#define N_DATATYPES (sizeof datatypes / sizeof *datatypes)

const api_datatype *api_datatype_find(const char *name)
{
    for (size_t i = 0; i < N_DATATYPES; i++)
        if (!strcmp(name, datatypes[i].name))
            return &datatypes[i];
    return NULL;
}

void api_datatype_list(char *buf, size_t len)
{
    size_t at = 0;
    if (len)
        buf[0] = '\0';
    for (size_t i = 0; i < N_DATATYPES && at < len; i++) {
        int w = snprintf(buf + at, len - at, "%s%s", i ? ", " : "",
                         datatypes[i].name);
        at += w > 0 ? (size_t)w : 0;
    }
}

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define HOST_LE 1
#else
#define HOST_LE 0
#endif

double api_datatype_value(const api_datatype *dt, const unsigned char *p)
{
    uint64_t u = 0;
    if (HOST_LE && dt->width == 8 && dt->kind == 'f') {
        double v;
        memcpy(&v, p, 8);
        return v;
    }
    for (size_t k = 0; k < dt->width; k++)
        u |= (uint64_t)p[k] << (8 * k);
    if (dt->kind == 'f' && dt->width == 8) {
        double v;
        memcpy(&v, &u, 8);
        return v;
    }
    if (dt->kind == 'f') {
        uint32_t w = (uint32_t)u;
        float f;
        memcpy(&f, &w, 4);
        return f;
    }
    if (dt->kind == 'u')
        return (double)u;
    int64_t v = (int64_t)u; /* two's complement, sign-extended below */
    if (dt->width < 8 && (u >> (8 * dt->width - 1)) & 1)
        v -= (int64_t)1 << (8 * dt->width);
    return (double)v;
}

void api_datatype_put(const api_datatype *dt, double v, unsigned char *p)
{
    uint64_t u;
    if (dt->kind == 'f' && dt->width == 8) {
        memcpy(&u, &v, 8);
    } else if (dt->kind == 'f') {
        float f = (float)v;
        uint32_t w;
        memcpy(&w, &f, 4);
        u = w;
    } else {
        u = dt->kind == 'u' ? (uint64_t)v : (uint64_t)(int64_t)v;
    }
    for (size_t k = 0; k < dt->width; k++)
        p[k] = (unsigned char)(u >> (8 * k));
}

/* t's shape: [rows] or (max_dims 2) [rows, cols], whole numbers from 1
 * (rows) or 0 to 2^53. */
static int read_shape(const cJSON *t, const char *name, int max_dims,
                      double dim[2], int *dims, api_error *e)
{
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(t, "shape");
    const char *want = max_dims == 1 ? "[rows]" : "[rows] or [rows, columns]";
    *dims = cJSON_IsArray(s) ? cJSON_GetArraySize(s) : 0;
    if (*dims < 1 || *dims > max_dims)
        return api_invalid(e, "%s.shape must be %s", name, want);
    dim[1] = 1;
    for (int i = 0; i < *dims; i++) {
        const cJSON *x = cJSON_GetArrayItem(s, i);
        if (!cJSON_IsNumber(x) || x->valuedouble != floor(x->valuedouble) ||
            x->valuedouble < (i ? 0 : 1) ||
            x->valuedouble > API_TENSOR_MAX_DIM)
            return api_invalid(e, "%s.shape[%d] must be a whole number from "
                               "%d to 2^53", name, i, i ? 0 : 1);
        dim[i] = x->valuedouble;
    }
    return 0;
}

int api_tensor_read(const cJSON *t, const char *name, int max_dims,
                    api_tail *tail, double **out, size_t *rows, size_t *cols,
                    int *dims, api_error *e)
{
    static const char *const keys[] = {"datatype", "shape",
                                       "binary_data_size", NULL};
    char list[128];
    double dim[2];
    *out = NULL;
    api_datatype_list(list, sizeof list);
    if (!tail->given)
        return api_invalid(e, "%s is an object, a binary tensor, which needs "
                           "the Inference-Header-Content-Length header (the "
                           "length of the JSON before the tensors' bytes); "
                           "or give %s as JSON arrays", name, name);
    if (api_check_keys(t, name, keys, e))
        return -1;
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(t, "datatype");
    const api_datatype *dt =
        cJSON_IsString(d) ? api_datatype_find(d->valuestring) : NULL;
    if (!dt)
        return api_invalid(e, "%s.datatype must be one of %s", name, list);
    if (read_shape(t, name, max_dims, dim, dims, e))
        return -1;
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(t, "binary_data_size");
    if (!cJSON_IsNumber(s) || s->valuedouble < 0 ||
        s->valuedouble != floor(s->valuedouble) ||
        s->valuedouble > API_TENSOR_MAX_DIM)
        return api_invalid(e, "%s.binary_data_size must be a whole number of "
                           "bytes", name);
    double bytes = dim[0] * dim[1] * (double)dt->width;
    if (bytes != s->valuedouble)
        return api_invalid(e, "%s.binary_data_size is %.0f bytes; shape "
                           "[%.0f, %.0f] of %s (%zu bytes each) takes %.0f",
                           name, s->valuedouble, dim[0], dim[1], dt->name,
                           dt->width, bytes);
    size_t size = (size_t)bytes, left = tail->len - tail->used;
    if (size > left)
        return api_invalid(e, "%s.binary_data_size is %zu bytes, but only "
                           "%zu are left after the JSON header and the "
                           "tensors before it", name, size, left);
    *rows = (size_t)dim[0];
    *cols = (size_t)dim[1];
    if (api_tensor_values(dt, tail->bytes + tail->used, *rows, *cols, name,
                          out, e))
        return -1;
    tail->used += size;
    return 0;
}

int api_tensor_values(const api_datatype *dt, const char *p, size_t rows,
                      size_t cols, const char *name, double **out,
                      api_error *e)
{
    size_t values = rows * cols;
    const unsigned char *b = (const unsigned char *)p;
    *out = malloc((values ? values : 1) * sizeof **out);
    if (!*out)
        return api_raise(e, API_PAYLOAD_TOO_LARGE, "not enough memory for "
                         "%s's %zu values", name, values);
    for (size_t i = 0; i < values; i++, b += dt->width) {
        double v = api_datatype_value(dt, b);
        if (!isfinite(v)) {
            free(*out);
            *out = NULL;
            return api_invalid(e, "%s's binary value [%zu][%zu] is not a "
                               "finite number", name, i / cols, i % cols);
        }
        (*out)[i] = v;
    }
    return 0;
}

int api_tail_done(const api_tail *tail, api_error *e)
{
    if (!tail->given || tail->used == tail->len)
        return 0;
    return api_invalid(e, "%zu bytes follow the JSON header "
                       "(Inference-Header-Content-Length), but the binary "
                       "tensors claim %zu", tail->len, tail->used);
}
