/*
 * kmctl_http.c - requests to kmserve through one libcurl easy handle.
 *
 * libcurl does what a client should not do by hand: TLS with certificate
 * and host checks (--cacert for a private CA), HTTP/1.1 keep-alive, chunked
 * answers, proxies from the environment. The handle is reset to a known
 * state before each request, so options of one call never leak into the
 * next.
 *
 * Thread-safety: one thread per ctl_client; curl_global_init is called once
 * by ctl_client_create before any thread could exist (kmctl has one).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "../core/km.h"
#include "kmctl_http.h"

struct ctl_client {
    CURL *curl;
    char *url, *auth, *cacert;
    volatile sig_atomic_t *interrupt;
    char errbuf[CURL_ERROR_SIZE];
};

const char *ctl_client_url(const ctl_client *c) { return c->url; }

void ctl_client_set_interrupt(ctl_client *c, volatile sig_atomic_t *flag)
{
    c->interrupt = flag;
}

void ctl_client_free(ctl_client *c)
{
    if (!c)
        return;
    if (c->curl)
        curl_easy_cleanup(c->curl);
    free(c->url);
    free(c->auth);
    free(c->cacert);
    free(c);
}

int ctl_client_create(const char *url, const char *token, const char *cacert,
                      ctl_client **out, ctl_err *e)
{
    *out = NULL;
    if (strncmp(url, "http://", 7) && strncmp(url, "https://", 8))
        return ctl_fail(e, CTL_EXIT_USAGE, "server URL '%s' must start with "
                        "http:// or https://", url);
    if (token && strpbrk(token, "\r\n"))
        return ctl_fail(e, CTL_EXIT_USAGE, "the token must be one line");
    static int curl_ready;
    if (!curl_ready) {
        if (curl_global_init(CURL_GLOBAL_DEFAULT))
            return ctl_fail(e, CTL_EXIT_CONNECT, "libcurl could not start");
        curl_ready = 1;
    }
    ctl_client *c = calloc(1, sizeof *c);
    if (!c)
        return ctl_fail(e, CTL_EXIT_CONNECT, "out of memory");
    size_t n = strlen(url);
    while (n > 0 && url[n - 1] == '/')
        n--;
    c->url = strndup(url, n);
    if (token && *token &&
        asprintf(&c->auth, "Authorization: Bearer %s", token) < 0)
        c->auth = NULL;
    if (cacert && *cacert)
        c->cacert = strdup(cacert);
    c->curl = curl_easy_init();
    if (!c->url || (token && *token && !c->auth) ||
        (cacert && *cacert && !c->cacert) || !c->curl) {
        ctl_client_free(c);
        return ctl_fail(e, CTL_EXIT_CONNECT, "out of memory");
    }
    *out = c;
    return 0;
}

char *ctl_client_escape(ctl_client *c, const char *s)
{
    char *t = curl_easy_escape(c->curl, s, 0);
    char *copy = t ? strdup(t) : NULL;
    curl_free(t);
    return copy;
}

struct sink {
    ctl_buf buf;
    int full; /* the answer did not fit under the cap */
};

static size_t on_data(char *p, size_t size, size_t n, void *userdata)
{
    struct sink *s = userdata;
    /* Returning less than given makes libcurl fail with CURLE_WRITE_ERROR. */
    if (ctl_buf_append(&s->buf, p, size * n)) {
        s->full = 1;
        return 0;
    }
    return size * n;
}

static int on_progress(void *userdata, curl_off_t dltotal, curl_off_t dlnow,
                       curl_off_t ultotal, curl_off_t ulnow)
{
    (void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
    const ctl_client *c = userdata;
    return c->interrupt && *c->interrupt; /* non-zero aborts the transfer */
}

void ctl_reply_cleanup(ctl_reply *r)
{
    cJSON_Delete(r->json);
    free(r->body);
    memset(r, 0, sizeof *r);
}

int ctl_client_call(ctl_client *c, const char *method, const char *path,
                    const char *body, size_t len, ctl_reply *r, ctl_err *e)
{
    return ctl_client_call_as(c, method, path, body, len, "application/json",
                              r, e);
}

int ctl_client_call_as(ctl_client *c, const char *method, const char *path,
                       const char *body, size_t len, const char *content_type,
                       ctl_reply *r, ctl_err *e)
{
    memset(r, 0, sizeof *r);
    int rc = -1;
    char *url = NULL;
    struct curl_slist *headers = NULL, *h;
    struct sink in = {.full = 0};
    ctl_buf_init(&in.buf, CTL_HTTP_MAX_REPLY);

    if (asprintf(&url, "%s%s", c->url, path) < 0) {
        url = NULL;
        ctl_fail(e, CTL_EXIT_CONNECT, "out of memory");
        goto out;
    }
    /* "Expect:" stops libcurl from waiting for 100-continue on big bodies. */
    char type[96];
    snprintf(type, sizeof type, "Content-Type: %s", content_type);
    const char *fixed[] = {"Accept: application/json", "Expect:",
                           body ? type : NULL, c->auth};
    for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++) {
        if (!fixed[i])
            continue;
        if (!(h = curl_slist_append(headers, fixed[i]))) {
            ctl_fail(e, CTL_EXIT_CONNECT, "out of memory");
            goto out;
        }
        headers = h;
    }
    CURL *k = c->curl;
    curl_easy_reset(k);
    c->errbuf[0] = '\0';
    curl_easy_setopt(k, CURLOPT_URL, url);
    curl_easy_setopt(k, CURLOPT_CUSTOMREQUEST, method);
    if (!strcmp(method, "HEAD"))
        curl_easy_setopt(k, CURLOPT_NOBODY, 1L);
    if (body) {
        curl_easy_setopt(k, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(k, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    }
    curl_easy_setopt(k, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(k, CURLOPT_USERAGENT, "kmctl/" KM_VERSION);
    curl_easy_setopt(k, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(k, CURLOPT_WRITEDATA, &in);
    curl_easy_setopt(k, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(k, CURLOPT_XFERINFODATA, c);
    curl_easy_setopt(k, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(k, CURLOPT_ERRORBUFFER, c->errbuf);
    curl_easy_setopt(k, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(k, CURLOPT_CONNECTTIMEOUT, 10L);
    curl_easy_setopt(k, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(k, CURLOPT_ACCEPT_ENCODING, ""); /* what libcurl can decode */
    if (c->cacert)
        curl_easy_setopt(k, CURLOPT_CAINFO, c->cacert);

    CURLcode res = curl_easy_perform(k);
    if (res == CURLE_ABORTED_BY_CALLBACK) {
        ctl_fail(e, CTL_EXIT_INTERRUPTED, "interrupted");
        goto out;
    }
    if (res == CURLE_WRITE_ERROR && in.full) {
        ctl_fail(e, CTL_EXIT_CONNECT, "the answer from %s is larger than %zu MiB "
                 "(or memory is short)", url, in.buf.max >> 20);
        goto out;
    }
    if (res != CURLE_OK) {
        ctl_fail(e, CTL_EXIT_CONNECT, "cannot reach %s: %s", c->url,
                 c->errbuf[0] ? c->errbuf : curl_easy_strerror(res));
        goto out;
    }
    curl_easy_getinfo(k, CURLINFO_RESPONSE_CODE, &r->status);
    if (!in.buf.data && ctl_buf_append(&in.buf, "", 0)) {
        ctl_fail(e, CTL_EXIT_CONNECT, "out of memory");
        goto out;
    }
    r->body = in.buf.data;
    r->len = in.buf.len;
    in.buf.data = NULL;
    const char *end = NULL;
    r->json = cJSON_ParseWithOpts(r->body, &end, 1);
    rc = 0;
out:
    ctl_buf_cleanup(&in.buf);
    curl_slist_free_all(headers);
    free(url);
    return rc;
}

int ctl_reply_fail(const ctl_reply *r, ctl_err *e)
{
    const cJSON *err = cJSON_GetObjectItemCaseSensitive(r->json, "error");
    const cJSON *code = cJSON_GetObjectItemCaseSensitive(err, "code");
    const cJSON *msg = cJSON_GetObjectItemCaseSensitive(err, "message");
    if (cJSON_IsString(code) && cJSON_IsString(msg))
        return ctl_fail(e, CTL_EXIT_SERVER, "%ld %s: %s", r->status,
                        code->valuestring, msg->valuestring);
    /* Not the API's error object: a proxy's page, or /readyz's status. */
    int n = (int)strcspn(r->body ? r->body : "", "\r\n");
    return ctl_fail(e, CTL_EXIT_SERVER, "%ld: %.*s", r->status, n > 200 ? 200 : n,
                    r->body ? r->body : "");
}
