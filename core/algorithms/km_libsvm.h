/*
 * km_libsvm.h - LIBSVM's model file, read and written (km_libsvm.c).
 *
 * Part of libkm's public interface; include km.h, which includes every
 * area. Conventions and thread-safety as km.h says.
 */
#ifndef KM_LIBSVM_H
#define KM_LIBSVM_H

#include "../model/km_model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- LIBSVM */

/*
 * LIBSVM's model file (the text svm-train writes and svm-predict reads),
 * km_libsvm.c (reading) and km_libsvm_write.c: svm_type c_svc and
 * epsilon_svr, kernel_type linear, polynomial, rbf, sigmoid and
 * precomputed (-t 4). A file is hostile input: every line, count, index
 * and number is checked, and any fault is KM_EINVAL naming the line and
 * the field ("LIBSVM model line 9, SV 3: index 4 after 7; indices must
 * ascend").
 * The model's width, which the file does not record, is the caller's:
 *   n_features  a kernel on rows of numbers: the feature count, 0 for the
 *               largest index in the file (at least 1), or a larger one
 *               (LIBSVM's rows are sparse); n_training must be 0
 *   n_training  kernel_type precomputed (required, n_features 0): the
 *               training rows L a row's kernel values are against
 *               (LIBSVM's 1:K(x,x1) ... L:K(x,xL)), at least the
 *               largest SV's row i (its line's "0:i"), at most
 *               KM_MODEL_MAX_FEATURES - 1. The model takes rows of L
 *               kernel values (n_features L + 1: km_precomputed_pack's
 *               index column), its n_samples is L and support vector s
 *               is training row i - 1 (support_, 0-based).
 */
#define KM_LIBSVM_MAX_CLASSES 256 /* nr_class of an import (as a fit) */
/* The training figure "imported_from" of a model read from another
 * program's file: 1 LIBSVM. */
#define KM_IMPORTED_LIBSVM 1

typedef struct km_libsvm_info {
    km_algorithm algorithm; /* KM_ALGO_SVC or KM_ALGO_SVR */
    size_t n_classes;       /* svc: nr_class; svr: 0 */
    size_t n_sv;            /* total_sv */
    size_t n_features;      /* of the model it makes (its rows' d) */
    int has_probability;    /* svc with probA and probB */
    int reordered;          /* svc whose labels do not ascend: its
                               classes are renumbered */
} km_libsvm_info;

/* Checks the whole text without building the model (nothing allocated
 * grows with the SV lines) and says what it holds. */
km_status km_libsvm_scan(const char *text, size_t len, size_t n_features,
                         size_t n_training, km_libsvm_info *info,
                         km_error *err) KM_MUST_CHECK;
/* What km_libsvm_read of a file that scanned as info takes (not
 * counting the text): its peak, and what the model keeps (an upper bound
 * of its km_model_bytes). */
void km_libsvm_bytes(const km_libsvm_info *info, km_load_bytes *out);
/*
 * The model of a LIBSVM file: an svc (labels numeric, kmserve's
 * ascending class order: pairs whose classes LIBSVM orders the other way
 * are negated, so decision values are LIBSVM's up to that sign) or an
 * svr. n_samples is max(total_sv, nr_class) (the training rows are not
 * in the file) and support vector s's row index is its position among
 * the file's SV lines (precomputed: n_training and its row, above).
 * Figures: params "probability" (svc) only, as C,
 * tol, epsilon and the others are not in the file; training
 * "imported_from" KM_IMPORTED_LIBSVM, "n_support", and for an
 * epsilon_svr with probA that value as "probA" (svm-predict -b 1's
 * Laplace scale: kept for export, unused here). Caller owns *out.
 */
km_status km_libsvm_read(const char *text, size_t len, size_t n_features,
                         size_t n_training, km_model **out,
                         km_error *err) KM_MUST_CHECK;
/* KM_OK if m can be written as a LIBSVM file: svc or svr of the exact
 * form, a LIBSVM kernel (precomputed: SV lines "0:i", i the support
 * vector's training row + 1), no preprocessing, integer labels; else
 * KM_ECONFLICT saying why. */
km_status km_libsvm_check_export(const km_model *m,
                                 km_error *err) KM_MUST_CHECK;
/* m as a LIBSVM model file: *text (NUL-terminated, caller frees) of
 * *len bytes, in kmserve's class order, every number with %.17g (exact
 * when read back). Fails as km_libsvm_check_export. */
km_status km_libsvm_write(const km_model *m, char **text, size_t *len,
                          km_error *err) KM_MUST_CHECK;

#ifdef __cplusplus
}
#endif
#endif /* KM_LIBSVM_H */
