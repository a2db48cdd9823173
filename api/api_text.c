/*
 * api_text.c - JSON answers as text; see api_text.h.
 *
 * Numbers. The answer promises the shorter of %.15g and %.17g that reads
 * back as v, which glibc's printf computes with multi-precision
 * arithmetic, slower than the model for a one-row predict. Here, for
 * 1e-7 <= |v| < 1e15: v = f * 2^q exactly (f < 2^53), so v * 10^s =
 * f * 5^s * 2^(q+s) with f * 5^s < 2^116: one 128-bit product and a
 * shift give the correctly rounded P-digit decimal D (ties to even, as
 * printf), the very digits printf writes. D15 * 10^k is read back with
 * one exact IEEE operation (D15 < 2^53 and |k| <= 22: both operands
 * exact, the result correctly rounded, as strtod's); if that is v, D15 is
 * written, else D17, in %g's layout. Integers below 1e15 are written digit
 * by digit; other magnitudes take the plain way (%.15g, strtod, maybe
 * %.17g). The unit tests check the text against the plain way on millions
 * of doubles.
 *
 * Thread-safety: reentrant.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_text.h"

static const double pow10_exact[] = {
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
    1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

static const uint64_t pow10_u64[] = {
    1ULL, 10ULL, 100ULL, 1000ULL, 10000ULL, 100000ULL, 1000000ULL,
    10000000ULL, 100000000ULL, 1000000000ULL, 10000000000ULL,
    100000000000ULL, 1000000000000ULL, 10000000000000ULL,
    100000000000000ULL, 1000000000000000ULL, 10000000000000000ULL,
    100000000000000000ULL};

/* 5^i for i < 28 (5^27 < 2^63) */
static uint64_t pow5(int i)
{
    uint64_t p = 1;
    while (i-- > 0)
        p *= 5;
    return p;
}

static size_t put_digits(char *buf, uint64_t v)
{
    char tmp[24];
    size_t n = 0, len = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n)
        buf[len++] = tmp[--n];
    return len;
}

/*
 * The correctly rounded P-digit decimal of a (1e-7 <= a < 1e15, P <= 17):
 * a ~ D * 10^(e - P + 1) with 10^(P-1) <= D < 10^P. 0 if out of reach.
 */
static int round_digits(double a, int P, uint64_t *D, int *e)
{
    uint64_t lo = pow10_u64[P - 1], hi = pow10_u64[P];
    int exp2;
    uint64_t f = (uint64_t)ldexp(frexp(a, &exp2), 53); /* a = f * 2^q */
    int q = exp2 - 53, ee = (int)floor(log10(a));
    for (int tries = 0; tries < 3; tries++) {
        int s = P - 1 - ee, k = -(q + s); /* a * 10^s = n * 2^-k */
        if (s < 0 || s > 27 || k < -10 || k > 120)
            return 0;
        unsigned __int128 n = (unsigned __int128)f * pow5(s), rem = 0, half = 0;
        if (k <= 0) {
            n <<= -k;
        } else {
            rem = n & (((unsigned __int128)1 << k) - 1);
            half = (unsigned __int128)1 << (k - 1);
            n >>= k;
        }
        if (n < lo) { /* log10 was a little off */
            ee--;
            continue;
        }
        if (n >= hi) {
            ee++;
            continue;
        }
        uint64_t d = (uint64_t)n;
        if (k > 0 && (rem > half || (rem == half && (d & 1))))
            d++; /* ties to even */
        if (d == hi) { /* rounded up into the next decade */
            d = lo;
            ee++;
        }
        *D = d;
        *e = ee;
        return 1;
    }
    return 0;
}

/* D (P digits) * 10^(e - P + 1), laid out as %.<P>g does. */
static size_t layout_g(char *buf, int neg, uint64_t D, int P, int e)
{
    char dig[17];
    int nd = P;
    for (int i = P - 1; i >= 0; i--, D /= 10)
        dig[i] = (char)('0' + D % 10);
    while (nd > 1 && dig[nd - 1] == '0')
        nd--;
    size_t len = 0;
    if (neg)
        buf[len++] = '-';
    if (e < -4 || e >= P) {
        buf[len++] = dig[0];
        if (nd > 1) {
            buf[len++] = '.';
            memcpy(buf + len, dig + 1, (size_t)nd - 1);
            len += (size_t)nd - 1;
        }
        buf[len++] = 'e';
        buf[len++] = e < 0 ? '-' : '+';
        int ae = e < 0 ? -e : e;
        if (ae < 10)
            buf[len++] = '0';
        len += put_digits(buf + len, (uint64_t)ae);
    } else if (e >= 0) {
        for (int i = 0; i <= e; i++)
            buf[len++] = i < nd ? dig[i] : '0';
        if (nd > e + 1) {
            buf[len++] = '.';
            memcpy(buf + len, dig + e + 1, (size_t)(nd - e - 1));
            len += (size_t)(nd - e - 1);
        }
    } else {
        buf[len++] = '0';
        buf[len++] = '.';
        for (int i = 0; i < -e - 1; i++)
            buf[len++] = '0';
        memcpy(buf + len, dig, (size_t)nd);
        len += (size_t)nd;
    }
    buf[len] = '\0';
    return len;
}

/* The text without printf; 0 when the plain way must do it. */
static size_t fast_format(char *buf, double v)
{
    double a = fabs(v);
    int neg = signbit(v) != 0, e;
    uint64_t D;
    if (a < 1e15 && a == floor(a)) {
        size_t len = 0;
        if (neg)
            buf[len++] = '-';
        len += put_digits(buf + len, (uint64_t)a);
        buf[len] = '\0';
        return len;
    }
    if (!(a >= 1e-7 && a < 1e15) || !round_digits(a, 15, &D, &e))
        return 0;
    int k = 14 - e; /* D * 10^-k, read back exactly; |k| <= 22 here */
    if ((k >= 0 ? (double)D / pow10_exact[k] : (double)D * pow10_exact[-k]) == a)
        return layout_g(buf, neg, D, 15, e);
    if (!round_digits(a, 17, &D, &e))
        return 0;
    return layout_g(buf, neg, D, 17, e);
}

size_t api_format_number(char *buf, double v)
{
    size_t n = fast_format(buf, v);
    if (n)
        return n;
    n = (size_t)snprintf(buf, 32, "%.15g", v);
    if (strtod(buf, NULL) != v)
        n = (size_t)snprintf(buf, 32, "%.17g", v);
    return n;
}

/* ---------------------------------------------------------------- text */

static char *room(api_text *t, size_t n)
{
    if (t->failed)
        return NULL;
    if (t->len + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 256;
        while (cap < t->len + n + 1)
            cap *= 2;
        char *b = realloc(t->buf, cap);
        if (!b) {
            t->failed = 1;
            return NULL;
        }
        t->buf = b;
        t->cap = cap;
    }
    return t->buf + t->len;
}

void api_text_raw(api_text *t, const char *s)
{
    size_t n = strlen(s);
    char *p = room(t, n);
    if (p) {
        memcpy(p, s, n + 1);
        t->len += n;
    }
}

size_t api_utf8_char(const char *s, size_t avail)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t len;
    unsigned char lo = 0x80, hi = 0xBF; /* the second byte's range */
    if (avail == 0)
        return 0;
    if (u[0] < 0x80)
        return 1;
    if (u[0] >= 0xC2 && u[0] <= 0xDF)
        len = 2;
    else if (u[0] >= 0xE0 && u[0] <= 0xEF)
        len = 3;
    else if (u[0] >= 0xF0 && u[0] <= 0xF4)
        len = 4;
    else
        return 0; /* a continuation byte, C0/C1 (overlong), F5-FF */
    if (u[0] == 0xE0)
        lo = 0xA0; /* overlong */
    else if (u[0] == 0xED)
        hi = 0x9F; /* surrogates */
    else if (u[0] == 0xF0)
        lo = 0x90; /* overlong */
    else if (u[0] == 0xF4)
        hi = 0x8F; /* above U+10FFFF */
    /* Byte by byte, so a NUL-terminated s is never read past its end. */
    for (size_t i = 1; i < len; i++) {
        if (i >= avail)
            return 0;
        unsigned char c = u[i];
        if (i == 1 ? c < lo || c > hi : c < 0x80 || c > 0xBF)
            return 0;
    }
    return len;
}

size_t api_json_escape(char *dst, size_t cap, const char *s)
{
    size_t n = 0;
    while (*s) {
        unsigned char c = (unsigned char)*s;
        char esc = c == '"' ? '"' : c == '\\' ? '\\' : c == '\b' ? 'b'
                   : c == '\f' ? 'f' : c == '\n' ? 'n' : c == '\r' ? 'r'
                   : c == '\t' ? 't' : 0; /* as cJSON writes them */
        size_t len = api_utf8_char(s, 4); /* 0: not UTF-8 */
        size_t need = esc ? 2 : c < 0x20 || !len ? 6 : len;
        if (n + need >= cap)
            break;
        if (esc) {
            dst[n++] = '\\';
            dst[n++] = esc;
        } else if (!len) {
            memcpy(dst + n, "\\ufffd", 6);
            n += 6;
            len = 1;
        } else if (c < 0x20) {
            n += (size_t)snprintf(dst + n, 7, "\\u%04x", c);
        } else {
            memcpy(dst + n, s, len);
            n += len;
        }
        s += len;
    }
    if (cap)
        dst[n] = '\0';
    return n;
}

void api_text_string(api_text *t, const char *s)
{
    size_t cap = 6 * strlen(s) + 1; /* every byte as \u00XX at worst */
    char *p = room(t, cap + 2);
    if (!p)
        return;
    size_t n = 1 + api_json_escape(p + 1, cap, s);
    p[0] = '"';
    p[n++] = '"';
    p[n] = '\0';
    t->len += n;
}

void api_text_uint(api_text *t, unsigned long long v)
{
    char *p = room(t, 24);
    if (p) {
        t->len += put_digits(p, v);
        t->buf[t->len] = '\0';
    }
}

void api_text_number(api_text *t, double v)
{
    char *p = room(t, 32);
    if (p)
        t->len += api_format_number(p, v);
}
