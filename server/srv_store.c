/*
 * srv_store.c - model files on disk; see srv_store.h for the guarantees.
 *
 * Thread-safety: no shared mutable state besides an atomic counter for
 * temporary file names.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "srv_log.h"
#include "srv_store.h"

#define SUFFIX ".kmm"
/* Largest model file read at start (far beyond what a fit produces). */
#define MAX_FILE ((size_t)64 << 30)

struct srv_store {
    char dir[1024];
    int dirfd;
    atomic_uint counter;
};

/* mkdir -p */
static int make_dirs(const char *path)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            if (mkdir(buf, 0755) != 0 && errno != EEXIST)
                return -1;
            *p = '/';
        }
    return mkdir(buf, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n > k && strcmp(s + n - k, suffix) == 0;
}

srv_store *srv_store_open(const char *dir, char *err, size_t errlen)
{
    srv_store *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    snprintf(s->dir, sizeof s->dir, "%s", dir);
    if (make_dirs(dir) != 0 ||
        (s->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
        snprintf(err, errlen, "cannot open models directory %s: %s", dir,
                 strerror(errno));
        free(s);
        return NULL;
    }
    if (faccessat(s->dirfd, ".", W_OK, AT_EACCESS) != 0)
        srv_log(SRV_WARN, "store_read_only",
                "models directory %s is not writable: fits will fail with 507",
                dir);
    return s;
}

void srv_store_close(srv_store *s)
{
    if (!s)
        return;
    close(s->dirfd);
    free(s);
}

const char *srv_store_dir(const srv_store *s)
{
    return s->dir;
}

static void quarantine(srv_store *s, const char *file, const char *why)
{
    char aside[512];
    snprintf(aside, sizeof aside, "%s.corrupt-%ld", file, (long)time(NULL));
    if (renameat(s->dirfd, file, s->dirfd, aside) == 0) {
        fsync(s->dirfd);
        srv_log(SRV_ERROR, "model_quarantined",
                "%s/%s could not be loaded (%s); moved aside to %s", s->dir,
                file, why, aside);
    } else {
        srv_log(SRV_ERROR, "model_unreadable",
                "%s/%s could not be loaded (%s) nor moved aside: %s", s->dir,
                file, why, strerror(errno));
    }
}

static km_model *load_one(srv_store *s, const char *file, char *why,
                          size_t whylen)
{
    int fd = openat(s->dirfd, file, O_RDONLY | O_CLOEXEC);
    FILE *f = fd >= 0 ? fdopen(fd, "rb") : NULL;
    if (!f) {
        snprintf(why, whylen, "%s", strerror(errno));
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    km_model *m = NULL;
    km_error err = {KM_OK, ""};
    if (km_model_load_file(f, MAX_FILE, &m, &err) != KM_OK)
        snprintf(why, whylen, "%s", err.message);
    fclose(f);
    return m;
}

size_t srv_store_load_all(srv_store *s, srv_registry *r)
{
    DIR *d = fdopendir(dup(s->dirfd));
    size_t loaded = 0;
    if (!d) {
        srv_log(SRV_ERROR, "store_scan", "cannot read %s: %s", s->dir,
                strerror(errno));
        return 0;
    }
    rewinddir(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        const char *file = e->d_name;
        if (file[0] == '.' && strstr(file, SUFFIX ".tmp-")) {
            unlinkat(s->dirfd, file, 0);
            srv_log(SRV_WARN, "store_temp_removed",
                    "removed %s/%s, left by an interrupted write", s->dir, file);
            continue;
        }
        if (file[0] == '.' || !ends_with(file, SUFFIX))
            continue;
        char why[300] = "", name[256];
        snprintf(name, sizeof name, "%.*s", (int)(strlen(file) - strlen(SUFFIX)),
                 file);
        km_model *m = load_one(s, file, why, sizeof why);
        if (!m) {
            quarantine(s, file, why);
            continue;
        }
        /* The file name is the model's name (a renamed file serves under
         * its new name). */
        km_model_set_identity(m, name, km_model_version(m),
                              km_model_created_at_ms(m));
        if (srv_registry_put(r, m) != 0) {
            srv_log(SRV_ERROR, "model_load", "out of memory loading %s", name);
            continue;
        }
        loaded++;
        srv_log(SRV_INFO, "model_loaded", "%s version %llu (%s)", name,
                (unsigned long long)km_model_version(m),
                km_algorithm_name(km_model_algorithm(m)));
    }
    closedir(d);
    return loaded;
}

static int write_all(int fd, const unsigned char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int srv_store_save(srv_store *s, const km_model *m)
{
    unsigned char *buf = NULL;
    size_t len = 0;
    km_error err;
    if (km_model_save_buffer(m, &buf, &len, &err) != KM_OK)
        return ENOMEM;
    char tmp[512], file[512];
    snprintf(file, sizeof file, "%s" SUFFIX, km_model_name(m));
    snprintf(tmp, sizeof tmp, ".%s" SUFFIX ".tmp-%ld-%u", km_model_name(m),
             (long)getpid(), atomic_fetch_add(&s->counter, 1));
    int rc = 0;
    int fd = openat(s->dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
                    0644);
    if (fd < 0) {
        rc = errno;
        free(buf);
        return rc;
    }
    if (write_all(fd, buf, len) != 0 || fsync(fd) != 0)
        rc = errno ? errno : EIO;
    if (close(fd) != 0 && !rc)
        rc = errno;
    free(buf);
    if (!rc && renameat(s->dirfd, tmp, s->dirfd, file) != 0)
        rc = errno;
    if (rc) {
        unlinkat(s->dirfd, tmp, 0);
        return rc;
    }
    /* The rename is durable only once the directory is. */
    return fsync(s->dirfd) != 0 ? errno : 0;
}

int srv_store_delete(srv_store *s, const char *name)
{
    char file[512];
    snprintf(file, sizeof file, "%s" SUFFIX, name);
    if (unlinkat(s->dirfd, file, 0) != 0)
        return errno;
    return fsync(s->dirfd) != 0 ? errno : 0;
}
