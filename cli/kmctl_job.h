/*
 * kmctl_job.h - waiting for an asynchronous fit: polls GET /v1/jobs/{id},
 * shows progress, and turns Ctrl-C into an offer to cancel the job.
 *
 * Progress goes to stderr: a bar redrawn in place when stderr is a
 * terminal, else one plain line each time the state or the whole percent
 * changes ("job j-…: running 42%"), which logs and CI read well.
 *
 * Ctrl-C while waiting: when stdin and stderr are terminals kmctl asks
 * "cancel job? [y/N]"; 'y' cancels it (DELETE /v1/jobs/{id}), anything
 * else goes back to waiting, and a second Ctrl-C at the question leaves the
 * job running and exits. Without a terminal Ctrl-C (SIGINT) cancels at
 * once. Both exit 130.
 *
 * Thread-safety: single-threaded; installs a process-wide SIGINT handler
 * between ctl_job_catch_sigint() and ctl_job_release_sigint().
 */
#ifndef KMCTL_JOB_H
#define KMCTL_JOB_H

#include <cjson/cJSON.h>

#include "kmctl_http.h"
#include "kmctl_util.h"

/* From here on SIGINT no longer kills kmctl: it sets a flag that aborts c's
 * transfer in progress and that ctl_job_wait acts on. */
void ctl_job_catch_sigint(ctl_client *c);
/* Back to the default SIGINT. */
void ctl_job_release_sigint(ctl_client *c);
/* Non-zero once SIGINT arrived since ctl_job_catch_sigint. */
int ctl_job_interrupted(void);

/* Waits for job id (of model `model`, for the display) to finish. On
 * success returns 0 and sets *result to the job's result (the model's
 * metadata; caller owns it, free with cJSON_Delete). Otherwise -1 and e:
 * exit 1 if the job failed or was cancelled by someone else, 3 if the
 * server went away, 130 after Ctrl-C. */
__attribute__((warn_unused_result)) int ctl_job_wait(ctl_client *c,
    const char *id, const char *model, cJSON **result, ctl_err *e);

#endif
