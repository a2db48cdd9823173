/*
 * srv_mpi.c - distributed exact fits through kmserve-mpi; see srv_mpi.h.
 *
 * The launch command is split into argv here, never by a shell: words
 * are separated by blanks, and '...' or "..." quote blanks (no escapes,
 * variables or globs), so a value from the environment cannot inject a
 * command. The worker's arguments follow it: kmserve-mpi --request R
 * --output O --status S --error E --memory-budget-mb MB [--block NB]
 * --heartbeat P --heartbeat-interval T.
 *
 * Staging files live in the models directory (shared storage on a
 * cluster), named .kmserve-mpi-HOST-PID-JOB.{req,out,status,err,log} and
 * .rankR, rank R's liveness record (cmn_beat.h), the P above (the
 * worker's own temporaries add .tmp); the store's scans read only
 * NAME.kmm files and leave them alone.
 *
 * Liveness (check, docs/distributed.md): while the launcher runs, the
 * job polls every 100 ms and ends it when a rank is not up within
 * --mpi-start-timeout, goes silent for --mpi-heartbeat-timeout, dies on
 * this host without its exit record, or when the others do not follow a
 * rank's exit within --mpi-heartbeat-timeout; the launcher leads a
 * session of its own, and every process left in it is killed (sweep).
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
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../common/cmn_beat.h"
#include "../common/cmn_file.h"
#include "srv_clock.h"
#include "srv_log.h"
#include "srv_mpi.h"

extern char **environ;

#define MAX_ARGS 64
/* argv entries the daemon adds after the launch command's words */
#define OUR_ARGS 20
#define PREFIX ".kmserve-mpi-"
/* Seconds between SIGTERM and SIGKILL of a worker that is stopped. */
#define KILL_GRACE 3.0
/* Seconds the sweep of a job's session may take (it SIGKILLs). */
#define SWEEP_MAX 10.0

struct srv_mpi {
    char *words;             /* the launch command's words, NUL-separated */
    char *argv[MAX_ARGS];    /* into words */
    int argc;
    int ranks, block;
    size_t rank_budget;      /* bytes per rank */
    double start_timeout;    /* --mpi-start-timeout */
    double beat_timeout;     /* --mpi-heartbeat-timeout */
    double beat_interval;    /* the ranks' heartbeat period */
    char worker[PATH_MAX + 16];
    char dir[PATH_MAX];
    char host[64];
    char where[96];          /* cmn_beat_where: a rank with this is local */
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
        if (m->argc == MAX_ARGS - OUR_ARGS)
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
                 "than %d words", MAX_ARGS - OUR_ARGS);
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
    m->start_timeout = c->mpi_start_timeout > 0 ? c->mpi_start_timeout : 120;
    m->beat_timeout = c->mpi_heartbeat_timeout > 0 ? c->mpi_heartbeat_timeout
                                                   : 30;
    m->beat_interval = m->beat_timeout / 10 > 1.0   ? 1.0
                       : m->beat_timeout / 10 < 0.1 ? 0.1
                                                    : m->beat_timeout / 10;
    cmn_beat_where(m->where, sizeof m->where);
    /* the ranks that outlive their launcher come to this process to be
     * reaped (see sweep) */
    if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0)
        srv_log(SRV_WARN, "mpi_subreaper", "cannot become a subreaper: %s; "
                "a rank orphaned by its launcher is reaped by init",
                strerror(errno));
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

/* ------------------------------------------------------------ routing
 *
 * What runs distributed, why not, and the memory figures are each
 * algorithm's (core's descriptor: km_algorithm_mpi_*); the daemon picks
 * the grid. */

/* NULL when the fit can run distributed, else why not (in buf or
 * static). */
static const char *unsupported(const api_fit_request *req, char *buf,
                               size_t len)
{
    if (req->search)
        return "a fit with a search cannot run distributed";
    return km_algorithm_mpi_refusal(req->algo, req->params, buf, len);
}

/* The largest rank's bytes (rank 0's) on the grid of m's ranks, as near
 * square as they divide. */
static size_t rank_bytes(const srv_mpi *m, const api_fit_request *req)
{
    size_t nb = m->block ? (size_t)m->block : 256, p = (size_t)m->ranks;
    size_t rows = 1;
    while ((rows + 1) * (rows + 1) <= p)
        rows++;
    while (p % rows)
        rows--;
    km_problem pb = api_fit_problem(req);
    return km_algorithm_mpi_rank_bytes(req->algo, req->params, &pb, nb, rows,
                                       p / rows);
}

int srv_mpi_route(const srv_mpi *m, api_fit_request *req, size_t local_budget,
                  size_t *bytes, api_error *e)
{
    if (!req->distributed) {
        /* auto whose exact fit does not fit here: the cluster's, if its
         * share fits there */
        _Alignas(16) unsigned char exact[sizeof req->params];
        if (!m || req->search ||
            km_algorithm_params_size(req->algo) > sizeof exact ||
            !km_algorithm_mpi_routes_auto(req->algo, req->params, exact))
            return 0;
        km_problem pb = api_fit_problem(req);
        size_t need = km_algorithm_fit_bytes(req->algo, exact, &pb);
        if (need <= local_budget || rank_bytes(m, req) > m->rank_budget)
            return 0;
        req->distributed = 1;
    }
    if (!m)
        return api_invalid(e, "distributed: the server was started without "
                           "--mpi-launch");
    char buf[160];
    const char *why = unsupported(req, buf, sizeof buf);
    if (why)
        return api_invalid(e, "distributed: %s", why);
    size_t share = rank_bytes(m, req);
    if (share > m->rank_budget)
        return api_raise(e, API_PAYLOAD_TOO_LARGE, "the distributed fit "
                         "needs an estimated %.1f MiB on its largest rank; "
                         "the per-rank budget (--mpi-memory-budget-mb) is "
                         "%.1f MiB over %d ranks", share / 1048576.0,
                         m->rank_budget / 1048576.0, m->ranks);
    km_problem pb = api_fit_problem(req);
    *bytes = km_algorithm_mpi_local_bytes(req->algo, req->params, &pb);
    return 0;
}

/* ------------------------------------------------------------ a fit */

typedef struct fit_files {
    char req[PATH_MAX + 160], out[PATH_MAX + 160], status[PATH_MAX + 160],
        err[PATH_MAX + 160], log[PATH_MAX + 160];
    char beat[PATH_MAX + 160]; /* rank R's liveness record: beat R */
    int ranks;
} fit_files;

/* The request first, the records last: a rank still beating (on another
 * host) sees the request gone after its write, removes its record and
 * exits (mpi/kmw_heart.c, heart_main). */
static void files_remove(const fit_files *f)
{
    const char *all[] = {f->req, f->out, f->status, f->err, f->log};
    char path[PATH_MAX + 192];
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) {
        unlink(all[i]);
        snprintf(path, sizeof path, "%s.tmp", all[i]);
        unlink(path);
    }
    for (int r = 0; r < f->ranks; r++) {
        snprintf(path, sizeof path, "%s%d", f->beat, r);
        unlink(path);
        snprintf(path, sizeof path, "%s%d.tmp", f->beat, r);
        unlink(path);
    }
}

/* ------------------------------------------------------------ processes */

/* The state letter of process pid (/proc/PID/stat) and its session in
 * *sid; 0 when there is no such process. */
static char proc_state(long pid, long *sid)
{
    char path[48], buf[512];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = 0;
    char *p = strrchr(buf, ')'); /* after the command, which may hold ')' */
    char st = 0;
    long ppid, pgrp;
    if (!p || sscanf(p + 1, " %c %ld %ld %ld", &st, &ppid, &pgrp, sid) != 4)
        return 0;
    return st;
}

/* 1 when the launcher pid has ended (it is not reaped, so its pid, its
 * group and its session stay its own until the caller reaps it). */
static int launcher_ended(pid_t pid)
{
    siginfo_t si;
    memset(&si, 0, sizeof si);
    int rc;
    while ((rc = waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG |
                                                  WNOWAIT)) < 0 &&
           errno == EINTR)
        ;
    return rc < 0 || si.si_pid == pid; /* ECHILD: nothing left to wait for */
}

/*
 * Ends what is left of session sid, the launcher's. The launcher's
 * process group is not enough: OpenMPI's mpirun puts each local rank in a
 * group of its own, but all stay in the session the launcher leads.
 * SIGKILLs every live process in it and reaps the dead that are this
 * daemon's children (a rank orphaned by its launcher comes here:
 * srv_mpi_create makes the daemon a subreaper), but not the launcher,
 * which the caller reaps; until a pass finds nothing to kill or reap, at
 * most SWEEP_MAX s. Returns how many were still alive then.
 */
static int sweep(pid_t sid)
{
    if (sid <= 1 || sid == getsid(0))
        return 0; /* never the daemon's own session */
    double t0 = srv_mono();
    for (;;) {
        int alive = 0, reaped = 0;
        DIR *d = opendir("/proc");
        if (!d)
            return -1;
        struct dirent *e;
        while ((e = readdir(d))) {
            char *end;
            long p = strtol(e->d_name, &end, 10), s = 0;
            char st = *end || p < 1 ? 0 : proc_state(p, &s);
            if (!st || s != (long)sid)
                continue;
            if (st != 'Z' && st != 'X') {
                kill((pid_t)p, SIGKILL);
                alive++;
            } else if (p != (long)sid &&
                       waitpid((pid_t)p, NULL, WNOHANG) == (pid_t)p) {
                reaped++;
            }
        }
        closedir(d);
        if (!alive && !reaped)
            return 0;
        if (srv_mono() - t0 > SWEEP_MAX)
            return alive;
        nanosleep(&(struct timespec){0, 20000000}, NULL);
    }
}

/* Ends the job's processes once the launcher has ended, or stops them:
 * with grace > 0 first SIGTERM to the launcher's group (mpirun passes it
 * to the ranks) and up to grace s for the launcher to end; then SIGKILL
 * to the group, the session's sweep, and the launcher reaped. Its wait
 * status. */
static int end_job(pid_t pid, double grace, const char *job_id)
{
    if (grace > 0) {
        kill(-pid, SIGTERM);
        double t0 = srv_mono();
        while (!launcher_ended(pid) && srv_mono() - t0 < grace)
            nanosleep(&(struct timespec){0, 50000000}, NULL);
    }
    kill(-pid, SIGKILL);
    int left = sweep(pid), status = 0;
    if (left < 0)
        srv_log(SRV_WARN, "mpi_sweep", "job %s: cannot list /proc to end "
                "what is left of the launcher's session %ld", job_id,
                (long)pid);
    else if (left)
        srv_log(SRV_WARN, "mpi_sweep", "job %s: %d processes of the "
                "launcher's session %ld did not end", job_id, left,
                (long)pid);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    return status;
}

/* ------------------------------------------------------------ liveness */

/* What the daemon knows of one rank, from its records (cmn_beat.h). */
typedef struct rank_seen {
    cmn_beat rec;     /* the last record read; rec.pid 0: none yet */
    double heard;     /* when rec.beat (or rec.pid) last changed */
    double exited;    /* when its exit record was first read; 0: not yet */
    int local;        /* rec.where is this daemon's: rec.pid is in /proc */
} rank_seen;

typedef struct watch {
    const srv_mpi *m;
    const fit_files *f;
    rank_seen *r;       /* m->ranks */
    double launched, next_read, first_exit;
} watch;

static void read_rank(watch *w, int i, double now)
{
    char path[PATH_MAX + 192];
    cmn_beat b;
    snprintf(path, sizeof path, "%s%d", w->f->beat, i);
    if (cmn_beat_read(path, &b) != 0 || b.rank != i)
        return; /* none yet, or torn: what was known stands */
    rank_seen *s = &w->r[i];
    if (!s->rec.pid || b.pid != s->rec.pid || b.beat != s->rec.beat)
        s->heard = now;
    s->rec = b;
    s->local = strcmp(b.where, "-") != 0 && !strcmp(b.where, w->m->where);
    int code;
    if (!s->exited && cmn_beat_exited(&b, &code)) {
        s->exited = now;
        if (!w->first_exit)
            w->first_exit = now;
    }
}

/* 1 when the local process pid is gone or dead (a zombie). */
static int proc_dead(long pid)
{
    long sid;
    char st = proc_state(pid, &sid);
    return !st || st == 'Z' || st == 'X';
}

/*
 * The liveness rule (docs/distributed.md), once a poll while the launcher
 * runs: 0 while the job may go on; -1 with why set when it must be
 * stopped and failed: every rank up (out of MPI_Init) within
 * --mpi-start-timeout of the launch; no rank silent for
 * --mpi-heartbeat-timeout; no rank of this host dead without its exit
 * record; once one rank has exited, the others and the launcher within
 * --mpi-heartbeat-timeout. 1 when every rank exited 0 and only the
 * launcher lingers: the model is written, the job may take it.
 */
static int check(watch *w, double now, char *why, size_t len)
{
    const srv_mpi *m = w->m;
    if (now >= w->next_read) {
        for (int i = 0; i < m->ranks; i++)
            read_rank(w, i, now);
        w->next_read = now + m->beat_interval;
    }
    int up = 0, done = 0, ok = 0, code = 0, first_down = -1, running = -1;
    for (int i = 0; i < m->ranks; i++) {
        rank_seen *s = &w->r[i];
        int dead = s->rec.pid && !s->exited && s->local &&
                   proc_dead(s->rec.pid);
        if (dead) /* its exit record, written before it ended, may be new */
            read_rank(w, i, now);
        if (s->exited) {
            cmn_beat_exited(&s->rec, &code);
            up++, done++, ok += code == 0;
            continue;
        }
        if (dead) {
            snprintf(why, len, "rank %d (pid %ld) died in phase %s", i,
                     s->rec.pid, s->rec.phase);
            return -1;
        }
        if (s->rec.pid && now - s->heard > m->beat_timeout) {
            snprintf(why, len, "rank %d (pid %ld) sent no heartbeat for "
                     "%.0f s in phase %s (--mpi-heartbeat-timeout %g s)", i,
                     s->rec.pid, now - s->heard, s->rec.phase,
                     m->beat_timeout);
            return -1;
        }
        if (s->rec.pid && strcmp(s->rec.phase, CMN_BEAT_PHASE_INIT))
            up++;
        else if (first_down < 0)
            first_down = i;
        if (running < 0)
            running = i;
    }
    if (up < m->ranks && now - w->launched > m->start_timeout) {
        snprintf(why, len, "rank %d of %d %s %.0f s after the launch "
                 "(--mpi-start-timeout %g s)", first_down, m->ranks,
                 w->r[first_down].rec.pid ? "was still in MPI_Init"
                                          : "had not started",
                 now - w->launched, m->start_timeout);
        return -1;
    }
    if (w->first_exit && now - w->first_exit > m->beat_timeout) {
        if (done == m->ranks && ok == m->ranks)
            return 1;
        if (running >= 0)
            snprintf(why, len, "a rank exited %.0f s ago, but rank %d is "
                     "still in phase %s (--mpi-heartbeat-timeout %g s)",
                     now - w->first_exit, running, w->r[running].rec.phase,
                     m->beat_timeout);
        else
            snprintf(why, len, "every rank exited, but the launcher did not "
                     "end within --mpi-heartbeat-timeout (%g s)",
                     m->beat_timeout);
        return -1;
    }
    return 0;
}

/* The worker's failure as the job's error: its error file ("status
 * message"), else how the launcher ended and the last line it printed. */
static int worker_error(const fit_files *f, int status, api_error *e)
{
    size_t len = 0;
    unsigned char *b = cmn_file_read(f->err, 4096, &len);
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
    unsigned char *log = cmn_file_read(f->log, (size_t)1 << 20, &len);
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

/* Starts the launch command and the worker in a session (and so a
 * process group) of its own, with stdout and stderr to the log file. */
static int spawn(const srv_mpi *m, const fit_files *f, const char *budget,
                 const char *block, const char *interval, pid_t *pid)
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
    argv[a++] = "--heartbeat";
    argv[a++] = (char *)f->beat;
    argv[a++] = "--heartbeat-interval";
    argv[a++] = (char *)interval;
    argv[a] = NULL;
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    posix_spawn_file_actions_init(&fa);
    posix_spawnattr_init(&at);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, f->log,
                                     O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &all);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSID |
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
    snprintf(f.beat, sizeof f.beat, "%s.rank", base);
    f.ranks = m->ranks;

    watch w = {m, &f, calloc((size_t)m->ranks, sizeof(rank_seen)), 0, 0, 0};
    if (!w.r)
        return api_raise(e, API_INTERNAL, "out of memory for %d ranks",
                         m->ranks);
    km_error kerr = {KM_OK, ""};
    km_problem pb = api_fit_problem(req);
    unsigned char *buf = NULL;
    size_t len = 0;
    int rc = -1;
    km_status st = km_request_save_buffer(req->algo, &req->kernel,
                                          req->params, &req->pre, &pb, &buf,
                                          &len, &kerr);
    if (st != KM_OK) {
        rc = api_fail_km(e, &kerr);
        goto out;
    }
    int wrote = cmn_file_write(f.req, buf, len, 1, 0600);
    free(buf);
    if (wrote != 0) {
        rc = api_raise(e, API_INSUFFICIENT_STORAGE, "cannot write the "
                       "staging file in the models directory: %s",
                       strerror(errno));
        goto out;
    }
    char budget[32], block[16] = "", interval[32];
    snprintf(budget, sizeof budget, "%zu", m->rank_budget >> 20);
    if (m->block)
        snprintf(block, sizeof block, "%d", m->block);
    snprintf(interval, sizeof interval, "%g", m->beat_interval);
    pid_t pid;
    int sp = spawn(m, &f, budget, block, interval, &pid);
    if (sp != 0) {
        rc = api_raise(e, API_INTERNAL, "cannot start %s: %s", m->argv[0],
                       strerror(sp));
        goto out;
    }
    w.launched = srv_mono();
    srv_log(SRV_INFO, "mpi_fit_started", "job %s: %s with %d ranks, pid %ld",
            job_id, m->argv[0], m->ranks, (long)pid);
    enum { ENDED, CANCELLED, DEAD, LINGERED } how = ENDED;
    char why[320] = "";
    for (;;) {
        if (launcher_ended(pid))
            break;
        size_t sl = 0;
        unsigned char *s = cmn_file_read(f.status, 256, &sl);
        double frac = 0;
        int stop = ctl && ctl->progress &&
                   (s ? sscanf((char *)s, "%lf", &frac) == 1 && frac >= 0 &&
                            frac < 1 && ctl->progress(ctl->ctx, 0.95 * frac)
                      : ctl->progress(ctl->ctx, 0.0));
        free(s);
        if (stop) {
            how = CANCELLED;
            break;
        }
        int live = check(&w, srv_mono(), why, sizeof why);
        if (live) {
            how = live < 0 ? DEAD : LINGERED;
            break;
        }
        nanosleep(&(struct timespec){0, 100000000}, NULL);
    }
    /* no process of the job outlives it, here or (through the launcher's
     * SIGTERM) on other hosts */
    int status = end_job(pid, how == ENDED ? 0 : KILL_GRACE, job_id);
    if (how == CANCELLED) {
        srv_log(SRV_INFO, "mpi_fit_stopped", "job %s: worker group %ld "
                "ended", job_id, (long)pid);
        km_error c = {KM_ECANCELLED, "fit cancelled"};
        rc = api_fail_km(e, &c);
        goto out;
    }
    if (how == DEAD) {
        rc = api_raise(e, API_INTERNAL, "the distributed fit failed: %s; "
                       "its processes were ended", why);
        srv_log(SRV_WARN, "mpi_fit_failed", "job %s: %s", job_id, e->message);
        goto out;
    }
    if (how == LINGERED) {
        srv_log(SRV_WARN, "mpi_launcher_lingered", "job %s: every rank "
                "exited 0 but %s did not end within %g s; ended it", job_id,
                m->argv[0], m->beat_timeout);
        status = 0;
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        rc = worker_error(&f, status, e);
        srv_log(SRV_WARN, "mpi_fit_failed", "job %s: %s", job_id, e->message);
        goto out;
    }
    unsigned char *mb = cmn_file_read(f.out, (size_t)64 << 30, &len);
    if (!mb) {
        rc = api_raise(e, API_INTERNAL, "the MPI worker wrote no model");
        goto out;
    }
    st = km_model_load_buffer(mb, len, out, &kerr);
    free(mb);
    rc = st == KM_OK ? 0
                     : api_raise(e, API_INTERNAL, "the MPI worker's model "
                                 "does not load: %s", kerr.message);
out:
    files_remove(&f);
    free(w.r);
    return rc;
}
