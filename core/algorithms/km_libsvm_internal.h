/*
 * km_libsvm_internal.h - what LIBSVM's reader (km_libsvm.c) and writer
 * (km_libsvm_write.c) share: the kernel_type names and the renumbering of
 * an svc's classes. Not installed; core/algorithms only.
 */
#ifndef KM_LIBSVM_INTERNAL_H
#define KM_LIBSVM_INTERNAL_H

#include "km_svm_payload.h"

/* LIBSVM's kernel_type name of kernel type t, or NULL when LIBSVM has
 * none (the one table: km_libsvm.c). */
const char *km_libsvm_kernel_name(km_kernel_type t);
/* Those names as messages list them ("linear, ... and precomputed"). */
void km_libsvm_kernel_list(char *buf, size_t len);

/*
 * The svc parts in with its classes renumbered, class i becoming
 * rank[i]: support vectors regrouped in the new class order (each class's
 * own order kept), each coefficient moved to its new column, and the
 * pairs whose two classes swap order negated (coefficients, rho, probB;
 * probA kept), so every decision value keeps its meaning. out's arrays
 * are allocated here (free with km_svm_arrays_free, also on failure).
 */
km_status km_libsvm_renumber(const km_svm_parts *in, size_t d,
                             const size_t *rank, km_svm_arrays *out,
                             km_error *err) KM_MUST_CHECK;

#endif /* KM_LIBSVM_INTERNAL_H */
