/*
 * km_libsvm.c - LIBSVM's model file (the text svm-train writes and
 * svm-predict reads) read, for C-SVC (svm_type c_svc) and epsilon-SVR
 * (epsilon_svr) with the linear, polynomial, rbf, sigmoid and
 * precomputed kernels (written by km_libsvm_write.c).
 *
 * The file (LIBSVM 3.x, svm.cpp's svm_save_model): header lines
 * "KEY VALUES..." (svm_type, kernel_type, degree, gamma, coef0,
 * nr_class, total_sv, rho, label, probA, probB, nr_sv), a line "SV",
 * then one line per support vector: its nr_class-1 coefficients, then
 * "index:value" pairs of its non-zero features (indices from 1,
 * ascending), or for kernel_type precomputed the one pair "0:i", i the
 * support vector's training row numbered from 1 (LIBSVM's README,
 * "Precomputed Kernels": a row is "0:i 1:K(xi,x1) ... L:K(xi,xL)"; the
 * file does not hold L, which the caller gives). LIBSVM's kernels and
 * parameterisation are kmserve's (gamma, coef0, degree:
 * docs/model-format.md), and its one-vs-one
 * layout is the one km_svm.c keeps, up to the order of the classes:
 * LIBSVM numbers them in the order of the label line (first seen in
 * training), kmserve in ascending label order. Reading maps LIBSVM's
 * class i to kmserve's rank[i]; a pair whose two classes swap order
 * changes sign (coefficients, rho and probB negated: the decision value
 * of the pair (b, a) is minus that of (a, b), and P(b) = 1 - P(a) is the
 * sigmoid with A kept and B negated). Writing (km_libsvm_write.c)
 * needs no map: kmserve's order is a valid label order.
 *
 * Everything in a file is hostile. A read checks every line for
 * printable ASCII and its length, every count against the bounds below
 * and against each other (nr_class against label, rho, probA, probB and
 * nr_sv; total_sv against nr_sv's sum and the SV lines; the coefficients
 * of each SV line against nr_class - 1), every index (1 to
 * KM_MODEL_MAX_FEATURES, strictly ascending on its line), every number
 * (the whole token, finite; no hex, inf or nan) and the kernel through
 * km_kernel_check, with gamma > 0 as a model file requires. A first pass
 * allocates nothing that grows with the file beyond the header's arrays
 * (at most 256 classes), so a caller can bound the model's memory
 * (km_libsvm_bytes) before the second pass builds it. Errors are
 * KM_EINVAL naming the line and the field.
 *
 * Thread-safety: reentrant.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/km_base_internal.h"
#include "../model/km_model_internal.h"
#include "km_libsvm.h"
#include "km_libsvm_internal.h"

/* Longest header line (rho of 256 classes: 32 640 numbers of up to 25
 * characters) and SV line (about 3 million features written out). */
#define MAX_HEAD_LINE ((size_t)1 << 20)
#define MAX_SV_LINE ((size_t)64 << 20)
/* Most characters of one number or integer. */
#define MAX_NUMBER 64

enum {
    H_SVM_TYPE, H_KERNEL_TYPE, H_DEGREE, H_GAMMA, H_COEF0, H_NR_CLASS,
    H_TOTAL_SV, H_RHO, H_LABEL, H_PROBA, H_PROBB, H_NR_SV, H_COUNT
};
static const char *const head_names[H_COUNT] = {
    "svm_type", "kernel_type", "degree", "gamma", "coef0", "nr_class",
    "total_sv", "rho", "label", "probA", "probB", "nr_sv"};

/* LIBSVM's kernel_type names of the kernels kmserve shares with it. */
static const struct {
    const char *name;
    km_kernel_type type;
} kernel_names[] = {
    {"linear", KM_KERNEL_LINEAR},
    {"polynomial", KM_KERNEL_POLYNOMIAL},
    {"rbf", KM_KERNEL_RBF},
    {"sigmoid", KM_KERNEL_SIGMOID},
    {"precomputed", KM_KERNEL_PRECOMPUTED},
};
#define N_KERNELS (sizeof kernel_names / sizeof *kernel_names)

const char *km_libsvm_kernel_name(km_kernel_type t)
{
    for (size_t i = 0; i < N_KERNELS; i++)
        if (kernel_names[i].type == t)
            return kernel_names[i].name;
    return NULL;
}

void km_libsvm_kernel_list(char *buf, size_t len)
{
    const char *names[N_KERNELS];
    for (size_t i = 0; i < N_KERNELS; i++)
        names[i] = kernel_names[i].name;
    km_join_names(names, (int)N_KERNELS, " and ", buf, len);
}

/* A span of the text: one line, or the values after a header key. */
typedef struct span {
    const char *p;
    size_t n;
    size_t line; /* 1-based line number */
} span;

typedef struct parsed {
    km_algorithm algo;
    km_kernel_type ktype;
    double gamma, coef0;
    long degree;
    size_t k;          /* classes (svc); 0 for svr */
    size_t nsv;        /* total_sv */
    size_t npair;      /* rho entries: k(k-1)/2, or 1 (svr) */
    size_t ncoef;      /* coefficients per SV line: k-1, or 1 (svr) */
    double *rho, *probA, *probB; /* npair each (probA/B: svc, or NULL) */
    long *label;       /* k, LIBSVM's order */
    long *nr_sv;       /* k, LIBSVM's order */
    int has_svr_prob;
    double svr_probA;  /* epsilon_svr's probA (its Laplace scale) */
    const char *sv_at; /* the first byte after the line "SV" */
    size_t sv_line;    /* that line's number */
    size_t max_index;  /* the largest feature index of the SV lines
                          (precomputed: the largest training row number) */
    size_t width;      /* the model's input width: n_features, or
                          (precomputed) n_training */
} parsed;

static int is_precomputed(const parsed *p)
{
    return p->ktype == KM_KERNEL_PRECOMPUTED;
}

static void parsed_free(parsed *p)
{
    free(p->rho);
    free(p->probA);
    free(p->probB);
    free(p->label);
    free(p->nr_sv);
}

/* KM_EINVAL "LIBSVM model line L, FIELD: why". */
static km_status bad(km_error *err, size_t line, const char *field,
                     const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static km_status bad(km_error *err, size_t line, const char *field,
                     const char *fmt, ...)
{
    char why[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    if (line)
        return km_error_set(err, KM_EINVAL, "LIBSVM model line %zu, %s: %s",
                            line, field, why);
    return km_error_set(err, KM_EINVAL, "LIBSVM model, %s: %s", field, why);
}

static km_status libsvm_oom(km_error *err)
{
    return km_error_set(err, KM_ENOMEM, "out of memory reading a LIBSVM "
                        "model");
}

/* ------------------------------------------------------------ lexing */

/* The next line from *at (up to end) into l: its bytes without the
 * '\n' (and a '\r' before it). 0 at the end of the text. Fails on a
 * byte that is not printable ASCII or a tab, or a line over max. */
static int next_line(const char **at, const char *end, size_t *no, size_t max,
                     span *l, km_status *st, km_error *err)
{
    *st = KM_OK;
    if (*at >= end)
        return 0;
    const char *p = *at, *nl = memchr(p, '\n', (size_t)(end - p));
    const char *e = nl ? nl : end;
    *at = nl ? nl + 1 : end;
    l->line = ++*no;
    if (e > p && e[-1] == '\r')
        e--;
    l->p = p;
    l->n = (size_t)(e - p);
    if (l->n > max) {
        *st = bad(err, l->line, "line", "longer than %zu bytes", max);
        return 0;
    }
    for (size_t i = 0; i < l->n; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c != '\t' && (c < 0x20 || c > 0x7e)) {
            *st = bad(err, l->line, "line", "byte %zu is 0x%02x, not "
                      "printable ASCII text", i + 1, c);
            return 0;
        }
    }
    return 1;
}

/* The next token of s (advanced past it): a run of bytes other than
 * space and tab. 0 when none is left. */
static int next_token(span *s, span *tok)
{
    while (s->n && (*s->p == ' ' || *s->p == '\t')) {
        s->p++;
        s->n--;
    }
    if (!s->n)
        return 0;
    tok->p = s->p;
    tok->line = s->line;
    while (s->n && *s->p != ' ' && *s->p != '\t') {
        s->p++;
        s->n--;
    }
    tok->n = (size_t)(s->p - tok->p);
    return 1;
}

static int token_is(const span *t, const char *word)
{
    return t->n == strlen(word) && !memcmp(t->p, word, t->n);
}

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* A finite decimal number that is the whole token:
 * [+-]digits[.digits][(e|E)[+-]digits], digits on at least one side of
 * the point. 0, or -1 if it is not one. */
static int parse_number(const char *p, size_t n, double *out)
{
    char buf[MAX_NUMBER + 1];
    size_t i = 0, mant = 0;
    if (n == 0 || n > MAX_NUMBER)
        return -1;
    if (p[i] == '+' || p[i] == '-')
        i++;
    while (i < n && is_digit(p[i]))
        i++, mant++;
    if (i < n && p[i] == '.') {
        i++;
        while (i < n && is_digit(p[i]))
            i++, mant++;
    }
    if (!mant)
        return -1;
    if (i < n && (p[i] == 'e' || p[i] == 'E')) {
        i++;
        if (i < n && (p[i] == '+' || p[i] == '-'))
            i++;
        size_t exp = 0;
        while (i < n && is_digit(p[i]))
            i++, exp++;
        if (!exp)
            return -1;
    }
    if (i != n)
        return -1;
    memcpy(buf, p, n);
    buf[n] = '\0';
    double v = strtod(buf, NULL);
    if (!isfinite(v))
        return -1;
    *out = v;
    return 0;
}

/* A decimal integer [+-]digits that is the whole token, within
 * [lo, hi]. 0, or -1. */
static int parse_integer(const char *p, size_t n, long lo, long hi, long *out)
{
    char buf[MAX_NUMBER + 1];
    size_t i = (n && (p[0] == '+' || p[0] == '-')) ? 1 : 0;
    if (n == 0 || n > MAX_NUMBER || i == n)
        return -1;
    for (size_t j = i; j < n; j++)
        if (!is_digit(p[j]))
            return -1;
    memcpy(buf, p, n);
    buf[n] = '\0';
    errno = 0;
    long v = strtol(buf, NULL, 10);
    if (errno || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

/* ------------------------------------------------------------ header */

/* Exactly count finite numbers from the values of header field h. */
static km_status head_numbers(span v, int h, size_t count, double *out,
                              km_error *err)
{
    span t;
    size_t i = 0;
    for (; next_token(&v, &t); i++) {
        if (i == count)
            return bad(err, v.line, head_names[h], "more than %zu values "
                       "(nr_class says %zu)", count, count);
        if (parse_number(t.p, t.n, &out[i]))
            return bad(err, v.line, head_names[h], "value %zu '%.*s' is not "
                       "a finite decimal number", i + 1,
                       (int)(t.n < 40 ? t.n : 40), t.p);
    }
    if (i != count)
        return bad(err, v.line, head_names[h], "%zu values; %zu expected",
                   i, count);
    return KM_OK;
}

/* Exactly count integers in [lo, hi] from the values of field h. */
static km_status head_integers(span v, int h, size_t count, long lo, long hi,
                               long *out, km_error *err)
{
    span t;
    size_t i = 0;
    for (; next_token(&v, &t); i++) {
        if (i == count)
            return bad(err, v.line, head_names[h], "more than %zu values",
                       count);
        if (parse_integer(t.p, t.n, lo, hi, &out[i]))
            return bad(err, v.line, head_names[h], "value %zu '%.*s' is not "
                       "an integer from %ld to %ld", i + 1,
                       (int)(t.n < 40 ? t.n : 40), t.p, lo, hi);
    }
    if (i != count)
        return bad(err, v.line, head_names[h], "%zu values; %zu expected",
                   i, count);
    return KM_OK;
}

/* The one word of field h. */
static km_status head_word(span v, int h, span *word, km_error *err)
{
    span extra;
    if (!next_token(&v, word))
        return bad(err, v.line, head_names[h], "no value");
    if (next_token(&v, &extra))
        return bad(err, v.line, head_names[h], "one value expected");
    return KM_OK;
}

/* Field h must be present (want 1) or absent (want 0). */
static km_status need(const span *f, const int *seen, int h, int want,
                      const char *why, km_error *err)
{
    if (seen[h] && !want)
        return bad(err, f[h].line, head_names[h], "not expected %s", why);
    if (!seen[h] && want)
        return bad(err, 0, head_names[h], "missing (needed %s)", why);
    return KM_OK;
}

static km_status read_types(const span *f, const int *seen, parsed *p,
                            km_error *err)
{
    span w;
    km_status st = need(f, seen, H_SVM_TYPE, 1, "in every model", err);
    if (st == KM_OK)
        st = head_word(f[H_SVM_TYPE], H_SVM_TYPE, &w, err);
    if (st != KM_OK)
        return st;
    if (token_is(&w, "c_svc"))
        p->algo = KM_ALGO_SVC;
    else if (token_is(&w, "epsilon_svr"))
        p->algo = KM_ALGO_SVR;
    else
        return bad(err, w.line, "svm_type", "'%.*s' is not supported; "
                   "kmserve imports c_svc and epsilon_svr",
                   (int)(w.n < 40 ? w.n : 40), w.p);
    st = need(f, seen, H_KERNEL_TYPE, 1, "in every model", err);
    if (st == KM_OK)
        st = head_word(f[H_KERNEL_TYPE], H_KERNEL_TYPE, &w, err);
    if (st != KM_OK)
        return st;
    size_t i = 0;
    while (i < N_KERNELS && !token_is(&w, kernel_names[i].name))
        i++;
    if (i == N_KERNELS) {
        char names[128];
        km_libsvm_kernel_list(names, sizeof names);
        return bad(err, w.line, "kernel_type", "'%.*s' is not supported; "
                   "kmserve imports %s", (int)(w.n < 40 ? w.n : 40), w.p,
                   names);
    }
    p->ktype = kernel_names[i].type;
    return KM_OK;
}

/* degree, gamma and coef0: present exactly where LIBSVM writes them. */
static km_status read_kernel(const span *f, const int *seen, parsed *p,
                             km_error *err)
{
    int poly = p->ktype == KM_KERNEL_POLYNOMIAL;
    int sig = p->ktype == KM_KERNEL_SIGMOID;
    const char *kname = km_kernel_type_name(p->ktype);
    char why[64];
    snprintf(why, sizeof why, "with kernel_type %s", kname);
    km_status st = need(f, seen, H_DEGREE, poly, why, err);
    if (st == KM_OK)
        st = need(f, seen, H_GAMMA, p->ktype != KM_KERNEL_LINEAR &&
                                        !is_precomputed(p), why, err);
    if (st == KM_OK)
        st = need(f, seen, H_COEF0, poly || sig, why, err);
    if (st != KM_OK)
        return st;
    p->degree = 3;
    if (poly && (st = head_integers(f[H_DEGREE], H_DEGREE, 1, 0, 64,
                                    &p->degree, err)) != KM_OK)
        return st;
    if (seen[H_GAMMA]) {
        if ((st = head_numbers(f[H_GAMMA], H_GAMMA, 1, &p->gamma, err)) !=
            KM_OK)
            return st;
        if (!(p->gamma > 0))
            return bad(err, f[H_GAMMA].line, "gamma", "%.17g is not > 0 "
                       "(kmserve's kernels need gamma > 0)", p->gamma);
    }
    if (seen[H_COEF0])
        return head_numbers(f[H_COEF0], H_COEF0, 1, &p->coef0, err);
    return KM_OK;
}

/* nr_class, total_sv, rho, label, probA, probB, nr_sv. */
static km_status read_counts(const span *f, const int *seen, parsed *p,
                             km_error *err)
{
    int svc = p->algo == KM_ALGO_SVC;
    const char *why = svc ? "with c_svc" : "with epsilon_svr";
    long v;
    km_status st = need(f, seen, H_NR_CLASS, 1, "in every model", err);
    if (st == KM_OK)
        st = head_integers(f[H_NR_CLASS], H_NR_CLASS, 1, 2,
                           svc ? KM_LIBSVM_MAX_CLASSES : 2, &v, err);
    if (st != KM_OK)
        return st;
    p->k = svc ? (size_t)v : 0;
    p->npair = svc ? km_n_pairs(p->k) : 1;
    p->ncoef = svc ? p->k - 1 : 1;
    if ((st = need(f, seen, H_TOTAL_SV, 1, "in every model", err)) ||
        (st = head_integers(f[H_TOTAL_SV], H_TOTAL_SV, 1, 0,
                            (long)KM_MODEL_MAX_SAMPLES, &v, err)))
        return st;
    p->nsv = (size_t)v;
    if ((st = need(f, seen, H_LABEL, svc, why, err)) ||
        (st = need(f, seen, H_NR_SV, svc, why, err)) ||
        (st = need(f, seen, H_RHO, 1, "in every model", err)))
        return st;
    if (svc && seen[H_PROBA] != seen[H_PROBB])
        return bad(err, 0, seen[H_PROBA] ? "probB" : "probA", "missing (probA "
                   "and probB come together)");
    if (!svc && (st = need(f, seen, H_PROBB, 0, why, err)))
        return st;
    p->rho = malloc(p->npair * sizeof *p->rho);
    if (!p->rho)
        return libsvm_oom(err);
    if ((st = head_numbers(f[H_RHO], H_RHO, p->npair, p->rho, err)))
        return st;
    if (!svc) {
        p->has_svr_prob = seen[H_PROBA];
        if (p->has_svr_prob &&
            (st = head_numbers(f[H_PROBA], H_PROBA, 1, &p->svr_probA, err)))
            return st;
        return KM_OK;
    }
    p->label = malloc(p->k * sizeof *p->label);
    p->nr_sv = malloc(p->k * sizeof *p->nr_sv);
    if (!p->label || !p->nr_sv)
        return libsvm_oom(err);
    if ((st = head_integers(f[H_LABEL], H_LABEL, p->k, -2147483647L - 1,
                            2147483647L, p->label, err)) ||
        (st = head_integers(f[H_NR_SV], H_NR_SV, p->k, 0,
                            (long)KM_MODEL_MAX_SAMPLES, p->nr_sv, err)))
        return st;
    size_t sum = 0;
    for (size_t i = 0; i < p->k; i++) {
        for (size_t j = 0; j < i; j++)
            if (p->label[j] == p->label[i])
                return bad(err, f[H_LABEL].line, "label", "%ld appears twice "
                           "(values %zu and %zu)", p->label[i], j + 1, i + 1);
        sum += (size_t)p->nr_sv[i];
    }
    if (sum != p->nsv)
        return bad(err, f[H_NR_SV].line, "nr_sv", "adds up to %zu; total_sv "
                   "is %zu", sum, p->nsv);
    if (seen[H_PROBA]) {
        p->probA = malloc(p->npair * sizeof *p->probA);
        p->probB = malloc(p->npair * sizeof *p->probB);
        if (!p->probA || !p->probB)
            return libsvm_oom(err);
        if ((st = head_numbers(f[H_PROBA], H_PROBA, p->npair, p->probA, err)) ||
            (st = head_numbers(f[H_PROBB], H_PROBB, p->npair, p->probB, err)))
            return st;
    }
    return KM_OK;
}

/* The header, up to and with the line "SV". */
static km_status read_header(const char *text, size_t len, parsed *p,
                             km_error *err)
{
    span f[H_COUNT], l, key;
    int seen[H_COUNT] = {0};
    const char *at = text, *end = text + len;
    size_t no = 0;
    km_status st;
    for (;;) {
        if (!next_line(&at, end, &no, MAX_HEAD_LINE, &l, &st, err))
            return st != KM_OK ? st
                               : bad(err, 0, "SV", "no line 'SV' ends the "
                                     "header");
        span rest = l;
        if (!next_token(&rest, &key))
            return bad(err, l.line, "line", "empty line in the header");
        if (token_is(&key, "SV")) {
            if (next_token(&rest, &key))
                return bad(err, l.line, "SV", "nothing may follow 'SV' on "
                           "its line");
            break;
        }
        int h = 0;
        while (h < H_COUNT && !token_is(&key, head_names[h]))
            h++;
        if (h == H_COUNT)
            return bad(err, l.line, "line", "unknown field '%.*s'",
                       (int)(key.n < 40 ? key.n : 40), key.p);
        if (seen[h])
            return bad(err, l.line, head_names[h], "given twice (line %zu "
                       "first)", f[h].line);
        seen[h] = 1;
        f[h] = rest;
    }
    p->sv_at = at;
    p->sv_line = no;
    if ((st = read_types(f, seen, p, err)) ||
        (st = read_kernel(f, seen, p, err)))
        return st;
    return read_counts(f, seen, p, err);
}

/* ------------------------------------------------------------ SV lines */

/* Where the SV lines go (NULL: only checked), in the file's order. */
typedef struct sv_sink {
    size_t d;
    double *sv, *coef;   /* nsv x d, nsv x ncoef */
    int *sv_index;       /* nsv (precomputed: the training rows) */
} sv_sink;

/* A precomputed model's SV line after its coefficients (LIBSVM's
 * svm_save_model writes "0:i", i the support vector's training row
 * numbered from 1): exactly that pair. Row s of the sink becomes the
 * training row i - 1 with its index in front (km_precomputed_pack's
 * rows; the kernel reads a training row's values by that index only,
 * so the rest stays 0). */
static km_status sv_precomputed(const parsed *p, span l, size_t s,
                                const char *field, const sv_sink *o,
                                size_t *max_index, km_error *err)
{
    span t = {NULL, 0, 0};
    long row;
    size_t top = p->width ? p->width : KM_MODEL_MAX_FEATURES - 1;
    if (!next_token(&l, &t) || t.n < 2 || memcmp(t.p, "0:", 2))
        return bad(err, l.line, field, "a precomputed model's SV line ends "
                   "with 0:i, i the support vector's training row numbered "
                   "from 1; found %s%.*s%s", t.n ? "'" : "nothing",
                   (int)(t.n < 40 ? t.n : 40), t.n ? t.p : "",
                   t.n ? "'" : "");
    if (parse_integer(t.p + 2, t.n - 2, 1, (long)top, &row))
        return bad(err, l.line, field, "0:%.*s is not a training row number "
                   "from 1 to %zu%s", (int)(t.n - 2 < 40 ? t.n - 2 : 40),
                   t.p + 2, top, p->width ? " (n_training)" : "");
    if (next_token(&l, &t))
        return bad(err, l.line, field, "'%.*s' after 0:%ld; a precomputed "
                   "model's SV line holds only its coefficients and 0:i",
                   (int)(t.n < 40 ? t.n : 40), t.p, row);
    if ((size_t)row > *max_index)
        *max_index = (size_t)row;
    if (o) {
        o->sv[s * o->d] = (double)(row - 1);
        o->sv_index[s] = (int)(row - 1);
    }
    return KM_OK;
}

/* The s-th SV line: ncoef numbers, then index:value pairs. */
static km_status sv_line(const parsed *p, span l, size_t s,
                         const sv_sink *o, size_t *max_index, km_error *err)
{
    span t;
    char field[48];
    snprintf(field, sizeof field, "SV %zu", s + 1);
    for (size_t j = 0; j < p->ncoef; j++) {
        double v;
        if (!next_token(&l, &t) || memchr(t.p, ':', t.n))
            return bad(err, l.line, field, "%zu coefficient%s expected "
                       "(nr_class - 1) before the features; found %zu",
                       p->ncoef, p->ncoef == 1 ? "" : "s", j);
        if (parse_number(t.p, t.n, &v))
            return bad(err, l.line, field, "coefficient %zu '%.*s' is not a "
                       "finite decimal number", j + 1,
                       (int)(t.n < 40 ? t.n : 40), t.p);
        if (o)
            o->coef[s * p->ncoef + j] = v;
    }
    if (is_precomputed(p))
        return sv_precomputed(p, l, s, field, o, max_index, err);
    long prev = 0;
    while (next_token(&l, &t)) {
        const char *colon = memchr(t.p, ':', t.n);
        long idx;
        double v;
        if (!colon)
            return bad(err, l.line, field, "'%.*s' is not index:value",
                       (int)(t.n < 40 ? t.n : 40), t.p);
        size_t in = (size_t)(colon - t.p);
        if (parse_integer(t.p, in, 1, (long)KM_MODEL_MAX_FEATURES, &idx))
            return bad(err, l.line, field, "index '%.*s' is not an integer "
                       "from 1 to %zu", (int)(in < 40 ? in : 40), t.p,
                       KM_MODEL_MAX_FEATURES);
        if (idx <= prev)
            return bad(err, l.line, field, "index %ld after %ld; indices "
                       "must ascend", idx, prev);
        if (parse_number(colon + 1, t.n - in - 1, &v))
            return bad(err, l.line, field, "the value of index %ld is not a "
                       "finite decimal number", idx);
        prev = idx;
        if ((size_t)idx > *max_index)
            *max_index = (size_t)idx;
        if (o)
            o->sv[s * o->d + (size_t)idx - 1] = v;
    }
    return KM_OK;
}

/* Every SV line, and nothing but empty lines after them. */
static km_status sv_lines(parsed *p, const char *end, const sv_sink *o,
                          km_error *err)
{
    const char *at = p->sv_at;
    size_t no = p->sv_line, max_index = 0;
    span l, t;
    km_status st;
    for (size_t s = 0; s < p->nsv; s++) {
        if (!next_line(&at, end, &no, MAX_SV_LINE, &l, &st, err))
            return st != KM_OK ? st
                               : bad(err, 0, "SV", "%zu SV lines; total_sv "
                                     "is %zu", s, p->nsv);
        if ((st = sv_line(p, l, s, o, &max_index, err)) != KM_OK)
            return st;
    }
    while (next_line(&at, end, &no, MAX_SV_LINE, &l, &st, err)) {
        span rest = l;
        if (next_token(&rest, &t))
            return bad(err, l.line, "SV", "more SV lines than total_sv (%zu)",
                       p->nsv);
    }
    if (st != KM_OK)
        return st;
    p->max_index = max_index;
    return KM_OK;
}

/* Both passes' start: the header and a check of every SV line. */
/* The width the caller gives: n_features for a kernel on rows of
 * numbers, n_training (required) for a precomputed one, whose file does
 * not say how many training rows its kernel values are against. */
static km_status check_width(parsed *p, size_t n_features, size_t n_training,
                             km_error *err)
{
    if (!is_precomputed(p)) {
        if (n_training)
            return bad(err, 0, "n_training", "applies to kernel_type "
                       "precomputed only; this file's kernel_type is %s "
                       "(its width is n_features)",
                       km_kernel_type_name(p->ktype));
        if (n_features > KM_MODEL_MAX_FEATURES)
            return bad(err, 0, "n_features", "%zu is above %zu", n_features,
                       KM_MODEL_MAX_FEATURES);
        p->width = n_features;
        return KM_OK;
    }
    if (n_features)
        return bad(err, 0, "n_features", "does not apply to kernel_type "
                   "precomputed, whose rows are kernel values: give "
                   "n_training, the number of training rows");
    if (n_training > KM_MODEL_MAX_FEATURES - 1)
        return bad(err, 0, "n_training", "%zu is above %zu", n_training,
                   KM_MODEL_MAX_FEATURES - 1);
    p->width = n_training;
    return KM_OK;
}

static km_status scan(const char *text, size_t len, size_t n_features,
                      size_t n_training, parsed *p, km_error *err)
{
    memset(p, 0, sizeof *p);
    km_status st = read_header(text, len, p, err);
    if (st == KM_OK)
        st = check_width(p, n_features, n_training, err);
    if (st == KM_OK)
        st = sv_lines(p, text + len, NULL, err);
    if (st != KM_OK)
        return st;
    if (is_precomputed(p) && !p->width)
        return bad(err, 0, "n_training", "missing: a precomputed model's "
                   "file does not say how many training rows (kernel values "
                   "per row) it predicts from; give n_training, at least "
                   "%zu (the largest SV's row)", p->max_index);
    if (p->width && p->width < p->max_index)
        return bad(err, 0, is_precomputed(p) ? "n_training" : "n_features",
                   "%zu is below the largest %s in the file, %zu", p->width,
                   is_precomputed(p) ? "training row number 0:i"
                                     : "feature index",
                   p->max_index);
    return KM_OK;
}

static void fill_info(const parsed *p, km_libsvm_info *info)
{
    size_t d = p->width ? p->width : p->max_index;
    info->algorithm = p->algo;
    info->n_classes = p->k;
    info->n_sv = p->nsv;
    /* precomputed: the rows carry their index in front */
    info->n_features = is_precomputed(p) ? d + 1 : d ? d : 1;
    info->has_probability = p->probA != NULL;
    info->reordered = 0; /* labels not ascending: renumbered (build) */
    for (size_t i = 1; i < p->k; i++)
        info->reordered |= p->label[i] < p->label[i - 1];
}

km_status km_libsvm_scan(const char *text, size_t len, size_t n_features,
                         size_t n_training, km_libsvm_info *info,
                         km_error *err)
{
    parsed p;
    km_status st = scan(text, len, n_features, n_training, &p, err);
    if (st == KM_OK)
        fill_info(&p, info);
    parsed_free(&p);
    return st;
}

/* What the model of an import holds beside its payload: the struct, at
 * most 256 labels of 11 characters, four figures (n_support: one value
 * per class). */
#define MODEL_SLACK ((size_t)64 << 10)

/* As km_libsvm_read allocates: the header's arrays (parsed); the arrays
 * of the SV lines (alloc_arrays), which the model takes, or, when the
 * classes are renumbered, gives up for a renumbered copy it takes
 * (build); the rows' norms and the labels and figures it adds. */
void km_libsvm_bytes(const km_libsvm_info *info, km_load_bytes *out)
{
    size_t k = info->n_classes, nsv = info->n_sv, d = info->n_features;
    int prob = info->has_probability;
    uint64_t npair = k ? km_n_pairs(k) : 1;
    uint64_t header = km_add_sat(km_mul_sat(npair, 3 * sizeof(double)),
                                 km_mul_sat(k, 2 * sizeof(long)));
    uint64_t kept = km_add_sat(km_svm_dual_bytes(k, nsv, d, prob,
                                                 info->reordered),
                               MODEL_SLACK);
    uint64_t peak = km_add_sat(kept, header);
    if (info->reordered) /* the file's order and the renumbered copy */
        peak = km_add_sat(peak, km_svm_dual_bytes(k, nsv, d, prob, 0));
    out->kept = (size_t)kept;
    out->peak = (size_t)peak;
}

/* ------------------------------------------------------------ the model */

/* The kmserve kernel of the file's, checked as a fit's. */
static km_status make_kernel(const parsed *p, size_t d, km_kernel *k,
                             km_error *err)
{
    km_kernel_init(k, p->ktype);
    /* a fit resolves every gamma, the ones its kernel does not use too */
    k->gamma = p->ktype == KM_KERNEL_LINEAR || is_precomputed(p)
                   ? 1.0 / (double)d
                   : p->gamma;
    if (p->ktype == KM_KERNEL_POLYNOMIAL || p->ktype == KM_KERNEL_SIGMOID)
        k->coef0 = p->coef0;
    if (p->ktype == KM_KERNEL_POLYNOMIAL)
        k->degree = (int)p->degree;
    km_error why;
    if (km_kernel_check(k, &why) != KM_OK)
        return bad(err, 0, "kernel", "%s", why.message);
    return KM_OK;
}

/* rank[i]: the kmserve class (ascending label order) of LIBSVM class i. */
static void class_ranks(const parsed *p, size_t *rank)
{
    for (size_t i = 0; i < p->k; i++) {
        rank[i] = 0;
        for (size_t j = 0; j < p->k; j++)
            rank[i] += p->label[j] < p->label[i];
    }
}

/* Index of pair (a, b), a < b, of k classes: (0,1), (0,2), ..., (1,2). */
static size_t pair_index(size_t a, size_t b, size_t k)
{
    return a * k - a * (a + 1) / 2 + (b - a - 1);
}

/* As km_libsvm_internal.h says. */
km_status km_libsvm_renumber(const km_svm_parts *in, size_t d,
                              const size_t *rank, km_svm_arrays *out,
                              km_error *err)
{
    size_t k = in->k, nsv = in->nsv, nc = k - 1, np = km_n_pairs(k);
    size_t from[KM_LIBSVM_MAX_CLASSES], to[KM_LIBSVM_MAX_CLASSES];
    memset(out, 0, sizeof *out);
    out->n_support = malloc(k * sizeof *out->n_support);
    out->sv_index = malloc((nsv ? nsv : 1) * sizeof *out->sv_index);
    out->sv = malloc((nsv ? nsv * d : 1) * sizeof *out->sv);
    out->coef = malloc((nsv ? nsv * nc : 1) * sizeof *out->coef);
    out->rho = malloc(np * sizeof *out->rho);
    if (in->probA) {
        out->probA = malloc(np * sizeof *out->probA);
        out->probB = malloc(np * sizeof *out->probB);
    }
    if (!out->n_support || !out->sv_index || !out->sv || !out->coef ||
        !out->rho || (in->probA && (!out->probA || !out->probB)))
        return libsvm_oom(err);
    for (size_t i = 0; i < k; i++)
        out->n_support[rank[i]] = in->n_support[i];
    for (size_t c = 0, a = 0, b = 0; c < k; c++) {
        from[c] = a;
        to[c] = b;
        a += (size_t)in->n_support[c];
        b += (size_t)out->n_support[c];
    }
    for (size_t i = 0; i < k; i++)
        for (size_t t = 0; t < (size_t)in->n_support[i]; t++) {
            size_t s = from[i] + t, row = to[rank[i]] + t;
            out->sv_index[row] = in->sv_index[s];
            memcpy(out->sv + row * d, in->sv + s * d, d * sizeof *out->sv);
            for (size_t j = 0; j < nc; j++) {
                size_t other = j < i ? j : j + 1; /* column j of class i */
                size_t a = rank[i], b = rank[other];
                double v = in->coef[s * nc + j];
                out->coef[row * nc + (b < a ? b : b - 1)] =
                    (i < other) != (a < b) ? -v : v;
            }
        }
    for (size_t i = 0, q = 0; i < k; i++)
        for (size_t j = i + 1; j < k; j++, q++) {
            size_t a = rank[i], b = rank[j];
            int flipped = a > b;
            size_t at = flipped ? pair_index(b, a, k) : pair_index(a, b, k);
            out->rho[at] = flipped ? -in->rho[q] : in->rho[q];
            if (in->probA) {
                out->probA[at] = in->probA[q];
                out->probB[at] = flipped ? -in->probB[q] : in->probB[q];
            }
        }
    return KM_OK;
}

/* Labels as the model keeps numeric ones: ascending, "%ld" (the text
 * %.17g writes for a whole number of at most 10 digits). */
static km_status set_labels(km_model *m, const parsed *p, const size_t *rank,
                            km_error *err)
{
    char (*text)[24] = malloc(p->k * sizeof *text);
    const char **lab = malloc(p->k * sizeof *lab);
    km_status st = KM_OK;
    if (!text || !lab) {
        st = libsvm_oom(err);
    } else {
        for (size_t i = 0; i < p->k; i++) {
            snprintf(text[rank[i]], sizeof text[0], "%ld", p->label[i]);
            lab[rank[i]] = text[rank[i]];
        }
        st = km_model_set_labels(m, lab, p->k, 1, err);
    }
    free(text);
    free(lab);
    return st;
}

/* The figures: params what the file tells (svc: probability), training
 * imported_from (1: libsvm), n_support, and epsilon_svr's probA. */
static km_status add_figures(km_model *m, const parsed *p, const size_t *rank)
{
    km_info *pi = km_model_params_mut(m), *ti = km_model_training_mut(m);
    km_status st = KM_OK;
    if (p->k)
        st = km_info_add1(pi, "probability", KM_INFO_BOOLEAN,
                          p->probA != NULL);
    if (st == KM_OK)
        st = km_info_add1(ti, "imported_from", KM_INFO_INTEGER,
                          KM_IMPORTED_LIBSVM);
    if (st == KM_OK && p->k) {
        double ns[KM_LIBSVM_MAX_CLASSES];
        for (size_t i = 0; i < p->k; i++)
            ns[rank[i]] = (double)p->nr_sv[i];
        st = km_info_add(ti, "n_support", KM_INFO_INTEGER, 1, ns, p->k);
    } else if (st == KM_OK) {
        st = km_info_add1(ti, "n_support", KM_INFO_INTEGER, (double)p->nsv);
    }
    if (st == KM_OK && p->has_svr_prob)
        st = km_info_add1(ti, "probA", KM_INFO_NUMBER, p->svr_probA);
    return st;
}

/* Whether rank is the identity: LIBSVM's class order is kmserve's. */
static int in_order(const size_t *rank, size_t k)
{
    for (size_t i = 0; i < k; i++)
        if (rank[i] != i)
            return 0;
    return 1;
}

/* The model of the arrays a (LIBSVM's class order; the model takes them)
 * for the parsed file p: classes renumbered in ascending label order, a
 * renumbered copy replacing a's arrays unless LIBSVM's order is that
 * order, and LIBSVM's order kept as the vote order of ties. */
static km_status build(const parsed *p, const km_kernel *kern, size_t d,
                       km_svm_arrays *a, km_model **out, km_error *err)
{
    size_t rank[KM_LIBSVM_MAX_CLASSES];
    km_svm_arrays o;
    memset(&o, 0, sizeof o);
    km_status st = KM_OK;
    if (p->k) {
        class_ranks(p, rank);
        if (!in_order(rank, p->k)) {
            km_svm_parts in = {p->k, p->nsv, a->n_support, a->sv_index,
                               a->sv, a->coef, a->rho, a->probA, a->probB,
                               NULL};
            if ((st = km_libsvm_renumber(&in, d, rank, &o, err)) != KM_OK)
                goto out;
            if (!(o.vote = malloc(p->k * sizeof *o.vote))) {
                st = libsvm_oom(err);
                goto out;
            }
            for (size_t i = 0; i < p->k; i++)
                o.vote[i] = (int)rank[i];
            km_svm_arrays_free(a); /* the rows once more, not three times */
            *a = o;
            memset(&o, 0, sizeof o);
        }
    }
    /* Every class has a row, so n_samples is at least the class count;
     * a precomputed model's are the n_training rows its indices count. */
    size_t ns = p->nsv > p->k ? p->nsv : p->k;
    if (is_precomputed(p))
        ns = p->width;
    km_model *m = NULL;
    st = km_svm_model_new(p->algo, kern, d, ns ? ns : 1, p->k, p->nsv, a, &m,
                          err);
    if (st == KM_OK && p->k)
        st = set_labels(m, p, rank, err);
    if (st == KM_OK && add_figures(m, p, rank) != KM_OK)
        st = libsvm_oom(err);
    if (st == KM_OK)
        *out = m;
    else
        km_model_free(m);
out:
    km_svm_arrays_free(&o);
    return st;
}

/* A copy of n doubles (at least one allocated), or NULL. */
static double *dup_doubles(const double *v, size_t n)
{
    double *c = malloc((n ? n : 1) * sizeof *c);
    if (c && n)
        memcpy(c, v, n * sizeof *c);
    return c;
}

/* The arrays of the parsed file p as LIBSVM orders them, the SV lines
 * not yet read (rows zero); 0, or -1 out of memory (a freed by the
 * caller either way). */
static int alloc_arrays(const parsed *p, size_t d, km_svm_arrays *a)
{
    size_t nsv = p->nsv ? p->nsv : 1;
    a->sv = calloc(nsv * d, sizeof *a->sv);
    a->coef = malloc(nsv * p->ncoef * sizeof *a->coef);
    a->sv_index = malloc(nsv * sizeof *a->sv_index);
    a->rho = dup_doubles(p->rho, p->npair);
    if (p->probA) {
        a->probA = dup_doubles(p->probA, p->npair);
        a->probB = dup_doubles(p->probB, p->npair);
    }
    if (p->k && (a->n_support = malloc(p->k * sizeof *a->n_support)))
        for (size_t i = 0; i < p->k; i++)
            a->n_support[i] = (int)p->nr_sv[i];
    if (!a->sv || !a->coef || !a->sv_index || !a->rho ||
        (p->probA && (!a->probA || !a->probB)) || (p->k && !a->n_support))
        return -1;
    for (size_t s = 0; s < p->nsv; s++)
        a->sv_index[s] = (int)s; /* its place among the SV lines
                                     (precomputed: its 0:i, sv_lines) */
    return 0;
}

km_status km_libsvm_read(const char *text, size_t len, size_t n_features,
                         size_t n_training, km_model **out, km_error *err)
{
    parsed p;
    km_libsvm_info info;
    km_kernel kern;
    km_svm_arrays a;
    memset(&a, 0, sizeof a);
    km_kernel_init(&kern, KM_KERNEL_LINEAR);
    km_status st = scan(text, len, n_features, n_training, &p, err);
    if (st != KM_OK)
        goto out;
    fill_info(&p, &info);
    size_t d = info.n_features;
    if ((st = make_kernel(&p, d, &kern, err)) != KM_OK)
        goto out;
    if (p.nsv && !km_mul3(p.nsv, d, sizeof(double))) {
        st = libsvm_oom(err);
        goto out;
    }
    if (alloc_arrays(&p, d, &a) != 0) {
        st = libsvm_oom(err);
        goto out;
    }
    sv_sink sink = {d, a.sv, a.coef, a.sv_index};
    if ((st = sv_lines(&p, text + len, &sink, err)) != KM_OK)
        goto out;
    st = build(&p, &kern, d, &a, out, err);
out:
    km_kernel_cleanup(&kern);
    parsed_free(&p);
    km_svm_arrays_free(&a);
    return st;
}
