/*
 * fuzz_http.c - raw bytes to the daemon's HTTP layer (libFuzzer).
 *
 * The harness starts the daemon's own HTTP side once, as kmserve.c does
 * (registry, store in a temporary directory, jobs, metrics, the MHD
 * daemon and its connection sweeper) on a loopback port, and fits one
 * model "m" so predicts reach the numeric core. Each input is written on
 * a fresh connection, whose sending side is then shut; the answer is read
 * until the daemon closes (deadlines bound each input: 1 s for headers,
 * 1 s for a body, a sweep or two after the half-close; 8 s is a hang,
 * with room for a loaded machine).
 *
 * Checked for each input: the sanitizers' findings (memory errors, leaks,
 * undefined behaviour, in the daemon's threads too), that the daemon
 * closes the connection, and that whatever it sends is HTTP responses
 * (starts with "HTTP/1.").
 *
 * Thread-safety: libFuzzer calls in one thread; the daemon is shared.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ftw.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "srv_daemon.h"
#include "srv_http.h"
#include "srv_log.h"
#include "srv_state.h"

void openblas_set_num_threads(int n);

static srv_state state;
static srv_http *daemon_http;
static unsigned port;
static char dir[] = "/tmp/kmserve-fuzz-http-XXXXXX";

/* Writes data on a new connection, shuts the sending side and reads the
 * answer into out (up to cap bytes, the rest discarded). Returns the
 * bytes kept, or -1 when the daemon did not close within 8 s. */
static long exchange(const uint8_t *data, size_t size, char *out, size_t cap)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        abort();
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct timeval tv = {8, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    /* Tens of thousands of connections a minute: closing first leaves
     * each local port in TIME_WAIT for a minute, and one source address
     * has only about 28 000 ports (55 000 were in TIME_WAIT after a
     * 20 s run here). Spreading the source over 250 addresses of
     * 127.0.0.0/8 keeps the fuzzer from running out. */
    static unsigned next_source;
    struct sockaddr_in src = {0};
    src.sin_family = AF_INET;
    src.sin_addr.s_addr = htonl(INADDR_LOOPBACK + 1 + next_source++ % 250);
    if (bind(fd, (struct sockaddr *)&src, sizeof src) != 0)
        abort();
    /* libFuzzer's timer (SIGALRM, once a second) interrupts system calls:
     * EINTR is a retry everywhere below, never a verdict. An interrupted
     * connect goes on in the background: wait until it is done. */
    while (connect(fd, (struct sockaddr *)&a, sizeof a) != 0 &&
           errno != EISCONN) {
        if (errno != EINTR && errno != EALREADY) {
            fprintf(stderr, "fuzz_http: connect: %s\n", strerror(errno));
            abort();
        }
        struct pollfd pw = {fd, POLLOUT, 0};
        poll(&pw, 1, 100);
    }
    for (size_t off = 0; off < size;) {
        ssize_t n = send(fd, data + off, size - off, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break; /* the daemon closed first: read what it said */
        off += (size_t)n;
    }
    /* A FIN that arrives with the last bytes is missed by MHD and found
     * by the sweeper; one that arrives later is MHD's to see. Both ways
     * are exercised, as the pause is short. */
    usleep(200);
    shutdown(fd, SHUT_WR);
    size_t kept = 0;
    long result = -1;
    char buf[4096];
    time_t deadline = time(NULL) + 9; /* EINTR restarts SO_RCVTIMEO */
    for (;;) {
        ssize_t n = recv(fd, buf, sizeof buf, 0);
        if (n < 0 && errno == EINTR && time(NULL) < deadline)
            continue;
        if (n == 0 || (n < 0 && errno == ECONNRESET)) {
            result = (long)kept;
            break;
        }
        if (n < 0)
            break; /* timed out */
        size_t take = (size_t)n < cap - kept ? (size_t)n : cap - kept;
        memcpy(out + kept, buf, take);
        kept += take;
    }
    close(fd);
    return result;
}

static int remove_entry(const char *path, const struct stat *sb, int flag,
                        struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

static void cleanup(void)
{
    nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    char err[512];
    signal(SIGPIPE, SIG_IGN);
    openblas_set_num_threads(1);
    if (!mkdtemp(dir))
        abort();
    atexit(cleanup);
    char models[sizeof dir + 16];
    snprintf(models, sizeof models, "--models-dir=%s", dir);
    char *args[] = {"kmserve", "--listen=127.0.0.1:0", models,
                    "--max-body-mb=1", "--access-log=false",
                    "--log-level=error", "--http-threads=2",
                    "--header-timeout=1", "--body-timeout=1",
                    "--connection-timeout=3", "--workers=1",
                    "--blas-threads=1", "--queue=4", "--job-ttl=1"};
    if (srv_config_parse(&state.cfg, (int)(sizeof args / sizeof *args),
                         args) != 0)
        abort();
    srv_log_set_level(state.cfg.log_level);
    if (srv_daemon_open(&state, err, sizeof err) != 0) {
        fprintf(stderr, "fuzz_http: %s\n", err);
        abort();
    }
    atomic_store(&state.phase, SRV_READY);
    daemon_http = srv_http_start(&state, err, sizeof err);
    if (!daemon_http) {
        fprintf(stderr, "fuzz_http: %s\n", err);
        abort();
    }
    port = srv_http_port(daemon_http);
    static const char body[] =
        "{\"algorithm\":\"krr\",\"kernel\":{\"type\":\"linear\"},"
        "\"X\":[[1,2],[3,4]],\"y\":[1,2]}";
    char fit[512], out[512];
    int len = snprintf(fit, sizeof fit, "POST /v1/models/m/fit HTTP/1.1\r\n"
                       "Host: x\r\nContent-Type: application/json\r\n"
                       "Content-Length: %zu\r\n\r\n%s", strlen(body), body);
    long n = exchange((const uint8_t *)fit, (size_t)len, out, sizeof out);
    if (n < 12 || memcmp(out, "HTTP/1.1 201", 12) != 0) {
        fprintf(stderr, "fuzz_http: the set-up fit failed\n");
        abort();
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char out[1 << 16];
    long n = exchange(data, size, out, sizeof out);
    if (n < 0) {
        fprintf(stderr, "fuzz_http: the daemon did not close the "
                "connection within 8 s\n");
        abort();
    }
    if (n > 0 && (n < 7 || memcmp(out, "HTTP/1.", 7) != 0)) {
        fprintf(stderr, "fuzz_http: the answer is not HTTP: %.*s\n",
                (int)(n < 200 ? n : 200), out);
        abort();
    }
    return 0;
}
