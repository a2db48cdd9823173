/*
 * srv_daemon.h - the daemon's parts put together from its configuration:
 * the registry, the metrics (labelled by the routing table), the store,
 * the commit policy and the fit workers. kmserve.c's main and the HTTP
 * fuzz target build the same daemon through these two calls.
 *
 * Thread-safety: call from one thread, before and after the daemon runs.
 */
#ifndef SRV_DAEMON_H
#define SRV_DAEMON_H

#include <stddef.h>

#include "srv_state.h"

/* Fills s's registry, metrics, store, commit and jobs from s->cfg. 0, or
 * -1 with the reason in err (what was made stays in s for
 * srv_daemon_close). */
int srv_daemon_open(srv_state *s, char *err, size_t errlen);

/* Frees what srv_daemon_open made, and s's tokens and TLS keys (any of
 * them may be NULL). Stop the HTTP side first. */
void srv_daemon_close(srv_state *s);

#endif
