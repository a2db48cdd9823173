/*
 * km_blas.c - which of OpenBLAS's kernel sets runs, and which one this
 * CPU could run.
 *
 * OpenBLAS (built with DYNAMIC_ARCH, as Debian's is) picks its kernels when
 * it loads, from the CPU's vendor, family and model numbers. A model it
 * does not know gets its generic SSE3 set ("Prescott"): Debian 12's 0.3.21
 * does that on the Intel Xeon of family 6, model 207, where its AVX-512
 * set ("SkylakeX") runs DGEMM and DPOTRF about five times faster. The set
 * can only be chosen before the library loads, by OPENBLAS_CORETYPE in the
 * environment; server/kmserve.c re-executes itself with it when
 * km_blas_core_advice says so.
 *
 * The advice compares vector instruction sets, not models: a set that uses
 * fewer of them than the CPU has is upgraded to the set OpenBLAS names for
 * that level. A set this table does not know is left alone.
 *
 * Thread-safety: reentrant.
 */
#include <stddef.h>
#include <strings.h>

#include "km_base.h"

/* OpenBLAS's own query (cblas.h in some versions only). */
char *openblas_get_corename(void);

enum isa { ISA_SSE, ISA_AVX, ISA_AVX2, ISA_AVX512 };

/* OpenBLAS 0.3.21's x86-64 kernel sets and the widest vectors each uses;
 * the first of a level is the one asked for at that level. */
static const struct {
    const char *name;
    enum isa isa;
} cores[] = {
    {"SkylakeX", ISA_AVX512},   {"Cooperlake", ISA_AVX512},
    {"SapphireRapids", ISA_AVX512},
    {"Haswell", ISA_AVX2},      {"Zen", ISA_AVX2},
    {"Excavator", ISA_AVX2},
    {"Sandybridge", ISA_AVX},   {"Bulldozer", ISA_AVX},
    {"Piledriver", ISA_AVX},    {"Steamroller", ISA_AVX},
    {"Prescott", ISA_SSE},      {"Core2", ISA_SSE},
    {"Penryn", ISA_SSE},        {"Dunnington", ISA_SSE},
    {"Nehalem", ISA_SSE},       {"Atom", ISA_SSE},
    {"Opteron", ISA_SSE},       {"Opteron_SSE3", ISA_SSE},
    {"Barcelona", ISA_SSE},     {"Nano", ISA_SSE},
    {"Bobcat", ISA_SSE},
};
#define N_CORES (sizeof cores / sizeof cores[0])

/* The widest level this CPU and its operating system run (the compiler's
 * check includes the OS's saving of the wider registers). */
static enum isa cpu_isa(void)
{
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") &&
        __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("avx512cd"))
        return ISA_AVX512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return ISA_AVX2;
    if (__builtin_cpu_supports("avx"))
        return ISA_AVX;
    return ISA_SSE;
}

const char *km_blas_core(void)
{
    const char *name = openblas_get_corename();
    return name ? name : "unknown";
}

const char *km_blas_core_advice(void)
{
    const char *now = km_blas_core();
    size_t i = 0;
    while (i < N_CORES && strcasecmp(cores[i].name, now) != 0)
        i++;
    if (i == N_CORES)
        return NULL;
    enum isa want = cpu_isa();
    if (cores[i].isa >= want)
        return NULL;
    for (size_t j = 0; j < N_CORES; j++)
        if (cores[j].isa == want)
            return cores[j].name;
    return NULL;
}
