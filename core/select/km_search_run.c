/*
 * km_search_run.c - a search run's state and bookkeeping, which both
 * engines (km_search_gen.c, km_search_krr.c) write through: per-point
 * scores (Welford's update), the first failure and the hard status that
 * ends a search, progress reports, a split's rows, and whether two
 * kernels are the same function (both engines group points by it). It
 * calls no engine.
 *
 * Thread-safety: the functions that touch shared state take the run's
 * lock (km_search_stop, km_search_fail_point, km_search_report); a
 * point's accumulator is touched only by the thread running it.
 */
#include <cblas.h>
#include <float.h>
#include <lapacke.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/km_base_internal.h"
#include "../model/km_model_internal.h"
#include "km_search_internal.h"

/* ------------------------------------------------------------ state */

/* Ends the search with st (message msg) unless it has ended already:
 * the first one wins. Lock held. */
static void stop_locked(search_run *r, km_status st, const char *msg)
{
    if (r->hard == KM_OK) {
        r->hard = st;
        snprintf(r->hard_msg, sizeof r->hard_msg, "%s", msg);
    }
    atomic_store(&r->stop, 1);
}

void km_search_stop(search_run *r, km_status st, const char *msg)
{
    pthread_mutex_lock(&r->lock);
    stop_locked(r, st, msg);
    pthread_mutex_unlock(&r->lock);
}

static void add_score(point_acc *a, double v)
{
    a->count++;
    double delta = v - a->mean;
    a->mean += delta / (double)a->count;
    a->m2 += delta * (v - a->mean);
}

int km_search_is_point_failure(km_status st)
{
    return st == KM_EPROBLEM || st == KM_ENOTPD || st == KM_ENOCONV;
}

/* Marks point p failed at fold f (fold < 0: no fold) with st and msg. */
void km_search_fail_point(search_run *r, size_t p, long f, km_status st,
                          const char *msg)
{
    if (r->acc[p].failed)
        return;
    r->acc[p].failed = 1;
    pthread_mutex_lock(&r->lock);
    if (r->first_status == KM_OK || r->acc[p].rank < r->first_rank) {
        r->first_status = st;
        r->first_rank = r->acc[p].rank;
        if (f >= 0)
            snprintf(r->first_msg, sizeof r->first_msg,
                     "points[%zu], cv fold %ld: %s", p, f, msg);
        else
            snprintf(r->first_msg, sizeof r->first_msg, "points[%zu]: %s", p,
                     msg);
    }
    pthread_mutex_unlock(&r->lock);
}

/* A failure st (message msg) of point p's fit on fold f: a failure of
 * its data or parameters (is_point_failure) fails the point and the
 * search goes on (KM_OK); any other status ends it, returned with err
 * naming the point and fold. */
km_status km_search_point_failed(search_run *r, size_t p, long f, km_status st,
                                 const char *msg, km_error *err)
{
    if (!km_search_is_point_failure(st))
        return km_error_set(err, st, "points[%zu], cv fold %ld: %s", p, f,
                            msg);
    km_search_fail_point(r, p, f, st, msg);
    return KM_OK;
}

/* A fold's (or the pooled) score of point p; a score that is not a
 * finite number fails the point. */
static void record(search_run *r, size_t p, long f, double v)
{
    if (r->acc[p].failed)
        return;
    if (!isfinite(v)) {
        km_search_fail_point(r, p, f, KM_EPROBLEM, "the score is not a "
                             "finite number (the predictions overflow)");
        return;
    }
    add_score(&r->acc[p], v);
}

/* Point p's score of its answers a on fold f (f < 0: the pooled or
 * closed-form score), by km_score_answers, recorded. Answers it refuses
 * (a prediction that is not a finite number) fail the point; only
 * KM_ENOMEM ends the search. */
km_status km_search_score(search_run *r, size_t p, long f, const km_answers *a,
                          km_error *err)
{
    km_error e = {0};
    double v;
    km_status st = km_score_answers(r->s->scoring, a, &v, &e);
    if (st == KM_ENOMEM)
        return km_error_set(err, st, "%s", e.message);
    if (st != KM_OK)
        km_search_fail_point(r, p, f, KM_EPROBLEM, e.message);
    else if (isnan(v) && a->n < 2) /* r2 of one row, NAN as sklearn's */
        km_search_fail_point(r, p, f, KM_EPROBLEM, "r2 is not defined on "
                             "a fold of one test row; use fewer folds, or "
                             "cv loo (scored on all its predictions "
                             "together)");
    else
        record(r, p, f, v);
    return KM_OK;
}

/* Reports units of r->units done (or the last report, if more) through
 * the callback, one thread at a time; 1 when the search has stopped or
 * the callback asks it to (which stops it: KM_ECANCELLED). */
int km_search_report(search_run *r, double units)
{
    if (atomic_load(&r->stop))
        return 1;
    if (!r->ctl || !r->ctl->progress)
        return 0;
    pthread_mutex_lock(&r->lock);
    int stop = atomic_load(&r->stop);
    if (!stop) {
        double f = units / r->units;
        if (f < r->reported)
            f = r->reported;
        r->reported = f;
        if (km_progress(r->ctl, f)) {
            stop_locked(r, KM_ECANCELLED, "search cancelled");
            stop = 1;
        }
    }
    pthread_mutex_unlock(&r->lock);
    return stop;
}

km_status km_search_progress(search_run *r, double units, km_error *err)
{
    if (km_search_report(r, units))
        return km_error_set(err, r->hard ? r->hard : KM_ECANCELLED, "%s",
                            r->hard ? r->hard_msg : "search cancelled");
    return KM_OK;
}

int km_search_sub_progress(void *ctx, double f)
{
    sub_ctx *c = ctx;
    return km_search_report(c->r, c->base + f);
}

/* ------------------------------------------------------------ fold rows */

void km_split_free(split *sp)
{
    free(sp->tr);
    free(sp->te);
    free(sp->Xtr);
    free(sp->Xte);
    free(sp->ytr);
    free(sp->yte);
    free(sp->ltr);
    free(sp->lte);
    free(sp->cls);
    free(sp->inv);
    memset(sp, 0, sizeof *sp);
}

/* Buffers for any split of pb; copies only when copy is set. */
km_status km_split_alloc(split *sp, const km_problem *pb, int copy,
                         km_error *err)
{
    size_t n = pb->n, d = pb->d, m = pb->y ? pb->m : 0;
    memset(sp, 0, sizeof *sp);
    int ok = (sp->tr = malloc(n * sizeof *sp->tr)) &&
             (sp->te = malloc(n * sizeof *sp->te));
    if (ok && copy)
        ok = (sp->Xtr = malloc(n * d * sizeof(double))) &&
             (sp->Xte = malloc(n * d * sizeof(double))) &&
             (!m || ((sp->ytr = malloc(n * m * sizeof(double))) &&
                     (sp->yte = malloc(n * m * sizeof(double))))) &&
             (!pb->labels ||
              ((sp->ltr = malloc(n * sizeof(int))) &&
               (sp->lte = malloc(n * sizeof(int))) &&
               (sp->cls = malloc(pb->n_classes * sizeof(int))) &&
               (sp->inv = malloc(pb->n_classes * sizeof(int)))));
    if (!ok) {
        km_split_free(sp);
        return km_error_set(err, KM_ENOMEM, "out of memory for the folds' "
                            "rows");
    }
    return KM_OK;
}

/* Fills sp with split f's indices (GCV: all rows train, none test) and,
 * when copy, its rows. */
void km_split_take(split *sp, const km_problem *pb, const int *fold,
                   long f, int copy)
{
    size_t n = pb->n, d = pb->d, m = pb->y ? pb->m : 0;
    sp->ntr = sp->nte = 0;
    for (size_t i = 0; i < n; i++) {
        if (fold[i] == f && f >= 0)
            sp->te[sp->nte++] = i;
        else
            sp->tr[sp->ntr++] = i;
    }
    if (!copy)
        return;
    for (size_t a = 0; a < sp->ntr; a++) {
        memcpy(sp->Xtr + a * d, pb->X + sp->tr[a] * d, d * sizeof(double));
        if (m)
            memcpy(sp->ytr + a * m, pb->y + sp->tr[a] * m, m * sizeof(double));
    }
    for (size_t a = 0; a < sp->nte; a++) {
        memcpy(sp->Xte + a * d, pb->X + sp->te[a] * d, d * sizeof(double));
        if (m)
            memcpy(sp->yte + a * m, pb->y + sp->te[a] * m, m * sizeof(double));
    }
    if (pb->labels) {
        for (size_t c = 0; c < pb->n_classes; c++)
            sp->inv[c] = -1;
        for (size_t a = 0; a < sp->ntr; a++)
            sp->inv[pb->labels[sp->tr[a]]] = 0;
        sp->ktr = 0;
        for (size_t c = 0; c < pb->n_classes; c++)
            if (sp->inv[c] == 0) {
                sp->cls[sp->ktr] = (int)c;
                sp->inv[c] = (int)sp->ktr++;
            }
        for (size_t a = 0; a < sp->ntr; a++)
            sp->ltr[a] = sp->inv[pb->labels[sp->tr[a]]];
        for (size_t a = 0; a < sp->nte; a++)
            sp->lte[a] = pb->labels[sp->te[a]];
    }
}

/* ------------------------------------------------------------ kernels */

/* Whether two resolved kernels compute the same function: the same type
 * and, of the parameters the type takes, the same values; parts alike. */
int km_search_kernel_equal(const km_kernel *a, const km_kernel *b)
{
    if (a->type != b->type || a->n_parts != b->n_parts)
        return 0;
    const km_kernel_info *in = km_kernel_type_info(a->type);
    if (!in)
        return 0;
    if (((in->params & KM_KPARAM_GAMMA) && a->gamma != b->gamma) ||
        ((in->params & KM_KPARAM_DEGREE) && a->degree != b->degree) ||
        ((in->params & KM_KPARAM_COEF0) && a->coef0 != b->coef0) ||
        ((in->params & KM_KPARAM_LENGTH) && a->length != b->length) ||
        ((in->params & KM_KPARAM_LAMBDA) && a->lambda != b->lambda) ||
        a->n_columns != b->n_columns ||
        (a->n_columns &&
         memcmp(a->columns, b->columns,
                (size_t)a->n_columns * sizeof *a->columns)))
        return 0;
    for (int i = 0; i < a->n_parts; i++) {
        double wa = a->weights ? a->weights[i] : 1.0;
        double wb = b->weights ? b->weights[i] : 1.0;
        if (((in->params & KM_KPARAM_WEIGHTS) && wa != wb) ||
            !km_search_kernel_equal(&a->parts[i], &b->parts[i]))
            return 0;
    }
    return 1;
}

int km_search_points_served(const km_search_spec *s)
{
    const km_algo_search *se = km_algo_of(s->algo)->search;
    if (!se || !se->serves || !s->params)
        return 0;
    size_t ps = km_algorithm_params_size(s->algo);
    for (size_t p = 0; p < s->n_points; p++)
        if (!se->serves((const unsigned char *)s->params + p * ps))
            return 0;
    return 1;
}
