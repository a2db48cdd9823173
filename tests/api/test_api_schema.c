/*
 * test_api_schema.c - the parameter tables against what they describe:
 * api/openapi.yaml (every key, type, minimum/maximum, enum and default of
 * the Kernel and <Algo>Params schemas, so the spec cannot drift), core's
 * check functions (a range the table states is the range core enforces),
 * and the params a default fit records in metadata (the defaults the
 * table shows are the ones a model reports).
 *
 * The spec is read with python3 and PyYAML (a test dependency: make
 * deps-test), from the project root, where make runs the tests.
 */
#include <float.h>

#include "../check_main.h"
#include "api_fit.h"
#include "api_model.h"
#include "api_schema.h"

#define SPEC "api/openapi.yaml"

/* api/openapi.yaml as JSON. */
static cJSON *read_spec(void)
{
    FILE *p = popen("python3 -c 'import json, sys, yaml; "
                    "json.dump(yaml.safe_load(open(\"" SPEC "\")), "
                    "sys.stdout)'", "r");
    ck_assert_ptr_nonnull(p);
    size_t cap = 1 << 20, len = 0;
    char *buf = malloc(cap);
    ck_assert_ptr_nonnull(buf);
    size_t got;
    while ((got = fread(buf + len, 1, cap - 1 - len, p)) > 0)
        len += got;
    buf[len] = '\0';
    ck_assert_msg(pclose(p) == 0, "python3 could not read " SPEC);
    cJSON *spec = cJSON_Parse(buf);
    free(buf);
    ck_assert_ptr_nonnull(spec);
    return spec;
}

/* The tables' fragments with their exact numbers read back as numbers. */
static cJSON *generated(void)
{
    cJSON *raw = api_schema_openapi();
    ck_assert_ptr_nonnull(raw);
    char *text = cJSON_PrintUnformatted(raw);
    cJSON_Delete(raw);
    cJSON *o = cJSON_Parse(text);
    free(text);
    ck_assert_ptr_nonnull(o);
    return o;
}

/* Descriptions are prose for people: everything else must agree. */
static void strip_descriptions(cJSON *o)
{
    if (!cJSON_IsObject(o))
        return;
    cJSON_DeleteItemFromObjectCaseSensitive(o, "description");
    for (cJSON *c = o->child; c; c = c->next)
        if (!strcmp(c->string, "items") ||
            !strcmp(c->string, "additionalProperties"))
            strip_descriptions(c);
}

static void same(const char *what, const cJSON *want, const cJSON *got)
{
    if ((!want && !got) || cJSON_Compare(want, got, 1))
        return;
    char *w = cJSON_PrintUnformatted(want), *g = cJSON_PrintUnformatted(got);
    ck_abort_msg("%s: the tables say %s; " SPEC " says %s", what,
                 w ? w : "nothing", g ? g : "nothing");
}

START_TEST(spec_matches_tables)
{
    cJSON *spec = read_spec(), *gen = generated();
    cJSON *schemas = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(spec, "components"), "schemas");
    ck_assert_ptr_nonnull(schemas);
    int n_schemas = 0;
    for (const cJSON *g = gen->child; g; g = g->next, n_schemas++) {
        cJSON *s = cJSON_GetObjectItemCaseSensitive(schemas, g->string);
        ck_assert_msg(s != NULL, SPEC " has no schema %s", g->string);
        static const char *const keys[] = {"type", "required",
                                           "additionalProperties",
                                           "x-algorithm"};
        for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
            char what[96];
            snprintf(what, sizeof what, "%s.%s", g->string, keys[i]);
            same(what, cJSON_GetObjectItemCaseSensitive(g, keys[i]),
                 cJSON_GetObjectItemCaseSensitive(s, keys[i]));
        }
        cJSON *gp = cJSON_GetObjectItemCaseSensitive(g, "properties");
        cJSON *sp = cJSON_GetObjectItemCaseSensitive(s, "properties");
        ck_assert_int_eq(cJSON_GetArraySize(gp), cJSON_GetArraySize(sp));
        for (cJSON *p = gp->child; p; p = p->next) {
            cJSON *q = cJSON_GetObjectItemCaseSensitive(sp, p->string);
            ck_assert_msg(q != NULL, "%s has no property %s", g->string,
                          p->string);
            cJSON *mine = cJSON_Duplicate(p, 1), *theirs = cJSON_Duplicate(q, 1);
            strip_descriptions(mine);
            strip_descriptions(theirs);
            char what[96];
            snprintf(what, sizeof what, "%s.%s", g->string, p->string);
            same(what, mine, theirs);
            cJSON_Delete(mine);
            cJSON_Delete(theirs);
        }
    }
    /* Kernel, Preprocess, and every algorithm's schema; FitRequest offers
     * exactly those of the algorithms, and takes Preprocess, which
     * metadata shows too. */
    ck_assert_int_eq(n_schemas, 2 + KM_ALGO_COUNT);
    cJSON *fit = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(schemas, "FitRequest"), "properties");
    cJSON *algos = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(fit, "algorithm"), "enum");
    cJSON *any = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(fit, "params"), "anyOf");
    const char *pre_ref = "#/components/schemas/Preprocess";
    cJSON *meta = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(schemas, "Metadata"), "properties");
    ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(fit, "preprocess"), "$ref")
        ->valuestring, pre_ref);
    ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(meta, "preprocess"), "$ref")
        ->valuestring, pre_ref);
    ck_assert_int_eq(cJSON_GetArraySize(algos), KM_ALGO_COUNT);
    ck_assert_int_eq(cJSON_GetArraySize(any), KM_ALGO_COUNT);
    for (int a = 0; a < KM_ALGO_COUNT; a++) {
        const char *name = km_algorithm_name((km_algorithm)a);
        ck_assert_str_eq(cJSON_GetArrayItem(algos, a)->valuestring, name);
        const char *ref = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetArrayItem(any, a), "$ref")->valuestring;
        const char *title = strrchr(ref, '/') + 1;
        ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(schemas, title),
            "x-algorithm")->valuestring, name);
    }
    /* PredictRequest's output offers exactly the answer table's v1
     * "output" values: a new row fails here until the spec names it. */
    cJSON *outs = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(
                cJSON_GetObjectItemCaseSensitive(schemas, "PredictRequest"),
                "properties"),
            "output"),
        "enum");
    int n_out = 0;
    for (size_t i = 0; i < km_answer_count(); i++) {
        const char *v = km_answer_at(i)->v1_output;
        int found = 0;
        for (int j = 0; v && j < cJSON_GetArraySize(outs); j++)
            found |= !strcmp(cJSON_GetArrayItem(outs, j)->valuestring, v);
        ck_assert_msg(!v || found, "PredictRequest.output's enum lacks %s",
                      v);
        n_out += v != NULL;
    }
    ck_assert_int_eq(cJSON_GetArraySize(outs), n_out);
    cJSON_Delete(gen);
    cJSON_Delete(spec);
}
END_TEST

/* A minimal fit body of algorithm a with params (text of an object). */
static int parse_fit(km_algorithm a, const char *params, api_fit_request *req,
                     api_error *e)
{
    /* y as the descriptor's target says (km_algorithm_target), so that
     * a new algorithm needs no entry here */
    static const char *const by_target[] = {
        [KM_TARGET_NONE] = NULL, [KM_TARGET_VALUES] = "[0,1,2,3]",
        [KM_TARGET_ROWS] = "[0,1,1,0]", [KM_TARGET_CLASSES] = "[0,1,0,1]"};
    const char *y = by_target[km_algorithm_target(a)];
    char json[512];
    /* rff needs a shift-invariant kernel */
    snprintf(json, sizeof json, "{\"algorithm\":\"%s\",\"kernel\":{\"type\":"
             "\"%s\"},\"X\":[[0],[1],[2],[3]],\"params\":%s%s%s}",
             km_algorithm_name(a), strstr(params, "\"rff\"") ? "rbf" : "linear",
             params, y ? ",\"y\":" : "", y ? y : "");
    api_body b;
    ck_assert_int_eq(api_parse_body(json, strlen(json), api_fit_matrix_keys,
                                    &b, e), 0);
    int rc = api_fit_parse(&b, req, e);
    api_body_free(&b);
    return rc;
}

/* The members a's params require besides the row tried (kpca's
 * n_components, kkmeans' n_clusters), each 1, from core's rows (so a new
 * algorithm needs no entry here); "" when none. */
static const char *required_params(km_algorithm a)
{
    static char buf[KM_ALGO_COUNT][128];
    char *b = buf[a];
    b[0] = '\0';
    for (const km_param *r = km_algorithm_params(a)->rows; r->key; r++)
        if (r->required) {
            ck_assert(r->type == KM_PARAM_INTEGER ||
                      r->type == KM_PARAM_NUMBER);
            snprintf(b + strlen(b), sizeof buf[a] - strlen(b), "%s\"%s\":1",
                     *b ? "," : "", r->key);
        }
    return b;
}

START_TEST(ranges_are_cores)
{
    int tried = 0;
    for (int a = 0; a < KM_ALGO_COUNT; a++) {
        const km_param_set *s = km_algorithm_params((km_algorithm)a);
        for (const km_param *r = s->rows; r->key; r++) {
            if (r->type != KM_PARAM_NUMBER || r->range != KM_PARAM_RANGE_CHECK)
                continue;
            /* At the bound: refused when open, taken when closed; just
             * past it, refused; well inside, taken. */
            const struct { double v; int ok; } at[] = {
                {r->min, !r->min_open},
                {r->min - 0.5, 0},
                {r->min + 0.5, 1},
            };
            for (size_t i = 0; i < sizeof at / sizeof *at; i++) {
                char params[192], dep[64] = "";
                const char *need = required_params((km_algorithm)a);
                if (r->only_if) /* where the row applies */
                    snprintf(dep, sizeof dep, "\"%s\":\"%s\",", r->only_if,
                             km_choice_name(
                                 api_schema_find(s, r->only_if)->choices,
                                 r->only_value));
                snprintf(params, sizeof params, "{%s%s%s\"%s\":%.17g}", need,
                         *need ? "," : "", dep, r->key, at[i].v);
                api_fit_request req;
                api_error e;
                int rc = parse_fit((km_algorithm)a, params, &req, &e);
                ck_assert_msg((rc == 0) == at[i].ok, "%s %s: %s",
                              km_algorithm_name((km_algorithm)a), params,
                              rc ? e.message : "taken");
                if (rc) {
                    char name[64];
                    snprintf(name, sizeof name, "params.%s", r->key);
                    ck_assert_int_eq(e.http, 400);
                    ck_assert_ptr_nonnull(strstr(e.message, name));
                }
                api_fit_request_cleanup(&req);
                tried++;
            }
        }
    }
    ck_assert_int_ge(tried, 3 * 8);
}
END_TEST

/* Whether the enum row named key holds want (or a value of also) in a
 * fit that gives dep the value value and every other row its default. */
static int holds_in_fit(const km_param_set *s, const unsigned char *defaults,
                        const km_param *dep, int value, const char *key,
                        int want, unsigned also)
{
    int v;
    if (dep && !strcmp(dep->key, key))
        v = value;
    else
        memcpy(&v, defaults + api_schema_find(s, key)->offset, sizeof v);
    return v >= 0 && (v == want || (v < 32 && (also >> v & 1u)));
}

/* A default fit of algorithm a (with only_if set to the rows' value of
 * row dep, when not NULL) records every default of the rows that apply,
 * and none of those that do not. */
static int defaults_recorded(km_algorithm a, const km_param *dep, int value)
{
    const km_param_set *s = km_algorithm_params(a);
    char params[128];
    if (dep)
        snprintf(params, sizeof params, "{%s%s\"%s\":\"%s\"}",
                 required_params(a), *required_params(a) ? "," : "",
                 dep->key, km_choice_name(dep->choices, value));
    else
        snprintf(params, sizeof params, "{%s}", required_params(a));
    api_fit_request req;
    api_error e;
    ck_assert_msg(parse_fit(a, params, &req, &e) == 0, "%s", e.message);
    km_model *m = NULL;
    ck_assert_msg(api_fit_run(&req, NULL, &m, &e) == 0, "%s", e.message);
    _Alignas(max_align_t) unsigned char defaults[API_PARAMS_BYTES];
    s->defaults(defaults);
    int checked = 0;
    for (const km_param *r = s->rows; r->key; r++) {
        if (r->required || (r->type != KM_PARAM_NUMBER &&
                            r->type != KM_PARAM_BOOL &&
                            r->type != KM_PARAM_INTEGER))
            continue;
        const km_info_entry *fig = km_info_find(km_model_params(m), r->key);
        /* the row it depends on holds value, or its default when the
         * fit does not give it (svc's cache_mb applies to the default
         * solver, exact); or the second row it may depend on (gpr's
         * seed) */
        int applies = !r->only_if ||
                      holds_in_fit(s, defaults, dep, value, r->only_if,
                                   r->only_value, r->only_also) ||
                      (r->or_if && holds_in_fit(s, defaults, dep, value,
                                                r->or_if, r->or_value,
                                                r->or_also));
        if (!applies) { /* a fit it does not apply to shows nothing */
            ck_assert_msg(fig == NULL, "%s %s: metadata shows params.%s",
                          km_algorithm_name(a), params, r->key);
            continue;
        }
        ck_assert_msg(fig != NULL, "%s %s: metadata has no params.%s",
                      km_algorithm_name(a), params, r->key);
        checked++;
        if (r->data_default) /* set from the data: shown, whatever it is */
            continue;
        cJSON *want = api_schema_value_json(r, defaults);
        double w = cJSON_IsBool(want) ? cJSON_IsTrue(want) : want->valuedouble;
        ck_assert_msg(fig->values[0] == w, "%s: params.%s is %g; the "
                      "table's default is %g", km_algorithm_name(a), r->key,
                      fig->values[0], w);
        cJSON_Delete(want);
    }
    /* an enum row, when recorded, shows its name in metadata */
    cJSON *meta = api_model_json(m);
    cJSON *mp = cJSON_GetObjectItemCaseSensitive(meta, "params");
    if (dep && km_info_find(km_model_params(m), dep->key)) {
        cJSON *v = cJSON_GetObjectItemCaseSensitive(mp, dep->key);
        ck_assert(cJSON_IsString(v));
        ck_assert_str_eq(v->valuestring, km_choice_name(dep->choices, value));
    }
    cJSON_Delete(meta);
    km_model_free(m);
    api_fit_request_cleanup(&req);
    return checked;
}

START_TEST(metadata_shows_the_defaults)
{
    int checked = 0, dependent = 0;
    for (int a = 0; a < KM_ALGO_COUNT; a++) {
        const km_param_set *s = km_algorithm_params((km_algorithm)a);
        checked += defaults_recorded((km_algorithm)a, NULL, 0);
        /* each value another row applies only with */
        for (const km_param *r = s->rows; r->key; r++) {
            if (!r->only_if)
                continue;
            const km_param *dep = api_schema_find(s, r->only_if);
            ck_assert_ptr_nonnull(dep);
            ck_assert_int_eq(dep->type, KM_PARAM_CHOICE);
            if (r > s->rows && r[-1].only_if &&
                !strcmp(r[-1].only_if, r->only_if) &&
                r[-1].only_value == r->only_value)
                continue; /* that fit was made */
            dependent += defaults_recorded((km_algorithm)a, dep,
                                           r->only_value);
        }
    }
    ck_assert_int_ge(checked, 12);
    ck_assert_int_ge(dependent, 5); /* krr nystrom: alpha and four */
}
END_TEST

/* A row given where it does not apply is refused, naming it. */
START_TEST(rows_apply_only_with_their_value)
{
    api_fit_request req;
    api_error e;
    ck_assert_int_ne(parse_fit(KM_ALGO_KRR, "{\"n_centres\":2}", &req, &e),
                     0);
    ck_assert_int_eq(e.http, 400);
    ck_assert_str_eq(e.message, "params.n_centres applies only with "
                     "params.solver \"nystrom\" or \"auto\"");
    api_fit_request_cleanup(&req);
    ck_assert_int_ne(parse_fit(KM_ALGO_KRR, "{\"solver\":\"exact\","
                               "\"cg_tol\":0.1}", &req, &e), 0);
    ck_assert_ptr_nonnull(strstr(e.message, "params.cg_tol applies only"));
    api_fit_request_cleanup(&req);
    ck_assert_int_eq(parse_fit(KM_ALGO_KRR, "{\"solver\":\"nystrom\","
                               "\"n_centres\":4,\"seed\":3}", &req, &e), 0);
    ck_assert_uint_eq(req.krr.n_centres, 4);
    ck_assert_uint_eq(req.krr.seed, 3);
    api_fit_request_cleanup(&req);
    /* n_centres: 0 is the reader's 400, above the rows core's 422 */
    ck_assert_int_ne(parse_fit(KM_ALGO_KRR, "{\"solver\":\"nystrom\","
                               "\"n_centres\":0}", &req, &e), 0);
    ck_assert_int_eq(e.http, 400);
    ck_assert_ptr_nonnull(strstr(e.message, "params.n_centres"));
    api_fit_request_cleanup(&req);
    ck_assert_int_ne(parse_fit(KM_ALGO_KRR, "{\"solver\":\"nystrom\","
                               "\"n_centres\":5}", &req, &e), 0);
    ck_assert_int_eq(e.http, 422);
    ck_assert_ptr_nonnull(strstr(e.message, "params.n_centres"));
    api_fit_request_cleanup(&req);
    ck_assert_int_ne(parse_fit(KM_ALGO_KRR, "{\"solver\":\"falkon\"}",
                               &req, &e), 0);
    ck_assert_int_eq(e.http, 400);
    ck_assert_str_eq(e.message, "params.solver must be one of exact, "
                     "nystrom, rff, auto");
    api_fit_request_cleanup(&req);
    /* seed applies to nystrom and rff; n_components to rff only */
    ck_assert_int_ne(parse_fit(KM_ALGO_KRR, "{\"seed\":2}", &req, &e), 0);
    ck_assert_str_eq(e.message, "params.seed applies only with "
                     "params.solver \"nystrom\" or \"rff\" or \"auto\"");
    api_fit_request_cleanup(&req);
    /* auto takes nystrom's rows (it may resolve to nystrom); centres is
     * one of its names, and nystrom's or auto's only */
    ck_assert_int_eq(parse_fit(KM_ALGO_KRR, "{\"solver\":\"auto\","
                               "\"n_centres\":4,\"centres\":\"rpcholesky\"}",
                               &req, &e), 0);
    ck_assert_int_eq(req.krr.solver, KM_KRR_SOLVER_AUTO);
    ck_assert_int_eq(req.krr.centres, KM_KRR_CENTRES_RPCHOLESKY);
    api_fit_request_cleanup(&req);
    ck_assert_int_ne(parse_fit(KM_ALGO_KRR, "{\"solver\":\"nystrom\","
                               "\"centres\":\"leverage\"}", &req, &e), 0);
    ck_assert_int_eq(e.http, 400);
    ck_assert_str_eq(e.message, "params.centres must be one of uniform, "
                     "rpcholesky");
    api_fit_request_cleanup(&req);
    ck_assert_int_ne(parse_fit(KM_ALGO_KRR, "{\"centres\":\"uniform\"}",
                               &req, &e), 0);
    ck_assert_ptr_nonnull(strstr(e.message, "params.centres applies only"));
    api_fit_request_cleanup(&req);
    ck_assert_int_ne(parse_fit(KM_ALGO_KRR, "{\"solver\":\"nystrom\","
                               "\"n_components\":5}", &req, &e), 0);
    ck_assert_str_eq(e.message, "params.n_components applies only with "
                     "params.solver \"rff\"");
    api_fit_request_cleanup(&req);
    ck_assert_int_eq(parse_fit(KM_ALGO_KRR, "{\"solver\":\"rff\","
                               "\"n_components\":5,\"seed\":3}", &req, &e),
                     0);
    api_fit_request_cleanup(&req);
    ck_assert_int_ne(parse_fit(KM_ALGO_KRR, "{\"solver\":\"rff\","
                               "\"n_components\":0}", &req, &e), 0);
    ck_assert_int_eq(e.http, 400);
    ck_assert_ptr_nonnull(strstr(e.message, "params.n_components"));
    api_fit_request_cleanup(&req);
    /* rff with a kernel without a spectral density: 400 naming both */
    const char *json = "{\"algorithm\":\"krr\",\"kernel\":{\"type\":"
                       "\"polynomial\"},\"X\":[[0],[1]],\"y\":[0,1],"
                       "\"params\":{\"solver\":\"rff\"}}";
    api_body b;
    ck_assert_int_eq(api_parse_body(json, strlen(json), api_fit_matrix_keys,
                                    &b, &e), 0);
    ck_assert_int_ne(api_fit_parse(&b, &req, &e), 0);
    api_body_free(&b);
    ck_assert_int_eq(e.http, 400);
    ck_assert_ptr_nonnull(strstr(e.message, "params.solver rff"));
    ck_assert_ptr_nonnull(strstr(e.message, "kernel.type polynomial"));
    api_fit_request_cleanup(&req);
    /* gpr's seed: with the optimizer or with the nystrom solver */
    ck_assert_int_ne(parse_fit(KM_ALGO_GPR, "{\"seed\":3}", &req, &e), 0);
    ck_assert_int_eq(e.http, 400);
    ck_assert_str_eq(e.message, "params.seed applies only with "
                     "params.optimizer \"lbfgs\", or with params.solver "
                     "\"nystrom\" or \"auto\"");
    api_fit_request_cleanup(&req);
    const char *gpr_ok[] = {"{\"optimizer\":\"lbfgs\",\"seed\":3}",
                            "{\"solver\":\"nystrom\",\"seed\":3,"
                            "\"variance\":true,\"centres\":\"rpcholesky\"}",
                            "{\"solver\":\"auto\",\"seed\":3}"};
    for (size_t i = 0; i < sizeof gpr_ok / sizeof *gpr_ok; i++) {
        ck_assert_msg(parse_fit(KM_ALGO_GPR, gpr_ok[i], &req, &e) == 0,
                      "%s: %s", gpr_ok[i], e.message);
        api_fit_request_cleanup(&req);
    }
    ck_assert_int_ne(parse_fit(KM_ALGO_GPR, "{\"variance\":true}", &req, &e),
                     0);
    ck_assert_str_eq(e.message, "params.variance applies only with "
                     "params.solver \"nystrom\" or \"auto\"");
    api_fit_request_cleanup(&req);
    /* the optimizer needs the exact solver: core's check, 400 */
    ck_assert_int_ne(parse_fit(KM_ALGO_GPR, "{\"solver\":\"nystrom\","
                               "\"optimizer\":\"lbfgs\"}", &req, &e), 0);
    ck_assert_int_eq(e.http, 400);
    ck_assert_ptr_nonnull(strstr(e.message, "params.optimizer lbfgs needs "
                                            "params.solver exact"));
    api_fit_request_cleanup(&req);
}
END_TEST

START_TEST(every_kernel_type_has_its_rows)
{
    const km_param_set *s = km_kernel_params();
    for (int t = 0; t < KM_KERNEL_TYPE_COUNT; t++)
        for (const char *const *k = api_schema_kernel_keys((km_kernel_type)t);
             *k; k++)
            ck_assert_msg(api_schema_find(s, *k) != NULL, "%s takes %s, "
                          "which is not a row",
                          km_kernel_type_name((km_kernel_type)t), *k);
    ck_assert(api_schema_kernel_takes(KM_KERNEL_POLYNOMIAL, "degree"));
    ck_assert(!api_schema_kernel_takes(KM_KERNEL_RBF, "degree"));
    ck_assert(api_schema_kernel_takes(KM_KERNEL_RBF, "sigma"));
    ck_assert(!api_schema_kernel_takes(KM_KERNEL_LAPLACIAN, "sigma"));
    ck_assert(api_schema_kernel_takes(KM_KERNEL_SUM, "weights"));
    ck_assert(!api_schema_kernel_takes(KM_KERNEL_PRODUCT, "weights"));
}
END_TEST

START_TEST(name_lists_come_from_core)
{
    char buf[256];
    api_name_list(buf, sizeof buf, api_algorithm_name, KM_ALGO_COUNT);
    ck_assert_str_eq(buf, "krr, svc, svr, kpca, gpr, kkmeans, klr");
    api_name_list(buf, sizeof buf, api_kernel_type_name, KM_KERNEL_TYPE_COUNT);
    ck_assert_str_eq(buf, "linear, polynomial, rbf, laplacian, sigmoid, sum, "
                          "product, laplacian_l2, exponential, normalized, "
                          "spectrum, boundrange, expdecay, subsequence, "
                          "precomputed");
    for (int a = 0; a < KM_ALGO_COUNT; a++) { /* every entry filled */
        const km_param_set *s = km_algorithm_params((km_algorithm)a);
        ck_assert_msg(s->rows != NULL, "%s has no params schema",
                      km_algorithm_name((km_algorithm)a));
        ck_assert_uint_le(s->size, API_PARAMS_BYTES);
    }
    ck_assert_ptr_null(km_algorithm_params(KM_ALGO_COUNT));
    api_name_list(buf, 12, api_algorithm_name, KM_ALGO_COUNT);
    ck_assert_str_eq(buf, "krr, svc, s"); /* truncated, terminated */
}
END_TEST

/* Core's solver names (km_algorithm_solver_name, which GET /v1 publishes)
 * are what the params parser takes: each one, given as params' solver
 * key, reads back as its own number; an algorithm without one has no
 * such row. */
START_TEST(solver_names_parse_back)
{
    for (int i = 0; i < KM_ALGO_COUNT; i++) {
        km_algorithm a = (km_algorithm)i;
        const km_param_set *s = km_algorithm_params(a);
        const char *key = km_algorithm_solver_param(a);
        const km_param *row = NULL;
        for (const km_param *r = s->rows; r->key; r++)
            if (key && !strcmp(r->key, key))
                row = r;
        if (!key) {
            for (const km_param *r = s->rows; r->key; r++)
                ck_assert_str_ne(r->key, "solver");
            continue;
        }
        ck_assert_ptr_nonnull(row);
        ck_assert_int_eq(row->type, KM_PARAM_CHOICE);
        ck_assert_uint_eq((size_t)row->choices->count,
                          km_algorithm_solver_count(a));
        for (size_t v = 0; v < km_algorithm_solver_count(a); v++) {
            unsigned char params[API_PARAMS_BYTES];
            s->defaults(params);
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, key, km_algorithm_solver_name(a, v));
            for (const km_param *r = s->rows; r->key; r++)
                if (r->required) /* kpca's n_components */
                    cJSON_AddNumberToObject(o, r->key, 2);
            api_error e;
            ck_assert_msg(api_schema_read(o, "params", s, params, 100, &e) ==
                              0, "%s %s: %s", km_algorithm_name(a),
                          km_algorithm_solver_name(a, v), e.message);
            int got;
            memcpy(&got, params + row->offset, sizeof got);
            ck_assert_int_eq(got, (int)v);
            cJSON_Delete(o);
        }
    }
}
END_TEST

START_TEST(error_codes_table)
{
    ck_assert_int_eq(api_code_status(API_INVALID_ARGUMENT), 400);
    ck_assert_str_eq(api_code_name(API_CONFLICT), "conflict");
    ck_assert_int_eq(api_code_status(API_INSUFFICIENT_STORAGE), 507);
    api_error e;
    ck_assert_int_eq(api_raise(&e, API_UNPROCESSABLE, "x%d", 1), -1);
    ck_assert_int_eq(e.http, 422);
    ck_assert_str_eq(e.code, "unprocessable");
    ck_assert_str_eq(e.message, "x1");
    for (int c = 0; c < API_ERROR_COUNT; c++) {
        ck_assert_int_ge(api_code_status((api_code)c), 400);
        ck_assert_ptr_nonnull(api_code_meaning((api_code)c));
        for (int d = 0; d < c; d++) /* codes are distinct */
            ck_assert_str_ne(api_code_name((api_code)c),
                             api_code_name((api_code)d));
    }
}
END_TEST

static Suite *schema_suite(void)
{
    Suite *s = suite_create("api_schema");
    TCase *tc = tcase_create("api");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, spec_matches_tables);
    tcase_add_test(tc, ranges_are_cores);
    tcase_add_test(tc, metadata_shows_the_defaults);
    tcase_add_test(tc, rows_apply_only_with_their_value);
    tcase_add_test(tc, every_kernel_type_has_its_rows);
    tcase_add_test(tc, name_lists_come_from_core);
    tcase_add_test(tc, error_codes_table);
    tcase_add_test(tc, solver_names_parse_back);
    suite_add_tcase(s, tc);
    return s;
}

KM_TEST_MAIN(schema_suite)
