/*
 * api_model.h - models as JSON: metadata, kernels (both ways), names.
 *
 * Thread-safety: reentrant; reads models only.
 */
#ifndef API_MODEL_H
#define API_MODEL_H

#include <cJSON.h>

#include "api_error.h"
#include "api_text.h"

/* ^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$ ; fails with 400 naming the rule. */
int api_check_name(const char *name, api_error *e);

/* Parses a "kernel" object into k (initialised here; cleanup by caller
 * with km_kernel_cleanup, also after failure). path is "kernel". */
int api_parse_kernel(const cJSON *item, const char *path, km_kernel *k,
                     int depth, api_error *e);

cJSON *api_kernel_json(const km_kernel *k);

/* The <metadata> object of API.md; NULL on OOM. */
cJSON *api_model_json(const km_model *m);
/* The same for a list of models: a search record without its table of
 * results (up to 10000 rows a model), which GET of the model shows. */
cJSON *api_model_brief_json(const km_model *m);

/* The model's preprocessing as metadata shows it: {"scale", "center_y"}
 * and, where they apply, "x_shift", "x_scale" (n_features each) and
 * "y_mean" (n_outputs), numbers exact. NULL on OOM. */
cJSON *api_preprocess_json(const km_model *m);

/* {"name":..,"version":..} for predict answers. */
cJSON *api_model_ref_json(const km_model *m);
/* The same as the start of an answer written as text:
 * {"model":{"name":..,"version":..} (the outer object left open). */
void api_model_ref_text(api_text *t, const km_model *m);

/* Class label i of a classifier as JSON (a number or a string). */
cJSON *api_model_label_json(const km_model *m, size_t i);
/* The same, written as text (predict answers). */
void api_model_label_text(api_text *t, const km_model *m, size_t i);

/* RFC 3339 UTC with milliseconds into buf (at least 32 bytes). */
void api_format_time(long long unix_ms, char *buf, size_t len);

/* The model's search record (km_search_table: a fit with "search" keeps
 * it) as metadata, or NULL when it has none. */
cJSON *api_search_json(const km_model *m);

#endif
