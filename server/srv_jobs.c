/*
 * srv_jobs.c - the fit queue, the worker pool, and the job table.
 *
 * One mutex guards the queue, the table and every job's mutable fields
 * (state, progress, times, error, result); fits run outside it. The cancel
 * flag is atomic because the solver polls it through the progress callback
 * without the lock. Memory is reserved at admission for queued and running
 * fits alike, so however the queue drains the fits that run at once never
 * exceed the budget.
 *
 * Thread-safety: see srv_jobs.h.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/time.h>
#include <time.h>

#include "srv_clock.h"
#include "../api/api_coef.h"
#include "../api/api_model.h"
#include "../api/api_schema.h"
#include "srv_jobs.h"
#include "srv_test.h"
#include "srv_log.h"
#include "srv_mpi.h"

struct srv_job {
    atomic_int refs;
    atomic_int cancel;
    atomic_int timed_out;
    double started_mono;
    char id[24];
    char name[65];
    api_fit_request req;
    srv_task task;         /* a task job's (task.run set), else a fit */
    size_t bytes;
    srv_done_fn done;
    void *done_arg;
    /* guarded by the table's lock */
    srv_job_state state;
    double progress;
    long long created_ms, started_ms, finished_ms;
    double finished_mono;
    api_error error;
    cJSON *result;
    srv_jobs *owner;
};

struct srv_jobs {
    pthread_mutex_t lock;
    pthread_cond_t wake;   /* workers: a job is queued or stop is set */
    pthread_cond_t idle;   /* drain: a job finished */
    srv_job **queue;       /* ring buffer of queue_cap */
    size_t queue_cap, head, queued;
    srv_job **table;       /* every job still kept, oldest first */
    size_t n_table, cap_table;
    size_t max_jobs;       /* most jobs kept (--max-jobs) */
    size_t evicted;        /* finished jobs dropped to stay under it */
    size_t reserved, budget;
    size_t running;
    int stopping;          /* no new jobs; workers exit when idle */
    double ttl;
    double fit_timeout;    /* seconds; 0 = none */
    int fit_threads;       /* km_fit_control.threads of every fit */
    srv_commit *commit;
    srv_mpi *mpi;          /* distributed fits, or NULL */
    pthread_t *workers;
    int n_workers;
};

static const char *const state_names[SRV_JOB_STATES] = {
    "queued", "running", "succeeded", "failed", "cancelled"};

const char *srv_job_state_name(srv_job_state s)
{
    return (unsigned)s < SRV_JOB_STATES ? state_names[s] : "unknown";
}

int srv_job_state_parse(const char *name)
{
    for (int i = 0; i < SRV_JOB_STATES; i++)
        if (!strcmp(state_names[i], name))
            return i;
    return -1;
}

void srv_job_release(srv_job *job)
{
    if (job && atomic_fetch_sub(&job->refs, 1) == 1) {
        api_fit_request_cleanup(&job->req);
        if (job->task.free)
            job->task.free(job->task.arg);
        cJSON_Delete(job->result);
        free(job);
    }
}

/* Drops finished jobs older than the TTL from the table. Lock held. */
/* What the budget holds now (j locked): admitted work, and what the
 * string kernels' cache holds (km_strings.c; 0 without string models). */
static size_t held(const srv_jobs *j)
{
    size_t c = km_string_cache_held();
    return j->reserved > SIZE_MAX - c ? SIZE_MAX : j->reserved + c;
}

static void expire(srv_jobs *j)
{
    double t = srv_mono();
    size_t w = 0;
    for (size_t i = 0; i < j->n_table; i++) {
        srv_job *job = j->table[i];
        if (job->state >= SRV_JOB_SUCCEEDED && t - job->finished_mono > j->ttl)
            srv_job_release(job);
        else
            j->table[w++] = job;
    }
    j->n_table = w;
}

/* Makes room for one more job in a table at max_jobs by dropping the
 * oldest finished job (the table is in submission order). -1 if every
 * job kept is still queued or running. Lock held. */
static int make_room(srv_jobs *j)
{
    if (j->n_table < j->max_jobs)
        return 0;
    for (size_t i = 0; i < j->n_table; i++)
        if (j->table[i]->state >= SRV_JOB_SUCCEEDED) {
            srv_job_release(j->table[i]);
            memmove(j->table + i, j->table + i + 1,
                    (j->n_table - i - 1) * sizeof *j->table);
            j->n_table--;
            j->evicted++;
            return 0;
        }
    return -1;
}

/* Marks a job finished. Lock held. */
static void finish(srv_jobs *j, srv_job *job, srv_job_state state)
{
    job->state = state;
    job->finished_ms = srv_now_ms();
    job->finished_mono = srv_mono();
    if (state == SRV_JOB_SUCCEEDED)
        job->progress = 1.0;
    j->reserved -= job->bytes;
    job->bytes = 0;
    pthread_cond_broadcast(&j->idle);
}

static int on_progress(void *ctx, double fraction)
{
    srv_job *job = ctx;
    srv_jobs *j = job->owner;
    pthread_mutex_lock(&j->lock);
    if (fraction > job->progress && fraction < 1.0)
        job->progress = fraction;
    pthread_mutex_unlock(&j->lock);
    if (j->fit_timeout > 0 && srv_mono() - job->started_mono > j->fit_timeout)
        atomic_store(&job->timed_out, 1);
    return atomic_load(&job->cancel) || atomic_load(&job->timed_out);
}

/* What a fit that did not finish leaves under name, for its message: the
 * version served, or nothing (the first fit of a name). Takes the
 * registry's lock: call it without j's. */
static void what_stays(srv_jobs *j, const char *name, char *buf, size_t len)
{
    uint64_t served = srv_commit_served(j->commit, name);
    if (served)
        snprintf(buf, len, "version %llu stays served",
                 (unsigned long long)served);
    else
        snprintf(buf, len, "no version was made");
}

/* A task job (srv_jobs_submit_task): its function, then its outcome. */
static void run_task(srv_jobs *j, srv_job *job)
{
    km_fit_control ctl = {on_progress, job, j->fit_threads};
    cJSON *result = NULL;
    api_error e = {0, NULL, ""};
    int rc = job->task.run(job->task.arg, &ctl, &result, &e);
    if (rc == 0 && (atomic_load(&job->cancel) || atomic_load(&job->timed_out))) {
        cJSON_Delete(result);
        rc = -1;
    }
    pthread_mutex_lock(&j->lock);
    if (rc == 0) {
        job->result = result;
        finish(j, job, SRV_JOB_SUCCEEDED);
    } else if (atomic_load(&job->timed_out) && !atomic_load(&job->cancel)) {
        api_raise(&job->error, API_UNPROCESSABLE, "the %s of \"%s\" did not "
                  "finish within --fit-timeout (%g s)", job->task.kind,
                  job->name, j->fit_timeout);
        finish(j, job, SRV_JOB_FAILED);
    } else if (atomic_load(&job->cancel)) {
        api_raise(&job->error, API_CONFLICT, "the %s of \"%s\" was "
                  "cancelled", job->task.kind, job->name);
        finish(j, job, SRV_JOB_CANCELLED);
    } else {
        job->error = e;
        finish(j, job, SRV_JOB_FAILED);
    }
    pthread_mutex_unlock(&j->lock);
}

static void run(srv_jobs *j, srv_job *job)
{
    if (job->task.run) {
        run_task(j, job);
        return;
    }
    km_fit_control ctl = {on_progress, job, j->fit_threads};
    km_model *model = NULL;
    cJSON *meta = NULL;
    api_error e = {0, NULL, ""};
    int rc = job->req.distributed
                 ? srv_mpi_fit(j->mpi, &job->req, &ctl, job->id, &model, &e)
                 : api_fit_run(&job->req, &ctl, &model, &e);
    if (rc == 0 && (atomic_load(&job->cancel) || atomic_load(&job->timed_out))) {
        km_model_free(model);
        rc = -1;
    } else if (rc == 0 && job->req.base) { /* an update: of that version */
        srv_test_pause("update_computed");
        rc = srv_commit_update(j->commit, job->name, model, job->req.base,
                               &meta, &e);
    } else if (rc == 0) {
        rc = srv_commit_model(j->commit, job->name, model, &meta, &e);
    }
    api_fit_request_cleanup(&job->req); /* the data are no longer needed */

    char stays[64];
    if (rc)
        what_stays(j, job->name, stays, sizeof stays);
    pthread_mutex_lock(&j->lock);
    if (rc == 0) {
        job->result = meta;
        finish(j, job, SRV_JOB_SUCCEEDED);
    } else if (atomic_load(&job->timed_out) && !atomic_load(&job->cancel)) {
        api_raise(&job->error, API_UNPROCESSABLE,
                 "the fit of \"%s\" did not finish within --fit-timeout "
                 "(%g s); %s", job->name, j->fit_timeout, stays);
        finish(j, job, SRV_JOB_FAILED);
    } else if (atomic_load(&job->cancel)) {
        api_raise(&job->error, API_CONFLICT,
                 "the fit of \"%s\" was cancelled; %s", job->name, stays);
        finish(j, job, SRV_JOB_CANCELLED);
    } else {
        job->error = e;
        finish(j, job, SRV_JOB_FAILED);
    }
    pthread_mutex_unlock(&j->lock);
}

static void *worker(void *arg)
{
    srv_jobs *j = arg;
    pthread_mutex_lock(&j->lock);
    for (;;) {
        while (!j->queued && !j->stopping)
            pthread_cond_wait(&j->wake, &j->lock);
        if (!j->queued)
            break; /* stopping and nothing left */
        srv_job *job = j->queue[j->head];
        j->head = (j->head + 1) % j->queue_cap;
        j->queued--;
        if (job->state == SRV_JOB_QUEUED) {
            job->state = SRV_JOB_RUNNING;
            job->started_ms = srv_now_ms();
            job->started_mono = srv_mono();
            j->running++;
            pthread_mutex_unlock(&j->lock);
            run(j, job);
            pthread_mutex_lock(&j->lock);
            j->running--;
        }
        /* else: cancelled while queued, already finished */
        pthread_mutex_unlock(&j->lock);
        if (job->done)
            job->done(job, job->done_arg);
        srv_job_release(job); /* the queue's reference */
        pthread_mutex_lock(&j->lock);
    }
    pthread_mutex_unlock(&j->lock);
    return NULL;
}

srv_jobs *srv_jobs_create(int workers, size_t queue_cap, double ttl_seconds,
                          size_t max_jobs, double fit_timeout, size_t budget,
                          int fit_threads, srv_commit *commit)
{
    srv_jobs *j = calloc(1, sizeof *j);
    if (!j)
        return NULL;
    j->queue = calloc(queue_cap ? queue_cap : 1, sizeof *j->queue);
    j->workers = calloc((size_t)workers, sizeof *j->workers);
    if (!j->queue || !j->workers) {
        free(j->queue);
        free(j->workers);
        free(j);
        return NULL;
    }
    pthread_mutex_init(&j->lock, NULL);
    pthread_cond_init(&j->wake, NULL);
    pthread_cond_init(&j->idle, NULL);
    j->queue_cap = queue_cap ? queue_cap : 1;
    j->ttl = ttl_seconds;
    j->max_jobs = max_jobs ? max_jobs : 1;
    j->fit_timeout = fit_timeout;
    j->fit_threads = fit_threads;
    j->budget = budget;
    j->commit = commit;
    for (int i = 0; i < workers; i++) {
        if (pthread_create(&j->workers[i], NULL, worker, j) != 0)
            break;
        j->n_workers = i + 1;
    }
    if (j->n_workers == 0) {
        srv_jobs_free(j);
        return NULL;
    }
    return j;
}

static void new_id(char *buf, size_t len)
{
    unsigned char r[8];
    if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r) {
        unsigned long long t = (unsigned long long)srv_now_ms() ^ (uintptr_t)buf;
        memcpy(r, &t, sizeof r);
    }
    snprintf(buf, len, "j-%02x%02x%02x%02x%02x%02x%02x%02x", r[0], r[1], r[2],
             r[3], r[4], r[5], r[6], r[7]);
}

static srv_job *submit(srv_jobs *j, const char *name, api_fit_request *req,
                       const srv_task *task, size_t bytes, srv_done_fn done,
                       void *done_arg, api_error *e);

srv_job *srv_jobs_submit(srv_jobs *j, const char *name, api_fit_request *req,
                         size_t bytes, srv_done_fn done, void *done_arg,
                         api_error *e)
{
    return submit(j, name, req, NULL, bytes, done, done_arg, e);
}

srv_job *srv_jobs_submit_task(srv_jobs *j, const char *name,
                              const srv_task *task, size_t bytes,
                              srv_done_fn done, void *done_arg, api_error *e)
{
    return submit(j, name, NULL, task, bytes, done, done_arg, e);
}

/* A fit (req) or a task (task) queued; the job takes either. */
static srv_job *submit(srv_jobs *j, const char *name, api_fit_request *req,
                       const srv_task *task, size_t bytes, srv_done_fn done,
                       void *done_arg, api_error *e)
{
    srv_job *job = calloc(1, sizeof *job);
    if (!job) {
        if (req)
            api_fit_request_cleanup(req);
        if (task && task->free)
            task->free(task->arg);
        api_raise(e, API_INTERNAL, "out of memory for a job");
        return NULL;
    }
    atomic_init(&job->refs, 3); /* the caller, the table, the queue */
    atomic_init(&job->cancel, 0);
    atomic_init(&job->timed_out, 0);
    new_id(job->id, sizeof job->id);
    snprintf(job->name, sizeof job->name, "%s", name);
    if (req) {
        job->req = *req;
        memset(req, 0, sizeof *req);
    } else {
        job->task = *task;
    }
    job->bytes = bytes;
    job->done = done;
    job->done_arg = done_arg;
    job->owner = j;
    job->state = SRV_JOB_QUEUED;
    job->created_ms = srv_now_ms();

    const char *why = NULL;
    pthread_mutex_lock(&j->lock);
    expire(j);
    if (j->stopping)
        why = "draining";
    else if (bytes > j->budget || bytes > j->budget - held(j))
        why = "budget";
    else if (j->queued == j->queue_cap)
        why = "full";
    else if (make_room(j) != 0)
        why = "table";
    else if (j->n_table == j->cap_table) {
        size_t cap = j->cap_table ? 2 * j->cap_table : 64;
        srv_job **t = realloc(j->table, cap * sizeof *t);
        if (!t)
            why = "oom";
        else {
            j->table = t;
            j->cap_table = cap;
        }
    }
    if (!why) {
        j->table[j->n_table++] = job;
        j->queue[(j->head + j->queued) % j->queue_cap] = job;
        j->queued++;
        j->reserved += bytes;
        pthread_cond_signal(&j->wake);
    }
    size_t reserved = held(j), budget = j->budget, cap = j->queue_cap;
    size_t kept = j->n_table;
    pthread_mutex_unlock(&j->lock);
    if (!why)
        return job;

    const double mib = 1048576.0;
    if (!strcmp(why, "draining"))
        api_raise(e, API_UNAVAILABLE, "the server is shutting down");
    else if (!strcmp(why, "budget"))
        api_raise(e, API_PAYLOAD_TOO_LARGE,
                 "the %s needs an estimated %.1f MiB; the memory budget is "
                 "%.1f MiB, of which %.1f MiB are held by admitted fits and "
                 "predicts and the string kernels' cache",
                 task ? task->kind : "fit", bytes / mib, budget / mib,
                 reserved / mib);
    else if (!strcmp(why, "full"))
        api_raise(e, API_TOO_MANY_REQUESTS,
                 "the fit queue is full (%zu jobs waiting); retry later", cap);
    else if (!strcmp(why, "table"))
        api_raise(e, API_TOO_MANY_REQUESTS,
                 "the job table is full: all %zu jobs kept (--max-jobs) are "
                 "queued or running; retry later", kept);
    else
        api_raise(e, API_INTERNAL, "out of memory for the job table");
    atomic_store(&job->refs, 1);
    srv_job_release(job);
    return NULL;
}

srv_job *srv_jobs_get(srv_jobs *j, const char *id)
{
    srv_job *found = NULL;
    pthread_mutex_lock(&j->lock);
    expire(j);
    for (size_t i = 0; i < j->n_table && !found; i++)
        if (!strcmp(j->table[i]->id, id)) {
            found = j->table[i];
            atomic_fetch_add(&found->refs, 1);
        }
    pthread_mutex_unlock(&j->lock);
    return found;
}

int srv_job_cancel(srv_job *job)
{
    srv_jobs *j = job->owner;
    int was_open;
    char stays[64];
    what_stays(j, job->name, stays, sizeof stays);
    pthread_mutex_lock(&j->lock);
    was_open = job->state <= SRV_JOB_RUNNING;
    atomic_store(&job->cancel, 1);
    if (job->state == SRV_JOB_QUEUED) {
        api_raise(&job->error, API_CONFLICT,
                 "the fit of \"%s\" was cancelled before it ran; %s",
                 job->name, stays);
        finish(j, job, SRV_JOB_CANCELLED);
    }
    pthread_mutex_unlock(&j->lock);
    return was_open ? 0 : -1;
}

const char *srv_job_id(const srv_job *job)
{
    return job->id;
}

srv_job_state srv_job_state_of(srv_job *job)
{
    pthread_mutex_lock(&job->owner->lock);
    srv_job_state s = job->state;
    pthread_mutex_unlock(&job->owner->lock);
    return s;
}

void srv_job_error(srv_job *job, api_error *e)
{
    pthread_mutex_lock(&job->owner->lock);
    *e = job->error;
    pthread_mutex_unlock(&job->owner->lock);
}

cJSON *srv_job_result(srv_job *job)
{
    pthread_mutex_lock(&job->owner->lock);
    cJSON *r = job->result ? cJSON_Duplicate(job->result, 1) : NULL;
    pthread_mutex_unlock(&job->owner->lock);
    return r;
}

static void add_time(cJSON *o, const char *key, long long ms)
{
    char buf[40];
    if (!ms) {
        cJSON_AddNullToObject(o, key);
        return;
    }
    api_format_time(ms, buf, sizeof buf);
    cJSON_AddStringToObject(o, key, buf);
}

/* Lock held. summary: without the result (GET /v1/jobs?fields=summary). */
static cJSON *job_json(const srv_job *job, int summary)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddStringToObject(o, "id", job->id);
    cJSON_AddStringToObject(o, "status", state_names[job->state]);
    cJSON_AddStringToObject(o, "model", job->name);
    cJSON_AddStringToObject(o, "kind", job->task.run ? job->task.kind
                                                     : "fit");
    cJSON_AddNumberToObject(o, "progress", job->progress);
    add_time(o, "created_at", job->created_ms);
    add_time(o, "started_at", job->started_ms);
    add_time(o, "finished_at", job->finished_ms);
    if (job->state == SRV_JOB_FAILED || job->state == SRV_JOB_CANCELLED) {
        cJSON *err = cJSON_AddObjectToObject(o, "error");
        cJSON_AddStringToObject(err, "code", job->error.code);
        cJSON_AddStringToObject(err, "message", job->error.message);
    } else {
        cJSON_AddNullToObject(o, "error");
    }
    if (summary)
        return o;
    if (job->result)
        cJSON_AddItemToObject(o, "result", cJSON_Duplicate(job->result, 1));
    else
        cJSON_AddNullToObject(o, "result");
    return o;
}

cJSON *srv_job_json(srv_job *job)
{
    pthread_mutex_lock(&job->owner->lock);
    cJSON *o = job_json(job, 0);
    pthread_mutex_unlock(&job->owner->lock);
    return o;
}

static const char *state_at(int i)
{
    return state_names[i];
}

int srv_jobs_param(const char *name, api_error *e)
{
    static const char *const known[] = {"state", "model", "offset", "limit",
                                        "fields"};
    for (size_t i = 0; i < sizeof known / sizeof *known; i++)
        if (!strcmp(name, known[i]))
            return 0;
    return api_invalid(e, "query parameter '%.64s' is not known; jobs takes "
                       "state, model, offset, limit and fields", name);
}

int srv_jobs_filter_parse(const char *state, const char *model,
                          const char *offset, const char *limit,
                          const char *fields, size_t most, srv_jobs_filter *f,
                          api_error *e)
{
    *f = (srv_jobs_filter){-1, model, 0, 0, fields != NULL};
    if (state && (f->state = srv_job_state_parse(state)) < 0) {
        char names[96];
        api_name_list(names, sizeof names, state_at, SRV_JOB_STATES);
        return api_invalid(e, "state \"%.24s\" must be one of %s", state,
                           names);
    }
    if (model && !*model)
        return api_invalid(e, "model must be a model's name, not empty");
    if (fields && strcmp(fields, "summary"))
        return api_invalid(e, "fields \"%.24s\" must be summary (without "
                           "it, each job with its result)", fields);
    if ((offset && api_query_count(offset, "offset", 0, most, &f->offset, e)) ||
        (limit && api_query_count(limit, "limit", 1, most, &f->limit, e)))
        return -1;
    return 0;
}

static int selected(const srv_job *job, const srv_jobs_filter *f)
{
    return (f->state < 0 || job->state == (srv_job_state)f->state) &&
           (!f->model || !strcmp(job->name, f->model));
}

cJSON *srv_jobs_list_json(srv_jobs *j, const srv_jobs_filter *f)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *a = cJSON_AddArrayToObject(o, "jobs");
    size_t total = 0;
    pthread_mutex_lock(&j->lock);
    expire(j);
    for (size_t i = j->n_table; i-- > 0;) {
        if (!selected(j->table[i], f))
            continue;
        if (total >= f->offset && (!f->limit || total - f->offset < f->limit))
            cJSON_AddItemToArray(a, job_json(j->table[i], f->summary));
        total++;
    }
    pthread_mutex_unlock(&j->lock);
    size_t end = f->offset + (size_t)cJSON_GetArraySize(a);
    cJSON_AddNumberToObject(o, "total", (double)total);
    if (end < total)
        cJSON_AddNumberToObject(o, "next_offset", (double)end);
    else
        cJSON_AddNullToObject(o, "next_offset");
    return o;
}

void srv_jobs_stats(srv_jobs *j, size_t counts[SRV_JOB_STATES],
                    size_t *queued, size_t *reserved)
{
    memset(counts, 0, SRV_JOB_STATES * sizeof *counts);
    pthread_mutex_lock(&j->lock);
    expire(j);
    for (size_t i = 0; i < j->n_table; i++)
        counts[j->table[i]->state]++;
    *queued = j->queued;
    *reserved = j->reserved;
    pthread_mutex_unlock(&j->lock);
}

int srv_jobs_reserve(srv_jobs *j, size_t bytes, const char *what,
                     api_error *e)
{
    pthread_mutex_lock(&j->lock);
    size_t reserved = held(j), budget = j->budget;
    int ok = bytes <= budget && bytes <= budget - reserved;
    if (ok)
        j->reserved += bytes;
    pthread_mutex_unlock(&j->lock);
    if (ok)
        return 0;
    const double mib = 1048576.0;
    return api_raise(e, API_PAYLOAD_TOO_LARGE,
                    "the %s needs an estimated %.1f MiB of working memory; "
                    "the memory budget is %.1f MiB, of which %.1f MiB are "
                    "held by admitted fits and predicts and the string "
                    "kernels' cache; send fewer rows "
                    "per request", what, bytes / mib, budget / mib,
                    reserved / mib);
}

void srv_jobs_unreserve(srv_jobs *j, size_t bytes)
{
    pthread_mutex_lock(&j->lock);
    j->reserved -= bytes;
    pthread_mutex_unlock(&j->lock);
}

void srv_jobs_table_size(srv_jobs *j, size_t *kept, size_t *evicted)
{
    pthread_mutex_lock(&j->lock);
    expire(j);
    *kept = j->n_table;
    *evicted = j->evicted;
    pthread_mutex_unlock(&j->lock);
}

size_t srv_jobs_reserved(srv_jobs *j)
{
    pthread_mutex_lock(&j->lock);
    size_t r = j->reserved;
    pthread_mutex_unlock(&j->lock);
    return r;
}

void srv_jobs_drain(srv_jobs *j, double timeout)
{
    double deadline = srv_mono() + timeout;
    pthread_mutex_lock(&j->lock);
    j->stopping = 1;
    pthread_cond_broadcast(&j->wake);
    while ((j->queued || j->running) && srv_mono() < deadline) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 100000000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&j->idle, &j->lock, &ts);
    }
    for (size_t i = 0; i < j->n_table; i++)
        if (j->table[i]->state <= SRV_JOB_RUNNING) {
            srv_job *job = j->table[i];
            atomic_store(&job->cancel, 1);
            if (job->state == SRV_JOB_QUEUED) {
                api_raise(&job->error, API_UNAVAILABLE,
                         "the server shut down before the fit of \"%s\" ran",
                         job->name);
                finish(j, job, SRV_JOB_CANCELLED);
            }
        }
    pthread_mutex_unlock(&j->lock);
    for (int i = 0; i < j->n_workers; i++)
        pthread_join(j->workers[i], NULL);
    j->n_workers = 0;
}

void srv_jobs_free(srv_jobs *j)
{
    if (!j)
        return;
    if (j->n_workers)
        srv_jobs_drain(j, 0);
    for (size_t i = 0; i < j->n_table; i++)
        srv_job_release(j->table[i]);
    free(j->table);
    free(j->queue);
    free(j->workers);
    pthread_mutex_destroy(&j->lock);
    pthread_cond_destroy(&j->wake);
    pthread_cond_destroy(&j->idle);
    free(j);
}

void srv_jobs_set_mpi(srv_jobs *j, srv_mpi *mpi)
{
    j->mpi = mpi;
}
