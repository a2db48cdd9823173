/*
 * api_schema.h - the parameters a request may give, read, checked and
 * written from core's descriptions of them (km_param_set, km_base.h):
 * an algorithm's params (km_algorithm_params), a kernel object
 * (km_kernel_params, with which rows each kernel type takes) and a fit's
 * preprocess object (km_preprocess_params). One reader and one writer
 * work from core's rows, and the same rows give the error messages, the
 * defaults, the OpenAPI fragments (api_schema_openapi;
 * tests/api/test_api_schema.c checks api/openapi.yaml against them) and
 * GET /v1's description of the params (api_about.c), so none of these can
 * drift from the others or from core.
 *
 * A row says where its value lives (an offset into the algorithm's
 * km_*_params, a km_kernel or a km_preprocess) and what it takes.
 * Defaults are not written in the rows: they are read from core's own
 * defaults (the set's defaults: km_*_params_default, km_kernel_init),
 * which are also what a fit records in the model's params, so metadata
 * shows the same ones.
 *
 * Ranges: a row marked KM_PARAM_RANGE_CHECK states the range core's check
 * function enforces (km_krr_check, km_svm_check, ...: one source of
 * truth, its messages name params.<key>); the reader checks only the
 * type. A row marked KM_PARAM_RANGE_READER is checked here, with one
 * message for any bad value ("kernel.gamma must be a finite number > 0").
 *
 * Thread-safety: the rows are constant; every function is reentrant.
 */
#ifndef API_SCHEMA_H
#define API_SCHEMA_H

#include <cJSON.h>
#include <stddef.h>

#include "api_error.h"

/* The schema of kernel objects (core's km_kernel_params):
 * api_schema_kernel_keys says which rows a type takes, in the order
 * metadata shows them (NULL-terminated). */
const char *const *api_schema_kernel_keys(km_kernel_type t);
/* Whether kernel type t takes the row named key. */
int api_schema_kernel_takes(km_kernel_type t, const char *key);

/* The row named key of s, or NULL. */
const km_param *api_schema_find(const km_param_set *s, const char *key);

/* Refuses members of obj that are not rows of s ("params.alhpa is not a
 * known field; expected one of: alpha"); read-only rows are not fields a
 * request may give. */
int api_schema_check_keys(const cJSON *obj, const char *path,
                          const km_param_set *s, api_error *e);

/*
 * Reads obj (a JSON object, or NULL for none) into params, which holds
 * the schema's defaults already: required rows that are absent fail
 * first ("params.n_components is required: ..."; data_n is the number a
 * data bound stands for, e.g. the rows of X), then each row of a scalar
 * type (number, integer, bool, enum) that obj has, in table order, is
 * checked and stored (an alias at its target's offset), and a row given
 * where it does not apply (only_if) is refused. path names obj
 * in messages ("params", "kernel.kernels[0]"). Rows of other types are
 * the caller's to read; keys are not checked (api_schema_check_keys).
 */
int api_schema_read(const cJSON *obj, const char *path, const km_param_set *s,
                    void *params, size_t data_n, api_error *e);

/* 0 when row r of s applies to params (it has no only_if, or the row it
 * names holds its only_value); else -1 and a 400 naming r under path. */
int api_schema_applies(const km_param_set *s, const km_param *r,
                       const void *params, const char *path, api_error *e);

/* The one scalar row r of s from obj into params, as api_schema_read
 * reads each (no required rows checked): a search sets one value. */
int api_schema_read_row(const cJSON *obj, const char *path,
                        const km_param_set *s, const km_param *r, void *params,
                        api_error *e);

/* The scalar row r of params as JSON (api_json_number: exact). NULL for
 * other types. */
cJSON *api_schema_value_json(const km_param *r, const void *params);

/* The JSON type of a row's values: "number", "integer", "boolean",
 * "string", "object" or "array" (OpenAPI's and GET /v1's word). */
const char *api_param_type_json(km_param_type t);

/* The bounds a row states to clients (OpenAPI's minimum and maximum, GET
 * /v1's): API_HAS_MIN and API_HAS_MAX say which of *min, *max are set.
 * None for an unchecked row; no maximum when only the data bound it
 * (data_bound). r->min_open says whether min is excluded. */
#define API_HAS_MIN 1u
#define API_HAS_MAX 2u
unsigned api_param_bounds(const km_param *r, double *min, double *max);

/* The default of row r, where defaults holds its table's defaults (the
 * table's defaults function; for kernel rows, km_kernel_init of one
 * type): NULL where there is none to state (a required row, one the data
 * set, an alias, a read-only or container row). */
cJSON *api_schema_default_json(const km_param *r, const void *defaults);

/* "a, b, c": names(0..count-1) joined, into buf (truncated to len). */
void api_name_list(char *buf, size_t len, const char *(*names)(int),
                   int count);
/* The names of core's algorithms and kernel types, for messages. */
const char *api_algorithm_name(int a);
const char *api_kernel_type_name(int t);

/*
 * The OpenAPI 3.0 schema objects of the tables: {"Kernel": {...},
 * "Preprocess": {...}, "KrrParams": {...}, ...}, each with type,
 * properties (type, minimum,
 * maximum, exclusiveMinimum, enum, default, items, and the row's doc as
 * description), required, and "x-algorithm" on params. Caller owns the
 * result (cJSON_Delete); NULL when out of memory.
 */
cJSON *api_schema_openapi(void);

#endif
