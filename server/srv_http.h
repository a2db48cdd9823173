/*
 * srv_http.h - the HTTP side: libmicrohttpd set-up, connections and their
 * deadlines, and dispatch of requests to the routes' handlers.
 *
 * A request's way: the first callback refuses what can be refused from
 * the headers alone: ambiguous framing (400, see srv_http.c), then 404,
 * 405, 411, 413 by Content-Length, 415; body chunks are appended up to
 * --max-body-mb (413 past it); the final callback runs the route's
 * handler. A handler either fills a reply or parks the request with a
 * continuation (srv_request.h): the connection is suspended, and when it
 * is resumed the continuation fills the reply.
 *
 * Around the requests, a sweeper thread holds every connection to its
 * deadlines (--header-timeout, --body-timeout), closes connections whose
 * peer has gone, and keeps a reserve of connections for requests whose
 * headers are in (see srv_http.c for the rules).
 *
 * Thread-safety: a request is handled by one MHD thread at a time (see
 * srv_request.h for parking); the connection table has its own lock.
 */
#ifndef SRV_HTTP_H
#define SRV_HTTP_H

#include <stddef.h>

#include "srv_state.h"

typedef struct srv_http srv_http;

/* Starts the daemon on s->cfg.listen, and its sweeper. NULL with a
 * message on failure. Caller owns the result; stop with srv_http_stop(). */
srv_http *srv_http_start(srv_state *s, char *err, size_t errlen);

/* The port listened on (useful with port 0). */
unsigned srv_http_port(const srv_http *h);

/* Stops accepting connections (MHD_quiesce_daemon): returns the listening
 * socket, which the caller closes after srv_http_stop(), or -1. */
int srv_http_quiesce(srv_http *h);

/* Closes every connection, stops the threads and frees h (NULL is fine). */
void srv_http_stop(srv_http *h);

#endif
