/*
 * km.h - public interface of libkm, kmserve's numerical library.
 *
 * libkm fits kernel-method models (the algorithms of KM_ALGO_MAP, with the
 * kernels of KM_KERNEL_MAP: km_maps.h is their one list), predicts with
 * them and reads and writes their binary file format. It is pure: no
 * sockets, no JSON, no printing.
 *
 * Global state: two process-wide values, no more.
 *   - The memory budget auto solvers choose against (km_set_memory_budget,
 *     model/km_fit.c): one atomic value, which the daemon sets once at
 *     start-up before any fit, so that core's estimates and its choices
 *     agree with the daemon's admission control.
 *   - OpenBLAS's thread count, which is the process's by OpenBLAS's design:
 *     while an svc fit (exact or screened) runs its class pairs on several
 *     workers, or an svc prediction its blocks of rows,
 *     solvers/km_svm_pairs.c sets it to 1 and puts it back after (under a
 *     lock, counting overlapping users), because OpenBLAS's threaded calls
 *     from several workers queue and spin; BLAS calls elsewhere in the
 *     process meanwhile run on one thread too.
 * Everything else (random numbers included: km_rng) is in the caller's
 * hands.
 *
 * Layout: core/ has one folder an area: base (statuses, errors, the PRNG,
 * byte I/O, vector maths), kernels, solvers (the numerical engines: SMO
 * and svc's solvers, Nystrom, Falkon, the eigen-solvers), model (the model
 * object, its file, the generic fit, the descriptors' table), algorithms
 * (one file or a few and one header an algorithm; LIBSVM files with svm)
 * and select (preprocessing, scores, search). Each area has its public
 * header(s) core/<area>/km_*.h (the solvers' km_solvers.h: the choices
 * the algorithms' parameters make of them); this header includes them
 * all, and callers include only it. Core's own, what its areas share
 * and this header hides, is one internal header an area beside its
 * files (core/<area>/km_*_internal.h), which includes only its area's
 * public header and the internal headers of the areas below; no file of
 * core includes this one. An area uses only those below it
 * (docs/architecture.md, "Layers").

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
#include "solvers/km_solvers.h"
#include "model/km_fit.h"
#include "model/km_model.h"
#include "select/km_select.h"
#include "algorithms/km_krr.h"
#include "algorithms/km_svm.h"
#include "algorithms/km_kpca.h"
#include "algorithms/km_gpr.h"
#include "algorithms/km_kkmeans.h"
#include "algorithms/km_klr.h"
#include "algorithms/km_libsvm.h"

#endif /* KM_H */
