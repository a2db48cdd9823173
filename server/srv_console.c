/*
 * srv_console.c - the files built into the binary, served as they are
 * (see srv_console.h).
 */
#include <string.h>

#include "srv_assets.h"
#include "srv_console.h"

/* The console's own files only, no inline script or style, calls to this
 * server only, nothing framed, no form posted anywhere; images may be
 * data: URIs (the page's icon), which run nothing. */
static const char console_csp[] =
    "default-src 'none'; script-src 'self'; style-src 'self'; "
    "img-src 'self' data:; connect-src 'self'; base-uri 'none'; "
    "form-action 'none'; frame-ancestors 'none'";

/* Each route's path, the file it serves (its base name in srv_assets) and
 * its type. */
static const struct console_file {
    const char *path, *file, *type;
} console_files[] = {
    {"/", "index.html", "text/html; charset=utf-8"},
    {"/console.css", "console.css", "text/css; charset=utf-8"},
    {"/console.js", "console.js", "text/javascript; charset=utf-8"},
    {"/model.js", "model.js", "text/javascript; charset=utf-8"},
    {"/chart.min.js", "chart.min.js", "text/javascript; charset=utf-8"},
    {"/openapi.yaml", "openapi.yaml", "application/yaml; charset=utf-8"},
};

void srv_console_file(srv_request *rq, srv_reply *rp)
{
    for (size_t i = 0; i < sizeof console_files / sizeof *console_files; i++) {
        const struct console_file *f = &console_files[i];
        if (strcmp(f->path, rq->path))
            continue;
        for (const srv_asset *a = srv_assets; a->name; a++)
            if (!strcmp(a->name, f->file)) {
                rp->status = 200;
                rp->body = (char *)a->data;
                rp->len = a->len;
                rp->persistent = 1;
                rp->content_type = f->type;
                rp->csp = console_csp;
                return;
            }
    }
    srv_reply_fail(rp, API_INTERNAL, "%s is not built into this server",
                   rq->path);
}
