/*
 * kmctl_common.c - what kmctl's commands share: reading the server's JSON
 * (members with defaults), a model's path, a request that must answer a
 * given status, printing JSON exactly and tables aligned, a kernel and a
 * model in one line, and predict's and score's column rule (kmctl.c).
 *
 * Thread-safety: single-threaded.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kmctl_cmd.h"

const char *ctl_str_or(const cJSON *o, const char *key, const char *dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : dflt;
}

double ctl_num_or(const cJSON *o, const char *key, double dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

double ctl_num_item(const cJSON *v)
{
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* "/v1/models/NAME" + suffix, with NAME escaped. Caller frees. */
char *ctl_model_path(ctl_client *c, const char *name, const char *suffix,
                        ctl_err *e)
{
    char *esc = ctl_client_escape(c, name), *path = NULL;
    if (!esc || asprintf(&path, "/v1/models/%s%s", esc, suffix) < 0)
        path = NULL;
    free(esc);
    if (!path)
        ctl_fail(e, CTL_EXIT_USAGE, "out of memory");
    return path;
}

/* A request whose answer must have status `want` and a JSON body (unless
 * want is 204). 0 with r filled (caller cleans it up), or -1 with e. */
int ctl_call_expect(ctl_client *c, const char *method, const char *path,
                       const char *body, size_t len, long want, ctl_reply *r,
                       ctl_err *e)
{
    if (ctl_client_call(c, method, path, body, len, r, e))
        return -1;
    if (r->status != want) {
        ctl_reply_fail(r, e);
        ctl_reply_cleanup(r);
        return -1;
    }
    if (want != 204 && !cJSON_IsObject(r->json)) {
        ctl_fail(e, CTL_EXIT_SERVER, "%s %s: the answer is not a JSON object",
                 method, path);
        ctl_reply_cleanup(r);
        return -1;
    }
    return 0;
}

/* Numbers as exact text (cJSON's printer can round a double that needs 17
 * digits, so `kmctl get` would differ from the server's answer). */
void ctl_exact_numbers(cJSON *j)
{
    for (cJSON *c = j ? j->child : NULL; c; c = c->next) {
        if (cJSON_IsNumber(c) && isfinite(c->valuedouble)) {
            char num[32];
            ctl_fmt_double(num, c->valuedouble);
            char *text = strdup(num);
            if (text) {
                c->type = cJSON_Raw;
                c->valuestring = text;
            }
        } else {
            ctl_exact_numbers(c);
        }
    }
}

void ctl_print_json(cJSON *j)
{
    ctl_exact_numbers(j);
    char *s = cJSON_Print(j);
    if (s)
        puts(s);
    free(s);
}

/* Prints rows of cells as aligned columns; cells[r*ncols + k]. */
void ctl_print_table(const char *const *head, size_t ncols, char **cells,
                        size_t nrows)
{
    size_t width[16] = {0};
    for (size_t k = 0; k < ncols; k++) {
        width[k] = strlen(head[k]);
        for (size_t r = 0; r < nrows; r++)
            if (strlen(cells[r * ncols + k]) > width[k])
                width[k] = strlen(cells[r * ncols + k]);
    }
    for (size_t r = 0; r <= nrows; r++) {
        /* Cells after the last non-empty one are not padded: no trailing
         * blanks. */
        size_t last = 0;
        for (size_t k = 0; k < ncols; k++)
            if (*(r ? cells[(r - 1) * ncols + k] : head[k]))
                last = k;
        for (size_t k = 0; k <= last; k++) {
            const char *s = r ? cells[(r - 1) * ncols + k] : head[k];
            if (k < last)
                printf("%-*s  ", (int)width[k], s);
            else
                printf("%s\n", s);
        }
    }
}

/* A short description of a kernel object: "rbf(gamma=0.5)". */
void ctl_kernel_text(const cJSON *k, char *out, size_t n)
{
    size_t used = (size_t)snprintf(out, n, "%s", ctl_str_or(k, "type", "?"));
    const char *sep = "(";
    const cJSON *it;
    cJSON_ArrayForEach(it, k) {
        if (!cJSON_IsNumber(it) || used >= n)
            continue;
        char num[32];
        ctl_fmt_double(num, it->valuedouble);
        used += (size_t)snprintf(out + used, n - used, "%s%s=%s", sep,
                                 it->string, num);
        sep = ",";
    }
    if (*sep == ',' && used < n)
        snprintf(out + used, n - used, ")");
}

/* Picks the feature columns of csv for a model with `need` inputs (see the
 * column rule at the top of this file). Caller frees *cols_out. */
int ctl_select_columns(const ctl_csv *csv, const char *target, size_t need,
                          const char *model, size_t **cols_out, size_t *ncols,
                          ctl_err *e)
{
    size_t total = ctl_csv_cols(csv);
    long skip = -1;
    if (target && (skip = ctl_csv_find(csv, target)) < 0)
        return ctl_fail(e, CTL_EXIT_USAGE, "%s has no column '%s'",
                        ctl_csv_path(csv), target);
    size_t left = total - (skip >= 0);
    if (left == need + 1 && !target) {
        skip = ctl_csv_find(csv, "y");
        if (skip < 0)
            skip = (long)total - 1;
        fprintf(stderr, "kmctl: leaving out column '%s' (model %s has %zu "
                "features)\n", ctl_csv_name(csv, (size_t)skip), model, need);
        left--;
    }
    if (left != need)
        return ctl_fail(e, CTL_EXIT_USAGE, "%s has %zu feature columns; model %s "
                        "expects %zu (--target COLUMN leaves one out)",
                        ctl_csv_path(csv), left, model, need);
    size_t *cols = malloc((need ? need : 1) * sizeof *cols), n = 0;
    if (!cols)
        return ctl_fail(e, CTL_EXIT_USAGE, "out of memory");
    for (size_t j = 0; j < total; j++)
        if ((long)j != skip)
            cols[n++] = j;
    *cols_out = cols;
    *ncols = n;
    return 0;
}

void ctl_model_input(const cJSON *meta, const char **kind, double *need)
{
    const cJSON *in = cJSON_GetObjectItemCaseSensitive(meta, "input");
    *kind = ctl_str_or(in, "kind", "vectors");
    if (!strcmp(*kind, "strings"))
        *need = 1;
    else if (!strcmp(*kind, "precomputed"))
        *need = ctl_num_or(in, "n_training", -1);
    else
        *need = ctl_num_or(meta, "n_features", -1);
}

/* "VERB NAME version N: ALG, kernel K, S samples x F features", and the
 * fit's seconds after "fitted". */
void ctl_print_model(const cJSON *m, const char *verb)
{
    char kernel[256];
    const char *kind;
    double need;
    ctl_kernel_text(cJSON_GetObjectItemCaseSensitive(m, "kernel"), kernel, sizeof kernel);
    const cJSON *training = cJSON_GetObjectItemCaseSensitive(m, "training");
    ctl_model_input(m, &kind, &need);
    printf("%s %s version %.0f: %s, kernel %s, %.0f ", verb,
           ctl_str_or(m, "name", "?"), ctl_num_or(m, "version", 0),
           ctl_str_or(m, "algorithm", "?"), kernel, ctl_num_or(m, "n_samples", 0));
    if (!strcmp(kind, "strings"))
        printf("strings of at most %.0f bytes",
               ctl_num_or(cJSON_GetObjectItemCaseSensitive(m, "input"),
                          "max_length", 0));
    else if (!strcmp(kind, "precomputed"))
        printf("samples (kernel values given)");
    else
        printf("samples x %.0f features", need);
    if (!strcmp(verb, "fitted") || !strcmp(verb, "updated"))
        printf(", %.3f s", ctl_num_or(training, "seconds", 0));
    printf("\n");
}

void ctl_print_fitted(const cJSON *m)
{
    ctl_print_model(m, "fitted");
}
