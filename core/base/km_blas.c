/*
 * km_blas.c - which of OpenBLAS's kernel sets runs, and which one this
 * CPU could run; OpenBLAS's thread count while work runs on several
 * workers, and the runner of such work in blocks of rows (km_blocks_run).
 *
 * OpenBLAS (built with DYNAMIC_ARCH, as Debian's is) picks its kernels when
 * it loads, from the CPU's vendor, family and model numbers. A model it
 * does not know gets its generic SSE3 set ("Prescott"): Debian 12's 0.3.21
 * does that on the Intel Xeon of family 6, model 207, where its AVX-512
 * set ("SkylakeX") runs DGEMM and DPOTRF about five times faster. The set
 * can only be chosen before the library loads, by OPENBLAS_CORETYPE in the
 * environment; server/kmserve.c re-executes itself with it when
 * km_blas_core_advice says so.
 *
 * The advice compares vector instruction sets, not models: a set that uses
 * fewer of them than the CPU has is upgraded to the set OpenBLAS names for
 * that level. A set this table does not know is left alone.
 *
 * Thread-safety: reentrant.
 */
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <strings.h>
#include <unistd.h>

#include "km_base_internal.h"

/* OpenBLAS's own query (cblas.h in some versions only). */
char *openblas_get_corename(void);

enum isa { ISA_SSE, ISA_AVX, ISA_AVX2, ISA_AVX512 };

/* OpenBLAS 0.3.21's x86-64 kernel sets and the widest vectors each uses;
 * the first of a level is the one asked for at that level. */
static const struct {
    const char *name;
    enum isa isa;
} cores[] = {
    {"SkylakeX", ISA_AVX512},   {"Cooperlake", ISA_AVX512},
    {"SapphireRapids", ISA_AVX512},
    {"Haswell", ISA_AVX2},      {"Zen", ISA_AVX2},
    {"Excavator", ISA_AVX2},
    {"Sandybridge", ISA_AVX},   {"Bulldozer", ISA_AVX},
    {"Piledriver", ISA_AVX},    {"Steamroller", ISA_AVX},
    {"Prescott", ISA_SSE},      {"Core2", ISA_SSE},
    {"Penryn", ISA_SSE},        {"Dunnington", ISA_SSE},
    {"Nehalem", ISA_SSE},       {"Atom", ISA_SSE},
    {"Opteron", ISA_SSE},       {"Opteron_SSE3", ISA_SSE},
    {"Barcelona", ISA_SSE},     {"Nano", ISA_SSE},
    {"Bobcat", ISA_SSE},
};
#define N_CORES (sizeof cores / sizeof cores[0])

/* The widest level this CPU and its operating system run (the compiler's
 * check includes the OS's saving of the wider registers). */
static enum isa cpu_isa(void)
{
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") &&
        __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("avx512cd"))
        return ISA_AVX512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return ISA_AVX2;
    if (__builtin_cpu_supports("avx"))
        return ISA_AVX;
    return ISA_SSE;
}

const char *km_blas_core(void)
{
    const char *name = openblas_get_corename();
    return name ? name : "unknown";
}

const char *km_blas_core_advice(void)
{
    const char *now = km_blas_core();
    size_t i = 0;
    while (i < N_CORES && strcasecmp(cores[i].name, now) != 0)
        i++;
    if (i == N_CORES)
        return NULL;
    enum isa want = cpu_isa();
    if (cores[i].isa >= want)
        return NULL;
    for (size_t j = 0; j < N_CORES; j++)
        if (cores[j].isa == want)
            return cores[j].name;
    return NULL;
}

/* OpenBLAS's process-wide thread count (declared here: Debian's cblas.h
 * may lack these). */
void openblas_set_num_threads(int n);
int openblas_get_num_threads(void);

/*
 * While work runs on several workers (svc's class pairs, a prediction's
 * blocks of rows: km_blocks_run), BLAS runs one thread per call.
 * OpenBLAS runs one threaded level-3 call at a time (a process-wide
 * lock) and its idle threads spin: two workers each calling 2-thread
 * DGEMMs queue for each other and lose the cores to the spinning, while
 * 1-thread DGEMMs run side by side. Measured on Fashion-MNIST (2 cores,
 * 2 workers, back to back): the fit took 22.2 to 23.2 s with 2-thread
 * calls, 19.2 to 19.3 s with 1-thread calls. The count is the
 * process's: the first of overlapping users sets it to 1 and the last
 * puts back what it was; other BLAS calls meanwhile run on one thread
 * too.
 */
static pthread_mutex_t blas_lock = PTHREAD_MUTEX_INITIALIZER;
static int blas_users, blas_saved;

void km_blas_single_begin(void)
{
    pthread_mutex_lock(&blas_lock);
    if (blas_users++ == 0) {
        blas_saved = openblas_get_num_threads();
        openblas_set_num_threads(1);
    }
    pthread_mutex_unlock(&blas_lock);
}

void km_blas_single_end(void)
{
    pthread_mutex_lock(&blas_lock);
    if (--blas_users == 0)
        openblas_set_num_threads(blas_saved);
    pthread_mutex_unlock(&blas_lock);
}

/* ------------------------------------------------------------ blocks */

/* Most workers of km_blocks_run. */
#define BLOCKS_MAX_WORKERS 16

typedef struct blocks {
    size_t n, rows, scratch_bytes;
    km_block_fn fn;
    void *ctx;
    pthread_mutex_t lock; /* next, st, err */
    size_t next;
    km_status st;
    km_error err;
} blocks;

/* A worker: blocks in order until there are none or one has failed. */
static void *blocks_work(void *arg)
{
    blocks *q = arg;
    km_error e = {0};
    km_status st = KM_OK;
    void *scratch = q->scratch_bytes ? malloc(q->scratch_bytes) : NULL;
    if (q->scratch_bytes && !scratch)
        st = km_error_set(&e, KM_ENOMEM, "out of memory for a worker's "
                          "buffers");
    while (st == KM_OK) {
        pthread_mutex_lock(&q->lock);
        size_t i0 = q->st == KM_OK ? q->next : q->n;
        q->next = i0 < q->n ? i0 + q->rows : i0;
        pthread_mutex_unlock(&q->lock);
        if (i0 >= q->n)
            break;
        size_t nb = q->n - i0 < q->rows ? q->n - i0 : q->rows;
        st = q->fn(q->ctx, i0, nb, scratch, &e);
    }
    if (st != KM_OK) {
        pthread_mutex_lock(&q->lock);
        if (q->st == KM_OK) {
            q->st = st;
            q->err = e;
        }
        pthread_mutex_unlock(&q->lock);
    }
    free(scratch);
    return NULL;
}

size_t km_cpus(void)
{
    long c = sysconf(_SC_NPROCESSORS_ONLN);
    return c < 1 ? 1 : (size_t)c;
}

km_status km_blocks_run(size_t n, size_t rows, size_t nw,
                        size_t scratch_bytes, km_block_fn fn, void *ctx,
                        km_error *err)
{
    blocks q = {n, rows ? rows : 1, scratch_bytes, fn, ctx};
    pthread_t tid[BLOCKS_MAX_WORKERS];
    size_t most = (n + q.rows - 1) / q.rows, started = 1;
    nw = nw < most ? nw : most;
    nw = nw < BLOCKS_MAX_WORKERS ? nw : BLOCKS_MAX_WORKERS;
    pthread_mutex_init(&q.lock, NULL);
    if (nw > 1)
        km_blas_single_begin();
    for (; started < nw; started++)
        if (pthread_create(&tid[started], NULL, blocks_work, &q))
            break; /* fewer workers */
    blocks_work(&q);
    for (size_t w = 1; w < started; w++)
        pthread_join(tid[w], NULL);
    if (nw > 1)
        km_blas_single_end();
    pthread_mutex_destroy(&q.lock);
    if (q.st != KM_OK)
        return km_error_set(err, q.st, "%s", q.err.message);
    return KM_OK;
}
