/*
 * srv_drift.h - drift of the served models' inputs: per model, a
 * reservoir of the rows it was asked to predict, and the drift test
 * (core's km_drift: the unbiased MMD^2 of the model's drift reference
 * against the reservoir, with a permutation p-value) run as a job.
 *
 * The reservoir (per model name while the name is served, in memory
 * only: a restart starts it empty, and so does a delete: the name's next
 * fit starts a new one, without the deleted model's rows, cached answer
 * or collect switch, by the name's lineage, srv_registry.h) holds at most --drift-reservoir-rows rows, raw as sent, from
 * predict, project and v2 infer on the served version (not on pinned
 * /versions/{v} routes, nor for a model without a drift reference). Sampling on the request path is one short lock
 * and one random draw per row:
 *   - no window: Algorithm R, a uniform sample of every row since the
 *     reservoir started;
 *   - --drift-window-rows W: once full, a new row replaces a random slot
 *     with probability rows / W (a row stays about W rows), and the test
 *     takes the rows among the last W asked;
 *   - --drift-window-seconds T (without W): once full, every new row
 *     replaces a random slot, and the test takes the rows of the last T
 *     seconds.
 * Its memory (rows x n_features doubles and two numbers a row) is
 * reserved against the memory budget when it is made; a reservoir the
 * budget cannot hold is not made (the drift answer says so; a POST reset
 * lets the next row try again). A model
 * whose n_features changes (a refit) starts its reservoir again.
 *
 * Thread-safety: all functions are safe from any thread.
 */
#ifndef SRV_DRIFT_H
#define SRV_DRIFT_H

#include "../api/api_json.h"
#include "srv_registry.h"
#include "srv_request.h"

/* (srv_state.h declares srv_drift.) NULL on OOM. Starts the scheduled
 * tests (--drift-refresh-seconds). */
srv_drift *srv_drift_create(srv_state *s);
/* Stops the scheduled tests (before the jobs are freed). */
void srv_drift_stop(srv_drift *d);
/* Stops them and frees every reservoir (after the jobs are freed: no
 * test may still be running). */
void srv_drift_free(srv_drift *d);

/* What a predict route hands to the api layer for the model ref it
 * holds: tap (the route's, living as long as the request) is filled and
 * its observer returned; NULL when --drift is off. */
typedef struct srv_drift_tap {
    api_observer obs;
    srv_drift *d;
    const srv_ref *ref;
} srv_drift_tap;
const api_observer *srv_drift_observer(srv_drift *d, const srv_ref *ref,
                                       srv_drift_tap *tap);

/* GET /v1/models/{name}/drift for the model ref (taken): query
 * permutations, seed, async; answers from the cache, or runs the test as
 * a job (the request waits for it unless async=true: 202 with the job). */
void srv_drift_get(srv_drift *d, srv_request *rq, srv_reply *rp,
                   srv_ref *ref);
/* 0 when name is a query parameter of GET .../drift, else -1 with e set
 * to a 400 naming it. */
int srv_drift_param(const char *name, api_error *e);
/* POST /v1/models/{name}/drift for the model ref (taken): body
 * {"collect": bool, "reset": bool}, both optional. */
void srv_drift_post(srv_drift *d, srv_request *rq, srv_reply *rp,
                    srv_ref *ref);

/* The kmserve_model_drift_* families of the latest answers, as
 * Prometheus text (malloc'd, NULL on OOM). */
char *srv_drift_metrics(srv_drift *d);

#endif
