/*
 * km_choice.c - an option's choices (km_choices, km_base.h): a value's
 * name, a name's value and the list of names messages show, for every
 * option's table generated from its X(ENUM, "name") list.
 *
 * Thread-safety: all functions are reentrant.
 */
#include <stdio.h>

#include "km_base_internal.h"

const char *km_choice_name(const km_choices *c, int v)
{
    return v >= 0 && v < c->count ? c->names[v] : NULL;
}

int km_choice_value(const km_choices *c, const char *name)
{
    return name ? km_name_index(c->names, c->count, name) : -1;
}

void km_choice_list(const km_choices *c, const char *last, char *buf,
                    size_t len)
{
    km_join_names(c->names, c->count, last, buf, len);
}

void km_join_names(const char *const *names, int n, const char *last,
                   char *buf, size_t len)
{
    size_t used = 0;
    if (len)
        buf[0] = '\0';
    for (int i = 0; i < n && used < len; i++) {
        const char *sep = i == 0 ? "" : i == n - 1 ? last : ", ";
        int w = snprintf(buf + used, len - used, "%s%s", sep, names[i]);
        used += w > 0 ? (size_t)w : 0;
    }
}
