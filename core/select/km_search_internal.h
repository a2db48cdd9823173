/*
 * km_search_internal.h - what the files of model selection share: a
 * search run's state (km_search_run.c), the two engines that run it
 * (km_search_gen.c, km_search_krr.c) and their tuning constants. Only
 * core/select includes it; km_search.c checks the spec and calls an
 * engine, the engines call km_search_run.c, and nothing calls back.
 *
 * Thread-safety: as each function says; a run's lock serialises the
 * shared bookkeeping.
 */
#ifndef KM_SEARCH_INTERNAL_H
#define KM_SEARCH_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "km_select_internal.h"

/*
 * An eigendecomposition (dsyevd, eigenvectors) of an n x n Gram costs
 * about this many Choleskys (dpotrf) of it. Measured on this machine
 * (OpenBLAS, 2 cores shared, rbf Gram of uniform data, d = 20, median
 * of single runs): n = 500: 12, 1000: 15, 2000: 15, 3000: 18, 5000: 22.
 * A KFOLD fold of krr takes one eigendecomposition for all its alphas
 * when the group has at least this many alphas, else one Cholesky per
 * alpha (each alpha's extra work after the eigendecomposition is
 * O(n^2 m), negligible beside either).
 *
 * dsyevd against dsyevr, same runs: dsyevd took 0.80-0.87 of dsyevr's
 * time (n = 2000: 0.51 s vs 0.64 s; 3000: 1.83 vs 2.21; 5000: 9.2 vs
 * 10.5), at the price of 2 n^2 doubles of workspace (dsyevr: n^2 for
 * its separate eigenvectors); dsyevd is used, km_search_bytes counts it.
 */
#define KRR_EIG_CHOLESKYS 18

/* Alphas per batch of the closed forms (bounds the n x batch x m
 * buffers). */
#define ALPHA_BATCH 32
/* Right-hand sides (rows of Q) per block of the closed forms' diagonal
 * sweep (km_search_krr.c): the block of Q and its forward sweep, 2 n
 * DIAG_IB doubles, stay in L2. */
#define DIAG_IB 16

/* ------------------------------------------------------------ a run */

/* Per point: Welford's running mean and sum of squared deviations of its
 * fold scores, its fit seconds, and whether it failed; touched only by
 * the thread running the point. rank: its place in the serial order
 * (the generic engine's; 0 for krr's), which decides the first failure
 * whatever thread finds it. */
typedef struct point_acc {
    size_t count;
    double mean, m2, seconds;
    int failed;
    size_t rank;
} point_acc;

/*
 * A run's state. With several workers (the generic engine), lock guards
 * done, reported, the first failure and the hard status, and serialises
 * the progress callback; stop is set (under lock) with the first hard
 * status (a cancel is one), and every worker stops at its next fold or
 * progress report.
 */
typedef struct search_run {
    const km_search_spec *s;
    const km_problem *pb;
    const km_fit_control *ctl;
    const int *fold;
    size_t n_splits;
    int threads;        /* workers of the generic engine */
    point_acc *acc;
    double units, done; /* (point, fold) units in all, and started */
    double reported;    /* the last fraction reported */
    km_status first_status; /* the first point failure, for the message */
    size_t first_rank;
    char first_msg[400];
    pthread_mutex_t lock;
    atomic_int stop;
    km_status hard;     /* what ended the search */
    char hard_msg[sizeof ((km_error *)0)->message];
} search_run;

/* A fit's progress mapped into [base, base + 1] of the search's units. */
typedef struct sub_ctx {
    search_run *r;
    double base;
} sub_ctx;

/* One split's rows: indices, copies, and svc's class map. */
typedef struct split {
    size_t ntr, nte;
    size_t *tr, *te;
    double *Xtr, *Xte, *ytr, *yte;
    int *ltr, *lte;   /* ltr: training classes renumbered 0 .. ktr-1 */
    size_t ktr;
    int *cls;         /* ktr: training class -> original class */
    int *inv;         /* n_classes: original -> training class or -1 */
} split;

/* Ends the search with st (message msg) unless it has ended already:
 * the first one wins. Takes the lock. */
void km_search_stop(search_run *r, km_status st, const char *msg);

/* Whether st fails a point only (KM_EPROBLEM, KM_ENOTPD, KM_ENOCONV). */
int km_search_is_point_failure(km_status st);

/* Marks point p failed at fold f (fold < 0: no fold) with st and msg. */
void km_search_fail_point(search_run *r, size_t p, long f, km_status st,
                          const char *msg);

/* A failure st (message msg) of point p's fit on fold f: a failure of
 * its data or parameters (is_point_failure) fails the point and the
 * search goes on (KM_OK); any other status ends it, returned with err
 * naming the point and fold. */
km_status km_search_point_failed(search_run *r, size_t p, long f, km_status st,
                                 const char *msg, km_error *err);

/* Point p's score of its answers a on fold f (f < 0: the pooled or
 * closed-form score), by km_score_answers, recorded. Answers it refuses
 * (a prediction that is not a finite number) fail the point; only
 * KM_ENOMEM ends the search. */
km_status km_search_score(search_run *r, size_t p, long f, const km_answers *a,
                          km_error *err);

/* Reports units of r->units done (or the last report, if more) through
 * the callback, one thread at a time; 1 when the search has stopped or
 * the callback asks it to (which stops it: KM_ECANCELLED). */
int km_search_report(search_run *r, double units);

/* km_search_report, with KM_ECANCELLED (or the hard status) in err when
 * the search has stopped. */
km_status km_search_progress(search_run *r, double units, km_error *err);

/* A fit's progress callback (ctx: a sub_ctx). */
int km_search_sub_progress(void *ctx, double f);

/* Frees sp's buffers. */
void km_split_free(split *sp);

/* Buffers for any split of pb; copies only when copy is set. */
km_status km_split_alloc(split *sp, const km_problem *pb, int copy,
                         km_error *err);

/* Fills sp with split f's indices (GCV: all rows train, none test) and,
 * when copy, its rows. */
void km_split_take(split *sp, const km_problem *pb, const int *fold,
                   long f, int copy);

/* Whether two resolved kernels compute the same function: the same type
 * and, of the parameters the type takes, the same values; parts alike. */
int km_search_kernel_equal(const km_kernel *a, const km_kernel *b);

/* Whether every point of s is one its algorithm's search engine serves
 * (km_algo_search.serves: krr's closed forms, svc's and svr's shared
 * Gram); 0 for an algorithm without one, or without params. */
int km_search_points_served(const km_search_spec *s);

/* ------------------------------------------------------------ engines */

/* The generic engine: every algorithm, each point's folds fitted and
 * scored (km_search_gen.c). */
km_status km_search_run_generic(search_run *r, km_error *err);
/* krr: the points grouped by resolved kernel, each group by closed form
 * (LOO, GCV) or by shared Grams (KFOLD, PREDEFINED). */
km_status km_search_run_krr(search_run *r, km_error *err);

#endif /* KM_SEARCH_INTERNAL_H */
