/*
 * kmctl_about.h - what kmctl learns from the server's self-description,
 * GET /v1's "capabilities" (asked once per run, when a command first needs
 * it): whether an algorithm's fit takes a target column, the values of
 * predict's --output, an algorithm's default output, the layout of its
 * decision values, and what a kernel takes as X (numbers or strings). A server that does not describe itself is asked nothing
 * more: its own checks then answer (a 400 naming what is valid).
 *
 * Thread-safety: single-threaded (the answer is kept in a static).
 */
#ifndef KMCTL_ABOUT_H
#define KMCTL_ABOUT_H

#include "kmctl_http.h"

/* *takes: 0 when algorithm's capabilities say target "none" (every column
 * is a feature), else 1 (an unknown name is the server's to refuse).
 * 0, or -1 with e when GET /v1 fails. */
int ctl_about_takes_target(ctl_client *c, const char *algorithm, int *takes,
                           ctl_err *e);

/* 0 if output is the "output" of one of the server's predict outputs (or
 * the server does not list them); else -1 with a usage error naming
 * them. */
int ctl_about_check_output(ctl_client *c, const char *output, ctl_err *e);

/* The "output" value of algorithm's first (default) output, or NULL (the
 * route's plain answer, not described, or GET /v1 failed). Borrowed until
 * ctl_about_free(). */
const char *ctl_about_default_output(ctl_client *c, const char *algorithm);

/* The "decision_columns" of algorithm's capabilities: how its decision
 * values are laid out ("pairs", "classes" or "outputs"), or NULL (it
 * offers none, the server does not say, or GET /v1 failed). Borrowed
 * until ctl_about_free(). */
const char *ctl_about_decision_columns(ctl_client *c, const char *algorithm);

/* The input kind of kernel object k, as GET /v1's kernels say it
 * ("vectors", "strings", "precomputed"): its type's, or for a composite
 * its first part's that has one (the parts being any member array of
 * kernel objects). NULL when the server does not say (or GET /v1
 * failed). Borrowed until ctl_about_free(). */
const char *ctl_about_kernel_input(ctl_client *c, const cJSON *k);

/* Frees what GET /v1 answered (main, at exit). */
void ctl_about_free(void);

#endif
