/*
 * test_km_answer.c - core's table of answers (KM_ANSWER_MAP): every row is
 * one KM_OUT_* answer asked one way, names are unique on each side of the
 * API, every answer an algorithm computes is offered to it under some
 * name, and an algorithm has at most one default per route, so that the
 * API (api_predict.c, api_v2.c) and GET /v1 can read every fact from it.
 */
#include "../check_main.h"

static const unsigned all_flags =
    KM_OUT_VALUES | KM_OUT_LABELS | KM_OUT_SCORES | KM_OUT_PROBABILITIES |
    KM_OUT_PROJECTIONS | KM_OUT_INVERSE | KM_OUT_VARIANCES |
    KM_OUT_COVARIANCE | KM_OUT_CLUSTERS;

START_TEST(rows_are_well_formed)
{
    ck_assert_uint_eq(km_answer_count(), KM_ANSWER_COUNT);
    ck_assert_ptr_null(km_answer_at(km_answer_count()));
    for (size_t i = 0; i < km_answer_count(); i++) {
        const km_answer *r = km_answer_at(i);
        ck_assert_ptr_nonnull(r);
        ck_assert_ptr_nonnull(r->name);
        /* one KM_OUT_* flag, computed by core */
        ck_assert_msg(r->flag && !(r->flag & (r->flag - 1)) &&
                          (r->flag & all_flags),
                      "%s: flag 0x%x", r->name, r->flag);
        ck_assert_msg(!(r->with & r->without), "%s: with and without",
                      r->name);
        ck_assert_msg(!strcmp(r->route, "predict") ||
                          !strcmp(r->route, "project"),
                      "%s: route %s", r->name, r->route);
        /* asked one way: an output of predict's, or inverse of project's,
         * or the route's default */
        ck_assert_msg(!(r->v1_output && r->v1_inverse), "%s", r->name);
        ck_assert_msg(!r->v1_output || !strcmp(r->route, "predict"), "%s",
                      r->name);
        ck_assert_msg(!r->v1_inverse || !strcmp(r->route, "project"), "%s",
                      r->name);
        ck_assert_msg(!r->v1_output || !strcmp(r->v1_output, r->name),
                      "%s: its name is its output's", r->name);
        ck_assert_msg(!r->v2_datatype || !strcmp(r->v2_datatype, "FP64") ||
                          !strcmp(r->v2_datatype, "INT64"),
                      "%s: datatype %s", r->name, r->v2_datatype);
        ck_assert_msg(!r->needs || !strncmp(r->needs, "params.", 7), "%s",
                      r->name);
        for (size_t j = 0; j < i; j++) {
            const km_answer *q = km_answer_at(j);
            ck_assert_str_ne(q->name, r->name);
            ck_assert_msg(!q->v2_name || !r->v2_name ||
                              strcmp(q->v2_name, r->v2_name),
                          "v2 name %s twice", r->v2_name);
        }
    }
}
END_TEST

START_TEST(every_algorithm_is_offered_what_it_computes)
{
    for (int a = 0; a < KM_ALGO_COUNT; a++) {
        unsigned outs = km_algorithm_outputs((km_algorithm)a), offered = 0;
        int defaults[2] = {0, 0}; /* predict, project */
        for (size_t i = 0; i < km_answer_count(); i++) {
            const km_answer *r = km_answer_at(i);
            if (!km_answer_offered(r, (km_algorithm)a))
                continue;
            offered |= r->flag;
            if (!r->v1_output && !r->v1_inverse)
                defaults[!strcmp(r->route, "project")]++;
        }
        ck_assert_msg(offered == outs, "%s computes 0x%x, offered 0x%x",
                      km_algorithm_name((km_algorithm)a), outs, offered);
        ck_assert_msg(defaults[0] <= 1 && defaults[1] <= 1,
                      "%s: one default a route",
                      km_algorithm_name((km_algorithm)a));
    }
    ck_assert(!km_answer_offered(NULL, KM_ALGO_KRR));
    ck_assert(!km_answer_offered(km_answer_at(0), KM_ALGO_COUNT));
}
END_TEST

static Suite *answer_suite(void)
{
    Suite *s = suite_create("answer");
    TCase *tc = tcase_create("table");
    tcase_add_test(tc, rows_are_well_formed);
    tcase_add_test(tc, every_algorithm_is_offered_what_it_computes);
    suite_add_tcase(s, tc);
    return s;
}

KM_TEST_MAIN(answer_suite)
