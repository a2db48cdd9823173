/*
 * kmctl_fit.c - kmctl's fit and search: the CSV's columns into X and y
 * (fit's column rule, kmctl.c; whether the algorithm takes a target, and
 * whether the kernel takes strings, is the server's word, GET /v1), the
 * kernel and params objects from the options, the request (a job with a
 * progress bar when large or asked), and the search's table.
 *
 * Thread-safety: single-threaded.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kmctl_about.h"
#include "kmctl_cmd.h"
#include "kmctl_job.h"

/* A fit of more matrix entries than this goes async with a progress bar. */
#define ASYNC_ENTRIES 20000

/* 0 if text is a whole number >= min (into *out), else -1. */
static int parse_whole(const char *text, double min, double *out)
{
    return ctl_parse_number(text, out) || *out < min ||
                   *out != (double)(long)*out
               ? -1
               : 0;
}

/* The "search" member from --grid, --range, --n-iter, --seed, --cv,
 * --shuffle and --scoring. */
static cJSON *search_json(const args *a, ctl_err *e)
{
    cJSON *s = cJSON_CreateObject();
    if (!s) {
        ctl_fail(e, CTL_EXIT_USAGE, "out of memory");
        return NULL;
    }
    cJSON_AddItemToObject(s, "params", cJSON_Duplicate(a->search, 1));
    if (a->n_iter)
        cJSON_AddNumberToObject(s, "n_iter", (double)a->n_iter);
    double seed = 0;
    if (a->seed && parse_whole(a->seed, 0, &seed)) {
        cJSON_Delete(s);
        ctl_fail(e, CTL_EXIT_USAGE, "--seed: expected a whole number >= 0, "
                 "not '%s'", a->seed);
        return NULL;
    }
    if (a->seed && a->n_iter)
        cJSON_AddNumberToObject(s, "seed", seed);
    if (a->cv && (!strcmp(a->cv, "loo") || !strcmp(a->cv, "gcv"))) {
        cJSON_AddStringToObject(s, "cv", a->cv);
    } else if (a->cv || a->shuffle) {
        double k = 5;
        if (a->cv && parse_whole(a->cv, 2, &k)) {
            cJSON_Delete(s);
            ctl_fail(e, CTL_EXIT_USAGE, "--cv: expected a number of folds "
                     ">= 2, loo or gcv, not '%s'", a->cv);
            return NULL;
        }
        if (a->shuffle) {
            cJSON *cv = cJSON_AddObjectToObject(s, "cv");
            cJSON_AddNumberToObject(cv, "folds", k);
            cJSON_AddTrueToObject(cv, "shuffle");
            cJSON_AddNumberToObject(cv, "seed", seed);
        } else {
            cJSON_AddNumberToObject(s, "cv", k);
        }
    }
    if (a->scoring)
        cJSON_AddStringToObject(s, "scoring", a->scoring);
    return s;
}

/* The search's table from a model's metadata: one row per point. */
static void print_search(const cJSON *m)
{
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(m, "search");
    const cJSON *rows = cJSON_GetObjectItemCaseSensitive(s, "results");
    const cJSON *first = cJSON_GetArrayItem(rows, 0);
    const cJSON *names = cJSON_GetObjectItemCaseSensitive(first, "params");
    size_t np = (size_t)cJSON_GetArraySize(names), n = (size_t)cJSON_GetArraySize(rows);
    size_t ncols = np + 4, best = (size_t)ctl_num_or(s, "best_index", 0);
    if (!first || np > 12)
        return;
    const char *head[16];
    char **cells = calloc(n * ncols, sizeof *cells);
    if (!cells)
        return;
    const cJSON *nm = names->child;
    for (size_t k = 0; k < np; k++, nm = nm->next)
        head[k] = nm->string;
    head[np] = "mean";
    head[np + 1] = "std";
    head[np + 2] = "fit s";
    head[np + 3] = "";
    size_t r = 0;
    for (const cJSON *row = rows->child; row && r < n; row = row->next, r++) {
        char buf[64];
        const cJSON *p = cJSON_GetObjectItemCaseSensitive(row, "params");
        size_t k = 0;
        for (const cJSON *v = p ? p->child : NULL; v && k < np; v = v->next, k++) {
            snprintf(buf, sizeof buf, "%.6g", v->valuedouble);
            cells[r * ncols + k] = strdup(buf);
        }
        for (; k < np; k++)
            cells[r * ncols + k] = strdup("");
        snprintf(buf, sizeof buf, "%.6f", ctl_num_or(row, "mean_score", NAN));
        cells[r * ncols + np] = strdup(buf);
        snprintf(buf, sizeof buf, "%.6f", ctl_num_or(row, "std_score", NAN));
        cells[r * ncols + np + 1] = strdup(buf);
        snprintf(buf, sizeof buf, "%.3f", ctl_num_or(row, "fit_seconds", NAN));
        cells[r * ncols + np + 2] = strdup(buf);
        cells[r * ncols + np + 3] = strdup(r == best ? "*" : "");
    }
    int ok = 1;
    for (size_t i = 0; i < n * ncols; i++)
        ok &= cells[i] != NULL;
    printf("search: %s, cv %s (%.0f splits), %zu points; best %s %.6g\n",
           ctl_str_or(s, "scoring", "?"), ctl_str_or(s, "cv", "?"),
           ctl_num_or(s, "n_splits", 0), n, ctl_str_or(s, "scoring", "?"),
           ctl_num_or(s, "best_score", NAN));
    if (ok)
        ctl_print_table(head, ncols, cells, n);
    for (size_t i = 0; i < n * ncols; i++)
        free(cells[i]);
    free(cells);
}

/* The kernel object: --kernel's type name or JSON object, with --gamma &
 * co. on top. NULL with e. */
static cJSON *kernel_json(const args *a, ctl_err *e)
{
    cJSON *kernel;
    if (a->kernel[0] == '{') {
        const char *end = NULL;
        kernel = cJSON_ParseWithOpts(a->kernel, &end, 1);
        if (!cJSON_IsObject(kernel)) {
            cJSON_Delete(kernel);
            ctl_fail(e, CTL_EXIT_USAGE, "--kernel: not a JSON object: %.80s",
                     a->kernel);
            return NULL;
        }
    } else {
        kernel = cJSON_CreateObject();
        if (kernel)
            cJSON_AddStringToObject(kernel, "type", a->kernel);
    }
    if (!kernel) {
        ctl_fail(e, CTL_EXIT_USAGE, "out of memory");
        return NULL;
    }
    cJSON *it;
    cJSON_ArrayForEach(it, a->kernel_params) {
        cJSON_DeleteItemFromObjectCaseSensitive(kernel, it->string);
        cJSON_AddItemToObject(kernel, it->string, cJSON_Duplicate(it, 1));
    }
    return kernel;
}

/* The fit's body less "search" and "async": the algorithm, the kernel
 * (taken), params, preprocess, max_length, X (the JSON text in x, which
 * is emptied) and y (the column target of csv, if the algorithm takes
 * one). NULL with e. */
static cJSON *fit_body(const args *a, ctl_csv *csv, long target,
                       int takes_target, cJSON *kernel, ctl_buf *x,
                       ctl_err *e)
{
    size_t rows = ctl_csv_rows(csv);
    double max_length = 0;
    if (a->max_length && parse_whole(a->max_length, 1, &max_length)) {
        cJSON_Delete(kernel);
        ctl_fail(e, CTL_EXIT_USAGE, "--max-length: expected a whole number "
                 ">= 1, not '%s'", a->max_length);
        return NULL;
    }
    cJSON *body = cJSON_CreateObject();
    if (!body) {
        cJSON_Delete(kernel);
        ctl_fail(e, CTL_EXIT_USAGE, "out of memory");
        return NULL;
    }
    cJSON_AddStringToObject(body, "algorithm", a->algorithm);
    cJSON_AddItemToObject(body, "kernel", kernel);
    if (a->max_length)
        cJSON_AddNumberToObject(body, "max_length", max_length);
    if (cJSON_GetArraySize(a->params))
        cJSON_AddItemToObject(body, "params", cJSON_Duplicate(a->params, 1));
    if (a->scale || a->center_y) { /* the server checks the name */
        cJSON *pre = cJSON_AddObjectToObject(body, "preprocess");
        if (pre && a->scale)
            cJSON_AddStringToObject(pre, "scale", a->scale);
        if (pre && a->center_y)
            cJSON_AddTrueToObject(pre, "center_y");
    }
    cJSON_AddRawToObject(body, "X", x->data);
    ctl_buf_cleanup(x);
    if (target >= 0 && takes_target) {
        int numeric = ctl_csv_column_numeric(csv, (size_t)target);
        if (!numeric)
            ctl_csv_trim_column(csv, (size_t)target);
        cJSON *y = cJSON_AddArrayToObject(body, "y");
        for (size_t i = 0; y && i < rows; i++) {
            const char *cell = ctl_csv_cell(csv, i, (size_t)target);
            double v = 0;
            if (numeric)
                (void)ctl_parse_number(cell, &v);
            cJSON_AddItemToArray(y, numeric ? cJSON_CreateNumber(v)
                                            : cJSON_CreateString(cell));
        }
    }
    return body;
}

static int fit_or_search(ctl_client *c, args *a, int search, ctl_err *e);

int cmd_fit(ctl_client *c, args *a, ctl_err *e)
{
    return fit_or_search(c, a, 0, e);
}

int cmd_search(ctl_client *c, args *a, ctl_err *e)
{
    if (!cJSON_GetArraySize(a->search))
        return ctl_fail(e, CTL_EXIT_USAGE, "search needs at least one --grid "
                        "or --range (see kmctl search --help)");
    return fit_or_search(c, a, 1, e);
}

/* A fit, or with search a search and the fit of its best point. */
static int fit_or_search(ctl_client *c, args *a, int search, ctl_err *e)
{
    const char *name = a->pos[0];
    ctl_csv *csv = NULL;
    cJSON *body = NULL, *result = NULL;
    char *text = NULL, *path = NULL;
    size_t *cols = NULL;
    ctl_buf x;
    ctl_reply r = {0};
    int rc = -1, caught = 0;
    ctl_buf_init(&x, MAX_BODY);

    if (!a->algorithm || !a->kernel) {
        ctl_fail(e, CTL_EXIT_USAGE, "%s needs --algorithm and --kernel (see "
                 "kmctl %s --help)", search ? "search" : "fit",
                 search ? "search" : "fit");
        goto out;
    }
    int takes_target = 1;
    if (ctl_about_takes_target(c, a->algorithm, &takes_target, e))
        goto out;
    if (ctl_csv_read(a->pos[1], &csv, e))
        goto out;
    size_t total = ctl_csv_cols(csv), rows = ctl_csv_rows(csv);
    long target = -1;
    if (a->target && (target = ctl_csv_find(csv, a->target)) < 0) {
        ctl_fail(e, CTL_EXIT_USAGE, "%s has no column '%s'", a->pos[1], a->target);
        goto out;
    }
    if (takes_target && target < 0)
        target = (long)total - 1;
    size_t nfeat = total - (target >= 0);
    if (!nfeat || !rows) {
        ctl_fail(e, CTL_EXIT_USAGE, "%s has %s", a->pos[1],
                 rows ? "no feature column besides the target" : "no data rows");
        goto out;
    }
    if (!(cols = malloc(nfeat * sizeof *cols))) {
        ctl_fail(e, CTL_EXIT_USAGE, "out of memory");
        goto out;
    }
    for (size_t j = 0, n = 0; j < total; j++)
        if ((long)j != target)
            cols[n++] = j;
    /* X as the kernel takes it (GET /v1): a text column's strings, or
     * rows of numbers (a precomputed kernel's: the Gram's) */
    cJSON *kernel = kernel_json(a, e);
    if (!kernel)
        goto out;
    const char *input = ctl_about_kernel_input(c, kernel);
    int strings = input && !strcmp(input, "strings");
    if (strings && nfeat != 1) {
        ctl_fail(e, CTL_EXIT_USAGE, "%s has %zu columns besides the target; "
                 "a %s kernel takes strings: one text column (--target "
                 "COLUMN names the target)", a->pos[1], nfeat,
                 ctl_str_or(kernel, "type", "string"));
        cJSON_Delete(kernel);
        goto out;
    }
    if (strings ? ctl_csv_strings_json(csv, 0, rows, cols[0], &x, e)
                : ctl_csv_matrix_json(csv, 0, rows, cols, nfeat, &x, e)) {
        cJSON_Delete(kernel);
        goto out;
    }

    if (!(body = fit_body(a, csv, target, takes_target, kernel, &x, e)))
        goto out;
    if (search) {
        cJSON *sj = search_json(a, e);
        if (!sj)
            goto out;
        cJSON_AddItemToObject(body, "search", sj);
    }
    int async = search || a->async || rows * nfeat > ASYNC_ENTRIES;
    if (async)
        cJSON_AddTrueToObject(body, "async");
    if (!(text = cJSON_PrintUnformatted(body)) ||
        !(path = ctl_model_path(c, name, "/fit", e))) {
        ctl_fail(e, CTL_EXIT_USAGE, "out of memory");
        goto out;
    }
    cJSON_Delete(body);
    body = NULL;

    if (!async) {
        if (ctl_call_expect(c, "POST", path, text, strlen(text), 201, &r, e))
            goto out;
        result = cJSON_DetachItemFromObjectCaseSensitive(r.json, "model");
    } else {
        /* Ctrl-C from here on is ours: while the body is sent (nothing to
         * cancel yet) and while the job runs (offer to cancel it). */
        ctl_job_catch_sigint(c);
        caught = 1;
        if (ctl_call_expect(c, "POST", path, text, strlen(text), 202, &r, e))
            goto out;
        const char *id = ctl_str_or(cJSON_GetObjectItemCaseSensitive(r.json, "job"),
                                "id", NULL);
        if (!id) {
            ctl_fail(e, CTL_EXIT_SERVER, "the fit was accepted without a job id");
            goto out;
        }
        if (ctl_job_wait(c, id, name, &result, e))
            goto out;
    }
    if (!cJSON_IsObject(result)) {
        ctl_fail(e, CTL_EXIT_SERVER, "the fit answer holds no model");
        goto out;
    }
    if (a->json) {
        ctl_print_json(result);
    } else {
        ctl_print_fitted(result);
        if (search)
            print_search(result);
    }
    rc = 0;
out:
    if (caught)
        ctl_job_release_sigint(c);
    ctl_reply_cleanup(&r);
    cJSON_Delete(result);
    cJSON_Delete(body);
    free(path);
    free(text);
    free(cols);
    ctl_buf_cleanup(&x);
    ctl_csv_free(csv);
    return rc;
}