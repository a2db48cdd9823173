/*
 * api_transfer.c - models in and out; see api_transfer.h.
 *
 * An upload is a model file from anywhere, so it is read exactly as the
 * models directory's files are (core's reader, which treats every file
 * as hostile) or, for LIBSVM's text, by core's strict parser; both
 * answer 400 naming what is wrong. A kmm body's own size bounds what it
 * can hold, so its header is checked against that size before anything
 * is allocated from it.
 *
 * Thread-safety: reentrant.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api_transfer.h"

static const char *const format_names[] = {"libsvm", "kmm"};

/* How much larger the store's file of an imported model may be than the
 * uploaded file (kmm: a new name and version, records a format from before
 * them lacked) or than the model's heap (libsvm: the same arrays, less
 * the norms, with the header, labels and figures). */
#define FILE_SLACK ((size_t)64 << 10)

int api_transfer_param(const char *name, int import, api_error *e)
{
    if (!strcmp(name, "format") ||
        (import && (!strcmp(name, "n_features") ||
                    !strcmp(name, "n_training"))))
        return 0;
    return api_invalid(e, "query parameter '%.64s' is not known; %s takes %s",
                       name, import ? "import" : "export",
                       import ? "format, n_features and n_training"
                              : "format");
}

static int parse_format(const char *s, api_format *f, api_error *e)
{
    for (int i = 0; i < 2; i++)
        if (!strcmp(s, format_names[i])) {
            *f = (api_format)i;
            return 0;
        }
    return api_invalid(e, "format must be libsvm or kmm, not '%.64s'", s);
}

int api_media_is(const char *ct, const char *mt)
{
    size_t n = strlen(mt);
    return ct && !strncasecmp(ct, mt, n) &&
           (!ct[n] || ct[n] == ';' || ct[n] == ' ');
}

/* A LIBSVM import's width parameter: 1 .. max, or 400 naming it. */
static int parse_width(const char *s, const char *name, size_t max,
                       size_t *out, api_error *e)
{
    size_t v = 0, i = 0;
    for (; s[i] >= '0' && s[i] <= '9' && i < 9; i++)
        v = v * 10 + (size_t)(s[i] - '0');
    if (!i || s[i] || v < 1 || v > max)
        return api_invalid(e, "%s must be an integer from 1 to %zu, not "
                           "'%.64s'", name, max, s);
    *out = v;
    return 0;
}

int api_import_format(const api_transfer_query *q, const char *content_type,
                      api_format *f, api_import_width *w, api_error *e)
{
    api_format by_type;
    if (api_media_is(content_type, API_MEDIA_LIBSVM))
        by_type = API_FORMAT_LIBSVM;
    else if (api_media_is(content_type, API_MEDIA_KMM))
        by_type = API_FORMAT_KMM;
    else
        return api_raise(e, API_UNSUPPORTED_MEDIA_TYPE, "an import's "
                         "Content-Type must be " API_MEDIA_LIBSVM " (a LIBSVM "
                         "model file) or " API_MEDIA_KMM " (a kmserve model "
                         "file), not %.64s", content_type ? content_type
                                                          : "missing");
    if (q->format && parse_format(q->format, f, e))
        return -1;
    if (q->format && *f != by_type)
        return api_raise(e, API_UNSUPPORTED_MEDIA_TYPE, "format=%s needs "
                         "Content-Type %s, not %.64s", format_names[*f],
                         *f == API_FORMAT_LIBSVM ? API_MEDIA_LIBSVM
                                                 : API_MEDIA_KMM,
                         content_type);
    *f = by_type;
    w->n_features = w->n_training = 0;
    if (!q->n_features && !q->n_training)
        return 0;
    if (*f != API_FORMAT_LIBSVM)
        return api_invalid(e, "%s applies to format=libsvm only (a kmm file "
                           "records its own)",
                           q->n_features ? "n_features" : "n_training");
    if (q->n_features && q->n_training)
        return api_invalid(e, "n_features and n_training exclude each "
                           "other: n_features is the width of a kernel on "
                           "rows of numbers, n_training that of kernel_type "
                           "precomputed");
    if (q->n_features)
        return parse_width(q->n_features, "n_features",
                           KM_MODEL_MAX_FEATURES, &w->n_features, e);
    return parse_width(q->n_training, "n_training",
                       KM_MODEL_MAX_FEATURES - 1, &w->n_training, e);
}

int api_export_format(const api_transfer_query *q, api_format *f,
                      api_error *e)
{
    if (!q->format)
        return api_invalid(e, "format is missing: export takes "
                           "?format=libsvm or ?format=kmm");
    return parse_format(q->format, f, e);
}

/* A core failure reading an upload: 400 for what is wrong with the body,
 * the usual mapping otherwise (413 out of memory). */
static int upload_fault(const km_error *kerr, const char *what, api_error *e)
{
    if (kerr->status == KM_ECORRUPT || kerr->status == KM_EFORMAT ||
        kerr->status == KM_EINVAL)
        return api_invalid(e, "%s: %s", what, kerr->message);
    return api_fail_km(e, kerr);
}

static size_t add_sat(size_t a, size_t b)
{
    return a + b < a ? SIZE_MAX : a + b;
}

/*
 * The body is held until the reply; while it is, the read holds at most
 * its peak, and once it is done the model (kept) and the store's file of
 * it (srv_store_save: at most the uploaded kmm file, or a LIBSVM model's
 * heap, and FILE_SLACK) are held together.
 */
int api_import_bytes(api_format f, const char *body, size_t len,
                     const api_import_width *w, size_t *bytes, api_error *e)
{
    km_error kerr;
    km_load_bytes lb;
    size_t file;
    if (f == API_FORMAT_KMM) {
        /* the header, the size and the records before the payload; the
         * CRC and the rest wait for the read */
        if (km_model_load_bytes((const unsigned char *)body, len, &lb,
                                &kerr) != KM_OK)
            return upload_fault(&kerr, "the uploaded model file", e);
        file = len;
    } else {
        km_libsvm_info info;
        if (km_libsvm_scan(body, len, w->n_features, w->n_training, &info,
                           &kerr) != KM_OK)
            return upload_fault(&kerr, "the uploaded file", e);
        km_libsvm_bytes(&info, &lb);
        file = lb.kept;
    }
    size_t stored = add_sat(lb.kept, add_sat(file, FILE_SLACK));
    *bytes = add_sat(len, lb.peak > stored ? lb.peak : stored);
    return 0;
}

int api_import(api_format f, const char *body, size_t len,
               const api_import_width *w, km_model **out, api_error *e)
{
    km_error kerr;
    km_status st = f == API_FORMAT_KMM
        ? km_model_load_buffer((const unsigned char *)body, len, out, &kerr)
        : km_libsvm_read(body, len, w->n_features, w->n_training, out,
                         &kerr);
    if (st != KM_OK)
        return upload_fault(&kerr, f == API_FORMAT_KMM
                                       ? "the uploaded model file"
                                       : "the uploaded file", e);
    return 0;
}

int api_export(const km_model *m, api_format f, char **out, size_t *len,
               const char **media_type, api_error *e)
{
    km_error kerr;
    km_status st;
    if (f == API_FORMAT_KMM) {
        st = km_model_save_buffer(m, (unsigned char **)out, len, &kerr);
        *media_type = API_MEDIA_KMM;
    } else {
        st = km_libsvm_write(m, out, len, &kerr);
        *media_type = API_MEDIA_LIBSVM "; charset=us-ascii";
    }
    if (st != KM_OK)
        return api_fail_km(e, &kerr);
    return 0;
}
