/*
 * kmctl_csv.c - reads a CSV file whole and splits it in place.
 *
 * The file is one buffer; fields are unquoted where they lie and ended with
 * a NUL, so a cell is a pointer into that buffer (no copy per field). The
 * cell table is row-major, rows x cols pointers; lines[] keeps the line each
 * row started on, for messages.
 *
 * Thread-safety: none needed (kmctl is single-threaded).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kmctl_csv.h"

struct ctl_csv {
    char *path;
    ctl_buf text;
    char **cells; /* (rows + 1) x cols: the header first */
    size_t *lines;
    size_t rows, cols, cap_rows;
};

size_t ctl_csv_rows(const ctl_csv *c) { return c->rows; }
size_t ctl_csv_cols(const ctl_csv *c) { return c->cols; }
const char *ctl_csv_path(const ctl_csv *c) { return c->path; }
const char *ctl_csv_name(const ctl_csv *c, size_t col) { return c->cells[col]; }
size_t ctl_csv_line(const ctl_csv *c, size_t row) { return c->lines[row + 1]; }

const char *ctl_csv_cell(const ctl_csv *c, size_t row, size_t col)
{
    return c->cells[(row + 1) * c->cols + col];
}

long ctl_csv_find(const ctl_csv *c, const char *name)
{
    for (size_t j = 0; j < c->cols; j++)
        if (!strcmp(c->cells[j], name))
            return (long)j;
    return -1;
}

void ctl_csv_free(ctl_csv *c)
{
    if (!c)
        return;
    free(c->lines);
    free(c->cells);
    ctl_buf_cleanup(&c->text);
    free(c->path);
    free(c);
}

static int slurp(const char *path, ctl_buf *b, ctl_err *e)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    if (!f)
        return ctl_fail(e, CTL_EXIT_USAGE, "cannot open %s: %s", path,
                        strerror(errno));
    char chunk[65536];
    size_t n;
    int rc = 0;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        if (ctl_buf_append(b, chunk, n)) {
            rc = ctl_fail(e, CTL_EXIT_USAGE, "%s is larger than %zu MiB (or "
                          "memory is short)", path, CTL_CSV_MAX_BYTES >> 20);
            break;
        }
    if (!rc && ferror(f))
        rc = ctl_fail(e, CTL_EXIT_USAGE, "cannot read %s: %s", path,
                      strerror(errno));
    if (f != stdin)
        fclose(f);
    /* An empty file still gets its terminating NUL for the parser. */
    if (!rc && !b->data && ctl_buf_append(b, "", 0))
        rc = ctl_fail(e, CTL_EXIT_USAGE, "out of memory reading %s", path);
    return rc;
}

/* Makes room for table row `row` (0 is the header); grows by doubling. */
static int reserve_row(ctl_csv *c, size_t row, size_t line, ctl_err *e)
{
    if (row >= c->cap_rows) {
        size_t cap = c->cap_rows ? c->cap_rows * 2 : 1024;
        if (cap > ((size_t)-1) / sizeof(char *) / c->cols)
            return ctl_fail(e, CTL_EXIT_USAGE, "%s has too many rows", c->path);
        char **cells = realloc(c->cells, cap * c->cols * sizeof *cells);
        if (!cells)
            return ctl_fail(e, CTL_EXIT_USAGE, "out of memory reading %s", c->path);
        c->cells = cells;
        size_t *lines = realloc(c->lines, cap * sizeof *lines);
        if (!lines)
            return ctl_fail(e, CTL_EXIT_USAGE, "out of memory reading %s", c->path);
        c->lines = lines;
        c->cap_rows = cap;
    }
    c->lines[row] = line;
    return 0;
}

static int is_blank(char ch) { return ch == ' ' || ch == '\t'; }

/*
 * Splits the text. The header is parsed first with a growing field list
 * (its width is not known yet); the data rows then must match it.
 */
static int split(ctl_csv *c, ctl_err *e)
{
    char *p = c->text.data, *end = c->text.data + c->text.len;
    size_t line = 1, header_cap = 0;
    char **header = NULL;
    int rc = -1;

    if (end - p >= 3 && !memcmp(p, "\xEF\xBB\xBF", 3))
        p += 3; /* a UTF-8 byte order mark, as spreadsheets write */
    int in_header = 1;
    while (p < end) {
        if (*p == '\n' || *p == '\r') { /* a blank line */
            if (*p == '\r' && p + 1 < end && p[1] == '\n')
                p++;
            p++;
            line++;
            continue;
        }
        size_t record_line = line, nfields = 0;
        if (!in_header && reserve_row(c, c->rows + 1, record_line, e))
            goto out;
        for (;;) {
            char *field, delim, *start = p;
            while (p < end && is_blank(*p))
                p++;
            if (p < end && *p == '"') {
                char *w = field = p++;
                for (;;) {
                    if (p >= end) {
                        ctl_fail(e, CTL_EXIT_USAGE, "%s:%zu: a quoted field is "
                                 "not closed", c->path, record_line);
                        goto out;
                    }
                    if (*p == '"') {
                        if (p + 1 < end && p[1] == '"') {
                            *w++ = '"';
                            p += 2;
                            continue;
                        }
                        p++;
                        break;
                    }
                    if (*p == '\n')
                        line++;
                    *w++ = *p++;
                }
                while (p < end && is_blank(*p))
                    p++;
                if (p < end && *p != ',' && *p != '\n' && *p != '\r') {
                    ctl_fail(e, CTL_EXIT_USAGE, "%s:%zu: text after the closing "
                             "quote of field %zu", c->path, line, nfields + 1);
                    goto out;
                }
                delim = p < end ? *p : '\0';
                *w = '\0';
            } else {
                /* RFC 4180: spaces are part of a field; a header's names
                 * are trimmed (kmctl_csv.h) */
                field = in_header ? p : start;
                while (p < end && *p != ',' && *p != '\n' && *p != '\r')
                    p++;
                delim = p < end ? *p : '\0';
                char *t = p;
                while (in_header && t > field && is_blank(t[-1]))
                    t--;
                *t = '\0';
            }
            if (in_header) {
                if (nfields == header_cap) {
                    header_cap = header_cap ? header_cap * 2 : 64;
                    char **h = realloc(header, header_cap * sizeof *h);
                    if (!h) {
                        ctl_fail(e, CTL_EXIT_USAGE, "out of memory reading %s",
                                 c->path);
                        goto out;
                    }
                    header = h;
                }
                header[nfields] = field;
            } else {
                if (nfields >= c->cols) {
                    ctl_fail(e, CTL_EXIT_USAGE, "%s:%zu: more than the %zu "
                             "fields of the header", c->path, record_line, c->cols);
                    goto out;
                }
                c->cells[(c->rows + 1) * c->cols + nfields] = field;
            }
            nfields++;
            if (p < end)
                p++; /* past the delimiter */
            if (delim == ',')
                continue;
            if (delim == '\r' && p < end && *p == '\n')
                p++;
            line++;
            break;
        }
        if (in_header) {
            c->cols = nfields;
            in_header = 0;
            if (reserve_row(c, 0, record_line, e))
                goto out;
            memcpy(c->cells, header, nfields * sizeof *header);
        } else {
            if (nfields != c->cols) {
                ctl_fail(e, CTL_EXIT_USAGE, "%s:%zu: %zu fields; the header has "
                         "%zu", c->path, record_line, nfields, c->cols);
                goto out;
            }
            c->rows++;
        }
    }
    if (in_header) {
        ctl_fail(e, CTL_EXIT_USAGE, "%s is empty: expected a header row and "
                 "data rows", c->path);
        goto out;
    }
    rc = 0;
out:
    free(header);
    return rc;
}

int ctl_csv_read(const char *path, ctl_csv **out, ctl_err *e)
{
    *out = NULL;
    ctl_csv *c = calloc(1, sizeof *c);
    if (!c || !(c->path = strdup(path))) {
        free(c);
        return ctl_fail(e, CTL_EXIT_USAGE, "out of memory");
    }
    ctl_buf_init(&c->text, CTL_CSV_MAX_BYTES);
    if (slurp(path, &c->text, e) || split(c, e)) {
        ctl_csv_free(c);
        return -1;
    }
    *out = c;
    return 0;
}

int ctl_parse_number(const char *s, double *v)
{
    /* JSON's and CSV's decimal forms, plus a leading '+' and a bare '.5':
     * strtod alone would also take hex, "inf" and "nan". Spaces and tabs
     * around the number are allowed (an unquoted cell keeps them). */
    while (is_blank(*s))
        s++;
    const char *q = s;
    int digits = 0;
    if (*q == '+' || *q == '-')
        q++;
    while (*q >= '0' && *q <= '9')
        q++, digits++;
    if (*q == '.')
        for (q++; *q >= '0' && *q <= '9'; q++)
            digits++;
    if (!digits)
        return -1;
    if (*q == 'e' || *q == 'E') {
        q++;
        if (*q == '+' || *q == '-')
            q++;
        if (!(*q >= '0' && *q <= '9'))
            return -1;
        while (*q >= '0' && *q <= '9')
            q++;
    }
    while (is_blank(*q))
        q++;
    if (*q)
        return -1;
    errno = 0;
    double x = strtod(s, NULL);
    if (!isfinite(x))
        return -1;
    *v = x;
    return 0;
}

int ctl_csv_column_numeric(const ctl_csv *c, size_t col)
{
    double v;
    for (size_t i = 0; i < c->rows; i++)
        if (ctl_parse_number(ctl_csv_cell(c, i, col), &v))
            return 0;
    return 1;
}

/* The usage error of a body past its cap. */
static int too_big(const ctl_csv *c, const ctl_buf *out, ctl_err *e)
{
    return ctl_fail(e, CTL_EXIT_USAGE, "the request body for %s would exceed "
                    "%zu MiB (use fewer rows per request)", c->path,
                    out->max >> 20);
}

int ctl_csv_matrix_json(const ctl_csv *c, size_t first, size_t count,
                        const size_t *cols, size_t ncols, ctl_buf *out,
                        ctl_err *e)
{
    char num[32];
    if (ctl_buf_append(out, "[", 1))
        goto toobig;
    for (size_t i = first; i < first + count; i++) {
        if (ctl_buf_append(out, i > first ? ",[" : "[", i > first ? 2 : 1))
            goto toobig;
        for (size_t k = 0; k < ncols; k++) {
            const char *cell = ctl_csv_cell(c, i, cols[k]);
            double v;
            if (ctl_parse_number(cell, &v))
                return ctl_fail(e, CTL_EXIT_USAGE, "%s:%zu: column '%s': '%.40s' "
                                "is not a finite number", c->path,
                                ctl_csv_line(c, i), ctl_csv_name(c, cols[k]), cell);
            ctl_fmt_double(num, v);
            if ((k && ctl_buf_append(out, ",", 1)) ||
                ctl_buf_append(out, num, strlen(num)))
                goto toobig;
        }
        if (ctl_buf_append(out, "]", 1))
            goto toobig;
    }
    if (ctl_buf_append(out, "]", 1))
        goto toobig;
    return 0;
toobig:
    return too_big(c, out, e);
}

void ctl_csv_trim_column(ctl_csv *c, size_t col)
{
    for (size_t i = 0; i < c->rows; i++) {
        char **cell = &c->cells[(i + 1) * c->cols + col];
        while (is_blank(**cell))
            (*cell)++;
        char *t = *cell + strlen(*cell);
        while (t > *cell && is_blank(t[-1]))
            t--;
        *t = '\0';
    }
}

/* Bytes of the UTF-8 character at s (at most n bytes), or 0 if s does
 * not start one (RFC 3629: no overlong forms, surrogates or code points
 * beyond U+10FFFF). */
static size_t utf8_char(const unsigned char *s, size_t n)
{
    if (s[0] < 0x80)
        return 1;
    size_t len = s[0] >= 0xF0 ? 4 : s[0] >= 0xE0 ? 3 : s[0] >= 0xC2 ? 2 : 0;
    if (!len || len > n || s[0] > 0xF4)
        return 0;
    for (size_t k = 1; k < len; k++)
        if ((s[k] & 0xC0) != 0x80)
            return 0;
    if ((s[0] == 0xE0 && s[1] < 0xA0) || (s[0] == 0xED && s[1] > 0x9F) ||
        (s[0] == 0xF0 && s[1] < 0x90) || (s[0] == 0xF4 && s[1] > 0x8F))
        return 0;
    return len;
}

/* s as a JSON string (quoted, escaped) onto out; -1 when out is full. */
static int append_json_string(ctl_buf *out, const char *s)
{
    if (ctl_buf_append(out, "\"", 1))
        return -1;
    for (const char *run = s;; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch && ch >= 0x20 && ch != '"' && ch != '\\')
            continue;
        if (ctl_buf_append(out, run, (size_t)(s - run)))
            return -1;
        if (!ch)
            break;
        char esc[8];
        if (ch == '"' || ch == '\\')
            snprintf(esc, sizeof esc, "\\%c", ch);
        else if (ch == '\n' || ch == '\r' || ch == '\t')
            snprintf(esc, sizeof esc, "\\%c", ch == '\n' ? 'n'
                                             : ch == '\r' ? 'r' : 't');
        else
            snprintf(esc, sizeof esc, "\\u%04x", ch);
        if (ctl_buf_append(out, esc, strlen(esc)))
            return -1;
        run = s + 1;
    }
    return ctl_buf_append(out, "\"", 1);
}

int ctl_csv_strings_json(const ctl_csv *c, size_t first, size_t count,
                         size_t col, ctl_buf *out, ctl_err *e)
{
    if (ctl_buf_append(out, "[", 1))
        goto toobig;
    for (size_t i = first; i < first + count; i++) {
        const char *cell = ctl_csv_cell(c, i, col);
        size_t n = strlen(cell);
        for (size_t at = 0, w; at < n; at += w)
            if (!(w = utf8_char((const unsigned char *)cell + at, n - at)))
                return ctl_fail(e, CTL_EXIT_USAGE, "%s:%zu: column '%s': "
                                "byte %zu of the text is not UTF-8",
                                c->path, ctl_csv_line(c, i),
                                ctl_csv_name(c, col), at + 1);
        if ((i > first && ctl_buf_append(out, ",", 1)) ||
            append_json_string(out, cell))
            goto toobig;
    }
    if (ctl_buf_append(out, "]", 1))
        goto toobig;
    return 0;
toobig:
    return too_big(c, out, e);
}

void ctl_csv_write_field(FILE *f, const char *s)
{
    if (!s[strcspn(s, ",\"\r\n")] && !is_blank(s[0]) &&
        !(s[0] && is_blank(s[strlen(s) - 1]))) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}
