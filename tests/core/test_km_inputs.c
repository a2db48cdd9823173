/*
 * test_km_inputs.c - what a kernel takes as X (kernels/km_inputs.c,
 * km_strings.c, km_kernel_io.c): strings packed into rows and back
 * (empty, 6 and 7 bytes, bytes 0x00 and >= 0x80) and the checks of a
 * string row; km_kernel_check_rows on columns, string rows and
 * precomputed rows (their index, symmetry within KM_PSD_SYM_TOL); the
 * kernel record written and read back for a string kernel, a normalized
 * one, leaves on columns, and records in the format from before them
 * (flags 0 and 1) byte for byte; corrupt flags and members refused; the
 * string kernels' km_kernel_eval equal to km_gram_cross's block and to
 * kernlab's values (tests/strings_ref.py's KERNLAB table); a string Gram
 * on four BLAS threads equal to one thread's, bit for bit.
 */
#include <float.h>

#include "../check_main.h"
#include "km.h"
#include "base/km_base_internal.h"
#include "kernels/km_kernel_internal.h"

int openblas_get_num_threads(void);
void openblas_set_num_threads(int n);

/* ------------------------------------------------------------ strings */

START_TEST(strings_round_trip)
{
    static const char s6[] = "abcdef", s7[] = "abcdefg";
    static const char hi[] = "\x80\xff\x00z\xc3\xa9\x7f\x01";
    const char *s[] = {"", s6, s7, hi};
    size_t len[] = {0, 6, 7, 8};
    size_t d = km_string_width(8); /* 1 + 2 slots of 6 bytes */
    ck_assert_uint_eq(d, 3);
    ck_assert_uint_eq(km_string_max_length(d), 12);
    ck_assert_uint_eq(km_string_width(6), 2);
    ck_assert_uint_eq(km_string_width(7), 3);
    ck_assert_uint_eq(km_string_width(0), 1);
    double X[4 * 3];
    km_error err;
    ck_assert_int_eq(km_strings_pack(s, len, 4, d, X, &err), KM_OK);
    for (size_t i = 0; i < 4; i++) {
        unsigned char out[16] = {0};
        ck_assert_int_eq(km_string_row_check(X + i * d, d), 0);
        ck_assert_uint_eq(km_string_row_bytes(X + i * d, d, out, sizeof out),
                          len[i]);
        ck_assert_int_eq(memcmp(out, s[i], len[i]), 0);
        /* too small a buffer: the length, nothing written */
        unsigned char small[2] = {0xaa, 0xaa};
        ck_assert_uint_eq(km_string_row_bytes(X + i * d, d, small, 1),
                          len[i]);
        ck_assert(len[i] <= 1 || (small[0] == 0xaa && small[1] == 0xaa));
    }
    /* the layout: length, then bytes 6s + b as byte b of slot s */
    ck_assert_double_eq(X[0], 0);
    ck_assert_double_eq(X[1], 0);
    ck_assert_double_eq(X[3], 6);
    ck_assert_double_eq(X[3 + 2], 0);
    ck_assert_double_eq(X[6 + 2], 'g');
    ck_assert_double_eq(X[9 + 1], 0x80 + 0xff * 256.0 + 'z' * 16777216.0 +
                                      0xc3 * 4294967296.0 +
                                      0xa9 * 1099511627776.0);
    ck_assert_double_eq(X[9 + 2], 0x7f + 0x01 * 256.0);
    /* the 6-byte string fits a row of one slot, the 7-byte one does not */
    double R[2];
    ck_assert_int_eq(km_strings_pack(&s[1], &len[1], 1, 2, R, &err), KM_OK);
    ck_assert_int_eq(km_string_row_check(R, 2), 0);
    ck_assert_int_eq(km_strings_pack(&s[2], &len[2], 1, 2, R, &err), KM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "X[0] has 7 bytes"));
    ck_assert_ptr_nonnull(strstr(err.message, "at most 6 bytes"));
}
END_TEST

/* Rows that are not string rows: km_string_row_check says -1. */
START_TEST(string_row_check_refuses)
{
    const double good[3] = {7, 0x636261, 0x67};
    ck_assert_int_eq(km_string_row_check(good, 3), 0);
    const double bad[][3] = {
        {-1, 0, 0},                    /* negative length */
        {1.5, 0x61, 0},                /* a fractional length */
        {13, 0, 0},                    /* longer than 12 bytes */
        {NAN, 0, 0},                   /* not a number */
        {2, 0x636261, 0},              /* a byte past the length */
        {7, 0x636261, 0x6768},         /* one in the second slot */
        {7, 281474976710656.0, 0},     /* a slot of 2^48 */
        {7, 0.5, 0x67},                /* a fractional slot */
        {7, -1, 0x67},                 /* a negative slot */
        {0, 0, 1},                     /* bytes of the empty string */
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        ck_assert_msg(km_string_row_check(bad[i], 3) == -1, "row %zu", i);
    /* km_string_row_bytes stays within the row on any of them */
    unsigned char out[12];
    ck_assert_uint_eq(km_string_row_bytes(bad[2], 3, out, sizeof out), 12);
    ck_assert_uint_eq(km_string_row_bytes(bad[0], 3, out, sizeof out), 0);
}
END_TEST

/* ------------------------------------------------------------ check_rows */

static km_kernel leaf_on(km_kernel_type t, const int *cols, int n)
{
    km_kernel k;
    km_kernel_init(&k, t);
    k.gamma = 0.5;
    if (n) {
        k.columns = malloc((size_t)n * sizeof *k.columns);
        memcpy(k.columns, cols, (size_t)n * sizeof *cols);
        k.n_columns = n;
    }
    return k;
}

START_TEST(check_rows_cases)
{
    km_error err;
    double X[2 * 3] = {1, 2, 3, 4, 5, 6};
    /* columns within X, and past it (in a part too) */
    int c02[] = {0, 2}, c3[] = {1, 3};
    km_kernel k = leaf_on(KM_KERNEL_RBF, c02, 2);
    ck_assert_int_eq(km_kernel_check_rows(&k, X, 2, 3, 1, &err), KM_OK);
    km_kernel_cleanup(&k);
    km_kernel *parts = malloc(2 * sizeof *parts);
    parts[0] = leaf_on(KM_KERNEL_RBF, c02, 2);
    parts[1] = leaf_on(KM_KERNEL_LINEAR, c3, 2);
    km_kernel_init(&k, KM_KERNEL_PRODUCT);
    km_kernel_set_parts(&k, parts, NULL, 2);
    ck_assert_int_eq(km_kernel_check(&k, &err), KM_OK);
    ck_assert_int_eq(km_kernel_check_rows(&k, X, 2, 3, 1, &err), KM_EINVAL);
    ck_assert_str_eq(err.message, "kernel.columns lists column 3, but X has "
                                  "3 columns");
    ck_assert_int_eq(km_kernel_check_rows(&k, X, 2, 4, 0, &err), KM_OK);
    km_kernel_cleanup(&k);

    /* string rows */
    km_kernel s;
    km_kernel_init(&s, KM_KERNEL_SPECTRUM);
    s.length = 2;
    double S[2 * 3] = {3, 0x636261, 0, 3, 0x636261, 0x64};
    ck_assert_int_eq(km_kernel_check_rows(&s, S, 2, 3, 1, &err), KM_EINVAL);
    ck_assert_str_eq(err.message, "X[1] is not a string row (a spectrum "
                                  "kernel takes strings)");
    S[3] = 7; /* "abc", three zero bytes, "d" */
    ck_assert_int_eq(km_kernel_check_rows(&s, S, 2, 3, 1, &err), KM_OK);

    /* precomputed: index in front, n = 3 training rows, d = 4 */
    km_kernel p;
    km_kernel_init(&p, KM_KERNEL_PRECOMPUTED);
    double G[3 * 4] = {0, 2, 1, 0.5, 1, 1, 3, 0.25, 2, 0.5, 0.25, 4};
    ck_assert_int_eq(km_kernel_check_rows(&p, G, 3, 4, 1, &err), KM_OK);
    /* a fold: rows 2 and 0 only, symmetric among themselves */
    double F[2 * 4];
    memcpy(F, G + 8, 4 * sizeof *F);
    memcpy(F + 4, G, 4 * sizeof *F);
    ck_assert_int_eq(km_kernel_check_rows(&p, F, 2, 4, 1, &err), KM_OK);
    /* asymmetric beyond the tolerance, and within it */
    G[3] = 0.5 + 4 * KM_PSD_SYM_TOL * 4; /* max |K| is 4 */
    ck_assert_int_eq(km_kernel_check_rows(&p, G, 3, 4, 1, &err), KM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "is not symmetric"));
    G[3] = 0.5 + 0.5 * KM_PSD_SYM_TOL * 4;
    ck_assert_int_eq(km_kernel_check_rows(&p, G, 3, 4, 1, &err), KM_OK);
    G[3] = 0.5;
    /* training rows carry a training row's number */
    const double idx_bad[] = {-1, 3, 1.5, NAN};
    for (size_t i = 0; i < 4; i++) {
        G[4] = idx_bad[i];
        ck_assert_int_eq(km_kernel_check_rows(&p, G, 3, 4, 1, &err), KM_EINVAL);
        ck_assert_str_eq(err.message, "X[1] of a precomputed kernel does not "
                                      "carry its index (a training row's "
                                      "number)");
    }
    /* new rows: -1 or a training row's number */
    G[4] = -1;
    ck_assert_int_eq(km_kernel_check_rows(&p, G, 3, 4, 0, &err), KM_OK);
    G[4] = 2;
    ck_assert_int_eq(km_kernel_check_rows(&p, G, 3, 4, 0, &err), KM_OK);
    G[4] = 1.5;
    ck_assert_int_eq(km_kernel_check_rows(&p, G, 3, 4, 0, &err), KM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "-1 for a new row"));
}
END_TEST

/* ------------------------------------------------------------ records */

static km_kernel string_leaf(km_kernel_type t, int length, double lambda)
{
    km_kernel k;
    km_kernel_init(&k, t);
    k.gamma = 1; /* resolved, as a fit leaves it */
    k.length = length;
    k.lambda = lambda;
    return k;
}

static void same_kernel(const km_kernel *a, const km_kernel *b)
{
    ck_assert_int_eq(a->type, b->type);
    ck_assert_double_eq(a->gamma, b->gamma);
    ck_assert_double_eq(a->coef0, b->coef0);
    ck_assert_int_eq(a->degree, b->degree);
    ck_assert_int_eq(a->n_parts, b->n_parts);
    ck_assert_int_eq(a->n_columns, b->n_columns);
    for (int i = 0; i < a->n_columns; i++)
        ck_assert_int_eq(a->columns[i], b->columns[i]);
    if (km_kernel_type_input(a->type) == KM_INPUT_STRINGS) {
        ck_assert_int_eq(a->length, b->length);
        ck_assert_double_eq(a->lambda, b->lambda);
    }
    ck_assert(!a->weights == !b->weights);
    for (int i = 0; i < a->n_parts; i++) {
        if (a->weights)
            ck_assert_double_eq(a->weights[i], b->weights[i]);
        same_kernel(&a->parts[i], &b->parts[i]);
    }
}

/* k written and read back: the same kernel, every byte read. */
static void round_trip(const km_kernel *k)
{
    km_writer w;
    km_writer_init(&w);
    km_kernel_write(&w, k);
    ck_assert(!w.failed);
    km_reader r = {w.buf, w.len, 0};
    km_kernel back;
    km_error err;
    ck_assert_msg(km_kernel_read(&r, &back, 0, &err) == KM_OK, "%s",
                  err.message);
    ck_assert_uint_eq(r.left, 0);
    same_kernel(k, &back);
    km_kernel_cleanup(&back);
    km_writer_cleanup(&w);
}

START_TEST(record_round_trips)
{
    km_kernel s = string_leaf(KM_KERNEL_SUBSEQUENCE, 3, 0.75);
    ck_assert_int_eq(km_kernel_check(&s, NULL), KM_OK);
    round_trip(&s);
    km_kernel e = string_leaf(KM_KERNEL_EXPDECAY, 1, 1.5);
    round_trip(&e);
    /* normalized(spectrum 4) */
    km_kernel *part = malloc(sizeof *part);
    *part = string_leaf(KM_KERNEL_SPECTRUM, 4, 0);
    km_kernel n;
    km_kernel_init(&n, KM_KERNEL_NORMALIZED);
    n.gamma = 1;
    km_kernel_set_parts(&n, part, NULL, 1);
    ck_assert_int_eq(km_kernel_check(&n, NULL), KM_OK);
    round_trip(&n);
    km_kernel_cleanup(&n);
    /* a weighted sum of a leaf on columns 5, 0 and a leaf on all */
    int cols[] = {5, 0};
    km_kernel *parts = malloc(2 * sizeof *parts);
    parts[0] = leaf_on(KM_KERNEL_RBF, cols, 2);
    parts[1] = leaf_on(KM_KERNEL_POLYNOMIAL, NULL, 0);
    double *wts = malloc(2 * sizeof *wts);
    wts[0] = 2;
    wts[1] = 0.25;
    km_kernel sum;
    km_kernel_init(&sum, KM_KERNEL_SUM);
    sum.gamma = 1;
    km_kernel_set_parts(&sum, parts, wts, 2);
    round_trip(&sum);
    km_kernel_cleanup(&sum);
    km_kernel c = leaf_on(KM_KERNEL_LAPLACIAN, cols, 2);
    round_trip(&c);
    km_kernel_cleanup(&c);
}
END_TEST

/* A record as files from before columns and string kernels hold it:
 * type, gamma, coef0, degree, n_parts, has_weights (0 or 1), the parts,
 * the weights. */
static void old_head(km_writer *w, uint32_t type, double gamma, uint32_t parts,
                     uint32_t has_weights)
{
    km_write_u32(w, type);
    km_write_f64(w, gamma);
    km_write_f64(w, 0.0);
    km_write_u32(w, 3);
    km_write_u32(w, parts);
    km_write_u32(w, has_weights);
}

START_TEST(record_old_format)
{
    km_writer w;
    km_writer_init(&w);
    old_head(&w, KM_KERNEL_SUM, 1.0, 2, 1);
    old_head(&w, KM_KERNEL_RBF, 0.5, 0, 0);
    old_head(&w, KM_KERNEL_LINEAR, 0.25, 0, 0);
    const double wts[2] = {3, 0.5};
    km_write_f64s(&w, wts, 2);
    km_reader r = {w.buf, w.len, 0};
    km_kernel k;
    km_error err;
    ck_assert_msg(km_kernel_read(&r, &k, 0, &err) == KM_OK, "%s", err.message);
    ck_assert_uint_eq(r.left, 0);
    ck_assert_int_eq(k.type, KM_KERNEL_SUM);
    ck_assert_int_eq(k.n_parts, 2);
    ck_assert_double_eq(k.weights[0], 3);
    ck_assert_double_eq(k.parts[0].gamma, 0.5);
    ck_assert_int_eq(k.parts[1].type, KM_KERNEL_LINEAR);
    ck_assert_int_eq(k.n_columns + k.parts[0].n_columns, 0);
    /* today's writer writes these kernels the same bytes */
    km_writer w2;
    km_writer_init(&w2);
    km_kernel_write(&w2, &k);
    ck_assert_uint_eq(w2.len, w.len);
    ck_assert_int_eq(memcmp(w2.buf, w.buf, w.len), 0);
    km_kernel_cleanup(&k);
    km_writer_cleanup(&w);
    km_writer_cleanup(&w2);
}
END_TEST

/* A record of kernel type t (a leaf) with flags and the members after
 * them as given (count: columns, or -1 none, their numbers cols[i % 3];
 * str: length 3 and lambda 0.5). */
static km_status read_leaf(uint32_t t, uint32_t flags, int count,
                           const uint32_t *cols, int str, km_error *err)
{
    km_writer w;
    km_writer_init(&w);
    old_head(&w, t, 1.0, 0, flags);
    if (count >= 0) {
        km_write_u32(&w, (uint32_t)count);
        for (int i = 0; i < count; i++)
            km_write_u32(&w, cols[i % 3]); /* cols holds 3 */
    }
    if (str) {
        km_write_u32(&w, 3);
        km_write_f64(&w, 0.5);
    }
    km_reader r = {w.buf, w.len, 0};
    km_kernel k;
    km_status st = km_kernel_read(&r, &k, 0, err);
    km_kernel_cleanup(&k);
    km_writer_cleanup(&w);
    return st;
}

START_TEST(record_corrupt_refused)
{
    km_error err;
    const uint32_t c[] = {2, 0, 2};
    /* well-formed ones first: the cases below differ from them only in
     * what is named */
    ck_assert_int_eq(read_leaf(KM_KERNEL_RBF, 2, 2, c, 0, &err), KM_OK);
    ck_assert_int_eq(read_leaf(KM_KERNEL_SUBSEQUENCE, 4, -1, c, 1, &err),
                     KM_OK);
    ck_assert_int_eq(read_leaf(KM_KERNEL_SPECTRUM, 4, -1, c, 1, &err), KM_OK);
    struct {
        uint32_t type, flags;
        int count, str;
        const char *why;
    } bad[] = {
        {KM_KERNEL_RBF, 8, -1, 0, "model file: bad kernel"},      /* unknown bit */
        {KM_KERNEL_RBF, 0xffffffffu, -1, 0, "model file: bad kernel"},
        {KM_KERNEL_RBF, 1, -1, 0, "model file: bad kernel"},      /* weights, no parts */
        {KM_KERNEL_RBF, 4, -1, 1, "model file: bad kernel"},      /* string members on rbf */
        {KM_KERNEL_SPECTRUM, 0, -1, 0, "model file: bad kernel"}, /* spectrum without */
        {KM_KERNEL_RBF, 2, 0, 0, "bad kernel columns"},           /* no columns */
        {KM_KERNEL_RBF, 2, 4097, 0, "bad kernel columns"},        /* too many */
        {KM_KERNEL_RBF, 2, 3, 0, "invalid kernel"},               /* column 2 twice */
        {KM_KERNEL_SPECTRUM, 6, 1, 1, "invalid kernel"},          /* columns on strings */
        {KM_KERNEL_PRECOMPUTED, 2, 1, 0, "invalid kernel"},       /* columns on precomputed */
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        ck_assert_msg(read_leaf(bad[i].type, bad[i].flags, bad[i].count, c,
                                bad[i].str, &err) == KM_ECORRUPT,
                      "case %zu read", i);
        ck_assert_msg(strstr(err.message, bad[i].why), "case %zu: %s", i,
                      err.message);
    }
    /* a column number beyond the most a leaf may list */
    const uint32_t far[] = {4096};
    ck_assert_int_eq(read_leaf(KM_KERNEL_RBF, 2, 1, far, 0, &err),
                     KM_ECORRUPT);
    /* a string kernel's length out of range */
    km_writer w;
    km_writer_init(&w);
    old_head(&w, KM_KERNEL_SPECTRUM, 1.0, 0, 4);
    km_write_u32(&w, KM_STRING_MAX_K + 1);
    km_write_f64(&w, 0);
    km_reader r = {w.buf, w.len, 0};
    km_kernel k;
    ck_assert_int_eq(km_kernel_read(&r, &k, 0, &err), KM_ECORRUPT);
    km_kernel_cleanup(&k);
    /* truncated in the members */
    r = (km_reader){w.buf, w.len - 3, 0};
    ck_assert_int_eq(km_kernel_read(&r, &k, 0, &err), KM_ECORRUPT);
    km_kernel_cleanup(&k);
    km_writer_cleanup(&w);
}
END_TEST

/* ------------------------------------------------------------ string values */

/* n seeded strings of 0 .. max bytes over a small alphabet (so k-mers
 * repeat) with some bytes >= 0x80, packed into X (n x d). */
static double *random_strings(size_t n, size_t max, unsigned seed, size_t *d)
{
    static const unsigned char alpha[] = {'a', 'c', 'g', 't', 0xc3, 0xa9};
    char **s = malloc(n * sizeof *s);
    size_t *len = malloc(n * sizeof *len);
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        len[i] = (seed >> 16) % (max + 1);
        s[i] = malloc(len[i] + 1);
        for (size_t j = 0; j < len[i]; j++) {
            seed = seed * 1103515245u + 12345u;
            s[i][j] = (char)alpha[(seed >> 16) % sizeof alpha];
        }
    }
    *d = km_string_width(max);
    double *X = malloc(n * *d * sizeof *X);
    km_error err;
    ck_assert_int_eq(km_strings_pack((const char *const *)s, len, n, *d, X,
                                     &err), KM_OK);
    for (size_t i = 0; i < n; i++)
        free(s[i]);
    free(s);
    free(len);
    return X;
}

/* The string kernels a test runs: each leaf and a normalized spectrum. */
static void string_kernels(km_kernel *k, size_t *n)
{
    k[0] = string_leaf(KM_KERNEL_SPECTRUM, 3, 0);
    k[1] = string_leaf(KM_KERNEL_BOUNDRANGE, 2, 0);
    k[2] = string_leaf(KM_KERNEL_EXPDECAY, 1, 1.5);
    k[3] = string_leaf(KM_KERNEL_SUBSEQUENCE, 2, 0.6);
    km_kernel *part = malloc(sizeof *part);
    *part = string_leaf(KM_KERNEL_SPECTRUM, 2, 0);
    km_kernel_init(&k[4], KM_KERNEL_NORMALIZED);
    k[4].gamma = 1;
    km_kernel_set_parts(&k[4], part, NULL, 1);
    *n = 5;
}

START_TEST(string_eval_equals_gram)
{
    size_t d, d2, nk;
    double *X = random_strings(12, 14, 7, &d);
    double *Z = random_strings(9, 14, 8, &d2);
    ck_assert_uint_eq(d, d2);
    km_kernel ks[5];
    string_kernels(ks, &nk);
    double K[12 * 9];
    km_error err;
    for (size_t t = 0; t < nk; t++) {
        ck_assert_int_eq(km_kernel_check(&ks[t], &err), KM_OK);
        ck_assert_int_eq(km_gram_cross(&ks[t], X, 12, Z, 9, d, K, 9, &err),
                         KM_OK);
        for (size_t i = 0; i < 12; i++)
            for (size_t j = 0; j < 9; j++) {
                double v = km_kernel_eval(&ks[t], X + i * d, Z + j * d, d);
                ck_assert_msg(fabs(v - K[i * 9 + j]) <=
                                  1e-12 * fmax(1, fabs(v)),
                              "kernel %zu (%zu, %zu): %.17g vs %.17g", t, i,
                              j, v, K[i * 9 + j]);
            }
        km_kernel_cleanup(&ks[t]);
    }
    free(X);
    free(Z);
}
END_TEST

/* kernlab's values (stringdot, normalized = FALSE), as strings_ref.py's
 * KERNLAB table holds them, through km_kernel_eval and km_gram_cross. */
START_TEST(string_values_against_kernlab)
{
    struct {
        km_kernel_type t;
        int length;
        double lambda;
        const char *s, *z;
        double want;
    } ref[] = {
        {KM_KERNEL_SUBSEQUENCE, 2, 0.5, "cat", "cart", 0.1015625},
        {KM_KERNEL_SUBSEQUENCE, 3, 1.0, "abcd", "abdc", 2.0},
        {KM_KERNEL_SPECTRUM, 2, 0, "ab", "ab", 2.0},
        {KM_KERNEL_SPECTRUM, 2, 0, "cat", "cart", 2.0},
        {KM_KERNEL_BOUNDRANGE, 2, 0, "cat", "cart", 6.0},
        {KM_KERNEL_BOUNDRANGE, 2, 0, "a", "a", 3.0},
        {KM_KERNEL_EXPDECAY, 0, 2.0, "a", "b", 0.5},
        {KM_KERNEL_EXPDECAY, 0, 2.0, "abc", "abc", 3.0625},
    };
    for (size_t i = 0; i < sizeof ref / sizeof *ref; i++) {
        km_kernel k = string_leaf(ref[i].t, ref[i].length ? ref[i].length : 1,
                                  ref[i].lambda);
        const char *s[] = {ref[i].s, ref[i].z};
        size_t len[] = {strlen(ref[i].s), strlen(ref[i].z)};
        double X[2 * 2], K;
        km_error err;
        ck_assert_int_eq(km_strings_pack(s, len, 2, 2, X, &err), KM_OK);
        ck_assert_double_eq_tol(km_kernel_eval(&k, X, X + 2, 2), ref[i].want,
                                1e-12 * ref[i].want);
        ck_assert_int_eq(km_gram_cross(&k, X, 1, X + 2, 1, 2, &K, 1, &err),
                         KM_OK);
        ck_assert_double_eq_tol(K, ref[i].want, 1e-12 * ref[i].want);
    }
}
END_TEST

/* A string Gram computed on four BLAS threads equals one thread's, bit
 * for bit (each pair is computed alone); the count is restored. A block
 * of it as a distributed Gram's tiles make it (km_gram_block) equals it
 * on and below the diagonal bit for bit, and above to 1e-12: there the
 * block computes k(x_i, x_j), the symmetric Gram k(x_j, x_i), and the
 * expdecay and subsequence sums do not round alike both ways. */
START_TEST(string_gram_threads)
{
    size_t d, nk, n = 90;
    double *X = random_strings(n, 40, 11, &d);
    km_kernel ks[5];
    string_kernels(ks, &nk);
    double *K1 = malloc(n * n * sizeof *K1), *K4 = malloc(n * n * sizeof *K4);
    int before = openblas_get_num_threads();
    km_error err;
    for (size_t t = 0; t < nk; t++) {
        openblas_set_num_threads(1);
        ck_assert_int_eq(km_gram_sym(&ks[t], X, n, d, K1, 1, &err), KM_OK);
        openblas_set_num_threads(4);
        ck_assert_int_eq(openblas_get_num_threads(), 4);
        ck_assert_int_eq(km_gram_sym(&ks[t], X, n, d, K4, 1, &err), KM_OK);
        ck_assert_int_eq(memcmp(K1, K4, n * n * sizeof *K1), 0);
        /* and the block of rows 10 .. 49 against all, as tiles make it */
        ck_assert_int_eq(km_gram_block(&ks[t], X, NULL, d, 10, 40, 0, n, K4,
                                       n, &err), KM_OK);
        for (size_t i = 0; i < 40; i++)
            for (size_t j = 0; j < n; j++) {
                double a = K4[i * n + j], b = K1[(10 + i) * n + j];
                /* above the diagonal the block has k(x_i, x_j), the Gram
                 * k(x_j, x_i) mirrored: the same to rounding */
                ck_assert_msg(j <= 10 + i ? a == b
                                          : fabs(a - b) <= 1e-12 * fabs(b),
                              "kernel %zu (%zu, %zu): %.17g vs %.17g", t,
                              10 + i, j, a, b);
            }
        km_kernel_cleanup(&ks[t]);
    }
    openblas_set_num_threads(before);
    free(K1);
    free(K4);
    free(X);
}
END_TEST

static Suite *inputs_suite(void)
{
    Suite *s = suite_create("km_inputs");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, strings_round_trip);
    tcase_add_test(tc, string_row_check_refuses);
    tcase_add_test(tc, check_rows_cases);
    tcase_add_test(tc, record_round_trips);
    tcase_add_test(tc, record_old_format);
    tcase_add_test(tc, record_corrupt_refused);
    tcase_add_test(tc, string_eval_equals_gram);
    tcase_add_test(tc, string_values_against_kernlab);
    tcase_add_test(tc, string_gram_threads);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    return s;
}

KM_TEST_MAIN(inputs_suite)
