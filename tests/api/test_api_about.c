/*
 * test_api_about.c - GET /v1's answer (api_about) against the tables it
 * is derived from: it is the same text on every call and valid JSON; its
 * name lists are core's; every algorithm lists exactly its params
 * schema's rows (those a request may give), in table order, with their
 * defaults; every kernel type lists exactly the rows it takes; every
 * output is a row of core's answer table, and each algorithm's outputs are
 * those the table offers it. What the facts mean over HTTP (a fit takes
 * what is listed and refuses the rest) is tests/integration/about.py's.
 */
#include "../check_main.h"
#include "api_about.h"
#include "api_schema.h"

static cJSON *about(void)
{
    api_text t = {0};
    api_error e;
    ck_assert_int_eq(api_about(&t, &e), 0);
    ck_assert(!t.failed);
    cJSON *o = cJSON_Parse(t.buf);
    ck_assert_ptr_nonnull(o);
    free(t.buf);
    return o;
}

static cJSON *member(const cJSON *o, const char *key)
{
    cJSON *m = cJSON_GetObjectItemCaseSensitive(o, key);
    ck_assert_msg(m != NULL, "no member %s", key);
    return m;
}

START_TEST(same_text_every_call)
{
    api_text a = {0}, b = {0};
    api_error e;
    ck_assert_int_eq(api_about(&a, &e), 0);
    ck_assert_int_eq(api_about(&b, &e), 0);
    ck_assert_str_eq(a.buf, b.buf);
    free(a.buf);
    free(b.buf);
}
END_TEST

START_TEST(names_are_cores)
{
    cJSON *o = about();
    ck_assert_str_eq(member(o, "name")->valuestring, "kmserve");
    ck_assert_str_eq(member(o, "version")->valuestring, KM_VERSION);
    cJSON *caps = member(o, "capabilities");
    cJSON *names = member(o, "algorithms"), *algos = member(caps, "algorithms");
    ck_assert_int_eq(cJSON_GetArraySize(names), KM_ALGO_COUNT);
    ck_assert_int_eq(cJSON_GetArraySize(algos), KM_ALGO_COUNT);
    for (int a = 0; a < KM_ALGO_COUNT; a++) {
        const char *name = km_algorithm_name((km_algorithm)a);
        ck_assert_str_eq(cJSON_GetArrayItem(names, a)->valuestring, name);
        ck_assert_str_eq(member(cJSON_GetArrayItem(algos, a), "name")
                             ->valuestring, name);
    }
    names = member(o, "kernels");
    cJSON *kernels = member(caps, "kernels");
    ck_assert_int_eq(cJSON_GetArraySize(names), KM_KERNEL_TYPE_COUNT);
    ck_assert_int_eq(cJSON_GetArraySize(kernels), KM_KERNEL_TYPE_COUNT);
    for (int t = 0; t < KM_KERNEL_TYPE_COUNT; t++) {
        const char *name = km_kernel_type_name((km_kernel_type)t);
        ck_assert_str_eq(cJSON_GetArrayItem(names, t)->valuestring, name);
        ck_assert_str_eq(member(cJSON_GetArrayItem(kernels, t), "name")
                             ->valuestring, name);
    }
    cJSON_Delete(o);
}
END_TEST

START_TEST(params_are_the_schemas_rows)
{
    cJSON *o = about();
    cJSON *algos = member(member(o, "capabilities"), "algorithms");
    for (int a = 0; a < KM_ALGO_COUNT; a++) {
        const km_param_set *s = km_algorithm_params((km_algorithm)a);
        _Alignas(max_align_t) unsigned char defaults[256];
        ck_assert_uint_le(s->size, sizeof defaults);
        s->defaults(defaults);
        cJSON *p = member(cJSON_GetArrayItem(algos, a), "params")->child;
        for (const km_param *r = s->rows; r->key; r++) {
            if (r->type == KM_PARAM_READ_ONLY)
                continue;
            ck_assert_msg(p != NULL, "%s: no param %s",
                          km_algorithm_name((km_algorithm)a), r->key);
            ck_assert_str_eq(member(p, "name")->valuestring, r->key);
            ck_assert_str_eq(member(p, "type")->valuestring,
                             api_param_type_json(r->type));
            /* as text: api_json_number's numbers are raw JSON */
            cJSON *want = api_schema_default_json(r, defaults);
            char *w = want ? cJSON_PrintUnformatted(want) : NULL;
            char *g = cJSON_PrintUnformatted(member(p, "default"));
            ck_assert_str_eq(g, w ? w : "null");
            free(w);
            free(g);
            cJSON_Delete(want);
            p = p->next;
        }
        ck_assert_ptr_null(p);
    }
    cJSON_Delete(o);
}
END_TEST

START_TEST(kernel_params_are_the_rows_each_takes)
{
    cJSON *o = about();
    cJSON *kernels = member(member(o, "capabilities"), "kernels");
    for (int t = 0; t < KM_KERNEL_TYPE_COUNT; t++) {
        cJSON *p = member(cJSON_GetArrayItem(kernels, t), "params")->child;
        for (const char *const *k = api_schema_kernel_keys((km_kernel_type)t);
             *k; k++, p = p->next) {
            ck_assert_ptr_nonnull(p);
            ck_assert_str_eq(member(p, "name")->valuestring, *k);
        }
        ck_assert_ptr_null(p);
    }
    cJSON_Delete(o);
}
END_TEST

START_TEST(outputs_are_the_answer_table)
{
    cJSON *o = about();
    cJSON *caps = member(o, "capabilities");
    cJSON *outputs = member(caps, "outputs"), *algos = member(caps, "algorithms");
    ck_assert_int_eq(cJSON_GetArraySize(outputs), (int)km_answer_count());
    for (size_t i = 0; i < km_answer_count(); i++)
        ck_assert_str_eq(member(cJSON_GetArrayItem(outputs, (int)i), "name")
                             ->valuestring, km_answer_at(i)->name);
    for (int a = 0; a < KM_ALGO_COUNT; a++) {
        cJSON *got = member(cJSON_GetArrayItem(algos, a), "outputs")->child;
        for (size_t i = 0; i < km_answer_count(); i++) {
            if (!km_answer_offered(km_answer_at(i), (km_algorithm)a))
                continue;
            ck_assert_ptr_nonnull(got);
            ck_assert_str_eq(got->valuestring, km_answer_at(i)->name);
            got = got->next;
        }
        ck_assert_ptr_null(got);
    }
    cJSON_Delete(o);
}
END_TEST

static Suite *about_suite(void)
{
    Suite *s = suite_create("api_about");
    TCase *tc = tcase_create("api");
    tcase_add_test(tc, same_text_every_call);
    tcase_add_test(tc, names_are_cores);
    tcase_add_test(tc, params_are_the_schemas_rows);
    tcase_add_test(tc, kernel_params_are_the_rows_each_takes);
    tcase_add_test(tc, outputs_are_the_answer_table);
    suite_add_tcase(s, tc);
    return s;
}

KM_TEST_MAIN(about_suite)
