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

static Suite *text_suite(void)
{
    Suite *s = suite_create("api_text");
    TCase *tc = tcase_create("api");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, numbers_as_printf);
    tcase_add_test(tc, text_building);
    suite_add_tcase(s, tc);
    return s;
}

KM_TEST_MAIN(text_suite)
