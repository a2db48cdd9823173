/*
 * srv_store.c - model files on disk; see srv_store.h for the guarantees.
 *
 * This file: opening and closing the store, the scan (srv_store_sync:
 * which entries are model files, quarantine, temporary files, the
 * directory handle) and the watcher. Beside it, each calling only
 * srv_store_files.c (the known files, reading a model file, kept
 * versions' names): srv_store_kept.c (the kept versions a request reads)
 * and srv_store_write.c (saves, deletes, the name's lock).
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

#include "srv_log.h"
#include "srv_store_internal.h"
#include "srv_test.h"

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
    remember(s, name, NULL, 0, 0);
}

/* Loads (or reloads) one file under the commit lock. 1 if loaded. A file
 * gone by the time it is opened (deleted meanwhile, here or by a replica)
 * unloads the model it was, as a scan that finds it gone does, rather
 * than leave the deleted model served: *gone counts it. A file that fails
 * to load because it was replaced or removed while it was read is read
 * again as it is now. The file known is the one opened and read (its stat
 * through the descriptor). */
static int sync_one(srv_store *s, srv_registry *r, pthread_mutex_t *commit,
                    const char *file, const char *name, size_t *gone)
{
    struct stat st;
    int loaded = 0, special = 0;
    char why[300] = "";
    km_model *m = NULL;
    srv_test_pause("scan_load");
    pthread_mutex_lock(commit);
    for (int tries = 0;; tries++) {
        /* Opened under the lock: a commit may have just written it. */
        int fd = open_model(s->dirfd, file);
        if (fd < 0 && errno == ENOENT) {
            unload(s, r, name, gone);
            pthread_mutex_unlock(commit);
            return 0;
        }
        if (fd < 0) {
            snprintf(why, sizeof why, "%s", strerror(errno));
            break;
        }
        if (fstat(fd, &st) != 0 || is_known(s, name, &st)) {
            close(fd);
            pthread_mutex_unlock(commit);
            return 0;
        }
        m = read_model_fd(fd, s->dirfd, name, why, sizeof why, &special);
        close(fd);
        struct stat now;
        if (m || special ||
            (fstatat(s->dirfd, file, &now, AT_SYMLINK_NOFOLLOW) == 0 &&
             now.st_dev == st.st_dev && now.st_ino == st.st_ino))
            break;
        /* Replaced or removed while it was read (a replica's save or
         * delete, which may have removed the factor blocks of the version
         * read): not this file's fault; what is there now is read, so
         * that the scan serves a state at least as new as the one it
         * began with. */
        if (tries == 3) {
            srv_log(SRV_INFO, "model_load_retry", "%s/%s changed while it "
                    "was read, four times (%s); the next scan reads it",
                    s->dir, file, why);
            pthread_mutex_unlock(commit);
            return 0;
        }
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
        int64_t created = km_model_created_at_ms(m);
        const char *algo = km_algorithm_name(km_model_algorithm(m));
        if (srv_registry_put(r, m) == 0) {
            remember(s, name, &st, version, created);
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
