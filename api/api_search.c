/*
 * api_search.c - the "search" member of fit bodies.
 *
 *   "search": {
 *     "params":  {"alpha": [0.1, 1, 10], "kernel.gamma": {"log_uniform": [1e-3, 1]}},
 *     "n_iter":  20,        random draws (required when a parameter is a
 *                           range; without it the grid of all lists)
 *     "seed":    0,         of the draws
 *     "cv":      5 | "loo" | "gcv" | {"folds": 5, "shuffle": true,
 *                "seed": 0, "stratified": true} | {"test_fold": [...]},
 *     "scoring": "r2"       (default: core's per algorithm)
 *   }
 *
 * A parameter is one of the algorithm's numeric params ("alpha", "C") or
 * one of the kernel's ("kernel.gamma", "kernel.degree", "kernel.coef0"),
 * where the request's kernel takes it. The grid is ordered as
 * scikit-learn's ParameterGrid: names sorted, the last varying fastest.
 * Every point is built on the request's own kernel and params and checked
 * by the same rules as a fit (core's checks), so a bad value answers 400
 * naming it before any work is queued.
 *
 * Thread-safety: reentrant.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_json.h"
#include "api_schema.h"
#include "api_search.h"

#define KERNEL_PREFIX "kernel."

/* One searched parameter. */
typedef struct search_param {
    char name[32];          /* as the request gave it */
    const km_param *row;   /* its schema row */
    int in_kernel;          /* a kernel row (else the algorithm's) */
    double *list;           /* the values given, or NULL for a range */
    size_t n_list;
    double lo, hi;          /* log_uniform range */
} search_param;

struct api_search {
    size_t n_params;
    search_param p[KM_SEARCH_MAX_PARAMS];
    size_t n_points;
    double *values;         /* n_points x n_params */
    km_kernel *kernels;     /* n_points, each initialised */
    unsigned char *params;  /* n_points structs of params_size bytes */
    size_t params_size;
    km_cv cv;
    int *test_fold;
    km_scoring scoring;
    km_search_result result;
    int ran;
    /* The refit's progress, mapped to the end of the job. */
    const km_fit_control *outer;
    double refit_from;
};

void api_search_free(api_search *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n_params; i++)
        free(s->p[i].list);
    for (size_t i = 0; s->kernels && i < s->n_points; i++)
        km_kernel_cleanup(&s->kernels[i]);
    free(s->kernels);
    free(s->values);
    free(s->params);
    free(s->test_fold);
    km_search_result_cleanup(&s->result);
    free(s);
}

/* ------------------------------------------------------------ parsing */

static int cmp_params(const void *a, const void *b)
{
    return strcmp(((const search_param *)a)->name,
                  ((const search_param *)b)->name);
}

/* The schema row a name stands for: "kernel.KEY" a kernel row the
 * request's kernel takes, else a numeric row of the algorithm. */
static int find_row(const char *name, const api_fit_request *req,
                    search_param *p, api_error *e)
{
    const km_param_set *s = km_algorithm_params(req->algo);
    const char *key = name;
    p->in_kernel = !strncmp(name, KERNEL_PREFIX, strlen(KERNEL_PREFIX));
    if (p->in_kernel) {
        key = name + strlen(KERNEL_PREFIX);
        s = km_kernel_params();
        if (!api_schema_kernel_takes(req->kernel.type, key))
            return api_invalid(e, "search.params.%s: a %s kernel takes no "
                               "%s", name,
                               km_kernel_type_name(req->kernel.type), key);
    }
    p->row = api_schema_find(s, key);
    if (!p->row || p->row->alias_of ||
        (p->row->type != KM_PARAM_NUMBER && p->row->type != KM_PARAM_INTEGER))
        return api_invalid(e, "search.params.%s is not a parameter a search "
                           "can vary; expected a number parameter of %s "
                           "(see params) or of the kernel (kernel.gamma, "
                           "kernel.length, ...) where the kernel takes it",
                           name, km_algorithm_name(req->algo));
    /* a row that applies with another value of an enum (krr's n_centres
     * with solver nystrom) is refused as params refuses it */
    if (!p->in_kernel && api_schema_applies(s, p->row, req->params,
                                            "params", e))
        return -1;
    return 0;
}

/* A parameter's values: a non-empty list of numbers, or
 * {"log_uniform": [lo, hi]} (0 < lo <= hi, number rows only). */
static int parse_values(const cJSON *v, search_param *p, api_error *e)
{
    if (cJSON_IsArray(v)) {
        size_t n = (size_t)cJSON_GetArraySize(v);
        if (n == 0 || n > API_SEARCH_MAX_POINTS)
            return api_invalid(e, "search.params.%s must list 1 to %d "
                               "values", p->name, API_SEARCH_MAX_POINTS);
        p->list = malloc(n * sizeof *p->list);
        if (!p->list)
            return api_raise(e, API_PAYLOAD_TOO_LARGE, "not enough memory "
                             "for search.params.%s", p->name);
        size_t i = 0;
        for (const cJSON *x = v->child; x; x = x->next, i++) {
            if (!cJSON_IsNumber(x) || !isfinite(x->valuedouble))
                return api_invalid(e, "search.params.%s[%zu] must be a "
                                   "finite number, not %s", p->name, i,
                                   api_type_name(x));
            p->list[i] = x->valuedouble;
        }
        p->n_list = n;
        return 0;
    }
    const cJSON *r = cJSON_IsObject(v)
                         ? cJSON_GetObjectItemCaseSensitive(v, "log_uniform")
                         : NULL;
    static const char *const range_keys[] = {"log_uniform", NULL};
    if (!r || api_check_keys(v, "search.params", range_keys, e))
        return r ? -1
                 : api_invalid(e, "search.params.%s must be a list of values "
                               "or {\"log_uniform\": [low, high]}, not %s",
                               p->name, api_type_name(v));
    if (p->row->type != KM_PARAM_NUMBER)
        return api_invalid(e, "search.params.%s takes whole numbers: give "
                           "a list, not a log_uniform range", p->name);
    if (!cJSON_IsArray(r) || cJSON_GetArraySize(r) != 2 ||
        !cJSON_IsNumber(r->child) || !cJSON_IsNumber(r->child->next))
        return api_invalid(e, "search.params.%s.log_uniform must be [low, "
                           "high], two numbers", p->name);
    p->lo = r->child->valuedouble;
    p->hi = r->child->next->valuedouble;
    if (!(p->lo > 0) || !(p->hi >= p->lo) || !isfinite(p->hi))
        return api_invalid(e, "search.params.%s.log_uniform must have "
                           "0 < low <= high, both finite", p->name);
    return 0;
}

static int parse_param_set(const cJSON *obj, const api_fit_request *req,
                           api_search *s, api_error *e)
{
    if (!cJSON_IsObject(obj) || !obj->child)
        return api_invalid(e, "search.params is required: an object of "
                           "parameter name to a list of values or a "
                           "log_uniform range");
    for (const cJSON *v = obj->child; v; v = v->next) {
        if (s->n_params == KM_SEARCH_MAX_PARAMS)
            return api_invalid(e, "search.params names more than %d "
                               "parameters", KM_SEARCH_MAX_PARAMS);
        search_param *p = &s->p[s->n_params];
        if (strlen(v->string) >= sizeof p->name)
            return api_invalid(e, "search.params: \"%.40s...\" is not a "
                               "parameter", v->string);
        snprintf(p->name, sizeof p->name, "%s", v->string);
        for (size_t i = 0; i < s->n_params; i++)
            if (!strcmp(s->p[i].name, p->name))
                return api_invalid(e, "search.params.%s is given twice",
                                   p->name);
        s->n_params++;
        if (find_row(p->name, req, p, e) || parse_values(v, p, e))
            return -1;
    }
    qsort(s->p, s->n_params, sizeof *s->p, cmp_params);
    return 0;
}

/* The points' values: the grid (every combination, the last parameter
 * varying fastest), or n_iter draws (a list uniformly, a range
 * log-uniformly) from core's PRNG seeded with seed. */
static int make_values(const cJSON *item, api_search *s, api_error *e)
{
    const cJSON *n_iter = cJSON_GetObjectItemCaseSensitive(item, "n_iter");
    int ranges = 0;
    for (size_t i = 0; i < s->n_params; i++)
        ranges |= !s->p[i].list;
    if (n_iter) {
        long draws = 0, seed = 0;
        if (api_opt_integer(item, "search", "n_iter", 1,
                            API_SEARCH_MAX_POINTS, &draws, e) ||
            api_opt_integer(item, "search", "seed", 0, 2147483647L, &seed, e))
            return -1;
        s->n_points = (size_t)draws;
        s->values = malloc(s->n_points * s->n_params * sizeof *s->values);
        if (!s->values)
            return api_raise(e, API_PAYLOAD_TOO_LARGE, "not enough memory "
                             "for the search's points");
        km_rng rng = {(uint64_t)seed};
        for (size_t t = 0; t < s->n_points; t++)
            for (size_t i = 0; i < s->n_params; i++) {
                const search_param *p = &s->p[i];
                double u = 0.5 * (km_rng_uniform(&rng) + 1.0); /* [0, 1) */
                s->values[t * s->n_params + i] =
                    p->list ? p->list[km_rng_below(&rng, p->n_list)]
                            : exp(log(p->lo) + u * (log(p->hi) - log(p->lo)));
            }
        return 0;
    }
    if (ranges)
        return api_invalid(e, "search.n_iter is required when a parameter "
                           "is a log_uniform range: the number of random "
                           "points to draw");
    if (cJSON_GetObjectItemCaseSensitive(item, "seed"))
        return api_invalid(e, "search.seed applies to random draws: give "
                           "search.n_iter too, or remove it");
    double total = 1;
    for (size_t i = 0; i < s->n_params; i++)
        total *= (double)s->p[i].n_list;
    if (total > API_SEARCH_MAX_POINTS)
        return api_invalid(e, "search grid has %.0f points; at most %d",
                           total, API_SEARCH_MAX_POINTS);
    s->n_points = (size_t)total;
    s->values = malloc(s->n_points * s->n_params * sizeof *s->values);
    if (!s->values)
        return api_raise(e, API_PAYLOAD_TOO_LARGE, "not enough memory for "
                         "the search's points");
    for (size_t t = 0; t < s->n_points; t++) {
        size_t rest = t;
        for (size_t i = s->n_params; i-- > 0;) {
            s->values[t * s->n_params + i] =
                s->p[i].list[rest % s->p[i].n_list];
            rest /= s->p[i].n_list;
        }
    }
    return 0;
}

/* cv: a fold count, "loo", "gcv", or an object. Default 5 folds,
 * stratified for classifiers, as scikit-learn's cv=5. */
static int parse_cv(const cJSON *cv, const api_fit_request *req,
                    api_search *s, api_error *e)
{
    int classes = req->classes != NULL;
    s->cv = (km_cv){KM_CV_KFOLD, 5, 0, 0, classes, NULL};
    if (!cv)
        return 0;
    /* by name: the kinds that need nothing more (kfold's folds and
     * predefined's test_fold are given as a number and an object) */
    const char *loo = km_cv_kind_name(KM_CV_LOO);
    const char *gcv = km_cv_kind_name(KM_CV_GCV);
    if (cJSON_IsString(cv)) {
        int k = km_choice_value(&km_cv_choices, cv->valuestring);
        if (k != KM_CV_LOO && k != KM_CV_GCV)
            return api_invalid(e, "search.cv \"%.40s\" is not known; "
                               "expected a number of folds, \"%s\", "
                               "\"%s\" or an object", cv->valuestring, loo,
                               gcv);
        s->cv.kind = (km_cv_kind)k;
        return 0;
    }
    if (cJSON_IsNumber(cv)) {
        double x = cv->valuedouble;
        if (x != floor(x) || x < 2 || x > 2147483647.0)
            return api_invalid(e, "search.cv must be a whole number of "
                               "folds >= 2, \"%s\", \"%s\" or an object",
                               loo, gcv);
        s->cv.folds = (size_t)x;
        return 0;
    }
    if (!cJSON_IsObject(cv))
        return api_invalid(e, "search.cv must be a number of folds, "
                           "\"%s\", \"%s\" or an object, not %s", loo, gcv,
                           api_type_name(cv));
    static const char *const keys[] = {"folds", "shuffle", "seed",
                                       "stratified", "test_fold", NULL};
    if (api_check_keys(cv, "search.cv", keys, e))
        return -1;
    const cJSON *tf = cJSON_GetObjectItemCaseSensitive(cv, "test_fold");
    if (tf) {
        if (cv->child != tf || tf->next)
            return api_invalid(e, "search.cv.test_fold gives the folds "
                               "itself: no other member goes with it");
        if (!cJSON_IsArray(tf) ||
            (size_t)cJSON_GetArraySize(tf) != req->n)
            return api_invalid(e, "search.cv.test_fold must be an array "
                               "of %zu fold numbers, one per row of X",
                               req->n);
        s->test_fold = malloc(req->n * sizeof *s->test_fold);
        if (!s->test_fold)
            return api_raise(e, API_PAYLOAD_TOO_LARGE, "not enough memory "
                             "for search.cv.test_fold");
        long most = -1;
        size_t i = 0;
        for (const cJSON *v = tf->child; v; v = v->next, i++) {
            double x = cJSON_IsNumber(v) ? v->valuedouble : NAN;
            if (!(x == floor(x)) || x < -1 || x >= (double)req->n)
                return api_invalid(e, "search.cv.test_fold[%zu] must be a "
                                   "fold number from 0 to %zu, or -1 for "
                                   "a row always trained on", i,
                                   req->n - 1);
            s->test_fold[i] = (int)x;
            most = s->test_fold[i] > most ? s->test_fold[i] : most;
        }
        s->cv = (km_cv){KM_CV_PREDEFINED, (size_t)(most + 1), 0, 0, 0,
                        s->test_fold};
        return 0;
    }
    long folds = 5, seed = 0;
    if (api_opt_integer(cv, "search.cv", "folds", 2, 2147483647L, &folds,
                        e) ||
        api_opt_bool(cv, "search.cv", "shuffle", &s->cv.shuffle, e) ||
        api_opt_integer(cv, "search.cv", "seed", 0, 2147483647L, &seed, e) ||
        api_opt_bool(cv, "search.cv", "stratified", &s->cv.stratified, e))
        return -1;
    if (s->cv.stratified && !classes)
        return api_invalid(e, "search.cv.stratified applies to classifiers "
                           "(y of class labels), not %s",
                           km_algorithm_name(req->algo));
    s->cv.folds = (size_t)folds;
    s->cv.seed = (uint64_t)seed;
    return 0;
}

/* ------------------------------------------------------------ points */

/* Writes value v of parameter p into a point's kernel or params through
 * the schema's reader (its type and the API's own range checks); core's
 * checks of the whole point follow in check_point. */
static int set_value(const search_param *p, double v, km_algorithm algo,
                     km_kernel *k, void *params, api_error *e)
{
    cJSON *obj = cJSON_CreateObject();
    if (!obj || !cJSON_AddNumberToObject(obj, p->row->key, v)) {
        cJSON_Delete(obj);
        return api_raise(e, API_INTERNAL, "out of memory");
    }
    int rc = p->in_kernel
                 ? api_schema_read_row(obj, "kernel", km_kernel_params(),
                                       p->row, k, e)
                 : api_schema_read_row(obj, "params",
                                       km_algorithm_params(algo), p->row,
                                       params, e);
    cJSON_Delete(obj);
    return rc;
}

/* "alpha=0.1, kernel.gamma=0.01": point t, for messages. */
static void point_text(const api_search *s, size_t t, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < s->n_params && used < len; i++) {
        int w = snprintf(buf + used, len - used, "%s%s=%.6g", i ? ", " : "",
                         s->p[i].name, s->values[t * s->n_params + i]);
        used += w > 0 ? (size_t)w : 0;
    }
}

/* Builds point t on the request's kernel and params, and checks it as a
 * fit would; a failure names the point. */
static int build_point(api_search *s, size_t t, const api_fit_request *req,
                       const km_problem *pb, api_error *e)
{
    km_kernel *k = &s->kernels[t];
    void *params = s->params + t * s->params_size;
    km_error kerr = {KM_OK, ""};
    char at[160];
    memcpy(params, req->params, s->params_size);
    if (km_kernel_copy(k, &req->kernel, &kerr) != KM_OK) {
        km_kernel_init(k, KM_KERNEL_LINEAR);
        return api_fail_km(e, &kerr);
    }
    for (size_t i = 0; i < s->n_params; i++)
        if (set_value(&s->p[i], s->values[t * s->n_params + i], req->algo, k,
                      params, e))
            goto named;
    if (km_kernel_check(k, &kerr) == KM_OK &&
        km_algorithm_check(req->algo, params, pb, &kerr) == KM_OK)
        return 0;
    api_fail_km(e, &kerr);
named:
    point_text(s, t, at, sizeof at);
    return api_prefix(e, "search point %zu (%s): ", t, at);
}

static int parse_scoring(const cJSON *item, const api_fit_request *req,
                         api_search *s, api_error *e)
{
    const cJSON *sc = cJSON_GetObjectItemCaseSensitive(item, "scoring");
    km_error kerr = {KM_OK, ""};
    s->scoring = km_scoring_default(req->algo);
    if (sc) {
        char names[256];
        km_choice_list(&km_scoring_choices, ", ", names, sizeof names);
        if (!cJSON_IsString(sc) || km_scoring_parse(sc->valuestring,
                                                    &s->scoring))
            return api_invalid(e, "search.scoring must be one of %s", names);
    }
    if (km_scoring_check(s->scoring, req->algo, req->params, &kerr) != KM_OK)
        return api_raise(e, API_INVALID_ARGUMENT, "search.scoring: %s",
                         kerr.message);
    return 0;
}

static km_search_spec spec_of(const api_search *s, const api_fit_request *req)
{
    km_search_spec spec = {req->algo, req->pre, s->scoring, s->cv,
                           s->n_points, s->kernels, s->params, req->threads};
    return spec;
}

int api_search_parse(const cJSON *item, const api_fit_request *req,
                     api_search **out, api_error *e)
{
    static const char *const keys[] = {"params", "n_iter", "seed", "cv",
                                       "scoring", NULL};
    *out = NULL;
    if (!item)
        return 0;
    if (!cJSON_IsObject(item))
        return api_invalid(e, "search must be an object, not %s",
                           api_type_name(item));
    if (api_check_keys(item, "search", keys, e))
        return -1;
    api_search *s = calloc(1, sizeof *s);
    if (!s)
        return api_raise(e, API_INTERNAL, "out of memory");
    *out = s;
    s->params_size = km_algorithm_params_size(req->algo);
    km_problem pb = api_fit_problem(req);
    if (parse_param_set(cJSON_GetObjectItemCaseSensitive(item, "params"), req,
                        s, e) ||
        make_values(item, s, e) ||
        parse_cv(cJSON_GetObjectItemCaseSensitive(item, "cv"), req, s, e) ||
        parse_scoring(item, req, s, e))
        return -1;
    s->kernels = calloc(s->n_points, sizeof *s->kernels);
    s->params = calloc(s->n_points, s->params_size ? s->params_size : 1);
    if (!s->kernels || !s->params)
        return api_raise(e, API_PAYLOAD_TOO_LARGE, "not enough memory for "
                         "the search's %zu points", s->n_points);
    for (size_t t = 0; t < s->n_points; t++)
        km_kernel_init(&s->kernels[t], KM_KERNEL_LINEAR);
    for (size_t t = 0; t < s->n_points; t++)
        if (build_point(s, t, req, &pb, e))
            return -1;
    /* The rest of core's checks (the folds against the rows and classes)
     * now, so that a search that cannot run is refused before queueing. */
    km_search_spec spec = spec_of(s, req);
    km_error kerr = {KM_OK, ""};
    if (km_search_check(&spec, &pb, &kerr) != KM_OK) {
        api_fail_km(e, &kerr);
        return api_prefix(e, "search: ");
    }
    return 0;
}

/* ------------------------------------------------------------ running */


size_t api_search_bytes(const api_search *s, const api_fit_request *req)
{
    km_problem pb = api_fit_problem(req);
    km_search_spec spec = spec_of(s, req);
    size_t most = km_search_bytes(&spec, &pb);
    for (size_t t = 0; t < s->n_points; t++) {
        size_t b = km_algorithm_fit_bytes(req->algo,
                                          s->params + t * s->params_size, &pb);
        most = b > most ? b : most;
    }
    return most;
}

/* The job's progress: the search's fits, then the refit as one more
 * (km_progress_span). */
static int refit_progress(void *ctx, double f)
{
    const api_search *s = ctx;
    km_progress_span sp = {s->outer, s->refit_from, 1.0};
    return km_progress_span_report(&sp, f);
}

int api_search_select(api_search *s, const api_fit_request *req,
                      const km_fit_control *ctl, const km_kernel **kernel,
                      const void **params, km_fit_control *refit,
                      api_error *e)
{
    km_problem pb = api_fit_problem(req);
    km_search_spec spec = spec_of(s, req);
    km_error kerr = {KM_OK, ""};
    double fits = (double)s->n_points *
                  (s->cv.kind == KM_CV_KFOLD || s->cv.kind == KM_CV_PREDEFINED
                       ? (double)s->cv.folds : 1.0);
    s->outer = ctl;
    s->refit_from = fits / (fits + 1);
    km_progress_span sp = {ctl, 0, s->refit_from};
    /* the caller's threads carried over: km_search runs
     * min(ctl->threads, req->threads) points at once */
    km_fit_control sub = {km_progress_span_report, &sp,
                          ctl ? ctl->threads : 0};
    km_search_result_cleanup(&s->result);
    if (km_search(&spec, &pb, ctl ? &sub : NULL, &s->result, &kerr) != KM_OK)
        return api_fail_km(e, &kerr);
    s->ran = 1;
    *kernel = &s->kernels[s->result.best];
    *params = s->params + s->result.best * s->params_size;
    *refit = ctl ? (km_fit_control){refit_progress, s, ctl->threads}
                 : (km_fit_control){NULL, NULL, 0};
    return 0;
}

int api_search_record(const api_search *s, km_model *m, api_error *e)
{
    km_search_table t;
    km_error kerr = {KM_OK, ""};
    if (!s->ran)
        return api_raise(e, API_INTERNAL, "search recorded before it ran "
                         "(a bug)");
    memset(&t, 0, sizeof t);
    t.scoring = s->scoring;
    t.cv = s->cv.kind;
    t.n_splits = s->result.n_splits;
    t.n_params = s->n_params;
    for (size_t i = 0; i < s->n_params; i++)
        memcpy(t.names[i], s->p[i].name, sizeof t.names[i]);
    t.n_points = s->n_points;
    t.values = s->values;
    t.mean = s->result.mean;
    t.std = s->result.std;
    t.fit_seconds = s->result.fit_seconds;
    t.best = s->result.best;
    return km_model_set_search(m, &t, &kerr) == KM_OK ? 0
                                                       : api_fail_km(e, &kerr);
}
