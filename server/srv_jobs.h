/*
 * srv_jobs.h - fit jobs: a bounded queue, a fixed pool of worker threads,
 * and the table of jobs clients can look up.
 *
 * A job owns its parsed request. A worker runs it through api_fit_run with
 * a progress callback that records progress and reports cancellation, then
 * commits the model through srv_commit (store, then registry swap), and
 * finally calls the job's done callback (for a synchronous fit, the one
 * that wakes the request parked on it). Finished jobs are kept for the
 * table's TTL, and the table holds at most max_jobs: a new job drops the
 * oldest finished one, and is refused (429) when all kept jobs are
 * unfinished.
 *
 * Thread-safety: all functions are safe from any thread; jobs are
 * reference-counted.
 */
#ifndef SRV_JOBS_H
#define SRV_JOBS_H

#include <cJSON.h>
#include <stddef.h>

#include "../api/api_error.h"
#include "../api/api_fit.h"
#include "srv_commit.h"

typedef enum {
    SRV_JOB_QUEUED,
    SRV_JOB_RUNNING,
    SRV_JOB_SUCCEEDED,
    SRV_JOB_FAILED,
    SRV_JOB_CANCELLED,
    SRV_JOB_STATES
} srv_job_state;

typedef struct srv_job srv_job;
typedef struct srv_jobs srv_jobs;

/* Called by the worker when the job has finished, whatever its state. */
typedef void (*srv_done_fn)(srv_job *job, void *arg);

/* max_jobs: most jobs the table keeps (at least 1);
 * budget: bytes that admitted (queued and running) fits may reserve;
 * fit_timeout: seconds a fit may run (0: no limit), after which it stops
 * at its next progress report and fails with 422;
 * fit_threads: the threads a fit may run beyond BLAS's own
 * (km_fit_control.threads: the points a search runs at once; the daemon
 * passes its BLAS threads per worker, as it sets the requests' threads
 * that their memory estimate counts);
 * commit: what makes a fitted model served (borrowed for the jobs'
 * lifetime). */
srv_jobs *srv_jobs_create(int workers, size_t queue_cap, double ttl_seconds,
                          size_t max_jobs, double fit_timeout, size_t budget,
                          int fit_threads, srv_commit *commit);
/* Stops taking jobs, lets running and queued ones finish for up to
 * timeout seconds, then cancels the rest and waits for the workers. */
void srv_jobs_drain(srv_jobs *j, double timeout);
/* Drains with no grace, joins the workers, frees the table (jobs still
 * referenced live on until released). */
void srv_jobs_free(srv_jobs *j);

/* Queues a fit of model name, taking ownership of req (also on failure).
 * bytes is the fit's memory estimate, reserved until it finishes: over the
 * budget left is 413. done (may be NULL) is called once, from a worker,
 * when the job has finished (also when it was cancelled before it ran);
 * never when submit fails. Returns a new reference
 * to the job, or NULL with e set (429 when the queue is full or the table
 * holds max_jobs unfinished jobs, 503 when draining). */
srv_job *srv_jobs_submit(srv_jobs *j, const char *name, api_fit_request *req,
                         size_t bytes, srv_done_fn done, void *done_arg,
                         api_error *e);

/* Work other than a fit run as a job (a model's drift test): run is
 * called on a worker with a control whose progress the job shows and
 * which reports a cancel or --fit-timeout; it sets *result (the job's
 * result, taken) and returns 0, or returns -1 with e set. free (may be
 * NULL) releases arg when the job goes. kind names it in the job's
 * "kind" and its messages ("drift"); a fit's kind is "fit". */
typedef struct srv_task {
    int (*run)(void *arg, const km_fit_control *ctl, cJSON **result,
               api_error *e);
    void (*free)(void *arg);
    void *arg;
    const char *kind;
} srv_task;
/* Queues a task for model name as srv_jobs_submit queues a fit (bytes,
 * done, refusals alike); takes task->arg (freed also on failure). */
srv_job *srv_jobs_submit_task(srv_jobs *j, const char *name,
                              const srv_task *task, size_t bytes,
                              srv_done_fn done, void *done_arg, api_error *e);

srv_job *srv_jobs_get(srv_jobs *j, const char *id);
void srv_job_release(srv_job *job);
/* Asks a queued or running job to stop; 0 if it was still unfinished. */
int srv_job_cancel(srv_job *job);

const char *srv_job_id(const srv_job *job);
srv_job_state srv_job_state_of(srv_job *job);
/* The failure of a failed or cancelled job (copied). */
void srv_job_error(srv_job *job, api_error *e);
/* The job as API.md's <job> object. */
cJSON *srv_job_json(srv_job *job);
/* The result model's metadata for a succeeded job (new object), or NULL. */
cJSON *srv_job_result(srv_job *job);

/* Counts by state, the queue depth, and bytes reserved by admitted fits. */
void srv_jobs_stats(srv_jobs *j, size_t counts[SRV_JOB_STATES],
                    size_t *queued, size_t *reserved);
size_t srv_jobs_reserved(srv_jobs *j);
/* Reserves bytes of the fits' memory budget for other work (a predict's
 * working memory, what names it in the message): 0, or -1 with e set to
 * 413 when the budget left cannot hold it. Give it back with
 * srv_jobs_unreserve. */
int srv_jobs_reserve(srv_jobs *j, size_t bytes, const char *what,
                     api_error *e);
void srv_jobs_unreserve(srv_jobs *j, size_t bytes);
/* Jobs the table keeps now, and finished jobs dropped so far to keep it
 * at max_jobs. */
void srv_jobs_table_size(srv_jobs *j, size_t *kept, size_t *evicted);

/* A state's name ("queued", ... "cancelled": the one list of them), and
 * the state of a name, or -1. */
const char *srv_job_state_name(srv_job_state s);
int srv_job_state_parse(const char *name);

/* Which jobs GET /v1/jobs lists: state -1 for any, model NULL for any,
 * the page [offset, offset + limit) of the matching jobs (limit 0: all
 * from offset), summary: without each job's result. */
typedef struct srv_jobs_filter {
    int state;
    const char *model;
    size_t offset, limit;
    int summary;
} srv_jobs_filter;

/* 0 if name is a query parameter of GET /v1/jobs, else a 400 naming it. */
int srv_jobs_param(const char *name, api_error *e);
/* The filter from the query's values (NULL when absent; offset and limit
 * at most `most`, --max-jobs): 0, or -1 with a 400 naming the parameter
 * (state's lists the states). */
int srv_jobs_filter_parse(const char *state, const char *model,
                          const char *offset, const char *limit,
                          const char *fields, size_t most, srv_jobs_filter *f,
                          api_error *e);

/* The jobs f selects as {"jobs": [...] (newest first), "total": the
 * matching jobs, "next_offset": the next page's offset or null}. */
cJSON *srv_jobs_list_json(srv_jobs *j, const srv_jobs_filter *f);

/* Where distributed fits (api_fit_request.distributed) run; set once
 * before any fit is submitted (srv_mpi.h). */
typedef struct srv_mpi srv_mpi;
void srv_jobs_set_mpi(srv_jobs *j, srv_mpi *mpi);

#endif
