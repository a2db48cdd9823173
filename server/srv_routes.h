/*
 * srv_routes.h - the routing table: paths, their methods, their handlers.
 *
 * Thread-safety: the table is constant.
 */
#ifndef SRV_ROUTES_H
#define SRV_ROUTES_H

#include "srv_auth.h"
#include "srv_request.h"

typedef void (*srv_handler)(srv_request *rq, srv_reply *rp);

/* What a route's POST body is (srv_route.body). */
enum {
    SRV_BODY_NONE,
    SRV_BODY_JSON,  /* application/json */
    SRV_BODY_MODEL, /* a model file: text/plain or application/octet-stream
                       (the handler tells which format each is) */
    SRV_BODY_TENSORS /* application/json, or with the binary tensor data
                        extension's Inference-Header-Content-Length header
                        application/octet-stream too: JSON, then the
                        tensors' bytes (/v2 infer, /v1 fit and update) */
};

typedef struct srv_route {
    const char *pattern;   /* as in API.md and the metrics' route label */
    srv_handler get, post, del;
    int body;              /* what POST takes: SRV_BODY_* */
    srv_scope get_scope, post_scope, del_scope; /* when tokens are on */
} srv_route;

/* Finds the route of path; copies its {name} or {id} into param, and its
 * {version} (or "") into version. Returns its index, or SRV_ROUTE_NONE
 * (the "unmatched" metrics label). */
size_t srv_route_match(const char *path, char *param, size_t len,
                       char *version, size_t vlen);
/* Whether errors on path are written as the Open Inference Protocol's
 * {"error": message}: /v2 and everything under /v2/. */
int srv_route_plain_errors(const char *path);
const srv_route *srv_route_at(size_t i);
/* The metrics' route labels, in route-index order: the routes' patterns,
 * then "unmatched" (SRV_ROUTE_NONE); *n is how many. srv_routes.c checks
 * at compile time that they fit srv_metrics' SRV_MAX_ROUTES. Constant. */
const char *const *srv_route_labels(size_t *n);
/* "GET, HEAD, DELETE" for an Allow header. */
void srv_route_allow(const srv_route *r, char *buf, size_t len);

/*
 * MHD's unescape callback (MHD_OPTION_UNESCAPE_CALLBACK): percent-decodes
 * s in place as MHD's own does, except that "%00" stays as it is. A
 * decoded NUL would end the path MHD hands to the handler, so
 * "/v1/models/a%00b/fit" would arrive as "/v1/models/a", another route;
 * kept, the name "a%00b" fails the name check (400), and no path that
 * names a route holds a NUL. Returns the new length.
 */
size_t srv_route_unescape(void *cls, struct MHD_Connection *conn, char *s);

extern const size_t SRV_ROUTE_NONE;

/* The index of /metrics (open unless --protect-metrics). */
size_t srv_metrics_route(void);

#endif
