/*
 * km_factor.c - an exact fit's Cholesky factor held in row blocks that
 * the versions of a model share (km_algorithms_internal.h).
 *
 * L (n x n, lower) is a list of blocks of consecutive rows: a block holds
 * rows r0 .. r0 + rows - 1, row r0 + i at v + i * ld with its columns
 * 0 .. r0 + i valid (ld >= r0 + rows). A fit's factor is one block (its
 * n x n buffer, ld n). An update by k rows makes a new factor of the old
 * blocks, shared by counted references (a block never changes once made),
 * and one new block of k rows (ld n + k): it copies none of the old
 * factor's n^2 / 2 values, and a model and its update hold them once.
 * Past KM_FACTOR_BLOCKS blocks an update merges them into one, the copy
 * made once in that many updates.
 *
 * Each routine goes block by block. Block t's rows are its left part
 * L_t< (rows x r0: the columns of the blocks above) and its diagonal
 * block L_tt (rows x rows, lower); a solve or product is a level-3 call
 * on each part (level-2 up to KM_FEW_COLUMNS columns). With one block
 * the calls are the dense routines' on the whole factor.
 *
 * Row-major lower triangles go to LAPACK's column-major routines as what
 * they also are, upper triangles.
 *
 * Thread-safety: a factor is read by any number of threads; the counts
 * are atomic, so factors sharing blocks are freed from any thread.
 */
#include <cblas.h>
#include <errno.h>
#include <lapacke.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../base/km_base_internal.h"
#include "km_algorithms_internal.h"

struct km_fblock {
    atomic_size_t refs;
    size_t r0, rows, ld;
    double *v;
    uint64_t id; /* names its block file (random; a loaded block keeps its
                    file's) */
};

/* A block's id: random, never 0. */
static uint64_t new_id(void)
{
    static atomic_uint_fast64_t count;
    uint64_t id = 0;
    if (getrandom(&id, sizeof id, GRND_NONBLOCK) != (ssize_t)sizeof id)
        id = ((uint64_t)time(NULL) * 0x9E3779B97F4A7C15ULL) ^
             ((uint64_t)getpid() << 32) ^ atomic_fetch_add(&count, 1);
    return id ? id : 1;
}

/* A block of v (taken by the caller only on success) named id (0: a new
 * random one). */
static km_fblock *block_new(double *v, size_t r0, size_t rows, size_t ld,
                            uint64_t id)
{
    km_fblock *b = malloc(sizeof *b);
    if (!b)
        return NULL;
    b->id = id ? id : new_id();
    atomic_init(&b->refs, 1);
    b->r0 = r0;
    b->rows = rows;
    b->ld = ld;
    b->v = v;
    return b;
}

static void block_drop(km_fblock *b)
{
    if (b && atomic_fetch_sub(&b->refs, 1) == 1) {
        free(b->v);
        free(b);
    }
}

/* A factor of n rows with room for nb blocks (none set). */
static km_factor *factor_new(size_t n, size_t nb)
{
    km_factor *F = malloc(sizeof *F);
    if (F && !(F->b = calloc(nb, sizeof *F->b))) {
        free(F);
        return NULL;
    }
    if (F) {
        F->n = n;
        F->nb = nb;
    }
    return F;
}

km_factor *km_factor_wrap(double *L, size_t n)
{
    km_factor *F = factor_new(n, 1);
    if (F && !(F->b[0] = block_new(L, 0, n, n, 0))) {
        km_factor_free(F);
        F = NULL;
    }
    if (!F)
        free(L);
    return F;
}

void km_factor_free(km_factor *F)
{
    if (!F)
        return;
    for (size_t t = 0; t < F->nb; t++)
        block_drop(F->b[t]);
    free(F->b);
    free(F);
}

const double *km_factor_row(const km_factor *F, size_t i)
{
    size_t lo = 0, hi = F->nb;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (F->b[mid]->r0 <= i)
            lo = mid;
        else
            hi = mid;
    }
    const km_fblock *b = F->b[lo];
    return b->v + (i - b->r0) * b->ld;
}

/* A block's diagonal block (rows x rows, lower, ld). */
static const double *diag_of(const km_fblock *b)
{
    return b->v + b->r0;
}

void km_factor_solve_rt(const km_factor *F, double scale, double *B,
                        size_t nr, size_t ldb)
{
    for (size_t t = 0; t < F->nb; t++) {
        const km_fblock *b = F->b[t];
        double a = scale;
        if (b->r0 > 0) { /* B_t := scale B_t - X_< L_t<^T */
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)nr,
                        (int)b->rows, (int)b->r0, -1.0, B, (int)ldb, b->v,
                        (int)b->ld, scale, B + b->r0, (int)ldb);
            a = 1.0;
        }
        cblas_dtrsm(CblasRowMajor, CblasRight, CblasLower, CblasTrans,
                    CblasNonUnit, (int)nr, (int)b->rows, a, diag_of(b),
                    (int)b->ld, B + b->r0, (int)ldb);
    }
}

/* C (rows x m, row stride m) := op(T) C, or op(T)^-1 C (solve), T a
 * block's diagonal block (rows x rows, lower, ld); up to KM_FEW_COLUMNS
 * columns by the level-2 routines, column by column. */
static void tri(int solve, CBLAS_TRANSPOSE t, const km_fblock *b, double *C,
                size_t m)
{
    int n = (int)b->rows, ld = (int)b->ld;
    if (m > KM_FEW_COLUMNS) {
        (solve ? cblas_dtrsm : cblas_dtrmm)(CblasRowMajor, CblasLeft,
                                            CblasLower, t, CblasNonUnit, n,
                                            (int)m, 1.0, diag_of(b), ld, C,
                                            (int)m);
        return;
    }
    for (size_t j = 0; j < m; j++)
        (solve ? cblas_dtrsv : cblas_dtrmv)(CblasRowMajor, CblasLower, t,
                                            CblasNonUnit, n, diag_of(b), ld,
                                            C + j, (int)m);
}

/* C (r x m) += alpha op(A) B: A r x c (t no) or c x r (t yes), row
 * stride ld; B c x m; both of stride m; level 2 as tri. */
static void gem(CBLAS_TRANSPOSE t, size_t r, size_t c, double alpha,
                const double *A, size_t ld, const double *B, double *C,
                size_t m)
{
    int ar = (int)(t == CblasNoTrans ? r : c), ac = (int)(t == CblasNoTrans
                                                             ? c : r);
    if (m > KM_FEW_COLUMNS) {
        cblas_dgemm(CblasRowMajor, t, CblasNoTrans, (int)r, (int)m, (int)c,
                    alpha, A, (int)ld, B, (int)m, 1.0, C, (int)m);
        return;
    }
    for (size_t j = 0; j < m; j++)
        cblas_dgemv(CblasRowMajor, t, ar, ac, alpha, A, (int)ld, B + j,
                    (int)m, 1.0, C + j, (int)m);
}

void km_factor_lt(const km_factor *F, double *C, size_t m)
{
    for (size_t s = 0; s < F->nb; s++) {
        const km_fblock *b = F->b[s];
        double *Cs = C + b->r0 * m;
        tri(0, CblasTrans, b, Cs, m);
        /* + L_ts^T C_t for the blocks below (their C_t not yet changed) */
        for (size_t t = s + 1; t < F->nb; t++) {
            const km_fblock *c = F->b[t];
            gem(CblasTrans, b->rows, c->rows, 1.0, c->v + b->r0, c->ld,
                C + c->r0 * m, Cs, m);
        }
    }
}

void km_factor_forward(const km_factor *F, size_t from, double *Z, size_t m)
{
    for (size_t t = 0; t < F->nb; t++) {
        const km_fblock *b = F->b[t];
        if (b->r0 < from)
            continue;
        double *Zt = Z + b->r0 * m;
        if (b->r0 > 0) /* Z_t -= L_t< Z_< */
            gem(CblasNoTrans, b->rows, b->r0, -1.0, b->v, b->ld, Z, Zt, m);
        tri(1, CblasNoTrans, b, Zt, m);
    }
}

void km_factor_back(const km_factor *F, double *C, size_t m)
{
    for (size_t t = F->nb; t-- > 0;) {
        const km_fblock *b = F->b[t];
        double *Ct = C + b->r0 * m;
        tri(1, CblasTrans, b, Ct, m);
        if (b->r0 > 0) /* C_< -= L_t<^T X_t */
            gem(CblasTrans, b->r0, b->rows, -1.0, b->v, b->ld, Ct, C, m);
    }
}

uint64_t km_factor_grow_values(const km_factor *F, size_t k)
{
    uint64_t N = km_add_sat(F->n, k);
    return F->nb + 1 > KM_FACTOR_BLOCKS ? km_mul_sat(N, N) : km_mul_sat(k, N);
}

/* The factor's rows in one new block (ld n); NULL when out of memory. */
static km_fblock *merged(const km_factor *F)
{
    size_t n = F->n;
    double *v = malloc(km_mul3(n, n, sizeof *v));
    for (size_t t = 0; v && t < F->nb; t++) {
        const km_fblock *b = F->b[t];
        for (size_t i = 0; i < b->rows; i++)
            memcpy(v + (b->r0 + i) * n, b->v + i * b->ld,
                   (b->r0 + i + 1) * sizeof *v);
    }
    km_fblock *b = v ? block_new(v, 0, n, n, 0) : NULL;
    if (!b)
        free(v);
    return b;
}

km_status km_factor_grow(const km_factor *F, double *A, size_t k,
                         km_factor **out, km_error *err)
{
    size_t n = F->n, N = n + k;
    if (n > 0) {
        km_factor_solve_rt(F, 1.0, A, k, N);
        cblas_dsyrk(CblasRowMajor, CblasLower, CblasNoTrans, (int)k, (int)n,
                    -1.0, A, (int)N, 1.0, A + n, (int)N);
    }
    lapack_int info = LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'U', (lapack_int)k,
                                     A + n, (lapack_int)N);
    if (info != 0) {
        free(A);
        if (info > 0)
            return km_error_set(err, KM_ENOTPD, "the kernel matrix with the "
                                "new rows is not positive definite "
                                "(Cholesky failed at new row %zu: a row "
                                "repeated with a tiny ridge?); refit with a "
                                "larger ridge", (size_t)info - 1);
        return km_error_set(err, info == -4 ? KM_EPROBLEM : KM_EINTERNAL,
                            "dpotrf: %d", (int)info);
    }
    int merge = F->nb + 1 > KM_FACTOR_BLOCKS;
    km_fblock *nb = block_new(A, n, k, N, 0);
    km_factor *G = nb ? factor_new(N, merge ? 2 : F->nb + 1) : NULL;
    if (G && merge)
        G->b[0] = merged(F);
    if (!G || (merge && !G->b[0])) {
        if (nb)
            block_drop(nb);
        else
            free(A);
        km_factor_free(G);
        return km_error_set(err, KM_ENOMEM, "out of memory for an update");
    }
    for (size_t t = 0; !merge && t < F->nb; t++) {
        atomic_fetch_add(&F->b[t]->refs, 1);
        G->b[t] = F->b[t];
    }
    G->b[G->nb - 1] = nb;
    *out = G;
    return KM_OK;
}

km_status km_factor_check(const km_factor *F, const char *what,
                          km_error *err)
{
    for (size_t i = 0; i < F->n; i++) {
        const double *row = km_factor_row(F, i);
        if (!km_all_finite(row, i + 1))
            return km_error_set(err, KM_ECORRUPT, "model file: %s holds a "
                                "value that is not a finite number (row "
                                "%zu)", what, i);
        if (!(row[i] > 0))
            return km_error_set(err, KM_ECORRUPT, "model file: %s[%zu][%zu] "
                                "is not > 0", what, i, i);
    }
    return KM_OK;
}

uint64_t km_factor_bytes(const km_factor *F)
{
    return km_mul_sat(km_tri_values(F->n), sizeof(double));
}

void km_factor_refs_range(uint64_t n, uint64_t *lo, uint64_t *hi)
{
    *hi = km_add_sat(*lo, km_add_sat(4, km_mul_sat(28, n ? n : 1)));
    *hi = km_add_sat(*hi, km_mul_sat(km_tri_values(n), 8)); /* rows in it */
    *lo = km_add_sat(*lo, 4 + 28);
}

/* ------------------------------------------------------------ block files
 *
 * A block file: "KMFB", u32 1, u64 id, u64 first row, u64 rows, then the
 * rows, row r0 + i's r0 + i + 1 values, then the CRC-32 of every byte
 * before it (docs/model-format.md "Factor blocks"). */

#define BLOCK_MAGIC "KMFB"
#define BLOCK_HEAD 32

/* The values of rows r0 .. r0 + rows - 1 of a lower triangle. */
static uint64_t block_values(uint64_t r0, uint64_t rows)
{
    return km_add_sat(km_mul_sat(rows, r0), km_tri_values(rows));
}

/* Block b's rows, row r0 + i's first r0 + i + 1 values. */
static void write_rows(km_writer *w, const km_fblock *b)
{
    km_tri_rows_write(w, b->v, b->ld, b->r0, b->rows);
}

static int write_block(void *wctx, km_sink_fn sink, void *sink_ctx)
{
    const km_fblock *b = wctx;
    km_writer w;
    if (km_writer_init_sink(&w, sink, sink_ctx) != 0) {
        km_writer_cleanup(&w);
        return -1;
    }
    km_write_bytes(&w, BLOCK_MAGIC, 4);
    km_write_u32(&w, 1);
    km_write_u64(&w, b->id);
    km_write_u64(&w, b->r0);
    km_write_u64(&w, b->rows);
    write_rows(&w, b);
    return km_writer_finish_sink(&w);
}

/* Block b's rows from the model file itself. */
static km_status read_rows(km_reader *r, km_fblock *b, km_error *err)
{
    km_tri_rows_read(r, b->v, b->ld, b->r0, b->rows);
    return r->failed ? km_error_set(err, KM_ECORRUPT, "model file: the "
                                    "factor's rows %zu to %zu are cut short",
                                    b->r0, b->r0 + b->rows - 1)
                     : KM_OK;
}

/* n bytes at p from fd; 0, or -1 (errno set; EIO for an early end). */
static int read_full(int fd, void *p, size_t n)
{
    unsigned char *c = p;
    while (n > 0) {
        ssize_t got = read(fd, c, n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0) {
            if (got == 0)
                errno = EIO;
            return -1;
        }
        c += got;
        n -= (size_t)got;
    }
    return 0;
}

/* The block file of id (rows r0 .. r0 + rows - 1) opened, and checked to
 * be a regular file of its size before anything is allocated for it: a
 * descriptor, or -1 with err set. */
static int open_block(const km_blocks *bs, uint64_t version, uint64_t id,
                      uint64_t r0, uint64_t rows, km_error *err)
{
    int fd = bs->open(bs->ctx, version, id);
    if (fd < 0) {
        km_error_set(err, KM_ECORRUPT, "model file: factor block %016llx "
                     "cannot be opened: %s", (unsigned long long)id,
                     strerror(errno));
        return -1;
    }
    struct stat st;
    uint64_t want = km_add_sat(BLOCK_HEAD + 4,
                               km_mul_sat(block_values(r0, rows), 8));
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
        (uint64_t)st.st_size != want) {
        km_error_set(err, KM_ECORRUPT, "model file: factor block %016llx "
                     "is not a regular file of %llu bytes",
                     (unsigned long long)id, (unsigned long long)want);
        close(fd);
        return -1;
    }
    return fd;
}

/* Block b's rows (b->v allocated, b->id its list's) from its file, open
 * and of the right size (open_block); fd is closed. */
static km_status read_block(int fd, km_fblock *b, km_error *err)
{
    unsigned long long id = (unsigned long long)b->id;
    unsigned char head[BLOCK_HEAD], tail[4];
    km_status rc = KM_OK;
    if (read_full(fd, head, sizeof head) != 0)
        goto io;
    km_reader h = {head + 4, sizeof head - 4, 0}; /* past the magic */
    uint32_t fv = km_read_u32(&h);
    uint64_t fid = km_read_u64(&h), r0 = km_read_u64(&h), rows = km_read_u64(&h);
    if (memcmp(head, BLOCK_MAGIC, 4) || fv != 1 || fid != b->id ||
        r0 != b->r0 || rows != b->rows) {
        rc = km_error_set(err, KM_ECORRUPT, "model file: factor block "
                          "%016llx's header does not match the model file's "
                          "list (rows %zu to %zu)", id, b->r0,
                          b->r0 + b->rows - 1);
        goto out;
    }
    uint32_t crc = km_crc32_update(0, head, sizeof head);
    for (size_t i = 0; i < b->rows; i++) {
        double *row = b->v + i * b->ld;
        size_t bytes = (b->r0 + i + 1) * sizeof *row;
        if (read_full(fd, row, bytes) != 0)
            goto io;
        crc = km_crc32_update(crc, (const unsigned char *)row, bytes);
#if !(defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__)
        for (size_t j = 0; j <= b->r0 + i; j++) {
            km_reader v = {(const unsigned char *)(row + j), 8, 0};
            row[j] = km_read_f64(&v);
        }
#endif
    }
    if (read_full(fd, tail, sizeof tail) != 0)
        goto io;
    km_reader t = {tail, 4, 0};
    if (km_read_u32(&t) != crc)
        rc = km_error_set(err, KM_ECORRUPT, "model file: factor block "
                          "%016llx fails its checksum", id);
    goto out;
io:
    rc = km_error_set(err, KM_ECORRUPT, "model file: factor block %016llx "
                      "cannot be read: %s", id, strerror(errno));
out:
    close(fd);
    return rc;
}

/* The block list (u32 count, then id, first row, rows and where each:
 * 0 its rows follow, 1 in its block file) and the blocks' rows. */
static km_factor *read_refs(km_reader *r, size_t n, km_error *err)
{
    uint32_t nb = km_read_u32(r);
    if (r->failed || nb == 0 || nb > n) {
        r->failed = 1;
        km_error_set(err, KM_ECORRUPT, "model file: the factor's block list "
                     "has %u blocks for %zu rows", (unsigned)nb, n);
        return NULL;
    }
    km_factor *F = factor_new(n, nb);
    if (!F) {
        km_error_set(err, KM_ENOMEM, "out of memory reading a model");
        return NULL;
    }
    size_t next = 0;
    km_status st = KM_OK;
    for (uint32_t t = 0; st == KM_OK && t < nb; t++) {
        uint64_t id = km_read_u64(r), r0 = km_read_u64(r),
                 rows = km_read_u64(r);
        uint32_t where = km_read_u32(r);
        if (!r->failed && where == 1 && !r->blocks) {
            st = km_error_set(err, KM_ECORRUPT, "model file: its factor is "
                              "in block files (format 12), which only the "
                              "store that wrote them reads");
            break;
        }
        if (r->failed || r0 != next || rows == 0 || rows > n - next ||
            where > 1) {
            st = km_error_set(err, KM_ECORRUPT, "model file: the factor's "
                              "block %u does not continue its list (rows "
                              "%llu + %llu after %zu of %zu)", (unsigned)t,
                              (unsigned long long)r0,
                              (unsigned long long)rows, next, n);
            break;
        }
        /* the rows' bytes are there before they are allocated */
        int fd = -1;
        if (where) {
            if ((fd = open_block(r->blocks, r->version, id, r0, rows,
                                 err)) < 0) {
                st = KM_ECORRUPT; /* err says why */
                break;
            }
        } else if (km_mul_sat(block_values(r0, rows), 8) > r->left) {
            st = km_error_set(err, KM_ECORRUPT, "model file: the factor's "
                              "rows %llu to %llu are cut short",
                              (unsigned long long)r0,
                              (unsigned long long)(r0 + rows - 1));
            break;
        }
        size_t ld = (size_t)(r0 + rows);
        double *v = calloc(km_mul3((size_t)rows, ld, 1), sizeof *v);
        if (!v ||
            !(F->b[t] = block_new(v, (size_t)r0, (size_t)rows, ld, id))) {
            free(v);
            if (fd >= 0)
                close(fd);
            st = km_error_set(err, KM_ENOMEM, "out of memory reading a "
                              "model");
            break;
        }
        next += (size_t)rows;
        st = where ? read_block(fd, F->b[t], err)
                   : read_rows(r, F->b[t], err);
    }
    if (st == KM_OK && next != n)
        st = km_error_set(err, KM_ECORRUPT, "model file: the factor's blocks "
                          "hold %zu of its %zu rows", next, n);
    if (st != KM_OK) {
        r->failed |= st == KM_ECORRUPT;
        km_factor_free(F);
        return NULL;
    }
    return F;
}

void km_factor_write(km_writer *w, const km_factor *F)
{
    if (w->format >= KM_FORMAT_BLOCKS) {
        km_write_u32(w, (uint32_t)F->nb);
        for (size_t t = 0; t < F->nb; t++) {
            km_fblock *b = F->b[t];
            km_write_u64(w, b->id);
            km_write_u64(w, b->r0);
            km_write_u64(w, b->rows);
            km_write_u32(w, w->blocks != NULL);
            if (!w->blocks)
                write_rows(w, b);
            else if (!w->failed &&
                     w->blocks->put(w->blocks->ctx, b->id, write_block, b))
                w->failed = 1;
        }
        return;
    }
    km_write_u64(w, km_tri_values(F->n)); /* the triangle: the blocks' rows */
    for (size_t t = 0; t < F->nb; t++)
        write_rows(w, F->b[t]);
}

km_factor *km_factor_read(km_reader *r, size_t n, int blocks, km_error *err)
{
    if (blocks)
        return read_refs(r, n, err);
    double *L = km_tri_read(r, n);
    km_factor *F = L ? km_factor_wrap(L, n) : NULL;
    if (!F)
        km_error_set(err, r->failed ? KM_ECORRUPT : KM_ENOMEM, r->failed
                     ? "model file: the factor's triangle has not "
                       "n (n + 1) / 2 values"
                     : "out of memory reading a model");
    return F;
}
