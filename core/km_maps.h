/*
 * km_maps.h - the one list of algorithms and the one list of kernels.
 *
 * Each entry is X(ENUM, id, "name", descriptor):
 *   ENUM        the constant's suffix: KM_ALGO_<ENUM>, KM_KERNEL_<ENUM>
 *   id          the number stored in model files, pinned forever: an entry
 *               keeps its id, a new entry takes the next one, and ids run
 *               0, 1, 2, ... in list order (core checks this at compile
 *               time) so that they also index tables
 *   "name"      the name the API, kmctl, metrics and messages use
 *   descriptor  core's symbol describing the entry (km_algo.c,
 *               km_kernel.c); only core refers to it
 * The enums, the name tables, the parsers and core's dispatch tables are
 * generated from these lists; nothing else lists names.
 *
 * Macro-only: no declarations, no types, so a client (kmctl) may include
 * it without linking libkm, e.g.
 *   #define NAME(e, id, name, d) name,
 *   static const char *const kernels[] = {KM_KERNEL_MAP(NAME)};
 *
 * Thread-safety: not applicable (macros only).
 */
#ifndef KM_MAPS_H
#define KM_MAPS_H

#define KM_ALGO_MAP(X)                                                       \
    X(KRR, 0, "krr", km_krr_algo)                                            \
    X(SVC, 1, "svc", km_svc_algo)                                            \
    X(SVR, 2, "svr", km_svr_algo)                                            \
    X(KPCA, 3, "kpca", km_kpca_algo)                                         \
    X(GPR, 4, "gpr", km_gpr_algo)                                            \
    X(KKMEANS, 5, "kkmeans", km_kkmeans_algo)                                \
    X(KLR, 6, "klr", km_klr_algo)

#define KM_KERNEL_MAP(X)                                                     \
    X(LINEAR, 0, "linear", km_kernel_linear)                                 \
    X(POLYNOMIAL, 1, "polynomial", km_kernel_polynomial)                     \
    X(RBF, 2, "rbf", km_kernel_rbf)                                          \
    X(LAPLACIAN, 3, "laplacian", km_kernel_laplacian)                        \
    X(SIGMOID, 4, "sigmoid", km_kernel_sigmoid)                              \
    X(SUM, 5, "sum", km_kernel_sum)                                          \
    X(PRODUCT, 6, "product", km_kernel_product)                              \
    X(LAPLACIAN_L2, 7, "laplacian_l2", km_kernel_laplacian_l2)               \
    X(EXPONENTIAL, 8, "exponential", km_kernel_exponential)                  \
    X(NORMALIZED, 9, "normalized", km_kernel_normalized)                     \
    X(SPECTRUM, 10, "spectrum", km_kernel_spectrum)                          \
    X(BOUNDRANGE, 11, "boundrange", km_kernel_boundrange)                    \
    X(EXPDECAY, 12, "expdecay", km_kernel_expdecay)                          \
    X(SUBSEQUENCE, 13, "subsequence", km_kernel_subsequence)                 \
    X(PRECOMPUTED, 14, "precomputed", km_kernel_precomputed)

#endif /* KM_MAPS_H */
