/*
 * km_base.h - the base every area of libkm builds on: the version, statuses and
 * their messages, errors, options' choices, and core's one PRNG.
 *
 * Part of libkm's public interface; include km.h, which includes every
 * area. Conventions and thread-safety as km.h says.
 */
#ifndef KM_BASE_H
#define KM_BASE_H

#include <stddef.h>
#include <stdint.h>
#include "../km_maps.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KM_VERSION "0.1.0"

#if defined(__GNUC__)
#define KM_MUST_CHECK __attribute__((warn_unused_result))
#else
#define KM_MUST_CHECK
#endif

/* ---------------------------------------------------------------- status */

/* X(name, message): the one table of statuses and their messages. */
#define KM_STATUS_MAP(X)                                                     \
    X(OK, "success")                                                         \
    X(EINVAL, "invalid argument")                                            \
    X(ENOMEM, "out of memory")                                               \
    X(ENOTPD, "kernel matrix is not positive definite")                      \
    X(EPROBLEM, "the problem cannot be solved with these data")              \
    X(ECONFLICT, "the operation does not apply to this model")               \
    X(ECORRUPT, "model data is corrupt")                                     \
    X(EFORMAT, "unsupported model format")                                   \
    X(EIO, "input/output error")                                             \
    X(ECANCELLED, "cancelled")                                               \
    X(ENOCONV, "the solver did not converge")                                \
    X(EINTERNAL, "internal error")

typedef enum {
#define KM_STATUS_ENUM(name, msg) KM_##name,
    KM_STATUS_MAP(KM_STATUS_ENUM)
#undef KM_STATUS_ENUM
    KM_STATUS_COUNT
} km_status;

/* Static message for a status ("invalid argument"); never NULL. */
const char *km_strerror(km_status st);
/* Static name of a status ("EINVAL"); never NULL. */
const char *km_status_name(km_status st);

/* Caller-owned error detail. message is always NUL-terminated. */
typedef struct km_error {
    km_status status;
    char message[256];
} km_error;

/* ---------------------------------------------------------------- choices */

/*
 * An option's choices (krr's solver, klr's multi_class, a preprocess
 * scale, ...): the names of an enum's values 0 .. count - 1. Each option
 * has one list X(ENUM, "name") in the header of the area that owns it
 * (KM_KRR_SOLVER_MAP, ...); its enum (KM_CHOICE_ENUM), its name table and
 * its km_choices (KM_CHOICES_DEFINE, km_internal.h) are generated from
 * it, and the API's parsers, messages and OpenAPI enums read that. A
 * value is its entry's place in the list and model files store it: an
 * entry keeps its place, and a new one goes last.
 */
typedef struct km_choices {
    const char *const *names; /* count names, by value */
    int count;
} km_choices;

/* X for a choice list: its enum's constants, in order from 0. */
#define KM_CHOICE_ENUM(e, name) e,

/* The name of value v; NULL if v is none of c's. */
const char *km_choice_name(const km_choices *c, int v);
/* The value named name; -1 if name (which may be NULL) is none. */
int km_choice_value(const km_choices *c, const char *name);
/* c's names in order, joined by ", " but the last by last (", " for
 * "a, b, c"; " or " for "a, b or c"), into buf, truncated to len. */
void km_choice_list(const km_choices *c, const char *last, char *buf,
                    size_t len);

/* ---------------------------------------------------------------- random */

/* Core's one PRNG (splitmix64), with its state in the caller's hands:
 * fits and searches are repeatable and touch no global state. Seed s
 * with any value. */
typedef struct km_rng {
    uint64_t s;
} km_rng;
uint64_t km_rng_next(km_rng *r);
/* Uniform integer in [0, n), n > 0. */
size_t km_rng_below(km_rng *r, size_t n);
/* Uniform double in [-1, 1), a multiple of 2^-52. */
double km_rng_uniform(km_rng *r);

#ifdef __cplusplus
}
#endif
#endif /* KM_BASE_H */
