/*
 * bench_minimal_server.c - the transport ceiling for bench_serving.py: a
 * libmicrohttpd server set up as kmserve's HTTP layer is (internal thread
 * pool, epoll, the same connection limits), which reads each request body
 * and answers every POST with one fixed JSON prediction. No routing, no
 * JSON parsing, no model: whatever kmserve serves below this rate is spent
 * in kmserve itself.
 *
 *   build/bench_minimal_server --port 8090 [--threads 4]
 *
 * Runs until SIGINT or SIGTERM. Thread-safety: the handler keeps no state
 * but the per-connection byte count MHD hands it.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <microhttpd.h>

static const char answer[] =
    "{\"model\":{\"name\":\"minimal\",\"version\":1},\"predictions\":[0.5]}";

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c,
                                  const char *url, const char *method,
                                  const char *version, const char *upload,
                                  size_t *upload_size, void **state)
{
    (void)cls, (void)url, (void)method, (void)version, (void)upload;
    /* First call: headers only. Then body chunks (consumed), then the end. */
    if (!*state) {
        *state = (void *)1;
        return MHD_YES;
    }
    if (*upload_size) {
        *upload_size = 0;
        return MHD_YES;
    }
    struct MHD_Response *r = MHD_create_response_from_buffer(
        sizeof answer - 1, (void *)answer, MHD_RESPMEM_PERSISTENT);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, "Content-Type", "application/json");
    enum MHD_Result ok = MHD_queue_response(c, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    return ok;
}

static volatile sig_atomic_t stop;
static void on_signal(int sig) { (void)sig; stop = 1; }

int main(int argc, char **argv)
{
    unsigned port = 8090, threads = 4;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--port"))
            port = (unsigned)atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--threads"))
            threads = (unsigned)atoi(argv[i + 1]);
        else {
            fprintf(stderr, "usage: %s [--port N] [--threads N]\n", argv[0]);
            return 2;
        }
    }
    struct MHD_Daemon *d = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG,
        (uint16_t)port, NULL, NULL, on_request, NULL,
        MHD_OPTION_THREAD_POOL_SIZE, threads,
        MHD_OPTION_CONNECTION_TIMEOUT, 30u,
        MHD_OPTION_CONNECTION_LIMIT, 512u,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(64 * 1024),
        MHD_OPTION_END);
    if (!d) {
        fprintf(stderr, "bench_minimal_server: cannot listen on port %u\n", port);
        return 1;
    }
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    printf("listening on %u with %u threads\n", port, threads);
    fflush(stdout);
    while (!stop)
        pause();
    MHD_stop_daemon(d);
    return 0;
}
