/*
 * cmn_file.c - whole small files read or written at once; see cmn_file.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmn_file.h"

unsigned char *cmn_file_read(const char *path, size_t max, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    struct stat st;
    if (fd < 0)
        return NULL;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
        (size_t)st.st_size > max) {
        close(fd);
        return NULL;
    }
    unsigned char *buf = malloc((size_t)st.st_size + 1);
    size_t done = 0;
    while (buf && done < (size_t)st.st_size) {
        ssize_t r = read(fd, buf + done, (size_t)st.st_size - done);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        done += (size_t)r;
    }
    close(fd);
    if (!buf || done != (size_t)st.st_size) {
        free(buf);
        return NULL;
    }
    buf[done] = 0;
    *len = done;
    return buf;
}

int cmn_file_write(const char *path, const void *buf, size_t len,
                   int exclusive, int mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC |
                            (exclusive ? O_EXCL : O_TRUNC), mode);
    if (fd < 0)
        return -1;
    const unsigned char *p = buf;
    size_t done = 0;
    while (done < len) {
        ssize_t w = write(fd, p + done, len - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        done += (size_t)w;
    }
    int ok = done == len && fsync(fd) == 0;
    if (close(fd) != 0)
        ok = 0;
    if (!ok && errno == 0)
        errno = EIO;
    return ok ? 0 : -1;
}
