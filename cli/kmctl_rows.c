/*
 * kmctl_rows.c - kmctl's predict and project: the model's metadata says
 * how many columns it takes (the column rule, kmctl.c; a string model
 * one text column, sent as strings), the rows go in
 * batches, and the answers come back as CSV under a header named from
 * the model's classes and the output asked (the outputs are the
 * server's, GET /v1).
 *
 * Thread-safety: single-threaded.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kmctl_about.h"
#include "kmctl_cmd.h"

#define DEFAULT_BATCH 10000

/* Header names for predict's output, from the model and the first answer
 * row (its width when the metadata does not say). output: as asked (NULL:
 * the algorithm's default, GET /v1). A column per class is p_LABEL
 * (probability) or f_LABEL (decision values laid out one per class), one
 * per pair of classes A_vs_B (decision values laid out one-vs-one): the
 * layout is the algorithm's decision_columns (GET /v1), so a new
 * classifier's columns are named with no edit here. One column of an
 * output other than the algorithm's default is named by it; the default
 * is 'label' (a classifier's) or 'prediction'. */
static void print_header(ctl_client *c, const cJSON *meta, const char *output,
                         const cJSON *row)
{
    const cJSON *classes = cJSON_GetObjectItemCaseSensitive(meta, "classes");
    const cJSON *algo = cJSON_GetObjectItemCaseSensitive(meta, "algorithm");
    const char *aname = cJSON_IsString(algo) ? algo->valuestring : "";
    int k = cJSON_GetArraySize(classes);
    int width = cJSON_IsArray(row) ? cJSON_GetArraySize(row) : 1;
    const char *dflt = ctl_about_default_output(c, aname);
    const char *layout = ctl_about_decision_columns(c, aname);
    int named = output && !(dflt && !strcmp(output, dflt));
    /* the answer given: the one asked, else the algorithm's default */
    const char *given = output ? output : dflt ? dflt : "";
    int decision = !strcmp(given, "decision_function") && layout && k > 2;
    int per_class = width == k && (!strcmp(given, "probability") ||
                                   (decision && !strcmp(layout, "classes")));
    int pairs = decision && !strcmp(layout, "pairs") &&
                width == k * (k - 1) / 2;
    char name[512];

    for (int col = 0; col < width; col++) {
        if (col)
            putchar(',');
        const cJSON *ci = NULL, *cj = NULL;
        if (per_class) {
            ci = cJSON_GetArrayItem(classes, col);
            snprintf(name, sizeof name, decision ? "f_" : "p_");
        } else if (pairs) {
            for (int i = 0, n = 0; i < k && !cj; i++) /* pairs (i, j), i < j */
                for (int j = i + 1; j < k; j++)
                    if (n++ == col) {
                        ci = cJSON_GetArrayItem(classes, i);
                        cj = cJSON_GetArrayItem(classes, j);
                        break;
                    }
            name[0] = '\0';
        } else if (named && width == 1) {
            snprintf(name, sizeof name, "%s", output);
        } else if (k > 0 && width == 1) { /* a classifier: labels */
            snprintf(name, sizeof name, "label");
        } else if (width == 1) {
            snprintf(name, sizeof name, "prediction");
        } else {
            snprintf(name, sizeof name, "prediction_%d", col);
        }
        const cJSON *labels[2] = {ci, cj};
        for (int l = 0; l < 2 && labels[l]; l++) {
            char num[32];
            const char *s = cJSON_IsString(labels[l]) ? labels[l]->valuestring : num;
            if (!cJSON_IsString(labels[l]))
                ctl_fmt_double(num, labels[l]->valuedouble);
            size_t used = strlen(name);
            snprintf(name + used, sizeof name - used, "%s%s", l ? "_vs_" : "", s);
        }
        ctl_csv_write_field(stdout, name);
    }
    putchar('\n');
}

static void print_value(const cJSON *v)
{
    char num[32];
    if (cJSON_IsNumber(v)) {
        ctl_fmt_double(num, v->valuedouble);
        fputs(num, stdout);
    } else if (cJSON_IsString(v)) {
        ctl_csv_write_field(stdout, v->valuestring);
    } else if (cJSON_IsBool(v)) {
        fputs(cJSON_IsTrue(v) ? "true" : "false", stdout);
    }
}

/* predict and project share this: GET the model, choose columns, send the
 * rows in batches, print what comes back under `field`. */
static int run_rows(ctl_client *c, args *a, const char *action,
                    const char *field, ctl_err *e)
{
    const char *name = a->pos[0];
    ctl_csv *csv = NULL;
    size_t *cols = NULL, ncols = 0;
    char *mpath = NULL, *path = NULL;
    ctl_reply meta = {0}, r = {0};
    ctl_buf body;
    int rc = -1;
    double version = -1;
    ctl_buf_init(&body, MAX_BODY);

    if (!(mpath = ctl_model_path(c, name, "", e)) ||
        !(path = ctl_model_path(c, name, action, e)))
        goto out;
    if (ctl_call_expect(c, "GET", mpath, NULL, 0, 200, &meta, e))
        goto out;
    const char *kind;
    double need;
    ctl_model_input(meta.json, &kind, &need);
    if (a->inverse) {
        need = ctl_num_or(cJSON_GetObjectItemCaseSensitive(meta.json, "params"),
                      "n_components", -1);
        kind = "vectors"; /* projections are numbers */
    }
    int strings = !strcmp(kind, "strings");
    if (need < 1) {
        ctl_fail(e, CTL_EXIT_SERVER, "model %s's metadata does not say how many "
                 "%s it takes", name, a->inverse ? "components" : "features");
        goto out;
    }
    if (ctl_csv_read(a->pos[1], &csv, e) ||
        ctl_select_columns(csv, a->target, (size_t)need, name, &cols, &ncols, e))
        goto out;
    const char *output = a->output;
    size_t rows = ctl_csv_rows(csv), batch = a->batch ? (size_t)a->batch
                                                      : DEFAULT_BATCH;
    if (!rows) {
        /* Nothing to ask the server: the header alone, as far as known. */
        if (!strcmp(field, "projections"))
            puts(a->inverse ? "x1" : "pc1");
        else
            print_header(c, meta.json, output, NULL);
    }
    int header = 0;
    for (size_t first = 0; first < rows; first += batch) {
        size_t count = rows - first < batch ? rows - first : batch;
        body.len = 0;
        if (ctl_buf_append(&body, "{\"X\":", 5) ||
            (strings ? ctl_csv_strings_json(csv, first, count, cols[0], &body, e)
                     : ctl_csv_matrix_json(csv, first, count, cols, ncols,
                                           &body, e)))
            goto toobig;
        if ((a->output && ctl_buf_printf(&body, ",\"output\":\"%s\"", a->output)) ||
            (a->inverse && ctl_buf_printf(&body, ",\"inverse\":true")) ||
            ctl_buf_append(&body, "}", 1))
            goto toobig;
        ctl_reply_cleanup(&r);
        if (ctl_call_expect(c, "POST", path, body.data, body.len, 200, &r, e))
            goto out;
        const cJSON *out_rows = cJSON_GetObjectItemCaseSensitive(r.json, field);
        double v = ctl_num_or(cJSON_GetObjectItemCaseSensitive(r.json, "model"),
                          "version", -1);
        if (!cJSON_IsArray(out_rows) ||
            (size_t)cJSON_GetArraySize(out_rows) != count) {
            ctl_fail(e, CTL_EXIT_SERVER, "the answer has no %zu %s", count, field);
            goto out;
        }
        if (version >= 0 && v != version) {
            ctl_fail(e, CTL_EXIT_SERVER, "model %s was replaced while predicting "
                     "(version %.0f, then %.0f); run again", name, version, v);
            goto out;
        }
        version = v;
        if (!header) {
            if (!strcmp(field, "projections")) {
                int width = cJSON_GetArraySize(cJSON_GetArrayItem(out_rows, 0));
                for (int k = 0; k < width; k++)
                    printf("%s%s%d", k ? "," : "", a->inverse ? "x" : "pc", k + 1);
                putchar('\n');
            } else {
                print_header(c, meta.json, output, cJSON_GetArrayItem(out_rows, 0));
            }
            header = 1;
        }
        const cJSON *row;
        cJSON_ArrayForEach(row, out_rows) {
            if (cJSON_IsArray(row)) {
                const cJSON *v2;
                int k = 0;
                cJSON_ArrayForEach(v2, row) {
                    if (k++)
                        putchar(',');
                    print_value(v2);
                }
            } else {
                print_value(row);
            }
            putchar('\n');
        }
    }
    if (fflush(stdout) || ferror(stdout)) {
        ctl_fail(e, CTL_EXIT_USAGE, "cannot write the output");
        goto out;
    }
    rc = 0;
    goto out;
toobig:
    if (!e->msg[0])
        ctl_fail(e, CTL_EXIT_USAGE, "a request would exceed %zu MiB: use a "
                 "smaller --batch", MAX_BODY >> 20);
out:
    ctl_reply_cleanup(&r);
    ctl_reply_cleanup(&meta);
    ctl_buf_cleanup(&body);
    ctl_csv_free(csv);
    free(cols);
    free(path);
    free(mpath);
    return rc;
}

int cmd_predict(ctl_client *c, args *a, ctl_err *e)
{
    if (ctl_about_check_output(c, a->output, e))
        return -1;
    return run_rows(c, a, "/predict", "predictions", e);
}

int cmd_project(ctl_client *c, args *a, ctl_err *e)
{
    return run_rows(c, a, "/project", "projections", e);
}