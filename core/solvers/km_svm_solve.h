/*
 * km_svm_solve.h - the SVM solvers (what core/solvers/ defines for svc
 * and svr): the SMO solver that C-SVC and epsilon-SVR share (km_smo.c),
 * the class pairs on workers (km_svm_pairs.c), svc's nystrom solver
 * (km_svm_nys.c) and its screened solver (km_svm_screen.c), as the svm
 * algorithm's files (core/algorithms/km_svm.c, km_svm_fit.c) call them.
 * Nothing here names what those files define (the svc/svr payload is
 * algorithms/km_svm_payload.h's). Not installed; core only.
 *
 * The solver minimises 1/2 a'Qa + p'a subject to y'a = const and
 * 0 <= a_t <= C_t, where Q_tu = y_t y_u k(x_t, x_u). Variable t stands
 * for the point row[t] of a matrix of distinct points, so epsilon-SVR's
 * 2l variables can share l points.
 *
 * Thread-safety: reentrant; one call works on its own buffers.
 */
#ifndef KM_SVM_SOLVE_H
#define KM_SVM_SOLVE_H

#include <pthread.h>
#include <stdatomic.h>

#include "km_solvers_internal.h"

/* How the solver reaches Q. */
typedef enum smo_storage {
    SMO_AUTO,   /* what measures fastest: the cache (see km_smo.c) */
    SMO_DENSE,  /* the whole Q, computed once (km_gram_sym) or gathered
                   from K; needs n^2 doubles whatever the budget */
    SMO_CACHED  /* an LRU cache of columns within the budget, computed
                   or gathered from K */
} smo_storage;

/* A problem; the solver borrows everything but alpha, which it updates. */
typedef struct smo_problem {
    size_t n;                 /* variables */
    size_t d;                 /* features */
    const double *X;          /* n_points x d distinct points */
    size_t n_points;
    const size_t *row;        /* variable t is point row[t]; NULL: row t */
    const double *K;          /* optional: Gram of the points (n_points^2,
                                 full), shared by several solves; columns
                                 are then gathered, not computed */
    const signed char *y;     /* +1 or -1 */
    const double *p;          /* linear term */
    const double *C;          /* upper bounds, > 0 */
    double *alpha;            /* in: feasible start; out: the solution */
    /* Optional (NULL: none): the gradient Q alpha + p at the start and
     * LIBSVM's G_bar (sum over u at its bound of C_u Q_tu), which the
     * solve then does not compute (an update's start: kept from the old
     * solve, the new variables' computed by the caller); and where the
     * solve writes both at the solution (exact on every variable). */
    const double *G0, *Gbar0;
    double *G_out, *Gbar_out;
} smo_problem;

typedef struct smo_options {
    double tol;               /* stop when the maximal violation < tol */
    int shrinking;
    long max_iter;            /* <= 0: LIBSVM's max(10^7, 100 n) */
    size_t cache_bytes;       /* budget for Q (dense or cached columns) */
    smo_storage storage;
    const km_fit_control *ctl;
    double progress_lo, progress_hi; /* range this solve reports in */
    /* The cached storage's columns in the caller's buffer of pool_size
     * doubles when it holds them all (cache_bytes' worth, at most n^2),
     * so that solves in turn reuse memory already mapped (fresh pages
     * cost a fault each: 8% of a shuttle fit); NULL: the solve's own. */
    double *pool;
    size_t pool_size;
} smo_options;

typedef struct smo_result {
    double rho;               /* decision = sum coef k(x_t, x) - rho */
    double objective;
    long iterations;
    int capped;               /* stopped by the iteration cap */
    int dense;                /* used the dense Q */
} smo_result;

/* An SVM fit's cache_mb in bytes (at most SIZE_MAX / 2): the budget of
 * its kernel values, Q's columns, the Gram of a shared search. */
size_t km_svm_budget_bytes(const km_svm_params *p);

/* o from an SVM fit's params p: tol, shrinking, max_iter, the cache_mb
 * budget, SMO_AUTO storage, and progress through ctl from lo to hi. */
void km_smo_options_of(smo_options *o, const km_svm_params *p,
                       const km_fit_control *ctl, double lo, double hi);

/* Solves pb; fills res. KM_ECANCELLED when the progress callback asks,
 * KM_ENOMEM when buffers cannot be allocated. Borrows k and pb. */
km_status km_smo_solve(const km_kernel *k, const smo_problem *pb,
                       const smo_options *o, smo_result *res,
                       km_error *err) KM_MUST_CHECK;

/* ------------------------------------------------ class pairs on workers */

/* Most workers over one fit's class pairs. */
#define SVC_MAX_WORKERS 8

/* The class pairs of one fit on workers (km_svm_pairs.c): the caller
 * sets ctl, P, the progress range lo..hi the pairs fill, and solve;
 * svc_pairs_run fills the rest. */
typedef struct svc_pairs {
    const km_fit_control *ctl;
    size_t P;
    double lo, hi;
    /* pair pi on a worker's state; KM_OK, or a failure that stops the
     * run (reported to the caller, the first one) */
    km_status (*solve)(void *state, size_t pi, km_error *err);
    pthread_mutex_t lock;   /* next, done, reported, st, err; progress */
    size_t next;            /* the next pair to start */
    double *done;           /* P: each pair's fraction done */
    double reported;
    atomic_int stop;        /* a pair failed or the fit was cancelled */
    km_status st;
    km_error err;
} svc_pairs;

/* Runs q's pairs, in order, on nw workers (the calling thread and the
 * threads it can start, at most SVC_MAX_WORKERS): worker w's state is
 * states + w * size. Each pair ends with its progress at 1; the first
 * failure (or a cancel) stops the others and is returned. */
km_status svc_pairs_run(svc_pairs *q, void *states, size_t size, size_t nw,
                        km_error *err) KM_MUST_CHECK;
/* Pair pi has done the fraction f of its work (never backwards): the
 * fit's progress, lo + (hi - lo) times the pairs' mean, reported under
 * the lock. Nonzero: stop (cancelled here or elsewhere). */
int svc_pairs_progress(svc_pairs *q, size_t pi, double f);
/* The most workers on this machine: SVC_MAX_WORKERS, at most its CPUs. */
size_t svc_most_workers(void);

/* ------------------------------------------------ svc's nystrom solver */

/* What km_svc_nys_solve gives (km_svm_nys.c); the caller owns the
 * arrays (km_svc_nys_free). */
typedef struct svc_nys_result {
    double *Z;         /* m x d centres, in the order of X */
    size_t m;          /* (rpcholesky: fewer than asked at K's rank) */
    double *coef;      /* m x P row-major: pair p's T^-1 w in column p */
    double *rho;       /* P: decision = k_m(x)^T coef - rho */
    double *objective; /* P: dual objectives a^T Q a / 2 - sum a */
    long epochs;       /* over all pairs */
    double gap;        /* the largest final projected-gradient spread */
    int capped;        /* pairs stopped by the epoch cap */
    double feature_seconds; /* of K_mm's factor and Phi */
} svc_nys_result;

/* The solve of an svc fit with params.solver nystrom (p checked): X the
 * rows in their order, grouped by class through order: class c is rows
 * order[start[c]] .. order[start[c + 1] - 1] of X. The pairs run on up
 * to ctl->threads threads (the same answer on any number). Progress
 * from 0 to 0.99; KM_ECANCELLED when it asks to stop. margin, when not
 * NULL (n x (K - 1), grouped rows), gets every row's y f(x) in each of
 * its pairs, LIBSVM's coefficient layout: row g of class c, pair (c, b)
 * at column b if b < c else b - 1, y = +1 for class c. */
km_status km_svc_nys_solve(const km_kernel *k, const km_svm_params *p,
                           const double *X, size_t n, size_t d,
                           const size_t *order, const size_t *start, size_t K,
                           const km_fit_control *ctl, double *margin,
                           svc_nys_result *res, km_error *err) KM_MUST_CHECK;
void km_svc_nys_free(svc_nys_result *r);
/* Bytes a nystrom fit of n rows, d features and k classes holds. */
size_t km_svc_nys_fit_bytes(size_t n, size_t d, size_t k,
                            const km_svm_params *p);

/* ------------------------------------------------ svc's screened solver */

/* Figures of a screened solve (km_svm_screen.c). */
typedef struct svc_screen_figures {
    long iterations;       /* SMO's, over all pairs and rounds */
    int capped;            /* solves stopped by the iteration cap */
    size_t centres;        /* the screen's centres (0: no screen, K_mm
                              could not be factored) */
    size_t working;        /* rows of the final working sets, all pairs */
    size_t added;          /* rows the checks added to them */
    int rounds;            /* most rounds of one pair */
    double screen_seconds; /* of the screen */
} svc_screen_figures;

/* The solve of an svc fit with params.solver screened (p checked): X the
 * rows in their order, Xg the same rows grouped by class (class c at
 * rows start[c] .. start[c + 1] - 1; Xg's row g is X's row order[g]).
 * Fills what the exact solver's pairs fill: coef (n x (K - 1), zeroed by
 * the caller; LIBSVM's layout), nz (n, zeroed: 1 for a support vector),
 * and per pair rho, the dual objective and |w|^2. Progress from 0 to
 * 0.99; KM_ECANCELLED when it asks to stop. */
km_status km_svc_screen_solve(const km_kernel *k, const km_svm_params *p,
                              const double *X, const double *Xg, size_t n,
                              size_t d, const size_t *order,
                              const size_t *start, size_t K,
                              const km_fit_control *ctl, double *coef,
                              unsigned char *nz, double *rho, double *obj,
                              double *wsq, svc_screen_figures *fig,
                              km_error *err) KM_MUST_CHECK;
/* Bytes a screened fit of n rows, d features and k classes holds. */
size_t km_svc_screen_fit_bytes(size_t n, size_t d, size_t k,
                               const km_svm_params *p);

#endif /* KM_SVM_SOLVE_H */
