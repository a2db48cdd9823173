/*
 * srv_config.c - flags, environment, defaults, and --help, from one table.
 *
 * Thread-safety: used by main() before any thread starts.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../core/km.h"
#include "srv_config.h"

typedef enum { OPT_STR, OPT_INT, OPT_NUM, OPT_BOOL } opt_type;

static const struct option_def {
    const char *flag, *env, *def, *help;
    opt_type type;
    size_t offset, size;
    double lo, hi;
} options[] = {
#define S(field) offsetof(srv_config, field), sizeof(((srv_config *)0)->field)
    {"listen", "KMSERVE_LISTEN", "127.0.0.1:8080",
     "address and port to listen on (host:port; 0.0.0.0 for all)", OPT_STR,
     S(listen), 0, 0},
    {"models-dir", "KMSERVE_MODELS_DIR", "./var/models",
     "directory of model files (created if missing)", OPT_STR, S(models_dir),
     0, 0},
    {"max-body-mb", "KMSERVE_MAX_BODY_MB", "64",
     "largest request body in MiB; larger is answered 413", OPT_NUM,
     S(max_body_mb), 0.001, 65536},
    {"connection-timeout", "KMSERVE_CONNECTION_TIMEOUT", "30",
     "seconds a connection may stay idle before it is closed", OPT_INT,
     S(connection_timeout), 1, 86400},
    {"header-timeout", "KMSERVE_HEADER_TIMEOUT", "10",
     "seconds a connection may take to send a request's headers, counted "
     "from its opening or from the end of its previous request (so also "
     "the longest idle keep-alive); then it is closed", OPT_NUM,
     S(header_timeout), 0.1, 86400},
    {"body-timeout", "KMSERVE_BODY_TIMEOUT", "120",
     "seconds a request may take to send its body once its headers are in; "
     "then the connection is closed", OPT_NUM, S(body_timeout), 0.1, 86400},
    {"http-threads", "KMSERVE_HTTP_THREADS", "4",
     "threads serving HTTP (predicts run on them)", OPT_INT, S(http_threads),
     1, 256},
    {"max-connections", "KMSERVE_MAX_CONNECTIONS", "512",
     "most connections open at once (N); more wait to be accepted. A "
     "reserve of N/8 (at least 1 when N >= 2) is kept for requests whose "
     "headers are in: when more than N minus the reserve wait for headers, "
     "the one that has waited longest is closed", OPT_INT,
     S(max_connections), 1, 100000},
    {"memory-budget-mb", "KMSERVE_MEMORY_BUDGET_MB", "0",
     "memory fits and predicts may use in MiB (0: 75% of physical "
     "memory); a fit or predict estimated above what is left is answered "
     "413", OPT_NUM, S(memory_budget_mb), 0,
     1e9},
    {"log-level", "KMSERVE_LOG_LEVEL", "info",
     "least severe event logged: debug, info, warn or error", OPT_STR,
     S(log_level), 0, 0},
    {"access-log", "KMSERVE_ACCESS_LOG", "true",
     "one JSON line per request on stderr, written in batches at most "
     "100 ms late (true or false)", OPT_BOOL,
     S(access_log), 0, 0},
    {"workers", "KMSERVE_WORKERS", "0",
     "fit worker threads (0: cores / blas-threads when that is set, "
     "else 1)", OPT_INT,
     S(workers), 0, 256},
    {"blas-threads", "KMSERVE_BLAS_THREADS", "0",
     "BLAS threads inside one fit (0: cores / workers, at least 1)", OPT_INT,
     S(blas_threads), 0, 256},
    {"queue", "KMSERVE_QUEUE", "16",
     "fits that may wait for a worker; more are answered 429", OPT_INT,
     S(queue), 1, 100000},
    {"job-ttl", "KMSERVE_JOB_TTL", "3600",
     "seconds a finished job stays visible at /v1/jobs/{id}", OPT_NUM,
     S(job_ttl), 0, 1e9},
    {"max-jobs", "KMSERVE_MAX_JOBS", "10000",
     "most jobs kept for /v1/jobs (about 7 KiB each): a new job drops the "
     "oldest finished one; when all are queued or running a fit is "
     "answered 429", OPT_INT, S(max_jobs), 1, 10000000},
    {"shutdown-timeout", "KMSERVE_SHUTDOWN_TIMEOUT", "30",
     "seconds running fits may finish after SIGTERM before they are "
     "cancelled", OPT_NUM, S(shutdown_timeout), 0, 86400},
    {"watch-interval", "KMSERVE_WATCH_INTERVAL", "2",
     "seconds between scans of the models directory for files other "
     "replicas wrote or removed (0: only at start and on SIGHUP)", OPT_NUM,
     S(watch_interval), 0, 86400},
    {"fit-timeout", "KMSERVE_FIT_TIMEOUT", "0",
     "seconds a fit may run before it is stopped (0: no limit)", OPT_NUM,
     S(fit_timeout), 0, 1e9},
    {"token-file", "KMSERVE_TOKEN_FILE", "",
     "file of bearer tokens, one \"TOKEN SCOPE\" per line, SCOPE read or "
     "admin (empty: no tokens, all open)", OPT_STR, S(token_file), 0, 0},
    {"protect-metrics", "KMSERVE_PROTECT_METRICS", "false",
     "with tokens, /metrics needs a read token too", OPT_BOOL,
     S(protect_metrics), 0, 0},
    {"tls-cert", "KMSERVE_TLS_CERT", "",
     "PEM certificate (chain) for HTTPS; with --tls-key", OPT_STR,
     S(tls_cert), 0, 0},
    {"tls-key", "KMSERVE_TLS_KEY", "", "PEM private key for HTTPS", OPT_STR,
     S(tls_key), 0, 0},
    {"keep-versions", "KMSERVE_KEEP_VERSIONS", "1",
     "versions of each model kept on disk, the current one included (1: "
     "only the current one); older ones answer pinned requests and "
     "rollbacks, read from disk when asked", OPT_INT, S(keep_versions), 1,
     1000000},
    {"factor-files-mib", "KMSERVE_FACTOR_FILES_MIB", "16",
     "a model's Cholesky factor (exact gpr, krr with keep_factor) of this "
     "many MiB or more is stored in block files beside its model file, "
     "shared by its versions, so that an update writes only its new rows "
     "(0: every factor)", OPT_INT, S(factor_files_mib), 0, 1048576},
    {"mpi-launch", "KMSERVE_MPI_LAUNCH", "",
     "command that starts the MPI worker for distributed exact fits, e.g. "
     "\"mpirun -np 4 --hostfile /etc/kmserve/hosts\" (split into words "
     "without a shell; quotes group; empty: off)", OPT_STR, S(mpi_launch),
     0, 0},
    {"mpi-ranks", "KMSERVE_MPI_RANKS", "0",
     "ranks the launch command starts (0: its -np, -n or --ntasks)", OPT_INT,
     S(mpi_ranks), 0, 1000000},
    {"mpi-block", "KMSERVE_MPI_BLOCK", "0",
     "ScaLAPACK block size, 16 .. 1024 (0: the worker's measured default)",
     OPT_INT, S(mpi_block), 0, 1024},
    {"mpi-memory-budget-mb", "KMSERVE_MPI_MEMORY_BUDGET_MB", "1024",
     "memory of one MPI rank in MiB: a distributed fit whose largest rank "
     "needs more is answered 413", OPT_NUM, S(mpi_memory_budget_mb), 1,
     1099511627776.0},
    {"mpi-worker", "KMSERVE_MPI_WORKER", "",
     "path of kmserve-mpi (empty: beside the kmserve executable)", OPT_STR,
     S(mpi_worker), 0, 0},
    {"mpi-start-timeout", "KMSERVE_MPI_START_TIMEOUT", "120",
     "seconds from a distributed fit's launch until every rank has "
     "returned from MPI_Init; then the fit fails and its processes are "
     "killed", OPT_NUM, S(mpi_start_timeout), 1, 86400},
    {"mpi-heartbeat-timeout", "KMSERVE_MPI_HEARTBEAT_TIMEOUT", "30",
     "seconds a rank of a distributed fit may go without a heartbeat "
     "(ranks beat every timeout/10 s, within 0.1 .. 1 s); then the fit fails "
     "and its processes are killed", OPT_NUM, S(mpi_heartbeat_timeout), 1,
     86400},
    {"drift", "KMSERVE_DRIFT", "true",
     "keep, per model, a reservoir of the rows it is asked to predict "
     "(predict, project, v2 infer) for GET /v1/models/{name}/drift; in "
     "memory only, counted against the memory budget (true or false)",
     OPT_BOOL, S(drift), 0, 0},
    {"drift-reservoir-rows", "KMSERVE_DRIFT_RESERVOIR_ROWS", "1000",
     "rows each model's drift reservoir holds", OPT_INT,
     S(drift_reservoir_rows), 2, 100000},
    {"drift-window-rows", "KMSERVE_DRIFT_WINDOW_ROWS", "0",
     "the drift test's window by count: only rows among the last N asked "
     "are tested, and once full the reservoir takes a new row with "
     "probability rows/N (0: every row since the model was served, a "
     "uniform sample)", OPT_INT, S(drift_window_rows), 0, 1000000000},
    {"drift-window-seconds", "KMSERVE_DRIFT_WINDOW_SECONDS", "0",
     "the drift test's window by time: only rows asked in the last N "
     "seconds are tested (0: no limit)", OPT_NUM, S(drift_window_seconds),
     0, 1e9},
    {"drift-min-rows", "KMSERVE_DRIFT_MIN_ROWS", "20",
     "fewest recent rows a drift test runs on; fewer is answered 409",
     OPT_INT, S(drift_min_rows), 2, 100000},
    {"drift-cache-seconds", "KMSERVE_DRIFT_CACHE_SECONDS", "60",
     "seconds a drift answer is reused for the same model version, "
     "permutations and seed (0: always recompute)", OPT_NUM,
     S(drift_cache_seconds), 0, 1e9},
    {"drift-refresh-seconds", "KMSERVE_DRIFT_REFRESH_SECONDS", "0",
     "seconds between drift tests of every model with enough recent rows, "
     "run as jobs, for /metrics' kmserve_model_drift_* (0: off)", OPT_NUM,
     S(drift_refresh_seconds), 0, 1e9},
#undef S
};

#define N_OPTIONS (sizeof options / sizeof *options)

static void usage(FILE *f)
{
    fprintf(f, "usage: kmserve [options]\n\n"
               "Serves kernel-method models over HTTP/JSON. Every option may "
               "also be set\nby its environment variable; a flag wins.\n\n");
    for (size_t i = 0; i < N_OPTIONS; i++)
        fprintf(f, "  --%s=VALUE\n      %s\n      env %s, default %s\n",
                options[i].flag, options[i].help, options[i].env,
                *options[i].def ? options[i].def : "(none)");
    fprintf(f, "  --help       this text\n  --version    print the version\n");
}

/* Stores text as option o's value; -1 with a message when it is bad. */
static int set(srv_config *c, const struct option_def *o, const char *text,
               const char *source)
{
    char *dst = (char *)c + o->offset, *end;
    errno = 0;
    switch (o->type) {
    case OPT_STR:
        if (strlen(text) >= o->size || (!*text && *o->def)) {
            fprintf(stderr, "kmserve: %s: value must be 1 to %zu characters\n",
                    source, o->size - 1);
            return -1;
        }
        memcpy(dst, text, strlen(text) + 1);
        return 0;
    case OPT_BOOL:
        if (!strcmp(text, "true") || !strcmp(text, "1") || !strcmp(text, "yes"))
            *(int *)dst = 1;
        else if (!strcmp(text, "false") || !strcmp(text, "0") ||
                 !strcmp(text, "no"))
            *(int *)dst = 0;
        else {
            fprintf(stderr, "kmserve: %s: expected true or false, not '%s'\n",
                    source, text);
            return -1;
        }
        return 0;
    case OPT_INT:
    case OPT_NUM: {
        double v = strtod(text, &end);
        if (errno || end == text || *end || v < o->lo || v > o->hi ||
            (o->type == OPT_INT && v != (double)(long)v)) {
            fprintf(stderr, "kmserve: %s: expected a %s from %g to %g, not "
                    "'%s'\n", source, o->type == OPT_INT ? "whole number"
                    : "number", o->lo, o->hi, text);
            return -1;
        }
        if (o->type == OPT_INT)
            *(int *)dst = (int)v;
        else
            *(double *)dst = v;
        return 0;
    }
    }
    return -1;
}

int srv_config_parse(srv_config *c, int argc, char **argv)
{
    memset(c, 0, sizeof *c);
    for (size_t i = 0; i < N_OPTIONS; i++) {
        const char *env = getenv(options[i].env);
        if (set(c, &options[i], options[i].def, "default") ||
            (env && set(c, &options[i], env, options[i].env)))
            return -1;
    }
    for (int a = 1; a < argc; a++) {
        const char *arg = argv[a];
        if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
            usage(stdout);
            return 1;
        }
        if (!strcmp(arg, "--version")) {
            printf("kmserve %s\nOpenBLAS kernels: %s\n", KM_VERSION,
                   km_blas_core());
            return 1;
        }
        if (strncmp(arg, "--", 2) != 0) {
            fprintf(stderr, "kmserve: unexpected argument '%s' (see --help)\n",
                    arg);
            return -1;
        }
        const char *name = arg + 2, *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        const struct option_def *o = NULL;
        for (size_t i = 0; i < N_OPTIONS && !o; i++)
            if (strlen(options[i].flag) == len &&
                !strncmp(options[i].flag, name, len))
                o = &options[i];
        if (!o) {
            fprintf(stderr, "kmserve: unknown option '%s' (see --help)\n", arg);
            return -1;
        }
        const char *value = eq ? eq + 1 : NULL;
        if (!value) {
            if (a + 1 >= argc) {
                fprintf(stderr, "kmserve: --%s needs a value\n", o->flag);
                return -1;
            }
            value = argv[++a];
        }
        if (set(c, o, value, arg))
            return -1;
    }
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (cores < 1)
        cores = 1;
    if (c->workers == 0)
        c->workers = c->blas_threads ? (int)(cores / c->blas_threads) : 1;
    if (c->workers < 1)
        c->workers = 1;
    if (c->blas_threads == 0)
        c->blas_threads = (int)(cores / c->workers);
    if (c->blas_threads < 1)
        c->blas_threads = 1;
    if (!c->tls_cert[0] != !c->tls_key[0]) {
        fprintf(stderr, "kmserve: --tls-cert and --tls-key go together\n");
        return -1;
    }
    if (c->memory_budget_mb == 0)
        c->memory_budget_mb = (double)km_default_memory_budget() / 1048576.0;
    return 0;
}
