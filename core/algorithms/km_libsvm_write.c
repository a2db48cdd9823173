/*
 * km_libsvm_write.c - kmserve's svc and svr models as LIBSVM's model file
 * (the text svm-predict reads), the writing half of km_libsvm.c, whose
 * comment describes the file. Writing needs no class map: kmserve's
 * ascending class order is a valid label order (an imported model's own
 * order, kept as its vote order, is written back). A precomputed model's
 * SV lines are LIBSVM's "0:i", i its training row numbered from 1.
 *
 * Thread-safety: reentrant.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/km_base_internal.h"
#include "../model/km_model_internal.h"
#include "km_libsvm.h"
#include "km_libsvm_internal.h"

/* Whether m is of the exact form: the support-vector expansion of an
 * SMO solve in the file layout of format 2 (3 only for a vote order). A
 * payload of another form (an approximate solver's) is written in a
 * later format version (the descriptor's file_format) or records its
 * params.solver. */
static int exact_form(const km_model *m)
{
    const km_algo *al = km_algo_of(km_model_algorithm(m));
    km_svm_parts p;
    km_svm_parts_of(m, &p);
    uint32_t fv = al->file_format ? al->file_format(km_model_payload(m)) : 0;
    if (fv > 3 || (fv == 3 && !p.vote))
        return 0;
    const km_info_entry *s = km_info_find(km_model_params(m), "solver");
    return !s || (s->count == 1 && s->values[0] == 0);
}

km_status km_libsvm_check_export(const km_model *m, km_error *err)
{
    km_algorithm a = km_model_algorithm(m);
    const km_kernel *k = km_model_kernel(m);
    const km_pre_stats *pre = km_model_pre(m);
    if (a != KM_ALGO_SVC && a != KM_ALGO_SVR)
        return km_error_set(err, KM_ECONFLICT, "a LIBSVM model file holds "
                            "c_svc and epsilon_svr models; this model is %s",
                            km_algorithm_name(a));
    if (!km_libsvm_kernel_name(k->type)) {
        char names[128];
        km_libsvm_kernel_list(names, sizeof names);
        return km_error_set(err, KM_ECONFLICT, "LIBSVM has no %s kernel; it "
                            "has %s", km_kernel_type_name(k->type), names);
    }
    if (pre->x_shift || pre->y_mean)
        return km_error_set(err, KM_ECONFLICT, "this model preprocesses its "
                            "data (preprocess.%s), which a LIBSVM model file "
                            "cannot hold; fit without preprocess (scale the "
                            "data beforehand, as svm-scale does)",
                            pre->x_shift ? "scale" : "center_y");
    if (!exact_form(m))
        return km_error_set(err, KM_ECONFLICT, "this %s model is not the "
                            "support-vector expansion of the exact solver, "
                            "the only form a LIBSVM model file holds",
                            km_algorithm_name(a));
    for (size_t c = 0; c < km_model_n_labels(m); c++) {
        const char *l = km_model_label(m, c);
        char *end;
        errno = 0;
        long v = km_model_labels_numeric(m) ? strtol(l, &end, 10) : 0;
        if (!km_model_labels_numeric(m) || *end || errno ||
            v < -2147483647L - 1 || v > 2147483647L)
            return km_error_set(err, KM_ECONFLICT, "LIBSVM's class labels "
                                "are 32-bit integers; this model's label "
                                "\"%.64s\" is not one", l);
    }
    return KM_OK;
}

/* printf into the writer. */
static void put(km_writer *w, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void put(km_writer *w, const char *fmt, ...)
{
    char buf[128];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n > 0)
        km_write_bytes(w, buf, (size_t)n < sizeof buf ? (size_t)n
                                                       : sizeof buf - 1);
}

static void put_list(km_writer *w, const char *key, const double *v, size_t n)
{
    put(w, "%s", key);
    for (size_t i = 0; i < n; i++)
        put(w, " %.17g", v[i]);
    put(w, "\n");
}

/* The text of parts (LIBSVM's class order; label[c] the label of its
 * class c) into w. */
static void write_text(km_writer *w, const km_kernel *k, size_t d,
                       const km_svm_parts *p, const char *const *label,
                       const km_info_entry *svr_prob)
{
    size_t ncoef = p->k ? p->k - 1 : 1, npair = p->k ? km_n_pairs(p->k) : 1;
    put(w, "svm_type %s\nkernel_type %s\n", p->k ? "c_svc" : "epsilon_svr",
        km_libsvm_kernel_name(k->type));
    if (k->type == KM_KERNEL_POLYNOMIAL)
        put(w, "degree %d\n", k->degree);
    int pre = k->type == KM_KERNEL_PRECOMPUTED;
    if (k->type != KM_KERNEL_LINEAR && !pre)
        put(w, "gamma %.17g\n", k->gamma);
    if (k->type == KM_KERNEL_POLYNOMIAL || k->type == KM_KERNEL_SIGMOID)
        put(w, "coef0 %.17g\n", k->coef0);
    put(w, "nr_class %zu\ntotal_sv %zu\n", p->k ? p->k : 2, p->nsv);
    put_list(w, "rho", p->rho, npair);
    if (p->k) {
        put(w, "label");
        for (size_t c = 0; c < p->k; c++)
            put(w, " %s", label[c]);
        put(w, "\n");
    }
    if (p->probA) {
        put_list(w, "probA", p->probA, npair);
        put_list(w, "probB", p->probB, npair);
    } else if (svr_prob && svr_prob->count == 1) {
        put_list(w, "probA", svr_prob->values, 1);
    }
    if (p->k) {
        put(w, "nr_sv");
        for (size_t c = 0; c < p->k; c++)
            put(w, " %d", p->n_support[c]);
        put(w, "\n");
    }
    put(w, "SV\n");
    for (size_t s = 0; s < p->nsv; s++) {
        for (size_t j = 0; j < ncoef; j++)
            put(w, "%.17g ", p->coef[s * ncoef + j]);
        if (pre) /* its training row, numbered from 1, as svm_save_model */
            put(w, "0:%.0f ", p->sv[s * d] + 1);
        for (size_t j = 0; j < d && !pre; j++)
            if (p->sv[s * d + j] != 0) /* LIBSVM's sparse rows: zeros left out */
                put(w, "%zu:%.17g ", j + 1, p->sv[s * d + j]);
        put(w, "\n");
    }
}

km_status km_libsvm_write(const km_model *m, char **text, size_t *len,
                          km_error *err)
{
    km_status st = km_libsvm_check_export(m, err);
    if (st != KM_OK)
        return st;
    km_svm_parts p;
    km_svm_parts_of(m, &p);
    size_t d = km_model_n_features(m);
    size_t rank[KM_LIBSVM_MAX_CLASSES];
    const char *label[KM_LIBSVM_MAX_CLASSES];
    km_svm_arrays o;
    memset(&o, 0, sizeof o);
    for (size_t pos = 0; pos < p.k; pos++) {
        /* LIBSVM's class pos is the pos-th of the vote order */
        size_t cls = p.vote ? (size_t)p.vote[pos] : pos;
        label[pos] = km_model_label(m, cls);
        rank[cls] = pos;
    }
    if (p.vote) {
        if ((st = km_libsvm_renumber(&p, d, rank, &o, err)) != KM_OK) {
            km_svm_arrays_free(&o);
            return st;
        }
        km_svm_parts q = {p.k, p.nsv, o.n_support, o.sv_index, o.sv, o.coef,
                          o.rho, o.probA, o.probB, NULL};
        p = q;
    }
    km_writer w;
    km_writer_init(&w);
    write_text(&w, km_model_kernel(m), d, &p, label,
               p.k ? NULL : km_info_find(km_model_training(m), "probA"));
    km_svm_arrays_free(&o);
    km_write_bytes(&w, "", 1); /* a NUL after the text, not counted */
    if (w.failed) {
        km_writer_cleanup(&w);
        return km_error_set(err, KM_ENOMEM, "out of memory writing a LIBSVM "
                            "model");
    }
    *text = (char *)w.buf;
    *len = w.len - 1;
    return KM_OK;
}
