/*
 * kmctl_names.h - the one place kmctl names the server's algorithms and
 * kernels: for its --help, and for the one fact of an algorithm it needs
 * before it asks the server, whether a fit takes a target column (fit's
 * column rule, kmctl.c). Everything else kmctl learns from the server:
 * names are checked there (400 naming the valid ones), and how to label
 * predictions comes from the model's metadata ("classes").
 *
 * X(name, target): target is CTL_TARGET when a fit takes a target column
 * (y), CTL_NO_TARGET when every column is a feature.
 *
 * Kept in step with core's lists by hand until kmctl can take the names
 * from core's macro-only map header; see the report of the change that
 * made this file.
 *
 * Thread-safety: not applicable (macros only).
 */
#ifndef KMCTL_NAMES_H
#define KMCTL_NAMES_H

#define CTL_TARGET 1
#define CTL_NO_TARGET 0

#define CTL_ALGO_MAP(X)                                                      \
    X("krr", CTL_TARGET)                                                     \
    X("svc", CTL_TARGET)                                                     \
    X("svr", CTL_TARGET)                                                     \
    X("kpca", CTL_NO_TARGET)

/* Composite kernels (sum, product) need their parts: a JSON object. */
#define CTL_KERNEL_MAP(X)                                                    \
    X("linear")                                                              \
    X("polynomial")                                                          \
    X("rbf")                                                                 \
    X("laplacian")                                                           \
    X("sigmoid")                                                             \
    X("sum")                                                                 \
    X("product")

#endif
