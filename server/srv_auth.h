/*
 * srv_auth.h - bearer tokens with scopes, from a token file.
 *
 * The file has one token per line, "TOKEN SCOPE", SCOPE being read
 * (predict, project, get and list models) or admin (also fit, delete,
 * jobs); blank lines and lines starting with '#' are skipped. Tokens are
 * 16 to 255 printable characters. Health routes are always open; /metrics
 * is open unless --protect-metrics.
 *
 * Thread-safety: loaded once at start, then read-only.
 */
#ifndef SRV_AUTH_H
#define SRV_AUTH_H

#include <stddef.h>

#include "../api/api_error.h"

typedef enum { SRV_SCOPE_OPEN, SRV_SCOPE_READ, SRV_SCOPE_ADMIN } srv_scope;

typedef struct srv_auth srv_auth;

/* NULL with a message naming the line on failure. */
srv_auth *srv_auth_load(const char *path, char *err, size_t errlen);
void srv_auth_free(srv_auth *a);
size_t srv_auth_count(const srv_auth *a);

/* Checks an Authorization header (may be NULL) for scope need.
 * 0 if allowed; else -1 with 401 unauthenticated or 403
 * permission_denied in e. a == NULL allows everything. */
int srv_auth_check(const srv_auth *a, const char *authorization,
                   srv_scope need, api_error *e);

#endif
