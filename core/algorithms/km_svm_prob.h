/*
 * km_svm_prob.h - Platt's probabilities of svc (km_svm_prob.c): the
 * sigmoid a fit trains on each pair's decision values (km_svm_fit.c) and
 * the coupling of the pairs' probabilities a prediction makes (km_svm.c).
 * Not installed; core/algorithms only.
 */
#ifndef KM_SVM_PROB_H
#define KM_SVM_PROB_H

#include "km_algorithms_internal.h"

/* Fits P(y=1|f) = 1 / (1 + exp(A f + B)) to decision values dec[0..n)
 * with labels y (+1/-1): Platt's method with Lin, Lin and Weng's Newton
 * iteration and targets. */
void km_sigmoid_train(size_t n, const double *dec, const signed char *y,
                      double *A, double *B);
double km_sigmoid_predict(double dec, double A, double B);
/* Class probabilities p[k] from pairwise r[i*k + j] = P(i | i or j) by
 * Wu, Lin and Weng's second method. work: k*k + k doubles. */
void km_pairwise_coupling(size_t k, const double *r, double *p,
                          double *work);

#endif /* KM_SVM_PROB_H */
