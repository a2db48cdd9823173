/*
 * srv_routes.c - the routing table and the handlers of API.md.
 *
 * Statuses: a path no route has is 404; a route's path with a bad model
 * name is 400 (the handler's name check); 405 only for a route that
 * exists, with a wrong method. Model routes are matched on the last
 * segment: /v1/models/{name}/fit, /update, /predict, /project, /score,
 * /import and /export take everything
 * between /v1/models/ and that segment as the name, so a name such as
 * "../x" (percent-encoded by the client, decoded by MHD) reaches the name
 * check and is answered 400, as is an empty one (/v1/models//fit). Any
 * other path with a '/' after /v1/models/ (/v1/models/x/foo) is no route:
 * 404, not a 405 from /v1/models/{name}.
 *
 * Long: the routing table and the handlers it names are kept in one file,
 * so that a route and what answers it are read together.
 *
 * Thread-safety: handlers run on MHD threads concurrently; they share
 * only srv_state, whose members are thread-safe.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../api/api_about.h"
#include "../api/api_coef.h"
#include "../api/api_fit.h"
#include "../api/api_kernels.h"
#include "../api/api_json.h"
#include "../api/api_model.h"
#include "../api/api_predict.h"
#include "../api/api_score.h"
#include "srv_console.h"
#include "srv_drift.h"
#include "../api/api_transfer.h"
#include "../api/api_v2.h"
#include "srv_log.h"
#include "srv_routes.h"
#include "srv_test.h"

/*
 * The routes, one row each, in index order: the order is the metrics'
 * route labels' and breaks ties between patterns (the first wins). A row
 * is X(ID, pattern, body, methods...), each method GET(handler, scope),
 * POST(handler, scope) or DEL(handler, scope): GET also answers HEAD;
 * body is what POST takes (SRV_BODY_*); scope is what a token needs when
 * tokens are on (OPEN, READ, ADMIN). From this list come the enum R_*,
 * the handlers' declarations, the table and the metrics' route labels: a
 * new route is a row here and its handler.
 *
 * /metrics is READ here; it is open unless --protect-metrics (srv_http).
 * The console's files and the spec are open: static, they hold no data
 * (the console's calls to /v1 carry the token). An export holds the
 * model's support vectors (training rows): ADMIN.
 */
#define SRV_ROUTES(X)                                                        \
    X(LIVEZ, "/livez", SRV_BODY_NONE, GET(h_livez, OPEN))                    \
    X(READYZ, "/readyz", SRV_BODY_NONE, GET(h_readyz, OPEN))                 \
    X(HEALTHZ, "/healthz", SRV_BODY_NONE, GET(h_readyz, OPEN))               \
    X(METRICS, "/metrics", SRV_BODY_NONE, GET(h_metrics, READ))              \
    X(V1, "/v1", SRV_BODY_NONE, GET(h_v1, READ))                             \
    X(MODELS, "/v1/models", SRV_BODY_NONE, GET(h_models, READ))              \
    X(MODEL, "/v1/models/{name}", SRV_BODY_NONE, GET(h_model_get, READ)      \
      DEL(h_model_delete, ADMIN))                                            \
    X(FIT, "/v1/models/{name}/fit", SRV_BODY_TENSORS, POST(h_fit, ADMIN))    \
    X(UPDATE, "/v1/models/{name}/update", SRV_BODY_TENSORS,                  \
      POST(h_update, ADMIN))                                                 \
    X(PREDICT, "/v1/models/{name}/predict", SRV_BODY_JSON,                   \
      POST(h_predict, READ))                                                 \
    X(PROJECT, "/v1/models/{name}/project", SRV_BODY_JSON,                   \
      POST(h_project, READ))                                                 \
    X(SCORE, "/v1/models/{name}/score", SRV_BODY_JSON, POST(h_score, READ))  \
    X(JOBS, "/v1/jobs", SRV_BODY_NONE, GET(h_jobs, ADMIN))                   \
    X(JOB, "/v1/jobs/{id}", SRV_BODY_NONE, GET(h_job_get, ADMIN)             \
      DEL(h_job_delete, ADMIN))                                              \
    X(CONSOLE, "/", SRV_BODY_NONE, GET(h_asset, OPEN))                       \
    X(CONSOLE_CSS, "/console.css", SRV_BODY_NONE, GET(h_asset, OPEN))        \
    X(CONSOLE_JS, "/console.js", SRV_BODY_NONE, GET(h_asset, OPEN))          \
    X(CONSOLE_MODEL, "/model.js", SRV_BODY_NONE, GET(h_asset, OPEN))         \
    X(CONSOLE_CHART, "/chart.min.js", SRV_BODY_NONE, GET(h_asset, OPEN))     \
    X(OPENAPI, "/openapi.yaml", SRV_BODY_NONE, GET(h_asset, OPEN))           \
    X(IMPORT, "/v1/models/{name}/import", SRV_BODY_MODEL,                    \
      POST(h_import, ADMIN))                                                 \
    X(EXPORT, "/v1/models/{name}/export", SRV_BODY_NONE,                     \
      GET(h_export, ADMIN))                                                  \
    X(VERSIONS, "/v1/models/{name}/versions", SRV_BODY_NONE,                 \
      GET(h_versions, READ))                                                 \
    X(VERSION, "/v1/models/{name}/versions/{version}", SRV_BODY_NONE,        \
      GET(h_version_get, READ))                                              \
    X(VPREDICT, "/v1/models/{name}/versions/{version}/predict",              \
      SRV_BODY_JSON, POST(h_predict, READ))                                  \
    X(VPROJECT, "/v1/models/{name}/versions/{version}/project",              \
      SRV_BODY_JSON, POST(h_project, READ))                                  \
    X(COEFS, "/v1/models/{name}/coefficients", SRV_BODY_NONE,                \
      GET(h_coefficients, READ))                                             \
    X(VCOEFS, "/v1/models/{name}/versions/{version}/coefficients",           \
      SRV_BODY_NONE, GET(h_coefficients, READ))                              \
    X(VSCORE, "/v1/models/{name}/versions/{version}/score", SRV_BODY_JSON,   \
      POST(h_score, READ))                                                   \
    X(ROLLBACK, "/v1/models/{name}/rollback", SRV_BODY_JSON,                 \
      POST(h_rollback, ADMIN))                                               \
    X(V2, "/v2", SRV_BODY_NONE, GET(h_v2, READ))                             \
    X(V2_LIVE, "/v2/health/live", SRV_BODY_NONE, GET(h_v2_live, OPEN))       \
    X(V2_READY, "/v2/health/ready", SRV_BODY_NONE, GET(h_v2_ready, OPEN))    \
    X(V2_MODEL, "/v2/models/{name}", SRV_BODY_NONE, GET(h_v2_model, READ))   \
    X(V2_VMODEL, "/v2/models/{name}/versions/{version}", SRV_BODY_NONE,      \
      GET(h_v2_model, READ))                                                 \
    X(V2_READY_M, "/v2/models/{name}/ready", SRV_BODY_NONE,                  \
      GET(h_v2_model_ready, READ))                                           \
    X(V2_VREADY_M, "/v2/models/{name}/versions/{version}/ready",             \
      SRV_BODY_NONE, GET(h_v2_model_ready, READ))                            \
    X(V2_INFER, "/v2/models/{name}/infer", SRV_BODY_TENSORS,                 \
      POST(h_v2_infer, READ))                                                \
    X(V2_VINFER, "/v2/models/{name}/versions/{version}/infer",               \
      SRV_BODY_TENSORS, POST(h_v2_infer, READ))                              \
    X(KCHECK, "/v1/kernels/check", SRV_BODY_JSON,                            \
      POST(h_kernels_check, READ))                                           \
    X(KGRAM, "/v1/kernels/gram", SRV_BODY_JSON, POST(h_kernels_gram, READ))  \
    X(DRIFT, "/v1/models/{name}/drift", SRV_BODY_JSON, GET(h_drift, READ)    \
      POST(h_drift_post, ADMIN))

/* The handlers' declarations (a handler serving several routes is
 * declared once a row, which C allows). */
#define GET(h, scope) static void h(srv_request *rq, srv_reply *rp);
#define POST GET
#define DEL GET
#define X(id, pattern, body, ...) __VA_ARGS__
SRV_ROUTES(X)
#undef X
#undef GET
#undef POST
#undef DEL

enum {
#define X(id, pattern, body, ...) R_##id,
    SRV_ROUTES(X)
#undef X
    R_COUNT
};

/* Every route has its own metrics label, and so has "unmatched"
 * (SRV_ROUTE_NONE): srv_metrics keeps SRV_MAX_ROUTES of them. */
_Static_assert(R_COUNT + 1 <= SRV_MAX_ROUTES,
               "more routes than srv_metrics.h's SRV_MAX_ROUTES labels");

/* A method's members of srv_route; a method a row does not name has no
 * handler and scope 0, SRV_SCOPE_OPEN. */
#define OPEN SRV_SCOPE_OPEN
#define READ SRV_SCOPE_READ
#define ADMIN SRV_SCOPE_ADMIN
#define GET(h, scope) .get = h, .get_scope = scope,
#define POST(h, scope) .post = h, .post_scope = scope,
#define DEL(h, scope) .del = h, .del_scope = scope,
static const srv_route routes[R_COUNT] = {
#define X(id, path, kind, ...) [R_##id] = {.pattern = path, .body = kind, \
                                           __VA_ARGS__},
    SRV_ROUTES(X)
#undef X
};
#undef GET
#undef POST
#undef DEL
#undef OPEN
#undef READ
#undef ADMIN

/* The metrics' route labels: each route's pattern, then "unmatched". */
static const char *const route_labels[R_COUNT + 1] = {
#define X(id, pattern, body, ...) pattern,
    SRV_ROUTES(X)
#undef X
    "unmatched"
};

const size_t SRV_ROUTE_NONE = R_COUNT;

size_t srv_metrics_route(void)
{
    return R_METRICS;
}

const char *const *srv_route_labels(size_t *n)
{
    *n = sizeof route_labels / sizeof *route_labels;
    return route_labels;
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

/* Copies n bytes of src into dst (room for len), NUL-terminated. */
static void copy_part(char *dst, size_t len, const char *src, size_t n)
{
    snprintf(dst, len, "%.*s", (int)(n < len ? n : len - 1), src);
}

/*
 * Whether path matches a pattern with {name}: the text before {name}
 * exactly, then the name, then the pattern's tail, in which {version}
 * stands for one segment that is not empty. The name may hold a '/' only
 * when the tail is not empty (the name check then refuses it). Returns 1
 * plus the length of the tail's literal text (so that the most specific
 * pattern wins: /versions/{version}/predict over /predict), or 0.
 */
static size_t match_pattern(const char *pattern, const char *path,
                            char *name, size_t len, char *version,
                            size_t vlen)
{
    static const char nm[] = "{name}", vm[] = "{version}";
    const char *at = strchr(pattern, '{'); /* {name} comes first if at all */
    if (!at || strncmp(at, nm, sizeof nm - 1) ||
        strncmp(path, pattern, (size_t)(at - pattern)))
        return 0;
    const char *rest = path + (at - pattern), *tail = at + sizeof nm - 1;
    const char *v = strstr(tail, vm);
    size_t rlen = strlen(rest);
    if (!v) {
        size_t tl = strlen(tail);
        if (rlen < tl || strcmp(rest + rlen - tl, tail) ||
            (!tl && strchr(rest, '/')))
            return 0;
        copy_part(name, len, rest, rlen - tl);
        return tl + 1;
    }
    const char *after = v + sizeof vm - 1;
    size_t al = strlen(after), bl = (size_t)(v - tail);
    if (rlen < al || strcmp(rest + rlen - al, after))
        return 0;
    const char *vend = rest + rlen - al, *vbeg = vend;
    while (vbeg > rest && vbeg[-1] != '/')
        vbeg--;
    if (vbeg == vend || (size_t)(vbeg - rest) < bl ||
        strncmp(vbeg - bl, tail, bl))
        return 0;
    copy_part(name, len, rest, (size_t)(vbeg - bl - rest));
    copy_part(version, vlen, vbeg, (size_t)(vend - vbeg));
    return bl + al + 1;
}

size_t srv_route_match(const char *path, char *param, size_t len,
                       char *version, size_t vlen)
{
    static const char jobs[] = "/v1/jobs/";
    size_t best = R_COUNT, best_score = 0;
    param[0] = version[0] = '\0';
    for (size_t i = 0; i < R_COUNT; i++)
        if (!strchr(routes[i].pattern, '{') && !strcmp(path, routes[i].pattern))
            return i;
    for (size_t i = 0; i < R_COUNT; i++) {
        char n[272], v[32] = "";
        size_t score = match_pattern(routes[i].pattern, path, n, sizeof n, v,
                                     sizeof v);
        if (score > best_score) {
            best_score = score;
            best = i;
            snprintf(param, len, "%s", n);
            snprintf(version, vlen, "%s", v);
        }
    }
    if (best != R_COUNT)
        return best;
    if (!strncmp(path, jobs, sizeof jobs - 1) && !strchr(path + sizeof jobs - 1, '/')) {
        snprintf(param, len, "%s", path + sizeof jobs - 1);
        return R_JOB;
    }
    return R_COUNT;
}

int srv_route_plain_errors(const char *path)
{
    return !strncmp(path, "/v2", 3) && (path[3] == '\0' || path[3] == '/');
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

/* The request's body, its matrix (one of matrix_keys) read directly. On
 * a route that takes binary tensors (SRV_BODY_TENSORS) with the
 * Inference-Header-Content-Length header, the JSON is the header's
 * length and the bytes after it the tensors' (b->tail). */
static int read_body(srv_request *rq, srv_reply *rp,
                     const char *const *matrix_keys, api_body *b)
{
    api_error e;
    const char *text = rq->body ? rq->body : "";
    const char *h = srv_route_at(rq->route)->body == SRV_BODY_TENSORS
                        ? srv_header(rq, "Inference-Header-Content-Length")
                        : NULL;
    size_t json = rq->len;
    memset(b, 0, sizeof *b);
    if ((h && api_v2_header_length(h, rq->len, &json, &e)) ||
        api_parse_body(text, json, matrix_keys, b, &e)) {
        api_body_free(b);
        srv_reply_error(rp, &e);
        return -1;
    }
    b->tail = (api_tail){text + json, rq->len - json, 0, h != NULL};
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

/* The {version} of the path: 0 when the route has none, else 1 to 2^53;
 * -1 with a 400 reply when it is not a version number. */
static int64_t path_version(srv_request *rq, srv_reply *rp)
{
    const char *p = rq->version;
    uint64_t v = 0;
    if (!*p)
        return 0;
    for (; *p >= '0' && *p <= '9' && v <= KM_MODEL_MAX_VERSION; p++)
        v = v * 10 + (uint64_t)(*p - '0');
    if (*p || rq->version[0] == '0' || v > KM_MODEL_MAX_VERSION) {
        srv_reply_fail(rp, API_INVALID_ARGUMENT, "version \"%.24s\" must be "
                       "a whole number from 1 to 2^53", rq->version);
        return -1;
    }
    return (int64_t)v;
}

/* A 404 naming the version of the request's model that is not there and
 * the ones that are (current: the version served now). */
static void no_version(srv_request *rq, srv_reply *rp, uint64_t version,
                       uint64_t current)
{
    uint64_t *kept = NULL;
    size_t n = 0, used = 0;
    char list[200] = "";
    if (srv_store_versions(rq->s->store, rq->param, current, &kept, &n) != 0)
        n = 0;
    for (size_t i = 0; i < n && used + 24 < sizeof list; i++)
        used += (size_t)snprintf(list + used, sizeof list - used, ", %llu",
                                 (unsigned long long)kept[i]);
    free(kept);
    srv_reply_fail(rp, API_NOT_FOUND, "model \"%s\" has no version %llu; "
                   "versions: %llu (current)%s%s", rq->param,
                   (unsigned long long)version, (unsigned long long)current,
                   list, srv_store_keeps(rq->s->store) > 1 ? ""
                   : " (older versions are kept with --keep-versions)");
}

static void unhold(srv_request *rq, size_t held)
{
    if (held && rq->s->jobs)
        srv_jobs_unreserve(rq->s->jobs, held);
}

/* Loads a kept version of the request's model (below current, the
 * version served now), holding against the memory budget its file read
 * whole and what loading it takes (srv_store_version_bytes: core's
 * km_model_load_bytes of the file): *held, released with unhold. file (may be NULL): as srv_store_load_version's.
 * NULL with a reply: 404 when it is not kept (also when it was pruned or
 * deleted since it was listed: a version that is gone is not found, not
 * an error), 413 when its memory cannot be held, 500 when its file cannot
 * be read. */
static km_model *load_kept(srv_request *rq, srv_reply *rp, uint64_t version,
                           uint64_t current, size_t *held, int *file)
{
    size_t need;
    api_error e;
    char why[300];
    int gone;
    *held = 0;
    if (version > current ||
        srv_store_version_bytes(rq->s->store, rq->param, version, &need)) {
        no_version(rq, rp, version, current);
        return NULL;
    }
    if (rq->s->jobs && srv_jobs_reserve(rq->s->jobs, need, "load of a kept "
                                        "version", &e)) {
        srv_reply_error(rp, &e);
        return NULL;
    }
    *held = need;
    srv_test_pause("kept_sized");
    km_model *m = srv_store_load_version(rq->s->store, rq->param, version,
                                         file, &gone, why, sizeof why);
    if (!m && gone) {
        no_version(rq, rp, version, current);
        unhold(rq, *held);
        *held = 0;
    } else if (!m) {
        srv_log(SRV_ERROR, "version_unreadable", "%s version %llu: %s",
                rq->param, (unsigned long long)version, why);
        srv_reply_fail(rp, API_INTERNAL, "version %llu of model \"%s\" "
                       "could not be read: %s", (unsigned long long)version,
                       rq->param, why);
        unhold(rq, *held);
        *held = 0;
    }
    return m;
}

/* The model a request names: the one served now, or the version in its
 * path (the served one when it is current, else the kept file, read for
 * this request: *held bytes reserved, release with unhold). NULL with a
 * reply (400, 404, 413, 500). */
static srv_ref *find_version(srv_request *rq, srv_reply *rp, size_t *held)
{
    *held = 0;
    int64_t v = path_version(rq, rp);
    srv_ref *ref = v < 0 ? NULL : find_model(rq, rp);
    uint64_t current = ref ? km_model_version(srv_ref_model(ref)) : 0;
    if (!ref || !v || (uint64_t)v == current)
        return ref;
    srv_ref_release(ref);
    km_model *m = load_kept(rq, rp, (uint64_t)v, current, held, NULL);
    srv_ref *own = m ? srv_ref_own(m) : NULL;
    if (m && !own) {
        srv_reply_fail(rp, API_INTERNAL, "out of memory");
        unhold(rq, *held);
        *held = 0;
    }
    return own;
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
    g.memory_budget = (size_t)(rq->s->cfg.memory_budget_mb * 1048576.0);
    if (rq->s->jobs) {
        srv_jobs_stats(rq->s->jobs, g.jobs, &g.queue_depth,
                       &g.fit_bytes_reserved);
        srv_jobs_table_size(rq->s->jobs, &g.jobs_retained, &g.jobs_evicted);
    }
    char *drift = srv_drift_metrics(rq->s->drift);
    g.extra = drift;
    rp->body = srv_metrics_render(rq->s->metrics, &g, &rp->len);
    free(drift);
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
    api_text out = {0};
    api_error e;
    if (api_about(&out, &e) == 0) {
        srv_reply_text(rp, 200, out.buf, out.len);
    } else {
        free(out.buf);
        srv_reply_error(rp, &e);
    }
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

static void submit_fit(srv_request *rq, srv_reply *rp, api_fit_request *req,
                       size_t bytes);

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
    /* a search runs as many points at once as the job's fit may use
     * threads (srv_jobs' fit_threads): its estimate counts them */
    req.threads = rq->s->cfg.blas_threads;
    size_t bytes = api_fit_bytes(&req);
    if (srv_mpi_route(rq->s->mpi, &req, km_memory_budget(), &bytes, &e)) {
        api_fit_request_cleanup(&req);
        srv_reply_error(rp, &e);
        return;
    }
    submit_fit(rq, rp, &req, bytes);
}

/* The job of a parsed fit or update (req taken) of bytes: a synchronous
 * one parks the request until it ends; an async one answers 202. */
static void submit_fit(srv_request *rq, srv_reply *rp, api_fit_request *req,
                       size_t bytes)
{
    api_error e;
    int async = wants_async(rq, req);
    srv_job *job = srv_jobs_submit(rq->s->jobs, rq->param, req, bytes,
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

/* ------------------------------------------------------------- updates */

static void release_ref(void *ref)
{
    srv_ref_release(ref);
}

/* An update is a fit that happens to be cheap: the same job, admission
 * (its own estimate), commit (a new version, stored and replicated) and
 * answers; it adds rows to the version served when it arrives. */
static void h_update(srv_request *rq, srv_reply *rp)
{
    api_fit_request req;
    api_error e;
    api_body body;
    if (not_ready(rq, rp))
        return;
    srv_ref *ref = find_model(rq, rp);
    if (!ref)
        return;
    if (read_body(rq, rp, api_fit_matrix_keys, &body)) {
        srv_ref_release(ref);
        return;
    }
    int bad = api_update_parse(&body, srv_ref_model(ref), &req, &e);
    api_body_free(&body);
    req.base_release = release_ref; /* the request holds the reference */
    req.base_ref = ref;
    if (bad) {
        api_fit_request_cleanup(&req);
        srv_reply_error(rp, &e);
        return;
    }
    submit_fit(rq, rp, &req, api_fit_bytes(&req));
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

/* Who sees a predict's rows: the drift reservoir, for the served version
 * (not a pinned one) unless the request says "Kmserve-Drift: skip" (the
 * console's plots). */
static const api_observer *drift_observer(srv_request *rq,
                                          const srv_ref *ref,
                                          srv_drift_tap *tap)
{
    const char *h = srv_header(rq, "Kmserve-Drift");
    if (rq->version[0] || (h && !strcmp(h, "skip")))
        return NULL;
    return srv_drift_observer(rq->s->drift, ref, tap);
}

/* The working memory of a predict is admitted against the fits' memory
 * budget (413 when it cannot be held) before the body is parsed. */
static void answer(srv_request *rq, srv_reply *rp, const answer_route *ar)
{
    api_body body;
    api_text out = {0};
    api_error e;
    srv_drift_tap tap;
    size_t rows = 0, held;
    srv_ref *ref = find_version(rq, rp, &held);
    if (!ref)
        return;
    size_t need = ar->bytes(srv_ref_model(ref), rq->body ? rq->body : "",
                            rq->len);
    if (rq->s->jobs && srv_jobs_reserve(rq->s->jobs, need, ar->what, &e)) {
        srv_reply_error(rp, &e);
        srv_ref_release(ref);
        unhold(rq, held);
        return;
    }
    if (read_body(rq, rp, ar->matrix_keys, &body) == 0) {
        body.observer = drift_observer(rq, ref, &tap);
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
    unhold(rq, held);
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

/* ------------------------------------------------------------- kernels */

/* A kernel route answers from its body alone (no model); its working
 * memory is admitted against the fits' memory budget as a predict's is
 * (413 when it cannot be held), before the body is parsed, and it runs
 * on the request's thread. */
static void kernel_answer(srv_request *rq, srv_reply *rp,
                          int (*fn)(api_body *, api_text *, size_t *,
                                    api_error *),
                          size_t (*bytes)(const char *, size_t),
                          const char *what)
{
    api_body body;
    api_text out = {0};
    api_error e;
    size_t rows = 0;
    if (not_ready(rq, rp))
        return;
    size_t need = bytes(rq->body ? rq->body : "", rq->len);
    if (rq->s->jobs && srv_jobs_reserve(rq->s->jobs, need, what, &e)) {
        srv_reply_error(rp, &e);
        return;
    }
    if (read_body(rq, rp, api_kernels_matrix_keys, &body) == 0) {
        if (fn(&body, &out, &rows, &e) == 0)
            srv_reply_text(rp, 200, out.buf, out.len);
        else
            srv_reply_error(rp, &e);
        api_body_free(&body);
    }
    if (rq->s->jobs)
        srv_jobs_unreserve(rq->s->jobs, need);
}

static void h_kernels_check(srv_request *rq, srv_reply *rp)
{
    kernel_answer(rq, rp, api_kernels_check, api_kernels_check_bytes,
                  "kernel check");
}

static void h_kernels_gram(srv_request *rq, srv_reply *rp)
{
    kernel_answer(rq, rp, api_kernels_gram, api_kernels_gram_bytes,
                  "kernel gram");
}

/* A model's coefficients (api_coefficients), paged by ?offset=&limit=;
 * pinned to a version as predict is. */
static int check_coef_param(void *ctx, const char *name)
{
    return api_coef_param(name, ctx) ? -1 : 0;
}

static void h_coefficients(srv_request *rq, srv_reply *rp)
{
    api_text out = {0};
    api_error e;
    size_t held;
    if (srv_query_each(rq, check_coef_param, &e)) {
        srv_reply_error(rp, &e);
        return;
    }
    srv_ref *ref = find_version(rq, rp, &held);
    if (!ref)
        return;
    if (api_coefficients(srv_ref_model(ref), srv_query(rq, "offset"),
                         srv_query(rq, "limit"), &out, &e) == 0)
        srv_reply_text(rp, 200, out.buf, out.len);
    else
        srv_reply_error(rp, &e);
    srv_ref_release(ref);
    unhold(rq, held);
}

/* ------------------------------------------------------------- jobs */

/* GET /v1/jobs?state=&model=&offset=&limit=&fields=summary: every
 * parameter a known one, each checked (srv_jobs.c). */
static int check_jobs_param(void *ctx, const char *name)
{
    return srv_jobs_param(name, ctx) ? -1 : 0;
}

static int jobs_filter(srv_request *rq, srv_jobs_filter *f, api_error *e)
{
    if (srv_query_each(rq, check_jobs_param, e))
        return -1;
    return srv_jobs_filter_parse(srv_query(rq, "state"), srv_query(rq, "model"),
                                 srv_query(rq, "offset"), srv_query(rq, "limit"),
                                 srv_query(rq, "fields"),
                                 (size_t)rq->s->cfg.max_jobs, f, e);
}

static void h_jobs(srv_request *rq, srv_reply *rp)
{
    srv_jobs_filter f;
    api_error e;
    if (jobs_filter(rq, &f, &e))
        srv_reply_error(rp, &e);
    else
        srv_reply_json(rp, 200, srv_jobs_list_json(rq->s->jobs, &f));
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

/* ------------------------------------------------------------- versions */

/* The versions of the request's model newest first: current (the version
 * served now) and the kept ones below it. -1 with a 500 reply on OOM or
 * an unreadable directory. Caller frees *v. */
static int all_versions(srv_request *rq, srv_reply *rp, uint64_t current,
                        uint64_t **v, size_t *n)
{
    int rc = srv_store_versions(rq->s->store, rq->param, current, v, n);
    uint64_t *all = rc ? NULL : realloc(*v, (*n + 1) * sizeof *all);
    if (!all) {
        if (!rc)
            free(*v);
        srv_reply_fail(rp, API_INTERNAL, "cannot list the versions of model "
                       "\"%s\": %s", rq->param, strerror(rc ? rc : ENOMEM));
        return -1;
    }
    memmove(all + 1, all, *n * sizeof *all);
    all[0] = current;
    *v = all;
    (*n)++;
    return 0;
}

/* A kept version's entry in the list: its brief metadata (read from its
 * file, its memory held meanwhile), {"version", "error"} when it cannot be
 * read, or NULL when it is gone (pruned or deleted since it was listed:
 * the list shows only versions that exist). */
static cJSON *kept_entry(srv_request *rq, uint64_t v, uint64_t current)
{
    srv_reply err = {0};
    size_t held;
    km_model *m = load_kept(rq, &err, v, current, &held, NULL);
    cJSON *o;
    if (!m && err.status == 404) {
        free(err.body);
        return NULL;
    }
    if (m) {
        o = api_model_brief_json(m);
        km_model_free(m);
        unhold(rq, held);
    } else {
        cJSON *body = err.body ? cJSON_Parse(err.body) : NULL;
        o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "version", (double)v);
        cJSON_AddItemToObject(o, "error", cJSON_DetachItemFromObject(body,
                                                                    "error"));
        cJSON_Delete(body);
        free(err.body);
    }
    cJSON_AddBoolToObject(o, "current", 0);
    return o;
}

static void h_versions(srv_request *rq, srv_reply *rp)
{
    uint64_t *v;
    size_t n;
    srv_ref *ref = find_model(rq, rp);
    if (!ref)
        return;
    const km_model *m = srv_ref_model(ref);
    if (all_versions(rq, rp, km_model_version(m), &v, &n)) {
        srv_ref_release(ref);
        return;
    }
    srv_test_pause("versions_listed");
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", rq->param);
    cJSON_AddNumberToObject(o, "current", (double)v[0]);
    cJSON_AddNumberToObject(o, "keep_versions",
                            srv_store_keeps(rq->s->store));
    cJSON *a = cJSON_AddArrayToObject(o, "versions");
    cJSON *cur = api_model_brief_json(m);
    cJSON_AddBoolToObject(cur, "current", 1);
    cJSON_AddItemToArray(a, cur);
    srv_ref_release(ref);
    for (size_t i = 1; i < n; i++) {
        cJSON *entry = kept_entry(rq, v[i], v[0]);
        if (entry)
            cJSON_AddItemToArray(a, entry);
    }
    free(v);
    srv_reply_json(rp, 200, o);
}

static void h_version_get(srv_request *rq, srv_reply *rp)
{
    size_t held;
    srv_ref *ref = find_version(rq, rp, &held);
    if (!ref)
        return;
    srv_reply_json(rp, 200, api_model_json(srv_ref_model(ref)));
    srv_ref_release(ref);
    unhold(rq, held);
}

/* A rollback commits the kept version's content as the next version, as
 * a refit would: versions only grow, so replicas, caches and logs that go
 * by the version number see one more change, and the version it replaces
 * is kept in turn (a rollback can be rolled back). */
static void h_rollback(srv_request *rq, srv_reply *rp)
{
    static const char *const keys[] = {"version", NULL};
    static const char *const no_matrix[] = {NULL};
    api_body body;
    api_error e;
    long v = 0;
    size_t held;
    cJSON *meta;
    if (not_ready(rq, rp) || model_name(rq, rp) ||
        read_body(rq, rp, no_matrix, &body))
        return;
    int bad = api_check_keys(body.root, "", keys, &e) ||
              api_opt_integer(body.root, "", "version", 1,
                              (long)KM_MODEL_MAX_VERSION, &v, &e);
    api_body_free(&body);
    if (!bad && !v)
        bad = api_invalid(&e, "version is required: the kept version to make "
                          "current (GET /v1/models/%s/versions)", rq->param);
    if (bad) {
        srv_reply_error(rp, &e);
        return;
    }
    srv_ref *ref = find_model(rq, rp);
    if (!ref)
        return;
    uint64_t current = km_model_version(srv_ref_model(ref));
    srv_ref_release(ref);
    if ((uint64_t)v == current) {
        srv_reply_fail(rp, API_CONFLICT, "model \"%s\" is already at version "
                       "%ld", rq->param, v);
        return;
    }
    int kept;
    km_model *m = load_kept(rq, rp, (uint64_t)v, current, &held, &kept);
    if (!m)
        return;
    srv_test_pause("rollback_loaded");
    if (srv_commit_rollback(rq->s->commit, rq->param, m, (uint64_t)v, kept,
                            &meta, &e)) {
        srv_reply_error(rp, &e);
    } else {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToObject(o, "model", meta);
        cJSON_AddNumberToObject(o, "restored_version", (double)v);
        srv_reply_json(rp, 200, o);
    }
    close(kept);
    unhold(rq, held);
}

/* ------------------------------------------------- Open Inference Protocol
 *
 * Health answers are the status alone, with an empty body, as the
 * protocol says (200 true; 400 false); errors are {"error": message}
 * (srv_route_plain_errors). */

static void h_v2(srv_request *rq, srv_reply *rp)
{
    (void)rq;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", "kmserve");
    cJSON_AddStringToObject(o, "version", KM_VERSION);
    /* the protocol's optional extensions this server implements */
    cJSON *ext = cJSON_AddArrayToObject(o, "extensions");
    cJSON_AddItemToArray(ext, cJSON_CreateString("binary_tensor_data"));
    srv_reply_json(rp, 200, o);
}

static void h_v2_live(srv_request *rq, srv_reply *rp)
{
    (void)rq;
    rp->status = 200;
}

static void h_v2_ready(srv_request *rq, srv_reply *rp)
{
    char why[1200];
    int ready = atomic_load(&rq->s->phase) == SRV_READY &&
                srv_store_check(rq->s->store, why, sizeof why) == 0;
    rp->status = ready ? 200 : 400;
}

static void h_v2_model(srv_request *rq, srv_reply *rp)
{
    size_t held, n;
    uint64_t *v;
    srv_ref *ref = find_version(rq, rp, &held);
    if (!ref)
        return;
    srv_ref *cur = srv_registry_get(rq->s->registry, rq->param);
    uint64_t current = km_model_version(srv_ref_model(cur ? cur : ref));
    srv_ref_release(cur);
    if (all_versions(rq, rp, current, &v, &n) == 0) {
        srv_reply_json(rp, 200, api_v2_model_json(srv_ref_model(ref), v, n));
        free(v);
    }
    srv_ref_release(ref);
    unhold(rq, held);
}

static void h_v2_model_ready(srv_request *rq, srv_reply *rp)
{
    size_t size;
    int64_t v = path_version(rq, rp);
    srv_ref *ref = v < 0 ? NULL : find_model(rq, rp);
    if (!ref)
        return;
    uint64_t current = km_model_version(srv_ref_model(ref));
    srv_ref_release(ref);
    if (v && (uint64_t)v != current &&
        ((uint64_t)v > current ||
         srv_store_version_size(rq->s->store, rq->param, (uint64_t)v, &size)))
        no_version(rq, rp, (uint64_t)v, current);
    else
        rp->status = 200;
}

/* An infer body, all JSON (hlen NULL) or with the binary tensor data
 * extension (api_v2.h), its memory admitted as answer() admits a
 * predict's; binary outputs (which a JSON request may ask for too) are
 * answered as application/octet-stream with the JSON's length. */
static void infer_binary(srv_request *rq, srv_reply *rp, const char *hlen)
{
    api_v2_answer out;
    api_error e;
    srv_drift_tap tap;
    size_t held;
    const char *text = rq->body ? rq->body : "";
    srv_ref *ref = find_version(rq, rp, &held);
    if (!ref)
        return;
    const km_model *m = srv_ref_model(ref);
    size_t need = api_v2_request_bytes(m, text, rq->len, hlen);
    int refused = rq->s->jobs &&
                  srv_jobs_reserve(rq->s->jobs, need, "infer", &e);
    if (refused) {
        srv_reply_error(rp, &e);
    } else if (api_v2_infer_request(m, text, rq->len, hlen,
                                    drift_observer(rq, ref, &tap), &out,
                                    &e)) {
        srv_reply_error(rp, &e);
    } else {
        srv_metrics_predicted_rows(rq->s->metrics, out.rows);
        rp->header_len = out.header_len;
        if (out.header_len)
            srv_reply_bytes(rp, 200, out.buf, out.len,
                            "application/octet-stream");
        else
            srv_reply_text(rp, 200, out.buf, out.len);
    }
    if (rq->s->jobs && !refused)
        srv_jobs_unreserve(rq->s->jobs, need);
    srv_ref_release(ref);
    unhold(rq, held);
}

static void h_v2_infer(srv_request *rq, srv_reply *rp)
{
    infer_binary(rq, rp,
                 srv_header(rq, "Inference-Header-Content-Length"));
}

/* ------------------------------------------------------------- drift */

/* GET and POST /v1/models/{name}/drift (srv_drift.c answers). */
static void h_drift(srv_request *rq, srv_reply *rp)
{
    srv_ref *ref = find_model(rq, rp);
    if (ref)
        srv_drift_get(rq->s->drift, rq, rp, ref);
}

static void h_drift_post(srv_request *rq, srv_reply *rp)
{
    srv_ref *ref = find_model(rq, rp);
    if (ref)
        srv_drift_post(rq->s->drift, rq, rp, ref);
}

/* ------------------------------------------------------------- console */

static void h_asset(srv_request *rq, srv_reply *rp)
{
    srv_console_file(rq, rp);
}

/* ------------------------------------------------------------- transfer */

typedef struct query_check {
    int import;
    api_error *e;
} query_check;

static int check_param(void *ctx, const char *name)
{
    query_check *q = ctx;
    return api_transfer_param(name, q->import, q->e) ? -1 : 0;
}

/* The query of an import or export, every parameter a known one. */
static int transfer_query(srv_request *rq, srv_reply *rp, int import,
                          api_transfer_query *q)
{
    api_error e;
    query_check qc = {import, &e};
    if (srv_query_each(rq, check_param, &qc)) {
        srv_reply_error(rp, &e);
        return -1;
    }
    q->format = srv_query(rq, "format");
    q->n_features = srv_query(rq, "n_features");
    q->n_training = srv_query(rq, "n_training");
    return 0;
}

/* An uploaded model file becomes the model's next version through the
 * same store-then-swap as a fit; reading it is admitted against the
 * memory budget (413) by api_import_bytes (the body, the read's peak or
 * the model with the store's file of it), from a check that builds
 * nothing of the model's size. */
static void h_import(srv_request *rq, srv_reply *rp)
{
    api_transfer_query q;
    api_format f;
    api_error e;
    api_import_width w;
    size_t need = 0;
    km_model *m = NULL;
    cJSON *meta = NULL;
    if (not_ready(rq, rp) || model_name(rq, rp) ||
        transfer_query(rq, rp, 1, &q))
        return;
    const char *body = rq->body ? rq->body : "";
    if (api_import_format(&q, srv_header(rq, "Content-Type"), &f, &w, &e) ||
        api_import_bytes(f, body, rq->len, &w, &need, &e)) {
        srv_reply_error(rp, &e);
        return;
    }
    if (rq->s->jobs && srv_jobs_reserve(rq->s->jobs, need, "import", &e)) {
        srv_reply_error(rp, &e);
        return;
    }
    int bad = api_import(f, body, rq->len, &w, &m, &e) ||
              srv_commit_import(rq->s->commit, rq->param, m, &meta, &e);
    if (rq->s->jobs)
        srv_jobs_unreserve(rq->s->jobs, need);
    if (bad) {
        srv_reply_error(rp, &e);
        return;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "model", meta);
    srv_reply_json(rp, 201, o);
}

static void h_export(srv_request *rq, srv_reply *rp)
{
    api_transfer_query q;
    api_format f;
    api_error e;
    char *out;
    size_t len;
    const char *media;
    if (transfer_query(rq, rp, 0, &q))
        return;
    if (api_export_format(&q, &f, &e)) {
        srv_reply_error(rp, &e);
        return;
    }
    srv_ref *ref = find_model(rq, rp);
    if (!ref)
        return;
    if (api_export(srv_ref_model(ref), f, &out, &len, &media, &e))
        srv_reply_error(rp, &e);
    else
        srv_reply_bytes(rp, 200, out, len, media);
    srv_ref_release(ref);
}
