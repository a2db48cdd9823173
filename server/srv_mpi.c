/*
 * srv_mpi.c - distributed exact fits through kmserve-mpi; see srv_mpi.h.
 *
 * The launch command is split into argv here, never by a shell: words
 * are separated by blanks, and '...' or "..." quote blanks (no escapes,
 * variables or globs), so a value from the environment cannot inject a
 * command. The worker's arguments follow it: kmserve-mpi --request R
 * --output O --status S --error E [--block NB] --memory-budget-mb MB.
 *
 * Staging files live in the models directory (shared storage on a
 * cluster), named .kmserve-mpi-HOST-PID-JOB.{req,out,status,err,log}
 * (the worker's own temporaries add .tmp); the store's scans read only
 * NAME.kmm files and leave them alone.
 *
 * Thread-safety: see srv_mpi.h; one fit's files are its own.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "srv_file.h"
#include "srv_log.h"
#include "srv_mpi.h"

extern char **environ;

#define MAX_ARGS 64
#define PREFIX ".kmserve-mpi-"
/* Seconds between SIGTERM and SIGKILL of a cancelled worker. */
#define KILL_GRACE 3.0

struct srv_mpi {
    char *words;             /* the launch command's words, NUL-separated */
    char *argv[MAX_ARGS];    /* into words */
    int argc;
    int ranks, block;
    size_t rank_budget;      /* bytes per rank */
    char worker[PATH_MAX + 16];
    char dir[PATH_MAX];
    char host[64];
};

/* ------------------------------------------------------------ setup */

/* Splits s into m->argv (see the top of the file); -1 on bad quoting or
 * too many words. */
static int split(srv_mpi *m, const char *s)
{
    size_t len = strlen(s);
    if (!(m->words = malloc(len + 1)))
        return -1;
    char *w = m->words;
    const char *p = s;
    while (*p) {
        while (*p == ' ' || *p == '\t')
            p++;
        if (!*p)
            break;
        if (m->argc == MAX_ARGS - 12)
            return -1;
        m->argv[m->argc++] = w;
        while (*p && *p != ' ' && *p != '\t') {
            if (*p == '\'' || *p == '"') {
                char q = *p++;
                while (*p && *p != q)
                    *w++ = *p++;
                if (*p != q)
                    return -1;
                p++;
            } else {
                *w++ = *p++;
            }
        }
        *w++ = 0;
    }
    return m->argc > 0 ? 0 : -1;
}

/* The rank count from the command's -np N, -n N, --np N or -c N. */
static int ranks_of(const srv_mpi *m)
{
    for (int i = 0; i + 1 < m->argc; i++)
        if (!strcmp(m->argv[i], "-np") || !strcmp(m->argv[i], "-n") ||
            !strcmp(m->argv[i], "--np") || !strcmp(m->argv[i], "-c") ||
            !strcmp(m->argv[i], "--ntasks")) {
            char *end;
            long v = strtol(m->argv[i + 1], &end, 10);
            return *end || v < 1 || v > 1000000 ? 0 : (int)v;
        }
    return 0;
}

srv_mpi *srv_mpi_create(const srv_config *c, char *err, size_t errlen)
{
    err[0] = 0;
    if (!c->mpi_launch[0])
        return NULL;
    srv_mpi *m = calloc(1, sizeof *m);
    if (!m) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (split(m, c->mpi_launch) != 0) {
        snprintf(err, errlen, "--mpi-launch: unbalanced quotes, or more "
                 "than %d words", MAX_ARGS - 12);
        goto fail;
    }
    m->ranks = c->mpi_ranks ? c->mpi_ranks : ranks_of(m);
    if (m->ranks < 1) {
        snprintf(err, errlen, "--mpi-launch gives no rank count (-np N, -n "
                 "N or --ntasks N): set --mpi-ranks");
        goto fail;
    }
    m->block = c->mpi_block;
    m->rank_budget = (size_t)(c->mpi_memory_budget_mb * 1048576.0);
    if (c->mpi_worker[0]) {
        snprintf(m->worker, sizeof m->worker, "%s", c->mpi_worker);
    } else { /* beside this executable */
        char self[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
        if (n <= 0) {
            snprintf(err, errlen, "cannot find this executable: set "
                     "--mpi-worker");
            goto fail;
        }
        self[n] = 0;
        char *slash = strrchr(self, '/');
        *slash = 0;
        snprintf(m->worker, sizeof m->worker, "%s/kmserve-mpi", self);
    }
    if (access(m->worker, X_OK) != 0) {
        snprintf(err, errlen, "--mpi-worker %s is not an executable file",
                 m->worker);
        goto fail;
    }
    char *abs = realpath(c->models_dir, NULL);
    snprintf(m->dir, sizeof m->dir, "%s", abs ? abs : c->models_dir);
    free(abs);
    if (gethostname(m->host, sizeof m->host) != 0)
        snprintf(m->host, sizeof m->host, "host");
    m->host[sizeof m->host - 1] = 0;
    for (char *h = m->host; *h; h++) /* one field of the file name */
        if (*h == '-' || *h == '/' || *h == '.')
            *h = '_';
    return m;
fail:
    srv_mpi_free(m);
    return NULL;
}

void srv_mpi_free(srv_mpi *m)
{
    if (m) {
        free(m->words);
        free(m);
    }
}

void srv_mpi_clean_stale(const char *dir)
{
    char host[64];
    if (gethostname(host, sizeof host) != 0)
        snprintf(host, sizeof host, "host");
    host[sizeof host - 1] = 0;
    for (char *h = host; *h; h++)
        if (*h == '-' || *h == '/' || *h == '.')
            *h = '_';
    DIR *d = opendir(dir);
    if (!d)
        return;
    size_t hl = strlen(host), pl = strlen(PREFIX);
    struct dirent *e;
    while ((e = readdir(d))) {
        const char *n = e->d_name;
        if (strncmp(n, PREFIX, pl) || strncmp(n + pl, host, hl) ||
            n[pl + hl] != '-')
            continue;
        char *end;
        long pid = strtol(n + pl + hl + 1, &end, 10);
        if (*end != '-' || pid < 1)
            continue;
        /* ours (a restart with the same pid: a container's 1) or gone */
        if (pid == (long)getpid() ||
            (kill((pid_t)pid, 0) != 0 && errno == ESRCH)) {
            if (unlinkat(dirfd(d), n, 0) == 0)
                srv_log(SRV_INFO, "mpi_stale_removed", "removed %s", n);
        }
    }
    closedir(d);
}

/* ------------------------------------------------------------ routing */

static int krr_auto(const api_fit_request *req)
{
    return req->algo == KM_ALGO_KRR && req->krr.solver == KM_KRR_SOLVER_AUTO;
}

/* What the fit can run distributed as: NULL, or why not. */
static const char *unsupported(const api_fit_request *req)
{
    if (req->search)
        return "a fit with a search";
    if (req->algo == KM_ALGO_KRR)
        return req->krr.solver == KM_KRR_SOLVER_EXACT || krr_auto(req)
                   ? NULL
                   : "krr's nystrom or rff solver (only exact or auto)";
    if (req->algo == KM_ALGO_GPR) {
        const km_gpr_params *p = (const km_gpr_params *)req->params;
        if (p->solver != KM_GPR_SOLVER_EXACT)
            return "gpr's nystrom or auto solver (only params.solver exact)";
        return p->optimizer == KM_GPR_OPTIMIZER_NONE
                   ? NULL
                   : "gpr with an optimizer (only params.optimizer none)";
    }
    return "this algorithm (only krr and gpr)";
}

static size_t sat_mul(size_t a, size_t b)
{
    size_t p;
    return __builtin_mul_overflow(a, b, &p) ? SIZE_MAX : p;
}

static size_t sat_add(size_t a, size_t b)
{
    return a + b < a ? SIZE_MAX : a + b;
}

/* The largest rank's bytes (rank 0's): its share of the n x n matrix
 * (whole blocks of the grid), the broadcast X and Y, the gathers, km_fit's
 * copies on rank 0 and, for gpr, the factor L that the model keeps. */
static size_t rank_bytes(const srv_mpi *m, const api_fit_request *req)
{
    size_t n = req->n, d = req->d, mo = req->m ? req->m : 1;
    size_t nb = m->block ? (size_t)m->block : 256, p = (size_t)m->ranks;
    size_t rows = 1;
    while ((rows + 1) * (rows + 1) <= p)
        rows++;
    while (p % rows)
        rows--;
    size_t cols = p / rows, blocks = (n + nb - 1) / nb;
    size_t lr = sat_mul((blocks + rows - 1) / rows, nb);
    size_t lc = sat_mul((blocks + cols - 1) / cols, nb);
    size_t share = sat_mul(8, sat_mul(lr < n ? lr : n, lc < n ? lc : n));
    size_t vec = sat_mul(8, sat_add(sat_mul(n, 3 * d + 4 * mo + 1),
                                    sat_mul(nb, n)));
    size_t l = req->algo == KM_ALGO_GPR ? sat_mul(8, sat_mul(n, n)) : 0;
    return sat_add(sat_add(share, vec), l);
}

/* What the daemon holds for a distributed fit: the staging buffer, the
 * model file read back and the model (gpr: with L). */
static size_t local_bytes(const api_fit_request *req)
{
    size_t n = req->n, v = sat_mul(8, sat_mul(n, req->d + (req->m ? req->m : 1)));
    size_t l = req->algo == KM_ALGO_GPR ? sat_mul(12, sat_mul(n, n)) : 0;
    return sat_add(sat_mul(3, v), l);
}

int srv_mpi_route(const srv_mpi *m, api_fit_request *req, size_t local_budget,
                  size_t *bytes, api_error *e)
{
    if (!req->distributed) {
        /* auto whose exact fit does not fit here: the cluster's, if its
         * share fits there */
        if (!m || !krr_auto(req) || req->search)
            return 0;
        km_krr_params exact = req->krr;
        exact.solver = KM_KRR_SOLVER_EXACT;
        km_problem pb = api_fit_problem(req);
        size_t need = km_algorithm_fit_bytes(KM_ALGO_KRR, &exact, &pb);
        if (need <= local_budget || rank_bytes(m, req) > m->rank_budget)
            return 0;
        req->distributed = 1;
    }
    if (!m)
        return api_invalid(e, "distributed: the server was started without "
                           "--mpi-launch");
    const char *why = unsupported(req);
    if (why)
        return api_invalid(e, "distributed: %s cannot run distributed", why);
    size_t share = rank_bytes(m, req);
    if (share > m->rank_budget)
        return api_raise(e, API_PAYLOAD_TOO_LARGE, "the distributed fit "
                         "needs an estimated %.1f MiB on its largest rank; "
                         "the per-rank budget (--mpi-memory-budget-mb) is "
                         "%.1f MiB over %d ranks", share / 1048576.0,
                         m->rank_budget / 1048576.0, m->ranks);
    *bytes = local_bytes(req);
    return 0;
}

/* ------------------------------------------------------------ a fit */

typedef struct fit_files {
    char req[PATH_MAX + 160], out[PATH_MAX + 160], status[PATH_MAX + 160],
        err[PATH_MAX + 160], log[PATH_MAX + 160];
} fit_files;

static void files_remove(const fit_files *f)
{
    const char *all[] = {f->req, f->out, f->status, f->err, f->log};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) {
        char tmp[PATH_MAX + 176];
        unlink(all[i]);
        snprintf(tmp, sizeof tmp, "%s.tmp", all[i]);
        unlink(tmp);
    }
}

static double mono(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec / 1e9;
}

/* Ends the worker's process group: SIGTERM (mpirun passes it to the
 * ranks), then SIGKILL after the grace; reaps the launcher. */
static int stop_group(pid_t pid)
{
    int status = 0;
    kill(-pid, SIGTERM);
    double t0 = mono();
    while (mono() - t0 < KILL_GRACE) {
        if (waitpid(pid, &status, WNOHANG) == pid) {
            kill(-pid, SIGKILL); /* anything left in the group */
            return status;
        }
        nanosleep(&(struct timespec){0, 50000000}, NULL);
    }
    kill(-pid, SIGKILL);
    waitpid(pid, &status, 0);
    return status;
}

/* The worker's failure as the job's error: its error file ("status
 * message"), else how the launcher ended and the last line it printed. */
static int worker_error(const fit_files *f, int status, api_error *e)
{
    size_t len = 0;
    unsigned char *b = srv_file_read(f->err, 4096, &len);
    int code = 0, off = 0;
    if (b && sscanf((char *)b, "%d %n", &code, &off) == 1 && code > 0 &&
        code < KM_STATUS_COUNT) {
        km_error kerr = {(km_status)code, ""};
        char *nl = strchr((char *)b + off, '\n');
        if (nl)
            *nl = 0;
        snprintf(kerr.message, sizeof kerr.message, "%s", (char *)b + off);
        free(b);
        return api_fail_km(e, &kerr);
    }
    free(b);
    char last[160] = "";
    unsigned char *log = srv_file_read(f->log, (size_t)1 << 20, &len);
    if (log) { /* the last non-empty line without the launcher's rulers */
        char *save = NULL;
        for (char *line = strtok_r((char *)log, "\n", &save); line;
             line = strtok_r(NULL, "\n", &save))
            if (line[0] && line[0] != '-')
                snprintf(last, sizeof last, "%s", line);
        free(log);
    }
    if (WIFSIGNALED(status))
        return api_raise(e, API_INTERNAL, "the MPI worker was ended by signal "
                         "%d%s%s", WTERMSIG(status), last[0] ? ": " : "",
                         last);
    return api_raise(e, API_INTERNAL, "the MPI worker failed (exit status "
                     "%d)%s%s", WIFEXITED(status) ? WEXITSTATUS(status) : -1,
                     last[0] ? ": " : "", last);
}

/* Starts the launch command and the worker in a new process group, with
 * stdout and stderr to the log file. */
static int spawn(const srv_mpi *m, const fit_files *f, const char *budget,
                 const char *block, pid_t *pid)
{
    char *argv[MAX_ARGS];
    int a = 0;
    for (int i = 0; i < m->argc; i++)
        argv[a++] = m->argv[i];
    argv[a++] = (char *)m->worker;
    argv[a++] = "--request";
    argv[a++] = (char *)f->req;
    argv[a++] = "--output";
    argv[a++] = (char *)f->out;
    argv[a++] = "--status";
    argv[a++] = (char *)f->status;
    argv[a++] = "--error";
    argv[a++] = (char *)f->err;
    argv[a++] = "--memory-budget-mb";
    argv[a++] = (char *)budget;
    if (block[0]) {
        argv[a++] = "--block";
        argv[a++] = (char *)block;
    }
    argv[a] = NULL;
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    posix_spawn_file_actions_init(&fa);
    posix_spawnattr_init(&at);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, f->log,
                                     O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    posix_spawnattr_setpgroup(&at, 0);
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &all);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP |
                                      POSIX_SPAWN_SETSIGMASK |
                                      POSIX_SPAWN_SETSIGDEF);
    int rc = posix_spawnp(pid, argv[0], &fa, &at, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    return rc;
}

int srv_mpi_fit(srv_mpi *m, const api_fit_request *req,
                const km_fit_control *ctl, const char *job_id, km_model **out,
                api_error *e)
{
    fit_files f;
    char base[PATH_MAX + 128];
    snprintf(base, sizeof base, "%s/" PREFIX "%s-%ld-%s", m->dir, m->host,
             (long)getpid(), job_id);
    snprintf(f.req, sizeof f.req, "%s.req", base);
    snprintf(f.out, sizeof f.out, "%s.out", base);
    snprintf(f.status, sizeof f.status, "%s.status", base);
    snprintf(f.err, sizeof f.err, "%s.err", base);
    snprintf(f.log, sizeof f.log, "%s.log", base);

    km_error kerr = {KM_OK, ""};
    km_problem pb = api_fit_problem(req);
    unsigned char *buf = NULL;
    size_t len = 0;
    km_status st = km_request_save_buffer(req->algo, &req->kernel,
                                          req->params, &req->pre, &pb, &buf,
                                          &len, &kerr);
    if (st != KM_OK)
        return api_fail_km(e, &kerr);
    int wrote = srv_file_write(f.req, buf, len, 1, 0600);
    free(buf);
    if (wrote != 0) {
        files_remove(&f);
        return api_raise(e, API_INSUFFICIENT_STORAGE, "cannot write the "
                         "staging file in the models directory: %s",
                         strerror(errno));
    }
    char budget[32], block[16] = "";
    snprintf(budget, sizeof budget, "%zu", m->rank_budget >> 20);
    if (m->block)
        snprintf(block, sizeof block, "%d", m->block);
    pid_t pid;
    int rc = spawn(m, &f, budget, block, &pid);
    if (rc != 0) {
        files_remove(&f);
        return api_raise(e, API_INTERNAL, "cannot start %s: %s", m->argv[0],
                         strerror(rc));
    }
    srv_log(SRV_INFO, "mpi_fit_started", "job %s: %s with %d ranks, pid %ld",
            job_id, m->argv[0], m->ranks, (long)pid);
    int status = 0, stopped = 0;
    for (;;) {
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid || (w < 0 && errno != EINTR))
            break;
        size_t sl = 0;
        unsigned char *s = srv_file_read(f.status, 256, &sl);
        double frac = 0;
        if (s && sscanf((char *)s, "%lf", &frac) == 1 && frac >= 0 &&
            frac < 1 && ctl && ctl->progress &&
            ctl->progress(ctl->ctx, 0.95 * frac)) {
            free(s);
            status = stop_group(pid);
            stopped = 1;
            break;
        }
        free(s);
        if (!s && ctl && ctl->progress && ctl->progress(ctl->ctx, 0.0)) {
            status = stop_group(pid);
            stopped = 1;
            break;
        }
        nanosleep(&(struct timespec){0, 100000000}, NULL);
    }
    if (!stopped)
        kill(-pid, SIGKILL); /* no rank outlives its launcher */
    if (stopped) {
        files_remove(&f);
        srv_log(SRV_INFO, "mpi_fit_stopped", "job %s: worker group %ld "
                "ended", job_id, (long)pid);
        km_error c = {KM_ECANCELLED, "fit cancelled"};
        return api_fail_km(e, &c);
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        rc = worker_error(&f, status, e);
        files_remove(&f);
        srv_log(SRV_WARN, "mpi_fit_failed", "job %s: %s", job_id, e->message);
        return rc;
    }
    unsigned char *mb = srv_file_read(f.out, (size_t)64 << 30, &len);
    files_remove(&f);
    if (!mb)
        return api_raise(e, API_INTERNAL, "the MPI worker wrote no model");
    st = km_model_load_buffer(mb, len, out, &kerr);
    free(mb);
    if (st != KM_OK)
        return api_raise(e, API_INTERNAL, "the MPI worker's model does not "
                         "load: %s", kerr.message);
    return 0;
}
