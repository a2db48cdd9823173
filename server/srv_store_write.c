/*
 * srv_store_write.c - changes to a name's files: a save (temporary file,
 * fsync, rename, the directory's fsync), the version it replaces kept and
 * the oldest kept pruned, a delete, what NAME.kmm holds before a change,
 * and the name's lock replicas share; see srv_store.h.
 *
 * Thread-safety: see srv_store.h (the commit lock and the name's lock).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "srv_log.h"
#include "srv_store_internal.h"
#include "srv_test.h"

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

/* A temporary file's descriptor and the first write error (errno). */
typedef struct {
    int fd, err;
} fd_sink;

static int to_fd(void *ctx, const void *p, size_t n)
{
    fd_sink *f = ctx;
    if (write_all(f->fd, p, n) == 0)
        return 0;
    f->err = errno ? errno : EIO;
    return -1;
}

/* What fills a temporary file, through to_fd on f: 0, or -1 (f->err set
 * when the file was at fault). */
typedef int (*temp_fill)(void *ctx, fd_sink *f);

/* Writes the new temporary file tmp by fill (streamed: a file of hundreds
 * of MB is never whole in memory), then fsyncs it. 0, or an errno value
 * (the file is then removed). */
static int write_temp(srv_store *s, const char *tmp, temp_fill fill,
                      void *ctx)
{
    fd_sink f = {openat(s->dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
                        0644), 0};
    if (f.fd < 0)
        return errno;
    if (fill(ctx, &f) != 0 && !f.err)
        f.err = ENOMEM; /* not the file's: the writer's buffer */
    if (!f.err && fsync(f.fd) != 0)
        f.err = errno;
    if (close(f.fd) != 0 && !f.err)
        f.err = errno;
    if (f.err)
        unlinkat(s->dirfd, tmp, 0);
    return f.err;
}

/* temp_fill of a model's file (km_model_save_sink_blocks), its factor
 * through blocks (may be NULL). */
typedef struct {
    const km_model *m;
    const km_blocks *blocks;
} model_fill;

static int fill_model(void *ctx, fd_sink *f)
{
    const model_fill *mf = ctx;
    km_error err;
    return km_model_save_sink_blocks(mf->m, to_fd, f, mf->blocks, &err) ==
                   KM_OK
               ? 0
               : -1;
}

/* temp_fill of what the descriptor *ctx reads, a MiB at a time. */
static int fill_copy(void *ctx, fd_sink *f)
{
    int src = *(const int *)ctx, rc = 0;
    unsigned char *buf = malloc((size_t)1 << 20);
    if (!buf)
        return -1;
    for (;;) {
        ssize_t got = read(src, buf, (size_t)1 << 20);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            f->err = errno;
            rc = -1;
        }
        if (got <= 0 || (rc = to_fd(f, buf, (size_t)got)) != 0)
            break;
    }
    free(buf);
    return rc;
}

/* ------------------------------------------------------------ factor blocks
 *
 * A save of a model whose factor goes to block files (srv_store_save)
 * gives core put_block: each block the version holds gets its name
 * .NAME.kmm.bVERSION-ID, a hard link to the file another version of the
 * name already has of that block (an update's old rows), or else a new
 * file written as a save's temporary file is (fsync, rename). The names
 * are made durable (the directory's fsync) before the model file is
 * renamed into place, so a model file never names a block that a crash
 * could lose. A name's block links of versions neither current nor kept
 * are removed by the save's prune and by a delete (sweep_blocks); the
 * file goes with its last link. */

typedef struct {
    srv_store *s;
    const char *name;
    uint64_t version;
    int err;                 /* the first errno */
    int listed;              /* the links below read */
    uint64_t *have_v, *have_id;
    size_t n_have;
} block_put;

/* Lists name's block links (version, id) into b once. */
static void list_blocks(block_put *b)
{
    size_t cap = 0;
    uint64_t v, id;
    b->listed = 1;
    DIR *d = open_listing(b->s->dirfd);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        if (!block_link(e->d_name, b->name, &v, &id))
            continue;
        if (b->n_have == cap) {
            size_t c = cap ? 2 * cap : 16;
            uint64_t *nv = realloc(b->have_v, c * sizeof *nv);
            if (nv)
                b->have_v = nv;
            uint64_t *ni = nv ? realloc(b->have_id, c * sizeof *ni) : NULL;
            if (!ni)
                break; /* not linked: written again */
            b->have_id = ni;
            cap = c;
        }
        b->have_v[b->n_have] = v;
        b->have_id[b->n_have++] = id;
    }
    if (d)
        closedir(d);
}

/* temp_fill of a block file (core's write). */
typedef struct {
    int (*write)(void *wctx, km_sink_fn sink, void *sink_ctx);
    void *wctx;
} block_fill;

static int fill_block(void *ctx, fd_sink *f)
{
    const block_fill *b = ctx;
    return b->write(b->wctx, to_fd, f);
}

static int put_block(void *ctx, uint64_t id,
                     int (*write)(void *wctx, km_sink_fn sink,
                                  void *sink_ctx),
                     void *wctx)
{
    block_put *b = ctx;
    srv_store *s = b->s;
    char want[256], from[256], tmp[512];
    block_file(want, sizeof want, b->name, b->version, id);
    if (!b->listed)
        list_blocks(b);
    for (size_t i = 0; i < b->n_have; i++) {
        if (b->have_id[i] != id)
            continue;
        if (b->have_v[i] == b->version) /* a crashed save's: complete */
            return 0;
        block_file(from, sizeof from, b->name, b->have_v[i], id);
        if (linkat(s->dirfd, from, s->dirfd, want, 0) == 0 ||
            errno == EEXIST)
            return 0;
        /* gone meanwhile, or no hard links here: written below */
    }
    temp_name(s, b->name, TEMP_MARK, tmp, sizeof tmp);
    block_fill fill = {write, wctx};
    int rc = write_temp(s, tmp, fill_block, &fill);
    if (!rc && renameat(s->dirfd, tmp, s->dirfd, want) != 0) {
        rc = errno;
        unlinkat(s->dirfd, tmp, 0);
    }
    return rc ? (b->err = rc) : 0;
}

/* Removes name's block links but those of version current and of the
 * kept versions (current 0: all). Logged, not answered: a link left is
 * removed by the next save or delete. Commit lock held. */
static void sweep_blocks(srv_store *s, const char *name, uint64_t current)
{
    uint64_t *kept = NULL, v, id;
    size_t n_kept = 0;
    if (current && list_kept(s->dirfd, name, &kept, &n_kept) != 0)
        return; /* not knowing what is kept, remove nothing */
    DIR *d = open_listing(s->dirfd);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        if (!block_link(e->d_name, name, &v, &id) || (current && v == current))
            continue;
        int keep = 0;
        for (size_t i = 0; i < n_kept && !keep; i++)
            keep = kept[i] == v;
        if (!keep && unlinkat(s->dirfd, e->d_name, 0) != 0 &&
            errno != ENOENT)
            srv_log(SRV_ERROR, "store_prune", "cannot remove %s/%s: %s",
                    s->dir, e->d_name, strerror(errno));
    }
    if (d)
        closedir(d);
    free(kept);
}

/* Copies the file `file` to the new temporary file tmp (file systems
 * without hard links), a MiB at a time. 0, or an errno value. */
static int copy_temp(srv_store *s, const char *file, const char *tmp)
{
    int fd = openat(s->dirfd, file, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return errno;
    int rc = write_temp(s, tmp, fill_copy, &fd);
    close(fd);
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
        km_model *m = read_model(s->dirfd, tmp, name, why, sizeof why,
                                 &special);
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
        if (!known_version(s, name, &st, &head->version,
                           &head->created_at_ms, 0)) {
            /* another replica's, or a hand's: read what it holds */
            km_model *m = read_model_fd(fd, s->dirfd, name, why, sizeof why,
                                        &special);
            head->version = m ? km_model_version(m) : 0;
            head->created_at_ms = m ? km_model_created_at_ms(m) : 0;
            km_model_free(m);
        }
    }
    close(fd);
    return rc;
}

int srv_store_save(srv_store *s, const km_model *m,
                   const srv_store_head *replaced, srv_store_head *written)
{
    size_t pruned;
    struct stat st;
    const char *name = km_model_name(m);
    char tmp[512], file[512];
    snprintf(file, sizeof file, "%s" SUFFIX, name);
    temp_name(s, name, TEMP_MARK, tmp, sizeof tmp);
    block_put bp = {s, name, km_model_version(m), 0, 0, NULL, NULL, 0};
    km_blocks blocks = {&bp, s->factor_min, put_block, NULL};
    model_fill fill = {m, &blocks};
    int rc = write_temp(s, tmp, fill_model, &fill);
    if (rc && bp.err)
        rc = bp.err; /* a block's, not the model file's */
    free(bp.have_v);
    free(bp.have_id);
    if (!rc && bp.listed && fsync(s->dirfd) != 0) /* the blocks' names */
        rc = errno;
    if (rc) {
        unlinkat(s->dirfd, tmp, 0);
        return rc;
    }
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
    written->created_at_ms = km_model_created_at_ms(m);
    written->dev = st.st_dev;
    written->ino = st.st_ino;
    written->size = st.st_size;
    written->mtime = st.st_mtim;
    prune_kept(s, name, km_model_version(m), &pruned);
    sweep_blocks(s, name, km_model_version(m));
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
    remember(s, name, &st, written->version,
             written->created_at_ms); /* not to be loaded back */
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
    if (!rc) {
        remember(s, name, NULL, 0, 0);
        sweep_blocks(s, name, 0); /* after the file that names them */
    }
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
