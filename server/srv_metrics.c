/*
 * srv_metrics.c - counters and histograms as atomics, and their rendering.
 *
 * Status codes are folded into a fixed list (the codes API.md uses, plus
 * "other"), so the label space is bounded whatever clients send.
 * Histogram sums are kept in nanoseconds as integers so they can be
 * atomic without a lock.
 *
 * Thread-safety: see srv_metrics.h.
 */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "srv_jobs.h"

/* srv_metrics.h sizes the gauges' job counts without srv_jobs.h */
_Static_assert(sizeof ((srv_gauges *)0)->jobs / sizeof(size_t) == SRV_JOB_STATES,
               "srv_gauges.jobs holds one count per srv_job_state");
#include "srv_metrics.h"

static const char *const methods[] = {"GET", "HEAD", "POST", "DELETE",
                                      "other"};
#define N_METHODS 5
static const int codes[] = {200, 201, 202, 204, 400, 401, 403, 404, 405, 409,
                            411, 413, 415, 422, 429, 500, 503, 507, 0};
#define N_CODES (sizeof codes / sizeof *codes)

static const double latency_buckets[] = {0.0005, 0.001, 0.0025, 0.005, 0.01,
                                         0.025,  0.05,  0.1,    0.25,  0.5,
                                         1,      2.5,   5,      10,    30,
                                         60,     120,   300,    600};
static const double fit_buckets[] = {0.01, 0.05, 0.1, 0.5, 1,   2.5, 5,
                                     10,   30,   60,  120, 300, 600};
#define N_LAT (sizeof latency_buckets / sizeof *latency_buckets)
#define N_FIT (sizeof fit_buckets / sizeof *fit_buckets)

typedef struct histogram {
    atomic_ulong bucket[N_LAT + 1]; /* non-cumulative; last is +Inf */
    atomic_ulong count;
    atomic_ulong sum_ns;
} histogram;

struct srv_metrics {
    const char *const *routes;
    size_t n_routes;
    atomic_ulong requests[SRV_MAX_ROUTES][N_METHODS][N_CODES];
    histogram latency[SRV_MAX_ROUTES];
    histogram fit[KM_ALGO_COUNT];
    atomic_ulong predicted_rows;
    atomic_ulong rollbacks;
};

srv_metrics *srv_metrics_create(const char *const *route_names,
                                size_t n_routes)
{
    if (n_routes > SRV_MAX_ROUTES)
        return NULL;
    srv_metrics *m = calloc(1, sizeof *m); /* zeroed atomics are 0 */
    if (!m)
        return NULL;
    m->routes = route_names;
    m->n_routes = n_routes;
    return m;
}

void srv_metrics_free(srv_metrics *m)
{
    free(m);
}

static void observe(histogram *h, const double *bounds, size_t nb, double v)
{
    size_t i = 0;
    while (i < nb && v > bounds[i])
        i++;
    atomic_fetch_add(&h->bucket[i], 1);
    atomic_fetch_add(&h->count, 1);
    atomic_fetch_add(&h->sum_ns, (unsigned long)(v > 0 ? v * 1e9 : 0));
}

void srv_metrics_request(srv_metrics *m, size_t route, const char *method,
                         int status, double seconds)
{
    if (route >= m->n_routes)
        return;
    size_t mi = 0, ci = 0;
    while (mi < N_METHODS - 1 && strcmp(methods[mi], method))
        mi++;
    while (ci < N_CODES - 1 && codes[ci] != status)
        ci++;
    atomic_fetch_add(&m->requests[route][mi][ci], 1);
    observe(&m->latency[route], latency_buckets, N_LAT, seconds);
}

void srv_metrics_fit(srv_metrics *m, km_algorithm algo, double seconds)
{
    if ((unsigned)algo < KM_ALGO_COUNT)
        observe(&m->fit[algo], fit_buckets, N_FIT, seconds);
}

void srv_metrics_predicted_rows(srv_metrics *m, size_t rows)
{
    atomic_fetch_add(&m->predicted_rows, rows);
}

void srv_metrics_rollback(srv_metrics *m)
{
    atomic_fetch_add(&m->rollbacks, 1);
}

/* A growing text buffer. */
typedef struct text {
    char *p;
    size_t len, cap;
    int failed;
} text;

static void add(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void add(text *t, const char *fmt, ...)
{
    for (int tries = 0; !t->failed && tries < 2; tries++) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(t->p + t->len, t->cap - t->len, fmt, ap);
        va_end(ap);
        if (n < 0) {
            t->failed = 1;
            return;
        }
        if ((size_t)n < t->cap - t->len) {
            t->len += (size_t)n;
            return;
        }
        size_t cap = (t->cap + (size_t)n + 1) * 2;
        char *np = realloc(t->p, cap);
        if (!np) {
            t->failed = 1;
            return;
        }
        t->p = np;
        t->cap = cap;
    }
}

static void render_histogram(text *t, const char *name, const char *label,
                             const char *value, const histogram *h,
                             const double *bounds, size_t nb)
{
    unsigned long cum = 0;
    for (size_t i = 0; i < nb; i++) {
        cum += atomic_load(&h->bucket[i]);
        add(t, "%s_bucket{%s=\"%s\",le=\"%g\"} %lu\n", name, label, value,
            bounds[i], cum);
    }
    cum += atomic_load(&h->bucket[nb]);
    add(t, "%s_bucket{%s=\"%s\",le=\"+Inf\"} %lu\n", name, label, value, cum);
    add(t, "%s_sum{%s=\"%s\"} %.9f\n", name, label, value,
        atomic_load(&h->sum_ns) / 1e9);
    add(t, "%s_count{%s=\"%s\"} %lu\n", name, label, value,
        atomic_load(&h->count));
}

/* Resident memory from /proc/self/statm (pages). */
static size_t resident_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long size = 0, rss = 0;
    if (f) {
        if (fscanf(f, "%lu %lu", &size, &rss) != 2)
            rss = 0;
        fclose(f);
    }
    return rss * (size_t)sysconf(_SC_PAGESIZE);
}

/* The # HELP and # TYPE lines of a metric family. */
static void family(text *t, const char *name, const char *type,
                   const char *help)
{
    add(t, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A family with one sample and no labels. */
static void single(text *t, const char *name, const char *type,
                   const char *help, unsigned long long v)
{
    family(t, name, type, help);
    add(t, "%s %llu\n", name, v);
}

char *srv_metrics_render(srv_metrics *m, const srv_gauges *g, size_t *len)
{
    text t = {malloc(16384), 0, 16384, 0};
    if (!t.p)
        return NULL;
    family(&t, "kmserve_build_info", "gauge", "Build information.");
    add(&t, "kmserve_build_info{version=\"%s\",blas_core=\"%s\"} 1\n",
        KM_VERSION, km_blas_core());
    family(&t, "kmserve_http_requests_total", "counter",
           "HTTP requests answered.");
    for (size_t r = 0; r < m->n_routes; r++)
        for (size_t mi = 0; mi < N_METHODS; mi++)
            for (size_t ci = 0; ci < N_CODES; ci++) {
                unsigned long v = atomic_load(&m->requests[r][mi][ci]);
                if (!v)
                    continue;
                char code[8];
                if (codes[ci])
                    snprintf(code, sizeof code, "%d", codes[ci]);
                else
                    snprintf(code, sizeof code, "other");
                add(&t, "kmserve_http_requests_total{route=\"%s\",method=\"%s\","
                        "code=\"%s\"} %lu\n", m->routes[r], methods[mi], code, v);
            }
    family(&t, "kmserve_http_request_duration_seconds", "histogram",
           "Time to answer a request.");
    for (size_t r = 0; r < m->n_routes; r++)
        render_histogram(&t, "kmserve_http_request_duration_seconds", "route",
                         m->routes[r], &m->latency[r], latency_buckets, N_LAT);
    family(&t, "kmserve_fit_duration_seconds", "histogram",
           "Time a successful fit took.");
    for (int a = 0; a < KM_ALGO_COUNT; a++)
        render_histogram(&t, "kmserve_fit_duration_seconds", "algorithm",
                         km_algorithm_name((km_algorithm)a), &m->fit[a],
                         fit_buckets, N_FIT);
    single(&t, "kmserve_predicted_rows_total", "counter",
           "Rows predicted or projected.", atomic_load(&m->predicted_rows));
    single(&t, "kmserve_rollbacks_total", "counter",
           "Rollbacks committed: a kept version made current again.",
           atomic_load(&m->rollbacks));
    single(&t, "kmserve_models_loaded", "gauge", "Models being served.",
           g->models_loaded);
    single(&t, "kmserve_model_bytes", "gauge",
           "Memory held by the models served.", g->model_bytes);
    family(&t, "kmserve_jobs", "gauge", "Fit jobs by state.");
    for (int i = 0; i < SRV_JOB_STATES; i++)
        add(&t, "kmserve_jobs{state=\"%s\"} %zu\n", srv_job_state_name(i),
            g->jobs[i]);
    single(&t, "kmserve_job_queue_depth", "gauge", "Fits waiting for a worker.",
           g->queue_depth);
    single(&t, "kmserve_jobs_retained", "gauge",
           "Jobs kept for /v1/jobs, all states (at most --max-jobs).",
           g->jobs_retained);
    single(&t, "kmserve_jobs_evicted_total", "counter",
           "Finished jobs dropped before their TTL to stay within --max-jobs.",
           g->jobs_evicted);
    single(&t, "kmserve_fit_memory_reserved_bytes", "gauge",
           "Memory reserved by admitted fits and running predicts.",
           g->fit_bytes_reserved);
    single(&t, "kmserve_memory_budget_bytes", "gauge",
           "The memory budget (--memory-budget-mb) admission holds fits and "
           "predicts to.", g->memory_budget);
    single(&t, "kmserve_process_resident_memory_bytes", "gauge",
           "Resident memory.", resident_bytes());
    if (g->extra)
        add(&t, "%s", g->extra);
    if (t.failed) {
        free(t.p);
        return NULL;
    }
    *len = t.len;
    return t.p;
}
