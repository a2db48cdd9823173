/*
 * srv_store.c - model files on disk; see srv_store.h for the guarantees.
 *
 * Thread-safety: the table of known files is guarded by the store's lock;
 * a file is recorded there only under the commit lock too, once the
 * registry serves its model, so a sync that finds it known without the
 * commit lock knows it served. Syncs are serialised by sync_lock; changes
 * to a name run under the caller's commit lock. The directory handle is
 * replaced only by a sync, under sync_lock, the commit lock and the
 * store's lock, so saves and deletes (commit lock), the scan (sync_lock)
 * and srv_store_check (the store's lock) always see one handle.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../api/api_model.h"
#include "srv_log.h"
#include "srv_store.h"
#include "srv_test.h"

#define SUFFIX ".kmm"
#define LOCK_SUFFIX SUFFIX ".lock"
/* Largest model file read at start (far beyond what a fit produces). */
#define MAX_FILE ((size_t)64 << 30)

/* A file the store wrote or loaded, as it was then. */
typedef struct known_file {
    char name[72];
    ino_t ino;
    off_t size;
    struct timespec mtime;
    uint64_t version; /* the version the file holds */
    int seen;         /* during a sync */
} known_file;

struct srv_store {
    char dir[1024];
    char host[64];
    unsigned long pid_ns;      /* inode of our PID namespace; 0 unknown */
    unsigned nonce;            /* random, per process start */
    int dirfd;                 /* changed only by a sync, under the
                                  commit lock and lock */
    atomic_uint counter;
    pthread_mutex_t lock;      /* files; dirfd for readers without the
                                  commit lock */
    known_file *files;
    size_t n_files, cap_files;
    int dir_errno;             /* why the path was unusable at the last
                                  sync, or 0 (sync_lock) */
    int keep;                  /* versions kept of each name (>= 1) */
    atomic_int lock_warned;    /* store_unlocked logged */
    pthread_mutex_t sync_lock; /* one sync at a time */
    /* the watcher */
    pthread_t watcher;
    int watching, stop;
    pthread_mutex_t watch_lock;
    pthread_cond_t watch_cond;
    srv_registry *registry;
    pthread_mutex_t *commit_lock;
    double interval;
    /* entries skipped (and logged once), guarded by sync_lock */
    struct skipped_entry *skipped;
    size_t n_skipped, cap_skipped;
};

/* A temporary file nobody can be shown to own is removed after this
 * long: no write (open, write, fsync, rename) takes an hour. */
#define TEMP_MAX_AGE 3600

static void forget_skipped(srv_store *s, int all);

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
    if (gethostname(s->host, sizeof s->host) != 0 || !s->host[0])
        snprintf(s->host, sizeof s->host, "host");
    s->host[sizeof s->host - 1] = '\0';
    for (char *p = s->host; *p; p++)
        if (*p == '/' || *p == '-')
            *p = '_';
    char ns[64];
    ssize_t n = readlink("/proc/self/ns/pid", ns, sizeof ns - 1);
    if (n > 0) {
        ns[n] = '\0';
        const char *open_br = strchr(ns, '[');
        s->pid_ns = open_br ? strtoul(open_br + 1, NULL, 10) : 0;
    }
    if (getrandom(&s->nonce, sizeof s->nonce, GRND_NONBLOCK) !=
        (ssize_t)sizeof s->nonce)
        s->nonce = (unsigned)time(NULL) ^ ((unsigned)getpid() << 16);
    s->keep = 1;
    pthread_mutex_init(&s->lock, NULL);
    pthread_mutex_init(&s->sync_lock, NULL);
    pthread_mutex_init(&s->watch_lock, NULL);
    pthread_cond_init(&s->watch_cond, NULL);
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
    if (s->watching) {
        pthread_mutex_lock(&s->watch_lock);
        s->stop = 1;
        pthread_cond_signal(&s->watch_cond);
        pthread_mutex_unlock(&s->watch_lock);
        pthread_join(s->watcher, NULL);
    }
    close(s->dirfd);
    free(s->files);
    forget_skipped(s, 1);
    pthread_mutex_destroy(&s->lock);
    pthread_mutex_destroy(&s->sync_lock);
    pthread_mutex_destroy(&s->watch_lock);
    pthread_cond_destroy(&s->watch_cond);
    free(s);
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

/* Records name's file as it is now (st), holding version, or forgets it
 * (st NULL). */
static void remember(srv_store *s, const char *name, const struct stat *st,
                     uint64_t version)
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
            k->seen = 1;
        }
    }
    pthread_mutex_unlock(&s->lock);
}

/* Whether the file of name is the one the store knows; if so, *version
 * (may be NULL) gets the version it holds. seen: a sync's check, which
 * marks name's known file seen (only a sync may: a name seen is one the
 * sync's unload loop passes over). */
static int known_version(srv_store *s, const char *name,
                         const struct stat *st, uint64_t *version, int seen)
{
    pthread_mutex_lock(&s->lock);
    known_file *k = find_known(s, name);
    int same = k && same_file(k, st);
    if (k && seen)
        k->seen = 1;
    if (same && version)
        *version = k->version;
    pthread_mutex_unlock(&s->lock);
    return same;
}

/* A sync's check: known files are recorded only once the registry serves
 * their model (srv_store_served, sync_one), under the commit lock, so a
 * file found known here is served even when the check runs without it. */
static int is_known(srv_store *s, const char *name, const struct stat *st)
{
    return known_version(s, name, st, NULL, 1);
}

/* Marks name's known file as seen by the sync under way. */
static void mark_seen(srv_store *s, const char *name)
{
    pthread_mutex_lock(&s->lock);
    known_file *k = find_known(s, name);
    if (k)
        k->seen = 1;
    pthread_mutex_unlock(&s->lock);
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

/* ------------------------------------------------------------ reading */

/*
 * A models directory is input like a request body: a replica, an operator
 * or an attacker may put anything there. A directory entry is a model
 * file when it is NAME.kmm, NAME is a valid model name (the API's rule:
 * any other could be neither fetched nor deleted, and might not even be
 * text), and it is a regular file (or a symlink to one): a FIFO would
 * block the open, /dev/zero never ends. Other NAME.kmm entries are
 * skipped and logged once (again if they change); files without the
 * suffix, and hidden ones, are not ours and are passed over silently.
 */
typedef struct skipped_entry {
    char *file;
    dev_t dev;
    ino_t ino;
    int seen; /* during a sync */
} skipped_entry;

/* Drops the entries not seen by this sync (all: every one). */
static void forget_skipped(srv_store *s, int all)
{
    size_t kept = 0;
    for (size_t i = 0; i < s->n_skipped; i++) {
        if (!all && s->skipped[i].seen) {
            s->skipped[i].seen = 0;
            s->skipped[kept++] = s->skipped[i];
        } else {
            free(s->skipped[i].file);
        }
    }
    s->n_skipped = kept;
    if (all) {
        free(s->skipped);
        s->skipped = NULL;
        s->cap_skipped = 0;
    }
}

/* A file name for the log: bytes outside printable ASCII, and the
 * backslash, as \xNN (the name may not be UTF-8, the log is JSON). */
static void shown_name(const char *file, char *out, size_t len)
{
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)file;
         *p && n + 5 < len; p++) {
        if (*p >= 0x20 && *p < 0x7f && *p != '\\')
            out[n++] = (char)*p;
        else
            n += (size_t)snprintf(out + n, len - n, "\\x%02x", *p);
    }
    out[n] = '\0';
}

/* Logs that file is skipped, unless this same entry was logged before. */
static void skip_once(srv_store *s, const char *file, const struct stat *st,
                      const char *why)
{
    dev_t dev = st ? st->st_dev : 0;
    ino_t ino = st ? st->st_ino : 0;
    for (size_t i = 0; i < s->n_skipped; i++) {
        skipped_entry *e = &s->skipped[i];
        if (!strcmp(e->file, file) && e->dev == dev && e->ino == ino) {
            e->seen = 1;
            return;
        }
    }
    char shown[1100];
    shown_name(file, shown, sizeof shown);
    srv_log(SRV_WARN, "model_file_skipped", "%s/%s skipped: %s", s->dir,
            shown, why);
    if (s->n_skipped == s->cap_skipped) {
        size_t cap = s->cap_skipped ? 2 * s->cap_skipped : 16;
        skipped_entry *e = realloc(s->skipped, cap * sizeof *e);
        if (!e)
            return; /* logged again next time: no worse than that */
        s->skipped = e;
        s->cap_skipped = cap;
    }
    char *copy = strdup(file);
    if (copy)
        s->skipped[s->n_skipped++] = (skipped_entry){copy, dev, ino, 1};
}

static const char *file_kind(mode_t mode)
{
    return S_ISDIR(mode)    ? "a directory"
           : S_ISFIFO(mode) ? "a FIFO"
           : S_ISCHR(mode)  ? "a character device"
           : S_ISBLK(mode)  ? "a block device"
           : S_ISSOCK(mode) ? "a socket"
                            : "not a regular file";
}

/*
 * Whether the directory entry file is a model file to load (see above);
 * if so, name gets its model name and *st its stat. Call under sync_lock.
 */
static int model_entry(srv_store *s, const char *file, char *name,
                       size_t namelen, struct stat *st)
{
    size_t len = strlen(file), k = strlen(SUFFIX);
    if (file[0] == '.' || !ends_with(file, SUFFIX))
        return 0;
    char base[256];
    snprintf(base, sizeof base, "%.*s", (int)(len - k), file);
    api_error e;
    if (len - k >= sizeof base || api_check_name(base, &e) != 0) {
        struct stat lst;
        int ok = fstatat(s->dirfd, file, &lst, AT_SYMLINK_NOFOLLOW) == 0;
        skip_once(s, file, ok ? &lst : NULL, "not a valid model name (1 to "
                  "64 letters, digits, '.', '_' or '-', starting with a "
                  "letter or digit)");
        return 0;
    }
    if (fstatat(s->dirfd, file, st, 0) != 0) {
        struct stat lst;
        char why[300];
        snprintf(why, sizeof why, "%s", strerror(errno));
        if (fstatat(s->dirfd, file, &lst, AT_SYMLINK_NOFOLLOW) == 0)
            skip_once(s, file, &lst, why); /* a dangling symlink, ... */
        return 0; /* else gone meanwhile */
    }
    if (!S_ISREG(st->st_mode)) {
        skip_once(s, file, st, file_kind(st->st_mode));
        return 0;
    }
    size_t n = strlen(base); /* at most 64, by the name rule */
    if (n >= namelen)
        return 0;
    memcpy(name, base, n + 1);
    return 1;
}

/* Reads up to n bytes at offset off; the count read, or -1. */
static ssize_t read_at(int fd, unsigned char *buf, size_t n, off_t off)
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
static int open_model(int dirfd, const char *file)
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
static km_model *read_model_fd(int fd, char *why, size_t whylen,
                               int *special)
{
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
    if (km_model_load_buffer(buf, (size_t)got, &m, &err) != KM_OK)
        snprintf(why, whylen, "%s", err.message);
out:
    free(buf);
    return m;
}

/* read_model_fd on the file of that name in dirfd. */
static km_model *read_model(int dirfd, const char *file, char *why,
                            size_t whylen, int *special)
{
    *special = 0;
    int fd = open_model(dirfd, file);
    if (fd < 0) {
        snprintf(why, whylen, "%s", strerror(errno));
        return NULL;
    }
    km_model *m = read_model_fd(fd, why, whylen, special);
    close(fd);
    return m;
}

/* ------------------------------------------------------ temporary files
 *
 * A save writes .NAME.kmm.tmp-HOST-NS-PID-NONCE-COUNTER: HOST the host
 * name ('-' and '/' made '_'), NS the inode of the writer's PID namespace,
 * PID its process id, NONCE random per process start, COUNTER per save.
 * A scan removes such a file only when it is provably stale:
 *   - ours (all five owner fields match): removed under the commit lock,
 *     which every save holds, so none of ours is being written;
 *   - same host and PID namespace, and either our PID with another nonce
 *     (an earlier process that had our PID) or a PID no process has:
 *     its writer is gone;
 *   - anything else (other hosts, live processes, names of another
 *     form) only once its mtime is TEMP_MAX_AGE old.
 * Another replica's write in flight is therefore never touched.
 *
 * A save that keeps the version it replaces first links (or copies) that
 * file to .NAME.kmm.keep-HOST-NS-PID-NONCE-COUNTER (see keep_replaced),
 * judged the same way, but by its ctime: a link has the mtime of the file
 * it links, however old, while linking it sets its ctime. */

enum { TEMP_KEEP, TEMP_OURS, TEMP_STALE };

#define TEMP_MARK SUFFIX ".tmp-"
#define KEEP_MARK SUFFIX ".keep-"

/* Whether file is a temporary file of either kind above (by its name). */
static int temp_file(const char *file)
{
    return file[0] == '.' && (strstr(file, TEMP_MARK) || strstr(file,
                                                                KEEP_MARK));
}

/* Splits the owner fields off a temporary file's name; -1 if it is not
 * of the form above. *keep: whether it is a keep link. */
static int temp_owner(const char *file, char *host, size_t hostlen,
                      unsigned long *ns, long *pid, unsigned *nonce,
                      int *keep)
{
    static const char *const marks[] = {TEMP_MARK, KEEP_MARK};
    const char *tail = NULL;
    for (int k = 0; k < 2; k++)
        for (const char *p = strstr(file, marks[k]); p;
             p = strstr(p + 1, marks[k]))
            if (!tail || p + strlen(marks[k]) > tail) {
                tail = p + strlen(marks[k]);
                *keep = k;
            }
    if (!tail)
        return -1;
    char buf[256], *field[4];
    snprintf(buf, sizeof buf, "%s", tail);
    for (int i = 3; i >= 0; i--) { /* counter, nonce, pid, ns */
        char *dash = strrchr(buf, '-');
        if (!dash || !dash[1])
            return -1;
        *dash = '\0';
        field[i] = dash + 1;
    }
    char *end;
    *ns = strtoul(field[0], &end, 10);
    if (*end)
        return -1;
    *pid = strtol(field[1], &end, 10);
    if (*end || *pid <= 0 || *pid > INT_MAX)
        return -1;
    *nonce = (unsigned)strtoul(field[2], &end, 16);
    if (*end)
        return -1;
    snprintf(host, hostlen, "%s", buf);
    return 0;
}

static int temp_verdict(const srv_store *s, const char *file,
                        const struct stat *st)
{
    char host[256];
    unsigned long ns;
    long pid;
    unsigned nonce;
    int keep = 0;
    int owned = temp_owner(file, host, sizeof host, &ns, &pid, &nonce,
                           &keep) == 0;
    if (owned && !strcmp(host, s->host) && ns == s->pid_ns) {
        if (pid == (long)getpid())
            return nonce == s->nonce ? TEMP_OURS : TEMP_STALE;
        if (ns && kill((pid_t)pid, 0) != 0 && errno == ESRCH)
            return TEMP_STALE;
    }
    time_t since = owned && keep ? st->st_ctime : st->st_mtime;
    return time(NULL) - since > TEMP_MAX_AGE ? TEMP_STALE : TEMP_KEEP;
}

/* Removes the temporary file if it is provably stale (see above). */
static void clean_temp(srv_store *s, pthread_mutex_t *commit,
                       const char *file)
{
    struct stat st;
    if (fstatat(s->dirfd, file, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return;
    int verdict = temp_verdict(s, file, &st);
    if (verdict == TEMP_KEEP)
        return;
    if (verdict == TEMP_OURS)
        pthread_mutex_lock(commit);
    int removed = unlinkat(s->dirfd, file, 0) == 0;
    if (verdict == TEMP_OURS)
        pthread_mutex_unlock(commit);
    if (removed)
        srv_log(SRV_WARN, "store_temp_removed", "removed %s/%s, left by an "
                "interrupted write", s->dir, file);
}

/* --------------------------------------------------- the directory handle */

/* Whether the path still names the directory the store has open: 0 if
 * so, 1 if it names another directory, -1 (errno in *why_errno) if it
 * names none. A deleted directory has no links: that tells it from a new
 * one that was given the same inode number. */
static int dir_state(srv_store *s, int *why_errno)
{
    struct stat now, open;
    if (stat(s->dir, &now) != 0) {
        *why_errno = errno;
        return -1;
    }
    if (!S_ISDIR(now.st_mode)) {
        *why_errno = ENOTDIR;
        return -1;
    }
    pthread_mutex_lock(&s->lock);
    int same = fstat(s->dirfd, &open) == 0 && open.st_nlink > 0 &&
               now.st_dev == open.st_dev && now.st_ino == open.st_ino;
    pthread_mutex_unlock(&s->lock);
    return same ? 0 : 1;
}

/* Before a scan (sync_lock held): if the directory was deleted and
 * another made under its path, opens the new one and swaps it in under
 * the commit lock. -1 if the path names no usable directory (the scan
 * is skipped, so models are not unloaded because a volume went away). */
static int dir_refresh(srv_store *s, pthread_mutex_t *commit)
{
    int why = 0, state = dir_state(s, &why);
    int fd = state == 1 ? open(s->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
                        : -1;
    if (state == 1 && fd < 0) {
        why = errno;
        state = -1;
    }
    if (state < 0) {
        if (why != s->dir_errno)
            srv_log(SRV_ERROR, "store_unusable", "models directory %s: %s; "
                    "models stay served, fits and deletes fail until it "
                    "is back", s->dir, strerror(why));
        s->dir_errno = why;
        return -1;
    }
    if (s->dir_errno)
        srv_log(SRV_INFO, "store_usable", "models directory %s is back",
                s->dir);
    s->dir_errno = 0;
    if (state == 0)
        return 0;
    pthread_mutex_lock(commit);
    pthread_mutex_lock(&s->lock);
    int old = s->dirfd;
    s->dirfd = fd;
    pthread_mutex_unlock(&s->lock);
    pthread_mutex_unlock(commit);
    close(old);
    srv_log(SRV_WARN, "store_reopened", "models directory %s was replaced; "
            "the new one is used from now on", s->dir);
    return 0;
}

int srv_store_check(srv_store *s, char *why, size_t len)
{
    int err = 0, state = dir_state(s, &err);
    if (state < 0)
        snprintf(why, len, "models directory %s: %s", s->dir, strerror(err));
    else if (state > 0)
        snprintf(why, len, "models directory %s was replaced; the new one "
                 "is opened at the next scan (SIGHUP or --watch-interval)",
                 s->dir);
    return state ? -1 : 0;
}

/* Loads (or reloads) one file under the commit lock. 1 if loaded. */
/* Unloads name, whose file is gone (commit lock held); *gone counts it. */
static void unload(srv_store *s, srv_registry *r, const char *name,
                   size_t *gone)
{
    if (srv_registry_remove(r, name) == 0) {
        (*gone)++;
        srv_log(SRV_INFO, "model_unloaded", "%s: its file was removed", name);
    }
    remember(s, name, NULL, 0);
}

/* A listing of the directory dirfd is open on, with a position of its
 * own: a dup of dirfd would share its position with every other dup, so
 * that two listings at once (a scan, GET .../versions, a save's prune)
 * would each skip entries the other read. NULL with errno set. */
static DIR *open_listing(int dirfd)
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

/* Loads (or reloads) one file under the commit lock. 1 if loaded. A file
 * gone by the time it is opened (deleted meanwhile, here or by a replica)
 * unloads the model it was, as a scan that finds it gone does, rather
 * than leave the deleted model served: *gone counts it. The file known is
 * the one opened and read (its stat through the descriptor). */
static int sync_one(srv_store *s, srv_registry *r, pthread_mutex_t *commit,
                    const char *file, const char *name, size_t *gone)
{
    struct stat st;
    int loaded = 0, special = 0;
    char why[300] = "";
    km_model *m = NULL;
    srv_test_pause("scan_load");
    pthread_mutex_lock(commit);
    /* Opened under the lock: a commit may have just written it. */
    int fd = open_model(s->dirfd, file);
    if (fd < 0 && errno == ENOENT) {
        unload(s, r, name, gone);
        pthread_mutex_unlock(commit);
        return 0;
    }
    if (fd < 0) {
        snprintf(why, sizeof why, "%s", strerror(errno));
    } else if (fstat(fd, &st) != 0 || is_known(s, name, &st)) {
        close(fd);
        pthread_mutex_unlock(commit);
        return 0;
    } else {
        m = read_model_fd(fd, why, sizeof why, &special);
        close(fd);
    }
    if (!m) {
        if (!special) /* a special file is skipped by the next scan */
            quarantine(s, file, why);
    } else {
        /* The file name is the model's name (a renamed file serves under
         * its new name). */
        km_model_set_identity(m, name, km_model_version(m),
                              km_model_created_at_ms(m));
        uint64_t version = km_model_version(m);
        const char *algo = km_algorithm_name(km_model_algorithm(m));
        if (srv_registry_put(r, m) == 0) {
            remember(s, name, &st, version);
            loaded = 1;
            srv_log(SRV_INFO, "model_loaded", "%s version %llu (%s)", name,
                    (unsigned long long)version, algo);
        } else {
            srv_log(SRV_ERROR, "model_load", "out of memory loading %s", name);
        }
    }
    pthread_mutex_unlock(commit);
    return loaded;
}

size_t srv_store_sync(srv_store *s, srv_registry *r,
                      pthread_mutex_t *commit, size_t *removed)
{
    size_t loaded = 0, gone = 0;
    pthread_mutex_lock(&s->sync_lock);
    if (dir_refresh(s, commit) != 0) {
        pthread_mutex_unlock(&s->sync_lock);
        if (removed)
            *removed = 0;
        return 0;
    }
    pthread_mutex_lock(&s->lock);
    for (size_t i = 0; i < s->n_files; i++)
        s->files[i].seen = 0;
    pthread_mutex_unlock(&s->lock);

    DIR *d = open_listing(s->dirfd);
    if (!d) {
        srv_log(SRV_ERROR, "store_scan", "cannot read %s: %s", s->dir,
                strerror(errno));
        pthread_mutex_unlock(&s->sync_lock);
        return 0;
    }
    struct dirent *e;
    for (int first = 1; (e = readdir(d)) != NULL; first = 0) {
        const char *file = e->d_name;
        struct stat st;
        if (first)
            srv_test_pause("scan_listing");
        if (file[0] == '.' && ends_with(file, LOCK_SUFFIX))
            continue; /* a name's lock (see srv_store_lock) */
        if (temp_file(file)) {
            clean_temp(s, commit, file);
            continue;
        }
        char name[72];
        if (!model_entry(s, file, name, sizeof name, &st) ||
            is_known(s, name, &st))
            continue;
        loaded += (size_t)sync_one(s, r, commit, file, name, &gone);
    }
    closedir(d);
    forget_skipped(s, 0);

    /* Files that went away: unload their models. */
    for (;;) {
        char name[72] = "";
        pthread_mutex_lock(&s->lock);
        for (size_t i = 0; i < s->n_files && !name[0]; i++)
            if (!s->files[i].seen)
                snprintf(name, sizeof name, "%s", s->files[i].name);
        pthread_mutex_unlock(&s->lock);
        if (!name[0])
            break;
        struct stat st;
        char file[96];
        snprintf(file, sizeof file, "%s" SUFFIX, name);
        pthread_mutex_lock(commit);
        int there = fstatat(s->dirfd, file, &st, 0) == 0;
        if (!there)
            unload(s, r, name, &gone);
        pthread_mutex_unlock(commit);
        if (there) {
            /* it came back meanwhile, or the listing missed it (a rename
             * while it was read): loaded now unless it is the file the
             * store knows, so that no scan that began after a delete and
             * a new fit leaves the deleted model served */
            loaded += (size_t)sync_one(s, r, commit, file, name, &gone);
            mark_seen(s, name);
        }
    }
    pthread_mutex_unlock(&s->sync_lock);
    if (removed)
        *removed = gone;
    return loaded;
}

static void *watch(void *arg)
{
    srv_store *s = arg;
    pthread_mutex_lock(&s->watch_lock);
    while (!s->stop) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        double t = ts.tv_sec + ts.tv_nsec * 1e-9 + s->interval;
        ts.tv_sec = (time_t)t;
        ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
        pthread_cond_timedwait(&s->watch_cond, &s->watch_lock, &ts);
        if (s->stop)
            break;
        pthread_mutex_unlock(&s->watch_lock);
        srv_store_sync(s, s->registry, s->commit_lock, NULL);
        pthread_mutex_lock(&s->watch_lock);
    }
    pthread_mutex_unlock(&s->watch_lock);
    return NULL;
}

int srv_store_watch(srv_store *s, srv_registry *r,
                    pthread_mutex_t *commit_lock, double interval)
{
    if (interval <= 0)
        return 0;
    s->registry = r;
    s->commit_lock = commit_lock;
    s->interval = interval;
    if (pthread_create(&s->watcher, NULL, watch, s) != 0)
        return -1;
    s->watching = 1;
    return 0;
}

/* ------------------------------------------------------ kept versions
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
 * 1 to 2^53), or 0 when file is not one of name's. */
static uint64_t kept_version(const char *file, const char *name)
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

static void kept_file(char *buf, size_t len, const char *name, uint64_t v)
{
    snprintf(buf, len, "%s" SUFFIX ".v%llu", name, (unsigned long long)v);
}

/* A handle on the directory for readers without the commit lock (a sync
 * may swap the store's). -1 with errno set on failure. */
static int dir_dup(srv_store *s)
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
static int list_kept(int dirfd, const char *name, uint64_t **out, size_t *n)
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

void srv_store_keep(srv_store *s, int versions)
{
    s->keep = versions > 1 ? versions : 1;
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
    close(dfd);
    if (fd < 0) {
        *gone = rc == ENOENT; /* pruned or deleted since it was listed */
        snprintf(why, whylen, "%s", strerror(rc));
        return NULL;
    }
    km_model *m = read_model_fd(fd, why, whylen, &special);
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

/* Makes a rename or unlink in the directory durable. Once it is done
 * the change has happened and is what the registry must follow, so a
 * failure here is logged rather than answered: reporting the change as
 * not made would leave the registry and the directory disagreeing. */
static void sync_dir(srv_store *s, const char *what, const char *file)
{
    if (fsync(s->dirfd) != 0)
        srv_log(SRV_ERROR, "store_fsync", "%s %s/%s: fsync of the directory "
                "failed (%s); the change is made but may not survive a "
                "crash", what, s->dir, file, strerror(errno));
}

/* A fresh temporary file name for name (see "temporary files"); mark:
 * TEMP_MARK, or KEEP_MARK for a keep link. */
static void temp_name(srv_store *s, const char *name, const char *mark,
                      char *buf, size_t len)
{
    snprintf(buf, len, ".%s%s%s-%lu-%ld-%08x-%u", name, mark, s->host,
             s->pid_ns, (long)getpid(), s->nonce,
             atomic_fetch_add(&s->counter, 1));
}

/* Writes len bytes as the new temporary file tmp, fsync'd. 0, or an
 * errno value with tmp removed. */
static int write_temp(srv_store *s, const char *tmp, const unsigned char *buf,
                      size_t len)
{
    int rc = 0;
    int fd = openat(s->dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
                    0644);
    if (fd < 0)
        return errno;
    if (write_all(fd, buf, len) != 0 || fsync(fd) != 0)
        rc = errno ? errno : EIO;
    if (close(fd) != 0 && !rc)
        rc = errno;
    if (rc)
        unlinkat(s->dirfd, tmp, 0);
    return rc;
}

/* Copies the file `file` to the new temporary file tmp (file systems
 * without hard links). 0, or an errno value. */
static int copy_temp(srv_store *s, const char *file, const char *tmp)
{
    struct stat st;
    int fd = openat(s->dirfd, file, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return errno;
    int rc = fstat(fd, &st) != 0 ? errno : 0;
    unsigned char *buf = rc ? NULL : malloc(st.st_size ? (size_t)st.st_size
                                                         : 1);
    if (!rc && !buf)
        rc = ENOMEM;
    if (!rc && read_at(fd, buf, (size_t)st.st_size, 0) != st.st_size)
        rc = errno ? errno : EIO;
    close(fd);
    if (!rc)
        rc = write_temp(s, tmp, buf, (size_t)st.st_size);
    free(buf);
    return rc;
}

/* Keeps the file NAME.kmm is now as NAME.kmm.vVERSION, VERSION the one
 * it holds, before a save replaces it. The file is first linked to a
 * temporary name, .NAME.kmm.keep-... (copied, where the file system has
 * no hard links), and VERSION is that of the file so linked: the one
 * srv_store_read_head found when it is the same file (as it is while the
 * name's lock is held), else read from the link. So a kept file always
 * holds the version its name says, whatever another writer did to
 * NAME.kmm meanwhile (a replica without the lock, a hand), where linking
 * NAME.kmm by name after reading it could keep another file than the one
 * read. The rename replaces a kept file of that version already there
 * (left by a crash between this and the save's rename: the same version).
 * 0, or an errno value (the save then fails, nothing changed but the kept
 * file). Commit lock held. */
static int keep_replaced(srv_store *s, const char *name,
                         const srv_store_head *head)
{
    char file[96], kept[128], tmp[512];
    struct stat st;
    snprintf(file, sizeof file, "%s" SUFFIX, name);
    temp_name(s, name, KEEP_MARK, tmp, sizeof tmp);
    srv_test_pause("keep_link");
    int rc = linkat(s->dirfd, file, s->dirfd, tmp, 0) == 0 ? 0 : errno;
    if (rc == EPERM || rc == EOPNOTSUPP || rc == EMLINK || rc == ENOSYS ||
        rc == EXDEV)
        rc = copy_temp(s, file, tmp);
    if (rc)
        return rc == ENOENT ? 0 : rc; /* no file: nothing to keep */
    uint64_t v = 0;
    if (fstatat(s->dirfd, tmp, &st, 0) != 0) {
        rc = errno;
    } else if (head->version && head->dev == st.st_dev &&
               head->ino == st.st_ino && head->size == st.st_size &&
               head->mtime.tv_sec == st.st_mtim.tv_sec &&
               head->mtime.tv_nsec == st.st_mtim.tv_nsec) {
        v = head->version;
    } else {
        char why[300];
        int special;
        km_model *m = read_model(s->dirfd, tmp, why, sizeof why, &special);
        v = m ? km_model_version(m) : 0; /* 0: unreadable, not kept */
        km_model_free(m);
    }
    if (!rc && v) {
        kept_file(kept, sizeof kept, name, v);
        if (renameat(s->dirfd, tmp, s->dirfd, kept) != 0)
            rc = errno;
    }
    /* gone after the rename, unless tmp and kept were already links to
     * one file (the rename then does nothing) */
    unlinkat(s->dirfd, tmp, 0);
    return rc;
}

/* Removes the kept files of name but the newest keep - 1 below current
 * (current 0: every one). *removed gets how many were removed. 0, or the
 * errno value of the first that could not be removed (logged; the others
 * are still tried, and it is tried again at the next save). Commit lock
 * held. */
static int prune_kept(srv_store *s, const char *name, uint64_t current,
                      size_t *removed)
{
    uint64_t *v;
    size_t n, kept = 0;
    *removed = 0;
    int rc = list_kept(s->dirfd, name, &v, &n);
    if (rc)
        return rc;
    for (size_t i = 0; i < n; i++) {
        char file[128];
        if (current && v[i] < current && kept + 1 < (size_t)s->keep) {
            kept++;
            continue;
        }
        kept_file(file, sizeof file, name, v[i]);
        if (unlinkat(s->dirfd, file, 0) == 0) {
            (*removed)++;
        } else if (errno != ENOENT) {
            if (!rc)
                rc = errno;
            srv_log(SRV_ERROR, "store_prune", "cannot remove %s/%s: %s",
                    s->dir, file, strerror(errno));
        }
    }
    free(v);
    return rc;
}

int srv_store_read_head(srv_store *s, const char *name, srv_store_head *head)
{
    char file[96], why[300];
    struct stat st;
    int special;
    memset(head, 0, sizeof *head);
    snprintf(file, sizeof file, "%s" SUFFIX, name);
    int fd = open_model(s->dirfd, file);
    if (fd < 0)
        return errno == ENOENT ? 0 : errno;
    int rc = fstat(fd, &st) != 0 ? errno : 0;
    if (!rc) {
        head->present = 1;
        head->dev = st.st_dev;
        head->ino = st.st_ino;
        head->size = st.st_size;
        head->mtime = st.st_mtim;
        if (!known_version(s, name, &st, &head->version, 0)) {
            /* another replica's, or a hand's: read what it holds */
            km_model *m = read_model_fd(fd, why, sizeof why, &special);
            head->version = m ? km_model_version(m) : 0;
            km_model_free(m);
        }
    }
    close(fd);
    return rc;
}

int srv_store_save(srv_store *s, const km_model *m,
                   const srv_store_head *replaced, srv_store_head *written)
{
    unsigned char *buf = NULL;
    size_t len = 0, pruned;
    km_error err;
    struct stat st;
    if (km_model_save_buffer(m, &buf, &len, &err) != KM_OK)
        return ENOMEM;
    const char *name = km_model_name(m);
    char tmp[512], file[512];
    snprintf(file, sizeof file, "%s" SUFFIX, name);
    temp_name(s, name, TEMP_MARK, tmp, sizeof tmp);
    int rc = write_temp(s, tmp, buf, len);
    free(buf);
    if (rc)
        return rc;
    if (fstatat(s->dirfd, tmp, &st, 0) != 0) /* the file renamed below */
        rc = errno;
    if (!rc && s->keep > 1)
        rc = keep_replaced(s, name, replaced);
    if (!rc && renameat(s->dirfd, tmp, s->dirfd, file) != 0)
        rc = errno;
    if (rc) {
        unlinkat(s->dirfd, tmp, 0);
        return rc;
    }
    /* remembered only once its model is served (srv_store_served) */
    memset(written, 0, sizeof *written);
    written->present = 1;
    written->version = km_model_version(m);
    written->dev = st.st_dev;
    written->ino = st.st_ino;
    written->size = st.st_size;
    written->mtime = st.st_mtim;
    prune_kept(s, name, km_model_version(m), &pruned);
    sync_dir(s, "saving", file);
    return 0;
}

void srv_store_served(srv_store *s, const char *name,
                      const srv_store_head *written)
{
    struct stat st;
    memset(&st, 0, sizeof st);
    st.st_dev = written->dev;
    st.st_ino = written->ino;
    st.st_size = written->size;
    st.st_mtim = written->mtime;
    remember(s, name, &st, written->version); /* not to be loaded back */
}

/* The kept files go first: when one cannot be removed the delete fails
 * with NAME.kmm still there, rather than leave a version of this life of
 * the name beside a later one. */
int srv_store_delete(srv_store *s, const char *name)
{
    char file[512];
    size_t pruned;
    snprintf(file, sizeof file, "%s" SUFFIX, name);
    int rc = prune_kept(s, name, 0, &pruned);
    if (!rc)
        rc = unlinkat(s->dirfd, file, 0) == 0 ? 0 : errno;
    if (!rc)
        remember(s, name, NULL, 0);
    if (pruned || !rc)
        sync_dir(s, "deleting", file);
    return rc;
}

/* ------------------------------------------------------ the name's lock
 *
 * Replicas sharing the directory serialise their changes to a name with
 * flock(2) on .NAME.kmm.lock (hidden: scans pass over it), taken after the
 * commit lock and held while the change runs. A delete removes the file
 * while it holds it; whoever was waiting on it then finds that the name
 * no longer leads to the file it locked, and locks the one there now. */

static void lock_file(char *buf, size_t len, const char *name)
{
    snprintf(buf, len, ".%s" LOCK_SUFFIX, name);
}

/* No lock to be had: logged once per store, unless the directory cannot
 * be written (the change fails on its own, with its own reason). */
static int no_lock(srv_store *s, const char *file, int err)
{
    if (err != EACCES && err != EROFS && err != EPERM &&
        !atomic_exchange(&s->lock_warned, 1))
        srv_log(SRV_WARN, "store_unlocked", "cannot lock %s/%s (%s): changes "
                "to a model are not coordinated with other replicas sharing "
                "the directory", s->dir, file, strerror(err));
    return -1;
}

int srv_store_lock(srv_store *s, const char *name)
{
    char file[128];
    lock_file(file, sizeof file, name);
    srv_test_pause("name_lock");
    for (int tries = 0; tries < 1000; tries++) {
        struct stat held, named;
        int fd = openat(s->dirfd, file, O_RDONLY | O_CREAT | O_NOFOLLOW |
                        O_NONBLOCK | O_CLOEXEC, 0644);
        if (fd < 0)
            return no_lock(s, file, errno);
        if (fstat(fd, &held) != 0 || !S_ISREG(held.st_mode)) {
            close(fd);
            return no_lock(s, file, EINVAL);
        }
        int rc;
        while ((rc = flock(fd, LOCK_EX)) != 0 && errno == EINTR)
            ;
        if (rc != 0) {
            int err = errno;
            close(fd);
            return no_lock(s, file, err);
        }
        if (fstatat(s->dirfd, file, &named, AT_SYMLINK_NOFOLLOW) == 0 &&
            named.st_dev == held.st_dev && named.st_ino == held.st_ino)
            return fd;
        close(fd); /* removed by a delete meanwhile: lock the one there now */
    }
    return no_lock(s, file, EAGAIN);
}

void srv_store_unlock(srv_store *s, const char *name, int lock, int remove)
{
    char file[128];
    if (lock < 0)
        return;
    if (remove) {
        lock_file(file, sizeof file, name);
        unlinkat(s->dirfd, file, 0);
    }
    close(lock);
}
