/*
 * srv_routes.c - the routing table and the handlers of API.md.
 *
 * Statuses: a path no route has is 404; a route's path with a bad model
 * name is 400 (the handler's name check); 405 only for a route that
 * exists, with a wrong method. Model routes are matched on the last
 * segment: /v1/models/{name}/fit, /predict, /project, /score take everything
 * between /v1/models/ and that segment as the name, so a name such as
 * "../x" (percent-encoded by the client, decoded by MHD) reaches the name
 * check and is answered 400, as is an empty one (/v1/models//fit). Any
 * other path with a '/' after /v1/models/ (/v1/models/x/foo) is no route:
 * 404, not a 405 from /v1/models/{name}.
 *
 * Thread-safety: handlers run on MHD threads concurrently; they share
 * only srv_state, whose members are thread-safe.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../api/api_fit.h"
#include "../api/api_json.h"
#include "../api/api_model.h"
#include "../api/api_predict.h"
#include "../api/api_score.h"
#include "srv_routes.h"

static void h_livez(srv_request *rq, srv_reply *rp);
static void h_readyz(srv_request *rq, srv_reply *rp);
static void h_metrics(srv_request *rq, srv_reply *rp);
static void h_v1(srv_request *rq, srv_reply *rp);
static void h_models(srv_request *rq, srv_reply *rp);
static void h_model_get(srv_request *rq, srv_reply *rp);
static void h_model_delete(srv_request *rq, srv_reply *rp);
static void h_fit(srv_request *rq, srv_reply *rp);
static void h_predict(srv_request *rq, srv_reply *rp);
static void h_project(srv_request *rq, srv_reply *rp);
static void h_score(srv_request *rq, srv_reply *rp);
static void h_jobs(srv_request *rq, srv_reply *rp);
static void h_job_get(srv_request *rq, srv_reply *rp);
static void h_job_delete(srv_request *rq, srv_reply *rp);

enum {
    R_LIVEZ, R_READYZ, R_HEALTHZ, R_METRICS, R_V1, R_MODELS, R_MODEL,
    R_FIT, R_PREDICT, R_PROJECT, R_SCORE, R_JOBS, R_JOB, R_COUNT
};

#define OPEN SRV_SCOPE_OPEN
#define READ SRV_SCOPE_READ
#define ADMIN SRV_SCOPE_ADMIN
/* /metrics is READ here; it is open unless --protect-metrics (srv_http). */
static const srv_route routes[R_COUNT] = {
    [R_LIVEZ] = {"/livez", h_livez, NULL, NULL, 0, OPEN, OPEN, OPEN},
    [R_READYZ] = {"/readyz", h_readyz, NULL, NULL, 0, OPEN, OPEN, OPEN},
    [R_HEALTHZ] = {"/healthz", h_readyz, NULL, NULL, 0, OPEN, OPEN, OPEN},
    [R_METRICS] = {"/metrics", h_metrics, NULL, NULL, 0, READ, OPEN, OPEN},
    [R_V1] = {"/v1", h_v1, NULL, NULL, 0, READ, OPEN, OPEN},
    [R_MODELS] = {"/v1/models", h_models, NULL, NULL, 0, READ, OPEN, OPEN},
    [R_MODEL] = {"/v1/models/{name}", h_model_get, NULL, h_model_delete, 0,
                 READ, OPEN, ADMIN},
    [R_FIT] = {"/v1/models/{name}/fit", NULL, h_fit, NULL, 1, OPEN, ADMIN,
               OPEN},
    [R_PREDICT] = {"/v1/models/{name}/predict", NULL, h_predict, NULL, 1,
                   OPEN, READ, OPEN},
    [R_PROJECT] = {"/v1/models/{name}/project", NULL, h_project, NULL, 1,
                   OPEN, READ, OPEN},
    [R_SCORE] = {"/v1/models/{name}/score", NULL, h_score, NULL, 1, OPEN,
                 READ, OPEN},
    [R_JOBS] = {"/v1/jobs", h_jobs, NULL, NULL, 0, ADMIN, OPEN, OPEN},
    [R_JOB] = {"/v1/jobs/{id}", h_job_get, NULL, h_job_delete, 0, ADMIN,
               OPEN, ADMIN},
};
#undef OPEN
#undef READ
#undef ADMIN

const size_t SRV_ROUTE_NONE = R_COUNT;

size_t srv_metrics_route(void)
{
    return R_METRICS;
}

size_t srv_route_names(const char **names, size_t cap)
{
    size_t n = 0;
    for (; n < R_COUNT && n < cap; n++)
        names[n] = routes[n].pattern;
    if (n < cap)
        names[n++] = "unmatched";
    return n;
}

const srv_route *srv_route_at(size_t i)
{
    return i < R_COUNT ? &routes[i] : NULL;
}

void srv_route_allow(const srv_route *r, char *buf, size_t len)
{
    snprintf(buf, len, "%s%s%s", r->get ? "GET, HEAD" : "",
             r->post ? (r->get ? ", POST" : "POST") : "",
             r->del ? (r->get || r->post ? ", DELETE" : "DELETE") : "");
}

static int hex_digit(char c)
{
    return c >= '0' && c <= '9' ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

size_t srv_route_unescape(void *cls, struct MHD_Connection *conn, char *s)
{
    char *r = s, *w = s;
    int hi, lo;
    (void)cls;
    (void)conn;
    while (*r) {
        /* hex_digit('\0') is -1, so r[2] is read only when r[1] is not
         * the end; (hi | lo) == 0 is "%00", which stays as it is */
        if (r[0] == '%' && (hi = hex_digit(r[1])) >= 0 &&
            (lo = hex_digit(r[2])) >= 0 && (hi | lo)) {
            *w++ = (char)(hi * 16 + lo);
            r += 3;
        } else {
            *w++ = *r++;
        }
    }
    *w = '\0';
    return (size_t)(w - s);
}

size_t srv_route_match(const char *path, char *param, size_t len)
{
    static const char models[] = "/v1/models/", jobs[] = "/v1/jobs/";
    param[0] = '\0';
    for (size_t i = 0; i < R_COUNT; i++)
        if (!strchr(routes[i].pattern, '{') && !strcmp(path, routes[i].pattern))
            return i;
    if (!strncmp(path, models, sizeof models - 1)) {
        const char *rest = path + sizeof models - 1;
        const char *last = strrchr(rest, '/');
        static const struct { const char *action; size_t route; } acts[] = {
            {"fit", R_FIT}, {"predict", R_PREDICT}, {"project", R_PROJECT},
            {"score", R_SCORE}};
        if (!last) {
            snprintf(param, len, "%s", rest);
            return R_MODEL;
        }
        for (size_t a = 0; a < sizeof acts / sizeof *acts; a++)
            if (!strcmp(last + 1, acts[a].action)) {
                snprintf(param, len, "%.*s", (int)(last - rest), rest);
                return acts[a].route;
            }
        return R_COUNT; /* /v1/models/x/foo */
    }
    if (!strncmp(path, jobs, sizeof jobs - 1) && !strchr(path + sizeof jobs - 1, '/')) {
        snprintf(param, len, "%s", path + sizeof jobs - 1);
        return R_JOB;
    }
    return R_COUNT;
}

/* ------------------------------------------------------------- helpers */

/* 503 unless the daemon is ready. */
static int not_ready(srv_request *rq, srv_reply *rp)
{
    int phase = atomic_load(&rq->s->phase);
    if (phase == SRV_READY)
        return 0;
    srv_reply_fail(rp, API_UNAVAILABLE, "the server is %s",
                   phase == SRV_LOADING ? "loading its models"
                                        : "shutting down");
    return 1;
}

/* The request's body, its matrix (one of matrix_keys) read directly. */
static int read_body(srv_request *rq, srv_reply *rp,
                     const char *const *matrix_keys, api_body *b)
{
    api_error e;
    if (api_parse_body(rq->body ? rq->body : "", rq->len, matrix_keys, b,
                       &e)) {
        api_body_free(b);
        srv_reply_error(rp, &e);
        return -1;
    }
    return 0;
}

static int model_name(srv_request *rq, srv_reply *rp)
{
    api_error e;
    if (api_check_name(rq->param, &e)) {
        srv_reply_error(rp, &e);
        return -1;
    }
    return 0;
}

/* A reference to the named model, or a 404 reply. */
static srv_ref *find_model(srv_request *rq, srv_reply *rp)
{
    if (model_name(rq, rp))
        return NULL;
    srv_ref *ref = srv_registry_get(rq->s->registry, rq->param);
    if (!ref)
        srv_reply_fail(rp, API_NOT_FOUND, "model \"%s\" does not exist",
                       rq->param);
    return ref;
}

/* ------------------------------------------------------------- health */

static void h_livez(srv_request *rq, srv_reply *rp)
{
    (void)rq;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "status", "live");
    srv_reply_json(rp, 200, o);
}

/* Ready also means the models directory is the one the store has open:
 * deleted or replaced, fits and deletes would fail (507) until a scan
 * reopens it. */
static void h_readyz(srv_request *rq, srv_reply *rp)
{
    static const char *const names[] = {"loading", "ready", "draining"};
    int phase = atomic_load(&rq->s->phase);
    char why[1200];
    int unusable = phase == SRV_READY &&
                   srv_store_check(rq->s->store, why, sizeof why) != 0;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "status", unusable ? "unavailable"
                                                  : names[phase]);
    if (unusable)
        cJSON_AddStringToObject(o, "reason", why);
    else if (phase == SRV_READY)
        cJSON_AddNumberToObject(o, "models",
                                (double)srv_registry_count(rq->s->registry));
    srv_reply_json(rp, phase == SRV_READY && !unusable ? 200 : 503, o);
}

static void h_metrics(srv_request *rq, srv_reply *rp)
{
    srv_gauges g = {0};
    g.models_loaded = srv_registry_count(rq->s->registry);
    g.model_bytes = srv_registry_bytes(rq->s->registry);
    if (rq->s->jobs) {
        srv_jobs_stats(rq->s->jobs, g.jobs, &g.queue_depth,
                       &g.fit_bytes_reserved);
        srv_jobs_table_size(rq->s->jobs, &g.jobs_retained, &g.jobs_evicted);
    }
    rp->body = srv_metrics_render(rq->s->metrics, &g, &rp->len);
    if (!rp->body) {
        srv_reply_fail(rp, API_INTERNAL, "out of memory rendering metrics");
        return;
    }
    rp->status = 200;
    rp->content_type = "text/plain; version=0.0.4; charset=utf-8";
}

static void h_v1(srv_request *rq, srv_reply *rp)
{
    (void)rq;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", "kmserve");
    cJSON_AddStringToObject(o, "version", KM_VERSION);
    cJSON *a = cJSON_AddArrayToObject(o, "algorithms");
    for (int i = 0; i < KM_ALGO_COUNT; i++)
        cJSON_AddItemToArray(a, cJSON_CreateString(km_algorithm_name(i)));
    cJSON *k = cJSON_AddArrayToObject(o, "kernels");
    for (int i = 0; i < KM_KERNEL_TYPE_COUNT; i++)
        cJSON_AddItemToArray(k, cJSON_CreateString(km_kernel_type_name(i)));
    srv_reply_json(rp, 200, o);
}

/* ------------------------------------------------------------- models */

static void h_models(srv_request *rq, srv_reply *rp)
{
    srv_ref **refs;
    size_t n;
    if (srv_registry_list(rq->s->registry, &refs, &n)) {
        srv_reply_fail(rp, API_INTERNAL, "out of memory listing models");
        return;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON *a = cJSON_AddArrayToObject(o, "models");
    for (size_t i = 0; i < n; i++) {
        cJSON_AddItemToArray(a, api_model_brief_json(srv_ref_model(refs[i])));
        srv_ref_release(refs[i]);
    }
    free(refs);
    srv_reply_json(rp, 200, o);
}

static void h_model_get(srv_request *rq, srv_reply *rp)
{
    srv_ref *ref = find_model(rq, rp);
    if (!ref)
        return;
    srv_reply_json(rp, 200, api_model_json(srv_ref_model(ref)));
    srv_ref_release(ref);
}

static void h_model_delete(srv_request *rq, srv_reply *rp)
{
    api_error e;
    if (not_ready(rq, rp) || model_name(rq, rp))
        return;
    if (srv_commit_delete(rq->s->commit, rq->param, &e)) {
        srv_reply_error(rp, &e);
        return;
    }
    rp->status = 204;
}

/* ------------------------------------------------------------- fits */

static int wants_async(srv_request *rq, const api_fit_request *req)
{
    const char *prefer = srv_header(rq, "Prefer");
    return req->async || (prefer && strstr(prefer, "respond-async"));
}

/* A synchronous fit's request is parked on its job: the worker wakes it
 * when the job ends (fit_done), and the continuation answers with the
 * job's outcome (fit_answer), then drops the reference (release_job). */
static void fit_done(srv_job *job, void *rq)
{
    (void)job;
    srv_wake(rq);
}

static void fit_answer(srv_request *rq, srv_reply *rp, void *arg)
{
    srv_job *job = arg;
    (void)rq;
    cJSON *meta = srv_job_state_of(job) == SRV_JOB_SUCCEEDED
                      ? srv_job_result(job) : NULL;
    if (meta) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToObject(o, "model", meta);
        srv_reply_json(rp, 201, o);
    } else {
        api_error e;
        srv_job_error(job, &e);
        if (!e.code)
            api_raise(&e, API_INTERNAL, "the fit ended without a result");
        srv_reply_error(rp, &e);
    }
}

static void release_job(void *job)
{
    srv_job_release(job);
}

static void h_fit(srv_request *rq, srv_reply *rp)
{
    api_fit_request req;
    api_error e;
    api_body body;
    if (not_ready(rq, rp) || model_name(rq, rp) ||
        read_body(rq, rp, api_fit_matrix_keys, &body))
        return;
    int bad = api_fit_parse(&body, &req, &e);
    api_body_free(&body);
    if (bad) {
        api_fit_request_cleanup(&req);
        srv_reply_error(rp, &e);
        return;
    }
    int async = wants_async(rq, &req);
    /* a search runs as many points at once as the job's fit may use
     * threads (srv_jobs' fit_threads): its estimate counts them */
    req.threads = rq->s->cfg.blas_threads;
    size_t bytes = api_fit_bytes(&req);
    if (srv_mpi_route(rq->s->mpi, &req, km_memory_budget(), &bytes, &e)) {
        api_fit_request_cleanup(&req);
        srv_reply_error(rp, &e);
        return;
    }
    srv_job *job = srv_jobs_submit(rq->s->jobs, rq->param, &req, bytes,
                                   async ? NULL : fit_done,
                                   async ? NULL : rq, &e);
    if (!job) {
        srv_reply_error(rp, &e);
        return;
    }
    if (!async) {
        srv_park(rq, rp, (srv_continuation){fit_answer, release_job, job});
        return;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "job", srv_job_json(job));
    snprintf(rp->location, sizeof rp->location, "/v1/jobs/%s", srv_job_id(job));
    srv_job_release(job);
    srv_reply_json(rp, 202, o);
}

/* ------------------------------------------------------------- predict */

typedef int (*answer_fn)(const km_model *, api_body *, api_text *, size_t *,
                         api_error *);

/* What a route that answers from a model reads and reserves: its body's
 * matrix keys, the bound on its working memory, and its name in the 413
 * message. */
typedef struct answer_route {
    answer_fn fn;
    const char *const *matrix_keys;
    size_t (*bytes)(const km_model *, const char *, size_t);
    const char *what;
} answer_route;

static const answer_route predict_route = {
    api_predict, api_predict_matrix_keys, api_predict_bytes, "predict"};
static const answer_route project_route = {
    api_project, api_predict_matrix_keys, api_predict_bytes, "project"};
static const answer_route score_route = {
    api_score, api_score_matrix_keys, api_score_bytes, "score"};

/* The working memory of a predict is admitted against the fits' memory
 * budget (413 when it cannot be held) before the body is parsed. */
static void answer(srv_request *rq, srv_reply *rp, const answer_route *ar)
{
    api_body body;
    api_text out = {0};
    api_error e;
    size_t rows = 0;
    srv_ref *ref = find_model(rq, rp);
    if (!ref)
        return;
    size_t need = ar->bytes(srv_ref_model(ref), rq->body ? rq->body : "",
                            rq->len);
    if (rq->s->jobs && srv_jobs_reserve(rq->s->jobs, need, ar->what, &e)) {
        srv_reply_error(rp, &e);
        srv_ref_release(ref);
        return;
    }
    if (read_body(rq, rp, ar->matrix_keys, &body) == 0) {
        if (ar->fn(srv_ref_model(ref), &body, &out, &rows, &e) == 0) {
            srv_metrics_predicted_rows(rq->s->metrics, rows);
            srv_reply_text(rp, 200, out.buf, out.len);
        } else {
            srv_reply_error(rp, &e);
        }
        api_body_free(&body);
    }
    if (rq->s->jobs)
        srv_jobs_unreserve(rq->s->jobs, need);
    srv_ref_release(ref);
}

static void h_predict(srv_request *rq, srv_reply *rp)
{
    answer(rq, rp, &predict_route);
}

static void h_project(srv_request *rq, srv_reply *rp)
{
    answer(rq, rp, &project_route);
}

static void h_score(srv_request *rq, srv_reply *rp)
{
    answer(rq, rp, &score_route);
}

/* ------------------------------------------------------------- jobs */

static void h_jobs(srv_request *rq, srv_reply *rp)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "jobs", srv_jobs_list_json(rq->s->jobs));
    srv_reply_json(rp, 200, o);
}

static srv_job *find_job(srv_request *rq, srv_reply *rp)
{
    srv_job *job = rq->s->jobs ? srv_jobs_get(rq->s->jobs, rq->param) : NULL;
    if (!job)
        srv_reply_fail(rp, API_NOT_FOUND, "job \"%.64s\" does not exist "
                       "(finished jobs are kept for --job-ttl)", rq->param);
    return job;
}

static void h_job_get(srv_request *rq, srv_reply *rp)
{
    srv_job *job = find_job(rq, rp);
    if (!job)
        return;
    srv_reply_json(rp, 200, srv_job_json(job));
    srv_job_release(job);
}

static void h_job_delete(srv_request *rq, srv_reply *rp)
{
    srv_job *job = find_job(rq, rp);
    if (!job)
        return;
    if (srv_job_cancel(job) == 0)
        srv_reply_json(rp, 202, srv_job_json(job));
    else
        srv_reply_fail(rp, API_CONFLICT, "job %s has already finished",
                       srv_job_id(job));
    srv_job_release(job);
}
