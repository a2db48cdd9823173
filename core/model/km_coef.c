/*
 * km_coef.c - a model's coefficients as views (km_model.h's km_coef): the
 * dispatch to the algorithm's coefs hook, the value of one entry, and the
 * views the hooks build.
 *
 * Thread-safety: reentrant; a model is only read.
 */
#include "km_model_internal.h"

/* Rows a precomputed model keeps only some of (its centres) are known by
 * their index column: the view of that column, after the rows'. */
static size_t add_indices(km_coef *out, size_t n)
{
    for (size_t a = 0; a < n && n < KM_COEF_MAX; a++)
        if (out[a].indexed) {
            km_coef c = km_coef_f64("centre_indices_", out[a].f64 - 1,
                                    out[a].shape[0], 0, 1);
            c.integer = 1;
            c.stride[0] = out[a].stride[0];
            out[n++] = c;
        }
    return n;
}

size_t km_model_coefs(const km_model *m, km_coef *out)
{
    const km_algo *a = m ? km_algo_of(km_model_algorithm(m)) : NULL;
    size_t n = a && a->coefs ? a->coefs(m, out) : 0;
    return add_indices(out, n < KM_COEF_MAX ? n : KM_COEF_MAX);
}

double km_coef_at(const km_coef *c, size_t i, size_t j)
{
    if (c->at)
        return c->at(c, i, j);
    size_t o = i * c->stride[0] + j * c->stride[1];
    if (c->string)
        return (double)km_string_row_bytes(c->f64 + o, c->stride[0], NULL, 0);
    /* + 0.0: a zero negated is written 0, not -0 */
    return c->scale * (c->f64 ? c->f64[o] : (double)c->i32[o]) + 0.0;
}

size_t km_coef_rows(const km_coef *c, size_t n)
{
    size_t rows = 0;
    for (size_t a = 0; a < n; a++)
        if (c[a].page_axis >= 0 && c[a].shape[c[a].page_axis] > rows)
            rows = c[a].shape[c[a].page_axis];
    return rows;
}

km_coef km_coef_f64(const char *name, const double *v, size_t rows,
                    size_t cols, int paged)
{
    km_coef c = {0};
    c.name = name;
    c.ndim = cols ? 2 : 1;
    c.shape[0] = rows;
    c.shape[1] = cols ? cols : 1;
    c.page_axis = paged ? 0 : -1;
    c.f64 = v;
    c.stride[0] = cols ? cols : 1;
    c.stride[1] = 1;
    c.scale = 1.0;
    return c;
}

km_coef km_coef_input_rows(const km_model *m, const char *name,
                           const double *X, size_t n, size_t d, int which)
{
    km_coef c;
    switch (km_kernel_input(km_model_kernel(m))) {
    case KM_INPUT_STRINGS:
        c = km_coef_f64(name, X, n, 0, 1);
        c.string = 1;
        c.stride[0] = d;
        return c;
    case KM_INPUT_PRECOMPUTED:
        if (which == KM_COEF_ROWS_SUPPORT) {
            c = km_coef_f64(name, X, 0, 1, 0);
            c.shape[1] = 0;
            return c;
        }
        c = km_coef_f64(name, X ? X + 1 : NULL, n, d ? d - 1 : 0, 1);
        c.stride[0] = d;
        c.indexed = which == KM_COEF_ROWS_CENTRES;
        return c;
    default:
        return km_coef_f64(name, X, n, d, 1);
    }
}

km_coef km_coef_i32(const char *name, const int *v, size_t rows, int paged)
{
    km_coef c = km_coef_f64(name, NULL, rows, 0, paged);
    c.integer = 1;
    c.i32 = v;
    return c;
}

km_coef km_coef_transposed(km_coef c)
{
    size_t s = c.shape[0], t = c.stride[0];
    c.ndim = 2;
    c.shape[0] = c.shape[1];
    c.shape[1] = s;
    c.stride[0] = c.stride[1];
    c.stride[1] = t;
    if (c.page_axis >= 0)
        c.page_axis = 1 - c.page_axis;
    return c;
}
