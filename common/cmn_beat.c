/*
 * cmn_beat.c - a rank's liveness record; see cmn_beat.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmn_beat.h"
#include "cmn_file.h"

void cmn_beat_where(char *buf, size_t len)
{
    char boot[64] = "", ns[64];
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re"); /* size 0 */
    if (f) {
        if (!fgets(boot, sizeof boot, f))
            boot[0] = 0;
        fclose(f);
    }
    boot[strcspn(boot, " \t\n")] = 0;
    ssize_t l = readlink("/proc/self/ns/pid", ns, sizeof ns - 1);
    if (boot[0] && l > 0) {
        ns[l] = 0;
        snprintf(buf, len, "%s/%s", boot, ns);
    } else {
        snprintf(buf, len, "-");
    }
    for (char *c = buf; *c; c++) /* one word */
        if (*c == ' ' || *c == '\t' || *c == '\n')
            *c = '_';
}

int cmn_beat_write(const char *path, const cmn_beat *b)
{
    char tmp[PATH_MAX], line[224];
    int len = snprintf(line, sizeof line, "%d %ld %lu %s %s %s\n", b->rank,
                       b->pid, b->beat, b->phase, b->state, b->where);
    if (len < 0 || len >= (int)sizeof line ||
        snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp) {
        errno = ENAMETOOLONG;
        return -1;
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    ssize_t w;
    do
        w = write(fd, line, (size_t)len);
    while (w < 0 && errno == EINTR);
    int ok = w == len;
    if (close(fd) != 0)
        ok = 0;
    if (!ok || rename(tmp, path) != 0) {
        int saved = errno ? errno : EIO;
        unlink(tmp);
        errno = saved;
        return -1;
    }
    return 0;
}

int cmn_beat_read(const char *path, cmn_beat *b)
{
    size_t len = 0;
    unsigned char *s = cmn_file_read(path, 512, &len);
    if (!s)
        return -1;
    cmn_beat r;
    memset(&r, 0, sizeof r);
    int end = 0;
    int got = sscanf((char *)s, "%d %ld %lu %23s %15s %95s%n", &r.rank,
                     &r.pid, &r.beat, r.phase, r.state, r.where, &end);
    int ok = got == 6 && s[end] == '\n' && r.rank >= 0 && r.pid > 0;
    free(s);
    if (!ok)
        return -1;
    *b = r;
    return 0;
}

int cmn_beat_exited(const cmn_beat *b, int *code)
{
    char *end;
    if (strncmp(b->state, "exit:", 5) != 0)
        return 0;
    long c = strtol(b->state + 5, &end, 10);
    if (*end || end == b->state + 5)
        return 0;
    *code = (int)c;
    return 1;
}
