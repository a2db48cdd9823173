/*
 * km.h - public interface of libkm, kmserve's numerical library.
 *
 * libkm fits kernel-method models (kernel ridge regression, C-SVC, epsilon-SVR,
 * kernel PCA, kernel logistic regression), predicts with them and reads and
 * writes their binary file format. It is pure: no sockets, no JSON, no
 * printing, no global state.
 *
 * Conventions used throughout:
 *   - Matrices are dense, row-major doubles: X[i*d + j] is feature j of row i.
 *   - Every fallible function returns a km_status and, when err is not NULL,
 *     fills the caller-owned km_error with a message naming what was wrong.
 *   - "Borrows x": x is read during the call only. "Caller owns the result":
 *     free it with the matching *_free(). *_free(NULL) is a no-op.
 *
 * Thread-safety: functions are reentrant; a km_model is immutable once it is
 * shared, so any number of threads may predict with one model at once.
 */
#ifndef KM_H
#define KM_H

/* One header an area (core/<room>/), in the order they build on each other. */
#include "base/km_base.h"
#include "kernels/km_kernel.h"
#include "model/km_fit.h"
#include "model/km_model.h"
#include "select/km_select.h"
#include "algorithms/km_krr.h"
#include "algorithms/km_svm.h"
#include "algorithms/km_kpca.h"
#include "algorithms/km_gpr.h"
#include "algorithms/km_kkmeans.h"
#include "algorithms/km_klr.h"
#include "model/km_libsvm.h"

#endif /* KM_H */
