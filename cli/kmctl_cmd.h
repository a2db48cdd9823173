/*
 * kmctl_cmd.h - what kmctl's commands share: the parsed command line
 * (args, filled by kmctl.c), the commands that live in their own files
 * (kmctl_fit.c: fit and search; kmctl_rows.c: predict and project), and
 * the helpers of kmctl_common.c.
 *
 * Arrows: kmctl.c -> kmctl_fit.c, kmctl_rows.c -> kmctl_common.c,
 * kmctl_about.c -> kmctl_http.c, kmctl_csv.c, kmctl_util.c; nothing calls
 * back into kmctl.c.
 *
 * Thread-safety: single-threaded.
 */
#ifndef KMCTL_CMD_H
#define KMCTL_CMD_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "kmctl_csv.h"
#include "kmctl_http.h"
#include "kmctl_util.h"

#define DEFAULT_URL "http://127.0.0.1:8080"
#define MAX_BODY ((size_t)1 << 30)

typedef struct args {
    const char *server, *token, *cacert;
    const char *algorithm, *kernel, *target, *output, *scale;
    const char *format, *n_features; /* import, export */
    const char *max_length;          /* fit of strings */
    int async, inverse, json, center_y;
    long batch;
    cJSON *kernel_params; /* from --gamma, --sigma, --degree, --coef0 */
    cJSON *params;        /* from --C, --alpha, ..., --param */
    cJSON *search;        /* search.params, from --grid and --range */
    long n_iter;
    const char *seed, *cv, *scoring;
    int shuffle;
    const char *pos[4];
    int npos;
} args;

/* The commands: 0, or -1 with e. */
int cmd_fit(ctl_client *c, args *a, ctl_err *e);
int cmd_search(ctl_client *c, args *a, ctl_err *e);
int cmd_predict(ctl_client *c, args *a, ctl_err *e);
int cmd_project(ctl_client *c, args *a, ctl_err *e);

/* o's member key if it is a string (number), else dflt. */
const char *ctl_str_or(const cJSON *o, const char *key, const char *dflt);
double ctl_num_or(const cJSON *o, const char *key, double dflt);
/* v's number, else NAN. */
double ctl_num_item(const cJSON *v);

/* "/v1/models/NAME" + suffix, with NAME escaped. Caller frees. */
char *ctl_model_path(ctl_client *c, const char *name, const char *suffix,
                     ctl_err *e);
/* A request whose answer must have status `want` and a JSON body (unless
 * want is 204). 0 with r filled (caller cleans it up), or -1 with e. */
int ctl_call_expect(ctl_client *c, const char *method, const char *path,
                    const char *body, size_t len, long want, ctl_reply *r,
                    ctl_err *e);

/* Numbers of j as exact text (in place), then j printed indented. */
void ctl_exact_numbers(cJSON *j);
void ctl_print_json(cJSON *j);
/* Rows of cells as aligned columns; cells[r*ncols + k], ncols <= 16. */
void ctl_print_table(const char *const *head, size_t ncols, char **cells,
                     size_t nrows);
/* "rbf(gamma=0.5)". */
void ctl_kernel_text(const cJSON *k, char *out, size_t n);
/* What model metadata meta's X is (its "input"): *kind "vectors",
 * "strings" or "precomputed", and *need the columns a CSV row gives: 1
 * text column, the kernel values against the n_training rows, or
 * n_features numbers (-1 when the metadata does not say). */
void ctl_model_input(const cJSON *meta, const char **kind, double *need);

/* "VERB NAME version N: ALG, kernel K, S samples x F features" (strings:
 * "S strings of at most L bytes"). */
void ctl_print_model(const cJSON *m, const char *verb);
void ctl_print_fitted(const cJSON *m);

/* The feature columns of csv for a model with `need` inputs (kmctl.c's
 * column rule). Caller frees *cols_out. */
int ctl_select_columns(const ctl_csv *csv, const char *target, size_t need,
                       const char *model, size_t **cols_out, size_t *ncols,
                       ctl_err *e);

#endif
