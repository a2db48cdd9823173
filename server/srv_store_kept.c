/*
 * srv_store_kept.c - the kept versions of a name: how many are kept, which
 * are on disk, their sizes and loads; see srv_store.h.
 *
 * With --keep-versions N > 1 the version a save replaces is kept as
 * NAME.kmm.vVERSION: a hard link to the file NAME.kmm holds, made before
 * the new file is renamed over it (or, where the file system has no hard
 * links, a copy written and fsync'd as a save writes), and after the
 * rename every kept file but the newest N - 1 below the new version is
 * removed. NAME.kmm stays the one file of a name that scans load: a kept
 * file does not end in .kmm, so scans pass over it; it is read only when a
 * request names its version (srv_store_load_version). */

/* The version in a kept file's name NAME.kmm.vVERSION (no leading zero,
 *
 * Thread-safety: see srv_store.h; readers take their own handle on the
 * directory (dir_dup).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "srv_store_internal.h"
#include "srv_test.h"

void srv_store_keep(srv_store *s, int versions)
{
    s->keep = versions > 1 ? versions : 1;
}

void srv_store_factor_files(srv_store *s, uint64_t min_bytes)
{
    s->factor_min = min_bytes;
}

int srv_store_keeps(const srv_store *s)
{
    return s->keep;
}

int srv_store_versions(srv_store *s, const char *name, uint64_t below,
                       uint64_t **versions, size_t *n)
{
    int fd = dir_dup(s);
    if (fd < 0)
        return errno;
    int rc = list_kept(fd, name, versions, n);
    close(fd);
    size_t kept = 0;
    for (size_t i = 0; !rc && i < *n; i++)
        if (!below || (*versions)[i] < below)
            (*versions)[kept++] = (*versions)[i];
    if (!rc)
        *n = kept;
    return rc;
}

int srv_store_version_size(srv_store *s, const char *name, uint64_t version,
                           size_t *size)
{
    char file[128];
    struct stat st;
    kept_file(file, sizeof file, name, version);
    int fd = dir_dup(s);
    if (fd < 0)
        return errno;
    int rc = fstatat(fd, file, &st, 0) != 0 ? errno
             : !S_ISREG(st.st_mode)       ? ENOENT
                                          : 0;
    close(fd);
    *size = rc ? 0 : (size_t)st.st_size;
    return rc;
}

int srv_store_version_bytes(srv_store *s, const char *name, uint64_t version,
                            size_t *bytes)
{
    char file[128];
    struct stat st;
    km_load_bytes lb;
    kept_file(file, sizeof file, name, version);
    *bytes = 0;
    int dfd = dir_dup(s);
    if (dfd < 0)
        return errno;
    int fd = open_model(dfd, file), rc = fd < 0 ? errno : 0;
    close(dfd);
    if (!rc && fstat(fd, &st) != 0)
        rc = errno;
    else if (!rc && !S_ISREG(st.st_mode))
        rc = ENOENT; /* as srv_store_version_size: not a kept file */
    if (rc) {
        if (fd >= 0)
            close(fd);
        return rc;
    }
    size_t size = (size_t)st.st_size;
    /* its records and payload counts read from a mapping: nothing of the
     * file's size allocated */
    void *map = size && (uint64_t)st.st_size <= MAX_FILE
                    ? mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0)
                    : MAP_FAILED;
    close(fd);
    int known = map != MAP_FAILED &&
                km_model_load_bytes(map, size, &lb, NULL) == KM_OK;
    if (map != MAP_FAILED)
        munmap(map, size);
    /* unreadable records: the load fails on them, having held the file
     * and what it read of them */
    *bytes = size + (known ? lb.peak : size);
    if (*bytes < size)
        *bytes = SIZE_MAX;
    return 0;
}

km_model *srv_store_load_version(srv_store *s, const char *name,
                                 uint64_t version, int *file, int *gone,
                                 char *why, size_t whylen)
{
    char kept[128];
    int special, dfd = dir_dup(s);
    *gone = 0;
    if (file)
        *file = -1;
    kept_file(kept, sizeof kept, name, version);
    if (dfd < 0) {
        snprintf(why, whylen, "%s", strerror(errno));
        return NULL;
    }
    int fd = open_model(dfd, kept), rc = fd < 0 ? errno : 0;
    if (fd < 0) {
        close(dfd);
        *gone = rc == ENOENT; /* pruned or deleted since it was listed */
        snprintf(why, whylen, "%s", strerror(rc));
        return NULL;
    }
    srv_test_pause("kept_opened");
    km_model *m = read_model_fd(fd, dfd, name, why, whylen, &special);
    struct stat read, named;
    if (!m && fstat(fd, &read) == 0 &&
        (fstatat(dfd, kept, &named, 0) != 0 || read.st_dev != named.st_dev ||
         read.st_ino != named.st_ino))
        *gone = 1; /* pruned while it was read, its factor blocks with it */
    close(dfd);
    if (m && km_model_version(m) != version) {
        snprintf(why, whylen, "%s holds version %llu", kept,
                 (unsigned long long)km_model_version(m));
        km_model_free(m);
        m = NULL;
    }
    if (m)
        km_model_set_identity(m, name, version, km_model_created_at_ms(m));
    if (m && file)
        *file = fd;
    else
        close(fd);
    return m;
}

int srv_store_still_kept(srv_store *s, const char *name, uint64_t version,
                         int file)
{
    char kept[128];
    struct stat read, named;
    kept_file(kept, sizeof kept, name, version);
    return file >= 0 && fstat(file, &read) == 0 &&
           fstatat(s->dirfd, kept, &named, 0) == 0 &&
           read.st_dev == named.st_dev && read.st_ino == named.st_ino;
}
