/*
 * test_km_model_file.c - model files as hostile input. Each test saves a
 * small valid model of one algorithm, alters one field of its file, puts
 * a correct CRC-32 back (so only the loader's own checks can catch it),
 * and expects KM_ECORRUPT with a message naming what is wrong; the
 * unaltered file must load. Also: km_model_check_header against file
 * sizes, km_model_load_file reading no further than the header allows,
 * the label rules of km_model_set_labels, the CRC-32 against a bitwise
 * reference, and a streamed save giving the buffer's bytes.
 */
#include "../check_main.h"
#include "model_bytes.h"
#include "km.h"
#include "model/km_model_internal.h"

/* ------------------------------------------------------------ crafting */

/* Where the fields of a file are (the layout of km_model.c). */
typedef struct layout {
    size_t version, created_at, kernel, params, labels, pre, search, payload;
} layout;


static layout layout_of(const unsigned char *b)
{
    layout l;
    size_t p = 36 + 4 + get32(b + 36);
    l.version = p;
    l.created_at = p + 8;
    l.kernel = p + 16;
    l.params = skip_kernel(b, l.kernel);
    l.labels = skip_info(b, skip_info(b, l.params));
    uint64_t n = get64(b + l.labels);
    p = l.labels + 12;
    for (uint64_t i = 0; i < n; i++)
        p += 4 + get32(b + p);
    l.pre = l.search = p;
    if (get32(b + 4) >= 2) { /* the preprocessing and search sections */
        uint32_t scale = get32(b + p), center = get32(b + p + 4);
        p += 8;
        for (int i = 0; scale && i < 2; i++)
            p += 8 + 8 * get64(b + p);
        if (center)
            p += 8 + 8 * get64(b + p);
        l.search = p;
        if (get32(b + p)) {
            uint64_t np = get64(b + p + 20);
            p += 28;
            for (uint64_t i = 0; i < np; i++)
                p += 4 + get32(b + p);
            p += 8;
            for (int i = 0; i < 4; i++)
                p += 8 + 8 * get64(b + p);
            p += 8;
        } else {
            p += 4;
        }
    }
    l.payload = p;
    return l;
}

/* A saved file, with room to grow it. */
typedef struct file {
    unsigned char *buf;
    size_t len;
    layout at;
} file;

static file save(const km_model *m)
{
    file f;
    unsigned char *b;
    ck_assert_int_eq(km_model_save_buffer(m, &b, &f.len, NULL), KM_OK);
    f.buf = malloc(f.len + 4096);
    memcpy(f.buf, b, f.len);
    free(b);
    f.at = layout_of(f.buf);
    return f;
}

/* Replaces bytes [at, at+old) by the n bytes of with, and fixes the CRC. */
static void splice(file *f, size_t at, size_t old, const void *with, size_t n)
{
    ck_assert_uint_le(n, old + 4096);
    memmove(f->buf + at + n, f->buf + at + old, f->len - at - old);
    memcpy(f->buf + at, with, n);
    f->len = f->len - old + n;
    fix_crc(f->buf, f->len);
    f->at = layout_of(f->buf);
}

static void set64(file *f, size_t at, uint64_t v)
{
    put64(f->buf + at, v);
    fix_crc(f->buf, f->len);
}

static void setf64(file *f, size_t at, double v)
{
    uint64_t u;
    memcpy(&u, &v, 8);
    set64(f, at, u);
}

/* The labels section with these labels. */
static void set_labels(file *f, const char *const *labels, size_t n,
                       int numeric)
{
    unsigned char sec[1024];
    size_t p = 12;
    put64(sec, n);
    put32(sec + 8, (uint32_t)numeric);
    for (size_t i = 0; i < n; i++) {
        size_t k = strlen(labels[i]);
        put32(sec + p, (uint32_t)k);
        memcpy(sec + p + 4, labels[i], k);
        p += 4 + k;
    }
    splice(f, f->at.labels, f->at.pre - f->at.labels, sec, p);
}

/* Expects the file refused with st and a message containing what. */
static void expect(const file *f, km_status st, const char *what)
{
    km_model *m = NULL;
    km_error err = {KM_OK, ""};
    km_status got = km_model_load_buffer(f->buf, f->len, &m, &err);
    ck_assert_msg(got == st, "%s: got %s (%s)", what, km_status_name(got),
                  err.message);
    ck_assert_ptr_null(m);
    ck_assert_msg(strstr(err.message, what) != NULL,
                  "message \"%s\" does not name \"%s\"", err.message, what);
}

static void expect_ok(const file *f)
{
    km_model *m = NULL;
    km_error err = {KM_OK, ""};
    ck_assert_msg(km_model_load_buffer(f->buf, f->len, &m, &err) == KM_OK,
                  "%s", err.message);
    km_model_free(m);
}

/* ------------------------------------------------------------ models */

static const double X4[8] = {0, 0, 1, 0, 0, 1, 3, 3};

static km_kernel rbf(double gamma)
{
    km_kernel k;
    km_kernel_init(&k, KM_KERNEL_RBF);
    k.gamma = gamma;
    return k;
}

/* krr, 4 rows x 2 features, 1 output; version 3. */
static file krr_file(void)
{
    km_kernel k = rbf(0.5);
    km_krr_params p = km_krr_params_default();
    double y[4] = {0, 1, 1, 0};
    km_model *m;
    ck_assert_int_eq(km_krr_fit(&k, &p, X4, 4, 2, y, 1, NULL, &m, NULL), KM_OK);
    km_model_set_identity(m, "k", 3, 1763078400123LL);
    file f = save(m);
    km_model_free(m);
    return f;
}

/* svc, 3 classes labelled "a" < "b" < "c", with probability (6 rows). */
static file svc_file(void)
{
    double X[12] = {0, 0, 0, 1, 3, 3, 3, 4, -3, 3, -3, 4};
    int y[6] = {0, 0, 1, 1, 2, 2};
    km_kernel k = rbf(0.5);
    km_svm_params p = km_svm_params_default();
    km_model *m;
    ck_assert_int_eq(km_svc_fit(&k, &p, X, 6, 2, y, 3, NULL, &m, NULL), KM_OK);
    const char *labels[3] = {"a", "b", "c"};
    ck_assert_int_eq(km_model_set_labels(m, labels, 3, 0, NULL), KM_OK);
    km_model_set_identity(m, "s", 1, 0);
    file f = save(m);
    km_model_free(m);
    return f;
}

/* kpca, 2 components of 4 rows, with the inverse map. */
static file kpca_file(void)
{
    km_kernel k = rbf(0.5);
    km_kpca_params p = km_kpca_params_default();
    p.n_components = 2;
    p.fit_inverse_transform = 1;
    km_model *m;
    ck_assert_int_eq(km_kpca_fit(&k, &p, X4, 4, 2, NULL, &m, NULL), KM_OK);
    file f = save(m);
    km_model_free(m);
    return f;
}

/* Payload of svc: u64 k, u64 nsv, then counted arrays. */
typedef struct svc_at {
    size_t k, nsv, n_support, sv_index, sv, coef, rho;
} svc_at;

static svc_at svc_layout(const file *f)
{
    svc_at a;
    const unsigned char *b = f->buf;
    a.k = f->at.payload;
    a.nsv = a.k + 8;
    a.n_support = a.nsv + 8;
    a.sv_index = a.n_support + 8 + 4 * get64(b + a.n_support);
    a.sv = a.sv_index + 8 + 4 * get64(b + a.sv_index);
    a.coef = a.sv + 8 + 8 * get64(b + a.sv);
    a.rho = a.coef + 8 + 8 * get64(b + a.coef);
    return a;
}

/* ------------------------------------------------------------ tests */

START_TEST(valid_files_load)
{
    file f = krr_file(), s = svc_file(), k = kpca_file();
    expect_ok(&f);
    expect_ok(&s);
    expect_ok(&k);
    free(f.buf);
    free(s.buf);
    free(k.buf);
}
END_TEST

START_TEST(svc_labels_match_classes)
{
    file f = svc_file();
    const char *two[2] = {"a", "b"};
    set_labels(&f, two, 2, 0);
    expect(&f, KM_ECORRUPT, "svc with 3 classes has 2 labels");
    set_labels(&f, two, 0, 0);
    expect(&f, KM_ECORRUPT, "svc with 3 classes has 0 labels");
    const char *dup[3] = {"a", "b", "b"};
    set_labels(&f, dup, 3, 0);
    expect(&f, KM_ECORRUPT, "not distinct");
    const char *bad[3] = {"a", "b", "\xff\xfe"};
    set_labels(&f, bad, 3, 0);
    expect(&f, KM_ECORRUPT, "not valid UTF-8");
    const char *num[3] = {"1", "2", "x"};
    set_labels(&f, num, 3, 1);
    expect(&f, KM_ECORRUPT, "not the text of a finite number");
    const char *desc[3] = {"3", "2", "1"};
    set_labels(&f, desc, 3, 1);
    expect(&f, KM_ECORRUPT, "ascending");
    const char *ok[3] = {"-1.5", "2", "10"};
    set_labels(&f, ok, 3, 1);
    expect_ok(&f);
    free(f.buf);
}
END_TEST

START_TEST(header_bounds)
{
    file f = svc_file();
    set64(&f, 28, (uint64_t)1 << 32); /* n_outputs */
    expect(&f, KM_ECORRUPT, "n_outputs 4294967296 is outside 1..1 for svc");
    free(f.buf);

    f = krr_file();
    set64(&f, 28, (uint64_t)1 << 40);
    expect(&f, KM_ECORRUPT, "n_outputs");
    set64(&f, 28, 0);
    expect(&f, KM_ECORRUPT, "n_outputs 0");
    set64(&f, 28, 1);
    set64(&f, 12, (uint64_t)1 << 40); /* n_features */
    expect(&f, KM_ECORRUPT, "n_features 1099511627776 is outside");
    set64(&f, 12, 2);
    set64(&f, 20, 0); /* n_samples */
    expect(&f, KM_ECORRUPT, "n_samples 0 is outside");
    set64(&f, 20, (uint64_t)1 << 62);
    expect(&f, KM_ECORRUPT, "n_samples");
    set64(&f, 20, 4);
    put32(f.buf + 8, 9); /* algorithm */
    fix_crc(f.buf, f.len);
    expect(&f, KM_ECORRUPT, "unknown algorithm 9");
    free(f.buf);

    f = kpca_file();
    set64(&f, 28, 4); /* n_components = n_samples */
    expect(&f, KM_ECORRUPT, "n_outputs 4 is outside 1..3 for kpca");
    free(f.buf);
}
END_TEST

START_TEST(identity_ranges)
{
    file f = krr_file();
    set64(&f, f.at.version, UINT64_MAX);
    expect(&f, KM_ECORRUPT, "version 18446744073709551615 is above 2^53");
    set64(&f, f.at.version, ((uint64_t)1 << 53) + 1);
    expect(&f, KM_ECORRUPT, "above 2^53");
    set64(&f, f.at.version, (uint64_t)1 << 53);
    expect_ok(&f);
    set64(&f, f.at.created_at, (uint64_t)1 << 62);
    expect(&f, KM_ECORRUPT, "created_at 4611686018427387904 ms");
    set64(&f, f.at.created_at, (uint64_t)-500);
    expect(&f, KM_ECORRUPT, "created_at -500 ms is outside 1970..9999");
    set64(&f, f.at.created_at, (uint64_t)KM_MODEL_MAX_TIME_MS);
    expect_ok(&f);
    /* A name with a byte that is not UTF-8. */
    f.buf[40] = 0xff;
    fix_crc(f.buf, f.len);
    expect(&f, KM_ECORRUPT, "bad name");
    free(f.buf);
}
END_TEST

START_TEST(numbers_finite)
{
    file f = krr_file();
    size_t x0 = f.at.payload + 8; /* krr: X's count, then X */
    setf64(&f, x0 + 8, NAN);
    expect(&f, KM_ECORRUPT, "not all finite numbers");
    setf64(&f, x0 + 8, 0);
    expect_ok(&f);
    size_t c0 = x0 + 8 * 8 + 8; /* past X (4 x 2), the coefficients' count */
    setf64(&f, c0, INFINITY);
    expect(&f, KM_ECORRUPT, "not all finite numbers");
    free(f.buf);

    f = svc_file();
    svc_at a = svc_layout(&f);
    setf64(&f, a.rho + 8, NAN);
    expect(&f, KM_ECORRUPT, "not all finite numbers");
    free(f.buf);

    f = kpca_file();
    /* eigval (2), then the projections' count and values */
    setf64(&f, f.at.payload + 8 + 16 + 8, -INFINITY);
    expect(&f, KM_ECORRUPT, "not all finite numbers");
    free(f.buf);
}
END_TEST

START_TEST(svc_counts_and_indices)
{
    file f = svc_file();
    svc_at a = svc_layout(&f);
    uint32_t n0 = get32(f.buf + a.n_support + 8);
    put32(f.buf + a.n_support + 8, n0 + 1);
    fix_crc(f.buf, f.len);
    expect(&f, KM_ECORRUPT, "support counts add up to");
    put32(f.buf + a.n_support + 8, n0);
    put32(f.buf + a.sv_index + 8, 6); /* 6 training rows: 0..5 */
    fix_crc(f.buf, f.len);
    expect(&f, KM_ECORRUPT, "has row index 6 outside 0..5");
    put32(f.buf + a.sv_index + 8, 0);
    set64(&f, a.k, 7); /* more classes than rows */
    expect(&f, KM_ECORRUPT, "svc with 7 classes");
    free(f.buf);
}
END_TEST

/* An svc read from a LIBSVM file whose labels are not ascending (2 1 3)
 * keeps LIBSVM's label order as its vote order (ranks 1 0 2): format 3,
 * the payload ending with the k vote entries. */
static const char LIBSVM_213[] =
    "svm_type c_svc\nkernel_type rbf\ngamma 0.5\nnr_class 3\ntotal_sv 3\n"
    "rho 0.1 0.2 0.3\nlabel 2 1 3\nnr_sv 1 1 1\nSV\n"
    "1 1 1:1\n-1 1 1:2\n-1 -1 1:3\n";

START_TEST(svc_vote_order)
{
    km_model *m = NULL;
    km_error err = {KM_OK, ""};
    ck_assert_msg(km_libsvm_read(LIBSVM_213, strlen(LIBSVM_213), 0, 0, &m,
                                 &err) == KM_OK, "%s", err.message);
    file f = save(m);
    km_model_free(m);
    ck_assert_uint_eq(get32(f.buf + 4), 3);
    size_t vote = f.len - 4 - 3 * 4;
    ck_assert_uint_eq(get64(f.buf + vote - 8), 3);
    ck_assert_uint_eq(get32(f.buf + vote), 1);
    ck_assert_uint_eq(get32(f.buf + vote + 4), 0);
    ck_assert_uint_eq(get32(f.buf + vote + 8), 2);
    expect_ok(&f);
    /* Not a permutation: the loader frees what it read, and its message
     * must not read it back (issue 24, defect 8: a use after free). */
    static const uint32_t bad[][3] = {{0, 0, 1}, {1, 0, 3}, {2, 1, 0xFFFFFFFFu}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        for (int j = 0; j < 3; j++)
            put32(f.buf + vote + 4 * j, bad[i][j]);
        fix_crc(f.buf, f.len);
        expect(&f, KM_ECORRUPT,
               "svc vote order is not a permutation of the 3 classes");
    }
    free(f.buf);
}
END_TEST

START_TEST(figures_and_kernel)
{
    file f = krr_file();
    /* params: count, then the key of the first ("alpha") */
    size_t key = f.at.params + 8 + 4;
    f.buf[key] = '"';
    fix_crc(f.buf, f.len);
    expect(&f, KM_ECORRUPT, "bad figure 0");
    f.buf[key] = 'a';
    size_t value = key + 5 + 8 + 8; /* "alpha", kind, is_array, count */
    setf64(&f, value, NAN);
    expect(&f, KM_ECORRUPT, "figure alpha[0] is not a valid number");
    setf64(&f, value, 1.0);
    expect_ok(&f);
    /* kernel: u32 type, f64 gamma */
    setf64(&f, f.at.kernel + 4, 0.0);
    expect(&f, KM_ECORRUPT, "gamma 0 is not resolved");
    setf64(&f, f.at.kernel + 4, -1.0);
    expect(&f, KM_ECORRUPT, "invalid kernel");
    free(f.buf);
}
END_TEST

/* Whatever the writer writes, the loader loads: a training figure that is
 * not a finite number (krr's rkhs_norm_sq of y = +-1e300 overflows) is
 * held and stored without values (absent), and the file loads back with
 * the figure absent and the same predictions to the bit. A value that
 * cannot be of its kind (an integer 2.5, a boolean 2) is absent too. */
START_TEST(figure_not_finite_round_trip)
{
    const double X3[6] = {0, 0, 1, 0, 0, 1};
    double y[3] = {1e300, -1e300, 1e300};
    km_kernel k = rbf(0.5);
    km_krr_params p = km_krr_params_default();
    km_model *m = NULL, *back = NULL;
    km_error err = {KM_OK, ""};
    ck_assert_int_eq(km_krr_fit(&k, &p, X3, 3, 2, y, 1, NULL, &m, NULL),
                     KM_OK);
    const km_info_entry *e = km_info_find(km_model_training(m),
                                          "rkhs_norm_sq");
    ck_assert_ptr_nonnull(e);
    ck_assert_uint_eq(e->count, 0);
    km_info *ti = km_model_training_mut(m);
    double odd[2] = {1, INFINITY};
    ck_assert_int_eq(km_info_add(ti, "pair", KM_INFO_NUMBER, 1, odd, 2),
                     KM_OK);
    ck_assert_int_eq(km_info_add1(ti, "half", KM_INFO_INTEGER, 2.5), KM_OK);
    ck_assert_int_eq(km_info_add1(ti, "flag", KM_INFO_BOOLEAN, 2), KM_OK);
    ck_assert_int_eq(km_info_add1(ti, "nan", KM_INFO_NUMBER, NAN), KM_OK);
    ck_assert_int_eq(km_info_add1(ti, "fine", KM_INFO_NUMBER, 0.5), KM_OK);
    /* a value made invalid after it was added is not written either */
    ck_assert_int_eq(km_info_add1(ti, "later", KM_INFO_NUMBER, 1), KM_OK);
    ti->entries[ti->count - 1].values[0] = -INFINITY;
    file f = save(m);
    ck_assert_msg(km_model_load_buffer(f.buf, f.len, &back, &err) == KM_OK,
                  "%s", err.message);
    const char *absent[] = {"rkhs_norm_sq", "pair", "half", "flag", "nan",
                            "later"};
    for (size_t i = 0; i < sizeof absent / sizeof *absent; i++) {
        e = km_info_find(km_model_training(back), absent[i]);
        ck_assert_msg(e && e->count == 0, "%s", absent[i]);
        ck_assert_int_eq(e->is_array, strcmp(absent[i], "pair") == 0);
    }
    e = km_info_find(km_model_training(back), "fine");
    ck_assert(e && e->count == 1 && e->values[0] == 0.5);
    ck_assert_uint_eq(km_model_training(back)->count,
                      km_model_training(m)->count);
    const double T[6] = {0, 0, 1, 0, 0.5, 0.25};
    double a[3], b[3];
    ck_assert_int_eq(km_predict(m, KM_OUT_VALUES, T, 3, a, NULL), KM_OK);
    ck_assert_int_eq(km_predict(back, KM_OUT_VALUES, T, 3, b, NULL), KM_OK);
    ck_assert(memcmp(a, b, sizeof a) == 0);
    /* the loaded model writes the very same file */
    file g = save(back);
    ck_assert_uint_eq(g.len, f.len);
    ck_assert(memcmp(f.buf, g.buf, f.len) == 0);
    free(f.buf);
    free(g.buf);
    km_model_free(m);
    km_model_free(back);
}
END_TEST

/* A figure has a value per output: a krr model of one row and three
 * outputs writes rkhs_norm_sq of three values, and loads back. */
START_TEST(figure_per_output_of_one_row)
{
    const double X1[2] = {0.5, -1};
    double y[3] = {1, 2, 3};
    km_kernel k = rbf(0.5);
    km_krr_params p = km_krr_params_default();
    km_model *m = NULL, *back = NULL;
    km_error err = {KM_OK, ""};
    ck_assert_int_eq(km_krr_fit(&k, &p, X1, 1, 2, y, 3, NULL, &m, NULL),
                     KM_OK);
    file f = save(m);
    ck_assert_msg(km_model_load_buffer(f.buf, f.len, &back, &err) == KM_OK,
                  "%s", err.message);
    const km_info_entry *e = km_info_find(km_model_training(back),
                                          "rkhs_norm_sq");
    ck_assert(e && e->count == 3 && e->is_array);
    free(f.buf);
    km_model_free(m);
    km_model_free(back);
}
END_TEST

START_TEST(size_against_header)
{
    file f = krr_file();
    uint64_t hi = 0;
    km_error err;
    ck_assert_int_eq(km_model_check_header(f.buf, 36, f.len, &hi, &err),
                     KM_OK);
    ck_assert_uint_ge(hi, f.len);
    ck_assert_int_eq(km_model_check_header(f.buf, 36, hi, NULL, &err), KM_OK);
    ck_assert_int_eq(km_model_check_header(f.buf, 36, hi + 1, NULL, &err),
                     KM_ECORRUPT);
    ck_assert_int_eq(km_model_check_header(f.buf, 36, 100, NULL, &err),
                     KM_ECORRUPT);
    ck_assert_msg(strstr(err.message, "model file is 100 bytes; its header "
                         "(krr, n_samples 4, n_features 2, n_outputs 1) "
                         "needs") != NULL, "%s", err.message);
    /* 8 GiB for a model of 4 rows is refused before anything is read. */
    ck_assert_int_eq(km_model_check_header(f.buf, 36, (uint64_t)8 << 30,
                                           NULL, &err), KM_ECORRUPT);
    /* A krr payload's size is fixed by the header: 8 bytes more do not
     * parse, even with a valid checksum. */
    unsigned char eight[8] = {0};
    splice(&f, f.at.payload, 0, eight, 8);
    expect(&f, KM_ECORRUPT, "payload");
    /* What /dev/zero starts with. */
    unsigned char zeros[36] = {0};
    ck_assert_int_eq(km_model_check_header(zeros, 36, 1 << 20, NULL, &err),
                     KM_ECORRUPT);
    ck_assert_str_eq(err.message,
                     "not a kmserve model (bad magic or too short)");
    ck_assert_int_eq(km_model_check_header(f.buf, 20, f.len, NULL, &err),
                     KM_ECORRUPT);
    ck_assert_str_eq(err.message,
                     "model file is 20 bytes, shorter than its header");
    free(f.buf);
}
END_TEST

/* A stream that is a model's header followed by zeros without end, as a
 * valid header glued to /dev/zero; counts what is read of it. */
typedef struct endless {
    const unsigned char *head;
    size_t head_len;
    uint64_t pos;
} endless;

static ssize_t endless_read(void *cookie, char *buf, size_t n)
{
    endless *e = cookie;
    for (size_t i = 0; i < n; i++, e->pos++)
        buf[i] = e->pos < e->head_len ? (char)e->head[e->pos] : 0;
    return (ssize_t)n;
}

START_TEST(load_file_stops_at_header_bound)
{
    file f = krr_file();
    km_model *m = NULL;
    km_error err;
    uint64_t hi;
    ck_assert_int_eq(km_model_check_header(f.buf, 36, f.len, &hi, &err),
                     KM_OK);
    endless e = {f.buf, f.len, 0};
    cookie_io_functions_t io = {endless_read, NULL, NULL, NULL};
    FILE *s = fopencookie(&e, "rb", io);
    ck_assert_int_eq(km_model_load_file(s, (size_t)1 << 30, &m, &err),
                     KM_ECORRUPT);
    ck_assert_ptr_null(m);
    ck_assert_msg(strstr(err.message, "larger than the") != NULL, "%s",
                  err.message);
    /* One byte past the bound, and what stdio reads ahead. */
    ck_assert_uint_le(e.pos, hi + 1 + 65536);
    fclose(s);
    /* The valid file alone loads through a stream. */
    s = fmemopen(f.buf, f.len, "rb");
    ck_assert_int_eq(km_model_load_file(s, (size_t)1 << 30, &m, &err), KM_OK);
    km_model_free(m);
    fclose(s);
    free(f.buf);
}
END_TEST

START_TEST(set_labels_rules)
{
    km_kernel k = rbf(0.5);
    km_krr_params p = km_krr_params_default();
    double y[4] = {0, 1, 1, 0};
    km_model *m;
    km_error err;
    ck_assert_int_eq(km_krr_fit(&k, &p, X4, 4, 2, y, 1, NULL, &m, NULL), KM_OK);
    const char *bad[2] = {"ok", "caf\xe9"}; /* Latin-1, not UTF-8 */
    ck_assert_int_eq(km_model_set_labels(m, bad, 2, 0, &err), KM_EINVAL);
    ck_assert_str_eq(err.message, "class label 1 is not valid UTF-8");
    const char *order[2] = {"b", "a"};
    ck_assert_int_eq(km_model_set_labels(m, order, 2, 0, &err), KM_EINVAL);
    const char *good[2] = {"a", "caf\xc3\xa9"};
    ck_assert_int_eq(km_model_set_labels(m, good, 2, 0, &err), KM_OK);
    km_model_free(m);
}
END_TEST

/* ------------------------------------------------------ streamed saves */

/* A sink that collects what it is given, and fails once it has been
 * given more than fail_after bytes. */
typedef struct collected {
    unsigned char *buf;
    size_t len, cap, fail_after, calls, biggest, refused;
} collected;

static int collect(void *ctx, const void *p, size_t n)
{
    collected *c = ctx;
    c->calls++;
    c->biggest = n > c->biggest ? n : c->biggest;
    if (c->len + n > c->fail_after) {
        c->refused++;
        return -1;
    }
    if (c->len + n > c->cap) {
        c->cap = 2 * (c->len + n);
        c->buf = realloc(c->buf, c->cap);
        ck_assert_ptr_nonnull(c->buf);
    }
    memcpy(c->buf + c->len, p, n);
    c->len += n;
    return 0;
}

START_TEST(crc_matches_bitwise_reference)
{
    /* the check value of the IEEE CRC-32 */
    ck_assert_uint_eq(km_crc32((const unsigned char *)"123456789", 9),
                      0xCBF43926u);
    unsigned char b[300];
    for (size_t i = 0; i < sizeof b; i++)
        b[i] = (unsigned char)(i * 131u + 7u);
    /* every length and misalignment around the eight-byte steps, and
     * taken in two pieces split anywhere */
    for (size_t off = 0; off < 9; off++)
        for (size_t n = 0; off + n <= sizeof b; n += 1 + n / 16) {
            uint32_t want = crc32_ref(b + off, n);
            ck_assert_uint_eq(km_crc32(b + off, n), want);
            size_t cut = n / 3;
            ck_assert_uint_eq(km_crc32_update(km_crc32(b + off, cut),
                                              b + off + cut, n - cut),
                              want);
        }
}
END_TEST

/* An exact gpr model of n rows of d features: with n d over 131072 its
 * training rows are an array larger than the writer's 1 MiB buffer,
 * which goes to the sink from where it is; its factor goes a row at a
 * time through the buffer. */
static km_model *gpr_model(size_t n, size_t d)
{
    km_kernel k = rbf(0.5 / (double)d);
    km_gpr_params p = km_gpr_params_default();
    p.solver = KM_GPR_SOLVER_EXACT;
    double *X = malloc(n * d * sizeof *X), *y = malloc(n * sizeof *y);
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < d; j++)
            X[i * d + j] = (double)((i * 7 + j * 3) % 37) / 7.0;
        y[i] = sin(X[i * d]) + 0.1 * X[i * d + 1];
    }
    km_model *m = NULL;
    ck_assert_int_eq(km_gpr_fit(&k, &p, X, n, d, y, NULL, &m, NULL), KM_OK);
    free(X);
    free(y);
    return m;
}

START_TEST(save_sink_same_bytes)
{
    km_model *m = gpr_model(600, 300); /* 1.4 MB of rows, 1.4 MB of factor */
    unsigned char *b;
    size_t len;
    km_error err;
    ck_assert_int_eq(km_model_save_buffer(m, &b, &len, &err), KM_OK);
    ck_assert_uint_gt(len, 2u << 20);
    collected c = {NULL, 0, 0, SIZE_MAX, 0, 0, 0};
    ck_assert_int_eq(km_model_save_sink(m, collect, &c, &err), KM_OK);
    ck_assert_uint_eq(c.len, len);
    ck_assert_int_eq(memcmp(c.buf, b, len), 0);
    ck_assert_uint_eq(get32(c.buf + len - 4), crc32_ref(c.buf, len - 4));
    /* the rows went whole, not through the buffer; the rest in pieces
     * of at most its size */
    ck_assert_uint_eq(c.biggest, 600 * 300 * 8);
    ck_assert_uint_ge(c.calls, 3);
    /* a sink that fails part way: KM_EIO, and nothing sent after it */
    collected f = {NULL, 0, 0, len / 2, 0, 0, 0};
    ck_assert_int_eq(km_model_save_sink(m, collect, &f, &err), KM_EIO);
    ck_assert_uint_le(f.len, len / 2);
    ck_assert_uint_eq(f.refused, 1);
    /* and through stdio, the same bytes again */
    char *mem = NULL;
    size_t memlen = 0;
    FILE *s = open_memstream(&mem, &memlen);
    ck_assert_int_eq(km_model_save_file(m, s, &err), KM_OK);
    fclose(s);
    ck_assert_uint_eq(memlen, len);
    ck_assert_int_eq(memcmp(mem, b, len), 0);
    free(mem);
    free(c.buf);
    free(f.buf);
    free(b);
    km_model_free(m);
}
END_TEST

static Suite *model_file_suite(void)
{
    Suite *s = suite_create("km_model_file");
    TCase *tc = tcase_create("hostile");
    tcase_add_test(tc, valid_files_load);
    tcase_add_test(tc, svc_labels_match_classes);
    tcase_add_test(tc, header_bounds);
    tcase_add_test(tc, identity_ranges);
    tcase_add_test(tc, numbers_finite);
    tcase_add_test(tc, svc_counts_and_indices);
    tcase_add_test(tc, svc_vote_order);
    tcase_add_test(tc, figures_and_kernel);
    tcase_add_test(tc, figure_not_finite_round_trip);
    tcase_add_test(tc, figure_per_output_of_one_row);
    tcase_add_test(tc, size_against_header);
    tcase_add_test(tc, load_file_stops_at_header_bound);
    tcase_add_test(tc, set_labels_rules);
    tcase_add_test(tc, crc_matches_bitwise_reference);
    tcase_add_test(tc, save_sink_same_bytes);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    return s;
}

KM_TEST_MAIN(model_file_suite)
