/*
 * bench_mpi.c - the single-process side of bench/bench_mpi.py: fits a
 * staging file (written by tests/mpi/mpi_check) with core's km_fit in
 * this process and prints "seconds S peak_mb M" (the fit's wall time and
 * this process's peak resident memory).
 *
 *   bench_mpi FILE
 *
 * Thread-safety: a program.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#include "km.h"

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: bench_mpi FILE\n");
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    if (!f)
        return 1;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc((size_t)n);
    if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n)
        return 1;
    fclose(f);
    km_request rq;
    km_error err;
    if (km_request_load_buffer(buf, (size_t)n, &rq, &err) != KM_OK) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
    }
    free(buf);
    km_problem pb = km_request_problem(&rq);
    km_model *m = NULL;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    km_status st = km_fit(rq.algo, &rq.kernel, rq.params, &rq.pre, &pb, NULL,
                          &m, &err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (st != KM_OK) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("seconds %.2f peak_mb %.0f\n",
           (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9,
           ru.ru_maxrss / 1024.0);
    km_model_free(m);
    km_request_cleanup(&rq);
    return 0;
}
