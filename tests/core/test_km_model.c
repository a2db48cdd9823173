/*
 * test_km_model.c - the model object and its file format: identity and
 * figures survive a round trip (buffer and FILE*); every truncation and
 * a bit flip anywhere are rejected as KM_ECORRUPT; an unknown format
 * version is KM_EFORMAT; statuses have names and messages; the lists of
 * km_maps.h and the algorithm descriptors' generic life cycle.
 */
#include "../check_main.h"
#include "km.h"

/* gpr's stored id (the one test place that pins it: tests/integration/
 * gpr.py's GPR_ID and docs/model-format.md say the same). */
#define GPR_ID 4

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
    km_krr_params prm = {.alpha = 0.25};
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

/* The newest format version this build reads, from the message of a
 * load of version 99 ("... this build reads 1 to N"). */
static unsigned newest_version(const unsigned char *buf, size_t len)
{
    unsigned char *c = malloc(len);
    memcpy(c, buf, len);
    c[4] = 99;
    km_model *b = NULL;
    km_error err = {0};
    unsigned newest = 0;
    ck_assert_int_eq(km_model_load_buffer(c, len, &b, &err), KM_EFORMAT);
    const char *at = strstr(err.message, "reads 1 to ");
    ck_assert_msg(at && sscanf(at, "reads 1 to %u", &newest) == 1, "%s",
                  err.message);
    free(c);
    return newest;
}

START_TEST(bit_flips_rejected)
{
    km_model *m = small_model();
    unsigned char *buf;
    size_t len;
    ck_assert_int_eq(km_model_save_buffer(m, &buf, &len, NULL), KM_OK);
    unsigned newest = newest_version(buf, len);
    for (size_t i = 0; i < len; i++)
        for (int bit = 0; bit < 8; bit += 3) {
            buf[i] ^= (unsigned char)(1u << bit);
            km_model *b = NULL;
            km_status st = km_model_load_buffer(buf, len, &b, NULL);
            /* bytes 4..7 hold the format version: a version this build
             * does not read is EFORMAT; another it reads (2 -> 3, or 10
             * once the newest is 10 or more) fails the checksum */
            uint32_t fv = (uint32_t)buf[4] | (uint32_t)buf[5] << 8 |
                          (uint32_t)buf[6] << 16 | (uint32_t)buf[7] << 24;
            km_status want = i >= 4 && i < 8 && (fv < 1 || fv > newest)
                                 ? KM_EFORMAT : KM_ECORRUPT;
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
    ck_assert_int_eq(buf[4], 2); /* a model of the dual form: version 2 */
    buf[4] = 99;
    km_model *b;
    km_error err;
    ck_assert_int_eq(km_model_load_buffer(buf, len, &b, &err), KM_EFORMAT);
    ck_assert_msg(!strncmp(err.message, "model format version 99; this "
                           "build reads 1 to ", 42), "%s", err.message);
    buf[4] = 0;
    ck_assert_int_eq(km_model_load_buffer(buf, len, &b, &err), KM_EFORMAT);
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

/* km_maps.h alone gives the names (what kmctl may include without libkm),
 * in the order and with the ids core uses. */
START_TEST(maps_generate_names)
{
#define NAME(e, id, name, desc) name,
    static const char *const algos[] = {KM_ALGO_MAP(NAME)};
    static const char *const kernels[] = {KM_KERNEL_MAP(NAME)};
#undef NAME
#define ID(e, id, name, desc) id,
    static const int algo_ids[] = {KM_ALGO_MAP(ID)};
#undef ID
    ck_assert_uint_eq(sizeof algos / sizeof *algos, KM_ALGO_COUNT);
    ck_assert_uint_eq(sizeof kernels / sizeof *kernels, KM_KERNEL_TYPE_COUNT);
    for (int i = 0; i < KM_ALGO_COUNT; i++) {
        ck_assert_str_eq(km_algorithm_name(algo_ids[i]), algos[i]);
        km_algorithm a;
        ck_assert_int_eq(km_algorithm_parse(algos[i], &a), 0);
        ck_assert_int_eq(a, algo_ids[i]);
    }
    for (int i = 0; i < KM_KERNEL_TYPE_COUNT; i++)
        ck_assert_str_eq(km_kernel_type_name(i), kernels[i]);
    /* the ids model files hold */
    ck_assert_int_eq(KM_ALGO_KRR, 0);
    ck_assert_int_eq(KM_ALGO_SVC, 1);
    ck_assert_int_eq(KM_ALGO_SVR, 2);
    ck_assert_int_eq(KM_ALGO_KPCA, 3);
    ck_assert_int_eq(KM_ALGO_GPR, GPR_ID);
    ck_assert_int_eq(KM_ALGO_KKMEANS, 5);
    ck_assert_int_eq(KM_ALGO_KLR, 6);
}
END_TEST

/* The descriptors: what each algorithm answers; the generic life cycle
 * (params, check, fit_bytes, fit) gives what the typed functions give,
 * to the bit. */
START_TEST(descriptor_life_cycle)
{
    ck_assert_uint_eq(km_algorithm_outputs(KM_ALGO_KRR), KM_OUT_VALUES);
    ck_assert_uint_eq(km_algorithm_outputs(KM_ALGO_SVR), KM_OUT_VALUES);
    ck_assert_uint_eq(km_algorithm_outputs(KM_ALGO_SVC),
                      KM_OUT_LABELS | KM_OUT_SCORES | KM_OUT_PROBABILITIES);
    ck_assert_uint_eq(km_algorithm_outputs(KM_ALGO_KPCA),
                      KM_OUT_PROJECTIONS | KM_OUT_INVERSE);
    ck_assert_uint_eq(km_algorithm_outputs(KM_ALGO_GPR),
                      KM_OUT_VALUES | KM_OUT_VARIANCES | KM_OUT_COVARIANCE);
    ck_assert_uint_eq(km_algorithm_outputs(KM_ALGO_COUNT), 0);
    ck_assert_uint_eq(km_algorithm_params_size(KM_ALGO_KRR),
                      sizeof(km_krr_params));
    ck_assert_uint_eq(km_algorithm_params_size(KM_ALGO_SVC),
                      sizeof(km_svm_params));

    double X[10] = {0, 1, 1, 0, 2, 2, -1, 3, 0.5, 0.5};
    double Y[5] = {1, 2, 3, 4, 5};
    int labels[5] = {0, 1, 0, 1, 1};
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_RBF);
    km_krr_params kp;
    km_algorithm_params_default(KM_ALGO_KRR, &kp);
    ck_assert_double_eq(kp.alpha, 1.0);
    km_problem pb = {X, 5, 2, Y, 1, NULL, 0};
    km_error err;
    ck_assert_uint_eq(km_algorithm_fit_bytes(KM_ALGO_KRR, &kp, &pb),
                      km_krr_fit_bytes(5, 2, 1, NULL));
    kp.alpha = -1;
    ck_assert_int_eq(km_algorithm_check(KM_ALGO_KRR, &kp, &pb, &err),
                     KM_EINVAL);
    ck_assert_str_eq(err.message, "params.alpha must be a finite number > 0");
    kp.alpha = 0.5;
    km_model *a = NULL, *b = NULL;
    ck_assert_int_eq(km_fit(KM_ALGO_KRR, &k, &kp, NULL, &pb, NULL, &a, NULL), KM_OK);
    ck_assert_int_eq(km_krr_fit(&k, &kp, X, 5, 2, Y, 1, NULL, &b, NULL),
                     KM_OK);
    ck_assert_mem_eq(km_krr_dual_coef(a), km_krr_dual_coef(b),
                     5 * sizeof(double));
    km_model_free(a);
    km_model_free(b);

    km_svm_params sp;
    km_algorithm_params_default(KM_ALGO_SVC, &sp);
    km_problem pc = {X, 5, 2, NULL, 0, labels, 2};
    ck_assert_int_eq(km_fit(KM_ALGO_SVC, &k, &sp, NULL, &pc, NULL, &a, NULL), KM_OK);
    ck_assert_int_eq(km_svc_fit(&k, &sp, X, 5, 2, labels, 2, NULL, &b, NULL),
                     KM_OK);
    double da[5], db[5];
    ck_assert_int_eq(km_svc_decision(a, X, 5, da, NULL), KM_OK);
    ck_assert_int_eq(km_svc_decision(b, X, 5, db, NULL), KM_OK);
    ck_assert_mem_eq(da, db, sizeof da);
    km_model_free(a);
    km_model_free(b);
    /* one class is a problem the prologue names for every classifier */
    pc.n_classes = 1;
    ck_assert_int_eq(km_fit(KM_ALGO_SVC, &k, &sp, NULL, &pc, NULL, &a, &err),
                     KM_EPROBLEM);
    ck_assert_str_eq(err.message, "y has 1 distinct class; svc needs at "
                     "least 2");
    km_kernel_cleanup(&k);
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
    tcase_add_test(tc, maps_generate_names);
    tcase_add_test(tc, descriptor_life_cycle);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    return s;
}

KM_TEST_MAIN(model_suite)
