/*
 * api_coef.c - a model's coefficients as JSON text. Core lists the arrays
 * (km_model_coefs: names, shapes, paged axis, values); this file knows no
 * algorithm. The answer:
 *   {"model": {"name", "version"}, "algorithm", "total_rows", "offset",
 *    "limit", "rows", ["next_offset"], ["input_space", "preprocess"],
 *    "coefficients": {NAME: {"shape": [...], "dtype": "float64"|"int64"|
 *                            "string", "paged_axis": 0|1|null,
 *                            "values": ...}}}
 * A preprocessed model's arrays are of the scaled problem its algorithm
 * saw: input_space "scaled" (with a scale) and its preprocess (as the
 * metadata's) say so and carry the shift, scale and y_mean.
 * values is a vector or a list of rows (row-major, as numpy), or a
 * string model's training strings (dtype "string": its rows decoded,
 * core's km_string_row_bytes; a page counts each as its row's doubles,
 * so a page of strings is bounded as one of numbers); a paged
 * array holds only the page's entries along its paged axis (rows
 * [offset, offset + rows) of total_rows). Numbers as predict writes them
 * (exact doubles).
 *
 * Thread-safety: reentrant.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_coef.h"
#include "api_model.h"

int api_coef_param(const char *name, api_error *e)
{
    if (!strcmp(name, "offset") || !strcmp(name, "limit"))
        return 0;
    return api_invalid(e, "query parameter '%.64s' is not known; "
                       "coefficients takes offset and limit", name);
}

int api_query_count(const char *s, const char *name, size_t min, size_t max,
                    size_t *out, api_error *e)
{
    unsigned long long v = 0;
    size_t i = 0;
    for (; s[i] >= '0' && s[i] <= '9' && v <= max; i++)
        v = v * 10 + (unsigned long long)(s[i] - '0');
    if (!i || s[i] || v > max || v < min)
        return api_invalid(e, "%s \"%.24s\" must be a whole number from "
                           "%zu to %zu", name, s, min, max);
    *out = (size_t)v;
    return 0;
}

/* Entry i of a string array: the bytes of its string row, as a JSON
 * string (bytes that are not UTF-8 as U+FFFD, api_json_escape). */
static void write_string(api_text *t, const km_coef *c, size_t i)
{
    const double *row = c->f64 + i * c->stride[0];
    size_t len = km_string_row_bytes(row, c->stride[0], NULL, 0);
    unsigned char *buf = malloc(len + 1);
    if (!buf) {
        t->failed = 1;
        return;
    }
    km_string_row_bytes(row, c->stride[0], buf, len);
    buf[len] = '\0';
    api_text_string(t, (const char *)buf);
    free(buf);
}

static void write_value(api_text *t, const km_coef *c, size_t i, size_t j)
{
    double v = km_coef_at(c, i, j);
    if (isfinite(v))
        api_text_number(t, v);
    else
        api_text_raw(t, "null");
}

/* One array: its entries [lo, hi) along the paged axis (all of it when
 * not paged). */
static void write_array(api_text *t, const km_coef *c, size_t lo, size_t hi)
{
    size_t r0 = 0, r1 = c->shape[0], c0 = 0, c1 = c->shape[1];
    if (c->page_axis == 0)
        r0 = lo, r1 = hi;
    else if (c->page_axis == 1)
        c0 = lo, c1 = hi;
    api_text_string(t, c->name);
    api_text_raw(t, ":{\"shape\":[");
    api_text_uint(t, c->shape[0]);
    if (c->ndim == 2) {
        api_text_raw(t, ",");
        api_text_uint(t, c->shape[1]);
    }
    api_text_raw(t, c->string    ? "],\"dtype\":\"string\",\"paged_axis\":"
                    : c->integer ? "],\"dtype\":\"int64\",\"paged_axis\":"
                                 : "],\"dtype\":\"float64\",\"paged_axis\":");
    api_text_raw(t, c->page_axis == 0 ? "0" : c->page_axis == 1 ? "1"
                                                                : "null");
    api_text_raw(t, ",\"values\":[");
    for (size_t i = r0; i < r1 && !t->failed; i++) {
        if (i > r0)
            api_text_raw(t, ",");
        if (c->string) {
            write_string(t, c, i);
            continue;
        }
        if (c->ndim == 1) {
            write_value(t, c, i, 0);
            continue;
        }
        api_text_raw(t, "[");
        for (size_t j = c0; j < c1; j++) {
            if (j > c0)
                api_text_raw(t, ",");
            write_value(t, c, i, j);
        }
        api_text_raw(t, "]");
    }
    api_text_raw(t, "]}");
}

/* Values one row of the paged axis adds to a page. */
static size_t row_values(const km_coef *c, size_t n)
{
    size_t v = 0;
    for (size_t a = 0; a < n; a++)
        if (c[a].page_axis >= 0)
            v += c[a].string     ? c[a].stride[0]
                 : c[a].ndim == 2 ? c[a].shape[1 - c[a].page_axis]
                                  : 1;
    return v;
}

/* A preprocessed model's arrays are of the problem its algorithm saw:
 * ,"input_space":"scaled" when X was scaled, and the metadata's
 * "preprocess" (scale, center_y and the statistics: x' = (x - x_shift) /
 * x_scale, predictions + y_mean). Nothing for a model without. -1 out of
 * memory. */
static int write_preprocess(api_text *t, const km_model *m)
{
    km_preprocess_view v = km_model_preprocess(m);
    if (v.spec.x == KM_SCALE_NONE && !v.spec.center_y)
        return 0;
    cJSON *o = api_preprocess_json(m);
    char *text = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    if (!text)
        return -1;
    if (v.spec.x != KM_SCALE_NONE)
        api_text_raw(t, ",\"input_space\":\"scaled\"");
    api_text_raw(t, ",\"preprocess\":");
    api_text_raw(t, text);
    free(text);
    return 0;
}

int api_coefficients(const km_model *m, const char *offset,
                     const char *limit, api_text *out, api_error *e)
{
    km_coef c[KM_COEF_MAX];
    size_t n = km_model_coefs(m, c), total = km_coef_rows(c, n);
    size_t per = row_values(c, n), off = 0, lim = API_COEF_LIMIT;
    size_t max = API_COEF_MAX_VALUES / (per ? per : 1);
    max = max < API_COEF_MAX_LIMIT ? max : API_COEF_MAX_LIMIT;
    max = max ? max : 1;
    if ((offset && api_query_count(offset, "offset", 0, total, &off, e)) ||
        (limit && api_query_count(limit, "limit", 1, max, &lim, e)))
        return -1;
    lim = lim < max ? lim : max;
    size_t rows = total - off < lim ? total - off : lim;
    api_text *t = out;
    api_model_ref_text(t, m);
    api_text_raw(t, ",\"algorithm\":");
    api_text_string(t, km_algorithm_name(km_model_algorithm(m)));
    api_text_raw(t, ",\"total_rows\":");
    api_text_uint(t, total);
    api_text_raw(t, ",\"offset\":");
    api_text_uint(t, off);
    api_text_raw(t, ",\"limit\":");
    api_text_uint(t, lim);
    api_text_raw(t, ",\"rows\":");
    api_text_uint(t, rows);
    if (off + rows < total) {
        api_text_raw(t, ",\"next_offset\":");
        api_text_uint(t, off + rows);
    }
    if (write_preprocess(t, m)) {
        free(t->buf);
        *out = (api_text){0};
        return api_raise(e, API_INTERNAL, "out of memory writing the "
                         "coefficients");
    }
    api_text_raw(t, ",\"coefficients\":{");
    for (size_t a = 0; a < n; a++) {
        if (a)
            api_text_raw(t, ",");
        write_array(t, &c[a], off, off + rows);
    }
    api_text_raw(t, "}}\n");
    if (t->failed) {
        free(t->buf);
        *out = (api_text){0};
        return api_raise(e, API_INTERNAL, "out of memory writing the "
                         "coefficients");
    }
    return 0;
}
