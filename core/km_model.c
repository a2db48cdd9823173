/*
 * km_model.c - the fitted model object, its figures, and its file format.
 *
 * A model holds what every algorithm shares (kernel, sizes, identity,
 * parameter and training figures) and an algorithm-specific payload, which
 * it reaches through the algorithm's km_algo_ops. Models are built by a fit
 * or a load and not changed after they are shared.
 *
 * File format (version 1), all integers and doubles little-endian:
 *   "KMSM"  u32 format version
 *   u32 algorithm  u64 n_features  u64 n_samples  u64 n_outputs
 *   str name  u64 version  u64 created_at_ms
 *   kernel (recursive)  info params  info training
 *   u64 n_labels  u32 numeric  str label...
 *   payload (the algorithm's own)
 *   u32 CRC-32 of every byte before it
 * The checksum is verified before anything is parsed, and parsing then
 * still checks every length against the bytes left.
 *
 * Thread-safety: reentrant; a shared model is only read.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "km_internal.h"

#define MAGIC "KMSM"
#define FORMAT_VERSION 1u
/* Sanity bounds a parsed header must meet (far beyond what a fit allows). */
#define MAX_FEATURES (1u << 24)
#define MAX_SAMPLES ((uint64_t)1 << 32)

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
    void *payload;
};

/* A label is at most this long (the API checks the same bound). */
#define MAX_LABEL 256

static const char *const algo_names[KM_ALGO_COUNT] = {"krr", "svc", "svr",
                                                      "kpca"};

const char *km_algorithm_name(km_algorithm a)
{
    return (unsigned)a < KM_ALGO_COUNT ? algo_names[a] : NULL;
}

int km_algorithm_parse(const char *name, km_algorithm *a)
{
    for (int i = 0; i < KM_ALGO_COUNT; i++)
        if (strcmp(name, algo_names[i]) == 0) {
            *a = (km_algorithm)i;
            return 0;
        }
    return -1;
}

static const km_algo_ops *ops_of(km_algorithm a)
{
    switch (a) {
    case KM_ALGO_KRR: return &km_krr_ops;
    case KM_ALGO_SVC: return &km_svc_ops;
    case KM_ALGO_SVR: return &km_svr_ops;
    case KM_ALGO_KPCA: return &km_kpca_ops;
    default: return NULL;
    }
}

/* ------------------------------------------------------------ info lists */

void km_info_cleanup(km_info *info)
{
    for (size_t i = 0; i < info->count; i++)
        free(info->entries[i].values);
    free(info->entries);
    info->entries = NULL;
    info->count = 0;
}

km_status km_info_add(km_info *info, const char *key, km_info_kind kind,
                      int is_array, const double *values, size_t count)
{
    km_info_entry *e = realloc(info->entries,
                               (info->count + 1) * sizeof *info->entries);
    if (!e)
        return KM_ENOMEM;
    info->entries = e;
    e = &info->entries[info->count];
    memset(e, 0, sizeof *e);
    snprintf(e->key, sizeof e->key, "%s", key);
    e->kind = kind;
    e->is_array = is_array;
    e->count = count;
    e->values = malloc((count ? count : 1) * sizeof *e->values);
    if (!e->values)
        return KM_ENOMEM;
    if (count)
        memcpy(e->values, values, count * sizeof *values);
    info->count++;
    return KM_OK;
}

km_status km_info_add1(km_info *info, const char *key, km_info_kind kind,
                       double value)
{
    return km_info_add(info, key, kind, 0, &value, 1);
}

const km_info_entry *km_info_find(const km_info *info, const char *key)
{
    for (size_t i = 0; i < info->count; i++)
        if (strcmp(info->entries[i].key, key) == 0)
            return &info->entries[i];
    return NULL;
}

void km_info_write(km_writer *w, const km_info *info)
{
    km_write_u64(w, info->count);
    for (size_t i = 0; i < info->count; i++) {
        const km_info_entry *e = &info->entries[i];
        km_write_str(w, e->key);
        km_write_u32(w, (uint32_t)e->kind);
        km_write_u32(w, (uint32_t)e->is_array);
        km_write_f64s(w, e->values, e->count);
    }
}

km_status km_info_read(km_reader *r, km_info *info, km_error *err)
{
    /* Each entry takes at least 24 bytes, which bounds the count. */
    size_t n = km_read_count(r, 24);
    for (size_t i = 0; i < n && !r->failed; i++) {
        char key[32];
        km_read_str(r, key, sizeof key - 1);
        uint32_t kind = km_read_u32(r);
        uint32_t is_array = km_read_u32(r);
        size_t count = km_read_count(r, 8);
        if (r->failed || kind > KM_INFO_BOOLEAN || is_array > 1)
            break;
        double *v = malloc((count ? count : 1) * sizeof *v);
        if (!v)
            return km_error_set(err, KM_ENOMEM, "out of memory reading model");
        for (size_t j = 0; j < count; j++)
            v[j] = km_read_f64(r);
        km_status st = km_info_add(info, key, (km_info_kind)kind,
                                   (int)is_array, v, count);
        free(v);
        if (st != KM_OK)
            return km_error_set(err, st, "out of memory reading model");
    }
    if (r->failed)
        return km_error_set(err, KM_ECORRUPT, "model file: bad figures");
    return KM_OK;
}

/* ------------------------------------------------------------ the object */

km_status km_model_create(km_algorithm algo, const km_kernel *kernel,
                          size_t n_features, size_t n_samples,
                          size_t n_outputs, void *payload, km_model **out,
                          km_error *err)
{
    const km_algo_ops *ops = ops_of(algo);
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

km_status km_model_set_labels(km_model *m, const char *const *labels,
                              size_t n, int numeric, km_error *err)
{
    free_labels(m);
    m->labels = calloc(n ? n : 1, sizeof *m->labels);
    if (!m->labels)
        return km_error_set(err, KM_ENOMEM, "out of memory for labels");
    for (size_t i = 0; i < n; i++) {
        if (strlen(labels[i]) > MAX_LABEL) {
            m->n_labels = i;
            free_labels(m);
            return km_error_set(err, KM_EINVAL,
                                "class label %zu is longer than %d bytes", i,
                                MAX_LABEL);
        }
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
    const km_algo_ops *ops = ops_of(m->algo);
    if (ops && m->payload)
        ops->free_payload(m->payload);
    km_kernel_cleanup(&m->kernel);
    km_info_cleanup(&m->params);
    km_info_cleanup(&m->training);
    free_labels(m);
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
km_info *km_model_params_mut(km_model *m) { return &m->params; }
km_info *km_model_training_mut(km_model *m) { return &m->training; }

size_t km_model_bytes(const km_model *m)
{
    const km_algo_ops *ops = ops_of(m->algo);
    size_t b = sizeof *m;
    for (size_t i = 0; i < m->params.count; i++)
        b += sizeof(km_info_entry) + m->params.entries[i].count * 8;
    for (size_t i = 0; i < m->training.count; i++)
        b += sizeof(km_info_entry) + m->training.entries[i].count * 8;
    for (size_t i = 0; i < m->n_labels; i++)
        b += sizeof(char *) + strlen(m->labels[i]) + 1;
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
                        algo_names[a], algo_names[m->algo]);
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
    return km_check_matrix("X", X, n, d, err);
}

/* ------------------------------------------------------------ file format */

km_status km_model_save_buffer(const km_model *m, unsigned char **buf,
                               size_t *len, km_error *err)
{
    const km_algo_ops *ops = ops_of(m->algo);
    km_writer w;
    km_writer_init(&w);
    km_write_bytes(&w, MAGIC, 4);
    km_write_u32(&w, FORMAT_VERSION);
    km_write_u32(&w, (uint32_t)m->algo);
    km_write_u64(&w, m->n_features);
    km_write_u64(&w, m->n_samples);
    km_write_u64(&w, m->n_outputs);
    km_write_str(&w, m->name);
    km_write_u64(&w, m->version);
    km_write_u64(&w, (uint64_t)m->created_at_ms);
    km_kernel_write(&w, &m->kernel);
    km_info_write(&w, &m->params);
    km_info_write(&w, &m->training);
    km_write_u64(&w, m->n_labels);
    km_write_u32(&w, (uint32_t)m->labels_numeric);
    for (size_t i = 0; i < m->n_labels; i++)
        km_write_str(&w, m->labels[i]);
    ops->save(m->payload, m, &w);
    km_write_u32(&w, w.failed ? 0 : km_crc32(w.buf, w.len));
    if (w.failed) {
        km_writer_cleanup(&w);
        return km_error_set(err, KM_ENOMEM, "out of memory writing a model");
    }
    *buf = w.buf;
    *len = w.len;
    return KM_OK;
}

static km_status read_labels(km_reader *r, km_model *m, km_error *err)
{
    size_t n = km_read_count(r, 4); /* each label takes at least 4 bytes */
    uint32_t numeric = km_read_u32(r);
    if (r->failed || numeric > 1)
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
    return KM_OK;
}

km_status km_model_load_buffer(const unsigned char *buf, size_t len,
                               km_model **out, km_error *err)
{
    if (len < 12 || memcmp(buf, MAGIC, 4) != 0)
        return km_error_set(err, KM_ECORRUPT,
                            "not a kmserve model (bad magic or too short)");
    km_reader r = {buf + 4, len - 4, 0};
    uint32_t fv = km_read_u32(&r);
    if (fv != FORMAT_VERSION)
        return km_error_set(err, KM_EFORMAT,
                            "model format version %u; this build reads %u",
                            fv, FORMAT_VERSION);
    km_reader tail = {buf + len - 4, 4, 0};
    uint32_t want = km_read_u32(&tail);
    if (km_crc32(buf, len - 4) != want)
        return km_error_set(err, KM_ECORRUPT,
                            "model checksum mismatch (file truncated or "
                            "altered)");
    r.left -= 4; /* the checksum is not part of the body */

    uint32_t algo = km_read_u32(&r);
    uint64_t nf = km_read_u64(&r), ns = km_read_u64(&r);
    uint64_t no = km_read_u64(&r);
    if (r.failed || algo >= KM_ALGO_COUNT || nf == 0 || nf > MAX_FEATURES ||
        ns == 0 || ns > MAX_SAMPLES || no > MAX_SAMPLES)
        return km_error_set(err, KM_ECORRUPT, "model file: bad header");

    km_model *m = calloc(1, sizeof *m);
    if (!m)
        return km_error_set(err, KM_ENOMEM, "out of memory reading a model");
    m->algo = (km_algorithm)algo;
    m->n_features = (size_t)nf;
    m->n_samples = (size_t)ns;
    m->n_outputs = (size_t)no;
    km_read_str(&r, m->name, sizeof m->name - 1);
    m->version = km_read_u64(&r);
    m->created_at_ms = (int64_t)km_read_u64(&r);
    km_status st = km_kernel_read(&r, &m->kernel, 0, err);
    if (st == KM_OK)
        st = km_info_read(&r, &m->params, err);
    if (st == KM_OK)
        st = km_info_read(&r, &m->training, err);
    if (st == KM_OK)
        st = read_labels(&r, m, err);
    if (st == KM_OK)
        st = ops_of(m->algo)->load(&r, m, &m->payload, err);
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

km_status km_model_save_file(const km_model *m, void *file, km_error *err)
{
    unsigned char *buf;
    size_t len;
    km_status st = km_model_save_buffer(m, &buf, &len, err);
    if (st != KM_OK)
        return st;
    if (fwrite(buf, 1, len, (FILE *)file) != len)
        st = km_error_set(err, KM_EIO, "short write of a model");
    free(buf);
    return st;
}

km_status km_model_load_file(void *file, size_t max_bytes, km_model **out,
                             km_error *err)
{
    FILE *f = file;
    /* Read up to one byte past the cap, so "exactly max_bytes" is allowed
     * and anything longer is caught. */
    size_t limit = max_bytes < SIZE_MAX ? max_bytes + 1 : max_bytes;
    size_t cap = limit < (1u << 16) ? limit : (1u << 16), len = 0;
    unsigned char *buf = malloc(cap ? cap : 1);
    if (!buf)
        return km_error_set(err, KM_ENOMEM, "out of memory reading a model");
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
    km_status st;
    if (ferror(f))
        st = km_error_set(err, KM_EIO, "error reading a model file");
    else if (len > max_bytes)
        st = km_error_set(err, KM_EINVAL, "model file is larger than %zu bytes",
                          max_bytes);
    else
        st = km_model_load_buffer(buf, len, out, err);
    free(buf);
    return st;
}
