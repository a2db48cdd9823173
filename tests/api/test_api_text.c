/*
 * test_api_text.c - answers as text: every number's text is what the
 * plain way (snprintf "%.15g", read back with strtod, else "%.17g") gives,
 * over random doubles of all magnitudes, short decimals (which the fast
 * path takes), integers, and the doubles around powers of ten; strings
 * are escaped for JSON.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>

#include "../check_main.h"
#include "api_text.h"

static void plain(char *buf, double v)
{
    snprintf(buf, 32, "%.15g", v);
    if (strtod(buf, NULL) != v)
        snprintf(buf, 32, "%.17g", v);
}

static void same_as_plain(double v)
{
    char want[32], got[40];
    plain(want, v);
    memset(got, 'x', sizeof got);
    size_t n = api_format_number(got, v);
    ck_assert_msg(n == strlen(want) && memcmp(got, want, n) == 0,
                  "%.17g: wrote %.*s, want %s", v, (int)n, got, want);
}

static uint64_t next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

START_TEST(numbers_as_printf)
{
    uint64_t s = 0x9E3779B97F4A7C15ULL;
    /* Doubles of any magnitude: random bits. */
    for (int i = 0; i < 300000; i++) {
        uint64_t u = next(&s);
        double v;
        memcpy(&v, &u, sizeof v);
        if (isfinite(v))
            same_as_plain(v);
    }
    /* Magnitudes a model answers with: 1e-9 .. 1e23, random mantissas. */
    for (int i = 0; i < 300000; i++) {
        double v = ldexp((double)(next(&s) >> 11), -53) *
                   pow(10.0, (double)(next(&s) % 33) - 9.0);
        same_as_plain(next(&s) & 1 ? v : -v);
    }
    /* Short decimals, which read back in 15 digits: the fast path. */
    for (int i = 0; i < 300000; i++) {
        char text[40];
        int digits = 1 + (int)(next(&s) % 15), exp10 = (int)(next(&s) % 40) - 18;
        uint64_t m = next(&s) % 1000000000000000ULL;
        while (m >= 10 && (int)floor(log10((double)m)) + 1 > digits)
            m /= 10;
        snprintf(text, sizeof text, "%llue%d", (unsigned long long)m, exp10);
        same_as_plain(strtod(text, NULL));
    }
    /* Integers, and the doubles around each power of ten. */
    for (int i = 0; i < 100000; i++)
        same_as_plain((double)(int64_t)(next(&s) >> (next(&s) % 64)));
    for (int k = -30; k <= 30; k++) {
        double p = pow(10.0, k);
        double v = p;
        for (int j = 0; j < 40; j++, v = nextafter(v, 0))
            same_as_plain(v);
        v = p;
        for (int j = 0; j < 40; j++, v = nextafter(v, INFINITY))
            same_as_plain(v);
        same_as_plain(p * 0.9999999999999995);
        same_as_plain(p * 0.99999999999999995);
        same_as_plain(p * 1.0000000000000005);
    }
    static const double edge[] = {0.0, -0.0, 1.0, -1.0, 0.1, 0.5, 1.0 / 3,
                                  2.0 / 3, 1e15, 1e15 - 1, 1e15 + 2, 123456789012345.6,
                                  999999999999999.4, 99999999999999.95,
                                  DBL_MAX, DBL_MIN, 4.9e-324, 1e-7, 1e22,
                                  9.999999999999999e21, 0.000123, 1e-5};
    for (size_t i = 0; i < sizeof edge / sizeof *edge; i++) {
        same_as_plain(edge[i]);
        same_as_plain(-edge[i]);
    }
}
END_TEST

START_TEST(text_building)
{
    api_text t = {0};
    api_text_raw(&t, "{\"name\":");
    api_text_string(&t, "a\"b\\c\n\x01/");
    api_text_raw(&t, ",\"n\":[");
    api_text_uint(&t, 18446744073709551615ULL);
    api_text_raw(&t, ",");
    api_text_number(&t, 0.1);
    api_text_raw(&t, ",");
    api_text_number(&t, -2.5e-10);
    api_text_raw(&t, "]}");
    ck_assert_int_eq(t.failed, 0);
    ck_assert_str_eq(t.buf, "{\"name\":\"a\\\"b\\\\c\\n\\u0001/\",\"n\":"
                            "[18446744073709551615,0.1,-2.5e-10]}");
    ck_assert_uint_eq(t.len, strlen(t.buf));
    /* Into a fixed buffer: a character that does not fit whole ends it. */
    char small[6];
    ck_assert_uint_eq(api_json_escape(small, 5, "ab\"cd"), 4);
    ck_assert_str_eq(small, "ab\\\"");
    ck_assert_uint_eq(api_json_escape(small, 6, "a\x01"), 1);
    ck_assert_str_eq(small, "a");
    /* Growth past the first buffer keeps what was written. */
    for (int i = 0; i < 1000; i++)
        api_text_number(&t, i + 0.25);
    ck_assert_int_eq(t.failed, 0);
    ck_assert_uint_eq(t.len, strlen(t.buf));
    ck_assert_ptr_nonnull(strstr(t.buf, "999.25"));
    free(t.buf);
}
END_TEST

/* UTF-8 as RFC 3629 defines it; everything else escaped as U+FFFD, so
 * an answer or a log line is UTF-8 JSON whatever a client sent. */
START_TEST(utf8_and_escaping)
{
    static const struct {
        const char *s;
        size_t len; /* of the first character; 0 if not UTF-8 */
    } chars[] = {
        {"a", 1}, {"\x7f", 1}, {"\xc3\xa9", 2}, {"\xe2\x82\xac", 3},
        {"\xf0\x9f\x98\x80", 4}, {"\xf4\x8f\xbf\xbf", 4},
        {"\xff", 0}, {"\x80", 0}, {"\xc3", 0}, {"\xc3(", 0},
        {"\xc0\xaf", 0},         /* overlong '/' */
        {"\xe0\x80\xaf", 0},     /* overlong '/' */
        {"\xed\xa0\x80", 0},     /* surrogate U+D800 */
        {"\xf4\x90\x80\x80", 0}, /* above U+10FFFF */
        {"\xf5\x80\x80\x80", 0}, {"\xe2\x82", 0},
    };
    for (size_t i = 0; i < sizeof chars / sizeof *chars; i++)
        ck_assert_msg(api_utf8_char(chars[i].s, strlen(chars[i].s)) ==
                          chars[i].len, "case %zu", i);
    /* avail bounds the read: a whole character cut short is not one */
    ck_assert_uint_eq(api_utf8_char("\xe2\x82\xac", 2), 0);
    ck_assert_uint_eq(api_utf8_char("a", 0), 0);

    char buf[64];
    ck_assert_uint_eq(api_json_escape(buf, sizeof buf, "caf\xc3\xa9"), 5);
    ck_assert_str_eq(buf, "caf\xc3\xa9");
    api_json_escape(buf, sizeof buf, "a\xff" "b\xc3(\xed\xa0\x80");
    ck_assert_str_eq(buf, "a\\ufffdb\\ufffd(\\ufffd\\ufffd\\ufffd");
    /* a cut character: its lead byte is replaced, nothing is lost after */
    api_json_escape(buf, sizeof buf, "\xe2\x82x");
    ck_assert_str_eq(buf, "\\ufffd\\ufffdx");
    /* a character that would not fit whole ends the text */
    ck_assert_uint_eq(api_json_escape(buf, 4, "ab\xe2\x82\xac"), 2);
    ck_assert_uint_eq(api_json_escape(buf, 8, "a\xff"), 7);
    ck_assert_uint_eq(api_json_escape(buf, 7, "a\xff"), 1);

    api_text t = {0};
    api_text_string(&t, "\xff\xfe");
    ck_assert_str_eq(t.buf, "\"\\ufffd\\ufffd\"");
    free(t.buf);
}
END_TEST

static Suite *text_suite(void)
{
    Suite *s = suite_create("api_text");
    TCase *tc = tcase_create("api");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, numbers_as_printf);
    tcase_add_test(tc, text_building);
    tcase_add_test(tc, utf8_and_escaping);
    suite_add_tcase(s, tc);
    return s;
}

KM_TEST_MAIN(text_suite)
