/*
 * srv_store_files.c - what the store's parts share about the directory's
 * entries: the table of files the store knows, reading a model file,
 * listing the directory, and the names of kept versions; see
 * srv_store_internal.h.
 *
 * Thread-safety: the table of known files under the store's lock (the
 * callers hold it); the rest is reentrant.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "srv_store_internal.h"

int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n > k && strcmp(s + n - k, suffix) == 0;
}

/* ------------------------------------------------------------ known files */

static known_file *find_known(srv_store *s, const char *name)
{
    for (size_t i = 0; i < s->n_files; i++)
        if (!strcmp(s->files[i].name, name))
            return &s->files[i];
    return NULL;
}

static int same_file(const known_file *k, const struct stat *st)
{
    return k->ino == st->st_ino && k->size == st->st_size &&
           k->mtime.tv_sec == st->st_mtim.tv_sec &&
           k->mtime.tv_nsec == st->st_mtim.tv_nsec;
}

/* Records name's file as it is now (st), holding version created at
 * created_at_ms, or forgets it (st NULL). */
void remember(srv_store *s, const char *name, const struct stat *st,
              uint64_t version, int64_t created_at_ms)
{
    pthread_mutex_lock(&s->lock);
    known_file *k = find_known(s, name);
    if (!st) {
        if (k)
            *k = s->files[--s->n_files];
    } else {
        if (!k && s->n_files == s->cap_files) {
            size_t cap = s->cap_files ? 2 * s->cap_files : 32;
            known_file *f = realloc(s->files, cap * sizeof *f);
            if (f) {
                s->files = f;
                s->cap_files = cap;
            }
        }
        if (!k && s->n_files < s->cap_files) {
            k = &s->files[s->n_files++];
            memset(k, 0, sizeof *k);
            snprintf(k->name, sizeof k->name, "%s", name);
        }
        if (k) {
            k->ino = st->st_ino;
            k->size = st->st_size;
            k->mtime = st->st_mtim;
            k->version = version;
            k->created_at_ms = created_at_ms;
            k->seen = 1;
        }
    }
    pthread_mutex_unlock(&s->lock);
}

/* Whether the file of name is the one the store knows; if so, *version
 * and *created_at_ms (may be NULL) get the version it holds and its
 * creation time. seen: a sync's check, which marks name's known file
 * seen (only a sync may: a name seen is one the sync's unload loop
 * passes over). */
int known_version(srv_store *s, const char *name, const struct stat *st,
                  uint64_t *version, int64_t *created_at_ms, int seen)
{
    pthread_mutex_lock(&s->lock);
    known_file *k = find_known(s, name);
    int same = k && same_file(k, st);
    if (k && seen)
        k->seen = 1;
    if (same && version)
        *version = k->version;
    if (same && created_at_ms)
        *created_at_ms = k->created_at_ms;
    pthread_mutex_unlock(&s->lock);
    return same;
}

/* A sync's check: known files are recorded only once the registry serves
 * their model (srv_store_served, sync_one), under the commit lock, so a
 * file found known here is served even when the check runs without it. */
int is_known(srv_store *s, const char *name, const struct stat *st)
{
    return known_version(s, name, st, NULL, NULL, 1);
}

/* Marks name's known file as seen by the sync under way. */
void mark_seen(srv_store *s, const char *name)
{
    pthread_mutex_lock(&s->lock);
    known_file *k = find_known(s, name);
    if (k)
        k->seen = 1;
    pthread_mutex_unlock(&s->lock);
}

/* ------------------------------------------------------------ reading */

const char *file_kind(mode_t mode)
{
    return S_ISDIR(mode)    ? "a directory"
           : S_ISFIFO(mode) ? "a FIFO"
           : S_ISCHR(mode)  ? "a character device"
           : S_ISBLK(mode)  ? "a block device"
           : S_ISSOCK(mode) ? "a socket"
                            : "not a regular file";
}

/* Reads up to n bytes at offset off; the count read, or -1. */
ssize_t read_at(int fd, unsigned char *buf, size_t n, off_t off)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = pread(fd, buf + got, n - got, off + (off_t)got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -1;
        if (r == 0)
            break;
        got += (size_t)r;
    }
    return (ssize_t)got;
}

/* Opens a model file of the directory to read: without blocking and
 * without becoming a controlling terminal. -1 with errno set. */
int open_model(int dirfd, const char *file)
{
    return openat(dirfd, file, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
}

/*
 * Reads and loads the model file open as fd (borrowed), checked again
 * through the descriptor (the entry may have been swapped for a FIFO since
 * it was checked); its header is read and checked against the file's
 * size before the rest is read. NULL with why filled when it cannot be
 * loaded; *special is set when it is not a regular file (skipped, not
 * moved).
 */
/* core's km_blocks open: the block file of name's version in dirfd. */
typedef struct {
    int dirfd;
    const char *name;
} block_source;

static int open_block(void *ctx, uint64_t version, uint64_t id)
{
    const block_source *b = ctx;
    char file[256];
    block_file(file, sizeof file, b->name, version, id);
    return openat(b->dirfd, file, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
                  O_NOCTTY | O_CLOEXEC);
}

void block_file(char *buf, size_t len, const char *name, uint64_t version,
                uint64_t id)
{
    snprintf(buf, len, ".%s" BLOCK_MARK "%llu-%016llx", name,
             (unsigned long long)version, (unsigned long long)id);
}

int block_link(const char *file, const char *name, uint64_t *version,
               uint64_t *id)
{
    static const char mark[] = BLOCK_MARK;
    size_t n = strlen(name);
    if (file[0] != '.' || strncmp(file + 1, name, n) ||
        strncmp(file + 1 + n, mark, sizeof mark - 1))
        return 0;
    const char *p = file + 1 + n + sizeof mark - 1;
    uint64_t v = 0, h = 0;
    int digits = 0;
    for (; *p >= '0' && *p <= '9' && v <= KM_MODEL_MAX_VERSION / 10; p++)
        v = v * 10 + (uint64_t)(*p - '0');
    if (*p++ != '-' || v == 0)
        return 0;
    for (; *p; p++, digits++) {
        int c = *p >= '0' && *p <= '9'   ? *p - '0'
                : *p >= 'a' && *p <= 'f' ? *p - 'a' + 10
                                         : -1;
        if (c < 0 || digits == 16)
            return 0;
        h = h << 4 | (uint64_t)c;
    }
    if (digits != 16)
        return 0;
    *version = v;
    *id = h;
    return 1;
}

km_model *read_model_fd(int fd, int dirfd, const char *name, char *why,
                        size_t whylen, int *special)
{
    block_source src = {dirfd, name};
    km_blocks blocks = {&src, 0, NULL, open_block};
    *special = 0;
    km_model *m = NULL;
    unsigned char *buf = NULL;
    unsigned char head[KM_MODEL_HEADER_BYTES];
    km_error err = {KM_OK, ""};
    struct stat st;
    ssize_t got;
    if (fstat(fd, &st) != 0) {
        snprintf(why, whylen, "%s", strerror(errno));
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        *special = 1;
        snprintf(why, whylen, "%s", file_kind(st.st_mode));
        goto out;
    }
    if ((uint64_t)st.st_size > MAX_FILE) {
        snprintf(why, whylen, "file size %lld bytes is over the %zu a model "
                 "file may have", (long long)st.st_size, MAX_FILE);
        goto out;
    }
    size_t size = (size_t)st.st_size;
    if ((got = read_at(fd, head, sizeof head, 0)) < 0) {
        snprintf(why, whylen, "%s", strerror(errno));
        goto out;
    }
    if (km_model_check_header(head, (size_t)got, size, NULL, &err) != KM_OK) {
        snprintf(why, whylen, "%s", err.message);
        goto out;
    }
    if (!(buf = malloc(size))) {
        snprintf(why, whylen, "out of memory for %zu bytes", size);
        goto out;
    }
    if ((got = read_at(fd, buf, size, 0)) < 0) {
        snprintf(why, whylen, "%s", strerror(errno));
        goto out;
    }
    if (km_model_load_buffer_blocks(buf, (size_t)got, &blocks, &m, &err) !=
        KM_OK)
        snprintf(why, whylen, "%s", err.message);
out:
    free(buf);
    return m;
}

/* read_model_fd on the file of that name in dirfd. */
km_model *read_model(int dirfd, const char *file, const char *name,
                     char *why, size_t whylen, int *special)
{
    *special = 0;
    int fd = open_model(dirfd, file);
    if (fd < 0) {
        snprintf(why, whylen, "%s", strerror(errno));
        return NULL;
    }
    km_model *m = read_model_fd(fd, dirfd, name, why, whylen, special);
    close(fd);
    return m;
}

/* A listing of the directory dirfd is open on, with a position of its
 * own: a dup of dirfd would share its position with every other dup, so
 * that two listings at once (a scan, GET .../versions, a save's prune)
 * would each skip entries the other read. NULL with errno set. */
DIR *open_listing(int dirfd)
{
    int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d && fd >= 0) {
        int err = errno;
        close(fd);
        errno = err;
    }
    return d;
}

/* ------------------------------------------------------ kept versions (names) */

/* The version in a kept file's name NAME.kmm.vVERSION (no leading zero,
 * 1 to 2^53), or 0 when file is not one of name's. */
uint64_t kept_version(const char *file, const char *name)
{
    static const char mark[] = SUFFIX ".v";
    size_t n = strlen(name);
    if (strncmp(file, name, n) || strncmp(file + n, mark, sizeof mark - 1))
        return 0;
    const char *p = file + n + sizeof mark - 1;
    uint64_t v = 0;
    if (*p < '1' || *p > '9')
        return 0;
    for (; *p; p++) {
        if (*p < '0' || *p > '9' || v > KM_MODEL_MAX_VERSION / 10)
            return 0;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    return v <= KM_MODEL_MAX_VERSION ? v : 0;
}

void kept_file(char *buf, size_t len, const char *name, uint64_t v)
{
    snprintf(buf, len, "%s" SUFFIX ".v%llu", name, (unsigned long long)v);
}

/* A handle on the directory for readers without the commit lock (a sync
 * may swap the store's). -1 with errno set on failure. */
int dir_dup(srv_store *s)
{
    pthread_mutex_lock(&s->lock);
    int fd = fcntl(s->dirfd, F_DUPFD_CLOEXEC, 0);
    pthread_mutex_unlock(&s->lock);
    return fd;
}

static int newest_first(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* The kept versions of name in dirfd (borrowed), newest first. 0, or an
 * errno value. Caller frees *out. */
int list_kept(int dirfd, const char *name, uint64_t **out, size_t *n)
{
    size_t cap = 8;
    DIR *d = open_listing(dirfd);
    int rc = d ? 0 : errno;
    *n = 0;
    *out = malloc(cap * sizeof **out);
    if (!d || !*out) {
        rc = !*out ? ENOMEM : rc;
        if (d)
            closedir(d);
        free(*out);
        *out = NULL;
        return rc;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        uint64_t v = kept_version(e->d_name, name);
        if (!v)
            continue;
        if (*n == cap) {
            uint64_t *more = realloc(*out, 2 * cap * sizeof *more);
            if (!more)
                break; /* the newest may be missed: listed next time */
            *out = more;
            cap *= 2;
        }
        (*out)[(*n)++] = v;
    }
    closedir(d);
    qsort(*out, *n, sizeof **out, newest_first);
    return 0;
}
