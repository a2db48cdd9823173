/*
 * api_schema.h - the parameters a request may give, as tables: one schema
 * per algorithm (the members of "params") and one for kernels (the
 * members of a "kernel" object, with which of them each kernel type
 * takes). One reader and one writer work from the tables, and the same
 * rows give the error messages, the defaults and the OpenAPI fragments
 * (api_schema_openapi; tests/api/test_api_schema.c checks api/openapi.yaml
 * against them), so none of these can drift from the others.
 *
 * A row says where its value lives (an offset into the algorithm's
 * km_*_params or into km_kernel) and what it takes. Defaults are not
 * written in the rows: they are read from core's own defaults
 * (km_*_params_default, km_kernel_init), which are also what a fit
 * records in the model's params, so metadata shows the same ones.
 *
 * Ranges: a row marked API_RANGE_CORE states the range core's check
 * function enforces (km_krr_check, km_svm_check, ...: one source of
 * truth, its messages name params.<key>); the reader checks only the
 * type. A row marked API_RANGE_API is checked here, with one message for
 * any bad value ("kernel.gamma must be a finite number > 0").
 *
 * Thread-safety: the tables are constant; every function is reentrant.
 */
#ifndef API_SCHEMA_H
#define API_SCHEMA_H

#include <cJSON.h>
#include <stddef.h>

#include "api_error.h"

typedef enum {
    API_NUMBER,        /* double */
    API_INTEGER,       /* int or size_t (size says which); whole, in range */
    API_BOOL,          /* int, 0 or 1 */
    API_ENUM,          /* an int-sized enum, by name: names(0..count-1) */
    API_DISCRIMINATOR, /* the member that picks the table ("type") */
    API_LABEL_WEIGHTS, /* svc class_weight: an object of label to weight,
                          read after y (api_fit.c); a const double * */
    API_PARTS,         /* a composite kernel's parts ("kernels") */
    API_PART_WEIGHTS,  /* one number per part ("weights"); NULL: all 1 */
    API_READ_ONLY      /* an array of numbers metadata shows and a request
                          may not give (preprocess.x_shift); the writer's
                          caller fills it */
} api_param_type;

typedef enum {
    API_RANGE_NONE, /* any finite number */
    API_RANGE_CORE, /* core's check enforces min..max */
    API_RANGE_API   /* the reader enforces min..max */
} api_range_owner;

typedef struct api_param {
    const char *key;
    api_param_type type;
    size_t offset, size;  /* of the field in the params struct */
    api_range_owner range;
    double min, max;      /* min > -HUGE_VAL / max < HUGE_VAL: bounded */
    int min_open;         /* min itself excluded (> min) */
    int required;
    /* API_ENUM: the names of values 0..count-1. */
    const char *(*names)(int value);
    int count;
    /* Another spelling of the row named alias_of: the value is converted
     * (returns -1 when the result is not a valid value of the target)
     * and stored at the target's offset. Never written back out. */
    const char *alias_of;
    int (*convert)(double in, double *out);
    /* The default is set from the data at fit time ("gamma": 1/n_features)
     * rather than a constant. */
    int data_default;
    /* An upper bound only the data give, for messages ("the number of
     * rows of X"); the row's max is then a bound of the type only. */
    const char *data_bound;
    /* The row applies only when the API_ENUM row named only_if holds
     * only_value (krr's n_centres: solver "nystrom"): given otherwise, it
     * is refused (400), and metadata shows it only then. */
    const char *only_if;
    int only_value;
    /* Other values of only_if's row it also applies with, one bit per
     * value (krr's seed: solver "nystrom" or "rff"); 0: none. */
    unsigned only_also;
    /* A second row whose values it also applies with, as only_if's
     * (gpr's seed: optimizer "lbfgs", or solver "nystrom" or "auto");
     * NULL: none. */
    const char *or_if;
    int or_value;
    unsigned or_also;
    const char *doc;      /* one line for the OpenAPI description */
} api_param;

/* A table: its rows (ended by a row with key NULL), the size of the
 * struct they describe, and how to fill one with core's defaults. Its
 * name is core's (km_algorithm_name). */
typedef struct api_schema {
    const api_param *rows;
    size_t size;
    void (*defaults)(void *params);
} api_schema;

/* The schema of a fit's "preprocess" object (a km_preprocess: scale,
 * center_y) and of the statistics metadata adds to it (read-only rows). */
const api_schema *api_schema_preprocess(void);

/* The schema of an algorithm's params; NULL for a value out of range. */
const api_schema *api_schema_params(km_algorithm a);
/* The schema of kernel objects; api_schema_kernel_keys says which rows a
 * type takes, in the order metadata shows them (NULL-terminated). */
const api_schema *api_schema_kernel(void);
const char *const *api_schema_kernel_keys(km_kernel_type t);
/* Whether kernel type t takes the row named key. */
int api_schema_kernel_takes(km_kernel_type t, const char *key);

/* The row named key of s, or NULL. */
const api_param *api_schema_find(const api_schema *s, const char *key);

/* Refuses members of obj that are not rows of s ("params.alhpa is not a
 * known field; expected one of: alpha"); read-only rows are not fields a
 * request may give. */
int api_schema_check_keys(const cJSON *obj, const char *path,
                          const api_schema *s, api_error *e);

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
int api_schema_read(const cJSON *obj, const char *path, const api_schema *s,
                    void *params, size_t data_n, api_error *e);

/* 0 when row r of s applies to params (it has no only_if, or the row it
 * names holds its only_value); else -1 and a 400 naming r under path. */
int api_schema_applies(const api_schema *s, const api_param *r,
                       const void *params, const char *path, api_error *e);

/* The one scalar row r of s from obj into params, as api_schema_read
 * reads each (no required rows checked): a search sets one value. */
int api_schema_read_row(const cJSON *obj, const char *path,
                        const api_schema *s, const api_param *r, void *params,
                        api_error *e);

/* The scalar row r of params as JSON (api_json_number: exact). NULL for
 * other types. */
cJSON *api_schema_value_json(const api_param *r, const void *params);

/* The JSON type of a row's values: "number", "integer", "boolean",
 * "string", "object" or "array" (OpenAPI's and GET /v1's word). */
const char *api_param_type_json(api_param_type t);

/* The bounds a row states to clients (OpenAPI's minimum and maximum, GET
 * /v1's): API_HAS_MIN and API_HAS_MAX say which of *min, *max are set.
 * None for an unchecked row; no maximum when only the data bound it
 * (data_bound). r->min_open says whether min is excluded. */
#define API_HAS_MIN 1u
#define API_HAS_MAX 2u
unsigned api_param_bounds(const api_param *r, double *min, double *max);

/* The default of row r, where defaults holds its table's defaults (the
 * table's defaults function; for kernel rows, km_kernel_init of one
 * type): NULL where there is none to state (a required row, one the data
 * set, an alias, a read-only or container row). */
cJSON *api_schema_default_json(const api_param *r, const void *defaults);

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
