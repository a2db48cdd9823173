/*
 * km_request.c - a fit request as bytes: what the daemon hands the MPI
 * worker (kmserve-mpi) in a staging file, so that the worker runs the
 * same km_fit on the same numbers.
 *
 * Layout (little-endian, the model file's writer and reader): "KMRQ",
 * u32 version (1), u32 algorithm, u32 params bytes then the params struct
 * as is (a private format between a daemon and the worker of the same
 * build: its size is checked against this build's, its values by the
 * algorithm's check when the fit begins), the kernel (as in a model file,
 * checked and resolved as km_kernel_read does), u32 scale, u32 center_y,
 * u64 n, d, m, f64s X (n x d), f64s Y (n x m, absent when m is 0), u32
 * CRC-32 of everything before it. Only algorithms that run distributed
 * (km_algorithm_distributed; their params hold no pointers) can be
 * written.
 *
 * Thread-safety: reentrant.
 */
#include <stdlib.h>
#include <string.h>

#include "../base/km_base_internal.h"
#include "../kernels/km_kernel_internal.h"
#include "km_model_internal.h"

static const unsigned char MAGIC[4] = {'K', 'M', 'R', 'Q'};
#define REQUEST_VERSION 1

/* Only an algorithm that runs distributed (its descriptor's mpi): its
 * params hold no pointers. */
static int storable(km_algorithm a)
{
    return km_algorithm_distributed(a);
}

km_status km_request_save_buffer(km_algorithm a, const km_kernel *k,
                                 const void *params, const km_preprocess *pre,
                                 const km_problem *pb, unsigned char **buf,
                                 size_t *len, km_error *err)
{
    if (!storable(a)) {
        char names[64];
        km_algorithm_distributed_names(" and ", names, sizeof names);
        return km_error_set(err, KM_EINVAL, "a %s fit cannot be handed to "
                            "another process (%s can)",
                            km_algorithm_name(a), names);
    }
    size_t ps = km_algorithm_params_size(a);
    km_preprocess none = {KM_SCALE_NONE, 0};
    if (!pre)
        pre = &none;
    /* Resolved as km_fit_begin resolves it (the file holds gammas > 0). */
    km_kernel kr;
    km_status st = km_kernel_copy(&kr, k, err);
    if (st != KM_OK)
        return st;
    km_kernel_resolve(&kr, pb->d);
    km_writer w;
    km_writer_init(&w);
    km_write_bytes(&w, MAGIC, 4);
    km_write_u32(&w, REQUEST_VERSION);
    km_write_u32(&w, (uint32_t)a);
    km_write_u32(&w, (uint32_t)ps);
    km_write_bytes(&w, params, ps);
    km_kernel_write(&w, &kr);
    km_kernel_cleanup(&kr);
    km_write_u32(&w, (uint32_t)pre->x);
    km_write_u32(&w, (uint32_t)(pre->center_y != 0));
    km_write_u64(&w, pb->n);
    km_write_u64(&w, pb->d);
    km_write_u64(&w, pb->y ? pb->m : 0);
    km_write_f64s(&w, pb->X, pb->n * pb->d);
    if (pb->y && pb->m)
        km_write_f64s(&w, pb->y, pb->n * pb->m);
    km_write_u32(&w, w.failed ? 0 : km_crc32(w.buf, w.len));
    if (w.failed) {
        km_writer_cleanup(&w);
        return km_error_set(err, KM_ENOMEM, "out of memory writing a fit "
                            "request");
    }
    *buf = w.buf;
    *len = w.len;
    return KM_OK;
}

void km_request_cleanup(km_request *r)
{
    km_kernel_cleanup(&r->kernel);
    free(r->X);
    free(r->Y);
    memset(r, 0, sizeof *r);
}

static km_status corrupt(km_request *r, km_error *err, const char *what)
{
    km_request_cleanup(r);
    return km_error_set(err, KM_ECORRUPT, "fit request: %s", what);
}

km_status km_request_load_buffer(const unsigned char *buf, size_t len,
                                 km_request *r, km_error *err)
{
    memset(r, 0, sizeof *r);
    km_kernel_init(&r->kernel, KM_KERNEL_RBF);
    if (len < 16 || memcmp(buf, MAGIC, 4) != 0)
        return corrupt(r, err, "not a fit request (bad magic)");
    km_reader crc = {buf + len - 4, 4, 0};
    if (km_crc32(buf, len - 4) != km_read_u32(&crc))
        return corrupt(r, err, "checksum mismatch");
    km_reader rd = {buf + 4, len - 8, 0};
    if (km_read_u32(&rd) != REQUEST_VERSION)
        return corrupt(r, err, "unknown version");
    uint32_t a = km_read_u32(&rd), ps = km_read_u32(&rd);
    if (rd.failed || a >= KM_ALGO_COUNT || !storable((km_algorithm)a))
        return corrupt(r, err, "algorithm not krr, gpr or kpca");
    r->algo = (km_algorithm)a;
    if (ps != km_algorithm_params_size(r->algo) || ps > sizeof r->params ||
        rd.left < ps)
        return corrupt(r, err, "params of another build");
    memcpy(r->params, rd.p, ps);
    rd.p += ps;
    rd.left -= ps;
    km_kernel_cleanup(&r->kernel);
    km_status st = km_kernel_read(&rd, &r->kernel, 0, err);
    if (st != KM_OK) {
        km_request_cleanup(r);
        return st;
    }
    uint32_t scale = km_read_u32(&rd), center = km_read_u32(&rd);
    uint64_t n = km_read_u64(&rd), d = km_read_u64(&rd), m = km_read_u64(&rd);
    if (rd.failed || scale >= KM_SCALE_COUNT || center > 1)
        return corrupt(r, err, "bad preprocessing");
    r->pre.x = (km_scale)scale;
    r->pre.center_y = (int)center;
    /* Each value takes 8 bytes of what is left: no size beyond the file. */
    if (n < 1 || d < 1 || n > KM_MODEL_MAX_SAMPLES ||
        d > KM_MODEL_MAX_FEATURES || m > KM_MODEL_MAX_OUTPUTS ||
        km_mul_sat(n, km_add_sat(d, m)) > rd.left / 8)
        return corrupt(r, err, "sizes beyond the file");
    r->n = n;
    r->d = d;
    r->m = m;
    r->X = km_read_f64s(&rd, n * d);
    r->Y = m && r->X ? km_read_f64s(&rd, n * m) : NULL;
    if (!r->X || (m && !r->Y)) {
        int short_read = rd.failed;
        km_request_cleanup(r);
        return short_read ? km_error_set(err, KM_ECORRUPT, "fit request: "
                                         "truncated data")
                          : km_error_set(err, KM_ENOMEM, "out of memory "
                                         "reading a fit request");
    }
    if (rd.left != 0)
        return corrupt(r, err, "bytes after the data");
    return KM_OK;
}

km_problem km_request_problem(const km_request *r)
{
    km_problem pb = {r->X, r->n, r->d, r->Y, r->m, NULL, 0};
    return pb;
}

km_status km_kernel_save_buffer(const km_kernel *k, unsigned char **buf,
                                size_t *len, km_error *err)
{
    km_writer w;
    km_writer_init(&w);
    km_kernel_write(&w, k);
    if (w.failed) {
        km_writer_cleanup(&w);
        return km_error_set(err, KM_ENOMEM, "out of memory writing a kernel");
    }
    *buf = w.buf;
    *len = w.len;
    return KM_OK;
}

km_status km_kernel_load_buffer(const unsigned char *buf, size_t len,
                                km_kernel *k, km_error *err)
{
    km_reader rd = {buf, len, 0};
    km_status st = km_kernel_read(&rd, k, 0, err);
    if (st == KM_OK && rd.left != 0)
        st = km_error_set(err, KM_ECORRUPT, "kernel: bytes after its end");
    if (st != KM_OK)
        km_kernel_cleanup(k);
    return st;
}
