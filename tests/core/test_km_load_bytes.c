/*
 * test_km_load_bytes.c - what reading a model takes, known before the
 * read (admission of an import): km_model_load_bytes of a model file and
 * km_libsvm_bytes of a LIBSVM file. For a model of every algorithm and
 * file form (krr exact, nystrom, rff and keep_factor; svc exact with probabilities,
 * screened, nystrom and keep_rows (with and without probabilities); svr
 * and svr keep_rows; gpr exact, nystrom with and without its
 * factors; kpca with the inverse map and nystrom; kkmeans; klr binary and
 * multinomial; with and without preprocessing), the estimate's kept is
 * exactly what the loaded model holds (km_model_bytes: both come from
 * the same sizes), its peak at least that; a file the load refuses is
 * refused by the estimate too. A LIBSVM model's kept bounds the model
 * km_libsvm_read makes, and the model's own file (the store's copy of an
 * import) is no larger than that model's heap and 64 KiB.
 */
#include "../check_main.h"
#include "km.h"

/* 30 rows of 3 features; targets and three classes from them. */
#define NR 30
#define NF 3

static double X[NR * NF], Y[NR];
static int L3[NR], L2[NR];

static void data(void)
{
    uint64_t s = 12345;
    for (size_t i = 0; i < NR * NF; i++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        X[i] = (double)(s >> 11) / 9007199254740992.0 * 2 - 1;
    }
    for (size_t i = 0; i < NR; i++) {
        Y[i] = X[i * NF] + 0.5 * X[i * NF + 1];
        L3[i] = (int)(i % 3);
        L2[i] = (int)(i % 2);
    }
}

/* One model of algorithm a with params set by the case. */
typedef struct form {
    const char *name;
    km_algorithm a;
    int classes; /* 0: targets Y (or none); 2 or 3: labels */
    int scale;   /* preprocess.scale standardize */
    void (*set)(void *params);
} form;

static void krr_nys(void *v)
{
    km_krr_params *p = v;
    p->solver = KM_KRR_SOLVER_NYSTROM;
    p->n_centres = 8;
}

static void krr_rff(void *v)
{
    km_krr_params *p = v;
    p->solver = KM_KRR_SOLVER_RFF;
    p->n_components = 16;
}

static void krr_factor(void *v)
{
    ((km_krr_params *)v)->keep_factor = 1;
}

static void krr_nys_stats(void *v)
{
    km_krr_params *p = v;
    p->solver = KM_KRR_SOLVER_NYSTROM;
    p->n_centres = 8;
    p->keep_factor = 1;
}

static void svc_prob(void *v)
{
    ((km_svm_params *)v)->probability = 1;
}

static void svm_keep(void *v)
{
    ((km_svm_params *)v)->keep_rows = 1;
}

static void svc_keep_prob(void *v)
{
    ((km_svm_params *)v)->keep_rows = 1;
    ((km_svm_params *)v)->probability = 1;
}

static void svc_screened(void *v)
{
    ((km_svm_params *)v)->solver = KM_SVM_SOLVER_SCREENED;
}

static void svc_nys(void *v)
{
    km_svm_params *p = v;
    p->solver = KM_SVM_SOLVER_NYSTROM;
    p->n_centres = 8;
}

static void gpr_nys_var(void *v)
{
    km_gpr_params *p = v;
    p->solver = KM_GPR_SOLVER_NYSTROM;
    p->n_centres = 8;
    p->variance = 1;
}

static void gpr_nys(void *v)
{
    km_gpr_params *p = v;
    p->solver = KM_GPR_SOLVER_NYSTROM;
    p->n_centres = 8;
}

static void kpca_inverse(void *v)
{
    km_kpca_params *p = v;
    p->n_components = 4;
    p->fit_inverse_transform = 1;
}

static void kpca_nys(void *v)
{
    km_kpca_params *p = v;
    p->n_components = 4;
    p->solver = KM_KPCA_SOLVER_NYSTROM;
    p->n_centres = 10;
}

static void kkm(void *v)
{
    ((km_kkmeans_params *)v)->n_clusters = 4;
}

static const form forms[] = {
    {"krr", KM_ALGO_KRR, 0, 0, NULL},
    {"krr scaled", KM_ALGO_KRR, 0, 1, NULL},
    {"krr nystrom", KM_ALGO_KRR, 0, 0, krr_nys},
    {"krr rff", KM_ALGO_KRR, 0, 0, krr_rff},
    {"krr keep_factor", KM_ALGO_KRR, 0, 1, krr_factor},
    {"krr nystrom keep_factor", KM_ALGO_KRR, 0, 1, krr_nys_stats},
    {"svc probability", KM_ALGO_SVC, 3, 0, svc_prob},
    {"svc scaled", KM_ALGO_SVC, 3, 1, NULL},
    {"svc screened", KM_ALGO_SVC, 2, 0, svc_screened},
    {"svc nystrom", KM_ALGO_SVC, 3, 0, svc_nys},
    {"svc keep_rows", KM_ALGO_SVC, 3, 1, svm_keep},
    {"svc keep_rows probability", KM_ALGO_SVC, 2, 0, svc_keep_prob},
    {"svr", KM_ALGO_SVR, 0, 0, NULL},
    {"svr keep_rows", KM_ALGO_SVR, 0, 1, svm_keep},
    {"gpr", KM_ALGO_GPR, 0, 0, NULL},
    {"gpr nystrom variance", KM_ALGO_GPR, 0, 0, gpr_nys_var},
    {"gpr nystrom", KM_ALGO_GPR, 0, 0, gpr_nys},
    {"kpca inverse", KM_ALGO_KPCA, 0, 0, kpca_inverse},
    {"kpca nystrom", KM_ALGO_KPCA, 0, 1, kpca_nys},
    {"kkmeans", KM_ALGO_KKMEANS, 0, 0, kkm},
    {"klr", KM_ALGO_KLR, 2, 0, NULL},
    {"klr multinomial", KM_ALGO_KLR, 3, 1, NULL},
};
#define N_FORMS (sizeof forms / sizeof *forms)

static km_model *fit(const form *f)
{
    union {
        km_krr_params krr;
        km_svm_params svm;
        km_gpr_params gpr;
        km_kpca_params kpca;
        km_kkmeans_params kkm;
        km_klr_params klr;
    } params;
    km_algorithm_params_default(f->a, &params);
    if (f->set)
        f->set(&params);
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_RBF);
    k.gamma = 0.5;
    int targets = f->a == KM_ALGO_KRR || f->a == KM_ALGO_SVR ||
                  f->a == KM_ALGO_GPR;
    km_problem pb = {X, NR, NF, targets ? Y : NULL, targets ? 1 : 0,
                     f->classes == 3 ? L3 : f->classes == 2 ? L2 : NULL,
                     (size_t)f->classes};
    km_preprocess pre = {f->scale ? KM_SCALE_STANDARDIZE : KM_SCALE_NONE, 0};
    km_model *m = NULL;
    km_error err;
    ck_assert_msg(km_fit(f->a, &k, &params, &pre, &pb, NULL, &m, &err) ==
                      KM_OK, "%s: %s", f->name, err.message);
    if (f->classes) {
        const char *names[3] = {"a", "b", "c"};
        ck_assert_int_eq(km_model_set_labels(m, names, (size_t)f->classes, 0,
                                             NULL), KM_OK);
    }
    km_model_set_identity(m, "m", 1, 0);
    km_kernel_cleanup(&k);
    return m;
}

START_TEST(kept_is_the_loaded_models_bytes)
{
    data();
    for (size_t i = 0; i < N_FORMS; i++) {
        km_model *m = fit(&forms[i]), *back = NULL;
        unsigned char *buf;
        size_t len;
        km_load_bytes lb;
        km_error err;
        ck_assert_int_eq(km_model_save_buffer(m, &buf, &len, NULL), KM_OK);
        ck_assert_msg(km_model_load_bytes(buf, len, &lb, &err) == KM_OK,
                      "%s: %s", forms[i].name, err.message);
        ck_assert_int_eq(km_model_load_buffer(buf, len, &back, NULL), KM_OK);
        ck_assert_msg(lb.kept == km_model_bytes(back), "%s: kept %zu, the "
                      "model holds %zu", forms[i].name, lb.kept,
                      km_model_bytes(back));
        ck_assert_uint_eq(km_model_bytes(back), km_model_bytes(m));
        ck_assert_uint_ge(lb.peak, lb.kept);
        free(buf);
        km_model_free(back);
        km_model_free(m);
    }
}
END_TEST

/* A file the load refuses on its header or records: the estimate too,
 * with the load's status; the checksum is the load's alone. */
START_TEST(refused_as_the_load_refuses)
{
    data();
    km_model *m = fit(&forms[0]);
    unsigned char *buf;
    size_t len;
    km_load_bytes lb;
    km_error err;
    ck_assert_int_eq(km_model_save_buffer(m, &buf, &len, NULL), KM_OK);
    /* shorter than its header's sizes allow */
    ck_assert_int_eq(km_model_load_bytes(buf, len / 2, &lb, &err),
                     KM_ECORRUPT);
    ck_assert_int_eq(km_model_load_bytes(buf, 20, &lb, &err), KM_ECORRUPT);
    buf[0] ^= 1; /* the magic */
    ck_assert_int_eq(km_model_load_bytes(buf, len, &lb, &err), KM_ECORRUPT);
    buf[0] ^= 1;
    buf[40] = 0xff; /* the name: not UTF-8 */
    ck_assert_int_eq(km_model_load_bytes(buf, len, &lb, &err), KM_ECORRUPT);
    ck_assert_ptr_nonnull(strstr(err.message, "name"));
    free(buf);
    km_model_free(m);
}
END_TEST

/* Dense rows: every SV line has all n_features values. */
static char *libsvm_text(const char *labels, size_t k, size_t nsv, size_t d)
{
    size_t cap = 4096 + nsv * (d * 16 + 64), len = 0;
    char *t = malloc(cap);
    size_t pairs = k * (k - 1) / 2;
    len += (size_t)snprintf(t + len, cap - len, "svm_type c_svc\nkernel_type "
                            "rbf\ngamma 0.5\nnr_class %zu\ntotal_sv %zu\nrho",
                            k, nsv);
    for (size_t i = 0; i < pairs; i++)
        len += (size_t)snprintf(t + len, cap - len, " 0.1");
    len += (size_t)snprintf(t + len, cap - len, "\nlabel %s\nnr_sv", labels);
    for (size_t c = 0; c < k; c++)
        len += (size_t)snprintf(t + len, cap - len, " %zu",
                                nsv / k + (c == 0 ? nsv % k : 0));
    len += (size_t)snprintf(t + len, cap - len, "\nprobA");
    for (size_t i = 0; i < pairs; i++)
        len += (size_t)snprintf(t + len, cap - len, " -1");
    len += (size_t)snprintf(t + len, cap - len, "\nprobB");
    for (size_t i = 0; i < pairs; i++)
        len += (size_t)snprintf(t + len, cap - len, " 0.5");
    len += (size_t)snprintf(t + len, cap - len, "\nSV\n");
    for (size_t s = 0; s < nsv; s++) {
        for (size_t j = 0; j + 1 < k; j++)
            len += (size_t)snprintf(t + len, cap - len, "0.25 ");
        for (size_t j = 0; j < d; j++)
            len += (size_t)snprintf(t + len, cap - len, "%zu:%g ", j + 1,
                                    0.5 + (double)((s + j) % 7));
        len += (size_t)snprintf(t + len, cap - len, "\n");
    }
    return t;
}

START_TEST(libsvm_kept_bounds_the_model_and_its_file)
{
    static const struct {
        const char *labels;
        size_t k;
        int reordered;
    } files[] = {{"1 -1", 2, 1}, {"-1 1", 2, 0}, {"3 1 2", 3, 1},
                 {"1 2 3 4", 4, 0}};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        char *text = libsvm_text(files[i].labels, files[i].k, 40, 50);
        km_libsvm_info info;
        km_load_bytes lb;
        km_model *m = NULL;
        km_error err;
        size_t len = strlen(text), flen;
        unsigned char *file;
        ck_assert_msg(km_libsvm_scan(text, len, 0, 0, &info, &err) == KM_OK,
                      "%s", err.message);
        ck_assert_int_eq(info.reordered, files[i].reordered);
        km_libsvm_bytes(&info, &lb);
        ck_assert_int_eq(km_libsvm_read(text, len, 0, 0, &m, &err), KM_OK);
        ck_assert_uint_ge(lb.kept, km_model_bytes(m));
        ck_assert_uint_ge(lb.peak, lb.kept);
        /* a renumbered read holds the file's order and the copy at once */
        if (info.reordered)
            ck_assert_uint_ge(lb.peak, lb.kept + 40 * 50 * sizeof(double));
        ck_assert_int_eq(km_model_save_buffer(m, &file, &flen, NULL), KM_OK);
        ck_assert_uint_le(flen, km_model_bytes(m) + ((size_t)64 << 10));
        free(file);
        km_model_free(m);
        free(text);
    }
}
END_TEST

static Suite *load_bytes_suite(void)
{
    Suite *s = suite_create("load_bytes");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, kept_is_the_loaded_models_bytes);
    tcase_add_test(tc, refused_as_the_load_refuses);
    tcase_add_test(tc, libsvm_kept_bounds_the_model_and_its_file);
    suite_add_tcase(s, tc);
    return s;
}

KM_TEST_MAIN(load_bytes_suite)
