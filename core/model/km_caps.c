/*
 * km_caps.c - what each algorithm can do, read from its descriptor
 * (km_algo, km_model_internal.h): its target kind, its solvers (its params'
 * solver row) and the kernels each takes, the columns of its decision
 * values, what a search does for it, and how it runs distributed.
 * The public accessors of km_fit.h and km_select.h; the API publishes
 * them and decides by them instead of lists of algorithms.
 *
 * Thread-safety: reentrant (the descriptors are constant).
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../base/km_base_internal.h"
#include "km_model_internal.h"

km_target km_algorithm_target(km_algorithm a)
{
    const km_algo *al = km_algo_of(a);
    return al ? al->target : KM_TARGET_NONE;
}

int km_algorithm_checks_targets(km_algorithm a)
{
    const km_algo *al = km_algo_of(a);
    return al ? al->check_targets : 0;
}

/* a's solver choice: the row of its params marked solver (its key,
 * count and names are the solvers'); NULL when a has none. */
static const km_param *solver_row(km_algorithm a)
{
    const km_param_set *set = km_algorithm_params(a);
    for (const km_param *r = set ? set->rows : NULL; r && r->key; r++)
        if (r->solver)
            return r;
    return NULL;
}

const char *km_algorithm_solver_param(km_algorithm a)
{
    const km_param *r = solver_row(a);
    return r ? r->key : NULL;
}

size_t km_algorithm_solver_count(km_algorithm a)
{
    const km_param *r = solver_row(a);
    return r ? (size_t)r->choices->count : 0;
}

const char *km_algorithm_solver_name(km_algorithm a, size_t i)
{
    const km_param *r = solver_row(a);
    return r && i < (size_t)r->choices->count
               ? km_choice_name(r->choices, (int)i)
               : NULL;
}

int km_algorithm_solver_accepts(km_algorithm a, size_t i, km_kernel_type t)
{
    const km_algo *al = km_algo_of(a);
    if (i >= km_algorithm_solver_count(a) ||
        (unsigned)t >= KM_KERNEL_TYPE_COUNT)
        return 0;
    unsigned need = al->solver_needs ? al->solver_needs[i] : 0;
    return (km_kernel_type_caps(t) & need) == need &&
           km_algorithm_takes_input(a, km_kernel_type_input(t), NULL);
}

KM_CHOICES_DEFINE(km_decision_columns_choices, KM_DECISION_COLUMNS_MAP,
                  KM_DECISION_COLUMNS_COUNT);

km_decision_columns km_algorithm_decision_columns(km_algorithm a)
{
    const km_algo *al = km_algo_of(a);
    return al && al->scores ? al->decision_columns
                            : KM_DECISION_COLUMNS_COUNT;
}

km_status km_algorithm_check_kernel(km_algorithm a, const void *params,
                                    const km_kernel *k, km_error *err)
{
    const km_algo *al = km_algo_of(a);
    if (!al)
        return KM_OK;
    km_input_kind in = km_kernel_input(k);
    if (!km_algorithm_takes_input(a, in, params))
        return km_error_set(err, KM_EINVAL, "%s does not take a %s kernel "
                            "(inputs: %s)%s", km_algorithm_name(a),
                            km_kernel_type_name(k->type),
                            km_choice_name(&km_input_kind_choices, in),
                            in == KM_INPUT_PRECOMPUTED && al->self_of_new
                            ? ": its answers need k(x, x) of new rows, which "
                              "precomputed values against the training rows "
                              "do not give"
                            : ": what it learns of X beyond the kernel needs "
                              "rows of numbers");
    return al->check_kernel ? al->check_kernel(params, k, err) : KM_OK;
}

int km_algorithm_takes_input(km_algorithm a, km_input_kind in,
                             const void *params)
{
    const km_algo *al = km_algo_of(a);
    if (!al || (unsigned)in >= KM_INPUT_COUNT)
        return 0;
    if (in == KM_INPUT_PRECOMPUTED && al->self_of_new)
        return 0;
    return in == KM_INPUT_VECTORS || !params || !al->vectors_only ||
           !al->vectors_only(params);
}

unsigned km_algorithm_search_caps(km_algorithm a)
{
    const km_algo *al = km_algo_of(a);
    return al && al->search ? al->search->caps : 0;
}

/* ------------------------------------------------------------ mpi */

static const km_algo_mpi *mpi_of(km_algorithm a)
{
    const km_algo *al = km_algo_of(a);
    return al ? al->mpi : NULL;
}

int km_algorithm_distributed(km_algorithm a)
{
    return mpi_of(a) != NULL;
}

void km_algorithm_names_where(int (*has)(km_algorithm a), const char *last,
                              char *buf, size_t len)
{
    const char *names[KM_ALGO_COUNT];
    int k = 0;
    for (int a = 0; a < KM_ALGO_COUNT; a++)
        if (has((km_algorithm)a))
            names[k++] = km_algorithm_name((km_algorithm)a);
    km_join_names(names, k, last, buf, len);
}

void km_algorithm_distributed_names(const char *last, char *buf, size_t len)
{
    km_algorithm_names_where(km_algorithm_distributed, last, buf, len);
}

const char *km_algorithm_mpi_refusal(km_algorithm a, const void *params,
                                     char *buf, size_t len)
{
    const km_algo_mpi *mp = mpi_of(a);
    if (!mp) {
        char names[64];
        km_algorithm_distributed_names(" and ", names, sizeof names);
        snprintf(buf, len, "this algorithm cannot run distributed (only "
                 "%s)", names);
        return buf;
    }
    return mp->refusal ? mp->refusal(params, buf, len) : NULL;
}

int km_algorithm_mpi_routes_auto(km_algorithm a, const void *params,
                                 void *exact)
{
    const km_algo_mpi *mp = mpi_of(a);
    return mp && mp->routes_auto ? mp->routes_auto(params, exact) : 0;
}

km_status km_algorithm_mpi_resolve(km_algorithm a, void *params,
                                   km_error *err)
{
    const km_algo_mpi *mp = mpi_of(a);
    if (!mp) {
        char names[64];
        km_algorithm_distributed_names(" and ", names, sizeof names);
        return km_error_set(err, KM_EINVAL, "kmserve-mpi fits %s, not %s",
                            names, km_algorithm_name(a));
    }
    return mp->resolve ? mp->resolve(params, err) : KM_OK;
}

size_t km_algorithm_mpi_rank_bytes(km_algorithm a, const void *params,
                                   const km_problem *pb, size_t nb,
                                   size_t rows, size_t cols)
{
    const km_algo_mpi *mp = mpi_of(a);
    return mp ? mp->rank_bytes(params, pb, nb, rows, cols) : 0;
}

size_t km_algorithm_mpi_local_bytes(km_algorithm a, const void *params,
                                    const km_problem *pb)
{
    const km_algo_mpi *mp = mpi_of(a);
    return mp ? mp->local_bytes(params, pb) : 0;
}

static size_t sat_mul(size_t a, size_t b)
{
    size_t p;
    return __builtin_mul_overflow(a, b, &p) ? SIZE_MAX : p;
}

static size_t sat_add(size_t a, size_t b)
{
    return a + b < a ? SIZE_MAX : a + b;
}

size_t km_mpi_local_max(size_t n, size_t nb, size_t p)
{
    size_t blocks = (n + nb - 1) / nb, l = sat_mul((blocks + p - 1) / p, nb);
    return l < n ? l : n;
}

size_t km_mpi_dense_rank_bytes(const km_problem *pb, size_t nb, size_t rows,
                               size_t cols, size_t extra)
{
    size_t n = pb->n, d = pb->d, mo = pb->m ? pb->m : 1;
    size_t share = sat_mul(8, sat_mul(km_mpi_local_max(n, nb, rows),
                                      km_mpi_local_max(n, nb, cols)));
    size_t vec = sat_mul(8, sat_add(sat_mul(n, 3 * d + 4 * mo + 1),
                                    sat_mul(nb, n)));
    return sat_add(sat_add(share, vec), extra);
}
