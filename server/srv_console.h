/*
 * srv_console.h - serves the files built into kmserve (srv_assets.h): the
 * web console's page, style sheet and scripts, Chart.js, and
 * /openapi.yaml, each with its type and the console's
 * Content-Security-Policy.
 *
 * Thread-safety: the files are constant; any thread may serve them.
 */
#ifndef SRV_CONSOLE_H
#define SRV_CONSOLE_H

#include "srv_request.h"

/* The route's file (found by rq->path), or 500 when the binary was built
 * without it. */
void srv_console_file(srv_request *rq, srv_reply *rp);

#endif
