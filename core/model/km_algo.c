/*
 * km_algo.c - the algorithm tables, names and descriptors by stored id,
 * generated from the one list (KM_ALGO_MAP, km_maps.h), and the generic
 * calls on an algorithm that dispatch through its descriptor (km_algo).
 *
 * Thread-safety: reentrant; the tables are constant.
 */
#include "../base/km_base_internal.h"
#include "km_model_internal.h"

/* The tables, from the one list (km_maps.h): names and descriptors by
 * stored id. */
#define ALGO_NAME(e, id, name, desc) [id] = name,
static const char *const algo_names[KM_ALGO_COUNT] = {KM_ALGO_MAP(ALGO_NAME)};
#undef ALGO_NAME
#define ALGO_DESC(e, id, name, desc) [id] = &desc,
static const km_algo *const algos[KM_ALGO_COUNT] = {KM_ALGO_MAP(ALGO_DESC)};
#undef ALGO_DESC

const char *km_algorithm_name(km_algorithm a)
{
    return (unsigned)a < KM_ALGO_COUNT ? algo_names[a] : NULL;
}

int km_algorithm_parse(const char *name, km_algorithm *a)
{
    int i = km_name_index(algo_names, KM_ALGO_COUNT, name);
    if (i >= 0)
        *a = (km_algorithm)i;
    return i >= 0 ? 0 : -1;
}

const km_algo *km_algo_of(km_algorithm a)
{
    return (unsigned)a < KM_ALGO_COUNT ? algos[a] : NULL;
}

unsigned km_algorithm_outputs(km_algorithm a)
{
    const km_algo *al = km_algo_of(a);
    return al ? al->outputs : 0;
}

size_t km_algorithm_params_size(km_algorithm a)
{
    const km_algo *al = km_algo_of(a);
    return al ? al->params->size : 0;
}

void km_algorithm_params_default(km_algorithm a, void *params)
{
    const km_algo *al = km_algo_of(a);
    if (al)
        al->params->defaults(params);
}

const km_param_set *km_algorithm_params(km_algorithm a)
{
    const km_algo *al = km_algo_of(a);
    return al ? al->params : NULL;
}

km_status km_algorithm_check(km_algorithm a, const void *params,
                             const km_problem *pb, km_error *err)
{
    const km_algo *al = km_algo_of(a);
    if (!al)
        return km_error_set(err, KM_EINVAL, "unknown algorithm %d", (int)a);
    return al->check(params, pb, err);
}

size_t km_algorithm_fit_bytes(km_algorithm a, const void *params,
                              const km_problem *pb)
{
    const km_algo *al = km_algo_of(a);
    return al ? al->fit_bytes(params, pb) : 0;
}
