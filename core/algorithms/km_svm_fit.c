/*
 * km_svm_fit.c - the fits of C-SVC and epsilon-SVR (the method: km_svm.c's
 * opening comment): the choice of svc's solver, each pair's SMO solve
 * (and its working-set and nystrom forms through km_svm_screen.c and
 * km_svm_nys.c), probability's cross-validation and Platt's sigmoids,
 * SVR's 2n-variable solve, and the models' figures.
 *
 * Thread-safety: reentrant.
 */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../base/km_base_internal.h"
#include "../kernels/km_kernel_internal.h"
#include "../model/km_model_internal.h"
#include "../solvers/km_svm_solve.h"
#include "km_svm.h"
#include "km_svm_payload.h"
#include "km_svm_prob.h"

#define CV_FOLDS 5
#define PROB_SEED 0x6b6d73766dull /* fixed: probability fits repeat */

km_svm_solver km_svm_resolve_solver(const km_svm_params *p, size_t n,
                                    size_t k)
{
    if (p->solver != KM_SVM_SOLVER_AUTO)
        return p->solver;
    if (p->keep_rows) /* the warm start is the exact solver's */
        return KM_SVM_SOLVER_EXACT;
    size_t gram = km_mul3(n, n, sizeof(double));
    if (p->probability || n <= KM_SVM_AUTO_EXACT_ROWS ||
        (k > 2 && gram && gram <= km_svm_budget_bytes(p) / 2))
        return KM_SVM_SOLVER_EXACT;
    return KM_SVM_SOLVER_SCREENED;
}

/* Common figures of both fits. */
static km_status add_params(km_model *m, const km_svm_params *p,
                            km_algorithm algo, size_t k)
{
    km_info *in = km_model_params_mut(m);
    km_status st = km_info_add1(in, "C", KM_INFO_NUMBER, p->C);
    if (st == KM_OK && algo == KM_ALGO_SVR)
        st = km_info_add1(in, "epsilon", KM_INFO_NUMBER, p->epsilon);
    if (st == KM_OK)
        st = km_info_add1(in, "tol", KM_INFO_NUMBER, p->tol);
    if (st == KM_OK)
        st = km_info_add1(in, "cache_mb", KM_INFO_NUMBER, p->cache_mb);
    if (st == KM_OK)
        st = km_info_add1(in, "shrinking", KM_INFO_BOOLEAN, p->shrinking != 0);
    if (st == KM_OK && algo == KM_ALGO_SVC)
        st = km_info_add1(in, "probability", KM_INFO_BOOLEAN,
                          p->probability != 0);
    if (st == KM_OK && algo == KM_ALGO_SVC && p->class_weight)
        st = km_info_add(in, "class_weight", KM_INFO_NUMBER, 1,
                         p->class_weight, k);
    if (st == KM_OK && p->max_iter > 0)
        st = km_info_add1(in, "max_iter", KM_INFO_INTEGER,
                          (double)p->max_iter);
    if (st == KM_OK && (p->solver == KM_SVM_SOLVER_EXACT ||
                        p->solver == KM_SVM_SOLVER_AUTO))
        st = km_info_add1(in, "keep_rows", KM_INFO_BOOLEAN,
                          p->keep_rows != 0);
    return st;
}

static km_status add_training(km_model *m, long iterations,
                              const double *obj, size_t n_obj,
                              const int *n_support, size_t k, int capped)
{
    km_info *in = km_model_training_mut(m);
    double *ns = malloc((k ? k : 1) * sizeof *ns);
    if (!ns)
        return KM_ENOMEM;
    for (size_t c = 0; c < k; c++)
        ns[c] = n_support[c];
    km_status st = km_info_add1(in, "iterations", KM_INFO_INTEGER,
                                (double)iterations);
    if (st == KM_OK)
        st = km_info_add(in, "objective", KM_INFO_NUMBER, k > 0, obj, n_obj);
    if (st == KM_OK)
        st = km_info_add(in, "n_support", KM_INFO_INTEGER, k > 1, ns, k);
    if (st == KM_OK && capped)
        st = km_info_add1(in, "iterations_capped", KM_INFO_INTEGER, capped);
    free(ns);
    return st;
}

/* ------------------------------------------------------------ C-SVC */

/* The screened and auto solvers' params and figures besides the exact
 * solver's (an exact fit asked for writes none, as before they existed):
 * params solver (2 screened, 3 auto), n_centres (the screen's, also
 * when auto ran exact: what it would have used) and seed; training
 * solver (the one run: 0 exact or 2 screened) and, when screened ran,
 * screen_seconds, working_rows (of all pairs' final working sets),
 * rows_added (by the checks) and rounds (the most of one pair). */
static km_status add_solver(km_model *m, const km_svm_params *p,
                            km_svm_solver run, size_t n,
                            const svc_screen_figures *f)
{
    if (p->solver == KM_SVM_SOLVER_EXACT)
        return KM_OK;
    km_info *pi = km_model_params_mut(m), *ti = km_model_training_mut(m);
    size_t centres = run == KM_SVM_SOLVER_SCREENED && f->centres
                         ? f->centres
                         : km_svm_centres(p, n);
    km_status st = km_info_add1(pi, "solver", KM_INFO_INTEGER, p->solver);
    if (st == KM_OK)
        st = km_info_add1(pi, "n_centres", KM_INFO_INTEGER,
                          (double)centres);
    if (st == KM_OK)
        st = km_info_add1(pi, "seed", KM_INFO_INTEGER, (double)p->seed);
    if (st == KM_OK)
        st = km_info_add1(ti, "solver", KM_INFO_INTEGER, run);
    if (st != KM_OK || run != KM_SVM_SOLVER_SCREENED)
        return st;
    st = km_info_add1(ti, "screen_seconds", KM_INFO_NUMBER,
                      f->screen_seconds);
    if (st == KM_OK)
        st = km_info_add1(ti, "working_rows", KM_INFO_INTEGER,
                          (double)f->working);
    if (st == KM_OK)
        st = km_info_add1(ti, "rows_added", KM_INFO_INTEGER,
                          (double)f->added);
    if (st == KM_OK)
        st = km_info_add1(ti, "rounds", KM_INFO_INTEGER, f->rounds);
    return st;
}

/* The training figure "margin", per pair: 1/|w| from each pair's |w|^2.
 * Left out when some |w|^2 is not > 0 (a kernel that is not positive
 * semi-definite, as sigmoid can be, has no margin). */
static km_status add_margins(km_model *m, double *wsq, size_t n_pairs)
{
    for (size_t p = 0; p < n_pairs; p++) {
        if (!(wsq[p] > 0) || !isfinite(wsq[p]))
            return KM_OK;
        wsq[p] = 1.0 / sqrt(wsq[p]);
    }
    return km_info_add(km_model_training_mut(m), "margin", KM_INFO_NUMBER, 1,
                       wsq, n_pairs);
}

/*
 * A binary problem over some of the grouped rows: rows[t] indexes Xg (and
 * the shared Gram K when there is one). Positives come first.
 */
typedef struct binary {
    size_t n;
    size_t *rows;
    signed char *y;
    double *C, *p, *alpha;
    double *Xp;           /* the rows' copy when there is no shared K */
    size_t *prow;         /* rows mapped to a superset Gram's points */
    double *G, *Gb;       /* a warm start's gradient and G_bar, and the
                             solution's (params.keep_rows) */
} binary;

typedef struct svc_fit {
    const km_kernel *k;
    const km_svm_params *params;
    const double *Xg;     /* grouped rows */
    size_t n, d;
    const double *K;      /* shared Gram of Xg, or NULL */
    const double *Kpts;   /* the points K is the Gram of: Xg, or a
                             caller's superset of the rows */
    size_t np;            /* their count */
    const size_t *kmap;   /* grouped row -> point of K; NULL: itself */
    const km_fit_control *ctl;
    size_t budget;        /* for each solve's kernel storage */
    long iterations;
    int capped;
    km_rng rng;
    double *pool;         /* the column caches' memory, solve after solve
                             (smo_options.pool), or NULL */
    size_t pool_size;
} svc_fit;

/* warm: alpha, G and Gb hold the start; keep: G and Gb get the
 * solution's. */
static km_status solve_binary(svc_fit *f, binary *b, double lo, double hi,
                              int warm, int keep, smo_result *res,
                              km_error *err)
{
    smo_problem pb;
    smo_options o;
    memset(&pb, 0, sizeof pb);
    if (warm) {
        pb.G0 = b->G;
        pb.Gbar0 = b->Gb;
    }
    if (keep) {
        pb.G_out = b->G;
        pb.Gbar_out = b->Gb;
    }
    pb.n = b->n;
    pb.d = f->d;
    pb.y = b->y;
    pb.p = b->p;
    pb.C = b->C;
    pb.alpha = b->alpha;
    if (f->K) {
        pb.X = f->Kpts;
        pb.n_points = f->np;
        pb.row = b->rows;
        pb.K = f->K;
        if (f->kmap) {
            for (size_t t = 0; t < b->n; t++)
                b->prow[t] = f->kmap[b->rows[t]];
            pb.row = b->prow;
        }
    } else {
        for (size_t t = 0; t < b->n; t++)
            memcpy(b->Xp + t * f->d, f->Xg + b->rows[t] * f->d,
                   f->d * sizeof *b->Xp);
        pb.X = b->Xp;
        pb.n_points = b->n;
    }
    for (size_t t = 0; t < b->n; t++) {
        if (!warm)
            b->alpha[t] = 0;
        b->p[t] = -1;
    }
    km_smo_options_of(&o, f->params, f->ctl, lo, hi);
    o.cache_bytes = f->budget;
    o.pool = f->pool;
    o.pool_size = f->pool_size;
    km_status st = km_smo_solve(f->k, &pb, &o, res, err);
    f->iterations += res->iterations;
    f->capped += res->capped;
    return st;
}

/*
 * Platt scaling for one pair (LIBSVM's svm_binary_svc_probability): the
 * pair's rows (b, positives first) in shuffled 5-fold cross-validation,
 * each fold's model scoring its held-out rows, then the sigmoid fit.
 * tmp is a workspace binary of the pair's size.
 */
static km_status pair_probability(svc_fit *f, const binary *b, binary *tmp,
                                  double Cp, double Cn, double lo, double hi,
                                  double *A, double *B, km_error *err)
{
    const size_t n = b->n, d = f->d;
    km_status st = KM_OK;
    size_t *perm = malloc(n * sizeof *perm);
    double *dec = malloc(n * sizeof *dec);
    double *Xt = malloc(n * d * sizeof *Xt);
    double *Xs = malloc(n * d * sizeof *Xs);
    double *cs = malloc(n * sizeof *cs);
    if (!perm || !dec || !Xt || !Xs || !cs) {
        st = oom(err);
        goto out;
    }
    for (size_t i = 0; i < n; i++)
        perm[i] = i;
    for (size_t i = 0; i < n; i++) {
        size_t j = i + km_rng_below(&f->rng, n - i);
        size_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    for (int fold = 0; fold < CV_FOLDS; fold++) {
        size_t begin = fold * n / CV_FOLDS, end = (fold + 1) * n / CV_FOLDS;
        size_t npos = 0, nneg = 0;
        /* Training rows in perm order outside [begin, end), positives
         * first as the pair's own problem has them. */
        for (int pass = 0; pass < 2; pass++)
            for (size_t i = 0; i < n; i++) {
                if (i >= begin && i < end)
                    continue;
                size_t v = perm[i];
                if ((b->y[v] > 0) != (pass == 0))
                    continue;
                size_t t = npos + nneg;
                tmp->rows[t] = b->rows[v];
                tmp->y[t] = b->y[v];
                tmp->C[t] = b->y[v] > 0 ? Cp : Cn;
                if (b->y[v] > 0)
                    npos++;
                else
                    nneg++;
            }
        size_t ntest = end - begin;
        if (npos == 0 || nneg == 0) {
            /* One class only: LIBSVM answers its sign (0 for none). */
            double v = npos ? 1 : nneg ? -1 : 0;
            for (size_t i = begin; i < end; i++)
                dec[perm[i]] = v;
            continue;
        }
        tmp->n = npos + nneg;
        smo_result res;
        double span = (hi - lo) / (CV_FOLDS + 1);
        st = solve_binary(f, tmp, lo + fold * span, lo + (fold + 1) * span, 0,
                          0, &res, err);
        if (st != KM_OK)
            goto out;
        size_t nsv = 0;
        for (size_t t = 0; t < tmp->n; t++)
            if (tmp->alpha[t] > 0) {
                memcpy(Xs + nsv * d, f->Xg + tmp->rows[t] * d, d * sizeof *Xs);
                cs[nsv++] = tmp->y[t] * tmp->alpha[t];
            }
        for (size_t i = begin; i < end; i++)
            memcpy(Xt + (i - begin) * d, f->Xg + b->rows[perm[i]] * d,
                   d * sizeof *Xt);
        double bias = -res.rho;
        st = km_kernel_expand(f->k, Xs, nsv, d, NULL, cs, 1, &bias, Xt, ntest,
                              cs + nsv, err);
        if (st != KM_OK)
            goto out;
        for (size_t i = begin; i < end; i++)
            dec[perm[i]] = cs[nsv + i - begin];
    }
    km_sigmoid_train(n, dec, b->y, A, B);
out:
    free(perm);
    free(dec);
    free(Xt);
    free(Xs);
    free(cs);
    return st;
}

static void binary_free(binary *b)
{
    free(b->rows);
    free(b->y);
    free(b->C);
    free(b->p);
    free(b->alpha);
    free(b->Xp);
    free(b->prow);
    free(b->G);
    free(b->Gb);
}

/* grad: also G and Gb (a warm start's, params.keep_rows'). */
static int binary_alloc(binary *b, size_t n, size_t d, int grad)
{
    memset(b, 0, sizeof *b);
    b->rows = malloc(n * sizeof *b->rows);
    b->y = malloc(n);
    b->C = malloc(n * sizeof *b->C);
    b->p = malloc(n * sizeof *b->p);
    b->alpha = malloc(n * sizeof *b->alpha);
    b->Xp = malloc(n * d * sizeof *b->Xp);
    b->prow = malloc(n * sizeof *b->prow);
    if (grad) {
        b->G = malloc(n * sizeof *b->G);
        b->Gb = malloc(n * sizeof *b->Gb);
    }
    return b->rows && b->y && b->C && b->p && b->alpha && b->Xp && b->prow &&
           (!grad || (b->G && b->Gb));
}

/* The nystrom solver's fit (km_svm_nys.c) of the rows X, grouped by
 * class into Xg (class c at rows start[c] .. start[c + 1)). */
static km_status svc_fit_nystrom(km_fit_frame *fr, const km_svm_params *p,
                                 const double *X, size_t n, size_t d,
                                 const size_t *order, const size_t *start,
                                 size_t K, const km_fit_control *ctl,
                                 km_model **out, km_error *err)
{
    svc_nys_result r;
    km_model *model = NULL;
    km_status st = km_svc_nys_solve(&fr->k, p, X, n, d, order, start, K, ctl,
                                    NULL, &r, err);
    if (st != KM_OK)
        return st;
    const size_t np = n_pairs(K), m = r.m;
    svm_payload *pl = calloc(1, sizeof *pl);
    if (!pl) {
        km_svc_nys_free(&r);
        return oom(err);
    }
    pl->form = SVC_FORM_NYSTROM;
    pl->k = K;
    pl->nsv = m;
    pl->d = d;
    pl->sv = r.Z;
    pl->coef = r.coef;
    pl->rho = r.rho;
    r.Z = r.coef = r.rho = NULL;
    if (!(pl->svn = km_sqnorms(pl->sv, m, d))) {
        km_svm_payload_free(pl);
        km_svc_nys_free(&r);
        return oom(err);
    }
    if ((st = km_check_solution("coefficients", pl->coef, m * np, err)) !=
            KM_OK ||
        (st = km_check_solution("intercepts", pl->rho, np, err)) != KM_OK) {
        km_svm_payload_free(pl);
        km_svc_nys_free(&r);
        return st;
    }
    st = km_fit_model(fr, d, m, 1, pl, &model, err);
    if (st != KM_OK) { /* the model owned pl */
        km_svc_nys_free(&r);
        return st;
    }
    km_info *pi = km_model_params_mut(model), *ti = km_model_training_mut(model);
    if (km_info_add1(pi, "C", KM_INFO_NUMBER, p->C) != KM_OK ||
        km_info_add1(pi, "tol", KM_INFO_NUMBER, p->tol) != KM_OK ||
        km_info_add1(pi, "shrinking", KM_INFO_BOOLEAN, p->shrinking != 0) !=
            KM_OK ||
        (p->class_weight &&
         km_info_add(pi, "class_weight", KM_INFO_NUMBER, 1, p->class_weight,
                     K) != KM_OK) ||
        km_info_add1(pi, "solver", KM_INFO_INTEGER, p->solver) != KM_OK ||
        km_info_add1(pi, "n_centres", KM_INFO_INTEGER, (double)m) != KM_OK ||
        km_info_add1(pi, "seed", KM_INFO_INTEGER, (double)p->seed) != KM_OK ||
        (p->centres != KM_KRR_CENTRES_UNIFORM && /* shown when not uniform,
                                                    the rule before it */
         km_info_add1(pi, "centres", KM_INFO_INTEGER, p->centres) != KM_OK) ||
        (p->precision != KM_SVM_PRECISION_FLOAT64 && /* likewise */
         km_info_add1(pi, "precision", KM_INFO_INTEGER, p->precision) !=
             KM_OK) ||
        km_info_add1(pi, "max_iter", KM_INFO_INTEGER,
                     (double)(p->max_iter > 0 ? p->max_iter
                                              : KM_SVM_DEFAULT_EPOCHS)) !=
            KM_OK ||
        km_info_add1(ti, "solver", KM_INFO_INTEGER, p->solver) != KM_OK ||
        km_info_add1(ti, "epochs", KM_INFO_INTEGER, (double)r.epochs) !=
            KM_OK ||
        km_info_add1(ti, "gap", KM_INFO_NUMBER, r.gap) != KM_OK ||
        km_info_add1(ti, "feature_seconds", KM_INFO_NUMBER,
                     r.feature_seconds) != KM_OK ||
        km_info_add(ti, "objective", KM_INFO_NUMBER, 1, r.objective, np) !=
            KM_OK ||
        (r.capped && km_info_add1(ti, "epochs_capped", KM_INFO_INTEGER,
                                  r.capped) != KM_OK)) {
        km_model_free(model);
        km_svc_nys_free(&r);
        return oom(err);
    }
    km_svc_nys_free(&r);
    km_progress(ctl, 1.0);
    *out = model;
    return KM_OK;
}

/*
 * What an svc fit of rows holds: the rows grouped by class (count and
 * start per class, order: grouped row -> training row, Xg the grouped
 * rows), each grouped row's coefficients against the other classes
 * (coef, n x (K-1)) and whether it is a support vector (nz), each pair's
 * objective and |w|^2, and the payload being built.
 */
typedef struct svc_rows {
    size_t K, n, d;
    size_t *count, *start, *order;
    double *Xg, *coef, *obj, *wsq;
    unsigned char *nz;
    svm_payload *pl;
    const km_svm_warm *warm; /* each pair's SMO start (an update's), or
                                NULL: zero */
    double *kg, *kgb;   /* params.keep_rows: n x (K-1) grouped, as coef:
                           each variable's gradient and G_bar at the
                           solution */
} svc_rows;

static void svc_rows_free(svc_rows *r)
{
    km_svm_payload_free(r->pl);
    free(r->count);
    free(r->start);
    free(r->order);
    free(r->Xg);
    free(r->coef);
    free(r->obj);
    free(r->wsq);
    free(r->nz);
    free(r->kg);
    free(r->kgb);
}

static km_status svc_rows_alloc(svc_rows *r, const km_svm_params *params,
                                km_error *err)
{
    size_t K = r->K, n = r->n, d = r->d;
    r->count = calloc(K, sizeof *r->count);
    r->start = malloc((K + 1) * sizeof *r->start);
    r->order = malloc(n * sizeof *r->order);
    r->Xg = malloc(n * d * sizeof *r->Xg);
    r->coef = calloc(n * (K - 1), sizeof *r->coef);
    r->nz = calloc(n, 1);
    svm_payload *pl = r->pl = calloc(1, sizeof *pl);
    if (pl) {
        pl->k = K;
        pl->d = d;
        pl->rho = malloc(n_pairs(K) * sizeof *pl->rho);
        pl->n_support = calloc(K, sizeof *pl->n_support);
        if (params->probability) {
            pl->probA = malloc(n_pairs(K) * sizeof *pl->probA);
            pl->probB = malloc(n_pairs(K) * sizeof *pl->probB);
        }
    }
    r->obj = malloc(n_pairs(K) * sizeof *r->obj);
    r->wsq = malloc(n_pairs(K) * sizeof *r->wsq);
    if (params->keep_rows &&
        (!(r->kg = malloc(n * (K - 1) * sizeof *r->kg + 1)) ||
         !(r->kgb = malloc(n * (K - 1) * sizeof *r->kgb + 1))))
        return oom(err);
    if (!r->count || !r->start || !r->order || !r->Xg || !r->coef ||
        !r->nz || !pl || !pl->rho || !pl->n_support || !r->obj || !r->wsq ||
        (params->probability && (!pl->probA || !pl->probB)))
        return oom(err);
    return KM_OK;
}

/* X's rows grouped by class y (stable): count, start, order and Xg.
 * KM_EPROBLEM for a class without rows. */
static km_status svc_rows_group(svc_rows *r, const double *X, const int *y,
                                km_error *err)
{
    size_t K = r->K, n = r->n, d = r->d;
    for (size_t i = 0; i < n; i++)
        r->count[y[i]]++;
    r->start[0] = 0;
    for (size_t c = 0; c < K; c++) {
        if (r->count[c] == 0)
            return km_error_set(err, KM_EPROBLEM,
                                "class %zu has no samples; every class index "
                                "in [0, %zu) must occur in y", c, K);
        r->start[c + 1] = r->start[c] + r->count[c];
    }
    size_t *fill = malloc(K * sizeof *fill);
    if (!fill)
        return oom(err);
    memcpy(fill, r->start, K * sizeof *fill);
    for (size_t i = 0; i < n; i++) {
        size_t g = fill[y[i]]++;
        r->order[g] = i;
        memcpy(r->Xg + g * d, X + i * d, d * sizeof *r->Xg);
    }
    free(fill);
    return KM_OK;
}

/* The start of pair (a, c) from r->warm into b (its rows set, the na
 * rows of class a first): each row's |y alpha| in the pair (feasible:
 * the old rows' solution and the new rows' zeros; clipped to C), the old
 * rows' gradient and G_bar as kept, the new rows' from the kernel
 * against the pair's rows with alpha > 0 (p = -1 for svc). */
static void svc_warm_start(const svc_fit *f, const svc_rows *r, binary *b,
                           size_t na, size_t a, size_t c)
{
    const km_svm_warm *w = r->warm;
    const size_t K = r->K, d = r->d;
    for (size_t t = 0; t < b->n; t++) {
        size_t at = r->order[b->rows[t]] * (K - 1) + (t < na ? c - 1 : a);
        b->alpha[t] = fmin(fabs(w->alpha[at]), b->C[t]);
    }
    for (size_t t = 0; t < b->n; t++) {
        size_t row = r->order[b->rows[t]];
        if (row < w->n_old) {
            size_t at = row * (K - 1) + (t < na ? c - 1 : a);
            b->G[t] = w->G[at];
            b->Gb[t] = w->Gbar[at];
            continue;
        }
        const double *x = f->Xg + b->rows[t] * d;
        double g = 0, gb = 0;
        for (size_t u = 0; u < b->n; u++) {
            if (b->alpha[u] <= 0)
                continue;
            double kv = km_kernel_eval(f->k, x, f->Xg + b->rows[u] * d, d);
            g += b->y[u] * b->alpha[u] * kv;
            if (b->alpha[u] >= b->C[u])
                gb += b->y[u] * b->C[u] * kv;
        }
        b->G[t] = b->y[t] * g - 1;
        b->Gb[t] = b->y[t] * gb;
    }
}

/* Pair pi (classes a < c) by SMO, its probability's cross-validation
 * first with probability: its rho, objective and |w|^2, and its rows'
 * coefficients into r (entries no other pair writes). b and tmp are
 * binaries of the largest pair's size; f->ctl gets the pair's progress,
 * from 0 to 1. */
static km_status svc_pair(svc_fit *f, svc_rows *r, binary *b, binary *tmp,
                          size_t a, size_t c, size_t pi, km_error *err)
{
    const km_svm_params *params = f->params;
    const size_t K = r->K;
    const size_t *count = r->count, *start = r->start;
    svm_payload *pl = r->pl;
    const double wa = params->class_weight ? params->class_weight[a] : 1;
    const double wc = params->class_weight ? params->class_weight[c] : 1;
    const double Ca = params->C * wa, Cc = params->C * wc;
    const double lo = 0, hi = 1;
    km_status st;
    b->n = count[a] + count[c];
    for (size_t t = 0; t < count[a]; t++) {
        b->rows[t] = start[a] + t;
        b->y[t] = 1;
        b->C[t] = Ca;
    }
    for (size_t t = 0; t < count[c]; t++) {
        b->rows[count[a] + t] = start[c] + t;
        b->y[count[a] + t] = -1;
        b->C[count[a] + t] = Cc;
    }
    if (r->warm)
        svc_warm_start(f, r, b, count[a], a, c);
    double mid = lo;
    if (params->probability) {
        mid = lo + (hi - lo) * CV_FOLDS / (CV_FOLDS + 1);
        st = pair_probability(f, b, tmp, Ca, Cc, lo, hi, &pl->probA[pi],
                              &pl->probB[pi], err);
        if (st != KM_OK)
            return st;
    }
    smo_result res;
    if ((st = solve_binary(f, b, mid, hi, r->warm != NULL, r->kg != NULL,
                           &res, err)) != KM_OK)
        return st;
    for (size_t t = 0; r->kg && t < b->n; t++) {
        size_t at = b->rows[t] * (K - 1) + (t < count[a] ? c - 1 : a);
        r->kg[at] = b->G[t];
        r->kgb[at] = b->Gb[t];
    }
    pl->rho[pi] = res.rho;
    r->obj[pi] = res.objective;
    /* LIBSVM's dual objective is a^T Q a / 2 - sum a, so
     * |w|^2 = a^T Q a = 2 (objective + sum a) */
    km_ksum sa = {0, 0};
    km_ksum_add(&sa, res.objective);
    for (size_t t = 0; t < b->n; t++)
        km_ksum_add(&sa, b->alpha[t]);
    r->wsq[pi] = 2 * km_ksum_get(&sa);
    for (size_t t = 0; t < b->n; t++) {
        if (b->alpha[t] <= 0)
            continue;
        size_t g = b->rows[t];
        r->coef[g * (K - 1) + (t < count[a] ? c - 1 : a)] =
            b->y[t] * b->alpha[t];
    }
    return KM_OK;
}

/* The exact solver's pairs on workers (svc_pairs_run): each worker's
 * copy of the fit (its own figures and progress) and binaries. */
typedef struct exact_run exact_run;
typedef struct exact_worker {
    exact_run *run;
    svc_fit f;
    binary b, tmp;
    size_t pi;                 /* the pair being solved */
    km_fit_control pair_ctl;   /* SMO's progress, through the run's lock */
} exact_worker;

/* A pair in the queue: its classes a < c, its index pi among the
 * pairs (the order of rho's entries) and its rows. */
typedef struct exact_job {
    size_t a, c, pi, rows;
} exact_job;

struct exact_run {
    svc_pairs q;
    svc_rows *r;
    const exact_job *job;      /* the queue: the largest pairs first */
};

/* Larger pairs first (then in pair order): the longest solves start
 * early, so the workers end together (on shuttle one class holds 78% of
 * the rows, and its six pairs take most of the fit). */
static int job_cmp(const void *x, const void *y)
{
    const exact_job *a = x, *b = y;
    if (a->rows != b->rows)
        return a->rows < b->rows ? 1 : -1;
    return a->pi < b->pi ? -1 : a->pi > b->pi;
}

/* SMO's progress in the current pair: the run's, under its lock. */
static int exact_progress(void *ctx, double f)
{
    exact_worker *w = ctx;
    return svc_pairs_progress(&w->run->q, w->pi, f);
}

/* The queue's entry qi (svc_pairs' solve). */
static km_status exact_pair(void *state, size_t qi, km_error *err)
{
    exact_worker *w = state;
    const exact_job *j = &w->run->job[qi];
    w->pi = qi;
    return svc_pair(&w->f, w->run->r, &w->b, &w->tmp, j->a, j->c, j->pi,
                    err);
}

/* Workers of the exact solver: ctl->threads, at most the pairs and
 * svc_most_workers(); one with probability, whose cross-validation draws
 * from one random stream in pair order. */
static size_t exact_workers(const km_fit_control *ctl,
                            const km_svm_params *p, size_t P)
{
    size_t nw = ctl && ctl->threads > 1 ? (size_t)ctl->threads : 1;
    if (p->probability)
        nw = 1;
    nw = nw < P ? nw : P;
    return nw < svc_most_workers() ? nw : svc_most_workers();
}

/* The exact solver: every pair by SMO (svc_pair), from one Gram of all
 * the rows when the solves are many (several pairs, or the
 * cross-validation of probability) and it takes at most half the budget,
 * or from the caller's sg (may be NULL). The pairs run on up to
 * ctl->threads workers (exact_workers), each with an equal part of the
 * caches' budget: a pair's answer does not depend on the worker or the
 * cache size. *iterations and *capped: SMO's totals. */
static km_status svc_solve_pairs(km_fit_frame *fr, svc_rows *r,
                                 const km_svm_params *params,
                                 const km_shared_gram *sg,
                                 const km_fit_control *ctl, long *iterations,
                                 int *capped, km_error *err)
{
    const size_t K = r->K, n = r->n, d = r->d, P = n_pairs(K);
    const size_t *count = r->count;
    double *Kall = NULL;
    size_t *kmap = NULL;
    exact_job *job = malloc(P * sizeof *job);
    const size_t nw = exact_workers(ctl, params, P);
    exact_worker wk[SVC_MAX_WORKERS];
    memset(wk, 0, sizeof wk);
    km_status st = KM_OK;

    size_t max_pair = 0;
    for (size_t a = 0, pi = 0; a < K; a++)
        for (size_t c = a + 1; c < K; c++, pi++) {
            if (count[a] + count[c] > max_pair)
                max_pair = count[a] + count[c];
            if (job)
                job[pi] = (exact_job){a, c, pi, count[a] + count[c]};
        }
    if (!job) {
        st = oom(err);
        goto out;
    }
    /* With probability the pairs draw from one random stream in pair
     * order: one worker, the pairs in order. */
    if (!params->probability)
        qsort(job, P, sizeof *job, job_cmp);
    for (size_t w = 0; w < nw; w++)
        if (!binary_alloc(&wk[w].b, max_pair, d,
                          params->keep_rows || r->warm) ||
            (params->probability &&
             !binary_alloc(&wk[w].tmp, max_pair, d, 0))) {
            st = oom(err);
            goto out;
        }
    if (km_progress(ctl, 0.0)) {
        st = km_error_set(err, KM_ECANCELLED, "fit cancelled");
        goto out;
    }

    /* One Gram for all the solves when they are many (several pairs, or
     * the cross-validation of probability) and it takes at most half the
     * budget; the solves' caches then gather their columns from it and
     * share the other half. */
    size_t budget = km_svm_budget_bytes(params);
    size_t gram = km_mul3(n, n, sizeof(double));
    if (sg) {
        /* The caller's Gram: its size is the caller's; the caches keep
         * at least half the budget. */
        size_t ga = km_mul3(sg->n_all, sg->n_all, sizeof(double));
        budget -= ga && ga <= budget / 2 ? ga : budget / 2;
        if (!(kmap = malloc(n * sizeof *kmap))) {
            st = oom(err);
            goto out;
        }
        for (size_t g = 0; g < n; g++)
            kmap[g] = sg->index[r->order[g]];
    } else if ((K > 2 || params->probability) && gram && gram <= budget / 2) {
        Kall = malloc(gram);
        if (!Kall) {
            st = oom(err);
            goto out;
        }
        if ((st = km_gram_sym(&fr->k, r->Xg, n, d, Kall, 1, err)) != KM_OK)
            goto out;
        budget -= gram;
    }

    exact_run run = {.r = r, .job = job};
    run.q.ctl = ctl;
    run.q.P = P;
    run.q.lo = 0.0;
    run.q.hi = 0.99;
    run.q.solve = exact_pair;
    for (size_t w = 0; w < nw; w++) {
        exact_worker *x = &wk[w];
        x->run = &run;
        x->pair_ctl = (km_fit_control){exact_progress, x, 1, NULL};
        x->f = (svc_fit){&fr->k, params, r->Xg, n, d, sg ? sg->K : Kall,
                         sg ? sg->X_all : r->Xg, sg ? sg->n_all : n, kmap,
                         &x->pair_ctl, budget / nw, 0, 0, {PROB_SEED}};
        /* A pool for every pair's columns: what the largest pair's cache
         * takes (its budget, at least two columns, at most all); without
         * it each solve allocates its own. */
        size_t want = x->f.budget / sizeof(double);
        want = want > 2 * max_pair ? want : 2 * max_pair;
        if (max_pair && want / max_pair > max_pair)
            want = max_pair * max_pair;
        x->f.pool = malloc(want * sizeof *x->f.pool);
        x->f.pool_size = x->f.pool ? want : 0;
    }
    if (nw > 1)
        km_blas_single_begin();
    st = svc_pairs_run(&run.q, wk, sizeof *wk, nw, err);
    if (nw > 1)
        km_blas_single_end();
    for (size_t w = 0; w < nw; w++) {
        *iterations += wk[w].f.iterations;
        *capped += wk[w].f.capped;
    }
    for (size_t g = 0; g < n; g++)
        for (size_t c = 0; c + 1 < K; c++)
            r->nz[g] |= r->coef[g * (K - 1) + c] != 0;
out:
    for (size_t w = 0; w < SVC_MAX_WORKERS; w++) {
        binary_free(&wk[w].b);
        binary_free(&wk[w].tmp);
        free(wk[w].f.pool);
    }
    free(Kall);
    free(kmap);
    free(job);
    return st;
}

/* params.keep_rows: every row (X, training order), its class y and its
 * coefficients, ungrouped, into the payload. */
static km_status svc_keep_rows(svc_rows *r, const double *X, const int *y,
                               km_error *err)
{
    const size_t K = r->K, n = r->n, d = r->d;
    svm_payload *pl = r->pl;
    pl->kn = n;
    pl->kx = malloc(km_mul3(n, d, sizeof *pl->kx) + 1);
    pl->ky = malloc(n * sizeof *pl->ky + 1);
    pl->ka = malloc(km_mul3(n, K - 1, sizeof *pl->ka) + 1);
    if (!pl->kx || !pl->ky || !pl->ka)
        return oom(err);
    memcpy(pl->kx, X, n * d * sizeof *pl->kx);
    for (size_t i = 0; i < n; i++)
        pl->ky[i] = y[i];
    if (!(pl->kg = malloc(km_mul3(n, K - 1, sizeof *pl->kg) + 1)) ||
        !(pl->kgb = malloc(km_mul3(n, K - 1, sizeof *pl->kgb) + 1)))
        return oom(err);
    for (size_t g = 0; g < n; g++) {
        size_t to = r->order[g] * (K - 1), from = g * (K - 1);
        memcpy(pl->ka + to, r->coef + from, (K - 1) * sizeof *pl->ka);
        memcpy(pl->kg + to, r->kg + from, (K - 1) * sizeof *pl->kg);
        memcpy(pl->kgb + to, r->kgb + from, (K - 1) * sizeof *pl->kgb);
    }
    return KM_OK;
}

/* The payload's support vectors, in class order (rows, coefficients,
 * training indices, counts per class, norms), and its numbers checked
 * finite. */
static km_status svc_keep_support(svc_rows *r, const km_svm_params *params,
                                  km_error *err)
{
    const size_t K = r->K, n = r->n, d = r->d, np_total = n_pairs(K);
    svm_payload *pl = r->pl;
    for (size_t g = 0; g < n; g++)
        pl->nsv += r->nz[g];
    pl->sv = malloc((pl->nsv ? pl->nsv : 1) * d * sizeof *pl->sv);
    pl->coef = malloc((pl->nsv ? pl->nsv : 1) * (K - 1) * sizeof *pl->coef);
    pl->sv_index = malloc((pl->nsv ? pl->nsv : 1) * sizeof *pl->sv_index);
    if (!pl->sv || !pl->coef || !pl->sv_index)
        return oom(err);
    for (size_t c = 0, s = 0; c < K; c++)
        for (size_t g = r->start[c]; g < r->start[c + 1]; g++) {
            if (!r->nz[g])
                continue;
            memcpy(pl->sv + s * d, r->Xg + g * d, d * sizeof *pl->sv);
            memcpy(pl->coef + s * (K - 1), r->coef + g * (K - 1),
                   (K - 1) * sizeof *pl->coef);
            pl->sv_index[s] = (int)r->order[g];
            pl->n_support[c]++;
            s++;
        }

    if (!(pl->svn = km_sqnorms(pl->sv, pl->nsv, d)))
        return oom(err);
    km_status st;
    if ((st = km_check_solution("dual coefficients", pl->coef,
                                pl->nsv * (K - 1), err)) != KM_OK ||
        (st = km_check_solution("intercepts", pl->rho, np_total, err)) !=
            KM_OK ||
        (params->probability &&
         ((st = km_check_solution("probability parameters", pl->probA,
                                  np_total, err)) != KM_OK ||
          (st = km_check_solution("probability parameters", pl->probB,
                                  np_total, err)) != KM_OK)))
        return st;
    return KM_OK;
}

/* km_svc_fit, with sg (may be NULL) a Gram of a superset of the rows
 * that the solves gather their columns from (km_svm_fit_shared): the
 * rows grouped by class, the solver's pairs (exact, screened) or its own
 * form (nystrom), the support vectors kept, the model and its figures. */
static km_status svc_fit_rows(const km_kernel *kernel,
                              const km_svm_params *params, const double *X,
                              size_t n, size_t d, const int *y,
                              size_t n_classes, const km_shared_gram *sg,
                              const km_svm_warm *warm,
                              const km_fit_control *ctl, km_model **out,
                              km_error *err)
{
    const size_t K = n_classes;
    km_problem problem = {X, n, d, NULL, 0, y, n_classes};
    km_fit_frame fr;
    svc_rows r;
    memset(&r, 0, sizeof r);
    r.K = K;
    r.n = n;
    r.d = d;
    r.warm = warm;
    km_model *model = NULL;

    km_status st = km_fit_begin(&fr, KM_ALGO_SVC, kernel, params, &problem,
                                err);
    if (st == KM_OK)
        st = svc_rows_alloc(&r, params, err);
    if (st == KM_OK)
        st = svc_rows_group(&r, X, y, err);
    if (st != KM_OK)
        goto out;
    const km_svm_solver run = km_svm_resolve_solver(params, n, K);
    if (run == KM_SVM_SOLVER_NYSTROM) {
        /* no shared Gram: the features are the nystrom solver's own */
        st = svc_fit_nystrom(&fr, params, X, n, d, r.order, r.start, K, ctl,
                             out, err);
        goto out;
    }

    const size_t np_total = n_pairs(K);
    long iterations = 0;
    int capped = 0;
    svc_screen_figures sf;
    memset(&sf, 0, sizeof sf);
    if (run == KM_SVM_SOLVER_SCREENED) {
        st = km_svc_screen_solve(&fr.k, params, X, r.Xg, n, d, r.order,
                                 r.start, K, ctl, r.coef, r.nz, r.pl->rho,
                                 r.obj, r.wsq, &sf, err);
        iterations = sf.iterations;
        capped = sf.capped;
    } else {
        st = svc_solve_pairs(&fr, &r, params, sg, ctl, &iterations, &capped,
                             err);
    }
    if (st == KM_OK)
        st = svc_keep_support(&r, params, err);
    if (st == KM_OK && params->keep_rows)
        st = svc_keep_rows(&r, X, y, err);
    if (st != KM_OK)
        goto out;
    st = km_fit_model(&fr, d, n, 1, r.pl, &model, err);
    r.pl = NULL; /* the model owns it, also on failure */
    if (st != KM_OK)
        goto out;
    const svm_payload *mp = km_model_payload(model);
    if (add_params(model, params, KM_ALGO_SVC, K) != KM_OK ||
        add_training(model, iterations, r.obj, np_total, mp->n_support, K,
                     capped) != KM_OK ||
        add_margins(model, r.wsq, np_total) != KM_OK ||
        add_solver(model, params, run, n, &sf) != KM_OK) {
        st = oom(err);
        goto out;
    }
    km_progress(ctl, 1.0);
    *out = model;
    model = NULL;
out:
    km_model_free(model);
    svc_rows_free(&r);
    km_fit_cleanup(&fr);
    return st;
}

km_status km_svc_fit(const km_kernel *kernel, const km_svm_params *params,
                     const double *X, size_t n, size_t d, const int *y,
                     size_t n_classes, const km_fit_control *ctl,
                     km_model **out, km_error *err)
{
    return svc_fit_rows(kernel, params, X, n, d, y, n_classes, NULL, NULL,
                        ctl, out, err);
}

/* ------------------------------------------------------------ SVR */

/* km_svr_fit, with sg as svc_fit_rows's. */
static km_status svr_fit_rows(const km_kernel *kernel,
                              const km_svm_params *params, const double *X,
                              size_t n, size_t d, const double *y,
                              const km_shared_gram *sg,
                              const km_svm_warm *warm,
                              const km_fit_control *ctl, km_model **out,
                              km_error *err)
{
    km_problem problem = {X, n, d, y, 1, NULL, 0};
    km_fit_frame fr;
    size_t *row = NULL;
    signed char *sy = NULL;
    double *p = NULL, *C = NULL, *alpha = NULL, *G = NULL, *Gb = NULL;
    svm_payload *pl = NULL;
    km_model *model = NULL;

    km_status st = km_fit_begin(&fr, KM_ALGO_SVR, kernel, params, &problem,
                                err);
    if (st != KM_OK)
        goto out;

    const size_t nv = 2 * n;
    row = malloc(nv * sizeof *row);
    sy = malloc(nv);
    p = malloc(nv * sizeof *p);
    C = malloc(nv * sizeof *C);
    alpha = calloc(nv, sizeof *alpha);
    pl = calloc(1, sizeof *pl);
    if (warm || params->keep_rows) {
        G = malloc(nv * sizeof *G);
        Gb = malloc(nv * sizeof *Gb);
    }
    if (!row || !sy || !p || !C || !alpha || !pl ||
        !(pl->rho = malloc(sizeof *pl->rho)) ||
        ((warm || params->keep_rows) && (!G || !Gb))) {
        st = oom(err);
        goto out;
    }
    pl->d = d;
    for (size_t i = 0; i < n; i++) {
        row[i] = row[n + i] = sg ? sg->index[i] : i;
        sy[i] = 1;
        sy[n + i] = -1;
        p[i] = params->epsilon - y[i];
        p[n + i] = params->epsilon + y[i];
        C[i] = C[n + i] = params->C;
    }
    if (warm)
        km_svr_warm_start(&fr.k, X, n, d, warm, params->C, p, alpha, G, Gb);
    if (km_progress(ctl, 0.0)) {
        st = km_error_set(err, KM_ECANCELLED, "fit cancelled");
        goto out;
    }
    smo_problem pb = {nv, d, sg ? sg->X_all : X, sg ? sg->n_all : n, row,
                      sg ? sg->K : NULL, sy, p, C, alpha,
                      warm ? G : NULL, warm ? Gb : NULL,
                      params->keep_rows ? G : NULL,
                      params->keep_rows ? Gb : NULL};
    smo_options o;
    smo_result res;
    km_smo_options_of(&o, params, ctl, 0.0, 0.99);
    if ((st = km_smo_solve(&fr.k, &pb, &o, &res, err)) != KM_OK)
        goto out;

    for (size_t i = 0; i < n; i++)
        pl->nsv += alpha[i] != alpha[n + i];
    pl->sv = malloc((pl->nsv ? pl->nsv : 1) * d * sizeof *pl->sv);
    pl->coef = malloc((pl->nsv ? pl->nsv : 1) * sizeof *pl->coef);
    pl->sv_index = malloc((pl->nsv ? pl->nsv : 1) * sizeof *pl->sv_index);
    if (!pl->sv || !pl->coef || !pl->sv_index) {
        st = oom(err);
        goto out;
    }
    for (size_t i = 0, s = 0; i < n; i++) {
        if (alpha[i] == alpha[n + i])
            continue;
        memcpy(pl->sv + s * d, X + i * d, d * sizeof *pl->sv);
        pl->coef[s] = alpha[i] - alpha[n + i];
        pl->sv_index[s] = (int)i;
        s++;
    }
    pl->rho[0] = res.rho;
    int nsv = (int)pl->nsv;
    if (params->keep_rows) {
        pl->kn = n;
        if (!(pl->kx = malloc(km_mul3(n, d, sizeof *pl->kx) + 1)) ||
            !(pl->ky = malloc(n * sizeof *pl->ky + 1)) ||
            !(pl->ka = malloc(2 * n * sizeof *pl->ka + 1)) ||
            !(pl->kg = malloc(2 * n * sizeof *pl->kg + 1)) ||
            !(pl->kgb = malloc(2 * n * sizeof *pl->kgb + 1))) {
            st = oom(err);
            goto out;
        }
        memcpy(pl->kx, X, n * d * sizeof *pl->kx);
        memcpy(pl->ky, y, n * sizeof *pl->ky);
        for (size_t i = 0; i < n; i++) {
            pl->ka[2 * i] = alpha[i];
            pl->ka[2 * i + 1] = alpha[n + i];
            pl->kg[2 * i] = G[i];
            pl->kg[2 * i + 1] = G[n + i];
            pl->kgb[2 * i] = Gb[i];
            pl->kgb[2 * i + 1] = Gb[n + i];
        }
    }

    if (!(pl->svn = km_sqnorms(pl->sv, pl->nsv, d))) {
        st = oom(err);
        goto out;
    }
    if ((st = km_check_solution("dual coefficients", pl->coef, pl->nsv,
                                err)) != KM_OK ||
        (st = km_check_solution("intercept", pl->rho, 1, err)) != KM_OK)
        goto out;
    st = km_fit_model(&fr, d, n, 1, pl, &model, err);
    pl = NULL;
    if (st != KM_OK)
        goto out;
    if (add_params(model, params, KM_ALGO_SVR, 0) != KM_OK ||
        add_training(model, res.iterations, &res.objective, 1,
                     &nsv, 1, res.capped) != KM_OK) {
        st = oom(err);
        goto out;
    }
    km_progress(ctl, 1.0);
    *out = model;
    model = NULL;
out:
    km_model_free(model);
    km_svm_payload_free(pl);
    free(row);
    free(sy);
    free(p);
    free(C);
    free(alpha);
    free(G);
    free(Gb);
    km_fit_cleanup(&fr);
    return st;
}

km_status km_svr_fit(const km_kernel *kernel, const km_svm_params *params,
                     const double *X, size_t n, size_t d, const double *y,
                     const km_fit_control *ctl, km_model **out,
                     km_error *err)
{
    return svr_fit_rows(kernel, params, X, n, d, y, NULL, NULL, ctl, out,
                        err);
}

km_status km_svm_fit_warm(km_algorithm a, const km_kernel *k,
                          const km_svm_params *p, const km_problem *pb,
                          const km_svm_warm *warm, const km_fit_control *ctl,
                          km_model **out, km_error *err)
{
    if (a == KM_ALGO_SVC)
        return svc_fit_rows(k, p, pb->X, pb->n, pb->d, pb->labels,
                            pb->n_classes, NULL, warm, ctl, out, err);
    return svr_fit_rows(k, p, pb->X, pb->n, pb->d, pb->y, NULL, warm, ctl,
                        out, err);
}

km_status km_svm_fit_shared(km_algorithm a, const km_kernel *k,
                            const km_svm_params *p, const km_problem *pb,
                            const km_shared_gram *sg,
                            const km_fit_control *ctl, km_model **out,
                            km_error *err)
{
    if (a == KM_ALGO_SVC)
        return svc_fit_rows(k, p, pb->X, pb->n, pb->d, pb->labels,
                            pb->n_classes, sg, NULL, ctl, out, err);
    if (a == KM_ALGO_SVR)
        return svr_fit_rows(k, p, pb->X, pb->n, pb->d, pb->y, sg, NULL, ctl,
                            out, err);
    return km_error_set(err, KM_EINVAL, "a shared Gram serves svc and svr "
                        "fits, not %s", km_algorithm_name(a));
}
