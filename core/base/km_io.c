/*
 * km_io.c - the little-endian byte writer and reader behind the model file
 * format, and CRC-32 (the IEEE polynomial, as zlib and PNG use).
 *
 * The writer grows a heap buffer, or streams through a small one to a
 * sink, and remembers a failure, so a serialiser checks once at the end.
 * The reader never reads past its end: a short read marks it failed and
 * yields zeros. Also the small checks a
 * loader makes of what it read: finite numbers, UTF-8 text.
 *
 * Thread-safety: reentrant; the CRC's tables are made once (pthread_once).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "km_base_internal.h"

void km_writer_init(km_writer *w)
{
    memset(w, 0, sizeof *w);
}

void km_writer_cleanup(km_writer *w)
{
    free(w->buf);
    memset(w, 0, sizeof *w);
}

void km_writer_init_count(km_writer *w)
{
    memset(w, 0, sizeof *w);
    w->counting = 1;
}

int km_writer_reserve(km_writer *w, size_t n)
{
    if (w->failed || w->counting || w->sink || n <= w->cap)
        return w->failed ? -1 : 0;
    unsigned char *nb = realloc(w->buf, n);
    if (!nb) {
        w->failed = 1;
        return -1;
    }
    w->buf = nb;
    w->cap = n;
    return 0;
}

/* v's four little-endian bytes at b. */
static void le32_put(unsigned char *b, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        b[i] = (unsigned char)(v >> (8 * i));
}

#define SINK_BUFFER (1u << 20)

int km_writer_init_sink(km_writer *w, km_sink_fn sink, void *ctx)
{
    memset(w, 0, sizeof *w);
    w->sink = sink;
    w->sink_ctx = ctx;
    w->buf = malloc(SINK_BUFFER);
    w->cap = SINK_BUFFER;
    if (!w->buf)
        w->failed = 1;
    return w->failed ? -1 : 0;
}

/* Sends p's n bytes on, into the running CRC. */
static void sink_send(km_writer *w, const void *p, size_t n)
{
    if (w->failed || n == 0)
        return;
    w->crc = km_crc32_update(w->crc, p, n);
    if (w->sink(w->sink_ctx, p, n) != 0)
        w->failed = 1;
}

static void sink_flush(km_writer *w)
{
    sink_send(w, w->buf, w->len);
    w->len = 0;
}

int km_writer_finish_sink(km_writer *w)
{
    sink_flush(w);
    unsigned char b[4]; /* not through sink_send: not in the CRC */
    le32_put(b, w->crc);
    if (!w->failed && w->sink(w->sink_ctx, b, 4) != 0)
        w->failed = 1;
    int rc = w->failed ? -1 : 0;
    km_writer_cleanup(w);
    return rc;
}

void km_write_bytes(km_writer *w, const void *p, size_t n)
{
    if (w->failed || n == 0)
        return;
    if (w->sink) {
        if (w->len + n > w->cap)
            sink_flush(w);
        if (n >= w->cap) {
            sink_send(w, p, n);
        } else if (!w->failed) {
            memcpy(w->buf + w->len, p, n);
            w->len += n;
        }
        return;
    }
    if (w->len + n < w->len) {
        w->failed = 1;
        return;
    }
    if (w->counting) {
        w->len += n;
        return;
    }
    if (w->len + n > w->cap) {
        size_t cap = w->cap ? w->cap : 4096;
        while (cap < w->len + n) {
            if (cap > SIZE_MAX / 2) {
                w->failed = 1;
                return;
            }
            cap *= 2;
        }
        unsigned char *nb = realloc(w->buf, cap);
        if (!nb) {
            w->failed = 1;
            return;
        }
        w->buf = nb;
        w->cap = cap;
    }
    memcpy(w->buf + w->len, p, n);
    w->len += n;
}

void km_write_u32(km_writer *w, uint32_t v)
{
    unsigned char b[4];
    le32_put(b, v);
    km_write_bytes(w, b, 4);
}

void km_write_u64(km_writer *w, uint64_t v)
{
    unsigned char b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)(v >> (8 * i));
    km_write_bytes(w, b, 8);
}

void km_write_f64(km_writer *w, double v)
{
    uint64_t u;
    memcpy(&u, &v, 8);
    km_write_u64(w, u);
}

void km_write_f64s(km_writer *w, const double *v, size_t n)
{
    km_write_u64(w, n);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    km_write_bytes(w, v, n * sizeof *v);
#else
    for (size_t i = 0; i < n; i++)
        km_write_f64(w, v[i]);
#endif
}

void km_write_i32s(km_writer *w, const int *v, size_t n)
{
    km_write_u64(w, n);
    for (size_t i = 0; i < n; i++)
        km_write_u32(w, (uint32_t)v[i]);
}

void km_write_str(km_writer *w, const char *s)
{
    size_t n = strlen(s);
    km_write_u32(w, (uint32_t)n);
    km_write_bytes(w, s, n);
}

static const unsigned char *take(km_reader *r, size_t n)
{
    if (r->failed || n > r->left) {
        r->failed = 1;
        return NULL;
    }
    const unsigned char *p = r->p;
    r->p += n;
    r->left -= n;
    return p;
}

uint32_t km_read_u32(km_reader *r)
{
    const unsigned char *b = take(r, 4);
    uint32_t v = 0;
    if (b)
        for (int i = 0; i < 4; i++)
            v |= (uint32_t)b[i] << (8 * i);
    return v;
}

uint64_t km_read_u64(km_reader *r)
{
    const unsigned char *b = take(r, 8);
    uint64_t v = 0;
    if (b)
        for (int i = 0; i < 8; i++)
            v |= (uint64_t)b[i] << (8 * i);
    return v;
}

double km_read_f64(km_reader *r)
{
    uint64_t u = km_read_u64(r);
    double v;
    memcpy(&v, &u, 8);
    return v;
}

size_t km_read_count(km_reader *r, size_t elem_size)
{
    uint64_t n = km_read_u64(r);
    if (r->failed)
        return 0;
    if (elem_size && n > r->left / elem_size) {
        r->failed = 1;
        return 0;
    }
    return (size_t)n;
}

/* Reads exactly n values after a stored count that must equal n. */
double *km_read_f64s(km_reader *r, size_t n)
{
    size_t stored = km_read_count(r, 8);
    if (r->failed || stored != n) {
        r->failed = 1;
        return NULL;
    }
    double *v = malloc((n ? n : 1) * sizeof *v);
    if (!v)
        return NULL;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    const unsigned char *b = take(r, n * 8);
    if (b)
        memcpy(v, b, n * 8);
#else
    for (size_t i = 0; i < n; i++)
        v[i] = km_read_f64(r);
#endif
    if (r->failed) {
        free(v);
        return NULL;
    }
    return v;
}

void km_skip_array(km_reader *r, size_t elem_size)
{
    size_t n = km_read_count(r, elem_size);
    take(r, n * elem_size);
}

int *km_read_i32s(km_reader *r, size_t n)
{
    size_t stored = km_read_count(r, 4);
    if (r->failed || stored != n) {
        r->failed = 1;
        return NULL;
    }
    int *v = malloc((n ? n : 1) * sizeof *v);
    if (!v)
        return NULL;
    for (size_t i = 0; i < n; i++)
        v[i] = (int)km_read_u32(r);
    if (r->failed) {
        free(v);
        return NULL;
    }
    return v;
}

void km_read_str(km_reader *r, char *dst, size_t max)
{
    uint32_t n = km_read_u32(r);
    const unsigned char *b = n <= max ? take(r, n) : NULL;
    /* A NUL inside would make the string shorter than its stored length:
     * the writer never stores one. */
    if (!b || memchr(b, '\0', n)) {
        r->failed = 1;
        dst[0] = '\0';
        return;
    }
    memcpy(dst, b, n);
    dst[n] = '\0';
}

int km_all_finite(const double *v, size_t n)
{
    /* v - v is 0 for a finite v and NaN for an infinity or a NaN, so the
     * sum is NaN iff one is not finite; a loop without branches. */
    double acc = 0;
    for (size_t i = 0; i < n; i++)
        acc += v[i] - v[i];
    return acc == 0;
}

int km_utf8_valid(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        unsigned c = *p;
        size_t len = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2
                     : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
        if (len == 0)
            return 0;
        uint32_t cp = len == 1 ? c : c & (0x7Fu >> len);
        for (size_t i = 1; i < len; i++) {
            if ((p[i] & 0xC0) != 0x80)
                return 0;
            cp = cp << 6 | (p[i] & 0x3F);
        }
        /* overlong forms, UTF-16 surrogates, beyond U+10FFFF */
        static const uint32_t least[5] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < least[len] || (cp >= 0xD800 && cp <= 0xDFFF) ||
            cp > 0x10FFFF)
            return 0;
        p += len;
    }
    return 1;
}

/*
 * CRC-32, reflected polynomial 0xEDB88320, eight bytes a step
 * ("slicing by 8"): tab[0][i] is i shifted through eight rounds of the
 * polynomial, and tab[s][i] the CRC of i followed by s zero bytes, so the
 * eight bytes' contributions are looked up independently and XORed (the
 * byte-at-a-time loop waits on each lookup before the next: about 3x
 * slower on a model file's hundreds of MB). The tables are made from the
 * polynomial on first use.
 */
static uint32_t crc_tab[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_tables(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ 0xEDB88320u : c >> 1;
        crc_tab[0][i] = c;
    }
    for (int s = 1; s < 8; s++)
        for (uint32_t i = 0; i < 256; i++)
            crc_tab[s][i] = (crc_tab[s - 1][i] >> 8) ^
                            crc_tab[0][crc_tab[s - 1][i] & 0xFF];
}

static uint32_t le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

uint32_t km_crc32_update(uint32_t crc, const unsigned char *p, size_t n)
{
    pthread_once(&crc_once, crc_tables);
    uint32_t c = ~crc;
    for (; n >= 8; p += 8, n -= 8) {
        uint32_t a = c ^ le32(p), b = le32(p + 4);
        c = crc_tab[7][a & 0xFF] ^ crc_tab[6][(a >> 8) & 0xFF] ^
            crc_tab[5][(a >> 16) & 0xFF] ^ crc_tab[4][a >> 24] ^
            crc_tab[3][b & 0xFF] ^ crc_tab[2][(b >> 8) & 0xFF] ^
            crc_tab[1][(b >> 16) & 0xFF] ^ crc_tab[0][b >> 24];
    }
    for (; n > 0; p++, n--)
        c = crc_tab[0][(c ^ *p) & 0xFF] ^ (c >> 8);
    return ~c;
}

uint32_t km_crc32(const unsigned char *p, size_t n)
{
    return km_crc32_update(0, p, n);
}
