/*
 * km_search_gen.c - the generic engine of model selection (km_search.c
 * says what it does; the run's state is km_search_run.c's): every
 * algorithm's points, each fold's rows copied out, fitted by
 * km_fit_inner, predicted and scored, on km_search_threads' workers;
 * for an algorithm of KM_SEARCH_SHARED_GRAM (svc, svr), the points of
 * one kernel share the Gram of all rows.
 *
 * Thread-safety: reentrant; one run's workers share it under its lock.
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
#include "../algorithms/km_algorithms_internal.h"
#include "km_search_internal.h"

/* ------------------------------------------------------------ generic */

/* svc and svr without preprocessing: the points in groups of equal
 * resolved kernel (order[]: the points group by group, groups in the
 * order of their first point; leader[p]: p's group's first point), so
 * that one Gram of all rows serves every fit of a group. Otherwise the
 * points in their order, each its own group. */
static km_status group_points(const search_run *r, int share, size_t *order,
                              size_t *leader, km_error *err)
{
    const km_search_spec *s = r->s;
    size_t P = s->n_points, nk = 0, o = 0;
    km_status st = KM_OK;
    km_kernel *rk = share ? calloc(P, sizeof *rk) : NULL;
    if (share && !rk)
        return km_error_set(err, KM_ENOMEM, "out of memory for the search");
    for (size_t p = 0; p < P; p++)
        leader[p] = p;
    for (; share && nk < P; nk++) {
        if ((st = km_kernel_copy(&rk[nk], &s->kernels[nk], err)) != KM_OK)
            goto out;
        km_kernel_resolve(&rk[nk], r->pb->d);
        for (size_t q = 0; q < nk; q++)
            if (leader[q] == q && km_search_kernel_equal(&rk[nk], &rk[q])) {
                leader[nk] = q;
                break;
            }
    }
    for (size_t p = 0; p < P; p++)
        if (leader[p] == p)
            for (size_t q = p; q < P; q++)
                if (leader[q] == p)
                    order[o++] = q;
out:
    for (size_t i = 0; i < nk; i++)
        km_kernel_cleanup(&rk[i]);
    free(rk);
    return st;
}

/* What one worker of the generic engine writes into: a split's indices
 * and rows, the test and pooled answers, the point's params copy and
 * svc's class-weight map. */
typedef struct gen_ws {
    split sp;
    double *P, *Pool, *proba, *probk, *proj, *cw;
    int *lab, *labpool;
    unsigned char *pbuf;
} gen_ws;

/* What the workers share, read-only but for next (under r->lock): the
 * batch's points are order[next .. hi). */
typedef struct gen_run {
    search_run *r;
    const km_algo *al;
    size_t ps, pcols;
    unsigned need;
    int loo;
    const size_t *order;
    const double *Kall; /* the batch's shared Gram, or NULL */
    size_t next, hi;
} gen_run;

typedef struct gen_worker {
    gen_run *g;
    gen_ws *w;
    pthread_t tid;
} gen_worker;

static void ws_free(gen_ws *w)
{
    km_split_free(&w->sp);
    free(w->P);
    free(w->Pool);
    free(w->proba);
    free(w->probk);
    free(w->proj);
    free(w->cw);
    free(w->lab);
    free(w->labpool);
    free(w->pbuf);
    memset(w, 0, sizeof *w);
}

static km_status ws_alloc(gen_ws *w, const gen_run *g, km_error *err)
{
    const km_problem *pb = g->r->pb;
    size_t n = pb->n, k = pb->n_classes, pcols = g->pcols;
    memset(w, 0, sizeof *w);
    km_status st = km_split_alloc(&w->sp, pb, 1, err);
    if (st != KM_OK)
        return st;
    int ok = (w->pbuf = malloc(g->ps)) != NULL;
    if (ok && pcols)
        ok = (w->P = malloc(n * pcols * sizeof *w->P)) &&
             (!g->loo || (w->Pool = malloc(n * pcols * sizeof *w->Pool)));
    if (ok && (g->need & KM_OUT_LABELS))
        ok = (w->lab = malloc(n * sizeof *w->lab)) &&
             (w->labpool = malloc(n * sizeof *w->labpool)) &&
             (w->cw = malloc(k * sizeof *w->cw));
    if (ok && (g->need & KM_OUT_PROBABILITIES))
        ok = (w->proba = malloc(n * k * sizeof *w->proba)) &&
             (w->probk = malloc(n * k * sizeof *w->probk));
    if (!ok) {
        ws_free(w);
        return km_error_set(err, KM_ENOMEM, "out of memory for the search");
    }
    return KM_OK;
}

/* Claims the next fold's unit (*base: the units started before it) and
 * reports them; 1 when the search has stopped. */
static int fold_start(search_run *r, double *base)
{
    pthread_mutex_lock(&r->lock);
    *base = r->done;
    r->done += 1;
    pthread_mutex_unlock(&r->lock);
    return km_search_report(r, *base);
}

/* Point p on every split, with w's buffers; a status that ends the
 * search is returned with err set (KM_ECANCELLED when it has stopped). */
static km_status gen_point(const gen_run *g, gen_ws *w, size_t p,
                           km_error *err)
{
    search_run *r = g->r;
    const km_search_spec *s = r->s;
    const km_problem *pb = r->pb;
    size_t n = pb->n, d = pb->d, k = pb->n_classes, pcols = g->pcols;
    unsigned need = g->need;
    int loo = g->loo;
    const void *params = (const char *)s->params + p * g->ps;
    point_acc *acc = &r->acc[p];
    split *sp = &w->sp;
    km_status st = KM_OK;
    for (size_t f = 0; f < r->n_splits; f++) {
        double base;
        if (fold_start(r, &base))
            return km_error_set(err, KM_ECANCELLED, "search stopped");
        if (acc->failed)
            continue;
        km_split_take(sp, pb, r->fold, (long)f, 1);
        km_problem tp = {sp->Xtr, sp->ntr, d, sp->ytr, pb->y ? pb->m : 0,
                         sp->ltr, sp->ktr};
        memcpy(w->pbuf, params, g->ps);
        if (g->al->cv_params)
            g->al->cv_params(w->pbuf, km_scoring_needs(s->scoring));
        if (g->al->search && g->al->search->fold_classes)
            g->al->search->fold_classes(w->pbuf, sp->cls, sp->ktr, w->cw);
        /* several workers: the fits see the stop flag through it */
        sub_ctx sc = {r, base};
        km_fit_control sub = {km_search_sub_progress, &sc, 0};
        const km_fit_control *fc = r->ctl || r->threads > 1 ? &sub : NULL;
        km_model *model = NULL;
        km_error e = {0};
        double t0 = km_now();
        if (g->Kall) {
            km_shared_gram sg = {g->Kall, pb->X, n, sp->tr};
            st = km_svm_fit_shared(s->algo, &s->kernels[p],
                                   (void *)w->pbuf, &tp, &sg, fc, &model, &e);
        } else {
            st = km_fit_inner(s->algo, &s->kernels[p], w->pbuf, &s->pre, &tp,
                              fc, 0, &model, &e);
        }
        acc->seconds += km_now() - t0;
        if (st == KM_OK) {
            size_t nte = sp->nte;
            if (need & KM_OUT_VALUES) {
                st = km_predict(model, KM_OUT_VALUES, sp->Xte, nte, w->P, &e);
            } else if (need & KM_OUT_INVERSE) {
                size_t nc = km_model_n_outputs(model);
                double *pj = realloc(w->proj, nte * nc * sizeof *pj);
                if (pj)
                    w->proj = pj;
                st = !pj ? km_error_set(&e, KM_ENOMEM, "out of memory")
                     : km_predict(model, KM_OUT_PROJECTIONS, sp->Xte, nte,
                                  w->proj, &e);
                if (st == KM_OK)
                    st = km_predict(model, KM_OUT_INVERSE, w->proj, nte, w->P,
                                    &e);
            } else {
                st = km_predict_labels(model, sp->Xte, nte, w->lab, &e);
                for (size_t a = 0; st == KM_OK && a < nte; a++)
                    w->lab[a] = sp->cls[w->lab[a]];
                if (st == KM_OK && (need & KM_OUT_PROBABILITIES)) {
                    st = km_predict(model, KM_OUT_PROBABILITIES, sp->Xte,
                                    nte, w->probk, &e);
                    for (size_t a = 0; st == KM_OK && a < nte; a++) {
                        double *row = (loo ? w->proba + sp->te[a] * k
                                           : w->proba + a * k);
                        memset(row, 0, k * sizeof *row);
                        for (size_t c = 0; c < sp->ktr; c++)
                            row[sp->cls[c]] = w->probk[a * sp->ktr + c];
                    }
                }
            }
        }
        km_model_free(model);
        if (st != KM_OK) {
            if ((st = km_search_point_failed(r, p, (long)f, st, e.message,
                                             err)) != KM_OK)
                return st;
            continue;
        }
        if (loo) { /* one test row: pool it */
            size_t i = sp->te[0];
            if (pcols)
                memcpy(w->Pool + i * pcols, w->P, pcols * sizeof *w->P);
            if (w->lab)
                w->labpool[i] = w->lab[0];
            continue;
        }
        km_answers a = {.n = sp->nte, .m = pcols, .k = k,
                        .Y = need & KM_OUT_VALUES ? sp->yte : sp->Xte,
                        .P = w->P, .truth = sp->lte, .pred = w->lab,
                        .proba = w->proba};
        if ((st = km_search_score(r, p, (long)f, &a, err)) != KM_OK)
            return st;
    }
    if (loo && !acc->failed) {
        km_answers a = {.n = n, .m = pcols, .k = k,
                        .Y = need & KM_OUT_VALUES ? pb->y : pb->X,
                        .P = w->Pool, .truth = pb->labels, .pred = w->labpool,
                        .proba = w->proba};
        if ((st = km_search_score(r, p, -1, &a, err)) != KM_OK)
            return st;
    }
    return KM_OK;
}

/* A worker: the batch's next point until there is none or the search
 * has stopped; a status that ends the search stops it (the first wins). */
static void *gen_work(void *arg)
{
    gen_worker *wk = arg;
    gen_run *g = wk->g;
    search_run *r = g->r;
    for (;;) {
        pthread_mutex_lock(&r->lock);
        size_t i = g->next < g->hi ? g->next++ : g->hi;
        pthread_mutex_unlock(&r->lock);
        if (i >= g->hi || atomic_load(&r->stop))
            break;
        km_error e = {0};
        km_status st = gen_point(g, wk->w, g->order[i], &e);
        if (st != KM_OK) {
            km_search_stop(r, st, e.message);
            break;
        }
    }
    return NULL;
}

/* The batch order[lo .. hi) on up to nw workers: the calling thread and
 * the threads it can start. */
static void run_batch(gen_run *g, gen_worker *wk, size_t nw, size_t lo,
                      size_t hi)
{
    size_t started = 1;
    g->next = lo;
    g->hi = hi;
    if (nw > hi - lo)
        nw = hi - lo;
    for (; started < nw; started++)
        if (pthread_create(&wk[started].tid, NULL, gen_work, &wk[started]))
            break; /* fewer workers */
    gen_work(&wk[0]);
    for (size_t t = 1; t < started; t++)
        pthread_join(wk[t].tid, NULL);
}

/* Shares group leader p's Gram of all rows among its points' fits, when
 * there are several and it takes at most half of every one of their
 * cache_mb; NULL otherwise (the fits compute their own columns). */
static double *group_gram(search_run *r, size_t p, const size_t *leader)
{
    const km_search_spec *s = r->s;
    const km_problem *pb = r->pb;
    size_t n = pb->n, d = pb->d, ps = km_algorithm_params_size(s->algo);
    size_t g = 0;
    double budget = HUGE_VAL;
    for (size_t q = p; q < s->n_points; q++)
        if (leader[q] == p) {
            double b = km_algo_of(s->algo)->search->cache_bytes(
                (const char *)s->params + q * ps);
            budget = b < budget ? b : budget;
            g++;
        }
    double gram = (double)n * (double)n * sizeof(double);
    if (!(g * r->n_splits > 1 && gram <= budget / 2))
        return NULL;
    double t0 = km_now();
    km_error e = {0};
    km_kernel kr;
    double *Kall = malloc(n * n * sizeof *Kall);
    if (Kall && km_kernel_copy(&kr, &s->kernels[p], &e) == KM_OK) {
        km_kernel_resolve(&kr, d);
        if (km_gram_sym(&kr, pb->X, n, d, Kall, 1, &e) != KM_OK) {
            free(Kall); /* the fits compute their own */
            Kall = NULL;
        }
        km_kernel_cleanup(&kr);
    } else {
        free(Kall);
        Kall = NULL;
    }
    double each = (km_now() - t0) / (double)g;
    for (size_t q = p; Kall && q < s->n_points; q++)
        if (leader[q] == p)
            r->acc[q].seconds += each;
    return Kall;
}

/*
 * Every point on every split through km_fit_inner. LOO pools the n left-out
 * predictions of a point and scores them once. svc's fold fits learn the
 * classes their rows hold, renumbered (with class_weight renumbered
 * alike); their answers are mapped back to the original classes.
 *
 * svc and svr without preprocessing: the points of one resolved kernel
 * share one Gram of all rows (km_gram_sym) when it takes at most half
 * of every one of their params.cache_mb (the rule of an svc fit's own
 * Gram), and each fit gathers its kernel columns from it
 * (km_svm_fit_shared, the same fit as km_fit's) instead of computing
 * them; its time is shared among the group's fits.
 *
 * The points run on r->threads workers (gen_work), each with its own
 * buffers (gen_ws), taking the next point of a batch: a group of one
 * kernel (its Gram computed first, freed after) when svc and svr share
 * them, else all the points. A point's folds run in order on one
 * worker, which alone touches its accumulator, so the results do not
 * depend on the number of workers; the first failure is the first in
 * the serial order (point_acc.rank).
 */
/* Whether s's points share the Gram of all rows: an algorithm of
 * KM_SEARCH_SHARED_GRAM (svc, svr) without preprocessing, every point of
 * the solver that takes kernel values given (exact; nystrom and screened
 * points compute their own). */
static int shares_gram(const km_search_spec *s)
{
    const km_algo_search *se = km_algo_of(s->algo)->search;
    return se && (se->caps & KM_SEARCH_SHARED_GRAM) &&
           s->pre.x == KM_SCALE_NONE && !s->pre.center_y &&
           km_search_points_served(s);
}

km_status km_search_run_generic(search_run *r, km_error *err)
{
    const km_search_spec *s = r->s;
    const km_problem *pb = r->pb;
    size_t m = pb->y ? pb->m : 1, d = pb->d, P = s->n_points;
    unsigned need = km_scoring_needs(s->scoring);
    int share = shares_gram(s);
    gen_run g = {.r = r, .al = km_algo_of(s->algo),
                 .ps = km_algorithm_params_size(s->algo), .need = need,
                 .loo = s->cv.kind == KM_CV_LOO};
    if (need & KM_OUT_VALUES)
        g.pcols = m;
    else if (need & KM_OUT_INVERSE)
        g.pcols = d;
    size_t nw = r->threads > 1 ? (size_t)r->threads : 1;
    nw = nw < P ? nw : P;
    size_t *order = malloc(P * sizeof *order);
    size_t *leader = malloc(P * sizeof *leader);
    gen_ws *ws = calloc(nw, sizeof *ws);
    gen_worker *wk = calloc(nw, sizeof *wk);
    double *Kall = NULL;
    km_status st = KM_OK;
    if (!order || !leader || !ws || !wk) {
        st = km_error_set(err, KM_ENOMEM, "out of memory for the search");
        goto out;
    }
    for (size_t t = 0; t < nw && st == KM_OK; t++) {
        st = ws_alloc(&ws[t], &g, err);
        wk[t] = (gen_worker){&g, &ws[t]};
    }
    if (st != KM_OK ||
        (st = group_points(r, share, order, leader, err)) != KM_OK)
        goto out;
    g.order = order;
    for (size_t oi = 0; oi < P; oi++)
        r->acc[order[oi]].rank = oi;
    for (size_t lo = 0, hi; lo < P && !atomic_load(&r->stop); lo = hi) {
        hi = lo + 1;
        if (share) { /* a group: its Gram */
            while (hi < P && leader[order[hi]] == order[lo])
                hi++;
            Kall = group_gram(r, order[lo], leader);
        } else {
            hi = P;
        }
        g.Kall = Kall;
        run_batch(&g, wk, nw, lo, hi);
        free(Kall);
        Kall = NULL;
    }
    if (atomic_load(&r->stop))
        st = km_error_set(err, r->hard, "%s", r->hard_msg);
    else
        st = km_search_progress(r, r->units, err);
out:
    for (size_t t = 0; ws && t < nw; t++)
        ws_free(&ws[t]);
    free(ws);
    free(wk);
    free(order);
    free(leader);
    free(Kall);
    return st;
}
