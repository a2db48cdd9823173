/*
 * kmctl_csv.h - the CSV files kmctl reads: a header row, then one row per
 * sample, every row with as many fields as the header.
 *
 * The dialect is RFC 4180's: fields separated by commas, optionally quoted
 * with '"' (a quote inside is doubled; quoted fields may hold commas and
 * newlines), lines ending in LF or CRLF. Blank lines are skipped. Spaces
 * are part of a field, as RFC 4180 says (a text cell is sent as it is):
 * numbers may have spaces and tabs around them, the header's names are
 * trimmed of them, and spaces before an opening quote are ignored. A
 * file is read whole, at most CTL_CSV_MAX_BYTES.
 *
 * Thread-safety: a ctl_csv is not shared between threads (kmctl has one).
 */
#ifndef KMCTL_CSV_H
#define KMCTL_CSV_H

#include <stddef.h>
#include <stdio.h>

#include "kmctl_util.h"

#define CTL_CSV_MAX_BYTES ((size_t)1 << 30)

typedef struct ctl_csv ctl_csv;

/* Reads and splits path ("-" is standard input). On failure returns -1 and
 * fills e (exit code 2) with the file, line and what is wrong.
 * Caller owns *out; free with ctl_csv_free(). */
__attribute__((warn_unused_result)) int ctl_csv_read(const char *path, ctl_csv **out,
                                                     ctl_err *e);
void ctl_csv_free(ctl_csv *c);

size_t ctl_csv_rows(const ctl_csv *c);          /* data rows, header excluded */
size_t ctl_csv_cols(const ctl_csv *c);
const char *ctl_csv_path(const ctl_csv *c);     /* as given, for messages */
const char *ctl_csv_name(const ctl_csv *c, size_t col);   /* header field */
const char *ctl_csv_cell(const ctl_csv *c, size_t row, size_t col);
size_t ctl_csv_line(const ctl_csv *c, size_t row); /* 1-based line in the file */
/* Index of the column whose header is name, or -1. */
long ctl_csv_find(const ctl_csv *c, const char *name);

/* Appends rows [first, first+count) of the columns cols[0..ncols) to out as
 * a JSON matrix ([[..],..]). Every cell must be a finite decimal number;
 * otherwise returns -1 with e naming the file, line and column (exit 2).
 * Borrows cols for the duration of the call. */
__attribute__((warn_unused_result)) int ctl_csv_matrix_json(const ctl_csv *c,
    size_t first, size_t count, const size_t *cols, size_t ncols, ctl_buf *out,
    ctl_err *e);

/* Appends rows [first, first+count) of column col to out as a JSON array
 * of strings (["..", ..]), each cell as the file has it. Every cell must
 * be UTF-8; otherwise returns -1 with e naming the file, line and column
 * (exit 2). */
__attribute__((warn_unused_result)) int ctl_csv_strings_json(const ctl_csv *c,
    size_t first, size_t count, size_t col, ctl_buf *out, ctl_err *e);

/* Trims column col's cells of spaces and tabs at both ends, in place
 * (labels: "a, b" reads label b). */
void ctl_csv_trim_column(ctl_csv *c, size_t col);

/* 1 if every cell of column col parses as a finite number, else 0. */
int ctl_csv_column_numeric(const ctl_csv *c, size_t col);

/* Parses s as a finite number in the decimal forms a CSV holds (no hex, no
 * inf or nan); 0 on success. */
int ctl_parse_number(const char *s, double *v);

/* Writes s to f as one CSV field, quoted when it needs to be. */
void ctl_csv_write_field(FILE *f, const char *s);

#endif
