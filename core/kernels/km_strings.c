/*
 * km_strings.c - strings as rows, and the string kernels.
 *
 * A string travels through libkm as one row of doubles, so that every
 * algorithm, solver, search fold, model file and distributed tile that
 * moves rows moves strings unchanged (km_kernel.h, "inputs"): row[0] is
 * its length L in bytes, and row[1 + s] holds bytes 6s .. 6s + 5 as a
 * whole number below 2^48 (byte 6s + b times 256^b). Slots past the
 * string are 0. A row of d doubles holds at most 6 (d - 1) bytes.
 *
 * The kernels (their formulas, as kernlab's stringdot computes them):
 *   spectrum k     sum over the substrings u of length k of
 *                  num_u(x') num_u(z'), where x' is x with an end mark
 *                  "\n" appended (kernlab reads strings so)
 *   boundrange k   the same summed over lengths 1 .. k
 *   expdecay l     sum over all common substrings u (any length) of
 *                  num_u(x') num_u(z') l^-|u|
 *   subsequence    Lodhi et al.'s gap-weighted subsequence kernel of
 *     k, l         length k and decay l: sum over the index tuples i, j
 *                  of length k with x[i] = z[j] of l^(span i + span j),
 *                  by the paper's recursion in O(k |x| |z|) (no end mark)
 *
 * Spectrum kernels work from each string's sorted list of k-mers with
 * their counts, made once per string (O(|x| log |x|)), and from a set's
 * features: its distinct k-mers, each with its postings (the strings it
 * occurs in, with counts). A row of K(x, Z) is then, for each k-mer of
 * x, its count times each posting's: O(|x| + |z|) per pair at most, and
 * nothing for the pairs that share no k-mer. A set of strings and its
 * lists is made once per Gram and kept in a cache (at most
 * KM_STRING_CACHE_BYTES, or the server's share), so a model's training
 * strings are not listed again at every predict: a cached set answers
 * only for rows equal, byte for byte, to those it was made from (checked
 * at every use), so a stale entry can never answer. Rows are computed on
 * the threads BLAS is given (openblas).
 *
 * Thread-safety: reentrant; the cache is guarded by a mutex and its
 * entries are reference counted.
 */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../base/km_base_internal.h"
#include "km_kernel_internal.h"

int openblas_get_num_threads(void);

#define SLOT 6
#define SLOT_LIMIT 281474976710656.0 /* 2^48 */

/* ------------------------------------------------------------ rows */

size_t km_string_width(size_t max_len)
{
    return 1 + (max_len + SLOT - 1) / SLOT;
}

size_t km_string_default_max(size_t longest)
{
    size_t m = longest > KM_STRING_MAX_BYTES / 2 ? KM_STRING_MAX_BYTES
                                                 : 2 * longest;
    return m < 64 ? 64 : m;
}

size_t km_string_max_length(size_t d)
{
    return d ? (d - 1) * SLOT : 0;
}

/* The length of a string row, clamped to what d doubles hold (a row from
 * a file is checked by km_string_row_check; this is memory-safe on any). */
static size_t row_len(const double *row, size_t d)
{
    size_t cap = km_string_max_length(d);
    double v = row[0];
    if (!(v >= 0))
        return 0;
    return v >= (double)cap ? cap : (size_t)v;
}

static void unpack(const double *row, size_t len, unsigned char *out)
{
    for (size_t s = 0; s * SLOT < len; s++) {
        double v = row[1 + s];
        uint64_t u = v >= 0 && v < SLOT_LIMIT ? (uint64_t)v : 0;
        for (size_t b = 0; b < SLOT && s * SLOT + b < len; b++)
            out[s * SLOT + b] = (unsigned char)(u >> (8 * b));
    }
}

km_status km_strings_pack(const char *const *s, const size_t *len, size_t n,
                          size_t d, double *X, km_error *err)
{
    size_t cap = km_string_max_length(d);
    for (size_t i = 0; i < n; i++) {
        double *row = X + i * d;
        if (len[i] > cap)
            return km_error_set(err, KM_EINVAL, "X[%zu] has %zu bytes; "
                                "this model takes strings of at most %zu "
                                "bytes (its max_length)", i, len[i], cap);
        memset(row, 0, d * sizeof *row);
        row[0] = (double)len[i];
        const unsigned char *p = (const unsigned char *)s[i];
        for (size_t j = 0; j < len[i]; j++)
            row[1 + j / SLOT] += (double)((uint64_t)p[j] << (8 * (j % SLOT)));
    }
    return KM_OK;
}

int km_string_row_check(const double *row, size_t d)
{
    double v = row[0];
    if (!(v >= 0) || v > (double)km_string_max_length(d) || v != floor(v))
        return -1;
    size_t len = (size_t)v;
    for (size_t s = 0; s + 1 < d; s++) {
        double x = row[1 + s];
        if (!(x >= 0) || x >= SLOT_LIMIT || x != floor(x))
            return -1;
        size_t used = len > s * SLOT ? len - s * SLOT : 0;
        if (used < SLOT && (uint64_t)x >> (8 * used))
            return -1; /* bytes past the string */
    }
    return 0;
}

size_t km_string_row_bytes(const double *row, size_t d, unsigned char *out,
                           size_t cap)
{
    size_t len = row_len(row, d);
    if (out && len <= cap)
        unpack(row, len, out);
    return len;
}

/* ------------------------------------------------------------ sets */

/* A k-mer of a string: key orders it (its bytes big-endian when they fit
 * in 8, else a hash, ties broken by the bytes), pos is where it starts,
 * count how often it occurs. */
typedef struct {
    uint64_t key;
    uint32_t pos, count;
} kmer;

/* Rows made into strings, with what their kernel needs of each: the
 * bytes (with the end mark where the kernel reads one), and for the
 * spectrum kernels each string's k-mer list per level (level l lists
 * the k-mers of length lo + l). */
typedef struct strset {
    size_t n;
    size_t *off;          /* n + 1 offsets into bytes */
    unsigned char *bytes;
    int levels, lo;
    size_t *loff;         /* n * levels + 1 offsets into km */
    kmer *km;
    size_t maxlen;        /* the longest string, with its mark */
    size_t bytes_held;
    /* the spectrum kernels' features: the distinct k-mers of all the
     * set's strings (p of them, sorted by level, key and bytes; feat[f]
     * says where one occurs), each string's features (sid[soff[i] ..
     * soff[i+1]) with their counts scnt, by feature) and each feature's
     * postings (pstr[poff[f] .. poff[f+1]), the strings it occurs in, by
     * string, with their counts pcnt) */
    size_t p;
    kmer *feat;           /* key, pos, and count = the string */
    size_t *lvoff;        /* levels + 1 offsets into feat */
    size_t *soff, *poff;
    uint32_t *sid, *pstr;
    uint32_t *scnt, *pcnt;
    double *self;         /* k(x, x) of each string, as a pair computes it */
} strset;

static void set_free(strset *s)
{
    if (!s)
        return;
    free(s->off);
    free(s->bytes);
    free(s->loff);
    free(s->km);
    free(s->feat);
    free(s->lvoff);
    free(s->soff);
    free(s->poff);
    free(s->sid);
    free(s->pstr);
    free(s->scnt);
    free(s->pcnt);
    free(s->self);
    free(s);
}

static int end_marked(km_kernel_type t)
{
    return t == KM_KERNEL_SPECTRUM || t == KM_KERNEL_BOUNDRANGE ||
           t == KM_KERNEL_EXPDECAY;
}

static uint64_t kmer_key(const unsigned char *p, size_t l)
{
    uint64_t h = 0;
    if (l <= 8) {
        for (size_t i = 0; i < l; i++)
            h = h << 8 | p[i];
        return h << (8 * (8 - l)); /* lexicographic: shorter pads low */
    }
    h = 1469598103934665603ull;
    for (size_t i = 0; i < l; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ull;
    return h ^ (h >> 32);
}

typedef struct {
    const unsigned char *s;
    size_t l;
} kmer_ctx;

static int kmer_cmp(const void *a, const void *b, void *arg)
{
    const kmer *x = a, *y = b;
    const kmer_ctx *c = arg;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    if (c->l <= 8)
        return 0;
    return memcmp(c->s + x->pos, c->s + y->pos, c->l);
}

/* The sorted, counted k-mers of length l of s (m bytes) into out; their
 * number. */
static size_t list_kmers(const unsigned char *s, size_t m, size_t l,
                         kmer *out)
{
    if (l == 0 || m < l)
        return 0;
    size_t n = m - l + 1;
    for (size_t p = 0; p < n; p++)
        out[p] = (kmer){kmer_key(s + p, l), (uint32_t)p, 1};
    kmer_ctx c = {s, l};
    qsort_r(out, n, sizeof *out, kmer_cmp, &c);
    size_t w = 0;
    for (size_t p = 0; p < n; p++) {
        if (w && kmer_cmp(&out[w - 1], &out[p], &c) == 0)
            out[w - 1].count++;
        else
            out[w++] = out[p];
    }
    return w;
}

/* One k-mer occurrence list entry of the whole set: its list entry (key,
 * pos, count) and its string. */
typedef struct {
    kmer m;
    uint32_t str;
} occ;

typedef struct {
    const strset *s;
    size_t len;
} occ_ctx;

static int occ_cmp(const void *a, const void *b, void *arg)
{
    const occ *x = a, *y = b;
    const occ_ctx *c = arg;
    if (x->m.key != y->m.key)
        return x->m.key < y->m.key ? -1 : 1;
    if (c->len > 8) {
        int r = memcmp(c->s->bytes + c->s->off[x->str] + x->m.pos,
                       c->s->bytes + c->s->off[y->str] + y->m.pos, c->len);
        if (r)
            return r;
    }
    return x->str < y->str ? -1 : x->str > y->str;
}

/* The set's features and postings from its strings' k-mer lists. */
static int set_features(strset *s)
{
    size_t total = s->loff[s->n * (size_t)s->levels];
    occ *o = malloc((total ? total : 1) * sizeof *o);
    s->feat = malloc((total ? total : 1) * sizeof *s->feat);
    s->lvoff = malloc(((size_t)s->levels + 1) * sizeof *s->lvoff);
    s->soff = calloc(s->n + 1, sizeof *s->soff);
    s->poff = malloc((total + 1) * sizeof *s->poff);
    s->sid = malloc((total ? total : 1) * sizeof *s->sid);
    s->pstr = malloc((total ? total : 1) * sizeof *s->pstr);
    s->scnt = malloc((total ? total : 1) * sizeof *s->scnt);
    s->pcnt = malloc((total ? total : 1) * sizeof *s->pcnt);
    if (!o || !s->feat || !s->lvoff || !s->soff || !s->poff ||
        !s->sid || !s->pstr || !s->scnt || !s->pcnt) {
        free(o);
        return -1;
    }
    size_t p = 0, at = 0;
    for (int l = 0; l < s->levels; l++) {
        size_t m = 0;
        for (size_t i = 0; i < s->n; i++) {
            size_t li = i * (size_t)s->levels + (size_t)l;
            for (size_t e = s->loff[li]; e < s->loff[li + 1]; e++)
                o[m++] = (occ){s->km[e], (uint32_t)i};
        }
        occ_ctx c = {s, (size_t)(s->lo + l)};
        qsort_r(o, m, sizeof *o, occ_cmp, &c);
        s->lvoff[l] = p;
        for (size_t e = 0; e < m; e++) {
            int fresh = e == 0 || o[e - 1].m.key != o[e].m.key ||
                        (c.len > 8 &&
                         memcmp(s->bytes + s->off[o[e - 1].str] +
                                    o[e - 1].m.pos,
                                s->bytes + s->off[o[e].str] + o[e].m.pos,
                                c.len));
            if (fresh) {
                s->feat[p] = (kmer){o[e].m.key, o[e].m.pos, o[e].str};
                s->poff[p++] = at;
            }
            s->pstr[at] = o[e].str;
            s->pcnt[at++] = o[e].m.count;
            s->soff[o[e].str + 1]++;
        }
    }
    s->lvoff[s->levels] = p;
    s->poff[p] = at;
    s->p = p;
    for (size_t i = 0; i < s->n; i++)
        s->soff[i + 1] += s->soff[i];
    /* each string's features, in feature order: the postings read by
     * feature, each entry appended to its string's list */
    size_t *fill = malloc((s->n ? s->n : 1) * sizeof *fill);
    if (!fill) {
        free(o);
        return -1;
    }
    memcpy(fill, s->soff, s->n * sizeof *fill);
    for (size_t f = 0; f < p; f++)
        for (size_t e = s->poff[f]; e < s->poff[f + 1]; e++) {
            size_t w = fill[s->pstr[e]]++;
            s->sid[w] = (uint32_t)f;
            s->scnt[w] = s->pcnt[e];
        }
    free(fill);
    free(o);
    s->bytes_held += total * (sizeof(kmer) + 4 * sizeof(uint32_t) +
                              sizeof(size_t)) +
                     (s->n + 1) * sizeof(size_t);
    return 0;
}

/* The feature of z's set equal to x's k-mer e of level l (x's set
 * xs, string i); -1 if z's strings have none. */
static long find_feature(const strset *z, const strset *xs, size_t i, int l,
                         const kmer *e)
{
    size_t lo = z->lvoff[l], hi = z->lvoff[l + 1];
    size_t len = (size_t)(z->lo + l);
    const unsigned char *xb = xs->bytes + xs->off[i] + e->pos;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const kmer *f = &z->feat[mid];
        int c = f->key < e->key ? -1 : f->key > e->key;
        if (c == 0 && len > 8)
            c = memcmp(z->bytes + z->off[f->count] + f->pos, xb, len);
        if (c == 0)
            return (long)mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

/* The set of X's n rows (d doubles) for leaf k; NULL on OOM. */
static strset *set_make(const km_kernel *k, const double *X, size_t n,
                        size_t d)
{
    strset *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    int mark = end_marked(k->type);
    s->n = n;
    s->off = malloc((n + 1) * sizeof *s->off);
    size_t total = 0;
    for (size_t i = 0; s->off && i < n; i++) {
        s->off[i] = total;
        total += row_len(X + i * d, d) + (size_t)mark;
    }
    if (!s->off || !(s->bytes = malloc(total ? total : 1))) {
        set_free(s);
        return NULL;
    }
    s->off[n] = total;
    for (size_t i = 0; i < n; i++) {
        size_t len = s->off[i + 1] - s->off[i];
        unpack(X + i * d, len - (size_t)mark, s->bytes + s->off[i]);
        if (mark)
            s->bytes[s->off[i] + len - 1] = '\n';
        if (len > s->maxlen)
            s->maxlen = len;
    }
    s->bytes_held = (n + 1) * sizeof *s->off + total;
    if (k->type == KM_KERNEL_SPECTRUM || k->type == KM_KERNEL_BOUNDRANGE) {
        s->levels = k->type == KM_KERNEL_SPECTRUM ? 1 : k->length;
        s->lo = k->type == KM_KERNEL_SPECTRUM ? k->length : 1;
        size_t lists = n * (size_t)s->levels;
        size_t most = total * (size_t)s->levels;
        s->loff = malloc((lists + 1) * sizeof *s->loff);
        s->km = malloc((most ? most : 1) * sizeof *s->km);
        if (!s->loff || !s->km) {
            set_free(s);
            return NULL;
        }
        size_t at = 0;
        for (size_t i = 0; i < n; i++)
            for (int l = 0; l < s->levels; l++) {
                s->loff[i * (size_t)s->levels + (size_t)l] = at;
                at += list_kmers(s->bytes + s->off[i],
                                 s->off[i + 1] - s->off[i],
                                 (size_t)(s->lo + l), s->km + at);
            }
        s->loff[lists] = at;
        s->bytes_held += (lists + 1) * sizeof *s->loff +
                         most * sizeof *s->km;
        if (set_features(s)) {
            set_free(s);
            return NULL;
        }
    }
    return s;
}

/* ------------------------------------------------------------ pairs */

/* Per thread: the subsequence kernel's rows (k levels of |z| + 1). */
typedef struct {
    double *rows;
    size_t cap;
} scratch;

/* expdecay: each maximal run of R equal bytes on a diagonal adds
 * g[R] = sum_{r=1..R} sum_{l=1..r} lambda^-l (g of the pair's tables). */
static double expdecay_pair(const unsigned char *x, size_t a,
                            const unsigned char *z, size_t b, const double *g)
{
    double sum = 0;
    for (size_t o = 0; o < a + b; o++) {
        size_t i = o < b ? 0 : o - b + 1, j = o < b ? b - 1 - o : 0;
        size_t run = 0;
        for (; i < a && j < b; i++, j++) {
            if (x[i] == z[j]) {
                run++;
            } else if (run) {
                sum += g[run];
                run = 0;
            }
        }
        if (run)
            sum += g[run];
    }
    return sum;
}

/* expdecay's table g[0 .. m]: g[R] = sum_{r=1..R} sum_{l=1..r} lambda^-l. */
static void run_table(double lambda, size_t m, double *g)
{
    double f = 0, w = 1, sum = 0;
    g[0] = 0;
    for (size_t r = 1; r <= m; r++) {
        w /= lambda;
        f += w; /* sum_{l=1..r} lambda^-l */
        sum += f;
        g[r] = sum;
    }
}

/* Lodhi et al.'s recursion, over x's prefixes, with k - 1 rows
 * Kp[i][j] = K'_i(x[:p], z[:j]) (K'_0 = 1), updated from the highest
 * level down so that level i - 1 still holds row p when level i reads
 * it:
 *   K''_i(x[:p+1], z[:j+1]) = lam K''_i(x[:p+1], z[:j])
 *                             + [x_p = z_j] lam^2 K'_{i-1}(x[:p], z[:j])
 *   K'_i(x[:p+1], z[:j])   = lam K'_i(x[:p], z[:j]) + K''_i(x[:p+1], z[:j])
 *   K_k(x[:p+1], z)        = K_k(x[:p], z)
 *                            + lam^2 sum_{j: z_j = x_p} K'_{k-1}(x[:p], z[:j])
 */
static double subsequence_pair(const unsigned char *x, size_t a,
                               const unsigned char *z, size_t b, int k,
                               double lam, double *rows)
{
    if ((size_t)k > a || (size_t)k > b)
        return 0;
    size_t w = b + 1;
    double l2 = lam * lam, sum = 0;
    /* rows: levels 1 .. k-1 at (i - 1) * w; level 0 is all ones */
    for (size_t r = 0; r < (size_t)(k - 1) * w; r++)
        rows[r] = 0;
    for (size_t p = 0; p < a; p++) {
        const double *top = k > 1 ? rows + (size_t)(k - 2) * w : NULL;
        for (size_t j = 0; j < b; j++)
            if (z[j] == x[p])
                sum += l2 * (top ? top[j] : 1.0);
        for (int i = k - 1; i >= 1; i--) {
            double *cur = rows + (size_t)(i - 1) * w;
            const double *low = i > 1 ? rows + (size_t)(i - 2) * w : NULL;
            double kpp = 0; /* K''_i(x[:p+1], z[:j]) */
            double prev_low = low ? low[0] : 1.0; /* K'_{i-1}(x[:p], z[:j]) */
            double keep = cur[0];
            cur[0] = lam * keep; /* z[:0]: K'' = 0 */
            for (size_t j = 0; j < b; j++) {
                kpp = lam * kpp + (x[p] == z[j] ? l2 * prev_low : 0.0);
                prev_low = low ? low[j + 1] : 1.0;
                cur[j + 1] = lam * cur[j + 1] + kpp;
            }
        }
    }
    return sum;
}

/* Each string's k(x, x) into s->self, by the arithmetic a block's pair
 * uses (spectrum: the sum of its features' squared counts, in feature
 * order, as spectrum_row adds them), so that a normalized kernel's
 * diagonal is the block's: -1 on OOM. */
static int set_self(strset *s, const km_kernel *k)
{
    size_t m = s->maxlen;
    double *tab = NULL;
    if (!(s->self = malloc((s->n ? s->n : 1) * sizeof *s->self)))
        return -1;
    if (k->type == KM_KERNEL_EXPDECAY ||
        (k->type == KM_KERNEL_SUBSEQUENCE && k->length > 1)) {
        size_t cells = k->type == KM_KERNEL_EXPDECAY
                       ? m + 1 : (size_t)(k->length - 1) * (m + 1);
        if (!(tab = malloc(cells * sizeof *tab)))
            return -1;
        if (k->type == KM_KERNEL_EXPDECAY)
            run_table(k->lambda, m, tab);
    }
    for (size_t i = 0; i < s->n; i++) {
        const unsigned char *x = s->bytes + s->off[i];
        size_t len = s->off[i + 1] - s->off[i];
        double v = 0;
        switch (k->type) {
        case KM_KERNEL_SPECTRUM:
        case KM_KERNEL_BOUNDRANGE:
            for (size_t e = s->soff[i]; e < s->soff[i + 1]; e++)
                v += (double)s->scnt[e] * (double)s->scnt[e];
            break;
        case KM_KERNEL_EXPDECAY:
            v = expdecay_pair(x, len, x, len, tab);
            break;
        default:
            v = subsequence_pair(x, len, x, len, k->length, k->lambda, tab);
        }
        s->self[i] = v;
    }
    s->bytes_held += s->n * sizeof *s->self;
    free(tab);
    return 0;
}

/* ------------------------------------------------------------ blocks */

/* What one computation of leaf k on sets a (rows) x b (columns) shares. */
typedef struct {
    const km_kernel *k;
    const strset *a, *b;
    size_t a0, b0;        /* first row of each set used */
    size_t nx, nz;
    double *K;
    size_t ldk;
    long diag;            /* >= 0: row i's own column is i + diag */
    int lower;            /* only columns j <= i + diag (a Gram's) */
    const double *g;      /* expdecay's run table */
    size_t threads;
} job;

typedef struct {
    const job *j;
    size_t t;
    int failed;
} worker;

static double pair_value(const job *jb, size_t i, size_t j, scratch *sc)
{
    const strset *a = jb->a, *b = jb->b;
    size_t ia = jb->a0 + i, jz = jb->b0 + j;
    const unsigned char *x = a->bytes + a->off[ia];
    const unsigned char *z = b->bytes + b->off[jz];
    size_t la = a->off[ia + 1] - a->off[ia];
    size_t lb = b->off[jz + 1] - b->off[jz];
    switch (jb->k->type) {
    case KM_KERNEL_EXPDECAY:
        return expdecay_pair(x, la, z, lb, jb->g);
    default:
        return subsequence_pair(x, la, z, lb, jb->k->length, jb->k->lambda,
                                sc->rows);
    }
}

/* The first posting of feature f of z at string lo or after. */
static size_t first_posting(const strset *z, size_t f, size_t lo)
{
    size_t a = z->poff[f], b = z->poff[f + 1];
    if (lo == 0)
        return a;
    while (a < b) {
        size_t m = a + (b - a) / 2;
        if (z->pstr[m] < lo)
            a = m + 1;
        else
            b = m;
    }
    return a;
}

/* Row i of a spectrum kernel's block: for each feature f of x_i (count
 * c), c times the count of each z string posted under f, over the
 * columns [0, end) (z's strings b0 .. b0 + end): sum_f c_x(f) c_z(f),
 * in whole numbers (exact below 2^53). x_i's features are its own when
 * x and z are one set, else its k-mers found in z's features. */
static void spectrum_row(const job *jb, size_t i, size_t end, double *row)
{
    const strset *x = jb->a, *z = jb->b;
    size_t ix = jb->a0 + i, lo = jb->b0, hi = jb->b0 + end;
    memset(row, 0, end * sizeof *row);
    if (x == z) {
        for (size_t e = z->soff[ix]; e < z->soff[ix + 1]; e++) {
            size_t f = z->sid[e];
            double c = (double)z->scnt[e];
            for (size_t q = first_posting(z, f, lo);
                 q < z->poff[f + 1] && z->pstr[q] < hi; q++)
                row[z->pstr[q] - lo] += c * (double)z->pcnt[q];
        }
        return;
    }
    for (int l = 0; l < x->levels; l++) {
        size_t li = ix * (size_t)x->levels + (size_t)l;
        for (size_t e = x->loff[li]; e < x->loff[li + 1]; e++) {
            long f = find_feature(z, x, ix, l, &x->km[e]);
            if (f < 0)
                continue;
            double c = (double)x->km[e].count;
            for (size_t q = first_posting(z, (size_t)f, lo);
                 q < z->poff[f + 1] && z->pstr[q] < hi; q++)
                row[z->pstr[q] - lo] += c * (double)z->pcnt[q];
        }
    }
}

/* Rows t, t + T, t + 2T, ... of the block (interleaved: a Gram's lower
 * triangle then balances). */
static void *work(void *arg)
{
    worker *w = arg;
    const job *jb = w->j;
    scratch sc = {NULL, 0};
    if (jb->k->type == KM_KERNEL_SUBSEQUENCE && jb->k->length > 1) {
        sc.cap = (size_t)(jb->k->length - 1) * (jb->b->maxlen + 1);
        if (!(sc.rows = malloc(sc.cap * sizeof *sc.rows))) {
            w->failed = 1;
            return NULL;
        }
    }
    for (size_t i = w->t; i < jb->nx; i += jb->threads) {
        size_t end = jb->nz;
        if (jb->lower && jb->diag >= 0 && i + (size_t)jb->diag + 1 < end)
            end = i + (size_t)jb->diag + 1;
        if (jb->k->type == KM_KERNEL_SPECTRUM ||
            jb->k->type == KM_KERNEL_BOUNDRANGE) {
            spectrum_row(jb, i, end, jb->K + i * jb->ldk);
            continue;
        }
        for (size_t j = 0; j < end; j++)
            jb->K[i * jb->ldk + j] = pair_value(jb, i, j, &sc);
    }
    free(sc.rows);
    return NULL;
}

#define MAX_THREADS 64

static km_status run_job(job *jb, km_error *err)
{
    size_t pairs = jb->nx * jb->nz;
    int t = openblas_get_num_threads();
    jb->threads = t < 1 ? 1 : (size_t)t > MAX_THREADS ? MAX_THREADS : (size_t)t;
    if (jb->threads > jb->nx)
        jb->threads = jb->nx;
    if (pairs < 64)
        jb->threads = 1;
    worker w[MAX_THREADS];
    pthread_t tid[MAX_THREADS];
    int started[MAX_THREADS] = {0};
    for (size_t i = 0; i < jb->threads; i++) {
        w[i] = (worker){jb, i, 0};
        if (i > 0)
            started[i] = pthread_create(&tid[i], NULL, work, &w[i]) == 0;
    }
    for (size_t i = 0; i < jb->threads; i++)
        if (!started[i])
            work(&w[i]);
    int failed = 0;
    for (size_t i = 0; i < jb->threads; i++) {
        if (started[i])
            pthread_join(tid[i], NULL);
        failed |= w[i].failed;
    }
    return failed ? km_error_set(err, KM_ENOMEM, "out of memory for a "
                                 "string kernel block") : KM_OK;
}

/* ------------------------------------------------------------ the cache */

typedef struct entry {
    km_kernel_type type;
    int length;
    double lambda;
    size_t n, d;
    double *rows;         /* a copy of the rows it was made from */
    const double *base;   /* where they were */
    strset *set;
    int refs;
    uint64_t used;
    size_t bytes;
} entry;

#define CACHE_SLOTS 8

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static entry *cache[CACHE_SLOTS];
static size_t cache_bytes, cache_cap = KM_STRING_CACHE_BYTES;
static uint64_t cache_clock;

void km_set_string_cache_bytes(size_t bytes)
{
    pthread_mutex_lock(&cache_lock);
    cache_cap = bytes;
    pthread_mutex_unlock(&cache_lock);
}

size_t km_string_cache_held(void)
{
    pthread_mutex_lock(&cache_lock);
    size_t b = cache_bytes;
    pthread_mutex_unlock(&cache_lock);
    return b;
}

size_t km_string_cache_bytes(void)
{
    pthread_mutex_lock(&cache_lock);
    size_t b = cache_cap;
    pthread_mutex_unlock(&cache_lock);
    return b;
}

static void entry_free(entry *e)
{
    if (e) {
        set_free(e->set);
        free(e->rows);
        free(e);
    }
}

static int same_kernel(const entry *e, const km_kernel *k, size_t d)
{
    return e->type == k->type && e->d == d &&
           (k->type == KM_KERNEL_EXPDECAY || e->length == k->length) &&
           ((k->type != KM_KERNEL_EXPDECAY &&
             k->type != KM_KERNEL_SUBSEQUENCE) || e->lambda == k->lambda);
}

/* A cached set holding X's n rows (equal bytes) for k, its first row
 * there in *at, with a reference taken; NULL if none. */
static entry *cache_find(const km_kernel *k, const double *X, size_t n,
                         size_t d, size_t *at)
{
    entry *hit = NULL;
    pthread_mutex_lock(&cache_lock);
    for (int s = 0; s < CACHE_SLOTS && !hit; s++) {
        entry *e = cache[s];
        if (!e || !same_kernel(e, k, d))
            continue;
        size_t first = 0;
        if (X >= e->base && X < e->base + e->n * d &&
            (size_t)(X - e->base) % d == 0)
            first = (size_t)(X - e->base) / d;
        if (first + n > e->n)
            continue;
        if (memcmp(e->rows + first * d, X, n * d * sizeof *X) != 0) {
            if (first == 0 && n == e->n)
                continue;
            if (memcmp(e->rows, X, n * d * sizeof *X) != 0 || n > e->n)
                continue;
            first = 0;
        }
        e->refs++;
        e->used = ++cache_clock;
        *at = first;
        hit = e;
    }
    pthread_mutex_unlock(&cache_lock);
    return hit;
}

static void cache_release(entry *e)
{
    pthread_mutex_lock(&cache_lock);
    int gone = --e->refs == 0 && e->bytes == 0; /* not in the cache */
    pthread_mutex_unlock(&cache_lock);
    if (gone)
        entry_free(e);
}

/* Puts e (one reference held by the caller) in the cache when it fits,
 * evicting the least recently used unreferenced entries. */
static void cache_put(entry *e, size_t bytes)
{
    entry *evicted[CACHE_SLOTS];
    int ne = 0;
    pthread_mutex_lock(&cache_lock);
    for (; bytes <= cache_cap;) {
        int free_slot = -1, old = -1;
        for (int s = 0; s < CACHE_SLOTS; s++) {
            if (!cache[s])
                free_slot = s;
            else if (cache[s]->refs == 0 &&
                     (old < 0 || cache[s]->used < cache[old]->used))
                old = s;
        }
        if (free_slot >= 0 && cache_bytes + bytes <= cache_cap) {
            e->bytes = bytes;
            e->used = ++cache_clock;
            cache[free_slot] = e;
            cache_bytes += bytes;
            break;
        }
        if (old < 0)
            break;
        cache_bytes -= cache[old]->bytes;
        evicted[ne++] = cache[old];
        cache[old] = NULL;
    }
    pthread_mutex_unlock(&cache_lock);
    for (int i = 0; i < ne; i++)
        entry_free(evicted[i]);
}

/* The set of X's rows for k: from the cache, or made (and cached when
 * keep and worth it). */
static entry *set_of(const km_kernel *k, const double *X, size_t n, size_t d,
                     int keep, size_t *at)
{
    entry *e = cache_find(k, X, n, d, at);
    if (e)
        return e;
    *at = 0;
    if (!(e = calloc(1, sizeof *e)))
        return NULL;
    *e = (entry){k->type, k->length, k->lambda, n, d, NULL, X, NULL, 1, 0, 0};
    if (!(e->set = set_make(k, X, n, d)) || set_self(e->set, k)) {
        entry_free(e);
        return NULL;
    }
    if (keep && n >= 32 && (e->rows = malloc(n * d * sizeof *X))) {
        memcpy(e->rows, X, n * d * sizeof *X);
        cache_put(e, e->set->bytes_held + n * d * sizeof *X + sizeof *e);
    }
    return e;
}

void km_strings_prepare(const km_kernel *k, const double *X, size_t n,
                        size_t d)
{
    if (k->n_parts) {
        for (int p = 0; p < k->n_parts; p++)
            km_strings_prepare(&k->parts[p], X, n, d);
        return;
    }
    if (km_kernel_input(k) != KM_INPUT_STRINGS)
        return;
    size_t at;
    entry *e = set_of(k, X, n, d, 1, &at);
    if (e)
        cache_release(e);
}

/* ------------------------------------------------------------ the leaf */

km_status km_strings_cross(const km_kernel *k, const double *X, size_t nx,
                           const double *Z, size_t nz, size_t d, double *K,
                           size_t ldk, long diag, int lower, km_error *err)
{
    if (nx == 0 || nz == 0)
        return KM_OK;
    size_t ax = 0, az = 0;
    entry *ex = set_of(k, X, nx, d, 0, &ax), *ez = NULL;
    int same = X == Z && nx == nz; /* one set, one reference */
    if (same) {
        ez = ex;
        az = ax;
    } else if (ex) {
        /* the columns' side (a model's training strings, a Gram's rows
         * so far) is kept when worth it: the next block or predict finds
         * it; may be ex again, with its own reference */
        ez = set_of(k, Z, nz, d, 1, &az);
    }
    double *g = NULL;
    km_status st = KM_OK;
    if (!ex || !ez) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for strings");
        goto out;
    }
    if (k->type == KM_KERNEL_EXPDECAY) {
        size_t m = ex->set->maxlen > ez->set->maxlen ? ex->set->maxlen
                                                     : ez->set->maxlen;
        if (!(g = malloc((m + 1) * sizeof *g))) {
            st = km_error_set(err, KM_ENOMEM, "out of memory for strings");
            goto out;
        }
        run_table(k->lambda, m, g);
    }
    job jb = {k, ex->set, ez->set, ax, az, nx, nz, K, ldk, diag, lower, g,
              1};
    st = run_job(&jb, err);
out:
    free(g);
    if (ez && !same)
        cache_release(ez);
    if (ex)
        cache_release(ex);
    return st;
}

km_status km_strings_self(const km_kernel *k, const double *X, size_t n,
                          size_t d, double *out, km_error *err)
{
    size_t at;
    entry *e = n ? set_of(k, X, n, d, 0, &at) : NULL;
    if (n && !e)
        return km_error_set(err, KM_ENOMEM, "out of memory for strings");
    if (e) {
        memcpy(out, e->set->self + at, n * sizeof *out);
        cache_release(e);
    }
    return KM_OK;
}

double km_strings_eval(const km_kernel *k, const double *x, const double *z,
                       size_t d)
{
    double v = NAN;
    km_error err;
    if (km_strings_cross(k, x, 1, z, 1, d, &v, 1, -1, 0, &err) != KM_OK)
        return NAN;
    return v;
}

/* What sets of n strings of total bytes in all (end marks counted),
 * the longest of longest bytes, hold for leaf k (k NULL: any string
 * kernel): the bytes and offsets, and per byte and level a k-mer in its
 * string's list, in the sorted occurrences while the features are made,
 * a feature, its postings and the string's feature list (set_features);
 * and the subsequence kernel's rows on every thread. */
static size_t set_bytes(const km_kernel *k, uint64_t total, uint64_t n,
                        uint64_t longest)
{
    uint64_t levels = !k ? KM_STRING_MAX_K
                      : k->type == KM_KERNEL_BOUNDRANGE ? (uint64_t)k->length
                                                        : 1;
    uint64_t per = 2 * sizeof(kmer) + sizeof(occ) + 4 * sizeof(uint32_t) +
                   sizeof(size_t);
    uint64_t b = km_add_sat(km_add_sat(total, km_mul_sat(n, 3 * sizeof(size_t))),
                            km_mul_sat(km_mul_sat(total, levels), per));
    if (!k || k->type == KM_KERNEL_SUBSEQUENCE)
        b = km_add_sat(b, km_mul_sat(km_mul_sat(MAX_THREADS, KM_STRING_MAX_K),
                                     km_mul_sat(km_add_sat(longest, 1),
                                                sizeof(double))));
    return b > SIZE_MAX ? SIZE_MAX : (size_t)b;
}

/* The largest of the string leaves' (one leaf's sets at a time). */
static size_t leaves_bytes(const km_kernel *k, uint64_t total, uint64_t n,
                           uint64_t longest)
{
    size_t b = 0;
    for (int p = 0; p < k->n_parts; p++) {
        size_t s = leaves_bytes(&k->parts[p], total, n, longest);
        b = s > b ? s : b;
    }
    if (k->n_parts || km_kernel_input(k) != KM_INPUT_STRINGS)
        return b;
    return set_bytes(k, total, n, longest);
}

size_t km_kernel_set_bytes(const km_kernel *k, size_t n, size_t d)
{
    uint64_t len = km_add_sat(km_string_max_length(d), 1);
    return leaves_bytes(k, km_mul_sat(n, len), n, len);
}

size_t km_kernel_set_bytes_of(const km_kernel *k, const double *X, size_t n,
                              size_t d)
{
    uint64_t total = 0, longest = 0;
    for (size_t i = 0; i < n; i++) {
        size_t len = row_len(X + i * d, d) + 1;
        total += len;
        longest = len > longest ? len : longest;
    }
    return leaves_bytes(k, total, n, longest);
}

size_t km_strings_work_bytes(const km_kernel *k, size_t nx, size_t nz,
                             size_t d)
{
    uint64_t len = km_add_sat(km_string_max_length(d), 1);
    uint64_t rows = km_add_sat(nx, nz);
    return set_bytes(k, km_mul_sat(rows, len), rows, len);
}
