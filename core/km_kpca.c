/* km_kpca.c - PLACEHOLDER until kernel PCA lands (issue 4). */
#include <stdlib.h>
#include "km_internal.h"

static void nop_free(void *p) { free(p); }
static void nop_save(const void *p, const km_model *m, km_writer *w) { (void)p; (void)m; (void)w; }
static km_status nop_load(km_reader *r, const km_model *m, void **p, km_error *err)
{ (void)r; (void)m; *p = NULL; return km_error_set(err, KM_EFORMAT, "kpca models are not supported yet"); }
static size_t nop_bytes(const void *p) { (void)p; return 0; }
const km_algo_ops km_kpca_ops = {nop_free, nop_save, nop_load, nop_bytes};
