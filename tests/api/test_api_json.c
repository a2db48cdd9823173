/*
 * test_api_json.c - request parsing: JSON vs not JSON vs not an object,
 * the nesting bound, matrices into one buffer with messages naming the
 * entry, and typed optional fields.
 */
#include "../check_main.h"
#include <math.h>
#include <stdint.h>

#include "api_json.h"

static int parse(const char *s, cJSON **root, api_error *e)
{
    return api_parse_object(s, strlen(s), root, e);
}

START_TEST(object_or_not)
{
    cJSON *root;
    api_error e;
    ck_assert_int_eq(parse("{\"a\":1}", &root, &e), 0);
    cJSON_Delete(root);
    ck_assert_int_eq(parse("  {\"a\":1}\n ", &root, &e), 0);
    cJSON_Delete(root);
    ck_assert_int_eq(parse("{\"a\":", &root, &e), -1);
    ck_assert_str_eq(e.code, "invalid_json");
    ck_assert_int_eq(e.http, 400);
    ck_assert_int_eq(parse("{\"a\":NaN}", &root, &e), -1);
    ck_assert_str_eq(e.code, "invalid_json");
    ck_assert_int_eq(parse("{} {}", &root, &e), -1);
    ck_assert_str_eq(e.code, "invalid_json");
    ck_assert_int_eq(parse("[1]", &root, &e), -1);
    ck_assert_str_eq(e.code, "invalid_argument");
    ck_assert_str_eq(e.message, "the body must be a JSON object, not an array");
    ck_assert_int_eq(parse("", &root, &e), -1);
    ck_assert_str_eq(e.code, "invalid_json");
    /* A body that is not NUL-terminated: only len bytes count. */
    const char buf[] = {'{', '}', 'x'};
    ck_assert_int_eq(api_parse_object(buf, 2, &root, &e), 0);
    cJSON_Delete(root);
}
END_TEST

START_TEST(nesting_bound)
{
    size_t n = 100000;
    char *s = malloc(2 * n + 16);
    strcpy(s, "{\"X\":");
    size_t len = strlen(s);
    for (size_t i = 0; i < n; i++)
        s[len++] = '[';
    for (size_t i = 0; i < n; i++)
        s[len++] = ']';
    s[len++] = '}';
    cJSON *root;
    api_error e;
    ck_assert_int_eq(api_parse_object(s, len, &root, &e), -1);
    ck_assert_str_eq(e.code, "invalid_argument");
    ck_assert_ptr_nonnull(strstr(e.message, "nests deeper than 32"));
    /* Brackets inside strings do not count. */
    ck_assert_int_eq(parse("{\"s\":\"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\"}",
                           &root, &e), 0);
    cJSON_Delete(root);
    free(s);
}
END_TEST

/* Reads X both ways - from cJSON's tree, and through api_parse_body's
 * direct reader - and checks that they agree exactly (status, message,
 * every value's bits). */
static int matrix(const char *json, size_t expect, double **X, size_t *n,
                  size_t *d, api_error *e)
{
    cJSON *root = cJSON_Parse(json);
    int rc = api_get_matrix(cJSON_GetObjectItem(root, "X"), "X", expect, X, n,
                            d, e);
    cJSON_Delete(root);

    static const char *const keys[] = {"X", NULL};
    api_body b;
    api_error e2;
    double *X2 = NULL;
    size_t n2 = 0, d2 = 0;
    int rc2 = api_parse_body(json, strlen(json), keys, &b, &e2);
    if (rc2 == 0)
        rc2 = api_body_matrix(&b, "X", expect, &X2, &n2, &d2, &e2);
    api_body_free(&b);
    ck_assert_int_eq(rc, rc2);
    if (rc) {
        ck_assert_ptr_null(X2);
        ck_assert_str_eq(e->message, e2.message);
        ck_assert_str_eq(e->code, e2.code);
    } else {
        ck_assert_uint_eq(*n, n2);
        ck_assert_uint_eq(*d, d2);
        ck_assert_mem_eq(*X, X2, n2 * d2 * sizeof *X2);
    }
    free(X2);
    return rc;
}

START_TEST(matrices)
{
    double *X;
    size_t n, d;
    api_error e;
    ck_assert_int_eq(matrix("{\"X\":[[1,2,3],[4,5,6.5]]}", 0, &X, &n, &d, &e), 0);
    ck_assert_uint_eq(n, 2);
    ck_assert_uint_eq(d, 3);
    ck_assert_double_eq(X[5], 6.5);
    ck_assert_double_eq(X[3], 4);
    free(X);

    struct { const char *json; size_t expect; const char *msg; } bad[] = {
        {"{}", 0, "X is required: an array of rows of numbers"},
        {"{\"X\":{}}", 0, "X must be an array of rows of numbers, not an object"},
        {"{\"X\":[]}", 0, "X must have at least one row"},
        {"{\"X\":[[]]}", 0, "X[0] must have at least one number"},
        {"{\"X\":[1,2]}", 0, "X[0] must be an array of numbers, not a number"},
        {"{\"X\":[[1,2],[3]]}", 0, "X[1] has 1 features; X[0] has 2"},
        {"{\"X\":[[1,2],[3,4,5]]}", 0, "X[1] has 3 features; X[0] has 2"},
        {"{\"X\":[[1,2],[3,true]]}", 0, "X[1][1] must be a number, not a boolean"},
        {"{\"X\":[[1,null]]}", 0, "X[0][1] must be a number, not null"},
        {"{\"X\":[[1,-1e999]]}", 0, "X[0][1] is not a finite number"},
        {"{\"X\":[[1,2]]}", 3, "X[0] has 2 features; the model expects 3"},
        {"{\"X\":[[1,2,3],[1,2]]}", 3, "X[1] has 2 features; the model expects 3"},
        {"{\"X\":[[1,2]],\"X\":[[1]]}", 3, "X[0] has 2 features; the model expects 3"},
        {"{\"X\":\"a\",\"X\":[[1]]}", 0, "X must be an array of rows of numbers, not a string"},
        {"{\"X\":[[1,\"2\"]]}", 0, "X[0][1] must be a number, not a string"},
        {"{\"X\":[[1,[2]]]}", 0, "X[0][1] must be a number, not an array"},
        {"{\"X\":[[1e400]]}", 0, "X[0][0] is not a finite number"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        X = (double *)1;
        ck_assert_int_eq(matrix(bad[i].json, bad[i].expect, &X, &n, &d, &e), -1);
        ck_assert_ptr_null(X);
        ck_assert_str_eq(e.message, bad[i].msg);
        ck_assert_str_eq(e.code, "invalid_argument");
    }
}
END_TEST

/* Reads X[0][0] of {"X":[[num]]} directly; the bits must be strtod's. */
static void read_as_strtod(const char *num)
{
    static const char *const keys[] = {"X", NULL};
    char body[128];
    double want = strtod(num, NULL), *X = NULL;
    size_t n, d;
    api_body b;
    api_error e;
    snprintf(body, sizeof body, "{\"X\":[[%s]]}", num);
    ck_assert_int_eq(api_parse_body(body, strlen(body), keys, &b, &e), 0);
    ck_assert_msg(b.key != NULL, "%s: not read directly", num);
    ck_assert_int_eq(api_body_matrix(&b, "X", 1, &X, &n, &d, &e), 0);
    ck_assert_msg(memcmp(&X[0], &want, sizeof want) == 0,
                  "%s: read %.17g, strtod gives %.17g", num, X[0], want);
    free(X);
    api_body_free(&b);
}

/* Numbers in text as strtod reads them: the direct reader must give the
 * same bits for every form, on its fast path and off it. */
START_TEST(numbers_read_as_strtod)
{
    static const char *const fixed[] = {
        "0", "-0", "0.0", "-0.0e5", "1", "-1", "0.1", "0.3", "1e22", "1e23",
        "-1e-22", "1e-23", "9007199254740992", "9007199254740993",
        "9007199254740995", "18014398509481985", "1234567890123456789",
        "12345678901234567890", "123456789012345678901234567890",
        "0.000000000000000000000000000123", "2.2250738585072014e-308",
        "2.2250738585072011e-308", "4.9e-324", "2e-324", "1.7976931348623157e308",
        "3.141592653589793238462643383279", "1E5", "1e+5", "1e-5", "0.5E-0",
        "100000000000000000000000", "7.0e-10", "1.00000000000000011102230246251565404236316680908203125",
        "1.00000000000000011102230246251565404236316680908203124",
        "1e-400", "-1e-400"};
    char body[256];
    static const char *const keys[] = {"X", NULL};
    unsigned long long state = 88172645463325252ULL;
    for (size_t t = 0; t < 20000 + sizeof fixed / sizeof *fixed; t++) {
        char num[80];
        if (t < sizeof fixed / sizeof *fixed) {
            snprintf(num, sizeof num, "%s", fixed[t]);
        } else { /* random digits, point, exponent */
            state ^= state << 13, state ^= state >> 7, state ^= state << 17;
            int nd = 1 + (int)(state % 22), pt = (int)((state >> 8) % (nd + 1));
            int ex = (int)((state >> 16) % 700) - 350, len = 0;
            if (state >> 40 & 1)
                num[len++] = '-';
            for (int i = 0; i < nd; i++) {
                state ^= state << 13, state ^= state >> 7, state ^= state << 17;
                if (i == pt && i > 0)
                    num[len++] = '.';
                num[len++] = (char)('0' + (i == 0 && nd > 1 ? 1 + state % 9
                                                            : state % 10));
            }
            if (state >> 50 & 1)
                len += snprintf(num + len, sizeof num - (size_t)len, "e%d",
                                ex % ((state >> 20 & 1) ? 23 : 350));
            num[len] = '\0';
        }
        if (isfinite(strtod(num, NULL))) {
            read_as_strtod(num);
            continue;
        }
        api_body b; /* not finite: refused, as before */
        api_error e;
        snprintf(body, sizeof body, "{\"X\":[[%s, 1]]}", num);
        ck_assert_int_eq(api_parse_body(body, strlen(body), keys, &b, &e), 0);
        ck_assert_ptr_null(b.key);
        api_body_free(&b);
    }
}
END_TEST

/* The numbers most clients write (doubles with 17 significant digits) and
 * up to 19 digits with exponents to 27 either way are read in one x87
 * operation; those that land on a midpoint between two doubles (made
 * here on purpose: integers from 2^53 to 10^19 halfway between
 * neighbours, and their scalings) go to strtod. Every one must read to
 * strtod's bits. */
START_TEST(long_numbers_read_as_strtod)
{
    unsigned long long st = 0x9e3779b97f4a7c15ULL;
#define NEXT (st ^= st << 13, st ^= st >> 7, st ^= st << 17)
    char num[64];
    for (int t = 0; t < 50000; t++) {
        NEXT;
        double x;
        uint64_t bits = st;
        memcpy(&x, &bits, sizeof x);
        if (!isfinite(x) || x == 0)
            continue;
        snprintf(num, sizeof num, t & 1 ? "%.17g" : "%.16g", x);
        read_as_strtod(num);
    }
    for (int t = 0; t < 50000; t++) {
        NEXT;
        unsigned long long m = st % 10000000000000000000ULL;
        int e = (int)((st >> 7) % 61) - 30, k = (int)((st >> 20) % 20);
        int len = snprintf(num, sizeof num, "%llu", m);
        if (k > 0 && k < len) { /* a decimal point k digits from the end */
            memmove(num + len - k + 1, num + len - k, (size_t)k + 1);
            num[len - k] = '.';
        }
        snprintf(num + strlen(num), sizeof num - strlen(num), "e%d", e);
        read_as_strtod(num);
    }
    for (int t = 0; t < 10000; t++) { /* midpoints */
        NEXT;
        int k = (int)(st % 10); /* between doubles 2^(k+1) apart */
        unsigned long long m = (1ULL << (53 + k)) | (st >> 11 << (k + 2) &
                                                     ((1ULL << (53 + k)) - 1));
        m |= 1ULL << k;
        if (m >= 10000000000000000000ULL)
            continue;
        snprintf(num, sizeof num, "%llu", m);
        read_as_strtod(num);
        snprintf(num, sizeof num, "%llue%d", m, (int)(st >> 50) % 27 - 13);
        read_as_strtod(num);
    }
#undef NEXT
}
END_TEST

/* The scan reads a word of 8 bytes at a time: a bad byte in a string, or
 * nesting past the bound, must be found at every alignment, and the byte
 * it names must be the one. */
START_TEST(scan_at_every_alignment)
{
    static const char *const bad[] = {"\x01", "\xff", "\\u0000"};
    char body[160], want[64];
    for (size_t pad = 0; pad < 24; pad++)
        for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
            cJSON *root = NULL;
            api_error e;
            int n = snprintf(body, sizeof body, "{\"pad\":[%*s1],\"s\":\"%.*s",
                             (int)pad, "", (int)pad, "abcdefghijklmnopqrstuvwxyz");
            size_t at = (size_t)n;
            snprintf(body + n, sizeof body - (size_t)n, "%sz\"}", bad[k]);
            ck_assert_int_eq(api_parse_object(body, strlen(body), &root, &e), -1);
            if (k == 2) {
                ck_assert_msg(strstr(e.message, "s contains \\u0000"), "%s",
                              e.message);
            } else {
                snprintf(want, sizeof want, "(byte %zu)", at);
                ck_assert_msg(strstr(e.message, want), "pad %zu: %s", pad,
                              e.message);
            }
        }
    for (size_t pad = 0; pad < 24; pad++) {
        char deep[256];
        cJSON *root = NULL;
        api_error e;
        size_t n = (size_t)snprintf(deep, sizeof deep, "{\"a\":%*s", (int)pad, "");
        for (int lv = 0; lv < API_MAX_DEPTH; lv++)
            n += (size_t)snprintf(deep + n, sizeof deep - n, "[%s",
                                  lv % 3 ? "" : " ");
        for (int lv = 0; lv < API_MAX_DEPTH; lv++)
            deep[n++] = ']';
        deep[n++] = '}';
        deep[n] = '\0';
        ck_assert_int_eq(api_parse_object(deep, n, &root, &e), -1);
        ck_assert_msg(strstr(e.message, "nests deeper than 32"), "%s", e.message);
        deep[5 + pad] = ' '; /* one level fewer: within the bound */
        deep[n - 2] = ' ';
        ck_assert_msg(api_parse_object(deep, n, &root, &e) == 0, "pad %zu: %s",
                      pad, e.message);
        cJSON_Delete(root);
    }
}
END_TEST

/* What the direct reader takes, what it leaves in root, and when it hands
 * the whole body to cJSON instead. */
START_TEST(body_direct_or_not)
{
    static const char *const keys[] = {"X", "instances", NULL};
    struct { const char *json; const char *key; int members; } cases[] = {
        {"{\"X\":[[1,2],[3,4]]}", "X", 0},
        {" {\r\n\t\"output\" : \"label\" , \"X\" : [ [ 1 , 2 ] ] } \n", "X", 1},
        {"{\"instances\":[[1]],\"k\":{\"a\":[1,{\"b\":null}]}}", "instances", 1},
        {"{\"X\":[[1]],\"instances\":[[2]]}", "X", 1}, /* one matrix taken */
        {"{}", NULL, 0},
        {"{\"y\":[[1]]}", NULL, 1},                   /* not a matrix key */
        {"{\"X\":[]}", NULL, 1},                      /* the rest: cJSON */
        {"{\"X\":[[1],[2,3]]}", NULL, 1},
        {"{\"X\":[[01]]}", NULL, 1},
        {"{\"X\":[[1.]]}", NULL, 1},
        {"{\"X\":[[1,2]],\"y\":[1e400]}", "X", 1},
        {"{\"X\":[[1e400]]}", NULL, 1},
        {"{\"\\u0058\":[[1]]}", NULL, 1},
        {"{\"X\":[[1]],\"X\":[[2]]}", NULL, 2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        api_body b;
        api_error e;
        const char *s = cases[i].json;
        ck_assert_msg(api_parse_body(s, strlen(s), keys, &b, &e) == 0, "%s", s);
        if (cases[i].key)
            ck_assert_str_eq(b.key, cases[i].key);
        else
            ck_assert_ptr_null(b.key);
        ck_assert_int_eq(cJSON_GetArraySize(b.root), cases[i].members);
        api_body_free(&b);
    }
    /* Bodies that are not JSON objects fail as api_parse_object fails. */
    static const char *const bad[] = {"", "[1]", "{\"X\":[[1]]", "{\"X\":[[1]]} x",
                                      "{\"X\":[[1]],}", "{\"X\" [[1]]}",
                                      "{\"X\":[[NaN]]}", "{\"X\":[[.5]]}",
                                      "{\"X\":[[+1]]}", "{\"X\":[[-]]}"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        api_body b;
        api_error e1, e2;
        cJSON *root = NULL;
        ck_assert_int_eq(api_parse_body(bad[i], strlen(bad[i]), keys, &b, &e1), -1);
        ck_assert_int_eq(api_parse_object(bad[i], strlen(bad[i]), &root, &e2), -1);
        ck_assert_str_eq(e1.message, e2.message);
        api_body_free(&b);
    }
    /* Only len bytes count, as for api_parse_object. */
    const char buf[] = "{\"X\":[[1]]}{";
    api_body b;
    api_error e;
    ck_assert_int_eq(api_parse_body(buf, strlen(buf) - 1, keys, &b, &e), 0);
    ck_assert_str_eq(b.key, "X");
    api_body_free(&b);
}
END_TEST

/* The direct reader against cJSON on bodies mutated at random: the same
 * status and message, the same matrix to the bit, and the same other
 * members. (Under the sanitizer build this is also a small fuzzer.) */
static void same_both_ways(const char *s, size_t len)
{
    static const char *const keys[] = {"X", NULL};
    cJSON *root = NULL;
    api_error ea, eb;
    double *XA = NULL, *XB = NULL;
    size_t na = 0, da = 0, nb = 0, db = 0;
    int ra = api_parse_object(s, len, &root, &ea);
    if (ra == 0)
        ra = api_get_matrix(cJSON_GetObjectItemCaseSensitive(root, "X"), "X",
                            0, &XA, &na, &da, &ea);
    api_body b;
    int rb = api_parse_body(s, len, keys, &b, &eb);
    int taken = rb == 0 && b.key != NULL;
    if (rb == 0)
        rb = api_body_matrix(&b, "X", 0, &XB, &nb, &db, &eb);
    ck_assert_msg(ra == rb, "%.*s: %d vs %d", (int)len, s, ra, rb);
    if (ra) {
        ck_assert_msg(!strcmp(ea.message, eb.message), "%.*s: %s | %s",
                      (int)len, s, ea.message, eb.message);
    } else {
        ck_assert(na == nb && da == db);
        ck_assert(memcmp(XA, XB, na * da * sizeof *XA) == 0);
        if (taken)
            cJSON_DeleteItemFromObjectCaseSensitive(root, "X");
        char *pa = cJSON_PrintUnformatted(root), *pb = cJSON_PrintUnformatted(b.root);
        ck_assert_msg(!strcmp(pa, pb), "%.*s: %s | %s", (int)len, s, pa, pb);
        free(pa);
        free(pb);
    }
    cJSON_Delete(root);
    api_body_free(&b);
    free(XA);
    free(XB);
}

START_TEST(body_reader_matches_cjson)
{
    static const char *const seeds[] = {
        "{\"X\":[[1,2.5,-3e-2],[4,5,6]],\"output\":\"label\"}",
        " {\"a\":{\"b\":[1,{}]}, \"X\" : [ [ 1e5 , -0 ] , [ 2 , 3 ] ] } ",
        "{\"X\":[[123456789012345678901234567890,1E-400,0.000001]],\"y\":[1]}",
        "{\"X\":[[7]],\"X\":[[8]],\"s\":\"[\\\"x\\\"]\"}",
    };
    static const char alphabet[] = "[]{},:\"0123456789.eE+- \n\\tfnrux";
    uint64_t st = 0x2545F4914F6CDD1DULL;
    char buf[256];
    for (size_t k = 0; k < sizeof seeds / sizeof *seeds; k++) {
        same_both_ways(seeds[k], strlen(seeds[k]));
        for (int it = 0; it < 20000; it++) {
            size_t len = strlen(seeds[k]);
            memcpy(buf, seeds[k], len);
            int edits = 1 + (int)(st % 3);
            for (int m = 0; m < edits && len > 1; m++) {
                st ^= st << 13, st ^= st >> 7, st ^= st << 17;
                size_t at = (size_t)(st >> 8) % len;
                char c = alphabet[(st >> 40) % (sizeof alphabet - 1)];
                switch (st % 3) {
                case 0: buf[at] = c; break;                                  /* replace */
                case 1: memmove(buf + at, buf + at + 1, --len - at); break;  /* delete */
                default:                                                     /* insert */
                    if (len + 1 < sizeof buf) {
                        memmove(buf + at + 1, buf + at, len - at);
                        buf[at] = c;
                        len++;
                    }
                }
            }
            same_both_ways(buf, len); /* not NUL-terminated: len counts */
        }
    }
}
END_TEST

START_TEST(optional_fields)
{
    cJSON *o = cJSON_Parse("{\"a\":2.5,\"i\":7,\"f\":7.5,\"b\":true,\"s\":\"x\"}");
    api_error e;
    double a = 1;
    long i = 0;
    int b = 0;
    ck_assert_int_eq(api_opt_number(o, "params", "a", &a, &e), 0);
    ck_assert_double_eq(a, 2.5);
    ck_assert_int_eq(api_opt_number(o, "params", "missing", &a, &e), 0);
    ck_assert_double_eq(a, 2.5);
    ck_assert_int_eq(api_opt_number(o, "params", "s", &a, &e), -1);
    ck_assert_str_eq(e.message, "params.s must be a number, not a string");
    ck_assert_int_eq(api_opt_integer(o, "params", "i", 1, 10, &i, &e), 0);
    ck_assert_int_eq(i, 7);
    ck_assert_int_eq(api_opt_integer(o, "params", "f", 1, 10, &i, &e), -1);
    ck_assert_str_eq(e.message, "params.f must be a whole number from 1 to 10");
    ck_assert_int_eq(api_opt_integer(o, "params", "i", 8, 10, &i, &e), -1);
    ck_assert_int_eq(api_opt_bool(o, "", "b", &b, &e), 0);
    ck_assert_int_eq(b, 1);
    ck_assert_int_eq(api_opt_bool(o, "", "a", &b, &e), -1);
    ck_assert_str_eq(e.message, "a must be true or false, not a number");
    static const char *const keys[] = {"a", "i", "f", "b", NULL};
    ck_assert_int_eq(api_check_keys(o, "params", keys, &e), -1);
    ck_assert_str_eq(e.message, "params.s is not a known field; expected one "
                                "of: a, i, f, b");
    cJSON_Delete(o);
}
END_TEST

START_TEST(error_json)
{
    api_error e;
    api_raise(&e, API_NOT_FOUND, "model \"%s\" does not exist", "q\"x");
    char *s = api_error_json(&e);
    ck_assert_str_eq(s, "{\"error\":{\"code\":\"not_found\",\"message\":"
                        "\"model \\\"q\\\"x\\\" does not exist\"}}");
    free(s);
    /* whatever bytes a message quotes, the answer is UTF-8 */
    api_raise(&e, API_NOT_FOUND, "no route for G\xffT /\xc3");
    s = api_error_json(&e);
    ck_assert_str_eq(s, "{\"error\":{\"code\":\"not_found\",\"message\":"
                        "\"no route for G\\ufffdT /\\ufffd\"}}");
    free(s);
    km_error k = {KM_ENOTPD, "not positive definite"};
    api_fail_km(&e, &k);
    ck_assert_int_eq(e.http, 422);
    ck_assert_str_eq(e.code, "unprocessable");
    k.status = KM_ECONFLICT;
    api_fail_km(&e, &k);
    ck_assert_int_eq(e.http, 409);
    k.status = KM_EINTERNAL;
    api_fail_km(&e, &k);
    ck_assert_int_eq(e.http, 500);
    ck_assert_str_eq(e.code, "internal");
}
END_TEST

/* Strings a parser must not see: an escaped NUL (cJSON would cut the
 * string there), a raw control character, bytes that are not UTF-8.
 * Each is refused naming its field, by api_parse_object and
 * api_parse_body alike; the message itself is then UTF-8. */
START_TEST(strings_checked)
{
    static const struct {
        const char *body, *code, *message;
    } cases[] = {
        {"{\"y\":[\"a\\u0000x\",\"b\"]}", "invalid_argument",
         "y[0] contains \\u0000 (NUL), which no string in a request may hold"},
        {"{\"X\":[[1]],\"y\":[\"a\",\"b\",\"c\\u0000\"]}", "invalid_argument",
         "y[2] contains"},
        {"{\"kernel\":{\"type\":\"rbf\\u0000\"}}", "invalid_argument",
         "kernel.type contains"},
        {"{\"params\":{\"class_weight\":{\"a\\u0000\":1}}}", "invalid_argument",
         "a member name in params.class_weight contains"},
        {"{\"out\\u0000put\":1}", "invalid_argument",
         "a member name of the body contains"},
        {"{\"a\":[{\"b\":[1,{\"c\":\"\xff\"}]}]}", "invalid_json",
         "a[0].b[1].c is not valid UTF-8 (byte 20)"},
        {"{\"X\\\"\xc3\":1}", "invalid_json", "a member name of the body is not "
         "valid UTF-8"},
        {"{\"a\":\"x\ty\"}", "invalid_json", "a has a control character"},
    };
    static const char *const keys[] = {"X", NULL};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        cJSON *root = NULL;
        api_error e;
        api_body b;
        const char *s = cases[i].body;
        ck_assert_int_eq(api_parse_object(s, strlen(s), &root, &e), -1);
        ck_assert_int_eq(e.http, 400);
        ck_assert_str_eq(e.code, cases[i].code);
        ck_assert_msg(strstr(e.message, cases[i].message), "case %zu: %s", i,
                      e.message);
        ck_assert_int_eq(api_parse_body(s, strlen(s), keys, &b, &e), -1);
        ck_assert_msg(strstr(e.message, cases[i].message), "case %zu: %s", i,
                      e.message);
        api_body_free(&b);
    }
    /* Escapes that are not NUL, and a backslash before u0000, are fine. */
    static const char *const fine[] = {
        "{\"a\":\"\\u0001\\u00e9\\\\u0000\"}", "{\"caf\xc3\xa9\":\"\xe2\x82\xac\"}",
        "{\"a\":\"\\ud83d\\ude00\"}"};
    for (size_t i = 0; i < sizeof fine / sizeof *fine; i++) {
        cJSON *root = NULL;
        api_error e;
        ck_assert_msg(api_parse_object(fine[i], strlen(fine[i]), &root, &e) ==
                      0, "fine %zu: %s", i, e.message);
        cJSON_Delete(root);
    }
}
END_TEST

static Suite *json_suite(void)
{
    Suite *s = suite_create("api_json");
    TCase *tc = tcase_create("api");
    /* 110,000 numbers against strtod: seconds under a sanitizer */
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, object_or_not);
    tcase_add_test(tc, nesting_bound);
    tcase_add_test(tc, matrices);
    tcase_add_test(tc, numbers_read_as_strtod);
    tcase_add_test(tc, long_numbers_read_as_strtod);
    tcase_add_test(tc, scan_at_every_alignment);
    tcase_add_test(tc, body_direct_or_not);
    tcase_add_test(tc, body_reader_matches_cjson);
    tcase_add_test(tc, optional_fields);
    tcase_add_test(tc, error_json);
    tcase_add_test(tc, strings_checked);
    suite_add_tcase(s, tc);
    return s;
}

KM_TEST_MAIN(json_suite)
