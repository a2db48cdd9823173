/*
 * test_km_model.c - the model object and its file format: identity and
 * figures survive a round trip (buffer and FILE*); every truncation and
 * a bit flip anywhere are rejected as KM_ECORRUPT; an unknown format
 * version is KM_EFORMAT; statuses have names and messages.
 */
#include "../check_main.h"
#include "km.h"

static km_model *small_model(void)
{
    double X[10] = {0, 1, 1, 0, 2, 2, -1, 3, 0.5, 0.5};
    double Y[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    km_kernel k;
    km_kernel *p = malloc(sizeof *p);
    km_kernel_init(p, KM_KERNEL_RBF);
    p->gamma = 0.7;
    km_kernel_init(&k, KM_KERNEL_SUM);
    km_kernel_set_parts(&k, p, NULL, 1);
    km_krr_params prm = {0.25};
    km_model *m = NULL;
    ck_assert_int_eq(km_krr_fit(&k, &prm, X, 5, 2, Y, 2, NULL, &m, NULL), KM_OK);
    km_model_set_identity(m, "house-prices_v2", 7, 1763078400123LL);
    const char *labels[3] = {"-1.5", "2", "10"};
    ck_assert_int_eq(km_model_set_labels(m, labels, 3, 1, NULL), KM_OK);
    km_kernel_cleanup(&k);
    return m;
}

START_TEST(round_trip)
{
    km_model *m = small_model();
    unsigned char *buf;
    size_t len;
    ck_assert_int_eq(km_model_save_buffer(m, &buf, &len, NULL), KM_OK);
    km_model *b;
    km_error err;
    ck_assert_msg(km_model_load_buffer(buf, len, &b, &err) == KM_OK, "%s",
                  err.message);
    ck_assert_str_eq(km_model_name(b), "house-prices_v2");
    ck_assert_uint_eq(km_model_version(b), 7);
    ck_assert_int_eq(km_model_created_at_ms(b), 1763078400123LL);
    ck_assert_int_eq(km_model_algorithm(b), KM_ALGO_KRR);
    ck_assert_uint_eq(km_model_n_features(b), 2);
    ck_assert_uint_eq(km_model_n_samples(b), 5);
    ck_assert_uint_eq(km_model_n_outputs(b), 2);
    const km_kernel *k = km_model_kernel(b);
    ck_assert_int_eq(k->type, KM_KERNEL_SUM);
    ck_assert_int_eq(k->n_parts, 1);
    ck_assert_double_eq(k->parts[0].gamma, 0.7);
    ck_assert_double_eq(km_info_find(km_model_params(b), "alpha")->values[0], 0.25);
    ck_assert_double_eq(km_info_find(km_model_training(b), "seconds")->values[0],
                        km_info_find(km_model_training(m), "seconds")->values[0]);
    ck_assert_mem_eq(km_krr_dual_coef(b), km_krr_dual_coef(m), 10 * sizeof(double));
    /* The payload's X (5 x 2) and coefficients (5 x 2) are counted. */
    ck_assert_uint_ge(km_model_bytes(b), 20 * sizeof(double) + 100);
    ck_assert_uint_eq(km_model_bytes(b), km_model_bytes(m));
    ck_assert_uint_eq(km_model_n_labels(b), 3);
    ck_assert_int_eq(km_model_labels_numeric(b), 1);
    ck_assert_str_eq(km_model_label(b, 2), "10");
    ck_assert_ptr_null(km_model_label(b, 3));

    /* Saving the loaded model gives the same bytes. */
    unsigned char *buf2;
    size_t len2;
    ck_assert_int_eq(km_model_save_buffer(b, &buf2, &len2, NULL), KM_OK);
    ck_assert_uint_eq(len, len2);
    ck_assert_mem_eq(buf, buf2, len);

    /* Through a FILE*. */
    FILE *f = tmpfile();
    ck_assert_int_eq(km_model_save_file(m, f, NULL), KM_OK);
    rewind(f);
    km_model *c;
    ck_assert_int_eq(km_model_load_file(f, 1 << 20, &c, NULL), KM_OK);
    ck_assert_str_eq(km_model_name(c), "house-prices_v2");
    rewind(f);
    ck_assert_int_eq(km_model_load_file(f, 16, &c, &err), KM_EINVAL);
    fclose(f);
    km_model_free(c);
    free(buf2);
    free(buf);
    km_model_free(b);
    km_model_free(m);
}
END_TEST

START_TEST(truncated_rejected)
{
    km_model *m = small_model();
    unsigned char *buf;
    size_t len;
    ck_assert_int_eq(km_model_save_buffer(m, &buf, &len, NULL), KM_OK);
    for (size_t cut = 0; cut < len; cut++) {
        km_model *b = NULL;
        km_status st = km_model_load_buffer(buf, cut, &b, NULL);
        ck_assert_msg(st == KM_ECORRUPT, "length %zu of %zu: %s", cut, len,
                      km_status_name(st));
        ck_assert_ptr_null(b);
    }
    free(buf);
    km_model_free(m);
}
END_TEST

START_TEST(bit_flips_rejected)
{
    km_model *m = small_model();
    unsigned char *buf;
    size_t len;
    ck_assert_int_eq(km_model_save_buffer(m, &buf, &len, NULL), KM_OK);
    for (size_t i = 0; i < len; i++)
        for (int bit = 0; bit < 8; bit += 3) {
            buf[i] ^= (unsigned char)(1u << bit);
            km_model *b = NULL;
            km_status st = km_model_load_buffer(buf, len, &b, NULL);
            /* bytes 4..7 hold the format version */
            km_status want = i >= 4 && i < 8 ? KM_EFORMAT : KM_ECORRUPT;
            ck_assert_msg(st == want, "flip at byte %zu bit %d: %s", i, bit,
                          km_status_name(st));
            ck_assert_ptr_null(b);
            buf[i] ^= (unsigned char)(1u << bit);
        }
    km_model *ok;
    ck_assert_int_eq(km_model_load_buffer(buf, len, &ok, NULL), KM_OK);
    km_model_free(ok);
    free(buf);
    km_model_free(m);
}
END_TEST

START_TEST(format_version)
{
    km_model *m = small_model();
    unsigned char *buf;
    size_t len;
    ck_assert_int_eq(km_model_save_buffer(m, &buf, &len, NULL), KM_OK);
    buf[4] = 2;
    km_model *b;
    km_error err;
    ck_assert_int_eq(km_model_load_buffer(buf, len, &b, &err), KM_EFORMAT);
    ck_assert_str_eq(err.message, "model format version 2; this build reads 1");
    free(buf);
    km_model_free(m);
}
END_TEST

START_TEST(status_table)
{
    ck_assert_str_eq(km_strerror(KM_OK), "success");
    ck_assert_str_eq(km_status_name(KM_ENOTPD), "ENOTPD");
    ck_assert_str_eq(km_strerror(KM_ECORRUPT), "model data is corrupt");
    ck_assert_str_eq(km_strerror((km_status)999), "unknown status");
    km_algorithm a;
    ck_assert_int_eq(km_algorithm_parse("kpca", &a), 0);
    ck_assert_int_eq(a, KM_ALGO_KPCA);
    ck_assert_int_eq(km_algorithm_parse("pca", &a), -1);
    ck_assert_str_eq(km_algorithm_name(KM_ALGO_SVR), "svr");
}
END_TEST

static Suite *model_suite(void)
{
    Suite *s = suite_create("km_model");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, round_trip);
    tcase_add_test(tc, truncated_rejected);
    tcase_add_test(tc, bit_flips_rejected);
    tcase_add_test(tc, format_version);
    tcase_add_test(tc, status_table);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    return s;
}

KM_TEST_MAIN(model_suite)
