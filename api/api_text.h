/*
 * api_text.h - answers written as JSON text directly.
 *
 * A predict answer is a few numbers; building a cJSON tree for it and
 * printing that (cJSON prints each number with sprintf and reads it back
 * with sscanf) cost more than the model. Numbers here are written as the
 * shorter of %.15g and %.17g that reads back as exactly the same double,
 * with the common cases done without printf (see api_text_number).
 *
 * Usage: api_text t = {0}; api_text_raw(&t, "{"); ...; if (t.failed) out of
 * memory; else take t.buf (t.len bytes, NUL-terminated); free it.
 *
 * Thread-safety: reentrant.
 */
#ifndef API_TEXT_H
#define API_TEXT_H

#include <stddef.h>

typedef struct {
    char *buf;
    size_t len, cap;
    int failed; /* out of memory: later appends do nothing */
} api_text;

/* Appends s as it is. */
void api_text_raw(api_text *t, const char *s);
/* The length (1 to 4) of the UTF-8 character at s, of which avail bytes
 * may be read; 0 when the bytes there are not one (RFC 3629: no overlong
 * forms, no surrogates, nothing above U+10FFFF). */
size_t api_utf8_char(const char *s, size_t avail);
/* Writes s escaped for a JSON string (no quotes) into dst, never more
 * than cap - 1 bytes (a character that would not fit whole ends it), and
 * a NUL; returns the length. Quotes, backslashes and control characters
 * escaped as cJSON writes them; each byte that is not part of a valid
 * UTF-8 character is written as \ufffd (U+FFFD), so the text is valid
 * UTF-8 JSON whatever s holds. The one escaper of answers and log lines. */
size_t api_json_escape(char *dst, size_t cap, const char *s);
/* Appends s as a JSON string, quoted and escaped. */
void api_text_string(api_text *t, const char *s);
/* Appends v in decimal. */
void api_text_uint(api_text *t, unsigned long long v);
/* Appends v (finite) as described above; text identical to
 * snprintf "%.15g", or "%.17g" when that does not read back as v. */
void api_text_number(api_text *t, double v);

/* The same number into buf (at least 32 bytes); returns its length. */
size_t api_format_number(char *buf, double v);

#endif
