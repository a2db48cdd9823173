/*
 * km_svm_pairs.c - svc's class pairs on workers, for the solvers that
 * run them side by side (nystrom's dual coordinate descent, km_svm_nys.c;
 * screened SMO, km_svm_screen.c): a queue of pairs taken in order, each
 * pair's share of the progress, and the first failure, which stops the
 * others.
 *
 * Also BLAS on one thread while the workers run, and the most workers.
 *
 * Thread-safety: the workers share the queue under its lock; a solver's
 * callback gets its own worker's state. OpenBLAS's thread count is the
 * process's: overlapping fits set and restore it under a lock.
 */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "../base/km_base_internal.h"
#include "km_svm_solve.h"

/* A worker's thread: the queue and its own state. */
typedef struct pair_thread {
    svc_pairs *q;
    void *state;
    pthread_t tid;
} pair_thread;

int svc_pairs_progress(svc_pairs *q, size_t pi, double f)
{
    pthread_mutex_lock(&q->lock);
    q->done[pi] = f > q->done[pi] ? f : q->done[pi];
    double sum = 0;
    for (size_t i = 0; i < q->P; i++)
        sum += q->done[i];
    double g = q->lo + (q->hi - q->lo) * sum / (double)q->P;
    int stop = atomic_load(&q->stop);
    if (!stop && g > q->reported) {
        q->reported = g;
        if (km_progress(q->ctl, g))
            atomic_store(&q->stop, stop = 1);
    }
    pthread_mutex_unlock(&q->lock);
    return stop;
}

/* The next pair until there is none or the run has stopped; the first
 * failure is the run's. */
static void *pair_work(void *arg)
{
    pair_thread *t = arg;
    svc_pairs *q = t->q;
    for (;;) {
        pthread_mutex_lock(&q->lock);
        size_t pi = q->next < q->P ? q->next++ : q->P;
        pthread_mutex_unlock(&q->lock);
        if (pi >= q->P || atomic_load(&q->stop))
            break;
        km_error e = {0};
        km_status st = q->solve(t->state, pi, &e);
        if (st == KM_OK && svc_pairs_progress(q, pi, 1.0))
            st = km_error_set(&e, KM_ECANCELLED, "fit cancelled");
        if (st != KM_OK) {
            pthread_mutex_lock(&q->lock);
            if (q->st == KM_OK) {
                q->st = st;
                q->err = e;
            }
            atomic_store(&q->stop, 1);
            pthread_mutex_unlock(&q->lock);
            break;
        }
    }
    return NULL;
}

km_status svc_pairs_run(svc_pairs *q, void *states, size_t size, size_t nw,
                        km_error *err)
{
    pair_thread th[SVC_MAX_WORKERS];
    nw = nw < 1 ? 1 : nw > SVC_MAX_WORKERS ? SVC_MAX_WORKERS : nw;
    q->next = 0;
    q->reported = q->lo;
    q->st = KM_OK;
    atomic_store(&q->stop, 0);
    if (!(q->done = calloc(q->P ? q->P : 1, sizeof *q->done)))
        return km_error_set(err, KM_ENOMEM, "out of memory for the pairs");
    pthread_mutex_init(&q->lock, NULL);
    size_t started = 1;
    for (size_t w = 0; w < nw; w++) {
        th[w].q = q;
        th[w].state = (char *)states + w * size;
    }
    for (; started < nw; started++)
        if (pthread_create(&th[started].tid, NULL, pair_work, &th[started]))
            break; /* fewer workers */
    pair_work(&th[0]);
    for (size_t w = 1; w < started; w++)
        pthread_join(th[w].tid, NULL);
    pthread_mutex_destroy(&q->lock);
    free(q->done);
    q->done = NULL;
    if (q->st != KM_OK)
        return km_error_set(err, q->st, "%s", q->err.message);
    return KM_OK;
}

/* OpenBLAS's process-wide thread count (declared here: Debian's cblas.h
 * may lack these). */
void openblas_set_num_threads(int n);
int openblas_get_num_threads(void);

/*
 * While the pairs run on several workers, BLAS runs one thread per call.
 * OpenBLAS runs one threaded level-3 call at a time (a process-wide
 * lock) and its idle threads spin: two workers each calling 2-thread
 * DGEMMs queue for each other and lose the cores to the spinning, while
 * 1-thread DGEMMs run side by side. Measured on Fashion-MNIST (2 cores,
 * 2 workers, back to back): the fit took 22.2 to 23.2 s with 2-thread
 * calls, 19.2 to 19.3 s with 1-thread calls. The count is the
 * process's: the first of overlapping fits sets it to 1 and the last
 * puts back what it was; other BLAS calls meanwhile (predictions) run on
 * one thread too.
 */
static pthread_mutex_t blas_lock = PTHREAD_MUTEX_INITIALIZER;
static int blas_users, blas_saved;

void svc_blas_single_begin(void)
{
    pthread_mutex_lock(&blas_lock);
    if (blas_users++ == 0) {
        blas_saved = openblas_get_num_threads();
        openblas_set_num_threads(1);
    }
    pthread_mutex_unlock(&blas_lock);
}

void svc_blas_single_end(void)
{
    pthread_mutex_lock(&blas_lock);
    if (--blas_users == 0)
        openblas_set_num_threads(blas_saved);
    pthread_mutex_unlock(&blas_lock);
}

/* The most workers on this machine: SVC_MAX_WORKERS, at most its CPUs. */
size_t svc_most_workers(void)
{
    long c = sysconf(_SC_NPROCESSORS_ONLN);
    return c < 1                          ? 1
           : (size_t)c < SVC_MAX_WORKERS ? (size_t)c
                                         : SVC_MAX_WORKERS;
}
