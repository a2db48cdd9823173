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
 * streams the model (km_model_save_file) to O through a temporary file,
 * fsync and rename; progress as "fraction phase" to S (rewritten by
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
 * Files, each calling only those below it: this one (options, rank 0's
 * fit, main), kmw_engine.c (the distributed solve and eigen-problem),
 * kmw_dist.c (block-cyclic shares, tiles, gathers), kmw_worker.c (a
 * rank's phase, files, errors, broadcasts), kmw_heart.c (the heartbeat),
 * then common/ and core. Nothing of server/.
 *
 * Thread-safety: the rank's work on one thread; the heartbeat's thread
 * calls no MPI and shares only the record, under its lock.
 */
#include <cblas.h>
#include <limits.h>
#include <math.h>
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "km.h"
#include "../common/cmn_beat.h"
#include "../common/cmn_file.h"
#include "kmw_engine.h"

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

/* The default block size: the fastest of 64, 128 and 256 for PDPOTRF at
 * n = 8000 on 2 ranks here: 8.6 s against 9.3 s (128) and 9.6 s (64);
 * bench/RESULTS.md, "kmserve-mpi". */
#define DEFAULT_BLOCK 256

/* ------------------------------------------------------------ rank 0 */

static void write_error(const char *path, km_status st, const char *msg)
{
    char buf[sizeof ((km_error *)0)->message + 32];
    int len = snprintf(buf, sizeof buf, "%d %s\n", (int)st, msg);
    write_atomic(path, buf, (size_t)len);
}

/* m's file as path, through path.tmp (written, fsync'd, renamed):
 * streamed from the model (km_model_save_file), never whole in memory
 * (an exact gpr's n x n factor is most of it). */
static km_status save_model(const km_model *m, const char *path,
                            km_error *err)
{
    char tmp[PATH_MAX];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp)
        return set_err(err, KM_EIO, "the output path is too long");
    FILE *f = fopen(tmp, "wb");
    if (!f)
        return set_err(err, KM_EIO, "cannot create %s", tmp);
    km_status st = km_model_save_file(m, f, err);
    int ok = st == KM_OK && fflush(f) == 0 && fsync(fileno(f)) == 0;
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) {
        unlink(tmp);
        return st != KM_OK ? st : set_err(err, KM_EIO, "cannot write the "
                                          "model to %s", path);
    }
    return KM_OK;
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
    /* what this worker runs of it (krr's auto: exact; kpca: dense) */
    if ((st = km_algorithm_mpi_resolve(rq.algo, rq.params, err)) != KM_OK) {
        km_request_cleanup(&rq);
        return st;
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
    st = save_model(model, w->output_path, err);
    km_model_free(model);
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
