/*
 * kmctl_about.c - kmctl's reading of GET /v1's "capabilities" (see
 * kmctl_about.h): the lists of algorithms and outputs are the server's,
 * so an algorithm or output added there reaches kmctl with no edit here.
 *
 * Thread-safety: single-threaded.
 */
#include <stdio.h>
#include <string.h>

#include "kmctl_about.h"

static ctl_reply about; /* GET /v1, once */
static int asked;

/* capabilities' member key (an array), or NULL. 0, or -1 with e. */
static int capability(ctl_client *c, const char *key, const cJSON **out,
                      ctl_err *e)
{
    *out = NULL;
    if (!asked) {
        if (ctl_client_call(c, "GET", "/v1", NULL, 0, &about, e))
            return -1;
        if (about.status != 200) {
            ctl_reply_fail(&about, e);
            ctl_reply_cleanup(&about);
            return -1;
        }
        asked = 1;
    }
    const cJSON *caps =
        cJSON_GetObjectItemCaseSensitive(about.json, "capabilities");
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(caps, key);
    *out = cJSON_IsArray(list) ? list : NULL;
    return 0;
}

static const char *member(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* The entry of list whose "name" is name, or NULL. */
static const cJSON *named(const cJSON *list, const char *name)
{
    const cJSON *it;
    cJSON_ArrayForEach(it, list) {
        const char *n = member(it, "name");
        if (n && name && !strcmp(n, name))
            return it;
    }
    return NULL;
}

int ctl_about_takes_target(ctl_client *c, const char *algorithm, int *takes,
                           ctl_err *e)
{
    const cJSON *algos;
    *takes = 1;
    if (capability(c, "algorithms", &algos, e))
        return -1;
    const char *target = member(named(algos, algorithm), "target");
    *takes = !(target && !strcmp(target, "none"));
    return 0;
}

int ctl_about_check_output(ctl_client *c, const char *output, ctl_err *e)
{
    const cJSON *outs, *it;
    if (capability(c, "outputs", &outs, e))
        return -1;
    if (!outs || !output)
        return 0;
    char list[512] = "";
    size_t used = 0;
    cJSON_ArrayForEach(it, outs) {
        const char *route = member(it, "route"), *value = member(it, "output");
        if (!route || strcmp(route, "predict") || !value)
            continue;
        if (!strcmp(value, output))
            return 0;
        if (used < sizeof list) {
            int w = snprintf(list + used, sizeof list - used, "%s%s",
                             used ? ", " : "", value);
            used += w > 0 ? (size_t)w : 0;
        }
    }
    return ctl_fail(e, CTL_EXIT_USAGE, "--output: expected one of %s (the "
                    "server's, GET /v1), not '%s'", list, output);
}

const char *ctl_about_default_output(ctl_client *c, const char *algorithm)
{
    const cJSON *algos, *outs;
    ctl_err ignored = {0, ""};
    if (capability(c, "algorithms", &algos, &ignored) ||
        capability(c, "outputs", &outs, &ignored))
        return NULL;
    const cJSON *names = cJSON_GetObjectItemCaseSensitive(
        named(algos, algorithm), "outputs");
    const cJSON *first = cJSON_GetArrayItem(names, 0);
    if (!cJSON_IsString(first))
        return NULL;
    return member(named(outs, first->valuestring), "output");
}

const char *ctl_about_decision_columns(ctl_client *c, const char *algorithm)
{
    const cJSON *algos;
    ctl_err ignored = {0, ""};
    if (capability(c, "algorithms", &algos, &ignored))
        return NULL;
    return member(named(algos, algorithm), "decision_columns");
}

const char *ctl_about_kernel_input(ctl_client *c, const cJSON *k)
{
    const cJSON *kernels, *m, *part;
    ctl_err ignored = {0, ""};
    if (!cJSON_IsObject(k) || capability(c, "kernels", &kernels, &ignored))
        return NULL;
    const char *in = member(named(kernels, member(k, "type")), "input");
    if (in)
        return in;
    cJSON_ArrayForEach(m, k) {
        if (!cJSON_IsArray(m))
            continue;
        cJSON_ArrayForEach(part, m) {
            if ((in = ctl_about_kernel_input(c, part)))
                return in;
        }
    }
    return NULL;
}

void ctl_about_free(void)
{
    ctl_reply_cleanup(&about);
    asked = 0;
}
