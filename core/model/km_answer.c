/*
 * km_answer.c - the table of answers (KM_ANSWER_MAP, km_model.h): every
 * answer a model gives as the API names it, and which algorithms offer it.
 *
 * Thread-safety: reentrant (the table is constant).
 */
#include "km_model_internal.h"

static const km_answer answers[] = {
#define KM_ANSWER_ROW(id, name, flag, each, route, v1_output, v1_inverse,    \
                      v2_name, v2_datatype, with, without, needs)            \
    {name, route, v1_output, v1_inverse, v2_name, v2_datatype, flag, with,   \
     without, each, needs},
    KM_ANSWER_MAP(KM_ANSWER_ROW)
#undef KM_ANSWER_ROW
};

_Static_assert(sizeof answers / sizeof *answers == KM_ANSWER_COUNT,
               "one km_answer per row of KM_ANSWER_MAP");

size_t km_answer_count(void)
{
    return KM_ANSWER_COUNT;
}

const km_answer *km_answer_at(size_t i)
{
    return i < KM_ANSWER_COUNT ? &answers[i] : NULL;
}

int km_answer_offered(const km_answer *r, km_algorithm a)
{
    unsigned outs = km_algorithm_outputs(a); /* 0 for an invalid a */
    return r && (outs & r->flag) && (outs & r->with) == r->with &&
           !(outs & r->without);
}
