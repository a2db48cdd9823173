/*
 * api_about.c - GET /v1's answer, built once from the tables that own
 * each fact (see api_about.h; docs/api.md's GET /v1 shows it).
 *
 * Where each member comes from:
 *   algorithms, kernels   core's names (KM_ALGO_MAP, KM_KERNEL_MAP)
 *   params                core's rows (km_algorithm_params, written next
 *                         to each descriptor; what the reader reads):
 *                         type, default, bounds, choices, the solver
 *                         values a row applies with
 *   kernel params         core's kernel rows (km_kernel_params) each type
 *                         takes (api_schema_kernel_keys, from the rows'
 *                         flags in core's kernel table), defaults from
 *                         km_kernel_init
 *   target, solvers, decision_columns, distributed, composite, rff,
 *   tunable               core's descriptors (km_algorithm_target,
 *                         km_algorithm_solver_*,
 *                         km_algorithm_decision_columns,
 *                         km_algorithm_distributed, km_kernel_type_caps)
 *   search                core's default scoring of the algorithm (what a
 *                         search scores its points by)
 *   outputs               core's answer table (km_answer_at)
 *
 * Thread-safety: the text is built on first use under a mutex, then only
 * read; api_about is reentrant.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "api_about.h"
#include "api_json.h"
#include "api_schema.h"

/* ------------------------------------------------------------ building
 *
 * cJSON's constructors return NULL when out of memory; a tree missing a
 * member would be a wrong answer kept for the process's life, so every
 * item goes through add or push, which note a failure (failed, under
 * about_lock while the tree is built) and the tree is then dropped. */

static int failed;

static void add(cJSON *o, const char *key, cJSON *item)
{
    if (!item || !cJSON_AddItemToObject(o, key, item)) {
        cJSON_Delete(item);
        failed = 1;
    }
}

static void push(cJSON *a, cJSON *item)
{
    if (!item || !cJSON_AddItemToArray(a, item)) {
        cJSON_Delete(item);
        failed = 1;
    }
}

/* s as a string, NULL as null. */
static cJSON *string_or_null(const char *s)
{
    return s ? cJSON_CreateString(s) : cJSON_CreateNull();
}

static cJSON *number_or_null(int has, double v)
{
    return has ? api_json_number(v) : cJSON_CreateNull();
}

/* ------------------------------------------------------------ params */

/* The names of a choice row's values, in order. */
static cJSON *names_json(const km_choices *c)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < c->count; i++)
        push(a, cJSON_CreateString(km_choice_name(c, i)));
    return a;
}

/* {"param": "solver", "values": ["nystrom", "auto"]}: the enum row named
 * key of s holding value or one of also's. */
static cJSON *condition_json(const km_param_set *s, const char *key, int value,
                             unsigned also)
{
    const km_param *dep = api_schema_find(s, key);
    cJSON *o = cJSON_CreateObject(), *v = cJSON_CreateArray();
    if (!dep) /* a table names only rows it has (test_api_schema) */
        failed = 1;
    for (int i = 0; dep && v && i < 32 && i < dep->choices->count; i++)
        if (i == value || (also >> i & 1u))
            push(v, cJSON_CreateString(km_choice_name(dep->choices, i)));
    add(o, "param", cJSON_CreateString(key));
    add(o, "values", v);
    return o;
}

/*
 * Row r of s as {"name", "type", "default", "minimum", "maximum",
 * "choices", ...}; defaults holds the table's defaults. Members without a
 * value are null, so a client reads every row alike. For a list of parts,
 * min_items and max_items are the type's fewest and most parts (both 0
 * for other rows).
 */
static cJSON *param_json(const km_param_set *s, const km_param *r,
                         const void *defaults, int min_items, int max_items)
{
    cJSON *o = cJSON_CreateObject(), *def;
    double min = 0, max = 0;
    unsigned has =
        r->type == KM_PARAM_PARTS ? 0 : api_param_bounds(r, &min, &max);
    add(o, "name", cJSON_CreateString(r->key));
    add(o, "type", cJSON_CreateString(api_param_type_json(r->type)));
    def = api_schema_default_json(r, defaults);
    add(o, "default", def ? def : cJSON_CreateNull());
    add(o, "minimum", number_or_null(has & API_HAS_MIN, min));
    add(o, "maximum", number_or_null(has & API_HAS_MAX, max));
    add(o, "exclusive_minimum",
        cJSON_CreateBool((has & API_HAS_MIN) && r->min_open));
    add(o, "choices", r->type == KM_PARAM_CHOICE ? names_json(r->choices)
                                                 : cJSON_CreateNull());
    add(o, "min_items", number_or_null(max_items > 0, min_items));
    add(o, "max_items", number_or_null(max_items > 0, max_items));
    add(o, "required", cJSON_CreateBool(r->required));
    /* set from the data at fit time (gamma: 1/n_features); bounded by
     * them (n_centres: at most the rows of X) */
    add(o, "data_default", cJSON_CreateBool(r->data_default));
    add(o, "data_bound", string_or_null(r->data_bound));
    add(o, "alias_of", string_or_null(r->alias_of));
    /* given where none of these holds, the fit is refused (400) */
    cJSON *with = r->only_if ? cJSON_CreateArray() : cJSON_CreateNull();
    if (r->only_if)
        push(with, condition_json(s, r->only_if, r->only_value,
                                  r->only_also));
    if (r->only_if && r->or_if)
        push(with, condition_json(s, r->or_if, r->or_value, r->or_also));
    add(o, "applies_with", with);
    add(o, "description", string_or_null(r->doc));
    return o;
}

/* The rows of algorithm a's params a request may give, in table order. */
static cJSON *algorithm_params_json(km_algorithm a)
{
    const km_param_set *s = km_algorithm_params(a);
    _Alignas(max_align_t) unsigned char defaults[256];
    cJSON *arr = cJSON_CreateArray();
    if (s->size > sizeof defaults) { /* test_api_schema checks each */
        failed = 1;
        return arr;
    }
    s->defaults(defaults);
    for (const km_param *r = s->rows; r->key; r++)
        if (r->type != KM_PARAM_READ_ONLY)
            push(arr, param_json(s, r, defaults, 0, 0));
    return arr;
}

/* The rows kernel type t takes, in the order metadata shows them. */
static cJSON *kernel_params_json(km_kernel_type t)
{
    const km_param_set *s = km_kernel_params();
    const km_kernel_info *info = km_kernel_type_info(t);
    km_kernel k;
    km_kernel_init(&k, t);
    cJSON *arr = cJSON_CreateArray();
    for (const char *const *key = api_schema_kernel_keys(t); *key; key++) {
        const km_param *r = api_schema_find(s, *key);
        int parts = r && r->type == KM_PARAM_PARTS;
        push(arr, r ? param_json(s, r, &k, parts ? info->min_parts : 0,
                                 parts ? info->max_parts : 0)
                    : NULL);
    }
    km_kernel_cleanup(&k);
    return arr;
}

/* ------------------------------------------------------------ kernels */

static cJSON *kernel_json(km_kernel_type t)
{
    cJSON *o = cJSON_CreateObject();
    add(o, "name", cJSON_CreateString(km_kernel_type_name(t)));
    add(o, "params", kernel_params_json(t));
    unsigned caps = km_kernel_type_caps(t);
    add(o, "composite", cJSON_CreateBool(caps & KM_KERNEL_CAP_COMPOSITE));
    add(o, "rff", cJSON_CreateBool(caps & KM_KERNEL_CAP_RFF));
    add(o, "tunable", cJSON_CreateBool(caps & KM_KERNEL_CAP_TUNE_GAMMA));
    add(o, "characteristic",
        cJSON_CreateBool(caps & KM_KERNEL_CAP_CHARACTERISTIC));
    /* what X is for it (a composite: its parts') */
    if (!(caps & KM_KERNEL_CAP_COMPOSITE))
        add(o, "input", cJSON_CreateString(km_choice_name(
                            &km_input_kind_choices, km_kernel_type_input(t))));
    return o;
}

/* ------------------------------------------------------------ outputs */

/* Row r of core's answer table, with the algorithms that offer it. */
static cJSON *output_json(const km_answer *r)
{
    cJSON *o = cJSON_CreateObject(), *algos = cJSON_CreateArray();
    add(o, "name", cJSON_CreateString(r->name));
    add(o, "route", cJSON_CreateString(r->route));
    add(o, "output", string_or_null(r->v1_output));
    add(o, "inverse", cJSON_CreateBool(r->v1_inverse));
    add(o, "v2", string_or_null(r->v2_name));
    add(o, "datatype", string_or_null(r->v2_datatype));
    add(o, "needs", string_or_null(r->needs));
    for (int a = 0; a < KM_ALGO_COUNT; a++)
        if (km_answer_offered(r, (km_algorithm)a))
            push(algos, cJSON_CreateString(km_algorithm_name((km_algorithm)a)));
    add(o, "algorithms", algos);
    return o;
}

/* The names of the answers algorithm a offers, in the table's order. */
static cJSON *algorithm_outputs_json(km_algorithm a)
{
    cJSON *arr = cJSON_CreateArray();
    for (size_t i = 0; i < km_answer_count(); i++)
        if (km_answer_offered(km_answer_at(i), a))
            push(arr, cJSON_CreateString(km_answer_at(i)->name));
    return arr;
}

/* ------------------------------------------------------------ algorithms */

/* a's solver choices, in the order of its solver param's choices, each
 * with the kernel types it fits with; [] when a has no choice. */
static cJSON *solvers_json(km_algorithm a)
{
    cJSON *arr = cJSON_CreateArray();
    for (size_t i = 0; i < km_algorithm_solver_count(a); i++) {
        cJSON *o = cJSON_CreateObject(), *kernels = cJSON_CreateArray();
        add(o, "name", cJSON_CreateString(km_algorithm_solver_name(a, i)));
        for (int t = 0; t < KM_KERNEL_TYPE_COUNT; t++)
            if (km_algorithm_solver_accepts(a, i, (km_kernel_type)t))
                push(kernels, cJSON_CreateString(
                                  km_kernel_type_name((km_kernel_type)t)));
        add(o, "kernels", kernels);
        push(arr, o);
    }
    return arr;
}

static cJSON *algorithm_json(km_algorithm a)
{
    /* krr's y of rows (several outputs) is values with multi_output */
    static const char *const targets[] = {
        [KM_TARGET_NONE] = "none", [KM_TARGET_VALUES] = "values",
        [KM_TARGET_ROWS] = "values", [KM_TARGET_CLASSES] = "classes"};
    km_target target = km_algorithm_target(a);
    cJSON *o = cJSON_CreateObject();
    add(o, "name", cJSON_CreateString(km_algorithm_name(a)));
    add(o, "target", cJSON_CreateString(targets[target]));
    add(o, "multi_output", cJSON_CreateBool(target == KM_TARGET_ROWS));
    add(o, "params", algorithm_params_json(a));
    add(o, "solver_param", string_or_null(km_algorithm_solver_param(a)));
    add(o, "solvers", solvers_json(a));
    add(o, "outputs", algorithm_outputs_json(a));
    /* how its decision values are laid out (kmctl names their columns by
     * it); null when it offers none */
    km_decision_columns dc = km_algorithm_decision_columns(a);
    add(o, "decision_columns",
        string_or_null(km_choice_name(&km_decision_columns_choices,
                                      (int)dc)));
    add(o, "distributed", cJSON_CreateBool(km_algorithm_distributed(a)));
    /* a search scores its points by a's default scoring */
    add(o, "search",
        cJSON_CreateBool(km_scoring_default(a) != KM_SCORING_COUNT));
    return o;
}

/* ------------------------------------------------------------ answer */

static cJSON *about_json(void)
{
    cJSON *o = cJSON_CreateObject(), *caps = cJSON_CreateObject();
    cJSON *names = cJSON_CreateArray(), *algos = cJSON_CreateArray();
    add(o, "name", cJSON_CreateString("kmserve"));
    add(o, "version", cJSON_CreateString(KM_VERSION));
    for (int i = 0; i < KM_ALGO_COUNT; i++) {
        push(names, cJSON_CreateString(km_algorithm_name((km_algorithm)i)));
        push(algos, algorithm_json((km_algorithm)i));
    }
    add(o, "algorithms", names);
    add(caps, "algorithms", algos);
    names = cJSON_CreateArray();
    cJSON *kernels = cJSON_CreateArray();
    for (int i = 0; i < KM_KERNEL_TYPE_COUNT; i++) {
        push(names, cJSON_CreateString(km_kernel_type_name((km_kernel_type)i)));
        push(kernels, kernel_json((km_kernel_type)i));
    }
    add(o, "kernels", names);
    add(caps, "kernels", kernels);
    cJSON *outputs = cJSON_CreateArray();
    for (size_t i = 0; i < km_answer_count(); i++)
        push(outputs, output_json(km_answer_at(i)));
    add(caps, "outputs", outputs);
    add(o, "capabilities", caps);
    return o;
}

static char *about_text;
static pthread_mutex_t about_lock = PTHREAD_MUTEX_INITIALIZER;

/* The text, built on first use; NULL when out of memory (a later request
 * tries again: a tree cJSON could not complete is never kept). */
static const char *about_get(void)
{
    pthread_mutex_lock(&about_lock);
    if (!about_text) {
        failed = 0;
        cJSON *o = about_json();
        char *text = o && !failed ? cJSON_PrintUnformatted(o) : NULL;
        cJSON_Delete(o);
        about_text = text;
    }
    const char *t = about_text;
    pthread_mutex_unlock(&about_lock);
    return t;
}

int api_about(api_text *out, api_error *e)
{
    const char *text = about_get();
    if (text)
        api_text_raw(out, text);
    if (!text || out->failed)
        return api_raise(e, API_INTERNAL, "out of memory describing the "
                         "server");
    return 0;
}
