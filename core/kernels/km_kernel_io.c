/*
 * km_kernel_io.c - a kernel in the model format (docs/model-format.md):
 * its record, nested for a composite's parts, and the members after them
 * (weights, columns, a string kernel's length and lambda) as the flags
 * word says.
 *
 * Thread-safety: reentrant.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/km_base_internal.h"
#include "km_kernel_internal.h"


/* The flags word of a kernel record: what follows its parts. A file
 * written before columns and string kernels has 0 or 1 there. */
#define REC_WEIGHTS 1u
#define REC_COLUMNS 2u /* u32 count, then a u32 per column */
#define REC_STRING 4u  /* u32 length, f64 lambda */

void km_kernel_write(km_writer *w, const km_kernel *k)
{
    int str = km_kernel_type_input(k->type) == KM_INPUT_STRINGS;
    km_write_u32(w, (uint32_t)k->type);
    km_write_f64(w, k->gamma);
    km_write_f64(w, k->coef0);
    km_write_u32(w, (uint32_t)k->degree);
    km_write_u32(w, (uint32_t)k->n_parts);
    km_write_u32(w, (k->weights ? REC_WEIGHTS : 0) |
                    (k->n_columns ? REC_COLUMNS : 0) |
                    (str ? REC_STRING : 0));
    for (int i = 0; i < k->n_parts; i++)
        km_kernel_write(w, &k->parts[i]);
    if (k->weights)
        km_write_f64s(w, k->weights, (size_t)k->n_parts);
    if (k->n_columns) {
        km_write_u32(w, (uint32_t)k->n_columns);
        for (int i = 0; i < k->n_columns; i++)
            km_write_u32(w, (uint32_t)k->columns[i]);
    }
    if (str) {
        km_write_u32(w, (uint32_t)k->length);
        km_write_f64(w, k->lambda);
    }
}

/* The members after the parts and weights (flags as written). */
static km_status read_extra(km_reader *r, km_kernel *k, uint32_t flags,
                            km_error *err)
{
    int str = (unsigned)k->type < KM_KERNEL_TYPE_COUNT &&
              km_kernel_type_input(k->type) == KM_INPUT_STRINGS;
    if (!(flags & REC_STRING) != !str)
        return km_error_set(err, KM_ECORRUPT, "model file: bad kernel");
    if (flags & REC_COLUMNS) {
        uint32_t n = km_read_u32(r);
        if (r->failed || n == 0 || n > KM_KERNEL_MAX_COLUMNS)
            return km_error_set(err, KM_ECORRUPT, "model file: bad kernel "
                                "columns");
        if (!(k->columns = malloc(n * sizeof *k->columns)))
            return km_error_set(err, KM_ENOMEM, "out of memory reading "
                                "kernel");
        k->n_columns = (int)n;
        for (uint32_t i = 0; i < n; i++) {
            uint32_t c = km_read_u32(r);
            k->columns[i] = c < KM_KERNEL_MAX_COLUMNS ? (int)c : -1;
        }
    }
    if (flags & REC_STRING) {
        uint32_t len = km_read_u32(r);
        k->length = len <= KM_STRING_MAX_K ? (int)len : -1;
        k->lambda = km_read_f64(r);
    }
    return r->failed ? km_error_set(err, KM_ECORRUPT, "model file: bad "
                                    "kernel") : KM_OK;
}

km_status km_kernel_read(km_reader *r, km_kernel *k, int depth, km_error *err)
{
    km_kernel_init(k, KM_KERNEL_LINEAR);
    k->type = (km_kernel_type)km_read_u32(r);
    k->gamma = km_read_f64(r);
    k->coef0 = km_read_f64(r);
    k->degree = (int)km_read_u32(r);
    uint32_t n_parts = km_read_u32(r);
    uint32_t flags = km_read_u32(r);
    uint32_t has_weights = flags & REC_WEIGHTS;
    if (r->failed || n_parts > KM_KERNEL_MAX_PARTS ||
        depth > KM_KERNEL_MAX_DEPTH ||
        flags > (REC_WEIGHTS | REC_COLUMNS | REC_STRING) ||
        (has_weights && n_parts == 0))
        return km_error_set(err, KM_ECORRUPT, "model file: bad kernel");
    if (n_parts) {
        k->parts = calloc(n_parts, sizeof *k->parts);
        if (!k->parts)
            return km_error_set(err, KM_ENOMEM, "out of memory reading kernel");
        for (uint32_t i = 0; i < n_parts; i++) {
            k->n_parts = (int)i + 1;
            km_status st = km_kernel_read(r, &k->parts[i], depth + 1, err);
            if (st != KM_OK)
                return st;
        }
    }
    if (has_weights) {
        k->weights = km_read_f64s(r, n_parts);
        if (!k->weights)
            return km_error_set(err, r->failed ? KM_ECORRUPT : KM_ENOMEM,
                                "model file: bad kernel weights");
    }
    km_status st = read_extra(r, k, flags, err);
    if (st != KM_OK)
        return st;
    if (depth == 0 && km_kernel_check(k, err) != KM_OK) {
        char why[sizeof err->message];
        snprintf(why, sizeof why, "%s", err ? err->message : "");
        return km_error_set(err, KM_ECORRUPT, "model file: invalid kernel "
                            "(%s)", why);
    }
    /* A fit resolves every default gamma (0) to a number > 0. */
    if (!(k->gamma > 0))
        return km_error_set(err, KM_ECORRUPT, "model file: kernel gamma %g is "
                            "not resolved (a fitted kernel's gamma is > 0)",
                            k->gamma);
    return KM_OK;
}
