/*
 * srv_assets.h - the files built into kmserve: the web console
 * (server/console/index.html, console.css, console.js) and the API spec
 * (api/openapi.yaml), which GET /, /console.css, /console.js and
 * /openapi.yaml serve.
 *
 * The table is generated at build time by server/console/embed.sh (the
 * Makefile's $(B)/gen/srv_assets.c), so the files served are the ones
 * the repository holds and cannot drift from them.
 *
 * Thread-safety: constant.
 */
#ifndef SRV_ASSETS_H
#define SRV_ASSETS_H

#include <stddef.h>

typedef struct srv_asset {
    const char *name;          /* the file's base name: "index.html" */
    const unsigned char *data; /* its bytes, followed by a NUL */
    size_t len;                /* without the NUL */
} srv_asset;

/* Every file, then an entry whose name is NULL. */
extern const srv_asset srv_assets[];

#endif
