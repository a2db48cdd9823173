/*
 * kmserve_mpi.c - kmserve-mpi, the distributed exact fit: started by
 * mpirun (or srun) from the daemon's --mpi-launch, it fits one request on
 * ScaLAPACK over MPI and writes the model for the daemon to commit.
 *
 *   kmserve-mpi --request R --output O --status S --error E
 *               [--block NB] [--memory-budget-mb MB] [--blas-threads T]
 *               [--heartbeat PREFIX [--heartbeat-interval SECONDS]]
 *
 * BLAS threads per rank: T, or OpenBLAS's default (OPENBLAS_NUM_THREADS,
 * else every core) when 0 or absent; one rank per node wants the node's
 * cores, several ranks per node one each.
 *
 * Rank 0 reads the staging file R (km_request_load_buffer: checksum,
 * sizes, kernel) and runs core's own km_fit on it, with a dense engine
 * (km_fit_control.dense) that hands every exact solve to all ranks: the
 * kernel, X and Y are broadcast, each rank fills its block-cyclic tiles of
 * the lower triangle of scale k(X, X) + shift I with core's km_gram_block
 * (the kernel table's maps: no second kernel code), then PDPOTRF and
 * PDPOTRS on a near-square process grid; the solution (and for gpr the
 * factor L, panel by panel) is summed onto rank 0. So preprocessing,
 * figures and the payload are core's, as in a single-process fit. Rank 0
 * writes the model with km_model_save_buffer to O through a temporary
 * file, fsync and rename; progress as "fraction phase" to S (rewritten by
 * rename); a failure as "status message" (km_status number, then core's
 * message) to E, and exit status 1. Before any allocation every rank
 * checks its share (NUMROC's local sizes) against the per-rank budget.
 * Krr (exact solver) and gpr (optimizer none); anything else is refused.
 *
 * Liveness, for the daemon's deadlines (docs/distributed.md): with
 * --heartbeat, a thread of each rank rewrites the rank's record
 * PREFIX<rank> (cmn_beat.h: rank, pid, a counter, the phase) every
 * interval (1 s unless given) and at once at each phase change: a
 * thread, so that a rank inside one long ScaLAPACK call still beats. It
 * starts in main() when the launcher gives the rank in the environment
 * (OMPI_COMM_WORLD_RANK, PMIX_RANK, PMI_RANK, SLURM_PROCID), in phase
 * mpi-init, else when MPI_Init returns; the last record, after
 * MPI_Finalize, says exit:CODE. A rank whose request file R is gone (the
 * daemon ended the job) removes its record and exits 3. Test hook: with KMSERVE_MPI_TEST_HOLD=FILE
 * in the environment a rank waits at the phase FILE names (set_phase).
 *
 * Thread-safety: the rank's work on one thread; the heartbeat's thread
 * calls no MPI and shares only the record, under its lock.
 */
#include <cblas.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "km.h"
#include "../common/cmn_beat.h"
#include "../common/cmn_file.h"

#ifdef __SANITIZE_ADDRESS__
/* LeakSanitizer asks the program for suppressions: what OpenMPI allocates
 * in MPI_Init and keeps to the end (its components, loaded with dlopen)
 * is OpenMPI's, not a leak of this program's; the sanitizer builds of
 * make test SANITIZE=1 would abort every rank at exit otherwise. The
 * suppressions match frames deep in a leak's stack, which the fast
 * unwinder loses in OpenMPI's components (no frame pointers): the full
 * unwinder, for this program only. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
    return "fast_unwind_on_malloc=0";
}

const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
    return "leak:PMPI_Init\nleak:ompi_mpi_init\nleak:orte_init\n"
           "leak:libmpi.so\nleak:libopen-pal.so\nleak:libopen-rte.so\n"
           "leak:libpmix.so\nleak:libhwloc.so\nleak:libevent\n";
}
#endif

/* BLACS and ScaLAPACK (Fortran symbols; character arguments carry their
 * hidden lengths last, as gfortran passes them). */
void Cblacs_get(int ctxt, int what, int *val);
void Cblacs_gridinit(int *ctxt, const char *order, int nprow, int npcol);
void Cblacs_gridinfo(int ctxt, int *nprow, int *npcol, int *myrow,
                     int *mycol);
void Cblacs_gridexit(int ctxt);
int numroc_(const int *n, const int *nb, const int *iproc,
            const int *isrcproc, const int *nprocs);
void descinit_(int *desc, const int *m, const int *n, const int *mb,
               const int *nb, const int *irsrc, const int *icsrc,
               const int *ictxt, const int *lld, int *info);
void pdpotrf_(const char *uplo, const int *n, double *a, const int *ia,
              const int *ja, const int *desca, int *info, size_t uplo_len);
void pdpotrs_(const char *uplo, const int *n, const int *nrhs,
              const double *a, const int *ia, const int *ja,
              const int *desca, double *b, const int *ib, const int *jb,
              const int *descb, int *info, size_t uplo_len);
void pdsyevr_(const char *jobz, const char *range, const char *uplo,
              const int *n, double *a, const int *ia, const int *ja,
              const int *desca, const double *vl, const double *vu,
              const int *il, const int *iu, int *m, int *nz, double *w,
              double *z, const int *iz, const int *jz, const int *descz,
              double *work, const int *lwork, int *iwork, const int *liwork,
              int *info, size_t jobz_len, size_t range_len, size_t uplo_len);

/* The default block size: the fastest of 64, 128 and 256 for PDPOTRF at
 * n = 8000 on 2 ranks here: 8.6 s against 9.3 s (128) and 9.6 s (64);
 * bench/RESULTS.md, "kmserve-mpi". */
#define DEFAULT_BLOCK 256
/* Longest hold of the test hook (set_phase), in seconds. */
#define HOLD_MAX_S 600
/* Values per broadcast (MPI counts are int). */
#define BCAST_CHUNK ((size_t)1 << 26)

enum { CMD_DONE = 0, CMD_SOLVE = 1, CMD_EIGEN = 2 };

/* The heartbeat: a thread that rewrites this rank's liveness record
 * (cmn_beat.h) every interval, and at once when the phase, the state or
 * the rank changes. Off (no thread) without --heartbeat. */
typedef struct heart {
    pthread_mutex_t lock;
    pthread_cond_t wake; /* on CLOCK_MONOTONIC */
    pthread_t thread;
    int running, stop, dirty;
    double interval;         /* seconds */
    const char *prefix;      /* record of rank R: PREFIX<R>; NULL: off */
    const char *request;     /* the staging file: gone, the job is over */
    char path[PATH_MAX];
    cmn_beat rec;            /* guarded by lock */
} heart;

typedef struct worker {
    int rank, size, ctxt, nprow, npcol, myrow, mycol, nb;
    size_t budget; /* bytes per rank; 0: unchecked */
    const char *status_path, *output_path;
    const char *phase;
    const char *hold;  /* KMSERVE_MPI_TEST_HOLD's file, or NULL */
    heart hb;
} worker;

/* ------------------------------------------------------------ files */

/* Writes len bytes to path through path.tmp, fsync and rename. */
static int write_atomic(const char *path, const void *buf, size_t len)
{
    char tmp[PATH_MAX];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp)
        return -1;
    int ok = cmn_file_write(tmp, buf, len, 0, 0644) == 0;
    if (!ok || rename(tmp, path) != 0) {
        unlink(tmp);
        return -1;
    }
    return 0;
}

static int report(void *ctx, double fraction)
{
    worker *w = ctx;
    char line[96];
    int len = snprintf(line, sizeof line, "%.4f %s\n", fraction, w->phase);
    write_atomic(w->status_path, line, (size_t)len);
    return 0; /* cancel: the daemon ends the process group */
}

/* ------------------------------------------------------------ heartbeat */

static int heart_path(heart *h, int rank)
{
    h->rec.rank = rank;
    return snprintf(h->path, sizeof h->path, "%s%d", h->prefix, rank) <
                   (int)sizeof h->path
               ? 0
               : -1;
}

static void *heart_main(void *arg)
{
    heart *h = arg;
    pthread_mutex_lock(&h->lock);
    while (!h->stop) {
        h->rec.beat++;
        cmn_beat_write(h->path, &h->rec); /* a miss shows as silence */
        /* The daemon removes the request first and the records last when
         * it ends a job, so a record written after that is removed here:
         * a rank the launcher did not end (on another host, say) ends
         * itself within a beat, and leaves no file. */
        if (h->request && access(h->request, F_OK) != 0 && errno == ENOENT) {
            unlink(h->path);
            fprintf(stderr, "kmserve-mpi: rank %d: the job's staging file "
                    "is gone (the daemon ended the job); exiting\n",
                    h->rec.rank);
            _exit(3);
        }
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        double t = (double)until.tv_sec + until.tv_nsec / 1e9 + h->interval;
        until.tv_sec = (time_t)t;
        until.tv_nsec = (long)((t - (double)until.tv_sec) * 1e9);
        while (!h->stop && !h->dirty &&
               pthread_cond_timedwait(&h->wake, &h->lock, &until) == 0)
            ;
        h->dirty = 0;
    }
    pthread_mutex_unlock(&h->lock);
    return NULL;
}

/* The rank, and a rank's record from then on: starts the thread the first
 * time (rank -1: not yet known, nothing), moves the record when the rank
 * changes. */
static void heart_rank(heart *h, int rank)
{
    if (!h->prefix || rank < 0)
        return;
    pthread_mutex_lock(&h->lock);
    if (h->running && rank != h->rec.rank) {
        unlink(h->path);
        if (heart_path(h, rank) == 0)
            h->dirty = 1;
        pthread_cond_signal(&h->wake);
    }
    pthread_mutex_unlock(&h->lock);
    if (h->running || heart_path(h, rank) != 0)
        return;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&h->wake, &ca);
    pthread_condattr_destroy(&ca);
    h->running = pthread_create(&h->thread, NULL, heart_main, h) == 0;
    if (!h->running)
        fprintf(stderr, "kmserve-mpi: rank %d: no heartbeat thread\n", rank);
}

/* A new phase or state for the record, written at once. */
static void heart_set(heart *h, const char *phase, const char *state)
{
    pthread_mutex_lock(&h->lock);
    snprintf(h->rec.phase, sizeof h->rec.phase, "%s", phase);
    snprintf(h->rec.state, sizeof h->rec.state, "%s", state);
    h->dirty = 1;
    if (h->running)
        pthread_cond_signal(&h->wake);
    pthread_mutex_unlock(&h->lock);
}

/* Stops the thread and writes the last record, "exit:CODE". */
static void heart_stop(heart *h, int code)
{
    if (!h->running)
        return;
    pthread_mutex_lock(&h->lock);
    h->stop = 1;
    pthread_cond_signal(&h->wake);
    pthread_mutex_unlock(&h->lock);
    pthread_join(h->thread, NULL);
    pthread_cond_destroy(&h->wake);
    h->running = 0;
    snprintf(h->rec.state, sizeof h->rec.state, "exit:%d", code);
    h->rec.beat++;
    cmn_beat_write(h->path, &h->rec);
}

/* The rank that the launcher gives in the environment, before MPI_Init
 * (OpenMPI, PMIx, MPICH's PMI, Slurm); -1 when none does. */
static int env_rank(void)
{
    const char *vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK",
                          "SLURM_PROCID"};
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) {
        const char *v = getenv(vars[i]);
        char *end;
        long r = v && *v ? strtol(v, &end, 10) : -1;
        if (v && *v && !*end && r >= 0 && r < INT_MAX)
            return (int)r;
    }
    return -1;
}

/* 1 while the test hook's file names phase as its first word. */
static int held(const worker *w, const char *phase)
{
    size_t len = 0;
    unsigned char *s = w->hold ? cmn_file_read(w->hold, 256, &len) : NULL;
    int yes = 0;
    if (s) {
        s[strcspn((char *)s, " \t\n")] = 0;
        yes = strcmp((char *)s, phase) == 0;
        free(s);
    }
    return yes;
}

/*
 * Enters a phase: its name for the status file and the record. The test
 * hook (docs/distributed.md): with KMSERVE_MPI_TEST_HOLD=FILE in the
 * environment, a rank entering the phase that FILE names waits there,
 * its record in state "held" (the heartbeat goes on), until FILE names
 * another phase or is gone; at most HOLD_MAX_S, so that a test that died
 * does not hold a fit forever.
 */
static void set_phase(worker *w, const char *phase)
{
    w->phase = phase;
    heart_set(&w->hb, phase, "run");
    if (!held(w, phase))
        return;
    heart_set(&w->hb, phase, "held");
    for (int t = 0; t < HOLD_MAX_S * 50 && held(w, phase); t++)
        nanosleep(&(struct timespec){0, 20000000}, NULL);
    heart_set(&w->hb, phase, "run");
}

/* ------------------------------------------------------------ broadcast */

static void bcast_doubles(double *v, size_t n)
{
    for (size_t i = 0; i < n; i += BCAST_CHUNK) {
        size_t c = n - i < BCAST_CHUNK ? n - i : BCAST_CHUNK;
        MPI_Bcast(v + i, (int)c, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    }
}

static void reduce_doubles(double *v, size_t n, int rank)
{
    for (size_t i = 0; i < n; i += BCAST_CHUNK) {
        size_t c = n - i < BCAST_CHUNK ? n - i : BCAST_CHUNK;
        MPI_Reduce(rank ? v + i : MPI_IN_PLACE, v + i, (int)c, MPI_DOUBLE,
                   MPI_SUM, 0, MPI_COMM_WORLD);
    }
}

/* The worst status of all ranks (statuses are ordered: KM_OK is 0), and
 * the message of the lowest rank that has it, on every rank. */
static km_status agree(km_status st, km_error *err)
{
    int mine = (int)st, worst = 0, rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Allreduce(&mine, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (worst == 0)
        return KM_OK;
    int cand = mine == worst ? rank : INT_MAX, first = 0;
    MPI_Allreduce(&cand, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    char msg[sizeof err->message];
    memcpy(msg, err->message, sizeof msg);
    msg[sizeof msg - 1] = 0;
    MPI_Bcast(msg, (int)sizeof msg, MPI_CHAR, first, MPI_COMM_WORLD);
    memcpy(err->message, msg, sizeof msg);
    return (km_status)worst;
}

/* ------------------------------------------------------------ the solve */

/* What one solve is, as rank 0 broadcasts it. */
typedef struct solve_head {
    uint64_t n, d, m, kernel_len, want_l;
    double scale, shift;
} solve_head;

typedef struct dist {
    int n, m, nb, mloc, nloc, bloc, desc_a[9], desc_b[9];
    double *A, *B;
} dist;

static int local_size(int n, int nb, int iproc, int nprocs)
{
    int zero = 0;
    return numroc_(&n, &nb, &iproc, &zero, &nprocs);
}

/* Global index of local index l of a block-cyclic dimension. */
static size_t global_of(int l, int nb, int me, int np)
{
    return ((size_t)(l / nb) * (size_t)np + (size_t)me) * (size_t)nb +
           (size_t)(l % nb);
}

static km_status set_err(km_error *err, km_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static km_status set_err(km_error *err, km_status st, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
    }
    return st;
}

/*
 * The lower triangle of A = scale k(X, X) + shift I in this rank's tiles,
 * each through core's km_gram_block (column-major tile = row-major block
 * of the transposed pair; the matrix is symmetric). With finite set, a
 * value that is not finite is KM_ENOTPD (the Cholesky's refusal); kpca
 * finds it in the centring's sums instead.
 */
static km_status fill_tiles(const worker *w, dist *g, const km_kernel *k,
                            const double *X, const double *xn, size_t d,
                            double scale, double shift, int finite,
                            km_error *err)
{
    int nb = g->nb, lld = g->mloc > 1 ? g->mloc : 1;
    for (int lj = 0; lj < g->nloc; lj += nb) {
        size_t j0 = global_of(lj, nb, w->mycol, w->npcol);
        size_t nj = (size_t)g->n - j0 < (size_t)nb ? (size_t)g->n - j0
                                                   : (size_t)nb;
        for (int li = 0; li < g->mloc; li += nb) {
            size_t i0 = global_of(li, nb, w->myrow, w->nprow);
            size_t ni = (size_t)g->n - i0 < (size_t)nb ? (size_t)g->n - i0
                                                       : (size_t)nb;
            if (i0 + ni <= j0) /* wholly above the diagonal */
                continue;
            double *T = g->A + (size_t)li + (size_t)lj * (size_t)lld;
            km_status st = km_gram_block(k, X, xn, d, j0, nj, i0, ni, T,
                                         (size_t)lld, err);
            if (st != KM_OK)
                return st;
            for (size_t b = 0; b < nj; b++)
                for (size_t a = 0; a < ni; a++) {
                    double *v = T + a + b * (size_t)lld;
                    *v *= scale;
                    if (i0 + a == j0 + b)
                        *v += shift;
                    if (finite && !isfinite(*v))
                        return set_err(err, KM_ENOTPD, "the kernel matrix "
                                       "is not finite (row %zu, column %zu)",
                                       i0 + a, j0 + b);
                }
        }
    }
    return KM_OK;
}

/* Local sizes and descriptors of the n x n A and the n x m B (none when m
 * is 0) in nb x nb blocks. */
static km_status dist_shape(const worker *w, dist *g, size_t n, size_t m,
                            int nb, km_error *err)
{
    memset(g, 0, sizeof *g);
    if (n > INT_MAX || m > INT_MAX)
        return set_err(err, KM_EINVAL, "%zu rows or %zu outputs: too many "
                       "for ScaLAPACK's int indices", n, m);
    g->n = (int)n;
    g->m = (int)m;
    g->nb = nb;
    g->mloc = local_size(g->n, g->nb, w->myrow, w->nprow);
    g->nloc = local_size(g->n, g->nb, w->mycol, w->npcol);
    g->bloc = local_size(g->m, g->nb, w->mycol, w->npcol);
    int lld = g->mloc > 1 ? g->mloc : 1, zero = 0, info = 0;
    descinit_(g->desc_a, &g->n, &g->n, &g->nb, &g->nb, &zero, &zero,
              &w->ctxt, &lld, &info);
    if (info == 0 && m)
        descinit_(g->desc_b, &g->n, &g->m, &g->nb, &g->nb, &zero, &zero,
                  &w->ctxt, &lld, &info);
    if (info != 0)
        return set_err(err, KM_EINTERNAL, "descinit argument %d", -info);
    return KM_OK;
}

/* KM_ENOMEM when need bytes are above the per-rank budget. */
static km_status check_budget(const worker *w, size_t need, km_error *err)
{
    if (w->budget && need > w->budget)
        return set_err(err, KM_ENOMEM, "a rank's share needs %.1f MB, "
                       "above the per-rank budget of %.1f MB "
                       "(--mpi-memory-budget-mb); add ranks or raise the "
                       "budget", (double)need / 1048576.0,
                       (double)w->budget / 1048576.0);
    return KM_OK;
}

/* A local share of n x cols (cols local columns), at least one value. */
static double *share_alloc(const dist *g, int cols)
{
    size_t lld = g->mloc > 1 ? (size_t)g->mloc : 1;
    return malloc(lld * (size_t)(cols ? cols : 1) * sizeof(double));
}

/* Local sizes, the budget check and the allocations, agreed by all. */
static km_status dist_init(const worker *w, dist *g, size_t n, size_t d,
                           size_t m, km_error *err)
{
    km_status st = dist_shape(w, g, n, m, w->nb, err);
    if (st != KM_OK)
        return st;
    /* A's tiles, B's, X and Y (broadcast), X's norms, the gathers (C,
     * one panel of L) and, on rank 0, what km_fit holds beside. */
    size_t need = 8 * ((size_t)g->mloc * (size_t)g->nloc +
                       (size_t)g->mloc * (size_t)g->bloc + n * d + n * m + n +
                       n * m + (size_t)g->nb * n);
    if ((st = check_budget(w, need, err)) != KM_OK)
        return st;
    g->A = share_alloc(g, g->nloc);
    g->B = share_alloc(g, g->bloc);
    if (!g->A || !g->B)
        return set_err(err, KM_ENOMEM, "out of memory for a %zu-row share "
                       "of the %zu-row kernel matrix", (size_t)g->mloc, n);
    return KM_OK;
}

static void dist_free(dist *g)
{
    free(g->A);
    free(g->B);
}

/* Sums this rank's entries of columns c0 .. c0 + cols - 1 of the
 * distributed n-row src (lcols local columns) into dst on rank 0, entry
 * (i, c0 + j) at dst[i * rs + j * cs]. */
static void gather_cols(const worker *w, const dist *g, const double *src,
                        int lcols, size_t c0, size_t cols, double *dst,
                        size_t rs, size_t cs)
{
    size_t n = (size_t)g->n;
    int lld = g->mloc > 1 ? g->mloc : 1;
    memset(dst, 0, n * cols * sizeof *dst);
    for (int lj = 0; lj < lcols; lj++) {
        size_t j = global_of(lj, g->nb, w->mycol, w->npcol);
        if (j < c0 || j - c0 >= cols)
            continue;
        j -= c0;
        for (int li = 0; li < g->mloc; li++)
            dst[global_of(li, g->nb, w->myrow, w->nprow) * rs + j * cs] =
                src[(size_t)li + (size_t)lj * (size_t)lld];
    }
    reduce_doubles(dst, n * cols, w->rank);
}

/* Sums the lower factor into L (n x n row-major, rank 0), nb rows at a
 * time through a panel buffer (nb x n per rank). */
static km_status gather_l(const worker *w, const dist *g, double *L,
                          km_error *err)
{
    size_t n = (size_t)g->n, nb = (size_t)g->nb;
    int lld = g->mloc > 1 ? g->mloc : 1;
    double *P = malloc(nb * n * sizeof *P);
    if (agree(P ? KM_OK : set_err(err, KM_ENOMEM, "out of memory for a "
                                  "%zu x %zu panel", nb, n), err) != KM_OK) {
        free(P);
        return KM_ENOMEM;
    }
    int li = 0; /* this rank's next local row */
    for (size_t r0 = 0; r0 < n; r0 += nb) {
        size_t rows = n - r0 < nb ? n - r0 : nb;
        memset(P, 0, rows * n * sizeof *P);
        int owner = (int)((r0 / nb) % (size_t)w->nprow);
        if (owner == w->myrow) {
            for (size_t a = 0; a < rows; a++, li++)
                for (int lj = 0; lj < g->nloc; lj++) {
                    size_t j = global_of(lj, g->nb, w->mycol, w->npcol);
                    if (j <= r0 + a)
                        P[a * n + j] =
                            g->A[(size_t)li + (size_t)lj * (size_t)lld];
                }
        }
        reduce_doubles(P, rows * n, w->rank);
        if (w->rank == 0)
            memcpy(L + r0 * n, P, rows * n * sizeof *P);
    }
    free(P);
    return KM_OK;
}

/* The problem's three arrays on this rank, agreed by all: rank 0 uses
 * the caller's (mine), the others allocate len[i] doubles each (none when
 * st, the status so far, is not KM_OK). rank_free releases them. */
static km_status rank_arrays(const worker *w, km_status st, double *v[3],
                             double *const mine[3], const size_t len[3],
                             km_error *err)
{
    for (int i = 0; i < 3; i++) {
        v[i] = w->rank == 0 ? mine[i] : NULL;
        if (w->rank != 0 && st == KM_OK &&
            !(v[i] = malloc((len[i] ? len[i] : 1) * sizeof(double))))
            st = set_err(err, KM_ENOMEM, "out of memory for %zu values of "
                         "the problem", len[i]);
    }
    return agree(st, err);
}

static void rank_free(const worker *w, double *v[3])
{
    for (int i = 0; i < 3 && w->rank != 0; i++)
        free(v[i]);
}

/* Enters a phase: its name for the status file and, on rank 0, progress
 * f through ctl. */
static void enter(worker *w, const km_fit_control *ctl, const char *phase,
                  double f)
{
    set_phase(w, phase);
    if (w->rank == 0 && ctl->progress)
        ctl->progress(ctl->ctx, f);
}

/* X (n x d) from rank 0 to all, then, in phase "kernel" at progress f,
 * this rank's tiles of scale k(X, X) + shift I (fill_tiles); *xn gets X's
 * norms (the caller frees them). Agreed by all. */
static km_status share_tiles(worker *w, dist *g, const km_kernel *k,
                             double *X, size_t d, double scale, double shift,
                             int finite, const km_fit_control *ctl, double f,
                             double **xn, km_error *err)
{
    size_t n = (size_t)g->n;
    bcast_doubles(X, n * d);
    enter(w, ctl, "kernel", f);
    *xn = km_sqnorms(X, n, d);
    km_status st = *xn ? fill_tiles(w, g, k, X, *xn, d, scale, shift, finite,
                                    err)
                       : set_err(err, KM_ENOMEM, "out of memory for %zu "
                                 "norms", n);
    return agree(st, err);
}

/* The head and the kernel k0, from rank 0 to all, into *h and *k (to
 * clean up when KM_OK). */
static km_status share_problem(const worker *w, solve_head *h,
                               const km_kernel *k0, km_kernel *k,
                               km_error *err)
{
    unsigned char *kb = NULL;
    size_t klen = 0;
    km_status st = KM_OK;
    if (w->rank == 0) {
        st = km_kernel_save_buffer(k0, &kb, &klen, err);
        h->kernel_len = st == KM_OK ? klen : 0;
    }
    MPI_Bcast(h, (int)sizeof *h, MPI_BYTE, 0, MPI_COMM_WORLD);
    if (h->kernel_len == 0)
        return st != KM_OK ? st : KM_EINTERNAL;
    if (w->rank != 0)
        kb = malloc(h->kernel_len);
    if (agree(kb ? KM_OK : KM_ENOMEM, err) != KM_OK) {
        free(kb);
        return KM_ENOMEM;
    }
    MPI_Bcast(kb, (int)h->kernel_len, MPI_BYTE, 0, MPI_COMM_WORLD);
    st = km_kernel_load_buffer(kb, h->kernel_len, k, err);
    free(kb);
    return agree(st, err);
}

/*
 * Every rank's part of one solve; rank 0 passes the problem (others
 * receive it), and gets C (and L).
 */
static km_status solve_all(worker *w, solve_head *h, const km_kernel *k0,
                           const double *X0, const double *Y0, double *C,
                           double *L, const km_fit_control *ctl, double f0,
                           double f1, km_error *err)
{
    km_kernel k;
    km_status st = share_problem(w, h, k0, &k, err);
    if (st != KM_OK)
        return st;
    size_t n = h->n, d = h->d, m = h->m;

    dist g;
    double *v[3], *xn = NULL; /* X, Y, C */
    set_phase(w, "allocating");
    st = dist_init(w, &g, n, d, m, err);
    st = rank_arrays(w, st, v, (double *[]){(double *)X0, (double *)Y0, C},
                     (size_t[]){n * d, n * m, n * m}, err);
    double *X = v[0], *Y = v[1], *Cg = v[2];
    if (st != KM_OK)
        goto out;
    bcast_doubles(Y, n * m);
    st = share_tiles(w, &g, &k, X, d, h->scale, h->shift, 1, ctl, f0, &xn,
                     err);
    if (st != KM_OK)
        goto out;

    enter(w, ctl, "factor", f0 + 0.1 * (f1 - f0));
    int one = 1, info = 0, lld = g.mloc > 1 ? g.mloc : 1;
    pdpotrf_("L", &g.n, g.A, &one, &one, g.desc_a, &info, 1);
    if (info > 0) {
        st = set_err(err, KM_ENOTPD, "the kernel matrix plus alpha*I is not "
                     "positive definite (Cholesky failed at row %zu); use a "
                     "larger params.alpha or a positive definite kernel",
                     (size_t)info);
        goto out;
    }
    if (info < 0) {
        st = set_err(err, KM_EINTERNAL, "pdpotrf argument %d", -info);
        goto out;
    }

    enter(w, ctl, "solve", f0 + 0.85 * (f1 - f0));
    for (int lj = 0; lj < g.bloc; lj++) {
        size_t j = global_of(lj, g.nb, w->mycol, w->npcol);
        for (int li = 0; li < g.mloc; li++)
            g.B[(size_t)li + (size_t)lj * (size_t)lld] =
                Y[global_of(li, g.nb, w->myrow, w->nprow) * m + j];
    }
    pdpotrs_("L", &g.n, &g.m, g.A, &one, &one, g.desc_a, g.B, &one, &one,
             g.desc_b, &info, 1);
    if (info != 0) {
        st = set_err(err, KM_EINTERNAL, "pdpotrs argument %d", -info);
        goto out;
    }
    set_phase(w, "gather");
    gather_cols(w, &g, g.B, g.bloc, 0, m, Cg, m, 1);
    if (h->want_l)
        st = gather_l(w, &g, L, err);
out:
    rank_free(w, v);
    free(xn);
    dist_free(&g);
    km_kernel_cleanup(&k);
    return st;
}

/* The engine core's fits call on rank 0: tells the others to join. */
static km_status engine_solve(void *ctx, const km_kernel *k, double scale,
                              const double *X, size_t n, size_t d,
                              double shift, const double *Y, size_t m,
                              double *C, double *L, const km_fit_control *ctl,
                              double f0, double f1, km_error *err)
{
    worker *w = ctx;
    int cmd = CMD_SOLVE;
    MPI_Bcast(&cmd, 1, MPI_INT, 0, MPI_COMM_WORLD);
    solve_head h = {n, d, m, 0, L != NULL, scale, shift};
    km_status st = solve_all(w, &h, k, X, Y, C, L, ctl, f0, f1, err);
    set_phase(w, "model");
    return st;
}

/* ------------------------------------------------------------ kpca */

/*
 * One eigen-problem's share: A (the centred matrix, lower triangle) in
 * g, Z (PDSYEVR's n x n vectors with A's descriptor: the first mz
 * columns get the top mz, ascending), W (n eigenvalues, on every rank)
 * and PDSYEVR's workspace, its size queried.
 *
 * mz = max(nev, nb), at most n, not nev: ScaLAPACK 2.2's PDSYEVR sizes
 * the workspace it hands PDORMTR (the back-transformation) from the
 * number of vectors asked for, which is too small below one block
 * (about NP0 x mz against the (NP0 + nb) x nb PDORMTR needs). PDORMTR
 * then refuses, PDSYEVR prints it and still returns info 0 with the
 * tridiagonal's vectors in Z. With mz >= nb and n >= nb the sizes agree
 * ((NP0 - nb)(mz - nb) >= 0); below one block of rows the block is n.
 * The extra vectors cost 2 n^2 mz flops, a few per cent of the
 * reduction's 4 n^3 / 3 at n = 8000.
 */
typedef struct eig {
    dist g;
    int nev, mz, lwork, liwork;
    double *Z, *W, *work;
    int *iwork;
} eig;

static void eig_free(eig *e)
{
    dist_free(&e->g);
    free(e->Z);
    free(e->W);
    free(e->work);
    free(e->iwork);
}

/* PDSYEVR for the top mz eigenpairs (index range n - mz + 1 .. n) of
 * A (e's shape) into W and Z; with lwork -1 (and liwork -1) a workspace
 * query, into work[0] and iwork[0]. */
static int eig_run(const eig *e, double *A, double *W, double *Z,
                   double *work, int lwork, int *iwork, int liwork)
{
    int one = 1, il = e->g.n - e->mz + 1, iu = e->g.n, found = 0, nz = 0,
        info = 0;
    double v0 = 0, v1 = 0;
    pdsyevr_("V", "I", "L", &e->g.n, A, &one, &one, e->g.desc_a, &v0, &v1,
             &il, &iu, &found, &nz, W, Z, &one, &one, e->g.desc_a, work,
             &lwork, iwork, &liwork, &info, 1, 1, 1);
    if (info == 0 && lwork != -1 && (found != e->mz || nz != e->mz))
        return INT_MAX; /* fewer than asked for */
    return info;
}

/*
 * PDSYEVR's minimum workspace for the top mz vectors (its LWMIN, from
 * ScaLAPACK 2.2's source): 5n + 2 + max(18n, NP00 MQ00 + 2 nb^2) +
 * (ceil(mz / P) + 2) n, NP00 and MQ00 the largest local sizes of n rows
 * and of mz columns.
 */
static size_t eig_lwmin(const worker *w, const eig *e)
{
    int zero = 0, n = e->g.n, nb = e->g.nb, mz = e->mz;
    size_t np00 = (size_t)numroc_(&n, &nb, &zero, &zero, &w->nprow);
    size_t mq00 = (size_t)numroc_(&mz, &nb, &zero, &zero, &w->npcol);
    size_t p = (size_t)w->nprow * (size_t)w->npcol, un = (size_t)n;
    size_t a = 18 * un, b = np00 * mq00 + 2 * (size_t)nb * (size_t)nb;
    return 5 * un + 2 + (a > b ? a : b) + ((size_t)mz + p - 1) / p * un +
           2 * un;
}

/*
 * Local sizes, PDSYEVR's workspace, the budget check and the
 * allocations: A and Z (two shares of the n x n matrix), the workspace,
 * and beside them X (broadcast), its norms, the column sums, W, the
 * gather of the vectors and, on rank 0, what km_fit holds (the model's X
 * and projections, the vectors, a preprocessed copy of X).
 *
 * The workspace: the optimum that PDSYEVR's query (lwork -1) answers
 * when every rank's budget holds it, else its minimum. The optimum lets
 * PDSYNTRD copy the whole matrix onto the largest square grid of ranks
 * (n^2 / floor(sqrt(P))^2 values a rank: all of it on one rank for 2 or
 * 3) and reduce it there, faster; with the minimum it reduces in place
 * (PDSYTRD's blocked code), so a rank holds about two shares.
 */
static km_status eig_init(const worker *w, eig *e, size_t n, size_t d,
                          size_t nev, km_error *err)
{
    memset(e, 0, sizeof *e);
    if (nev < 1 || nev > n || n > INT_MAX)
        return set_err(err, KM_EINVAL, "%zu eigenpairs of a %zu-row matrix",
                       nev, n);
    int nb = (size_t)w->nb < n ? w->nb : (int)n; /* see eig */
    km_status st = dist_shape(w, &e->g, n, 0, nb, err);
    if (st != KM_OK)
        return st;
    e->nev = (int)nev;
    e->mz = e->nev > nb ? e->nev : nb;
    double wq = 0, dummy = 0;
    int iq = 0;
    int info = eig_run(e, &dummy, &dummy, &dummy, &wq, -1, &iq, -1);
    size_t lwmin = eig_lwmin(w, e);
    if (info != 0 || !(wq >= 1) || iq < 1 || lwmin > INT_MAX)
        return set_err(err, KM_EINTERNAL, "pdsyevr's workspace query "
                       "failed (info %d)", info);
    size_t lwopt = wq > (double)INT_MAX ? SIZE_MAX : (size_t)wq;
    size_t share = (size_t)e->g.mloc * (size_t)e->g.nloc;
    size_t beside = 8 * (2 * share + 3 * n * d + 3 * n * nev + 6 * n) +
                    4 * (size_t)iq;
    int opt = lwopt <= INT_MAX &&
              (!w->budget || beside + 8 * lwopt <= w->budget), all = 0;
    MPI_Allreduce(&opt, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    e->lwork = (int)(all ? lwopt : lwmin);
    if (!all && w->rank == 0) /* in the job's log */
        fprintf(stderr, "kmserve-mpi: pdsyevr with its minimum workspace "
                "(%zu values; the optimum, %zu, is above a rank's "
                "budget)\n", lwmin, lwopt);
    e->liwork = iq;
    if ((st = check_budget(w, beside + 8 * (size_t)e->lwork, err)) != KM_OK)
        return st;
    e->g.A = share_alloc(&e->g, e->g.nloc);
    e->Z = share_alloc(&e->g, e->g.nloc);
    e->W = malloc(n * sizeof *e->W);
    e->work = malloc((size_t)e->lwork * sizeof *e->work);
    e->iwork = malloc((size_t)e->liwork * sizeof *e->iwork);
    if (!e->g.A || !e->Z || !e->W || !e->work || !e->iwork)
        return set_err(err, KM_ENOMEM, "out of memory for a %zu-row share "
                       "of the %zu-row kernel matrix and its eigenvectors",
                       (size_t)e->g.mloc, n);
    return KM_OK;
}

/*
 * Centres this rank's lower tiles of A in place, Kc = K - 1 m^T - m 1^T
 * + g (core's centring, km_kpca.c, distributed): the column sums of the
 * symmetric K from the stored triangle (an entry off the diagonal counts
 * for its row and its column) summed over all ranks, then the update;
 * col_mean (n) gets the column means m and *grand their mean g on every
 * rank, *trace the trace of Kc.
 */
static void center_tiles(const worker *w, dist *g, double *col_mean,
                         double *grand, double *trace)
{
    size_t n = (size_t)g->n, lld = g->mloc > 1 ? (size_t)g->mloc : 1;
    memset(col_mean, 0, n * sizeof *col_mean);
    for (int lj = 0; lj < g->nloc; lj++) {
        size_t j = global_of(lj, g->nb, w->mycol, w->npcol);
        const double *col = g->A + (size_t)lj * lld;
        for (int li = 0; li < g->mloc; li++) {
            size_t i = global_of(li, g->nb, w->myrow, w->nprow);
            if (i < j) /* above the diagonal: not filled */
                continue;
            col_mean[j] += col[li];
            if (i != j)
                col_mean[i] += col[li];
        }
    }
    MPI_Allreduce(MPI_IN_PLACE, col_mean, g->n, MPI_DOUBLE, MPI_SUM,
                  MPI_COMM_WORLD);
    double gm = 0, tr = 0;
    for (size_t i = 0; i < n; i++) {
        col_mean[i] /= (double)n;
        gm += col_mean[i];
    }
    gm /= (double)n;
    for (int lj = 0; lj < g->nloc; lj++) {
        size_t j = global_of(lj, g->nb, w->mycol, w->npcol);
        double *col = g->A + (size_t)lj * lld;
        for (int li = 0; li < g->mloc; li++) {
            size_t i = global_of(li, g->nb, w->myrow, w->nprow);
            if (i < j)
                continue;
            col[li] += gm - col_mean[i] - col_mean[j];
            if (i == j)
                tr += col[li];
        }
    }
    MPI_Allreduce(MPI_IN_PLACE, &tr, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    *grand = gm;
    *trace = tr;
}

/*
 * Every rank's part of one kpca eigen-problem (km_dense_engine.eigen);
 * rank 0 passes the kernel and X (others receive them), and gets the
 * column means, grand mean, trace, the nev eigenvalues descending and
 * their vectors U (n x nev, column-major).
 */
static km_status eigen_all(worker *w, solve_head *h, const km_kernel *k0,
                           const double *X0, double *col_mean, double *grand,
                           double *trace, double *lambda, double *U,
                           const km_fit_control *ctl, double f0, double f1,
                           km_error *err)
{
    km_kernel k;
    km_status st = share_problem(w, h, k0, &k, err);
    if (st != KM_OK)
        return st;
    size_t n = h->n, d = h->d, nev = h->m;

    eig e;
    double *v[3], *xn = NULL, gm = 0, tr = 0; /* X, column means, U */
    set_phase(w, "allocating");
    st = eig_init(w, &e, n, d, nev, err);
    st = rank_arrays(w, st, v, (double *[]){(double *)X0, col_mean, U},
                     (size_t[]){n * d, n, n * nev}, err);
    double *X = v[0], *cm = v[1], *Ug = v[2];
    if (st != KM_OK)
        goto out;
    st = share_tiles(w, &e.g, &k, X, d, 1.0, 0.0, 0, ctl, f0, &xn, err);
    if (st != KM_OK)
        goto out;

    enter(w, ctl, "centring", f0 + 0.1 * (f1 - f0));
    center_tiles(w, &e.g, cm, &gm, &tr);
    if (!isfinite(gm) || !isfinite(tr)) /* the caller refuses it */
        goto out;

    enter(w, ctl, "eigen", f0 + 0.15 * (f1 - f0));
    int info = eig_run(&e, e.g.A, e.W, e.Z, e.work, e.lwork, e.iwork,
                       e.liwork);
    if (info != 0) {
        st = info < 0 ? set_err(err, KM_EINTERNAL, "pdsyevr argument %d",
                                -info)
                      : set_err(err, KM_EINTERNAL, "pdsyevr found fewer "
                                "than the %zu eigenpairs asked for (info "
                                "%d)", nev, info == INT_MAX ? 0 : info);
        goto out;
    }

    enter(w, ctl, "gather", f0 + 0.95 * (f1 - f0));
    /* Z's last nev of mz columns, ascending, become U's descending. */
    gather_cols(w, &e.g, e.Z, e.g.nloc, (size_t)(e.mz - e.nev), nev, Ug, 1,
                n);
    if (w->rank == 0)
        for (size_t j = 0; j < nev; j++) {
            lambda[j] = e.W[e.mz - 1 - j];
            if (j < nev / 2)
                cblas_dswap((int)n, Ug + j * n, 1, Ug + (nev - 1 - j) * n, 1);
        }
out:
    if (w->rank == 0) {
        *grand = gm;
        *trace = tr;
    }
    rank_free(w, v);
    free(xn);
    eig_free(&e);
    km_kernel_cleanup(&k);
    return st;
}

/* The engine's eigen on rank 0: tells the others to join. */
static km_status engine_eigen(void *ctx, const km_kernel *k, const double *X,
                              size_t n, size_t d, size_t nev,
                              double *col_mean, double *grand, double *trace,
                              double *lambda, double *U,
                              const km_fit_control *ctl, double f0, double f1,
                              km_error *err)
{
    worker *w = ctx;
    int cmd = CMD_EIGEN;
    MPI_Bcast(&cmd, 1, MPI_INT, 0, MPI_COMM_WORLD);
    solve_head h = {n, d, nev, 0, 0, 1.0, 0.0};
    km_status st = eigen_all(w, &h, k, X, col_mean, grand, trace, lambda, U,
                             ctl, f0, f1, err);
    set_phase(w, "model");
    return st;
}

/* ------------------------------------------------------------ rank 0 */

static void write_error(const char *path, km_status st, const char *msg)
{
    char buf[sizeof ((km_error *)0)->message + 32];
    int len = snprintf(buf, sizeof buf, "%d %s\n", (int)st, msg);
    write_atomic(path, buf, (size_t)len);
}

static km_status fit_root(worker *w, const char *request_path, km_error *err)
{
    size_t len = 0;
    unsigned char *buf = cmn_file_read(request_path, (size_t)1 << 40, &len);
    if (!buf)
        return set_err(err, KM_EIO, "cannot read the staging file %s",
                       request_path);
    km_request rq;
    km_status st = km_request_load_buffer(buf, len, &rq, err);
    free(buf);
    if (st != KM_OK)
        return st;
    if (rq.algo == KM_ALGO_KPCA) { /* auto: dense here */
        km_kpca_solver s = ((km_kpca_params *)rq.params)->solver;
        if (s != KM_KPCA_SOLVER_AUTO && s != KM_KPCA_SOLVER_DENSE) {
            km_request_cleanup(&rq);
            return set_err(err, KM_EINVAL, "params.eigen_solver: "
                           "kmserve-mpi runs kpca's dense solver (auto or "
                           "dense), not %s", km_kpca_solver_name(s));
        }
    } else if (rq.algo != KM_ALGO_KRR && rq.algo != KM_ALGO_GPR) {
        km_request_cleanup(&rq);
        return set_err(err, KM_EINVAL, "kmserve-mpi fits krr, gpr and "
                       "kpca, not %s", km_algorithm_name(rq.algo));
    }
    if (rq.algo == KM_ALGO_KRR) { /* auto: resolved to exact here */
        km_krr_params *p = (km_krr_params *)rq.params;
        if (p->solver == KM_KRR_SOLVER_AUTO)
            p->solver = KM_KRR_SOLVER_EXACT;
        if (p->solver != KM_KRR_SOLVER_EXACT) {
            km_request_cleanup(&rq);
            return set_err(err, KM_EINVAL, "kmserve-mpi runs krr's exact "
                           "solver");
        }
    }
    km_dense_engine eng = {w, engine_solve, engine_eigen};
    km_fit_control ctl = {report, w, 1, &eng};
    km_problem pb = km_request_problem(&rq);
    km_model *model = NULL;
    report(w, 0.0);
    st = km_fit(rq.algo, &rq.kernel, rq.params, &rq.pre, &pb, &ctl, &model,
                err);
    km_request_cleanup(&rq);
    if (st != KM_OK)
        return st;
    set_phase(w, "writing");
    report(w, 0.97);
    unsigned char *out = NULL;
    size_t out_len = 0;
    st = km_model_save_buffer(model, &out, &out_len, err);
    km_model_free(model);
    if (st == KM_OK && write_atomic(w->output_path, out, out_len) != 0)
        st = set_err(err, KM_EIO, "cannot write the model (%zu bytes)",
                     out_len);
    free(out);
    if (st == KM_OK) {
        set_phase(w, "done");
        report(w, 1.0);
    }
    return st;
}

/* ------------------------------------------------------------ main */

static void usage(void)
{
    fprintf(stderr, "usage: kmserve-mpi --request FILE --output FILE "
            "--status FILE --error FILE [--block 64..1024] "
            "[--memory-budget-mb MB] [--blas-threads N] "
            "[--heartbeat PREFIX [--heartbeat-interval SECONDS]]\n");
}

/* The near-square grid: the largest divisor of p at most sqrt(p) rows. */
static void grid_shape(int p, int *rows, int *cols)
{
    int r = (int)sqrt((double)p);
    while (r > 1 && p % r != 0)
        r--;
    *rows = r < 1 ? 1 : r;
    *cols = p / *rows;
}

int main(int argc, char **argv)
{
    const char *request = NULL, *error = NULL;
    worker w;
    memset(&w, 0, sizeof w);
    w.nb = DEFAULT_BLOCK;
    w.phase = CMN_BEAT_PHASE_INIT;
    pthread_mutex_init(&w.hb.lock, NULL);
    w.hb.interval = 1.0;
    w.hb.rec.pid = (long)getpid();
    snprintf(w.hb.rec.phase, sizeof w.hb.rec.phase, "%s", w.phase);
    snprintf(w.hb.rec.state, sizeof w.hb.rec.state, "run");
    cmn_beat_where(w.hb.rec.where, sizeof w.hb.rec.where);
    const char *hold = getenv("KMSERVE_MPI_TEST_HOLD");
    w.hold = hold && *hold ? hold : NULL;
    long blas = 0; /* OpenBLAS's own choice (OPENBLAS_NUM_THREADS) */
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        if (!v) {
            usage();
            return 2;
        }
        i++;
        if (!strcmp(a, "--request"))
            request = v;
        else if (!strcmp(a, "--output"))
            w.output_path = v;
        else if (!strcmp(a, "--status"))
            w.status_path = v;
        else if (!strcmp(a, "--error"))
            error = v;
        else if (!strcmp(a, "--block")) {
            long b = strtol(v, &end, 10);
            if (*end || b < 16 || b > 1024) {
                usage();
                return 2;
            }
            w.nb = (int)b;
        } else if (!strcmp(a, "--memory-budget-mb")) {
            unsigned long long mb = strtoull(v, &end, 10);
            if (*end || mb > ((size_t)1 << 40)) {
                usage();
                return 2;
            }
            w.budget = (size_t)mb << 20;
        } else if (!strcmp(a, "--heartbeat")) {
            w.hb.prefix = v;
        } else if (!strcmp(a, "--heartbeat-interval")) {
            double t = strtod(v, &end);
            if (*end || !(t >= 0.01 && t <= 60)) {
                usage();
                return 2;
            }
            w.hb.interval = t;
        } else if (!strcmp(a, "--blas-threads")) {
            blas = strtol(v, &end, 10);
            if (*end || blas < 0 || blas > 1024) {
                usage();
                return 2;
            }
        } else {
            usage();
            return 2;
        }
    }
    if (!request || !w.output_path || !w.status_path || !error) {
        usage();
        return 2;
    }
    if (blas > 0)
        openblas_set_num_threads((int)blas);
    w.hb.request = request;
    /* beats from here when the launcher tells the rank, else from
     * MPI_Init's return */
    heart_rank(&w.hb, env_rank());
    set_phase(&w, CMN_BEAT_PHASE_INIT);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &w.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &w.size);
    heart_rank(&w.hb, w.rank);
    set_phase(&w, "starting");
    grid_shape(w.size, &w.nprow, &w.npcol);
    Cblacs_get(-1, 0, &w.ctxt);
    Cblacs_gridinit(&w.ctxt, "Row", w.nprow, w.npcol);
    Cblacs_gridinfo(w.ctxt, &w.nprow, &w.npcol, &w.myrow, &w.mycol);

    km_error err;
    memset(&err, 0, sizeof err);
    km_status st = KM_OK;
    if (w.rank == 0) {
        st = fit_root(&w, request, &err);
        int cmd = CMD_DONE;
        MPI_Bcast(&cmd, 1, MPI_INT, 0, MPI_COMM_WORLD);
        if (st != KM_OK)
            write_error(error, st, err.message);
    } else {
        for (;;) { /* serve rank 0's solves until it is done */
            int cmd = CMD_DONE;
            set_phase(&w, "ready");
            MPI_Bcast(&cmd, 1, MPI_INT, 0, MPI_COMM_WORLD);
            solve_head h;
            if (cmd == CMD_SOLVE)
                solve_all(&w, &h, NULL, NULL, NULL, NULL, NULL, NULL, 0, 0,
                          &err);
            else if (cmd == CMD_EIGEN)
                eigen_all(&w, &h, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                          NULL, 0, 0, &err);
            else
                break;
        }
    }
    set_phase(&w, "finalize");
    Cblacs_gridexit(w.ctxt);
    MPI_Finalize();
    int code = st == KM_OK ? 0 : 1;
    heart_stop(&w.hb, code);
    pthread_mutex_destroy(&w.hb.lock);
    return code;
}
