/*
 * check_main.h - the shared main() of the Check unit-test programs, and
 * helpers to read the reference fixtures in tests/fixtures/.
 *
 * Each tests/<layer>/test_<module>.c defines one suite and ends with
 * KM_TEST_MAIN(suite_function). Fixture files are plain text: numbers
 * separated by white space, written by tests/fixtures/gen_refs.py.
 */
#ifndef CHECK_MAIN_H
#define CHECK_MAIN_H

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/km.h"

#define KM_TEST_MAIN(suite_fn)                                               \
    int main(void)                                                           \
    {                                                                        \
        SRunner *sr = srunner_create(suite_fn());                            \
        srunner_run_all(sr, CK_NORMAL);                                      \
        int failed = srunner_ntests_failed(sr);                              \
        srunner_free(sr);                                                    \
        return failed ? EXIT_FAILURE : EXIT_SUCCESS;                         \
    }

/* Directory of the fixtures, relative to the project root (make runs the
 * tests from there). */
#define KM_FIXTURES "tests/fixtures/"

/* Reads all numbers of a fixture file; *n gets the count. Fails the test
 * if the file is missing. Caller frees. */
static inline double *km_read_fixture(const char *name, size_t *n)
{
    char path[512];
    snprintf(path, sizeof path, KM_FIXTURES "%s", name);
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "missing fixture %s (regenerate with the "
                  "tests/fixtures/gen_*refs.py that writes it)", path);
    size_t cap = 1024, len = 0;
    double *v = malloc(cap * sizeof *v), x;
    while (fscanf(f, "%lf", &x) == 1) {
        if (len == cap)
            v = realloc(v, (cap *= 2) * sizeof *v);
        v[len++] = x;
    }
    fclose(f);
    *n = len;
    return v;
}

/* Largest |a-b| / max(|b|, floor) over n values. */
static inline double km_max_rel_err(const double *a, const double *b, size_t n,
                                    double floor)
{
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        double scale = fabs(b[i]) > floor ? fabs(b[i]) : floor;
        double e = fabs(a[i] - b[i]) / scale;
        if (!(e <= worst))
            worst = e; /* also catches NaN */
    }
    return worst;
}

/* A progress callback (km_fit_control's) that counts its calls, checks
 * that the fraction never goes backwards, and asks to cancel at call
 * stop: the cancel tests of the fits. */
typedef struct km_stopper {
    int calls, stop;
    double last;
} km_stopper;

static inline int km_stop_cb(void *ctx, double f)
{
    km_stopper *s = ctx;
    ck_assert(f >= s->last); /* never backwards */
    s->last = f;
    return s->calls++ == s->stop;
}

/* A leaf kernel of type t with the given gamma, its other members at
 * their defaults (the fits' tests). */
static inline km_kernel km_test_kernel(km_kernel_type t, double gamma)
{
    km_kernel k;
    km_kernel_init(&k, t);
    k.gamma = gamma;
    return k;
}

/* m saved to a buffer and loaded back: the loaded model, the caller's
 * (the file tests of score and svc nystrom). */
static inline km_model *km_test_round_trip(const km_model *m)
{
    unsigned char *buf;
    size_t len;
    km_model *back = NULL;
    ck_assert_int_eq(km_model_save_buffer(m, &buf, &len, NULL), KM_OK);
    ck_assert_int_eq(km_model_load_buffer(buf, len, &back, NULL), KM_OK);
    free(buf);
    return back;
}

#endif
