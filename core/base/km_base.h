/*
 * km_base.h - the base every area of libkm builds on: the version, statuses and
 * their messages, errors, a matrix's check, options' choices, core's one
 * PRNG, a fit's progress and cancellation (km_fit_control, which the
 * solvers read as well as the fits), the vectorised exp and OpenBLAS's
 * kernel set (km_status.c, km_choice.c, km_vmath.c, km_blas.c).
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

/* Where streamed bytes go (km_model_save_sink): 0, or -1 with the reason
 * kept by the sink itself. */
typedef int (*km_sink_fn)(void *ctx, const void *p, size_t n);

/* Checks that X is n x d with every entry finite. */
km_status km_check_matrix(const char *what, const double *X, size_t n,
                          size_t d, km_error *err) KM_MUST_CHECK;

/* ---------------------------------------------------------------- choices */

/*
 * An option's choices (krr's solver, klr's multi_class, a preprocess
 * scale, ...): the names of an enum's values 0 .. count - 1. Each option
 * has one list X(ENUM, "name") in the header of the area that owns it
 * (KM_KRR_SOLVER_MAP, ...); its enum (KM_CHOICE_ENUM), its name table and
 * its km_choices (KM_CHOICES_DEFINE, km_base_internal.h) are generated from
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
/* names[0..n) as messages list them, "a, b, c" with last between the last
 * two (", " or " or "), into buf (cut short when it is full; "" when len
 * is 0 or n is). The one joiner of choice lists, kernel and algorithm
 * names, in core and in the API. */
void km_join_names(const char *const *names, int n, const char *last,
                   char *buf, size_t len);

/* ---------------------------------------------------------------- params */

/*
 * The description of a parameter struct (an algorithm's km_*_params, a
 * km_kernel, a km_preprocess): one row per key a request may give, each
 * saying where its value lives in the struct and what it takes. Each is
 * written once, next to what it describes (the algorithm's descriptor,
 * the kernel table, the preprocessing), and read by the API (its reader,
 * its messages, its OpenAPI fragments and GET /v1), so none of these
 * can drift from core. Defaults are not written in the rows: they are
 * the struct's own (km_param_set's defaults), which a fit records.
 */
typedef enum {
    KM_PARAM_NUMBER,        /* double */
    KM_PARAM_INTEGER,       /* int or size_t (size says which); whole */
    KM_PARAM_BOOL,          /* int, 0 or 1 */
    KM_PARAM_CHOICE,        /* an int-sized enum, by its choices' names */
    KM_PARAM_DISCRIMINATOR, /* the member that picks the struct's kind (a
                               kernel's "type"), by its choices' names */
    KM_PARAM_LABEL_WEIGHTS, /* svc's class_weight: label -> weight, read
                               with the labels; a const double * */
    KM_PARAM_PARTS,         /* a composite kernel's parts ("kernels") */
    KM_PARAM_PART_WEIGHTS,  /* one number per part ("weights") */
    KM_PARAM_READ_ONLY,     /* numbers a model shows and a request may not
                               give (preprocess.x_shift); no field */
    KM_PARAM_INDICES        /* a list of whole numbers in min .. max (a
                               kernel leaf's "columns": its int * field,
                               with its count in the int before it) */
} km_param_type;

/* Who enforces a row's min..max. */
typedef enum {
    KM_PARAM_RANGE_NONE,   /* any finite number */
    KM_PARAM_RANGE_CHECK,  /* core's check (km_krr_check, ...), whose
                              messages name params.<key> */
    KM_PARAM_RANGE_READER  /* the reader of a request: core's check
                              assumes it */
} km_param_range;

typedef struct km_param {
    const char *key;
    km_param_type type;
    size_t offset, size;   /* of the field in the struct */
    km_param_range range;
    double min, max;       /* min > -HUGE_VAL / max < HUGE_VAL: bounded */
    int min_open;          /* min itself excluded (> min) */
    int required;
    /* CHOICE, DISCRIMINATOR: the names of values 0 .. count - 1. */
    const km_choices *choices;
    /* Another spelling of the row named alias_of: the value is converted
     * (convert returns -1 when the result is not a valid value of the
     * target) and stored at the target's offset; never written back. */
    const char *alias_of;
    int (*convert)(double in, double *out);
    /* The default is set from the data at fit time (gamma: 1/n_features)
     * rather than a constant. */
    int data_default;
    /* An upper bound only the data give, for messages ("the number of
     * rows of X"); max is then a bound of the type only. */
    const char *data_bound;
    /* The row applies only when the CHOICE row named only_if holds
     * only_value or a value of only_also (one bit per value), or when
     * the row named or_if (NULL: none) holds or_value or one of or_also:
     * krr's n_centres with solver "nystrom" or "auto". Given otherwise,
     * it is refused; a fit it does not apply to does not record it. */
    const char *only_if;
    int only_value;
    unsigned only_also;
    const char *or_if;
    int or_value;
    unsigned or_also;
    /* A kernel's row: taken by the kernel types whose km_kernel_info
     * params have this KM_KPARAM_* flag; 0: by every type. */
    unsigned kparam;
    /* A CHOICE row that is its algorithm's solver choice (at most one
     * row of a set): its key, count and names are the solvers' that
     * km_algorithm_solver_* and GET /v1 give. */
    int solver;
    const char *doc;       /* one line for people (OpenAPI, GET /v1) */
} km_param;

/* A struct's rows (ended by a row whose key is NULL), its size, and how
 * to fill one with core's defaults. */
typedef struct km_param_set {
    const km_param *rows;
    size_t size;
    void (*defaults)(void *params);
} km_param_set;

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

/* ---------------------------------------------------------------- progress */

/*
 * Progress and cancellation for long fits. progress, when not NULL, is
 * called with a non-decreasing fraction in [0, 1], from one thread at a
 * time (a fit's own, or one of km_search's workers: never two calls at
 * once); a nonzero return asks the fit to stop, which it does soon after
 * with KM_ECANCELLED (km_search does not call it again after that).
 * threads: threads a fit may run beyond BLAS's own; 0 or 1: one.
 * km_search runs that many points at once (at most its spec's threads:
 * see km_search_spec); krr's nystrom solver maps blocks of kernel values
 * on that many; svc runs its class pairs on that many workers (without
 * probability); the other fits run on the calling thread alone.
 * Last, so that {progress, ctx} initialisers leave it 0.
 */
typedef struct km_dense_engine km_dense_engine;
typedef struct km_fit_control {
    int (*progress)(void *ctx, double fraction);
    void *ctx;
    int threads;
    /* A dense solver elsewhere (kmserve-mpi's ScaLAPACK engine), or NULL:
     * this process. See km_dense_engine (km_fit.h). */
    const km_dense_engine *dense;
} km_fit_control;

/*
 * A part of a fit reported as a whole: a control whose progress 0..1 is
 * the outer control's from..to (cancel passes through). Usage:
 *   km_progress_span sp = {outer, 0.0, 0.6};
 *   km_fit_control sub = {km_progress_span_report, &sp, threads};
 */
typedef struct km_progress_span {
    const km_fit_control *outer;
    double from, to;
} km_progress_span;
int km_progress_span_report(void *span, double fraction);

/* ----------------------------------------------------------- vector math */

/* exp(v[i]) for all i, in place, vectorised; accurate to a few ulps, exact 0
 * below -708. Exposed for benchmarks and tests. */
void km_vexp(double *v, size_t n);

/* ------------------------------------------------------------ BLAS kernels */

/* The name of the kernel set OpenBLAS runs ("SkylakeX", "Haswell", ...). */
const char *km_blas_core(void);
/* The kernel set to ask OpenBLAS for (by OPENBLAS_CORETYPE, before it
 * loads) when the one it runs uses narrower vectors than this CPU has;
 * NULL when it already uses them all, or runs a set km_blas.c does not
 * know. */
const char *km_blas_core_advice(void);
/* BLAS on one thread per call while work runs on several workers (see
 * km_blas.c): begin before the workers start, end after they stop;
 * overlapping users nest, the last end puts back the count the first
 * begin found. */
void km_blas_single_begin(void);
void km_blas_single_end(void);
/* The CPUs online (at least 1). */
size_t km_cpus(void);

/* Rows i0 .. i0 + nb - 1 of a km_blocks_run, with the worker's scratch. */
typedef km_status (*km_block_fn)(void *ctx, size_t i0, size_t nb,
                                 void *scratch, km_error *err);
/* fn over rows 0 .. n - 1 in blocks of at most rows, in order, on nw
 * workers (the calling thread and the threads it can start; at most the
 * blocks), each with scratch_bytes of its own; BLAS on one thread per
 * call while more than one runs. Blocks must write disjoint outputs. The
 * first failure stops the blocks not yet started and is returned. */
km_status km_blocks_run(size_t n, size_t rows, size_t nw,
                        size_t scratch_bytes, km_block_fn fn, void *ctx,
                        km_error *err);

#ifdef __cplusplus
}
#endif
#endif /* KM_BASE_H */
