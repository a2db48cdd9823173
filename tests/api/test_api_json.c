/*
 * test_api_json.c - request parsing: JSON vs not JSON vs not an object,
 * the nesting bound, matrices into one buffer with messages naming the
 * entry, and typed optional fields.
 */
#include "../check_main.h"
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

static int matrix(const char *json, size_t expect, double **X, size_t *n,
                  size_t *d, api_error *e)
{
    cJSON *root = cJSON_Parse(json);
    int rc = api_get_matrix(cJSON_GetObjectItem(root, "X"), "X", expect, X, n,
                            d, e);
    cJSON_Delete(root);
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
    api_fail(&e, 404, "not_found", "model \"%s\" does not exist", "q\"x");
    char *s = api_error_json(&e);
    ck_assert_str_eq(s, "{\"error\":{\"code\":\"not_found\",\"message\":"
                        "\"model \\\"q\\\"x\\\" does not exist\"}}");
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

static Suite *json_suite(void)
{
    Suite *s = suite_create("api_json");
    TCase *tc = tcase_create("api");
    tcase_add_test(tc, object_or_not);
    tcase_add_test(tc, nesting_bound);
    tcase_add_test(tc, matrices);
    tcase_add_test(tc, optional_fields);
    tcase_add_test(tc, error_json);
    suite_add_tcase(s, tc);
    return s;
}

KM_TEST_MAIN(json_suite)
