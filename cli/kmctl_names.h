/*
 * kmctl_names.h - the algorithm and kernel names kmctl shows in its
 * --help, which must print without a server. The names come from core's
 * lists (core/km_maps.h, macros only: kmctl links no core object), so an
 * algorithm or kernel added to core appears here by itself. Everything
 * else kmctl learns from the server: whether a fit takes a target column
 * and the outputs of predict from GET /v1's capabilities (kmctl_about.c),
 * names are checked there (400 naming the valid ones), and how to label
 * predictions comes from the model's metadata ("classes").
 *
 * Thread-safety: not applicable (macros only).
 */
#ifndef KMCTL_NAMES_H
#define KMCTL_NAMES_H

#include "../core/km_maps.h"

/* " krr svc ...": the names of a core list, for help texts. */
#define CTL_MAP_NAME(e, id, name, desc) " " name
#define CTL_ALGO_NAMES KM_ALGO_MAP(CTL_MAP_NAME)
#define CTL_KERNEL_NAMES KM_KERNEL_MAP(CTL_MAP_NAME)

#endif
