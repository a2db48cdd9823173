/*
 * km_svm_screen.c - svc's screened solver: exact SMO per class pair on a
 * working set of rows that a Nystrom model picks, grown until every row
 * of the pair meets the optimality conditions.
 *
 * Most rows of a large classification problem lie far from every margin:
 * their dual variables are 0 at the optimum, and removing them leaves the
 * optimum as it is. LIBSVM's SMO nevertheless computes kernel columns
 * over all of a pair's rows for as long as it runs. This solver guesses
 * the rows that matter, solves on them alone, and proves the guess:
 *
 * 1. Screen. svc's nystrom solver (km_svm_nys.c) on all rows: params.
 *    n_centres uniform centres (default min(n, 1000)), float features,
 *    a loose tolerance (SCREEN_TOL), the fit's C, class weights and seed.
 *    It gives every row's margin y f(x) in each of its pairs. When it
 *    cannot be built (K_mm cannot be factored: a kernel that is not
 *    positive semi-definite on the centres), every row starts in the
 *    working sets.
 * 2. Per pair (a, b), the working set W is the pair's rows whose
 *    screened margin is below SCREEN_MARGIN (at least one row of each
 *    class), the other rows R. Then rounds:
 *      solve   SMO (km_smo.c, as the exact solver: LIBSVM's selection,
 *              shrinking, tolerance and bias) on W, warm-started from the
 *              previous round's alphas (the new rows' at 0); Q from the
 *              Gram of W, computed once and extended by the new rows'
 *              kernel values each round while it fits the budget,
 *      check   f(x) = sum_W y_t alpha_t k(x_t, x) - rho on every row of R
 *              (the kernel columns of R against the support vectors are
 *              kept across rounds while they fit, so each round computes
 *              only the new support vectors' columns), and
 *      grow    W by the rows of R with y f(x) < 1 - tol.
 *    A round that adds no row ends the pair: the alphas (0 on R) meet
 *    SMO's stopping rule on W and y f(x) >= 1 - tol on R, which are the
 *    optimality conditions of the whole pair's problem to the tolerance
 *    the exact solver stops at. W only grows, so the rounds end (at worst
 *    with W = the pair). The model is the exact solver's: support
 *    vectors, LIBSVM's coefficient layout, one rho per pair.
 *
 * Memory: besides the rows (three packed copies of the largest pair's)
 * the kernel values stay within params.cache_mb: the working set's Gram
 * while it takes at most GRAM_SHARE of it (during an extension the old
 * and the new one are held), the check's columns while they take at most
 * COLS_SHARE, SMO's column cache the rest. Past those, SMO computes its
 * columns from the packed rows (LRU cache) and the check recomputes the
 * kernel against the support vectors each round: slower, the same
 * answer.
 *
 * The pairs run on up to ctl->threads workers (km_svm_pairs.c; at most
 * the CPUs and SVC_MAX_WORKERS; each with its own buffers and an equal
 * part of the kernel budget); a pair's answer does not depend on the
 * worker. With more than one worker, BLAS runs one thread per call
 * meanwhile (see km_blas_single_begin).
 *
 * Thread-safety: reentrant; the workers share the read-only rows and
 * margins, write disjoint entries of the results, and report progress
 * under a lock.
 */
#include <cblas.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "../base/km_base_internal.h"
#include "../kernels/km_kernel_internal.h"
#include "km_svm_solve.h"

/* Rows whose screened margin y f(x) is below this start in the working
 * set. Measured on Fashion-MNIST (rbf gamma 0.02, C = 10, screen
 * m = 1000; the same optimum every time): on the first 50,000 rows 1.5
 * took 17.6 s, 1.7 18.5 s, 1.9 20.8 s; on all 60,000, with an early
 * version on one worker, 1.2 left so many support vectors out that the
 * checks added 82,000 rows (33 s), 2.0 put in 182,000 rows whose Grams
 * cost 14 s (33 s), and 1.5 started 77,000 rows, to which the checks
 * added 20,000 (26 s). */
#define SCREEN_MARGIN 1.5
/* The screen's tolerance (projected-gradient spread): it only ranks
 * rows, so LIBLINEAR's loose end suffices. */
#define SCREEN_TOL 0.5
/* The screen's share of the fit's progress. */
#define SCREEN_SHARE 0.2
/* Shares of a worker's kernel budget (params.cache_mb over the workers):
 * the working set's Gram (extended in place), the check's columns; SMO's
 * cache gets what is left, at least MIN_SHARE. */
#define GRAM_SHARE 0.35
#define COLS_SHARE 0.2
#define MIN_SHARE 0.1

static size_t budget_of(const km_svm_params *p)
{
    double b = p->cache_mb * 1048576.0;
    return b >= (double)(SIZE_MAX / 4) ? SIZE_MAX / 4 : (size_t)b;
}

size_t km_svc_screen_fit_bytes(size_t n, size_t d, size_t k,
                               const km_svm_params *p)
{
    km_svm_params s = *p;
    s.solver = KM_SVM_SOLVER_NYSTROM;
    s.precision = KM_SVM_PRECISION_FLOAT32;
    s.centres = KM_KRR_CENTRES_UNIFORM;
    /* The screen, with the grouped rows and the margins (n (k - 1)),
     * which the pairs keep. */
    uint64_t screen = km_add_sat(km_svc_nys_fit_bytes(n, d, k, &s),
                                 km_mul_sat(km_mul_sat(n, k - 1), 8));
    /* The pairs: the grouped rows and their coefficient table (n (d + k)),
     * per worker (at most svc_most_workers()) three packed copies of the
     * largest pair's rows (working set, rows outside, support vectors; at
     * most n rows each) and per-row state (about 20 doubles a row, SMO's
     * included), the kernel budget (shared by the workers; at most what
     * a worker's pair of at most n rows can hold: the Gram twice during
     * an extension, the check's columns and SMO's cache, each at most
     * n^2 doubles), and the model's copies of the support vectors (at
     * most all rows). */
    uint64_t pairs = km_mul_sat(n, 2 * d + 2 * k);
    pairs = km_add_sat(pairs, km_mul_sat(svc_most_workers(),
                                         km_mul_sat(n, 3 * d + 20)));
    uint64_t kernel = km_mul_sat(km_mul_sat(4 * svc_most_workers(), n),
                                 km_mul_sat(n, 8));
    kernel = kernel < budget_of(p) ? kernel : budget_of(p);
    pairs = km_add_sat(km_mul_sat(pairs, 8), kernel);
    uint64_t v = km_add_sat(screen, pairs);
    return v > SIZE_MAX ? SIZE_MAX : (size_t)v;
}

typedef struct scr_run scr_run;

/* One worker's state for its current pair; the buffers hold the largest
 * pair. */
typedef struct scr_pair {
    scr_run *run;
    size_t pi;              /* the pair's index */
    km_fit_control smo_ctl; /* SMO's progress, through the run's lock */
    double span_lo, span_hi; /* this round's share of the pair's 0..1 */
    double *Xs;             /* support vectors packed (check) */
    const km_kernel *k;
    const km_svm_params *p;
    const double *Xg;       /* grouped rows */
    size_t d, K;
    const double *margin;   /* n x (K - 1): the screen's y f(x) */
    size_t budget;
    const km_fit_control *ctl;
    /* the pair: local rows t < na are grouped rows a0 + t (class a, +1),
     * the others b0 + t - na (class b, -1) */
    size_t a, b, a0, na, b0, nb;
    double Ca, Cb;
    /* working set: nw variables, local row wrow[t], packed rows Xw */
    size_t nw, *wrow;
    signed char *y;
    double *C, *lin, *alpha, *Xw;
    double *G;              /* nw x nw Gram of Xw (in gbuf), or NULL */
    /* The kernel budget's three parts, each reserved at its share of
     * the budget (at most what the largest pair can use: maxpair^2
     * values) and kept from round to round and pair to pair (the Gram's
     * and the cache's made anew only when the Gram stops or starts
     * fitting its share). Pages never touched cost nothing; touched ones
     * are touched once per worker, not once per round: each fresh page
     * is a fault and a zeroing by the kernel (3.6 million of them, about
     * 14% of a Fashion-MNIST fit, when every round allocated its own). */
    size_t maxpair;
    double *gbuf;           /* gcap doubles: G's */
    size_t gcap;
    double *krbuf;          /* krcap doubles: KR's */
    size_t krcap;
    double *pool;           /* pool_size doubles: SMO's column cache */
    size_t pool_size;
    /* rows outside: nr local rows rrow, packed rows Xr */
    size_t nr, *rrow;
    double *Xr, *f;
    /* the check's columns: ncol columns of nr values each (column c
     * holds k(Xw[wcol[c]], Xr)), or NULL */
    double *KR;
    size_t ncol, *wcol;
    long *col_of;           /* per working variable: its column or -1 */
    double *cv;             /* column coefficients */
    size_t *kept;           /* rows outside kept by a round (their old
                               positions) */
    unsigned char *inw;     /* per local row: in the working set */
    /* figures: this pair's rounds; over the worker's pairs */
    int rounds, max_rounds;
    long iterations;
    int capped;
    size_t added, working;
} scr_pair;

static size_t grouped(const scr_pair *s, size_t t)
{
    return t < s->na ? s->a0 + t : s->b0 + (t - s->na);
}

static double screened_margin(const scr_pair *s, size_t t)
{
    return s->margin[grouped(s, t) * (s->K - 1) +
                     (t < s->na ? s->b - 1 : s->a)];
}

static km_status screen_oom(km_error *err, const char *what)
{
    return km_error_set(err, KM_ENOMEM, "out of memory for the screened "
                        "solver's %s", what);
}

/* Local row t into the working set, alpha 0. */
static void add_working(scr_pair *s, size_t t)
{
    size_t w = s->nw++;
    s->wrow[w] = t;
    s->y[w] = t < s->na ? 1 : -1;
    s->C[w] = t < s->na ? s->Ca : s->Cb;
    s->lin[w] = -1;
    s->alpha[w] = 0;
    s->col_of[w] = -1;
    s->inw[t] = 1;
    memcpy(s->Xw + w * s->d, s->Xg + grouped(s, t) * s->d,
           s->d * sizeof *s->Xw);
}

/* The Gram of the working set after rows [n0, nw) joined it: a new
 * matrix with the old one's values and the new rows' kernel values, or
 * none when it would not fit (SMO then computes its columns). */
/* A buffer of want doubles at *buf (*cap), reserved the first time it is
 * asked for (see scr_pair), want the most it will hold; 0 or -1. */
static int reserve(double **buf, size_t *cap, size_t want)
{
    if (*buf)
        return 0;
    *buf = malloc((want ? want : 1) * sizeof **buf);
    *cap = *buf ? want : 0;
    return *buf ? 0 : -1;
}

/* The most doubles of share of a worker's budget that s's pairs can use
 * (maxpair^2). */
static size_t share_doubles(const scr_pair *s, double share)
{
    double most = share * (double)s->budget / sizeof(double);
    double need = (double)s->maxpair * (double)s->maxpair;
    return (size_t)(most < need ? most : need);
}

static km_status grow_gram(scr_pair *s, size_t n0, km_error *err)
{
    const size_t n = s->nw;
    if (!s->G && n0 > 0)
        return KM_OK; /* already past the budget */
    if ((double)n * n > GRAM_SHARE * (double)s->budget / sizeof(double)) {
        /* SMO's cache takes the Gram's share now: let its pages go */
        s->G = NULL;
        free(s->gbuf);
        s->gbuf = NULL;
        s->gcap = 0;
        return KM_OK;
    }
    if (reserve(&s->gbuf, &s->gcap, share_doubles(s, GRAM_SHARE)) ||
        n * n > s->gcap) {
        s->G = NULL;
        return screen_oom(err, "working-set Gram");
    }
    /* in place: each old row to its wider stride, the last first (a row's
     * new place starts at or after its old one, and past every row still
     * to move) */
    for (size_t i = n0; s->G && i-- > 0;)
        memmove(s->gbuf + i * n, s->gbuf + i * n0, n0 * sizeof *s->gbuf);
    double *G = s->gbuf;
    km_status st;
    if (n0 == 0) {
        st = km_gram_sym(s->k, s->Xw, n, s->d, G, 1, err);
    } else {
        st = km_gram_cross(s->k, s->Xw + n0 * s->d, n - n0, s->Xw, n, s->d,
                           G + n0 * n, n, err);
        /* the old rows' new columns: the new rows' old columns,
         * transposed in tiles (a row at a time would miss the cache on
         * every write) */
        enum { TILE = 32 };
        for (size_t i0 = n0; i0 < n && st == KM_OK; i0 += TILE)
            for (size_t j0 = 0; j0 < n0; j0 += TILE)
                for (size_t j = j0; j < j0 + TILE && j < n0; j++)
                    for (size_t i = i0; i < i0 + TILE && i < n; i++)
                        G[j * n + i] = G[i * n + j];
    }
    s->G = st == KM_OK ? G : NULL;
    return st;
}

/* f on the rows outside, from the support vectors of this round: by the
 * kept columns (computing those of new support vectors) while they fit
 * the budget, else by the kernel against the support vectors. */
static km_status check_values(scr_pair *s, double rho, double *Xs,
                              km_error *err)
{
    const size_t d = s->d;
    size_t nnew = 0, nsv = 0;
    for (size_t w = 0; w < s->nw; w++)
        if (s->alpha[w] > 0) {
            nsv++;
            nnew += s->col_of[w] < 0;
        }
    double room = COLS_SHARE * (double)s->budget;
    if (s->KR && (double)(s->ncol + nnew) * s->nr * sizeof(double) > room)
        s->KR = NULL; /* past the budget: no columns from here on */
    if (s->KR || (s->ncol == 0 && (double)nnew * s->nr * 8 <= room)) {
        if (nnew) {
            if (reserve(&s->krbuf, &s->krcap, share_doubles(s, COLS_SHARE)) ||
                (s->ncol + nnew) * s->nr > s->krcap)
                return screen_oom(err, "check's kernel columns");
            s->KR = s->krbuf;
            size_t c = 0;
            for (size_t w = 0; w < s->nw; w++)
                if (s->alpha[w] > 0 && s->col_of[w] < 0) {
                    memcpy(Xs + c * d, s->Xw + w * d, d * sizeof *Xs);
                    s->wcol[s->ncol + c] = w;
                    s->col_of[w] = (long)(s->ncol + c);
                    c++;
                }
            km_status st = km_gram_cross(s->k, Xs, nnew, s->Xr, s->nr, d,
                                         s->KR + s->ncol * s->nr, s->nr,
                                         err);
            if (st != KM_OK)
                return st;
            s->ncol += nnew;
        }
        for (size_t c = 0; c < s->ncol; c++) {
            size_t w = s->wcol[c];
            s->cv[c] = s->y[w] * s->alpha[w];
        }
        memset(s->f, 0, s->nr * sizeof *s->f); /* no columns: f = -rho */
        if (s->ncol)
            cblas_dgemv(CblasRowMajor, CblasTrans, (int)s->ncol, (int)s->nr,
                        1.0, s->KR, (int)s->nr, s->cv, 1, 0.0, s->f, 1);
        for (size_t r = 0; r < s->nr; r++)
            s->f[r] -= rho;
        return KM_OK;
    }
    size_t c = 0;
    for (size_t w = 0; w < s->nw; w++)
        if (s->alpha[w] > 0) {
            memcpy(Xs + c * d, s->Xw + w * d, d * sizeof *Xs);
            s->cv[c++] = s->y[w] * s->alpha[w];
        }
    double bias = -rho;
    return km_kernel_expand(s->k, Xs, nsv, d, NULL, s->cv, 1, &bias, s->Xr,
                            s->nr, s->f, err);
}

/* Moves the rows outside with y f < 1 - tol into the working set and
 * compacts the rest, then the kept columns (column by column, each
 * read and written in order). Returns the rows moved. */
static size_t grow_working(scr_pair *s)
{
    const double floor = 1 - s->p->tol;
    const size_t nr = s->nr;
    size_t keep = 0;
    for (size_t r = 0; r < nr; r++) {
        size_t t = s->rrow[r];
        double yf = t < s->na ? s->f[r] : -s->f[r];
        if (yf < floor) {
            add_working(s, t);
            continue;
        }
        s->kept[keep] = r;
        if (keep != r) {
            s->rrow[keep] = t;
            memcpy(s->Xr + keep * s->d, s->Xr + r * s->d,
                   s->d * sizeof *s->Xr);
        }
        keep++;
    }
    /* column c moves from c nr to c keep: never past what is still to
     * be read */
    for (size_t c = 0; s->KR && keep < nr && c < s->ncol; c++) {
        const double *from = s->KR + c * nr;
        double *to = s->KR + c * keep;
        for (size_t i = 0; i < keep; i++)
            to[i] = from[s->kept[i]];
    }
    s->nr = keep;
    return nr - keep;
}

/* The pairs of one fit, shared by the workers. */
struct scr_run {
    svc_pairs q;            /* the queue (km_svm_pairs.c) */
    const size_t *start;
    size_t K;
    double *coef, *rho, *obj, *wsq; /* the results (disjoint entries) */
};

/* SMO's progress callback: its 0..1 into the round's share of the
 * pair. */
static int smo_progress(void *ctx, double f)
{
    scr_pair *s = ctx;
    return svc_pairs_progress(&s->run->q, s->pi,
                              s->span_lo + (s->span_hi - s->span_lo) * f);
}

/* The current pair: rounds until no row outside violates; the result
 * into the exact solver's tables (coefficients of the pair's rows, and
 * the pair's rho, objective and |w|^2). */
static km_status solve_pair(scr_pair *s, km_error *err)
{
    scr_run *r = s->run;
    const size_t l = s->na + s->nb, d = s->d, pi = s->pi;
    s->nw = s->nr = s->ncol = 0;
    s->rounds = 0;
    memset(s->inw, 0, l);
    size_t best[2] = {SIZE_MAX, SIZE_MAX};
    int have[2] = {0, 0};
    for (size_t t = 0; t < l; t++) {
        int side = t >= s->na;
        double v = screened_margin(s, t);
        if (v < SCREEN_MARGIN) {
            add_working(s, t);
            have[side] = 1;
        } else if (best[side] == SIZE_MAX ||
                   v < screened_margin(s, best[side])) {
            best[side] = t;
        }
    }
    for (int side = 0; side < 2; side++)
        if (!have[side]) /* SMO needs both classes */
            add_working(s, best[side]);
    for (size_t t = 0; t < l; t++)
        if (!s->inw[t]) {
            s->rrow[s->nr] = t;
            memcpy(s->Xr + s->nr * d, s->Xg + grouped(s, t) * d,
                   d * sizeof *s->Xr);
            s->nr++;
        }
    km_status st = grow_gram(s, 0, err);
    smo_result res;
    while (st == KM_OK) {
        s->rounds++;
        smo_problem pb;
        memset(&pb, 0, sizeof pb);
        pb.n = s->nw;
        pb.d = d;
        pb.X = s->Xw;
        pb.n_points = s->nw;
        pb.K = s->G;
        pb.y = s->y;
        pb.p = s->lin;
        pb.C = s->C;
        pb.alpha = s->alpha;
        smo_options o;
        km_smo_options_of(&o, s->p, &s->smo_ctl, 0, 1);
        double left = 1 - (s->G ? GRAM_SHARE : 0) - COLS_SHARE;
        o.cache_bytes = (size_t)((left > MIN_SHARE ? left : MIN_SHARE) *
                                 (double)s->budget);
        /* the worker's cache memory, lent; made anew only when the
         * share changes (a Gram held or not), so that the three parts
         * never hold more than the budget together */
        size_t want = share_doubles(s, (double)o.cache_bytes /
                                           (double)s->budget);
        if (s->pool && s->pool_size != want) {
            free(s->pool);
            s->pool = NULL;
        }
        if (reserve(&s->pool, &s->pool_size, want) == 0) {
            o.pool = s->pool;
            o.pool_size = s->pool_size;
        }
        /* the rounds' count is not known ahead: each takes half of
         * what is left of the pair */
        int h = s->rounds - 1 < 30 ? s->rounds - 1 : 30;
        s->span_lo = 1 - 1.0 / (double)(1u << h);
        s->span_hi = 1 - 0.5 / (double)(1u << h);
        if ((st = km_smo_solve(s->k, &pb, &o, &res, err)) != KM_OK)
            break;
        s->iterations += res.iterations;
        s->capped += res.capped;
        if (s->nr == 0)
            break;
        if ((st = check_values(s, res.rho, s->Xs, err)) != KM_OK)
            break;
        size_t n0 = s->nw, moved = grow_working(s);
        if (!moved)
            break;
        s->added += moved;
        st = grow_gram(s, n0, err);
        if (st == KM_OK && svc_pairs_progress(&r->q, pi, s->span_hi))
            st = km_error_set(err, KM_ECANCELLED, "fit cancelled");
    }
    s->G = NULL; /* gbuf and krbuf stay for the worker's next pair */
    s->KR = NULL;
    if (st != KM_OK)
        return st;
    s->working += s->nw;
    s->max_rounds = s->rounds > s->max_rounds ? s->rounds : s->max_rounds;
    r->rho[pi] = res.rho;
    r->obj[pi] = res.objective;
    /* |w|^2 = a^T Q a = 2 (objective + sum a), as the exact solver */
    km_ksum sa = {0, 0};
    km_ksum_add(&sa, res.objective);
    for (size_t w = 0; w < s->nw; w++) {
        if (!(s->alpha[w] > 0))
            continue;
        km_ksum_add(&sa, s->alpha[w]);
        size_t t = s->wrow[w];
        r->coef[grouped(s, t) * (s->K - 1) + (t < s->na ? s->b - 1 : s->a)] =
            s->y[w] * s->alpha[w];
    }
    r->wsq[pi] = 2 * km_ksum_get(&sa);
    return KM_OK;
}

/* Pair pi on a worker (svc_pairs' solve): its classes (a, b) in
 * LIBSVM's order, then its rounds. */
static km_status screen_pair(void *state, size_t pi, km_error *err)
{
    scr_pair *s = state;
    const scr_run *r = s->run;
    const km_svm_params *p = s->p;
    size_t a = 0, q = pi;
    while (q >= r->K - 1 - a) {
        q -= r->K - 1 - a;
        a++;
    }
    size_t b = a + 1 + q;
    s->pi = pi;
    s->a = a;
    s->b = b;
    s->a0 = r->start[a];
    s->na = r->start[a + 1] - r->start[a];
    s->b0 = r->start[b];
    s->nb = r->start[b + 1] - r->start[b];
    s->Ca = p->C * (p->class_weight ? p->class_weight[a] : 1);
    s->Cb = p->C * (p->class_weight ? p->class_weight[b] : 1);
    return solve_pair(s, err);
}

static void worker_free(scr_pair *s)
{
    free(s->gbuf);
    free(s->krbuf);
    free(s->pool);
    free(s->wrow);
    free(s->y);
    free(s->C);
    free(s->lin);
    free(s->alpha);
    free(s->Xw);
    free(s->rrow);
    free(s->Xr);
    free(s->f);
    free(s->wcol);
    free(s->col_of);
    free(s->cv);
    free(s->inw);
    free(s->kept);
    free(s->Xs);
}

static int worker_alloc(scr_pair *s, size_t maxpair, size_t d)
{
    s->maxpair = maxpair;
    s->wrow = malloc(maxpair * sizeof *s->wrow);
    s->y = malloc(maxpair);
    s->C = malloc(maxpair * sizeof *s->C);
    s->lin = malloc(maxpair * sizeof *s->lin);
    s->alpha = malloc(maxpair * sizeof *s->alpha);
    s->Xw = malloc(maxpair * d * sizeof *s->Xw);
    s->rrow = malloc(maxpair * sizeof *s->rrow);
    s->Xr = malloc(maxpair * d * sizeof *s->Xr);
    s->f = malloc(maxpair * sizeof *s->f);
    s->wcol = malloc(maxpair * sizeof *s->wcol);
    s->col_of = malloc(maxpair * sizeof *s->col_of);
    s->cv = malloc(maxpair * sizeof *s->cv);
    s->inw = malloc(maxpair);
    s->Xs = malloc(maxpair * d * sizeof *s->Xs);
    s->kept = malloc(maxpair * sizeof *s->kept);
    return s->wrow && s->y && s->C && s->lin && s->alpha && s->Xw &&
           s->rrow && s->Xr && s->f && s->wcol && s->col_of && s->cv &&
           s->inw && s->Xs && s->kept;
}

/* Workers for k classes: ctl->threads, at most the pairs and
 * svc_most_workers(). */
static size_t screen_workers(const km_fit_control *ctl, size_t k)
{
    size_t P = k * (k - 1) / 2, nw = ctl && ctl->threads > 1
                                          ? (size_t)ctl->threads
                                          : 1;
    nw = nw < P ? nw : P;
    return nw < svc_most_workers() ? nw : svc_most_workers();
}

km_status km_svc_screen_solve(const km_kernel *k, const km_svm_params *p,
                              const double *X, const double *Xg, size_t n,
                              size_t d, const size_t *order,
                              const size_t *start, size_t K,
                              const km_fit_control *ctl, double *coef,
                              unsigned char *nz, double *rho, double *obj,
                              double *wsq, svc_screen_figures *fig,
                              km_error *err)
{
    const size_t P = K * (K - 1) / 2;
    memset(fig, 0, sizeof *fig);
    double *margin = malloc(n * (K - 1) * sizeof *margin);
    if (!margin)
        return screen_oom(err, "margins");
    /* 1. the screen */
    km_svm_params sp = *p;
    sp.solver = KM_SVM_SOLVER_NYSTROM;
    sp.centres = KM_KRR_CENTRES_UNIFORM;
    sp.precision = KM_SVM_PRECISION_FLOAT32;
    sp.tol = SCREEN_TOL;
    sp.max_iter = 0;
    sp.shrinking = 1;
    svc_nys_result nr;
    km_progress_span span = {ctl, 0.0, SCREEN_SHARE};
    km_fit_control sub = {km_progress_span_report, &span,
                          ctl ? ctl->threads : 1, NULL};
    double t0 = km_now();
    km_status st = km_svc_nys_solve(k, &sp, X, n, d, order, start, K, &sub,
                                    margin, &nr, err);
    if (st == KM_ENOTPD) {
        /* No screen: K_mm cannot be factored (a kernel that is not
         * positive semi-definite on the centres, as sigmoid can be).
         * Every row starts in the working sets: the exact solver's
         * problem, the same answer. */
        for (size_t i = 0; i < n * (K - 1); i++)
            margin[i] = -HUGE_VAL;
        st = KM_OK;
    } else if (st != KM_OK) {
        free(margin);
        return st;
    } else {
        fig->centres = nr.m;
        km_svc_nys_free(&nr);
    }
    fig->screen_seconds = km_now() - t0;

    /* 2. the pairs, on the workers */
    size_t maxpair = 0;
    for (size_t a = 0; a < K; a++)
        for (size_t b = a + 1; b < K; b++) {
            size_t c = start[a + 1] - start[a] + start[b + 1] - start[b];
            maxpair = c > maxpair ? c : maxpair;
        }
    const size_t nw = screen_workers(ctl, K);
    scr_run run = {.start = start, .K = K, .coef = coef, .rho = rho,
                   .obj = obj, .wsq = wsq};
    run.q.ctl = ctl;
    run.q.P = P;
    run.q.lo = SCREEN_SHARE;
    run.q.hi = 0.99;
    run.q.solve = screen_pair;
    scr_pair wk[SVC_MAX_WORKERS];
    memset(wk, 0, sizeof wk);
    int ok = 1;
    for (size_t w = 0; w < nw; w++) {
        scr_pair *s = &wk[w];
        s->run = &run;
        s->smo_ctl = (km_fit_control){smo_progress, s, 1, NULL};
        s->k = k;
        s->p = p;
        s->Xg = Xg;
        s->d = d;
        s->K = K;
        s->margin = margin;
        s->budget = budget_of(p) / nw;
        ok = ok && worker_alloc(s, maxpair, d);
    }
    if (!ok) {
        st = screen_oom(err, "working sets");
        goto out;
    }
    if (nw > 1)
        km_blas_single_begin();
    st = svc_pairs_run(&run.q, wk, sizeof *wk, nw, err);
    if (nw > 1)
        km_blas_single_end();
    if (st != KM_OK)
        goto out;
    for (size_t w = 0; w < nw; w++) {
        fig->iterations += wk[w].iterations;
        fig->capped += wk[w].capped;
        fig->added += wk[w].added;
        fig->working += wk[w].working;
        fig->rounds = wk[w].max_rounds > fig->rounds ? wk[w].max_rounds
                                                     : fig->rounds;
    }
    for (size_t g = 0; g < n; g++)
        for (size_t c = 0; c + 1 < K; c++)
            nz[g] |= coef[g * (K - 1) + c] != 0;
out:
    free(margin);
    for (size_t w = 0; w < nw; w++)
        worker_free(&wk[w]);
    return st;
}
