/*
 * api_text.c - JSON answers as text; see api_text.h.
 *
 * Numbers. The answer promises the shorter of %.15g and %.17g that reads
 * back as v. At most one 15-digit decimal reads back as a given double
 * (neighbouring 15-digit decimals are at least 1e-15 apart relatively,
 * doubles at most 2.2e-16), and when one does it is the one %.15g prints.
 * So: scale |v| to a 15-digit integer m (within one of the correctly
 * rounded one), and for m - 1, m, m + 1 compute m * 10^k back with one
 * exact IEEE operation (m < 2^53 and |k| <= 22: both operands exact, the
 * result correctly rounded, as strtod's). A match is %.15g's digits,
 * written out in %g's layout. With no match and m well inside its decade,
 * %.15g cannot read back, so %.17g is printed directly; otherwise (out of
 * range, a decade's edge) the plain way: %.15g, strtod, maybe %.17g.
 * Integers below 1e15 are written digit by digit. The unit tests check
 * the text against that plain way on millions of doubles.
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

#define E14 100000000000000ULL
#define E15 1000000000000000ULL

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

/* m (15 digits) * 10^(e - 14), laid out as %.15g does. */
static size_t layout_g15(char *buf, int neg, uint64_t m, int e)
{
    char dig[16];
    int nd = 15;
    for (int i = 14; i >= 0; i--, m /= 10)
        dig[i] = (char)('0' + m % 10);
    while (nd > 1 && dig[nd - 1] == '0')
        nd--;
    size_t len = 0;
    if (neg)
        buf[len++] = '-';
    if (e < -4 || e >= 15) {
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

/* m * 10^-s computed as strtod would read it; s in [-22, 22]. */
static double scaled_back(uint64_t m, int s)
{
    return s >= 0 ? (double)m / pow10_exact[s] : (double)m * pow10_exact[-s];
}

/* 0 when the plain way must decide; -1 when %.17g is the answer. */
static long fast_format(char *buf, double v)
{
    double a = fabs(v);
    int neg = signbit(v) != 0;
    if (a < 1e15 && a == floor(a)) {
        size_t len = 0;
        if (neg)
            buf[len++] = '-';
        len += put_digits(buf + len, (uint64_t)a);
        buf[len] = '\0';
        return (long)len;
    }
    if (!(a >= 1e-7 && a < 1e22))
        return 0;
    int e = (int)floor(log10(a)), s = 0;
    uint64_t m = 0;
    for (int tries = 0; tries < 3; tries++) {
        s = 14 - e; /* a * 10^s has 15 digits before the point */
        if (s < -22 || s > 22)
            return 0;
        double t = s >= 0 ? a * pow10_exact[s] : a / pow10_exact[-s];
        m = (uint64_t)(t + 0.5);
        if (m >= E15)
            e++;
        else if (m < E14)
            e--;
        else
            break;
    }
    if (m < E14 || m >= E15)
        return 0;
    for (int d = 0; d < 3; d++) {
        uint64_t c = d == 0 ? m : d == 1 ? m - 1 : m + 1;
        if (c >= E14 && c < E15 && scaled_back(c, s) == a)
            return (long)layout_g15(buf, neg, c, e);
    }
    return m > E14 && m + 1 < E15 ? -1 : 0;
}

size_t api_format_number(char *buf, double v)
{
    long n = fast_format(buf, v);
    if (n > 0)
        return (size_t)n;
    if (n == 0) {
        n = snprintf(buf, 32, "%.15g", v);
        if (strtod(buf, NULL) == v)
            return (size_t)n;
    }
    return (size_t)snprintf(buf, 32, "%.17g", v);
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

void api_text_string(api_text *t, const char *s)
{
    char *p = room(t, 6 * strlen(s) + 2); /* every byte as \u00XX at worst */
    if (!p)
        return;
    size_t n = 0;
    p[n++] = '"';
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        char esc = c == '"' ? '"' : c == '\\' ? '\\' : c == '\b' ? 'b'
                   : c == '\f' ? 'f' : c == '\n' ? 'n' : c == '\r' ? 'r'
                   : c == '\t' ? 't' : 0; /* as cJSON writes them */
        if (esc) {
            p[n++] = '\\';
            p[n++] = esc;
        } else if (c < 0x20) {
            n += (size_t)snprintf(p + n, 7, "\\u%04x", c);
        } else {
            p[n++] = (char)c;
        }
    }
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
