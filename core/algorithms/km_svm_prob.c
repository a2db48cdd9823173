/*
 * km_svm_prob.c - the numerical pieces of SVC probability estimates:
 * Platt's sigmoid fitted to decision values, pairwise coupling of the
 * one-vs-one sigmoids into class probabilities.
 *
 * Sigmoid: minimises the cross-entropy of P(y=1|f) = 1/(1+exp(Af+B))
 * against Platt's regularised targets (N+ + 1)/(N+ + 2) and 1/(N- + 2),
 * by Newton's method with a backtracking line search and a tiny ridge on
 * the Hessian, written so that exp never overflows (Lin, Lin & Weng 2007,
 * the form LIBSVM uses).
 * Coupling: Wu, Lin & Weng (2004), method 2: minimise p'Qp on the simplex
 * with Q_tt = sum_j r_jt^2, Q_tj = -r_jt r_tj, by the fixed-point
 * iteration of their paper, to a stopping error of 0.005/k.
 *
 * Thread-safety: reentrant.
 */
#include <math.h>
#include <string.h>

#include "km_svm_prob.h"

/* Cross-entropy term of one point, in a form that cannot overflow. */
static double loss(double f, double t)
{
    return f >= 0 ? t * f + log1p(exp(-f)) : (t - 1) * f + log1p(exp(f));
}

void km_sigmoid_train(size_t n, const double *dec, const signed char *y,
                      double *A_out, double *B_out)
{
    const int max_iter = 100;
    const double min_step = 1e-10, ridge = 1e-12, eps = 1e-5;
    double n_pos = 0, n_neg = 0;
    for (size_t i = 0; i < n; i++) {
        if (y[i] > 0)
            n_pos++;
        else
            n_neg++;
    }
    const double hi = (n_pos + 1) / (n_pos + 2), lo = 1 / (n_neg + 2);
    double A = 0, B = log((n_neg + 1) / (n_pos + 1)), fval = 0;
    for (size_t i = 0; i < n; i++)
        fval += loss(dec[i] * A + B, y[i] > 0 ? hi : lo);

    for (int it = 0; it < max_iter; it++) {
        double h11 = ridge, h22 = ridge, h21 = 0, g1 = 0, g2 = 0;
        for (size_t i = 0; i < n; i++) {
            double f = dec[i] * A + B, p, q;
            if (f >= 0) {
                double e = exp(-f);
                p = e / (1 + e);
                q = 1 / (1 + e);
            } else {
                double e = exp(f);
                p = 1 / (1 + e);
                q = e / (1 + e);
            }
            double d2 = p * q, d1 = (y[i] > 0 ? hi : lo) - p;
            h11 += dec[i] * dec[i] * d2;
            h22 += d2;
            h21 += dec[i] * d2;
            g1 += dec[i] * d1;
            g2 += d1;
        }
        if (fabs(g1) < eps && fabs(g2) < eps)
            break;
        double det = h11 * h22 - h21 * h21;
        double dA = -(h22 * g1 - h21 * g2) / det;
        double dB = -(-h21 * g1 + h11 * g2) / det;
        double gd = g1 * dA + g2 * dB, step = 1;
        while (step >= min_step) {
            double nA = A + step * dA, nB = B + step * dB, nf = 0;
            for (size_t i = 0; i < n; i++)
                nf += loss(dec[i] * nA + nB, y[i] > 0 ? hi : lo);
            if (nf < fval + 1e-4 * step * gd) {
                A = nA;
                B = nB;
                fval = nf;
                break;
            }
            step /= 2;
        }
        if (step < min_step)
            break; /* no descent along Newton's direction: keep the best */
    }
    *A_out = A;
    *B_out = B;
}

double km_sigmoid_predict(double dec, double A, double B)
{
    double f = dec * A + B;
    return f >= 0 ? exp(-f) / (1 + exp(-f)) : 1 / (1 + exp(f));
}

void km_pairwise_coupling(size_t k, const double *r, double *p, double *work)
{
    double *Q = work, *Qp = work + k * k;
    const int max_iter = k > 100 ? (int)k : 100;
    const double eps = 0.005 / (double)k;
    for (size_t t = 0; t < k; t++) {
        p[t] = 1.0 / (double)k;
        Q[t * k + t] = 0;
        for (size_t j = 0; j < k; j++) {
            if (j == t)
                continue;
            Q[t * k + t] += r[j * k + t] * r[j * k + t];
            Q[t * k + j] = -r[j * k + t] * r[t * k + j];
        }
    }
    for (int it = 0; it < max_iter; it++) {
        double pQp = 0, max_err = 0;
        for (size_t t = 0; t < k; t++) {
            Qp[t] = 0;
            for (size_t j = 0; j < k; j++)
                Qp[t] += Q[t * k + j] * p[j];
            pQp += p[t] * Qp[t];
        }
        for (size_t t = 0; t < k; t++) {
            double e = fabs(Qp[t] - pQp);
            max_err = e > max_err ? e : max_err;
        }
        if (max_err < eps)
            break;
        for (size_t t = 0; t < k; t++) {
            double diff = (-Qp[t] + pQp) / Q[t * k + t];
            p[t] += diff;
            pQp = (pQp + diff * (diff * Q[t * k + t] + 2 * Qp[t])) /
                  (1 + diff) / (1 + diff);
            for (size_t j = 0; j < k; j++) {
                Qp[j] = (Qp[j] + diff * Q[t * k + j]) / (1 + diff);
                p[j] /= 1 + diff;
            }
        }
    }
}
