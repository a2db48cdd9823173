/*
 * api_json.c - JSON request parsing and typed field access.
 *
 * Nesting is measured by a scan before cJSON parses (cJSON recurses once
 * per level), so a body of a million '[' is refused without recursion.
 * Numbers that overflow a double parse as infinities in cJSON and are
 * refused here as "not a finite number"; NaN and Infinity are not JSON and
 * make the parse fail.
 *
 * Thread-safety: reentrant.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_json.h"

const char *api_type_name(const cJSON *item)
{
    if (!item) return "missing";
    if (cJSON_IsArray(item)) return "an array";
    if (cJSON_IsObject(item)) return "an object";
    if (cJSON_IsString(item)) return "a string";
    if (cJSON_IsNumber(item)) return "a number";
    if (cJSON_IsBool(item)) return "a boolean";
    if (cJSON_IsNull(item)) return "null";
    return "invalid";
}

/* Deepest nesting of arrays and objects, outside strings. */
static size_t nesting(const char *s, size_t len, size_t limit)
{
    size_t depth = 0, worst = 0;
    int in_string = 0;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (in_string) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_string = 0;
        } else if (c == '"') {
            in_string = 1;
        } else if (c == '[' || c == '{') {
            if (++depth > worst && (worst = depth) > limit)
                return worst;
        } else if ((c == ']' || c == '}') && depth) {
            depth--;
        }
    }
    return worst;
}

int api_parse_object(const char *body, size_t len, cJSON **out, api_error *e)
{
    *out = NULL;
    if (len == 0)
        return api_fail(e, 400, "invalid_json", "the request body is empty; "
                        "expected a JSON object");
    if (nesting(body, len, API_MAX_DEPTH) > API_MAX_DEPTH)
        return api_invalid(e, "the body nests deeper than %d levels",
                           API_MAX_DEPTH);
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(body, len, &end, 0);
    if (!root) {
        size_t at = end && end >= body && end <= body + len
                        ? (size_t)(end - body) : 0;
        return api_fail(e, 400, "invalid_json",
                        "the body is not valid JSON (error near byte %zu)", at);
    }
    /* Only white space may follow the value. */
    for (const char *p = end; p && p < body + len; p++)
        if (!strchr(" \t\r\n", *p) && *p != '\0') {
            cJSON_Delete(root);
            return api_fail(e, 400, "invalid_json",
                            "the body has data after the JSON value (byte %zu)",
                            (size_t)(p - body));
        }
    if (!cJSON_IsObject(root)) {
        const char *t = api_type_name(root);
        cJSON_Delete(root);
        return api_invalid(e, "the body must be a JSON object, not %s", t);
    }
    *out = root;
    return 0;
}

int api_get_matrix(const cJSON *item, const char *name, size_t expect_d,
                   double **X, size_t *n, size_t *d, api_error *e)
{
    *X = NULL;
    if (!item)
        return api_invalid(e, "%s is required: an array of rows of numbers",
                           name);
    if (!cJSON_IsArray(item))
        return api_invalid(e, "%s must be an array of rows of numbers, not %s",
                           name, api_type_name(item));
    size_t rows = (size_t)cJSON_GetArraySize(item);
    if (rows == 0)
        return api_invalid(e, "%s must have at least one row", name);
    const cJSON *first = item->child;
    if (!cJSON_IsArray(first))
        return api_invalid(e, "%s[0] must be an array of numbers, not %s",
                           name, api_type_name(first));
    size_t cols = (size_t)cJSON_GetArraySize(first);
    if (cols == 0)
        return api_invalid(e, "%s[0] must have at least one number", name);
    if (expect_d && cols != expect_d)
        return api_invalid(e, "%s[0] has %zu features; the model expects %zu",
                           name, cols, expect_d);
    if (rows > SIZE_MAX / sizeof(double) / cols)
        return api_invalid(e, "%s is too large", name);
    double *M = malloc(rows * cols * sizeof *M);
    if (!M)
        return api_fail(e, 413, "payload_too_large",
                        "not enough memory for %s (%zu x %zu)", name, rows,
                        cols);
    size_t i = 0;
    for (const cJSON *row = item->child; row; row = row->next, i++) {
        if (!cJSON_IsArray(row)) {
            free(M);
            return api_invalid(e, "%s[%zu] must be an array of numbers, not %s",
                               name, i, api_type_name(row));
        }
        size_t j = 0;
        for (const cJSON *v = row->child; v; v = v->next, j++) {
            if (j >= cols)
                break;
            if (!cJSON_IsNumber(v)) {
                free(M);
                return api_invalid(e, "%s[%zu][%zu] must be a number, not %s",
                                   name, i, j, api_type_name(v));
            }
            if (!isfinite(v->valuedouble)) {
                free(M);
                return api_invalid(e, "%s[%zu][%zu] is not a finite number",
                                   name, i, j);
            }
            M[i * cols + j] = v->valuedouble;
        }
        size_t have = (size_t)cJSON_GetArraySize(row);
        if (have != cols) {
            free(M);
            if (expect_d)
                return api_invalid(e, "%s[%zu] has %zu features; the model "
                                   "expects %zu", name, i, have, cols);
            return api_invalid(e, "%s[%zu] has %zu features; %s[0] has %zu",
                               name, i, have, name, cols);
        }
    }
    *X = M;
    *n = rows;
    *d = cols;
    return 0;
}

/* "params.alpha", or "async" for a top-level field. */
static const char *field(char *buf, size_t len, const char *path,
                         const char *key)
{
    snprintf(buf, len, "%s%s%s", path, *path ? "." : "", key);
    return buf;
}

int api_opt_number(const cJSON *obj, const char *path, const char *key,
                   double *out, api_error *e)
{
    const cJSON *v = obj ? cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;
    char f[160];
    if (!v)
        return 0;
    if (!cJSON_IsNumber(v))
        return api_invalid(e, "%s must be a number, not %s",
                           field(f, sizeof f, path, key), api_type_name(v));
    if (!isfinite(v->valuedouble))
        return api_invalid(e, "%s is not a finite number",
                           field(f, sizeof f, path, key));
    *out = v->valuedouble;
    return 0;
}

int api_opt_integer(const cJSON *obj, const char *path, const char *key,
                    long lo, long hi, long *out, api_error *e)
{
    const cJSON *v = obj ? cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;
    char f[160];
    if (!v)
        return 0;
    double x = v->valuedouble;
    if (!cJSON_IsNumber(v) || !isfinite(x) || x != floor(x) || x < (double)lo ||
        x > (double)hi)
        return api_invalid(e, "%s must be a whole number from %ld to %ld",
                           field(f, sizeof f, path, key), lo, hi);
    *out = (long)x;
    return 0;
}

int api_opt_bool(const cJSON *obj, const char *path, const char *key,
                 int *out, api_error *e)
{
    const cJSON *v = obj ? cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;
    char f[160];
    if (!v)
        return 0;
    if (!cJSON_IsBool(v))
        return api_invalid(e, "%s must be true or false, not %s",
                           field(f, sizeof f, path, key), api_type_name(v));
    *out = cJSON_IsTrue(v);
    return 0;
}

int api_check_keys(const cJSON *obj, const char *path,
                   const char *const *allowed, api_error *e)
{
    for (const cJSON *c = obj ? obj->child : NULL; c; c = c->next) {
        int ok = 0;
        for (const char *const *a = allowed; *a && !ok; a++)
            ok = strcmp(c->string, *a) == 0;
        if (!ok) {
            char list[256] = "";
            for (const char *const *a = allowed; *a; a++) {
                strncat(list, *a, sizeof list - strlen(list) - 3);
                if (a[1])
                    strncat(list, ", ", sizeof list - strlen(list) - 1);
            }
            return api_invalid(e, "%s%s%s is not a known field; expected one "
                               "of: %s", path, *path ? "." : "", c->string,
                               list[0] ? list : "(none)");
        }
    }
    return 0;
}
