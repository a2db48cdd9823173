/*
 * model_bytes.h - reading and writing a model file's bytes by hand, for
 * the tests that craft or alter files (test_km_model_file.c,
 * test_km_pre.c): little-endian integers, a CRC-32 written
 * independently of core's own (km_io.c's table), and skipping the
 * variable-length records (the layout of km_model.c).
 */
#ifndef TESTS_MODEL_BYTES_H
#define TESTS_MODEL_BYTES_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../check_main.h"

/* CRC-32 (IEEE, reflected), bit by bit. */
static inline uint32_t crc32_ref(const unsigned char *p, size_t n)
{
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int b = 0; b < 8; b++)
            c = c & 1 ? (c >> 1) ^ 0xEDB88320u : c >> 1;
    }
    return c ^ 0xFFFFFFFFu;
}

static inline uint64_t get64(const unsigned char *b)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | b[i];
    return v;
}

static inline uint32_t get32(const unsigned char *b)
{
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
           (uint32_t)b[3] << 24;
}

static inline void put64(unsigned char *b, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)(v >> (8 * i));
}

static inline void put32(unsigned char *b, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        b[i] = (unsigned char)(v >> (8 * i));
}

/* The offset after a kernel record that starts at p (recursive: a
 * composite's parts follow it, then its weights). */
static inline size_t skip_kernel(const unsigned char *b, size_t p)
{
    uint32_t parts = get32(b + p + 24), weights = get32(b + p + 28);
    p += 32;
    for (uint32_t i = 0; i < parts; i++)
        p = skip_kernel(b, p);
    return weights ? p + 8 + 8 * get64(b + p) : p;
}

/* The offset after a figure list that starts at p. */
static inline size_t skip_info(const unsigned char *b, size_t p)
{
    uint64_t n = get64(b + p);
    p += 8;
    for (uint64_t i = 0; i < n; i++) {
        p += 4 + get32(b + p) + 8;
        p += 8 + 8 * get64(b + p);
    }
    return p;
}

/* buf's checksum (its last 4 bytes) refreshed over every byte before it,
 * so that only a loader's own checks can catch an alteration. */
static inline void fix_crc(unsigned char *buf, size_t len)
{
    put32(buf + len - 4, crc32_ref(buf, len - 4));
}

/* A copy of the model file buf (len bytes) with the 8 bytes at `at` set
 * to v and its checksum refreshed; the caller frees it. */
static inline unsigned char *altered(const unsigned char *buf, size_t len,
                                     size_t at, double v)
{
    unsigned char *c = malloc(len);
    memcpy(c, buf, len);
    memcpy(c + at, &v, 8);
    fix_crc(c, len);
    return c;
}

/* The load of buf altered at `at` to v (altered) is KM_ECORRUPT with a
 * message that says `says`. */
static inline void refused_at(const unsigned char *buf, size_t len, size_t at,
                              double v, const char *says)
{
    unsigned char *c = altered(buf, len, at, v);
    km_model *x = NULL;
    km_error err = {0};
    ck_assert_int_eq(km_model_load_buffer(c, len, &x, &err), KM_ECORRUPT);
    ck_assert_msg(strstr(err.message, says) != NULL, "%g at %zu: %s", v, at,
                  err.message);
    free(c);
}

#endif
