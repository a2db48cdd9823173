/*
 * kmctl_names.h - the algorithm and kernel names kmctl shows in its
 * --help, and the one fact of an algorithm it needs before it asks the
 * server: whether a fit takes a target column (fit's column rule,
 * kmctl.c). The names come from core's lists (core/km_maps.h, macros
 * only: kmctl links no core object), so an algorithm or kernel added to
 * core appears here by itself. Everything else kmctl learns from the
 * server: names are checked there (400 naming the valid ones), and how to
 * label predictions comes from the model's metadata ("classes").
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

/* The algorithms whose fit takes no target column (every column is a
 * feature): the unsupervised ones. Every other algorithm takes one. */
#define CTL_NO_TARGET_MAP(X) X("kpca") X("kkmeans")

#endif
