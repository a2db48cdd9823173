/*
 * kmserve.c - the daemon's main(): configuration, start-up in order
 * (store, HTTP, models, workers), the signal loop, and a graceful stop.
 *
 * Signals are blocked in every thread and taken synchronously here with
 * sigwait, so no handler runs in an async-signal context:
 *   SIGTERM, SIGINT  drain (see below) and exit 0
 *   SIGHUP           rescan the models directory
 * SIGPIPE and SIGXFSZ are ignored: a closed connection or a file over the
 * size limit is an error of the call, answered as such.
 * Except in threads that libraries start before main() runs (OpenBLAS
 * starts its pool from a constructor): the kernel may hand them a signal
 * meant for the process, whose default action would end it without a
 * drain. For those a handler passes the signal on to the main thread.
 *
 * OpenBLAS picks its kernels when it loads, before main(); on a CPU it does
 * not know it runs its slowest ones (km_blas.c). Unless OPENBLAS_CORETYPE
 * is already set (the operator's choice, kept as it is), main() first
 * re-executes the daemon with the set this CPU can run. The process keeps
 * its PID and arguments; nothing has been opened yet.
 *
 * Thread-safety: main() owns srv_state's lifetime; see srv_state.h.
 */
#include <cblas.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../core/km.h"
#include "srv_daemon.h"
#include "srv_http.h"
#include "srv_log.h"
#include "srv_state.h"

/* OpenBLAS's own setter; declared here as Debian's cblas.h may lack it. */
void openblas_set_num_threads(int n);

/* A PEM file into memory (at most 1 MiB). */
static char *read_pem(const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    char *buf = f ? calloc(1, (1 << 20) + 1) : NULL;
    size_t n = buf ? fread(buf, 1, 1 << 20, f) : 0;
    if (f)
        fclose(f);
    if (!buf || n == 0 || n == (1 << 20)) {
        snprintf(err, errlen, "cannot read PEM file %s (missing, empty or "
                 "over 1 MiB)", path);
        free(buf);
        return NULL;
    }
    return buf;
}

/* See the top. Returns only when the kernels stay as they are: no advice,
 * the operator's choice, or an exec that failed (said on stderr). */
static void choose_blas_core(char **argv)
{
    const char *advice = km_blas_core_advice();
    if (!advice || getenv("OPENBLAS_CORETYPE"))
        return;
    if (setenv("OPENBLAS_CORETYPE", advice, 1) != 0)
        return;
    execv("/proc/self/exe", argv);
    fprintf(stderr, "kmserve: cannot re-execute with OPENBLAS_CORETYPE=%s "
            "(%s); OpenBLAS runs its %s kernels\n", advice, strerror(errno),
            km_blas_core());
    unsetenv("OPENBLAS_CORETYPE");
}

static pthread_t main_thread;

/* Runs only in threads that do not block the signals (see the top). */
static void forward_signal(int sig)
{
    pthread_kill(main_thread, sig); /* async-signal-safe */
}

static void wait_requests(srv_state *s, double seconds)
{
    struct timespec ts = {0, 20 * 1000 * 1000};
    for (double t = 0; t < seconds && atomic_load(&s->active_requests) > 0;
         t += 0.02)
        nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
    srv_state s;
    char err[512];
    memset(&s, 0, sizeof s);
    choose_blas_core(argv);
    int rc = srv_config_parse(&s.cfg, argc, argv);
    if (rc)
        return rc > 0 ? 0 : 2;
    rc = 1; /* until the daemon has run and stopped */
    if (srv_log_set_level(s.cfg.log_level) != 0) {
        fprintf(stderr, "kmserve: --log-level must be debug, info, warn or "
                "error\n");
        return 2;
    }
    openblas_set_num_threads(s.cfg.blas_threads);

    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL); /* inherited by all threads */
    main_thread = pthread_self();
    struct sigaction fwd = {.sa_handler = forward_signal,
                            .sa_flags = SA_RESTART};
    sigaction(SIGTERM, &fwd, NULL);
    sigaction(SIGINT, &fwd, NULL);
    sigaction(SIGHUP, &fwd, NULL);
    signal(SIGPIPE, SIG_IGN);
    /* a model file over RLIMIT_FSIZE (LimitFSIZE=, ulimit -f): the write
     * fails with EFBIG and the fit is refused (507), as on a full disk,
     * instead of the signal ending the daemon */
    signal(SIGXFSZ, SIG_IGN);
    if (srv_log_start() != 0) /* after the mask: the thread inherits it */
        fprintf(stderr, "kmserve: cannot start the log writer; access lines "
                "are written one by one\n");

    if (s.cfg.token_file[0]) {
        s.auth = srv_auth_load(s.cfg.token_file, err, sizeof err);
        if (!s.auth) {
            srv_log(SRV_ERROR, "start", "%s", err);
            goto fail;
        }
    }
    if (s.cfg.tls_cert[0] &&
        (!(s.tls_cert = read_pem(s.cfg.tls_cert, err, sizeof err)) ||
         !(s.tls_key = read_pem(s.cfg.tls_key, err, sizeof err)))) {
        srv_log(SRV_ERROR, "start", "%s", err);
        goto fail;
    }
    if (srv_daemon_open(&s, err, sizeof err) != 0) {
        srv_log(SRV_ERROR, "start", "%s", err);
        goto fail;
    }
    /* HTTP first, so probes see "loading" while models load. */
    srv_http *d = srv_http_start(&s, err, sizeof err);
    if (!d) {
        srv_log(SRV_ERROR, "start", "%s", err);
        goto fail;
    }
    pthread_mutex_t *commit_lock = srv_commit_lock(s.commit);
    size_t n = srv_store_sync(s.store, s.registry, commit_lock, NULL);
    if (srv_store_watch(s.store, s.registry, commit_lock,
                        s.cfg.watch_interval) != 0)
        srv_log(SRV_WARN, "watch", "cannot start the models directory watcher");
    atomic_store(&s.phase, SRV_READY);
    srv_log(SRV_INFO, "ready", "kmserve %s listening on %s%s; %zu models "
            "from %s; %d fit workers x %d BLAS threads (OpenBLAS kernels %s); "
            "memory budget %.0f MiB; %zu tokens", KM_VERSION, s.cfg.listen,
            s.tls_cert ? " (TLS)" : "", n, s.cfg.models_dir, s.cfg.workers,
            s.cfg.blas_threads, km_blas_core(), s.cfg.memory_budget_mb,
            srv_auth_count(s.auth));

    for (;;) {
        int sig = 0;
        if (sigwait(&sigs, &sig) != 0)
            continue;
        if (sig == SIGHUP) {
            size_t gone = 0;
            n = srv_store_sync(s.store, s.registry, commit_lock, &gone);
            srv_log(SRV_INFO, "rescan", "loaded %zu model files, unloaded %zu",
                    n, gone);
            continue;
        }
        srv_log(SRV_INFO, "draining", "signal %d: finishing work, then "
                "exiting", sig);
        break;
    }

    /* Draining: /readyz answers 503 at once and new fits are refused, but
     * connections are still taken while the fits finish, so probes see
     * "draining" and predicts go on until the load balancer has moved
     * traffic away. Then the listener closes and in-flight requests end. */
    atomic_store(&s.phase, SRV_DRAINING);
    srv_jobs_drain(s.jobs, s.cfg.shutdown_timeout);
    int listen_fd = srv_http_quiesce(d); /* no new connections */
    wait_requests(&s, 5.0);
    srv_http_stop(d);
    if (listen_fd >= 0)
        close(listen_fd);
    srv_log(SRV_INFO, "stopped", "bye");
    rc = 0;
fail:
    srv_daemon_close(&s);
    srv_log_stop();
    return rc;
}
