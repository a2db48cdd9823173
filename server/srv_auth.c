/*
 * srv_auth.c - token file and checks.
 *
 * A presented token is compared with every configured token, each over a
 * fixed 256-byte window with no early exit, so the time taken does not
 * depend on where (or whether) the token matches.
 *
 * Thread-safety: see srv_auth.h.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "srv_auth.h"

#define MAX_TOKEN 255
#define MIN_TOKEN 16
#define MAX_TOKENS 1024

typedef struct token {
    unsigned char text[MAX_TOKEN + 1]; /* zero-padded */
    srv_scope scope;
} token;

struct srv_auth {
    token *tokens;
    size_t n;
};

void srv_auth_free(srv_auth *a)
{
    if (!a)
        return;
    /* Do not leave secrets in freed memory. */
    if (a->tokens)
        memset(a->tokens, 0, a->n * sizeof *a->tokens);
    free(a->tokens);
    free(a);
}

size_t srv_auth_count(const srv_auth *a)
{
    return a ? a->n : 0;
}

srv_auth *srv_auth_load(const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "cannot read --token-file %s", path);
        return NULL;
    }
    srv_auth *a = calloc(1, sizeof *a);
    if (a)
        a->tokens = calloc(MAX_TOKENS, sizeof *a->tokens);
    if (!a || !a->tokens) {
        fclose(f);
        srv_auth_free(a);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    char line[1024];
    int lineno = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        char *p = line;
        while (isspace((unsigned char)*p))
            p++;
        if (!*p || *p == '#')
            continue;
        char tok[1024], scope[64], extra[8];
        int k = sscanf(p, "%1023s %63s %7s", tok, scope, extra);
        size_t len = strlen(tok);
        srv_scope sc = !strcmp(scope, "read") ? SRV_SCOPE_READ
                       : !strcmp(scope, "admin") ? SRV_SCOPE_ADMIN
                                                 : SRV_SCOPE_OPEN;
        const char *why = k != 2 ? "expected \"TOKEN SCOPE\""
                          : len < MIN_TOKEN || len > MAX_TOKEN
                              ? "a token has 16 to 255 characters"
                          : sc == SRV_SCOPE_OPEN ? "SCOPE is read or admin"
                          : a->n == MAX_TOKENS ? "too many tokens"
                                               : NULL;
        if (why) {
            snprintf(err, errlen, "%s line %d: %s", path, lineno, why);
            fclose(f);
            srv_auth_free(a);
            return NULL;
        }
        memcpy(a->tokens[a->n].text, tok, len);
        a->tokens[a->n].scope = sc;
        a->n++;
    }
    fclose(f);
    if (a->n == 0) {
        snprintf(err, errlen, "--token-file %s has no tokens", path);
        srv_auth_free(a);
        return NULL;
    }
    return a;
}

int srv_auth_check(const srv_auth *a, const char *authorization,
                   srv_scope need, api_error *e)
{
    if (!a || need == SRV_SCOPE_OPEN)
        return 0;
    unsigned char given[MAX_TOKEN + 1] = {0};
    size_t len = 0;
    if (authorization && !strncasecmp(authorization, "Bearer ", 7)) {
        const char *t = authorization + 7;
        while (*t == ' ')
            t++;
        len = strlen(t);
        if (len <= MAX_TOKEN)
            memcpy(given, t, len);
    }
    if (len < MIN_TOKEN || len > MAX_TOKEN)
        return api_raise(e, API_UNAUTHENTICATED,
                        "a bearer token is required (Authorization: Bearer "
                        "TOKEN)");
    srv_scope granted = SRV_SCOPE_OPEN;
    for (size_t i = 0; i < a->n; i++) {
        unsigned diff = 0;
        for (size_t j = 0; j <= MAX_TOKEN; j++)
            diff |= (unsigned)(a->tokens[i].text[j] ^ given[j]);
        /* Branch-free select of the matching token's scope. */
        unsigned match = (unsigned)((diff | (0u - diff)) >> 31) ^ 1u;
        granted = (srv_scope)((unsigned)granted |
                              ((0u - match) & (unsigned)a->tokens[i].scope));
    }
    memset(given, 0, sizeof given);
    if (granted == SRV_SCOPE_OPEN)
        return api_raise(e, API_UNAUTHENTICATED, "the bearer token is not "
                        "valid");
    if (granted < need)
        return api_raise(e, API_PERMISSION_DENIED,
                        "this token's scope is read; the operation needs "
                        "admin");
    return 0;
}
