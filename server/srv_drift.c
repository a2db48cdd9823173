/*
 * srv_drift.c - the drift reservoirs, GET and POST
 * /v1/models/{name}/drift, the drift test as a job, its cache, its
 * metrics and its schedule (srv_drift.h says what each does).
 *
 * One mutex guards the list of reservoirs and everything in them; the
 * request path holds it for one lookup and a draw and copy per row. The
 * test runs on a fit worker (srv_jobs_submit_task) on a copy of the rows.
 *
 * Thread-safety: see srv_drift.h.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../api/api_model.h"
#include "srv_clock.h"
#include "srv_drift.h"
#include "srv_log.h"
#include "srv_state.h"

typedef struct reservoir {
    char name[65];
    size_t d, cap, held;   /* rows of d doubles: room for cap, held now */
    double *rows;
    uint64_t *seq;         /* each slot's row number (1 = the first seen) */
    double *when;          /* each slot's time (srv_mono) */
    uint64_t seen;         /* rows shown since the reservoir started */
    km_rng rng;
    size_t bytes;          /* reserved against the memory budget */
    uint64_t lineage;      /* the name's (srv_registry.h) it holds rows of */
    int off;               /* collection turned off for this model */
    int refused;           /* the budget could not hold the reservoir */
    /* the latest answer: the cache and the metrics */
    cJSON *last;
    uint64_t last_version, last_seed;
    size_t last_perms;
    double last_mono;
} reservoir;

struct srv_drift {
    pthread_mutex_t lock;
    reservoir **r;
    size_t n, cap;
    srv_state *s;
    pthread_t refresher;
    int refreshing, stopping;
    pthread_cond_t stop;
};

/* ------------------------------------------------------------ reservoirs */


static void reservoir_empty(srv_drift *dr, reservoir *r);

static void reservoir_free(srv_drift *d, reservoir *r)
{
    reservoir_empty(d, r);
    cJSON_Delete(r->last);
    free(r);
}

/* The reservoir of name; made (empty) when create is set. The list is
 * kept sorted by name (a binary search: a lookup on the request path
 * stays short with thousands of models). Lock held. */
static reservoir *find(srv_drift *d, const char *name, int create)
{
    size_t lo = 0, hi = d->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(d->r[mid]->name, name);
        if (c == 0)
            return d->r[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (!create)
        return NULL;
    if (d->n == d->cap) {
        size_t cap = d->cap ? 2 * d->cap : 16;
        reservoir **t = realloc(d->r, cap * sizeof *t);
        if (!t)
            return NULL;
        d->r = t;
        d->cap = cap;
    }
    reservoir *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    snprintf(r->name, sizeof r->name, "%s", name);
    r->rng.s = 0x9e3779b97f4a7c15ull ^ (uint64_t)d->n;
    memmove(d->r + lo + 1, d->r + lo, (d->n - lo) * sizeof *d->r);
    d->r[lo] = r;
    d->n++;
    return r;
}

/* Frees r's rows and their numbers and times. */
static void reservoir_free_arrays(reservoir *r)
{
    free(r->rows);
    free(r->seq);
    free(r->when);
    r->rows = NULL;
    r->seq = NULL;
    r->when = NULL;
}

/* Empties r and gives its memory back. Lock held. */
static void reservoir_empty(srv_drift *dr, reservoir *r)
{
    if (r->bytes && dr->s->jobs)
        srv_jobs_unreserve(dr->s->jobs, r->bytes);
    reservoir_free_arrays(r);
    r->bytes = 0;
    r->held = r->seen = 0;
    r->d = 0;
    r->refused = 0;
}

/* Empties r and makes room for rows of d doubles, reserving its bytes
 * against the budget (r->refused when it cannot). Lock held. */
static void reservoir_shape(srv_drift *dr, reservoir *r, size_t d)
{
    size_t cap = (size_t)dr->s->cfg.drift_reservoir_rows;
    reservoir_empty(dr, r);
    r->d = d;
    r->cap = cap;
    size_t bytes = cap * (d * sizeof(double) + sizeof(uint64_t) +
                          sizeof(double));
    api_error e;
    r->refused = 1;
    if (dr->s->jobs &&
        srv_jobs_reserve(dr->s->jobs, bytes, "drift reservoir", &e))
        return;
    r->rows = malloc(cap * d * sizeof *r->rows);
    r->seq = malloc(cap * sizeof *r->seq);
    r->when = malloc(cap * sizeof *r->when);
    if (!r->rows || !r->seq || !r->when) {
        if (dr->s->jobs)
            srv_jobs_unreserve(dr->s->jobs, bytes);
        reservoir_free_arrays(r);
        return;
    }
    r->bytes = bytes;
    r->refused = 0;
}

/* The reservoir of name for its lineage lin (srv_registry.h; create: made
 * when missing). One of an older lineage (the name deleted and served
 * again since) is emptied first, its cached answer and collect switch
 * dropped: nothing of a deleted model answers for the new one. NULL for
 * a lin older than the reservoir's (a request or test that began before
 * the delete), or none. Lock held. */
static reservoir *adopt(srv_drift *dr, const char *name, uint64_t lin,
                        int create)
{
    reservoir *r = find(dr, name, create);
    if (!r || lin < r->lineage)
        return NULL;
    if (lin > r->lineage) {
        reservoir_empty(dr, r);
        cJSON_Delete(r->last);
        r->last = NULL;
        r->off = 0;
        r->lineage = lin;
    }
    return r;
}

/* The request path: srv_drift.h's sampling. ctx is the route's tap: the
 * lineage and whether the version is still the one served come from the
 * ref the route holds, without a registry lookup. */
static void observe(void *ctx, const struct km_model *m, const double *X,
                    size_t n)
{
    const srv_drift_tap *tap = ctx;
    srv_drift *dr = tap->d;
    size_t d = km_model_n_features(m);
    uint64_t lin = srv_ref_lineage(tap->ref);
    if (!km_model_reference(m, NULL))
        return; /* nothing to test them against (precomputed, old file) */
    if (!lin || !srv_ref_served(tap->ref))
        return; /* a version replaced (or deleted) while the request ran */
    uint64_t W = (uint64_t)dr->s->cfg.drift_window_rows;
    int timed = dr->s->cfg.drift_window_seconds > 0;
    double now = timed ? srv_mono() : 0; /* a time only a window reads */
    pthread_mutex_lock(&dr->lock);
    reservoir *r = adopt(dr, km_model_name(m), lin, 1);
    if (r && !r->off && (r->d != d || (!r->rows && !r->refused)))
        reservoir_shape(dr, r, d);
    if (!r || r->off || !r->rows) {
        pthread_mutex_unlock(&dr->lock);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        size_t slot;
        r->seen++;
        if (r->held < r->cap) {
            slot = r->held++;
        } else {
            uint64_t bound = W ? W : timed ? r->cap : r->seen;
            uint64_t j = km_rng_below(&r->rng, (size_t)bound);
            if (j >= r->cap)
                continue;
            slot = (size_t)j;
        }
        memcpy(r->rows + slot * d, X + i * d, d * sizeof *X);
        r->seq[slot] = r->seen;
        r->when[slot] = now;
    }
    pthread_mutex_unlock(&dr->lock);
}

const api_observer *srv_drift_observer(srv_drift *d, const srv_ref *ref,
                                       srv_drift_tap *tap)
{
    if (!d || !d->s->cfg.drift || !ref)
        return NULL;
    tap->obs.rows = observe;
    tap->obs.ctx = tap;
    tap->d = d;
    tap->ref = ref;
    return &tap->obs;
}

/* The rows of r in the window (malloc'd into *out, *n of them). Lock
 * held. -1 on OOM. */
static int window_rows(srv_drift *dr, const reservoir *r, double **out,
                       size_t *n)
{
    uint64_t W = (uint64_t)dr->s->cfg.drift_window_rows;
    double T = dr->s->cfg.drift_window_seconds, now = srv_mono();
    *out = NULL;
    *n = 0;
    if (!r || !r->rows || !r->held)
        return 0;
    double *Y = malloc(r->held * r->d * sizeof *Y);
    if (!Y)
        return -1;
    size_t k = 0;
    for (size_t i = 0; i < r->held; i++) {
        if ((W && r->seq[i] + W <= r->seen) || (T > 0 && now - r->when[i] > T))
            continue;
        memcpy(Y + k * r->d, r->rows + i * r->d, r->d * sizeof *Y);
        k++;
    }
    *out = Y;
    *n = k;
    return 0;
}

/* ------------------------------------------------------------ the test */

typedef struct drift_task {
    srv_drift *d;
    srv_ref *ref;
    double *Y;
    size_t n, permutations, reservoir_rows;
    uint64_t seed, seen;
} drift_task;

static void task_free(void *arg)
{
    drift_task *t = arg;
    srv_ref_release(t->ref);
    free(t->Y);
    free(t);
}

static void add_or_null(cJSON *o, const char *key, double v, int given)
{
    if (given)
        cJSON_AddNumberToObject(o, key, v);
    else
        cJSON_AddNullToObject(o, key);
}

/* The answer of a test (API.md's drift object). */
static cJSON *drift_json(srv_drift *dr, const km_model *m,
                         const km_drift_result *res, const drift_task *t,
                         double seconds)
{
    char when[40];
    const srv_config *c = &dr->s->cfg;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "model", km_model_name(m));
    cJSON_AddNumberToObject(o, "version", (double)km_model_version(m));
    cJSON_AddNumberToObject(o, "mmd2", res->mmd2);
    cJSON_AddNumberToObject(o, "p_value", res->p_value);
    cJSON_AddNumberToObject(o, "permutations", (double)res->permutations);
    cJSON_AddNumberToObject(o, "seed", (double)res->seed);
    cJSON *sz = cJSON_AddObjectToObject(o, "sizes");
    cJSON_AddNumberToObject(sz, "reference", (double)res->n_reference);
    cJSON_AddNumberToObject(sz, "recent", (double)res->n_recent);
    cJSON *w = cJSON_AddObjectToObject(o, "window");
    add_or_null(w, "rows", c->drift_window_rows, c->drift_window_rows > 0);
    add_or_null(w, "seconds", c->drift_window_seconds,
                c->drift_window_seconds > 0);
    cJSON_AddNumberToObject(w, "reservoir_rows", (double)t->reservoir_rows);
    cJSON_AddNumberToObject(w, "seen", (double)t->seen);
    cJSON *k = cJSON_AddObjectToObject(o, "kernel");
    cJSON_AddStringToObject(k, "type", km_kernel_type_name(res->kernel));
    cJSON_AddBoolToObject(k, "own", res->own_kernel);
    add_or_null(k, "gamma", res->gamma, !res->own_kernel);
    api_format_time(srv_now_ms(), when, sizeof when);
    cJSON_AddStringToObject(o, "computed_at", when);
    cJSON_AddNumberToObject(o, "seconds", seconds);
    cJSON_AddBoolToObject(o, "cached", 0);
    return o;
}

static int task_run(void *arg, const km_fit_control *ctl, cJSON **result,
                    api_error *e)
{
    drift_task *t = arg;
    const km_model *m = srv_ref_model(t->ref);
    km_drift_result res;
    km_error kerr = {KM_OK, ""};
    double t0 = srv_mono();
    km_status st = km_drift(m, t->Y, t->n, t->permutations, t->seed, ctl,
                            &res, &kerr);
    if (st != KM_OK)
        return api_fail_km(e, &kerr);
    cJSON *o = drift_json(t->d, m, &res, t, srv_mono() - t0);
    if (!o)
        return api_raise(e, API_INTERNAL, "out of memory for the answer");
    srv_drift *dr = t->d;
    pthread_mutex_lock(&dr->lock);
    reservoir *r = adopt(dr, km_model_name(m), srv_ref_lineage(t->ref), 1);
    if (r) {
        cJSON_Delete(r->last);
        r->last = cJSON_Duplicate(o, 1);
        r->last_version = km_model_version(m);
        r->last_perms = t->permutations;
        r->last_seed = t->seed;
        r->last_mono = srv_mono();
    }
    pthread_mutex_unlock(&dr->lock);
    *result = o;
    return 0;
}

/* ------------------------------------------------------------ GET */

int srv_drift_param(const char *name, api_error *e)
{
    static const char *const known[] = {"permutations", "seed", "async"};
    for (size_t i = 0; i < sizeof known / sizeof *known; i++)
        if (!strcmp(name, known[i]))
            return 0;
    return api_invalid(e, "query parameter '%.64s' is not known; drift takes "
                       "permutations, seed and async", name);
}

/* A whole number in [lo, hi] from text (NULL: def); -1 with a 400. */
static int query_uint(const char *text, const char *name, uint64_t lo,
                      uint64_t hi, uint64_t def, uint64_t *out, api_error *e)
{
    uint64_t v = 0;
    const char *p = text;
    if (!text) {
        *out = def;
        return 0;
    }
    for (; *p >= '0' && *p <= '9' && v <= hi; p++)
        v = v * 10 + (uint64_t)(*p - '0');
    if (!*text || *p || v < lo || v > hi)
        return api_invalid(e, "%s \"%.24s\" must be a whole number from "
                           "%llu to %llu", name, text, (unsigned long long)lo,
                           (unsigned long long)hi);
    *out = v;
    return 0;
}

static int query_bool(const char *text, const char *name, int *out,
                      api_error *e)
{
    *out = 0;
    if (!text || !strcmp(text, "false"))
        return 0;
    if (!strcmp(text, "true") || !*text) {
        *out = 1;
        return 0;
    }
    return api_invalid(e, "%s \"%.24s\" must be true or false", name, text);
}

static void drift_done(srv_job *job, void *rq)
{
    (void)job;
    srv_wake(rq);
}

static void drift_answer(srv_request *rq, srv_reply *rp, void *arg)
{
    srv_job *job = arg;
    (void)rq;
    cJSON *res = srv_job_state_of(job) == SRV_JOB_SUCCEEDED
                     ? srv_job_result(job) : NULL;
    if (res) {
        srv_reply_json(rp, 200, res);
        return;
    }
    api_error e;
    srv_job_error(job, &e);
    if (!e.code)
        api_raise(&e, API_INTERNAL, "the drift test ended without a result");
    srv_reply_error(rp, &e);
}

static void release_job(void *job)
{
    srv_job_release(job);
}

/* Why a model has too few recent rows, for the 409. */
static void too_few(srv_drift *dr, int off, int refused, const char *name,
                    size_t n, srv_reply *rp)
{
    const srv_config *c = &dr->s->cfg;
    const char *why = !c->drift ? " (collection is off: --drift false)"
                      : off ? " (collection is off for this model: POST "
                              "{\"collect\": true} to .../drift turns it on)"
                      : refused ? " (the memory budget could not hold its "
                                  "reservoir)" : "";
    srv_reply_fail(rp, API_CONFLICT, "model \"%s\" has %zu recent rows in "
                   "the drift window; the drift test needs at least %d "
                   "(--drift-min-rows): predict more rows first%s", name, n,
                   c->drift_min_rows, why);
}

/* A fresh cached answer of (version, permutations, seed), or NULL. Lock
 * held. */
static cJSON *cached(srv_drift *dr, const reservoir *r, uint64_t version,
                     size_t perms, uint64_t seed)
{
    double ttl = dr->s->cfg.drift_cache_seconds;
    if (!r || !r->last || ttl <= 0 || r->last_version != version ||
        r->last_perms != perms || r->last_seed != seed ||
        srv_mono() - r->last_mono > ttl)
        return NULL;
    cJSON *o = cJSON_Duplicate(r->last, 1);
    if (o)
        cJSON_ReplaceItemInObject(o, "cached", cJSON_CreateBool(1));
    return o;
}

/* The checks of a model before its rows are looked at: 409 naming why
 * it cannot be tested. */
static int testable(const km_model *m, srv_reply *rp)
{
    size_t rows;
    if (km_kernel_input(km_model_kernel(m)) == KM_INPUT_PRECOMPUTED) {
        srv_reply_fail(rp, API_CONFLICT, "model \"%s\" has a precomputed "
                       "kernel: its rows are kernel values against its "
                       "training rows, so there is no input sample to test "
                       "for drift", km_model_name(m));
        return -1;
    }
    if (!km_model_reference(m, &rows)) {
        srv_reply_fail(rp, API_CONFLICT, "model \"%s\" keeps no drift "
                       "reference (its file is older than format version "
                       "8): refit it to get one", km_model_name(m));
        return -1;
    }
    return 0;
}

/* Submits the test of m on the rows of t; -1 with the reply set. */
static srv_job *submit(srv_drift *dr, srv_request *rq, srv_reply *rp,
                       drift_task *t, int async)
{
    api_error e;
    const km_model *m = srv_ref_model(t->ref);
    size_t d = km_model_n_features(m);
    size_t bytes = km_drift_bytes(m, t->n) + t->n * d * sizeof(double);
    srv_task task = {task_run, task_free, t, "drift"};
    srv_job *job = srv_jobs_submit_task(dr->s->jobs, km_model_name(m), &task,
                                        bytes, async ? NULL : drift_done,
                                        async ? NULL : rq, &e);
    if (!job)
        srv_reply_error(rp, &e);
    return job;
}

static int check_param(void *ctx, const char *name)
{
    return srv_drift_param(name, ctx) ? -1 : 0;
}

/* The request's permutations, seed and async; -1 with a 400. */
static int read_query(srv_request *rq, srv_reply *rp, uint64_t *perms,
                      uint64_t *seed, int *async)
{
    api_error e;
    if (srv_query_each(rq, check_param, &e) ||
        query_uint(srv_query(rq, "permutations"), "permutations", 1,
                   KM_DRIFT_MAX_PERMUTATIONS, KM_DRIFT_PERMUTATIONS, perms,
                   &e) ||
        query_uint(srv_query(rq, "seed"), "seed", 0, KM_MODEL_MAX_VERSION, 0,
                   seed, &e) ||
        query_bool(srv_query(rq, "async"), "async", async, &e)) {
        srv_reply_error(rp, &e);
        return -1;
    }
    return 0;
}

void srv_drift_get(srv_drift *dr, srv_request *rq, srv_reply *rp,
                   srv_ref *ref)
{
    uint64_t perms, seed;
    int async;
    const km_model *m = srv_ref_model(ref);
    if (read_query(rq, rp, &perms, &seed, &async) || testable(m, rp)) {
        srv_ref_release(ref);
        return;
    }
    drift_task *t = calloc(1, sizeof *t);
    int oom = !t, off = 0, refused = 0;
    pthread_mutex_lock(&dr->lock);
    reservoir *r = adopt(dr, km_model_name(m), srv_ref_lineage(ref), 0);
    cJSON *hit = cached(dr, r, km_model_version(m), (size_t)perms, seed);
    if (!hit && t && r && r->d == km_model_n_features(m)) {
        oom = window_rows(dr, r, &t->Y, &t->n) != 0;
        t->seen = r->seen;
        t->reservoir_rows = r->held;
    }
    if (r) {
        off = r->off;
        refused = r->refused;
    }
    pthread_mutex_unlock(&dr->lock);
    if (hit || !t || oom) {
        if (hit)
            srv_reply_json(rp, 200, hit);
        else
            srv_reply_fail(rp, API_INTERNAL, "out of memory");
        if (t)
            free(t->Y);
        free(t);
        srv_ref_release(ref);
        return;
    }
    if (t->n < (size_t)dr->s->cfg.drift_min_rows) {
        too_few(dr, off, refused, km_model_name(m), t->n, rp);
        free(t->Y);
        free(t);
        srv_ref_release(ref);
        return;
    }
    t->d = dr;
    t->ref = ref;
    t->permutations = (size_t)perms;
    t->seed = seed;
    srv_job *job = submit(dr, rq, rp, t, async);
    if (!job)
        return;
    if (!async) {
        srv_park(rq, rp, (srv_continuation){drift_answer, release_job, job});
        return;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "job", srv_job_json(job));
    snprintf(rp->location, sizeof rp->location, "/v1/jobs/%s",
             srv_job_id(job));
    srv_job_release(job);
    srv_reply_json(rp, 202, o);
}

/* ------------------------------------------------------------ POST */

void srv_drift_post(srv_drift *dr, srv_request *rq, srv_reply *rp,
                    srv_ref *ref)
{
    static const char *const keys[] = {"collect", "reset", NULL};
    cJSON *root = NULL;
    api_error e;
    int collect = -1, reset = 0;
    const char *name = km_model_name(srv_ref_model(ref));
    if (api_parse_object(rq->body ? rq->body : "{}", rq->body ? rq->len : 2,
                         &root, &e) ||
        api_check_keys(root, "", keys, &e) ||
        (cJSON_GetObjectItemCaseSensitive(root, "collect") &&
         api_opt_bool(root, "", "collect", &collect, &e)) ||
        api_opt_bool(root, "", "reset", &reset, &e)) {
        cJSON_Delete(root);
        srv_ref_release(ref);
        srv_reply_error(rp, &e);
        return;
    }
    cJSON_Delete(root);
    pthread_mutex_lock(&dr->lock);
    reservoir *r = adopt(dr, name, srv_ref_lineage(ref), 1);
    int stale = !r && find(dr, name, 0);
    if (r && collect >= 0)
        r->off = !collect;
    if (r && (reset || r->off)) /* its memory goes back to the budget */
        reservoir_empty(dr, r);
    if (r && reset) {
        cJSON_Delete(r->last);
        r->last = NULL;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "model", name);
    cJSON_AddBoolToObject(o, "collect", r && !r->off && dr->s->cfg.drift);
    cJSON_AddNumberToObject(o, "rows", r ? (double)r->held : 0);
    cJSON_AddNumberToObject(o, "seen", r ? (double)r->seen : 0);
    pthread_mutex_unlock(&dr->lock);
    srv_ref_release(ref);
    if (stale)
        srv_reply_fail(rp, API_CONFLICT, "model \"%s\" was deleted and "
                       "fitted again while the request ran: send it again",
                       name);
    else if (!r)
        srv_reply_fail(rp, API_INTERNAL, "out of memory");
    else
        srv_reply_json(rp, 200, o);
    if (!r)
        cJSON_Delete(o);
}

/* ------------------------------------------------------------ metrics */

/* Drops the reservoirs of names no longer served. Lock held. */
static void prune(srv_drift *dr)
{
    size_t w = 0;
    for (size_t i = 0; i < dr->n; i++)
        if (srv_registry_version(dr->s->registry, dr->r[i]->name))
            dr->r[w++] = dr->r[i];
        else
            reservoir_free(dr, dr->r[i]);
    dr->n = w;
}

static double number_at(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

char *srv_drift_metrics(srv_drift *dr)
{
    static const char *const fam[2][2] = {
        {"kmserve_model_drift_mmd2", "The unbiased MMD^2 of the model's "
                                     "latest drift test."},
        {"kmserve_model_drift_p_value", "The permutation p-value of the "
                                        "model's latest drift test."}};
    static const char *const key[2] = {"mmd2", "p_value"};
    size_t cap = 4096, len = 0;
    char *out = malloc(cap);
    if (!out)
        return NULL;
    out[0] = '\0';
    pthread_mutex_lock(&dr->lock);
    prune(dr);
    for (int f = 0; f < 2 && out; f++) {
        len += (size_t)snprintf(out + len, cap - len, "# HELP %s %s\n# TYPE "
                                "%s gauge\n", fam[f][0], fam[f][1],
                                fam[f][0]);
        for (size_t i = 0; i < dr->n && out; i++) {
            if (!dr->r[i]->last)
                continue;
            if (cap - len < 256) {
                char *t = realloc(out, cap *= 2);
                if (!t) {
                    free(out);
                    out = NULL;
                    break;
                }
                out = t;
            }
            len += (size_t)snprintf(out + len, cap - len,
                                    "%s{model=\"%s\"} %.17g\n", fam[f][0],
                                    dr->r[i]->name,
                                    number_at(dr->r[i]->last, key[f]));
        }
    }
    pthread_mutex_unlock(&dr->lock);
    return out;
}

/* ------------------------------------------------------------ schedule */

/* One round: a test (default permutations, seed 0, as a job nobody
 * waits on) of every served model with enough recent rows. */
static void refresh_round(srv_drift *dr)
{
    srv_ref **refs;
    size_t n;
    if (srv_registry_list(dr->s->registry, &refs, &n))
        return;
    for (size_t i = 0; i < n; i++) {
        const km_model *m = srv_ref_model(refs[i]);
        size_t rows;
        drift_task *t = calloc(1, sizeof *t);
        int ok = t && km_model_reference(m, &rows) &&
                 km_kernel_input(km_model_kernel(m)) != KM_INPUT_PRECOMPUTED;
        pthread_mutex_lock(&dr->lock);
        reservoir *r = ok ? adopt(dr, km_model_name(m),
                                  srv_ref_lineage(refs[i]), 0) : NULL;
        ok = r && r->d == km_model_n_features(m) &&
             window_rows(dr, r, &t->Y, &t->n) == 0 &&
             t->n >= (size_t)dr->s->cfg.drift_min_rows;
        if (ok) {
            t->seen = r->seen;
            t->reservoir_rows = r->held;
        }
        pthread_mutex_unlock(&dr->lock);
        if (!ok) {
            if (t)
                free(t->Y);
            free(t);
            srv_ref_release(refs[i]);
            continue;
        }
        t->d = dr;
        t->ref = refs[i]; /* the task's now */
        t->permutations = KM_DRIFT_PERMUTATIONS;
        api_error e;
        srv_task task = {task_run, task_free, t, "drift"};
        size_t bytes = km_drift_bytes(m, t->n) +
                       t->n * km_model_n_features(m) * sizeof(double);
        srv_job *job = srv_jobs_submit_task(dr->s->jobs, km_model_name(m),
                                            &task, bytes, NULL, NULL, &e);
        if (!job)
            srv_log(SRV_WARN, "drift_refresh", "%s: %s", km_model_name(m),
                    e.message);
        srv_job_release(job);
    }
    free(refs);
}

static void *refresher(void *arg)
{
    srv_drift *dr = arg;
    double every = dr->s->cfg.drift_refresh_seconds;
    pthread_mutex_lock(&dr->lock);
    while (!dr->stopping) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        double at = (double)ts.tv_sec + ts.tv_nsec * 1e-9 + every;
        ts.tv_sec = (time_t)at;
        ts.tv_nsec = (long)((at - (double)ts.tv_sec) * 1e9);
        pthread_cond_timedwait(&dr->stop, &dr->lock, &ts);
        if (dr->stopping)
            break;
        pthread_mutex_unlock(&dr->lock);
        if (atomic_load(&dr->s->phase) == SRV_READY)
            refresh_round(dr);
        pthread_mutex_lock(&dr->lock);
    }
    pthread_mutex_unlock(&dr->lock);
    return NULL;
}

/* ------------------------------------------------------------ life */

srv_drift *srv_drift_create(srv_state *s)
{
    srv_drift *d = calloc(1, sizeof *d);
    if (!d)
        return NULL;
    pthread_mutex_init(&d->lock, NULL);
    pthread_cond_init(&d->stop, NULL);
    d->s = s;
    if (s->cfg.drift_refresh_seconds > 0 &&
        pthread_create(&d->refresher, NULL, refresher, d) == 0)
        d->refreshing = 1;
    return d;
}

void srv_drift_stop(srv_drift *d)
{
    if (!d || !d->refreshing)
        return;
    pthread_mutex_lock(&d->lock);
    d->stopping = 1;
    pthread_cond_signal(&d->stop);
    pthread_mutex_unlock(&d->lock);
    pthread_join(d->refresher, NULL);
    d->refreshing = 0;
}

void srv_drift_free(srv_drift *d)
{
    if (!d)
        return;
    srv_drift_stop(d);
    for (size_t i = 0; i < d->n; i++)
        reservoir_free(d, d->r[i]);
    free(d->r);
    pthread_mutex_destroy(&d->lock);
    pthread_cond_destroy(&d->stop);
    free(d);
}
