/*
 * km_klr_loss.c - kernel logistic regression's loss, which both solvers
 * (km_klr.c's exact, km_klr_nys.c's nystrom) minimise: the loss of a row
 * and of a block, the whole objective, the residuals and weights of a
 * block, and the Newton iterations' start and progress.
 *
 * Thread-safety: reentrant.
 */
#include <math.h>
#include <string.h>

#include "../base/km_base_internal.h"
#include "km_klr.h"
#include "km_klr_internal.h"

/* The functions a fit of k classes learns. */
size_t km_klr_n_functions(size_t k)
{
    return k == 2 ? 1 : k;
}

/* log(1 + exp(x)) without overflow. */
static double softplus(double x)
{
    return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x));
}

double km_klr_sigmoid(double x)
{
    if (x >= 0)
        return 1.0 / (1.0 + exp(-x));
    double e = exp(x);
    return e / (1.0 + e);
}

/* Row i's target in block c (0 or 1). */
double km_klr_target(const klr_fit *f, size_t c, size_t i)
{
    return f->kind == KLR_BINARY ? (f->y[i] == 1) : (f->y[i] == (int)c);
}

/* The loss of row i with block c's value replaced by fc (the others from
 * F). */
double km_klr_row_loss(const klr_fit *f, size_t c, size_t i, double fc)
{
    const double *F = f->F;
    size_t n = f->n;
    if (f->kind == KLR_BINARY)
        return softplus(f->y[i] == 1 ? -fc : fc);
    if (f->kind == KLR_OVR)
        return softplus(f->y[i] == (int)c ? -fc : fc);
    double mx = fc;
    for (size_t j = 0; j < f->q; j++)
        if (j != c && F[j * n + i] > mx)
            mx = F[j * n + i];
    double s = 0;
    for (size_t j = 0; j < f->q; j++)
        s += exp((j == c ? fc : F[j * n + i]) - mx);
    double fy = f->y[i] == (int)c ? fc : F[(size_t)f->y[i] * n + i];
    return mx + log(s) - fy;
}

/* The loss terms block c's value changes (all of them for multinomial;
 * the block's own for binary and ovr) with f_c + t D: sum over rows. */
double km_klr_block_loss(const klr_fit *f, size_t c, double t, const double *D)
{
    km_ksum s = {0, 0};
    for (size_t i = 0; i < f->n; i++)
        km_ksum_add(&s, km_klr_row_loss(f, c, i, f->F[c * f->n + i] + t * D[i]));
    return km_ksum_get(&s);
}

/* The whole objective at the current point. */
double km_klr_objective(const klr_fit *f)
{
    size_t n = f->n;
    km_ksum s = {0, 0};
    if (f->kind == KLR_OVR) {
        for (size_t c = 0; c < f->q; c++)
            km_ksum_add(&s, km_klr_block_loss(f, c, 0, f->F));
    } else {
        km_ksum_add(&s, km_klr_block_loss(f, 0, 0, f->F));
    }
    for (size_t c = 0; c < f->q; c++)
        for (size_t i = 0; i < n; i++)
            km_ksum_add(&s, 0.5 * f->lambda * f->A[c * n + i] *
                                f->KA[c * n + i]);
    return km_ksum_get(&s);
}

/* r = p_c - t_c and w = p_c (1 - p_c) of block c at the current F. */
void km_klr_block_residual(const klr_fit *f, size_t c, double *r, double *w)
{
    size_t n = f->n;
    for (size_t i = 0; i < n; i++) {
        double p;
        if (f->kind == KLR_MULTINOMIAL) {
            double mx = -HUGE_VAL, s = 0;
            for (size_t j = 0; j < f->q; j++)
                mx = f->F[j * n + i] > mx ? f->F[j * n + i] : mx;
            for (size_t j = 0; j < f->q; j++)
                s += exp(f->F[j * n + i] - mx);
            p = exp(f->F[c * n + i] - mx) / s;
        } else {
            p = km_klr_sigmoid(f->F[c * n + i]);
        }
        r[i] = p - km_klr_target(f, c, i);
        if (w)
            w[i] = p * (1.0 - p);
    }
}

/* The starting point: a = 0, and with the intercept, b at the optimum of
 * the loss for a = 0 (the class frequencies' logits). */
void km_klr_start(klr_fit *f, const size_t *counts, size_t k)
{
    size_t n = f->n, q = f->q;
    for (size_t c = 0; c < q; c++) {
        double b = 0;
        if (f->intercept) {
            if (f->kind == KLR_BINARY)
                b = log((double)counts[1] / (double)counts[0]);
            else if (f->kind == KLR_OVR)
                b = log((double)counts[c] / (double)(n - counts[c]));
            else {
                double m = 0;
                for (size_t j = 0; j < k; j++)
                    m += log((double)counts[j]) / (double)k;
                b = log((double)counts[c]) - m;
            }
        }
        f->b[c] = b;
        for (size_t i = 0; i < n; i++)
            f->F[c * n + i] = b;
    }
}

/* Progress: how far the gradient has come down from its first value
 * towards tol, on a log scale, from f0 to 0.95; never backwards. */
void km_klr_advance(klr_fit *f, double g, double tol, double f0)
{
    double p = 0;
    if (g <= tol)
        p = 1;
    else if (f->g0 > tol && g < f->g0)
        p = log(f->g0 / g) / log(f->g0 / tol);
    p = f0 + (0.95 - f0) * (p < 1 ? p : 1);
    f->frac = p > f->frac ? p : f->frac;
}

/* f zeroed but for what both solvers set alike. */
void km_klr_fit_init(klr_fit *f, unsigned kind, size_t n, size_t q,
                     const int *y, const km_klr_params *params,
                     const km_fit_control *ctl)
{
    memset(f, 0, sizeof *f);
    f->kind = kind;
    f->n = n;
    f->q = q;
    f->y = y;
    f->lambda = params->lambda;
    f->intercept = params->fit_intercept;
    f->ctl = ctl;
}
