/*
 * test_api_fit.c - fit requests: label sorting (numbers by value, strings
 * by byte order) and mapping, class_weight by label, per-algorithm
 * parameters and their errors, memory estimates; a search's threads.
 */
#include <math.h>
#include <pthread.h>
#include <time.h>

#include "../check_main.h"
#include "api_fit.h"

static int parse(const char *json, api_fit_request *req, api_error *e)
{
    api_body b;
    ck_assert_int_eq(api_parse_body(json, strlen(json), api_fit_matrix_keys,
                                    &b, e), 0);
    int rc = api_fit_parse(&b, req, e);
    api_body_free(&b);
    return rc;
}

START_TEST(numeric_labels_sorted_by_value)
{
    api_fit_request req;
    api_error e;
    ck_assert_int_eq(parse("{\"algorithm\":\"svc\",\"kernel\":{\"type\":\"rbf\"},"
                           "\"X\":[[1],[2],[3],[4]],\"y\":[10,9,-1.5,10]}",
                           &req, &e), 0);
    ck_assert_uint_eq(req.n_labels, 3);
    ck_assert_int_eq(req.labels_numeric, 1);
    ck_assert_str_eq(req.labels[0], "-1.5");
    ck_assert_str_eq(req.labels[1], "9");
    ck_assert_str_eq(req.labels[2], "10"); /* not "10" < "9" as text */
    ck_assert_int_eq(req.classes[0], 2);
    ck_assert_int_eq(req.classes[1], 1);
    ck_assert_int_eq(req.classes[2], 0);
    ck_assert_int_eq(req.classes[3], 2);
    api_fit_request_cleanup(&req);
}
END_TEST

START_TEST(string_labels_by_byte_order)
{
    api_fit_request req;
    api_error e;
    ck_assert_int_eq(parse("{\"algorithm\":\"svc\",\"kernel\":{\"type\":\"rbf\"},"
                           "\"params\":{\"class_weight\":{\"a\":3,\"B\":0.5}},"
                           "\"X\":[[1],[2],[3]],\"y\":[\"a\",\"B\",\"A\"]}",
                           &req, &e), 0);
    ck_assert_int_eq(req.labels_numeric, 0);
    ck_assert_str_eq(req.labels[0], "A");
    ck_assert_str_eq(req.labels[1], "B");
    ck_assert_str_eq(req.labels[2], "a");
    ck_assert_double_eq(req.class_weight[0], 1.0);
    ck_assert_double_eq(req.class_weight[1], 0.5);
    ck_assert_double_eq(req.class_weight[2], 3.0);
    ck_assert_ptr_eq(req.svm.class_weight, req.class_weight);
    ck_assert_uint_gt(api_fit_bytes(&req), 3 * 3 * sizeof(double));
    api_fit_request_cleanup(&req);
}
END_TEST

START_TEST(numeric_class_weight_keys)
{
    api_fit_request req;
    api_error e;
    /* "1.0" names the label 1 */
    ck_assert_int_eq(parse("{\"algorithm\":\"svc\",\"kernel\":{\"type\":\"rbf\"},"
                           "\"params\":{\"class_weight\":{\"1.0\":4}},"
                           "\"X\":[[1],[2]],\"y\":[0,1]}", &req, &e), 0);
    ck_assert_double_eq(req.class_weight[1], 4.0);
    api_fit_request_cleanup(&req);
}
END_TEST

START_TEST(preprocess_member)
{
    api_fit_request req;
    api_error e;
    ck_assert_int_eq(parse("{\"algorithm\":\"krr\",\"kernel\":{\"type\":\"rbf\"},"
                           "\"X\":[[1],[2]],\"y\":[0,1]}", &req, &e), 0);
    ck_assert_int_eq(req.pre.x, KM_SCALE_NONE);
    ck_assert_int_eq(req.pre.center_y, 0);
    size_t plain = api_fit_bytes(&req);
    api_fit_request_cleanup(&req);
    ck_assert_int_eq(parse("{\"algorithm\":\"krr\",\"kernel\":{\"type\":\"rbf\"},"
                           "\"preprocess\":{\"scale\":\"minmax\",\"center_y\":true},"
                           "\"X\":[[1],[2]],\"y\":[0,1]}", &req, &e), 0);
    ck_assert_int_eq(req.pre.x, KM_SCALE_MINMAX);
    ck_assert_int_eq(req.pre.center_y, 1);
    /* the scaled and centered copies count in the admission estimate */
    ck_assert_uint_ge(api_fit_bytes(&req), plain + 4 * sizeof(double));
    km_model *m = NULL;
    ck_assert_int_eq(api_fit_run(&req, NULL, &m, &e), 0);
    ck_assert_int_eq(km_model_preprocess(m).spec.x, KM_SCALE_MINMAX);
    ck_assert_double_eq(km_model_preprocess(m).y_mean[0], 0.5);
    km_model_free(m);
    api_fit_request_cleanup(&req);
}
END_TEST

START_TEST(errors_name_the_field)
{
    static const struct { const char *json, *msg; } bad[] = {
        {"{\"algorithm\":\"svc\",\"kernel\":{\"type\":\"rbf\"},\"X\":[[1],[2]],"
         "\"y\":[1,\"a\"]}",
         "y[1] is a string but y[0] is a number: labels must be all numbers or "
         "all strings"},
        {"{\"algorithm\":\"svc\",\"kernel\":{\"type\":\"rbf\"},\"X\":[[1],[2]],"
         "\"y\":[1,2],\"params\":{\"class_weight\":{\"3\":1}}}",
         "params.class_weight has label \"3\", which is not in y"},
        {"{\"algorithm\":\"svc\",\"kernel\":{\"type\":\"rbf\"},\"X\":[[1],[2]],"
         "\"y\":[1,2],\"params\":{\"class_weight\":{\"2\":-1}}}",
         "params.class_weight[\"2\"] must be a finite number > 0"},
        {"{\"algorithm\":\"svr\",\"kernel\":{\"type\":\"rbf\"},\"X\":[[1],[2]],"
         "\"y\":[1,2],\"params\":{\"epsilon\":-0.1}}", NULL},
        {"{\"algorithm\":\"krr\",\"kernel\":{\"type\":\"rbf\"},\"X\":[[1],[2]],"
         "\"y\":[[1,2],[3]]}", "y[1] has 1 features; y[0] has 2"},
        {"{\"algorithm\":\"kpca\",\"kernel\":{\"type\":\"rbf\"},\"X\":[[1],[2]],"
         "\"params\":{\"n_components\":0}}",
         "params.n_components must be a whole number from 1 to 2147483647"},
        {"{\"algorithm\":\"krr\",\"kernel\":{\"type\":\"rbf\"},\"X\":[[1]],"
         "\"y\":[1],\"extra\":1}",
         "extra is not a known field; expected one of: algorithm, kernel, "
         "params, preprocess, X, y, search, async, distributed, max_length"},
        {"{\"algorithm\":\"krr\",\"kernel\":{\"type\":\"rbf\"},\"X\":[[1]],"
         "\"y\":[1],\"preprocess\":\"standardize\"}",
         "preprocess must be an object, not a string"},
        {"{\"algorithm\":\"krr\",\"kernel\":{\"type\":\"rbf\"},\"X\":[[1]],"
         "\"y\":[1],\"preprocess\":{\"scale\":\"zscore\"}}",
         "preprocess.scale must be one of none, standardize, minmax"},
        {"{\"algorithm\":\"krr\",\"kernel\":{\"type\":\"rbf\"},\"X\":[[1]],"
         "\"y\":[1],\"preprocess\":{\"scale\":1}}",
         "preprocess.scale must be one of none, standardize, minmax"},
        {"{\"algorithm\":\"krr\",\"kernel\":{\"type\":\"rbf\"},\"X\":[[1]],"
         "\"y\":[1],\"preprocess\":{\"center_y\":1}}",
         "preprocess.center_y must be true or false, not a number"},
        {"{\"algorithm\":\"krr\",\"kernel\":{\"type\":\"rbf\"},\"X\":[[1]],"
         "\"y\":[1],\"preprocess\":{\"x_shift\":[0]}}",
         "preprocess.x_shift is not a known field; expected one of: scale, "
         "center_y"},
        {"{\"algorithm\":\"svc\",\"kernel\":{\"type\":\"rbf\"},\"X\":[[1],[2]],"
         "\"y\":[1,2],\"preprocess\":{\"center_y\":true}}",
         "preprocess.center_y applies to algorithms that predict values "
         "(krr, svr, gpr), not svc"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        api_fit_request req;
        api_error e;
        ck_assert_msg(parse(bad[i].json, &req, &e) == -1, "case %zu", i);
        ck_assert_int_eq(e.http, 400);
        if (bad[i].msg)
            ck_assert_str_eq(e.message, bad[i].msg);
        else
            ck_assert_ptr_nonnull(strstr(e.message, "params.epsilon"));
        api_fit_request_cleanup(&req);
    }
}
END_TEST

START_TEST(single_class_is_unprocessable)
{
    api_fit_request req;
    api_error e;
    ck_assert_int_eq(parse("{\"algorithm\":\"svc\",\"kernel\":{\"type\":\"rbf\"},"
                           "\"X\":[[1],[2]],\"y\":[\"x\",\"x\"]}", &req, &e), -1);
    ck_assert_int_eq(e.http, 422);
    ck_assert_str_eq(e.code, "unprocessable");
    api_fit_request_cleanup(&req);
    /* kpca: more components than rows is 422 too (API.md) */
    ck_assert_int_eq(parse("{\"algorithm\":\"kpca\",\"kernel\":{\"type\":"
                           "\"rbf\"},\"X\":[[1],[2]],\"params\":"
                           "{\"n_components\":3}}", &req, &e), -1);
    ck_assert_int_eq(e.http, 422);
    ck_assert_str_eq(e.code, "unprocessable");
    ck_assert_str_eq(e.message, "params.n_components (3) is above n_samples "
                                "(2): X has too few rows for that many "
                                "components");
    api_fit_request_cleanup(&req);
    /* kkmeans: more clusters than rows likewise; 0 clusters, a bad tol
     * and a y are 400 naming the field */
    ck_assert_int_eq(parse("{\"algorithm\":\"kkmeans\",\"kernel\":{\"type\":"
                           "\"rbf\"},\"X\":[[1],[2]],\"params\":"
                           "{\"n_clusters\":3}}", &req, &e), -1);
    ck_assert_int_eq(e.http, 422);
    ck_assert_str_eq(e.message, "params.n_clusters (3) is above n_samples "
                                "(2): X has too few rows for that many "
                                "clusters");
    api_fit_request_cleanup(&req);
    static const struct {
        const char *body, *msg;
    } bad[] = {
        {"\"params\":{\"n_clusters\":0}", "params.n_clusters"},
        {"\"params\":{}", "params.n_clusters is required"},
        {"\"params\":{\"n_clusters\":1,\"tol\":-1}", "params.tol"},
        {"\"params\":{\"n_clusters\":1,\"n_init\":1001}", "params.n_init"},
        {"\"params\":{\"n_clusters\":1,\"max_iter\":0}", "params.max_iter"},
        {"\"params\":{\"n_clusters\":1},\"y\":[0,1]", "y does not apply"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char body[256];
        snprintf(body, sizeof body, "{\"algorithm\":\"kkmeans\",\"kernel\":"
                 "{\"type\":\"rbf\"},\"X\":[[1],[2]],%s}", bad[i].body);
        ck_assert_int_eq(parse(body, &req, &e), -1);
        ck_assert_int_eq(e.http, 400);
        ck_assert_msg(strstr(e.message, bad[i].msg), "%s: %s", bad[i].body,
                      e.message);
        api_fit_request_cleanup(&req);
    }
}
END_TEST

START_TEST(krr_run_keeps_outputs)
{
    api_fit_request req;
    api_error e;
    ck_assert_int_eq(parse("{\"algorithm\":\"krr\",\"kernel\":{\"type\":\"linear\"},"
                           "\"params\":{\"alpha\":2},\"X\":[[1],[2],[3]],"
                           "\"y\":[[1,0],[2,0],[3,1]],\"async\":true}",
                           &req, &e), 0);
    ck_assert_uint_eq(req.m, 2);
    ck_assert_int_eq(req.async, 1);
    ck_assert_uint_eq(api_fit_bytes(&req), km_krr_fit_bytes(3, 1, 2, NULL));
    km_model *m = NULL;
    ck_assert_int_eq(api_fit_run(&req, NULL, &m, &e), 0);
    ck_assert_uint_eq(km_model_n_outputs(m), 2);
    km_model_free(m);
    api_fit_request_cleanup(&req);
}
END_TEST

/* The threads of a search: req.threads is what api_fit_bytes counts and
 * the most km_search runs; the control's threads reach core (progress
 * from more than one thread when both are 2); the record is the same. */
typedef struct seen_threads {
    pthread_t ids[4];
    int n, calls;
} seen_threads;

static int note_thread(void *ctx, double f)
{
    (void)f;
    seen_threads *s = ctx;
    pthread_t me = pthread_self();
    int seen = 0;
    for (int i = 0; i < s->n; i++)
        seen |= pthread_equal(s->ids[i], me);
    if (!seen && s->n < 4)
        s->ids[s->n++] = me;
    if (s->n == 1 && ++s->calls <= 20) { /* let the other worker start */
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    return 0;
}

START_TEST(search_threads)
{
    char *body = malloc(1 << 16);
    size_t len = (size_t)sprintf(body, "{\"algorithm\":\"svc\","
                                 "\"kernel\":{\"type\":\"rbf\"},"
                                 "\"search\":{\"params\":{\"C\":[0.5,5,50],"
                                 "\"kernel.gamma\":[0.1,1]},\"cv\":4},"
                                 "\"X\":[");
    for (int i = 0; i < 120; i++)
        len += (size_t)sprintf(body + len, "%s[%g,%g]", i ? "," : "",
                               sin(i * 1.7), cos(i * 0.9));
    len += (size_t)sprintf(body + len, "],\"y\":[");
    for (int i = 0; i < 120; i++)
        len += (size_t)sprintf(body + len, "%s%d", i ? "," : "",
                               sin(i * 1.7) * cos(i * 0.9) > 0.1);
    sprintf(body + len, "]}");
    double mean[2][6];
    size_t bytes[2];
    for (int t = 0; t < 2; t++) {
        api_fit_request req;
        api_error e;
        ck_assert_msg(parse(body, &req, &e) == 0, "%s", e.message);
        ck_assert_int_eq(req.threads, 0);
        req.threads = t + 1;
        bytes[t] = api_fit_bytes(&req);
        seen_threads s = {0};
        km_fit_control ctl = {note_thread, &s, 2};
        km_model *m = NULL;
        ck_assert_msg(api_fit_run(&req, &ctl, &m, &e) == 0, "%s", e.message);
        /* min(req.threads, ctl.threads) */
        ck_assert_int_eq(s.n, t ? 2 : 1);
        const km_search_table *st = km_model_search(m);
        ck_assert_ptr_nonnull(st);
        ck_assert_uint_eq(st->n_points, 6);
        memcpy(mean[t], st->mean, sizeof mean[t]);
        km_model_free(m);
        api_fit_request_cleanup(&req);
    }
    ck_assert_uint_gt(bytes[1], bytes[0]);
    ck_assert(!memcmp(mean[0], mean[1], sizeof mean[0]));
    free(body);
}
END_TEST

static Suite *fit_suite(void)
{
    Suite *s = suite_create("api_fit");
    TCase *tc = tcase_create("api");
    tcase_add_test(tc, numeric_labels_sorted_by_value);
    tcase_add_test(tc, string_labels_by_byte_order);
    tcase_add_test(tc, numeric_class_weight_keys);
    tcase_add_test(tc, errors_name_the_field);
    tcase_add_test(tc, preprocess_member);
    tcase_add_test(tc, single_class_is_unprocessable);
    tcase_add_test(tc, krr_run_keeps_outputs);
    tcase_add_test(tc, search_threads);
    suite_add_tcase(s, tc);
    return s;
}

KM_TEST_MAIN(fit_suite)
