/*
 * kmctl.c - the command-line client of kmserve (as redis-cli is Redis's):
 * fit models from CSV files, predict and project to CSV, score a model
 * on a CSV, list, inspect and delete models, watch jobs, and check health.
 *
 * Options and commands come from two tables, which also write --help (as
 * srv_config.c does for the daemon). Every server error is printed as
 * "kmctl: STATUS code: message" and exits 1; usage and input errors exit
 * 2; an unreachable server exits 3; Ctrl-C exits 130 (kmctl_util.h).
 *
 * Column rule (fit): the target is the column named by --target, else the
 * last one; every other column is a feature. An algorithm that takes no
 * target (kpca, kkmeans: the server's capabilities say target "none",
 * GET /v1; kmctl_about.c) has none: all columns are features, less the
 * one --target names, if any.
 * A kernel that takes strings (GET /v1's kernels' input) takes one text
 * column besides the target, sent as an array of strings.
 * Column rule (predict, project): the model's n_features (n_components for
 * project --inverse; a string model's one text column, a precomputed
 * model's n_training kernel values: its metadata's input) decides. The --target column, if named, is left out;
 * if then exactly one column more than needed remains, the column 'y' (else
 * the last one) is left out with a note on stderr, so the CSV a model was
 * fitted from can be passed unchanged. Any other count is an error.
 *
 * Thread-safety: single-threaded.
 */
#include <errno.h>
#include <stddef.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "../core/km.h"
#include "kmctl_about.h"
#include "kmctl_cmd.h"
#include "kmctl_job.h"
#include "kmctl_names.h"

enum {
    F_FIT = 1 << 0,
    F_PREDICT = 1 << 1,
    F_PROJECT = 1 << 2,
    F_MODELS = 1 << 3,
    F_GET = 1 << 4,
    F_DELETE = 1 << 5,
    F_JOBS = 1 << 6,
    F_HEALTH = 1 << 7,
    F_SEARCH = 1 << 8,
    F_SCORE = 1 << 9,
    F_IMPORT = 1 << 10,
    F_EXPORT = 1 << 11,
    F_UPDATE = 1 << 12,
    F_DRIFT = 1 << 13,
    F_ALL = 0x3fff,
    F_FITS = F_FIT | F_SEARCH /* the options of a fit also shape a search */
};

typedef enum { O_STR, O_FLAG, O_INT, O_KERNEL_NUM, O_PARAM_NUM, O_PARAM_TRUE,
               O_PARAM_KV, O_SEARCH_LIST, O_SEARCH_RANGE } opt_kind;

static const struct opt {
    const char *flag, *metavar;
    unsigned cmds;
    opt_kind kind;
    size_t offset;   /* into args, for O_STR, O_FLAG, O_INT */
    const char *key; /* JSON key, for the kernel and params kinds */
    const char *help;
} opts[] = {
#define A(field) offsetof(args, field)
    {"server", "URL", F_ALL, O_STR, A(server), NULL,
     "kmserve's address (env KMSERVE_URL, default " DEFAULT_URL ")"},
    {"token", "TOKEN", F_ALL, O_STR, A(token), NULL,
     "bearer token (env KMSERVE_TOKEN, which ps cannot show: prefer it)"},
    {"cacert", "FILE", F_ALL, O_STR, A(cacert), NULL,
     "PEM file of the CA that signed the server's certificate (env "
     "KMSERVE_CACERT)"},
    {"algorithm", "NAME", F_FITS, O_STR, A(algorithm), NULL,
     "one of" CTL_ALGO_NAMES " (required)"},
    {"kernel", "TYPE", F_FITS, O_STR, A(kernel), NULL,
     "one of" CTL_KERNEL_NAMES ", or a kernel as a JSON "
     "object ('{\"type\":\"sum\",\"kernels\":[...]}') (required)"},
    {"gamma", "X", F_FITS, O_KERNEL_NUM, 0, "gamma", "kernel gamma"},
    {"sigma", "X", F_FITS, O_KERNEL_NUM, 0, "sigma",
     "rbf width (gamma = 1/(2 sigma^2)); not with --gamma"},
    {"degree", "N", F_FITS, O_KERNEL_NUM, 0, "degree", "polynomial degree"},
    {"coef0", "X", F_FITS, O_KERNEL_NUM, 0, "coef0",
     "polynomial and sigmoid coef0"},
    {"length", "K", F_FITS, O_KERNEL_NUM, 0, "length",
     "string kernels: substring length k"},
    {"lambda", "X", F_FITS, O_KERNEL_NUM, 0, "lambda",
     "string kernels (expdecay, subsequence): decay lambda"},
    {"max-length", "BYTES", F_FITS, O_STR, A(max_length), NULL,
     "string kernels: the longest string (in bytes) the model takes at "
     "predict (default: the server's, from the longest training string)"},
    {"C", "X", F_FITS, O_PARAM_NUM, 0, "C", "svc, svr: regularisation C"},
    {"alpha", "X", F_FITS, O_PARAM_NUM, 0, "alpha",
     "krr: ridge alpha; kpca: alpha of the inverse map"},
    {"epsilon", "X", F_FITS, O_PARAM_NUM, 0, "epsilon", "svr: epsilon"},
    {"tol", "X", F_FITS, O_PARAM_NUM, 0, "tol",
     "svc, svr, klr: stopping tolerance"},
    {"n-components", "N", F_FITS, O_PARAM_NUM, 0, "n_components",
     "kpca: number of components (required for kpca)"},
    {"probability", NULL, F_FITS, O_PARAM_TRUE, 0, "probability",
     "svc: fit Platt scaling, for --output probability"},
    {"param", "KEY=VALUE", F_FITS, O_PARAM_KV, 0, NULL,
     "any other parameter; VALUE is JSON if it parses, else a string "
     "(--param shrinking=false --param 'class_weight={\"1\":2}'); repeatable"},
    {"scale", "NAME", F_FITS, O_STR, A(scale), NULL,
     "standardize (each feature to mean 0, std 1) or minmax (to [-1, 1]), "
     "learnt from the training rows and kept in the model: predictions "
     "scale their input the same way"},
    {"center-y", NULL, F_FITS, O_FLAG, A(center_y), NULL,
     "krr, svr: fit y less its mean, and add the mean to predictions"},
    {"target", "COLUMN", F_FITS | F_PREDICT | F_PROJECT | F_SCORE | F_UPDATE,
     O_STR, A(target), NULL,
     "fit, score, update: the target column (default: the last); predict, "
     "project: a column to leave out"},
    {"async", NULL, F_FITS | F_UPDATE, O_FLAG, A(async), NULL,
     "run as a job with progress even when small (fits of more than 20000 "
     "values always do)"},
    {"output", "KIND", F_PREDICT, O_STR, A(output), NULL,
     "what to answer, one of the server's outputs of predict (GET /v1 "
     "lists them, and the algorithms answering each: label, "
     "decision_function, probability, mean, std, var, ...); default: the "
     "model's first"},
    {"inverse", NULL, F_PROJECT, O_FLAG, A(inverse), NULL,
     "map projections (the CSV's columns) back to input space"},
    {"batch", "ROWS", F_PREDICT | F_PROJECT, O_INT, A(batch), NULL,
     "rows per request (default 10000)"},
    {"json", NULL, F_FITS | F_MODELS | F_JOBS | F_SCORE | F_UPDATE, O_FLAG,
     A(json), NULL,
     "print the server's JSON instead of a summary or a table"},
    {"grid", "NAME=V1,V2,...", F_SEARCH, O_SEARCH_LIST, 0, NULL,
     "search: values of a parameter (C, alpha, epsilon, ...; gamma, degree "
     "and coef0 are the kernel's); repeatable: the grid is every combination"},
    {"range", "NAME=LOW:HIGH", F_SEARCH, O_SEARCH_RANGE, 0, NULL,
     "search: draw a parameter log-uniformly from [LOW, HIGH] (needs "
     "--n-iter); repeatable"},
    {"n-iter", "N", F_SEARCH, O_INT, A(n_iter), NULL,
     "search: random points to draw (from --grid lists and --range ranges) "
     "instead of the whole grid"},
    {"seed", "N", F_SEARCH, O_STR, A(seed), NULL,
     "search: seed of the random draws and of --shuffle (default 0)"},
    {"cv", "K|loo|gcv", F_SEARCH, O_STR, A(cv), NULL,
     "search: K folds (default 5, stratified for svc), leave-one-out, or "
     "krr's generalised cross-validation"},
    {"shuffle", NULL, F_SEARCH, O_FLAG, A(shuffle), NULL,
     "search: shuffle the rows before cutting K folds"},
    {"scoring", "NAME", F_SEARCH, O_STR, A(scoring), NULL,
     "search: what to maximise: r2, neg_mean_squared_error, "
     "neg_mean_absolute_error (krr, svr), accuracy, balanced_accuracy, "
     "neg_log_loss (svc), neg_reconstruction_error (kpca)"},
    {"format", "libsvm|kmm", F_IMPORT | F_EXPORT, O_STR, A(format), NULL,
     "the model file's format: LIBSVM's text or kmserve's own file (import: "
     "else told by the file's first bytes; export: else kmm for a FILE ending "
     "in .kmm, libsvm otherwise)"},
    {"n-features", "N", F_IMPORT, O_STR, A(n_features), NULL,
     "libsvm: the model's feature count (default: the largest index in the "
     "file)"},
#undef A
};
#define N_OPTS (sizeof opts / sizeof *opts)

typedef int (*command_fn)(ctl_client *c, args *a, ctl_err *e);
static int cmd_score(ctl_client *c, args *a, ctl_err *e);
static int cmd_update(ctl_client *c, args *a, ctl_err *e);
static int cmd_models(ctl_client *c, args *a, ctl_err *e);
static int cmd_get(ctl_client *c, args *a, ctl_err *e);
static int cmd_delete(ctl_client *c, args *a, ctl_err *e);
static int cmd_jobs(ctl_client *c, args *a, ctl_err *e);
static int cmd_health(ctl_client *c, args *a, ctl_err *e);
static int cmd_import(ctl_client *c, args *a, ctl_err *e);
static int cmd_export(ctl_client *c, args *a, ctl_err *e);
static int cmd_drift(ctl_client *c, args *a, ctl_err *e);

static const struct command {
    const char *name;
    unsigned bit;
    int npos;
    command_fn run;
    const char *usage, *summary, *details;
} commands[] = {
    {"fit", F_FIT, 2, cmd_fit, "fit NAME DATA.csv --algorithm ALG --kernel TYPE "
     "[options]", "fit a model from a CSV file",
     "DATA.csv has a header row. The target is the column --target names, else\n"
     "the last column; labels that are all numbers are sent as numbers, else as\n"
     "strings. kpca and kkmeans (target \"none\" in GET /v1) have no target:\n"
     "every column is a feature, less --target's.\n"
     "A kernel that takes strings (its input in GET /v1) takes one text column\n"
     "besides the target, each cell sent as the file has it (RFC 4180: quote a\n"
     "text holding commas, quotes (doubled) or line breaks). A precomputed\n"
     "kernel's DATA.csv is the n x n Gram of the training rows, plus the target.\n"
     "DATA.csv may be - for standard input. Fits of more than 20000 values\n"
     "(rows x features), or with --async, run as a job: a progress bar on a\n"
     "terminal (plain lines otherwise); Ctrl-C offers to cancel the job.\n"
     "\nexamples:\n  kmctl fit cancer --algorithm svc --kernel rbf --gamma 0.5 --C 10 "
     "cancer.csv\n"
     "  kmctl fit news news.csv --target label --algorithm svc \\\n"
     "      --kernel spectrum --length 3\n"},
    {"search", F_SEARCH, 2, cmd_search, "search NAME DATA.csv --algorithm ALG "
     "--kernel TYPE --grid NAME=V1,V2,... [--cv K|loo|gcv] [options]",
     "choose parameters by cross-validation, then fit the best",
     "Scores every point of the grid (every combination of the --grid lists),\n"
     "or --n-iter random draws from the lists and --range ranges, by\n"
     "cross-validation on DATA.csv (read as for fit), then fits the best point\n"
     "on all rows as model NAME. Runs as a job with a progress bar; Ctrl-C\n"
     "offers to cancel it. Prints each point's mean and standard deviation of\n"
     "the score over the folds, best marked with *.\n"
     "\nexample:\n  kmctl search cancer cancer.csv --algorithm svc --kernel rbf "
     "--scale standardize \\\n      --grid gamma=1e-3,1e-2,1e-1 --grid C=1,10,100 "
     "--cv 5\n"},
    {"predict", F_PREDICT, 2, cmd_predict,
     "predict NAME DATA.csv [--output KIND]",
     "predictions as CSV on stdout",
     "Writes a header and one row per input row. The model's n_features says\n"
     "which columns are features: the --target column is left out; if one\n"
     "column more than n_features remains, 'y' (else the last column) is left\n"
     "out too, so the CSV the model was fitted from can be given as it is.\n"
     "--output is checked against the server's list (GET /v1). Header: 'label'\n"
     "or 'prediction' (prediction_0.. for several outputs) for the model's\n"
     "default output; p_LABEL per class (probability); f_LABEL per class or\n"
     "A_vs_B per class pair (decision_function); any other output of one\n"
     "column is named by it ('decision_function' (binary), gpr's 'std' or\n"
     "'var'); gpr's cov is a matrix per request, so not for CSV.\n"
     "A string model (its metadata's input) takes one text column; a\n"
     "precomputed model one column per training row: the kernel values.\n"},
    {"project", F_PROJECT, 2, cmd_project, "project NAME DATA.csv [--inverse]",
     "kernel PCA projections as CSV on stdout",
     "Writes pc1..pcK per input row; with --inverse the CSV holds projections\n"
     "(n_components columns) and the output is x1..xD in input space. Columns\n"
     "are chosen as for predict.\n"},
    {"score", F_SCORE, 2, cmd_score, "score NAME DATA.csv [--target COLUMN]",
     "how good the model's answers are on a CSV with known answers",
     "DATA.csv is laid out as for fit: the target is the column --target\n"
     "names, else the last (a krr model of m outputs: the last m columns);\n"
     "every other column is a feature (a string model's: one text column).\n"
     "kpca has no target: it scores its\n"
     "reconstruction (a model fitted with the inverse map). Prints r2, mse\n"
     "and mae (krr, svr); accuracy, balanced_accuracy, log_loss (with\n"
     "probabilities), precision and recall per label and the confusion\n"
     "matrix (svc); reconstruction_error (kpca). --json prints the server's\n"
     "answer.\n"},
    {"update", F_UPDATE, 2, cmd_update, "update NAME DATA.csv [--target COLUMN] "
     "[--async]", "add rows to a model without a full refit",
     "DATA.csv is laid out as for score: the model's features and its target\n"
     "(the column --target names, else the last; a krr model of m outputs:\n"
     "the last m columns). The server makes the next version of NAME, equal\n"
     "to a refit on the old rows and these (exact gpr models, krr and\n"
     "nystrom gpr models fitted with --param keep_factor=true, and svc and\n"
     "svr models fitted with --param keep_rows=true, by warm-started SMO;\n"
     "others are refused,\n"
     "naming what can). Preprocessing statistics stay those of the first fit. Prints\n"
     "\"updated NAME version N: ...\" (--json: the new version's metadata).\n"
     "Larger updates (more than 20000 values), or with --async, run as a job.\n"
     "\nexample:\n  kmctl fit sales --algorithm krr --kernel rbf --param "
     "keep_factor=true jan.csv\n  kmctl update sales feb.csv\n"},
    {"models", F_MODELS, 0, cmd_models, "models [--json]", "list the models", ""},
    {"get", F_GET, 1, cmd_get, "get NAME", "a model's metadata as JSON", ""},
    {"delete", F_DELETE, 1, cmd_delete, "delete NAME",
     "delete a model (from memory and disk)", ""},
    {"jobs", F_JOBS, 0, cmd_jobs, "jobs [--json]", "list fit jobs, newest first",
     ""},
    {"health", F_HEALTH, 0, cmd_health, "health",
     "exit 0 if the server is ready (GET /readyz answers 200), else 1",
     "Used by the Docker image's HEALTHCHECK.\n"},
    {"import", F_IMPORT, 2, cmd_import, "import NAME FILE [--format libsvm|kmm] "
     "[--n-features N]", "serve a model file: LIBSVM's or kmserve's own",
     "FILE is a model file svm-train wrote (c_svc or epsilon_svr; linear,\n"
     "polynomial, rbf or sigmoid kernel), or a kmserve model file (.kmm, as\n"
     "export or a models directory holds); - reads standard input. It becomes\n"
     "the next version of NAME. Prints the model's metadata as fit does.\n"
     "\nexample:\n  svm-train -c 10 -g 0.5 heart_scale heart.model\n"
     "  kmctl import heart heart.model\n"},
    {"export", F_EXPORT, 2, cmd_export, "export NAME FILE [--format libsvm|kmm]",
     "write a model's file: LIBSVM's or kmserve's own",
     "libsvm: an svc or svr model as svm-predict reads it (refused for other\n"
     "kernels, preprocessing or non-integer labels); kmm: kmserve's own file,\n"
     "which import (on any kmserve) reads back exactly. FILE - is standard\n"
     "output.\n"
     "\nexample:\n  kmctl export heart heart.model && svm-predict test heart.model out\n"},
    {"drift", F_DRIFT, 1, cmd_drift, "drift NAME",
     "test the rows a model was recently asked against its training rows",
     "Prints the server's answer to GET /v1/models/NAME/drift as JSON: the\n"
     "unbiased MMD^2, its permutation p-value (200 permutations, seed 0),\n"
     "the sizes of both samples, the window and the kernel used. A model\n"
     "with too few recent rows is an error naming how many are needed.\n"},
};
#define N_COMMANDS (sizeof commands / sizeof *commands)

/* ---------------------------------------------------------------- help */

/* Prints text wrapped before column 79, the cursor being at column
 * `indent` now and continuation lines starting there. */
static void wrap(FILE *f, const char *text, int indent)
{
    int col = indent, first = 1;
    while (*text) {
        int word = (int)strcspn(text, " ");
        if (!first && col + 1 + word > 79) {
            fprintf(f, "\n%*s", indent, "");
            col = indent;
            first = 1;
        }
        col += fprintf(f, "%s%.*s", first ? "" : " ", word, text);
        first = 0;
        text += word;
        while (*text == ' ')
            text++;
    }
    fputc('\n', f);
}

static void print_options(FILE *f, unsigned mask, int global)
{
    for (size_t i = 0; i < N_OPTS; i++) {
        const struct opt *o = &opts[i];
        if (!(o->cmds & mask) || (o->cmds == F_ALL) != global)
            continue;
        char left[64];
        snprintf(left, sizeof left, "--%s%s%s", o->flag, o->metavar ? " " : "",
                 o->metavar ? o->metavar : "");
        fprintf(f, "  %-22s ", left);
        wrap(f, o->help, 25);
    }
}

static void usage_main(FILE *f)
{
    fprintf(f, "usage: kmctl [--server URL] [--token TOKEN] [--cacert FILE] "
               "COMMAND [options] [args]\n\n"
               "Talks to a kmserve daemon over its HTTP/JSON API.\n\ncommands:\n");
    for (size_t i = 0; i < N_COMMANDS; i++)
        fprintf(f, "  %-9s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\noptions for every command (a flag wins over its environment "
               "variable):\n");
    print_options(f, F_ALL, 1);
    fprintf(f, "  %-22s %s\n  %-22s %s\n", "--help", "this text; COMMAND --help "
               "for a command's options", "--version", "print the version");
    fprintf(f, "\nexit status: 0 success, 1 the server answered an error (or "
               "a job failed),\n2 usage or input error, 3 the server could not "
               "be reached, 130 Ctrl-C.\n");
}

static void usage_command(FILE *f, const struct command *cmd)
{
    fprintf(f, "usage: kmctl %s\n\n%s.\n", cmd->usage, cmd->summary);
    if (*cmd->details)
        fprintf(f, "\n%s", cmd->details);
    fprintf(f, "\noptions:\n");
    print_options(f, cmd->bit, 0);
    print_options(f, cmd->bit, 1);
}

/* ---------------------------------------------------------------- args */

/* --grid NAME=V1,V2,... and --range NAME=LOW:HIGH into search.params.
 * A kernel parameter's name (gamma, degree, coef0: the options that set
 * the kernel) is the API's "kernel.NAME". */
static int add_search_param(args *a, const struct opt *o, const char *value,
                            ctl_err *e)
{
    const char *eq = strchr(value, '=');
    int range = o->kind == O_SEARCH_RANGE;
    if (!eq || eq == value || !eq[1])
        return ctl_fail(e, CTL_EXIT_USAGE, "--%s: expected %s, not '%s'",
                        o->flag, o->metavar, value);
    char name[80];
    int kernel = 0;
    for (size_t k = 0; k < N_OPTS; k++)
        if (opts[k].kind == O_KERNEL_NUM &&
            strlen(opts[k].key) == (size_t)(eq - value) &&
            !strncmp(opts[k].key, value, (size_t)(eq - value)))
            kernel = 1;
    snprintf(name, sizeof name, "%s%.*s", kernel ? "kernel." : "",
             (int)(eq - value > 60 ? 60 : eq - value), value);
    cJSON *values = range ? cJSON_CreateObject() : cJSON_CreateArray();
    cJSON *list = range ? cJSON_AddArrayToObject(values, "log_uniform") : values;
    if (!values || !list) {
        cJSON_Delete(values);
        return ctl_fail(e, CTL_EXIT_USAGE, "out of memory");
    }
    const char *sep = range ? ":" : ",";
    size_t count = 0;
    for (const char *p = eq + 1;; p++) {
        size_t len = strcspn(p, sep);
        char cell[64];
        double v;
        snprintf(cell, sizeof cell, "%.*s", (int)(len < 63 ? len : 63), p);
        if (len >= 64 || ctl_parse_number(cell, &v)) {
            cJSON_Delete(values);
            return ctl_fail(e, CTL_EXIT_USAGE, "--%s %s: '%.*s' is not a "
                            "number", o->flag, name, (int)len, p);
        }
        cJSON_AddItemToArray(list, cJSON_CreateNumber(v));
        count++;
        p += len;
        if (!*p)
            break;
    }
    if (range && count != 2) {
        cJSON_Delete(values);
        return ctl_fail(e, CTL_EXIT_USAGE, "--range %s: expected LOW:HIGH",
                        name);
    }
    cJSON_DeleteItemFromObjectCaseSensitive(a->search, name);
    cJSON_AddItemToObject(a->search, name, values);
    return 0;
}

static int set_option(args *a, const struct opt *o, const char *value,
                      ctl_err *e)
{
    double v;
    cJSON *item = NULL;
    switch (o->kind) {
    case O_STR:
        *(const char **)((char *)a + o->offset) = value;
        return 0;
    case O_FLAG:
        *(int *)((char *)a + o->offset) = 1;
        return 0;
    case O_INT: {
        char *end;
        long n = strtol(value, &end, 10);
        if (end == value || *end || n < 1 || n > 100000000)
            return ctl_fail(e, CTL_EXIT_USAGE, "--%s: expected a whole number "
                            "from 1 to 100000000, not '%s'", o->flag, value);
        *(long *)((char *)a + o->offset) = n;
        return 0;
    }
    case O_KERNEL_NUM:
    case O_PARAM_NUM:
        if (ctl_parse_number(value, &v))
            return ctl_fail(e, CTL_EXIT_USAGE, "--%s: expected a number, not '%s'",
                            o->flag, value);
        item = cJSON_CreateNumber(v);
        break;
    case O_PARAM_TRUE:
        item = cJSON_CreateTrue();
        break;
    case O_PARAM_KV: {
        const char *eq = strchr(value, '=');
        if (!eq || eq == value)
            return ctl_fail(e, CTL_EXIT_USAGE, "--param: expected KEY=VALUE, not "
                            "'%s'", value);
        char key[128];
        snprintf(key, sizeof key, "%.*s", (int)(eq - value), value);
        const char *end = NULL;
        item = cJSON_ParseWithOpts(eq + 1, &end, 1);
        if (!item)
            item = cJSON_CreateString(eq + 1);
        if (!item)
            return ctl_fail(e, CTL_EXIT_USAGE, "out of memory");
        cJSON_DeleteItemFromObjectCaseSensitive(a->params, key);
        cJSON_AddItemToObject(a->params, key, item);
        return 0;
    }
    case O_SEARCH_LIST:
    case O_SEARCH_RANGE:
        return add_search_param(a, o, value, e);
    }
    if (!item)
        return ctl_fail(e, CTL_EXIT_USAGE, "out of memory");
    cJSON *obj = o->kind == O_KERNEL_NUM ? a->kernel_params : a->params;
    cJSON_DeleteItemFromObjectCaseSensitive(obj, o->key);
    cJSON_AddItemToObject(obj, o->key, item);
    return 0;
}

/* 0 to run *cmd, 1 when help or the version was printed, -1 with e. */
static int parse_args(int argc, char **argv, args *a,
                      const struct command **cmd, ctl_err *e)
{
    int only_positional = 0;
    *cmd = NULL;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (!only_positional && !strcmp(arg, "--")) {
            only_positional = 1;
            continue;
        }
        if (!only_positional && (!strcmp(arg, "--help") || !strcmp(arg, "-h"))) {
            if (*cmd)
                usage_command(stdout, *cmd);
            else
                usage_main(stdout);
            return 1;
        }
        if (!only_positional && !strcmp(arg, "--version")) {
            printf("kmctl %s\n", KM_VERSION);
            return 1;
        }
        if (!only_positional && arg[0] == '-' && arg[1]) {
            const char *name = arg + (arg[1] == '-' ? 2 : 1), *eq = strchr(name, '=');
            size_t len = eq ? (size_t)(eq - name) : strlen(name);
            const struct opt *o = NULL;
            for (size_t k = 0; k < N_OPTS && !o; k++)
                if (strlen(opts[k].flag) == len && !strncmp(opts[k].flag, name, len))
                    o = &opts[k];
            if (!o || arg[1] != '-')
                return ctl_fail(e, CTL_EXIT_USAGE, "unknown option '%s' (see "
                                "kmctl %s--help)", arg, *cmd ? (*cmd)->name : "");
            unsigned mask = *cmd ? (*cmd)->bit : F_ALL;
            if (!(o->cmds & mask) || (!*cmd && o->cmds != F_ALL))
                return ctl_fail(e, CTL_EXIT_USAGE, "--%s does not apply to %s "
                                "(see kmctl %s --help)", o->flag,
                                *cmd ? (*cmd)->name : "kmctl without a command",
                                *cmd ? (*cmd)->name : "");
            const char *value = NULL;
            int takes_value = o->metavar != NULL;
            if (takes_value) {
                if (eq)
                    value = eq + 1;
                else if (i + 1 < argc)
                    value = argv[++i];
                else
                    return ctl_fail(e, CTL_EXIT_USAGE, "--%s needs a value (%s)",
                                    o->flag, o->metavar);
            } else if (eq) {
                return ctl_fail(e, CTL_EXIT_USAGE, "--%s takes no value", o->flag);
            }
            if (set_option(a, o, value, e))
                return -1;
            continue;
        }
        if (!*cmd) {
            for (size_t k = 0; k < N_COMMANDS && !*cmd; k++)
                if (!strcmp(commands[k].name, arg))
                    *cmd = &commands[k];
            if (!*cmd)
                return ctl_fail(e, CTL_EXIT_USAGE, "unknown command '%s' (see "
                                "kmctl --help)", arg);
            continue;
        }
        if (a->npos >= (int)(sizeof a->pos / sizeof *a->pos))
            return ctl_fail(e, CTL_EXIT_USAGE, "too many arguments (usage: kmctl "
                            "%s)", (*cmd)->usage);
        a->pos[a->npos++] = arg;
    }
    if (!*cmd) {
        usage_main(stderr);
        return ctl_fail(e, CTL_EXIT_USAGE, "no command given");
    }
    if (a->npos != (*cmd)->npos)
        return ctl_fail(e, CTL_EXIT_USAGE, "%s needs %d argument%s (usage: kmctl "
                        "%s)", (*cmd)->name, (*cmd)->npos,
                        (*cmd)->npos == 1 ? "" : "s", (*cmd)->usage);
    return 0;
}

/* ---------------------------------------------------------------- score */

/* A label (number or string) as text. */
static void label_text(const cJSON *l, char *out, size_t n)
{
    if (cJSON_IsString(l))
        snprintf(out, n, "%s", l->valuestring);
    else if (cJSON_IsNumber(l) && n >= 32)
        ctl_fmt_double(out, l->valuedouble);
    else
        snprintf(out, n, "?");
}

/* The figures of a score answer, one a line; svc's per-label lists as a
 * table and its confusion matrix (rows: true label). */
static void print_scores(const cJSON *ans)
{
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(ans, "scoring"), *it;
    char num[32];
    const cJSON *ref = cJSON_GetObjectItemCaseSensitive(ans, "model");
    printf("model %s version %.0f, %.0f rows\n", ctl_str_or(ref, "name", "?"),
           ctl_num_or(ref, "version", 0), ctl_num_or(ans, "n", 0));
    cJSON_ArrayForEach(it, s) {
        if (cJSON_IsNumber(it)) {
            ctl_fmt_double(num, it->valuedouble);
            printf("%-22s %s\n", it->string, num);
        } else if (cJSON_IsNull(it)) {
            printf("%-22s %s\n", it->string, "undefined");
        }
    }
    const cJSON *labels = cJSON_GetObjectItemCaseSensitive(s, "labels");
    const cJSON *prec = cJSON_GetObjectItemCaseSensitive(s, "precision");
    const cJSON *rec = cJSON_GetObjectItemCaseSensitive(s, "recall");
    const cJSON *cm = cJSON_GetObjectItemCaseSensitive(s, "confusion_matrix");
    int k = cJSON_GetArraySize(labels);
    if (!k)
        return;
    printf("\n%-16s %-22s %s\n", "label", "precision", "recall");
    for (int c = 0; c < k; c++) {
        char l[64], p[32], r[32];
        label_text(cJSON_GetArrayItem(labels, c), l, sizeof l);
        ctl_fmt_double(p, ctl_num_item(cJSON_GetArrayItem(prec, c)));
        ctl_fmt_double(r, ctl_num_item(cJSON_GetArrayItem(rec, c)));
        printf("%-16s %-22s %s\n", l, p, r);
    }
    printf("\nconfusion matrix (rows: true label, columns: predicted)\n%-16s",
           "");
    for (int c = 0; c < k; c++) {
        char l[64];
        label_text(cJSON_GetArrayItem(labels, c), l, sizeof l);
        printf(" %10.10s", l);
    }
    putchar('\n');
    for (int t = 0; t < k; t++) {
        char l[64];
        label_text(cJSON_GetArrayItem(labels, t), l, sizeof l);
        printf("%-16.16s", l);
        const cJSON *row = cJSON_GetArrayItem(cm, t);
        for (int c = 0; c < k; c++)
            printf(" %10.0f", ctl_num_item(cJSON_GetArrayItem(row, c)));
        putchar('\n');
    }
}

/* y of rows [0, rows) from the columns ycols[0..ny) of csv, as JSON text:
 * strings when the model's labels are strings, else numbers (rows of ny
 * numbers when ny > 1). Caller frees *out. */
static int score_targets(const ctl_csv *csv, const size_t *ycols, size_t ny,
                         int strings, char **out, ctl_err *e)
{
    size_t rows = ctl_csv_rows(csv);
    cJSON *y = cJSON_CreateArray();
    for (size_t i = 0; y && i < rows; i++) {
        cJSON *row = ny > 1 ? cJSON_CreateArray() : NULL;
        for (size_t k = 0; k < ny; k++) {
            const char *cell = ctl_csv_cell(csv, i, ycols[k]);
            double v = 0;
            cJSON *item;
            if (strings) {
                item = cJSON_CreateString(cell);
            } else if (ctl_parse_number(cell, &v) == 0) {
                item = cJSON_CreateNumber(v);
            } else {
                cJSON_Delete(row);
                cJSON_Delete(y);
                return ctl_fail(e, CTL_EXIT_USAGE, "%s line %zu, column '%s': "
                                "'%.40s' is not a number", ctl_csv_path(csv),
                                ctl_csv_line(csv, i),
                                ctl_csv_name(csv, ycols[k]), cell);
            }
            cJSON_AddItemToArray(row ? row : y, item);
        }
        if (row)
            cJSON_AddItemToArray(y, row);
    }
    /* exact numbers, as fit's answers are read back */
    *out = NULL;
    if (y) {
        ctl_exact_numbers(y);
        *out = cJSON_PrintUnformatted(y);
    }
    cJSON_Delete(y);
    return *out ? 0 : ctl_fail(e, CTL_EXIT_USAGE, "out of memory");
}

/* The answer of an update (201 {"model"}; with async a job, waited for):
 * the new version's metadata, printed as fit prints it. */
static int update_answer(ctl_client *c, args *a, const char *path,
                         ctl_buf *body, ctl_err *e)
{
    cJSON *result = NULL;
    ctl_reply r = {0};
    int rc = -1;
    if (!a->async) {
        if (ctl_call_expect(c, "POST", path, body->data, body->len, 201, &r,
                            e))
            goto out;
        result = cJSON_DetachItemFromObjectCaseSensitive(r.json, "model");
    } else {
        ctl_job_catch_sigint(c);
        int bad = ctl_call_expect(c, "POST", path, body->data, body->len, 202,
                                  &r, e);
        const char *id = bad ? NULL : ctl_str_or(
            cJSON_GetObjectItemCaseSensitive(r.json, "job"), "id", NULL);
        if (!bad && !id)
            ctl_fail(e, CTL_EXIT_SERVER, "the update was accepted without a "
                     "job id");
        bad = bad || !id || ctl_job_wait(c, id, a->pos[0], &result, e);
        ctl_job_release_sigint(c);
        if (bad)
            goto out;
    }
    if (!cJSON_IsObject(result)) {
        ctl_fail(e, CTL_EXIT_SERVER, "the update answer holds no model");
        goto out;
    }
    if (a->json)
        ctl_print_json(result);
    else
        ctl_print_model(result, "updated");
    rc = 0;
out:
    ctl_reply_cleanup(&r);
    cJSON_Delete(result);
    return rc;
}

static int score_or_update(ctl_client *c, args *a, int update, ctl_err *e);

static int cmd_score(ctl_client *c, args *a, ctl_err *e)
{
    return score_or_update(c, a, 0, e);
}

static int cmd_update(ctl_client *c, args *a, ctl_err *e)
{
    return score_or_update(c, a, 1, e);
}

/* Score, or update: the same CSV (the model's features and its target
 * columns) to /score or /update. */
static int score_or_update(ctl_client *c, args *a, int update, ctl_err *e)
{
    const char *name = a->pos[0];
    ctl_csv *csv = NULL;
    size_t *cols = NULL, ncols = 0, *ycols = NULL, ny = 0;
    char *mpath = NULL, *path = NULL, *ytext = NULL;
    ctl_reply meta = {0}, r = {0};
    ctl_buf body;
    int rc = -1;
    ctl_buf_init(&body, MAX_BODY);

    if (!(mpath = ctl_model_path(c, name, "", e)) ||
        !(path = ctl_model_path(c, name, update ? "/update" : "/score", e)))
        goto out;
    if (ctl_call_expect(c, "GET", mpath, NULL, 0, 200, &meta, e))
        goto out;
    const char *algo = ctl_str_or(meta.json, "algorithm", ""), *kind;
    const cJSON *classes = cJSON_GetObjectItemCaseSensitive(meta.json, "classes");
    double need;
    ctl_model_input(meta.json, &kind, &need);
    int strings = !strcmp(kind, "strings");
    if (need < 1) {
        ctl_fail(e, CTL_EXIT_SERVER, "model %s's metadata does not say how "
                 "many features it takes", name);
        goto out;
    }
    if (ctl_csv_read(a->pos[1], &csv, e))
        goto out;
    size_t total = ctl_csv_cols(csv), rows = ctl_csv_rows(csv);
    if (!rows) {
        ctl_fail(e, CTL_EXIT_USAGE, "%s has no data rows", a->pos[1]);
        goto out;
    }
    int takes_target = 1;
    if (ctl_about_takes_target(c, algo, &takes_target, e))
        goto out;
    if (!takes_target) {
        /* kpca: every column a feature, less --target's */
        if (ctl_select_columns(csv, a->target, (size_t)need, name, &cols, &ncols, e))
            goto out;
    } else {
        /* the target: --target's column, else the last n_outputs */
        double no = ctl_num_or(meta.json, "n_outputs", 1);
        ny = a->target ? 1 : (size_t)(no >= 1 ? no : 1);
        long t = a->target ? ctl_csv_find(csv, a->target)
                           : (long)total - (long)ny;
        if (a->target && t < 0) {
            ctl_fail(e, CTL_EXIT_USAGE, "%s has no column '%s'", a->pos[1],
                     a->target);
            goto out;
        }
        if (total < ny || total - ny != (size_t)need) {
            ctl_fail(e, CTL_EXIT_USAGE, "%s has %zu columns; model %s takes "
                     "%.0f features and %zu target column%s", a->pos[1], total,
                     name, need, ny, ny == 1 ? "" : "s");
            goto out;
        }
        cols = malloc(total * sizeof *cols);
        ycols = malloc(ny * sizeof *ycols);
        if (!cols || !ycols) {
            ctl_fail(e, CTL_EXIT_USAGE, "out of memory");
            goto out;
        }
        for (size_t j = 0; j < total; j++) {
            if (j >= (size_t)t && j < (size_t)t + ny)
                ycols[j - (size_t)t] = j;
            else
                cols[ncols++] = j;
        }
        /* labels go in the model's type (trimmed, as at fit); targets as
         * numbers */
        int labels = cJSON_IsString(cJSON_GetArrayItem(classes, 0));
        for (size_t k = 0; labels && k < ny; k++)
            ctl_csv_trim_column(csv, ycols[k]);
        if (score_targets(csv, ycols, ny, labels, &ytext, e))
            goto out;
    }
    if (ctl_buf_append(&body, "{\"X\":", 5) ||
        (strings ? ctl_csv_strings_json(csv, 0, rows, cols[0], &body, e)
                 : ctl_csv_matrix_json(csv, 0, rows, cols, ncols, &body, e)) ||
        (ytext && (ctl_buf_append(&body, ",\"y\":", 5) ||
                   ctl_buf_append(&body, ytext, strlen(ytext)))) ||
        (update && (a->async = a->async || rows * ncols > 20000) &&
         ctl_buf_append(&body, ",\"async\":true", 13)) ||
        ctl_buf_append(&body, "}", 1)) {
        if (!e->msg[0])
            ctl_fail(e, CTL_EXIT_USAGE, "the request would exceed %zu MiB",
                     MAX_BODY >> 20);
        goto out;
    }
    if (update) {
        rc = update_answer(c, a, path, &body, e);
        goto out;
    }
    if (ctl_call_expect(c, "POST", path, body.data, body.len, 200, &r, e))
        goto out;
    if (a->json)
        ctl_print_json(r.json);
    else
        print_scores(r.json);
    if (fflush(stdout) || ferror(stdout)) {
        ctl_fail(e, CTL_EXIT_USAGE, "cannot write the output");
        goto out;
    }
    rc = 0;
out:
    ctl_reply_cleanup(&r);
    ctl_reply_cleanup(&meta);
    ctl_buf_cleanup(&body);
    ctl_csv_free(csv);
    free(cols);
    free(ycols);
    free(ytext);
    free(path);
    free(mpath);
    return rc;
}

/* ---------------------------------------------------------------- the rest */

static int cmd_models(ctl_client *c, args *a, ctl_err *e)
{
    ctl_reply r;
    if (ctl_call_expect(c, "GET", "/v1/models", NULL, 0, 200, &r, e))
        return -1;
    const cJSON *models = cJSON_GetObjectItemCaseSensitive(r.json, "models"), *m;
    if (a->json) {
        ctl_print_json(r.json);
        ctl_reply_cleanup(&r);
        return 0;
    }
    static const char *const head[] = {"NAME", "VERSION", "ALGORITHM", "KERNEL",
                                       "SAMPLES", "FEATURES", "CREATED"};
    enum { W = sizeof head / sizeof *head };
    size_t n = (size_t)cJSON_GetArraySize(models), i = 0;
    char **cells = calloc(n * W + 1, sizeof *cells);
    int rc = 0;
    if (!cells) {
        ctl_reply_cleanup(&r);
        return ctl_fail(e, CTL_EXIT_USAGE, "out of memory");
    }
    cJSON_ArrayForEach(m, models) {
        char kernel[256];
        ctl_kernel_text(cJSON_GetObjectItemCaseSensitive(m, "kernel"), kernel,
                    sizeof kernel);
        if (asprintf(&cells[i * W + 0], "%s", ctl_str_or(m, "name", "?")) < 0 ||
            asprintf(&cells[i * W + 1], "%.0f", ctl_num_or(m, "version", 0)) < 0 ||
            asprintf(&cells[i * W + 2], "%s", ctl_str_or(m, "algorithm", "?")) < 0 ||
            asprintf(&cells[i * W + 3], "%s", kernel) < 0 ||
            asprintf(&cells[i * W + 4], "%.0f", ctl_num_or(m, "n_samples", 0)) < 0 ||
            asprintf(&cells[i * W + 5], "%.0f", ctl_num_or(m, "n_features", 0)) < 0 ||
            asprintf(&cells[i * W + 6], "%s", ctl_str_or(m, "created_at", "")) < 0) {
            rc = ctl_fail(e, CTL_EXIT_USAGE, "out of memory");
            break;
        }
        i++;
    }
    if (!rc)
        ctl_print_table(head, W, cells, n);
    for (size_t k = 0; k < n * W; k++)
        free(cells[k]);
    free(cells);
    ctl_reply_cleanup(&r);
    return rc;
}

/* GET /v1/models/NAME + tail, its JSON printed. */
static int print_model_get(ctl_client *c, const char *name, const char *tail,
                           ctl_err *e)
{
    ctl_reply r;
    char *path = ctl_model_path(c, name, tail, e);
    if (!path)
        return -1;
    int rc = ctl_call_expect(c, "GET", path, NULL, 0, 200, &r, e);
    free(path);
    if (rc)
        return -1;
    ctl_print_json(r.json);
    ctl_reply_cleanup(&r);
    return 0;
}

static int cmd_get(ctl_client *c, args *a, ctl_err *e)
{
    return print_model_get(c, a->pos[0], "", e);
}

static int cmd_drift(ctl_client *c, args *a, ctl_err *e)
{
    return print_model_get(c, a->pos[0], "/drift", e);
}

static int cmd_delete(ctl_client *c, args *a, ctl_err *e)
{
    ctl_reply r;
    char *path = ctl_model_path(c, a->pos[0], "", e);
    if (!path)
        return -1;
    int rc = ctl_call_expect(c, "DELETE", path, NULL, 0, 204, &r, e);
    free(path);
    if (rc)
        return -1;
    ctl_reply_cleanup(&r);
    printf("deleted %s\n", a->pos[0]);
    return 0;
}

static int cmd_jobs(ctl_client *c, args *a, ctl_err *e)
{
    ctl_reply r;
    if (ctl_call_expect(c, "GET", "/v1/jobs", NULL, 0, 200, &r, e))
        return -1;
    if (a->json) {
        ctl_print_json(r.json);
        ctl_reply_cleanup(&r);
        return 0;
    }
    const cJSON *jobs = cJSON_GetObjectItemCaseSensitive(r.json, "jobs"), *j;
    static const char *const head[] = {"ID", "STATUS", "MODEL", "PROGRESS",
                                       "CREATED", "ERROR"};
    enum { W = sizeof head / sizeof *head };
    size_t n = (size_t)cJSON_GetArraySize(jobs), i = 0;
    char **cells = calloc(n * W + 1, sizeof *cells);
    int rc = 0;
    if (!cells) {
        ctl_reply_cleanup(&r);
        return ctl_fail(e, CTL_EXIT_USAGE, "out of memory");
    }
    cJSON_ArrayForEach(j, jobs) {
        const cJSON *err = cJSON_GetObjectItemCaseSensitive(j, "error");
        if (asprintf(&cells[i * W + 0], "%s", ctl_str_or(j, "id", "?")) < 0 ||
            asprintf(&cells[i * W + 1], "%s", ctl_str_or(j, "status", "?")) < 0 ||
            asprintf(&cells[i * W + 2], "%s", ctl_str_or(j, "model", "?")) < 0 ||
            asprintf(&cells[i * W + 3], "%.0f%%", 100 * ctl_num_or(j, "progress", 0)) < 0 ||
            asprintf(&cells[i * W + 4], "%s", ctl_str_or(j, "created_at", "")) < 0 ||
            asprintf(&cells[i * W + 5], "%s", ctl_str_or(err, "code", "")) < 0) {
            rc = ctl_fail(e, CTL_EXIT_USAGE, "out of memory");
            break;
        }
        i++;
    }
    if (!rc)
        ctl_print_table(head, W, cells, n);
    for (size_t k = 0; k < n * W; k++)
        free(cells[k]);
    free(cells);
    ctl_reply_cleanup(&r);
    return rc;
}

static int cmd_health(ctl_client *c, args *a, ctl_err *e)
{
    (void)a;
    ctl_reply r;
    if (ctl_client_call(c, "GET", "/readyz", NULL, 0, &r, e))
        return -1;
    int rc = 0;
    if (r.status == 200)
        printf("ready: %.0f models\n", ctl_num_or(r.json, "models", 0));
    else if (cJSON_IsString(cJSON_GetObjectItemCaseSensitive(r.json, "status")))
        rc = ctl_fail(e, CTL_EXIT_SERVER, "not ready: %ld %s", r.status,
                      ctl_str_or(r.json, "status", ""));
    else
        rc = ctl_reply_fail(&r, e);
    ctl_reply_cleanup(&r);
    return rc;
}

/* ---------------------------------------------------------------- files */

/* The whole of path (- : standard input), at most MAX_BODY bytes, into
 * b. 0, or -1 with e (exit 2). */
static int read_whole(const char *path, ctl_buf *b, ctl_err *e)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    char chunk[65536];
    size_t n;
    int rc = 0;
    if (!f)
        return ctl_fail(e, CTL_EXIT_USAGE, "cannot open %s: %s", path,
                        strerror(errno));
    ctl_buf_init(b, MAX_BODY);
    while (!rc && (n = fread(chunk, 1, sizeof chunk, f)) > 0)
        if (ctl_buf_append(b, chunk, n))
            rc = ctl_fail(e, CTL_EXIT_USAGE, "%s is larger than %zu MiB (or "
                          "memory is short)", path, MAX_BODY >> 20);
    if (!rc && ferror(f))
        rc = ctl_fail(e, CTL_EXIT_USAGE, "cannot read %s: %s", path,
                      strerror(errno));
    if (!rc && !b->data && ctl_buf_append(b, "", 0))
        rc = ctl_fail(e, CTL_EXIT_USAGE, "out of memory");
    if (f != stdin)
        fclose(f);
    if (rc)
        ctl_buf_cleanup(b);
    return rc;
}

static int check_format(const char *format, ctl_err *e)
{
    if (format && strcmp(format, "libsvm") && strcmp(format, "kmm"))
        return ctl_fail(e, CTL_EXIT_USAGE, "--format must be libsvm or kmm, "
                        "not '%s'", format);
    return 0;
}

static int cmd_import(ctl_client *c, args *a, ctl_err *e)
{
    ctl_buf file;
    ctl_reply r;
    char *path = NULL, *esc = NULL;
    if (check_format(a->format, e) || read_whole(a->pos[1], &file, e))
        return -1;
    const char *format = a->format ? a->format
                         : file.len >= 4 && !memcmp(file.data, "KMSM", 4)
                             ? "kmm" : "libsvm";
    int kmm = !strcmp(format, "kmm");
    int rc = -1;
    char *base = ctl_model_path(c, a->pos[0], "/import", e);
    if (base && a->n_features)
        esc = ctl_client_escape(c, a->n_features);
    if (base && (!a->n_features || esc) &&
        asprintf(&path, "%s?format=%s%s%s", base, format,
                 a->n_features ? "&n_features=" : "", esc ? esc : "") < 0)
        path = NULL;
    if (!path) {
        if (base)
            ctl_fail(e, CTL_EXIT_USAGE, "out of memory");
    } else if (ctl_client_call_as(c, "POST", path, file.data, file.len,
                                  kmm ? "application/octet-stream"
                                      : "text/plain", &r, e) == 0) {
        if (r.status != 201 || !cJSON_IsObject(r.json)) {
            ctl_reply_fail(&r, e);
        } else {
            ctl_print_model(cJSON_GetObjectItemCaseSensitive(r.json, "model"),
                        "imported");
            rc = 0;
        }
        ctl_reply_cleanup(&r);
    }
    free(base);
    free(esc);
    free(path);
    ctl_buf_cleanup(&file);
    return rc;
}

static int cmd_export(ctl_client *c, args *a, ctl_err *e)
{
    ctl_reply r;
    const char *out = a->pos[1];
    size_t n = strlen(out);
    if (check_format(a->format, e))
        return -1;
    const char *format = a->format ? a->format
                         : n > 4 && !strcmp(out + n - 4, ".kmm") ? "kmm"
                                                                  : "libsvm";
    char suffix[32];
    snprintf(suffix, sizeof suffix, "/export?format=%s", format);
    char *path = ctl_model_path(c, a->pos[0], suffix, e);
    if (!path)
        return -1;
    int rc = ctl_client_call(c, "GET", path, NULL, 0, &r, e);
    free(path);
    if (rc)
        return -1;
    if (r.status != 200) {
        ctl_reply_fail(&r, e);
        ctl_reply_cleanup(&r);
        return -1;
    }
    FILE *f = strcmp(out, "-") ? fopen(out, "wb") : stdout;
    if (!f)
        rc = ctl_fail(e, CTL_EXIT_USAGE, "cannot create %s: %s", out,
                      strerror(errno));
    else if (fwrite(r.body, 1, r.len, f) != r.len ||
             (f == stdout ? fflush(f) : fclose(f)) != 0)
        rc = ctl_fail(e, CTL_EXIT_USAGE, "cannot write %s: %s", out,
                      strerror(errno));
    if (!rc && f != stdout)
        fprintf(stderr, "exported %s (%s, %zu bytes) to %s\n", a->pos[0],
                format, r.len, out);
    ctl_reply_cleanup(&r);
    return rc;
}

/* ---------------------------------------------------------------- main */

int main(int argc, char **argv)
{
    args a = {0};
    ctl_err e = {0, ""};
    ctl_client *client = NULL;
    const struct command *cmd = NULL;
    int status = CTL_EXIT_OK;

    a.kernel_params = cJSON_CreateObject();
    a.params = cJSON_CreateObject();
    a.search = cJSON_CreateObject();
    if (!a.kernel_params || !a.params || !a.search) {
        ctl_fail(&e, CTL_EXIT_USAGE, "out of memory");
        goto fail;
    }
    int parsed = parse_args(argc, argv, &a, &cmd, &e);
    if (parsed > 0)
        goto out;
    if (parsed < 0)
        goto fail;
    if (!a.server)
        a.server = getenv("KMSERVE_URL");
    if (!a.server || !*a.server)
        a.server = DEFAULT_URL;
    if (!a.token)
        a.token = getenv("KMSERVE_TOKEN");
    if (!a.cacert)
        a.cacert = getenv("KMSERVE_CACERT");
    if (ctl_client_create(a.server, a.token, a.cacert, &client, &e) ||
        cmd->run(client, &a, &e))
        goto fail;
    goto out;
fail:
    fflush(stdout);
    fprintf(stderr, "kmctl: %s\n", e.msg);
    status = e.exit ? e.exit : CTL_EXIT_SERVER;
out:
    ctl_about_free();
    ctl_client_free(client);
    cJSON_Delete(a.params);
    cJSON_Delete(a.kernel_params);
    cJSON_Delete(a.search);
    return status;
}
