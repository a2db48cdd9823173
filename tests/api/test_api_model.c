/*
 * test_api_model.c - names, kernels from JSON (with sigma, defaults,
 * composites, and their errors), kernels and metadata to JSON.
 */
#include "../check_main.h"
#include "api_model.h"

START_TEST(names)
{
    api_error e;
    const char *good[] = {"a", "A9", "house-prices_v2.1", "0x",
                          "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"};
    const char *bad[] = {"", ".", "..", "../x", "-x", "_x", "a b", "a/b", "é",
                         "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"};
    for (size_t i = 0; i < sizeof good / sizeof *good; i++)
        ck_assert_msg(api_check_name(good[i], &e) == 0, "%s", good[i]);
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        ck_assert_msg(api_check_name(bad[i], &e) == -1, "%s", bad[i]);
        ck_assert_int_eq(e.http, 400);
    }
}
END_TEST

static int kernel(const char *json, km_kernel *k, api_error *e)
{
    cJSON *o = cJSON_Parse(json);
    int rc = api_parse_kernel(o, "kernel", k, 0, e);
    cJSON_Delete(o);
    return rc;
}

START_TEST(kernels_in)
{
    km_kernel k;
    api_error e;
    ck_assert_int_eq(kernel("{\"type\":\"rbf\",\"sigma\":2}", &k, &e), 0);
    ck_assert_double_eq(k.gamma, 0.125);
    km_kernel_cleanup(&k);
    ck_assert_int_eq(kernel("{\"type\":\"polynomial\"}", &k, &e), 0);
    ck_assert_int_eq(k.degree, 3);
    ck_assert_double_eq(k.coef0, 1);
    ck_assert_double_eq(k.gamma, 0); /* resolved at fit */
    km_kernel_cleanup(&k);
    ck_assert_int_eq(kernel("{\"type\":\"sum\",\"kernels\":[{\"type\":\"rbf\"},"
                            "{\"type\":\"product\",\"kernels\":[{\"type\":"
                            "\"linear\"},{\"type\":\"laplacian\",\"gamma\":2}]}],"
                            "\"weights\":[0.5,2]}", &k, &e), 0);
    ck_assert_int_eq(k.n_parts, 2);
    ck_assert_double_eq(k.weights[1], 2);
    ck_assert_double_eq(k.parts[1].parts[1].gamma, 2);
    km_kernel_cleanup(&k);
    /* a bare name is the kernel with its defaults, as {"type": name},
     * also as a part */
    ck_assert_int_eq(kernel("\"polynomial\"", &k, &e), 0);
    ck_assert_int_eq(k.type, KM_KERNEL_POLYNOMIAL);
    ck_assert_int_eq(k.degree, 3);
    ck_assert_double_eq(k.coef0, 1);
    km_kernel_cleanup(&k);
    ck_assert_int_eq(kernel("{\"type\":\"sum\",\"kernels\":[\"rbf\","
                            "{\"type\":\"linear\"}]}", &k, &e), 0);
    ck_assert_int_eq(k.n_parts, 2);
    ck_assert_int_eq(k.parts[0].type, KM_KERNEL_RBF);
    km_kernel_cleanup(&k);

    struct { const char *json, *msg; } bad[] = {
        {"[]", "kernel must be an object or a kernel's name, not an array"},
        {"\"cosine\"", "kernel \"cosine\" is not a known kernel; expected "
               "one of linear, polynomial, rbf, laplacian, sigmoid, sum, "
               "product, laplacian_l2, exponential, normalized, spectrum, "
               "boundrange, expdecay, subsequence, precomputed"},
        {"\"sum\"", "kernel.kernels must list 1 to 16 kernels"},
        {"{}", "kernel.type is required: one of linear, polynomial, rbf, "
               "laplacian, sigmoid, sum, product, laplacian_l2, exponential, "
               "normalized, spectrum, boundrange, expdecay, subsequence, "
               "precomputed"},
        {"{\"type\":\"cosine\"}", "kernel.type \"cosine\" is not a known "
               "kernel; expected one of linear, polynomial, rbf, laplacian, "
               "sigmoid, sum, product, laplacian_l2, exponential, normalized, "
               "spectrum, boundrange, expdecay, subsequence, precomputed"},
        {"{\"type\":\"rbf\",\"degree\":2}", "kernel.degree does not apply to a "
               "rbf kernel"},
        {"{\"type\":\"linear\",\"gamma\":2}", "kernel.gamma does not apply to a "
               "linear kernel"},
        {"{\"type\":\"rbf\",\"sigma\":0}", "kernel.sigma must be a finite "
               "number > 0"},
        {"{\"type\":\"rbf\",\"gama\":1}", "kernel.gama is not a known field; "
               "expected one of: type, gamma, sigma, degree, coef0, kernels, "
               "weights, length, lambda, columns"},
        {"{\"type\":\"sum\",\"kernels\":[]}", "kernel.kernels must be an array "
               "of 1 to 16 kernels"},
        {"{\"type\":\"sum\",\"kernels\":[{\"type\":\"rbf\"}],\"weights\":[1,2]}",
               "kernel.weights must be an array of 1 numbers, one per kernel"},
        {"{\"type\":\"product\",\"kernels\":[{\"type\":\"rbf\"}],\"weights\":[1]}",
               "kernel.weights does not apply to a product kernel"},
        {"{\"type\":\"sum\",\"kernels\":[{\"type\":\"sum\",\"kernels\":[{\"type\":"
         "\"sum\",\"kernels\":[{\"type\":\"sum\",\"kernels\":[{\"type\":\"rbf\"}]}]}]}]}",
               "kernel.kernels[0].kernels[0].kernels[0]: sums and products nest "
               "at most 4 deep"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        ck_assert_int_eq(kernel(bad[i].json, &k, &e), -1);
        ck_assert_str_eq(e.message, bad[i].msg);
        km_kernel_cleanup(&k);
    }
}
END_TEST

START_TEST(kernel_round_trip)
{
    km_kernel k, back;
    api_error e;
    ck_assert_int_eq(kernel("{\"type\":\"sum\",\"kernels\":[{\"type\":\"rbf\","
                            "\"gamma\":0.5},{\"type\":\"polynomial\",\"degree\":2,"
                            "\"gamma\":1,\"coef0\":0}],\"weights\":[1,3]}",
                            &k, &e), 0);
    cJSON *j = api_kernel_json(&k);
    char *s = cJSON_PrintUnformatted(j);
    ck_assert_int_eq(kernel(s, &back, &e), 0);
    ck_assert_int_eq(back.type, KM_KERNEL_SUM);
    ck_assert_double_eq(back.parts[0].gamma, 0.5);
    ck_assert_int_eq(back.parts[1].degree, 2);
    ck_assert_double_eq(back.parts[1].coef0, 0);
    ck_assert_double_eq(back.weights[1], 3);
    free(s);
    cJSON_Delete(j);
    km_kernel_cleanup(&k);
    km_kernel_cleanup(&back);
}
END_TEST

START_TEST(metadata)
{
    double X[4] = {0, 1, 2, 3}, y[2] = {1, 2};
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_RBF); /* gamma resolves to 1/2 */
    km_krr_params p = {.alpha = 2.0};
    km_model *m;
    ck_assert_int_eq(km_krr_fit(&k, &p, X, 2, 2, y, 1, NULL, &m, NULL), KM_OK);
    km_model_set_identity(m, "m1", 3, 1700000000123LL);
    cJSON *o = api_model_json(m);
    ck_assert_str_eq(cJSON_GetObjectItem(o, "name")->valuestring, "m1");
    ck_assert_double_eq(cJSON_GetObjectItem(o, "version")->valuedouble, 3);
    ck_assert_str_eq(cJSON_GetObjectItem(o, "created_at")->valuestring,
                     "2023-11-14T22:13:20.123Z");
    ck_assert_double_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "kernel"),
                                            "gamma")->valuedouble, 0.5);
    ck_assert_double_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "params"),
                                            "alpha")->valuedouble, 2);
    char *text = cJSON_PrintUnformatted(o); /* numbers are exact text */
    cJSON *back = cJSON_Parse(text);
    ck_assert(cJSON_IsNumber(cJSON_GetObjectItem(
        cJSON_GetObjectItem(back, "training"), "seconds")));
    ck_assert_double_eq(cJSON_GetObjectItem(o, "n_samples")->valuedouble, 2);
    cJSON_Delete(back);
    free(text);
    cJSON_Delete(o);
    km_model_free(m);
}
END_TEST

/* Metadata numbers are written exactly: cJSON's own printer rounds 2^53
 * to 9.00719925474099e+15 and 0.1 + 0.2 to 0.3. */
START_TEST(metadata_exact)
{
    double X[4] = {0, 1, 2, 3}, y[2] = {1, 2};
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_RBF);
    k.gamma = 0.1 + 0.2;
    km_krr_params p = {.alpha = 2.0};
    km_model *m;
    ck_assert_int_eq(km_krr_fit(&k, &p, X, 2, 2, y, 1, NULL, &m, NULL), KM_OK);
    km_model_set_identity(m, "m1", (uint64_t)1 << 53, 1700000000123LL);
    cJSON *o = api_model_json(m);
    char *text = cJSON_PrintUnformatted(o);
    ck_assert_msg(strstr(text, "\"version\":9007199254740992,"), "%s", text);
    ck_assert_msg(strstr(text, "\"gamma\":0.30000000000000004}"), "%s", text);
    free(text);
    cJSON_Delete(o);
    km_model_free(m);
}
END_TEST

static Suite *model_suite(void)
{
    Suite *s = suite_create("api_model");
    TCase *tc = tcase_create("api");
    tcase_add_test(tc, names);
    tcase_add_test(tc, kernels_in);
    tcase_add_test(tc, kernel_round_trip);
    tcase_add_test(tc, metadata);
    tcase_add_test(tc, metadata_exact);
    suite_add_tcase(s, tc);
    return s;
}

KM_TEST_MAIN(model_suite)
