/*
 * km_status.c - status names and messages (from the one KM_STATUS_MAP
 * table), the caller-owned error helper, and small shared utilities
 * (clock, progress, overflow-checked sizes, the one PRNG).
 *
 * Thread-safety: all functions are reentrant.
 */
#include <stdarg.h>
#include <string.h>
#include <math.h>
#include <time.h>

#include "km_base_internal.h"

const char *km_strerror(km_status st)
{
    switch (st) {
#define KM_STATUS_MSG(name, msg) case KM_##name: return msg;
        KM_STATUS_MAP(KM_STATUS_MSG)
#undef KM_STATUS_MSG
    default: return "unknown status";
    }
}

const char *km_status_name(km_status st)
{
    switch (st) {
#define KM_STATUS_NAME(name, msg) case KM_##name: return #name;
        KM_STATUS_MAP(KM_STATUS_NAME)
#undef KM_STATUS_NAME
    default: return "UNKNOWN";
    }
}

km_status km_error_set(km_error *err, km_status st, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        err->status = st;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
    }
    return st;
}

int km_name_index(const char *const *names, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(name, names[i]) == 0)
            return i;
    return -1;
}

double km_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int km_progress(const km_fit_control *ctl, double fraction)
{
    if (!ctl || !ctl->progress)
        return 0;
    if (fraction < 0) fraction = 0;
    if (fraction > 1) fraction = 1;
    return ctl->progress(ctl->ctx, fraction);
}

int km_progress_span_report(void *span, double fraction)
{
    const km_progress_span *sp = span;
    return km_progress(sp->outer, sp->from + (sp->to - sp->from) * fraction);
}

uint64_t km_rng_next(km_rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

size_t km_rng_below(km_rng *r, size_t n)
{
    /* The modulo bias is below 2^-40 for any n a fit can have. */
    return (size_t)(km_rng_next(r) % (uint64_t)n);
}

double km_rng_uniform(km_rng *r)
{
    /* 53 random bits, times 2^-52, shifted down by 1 */
    return (double)(km_rng_next(r) >> 11) * (2.0 / 9007199254740992.0) -
           1.0;
}

size_t km_mul3(size_t a, size_t b, size_t c)
{
    size_t ab;
    if (__builtin_mul_overflow(a, b, &ab) || __builtin_mul_overflow(ab, c, &ab))
        return 0;
    return ab;
}

km_status km_check_solution(const char *what, const double *v, size_t n,
                            km_error *err)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(v[i]))
            return km_error_set(err, KM_EPROBLEM,
                                "the fitted %s are not a finite number (at "
                                "%zu): the data overflow the solver's "
                                "arithmetic in double precision; rescale X "
                                "(and y)", what, i);
    return KM_OK;
}

km_status km_check_matrix(const char *what, const double *X, size_t n,
                          size_t d, km_error *err)
{
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < d; j++)
            if (!isfinite(X[i * d + j]))
                return km_error_set(err, KM_EINVAL,
                                    "%s[%zu][%zu] is not a finite number",
                                    what, i, j);
    return KM_OK;
}

double km_rng_gauss(km_rng *r)
{
    /* u1 in (0, 1], so the logarithm is finite */
    double u1 = 0.5 * (1.0 - km_rng_uniform(r));
    double u2 = 0.5 * (1.0 + km_rng_uniform(r));
    return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}
