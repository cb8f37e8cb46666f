/* The compiled Kineto scanner (kineto_native.py): the records of a traceEvents array, in one
 * pass over the bytes, as the columns of the raw table (kineto_records.RAW_SCHEMA).
 *
 * A Scanner is fed the decompressed text that follows the array's "[", block after block; each
 * call reads every whole record it is given and says how many bytes it took, so that the caller
 * keeps the rest (a record cut by the block's end) and feeds it again with the next block. The
 * columns grow in C memory and leave through the Arrow C data interface (__arrow_c_array__),
 * which polars takes without a copy. Names are interned: each distinct string is stored once
 * and the rows hold its index into names().
 *
 * The scanner reads a record exactly as the exact path does (orjson, then collect) or not at
 * all: where it meets anything it is not sure to read the same (an escape in a key or in an
 * id, a \u escape of a surrogate, a key it reads written twice, a number for an id that is
 * not an integer, a string id that is not plainly digits, a number it cannot convert exactly,
 * a number anywhere that may be beyond a double's range, a record that is not an object,
 * nesting deeper than MAX_DEPTH, invalid JSON or UTF-8), it declines (Decline), and the polars
 * path reads the file instead. Declining is always correct; a wrong value never is.
 * Metadata records ("ph": "M") are only counted, not kept as rows (the exact path only counts
 * them too): once a record's phase says M, its other values are skipped as JSON, checked but
 * not read.
 *
 * The scan itself touches no Python object, so it runs without the GIL.
 *
 * After the scan, split() does in C what kineto.py does to the other paths' raw table: it keeps
 * the events (X records but the profiler's own) as the rows, their times as ns, counts the
 * records that are neither events nor device flows, and binds each device flow to the event
 * at its (pid, tid, ns) point, as kineto._bind does with polars joins. What it is told of each
 * name (a phase, a category) comes from kineto.py (_kinds), which owns those meanings. A trace
 * with B/E records is left to the raw table (kineto_records.pair_spans makes their events).
 */
#include "_arrow.h"
#include <errno.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <math.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 128 /* nesting levels skipped inside a record (orjson reads 1024) */
#define TOKEN_MAX 64  /* the longest number token converted to a double */

/* The columns, in the raw table's order; the three texts hold indexes into names(). */
enum { PH, CAT, NAME, PID, TID, TS, DUR, FLOW, DEVICE, STREAM, EXT, CORR, SEQ, EXEC, WSTREAM,
       WRECORD, ARGS_AT, NCOL };
/* Values a record holds until its end decides the columns: two spellings of two args. */
enum { STREAM_ID = NCOL, EXT2, NSLOT };
static const char *const COLUMN[NCOL] = {
    "ph",     "category", "name",   "pid",         "tid",         "ts",     "dur",
    "flow_id", "device",  "stream", "external_id", "correlation", "seq_id", "exec_id",
    "wait_stream", "wait_record", "args_at",
};

/* Where a record's args object lies in the file (ARGS_AT, loading/args_at.py): its offset from
 * the start of the text fed, shifted past its length; null where the feed was given no offset,
 * or either does not fit. */
#define SPAN_LEN_BITS 24
#define SPAN_OFF_MAX (1ULL << (63 - SPAN_LEN_BITS))

/* The dur of a record without one, as the raw table holds it (kineto_records.NO_DUR): a NaN,
 * which no JSON number is; split() counts the events that have it and reads them as 0 ns. */
#define NO_DUR 0x7FF8000000000000ULL

/* How a parse ends: done, out of bytes (the record goes on in the next block), or declined. */
enum { OK = 0, MORE = 1, BAD = 2 };

typedef struct { /* one distinct string: its bytes in the arena */
    uint64_t hash;
    size_t off, len;
} Entry;

typedef struct {
    PyObject_HEAD
    Column col[NCOL];
    int64_t rows, cap;
    int64_t metadata; /* "ph": "M" records counted, not kept */
    int state;        /* 0: after "[", 1: after a record, 2: after ",", 3: after "]" */
    int busy;         /* a feed is running (without the GIL) */
    int split;        /* split() kept the events alone, their times as ns */
    int64_t no_dur;   /* events (split) of X records without "dur", read as 0 ns */
    char *arena;      /* the interned strings' bytes */
    size_t arena_len, arena_cap;
    Entry *entries;
    size_t n_entries, entries_cap;
    uint32_t *table; /* open addressing: entry index + 1, 0 for empty */
    size_t table_cap;
    char *scratch; /* a text's bytes with its escapes replaced */
    size_t scratch_cap;
    PyObject *names; /* list of str, one per entry made so far */
    const char *why; /* why the last feed declined */
    const char *buf; /* the text being fed, and its offset in the file (-1: not known) */
    int64_t at;
    int unplaced; /* a feed was given no offset */
} Scanner;

typedef struct { /* a record being read */
    uint64_t v[NSLOT];
    uint32_t valid, seen; /* bit per slot; bit per key read (duplicates decline) */
    int meta;
} Record;

static PyObject *Decline;

/* --- the bytes ------------------------------------------------------------------------------ */

typedef struct {
    const char *p, *end;
    Scanner *s;
} Cur;

#define DECLINE(c, msg) return ((c)->s->why = (msg), BAD)

static void skip_ws(Cur *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\n' || *c->p == '\r' || *c->p == '\t'))
        c->p++;
}

/* The length of the UTF-8 sequence at p (strict: no overlong forms, surrogates or values past
 * U+10FFFF, as orjson and Python's decoder require), 0 when invalid, -1 when cut by the end. */
static int utf8_len(const unsigned char *p, const unsigned char *end)
{
    unsigned char b = p[0];
    int n = b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : 2;
    if (b < 0xC2 || b > 0xF4)
        return 0;
    if (end - p < n)
        return -1;
    for (int i = 1; i < n; i++)
        if ((p[i] & 0xC0) != 0x80)
            return 0;
    if ((b == 0xE0 && p[1] < 0xA0) || (b == 0xED && p[1] >= 0xA0) ||
        (b == 0xF0 && p[1] < 0x90) || (b == 0xF4 && p[1] >= 0x90))
        return 0;
    return n;
}

static int hex4(const char *p)
{
    int v = 0;
    for (int i = 0; i < 4; i++) {
        char h = p[i];
        int d = h >= '0' && h <= '9' ? h - '0'
                : h >= 'a' && h <= 'f' ? h - 'a' + 10
                : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                       : -1;
        if (d < 0)
            return -1;
        v = v * 16 + d;
    }
    return v;
}

/* The count of plain bytes at the start of p[0..n): those that do not end a string's plain run
 * (no quote, backslash, control character or non-ASCII byte); n when all are. Sixteen bytes a
 * step with SSE2 (every x86-64), else eight with word-at-a-time tests, each exact for its
 * lowest flagged byte (a borrow only ever flags bytes above a true one): the first special
 * byte is found at once, not looked for byte by byte. */
static inline size_t plain_run(const char *p, size_t n)
{
    size_t i = 0;
#if defined(__SSE2__)
    const __m128i quote = _mm_set1_epi8('"'), slash = _mm_set1_epi8('\\');
    const __m128i space = _mm_set1_epi8(0x20);
    for (; i + 16 <= n; i += 16) {
        __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(p + i));
        __m128i q = _mm_or_si128(_mm_cmpeq_epi8(x, quote), _mm_cmpeq_epi8(x, slash));
        int m = _mm_movemask_epi8(_mm_or_si128(q, _mm_cmplt_epi8(x, space))); /* signed: */
        if (m != 0) /* below 0x20, or 0x80 and above */
            return i + (size_t)__builtin_ctz((unsigned)m);
    }
#endif
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    const uint64_t ones = 0x0101010101010101ULL, high = 0x8080808080808080ULL;
    for (; i + 8 <= n; i += 8) {
        uint64_t x;
        memcpy(&x, p + i, sizeof x);
        uint64_t q = x ^ (ones * '"'), b = x ^ (ones * '\\');
        uint64_t special = ((q - ones) & ~q) | ((b - ones) & ~b) | ((x - ones * 0x20) & ~x) | x;
        if ((special &= high) != 0)
            return i + (size_t)__builtin_ctzll(special) / 8;
    }
#endif
    for (; i < n; i++) {
        unsigned char b = (unsigned char)p[i];
        if (b == '"' || b == '\\' || b < 0x20 || b >= 0x80)
            return i;
    }
    return n;
}

/* Read the string at c->p (its opening quote): its bytes between the quotes in *s, *n, and
 * whether it holds an escape. A \u escape of a surrogate declines (lone ones are errors). */
static int string(Cur *c, const char **s, size_t *n, int *escaped)
{
    const char *p = c->p + 1;
    *escaped = 0;
    while (p < c->end) {
        p += plain_run(p, (size_t)(c->end - p)); /* most of a trace's text */
        if (p >= c->end)
            break;
        unsigned char b = (unsigned char)*p;
        if (b == '"') {
            *s = c->p + 1;
            *n = (size_t)(p - *s);
            c->p = p + 1;
            return OK;
        }
        if (b < 0x20)
            DECLINE(c, "a control character in a string");
        if (b == '\\') {
            *escaped = 1;
            if (c->end - p < 2)
                return MORE;
            if (p[1] == 'u') {
                if (c->end - p < 6)
                    return MORE;
                int v = hex4(p + 2);
                if (v < 0 || (v >= 0xD800 && v <= 0xDFFF))
                    DECLINE(c, "a \\u escape the scanner does not read");
                p += 6;
            } else if (strchr("\"\\/bfnrt", p[1]) != NULL && p[1] != '\0') {
                p += 2;
            } else {
                DECLINE(c, "an invalid escape");
            }
        } else if (b < 0x80) {
            p++;
        } else {
            int k = utf8_len((const unsigned char *)p, (const unsigned char *)c->end);
            if (k < 0)
                return MORE;
            if (k == 0)
                DECLINE(c, "invalid UTF-8");
            p += k;
        }
    }
    return MORE;
}

/* The end of number() for a token c->p..p with an exponent or of more than 308 characters
 * (without one, no shorter token is 10**308 or more): it declines where the number is beyond
 * a double's range as orjson reads it (past it orjson refuses the whole file, "number is
 * infinity when parsed as double"). Below 10**(its whole digits + its exponent) <= 10**308 it
 * is not; the others through strtod, which rounds correctly as orjson does, and a token too
 * long for it declines. Out of the scan's way (Kineto writes no exponents): a tail call, so
 * that number() keeps no more registers for it. */
#if defined(__GNUC__)
__attribute__((noinline, cold))
#endif
static int beyond(Cur *c, const char *p, const char **s, size_t *n)
{
    char tok[TOKEN_MAX];
    const char *q = c->p + (*c->p == '-');
    long mag = 0, exp = 0, sign = 1;
    if (*q != '0')
        while (q < p && *q >= '0' && *q <= '9')
            q++, mag++;
    while (q < p && *q != 'e' && *q != 'E')
        q++;
    if (q < p && (*++q == '+' || *q == '-'))
        sign = *q++ == '-' ? -1 : 1;
    for (; q < p; q++)
        exp = exp < 100000 ? exp * 10 + (*q - '0') : exp; /* past 1e5: as good as infinite */
    size_t len = (size_t)(p - c->p);
    if (mag + sign * exp > 308) {
        if (len >= TOKEN_MAX)
            DECLINE(c, "a number that may be beyond a double's range");
        memcpy(tok, c->p, len);
        tok[len] = '\0';
        if (isinf(strtod(tok, NULL)))
            DECLINE(c, "a number beyond a double's range");
    }
    *s = c->p;
    *n = len;
    c->p = p;
    return OK;
}

/* Read the number token at c->p, JSON's grammar exactly; *integer when it has no fraction or
 * exponent. The token may go on in the next block when it meets the end: MORE. A number that
 * may be beyond a double's range declines, wherever it is (beyond). */
static int number(Cur *c, const char **s, size_t *n, int *integer)
{
    const char *p = c->p, *e = c->end;
#define DIGITS(q) while ((q) < e && *(q) >= '0' && *(q) <= '9') (q)++
    *integer = 1;
    if (p < e && *p == '-')
        p++;
    if (p >= e)
        return MORE;
    if (*p == '0') {
        p++;
    } else if (*p >= '1' && *p <= '9') {
        DIGITS(p);
    } else {
        DECLINE(c, "invalid JSON: a number");
    }
    if (p < e && *p == '.') {
        const char *q = ++p;
        DIGITS(p);
        if (p == q)
            return p >= e ? MORE : ((c->s->why = "invalid JSON: a number"), BAD);
        *integer = 0;
    }
    if (p < e && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < e && (*p == '+' || *p == '-'))
            p++;
        const char *q = p;
        DIGITS(p);
        if (p == q)
            return p >= e ? MORE : ((c->s->why = "invalid JSON: a number"), BAD);
        *integer = 0;
        return p >= e ? MORE : beyond(c, p, s, n);
    }
#undef DIGITS
    if (p >= e)
        return MORE;
    if (__builtin_expect(p - c->p > 308, 0))
        return beyond(c, p, s, n);
    *s = c->p;
    *n = (size_t)(p - c->p);
    c->p = p;
    return OK;
}

/* Parse the decimal digits s[0..n) (an optional sign first) into *v; 0 when outside int64. */
static int to_i64(const char *s, size_t n, int64_t *v)
{
    int neg = n > 0 && s[0] == '-';
    size_t i = (n > 0 && (s[0] == '-' || s[0] == '+')) ? 1 : 0;
    uint64_t m = 0, lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    for (; i < n; i++) {
        uint64_t d = (uint64_t)(s[i] - '0');
        if (m > (lim - d) / 10)
            return 0;
        m = m * 10 + d;
    }
    *v = neg ? (int64_t)(0 - m) : (int64_t)m; /* 0 - m wraps to INT64_MIN for 2**63 */
    return 1;
}

static int literal(Cur *c, const char *word)
{
    size_t n = strlen(word);
    size_t have = (size_t)(c->end - c->p);
    if (have < n) {
        if (memcmp(c->p, word, have) != 0)
            DECLINE(c, "invalid JSON");
        return MORE;
    }
    if (memcmp(c->p, word, n) != 0)
        DECLINE(c, "invalid JSON");
    c->p += n;
    return OK;
}

static int skip_value(Cur *c, int depth);

/* Skip the object or array at c->p, each value checked as JSON. */
static int skip_container(Cur *c, int depth)
{
    char close = *c->p == '{' ? '}' : ']';
    int first = 1, r;
    if (depth > MAX_DEPTH)
        DECLINE(c, "nesting deeper than the scanner reads");
    c->p++;
    for (;;) {
        skip_ws(c);
        if (c->p >= c->end)
            return MORE;
        if (*c->p == close && first) {
            c->p++;
            return OK;
        }
        if (close == '}') {
            const char *s;
            size_t n;
            int esc;
            if (*c->p != '"')
                DECLINE(c, "invalid JSON: an object key");
            if ((r = string(c, &s, &n, &esc)) != OK)
                return r;
            skip_ws(c);
            if (c->p >= c->end)
                return MORE;
            if (*c->p++ != ':')
                DECLINE(c, "invalid JSON: no colon");
        }
        if ((r = skip_value(c, depth + 1)) != OK)
            return r;
        skip_ws(c);
        if (c->p >= c->end)
            return MORE;
        if (*c->p == close) {
            c->p++;
            return OK;
        }
        if (*c->p++ != ',')
            DECLINE(c, "invalid JSON: no comma");
        first = 0;
    }
}

static int skip_value(Cur *c, int depth)
{
    const char *s;
    size_t n;
    int flag;
    skip_ws(c);
    if (c->p >= c->end)
        return MORE;
    switch (*c->p) {
    case '{':
    case '[':
        return skip_container(c, depth);
    case '"':
        return string(c, &s, &n, &flag);
    case 't':
        return literal(c, "true");
    case 'f':
        return literal(c, "false");
    case 'n':
        return literal(c, "null");
    default:
        return number(c, &s, &n, &flag);
    }
}

/* --- interning ------------------------------------------------------------------------------ */

/* A string's hash, eight bytes a step (kernel names run to hundreds of bytes): each word mixed
 * in by a multiply and a shift, the length last. */
static uint64_t hash(const char *s, size_t n)
{
    const uint64_t k = 0x9E3779B97F4A7C15ULL;
    uint64_t h = 1469598103934665603ULL, w;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        memcpy(&w, s + i, 8);
        h = (h ^ w) * k;
        h ^= h >> 32;
    }
    w = 0;
    memcpy(&w, s + i, n - i);
    h = (h ^ w ^ n) * k;
    return h ^ (h >> 29);
}

static int grow(void **buf, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return 1;
    size_t n = *cap ? *cap : 64;
    while (n < need)
        n *= 2;
    void *p = realloc(*buf, n * size);
    if (p == NULL)
        return 0;
    *buf = p;
    *cap = n;
    return 1;
}

static int rehash(Scanner *s)
{
    size_t cap = s->table_cap ? s->table_cap * 2 : 1024;
    uint32_t *t = calloc(cap, sizeof *t);
    if (t == NULL)
        return 0;
    for (size_t i = 0; i < s->n_entries; i++) {
        size_t k = s->entries[i].hash & (cap - 1);
        while (t[k])
            k = (k + 1) & (cap - 1);
        t[k] = (uint32_t)(i + 1);
    }
    free(s->table);
    s->table = t;
    s->table_cap = cap;
    return 1;
}

/* The index of string s[0..n) among the interned ones, added when new; -1 when out of memory. */
static int64_t intern(Scanner *s, const char *str, size_t n)
{
    uint64_t h = hash(str, n);
    if ((s->n_entries + 1) * 2 > s->table_cap && !rehash(s))
        return -1;
    size_t k = h & (s->table_cap - 1);
    for (; s->table[k]; k = (k + 1) & (s->table_cap - 1)) {
        Entry *e = &s->entries[s->table[k] - 1];
        if (e->hash == h && e->len == n && memcmp(s->arena + e->off, str, n) == 0)
            return (int64_t)(s->table[k] - 1);
    }
    if (s->n_entries >= UINT32_MAX - 1 ||
        !grow((void **)&s->entries, &s->entries_cap, s->n_entries + 1, sizeof(Entry)) ||
        !grow((void **)&s->arena, &s->arena_cap, s->arena_len + n + 1, 1))
        return -1;
    memcpy(s->arena + s->arena_len, str, n);
    s->entries[s->n_entries] = (Entry){h, s->arena_len, n};
    s->arena_len += n;
    s->table[k] = (uint32_t)(++s->n_entries);
    return (int64_t)(s->n_entries - 1);
}

/* --- a record ------------------------------------------------------------------------------- */

#define OOM ((const char *)1) /* why: out of memory, a MemoryError rather than a decline */

static void set(Record *r, int slot, uint64_t v)
{
    r->v[slot] = v;
    r->valid |= 1u << slot;
}

/* Write s[0..n), a string's bytes whose escapes string() checked, with each escape replaced
 * by what it means (as orjson reads it), into the scanner's scratch; its length, -1 when out
 * of memory. No escape grows: an unescaped text is never longer than its JSON. */
static int64_t unescape(Scanner *sc, const char *s, size_t n)
{
    if (!grow((void **)&sc->scratch, &sc->scratch_cap, n + 1, 1))
        return -1;
    char *o = sc->scratch;
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '\\') {
            *o++ = s[i];
            continue;
        }
        char e = s[++i];
        const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t";
        if (e != 'u') {
            *o++ = to[strchr(from, e) - from];
            continue;
        }
        int v = hex4(s + i + 1); /* not a surrogate: string() declined those */
        i += 4;
        if (v < 0x80) {
            *o++ = (char)v;
        } else if (v < 0x800) {
            *o++ = (char)(0xC0 | (v >> 6));
            *o++ = (char)(0x80 | (v & 0x3F));
        } else {
            *o++ = (char)(0xE0 | (v >> 12));
            *o++ = (char)(0x80 | ((v >> 6) & 0x3F));
            *o++ = (char)(0x80 | (v & 0x3F));
        }
    }
    return (int64_t)(o - sc->scratch);
}

/* A text value (ph, cat, name): a string is kept (interned, escapes replaced); null is null; for
 * ph and cat any other value is null, a name must be a string or null (the exact path writes
 * other values as Python would print them). */
static int text(Cur *c, Record *r, int slot)
{
    const char *s;
    size_t n;
    int esc, rc;
    if (*c->p == '"') {
        if ((rc = string(c, &s, &n, &esc)) != OK)
            return rc;
        if (esc) {
            int64_t len = unescape(c->s, s, n);
            if (len < 0)
                return ((c->s->why = OOM), BAD);
            s = c->s->scratch;
            n = (size_t)len;
        }
        if (slot == PH && n == 1 && s[0] == 'M')
            r->meta = 1;
        int64_t i = intern(c->s, s, n);
        if (i < 0)
            return ((c->s->why = OOM), BAD);
        set(r, slot, (uint64_t)i);
        return OK;
    }
    if (slot == NAME && *c->p != 'n')
        DECLINE(c, "a name that is not a string");
    return skip_value(c, 1);
}

/* Whether int() fails on every str holding the ASCII character b: not a digit, a sign, an
 * underscore or whitespace (Python's, in ASCII). */
static int never_in_int(unsigned char b)
{
    return b < 0x80 && !((b >= '0' && b <= '9') || b == '+' || b == '-' || b == '_' ||
                         b == ' ' || (b >= '\t' && b <= '\r') || (b >= 0x1c && b <= 0x1f));
}

/* An id (as_i64): an integer in int64's range, or null for anything outside it, for null, true,
 * false, an object or an array, and for a string int() fails on (a letter, or no digit); a
 * string of plain digits (a sign first) is read as int() reads it. A fraction, an exponent, or
 * any other string (an escape, non-ASCII text, blanks or underscores around digits) declines. */
static int id(Cur *c, Record *r, int slot)
{
    const char *s;
    size_t n;
    int flag, rc;
    int64_t v;
    char b = *c->p;
    if (b == '"') {
        if ((rc = string(c, &s, &n, &flag)) != OK)
            return rc;
        size_t digits = 0, i = (n > 0 && (s[0] == '-' || s[0] == '+')) ? 1 : 0;
        while (i + digits < n && s[i + digits] >= '0' && s[i + digits] <= '9')
            digits++;
        if (!flag && digits > 0 && i + digits == n && digits <= 19) {
            if (to_i64(s, n, &v))
                set(r, slot, (uint64_t)v);
            return OK;
        }
        int any_digit = 0, ascii = 1;
        for (size_t k = 0; k < n && !flag; k++) {
            unsigned char ch = (unsigned char)s[k];
            if (never_in_int(ch))
                return OK; /* null */
            any_digit |= ch >= '0' && ch <= '9';
            ascii &= ch < 0x80;
        }
        if (!flag && ascii && !any_digit)
            return OK; /* no digit at all ("", "-"): null */
        DECLINE(c, "a string id the scanner does not read");
    }
    if (b == '-' || (b >= '0' && b <= '9')) {
        if ((rc = number(c, &s, &n, &flag)) != OK)
            return rc;
        if (!flag || n > 20)
            DECLINE(c, "an id that is not an integer of at most 19 digits");
        if (to_i64(s, n, &v))
            set(r, slot, (uint64_t)v);
        return OK;
    }
    return skip_value(c, 1);
}

/* A number written as digits, a point and digits (no exponent) whose digits make an integer
 * below 2**53 with at most 22 after the point: *d as strtod reads it, and 1; 0 for any other.
 * Both the integer and the power of ten are exact doubles and division rounds correctly, so the
 * quotient is the correctly rounded value (Clinger's fast path): no strtod, a third of the
 * scan's time where every record writes two times. */
static int exact_decimal(const char *s, size_t n, double *d)
{
    static const double POW10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                     1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                     1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    size_t i = s[0] == '-' ? 1 : 0;
    uint64_t m = 0;
    int point = -1, digits = 0;
    for (; i < n; i++) {
        if (s[i] == '.') {
            point = digits;
            continue;
        }
        if (s[i] < '0' || s[i] > '9' || ++digits > 16)
            return 0;
        m = m * 10 + (uint64_t)(s[i] - '0');
    }
    if (point < 0 || m > (1ULL << 53) || digits - point > 22)
        return 0;
    double v = (double)m / POW10[digits - point];
    *d = s[0] == '-' ? -v : v;
    return 1;
}

/* A time (num): a number below 1e300 as a double, null for any other value. Integers convert
 * exactly as Python's float() does (both round to nearest), others through strtod (correctly
 * rounded, as orjson); anything strtod reports out of range declines. */
static int time_value(Cur *c, Record *r, int slot)
{
    const char *s;
    size_t n;
    int integer, rc;
    char b = *c->p, tok[TOKEN_MAX];
    if (!(b == '-' || (b >= '0' && b <= '9')))
        return skip_value(c, 1);
    if ((rc = number(c, &s, &n, &integer)) != OK)
        return rc;
    double d;
    int64_t v;
    if (integer) {
        if (!to_i64(s, n, &v))
            DECLINE(c, "a time beyond int64");
        d = (double)v;
    } else if (!exact_decimal(s, n, &d)) {
        char *stop;
        if (n >= TOKEN_MAX)
            DECLINE(c, "a time written with too many digits");
        memcpy(tok, s, n);
        tok[n] = '\0';
        errno = 0;
        d = strtod(tok, &stop);
        if (errno != 0 || stop != tok + n)
            DECLINE(c, "a time strtod does not read exactly");
    }
    if (d < 1e300 && d > -1e300) {
        uint64_t bits;
        memcpy(&bits, &d, sizeof bits);
        set(r, slot, bits);
    }
    return OK;
}

typedef struct {
    const char *key;
    size_t len;
    int slot;
    int (*read)(Cur *, Record *, int);
} Key;

static int args(Cur *c, Record *r, int slot);

/* The keys read, at the top of a record and in its args; any other key is skipped. */
#define K(s) s, sizeof(s) - 1
static const Key TOP[] = {
    {K("ph"), PH, text},          {K("cat"), CAT, text},        {K("name"), NAME, text},
    {K("pid"), PID, id},          {K("tid"), TID, id},          {K("ts"), TS, time_value},
    {K("dur"), DUR, time_value},  {K("id"), FLOW, id},          {K("args"), -1, args},
    {NULL, 0, 0, NULL},
};
static const Key ARGS[] = {
    {K("device"), DEVICE, id},         {K("stream"), STREAM, id},
    {K("stream_id"), STREAM_ID, id},   {K("External id"), EXT, id},
    {K("external id"), EXT2, id},      {K("correlation"), CORR, id},
    {K("nrt_sequence_id"), SEQ, id},   {K("exec_id"), EXEC, id},
    {K("wait_on_stream"), WSTREAM, id},
    {K("wait_on_cuda_event_record_corr_id"), WRECORD, id},
    {NULL, 0, 0, NULL},
};
#undef K

/* Whether the n bytes at a and b are the same: a key is a few bytes, shorter than a call. */
static inline int same(const char *a, const char *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (a[i] != b[i])
            return 0;
    return 1;
}

/* Read the object at c->p, the keys of ``keys`` into r, the rest skipped. ``seen_base`` puts
 * the keys' bits apart in r->seen (top-level keys, then args keys). */
static int object(Cur *c, Record *r, const Key *keys, int seen_base)
{
    int first = 1, rc;
    c->p++;
    for (;;) {
        const char *s;
        size_t n;
        int esc;
        skip_ws(c);
        if (c->p >= c->end)
            return MORE;
        if (*c->p == '}' && first) {
            c->p++;
            return OK;
        }
        if (*c->p != '"')
            DECLINE(c, "invalid JSON: an object key");
        if ((rc = string(c, &s, &n, &esc)) != OK)
            return rc;
        if (esc)
            DECLINE(c, "an escape in a key");
        skip_ws(c);
        if (c->p >= c->end)
            return MORE;
        if (*c->p++ != ':')
            DECLINE(c, "invalid JSON: no colon");
        skip_ws(c);
        if (c->p >= c->end)
            return MORE;
        const Key *k = keys;
        while (k->key && !(k->len == n && same(k->key, s, n)))
            k++;
        if (k->key) {
            uint32_t bit = 1u << (seen_base + (int)(k - keys));
            if (r->seen & bit)
                DECLINE(c, "a key the scanner reads written twice in a record");
            r->seen |= bit;
            /* a metadata record's values but its phase are only checked: it is never a row */
            rc = r->meta && !(keys == TOP && k->slot == PH) ? skip_value(c, 1)
                                                             : k->read(c, r, k->slot);
        } else {
            rc = skip_value(c, 1);
        }
        if (rc != OK)
            return rc;
        skip_ws(c);
        if (c->p >= c->end)
            return MORE;
        if (*c->p == '}') {
            c->p++;
            return OK;
        }
        if (*c->p++ != ',')
            DECLINE(c, "invalid JSON: no comma");
        first = 0;
    }
}

/* A record's args: an object is read, and where it lies kept (ARGS_AT); anything else is as if
 * there were none. */
static int args(Cur *c, Record *r, int slot)
{
    (void)slot;
    if (*c->p != '{')
        return skip_value(c, 1);
    const char *start = c->p;
    int rc = object(c, r, ARGS, 16);
    uint64_t len = (uint64_t)(c->p - start), off = (uint64_t)(start - c->s->buf);
    if (rc == OK && c->s->at >= 0 && len < (1ULL << SPAN_LEN_BITS) &&
        off + (uint64_t)c->s->at < SPAN_OFF_MAX)
        set(r, ARGS_AT, (off + (uint64_t)c->s->at) << SPAN_LEN_BITS | len);
    return rc;
}

/* Append the finished record r as a row: its args' two spellings resolved as collect does. */
static int append(Scanner *s, Record *r)
{
    if (r->meta) {
        s->metadata++;
        return 1;
    }
    if (!(r->seen & (1u << (16 + 1))) && (r->valid & (1u << STREAM_ID))) /* no "stream" key */
        set(r, STREAM, r->v[STREAM_ID]);
    if (!(r->valid & (1u << EXT)) && (r->valid & (1u << EXT2)))
        set(r, EXT, r->v[EXT2]);
    if (!(r->seen & (1u << 6))) /* no "dur": NO_DUR, as collect writes it */
        set(r, DUR, NO_DUR);
    if (s->rows == s->cap) {
        int64_t cap = s->cap ? s->cap * 2 : 4096;
        for (int i = 0; i < NCOL; i++) {
            uint64_t *v = realloc(s->col[i].vals, (size_t)cap * sizeof *v);
            if (v == NULL)
                return 0;
            s->col[i].vals = v;
            uint8_t *b = realloc(s->col[i].bits, (size_t)cap / 8);
            if (b == NULL)
                return 0;
            memset(b + s->cap / 8, 0, (size_t)(cap - s->cap) / 8);
            s->col[i].bits = b;
        }
        s->cap = cap;
    }
    int64_t row = s->rows++;
    for (int i = 0; i < NCOL; i++) {
        Column *col = &s->col[i];
        if (r->valid & (1u << i)) {
            col->vals[row] = r->v[i];
            col->bits[row / 8] |= (uint8_t)(1u << (row % 8));
        } else {
            col->vals[row] = 0;
            col->nulls++;
        }
    }
    return 1;
}

/* Read the array's records in buf[0..n): *used is how far they were read (a record cut by
 * the end is left for the next call); one longer than max_record bytes declines. No Python
 * object is touched. */
static int scan(Scanner *s, const char *buf, size_t n, size_t max_record, size_t *used)
{
    Cur c = {buf, buf + n, s};
    for (;;) {
        skip_ws(&c);
        *used = (size_t)(c.p - buf);
        if (c.p >= c.end || s->state == 3)
            return OK;
        char b = *c.p;
        if (s->state == 1) {
            if (b != ',' && b != ']')
                DECLINE(&c, "invalid JSON: no comma between records");
            c.p++;
            s->state = b == ',' ? 2 : 3;
            continue;
        }
        if (b == ']' && s->state == 0) {
            c.p++;
            s->state = 3;
            continue;
        }
        if (b != '{')
            DECLINE(&c, "a record that is not an object");
        Record r;
        memset(&r, 0, sizeof r);
        const char *start = c.p;
        int rc = object(&c, &r, TOP, 0);
        if (rc == MORE)
            return OK;
        if (rc != OK)
            return rc;
        if ((size_t)(c.p - start) > max_record) /* the polars path words the error */
            DECLINE(&c, "a record longer than the most traceana reads in one");
        if (!append(s, &r))
            return ((s->why = OOM), BAD);
        s->state = 1;
    }
}

/* --- the Python type ------------------------------------------------------------------------ */

/* Make the str of each string interned since the last call. */
static int new_names(Scanner *s)
{
    for (Py_ssize_t i = PyList_GET_SIZE(s->names); (size_t)i < s->n_entries; i++) {
        Entry *e = &s->entries[i];
        PyObject *u = PyUnicode_DecodeUTF8(s->arena + e->off, (Py_ssize_t)e->len, "strict");
        if (u == NULL)
            return 0;
        int failed = PyList_Append(s->names, u);
        Py_DECREF(u);
        if (failed)
            return 0;
    }
    return 1;
}

static PyObject *feed(Scanner *s, PyObject *args)
{
    Py_buffer view;
    Py_ssize_t max_record;
    long long at = -1;
    size_t used = 0;
    int rc;
    if (!PyArg_ParseTuple(args, "y*n|L", &view, &max_record, &at))
        return NULL;
    if (s->busy || max_record < 0) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_RuntimeError, "Scanner.feed: already running, or a negative limit");
        return NULL;
    }
    s->busy = 1;
    s->buf = view.buf;
    s->at = at;
    s->unplaced |= at < 0;
    Py_BEGIN_ALLOW_THREADS
    rc = scan(s, view.buf, (size_t)view.len, (size_t)max_record, &used);
    Py_END_ALLOW_THREADS
    s->busy = 0;
    PyBuffer_Release(&view);
    if (!new_names(s))
        return NULL;
    if (rc != OK) {
        if (s->why == OOM)
            return PyErr_NoMemory();
        PyErr_SetString(Decline, s->why);
        return NULL;
    }
    return Py_BuildValue("(nO)", (Py_ssize_t)used, s->state == 3 ? Py_True : Py_False);
}

/* --- after the scan: the events and the device flows apart, each flow bound to its event --- */

/* What split() is told of each interned string, a byte per index of names() and one for a null
 * after them: as a phase, as a category (kineto.py's NOT_EVENTS and DEVICE_FLOWS), and the
 * rank of a flow's preference for an event of that category (lower first). */
enum { K_X = 1, K_SF = 2, K_BE = 4, K_NOT_EVENT = 8, K_DEVICE_FLOW = 16 };
#define K_RANK(k) ((uint64_t)(((k) >> 5) & 3))
#define ROW_MASK ((1ULL << 48) - 1) /* a bound value: (rank << 48 | row) + 1 */
enum { R_SKIPPED, R_EVENT, R_FLOW }; /* what a row is to split() */

static int valid_at(const Column *col, int64_t row)
{
    return (col->bits[row / 8] >> (row % 8)) & 1;
}

static void set_valid(Column *col, int64_t row, int ok)
{
    uint8_t bit = (uint8_t)(1u << (row % 8));
    col->bits[row / 8] = ok ? (uint8_t)(col->bits[row / 8] | bit)
                            : (uint8_t)(col->bits[row / 8] & ~bit);
    col->nulls += !ok;
}

/* A time's µs (a double's bits) as int64 ns after base, as kineto._ns computes it: whole µs and
 * the fraction apart (rounded half to even, as polars rounds), int64 sums wrapping as polars'
 * do; 0 (null) where the time is not finite or the ns fall outside int64. */
static int to_ns(uint64_t bits, int64_t base, int64_t *ns)
{
    double us, whole;
    memcpy(&us, &bits, sizeof us);
    double approx = us * 1000.0 + (double)base;
    if (!isfinite(us) || !(approx > -9.2e18 && approx < 9.2e18))
        return 0;
    whole = floor(us);
    int64_t frac = (int64_t)rint((us - whole) * 1000.0);
    *ns = (int64_t)((uint64_t)(int64_t)whole * 1000u + (uint64_t)frac + (uint64_t)base);
    return 1;
}

typedef struct { /* a device flow record */
    int64_t pid, tid, ns, id;
    uint64_t ph;
    size_t point;    /* its point's slot (split) */
    int ok, id_ok;   /* pid, tid and ns all valid (it can bind); its id valid */
} Flow;

typedef struct { /* a slot of a Map: its key, and a value (USED set once claimed) */
    uint64_t k[3], v;
} Slot;
#define USED (1ULL << 63)

typedef struct {
    Slot *slot;
    size_t mask;
} Map;

/* A map of room for n keys (open addressing, never more than half full); 0 when out of memory. */
static int map_new(Map *m, size_t n)
{
    size_t cap = 16;
    while (cap < 2 * n + 2)
        cap *= 2;
    m->slot = calloc(cap, sizeof(Slot));
    m->mask = cap - 1;
    return m->slot != NULL;
}

/* Where key (a, b, c) is looked for first. */
static size_t map_home(const Map *m, uint64_t a, uint64_t b, uint64_t c)
{
    uint64_t h = (a * 0x9E3779B97F4A7C15ULL) ^ (b * 0xC2B2AE3D27D4EB4FULL) ^ c;
    h = (h ^ (h >> 31)) * 0x94D049BB133111EBULL;
    return (size_t)(h ^ (h >> 29)) & m->mask;
}

/* The slot of key (a, b, c) looked for from i (its home), claimed (v USED) when new unless
 * ``find`` (then NULL). */
static Slot *map_at(Map *m, size_t i, uint64_t a, uint64_t b, uint64_t c, int find)
{
    for (;; i = (i + 1) & m->mask) {
        Slot *sl = &m->slot[i];
        if (!sl->v) {
            if (find)
                return NULL;
            *sl = (Slot){{a, b, c}, USED};
            return sl;
        }
        if (sl->k[0] == a && sl->k[1] == b && sl->k[2] == c)
            return sl;
    }
}

/* The tables are larger than the caches: each lookup's slot is fetched this many ahead. */
#define AHEAD 16

typedef struct { /* one flow id bound to one event row */
    int64_t row, id;
    int id_ok;
} Pair;

static int pair_order(const void *x, const void *y)
{
    const Pair *a = x, *b = y;
    if (a->row != b->row)
        return a->row < b->row ? -1 : 1;
    if (a->id_ok != b->id_ok) /* a null id first, as polars sorts */
        return a->id_ok < b->id_ok ? -1 : 1;
    return a->id_ok && a->id != b->id ? (a->id < b->id ? -1 : 1) : 0;
}

static const char *const COLUMN_SPLIT[NCOL] = {
    "ph",      "category", "name",   "pid",         "tid",         "start_ns", "duration_ns",
    "flow_id", "device",   "stream", "external_id", "correlation", "seq_id",   "exec_id",
    "wait_stream", "wait_record", "args_at",
};

/* The kind of row's phase or category: kinds holds one byte per name, then the null's. */
#define KIND_OF(s, kinds, c, row)                                                             \
    (kinds)[valid_at(&(s)->col[c], row) ? (s)->col[c].vals[row] : (s)->n_entries]

static PyObject *survey(Scanner *s, PyObject *args)
{
    Py_buffer view;
    int paired = 0;
    PyObject *first = NULL;
    if (!PyArg_ParseTuple(args, "y*", &view))
        return NULL;
    const uint8_t *kinds = view.buf;
    if ((size_t)view.len != s->n_entries + 1 || s->busy || s->split) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "Scanner.survey: a kind for each name, once, at rest");
        return NULL;
    }
    for (int64_t row = 0; row < s->rows; row++) {
        uint8_t ph = KIND_OF(s, kinds, PH, row);
        paired |= (ph & K_BE) != 0;
        if (first == NULL && (ph & K_X)) {
            double ts;
            memcpy(&ts, &s->col[TS].vals[row], sizeof ts);
            first = valid_at(&s->col[TS], row) ? PyFloat_FromDouble(ts) : Py_NewRef(Py_None);
            if (first == NULL) {
                PyBuffer_Release(&view);
                return NULL;
            }
        }
    }
    PyBuffer_Release(&view);
    PyObject *out = Py_BuildValue("(ON)", paired ? Py_True : Py_False,
                                  first != NULL ? first : Py_NewRef(Py_None));
    return out;
}

/* Keep the event rows (compacted in place, ts and dur as ns), bind the device flows; the rest
 * counted. The Pairs out, sorted and unique, in *pairs; 0 when out of memory. */
static int split_rows(Scanner *s, const uint8_t *kinds, int64_t base, Map *skipped,
                      Pair **pairs, int64_t *n_pairs, int64_t *distinct, int64_t *bound)
{
    int64_t n = s->rows, events = 0, n_flows = 0, n_skipped = 0;
    uint8_t *cls = malloc((size_t)n + 1);
    Flow *flows = NULL;
    Map points = {NULL, 0}, keys = {NULL, 0};
    int64_t *at = NULL;
    int ok = 0;
    if (cls == NULL)
        return 0;
    for (int64_t row = 0; row < n; row++) {
        uint8_t ph = KIND_OF(s, kinds, PH, row), cat = KIND_OF(s, kinds, CAT, row);
        cls[row] = (ph & K_X) && !(cat & K_NOT_EVENT)       ? R_EVENT
                   : (ph & K_SF) && (cat & K_DEVICE_FLOW) ? R_FLOW
                                                          : R_SKIPPED;
        n_flows += cls[row] == R_FLOW;
        n_skipped += cls[row] == R_SKIPPED;
    }
    if (!map_new(skipped, (size_t)n_skipped) ||
        (flows = malloc(sizeof(Flow) * (size_t)(n_flows + 1))) == NULL)
        goto done;
    n_flows = 0;
    for (int i = 0; i < NCOL; i++)
        s->col[i].nulls = 0;
    for (int64_t row = 0; row < n; row++) {
        Column *c = s->col;
        if (cls[row] == R_SKIPPED) {
            uint64_t ph = valid_at(&c[PH], row) ? c[PH].vals[row] + 1 : 0;
            uint64_t cat = valid_at(&c[CAT], row) ? c[CAT].vals[row] + 1 : 0;
            map_at(skipped, map_home(skipped, ph, cat, 0), ph, cat, 0, 0)->v++; /* a count */
        } else if (cls[row] == R_FLOW) {
            Flow *f = &flows[n_flows++];
            *f = (Flow){c[PID].vals[row], c[TID].vals[row], 0, c[FLOW].vals[row],
                        c[PH].vals[row], 0, 0, valid_at(&c[FLOW], row)};
            f->ok = valid_at(&c[PID], row) && valid_at(&c[TID], row) &&
                    valid_at(&c[TS], row) && to_ns(c[TS].vals[row], base, &f->ns);
        } else { /* an event: row moves up to events (rows before it are done with) */
            int64_t to = events++;
            for (int i = 0; i < NCOL; i++) {
                int valid = valid_at(&c[i], row);
                uint64_t v = c[i].vals[row];
                if (valid && i == DUR && v == NO_DUR) {
                    s->no_dur++; /* read as 0 ns, and counted */
                    v = 0;
                } else if (valid && (i == TS || i == DUR)) {
                    int64_t ns;
                    valid = to_ns(v, i == TS ? base : 0, &ns);
                    v = valid ? (uint64_t)ns : 0;
                }
                c[i].vals[to] = valid ? v : 0;
                set_valid(&c[i], to, valid);
            }
        }
    }
    s->rows = events;
    /* each flow's (pid, tid, ns) point, then its preferred event: the lowest (rank, row) */
    if (!map_new(&points, (size_t)n_flows) || !map_new(&keys, (size_t)n_flows))
        goto done;
    for (int64_t i = 0; i < n_flows; i++) {
        Flow *f = &flows[i];
        if (i + AHEAD < n_flows && flows[i + AHEAD].ok) {
            Flow *g = &flows[i + AHEAD];
            __builtin_prefetch(&points.slot[map_home(&points, (uint64_t)g->pid, (uint64_t)g->tid,
                                                     (uint64_t)g->ns)]);
        }
        if (f->ok) {
            uint64_t pid = (uint64_t)f->pid, tid = (uint64_t)f->tid, ns = (uint64_t)f->ns;
            f->point = (size_t)(map_at(&points, map_home(&points, pid, tid, ns), pid, tid, ns,
                                       0) - points.slot);
        }
    }
    Column *c = s->col;
    for (int64_t row = 0; row < events; row++) {
        int64_t next = row + AHEAD;
        if (next < events)
            __builtin_prefetch(&points.slot[map_home(&points, c[PID].vals[next],
                                                     c[TID].vals[next], c[TS].vals[next])]);
        if (!valid_at(&c[PID], row) || !valid_at(&c[TID], row) || !valid_at(&c[TS], row))
            continue;
        uint64_t pid = c[PID].vals[row], tid = c[TID].vals[row], ns = c[TS].vals[row];
        Slot *sl = map_at(&points, map_home(&points, pid, tid, ns), pid, tid, ns, 1);
        uint64_t best = (K_RANK(KIND_OF(s, kinds, CAT, row)) << 48 | (uint64_t)row) + 1;
        if (sl != NULL && (sl->v == USED || (best | USED) < sl->v))
            sl->v = best | USED;
    }
    /* each (flow id, phase): the preferred event of its records' points */
    for (int64_t i = 0; i < n_flows; i++) {
        Flow *f = &flows[i];
        if (i + AHEAD < n_flows) {
            Flow *g = &flows[i + AHEAD];
            __builtin_prefetch(&keys.slot[map_home(&keys, (uint64_t)g->id_ok,
                                                   g->id_ok ? (uint64_t)g->id : 0, g->ph)]);
        }
        uint64_t ok = (uint64_t)f->id_ok, id = f->id_ok ? (uint64_t)f->id : 0;
        Slot *key = map_at(&keys, map_home(&keys, ok, id, f->ph), ok, id, f->ph, 0);
        uint64_t best = f->ok ? points.slot[f->point].v : USED;
        if (best != USED && (key->v == USED || best < key->v))
            key->v = best;
    }
    /* the bound keys as pairs, in row order (a count of each row's, then each put in place),
     * each row's few sorted by id, then those twice (a flow's start and end on one event) once */
    *distinct = *bound = 0;
    *pairs = malloc(sizeof(Pair) * (size_t)(n_flows + 1));
    at = calloc((size_t)events + 1, sizeof *at);
    if (*pairs == NULL || at == NULL)
        goto done;
    for (size_t i = 0; i <= keys.mask; i++) {
        uint64_t v = keys.slot[i].v;
        *distinct += v != 0;
        *bound += v > USED;
        if (v > USED)
            at[(v - 1) & ROW_MASK]++;
    }
    for (int64_t row = 0, sum = 0; row <= events; row++) { /* at[row]: where row's pairs end */
        sum += at[row];
        at[row] = sum;
    }
    for (size_t i = 0; i <= keys.mask; i++) {
        Slot *key = &keys.slot[i];
        if (key->v > USED) {
            int64_t row = (int64_t)((key->v - 1) & ROW_MASK);
            (*pairs)[--at[row]] = (Pair){row, (int64_t)key->k[1], (int)key->k[0]};
        }
    }
    *n_pairs = 0;
    for (int64_t row = 0; row < events; row++) {
        int64_t from = at[row], to = at[row + 1];
        for (int64_t i = from + 1; i < to; i++) /* insertion sort: a row has one or two */
            for (int64_t j = i; j > from && pair_order(&(*pairs)[j - 1], &(*pairs)[j]) > 0; j--) {
                Pair t = (*pairs)[j];
                (*pairs)[j] = (*pairs)[j - 1];
                (*pairs)[j - 1] = t;
            }
        for (int64_t i = from; i < to; i++)
            if (*n_pairs == 0 || pair_order(&(*pairs)[*n_pairs - 1], &(*pairs)[i]) != 0)
                (*pairs)[(*n_pairs)++] = (*pairs)[i];
    }
    ok = 1;
done:
    free(at);
    free(cls);
    free(flows);
    free(points.slot);
    free(keys.slot);
    return ok;
}

/* --- out, through Arrow's C data interface (_arrow.h) ------------------------------------- */

static const char *const FORMAT[NCOL] = {"l", "l", "l", "l", "l", "g", "g", "l", "l",
                                         "l", "l", "l", "l", "l", "l", "l", "l"};
static const char *const FORMAT_SPLIT[NCOL] = {"l", "l", "l", "l", "l", "l", "l", "l", "l",
                                               "l", "l", "l", "l", "l", "l", "l", "l"};

static PyObject *arrow_c_array(Scanner *s, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"requested_schema", NULL};
    PyObject *requested = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|O", kwlist, &requested))
        return NULL;
    if (s->busy) {
        PyErr_SetString(PyExc_RuntimeError, "Scanner.feed is running");
        return NULL;
    }
    /* the columns leave no larger than their rows: they grew by doubling, and split() keeps
     * the events alone (two thirds of the rows), so up to two thirds of them would go unused
     * for as long as the events table lives */
    for (int i = 0; i < NCOL && s->rows < s->cap; i++) {
        uint64_t *v = realloc(s->col[i].vals, (size_t)(s->rows + 1) * sizeof *v);
        uint8_t *b = realloc(s->col[i].bits, (size_t)s->rows / 8 + 1);
        s->col[i].vals = v != NULL ? v : s->col[i].vals;
        s->col[i].bits = b != NULL ? b : s->col[i].bits;
    }
    PyObject *pair = arrow_export(s->col, NCOL, s->rows, s->split ? COLUMN_SPLIT : COLUMN,
                                  s->split ? FORMAT_SPLIT : FORMAT);
    if (pair != NULL)
        s->rows = s->cap = 0; /* the rows left with their buffers */
    return pair;
}

/* The flow_ids column, each event's bound flow ids (null where none), out through Arrow as a
 * struct of one large-list column of int64 (Arrow's nesting, below: each level releases its
 * own buffers and what it still holds of the level under it). */
typedef struct {
    struct ArrowArray child, *children[1];
    const void *buffers[2];
} Level;

static void release_level(struct ArrowArray *x)
{
    Level *l = x->private_data;
    if (x->n_children && l->child.release)
        l->child.release(&l->child);
    for (int64_t i = 0; i < x->n_buffers; i++)
        free((void *)l->buffers[i]);
    free(l);
    x->release = NULL;
}

/* Make x an array of length n, its buffers bufs (nb of them, taken), with child (taken) when
 * not NULL; 0 when out of memory (nothing taken). */
static int level(struct ArrowArray *x, int64_t n, int64_t nulls, const void *b0, const void *b1,
                 int nb, struct ArrowArray *child)
{
    Level *l = calloc(1, sizeof *l);
    if (l == NULL)
        return 0;
    l->buffers[0] = b0;
    l->buffers[1] = b1;
    if (child != NULL) {
        l->child = *child;
        l->children[0] = &l->child;
    }
    *x = (struct ArrowArray){.length = n, .null_count = nulls, .n_buffers = nb,
                             .buffers = l->buffers, .n_children = child != NULL,
                             .children = child != NULL ? l->children : NULL,
                             .release = release_level, .private_data = l};
    return 1;
}

static PyObject *flow_ids_out(const Pair *pairs, int64_t n, int64_t events)
{
    static const char *const names[] = {"flow_ids", "item"}, *const formats[] = {"+L", "l"};
    uint8_t *id_bits = calloc((size_t)n / 8 + 1, 1), *list_bits = calloc((size_t)events / 8 + 1, 1);
    uint64_t *ids = malloc(sizeof(uint64_t) * (size_t)(n + 1));
    int64_t *offsets = malloc(sizeof(int64_t) * (size_t)(events + 1)), id_nulls = 0, empty = 0;
    struct ArrowArray values, list, *top = calloc(1, sizeof *top);
    int made = 0;
    if (id_bits == NULL || list_bits == NULL || ids == NULL || offsets == NULL || top == NULL)
        goto fail;
    for (int64_t i = 0, row = 0; row <= events; row++) {
        offsets[row] = i;
        while (row < events && i < n && pairs[i].row == row) {
            ids[i] = pairs[i].id_ok ? (uint64_t)pairs[i].id : 0;
            id_bits[i / 8] |= (uint8_t)(pairs[i].id_ok << (i % 8));
            id_nulls += !pairs[i].id_ok;
            i++;
        }
        if (row < events && i > offsets[row])
            list_bits[row / 8] |= (uint8_t)(1u << (row % 8));
        else if (row < events)
            empty++;
    }
    if (!level(&values, n, id_nulls, id_bits, ids, 2, NULL))
        goto fail;
    made = 1;
    if (!level(&list, events, empty, list_bits, offsets, 2, &values))
        goto fail;
    made = 2;
    if (!level(top, events, 0, NULL, NULL, 1, &list))
        goto fail;
    struct ArrowSchema *schema = arrow_schema(1, names, formats);
    if (schema == NULL) {
        top->release(top);
        free(top);
        return PyErr_NoMemory();
    }
    /* the list's one child: the schema of its items */
    SchemaData *d = schema->private_data;
    d->schema[1] = (struct ArrowSchema){.format = formats[1], .name = names[1], .flags = 2,
                                        .release = release_child_schema};
    d->schemas[1] = &d->schema[1];
    d->schema[0].n_children = 1;
    d->schema[0].children = &d->schemas[1];
    PyObject *sc = PyCapsule_New(schema, "arrow_schema", schema_capsule_free);
    PyObject *ac = PyCapsule_New(top, "arrow_array", array_capsule_free);
    PyObject *pair = sc && ac ? PyTuple_Pack(2, sc, ac) : NULL;
    if (sc == NULL) {
        schema->release(schema);
        free(schema);
    }
    if (ac == NULL) {
        top->release(top);
        free(top);
    }
    Py_XDECREF(sc);
    Py_XDECREF(ac);
    return pair;
fail:
    if (made == 2)
        list.release(&list);
    else if (made == 1)
        values.release(&values);
    else {
        free(id_bits);
        free(ids);
    }
    if (made < 2) {
        free(list_bits);
        free(offsets);
    }
    free(top);
    return PyErr_NoMemory();
}

static PyObject *split(Scanner *s, PyObject *args)
{
    Py_buffer view;
    long long base;
    Map skipped = {NULL, 0};
    Pair *pairs = NULL;
    int64_t n_pairs = 0, distinct = 0, bound = 0;
    if (!PyArg_ParseTuple(args, "y*L", &view, &base))
        return NULL;
    if ((size_t)view.len != s->n_entries + 1 || s->busy || s->split) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "Scanner.split: a kind for each name, once, at rest");
        return NULL;
    }
    s->split = 1;
    int ok = split_rows(s, view.buf, (int64_t)base, &skipped, &pairs, &n_pairs, &distinct, &bound);
    PyBuffer_Release(&view);
    PyObject *counts = ok ? PyList_New(0) : NULL, *out = NULL;
    for (size_t i = 0; counts != NULL && i <= skipped.mask; i++) {
        Slot *sl = &skipped.slot[i];
        if (!sl->v)
            continue;
        PyObject *ph = sl->k[0] ? PyLong_FromUnsignedLongLong(sl->k[0] - 1) : Py_NewRef(Py_None);
        PyObject *cat = sl->k[1] ? PyLong_FromUnsignedLongLong(sl->k[1] - 1) : Py_NewRef(Py_None);
        PyObject *t = ph && cat ? Py_BuildValue("(OOK)", ph, cat, (unsigned long long)(sl->v & ~USED)) : NULL;
        Py_XDECREF(ph);
        Py_XDECREF(cat);
        if (t == NULL || PyList_Append(counts, t) < 0)
            Py_CLEAR(counts);
        Py_XDECREF(t);
    }
    PyObject *bound_pairs = counts != NULL ? flow_ids_out(pairs, n_pairs, s->rows) : NULL;
    if (bound_pairs != NULL)
        out = Py_BuildValue("(NLLNL)", counts, (long long)distinct, (long long)bound, bound_pairs,
                            (long long)s->no_dur);
    else
        Py_XDECREF(counts);
    free(skipped.slot);
    free(pairs);
#ifdef __GLIBC__
    /* split's tables (tens of MB) are freed, but glibc keeps what it took from the heap once
     * a freed block has raised its mmap threshold (the file's blocks do): give it back */
    malloc_trim(0);
#endif
    if (!ok && !PyErr_Occurred())
        PyErr_NoMemory();
    return out;
}

static PyObject *names(Scanner *s, PyObject *unused)
{
    (void)unused;
    return PyList_GetSlice(s->names, 0, PyList_GET_SIZE(s->names));
}

static PyObject *counts(Scanner *s, PyObject *unused)
{
    (void)unused;
    return Py_BuildValue("(LL)", (long long)s->rows, (long long)s->metadata);
}

static PyObject *placed(Scanner *s, PyObject *unused)
{
    (void)unused;
    return PyBool_FromLong(!s->unplaced);
}

static PyObject *scanner_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    (void)args;
    (void)kw;
    Scanner *s = (Scanner *)type->tp_alloc(type, 0); /* zeroed */
    if (s == NULL)
        return NULL;
    s->names = PyList_New(0);
    if (s->names == NULL) {
        Py_DECREF(s);
        return NULL;
    }
    return (PyObject *)s;
}

static void scanner_dealloc(Scanner *s)
{
    for (int i = 0; i < NCOL; i++) {
        free(s->col[i].vals);
        free(s->col[i].bits);
    }
    free(s->arena);
    free(s->entries);
    free(s->table);
    free(s->scratch);
    Py_XDECREF(s->names);
    Py_TYPE(s)->tp_free((PyObject *)s);
}

static PyMethodDef scanner_methods[] = {
    {"feed", (PyCFunction)feed, METH_VARARGS,
     "feed(text, max_record, at=-1) -> (used, done): read the whole records of text; Decline "
     "when it cannot, or one is longer than max_record bytes. at: text's offset in the file "
     "(each record's args_at is where its args lie in it; -1: not known, args_at null)."},
    {"__arrow_c_array__", (PyCFunction)(void (*)(void))arrow_c_array,
     METH_VARARGS | METH_KEYWORDS, "The rows read, as an Arrow struct array (taken out)."},
    {"survey", (PyCFunction)survey, METH_VARARGS,
     "survey(kinds) -> (paired, first_ts): whether a row is a B or E record, and the ts of the "
     "first X record (None where none); kinds: a byte per name, as split() takes."},
    {"split", (PyCFunction)split, METH_VARARGS,
     "split(kinds, base) -> (skipped, keys, bound, flow_ids, no_dur): keep the events alone, "
     "times as ns after base; bind each device flow (flow id, phase) to its event. skipped: "
     "(ph, cat, n) by name index (None: null); keys: the flows' (id, phase) keys, bound: those "
     "bound; flow_ids: each event's bound ids, sorted and unique (null: none), as an Arrow "
     "capsule pair (a struct of one list column); no_dur: the events of X records without "
     "dur, read as 0 ns."},
    {"names", (PyCFunction)names, METH_NOARGS, "The interned strings, by index."},
    {"placed", (PyCFunction)placed, METH_NOARGS,
     "Whether every feed was given its text's offset: args_at is where each record's args lie."},
    {"counts", (PyCFunction)counts, METH_NOARGS,
     "(rows, metadata): the rows kept so far, and the metadata records counted."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject ScannerType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "trace_analyzer.readers._kscan.Scanner",
    .tp_basicsize = sizeof(Scanner),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The records of a traceEvents array, fed block by block, as columns.",
    .tp_new = scanner_new,
    .tp_dealloc = (destructor)scanner_dealloc,
    .tp_methods = scanner_methods,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_kscan", "The compiled Kineto scanner (kineto_native.py).", -1,
    NULL, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__kscan(void)
{
    if (PyType_Ready(&ScannerType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    Decline = PyErr_NewException("trace_analyzer.readers._kscan.Decline", NULL, NULL);
    if (Decline == NULL || PyModule_AddObjectRef(m, "Decline", Decline) < 0 ||
        PyModule_AddObjectRef(m, "Scanner", (PyObject *)&ScannerType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
