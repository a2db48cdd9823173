/*
 * kmctl_job.c - polling a fit job, its progress display, and Ctrl-C.
 *
 * The SIGINT handler only sets a flag (the one thing a handler may safely
 * do). It is installed without SA_RESTART, so a sleep or a read of the
 * answer to the question returns early with EINTR, and the libcurl progress
 * callback sees the flag and abandons a request in flight. All decisions
 * are then taken in ordinary code in ctl_job_wait.
 *
 * Thread-safety: single-threaded.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kmctl_job.h"

static volatile sig_atomic_t interrupted;
static struct sigaction saved;

static void on_sigint(int sig)
{
    (void)sig;
    interrupted = 1;
}

void ctl_job_catch_sigint(ctl_client *c)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0; /* no SA_RESTART: sleeps and reads wake up */
    interrupted = 0;
    sigaction(SIGINT, &sa, &saved);
    ctl_client_set_interrupt(c, &interrupted);
}

void ctl_job_release_sigint(ctl_client *c)
{
    ctl_client_set_interrupt(c, NULL);
    sigaction(SIGINT, &saved, NULL);
}

int ctl_job_interrupted(void) { return interrupted != 0; }

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec / 1e9;
}

static void pause_for(double seconds)
{
    struct timespec t = {(time_t)seconds,
                         (long)((seconds - (double)(time_t)seconds) * 1e9)};
    nanosleep(&t, NULL); /* EINTR (Ctrl-C) ends it early, as wanted */
}

typedef struct display {
    int tty;
    int shown;        /* a bar is on the screen */
    char state[16];   /* last state printed (plain mode) */
    int percent;      /* last whole percent printed (plain mode) */
    double started;
} display;

static void display_clear(display *d)
{
    if (d->tty && d->shown) {
        fputs("\r\033[K", stderr);
        d->shown = 0;
    }
}

static void display_update(display *d, const char *id, const char *model,
                           const char *state, double progress)
{
    if (progress < 0)
        progress = 0;
    if (progress > 1)
        progress = 1;
    int percent = (int)(progress * 100.0);
    if (d->tty) {
        enum { WIDTH = 30 };
        char bar[WIDTH + 1];
        int filled = (int)(progress * WIDTH);
        for (int i = 0; i < WIDTH; i++)
            bar[i] = i < filled ? '#' : '.';
        bar[WIDTH] = '\0';
        fprintf(stderr, "\r\033[Kfit %s [%s] %3d%%  %s  %.1fs", model, bar,
                percent, state, now() - d->started);
        d->shown = 1;
    } else if (strcmp(state, d->state) || percent != d->percent) {
        fprintf(stderr, "job %s: %s %d%%\n", id, state, percent);
        snprintf(d->state, sizeof d->state, "%s", state);
        d->percent = percent;
    }
    fflush(stderr);
}

/* GET the job; 0 with *job set, or -1 and e. */
static int fetch(ctl_client *c, const char *path, cJSON **job, ctl_err *e)
{
    ctl_reply r;
    *job = NULL;
    if (ctl_client_call(c, "GET", path, NULL, 0, &r, e))
        return -1;
    int rc = 0;
    if (r.status != 200)
        rc = ctl_reply_fail(&r, e);
    else if (!cJSON_IsObject(r.json) ||
             !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(r.json, "status")))
        rc = ctl_fail(e, CTL_EXIT_SERVER, "GET %s: the answer is not a job", path);
    else
        *job = r.json, r.json = NULL;
    ctl_reply_cleanup(&r);
    return rc;
}

/* What the user wants after Ctrl-C. */
enum choice { RESUME, CANCEL, DETACH };

static enum choice ask(const char *id)
{
    if (!isatty(STDIN_FILENO) || !isatty(STDERR_FILENO))
        return CANCEL;
    fprintf(stderr, "\ncancel job %s? [y/N] ", id);
    fflush(stderr);
    interrupted = 0;
    char answer[16];
    ssize_t n = read(STDIN_FILENO, answer, sizeof answer - 1);
    if (n < 0 && errno == EINTR) {
        fputc('\n', stderr);
        return DETACH; /* Ctrl-C again: leave it running */
    }
    if (n > 0 && (answer[0] == 'y' || answer[0] == 'Y'))
        return CANCEL;
    return RESUME;
}

/* Cancels the job and waits until it stops. 0 if it ended cancelled (e is
 * filled for exit 130); 1 if it had finished anyway (the caller goes on as
 * if no Ctrl-C came); -1 with e on errors. */
static int cancel(ctl_client *c, const char *id, const char *path,
                  ctl_err *e)
{
    ctl_reply r;
    /* Further Ctrl-Cs must not abort the cancel request itself. */
    ctl_client_set_interrupt(c, NULL);
    if (ctl_client_call(c, "DELETE", path, NULL, 0, &r, e))
        return -1;
    long status = r.status;
    if (status != 202 && status != 409) {
        int rc = ctl_reply_fail(&r, e);
        ctl_reply_cleanup(&r);
        return rc;
    }
    ctl_reply_cleanup(&r);
    fprintf(stderr, "cancelling job %s\n", id);
    for (double until = now() + 60; now() < until; pause_for(0.1)) {
        cJSON *job;
        if (fetch(c, path, &job, e))
            return -1;
        const char *state = cJSON_GetObjectItemCaseSensitive(job, "status")->valuestring;
        int done = !strcmp(state, "cancelled") ? 0
                   : !strcmp(state, "succeeded") || !strcmp(state, "failed") ? 1
                   : -1;
        if (done == 0) {
            /* the server's message says what the model is left with */
            const cJSON *err = cJSON_GetObjectItemCaseSensitive(job, "error");
            const cJSON *msg = cJSON_GetObjectItemCaseSensitive(err, "message");
            ctl_fail(e, CTL_EXIT_INTERRUPTED, "job %s cancelled: %s", id,
                     cJSON_IsString(msg) ? msg->valuestring
                                         : "the server gave no message");
            cJSON_Delete(job);
            return 0;
        }
        cJSON_Delete(job);
        if (done == 1)
            return 1;
    }
    return ctl_fail(e, CTL_EXIT_INTERRUPTED, "job %s was asked to cancel but "
                    "had not stopped after 60 s", id);
}

int ctl_job_wait(ctl_client *c, const char *id, const char *model,
                 cJSON **result, ctl_err *e)
{
    *result = NULL;
    char path[256];
    snprintf(path, sizeof path, "/v1/jobs/%s", id);
    display d = {.tty = isatty(STDERR_FILENO), .percent = -1, .started = now()};
    cJSON *job = NULL;
    int rc = -1;

    for (;;) {
        if (interrupted) {
            display_clear(&d);
            enum choice what = ask(id);
            interrupted = 0;
            if (what == DETACH) {
                ctl_fail(e, CTL_EXIT_INTERRUPTED, "job %s keeps running (see "
                         "kmctl jobs)", id);
                goto out;
            }
            if (what == CANCEL) {
                int done = cancel(c, id, path, e);
                if (done <= 0)
                    goto out;
                /* It had finished already: report it as if no Ctrl-C came. */
                ctl_client_set_interrupt(c, &interrupted);
            }
        }
        ctl_err fe = {0, ""};
        cJSON_Delete(job);
        if (fetch(c, path, &job, &fe)) {
            if (fe.exit == CTL_EXIT_INTERRUPTED)
                continue; /* Ctrl-C during the request: ask above */
            display_clear(&d);
            *e = fe;
            goto out;
        }
        const char *state = cJSON_GetObjectItemCaseSensitive(job, "status")->valuestring;
        const cJSON *progress = cJSON_GetObjectItemCaseSensitive(job, "progress");
        display_update(&d, id, model, state,
                       cJSON_IsNumber(progress) ? progress->valuedouble : 0);
        if (!strcmp(state, "succeeded")) {
            display_clear(&d);
            *result = cJSON_DetachItemFromObjectCaseSensitive(job, "result");
            if (!cJSON_IsObject(*result)) {
                cJSON_Delete(*result);
                *result = NULL;
                ctl_fail(e, CTL_EXIT_SERVER, "job %s succeeded without a result", id);
                goto out;
            }
            rc = 0;
            goto out;
        }
        if (!strcmp(state, "failed") || !strcmp(state, "cancelled")) {
            display_clear(&d);
            const cJSON *err = cJSON_GetObjectItemCaseSensitive(job, "error");
            const cJSON *code = cJSON_GetObjectItemCaseSensitive(err, "code");
            const cJSON *msg = cJSON_GetObjectItemCaseSensitive(err, "message");
            ctl_fail(e, CTL_EXIT_SERVER, "job %s %s: %s: %s", id, state,
                     cJSON_IsString(code) ? code->valuestring : "?",
                     cJSON_IsString(msg) ? msg->valuestring : "no message");
            goto out;
        }
        /* Quick at first, so short jobs end promptly; then at most 1/s. */
        double waited = now() - d.started;
        pause_for(waited < 2 ? 0.1 : waited < 30 ? 0.25 : 1.0);
    }
out:
    cJSON_Delete(job);
    return rc;
}
