/* The link keys of an Explorer export's rows, lifted from extra_attributes_json in one pass
 * over the text (explorer_keys.py has the rules and the polars path this must equal).
 *
 * lift(stream, keys) takes the column as an Arrow C stream (polars' Series.__arrow_c_stream__:
 * string views, "vu", or "u"/"U" strings) and the key names, and returns an object whose
 * __arrow_c_array__ is a struct of one int64 column per key and a last one, "_parse": 1 where
 * the row must be read by the polars path instead. A row's key is read here only where the
 * polars path's literal scan would read it: the row is plain (it starts with "{", ends with
 * "}", holds no other brace and no backslash), the quoted key is written once, and is followed
 * by ASCII white space, ":", white space, an integer that fits int64, white space and "," or
 * "}". A row that names no key and holds no "\u" has none. Every other row (a value that is a
 * string or a float, a key written twice, nesting, escapes, a non-ASCII character where white
 * space may be: the regex's \s is Unicode's) is left to the polars path: leaving a row is
 * always right; reading one differently never is.
 *
 * The scan touches no Python object, so it runs without the GIL.
 */
#include "_arrow.h"
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#define MAX_KEYS 8
#define KEY_MAX 64

typedef struct {
    PyObject_HEAD
    Column col[MAX_KEYS + 1];
    const char *names[MAX_KEYS + 1];
    const char *formats[MAX_KEYS + 1];
    char name_bytes[MAX_KEYS + 1][KEY_MAX + 2];
    int ncol;
    int64_t rows;
} Lifted;

typedef struct {
    const char *text[MAX_KEYS]; /* the key, and "\"key\"" */
    size_t len[MAX_KEYS];
    const char *quoted[MAX_KEYS];
    size_t qlen[MAX_KEYS];
    char quoted_bytes[MAX_KEYS][KEY_MAX + 3];
#ifdef __SSE2__
    __m128i first[MAX_KEYS], second[MAX_KEYS]; /* each key's first two bytes, in every lane */
#endif
    int n;
} Keys;

static int is_ws(unsigned char b) { return b == ' ' || (b >= '\t' && b <= '\r'); }

/* The integer a plain row writes after the key's closing quote at p, as the literal scan's
 * regex reads it; 0 when it does not, or when it is past int64 (both left to polars). */
static int value_after(const char *p, const char *end, int64_t *out)
{
    while (p < end && is_ws((unsigned char)*p))
        p++;
    if (p >= end || *p != ':')
        return 0;
    p++;
    while (p < end && is_ws((unsigned char)*p))
        p++;
    int neg = p < end && *p == '-';
    p += neg;
    const char *digits = p;
    while (p < end && *p >= '0' && *p <= '9')
        p++;
    if (p == digits)
        return 0;
    uint64_t v = 0, limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    int checked = p - digits > 18; /* 18 digits never overflow 64 bits; more may */
    for (const char *d = digits; d < p; d++) {
        uint64_t digit = (uint64_t)(*d - '0');
        if (!checked)
            v = v * 10 + digit;
        else if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, digit, &v))
            return 0;
    }
    if (v > limit)
        return 0;
    while (p < end && is_ws((unsigned char)*p))
        p++;
    if (p >= end || (*p != ',' && *p != '}'))
        return 0;
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return 1;
}

static void set_bit(uint8_t *bits, int64_t i) { bits[i >> 3] |= (uint8_t)(1u << (i & 7)); }

/* What the scan of a row finds: whether it holds a stray byte (a brace but its first and
 * last byte, or a backslash: then it is not plain), and each key written in quotes: how often
 * (as count_matches counts, not overlapping) and where its first ends. */
typedef struct {
    int stray;
    int count[MAX_KEYS];
    const unsigned char *after[MAX_KEYS]; /* past the closing quote of the key's first */
    const unsigned char *skip;            /* past the last key read: a quote before it is
                                             that key's own */
} Scan;

/* A quote at q - 1: count the key it opens, if any. */
static void key_at(const Keys *keys, Scan *sc, const unsigned char *q, const unsigned char *end)
{
    if (q - 1 < sc->skip)
        return;
    for (int k = 0; k < keys->n; k++) {
        size_t len = keys->len[k];
        if ((size_t)(end - q) > len && q[len] == '"' && q[0] == (unsigned char)keys->text[k][0] &&
            memcmp(q, keys->text[k], len) == 0) {
            if (sc->count[k]++ == 0)
                sc->after[k] = q + len + 1;
            sc->skip = q + len + 1; /* its closing quote opens nothing */
            return;
        }
    }
}

/* The bytes of a 16-byte block at q that may open a key: a quote followed by the first two
 * bytes of one (a bit per byte); a brace or backslash in it is stray (the row's first byte
 * is left out by keep, its last is never in a block). */
#ifdef __SSE2__
static unsigned block(const Keys *keys, Scan *sc, const unsigned char *q, unsigned keep)
{
    __m128i x = _mm_loadu_si128((const __m128i *)q);
    __m128i y = _mm_loadu_si128((const __m128i *)(q + 1));
    __m128i z = _mm_loadu_si128((const __m128i *)(q + 2));
    __m128i brace = _mm_or_si128(_mm_cmpeq_epi8(x, _mm_set1_epi8('{')),
                                 _mm_cmpeq_epi8(x, _mm_set1_epi8('}')));
    __m128i stray = _mm_or_si128(brace, _mm_cmpeq_epi8(x, _mm_set1_epi8('\\')));
    sc->stray |= ((unsigned)_mm_movemask_epi8(stray) & keep) != 0;
    __m128i two = _mm_setzero_si128();
    for (int k = 0; k < keys->n; k++)
        two = _mm_or_si128(two, _mm_and_si128(_mm_cmpeq_epi8(y, keys->first[k]),
                                              _mm_cmpeq_epi8(z, keys->second[k])));
    __m128i quote = _mm_cmpeq_epi8(x, _mm_set1_epi8('"'));
    return (unsigned)_mm_movemask_epi8(_mm_and_si128(quote, two)) & keep;
}
#endif

/* Scan one row's bytes: 16 at a time where SSE2 is (every x86-64), the last block overlapping
 * the one before it; a row shorter than a block one byte at a time. */
static void scan_row(const Keys *keys, Scan *sc, const unsigned char *q, const unsigned char *end)
{
    const unsigned char *start = q;
    sc->skip = q;
#ifdef __SSE2__
    if (end - q >= 18) { /* a block reads 18 bytes: the 16 and the two after each quote */
        const unsigned char *last = end - 18;
        for (;;) {
            int final = q >= last;
            unsigned keep = q == start ? 0xFFFE : 0xFFFF;
            if (final) { /* the bytes before q were scanned already */
                keep = 0xFFFFu & ~((1u << (unsigned)(q - last)) - 1u);
                q = last;
            }
            unsigned hits = block(keys, sc, q, keep);
            while (hits) {
                key_at(keys, sc, q + __builtin_ctz(hits) + 1, end);
                hits &= hits - 1;
            }
            if (final)
                break;
            q += 16;
        }
        q = end - 2; /* the last two bytes: counted below; no key opens there */
    }
#endif
    for (; q < end; q++) {
        unsigned char b = *q;
        sc->stray |= (b == '{' && q != start) || (b == '}' && q != end - 1) || b == '\\';
        if (b == '"')
            key_at(keys, sc, q + 1, end);
    }
}

/* Whether a row that is not plain may hold a key: it names one, or holds a \u escape (a key
 * may be spelled with one). */
static int may_hold(const Keys *keys, const char *p, size_t n)
{
    if (memmem(p, n, "\\u", 2) != NULL)
        return 1;
    for (int k = 0; k < keys->n; k++)
        if (memmem(p, n, keys->text[k], keys->len[k]) != NULL)
            return 1;
    return 0;
}

/* Read one row (NULL: a null row) into row i of the columns. */
static void lift_row(Lifted *out, const Keys *keys, int64_t i, const char *p, size_t n)
{
    if (p == NULL)
        return; /* every key null, and nothing for polars */
    Scan sc;
    sc.stray = 0;
    memset(sc.count, 0, sizeof sc.count);
    scan_row(keys, &sc, (const unsigned char *)p, (const unsigned char *)p + n);
    int plain = n >= 2 && p[0] == '{' && p[n - 1] == '}' && !sc.stray;
    int left = !plain && may_hold(keys, p, n);
    int64_t v[MAX_KEYS];
    for (int k = 0; k < keys->n && plain && !left; k++)
        left = sc.count[k] > 1 ||
               (sc.count[k] == 1 && !value_after((const char *)sc.after[k], p + n, &v[k]));
    if (left) {
        out->col[keys->n].vals[i] = 1; /* polars decides the row */
        return;
    }
    for (int k = 0; k < keys->n && plain; k++) /* a plain row that never writes the quoted
                                                    key has none */
        if (sc.count[k] == 1) {
            out->col[k].vals[i] = (uint64_t)v[k];
            set_bit(out->col[k].bits, i);
        }
}

/* How many of rows bits are clear. */
static int64_t clear_count(const uint8_t *bits, int64_t rows)
{
    int64_t set = 0;
    for (int64_t i = 0; i < rows / 8; i++)
        set += __builtin_popcount(bits[i]);
    for (int64_t i = rows / 8 * 8; i < rows; i++)
        set += bits[i >> 3] >> (i & 7) & 1;
    return rows - set;
}

/* The bytes of row j of a string array (view: 1 string views, 4 "u" strings, 8 "U" large
 * strings); NULL for a null row. */
static const char *row_text(const struct ArrowArray *a, char view, int64_t j, size_t *n)
{
    int64_t at = a->offset + j;
    const uint8_t *valid = a->buffers[0];
    if (valid != NULL && !(valid[at >> 3] >> (at & 7) & 1))
        return NULL;
    if (view == 1) {
        const uint8_t *v = (const uint8_t *)a->buffers[1] + 16 * at;
        int32_t len, buf, off;
        memcpy(&len, v, 4);
        *n = (size_t)len;
        if (len <= 12)
            return (const char *)v + 4;
        memcpy(&buf, v + 8, 4);
        memcpy(&off, v + 12, 4);
        return (const char *)a->buffers[2 + buf] + off;
    }
    int64_t lo, hi;
    if (view == 4) {
        const int32_t *offs = a->buffers[1];
        lo = offs[at], hi = offs[at + 1];
    } else {
        const int64_t *offs = a->buffers[1];
        lo = offs[at], hi = offs[at + 1];
    }
    *n = (size_t)(hi - lo);
    return (const char *)a->buffers[2] + lo;
}

static void clear_bits(uint8_t *bits, int64_t from, int64_t to)
{
    for (; from < to && (from & 7); from++)
        bits[from >> 3] &= (uint8_t)~(1u << (from & 7));
    if (from < to)
        memset(bits + (from >> 3), 0, (size_t)((to - from + 7) / 8));
}

static int grow(Lifted *out, int ncol, int64_t rows)
{
    for (int c = 0; c < ncol; c++) {
        Column *col = &out->col[c];
        uint64_t *vals = realloc(col->vals, (size_t)(rows ? rows : 1) * 8);
        uint8_t *bits = realloc(col->bits, (size_t)((rows + 7) / 8 + 1));
        if (vals != NULL)
            col->vals = vals;
        if (bits != NULL)
            col->bits = bits;
        if (vals == NULL || bits == NULL)
            return 0;
    }
    return 1;
}

static void lifted_dealloc(Lifted *s)
{
    for (int i = 0; i < MAX_KEYS + 1; i++) {
        free(s->col[i].vals);
        free(s->col[i].bits);
    }
    Py_TYPE(s)->tp_free((PyObject *)s);
}

static PyObject *arrow_c_array(Lifted *s, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"requested_schema", NULL};
    PyObject *requested = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|O", kwlist, &requested))
        return NULL;
    PyObject *pair = arrow_export(s->col, s->ncol, s->rows, s->names, s->formats);
    if (pair != NULL)
        s->rows = 0;
    return pair;
}

static PyMethodDef lifted_methods[] = {
    {"__arrow_c_array__", (PyCFunction)(void (*)(void))arrow_c_array,
     METH_VARARGS | METH_KEYWORDS, "The keys and the _parse flags, as an Arrow struct array."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject LiftedType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "trace_analyzer.readers._ekeys.Lifted",
    .tp_basicsize = sizeof(Lifted),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The keys lifted from a column of extra_attributes_json, as columns.",
    .tp_dealloc = (destructor)lifted_dealloc,
    .tp_methods = lifted_methods,
};

static PyObject *lift(PyObject *module, PyObject *args)
{
    (void)module;
    PyObject *cap, *names;
    if (!PyArg_ParseTuple(args, "OO!", &cap, &PyTuple_Type, &names))
        return NULL;
    struct ArrowArrayStream *stream = PyCapsule_GetPointer(cap, "arrow_array_stream");
    if (stream == NULL)
        return NULL;
    Keys keys = {.n = (int)PyTuple_GET_SIZE(names)};
    if (keys.n < 1 || keys.n > MAX_KEYS) {
        PyErr_SetString(PyExc_ValueError, "between 1 and 8 keys");
        return NULL;
    }
    Lifted *out = PyObject_New(Lifted, &LiftedType);
    if (out == NULL)
        return NULL;
    memset((char *)out + sizeof(PyObject), 0, sizeof(Lifted) - sizeof(PyObject));
    out->ncol = keys.n + 1;
    for (int k = 0; k < keys.n; k++) {
        Py_ssize_t len;
        const char *key = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(names, k), &len);
        if (key == NULL || len < 1 || len > KEY_MAX || strlen(key) != (size_t)len ||
            strpbrk(key, "\"{}\\") != NULL) {
            if (key != NULL)
                PyErr_SetString(PyExc_ValueError,
                                "a key of 1 to 64 bytes, without a quote, brace or backslash");
            Py_DECREF(out);
            return NULL;
        }
        memcpy(out->name_bytes[k], key, (size_t)len);
        keys.text[k] = out->name_bytes[k];
        keys.len[k] = (size_t)len;
        keys.quoted_bytes[k][0] = '"';
        memcpy(keys.quoted_bytes[k] + 1, key, (size_t)len);
        keys.quoted_bytes[k][len + 1] = '"';
        keys.quoted[k] = keys.quoted_bytes[k];
        keys.qlen[k] = (size_t)len + 2;
#ifdef __SSE2__
        keys.first[k] = _mm_set1_epi8(key[0]);
        keys.second[k] = _mm_set1_epi8(len > 1 ? key[1] : '"');
#endif
        out->names[k] = out->name_bytes[k];
        out->formats[k] = "l";
    }
    out->names[keys.n] = "_parse";
    out->formats[keys.n] = "l";

    struct ArrowSchema schema = {0};
    if (stream->get_schema(stream, &schema) != 0) {
        PyErr_SetString(PyExc_ValueError, "the stream gives no schema");
        Py_DECREF(out);
        return NULL;
    }
    char view = strcmp(schema.format, "vu") == 0 ? 1
                : strcmp(schema.format, "u") == 0 ? 4
                : strcmp(schema.format, "U") == 0 ? 8
                                                   : 0;
    if (schema.release)
        schema.release(&schema);
    if (view == 0) {
        PyErr_SetString(PyExc_TypeError, "not a string column");
        Py_DECREF(out);
        return NULL;
    }
    const char *error = NULL;
    for (;;) {
        struct ArrowArray chunk = {0};
        if (stream->get_next(stream, &chunk) != 0) {
            error = "the stream failed";
            break;
        }
        if (chunk.release == NULL)
            break; /* the end */
        int64_t base = out->rows, rows = base + chunk.length;
        if (!grow(out, out->ncol, rows)) {
            chunk.release(&chunk);
            Py_DECREF(out);
            return PyErr_NoMemory();
        }
        for (int c = 0; c < out->ncol; c++) {
            memset(out->col[c].vals + base, 0, (size_t)chunk.length * 8);
            clear_bits(out->col[c].bits, base, rows);
        }
        Py_BEGIN_ALLOW_THREADS;
        for (int64_t j = 0; j < chunk.length; j++) {
            size_t n = 0;
            const char *p = row_text(&chunk, view, j, &n);
            lift_row(out, &keys, base + j, p, n);
        }
        Py_END_ALLOW_THREADS;
        out->rows = rows;
        chunk.release(&chunk);
    }
    if (error != NULL) {
        PyErr_SetString(PyExc_ValueError, error);
        Py_DECREF(out);
        return NULL;
    }
    if (!grow(out, out->ncol, out->rows)) { /* an empty column still has its buffers */
        Py_DECREF(out);
        return PyErr_NoMemory();
    }
    for (int k = 0; k < keys.n; k++)
        out->col[k].nulls = clear_count(out->col[k].bits, out->rows);
    memset(out->col[keys.n].bits, 0xFF, (size_t)((out->rows + 7) / 8)); /* _parse: no nulls */
    return (PyObject *)out;
}

static PyMethodDef module_methods[] = {
    {"lift", lift, METH_VARARGS,
     "lift(stream capsule, keys) -> columns: each key's integer where the literal scan reads "
     "it, and _parse (1: the row is for the polars path)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_ekeys", "The Explorer link keys, lifted (explorer_keys.py).", -1,
    module_methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__ekeys(void)
{
    if (PyType_Ready(&LiftedType) < 0)
        return NULL;
    return PyModule_Create(&module);
}
