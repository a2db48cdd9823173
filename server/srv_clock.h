/*
 * srv_clock.h - the two clocks the daemon reads: monotonic seconds for
 * durations and deadlines, wall-clock milliseconds for timestamps clients
 * see (created_at, started_at, ...).
 *
 * Thread-safety: reentrant.
 */
#ifndef SRV_CLOCK_H
#define SRV_CLOCK_H

#include <sys/time.h>
#include <time.h>

static inline double srv_mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static inline long long srv_now_ms(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (long long)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

#endif
