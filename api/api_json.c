/*
 * api_json.c - JSON request parsing and typed field access.
 *
 * Nesting is measured by a scan before cJSON parses (cJSON recurses once
 * per level), so a body of a million '[' is refused without recursion.
 * Numbers that overflow a double parse as infinities in cJSON and are
 * refused here as "not a finite number"; NaN and Infinity are not JSON and
 * make the parse fail. Strings are checked in the same pass: UTF-8, no
 * unescaped control character, no escaped NUL (see scan).
 *
 * Thread-safety: reentrant.
 */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_json.h"
#include "api_text.h"

const char *api_type_name(const cJSON *item)
{
    if (!item) return "missing";
    if (cJSON_IsArray(item)) return "an array";
    if (cJSON_IsObject(item)) return "an object";
    if (cJSON_IsString(item)) return "a string";
    if (cJSON_IsNumber(item)) return "a number";
    if (cJSON_IsBool(item)) return "a boolean";
    if (cJSON_IsNull(item)) return "null";
    return "invalid";
}

/*
 * What precheck's one pass over the body finds: the deepest nesting of
 * arrays and objects, and the first byte inside a string that a parser
 * must not see. cJSON keeps strings as NUL-terminated C strings, so an
 * escaped NUL would cut one short ("a\u0000x" and "a\u0000y" would be
 * the same label); and it copies bytes as they are, so a string that is
 * not UTF-8 would come back out in answers and logs.
 */
typedef enum { STR_OK, STR_NUL, STR_CONTROL, STR_UTF8 } str_problem;

typedef struct {
    size_t depth;        /* deepest nesting before the scan stopped */
    size_t at;           /* where the problem is */
    str_problem problem;
} scan_result;

/*
 * Eight bytes at a time: whether a word holds a byte the scan acts on. Out
 * of strings those are '"', '[', ']', '{' and '}' (c | 0x20 folds the
 * brackets onto the braces); in strings '"', '\\', a control byte or one of
 * a multi-byte UTF-8 character. Numbers, commas and white space, most of
 * a body, are skipped a word at a time. ZERO is the exact test for a zero
 * byte in a word, LESS for one below n (n <= 128).
 */
#define ONES 0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL
#define ZERO(x) (((x) - ONES) & ~(x) & HIGHS)
#define LESS(x, n) (((x) - ONES * (n)) & ~(x) & HIGHS)

static int structural(const char *s)
{
    uint64_t w, f;
    memcpy(&w, s, sizeof w);
    f = w | ONES * 0x20;
    return (ZERO(w ^ ONES * '"') | ZERO(f ^ ONES * '{') |
            ZERO(f ^ ONES * '}')) != 0;
}

static int string_special(const char *s)
{
    uint64_t w;
    memcpy(&w, s, sizeof w);
    return (ZERO(w ^ ONES * '"') | ZERO(w ^ ONES * '\\') | LESS(w, 0x20) |
            (w & HIGHS)) != 0;
}

static void scan(const char *s, size_t len, size_t limit, scan_result *r)
{
    size_t depth = 0;
    int in_string = 0;
    memset(r, 0, sizeof *r);
    for (size_t i = 0; i < len; i++) {
        if (in_string)
            while (len - i >= 8 && !string_special(s + i))
                i += 8;
        else
            while (len - i >= 8 && !structural(s + i))
                i += 8;
        if (i == len)
            break;
        unsigned char c = (unsigned char)s[i];
        if (in_string) {
            if (c == '"') {
                in_string = 0;
            } else if (c == '\\') {
                if (len - i > 5 && !memcmp(s + i + 1, "u0000", 5)) {
                    r->problem = STR_NUL;
                    r->at = i;
                    return;
                }
                i++;
            } else if (c < 0x20) {
                r->problem = STR_CONTROL;
                r->at = i;
                return;
            } else if (c >= 0x80) {
                size_t n = api_utf8_char(s + i, len - i);
                if (!n) {
                    r->problem = STR_UTF8;
                    r->at = i;
                    return;
                }
                i += n - 1;
            }
        } else if (c == '"') {
            in_string = 1;
        } else if (c == '[' || c == '{') {
            if (++depth > r->depth && (r->depth = depth) > limit)
                return;
        } else if ((c == ']' || c == '}') && depth) {
            depth--;
        }
    }
}

/*
 * The field whose string holds byte at, for messages: "y[3]",
 * "kernel.type", or "a member name in params". Found by a second pass up
 * to at, which only runs for a refused body; best effort, since the body
 * before at need not be well-formed JSON. Nesting is at most
 * API_MAX_DEPTH here (scan stops at the first problem, so a deeper body
 * was refused for that).
 */
static void string_field(const char *s, size_t at, char *out, size_t cap)
{
    struct {
        char open;
        int want_key;
        size_t index;
        char key[48];
    } lv[API_MAX_DEPTH + 1];
    int top = -1, in_string = 0, is_key = 0;
    size_t key_start = 0, n = 0;
    for (size_t i = 0; i < at; i++) {
        char c = s[i];
        if (in_string) {
            if (c == '\\') {
                i++;
            } else if (c == '"') {
                in_string = 0;
                if (is_key)
                    snprintf(lv[top].key, sizeof lv[top].key, "%.*s",
                             (int)(i - key_start), s + key_start);
            }
        } else if (c == '"') {
            in_string = 1;
            is_key = top >= 0 && lv[top].open == '{' && lv[top].want_key;
            key_start = i + 1;
        } else if (c == '{' || c == '[') {
            if (top == API_MAX_DEPTH)
                break;
            top++;
            lv[top].open = c;
            lv[top].want_key = c == '{';
            lv[top].index = 0;
            lv[top].key[0] = '\0';
        } else if ((c == '}' || c == ']') && top >= 0) {
            top--;
        } else if (c == ',' && top >= 0) {
            lv[top].index++;
            lv[top].want_key = lv[top].open == '{';
        } else if (c == ':' && top >= 0) {
            lv[top].want_key = 0;
        }
    }
    out[0] = '\0';
    /* The member or element each level holds; the last one is the
     * string itself, unless that is a member name. */
    for (int k = 0; k <= top - (is_key ? 1 : 0) && n < cap; k++) {
        int w = lv[k].open == '{'
                    ? snprintf(out + n, cap - n, "%s%s", n ? "." : "",
                               lv[k].key)
                    : snprintf(out + n, cap - n, "[%zu]", lv[k].index);
        n += w > 0 ? (size_t)w : 0;
    }
    if (is_key) {
        char path[160];
        snprintf(path, sizeof path, "%s", out);
        snprintf(out, cap, "a member name %s%s", path[0] ? "in " : "of the body",
                 path);
    } else if (!out[0]) {
        snprintf(out, cap, "a string");
    }
}

/* What every body must pass before a parser sees it. */
static int precheck(const char *body, size_t len, api_error *e)
{
    scan_result r;
    char f[192];
    if (len == 0)
        return api_raise(e, API_INVALID_JSON, "the request body is empty; "
                        "expected a JSON object");
    scan(body, len, API_MAX_DEPTH, &r);
    if (r.depth > API_MAX_DEPTH)
        return api_invalid(e, "the body nests deeper than %d levels",
                           API_MAX_DEPTH);
    if (r.problem == STR_OK)
        return 0;
    string_field(body, r.at, f, sizeof f);
    switch (r.problem) {
    case STR_NUL:
        return api_invalid(e, "%s contains \\u0000 (NUL), which no string "
                           "in a request may hold", f);
    case STR_CONTROL:
        return api_raise(e, API_INVALID_JSON, "%s has a control character "
                        "that is not escaped (byte %zu)", f, r.at);
    default:
        return api_raise(e, API_INVALID_JSON, "%s is not valid UTF-8 (byte "
                        "%zu); a request body must be UTF-8", f, r.at);
    }
}

int api_parse_object(const char *body, size_t len, cJSON **out, api_error *e)
{
    *out = NULL;
    if (precheck(body, len, e))
        return -1;
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(body, len, &end, 0);
    if (!root) {
        size_t at = end && end >= body && end <= body + len
                        ? (size_t)(end - body) : 0;
        return api_raise(e, API_INVALID_JSON,
                        "the body is not valid JSON (error near byte %zu)", at);
    }
    /* Only white space may follow the value. */
    for (const char *p = end; p && p < body + len; p++)
        if (!strchr(" \t\r\n", *p) && *p != '\0') {
            cJSON_Delete(root);
            return api_raise(e, API_INVALID_JSON,
                            "the body has data after the JSON value (byte %zu)",
                            (size_t)(p - body));
        }
    if (!cJSON_IsObject(root)) {
        const char *t = api_type_name(root);
        cJSON_Delete(root);
        return api_invalid(e, "the body must be a JSON object, not %s", t);
    }
    *out = root;
    return 0;
}

/* ------------------------------------------------ bodies with a matrix */

static const char *skip_ws(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
        p++;
    return p;
}

/* Whether the 8 bytes at p are all digits, and if so their value: the
 * digits' nibbles combined in pairs, then fours, then all eight, by
 * three multiplications (bytes in memory order: little-endian). */
static int eight_digits(const char *p, uint32_t *value)
{
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
    (void)p, (void)value;
    return 0;
#endif
    uint64_t w;
    memcpy(&w, p, sizeof w);
    if (((w & 0xf0f0f0f0f0f0f0f0ULL) |
         (((w + 0x0606060606060606ULL) & 0xf0f0f0f0f0f0f0f0ULL) >> 4)) !=
        0x3333333333333333ULL)
        return 0;
    w -= 0x3030303030303030ULL;
    w = w * 10 + (w >> 8); /* pairs, in bytes 0, 2, 4, 6 */
    w = (((w & 0x000000ff000000ffULL) * 0x000f424000000064ULL) +
         (((w >> 16) & 0x000000ff000000ffULL) * 0x0000271000000001ULL)) >> 32;
    *value = (uint32_t)w;
    return 1;
}

/*
 * m x 10^e (m < 2^64 and |e| <= 27: both exact in x87's 64-bit mantissa)
 * correctly rounded to double, into *v; -1 when this cannot be sure and
 * strtod must decide. The one x87 operation rounds the exact value t to
 * r, the nearest 64-bit-mantissa number; rounding r to double then gives
 * t's nearest double unless r lands exactly on a midpoint between two
 * doubles (its low 11 mantissa bits 0x400; t may be either side of it):
 * only then is the answer left to strtod. Doubles written with 17
 * significant digits, as most clients write them, take this path.
 */
static int scaled_exactly(uint64_t m, long e, double *v)
{
#if LDBL_MANT_DIG == 64 && (defined(__x86_64__) || defined(__i386__))
    static const long double pow10[] = {
        1e0L,  1e1L,  1e2L,  1e3L,  1e4L,  1e5L,  1e6L,  1e7L,  1e8L,  1e9L,
        1e10L, 1e11L, 1e12L, 1e13L, 1e14L, 1e15L, 1e16L, 1e17L, 1e18L, 1e19L,
        1e20L, 1e21L, 1e22L, 1e23L, 1e24L, 1e25L, 1e26L, 1e27L};
    if (e < -27 || e > 27)
        return -1;
    long double r = (long double)m;
    r = e < 0 ? r / pow10[-e] : r * pow10[e];
    uint64_t mant;
    memcpy(&mant, &r, sizeof mant); /* x87: the explicit 64-bit mantissa */
    if ((mant & 0x7ff) == 0x400)
        return -1;
    *v = (double)r;
    return 0;
#else
    (void)m, (void)e, (void)v;
    return -1;
#endif
}

/*
 * One number in strict JSON syntax at *pp, into *v; -1 if the text is not
 * one. Up to 19 significant digits with a decimal exponent of at most 22
 * either way and a mantissa below 2^53 convert exactly with one IEEE
 * multiplication or division (both operands exact, the result correctly
 * rounded: Clinger's fast path); up to 19 digits with an exponent of at
 * most 27 through scaled_exactly; anything else goes to strtod, so every
 * number reads to the same double as strtod gives.
 */
static int read_number(const char **pp, const char *end, double *v)
{
    static const double pow10[] = {
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
        1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    const char *p = *pp, *start = p;
    uint64_t m = 0;
    int digits = 0, exact = 1, neg = 0;
    long exp10 = 0;
    uint32_t eight;
    if (p < end && *p == '-')
        neg = 1, p++;
    if (p < end && *p == '0') {
        p++;
    } else if (p < end && *p >= '1' && *p <= '9') {
        for (; digits <= 11 && end - p >= 8 && eight_digits(p, &eight);
             p += 8)
            m = m * 100000000 + eight, digits += 8;
        for (; p < end && *p >= '0' && *p <= '9'; p++) {
            if (digits < 19)
                m = m * 10 + (uint64_t)(*p - '0'), digits++;
            else
                exp10++, exact &= *p == '0';
        }
    } else {
        return -1;
    }
    if (p < end && *p == '.') {
        if (++p >= end || *p < '0' || *p > '9')
            return -1;
        for (; m && digits <= 11 && end - p >= 8 && eight_digits(p, &eight);
             p += 8)
            m = m * 100000000 + eight, digits += 8, exp10 -= 8;
        for (; p < end && *p >= '0' && *p <= '9'; p++) {
            if (m == 0 && *p == '0')
                exp10--; /* leading zeros are not significant */
            else if (digits < 19)
                m = m * 10 + (uint64_t)(*p - '0'), digits++, exp10--;
            else
                exact &= *p == '0';
        }
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        int eneg = 0;
        long ev = 0;
        if (++p < end && (*p == '+' || *p == '-'))
            eneg = *p++ == '-';
        if (p >= end || *p < '0' || *p > '9')
            return -1;
        for (; p < end && *p >= '0' && *p <= '9'; p++)
            if (ev < 100000)
                ev = ev * 10 + (*p - '0');
        exp10 += eneg ? -ev : ev;
    }
    *pp = p;
    if (m == 0) {
        *v = neg ? -0.0 : 0.0;
    } else if (exact && m <= (1ULL << 53) && exp10 >= -22 && exp10 <= 22) {
        double x = (double)m;
        x = exp10 < 0 ? x / pow10[-exp10] : x * pow10[exp10];
        *v = neg ? -x : x;
    } else if (exact && scaled_exactly(m, exp10, v) == 0) {
        *v = neg ? -*v : *v;
    } else {
        char text[64];
        size_t n = (size_t)(p - start);
        if (n >= sizeof text)
            return -1;
        memcpy(text, start, n);
        text[n] = '\0';
        *v = strtod(text, NULL);
    }
    return 0;
}

/* After a value in an array or object: 1 at a ',' (another value
 * follows), 0 at the closing character, -1 at anything else. *pp moves
 * past the ',' or the closing character. */
static int separator(const char **pp, const char *end, char close)
{
    const char *p = skip_ws(*pp, end);
    if (p >= end || (*p != ',' && *p != close))
        return -1;
    *pp = skip_ws(p + 1, end);
    return *p == ',';
}

/* A matrix of finite numbers with rows of equal length at *pp (at its
 * '['), into a new buffer; -1 on anything else. */
static int read_matrix(const char **pp, const char *end, double **M,
                       size_t *rows, size_t *cols)
{
    const char *p = skip_ws(*pp + 1, end);
    double *buf = NULL;
    size_t count = 0, cap = 0, n = 0, d = 0;
    int more;
    do {
        if (p >= end || *p != '[')
            goto fail;
        p = skip_ws(p + 1, end);
        size_t j = 0;
        do {
            double v;
            if (read_number(&p, end, &v) || !isfinite(v))
                goto fail;
            if (count == cap) {
                /* doubling, but never past what the rest of the body can
                 * hold (a number and a comma: two bytes at least) */
                size_t room = count + (size_t)(end - p) / 2 + 1;
                size_t c = cap ? 2 * cap : 64;
                c = c < room ? c : room;
                double *b = c < SIZE_MAX / sizeof *b
                                ? realloc(buf, c * sizeof *b) : NULL;
                if (!b)
                    goto fail;
                buf = b, cap = c;
            }
            buf[count++] = v;
            j++;
        } while ((more = separator(&p, end, ']')) == 1);
        if (more < 0 || (n > 0 && j != d))
            goto fail;
        d = j;
        n++;
    } while ((more = separator(&p, end, ']')) == 1);
    if (more < 0)
        goto fail;
    *pp = p;
    *M = buf;
    *rows = n;
    *cols = d;
    return 0;
fail:
    free(buf);
    return -1;
}

/* The direct reading of the body; -1 when it must fall back. */
static int read_body(const char *body, size_t len,
                     const char *const *matrix_keys, api_body *b)
{
    const char *p = body, *end = body + len;
    b->root = cJSON_CreateObject();
    p = skip_ws(p, end);
    if (!b->root || p >= end || *p != '{')
        return -1;
    p = skip_ws(p + 1, end);
    if (p < end && *p == '}')
        p++;
    else
        for (;;) {
            char key[256];
            size_t kn = 0;
            if (p >= end || *p++ != '"')
                return -1;
            for (; p < end && *p != '"'; p++) {
                unsigned char c = (unsigned char)*p;
                if (c == '\\' || c < 0x20 || kn + 1 >= sizeof key)
                    return -1; /* escapes and long keys: cJSON's job */
                key[kn++] = (char)c;
            }
            key[kn] = '\0';
            p = skip_ws(p + 1, end);
            if (p >= end || *p != ':')
                return -1;
            p = skip_ws(p + 1, end);
            const char *const *k = matrix_keys;
            while (*k && strcmp(*k, key))
                k++;
            if (*k && !b->key && p < end && *p == '[' &&
                !cJSON_GetObjectItemCaseSensitive(b->root, key)) {
                if (read_matrix(&p, end, &b->M, &b->n, &b->d))
                    return -1;
                b->key = *k;
            } else {
                const char *vend = NULL;
                cJSON *item = cJSON_ParseWithLengthOpts(p, (size_t)(end - p),
                                                        &vend, 0);
                if (!item)
                    return -1;
                if (!cJSON_AddItemToObject(b->root, key, item)) {
                    cJSON_Delete(item);
                    return -1;
                }
                if (b->key && !strcmp(b->key, key)) {
                    /* a repeat of the matrix key: the first one wins, so
                     * the later one must not be found in root */
                    return -1;
                }
                p = vend;
            }
            int more = separator(&p, end, '}');
            if (more < 0)
                return -1;
            if (!more)
                break;
        }
    for (; p < end; p++) /* white space, as api_parse_object allows */
        if (!strchr(" \t\r\n", *p) && *p != '\0')
            return -1;
    return 0;
}

int api_parse_body(const char *body, size_t len,
                   const char *const *matrix_keys, api_body *b, api_error *e)
{
    memset(b, 0, sizeof *b);
    if (precheck(body, len, e))
        return -1;
    if (read_body(body, len, matrix_keys, b) == 0)
        return 0;
    api_body_free(b);
    return api_parse_object(body, len, &b->root, e);
}

void api_body_free(api_body *b)
{
    cJSON_Delete(b->root);
    free(b->M);
    memset(b, 0, sizeof *b);
}

int api_body_has(const api_body *b, const char *name)
{
    return (b->key && !strcmp(b->key, name)) ||
           cJSON_GetObjectItemCaseSensitive(b->root, name) != NULL;
}

int api_body_matrix(api_body *b, const char *name, size_t expect_d,
                    double **X, size_t *n, size_t *d, api_error *e)
{
    if (!b->key || strcmp(b->key, name))
        return api_get_matrix(cJSON_GetObjectItemCaseSensitive(b->root, name),
                              name, expect_d, X, n, d, e);
    *X = NULL;
    if (expect_d && b->d != expect_d)
        return api_invalid(e, "%s[0] has %zu features; the model expects %zu",
                           name, b->d, expect_d);
    *X = b->M;
    *n = b->n;
    *d = b->d;
    b->M = NULL;
    return 0;
}

int api_get_matrix(const cJSON *item, const char *name, size_t expect_d,
                   double **X, size_t *n, size_t *d, api_error *e)
{
    *X = NULL;
    if (!item)
        return api_invalid(e, "%s is required: an array of rows of numbers",
                           name);
    if (!cJSON_IsArray(item))
        return api_invalid(e, "%s must be an array of rows of numbers, not %s",
                           name, api_type_name(item));
    size_t rows = (size_t)cJSON_GetArraySize(item);
    if (rows == 0)
        return api_invalid(e, "%s must have at least one row", name);
    const cJSON *first = item->child;
    if (!cJSON_IsArray(first))
        return api_invalid(e, "%s[0] must be an array of numbers, not %s",
                           name, api_type_name(first));
    size_t cols = (size_t)cJSON_GetArraySize(first);
    if (cols == 0)
        return api_invalid(e, "%s[0] must have at least one number", name);
    if (expect_d && cols != expect_d)
        return api_invalid(e, "%s[0] has %zu features; the model expects %zu",
                           name, cols, expect_d);
    if (rows > SIZE_MAX / sizeof(double) / cols)
        return api_invalid(e, "%s is too large", name);
    double *M = malloc(rows * cols * sizeof *M);
    if (!M)
        return api_raise(e, API_PAYLOAD_TOO_LARGE,
                        "not enough memory for %s (%zu x %zu)", name, rows,
                        cols);
    size_t i = 0;
    for (const cJSON *row = item->child; row; row = row->next, i++) {
        if (!cJSON_IsArray(row)) {
            free(M);
            return api_invalid(e, "%s[%zu] must be an array of numbers, not %s",
                               name, i, api_type_name(row));
        }
        size_t j = 0;
        for (const cJSON *v = row->child; v; v = v->next, j++) {
            if (j >= cols)
                break;
            if (!cJSON_IsNumber(v)) {
                free(M);
                return api_invalid(e, "%s[%zu][%zu] must be a number, not %s",
                                   name, i, j, api_type_name(v));
            }
            if (!isfinite(v->valuedouble)) {
                free(M);
                return api_invalid(e, "%s[%zu][%zu] is not a finite number",
                                   name, i, j);
            }
            M[i * cols + j] = v->valuedouble;
        }
        size_t have = (size_t)cJSON_GetArraySize(row);
        if (have != cols) {
            free(M);
            if (expect_d)
                return api_invalid(e, "%s[%zu] has %zu features; the model "
                                   "expects %zu", name, i, have, cols);
            return api_invalid(e, "%s[%zu] has %zu features; %s[0] has %zu",
                               name, i, have, name, cols);
        }
    }
    *X = M;
    *n = rows;
    *d = cols;
    return 0;
}

/* "params.alpha", or "async" for a top-level field. */
static const char *field(char *buf, size_t len, const char *path,
                         const char *key)
{
    snprintf(buf, len, "%s%s%s", path, *path ? "." : "", key);
    return buf;
}

int api_opt_number(const cJSON *obj, const char *path, const char *key,
                   double *out, api_error *e)
{
    const cJSON *v = obj ? cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;
    char f[160];
    if (!v)
        return 0;
    if (!cJSON_IsNumber(v))
        return api_invalid(e, "%s must be a number, not %s",
                           field(f, sizeof f, path, key), api_type_name(v));
    if (!isfinite(v->valuedouble))
        return api_invalid(e, "%s is not a finite number",
                           field(f, sizeof f, path, key));
    *out = v->valuedouble;
    return 0;
}

int api_opt_integer(const cJSON *obj, const char *path, const char *key,
                    long lo, long hi, long *out, api_error *e)
{
    const cJSON *v = obj ? cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;
    char f[160];
    if (!v)
        return 0;
    double x = v->valuedouble;
    if (!cJSON_IsNumber(v) || !isfinite(x) || x != floor(x) || x < (double)lo ||
        x > (double)hi)
        return api_invalid(e, "%s must be a whole number from %ld to %ld",
                           field(f, sizeof f, path, key), lo, hi);
    *out = (long)x;
    return 0;
}

int api_opt_bool(const cJSON *obj, const char *path, const char *key,
                 int *out, api_error *e)
{
    const cJSON *v = obj ? cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;
    char f[160];
    if (!v)
        return 0;
    if (!cJSON_IsBool(v))
        return api_invalid(e, "%s must be true or false, not %s",
                           field(f, sizeof f, path, key), api_type_name(v));
    *out = cJSON_IsTrue(v);
    return 0;
}

int api_check_keys(const cJSON *obj, const char *path,
                   const char *const *allowed, api_error *e)
{
    for (const cJSON *c = obj ? obj->child : NULL; c; c = c->next) {
        int ok = 0;
        for (const char *const *a = allowed; *a && !ok; a++)
            ok = strcmp(c->string, *a) == 0;
        if (!ok) {
            char list[256] = "";
            for (const char *const *a = allowed; *a; a++) {
                strncat(list, *a, sizeof list - strlen(list) - 3);
                if (a[1])
                    strncat(list, ", ", sizeof list - strlen(list) - 1);
            }
            return api_invalid(e, "%s%s%s is not a known field; expected one "
                               "of: %s", path, *path ? "." : "", c->string,
                               list[0] ? list : "(none)");
        }
    }
    return 0;
}

cJSON *api_json_number(double v)
{
    if (!isfinite(v))
        return cJSON_CreateNull();
    char buf[40];
    api_format_number(buf, v);
    cJSON *n = cJSON_CreateRaw(buf);
    if (n) { /* for readers in this process that look at the value */
        n->valuedouble = v;
        n->valueint = v >= INT_MAX ? INT_MAX : v <= INT_MIN ? INT_MIN : (int)v;
    }
    return n;
}

cJSON *api_json_numbers(const double *v, size_t n)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; a && i < n; i++)
        cJSON_AddItemToArray(a, api_json_number(v[i]));
    return a;
}

size_t api_json_max_numbers(const char *body, size_t len)
{
    size_t numbers = 1;
    for (const char *p = body, *end = body + len;
         p && (p = memchr(p, ',', (size_t)(end - p))) != NULL; p++)
        numbers++;
    return numbers;
}
