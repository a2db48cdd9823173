/*
 * km_model.c - the fitted model object, its figures, and its file format.
 *
 * A model holds what every algorithm shares (kernel, sizes, identity,
 * parameter and training figures) and an algorithm-specific payload, which
 * it reaches through the algorithm's descriptor (km_algo, one per entry of
 * KM_ALGO_MAP). Models are built by a fit or a load and not changed after
 * they are shared.
 *
 * File format (version 2), all integers and doubles little-endian:
 *   "KMSM"  u32 format version
 *   u32 algorithm  u64 n_features  u64 n_samples  u64 n_outputs
 *   str name  u64 version  u64 created_at_ms
 *   kernel (recursive)  info params  info training
 *   u64 n_labels  u32 numeric  str label...
 *   preprocessing (km_pre_stats.c): u32 scale  u32 center_y
 *     [f64s shift  f64s scale: n_features each, when scale is not none]
 *     [f64s y_mean: n_outputs, with center_y]
 *   search record: u32 present; if 1: u32 scoring  u32 cv kind
 *     u64 n_splits  u64 n_params  str name * n_params  u64 n_points
 *     f64s values (n_points * n_params)  f64s mean  f64s std
 *     f64s fit_seconds (n_points each)  u64 best
 *   [versions 8 and later: u32 payload format (the version whose layout
 *     the payload has, as the descriptor's file_format says: 2 to the
 *     file's own but 8), then the drift reference: u64 rows
 *     (0: none)  [f64s values (rows * n_features), the raw rows
 *     km_model_set_reference keeps]]
 *   payload (the algorithm's own)
 *   u32 CRC-32 of every byte before it
 * Version 1 is the same without the preprocessing and search sections;
 * versions 3 to 7 and 9 to 11 change payloads only (FORMAT_VERSION's
 * comment); 8 is everything 7 allows plus the drift reference, 9 to 11
 * everything 8 allows plus their payloads' forms. This build reads all and
 * writes the oldest that holds the model.
 * A file is input like any other (a replica, an operator or an attacker
 * may have written it), so loading checks, in this order: the fixed
 * header (magic, format version, algorithm, sizes within the bounds of
 * km.h) and the file's size against the range those sizes imply, before
 * the rest is read or allocated; the checksum; then, while parsing, every
 * length against the bytes left, every count against the others, every
 * index against its range, and every number a prediction uses for being
 * finite. A model that loads is one a fit could have made.
 *
 * Long: the file format's common sections (identity, labels, search
 * record, drift reference) are written and read here, each beside the
 * checks a hostile file needs, so that one file shows the whole layout.
 *
 * Thread-safety: reentrant; a shared model is only read.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/km_base_internal.h"
#include "../kernels/km_kernel_internal.h"
#include "km_model_internal.h"

#define MAGIC "KMSM"
/* The newest version this build reads and writes. A model is written in
 * the oldest current version that holds it: 2, or 3 to 10 when its
 * payload needs it (the descriptor's file_format: krr's rff form 3, svc's
 * nystrom form 4, kpca's nystrom form 5, gpr's nystrom form 6, krr's
 * factor form 7: params.keep_factor; svc's and svr's kept rows 9:
 * params.keep_rows; krr's nystrom statistics form 10: params.keep_factor
 * with solver nystrom; gpr's nystrom form with its sums 11:
 * params.keep_factor; 12: the same with an exact factor in block files,
 * km_model_save_sink_blocks), or 8 when it keeps a drift reference
 * (km_model_set_reference) and its payload needs less, so that files of
 * every model an older server could fit stay readable by it. Versions 8
 * and later carry the drift reference section (which names the payload's
 * own layout: 2 to 7 or 9 to 12). */
#define FORMAT_VERSION KM_FORMAT_BLOCKS
/* The first version with the drift reference section. */
#define FORMAT_REFERENCE 8u
#define FORMAT_DEFAULT 2u
/* The oldest version this build reads. */
#define FORMAT_OLDEST 1u
/* Bytes of a file whose size the header does not fix, beyond the labels
 * and figures counted apart: the name (64), a kernel tree (at most 16^4
 * leaves under three levels of sums: under 12 MiB) and kpca's inverse
 * kernel (as much again). */
#define TEXT_SLACK ((uint64_t)64 << 20)

struct km_model {
    km_algorithm algo;
    km_kernel kernel;
    size_t n_features, n_samples, n_outputs;
    char name[65];
    uint64_t version;
    int64_t created_at_ms;
    km_info params, training;
    char **labels; /* n_labels strings, owned */
    size_t n_labels;
    int labels_numeric;
    km_pre_stats pre;
    /* The search record (km_model_set_search): search.values, mean, std
     * and fit_seconds point into search_data, which the model owns. */
    int has_search;
    km_search_table search;
    uint32_t file_format; /* the payload layout's version: the file's, or
                             version 8's payload format; 0: fitted */
    double *search_data;
    /* The drift reference (km_model_set_reference): n_reference rows of
     * n_features doubles, owned; NULL when none. */
    double *reference;
    size_t n_reference;
    void *payload;
};

/* A label is at most this long (the API checks the same bound). */
#define MAX_LABEL 256

unsigned km_model_outputs(const km_model *m)
{
    const km_algo *al = km_algo_of(m->algo);
    return !al ? 0 : al->model_outputs ? al->model_outputs(m) : al->outputs;
}

size_t km_model_score_columns(const km_model *m, double *sign)
{
    const km_algo *al = km_algo_of(m->algo);
    size_t cols = 0, k;
    if (al && al->scores)
        switch (al->decision_columns) {
        case KM_DECISION_PAIRS:
            cols = km_n_pairs(km_model_n_classes(m));
            break;
        case KM_DECISION_CLASSES:
            k = km_model_n_classes(m);
            cols = k == 2 ? 1 : k;
            break;
        default:
            cols = m->n_outputs;
        }
    if (sign)
        *sign = al && al->scores_first && cols == 1 ? -1.0 : 1.0;
    return cols;
}

size_t km_model_n_classes(const km_model *m)
{
    const km_algo *al = km_algo_of(m->algo);
    if (!al || !al->classes)
        return 0;
    size_t k = km_model_n_labels(m);
    return k ? k : al->n_classes ? al->n_classes(m) : 0;
}

size_t km_model_answer_width(const km_model *m, unsigned answer, size_t n)
{
    switch (answer) {
    case KM_OUT_LABELS:
    case KM_OUT_CLUSTERS:
        return 1;
    case KM_OUT_SCORES:
        return km_model_score_columns(m, NULL);
    case KM_OUT_PROBABILITIES:
        return km_model_n_classes(m);
    case KM_OUT_COVARIANCE:
        return n;
    case KM_OUT_INVERSE:
        return m->n_features;
    default: /* values, variances, projections */
        return m->n_outputs;
    }
}

/* ------------------------------------------------------------ the object */

km_status km_model_create(km_algorithm algo, const km_kernel *kernel,
                          size_t n_features, size_t n_samples,
                          size_t n_outputs, void *payload, km_model **out,
                          km_error *err)
{
    const km_algo *ops = km_algo_of(algo);
    km_model *m = calloc(1, sizeof *m);
    if (!m) {
        if (ops && payload)
            ops->free_payload(payload);
        return km_error_set(err, KM_ENOMEM, "out of memory for a model");
    }
    m->algo = algo;
    m->n_features = n_features;
    m->n_samples = n_samples;
    m->n_outputs = n_outputs;
    m->payload = payload;
    km_kernel_init(&m->kernel, KM_KERNEL_LINEAR);
    km_status st = km_kernel_copy(&m->kernel, kernel, err);
    if (st != KM_OK) {
        km_kernel_init(&m->kernel, KM_KERNEL_LINEAR);
        km_model_free(m);
        return st;
    }
    *out = m;
    return KM_OK;
}

static void free_labels(km_model *m)
{
    for (size_t i = 0; i < m->n_labels; i++)
        free(m->labels[i]);
    free(m->labels);
    m->labels = NULL;
    m->n_labels = 0;
}

/*
 * The rules class labels meet, whoever made them: each at most MAX_LABEL
 * bytes of UTF-8 (they are written into JSON), distinct and in the order
 * the class indices follow (numbers ascending, each the whole text of a
 * finite number; strings by byte order). Fails with status bad.
 */
static km_status check_labels(const char *const *labels, size_t n,
                              int numeric, km_status bad, km_error *err)
{
    double prev = 0;
    for (size_t i = 0; i < n; i++) {
        const char *l = labels[i];
        if (strlen(l) > MAX_LABEL)
            return km_error_set(err, bad, "class label %zu is longer than %d "
                                "bytes", i, MAX_LABEL);
        if (!km_utf8_valid(l))
            return km_error_set(err, bad, "class label %zu is not valid "
                                "UTF-8", i);
        if (numeric) {
            char *end;
            double v = strtod(l, &end);
            if (end == l || *end || !isfinite(v))
                return km_error_set(err, bad, "class label %zu is not the "
                                    "text of a finite number", i);
            if (i > 0 && !(v > prev))
                return km_error_set(err, bad, "class labels %zu and %zu are "
                                    "not distinct and ascending", i - 1, i);
            prev = v;
        } else if (i > 0 && strcmp(labels[i - 1], l) >= 0) {
            return km_error_set(err, bad, "class labels %zu and %zu are not "
                                "distinct and in byte order", i - 1, i);
        }
    }
    return KM_OK;
}

km_status km_model_set_max_length(km_model *m, size_t max_length,
                                  km_error *err)
{
    if (km_kernel_input(&m->kernel) != KM_INPUT_STRINGS ||
        max_length > km_string_max_length(m->n_features) ||
        km_info_find(&m->training, "max_length"))
        return km_error_set(err, KM_EINVAL, "max_length %zu does not apply "
                            "to this model", max_length);
    if (km_info_add1(&m->training, "max_length", KM_INFO_INTEGER,
                     (double)max_length) != KM_OK)
        return km_error_set(err, KM_ENOMEM, "out of memory for the model");
    return KM_OK;
}

size_t km_model_max_length(const km_model *m)
{
    size_t cap = km_string_max_length(m->n_features);
    const km_info_entry *e = km_info_find(&m->training, "max_length");
    if (e && e->count == 1 && e->values[0] >= 0 && e->values[0] <= (double)cap)
        return (size_t)e->values[0];
    return cap;
}

km_status km_model_set_labels(km_model *m, const char *const *labels,
                              size_t n, int numeric, km_error *err)
{
    km_status st = check_labels(labels, n, numeric, KM_EINVAL, err);
    if (st != KM_OK)
        return st;
    free_labels(m);
    m->labels = calloc(n ? n : 1, sizeof *m->labels);
    if (!m->labels)
        return km_error_set(err, KM_ENOMEM, "out of memory for labels");
    for (size_t i = 0; i < n; i++) {
        m->labels[i] = strdup(labels[i]);
        m->n_labels = i + 1;
        if (!m->labels[i]) {
            free_labels(m);
            return km_error_set(err, KM_ENOMEM, "out of memory for labels");
        }
    }
    m->labels_numeric = numeric != 0;
    return KM_OK;
}

size_t km_model_n_labels(const km_model *m) { return m->n_labels; }
int km_model_labels_numeric(const km_model *m) { return m->labels_numeric; }

const char *km_model_label(const km_model *m, size_t i)
{
    return i < m->n_labels ? m->labels[i] : NULL;
}

void km_model_free(km_model *m)
{
    if (!m)
        return;
    const km_algo *ops = km_algo_of(m->algo);
    if (ops && m->payload)
        ops->free_payload(m->payload);
    km_kernel_cleanup(&m->kernel);
    km_info_cleanup(&m->params);
    km_info_cleanup(&m->training);
    free_labels(m);
    km_pre_stats_cleanup(&m->pre);
    free(m->search_data);
    free(m->reference);
    free(m);
}

km_algorithm km_model_algorithm(const km_model *m) { return m->algo; }
const km_kernel *km_model_kernel(const km_model *m) { return &m->kernel; }
size_t km_model_n_features(const km_model *m) { return m->n_features; }
size_t km_model_n_samples(const km_model *m) { return m->n_samples; }
size_t km_model_n_outputs(const km_model *m) { return m->n_outputs; }
const char *km_model_name(const km_model *m) { return m->name; }
uint64_t km_model_version(const km_model *m) { return m->version; }
int64_t km_model_created_at_ms(const km_model *m) { return m->created_at_ms; }
const km_info *km_model_params(const km_model *m) { return &m->params; }
const km_info *km_model_training(const km_model *m) { return &m->training; }
void *km_model_payload(const km_model *m) { return m->payload; }
uint32_t km_model_file_format(const km_model *m) { return m->file_format; }
const km_pre_stats *km_model_pre(const km_model *m) { return &m->pre; }
km_pre_stats *km_model_pre_mut(km_model *m) { return &m->pre; }
km_info *km_model_params_mut(km_model *m) { return &m->params; }
km_info *km_model_training_mut(km_model *m) { return &m->training; }

km_preprocess_view km_model_preprocess(const km_model *m)
{
    const km_pre_stats *s = km_model_pre(m);
    km_preprocess_view v = {s->spec, s->x_shift, s->x_scale, s->y_mean};
    return v;
}

size_t km_model_bytes(const km_model *m)
{
    const km_algo *ops = km_algo_of(m->algo);
    size_t b = sizeof *m;
    for (size_t i = 0; i < m->params.count; i++)
        b += sizeof(km_info_entry) + m->params.entries[i].count * 8;
    for (size_t i = 0; i < m->training.count; i++)
        b += sizeof(km_info_entry) + m->training.entries[i].count * 8;
    for (size_t i = 0; i < m->n_labels; i++)
        b += sizeof(char *) + strlen(m->labels[i]) + 1;
    b += km_pre_stats_bytes(&m->pre, m->n_features, m->n_outputs);
    if (m->has_search)
        b += (m->search.n_points * (m->search.n_params + 3)) * sizeof(double);
    b += m->n_reference * m->n_features * sizeof(double);
    return b + (ops && m->payload ? ops->bytes(m->payload, m) : 0);
}

void km_model_set_identity(km_model *m, const char *name, uint64_t version,
                           int64_t created_at_ms)
{
    snprintf(m->name, sizeof m->name, "%s", name ? name : "");
    m->version = version;
    m->created_at_ms = created_at_ms;
}

km_status km_model_expect(const km_model *m, km_algorithm a, const char *op,
                          km_error *err)
{
    if (m->algo == a)
        return KM_OK;
    return km_error_set(err, KM_ECONFLICT,
                        "%s applies to %s models; this model is %s", op,
                        km_algorithm_name(a), km_algorithm_name(m->algo));
}

km_status km_model_expect_input(const km_model *m, km_algorithm a,
                                const char *op, const double *X, size_t n,
                                km_error *err)
{
    km_status st = km_model_expect(m, a, op, err);
    return st != KM_OK ? st
                       : km_model_check_input(m, X, n, m->n_features, err);
}

km_status km_model_check_input(const km_model *m, const double *X, size_t n,
                               size_t d, km_error *err)
{
    if (n == 0)
        return km_error_set(err, KM_EINVAL, "X must have at least one row");
    if (d != m->n_features)
        return km_error_set(err, KM_EINVAL,
                            "X has %zu features; the model expects %zu", d,
                            m->n_features);
    km_status st = km_check_matrix("X", X, n, d, err);
    if (st == KM_OK)
        st = km_kernel_check_rows(&m->kernel, X, n, d, 0, err);
    if (st != KM_OK || km_kernel_input(&m->kernel) != KM_INPUT_STRINGS)
        return st;
    size_t cap = km_model_max_length(m);
    for (size_t i = 0; i < n; i++) {
        size_t len = km_string_row_bytes(X + i * d, d, NULL, 0);
        if (len > cap)
            return km_error_set(err, KM_EINVAL, "X[%zu] has %zu bytes; this "
                                "model takes strings of at most %zu bytes "
                                "(its max_length, set at its fit)", i, len,
                                cap);
    }
    return KM_OK;
}

/* ------------------------------------------------------------ search record */

/* A parameter name as the API writes it: 1 to 31 of [A-Za-z0-9_.]. */
static int valid_param_name(const char *s)
{
    size_t n = strnlen(s, 32);
    if (n < 1 || n > 31)
        return 0;
    for (const char *p = s; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
              (*p >= '0' && *p <= '9') || *p == '_' || *p == '.'))
            return 0;
    return 1;
}

/* The sizes and enums of a search record (bad: KM_EINVAL from a caller,
 * KM_ECORRUPT from a file, whose messages start with prefix). */
static km_status check_search_head(const km_search_table *t, km_status bad,
                                   const char *prefix, km_error *err)
{
    if ((unsigned)t->scoring >= KM_SCORING_COUNT)
        return km_error_set(err, bad, "%ssearch scoring %d is not known",
                            prefix, (int)t->scoring);
    if ((unsigned)t->cv >= KM_CV_COUNT)
        return km_error_set(err, bad, "%ssearch cv kind %d is not known",
                            prefix, (int)t->cv);
    if (t->n_splits > KM_MODEL_MAX_SAMPLES)
        return km_error_set(err, bad, "%ssearch n_splits %zu is above %zu",
                            prefix, t->n_splits, KM_MODEL_MAX_SAMPLES);
    if (t->n_params > KM_SEARCH_MAX_PARAMS)
        return km_error_set(err, bad, "%ssearch has %zu parameters (at most "
                            "%d)", prefix, t->n_params, KM_SEARCH_MAX_PARAMS);
    for (size_t i = 0; i < t->n_params; i++)
        if (!valid_param_name(t->names[i]))
            return km_error_set(err, bad, "%ssearch parameter name %zu is "
                                "not 1 to 31 bytes of [A-Za-z0-9_.]", prefix,
                                i);
    if (t->n_points < 1 || t->n_points > KM_SEARCH_MAX_POINTS)
        return km_error_set(err, bad, "%ssearch n_points %zu is outside "
                            "1..%d", prefix, t->n_points,
                            KM_SEARCH_MAX_POINTS);
    return KM_OK;
}

/* The numbers of a search record: finite, std and seconds >= 0, best a
 * point. */
static km_status check_search_values(const km_search_table *t, km_status bad,
                                     const char *prefix, km_error *err)
{
    size_t np = t->n_points;
    if (!km_all_finite(t->values, np * t->n_params))
        return km_error_set(err, bad, "%ssearch values are not all finite",
                            prefix);
    if (!km_all_finite(t->mean, np))
        return km_error_set(err, bad, "%ssearch mean scores are not all "
                            "finite", prefix);
    for (size_t i = 0; i < np; i++) {
        if (!isfinite(t->std[i]) || t->std[i] < 0)
            return km_error_set(err, bad, "%ssearch std[%zu] is not a finite "
                                "number >= 0", prefix, i);
        if (!isfinite(t->fit_seconds[i]) || t->fit_seconds[i] < 0)
            return km_error_set(err, bad, "%ssearch fit_seconds[%zu] is not "
                                "a finite number >= 0", prefix, i);
    }
    if (t->best >= np)
        return km_error_set(err, bad, "%ssearch best %zu is not a point "
                            "(n_points %zu)", prefix, t->best, np);
    return KM_OK;
}

/* Copies t's header and arrays into m, which owns them (data: n_points x
 * (n_params + 3) doubles, allocated by the caller and taken). */
static void adopt_search(km_model *m, const km_search_table *t, double *data)
{
    size_t np = t->n_points, nv = np * t->n_params;
    free(m->search_data);
    m->search = *t;
    m->search_data = data;
    m->search.values = data;
    m->search.mean = data + nv;
    m->search.std = data + nv + np;
    m->search.fit_seconds = data + nv + 2 * np;
    m->has_search = 1;
}

km_status km_model_set_search(km_model *m, const km_search_table *t,
                              km_error *err)
{
    km_status st = check_search_head(t, KM_EINVAL, "", err);
    if (st == KM_OK && ((t->n_params && !t->values) || !t->mean || !t->std ||
                        !t->fit_seconds))
        st = km_error_set(err, KM_EINVAL, "search record without its arrays");
    if (st == KM_OK)
        st = check_search_values(t, KM_EINVAL, "", err);
    if (st != KM_OK)
        return st;
    size_t np = t->n_points, nv = np * t->n_params;
    double *data = malloc((nv + 3 * np) * sizeof *data);
    if (!data)
        return km_error_set(err, KM_ENOMEM, "out of memory for the search "
                            "record");
    if (nv)
        memcpy(data, t->values, nv * sizeof *data);
    memcpy(data + nv, t->mean, np * sizeof *data);
    memcpy(data + nv + np, t->std, np * sizeof *data);
    memcpy(data + nv + 2 * np, t->fit_seconds, np * sizeof *data);
    km_search_table copy = *t;
    for (size_t i = 0; i < KM_SEARCH_MAX_PARAMS; i++)
        if (i >= t->n_params)
            memset(copy.names[i], 0, sizeof copy.names[i]);
    adopt_search(m, &copy, data);
    return KM_OK;
}

const km_search_table *km_model_search(const km_model *m)
{
    return m->has_search ? &m->search : NULL;
}

static void write_search(km_writer *w, const km_model *m)
{
    const km_search_table *t = &m->search;
    km_write_u32(w, m->has_search ? 1u : 0u);
    if (!m->has_search)
        return;
    km_write_u32(w, (uint32_t)t->scoring);
    km_write_u32(w, (uint32_t)t->cv);
    km_write_u64(w, t->n_splits);
    km_write_u64(w, t->n_params);
    for (size_t i = 0; i < t->n_params; i++)
        km_write_str(w, t->names[i]);
    km_write_u64(w, t->n_points);
    km_write_f64s(w, t->values, t->n_points * t->n_params);
    km_write_f64s(w, t->mean, t->n_points);
    km_write_f64s(w, t->std, t->n_points);
    km_write_f64s(w, t->fit_seconds, t->n_points);
    km_write_u64(w, t->best);
}

/* Bytes the search section takes in a file: [*lo, *hi]. */
static void search_file_range(uint64_t *lo, uint64_t *hi)
{
    uint64_t p = KM_SEARCH_MAX_POINTS;
    *lo = 4;
    *hi = 4 + 4 + 4 + 8 + 8 + KM_SEARCH_MAX_PARAMS * (4 + 31) + 8 +
          km_f64s_bytes(p * KM_SEARCH_MAX_PARAMS) + 3 * km_f64s_bytes(p) + 8;
}

static km_status read_search(km_reader *r, km_model *m, km_error *err)
{
    uint32_t present = km_read_u32(r);
    if (r->failed)
        return km_error_set(err, KM_ECORRUPT, "model file: truncated search "
                            "record");
    if (present > 1)
        return km_error_set(err, KM_ECORRUPT, "model file: search record "
                            "flag %u is not 0 or 1", present);
    if (!present)
        return KM_OK;
    km_search_table t;
    memset(&t, 0, sizeof t);
    uint32_t scoring = km_read_u32(r), cv = km_read_u32(r);
    uint64_t n_splits = km_read_u64(r), n_params = km_read_u64(r);
    if (r->failed)
        return km_error_set(err, KM_ECORRUPT, "model file: truncated search "
                            "record");
    if (scoring >= KM_SCORING_COUNT)
        return km_error_set(err, KM_ECORRUPT, "model file: search scoring %u "
                            "is not known", scoring);
    if (cv >= KM_CV_COUNT)
        return km_error_set(err, KM_ECORRUPT, "model file: search cv kind %u "
                            "is not known", cv);
    if (n_splits > KM_MODEL_MAX_SAMPLES)
        return km_error_set(err, KM_ECORRUPT, "model file: search n_splits "
                            "%llu is above %zu", (unsigned long long)n_splits,
                            KM_MODEL_MAX_SAMPLES);
    if (n_params > KM_SEARCH_MAX_PARAMS)
        return km_error_set(err, KM_ECORRUPT, "model file: search has %llu "
                            "parameters (at most %d)",
                            (unsigned long long)n_params, KM_SEARCH_MAX_PARAMS);
    t.scoring = (km_scoring)scoring;
    t.cv = (km_cv_kind)cv;
    t.n_splits = (size_t)n_splits;
    t.n_params = (size_t)n_params;
    for (size_t i = 0; i < t.n_params; i++) {
        km_read_str(r, t.names[i], 31);
        if (r->failed)
            return km_error_set(err, KM_ECORRUPT, "model file: search "
                                "parameter name %zu is truncated or longer "
                                "than 31 bytes", i);
    }
    uint64_t n_points = km_read_u64(r);
    if (r->failed)
        return km_error_set(err, KM_ECORRUPT, "model file: truncated search "
                            "record");
    if (n_points > KM_SEARCH_MAX_POINTS)
        return km_error_set(err, KM_ECORRUPT, "model file: search n_points "
                            "%llu is outside 1..%d",
                            (unsigned long long)n_points, KM_SEARCH_MAX_POINTS);
    t.n_points = (size_t)n_points;
    km_status st;
    if ((st = check_search_head(&t, KM_ECORRUPT, "model file: ", err)) != KM_OK)
        return st;
    size_t np = t.n_points, nv = np * t.n_params;
    double *values = km_read_f64s(r, nv);
    double *mean = values ? km_read_f64s(r, np) : NULL;
    double *sd = mean ? km_read_f64s(r, np) : NULL;
    double *secs = sd ? km_read_f64s(r, np) : NULL;
    uint64_t best = km_read_u64(r);
    double *data = secs ? malloc((nv + 3 * np) * sizeof *data) : NULL;
    if (data) {
        memcpy(data, values, nv * sizeof *data);
        memcpy(data + nv, mean, np * sizeof *data);
        memcpy(data + nv + np, sd, np * sizeof *data);
        memcpy(data + nv + 2 * np, secs, np * sizeof *data);
    }
    free(values);
    free(mean);
    free(sd);
    free(secs);
    if (r->failed) {
        free(data);
        return km_error_set(err, KM_ECORRUPT, "model file: search record's "
                            "arrays do not match its n_points and n_params");
    }
    if (!data)
        return km_error_set(err, KM_ENOMEM, "out of memory reading a model");
    t.values = data;
    t.mean = data + nv;
    t.std = data + nv + np;
    t.fit_seconds = data + nv + 2 * np;
    if (best >= np) {
        free(data);
        return km_error_set(err, KM_ECORRUPT, "model file: search best %llu "
                            "is not a point (n_points %zu)",
                            (unsigned long long)best, np);
    }
    t.best = (size_t)best;
    if ((st = check_search_values(&t, KM_ECORRUPT, "model file: ", err)) !=
        KM_OK) {
        free(data);
        return st;
    }
    adopt_search(m, &t, data);
    return KM_OK;
}

/* ------------------------------------------------------------ reference */

size_t km_drift_reference_rows(size_t n, size_t d)
{
    size_t most = KM_DRIFT_REFERENCE_BYTES / (sizeof(double) * (d ? d : 1));
    if (most > KM_DRIFT_REFERENCE_ROWS)
        most = KM_DRIFT_REFERENCE_ROWS;
    if (most < 1)
        most = 1;
    return n < most ? n : most;
}

km_status km_model_set_reference(km_model *m, const double *X, size_t n,
                                 km_error *err)
{
    size_t d = m->n_features, rows = km_drift_reference_rows(n, d);
    if (km_kernel_input(&m->kernel) == KM_INPUT_PRECOMPUTED || rows == 0)
        return KM_OK;
    double *R = malloc(rows * d * sizeof *R);
    size_t *idx = rows < n ? malloc(rows * sizeof *idx) : NULL;
    if (!R || (rows < n && (!idx || km_psd_subsample(n, rows,
                                                     KM_DRIFT_REFERENCE_SEED,
                                                     idx) != KM_OK))) {
        free(R);
        free(idx);
        return km_error_set(err, KM_ENOMEM, "out of memory for the drift "
                            "reference");
    }
    for (size_t i = 0; i < rows; i++)
        memcpy(R + i * d, X + (idx ? idx[i] : i) * d, d * sizeof *R);
    free(idx);
    free(m->reference);
    m->reference = R;
    m->n_reference = rows;
    return KM_OK;
}

const double *km_model_reference(const km_model *m, size_t *rows)
{
    if (rows)
        *rows = m->reference ? m->n_reference : 0;
    return m->reference;
}

km_status km_model_update_reference(km_model *nm, const km_model *m,
                                    const double *X, size_t k,
                                    km_error *err)
{
    size_t d = m->n_features, held = m->n_reference;
    if (!m->reference)
        return KM_OK;
    int all = held < km_drift_reference_rows(SIZE_MAX, d);
    size_t n = all ? held + k : held;
    double *R = malloc(n * d * sizeof *R);
    if (!R)
        return km_error_set(err, KM_ENOMEM, "out of memory for the drift "
                            "reference");
    memcpy(R, m->reference, held * d * sizeof *R);
    if (all)
        memcpy(R + held * d, X, k * d * sizeof *R);
    km_status st = km_model_set_reference(nm, R, n, err);
    free(R);
    return st;
}

/* Bytes the reference section takes in a file: [*lo, *hi]. */
static void reference_file_range(uint64_t nf, uint64_t *lo, uint64_t *hi)
{
    uint64_t rows = km_drift_reference_rows(SIZE_MAX, (size_t)nf);
    *lo = 4 + 8;
    *hi = km_add_sat(4 + 8, km_f64s_bytes(km_mul_sat(rows, nf)));
    /* (rows 0: no values follow) */
}

/* Whether pf is a payload layout a file of version fv may name: 2 to fv
 * but 8 (which adds the reference section only). */
static int payload_format(uint32_t pf, uint32_t fv)
{
    return pf >= FORMAT_DEFAULT && pf <= fv && pf != FORMAT_REFERENCE;
}

/* The payload's format, then the reference; the payload's load then sees
 * the payload's format as the model's file_format. */
static km_status read_reference(km_reader *r, km_model *m, km_error *err)
{
    uint32_t pf = km_read_u32(r);
    uint64_t rows = km_read_u64(r);
    size_t d = m->n_features;
    if (r->failed)
        return km_error_set(err, KM_ECORRUPT, "model file: truncated drift "
                            "reference");
    if (!payload_format(pf, m->file_format))
        return km_error_set(err, KM_ECORRUPT, "model file: payload format %u "
                            "is not a payload layout of a version %u file "
                            "(%u to %u but %u)", pf, m->file_format,
                            FORMAT_DEFAULT, m->file_format,
                            FORMAT_REFERENCE);
    m->file_format = pf;
    if (rows == 0)
        return KM_OK; /* no reference (a precomputed model) */
    if (rows > km_drift_reference_rows(SIZE_MAX, d))
        return km_error_set(err, KM_ECORRUPT, "model file: drift reference "
                            "of %llu rows; rows of %zu doubles keep at most "
                            "%zu", (unsigned long long)rows, d,
                            km_drift_reference_rows(SIZE_MAX, d));
    if (km_kernel_input(&m->kernel) == KM_INPUT_PRECOMPUTED)
        return km_error_set(err, KM_ECORRUPT, "model file: a precomputed "
                            "model with a drift reference");
    double *R = km_read_f64s(r, (size_t)rows * d);
    if (!R)
        return km_error_set(err, r->failed ? KM_ECORRUPT : KM_ENOMEM,
                            r->failed ? "model file: drift reference's values "
                            "do not match its rows" : "out of memory reading "
                            "a model");
    m->reference = R;
    m->n_reference = (size_t)rows;
    km_error why;
    if (!km_all_finite(R, (size_t)rows * d) ||
        km_kernel_check_rows(&m->kernel, R, (size_t)rows, d, 0, &why) != KM_OK)
        return km_error_set(err, KM_ECORRUPT, "model file: drift reference "
                            "rows are not finite rows of the model's input");
    return KM_OK;
}

/* ------------------------------------------------------------ file format */

/* The file of m up to its checksum. With w->blocks, a factor of at least
 * blocks->min_bytes goes to block files (format 12); w->blocks is cleared
 * otherwise, so that the payload holds it. */
static void write_model(km_writer *w, const km_model *m)
{
    const km_algo *ops = km_algo_of(m->algo);
    uint32_t pf = ops->file_format ? ops->file_format(m->payload) : 0;
    if (!pf)
        pf = FORMAT_DEFAULT;
    uint64_t fb = 0;
    size_t nb = ops->factor_blocks ? ops->factor_blocks(m->payload, &fb) : 0;
    if (!nb || !w->blocks || fb < w->blocks->min_bytes)
        w->blocks = NULL;
    if (w->blocks || nb > 1)
        pf = KM_FORMAT_BLOCKS;
    w->format = pf;
    int section = m->reference || pf >= FORMAT_REFERENCE;
    km_write_bytes(w, MAGIC, 4);
    km_write_u32(w, !section ? pf : pf > FORMAT_REFERENCE ? pf
                                                         : FORMAT_REFERENCE);
    km_write_u32(w, (uint32_t)m->algo);
    km_write_u64(w, m->n_features);
    km_write_u64(w, m->n_samples);
    km_write_u64(w, m->n_outputs);
    km_write_str(w, m->name);
    km_write_u64(w, m->version);
    km_write_u64(w, (uint64_t)m->created_at_ms);
    km_kernel_write(w, &m->kernel);
    km_info_write(w, &m->params);
    km_info_write(w, &m->training);
    km_write_u64(w, m->n_labels);
    km_write_u32(w, (uint32_t)m->labels_numeric);
    for (size_t i = 0; i < m->n_labels; i++)
        km_write_str(w, m->labels[i]);
    km_pre_write(w, &m->pre, m->n_features, m->n_outputs);
    write_search(w, m);
    if (section) {
        km_write_u32(w, pf);
        km_write_u64(w, m->reference ? m->n_reference : 0);
        if (m->reference)
            km_write_f64s(w, m->reference, m->n_reference * m->n_features);
    }
    ops->save(m->payload, m, w);
}

/* Two passes: the first counts, so the buffer is allocated once at its
 * size (a doubling buffer would hold up to twice the file, and its copy
 * the file twice for a moment: a model's file is its largest copy). */
km_status km_model_save_buffer(const km_model *m, unsigned char **buf,
                               size_t *len, km_error *err)
{
    km_writer w;
    km_writer_init_count(&w);
    write_model(&w, m);
    int counted = !w.failed && w.len + 4 > w.len;
    size_t size = w.len + 4; /* and the checksum */
    km_writer_init(&w);
    if (!counted || km_writer_reserve(&w, size) != 0)
        w.failed = 1;
    else
        write_model(&w, m);
    km_write_u32(&w, w.failed ? 0 : km_crc32(w.buf, w.len));
    if (w.failed) {
        km_writer_cleanup(&w);
        return km_error_set(err, KM_ENOMEM, "out of memory writing a model");
    }
    *buf = w.buf;
    *len = w.len;
    return KM_OK;
}

/* ------------------------------------------------------------ loading */

/* Most classes a model of ns training rows can have: a classifier's
 * classes each have a row; other models keep no labels beyond the bound
 * of km.h. */
static uint64_t max_labels(km_algorithm algo, uint64_t ns)
{
    return km_algo_of(algo)->classes ? km_max_classes(ns)
                                     : KM_MODEL_MAX_CLASSES;
}

/* Most values of one figure: one per training row (svc "n_support" per
 * class, kpca's eigenvalues...), per output (krr's "rkhs_norm_sq": a
 * model of one row may have many), or per class pair (svc "objective"). */
static uint64_t max_figure_values(km_algorithm algo, uint64_t ns,
                                  uint64_t no)
{
    uint64_t n = ns > no ? ns : no;
    return km_algo_of(algo)->classes ? n + km_n_pairs(km_max_classes(ns))
                                     : n;
}

/* The fixed header, as read. */
typedef struct file_header {
    uint32_t format;
    km_algorithm algo;
    uint64_t nf, ns, no;
} file_header;

/*
 * Parses and checks the fixed header, and gives the range of file sizes
 * it implies: [*lo, *hi]. The payload's range comes from the algorithm's
 * descriptor (payload_range), the rest is text and figures with the
 * bounds of km.h.
 */
static km_status parse_header(const unsigned char *buf, size_t len,
                              file_header *h, uint64_t *lo, uint64_t *hi,
                              km_error *err)
{
    if (len < 8 || memcmp(buf, MAGIC, 4) != 0)
        return km_error_set(err, KM_ECORRUPT,
                            "not a kmserve model (bad magic or too short)");
    km_reader r = {buf + 4, len - 4, 0};
    uint32_t fv = km_read_u32(&r);
    if (fv < FORMAT_OLDEST || fv > FORMAT_VERSION)
        return km_error_set(err, KM_EFORMAT,
                            "model format version %u; this build reads %u "
                            "to %u", fv, FORMAT_OLDEST, FORMAT_VERSION);
    h->format = fv;
    if (len < KM_MODEL_HEADER_BYTES)
        return km_error_set(err, KM_ECORRUPT, "model file is %zu bytes, "
                            "shorter than its header", len);
    uint32_t algo = km_read_u32(&r);
    h->nf = km_read_u64(&r);
    h->ns = km_read_u64(&r);
    h->no = km_read_u64(&r);
    if (algo >= KM_ALGO_COUNT)
        return km_error_set(err, KM_ECORRUPT,
                            "model file: unknown algorithm %u", algo);
    h->algo = (km_algorithm)algo;
    uint64_t nf = h->nf, ns = h->ns, no = h->no;
    if (nf < 1 || nf > KM_MODEL_MAX_FEATURES)
        return km_error_set(err, KM_ECORRUPT, "model file: n_features %llu "
                            "is outside 1..%zu", (unsigned long long)nf,
                            KM_MODEL_MAX_FEATURES);
    if (ns < 1 || ns > KM_MODEL_MAX_SAMPLES)
        return km_error_set(err, KM_ECORRUPT, "model file: n_samples %llu "
                            "is outside 1..%zu", (unsigned long long)ns,
                            KM_MODEL_MAX_SAMPLES);
    const km_algo *al = km_algo_of(h->algo);
    uint64_t no_max = al->max_outputs(ns);
    if (no < 1 || no > no_max)
        return km_error_set(err, KM_ECORRUPT, "model file: n_outputs %llu "
                            "is outside 1..%llu for %s",
                            (unsigned long long)no,
                            (unsigned long long)no_max, km_algorithm_name(algo));

    /* Everything but the payload: header, name, identity, kernel, two
     * figure lists, labels, checksum. */
    uint64_t common_lo = KM_MODEL_HEADER_BYTES + 4 + 16 + 32 + 8 + 8 + 12 + 4;
    uint64_t figure = km_add_sat(
        4 + 31 + 8 + 8, km_mul_sat(8, max_figure_values(h->algo, ns, no)));
    uint64_t labels = km_mul_sat(4 + MAX_LABEL, max_labels(h->algo, ns));
    uint64_t common_hi = km_add_sat(km_add_sat(TEXT_SLACK, labels),
                                    km_mul_sat(2 * KM_MODEL_MAX_FIGURES,
                                               figure));
    if (fv >= 2) { /* the preprocessing and search sections */
        uint64_t pre_lo, pre_hi, s_lo, s_hi;
        km_pre_file_range(nf, no, &pre_lo, &pre_hi);
        search_file_range(&s_lo, &s_hi);
        common_lo = km_add_sat(common_lo, pre_lo + s_lo);
        common_hi = km_add_sat(common_hi, km_add_sat(pre_hi, s_hi));
    }
    if (fv >= FORMAT_REFERENCE) {
        uint64_t r_lo, r_hi;
        reference_file_range(nf, &r_lo, &r_hi);
        common_lo = km_add_sat(common_lo, r_lo);
        common_hi = km_add_sat(common_hi, r_hi);
    }
    uint64_t p_lo, p_hi;
    al->payload_range(fv, ns, nf, no, &p_lo, &p_hi);
    if (fv >= FORMAT_REFERENCE) /* any payload layout it may name */
        for (uint32_t v = FORMAT_DEFAULT; v <= fv; v++) {
            if (!payload_format(v, fv))
                continue;
            uint64_t a, b;
            al->payload_range(v, ns, nf, no, &a, &b);
            p_lo = a < p_lo ? a : p_lo;
            p_hi = b > p_hi ? b : p_hi;
        }
    *lo = km_add_sat(common_lo, p_lo);
    *hi = km_add_sat(km_add_sat(common_lo, common_hi), p_hi);
    return KM_OK;
}

/* KM_ECORRUPT unless file_size is in [lo, hi], naming the header's sizes. */
static km_status check_size(const file_header *h, uint64_t lo, uint64_t hi,
                            uint64_t file_size, km_error *err)
{
    if (file_size < lo || file_size > hi)
        return km_error_set(err, KM_ECORRUPT, "model file is %llu bytes; its "
                            "header (%s, n_samples %llu, n_features %llu, "
                            "n_outputs %llu) needs %llu to %llu",
                            (unsigned long long)file_size,
                            km_algorithm_name(h->algo), (unsigned long long)h->ns,
                            (unsigned long long)h->nf,
                            (unsigned long long)h->no, (unsigned long long)lo,
                            (unsigned long long)hi);
    return KM_OK;
}

km_status km_model_check_header(const unsigned char *head, size_t len,
                                uint64_t file_size, uint64_t *max_size,
                                km_error *err)
{
    file_header h;
    uint64_t lo, hi;
    km_status st = parse_header(head, len, &h, &lo, &hi, err);
    if (st != KM_OK)
        return st;
    if (max_size)
        *max_size = hi;
    return check_size(&h, lo, hi, file_size, err);
}

static km_status read_labels(km_reader *r, km_model *m, km_error *err)
{
    size_t n = km_read_count(r, 4); /* each label takes at least 4 bytes */
    uint32_t numeric = km_read_u32(r);
    size_t most = (size_t)max_labels(m->algo, m->n_samples);
    if (r->failed || numeric > 1 || n > most)
        return km_error_set(err, KM_ECORRUPT, "model file: bad labels");
    m->labels = calloc(n ? n : 1, sizeof *m->labels);
    if (!m->labels)
        return km_error_set(err, KM_ENOMEM, "out of memory reading labels");
    m->labels_numeric = (int)numeric;
    for (size_t i = 0; i < n; i++) {
        char buf[MAX_LABEL + 1];
        km_read_str(r, buf, MAX_LABEL);
        if (r->failed)
            return km_error_set(err, KM_ECORRUPT, "model file: bad labels");
        m->labels[i] = strdup(buf);
        if (!m->labels[i])
            return km_error_set(err, KM_ENOMEM, "out of memory reading labels");
        m->n_labels = i + 1;
    }
    km_status st = check_labels((const char *const *)m->labels, n,
                                m->labels_numeric, KM_ECORRUPT, err);
    if (st != KM_OK) {
        char why[sizeof err->message];
        snprintf(why, sizeof why, "%s", err->message);
        return km_error_set(err, st, "model file: %s", why);
    }
    return KM_OK;
}

/* Name, version and creation time: what the API shows of them must be
 * text and exact numbers. */
static km_status read_identity(km_reader *r, km_model *m, km_error *err)
{
    km_read_str(r, m->name, sizeof m->name - 1);
    m->version = km_read_u64(r);
    uint64_t t = km_read_u64(r);
    if (r->failed || !km_utf8_valid(m->name))
        return km_error_set(err, KM_ECORRUPT, "model file: bad name");
    if (m->version > KM_MODEL_MAX_VERSION)
        return km_error_set(err, KM_ECORRUPT, "model file: version %llu is "
                            "above 2^53", (unsigned long long)m->version);
    if (t > (uint64_t)KM_MODEL_MAX_TIME_MS)
        return km_error_set(err, KM_ECORRUPT, "model file: created_at %lld ms "
                            "is outside 1970..9999", (long long)(int64_t)t);
    m->created_at_ms = (int64_t)t;
    return KM_OK;
}

/* The checks of a file's header against its size, and a reader of its
 * body (after the fixed header, before the checksum). */
static km_status open_file(const unsigned char *buf, size_t len,
                           file_header *h, km_reader *r, km_error *err)
{
    uint64_t lo, hi;
    km_status st = parse_header(buf, len, h, &lo, &hi, err);
    if (st == KM_OK)
        st = check_size(h, lo, hi, len, err);
    if (st != KM_OK)
        return st;
    km_reader body = {buf + KM_MODEL_HEADER_BYTES,
                      len - KM_MODEL_HEADER_BYTES - 4, 0};
    *r = body;
    return KM_OK;
}

/* A model of header h with the records before the payload read from r:
 * identity, kernel, figures, labels, preprocessing and search. */
static km_status read_records(km_reader *r, const file_header *h,
                              km_model **out, km_error *err)
{
    km_model *m = calloc(1, sizeof *m);
    if (!m)
        return km_error_set(err, KM_ENOMEM, "out of memory reading a model");
    m->algo = h->algo;
    m->n_features = (size_t)h->nf;
    m->n_samples = (size_t)h->ns;
    m->n_outputs = (size_t)h->no;
    m->file_format = h->format;
    size_t figures = (size_t)max_figure_values(h->algo, h->ns, h->no);
    km_status st = read_identity(r, m, err);
    if (st == KM_OK)
        st = km_kernel_read(r, &m->kernel, 0, err);
    if (st == KM_OK &&
        km_kernel_check_rows(&m->kernel, NULL, 0, m->n_features, 0, err) !=
            KM_OK) {
        char why[sizeof err->message];
        snprintf(why, sizeof why, "%s", err ? err->message : "");
        st = km_error_set(err, KM_ECORRUPT, "model file: %s", why);
    }
    if (st == KM_OK)
        st = km_info_read(r, &m->params, figures, err);
    if (st == KM_OK)
        st = km_info_read(r, &m->training, figures, err);
    if (st == KM_OK)
        st = read_labels(r, m, err);
    if (st == KM_OK && h->format >= 2)
        st = km_pre_read(r, &m->pre, m->algo, m->n_features, m->n_outputs,
                         err);
    if (st == KM_OK && h->format >= 2)
        st = read_search(r, m, err);
    if (st == KM_OK && h->format >= FORMAT_REFERENCE)
        st = read_reference(r, m, err);
    if (st != KM_OK) {
        km_model_free(m);
        return st;
    }
    *out = m;
    return KM_OK;
}

/* A model file's header and records (the payload is left in *r): the
 * load and its estimate read them alike. crc: check the file's checksum
 * first (the load does; the estimate reads only what the load would). */
static km_status open_records(const unsigned char *buf, size_t len, int crc,
                              km_reader *r, km_model **m, km_error *err)
{
    file_header h;
    km_status st = open_file(buf, len, &h, r, err);
    if (st != KM_OK)
        return st;
    if (crc) {
        km_reader tail = {buf + len - 4, 4, 0};
        if (km_crc32(buf, len - 4) != km_read_u32(&tail))
            return km_error_set(err, KM_ECORRUPT,
                                "model checksum mismatch (file truncated or "
                                "altered)");
    }
    return read_records(r, &h, m, err);
}

/* The allocator's overhead a load may add beyond what km_model_bytes
 * counts: a chunk header per allocation (a few dozen: the arrays, the
 * figures), the pages of each large array rounded up, and one small chunk
 * per label (a string of a byte or two takes 32). */
#define LOAD_SLACK ((size_t)64 << 10)
#define LABEL_SLACK 32

km_status km_model_load_bytes(const unsigned char *buf, size_t len,
                              km_load_bytes *out, km_error *err)
{
    km_error local;
    if (!err)
        err = &local; /* the label check rewrites its message */
    km_reader r;
    km_model *m = NULL;
    km_status st = open_records(buf, len, 0, &r, &m, err);
    if (st != KM_OK)
        return st;
    size_t kept, peak;
    km_algo_of(m->algo)->load_bytes(r, m, &kept, &peak);
    /* the records as they are held (no payload yet), and read_search's
     * arrays, read apart, then copied into one */
    uint64_t records = km_model_bytes(m);
    uint64_t search = m->has_search ? km_mul_sat(m->search.n_points *
                                                 (m->search.n_params + 3),
                                                 sizeof(double))
                                    : 0;
    uint64_t slack = km_add_sat(LOAD_SLACK,
                                km_mul_sat(m->n_labels, LABEL_SLACK));
    out->kept = (size_t)km_add_sat(records, kept);
    out->peak = (size_t)km_add_sat(km_add_sat(records, peak),
                                   km_add_sat(search, slack));
    km_model_free(m);
    return KM_OK;
}

km_status km_model_load_buffer(const unsigned char *buf, size_t len,
                               km_model **out, km_error *err)
{
    return km_model_load_buffer_blocks(buf, len, NULL, out, err);
}

km_status km_model_load_buffer_blocks(const unsigned char *buf, size_t len,
                                      const km_blocks *blocks,
                                      km_model **out, km_error *err)
{
    km_error local;
    if (!err)
        err = &local; /* the label check rewrites its message */
    km_reader r;
    km_model *m = NULL;
    km_status st = open_records(buf, len, 1, &r, &m, err);
    if (st != KM_OK)
        return st;
    r.blocks = blocks;
    r.version = m->version;
    st = km_algo_of(m->algo)->load(&r, m, &m->payload, err);
    if (st == KM_OK && (r.failed || r.left != 0))
        st = km_error_set(err, KM_ECORRUPT,
                          "model file: payload does not match its header");
    if (st != KM_OK) {
        km_model_free(m);
        return st;
    }
    *out = m;
    return KM_OK;
}

km_status km_model_save_sink(const km_model *m, km_sink_fn sink, void *ctx,
                             km_error *err)
{
    return km_model_save_sink_blocks(m, sink, ctx, NULL, err);
}

km_status km_model_save_sink_blocks(const km_model *m, km_sink_fn sink,
                                    void *ctx, const km_blocks *blocks,
                                    km_error *err)
{
    km_writer w;
    if (km_writer_init_sink(&w, sink, ctx) != 0) {
        km_writer_cleanup(&w);
        return km_error_set(err, KM_ENOMEM, "out of memory writing a model");
    }
    w.blocks = blocks;
    write_model(&w, m);
    if (km_writer_finish_sink(&w) != 0)
        return km_error_set(err, KM_EIO, "the model's bytes could not all be "
                            "written");
    return KM_OK;
}

static int stdio_sink(void *file, const void *p, size_t n)
{
    return fwrite(p, 1, n, file) == n ? 0 : -1;
}

km_status km_model_save_file(const km_model *m, void *file, km_error *err)
{
    return km_model_save_sink(m, stdio_sink, file, err);
}

km_status km_model_load_file(void *file, size_t max_bytes, km_model **out,
                             km_error *err)
{
    FILE *f = file;
    unsigned char head[KM_MODEL_HEADER_BYTES];
    size_t len = fread(head, 1, sizeof head, f);
    if (ferror(f))
        return km_error_set(err, KM_EIO, "error reading a model file");
    if (len > max_bytes)
        return km_error_set(err, KM_EINVAL, "model file is larger than %zu "
                            "bytes", max_bytes);
    /* The header first: it bounds what is read after it (a stream such as
     * /dev/zero is refused after 36 bytes, not read to max_bytes). */
    file_header h;
    uint64_t lo, hi;
    km_status st = parse_header(head, len, &h, &lo, &hi, err);
    if (st != KM_OK)
        return st;
    /* Read up to one byte past the cap, so "exactly the cap" is allowed
     * and anything longer is caught. */
    size_t cap_bytes = hi < max_bytes ? (size_t)hi : max_bytes;
    size_t limit = cap_bytes < SIZE_MAX ? cap_bytes + 1 : cap_bytes;
    size_t cap = limit < (1u << 16) ? limit : (1u << 16);
    if (cap < len)
        cap = len;
    unsigned char *buf = malloc(cap);
    if (!buf)
        return km_error_set(err, KM_ENOMEM, "out of memory reading a model");
    memcpy(buf, head, len);
    for (;;) {
        if (len == cap) {
            if (cap >= limit)
                break;
            cap = cap > limit / 2 ? limit : cap * 2;
            unsigned char *nb = realloc(buf, cap);
            if (!nb) {
                free(buf);
                return km_error_set(err, KM_ENOMEM,
                                    "out of memory reading a model");
            }
            buf = nb;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0)
            break;
    }
    if (ferror(f))
        st = km_error_set(err, KM_EIO, "error reading a model file");
    else if (len > max_bytes)
        st = km_error_set(err, KM_EINVAL, "model file is larger than %zu bytes",
                          max_bytes);
    else if (len > hi)
        st = km_error_set(err, KM_ECORRUPT, "model file is larger than the "
                          "%llu bytes its header allows",
                          (unsigned long long)hi);
    else
        st = km_model_load_buffer(buf, len, out, err);
    free(buf);
    return st;
}
