/*
 * srv_test.c - pause points; see srv_test.h.
 *
 * Thread-safety: the directory is read once (pthread_once); the claim of
 * an armed point is a rename, which one thread (or process) wins.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "srv_log.h"
#include "srv_test.h"

/* Longest pause: a test that died must not hold the daemon forever. */
#define PAUSE_MAX_MS (10 * 60 * 1000)

static pthread_once_t once = PTHREAD_ONCE_INIT;
static const char *pause_dir;

static void read_env(void)
{
    const char *dir = getenv("KMSERVE_TEST_PAUSE_DIR");
    pause_dir = dir && *dir ? dir : NULL;
}

void srv_test_pause(const char *point)
{
    pthread_once(&once, read_env);
    if (!pause_dir)
        return;
    char armed[1200], paused[1200];
    snprintf(armed, sizeof armed, "%s/%s", pause_dir, point);
    snprintf(paused, sizeof paused, "%s/%s.paused", pause_dir, point);
    if (rename(armed, paused) != 0)
        return; /* not armed, or another thread took it */
    srv_log(SRV_WARN, "test_pause", "paused at %s until %s is removed",
            point, paused);
    const struct timespec ms = {0, 1000000};
    for (int waited = 0; waited < PAUSE_MAX_MS; waited++) {
        if (access(paused, F_OK) != 0 && errno == ENOENT)
            break;
        nanosleep(&ms, NULL);
    }
}
