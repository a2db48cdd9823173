/*
 * testdata.h - loads the repository's CSV data sets (data/) for tests
 * and benchmarks, and scales features the way tests/fixtures/gen_refs.py
 * does, so C and Python see the same numbers.
 *
 * CSV: a header row, numeric features, the target in the last column
 * (a number or a string label).
 */
#ifndef TESTDATA_H
#define TESTDATA_H

#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>

typedef struct km_dataset {
    size_t n, d;
    double *X;     /* n x d */
    char **label;  /* n target strings as written */
    double *y;     /* n targets as numbers (NaN when not numeric) */
} km_dataset;

static inline void km_dataset_free(km_dataset *ds)
{
    for (size_t i = 0; i < ds->n; i++)
        free(ds->label[i]);
    free(ds->label);
    free(ds->X);
    free(ds->y);
    memset(ds, 0, sizeof *ds);
}

/* Where the data live: $KM_DATA, else data/ (the tests run from the
 * project root). A file that cannot be read is reported on stderr with its
 * path and where it comes from, and -1 is returned. */
static inline int km_dataset_load(const char *file, size_t max_rows,
                                  km_dataset *ds)
{
    const char *dir = getenv("KM_DATA") ? getenv("KM_DATA") : "data";
    char path[1024], line[1 << 16];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    FILE *f = fopen(path, "r");
    memset(ds, 0, sizeof *ds);
    if (!f || !fgets(line, sizeof line, f)) {
        fprintf(stderr, "missing data file %s: it ships in the repository's "
                "data/ folder (see data/README.md); run the tests from the "
                "project root or set KM_DATA to the folder that holds it\n",
                path);
        if (f) fclose(f);
        return -1;
    }
    for (char *c = line; *c; c++)
        ds->d += *c == ',';
    size_t cap = 1024;
    ds->X = malloc(cap * ds->d * sizeof *ds->X);
    ds->label = malloc(cap * sizeof *ds->label);
    ds->y = malloc(cap * sizeof *ds->y);
    while (ds->n < max_rows && fgets(line, sizeof line, f)) {
        if (ds->n == cap) {
            cap *= 2;
            ds->X = realloc(ds->X, cap * ds->d * sizeof *ds->X);
            ds->label = realloc(ds->label, cap * sizeof *ds->label);
            ds->y = realloc(ds->y, cap * sizeof *ds->y);
        }
        char *p = line, *end;
        for (size_t j = 0; j < ds->d; j++) {
            ds->X[ds->n * ds->d + j] = strtod(p, &end);
            p = end + 1;
        }
        p[strcspn(p, "\r\n")] = '\0';
        ds->label[ds->n] = strdup(p);
        ds->y[ds->n] = strtod(p, &end);
        if (end == p || *end)
            ds->y[ds->n] = NAN;
        ds->n++;
    }
    fclose(f);
    return 0;
}

/* Scales each feature to [-1, 1] with the min and max of rows [0, n_fit);
 * a constant feature becomes 0. (gen_refs.py: scale_minmax.) */
static inline void km_dataset_scale(km_dataset *ds, size_t n_fit)
{
    for (size_t j = 0; j < ds->d; j++) {
        double lo = ds->X[j], hi = ds->X[j];
        for (size_t i = 0; i < n_fit; i++) {
            double v = ds->X[i * ds->d + j];
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
        }
        for (size_t i = 0; i < ds->n; i++) {
            double *v = &ds->X[i * ds->d + j];
            *v = hi > lo ? 2.0 * (*v - lo) / (hi - lo) - 1.0 : 0.0;
        }
    }
}

static inline int km_dataset_cmp_label(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Class indices as libkm takes them: y[i] (all n rows) is the index of
 * row i's label among the sorted distinct labels of rows [0, n_fit), or
 * -1 when it is not among them (a test row of a class the training rows
 * lack); their count goes to *k. Returns y (malloc'd), or NULL when
 * memory runs out. */
static inline int *km_dataset_classes(const km_dataset *ds, size_t n_fit,
                                      size_t *k)
{
    char **s = malloc((n_fit ? n_fit : 1) * sizeof *s);
    int *y = malloc((ds->n ? ds->n : 1) * sizeof *y);
    if (!s || !y) {
        free(s);
        free(y);
        return NULL;
    }
    memcpy(s, ds->label, n_fit * sizeof *s);
    qsort(s, n_fit, sizeof *s, km_dataset_cmp_label);
    size_t nk = 0;
    for (size_t i = 0; i < n_fit; i++)
        if (nk == 0 || strcmp(s[nk - 1], s[i]) != 0)
            s[nk++] = s[i];
    for (size_t i = 0; i < ds->n; i++) {
        char *const *hit = bsearch(&ds->label[i], s, nk, sizeof *s,
                                   km_dataset_cmp_label);
        y[i] = hit ? (int)(hit - s) : -1;
    }
    free(s);
    *k = nk;
    return y;
}

/* A data set (all its rows) scaled by its first n_fit rows, with its
 * class indices (km_dataset_classes); NULL when it cannot be read. */
static inline int *km_dataset_load_classes(const char *file, size_t n_fit,
                                           km_dataset *ds, size_t *k)
{
    if (km_dataset_load(file, (size_t)-1, ds) != 0)
        return NULL;
    km_dataset_scale(ds, n_fit);
    return km_dataset_classes(ds, n_fit, k);
}

#endif
