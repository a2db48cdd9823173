/*
 * srv_config.h - the daemon's configuration, from flags and environment.
 *
 * Every option has a flag (--models-dir), an environment variable
 * (KMSERVE_MODELS_DIR) and a default, all in one table in srv_config.c,
 * which also prints --help. A flag wins over the environment.
 *
 * Thread-safety: filled once at start, read-only afterwards.
 */
#ifndef SRV_CONFIG_H
#define SRV_CONFIG_H

#include <stddef.h>

typedef struct srv_config {
    char listen[256];        /* host:port */
    char models_dir[1024];
    double max_body_mb;      /* request body limit */
    int connection_timeout;  /* seconds of inactivity before a close */
    double header_timeout;   /* seconds to receive a request's headers */
    double body_timeout;     /* seconds to receive a request's body */
    int http_threads;        /* libmicrohttpd thread pool */
    int max_connections;
    double memory_budget_mb; /* for fits; 0 = 75% of physical memory */
    int access_log;
    int workers;             /* fit worker threads; 0 = cores / blas */
    int blas_threads;        /* BLAS threads per fit; 0 = cores / workers */
    int queue;               /* fits that may wait for a worker */
    double job_ttl;          /* seconds finished jobs stay visible */
    int max_jobs;            /* most jobs kept; oldest finished dropped */
    double shutdown_timeout; /* seconds running fits get at SIGTERM */
    double watch_interval;   /* seconds between directory scans; 0 = off */
    double fit_timeout;      /* seconds a fit may run; 0 = no limit */
    char token_file[1024];   /* "" = no tokens */
    int protect_metrics;
    char tls_cert[1024], tls_key[1024]; /* PEM files; "" = plain HTTP */
    char log_level[16];      /* debug, info, warn, error */
    int keep_versions;       /* versions kept per model, current included */
    int factor_files_mib;    /* factors of this many MiB go to block files */
    char mpi_launch[1024];   /* "" = no distributed fits (srv_mpi.h) */
    int mpi_ranks;           /* 0 = the launch command's -np / -n */
    int mpi_block;           /* ScaLAPACK block size; 0 = the worker's */
    double mpi_memory_budget_mb; /* per rank */
    char mpi_worker[1024];   /* "" = kmserve-mpi beside kmserve */
    double mpi_start_timeout;     /* seconds until every rank is up */
    double mpi_heartbeat_timeout; /* seconds a rank may go silent */
    int drift;                    /* keep drift reservoirs (srv_drift.h) */
    int drift_reservoir_rows;
    int drift_window_rows;        /* 0 = no window by count */
    double drift_window_seconds;  /* 0 = no window by time */
    int drift_min_rows;
    double drift_cache_seconds;
    double drift_refresh_seconds; /* 0 = no scheduled tests */
} srv_config;

/* Parses argv over the environment and the defaults. Returns 0 to run,
 * 1 when --help or --version printed and the caller should exit 0, and
 * -1 on an error (printed to stderr). */
int srv_config_parse(srv_config *c, int argc, char **argv);

#endif
