/* The replay of a critical-path graph (questions/critical/replay.py), compiled.
 *
 * replay(first, out, anchored, pin, recorded, dur, gap, lag, delay, tail, chain, launch, wait,
 * cross) walks the nodes in their order and starts each at the latest of its dependencies plus
 * its delay, exactly as replay.py's loop does (which stays the fallback and the reference: a
 * test holds the two to the same times). Every array is a buffer of int64 ("q"), one value
 * per node (anchored too: non-zero, the node keeps its recorded start); pin is a buffer of
 * bytes (non-zero: the same). The nodes before ``first`` keep their recorded times. Writes
 * every node's start, then every node's end, into out (a writable buffer of two int64 a
 * node), which replay.py views as two memoryviews.
 *
 * walk(w0s, lasts, start, end, gap, lag, tail, chain, launch, wait, cross, anchored, own) walks
 * each window's critical path back from its last node, as replay.py's path() does (its
 * reference): returns the (schema, array) capsule pair of five Int64 columns, one row per
 * segment in time order within each window: the window's index, start, end, kind (the codes
 * of replay.KIND_CODES) and node.
 *
 * link(stream, out) links a graph's nodes, as link.py's _by_polars does (its reference, held
 * to the same graph by a test): the stream is polars' Arrow C stream of one frame of Int64
 * columns in LINK_IN's order (link.py), the nodes in their order; out, a writable buffer of
 * len(LINK_OUT) int64 arrays of one value per node, one after another, receives the graph's
 * arrays (in LINK_OUT's order, null as -1 for a node and 0 for a time). Returns the launch
 * latency.
 *
 * ints(stream) takes an Int64 column without nulls from polars as an Arrow C stream (its
 * Series.__arrow_c_stream__) and returns its values as a bytearray of int64: the graph's
 * arrays without a Python int per value (link.py).
 *
 * outer (graph.py's host calls), spans (replay.py's windows), own_pieces and covered (own.py,
 * scenarios.py's host-time what-if) and put (replay.py's changed arrays): each said where it
 * is defined below, each with its Python or polars reference.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../readers/_arrow.h"

#define NONE (-1)
#define NEG_INF (-((int64_t)1 << 62))

enum { ANCHORED, RECORDED, DUR, GAP, LAG, DELAY, TAIL, CHAIN, LAUNCH, WAIT, CROSS, NARR };

static PyObject *ints(PyObject *module, PyObject *args)
{
    (void)module;
    PyObject *cap;
    if (!PyArg_ParseTuple(args, "O", &cap))
        return NULL;
    struct ArrowArrayStream *stream = PyCapsule_GetPointer(cap, "arrow_array_stream");
    if (stream == NULL)
        return NULL;
    struct ArrowSchema schema = {0};
    if (stream->get_schema(stream, &schema) != 0) {
        PyErr_SetString(PyExc_ValueError, "the stream gives no schema");
        return NULL;
    }
    int is_int64 = schema.format != NULL && strcmp(schema.format, "l") == 0;
    if (schema.release)
        schema.release(&schema);
    if (!is_int64) {
        PyErr_SetString(PyExc_TypeError, "not an Int64 column");
        return NULL;
    }
    PyObject *out = PyByteArray_FromStringAndSize(NULL, 0);
    while (out != NULL) {
        struct ArrowArray chunk = {0};
        if (stream->get_next(stream, &chunk) != 0) {
            PyErr_SetString(PyExc_ValueError, "the stream failed");
            Py_CLEAR(out);
            break;
        }
        if (chunk.release == NULL)
            break; /* the end */
        Py_ssize_t had = PyByteArray_GET_SIZE(out), add = (Py_ssize_t)chunk.length * 8;
        if (chunk.null_count != 0 || chunk.n_buffers != 2) {
            PyErr_SetString(PyExc_ValueError, "an Int64 column with nulls");
            Py_CLEAR(out);
        } else if (PyByteArray_Resize(out, had + add) != 0) {
            Py_CLEAR(out);
        } else if (add) {
            const int64_t *data = (const int64_t *)chunk.buffers[1] + chunk.offset;
            memcpy(PyByteArray_AS_STRING(out) + had, data, (size_t)add);
        }
        chunk.release(&chunk);
    }
    return out;
}

static int view(PyObject *o, Py_buffer *b, Py_ssize_t n, Py_ssize_t item, const char *what)
{
    if (PyObject_GetBuffer(o, b, PyBUF_C_CONTIGUOUS) != 0)
        return -1;
    if (b->len != n * item) {
        PyErr_Format(PyExc_ValueError, "%s: %zd bytes, not %zd", what, b->len, n * item);
        PyBuffer_Release(b);
        return -1;
    }
    return 0;
}

static PyObject *replay(PyObject *module, PyObject *args)
{
    (void)module;
    Py_ssize_t first;
    PyObject *out_o, *pin_o, *arr_o[NARR];
    if (!PyArg_ParseTuple(args, "nOOOOOOOOOOOOO", &first, &out_o, &arr_o[ANCHORED], &pin_o,
                          &arr_o[RECORDED], &arr_o[DUR], &arr_o[GAP], &arr_o[LAG], &arr_o[DELAY],
                          &arr_o[TAIL], &arr_o[CHAIN], &arr_o[LAUNCH], &arr_o[WAIT], &arr_o[CROSS]))
        return NULL;
    Py_buffer pin_b, out_b, arr_b[NARR];
    if (PyObject_GetBuffer(pin_o, &pin_b, PyBUF_C_CONTIGUOUS) != 0)
        return NULL;
    Py_ssize_t n = pin_b.len;
    if (first < 0 || first > n) {
        PyBuffer_Release(&pin_b);
        PyErr_SetString(PyExc_ValueError, "first: out of range");
        return NULL;
    }
    if (PyObject_GetBuffer(out_o, &out_b, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) != 0) {
        PyBuffer_Release(&pin_b);
        return NULL;
    }
    int got = 0, ok = out_b.len == 2 * n * 8;
    if (!ok)
        PyErr_Format(PyExc_ValueError, "out: %zd bytes, not %zd", out_b.len, 2 * n * 8);
    for (; ok && got < NARR; got++)
        if (view(arr_o[got], &arr_b[got], n, 8, "an array") != 0)
            break;
    if (ok && got == NARR) {
        const uint8_t *pin = pin_b.buf;
        const int64_t *a[NARR];
        for (int k = 0; k < NARR; k++)
            a[k] = arr_b[k].buf;
        int64_t *start = (int64_t *)out_b.buf, *end = start + n;
        Py_BEGIN_ALLOW_THREADS;
        for (Py_ssize_t i = 0; i < n; i++) {
            int64_t t;
            if (i < first || a[ANCHORED][i] || pin[i]) {
                t = a[RECORDED][i];
            } else {
                int64_t p;
                t = NEG_INF;
                if ((p = a[WAIT][i]) >= 0)
                    t = end[p] + a[TAIL][i];
                if ((p = a[CHAIN][i]) >= 0 && end[p] + a[GAP][i] > t)
                    t = end[p] + a[GAP][i];
                if ((p = a[LAUNCH][i]) >= 0 && start[p] + a[LAG][i] > t)
                    t = start[p] + a[LAG][i];
                if ((p = a[CROSS][i]) >= 0 && end[p] > t)
                    t = end[p];
                if (t == NEG_INF) /* a change took its last dependency: it keeps its start */
                    t = a[RECORDED][i] - a[DELAY][i];
                t += a[DELAY][i];
            }
            start[i] = t;
            end[i] = t + a[DUR][i];
        }
        Py_END_ALLOW_THREADS;
    }
    for (int k = 0; k < got; k++)
        PyBuffer_Release(&arr_b[k]);
    PyBuffer_Release(&out_b);
    PyBuffer_Release(&pin_b);
    if (!ok || got < NARR)
        return NULL;
    Py_RETURN_NONE;
}

/* The kinds of a path's segments: replay.KIND_CODES in Python. */
enum { K_CALL = 3, K_HOST, K_LAUNCH, K_SYNC, K_UNEXPLAINED, K_BEFORE };
enum { W_START, W_END, W_GAP, W_LAG, W_TAIL, W_CHAIN, W_LAUNCH, W_WAIT, W_CROSS, W_ANCHORED,
       W_OWN, WARR };

typedef struct {
    int64_t *v;
    Py_ssize_t n, cap;
} Buf;

static int push(Buf *b, int64_t x)
{
    if (b->n == b->cap) {
        Py_ssize_t cap = b->cap ? 2 * b->cap : 1024;
        int64_t *v = realloc(b->v, (size_t)cap * sizeof *v);
        if (v == NULL)
            return -1;
        b->v = v, b->cap = cap;
    }
    b->v[b->n++] = x;
    return 0;
}

typedef struct { /* one window's segments, latest first, until they are put in order */
    Buf a, b, kind, node;
    int64_t w0;
    int failed;
} Seg;

/* Add [a, b] of ``kind`` at ``node``, clipped to the window; 0 once its start is reached. */
static int add(Seg *s, int64_t a, int64_t b, int64_t kind, int64_t node)
{
    if ((b > a || kind == K_SYNC) && b > s->w0)
        s->failed |= push(&s->a, a > s->w0 ? a : s->w0) | push(&s->b, b) |
                     push(&s->kind, kind) | push(&s->node, node);
    return a > s->w0;
}

static void walk_one(Seg *s, const int64_t *const *a, int64_t last)
{
    const int64_t *st = a[W_START], *en = a[W_END];
    int64_t i = last;
    int at_end = 1;
    for (;;) {
        if (at_end && !add(s, st[i], en[i], a[W_OWN][i], i))
            break;
        at_end = 1;
        int64_t p, best = NONE, v = NEG_INF;
        int via = 0; /* 1 wait, 2 cross, 3 chain, 4 launch */
        if ((p = a[W_WAIT][i]) >= 0)
            best = p, via = 1, v = en[p] + a[W_TAIL][i];
        if ((p = a[W_CROSS][i]) >= 0 && en[p] > v)
            best = p, via = 2, v = en[p];
        if ((p = a[W_CHAIN][i]) >= 0 && en[p] + a[W_GAP][i] > v)
            best = p, via = 3, v = en[p] + a[W_GAP][i];
        if ((p = a[W_LAUNCH][i]) >= 0 && st[p] + a[W_LAG][i] > v)
            best = p, via = 4, v = st[p] + a[W_LAG][i];
        if (a[W_ANCHORED][i] || best == NONE || best >= i) {
            add(s, s->w0, st[i], K_BEFORE, i);
            break;
        }
        if (!add(s, v, st[i], K_UNEXPLAINED, i))
            break;
        int ok = 1;
        if (via == 1)
            ok = add(s, en[best], v, K_SYNC, i);
        else if (via == 3)
            ok = add(s, en[best], v, a[W_OWN][i] == K_CALL ? K_HOST : K_UNEXPLAINED, i);
        else if (via == 4) {
            ok = add(s, st[best], v, K_LAUNCH, best);
            at_end = 0;
        }
        if (!ok)
            break;
        i = best;
    }
}

static PyObject *as_list(const int64_t *v, Py_ssize_t n)
{
    PyObject *out = PyList_New(n);
    for (Py_ssize_t k = 0; out != NULL && k < n; k++) {
        PyObject *x = PyLong_FromLongLong(v[k]);
        if (x == NULL) {
            Py_CLEAR(out);
            break;
        }
        PyList_SET_ITEM(out, k, x);
    }
    return out;
}

static PyObject *walk(PyObject *module, PyObject *args)
{
    (void)module;
    PyObject *w0s_o, *lasts_o, *arr_o[WARR];
    if (!PyArg_ParseTuple(args, "O!O!OOOOOOOOOOO", &PyList_Type, &w0s_o, &PyList_Type, &lasts_o,
                          &arr_o[W_START], &arr_o[W_END], &arr_o[W_GAP], &arr_o[W_LAG],
                          &arr_o[W_TAIL], &arr_o[W_CHAIN], &arr_o[W_LAUNCH], &arr_o[W_WAIT],
                          &arr_o[W_CROSS], &arr_o[W_ANCHORED], &arr_o[W_OWN]))
        return NULL;
    Py_ssize_t windows = PyList_GET_SIZE(w0s_o), n = -1;
    if (PyList_GET_SIZE(lasts_o) != windows) {
        PyErr_SetString(PyExc_ValueError, "as many window starts as last nodes");
        return NULL;
    }
    Py_buffer b[WARR];
    int got = 0;
    for (; got < WARR; got++) {
        if (PyObject_GetBuffer(arr_o[got], &b[got], PyBUF_C_CONTIGUOUS) != 0)
            break;
        if (n < 0)
            n = b[got].len / 8;
        if (b[got].len != n * 8) {
            PyErr_SetString(PyExc_ValueError, "arrays of one length, int64");
            PyBuffer_Release(&b[got]);
            break;
        }
    }
    PyObject *result = NULL;
    Buf out[5] = {{0}};
    int failed = got < WARR;
    const int64_t *a[WARR];
    for (int k = 0; k < got; k++)
        a[k] = b[k].buf;
    for (Py_ssize_t w = 0; !failed && w < windows; w++) {
        Seg s = {.w0 = PyLong_AsLongLong(PyList_GET_ITEM(w0s_o, w))};
        int64_t last = PyLong_AsLongLong(PyList_GET_ITEM(lasts_o, w));
        if (PyErr_Occurred() || last < 0 || last >= n) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_ValueError, "a last node out of range");
            failed = 1;
        } else {
            walk_one(&s, a, last);
            for (Py_ssize_t k = s.a.n - 1; k >= 0 && !s.failed; k--) /* in time order */
                s.failed |= push(&out[0], w) | push(&out[1], s.a.v[k]) |
                            push(&out[2], s.b.v[k]) | push(&out[3], s.kind.v[k]) |
                            push(&out[4], s.node.v[k]);
            if (s.failed) {
                PyErr_NoMemory();
                failed = 1;
            }
        }
        free(s.a.v), free(s.b.v), free(s.kind.v), free(s.node.v);
    }
    if (!failed) { /* the buffers move into the Arrow columns */
        static const char *const names[] = {"window", "start_ns", "end_ns", "kind", "node"};
        static const char *const formats[] = {"l", "l", "l", "l", "l"};
        Column col[5];
        for (int k = 0; k < 5; k++) {
            col[k] = (Column){(uint64_t *)out[k].v, NULL, 0};
            if (col[k].vals == NULL && (col[k].vals = malloc(8)) == NULL)
                failed = 1;
            out[k].v = NULL;
        }
        if (failed) {
            for (int k = 0; k < 5; k++)
                free(col[k].vals);
            PyErr_NoMemory();
        } else {
            result = arrow_export(col, 5, out[0].n, names, formats);
        }
    }
    for (int k = 0; k < 5; k++)
        free(out[k].v);
    for (int k = 0; k < got; k++)
        PyBuffer_Release(&b[k]);
    return result;
}


/* ---- link: the graph's dependencies, gaps, lags and delays (link.py's _by_polars) ---- */

#define NUL INT64_MIN
/* The columns link reads (link.LINK_IN) and the arrays it makes (link.LINK_OUT). */
enum { I_EVENT, I_KIND, I_PID, I_TID, I_LANE, I_START, I_END, I_TAIL, I_LAUNCH, I_WAIT, I_CALL,
       I_CROSS, NIN };
enum { O_EVENT, O_START, O_DUR, O_CHAIN, O_GAP, O_LAUNCH, O_LAG, O_WAIT, O_CROSS, O_TAIL,
       O_DELAY, O_ANCHORED, O_CALL, O_OWN, NOUT };
/* A node's kind (link.KINDS): device work below N_CALL. */
enum { N_CALL = 3, N_MARK, N_RETURN };

#define MAX_READ 16

/* Columns read from polars: each points into the stream's one chunk where it has no nulls
 * (no copy), else is a copy with NUL for a null (owned). */
typedef struct {
    int64_t *col[MAX_READ];
    uint8_t owned[MAX_READ];
    struct ArrowArray held; /* the chunk the columns point into, released by read_free */
    int ncol;
} Read;

static void read_free(Read *r)
{
    for (int k = 0; k < r->ncol; k++)
        if (r->owned[k])
            free(r->col[k]);
    if (r->held.release)
        r->held.release(&r->held);
    r->ncol = 0;
}

/* Append chunk's rows to r's columns (each then owned: a copy), n rows so far. */
static int append_chunk(Read *r, const struct ArrowArray *chunk, Py_ssize_t *n)
{
    Py_ssize_t m = (Py_ssize_t)chunk->length;
    for (int k = 0; k < r->ncol; k++) {
        int64_t *grown = realloc(r->owned[k] ? r->col[k] : NULL,
                                 (size_t)(*n + m + 1) * sizeof(int64_t));
        if (grown == NULL)
            return -1;
        if (!r->owned[k] && *n) /* never: the first chunk of several is copied too */
            memcpy(grown, r->col[k], (size_t)*n * sizeof(int64_t));
        r->col[k] = grown, r->owned[k] = 1;
        const struct ArrowArray *c = chunk->children[k];
        int64_t at = c->offset + chunk->offset;
        const int64_t *v = (const int64_t *)c->buffers[1] + at;
        const uint8_t *bits = c->null_count ? c->buffers[0] : NULL;
        int64_t *to = grown + *n;
        if (m)
            memcpy(to, v, (size_t)m * sizeof(int64_t));
        for (Py_ssize_t i = 0; bits && i < m;) { /* the nulls put in, eight rows a byte */
            int64_t b = at + i;
            if ((b & 7) == 0 && i + 8 <= m && (bits[b >> 3] == 0xFF || bits[b >> 3] == 0)) {
                if (bits[b >> 3] == 0)
                    for (int j = 0; j < 8; j++)
                        to[i + j] = NUL;
                i += 8;
                continue;
            }
            if (!(bits[b >> 3] >> (b & 7) & 1))
                to[i] = NUL;
            i++;
        }
    }
    *n += m;
    return 0;
}

/* Read a stream of struct chunks of ncol Int64 columns (a null: NUL): where the stream is one
 * chunk, a column without nulls is read where it lies. read_free(r) when done, also after an
 * error. */
static int read_columns(PyObject *cap, int ncol, Read *r, Py_ssize_t *rows)
{
    memset(r, 0, sizeof *r);
    r->ncol = ncol;
    struct ArrowArrayStream *stream = PyCapsule_GetPointer(cap, "arrow_array_stream");
    if (stream == NULL)
        return -1;
    struct ArrowSchema schema = {0};
    if (stream->get_schema(stream, &schema) != 0) {
        PyErr_SetString(PyExc_ValueError, "the stream gives no schema");
        return -1;
    }
    int ok = ncol <= MAX_READ && schema.format != NULL && strcmp(schema.format, "+s") == 0 &&
             schema.n_children == ncol;
    for (int k = 0; ok && k < ncol; k++)
        ok = strcmp(schema.children[k]->format, "l") == 0;
    if (schema.release)
        schema.release(&schema);
    if (!ok) {
        PyErr_SetString(PyExc_TypeError, "not a frame of the Int64 columns asked for");
        return -1;
    }
    struct ArrowArray first = {0}, next = {0};
    if (stream->get_next(stream, &first) != 0 ||
        (first.release && stream->get_next(stream, &next) != 0)) {
        if (first.release)
            first.release(&first);
        PyErr_SetString(PyExc_ValueError, "the stream failed");
        return -1;
    }
    Py_ssize_t n = 0;
    if (first.release && !next.release) { /* one chunk */
        r->held = first;
        n = (Py_ssize_t)first.length;
        for (int k = 0; k < ncol; k++) {
            const struct ArrowArray *c = first.children[k];
            if (c->null_count == 0)
                r->col[k] = (int64_t *)c->buffers[1] + c->offset + first.offset;
        }
        for (int k = 0; k < ncol; k++) { /* the ones with nulls, copied */
            if (r->col[k] != NULL || n == 0)
                continue;
            Read one = {.ncol = 1};
            Py_ssize_t got = 0;
            struct ArrowArray only = first;
            struct ArrowArray *child = first.children[k];
            only.children = &child, only.n_children = 1;
            if (append_chunk(&one, &only, &got) != 0) {
                PyErr_NoMemory();
                return -1;
            }
            r->col[k] = one.col[0], r->owned[k] = 1;
        }
        *rows = n;
        return 0;
    }
    for (struct ArrowArray *chunk = &first; chunk->release;) { /* several: copied */
        int failed = append_chunk(r, chunk, &n);
        chunk->release(chunk);
        if (chunk == &first && next.release) {
            chunk = &next;
        } else {
            struct ArrowArray more = {0};
            if (!failed && stream->get_next(stream, &more) != 0)
                failed = 2;
            next = more;
            chunk = &next;
        }
        if (failed) {
            if (chunk->release)
                chunk->release(chunk);
            if (failed == 1)
                PyErr_NoMemory();
            else
                PyErr_SetString(PyExc_ValueError, "the stream failed");
            return -1;
        }
    }
    *rows = n;
    return 0;
}

/* The last node seen on each chain (a thread, a lane): open addressing on the key's three
 * values, grown as chains appear (a run has a few of them: the table stays in cache). */
typedef struct {
    int64_t *keys, *node;
    size_t mask, used;
} Chains;

static int chains_init(Chains *c, size_t cap)
{
    c->mask = cap - 1, c->used = 0;
    c->keys = malloc(cap * 3 * sizeof(int64_t));
    c->node = malloc(cap * sizeof(int64_t));
    if (c->keys == NULL || c->node == NULL) {
        free(c->keys), free(c->node);
        c->keys = c->node = NULL;
        return -1;
    }
    for (size_t k = 0; k < cap; k++)
        c->node[k] = NONE;
    return 0;
}

static size_t chains_slot(const Chains *ch, int64_t a, int64_t b, int64_t c)
{
    uint64_t h = (uint64_t)a * 0x9E3779B97F4A7C15ull ^ (uint64_t)b * 0xC2B2AE3D27D4EB4Full ^
                 (uint64_t)c * 0x165667B19E3779F9ull;
    h ^= h >> 29;
    size_t k = (size_t)h & ch->mask;
    while (ch->node[k] != NONE &&
           !(ch->keys[3 * k] == a && ch->keys[3 * k + 1] == b && ch->keys[3 * k + 2] == c))
        k = (k + 1) & ch->mask;
    return k;
}

/* The node last seen on chain (a, b, c), NONE for none; node i is the last from now on.
 * -2 when memory ran out. */
static int64_t chains_swap(Chains *ch, int64_t a, int64_t b, int64_t c, int64_t i)
{
    size_t k = chains_slot(ch, a, b, c);
    int64_t was = ch->node[k];
    if (was == NONE && 2 * (ch->used + 1) > ch->mask + 1) { /* grow to keep it half empty */
        Chains big;
        if (chains_init(&big, 2 * (ch->mask + 1)) != 0)
            return -2;
        for (size_t j = 0; j <= ch->mask; j++) {
            if (ch->node[j] == NONE)
                continue;
            int64_t *key = &ch->keys[3 * j];
            size_t m = chains_slot(&big, key[0], key[1], key[2]);
            memcpy(&big.keys[3 * m], key, 3 * sizeof(int64_t));
            big.node[m] = ch->node[j];
        }
        big.used = ch->used;
        free(ch->keys), free(ch->node);
        *ch = big;
        k = chains_slot(ch, a, b, c);
    }
    if (was == NONE) {
        ch->keys[3 * k] = a, ch->keys[3 * k + 1] = b, ch->keys[3 * k + 2] = c;
        ch->used++;
    }
    ch->node[k] = i;
    return was;
}

static int by_value(const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return (a > b) - (a < b);
}

/* The median of v[0..n) (sorted in place), truncated as Python's int() does; 0 for none. */
static int64_t median(int64_t *v, Py_ssize_t n)
{
    if (n == 0)
        return 0;
    qsort(v, (size_t)n, sizeof *v, by_value);
    double m = n % 2 ? (double)v[n / 2] : ((double)v[n / 2 - 1] + (double)v[n / 2]) / 2.0;
    return m > 0 ? (int64_t)m : 0;
}

/* A node's chain (link.CHAIN): its device lane (1, the lane, 0) for device work, else its
 * thread (0, pid, tid); a null is NUL, equal to a null. */
#define CK0(in, i) ((in)[I_KIND][i] < N_CALL ? 1 : 0)
#define CK1(in, i) ((in)[I_KIND][i] < N_CALL ? (in)[I_LANE][i] : (in)[I_PID][i])
#define CK2(in, i) ((in)[I_KIND][i] < N_CALL ? 0 : (in)[I_TID][i])
#define SAME_CHAIN(in, p, i)                                                                     \
    (CK0(in, p) == CK0(in, i) && CK1(in, p) == CK1(in, i) && CK2(in, p) == CK2(in, i))

/* Every array of link's, from its columns (module doc; link.py's _by_polars says the same). */
static int linked(int64_t *const *in, int64_t *const *out, uint8_t *gap_null, Py_ssize_t n,
                  int64_t *latency)
{
    int64_t *ev = in[I_EVENT], *kind = in[I_KIND], *st = in[I_START], *en = in[I_END];
    int64_t size = 0;
    for (Py_ssize_t i = 0; i < n; i++)
        if (ev[i] != NUL && ev[i] >= size)
            size = ev[i] + 1;
    int64_t *node_of = malloc((size_t)(size ? size : 1) * sizeof(int64_t));
    int64_t *since = malloc((size_t)(n ? n : 1) * sizeof(int64_t));
    Chains ch = {NULL, NULL, 0, 0};
    if (node_of == NULL || since == NULL || chains_init(&ch, 64) != 0) {
        free(node_of), free(since), free(ch.keys), free(ch.node);
        return -1;
    }
    for (int64_t e = 0; e < size; e++)
        node_of[e] = NONE;
    int64_t *dur = out[O_DUR], *chain = out[O_CHAIN], *gap = out[O_GAP], *launch = out[O_LAUNCH];
    for (Py_ssize_t i = 0; i < n; i++) {
        if (ev[i] != NUL && ev[i] >= 0)
            node_of[ev[i]] = i;
        dur[i] = en[i] - st[i];
        out[O_EVENT][i] = ev[i] == NUL ? NONE : ev[i];
        out[O_START][i] = st[i];
        out[O_OWN][i] = kind[i] < N_CALL ? kind[i] : N_CALL;
        out[O_TAIL][i] = in[I_TAIL][i] == NUL ? 0 : in[I_TAIL][i];
    }
#define NODE_OF(e) ((e) != NUL && (e) >= 0 && (e) < size ? node_of[e] : NONE)
    for (Py_ssize_t i = 0; i < n; i++) { /* a waiting call's own time: its return's tail */
        int64_t c = kind[i] == N_RETURN ? NODE_OF(in[I_CALL][i]) : NONE;
        if (c != NONE && in[I_TAIL][i] != NUL)
            dur[c] = in[I_TAIL][i];
    }
    Py_ssize_t free_ = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        chain[i] = chains_swap(&ch, CK0(in, i), CK1(in, i), CK2(in, i), i);
        if (chain[i] == -2) {
            free(node_of), free(since), free(ch.keys), free(ch.node);
            return -1;
        }
        int64_t l = NODE_OF(in[I_LAUNCH][i]);
        out[O_LAG][i] = l; /* for now: the launch as linked, before it is kept or not */
        launch[i] = l != NONE && l < i && !SAME_CHAIN(in, l, i) ? l : NONE;
        out[O_WAIT][i] = NODE_OF(in[I_WAIT][i]);
        out[O_CALL][i] = NODE_OF(in[I_CALL][i]);
        out[O_CROSS][i] = NODE_OF(in[I_CROSS][i]);
        int64_t c = chain[i];
        gap_null[i] = 0;
        if (kind[i] >= N_CALL && kind[i] != N_RETURN) {
            gap[i] = c == NONE ? 0 : st[i] - st[c] - dur[c];
            gap_null[i] = c == NONE;
        } else {
            gap[i] = 0;
        }
        if (kind[i] < N_CALL && launch[i] != NONE && (c == NONE || st[c] + dur[c] <= st[l]))
            since[free_++] = st[i] - st[l];
    }
#undef NODE_OF
    *latency = median(since, free_);
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t l = out[O_LAG][i], t = st[i], latest = NEG_INF;
        int64_t lag = 0;
        if (kind[i] < N_CALL)
            lag = l == NONE || t - st[l] > *latency ? *latency : t - st[l];
        out[O_LAG][i] = lag;
        int64_t p, v;
        if ((p = chain[i]) != NONE) {
            v = st[p] + dur[p] + gap[i];
            if (gap_null[i] || v > t)
                chain[i] = NONE;
            else if (v > latest)
                latest = v;
        }
        if ((p = launch[i]) != NONE) {
            v = st[p] + lag;
            if (v > t)
                launch[i] = NONE;
            else if (v > latest)
                latest = v;
        }
        if ((p = out[O_WAIT][i]) != NONE) {
            v = st[p] + dur[p] + out[O_TAIL][i];
            if (v > t)
                out[O_WAIT][i] = NONE;
            else if (v > latest)
                latest = v;
        }
        if ((p = out[O_CROSS][i]) != NONE) {
            v = st[p] + dur[p];
            if (v > t)
                out[O_CROSS][i] = NONE;
            else if (v > latest)
                latest = v;
        }
        out[O_ANCHORED][i] = latest == NEG_INF;
        out[O_DELAY][i] = latest == NEG_INF ? 0 : t - latest;
    }
    free(node_of), free(since), free(ch.keys), free(ch.node);
    return 0;
}

/* nullable(array): an int64 buffer (a graph's array: a node, or -1 for none) as the (schema,
 * array) capsule pair of one Int64 column, "values", -1 a null. */
static PyObject *nullable(PyObject *module, PyObject *args)
{
    (void)module;
    static const char *const names[] = {"values"};
    static const char *const formats[] = {"l"};
    PyObject *o;
    if (!PyArg_ParseTuple(args, "O", &o))
        return NULL;
    Py_buffer b;
    if (PyObject_GetBuffer(o, &b, PyBUF_C_CONTIGUOUS) != 0)
        return NULL;
    Py_ssize_t n = b.len / 8;
    Column col = {malloc((size_t)(n ? n : 1) * 8), calloc((size_t)(n + 7) / 8 + 1, 1), 0};
    PyObject *result = NULL;
    if (col.vals == NULL || col.bits == NULL) {
        PyErr_NoMemory();
    } else {
        const int64_t *v = b.buf;
        memcpy(col.vals, v, (size_t)n * 8);
        int64_t valid = 0;
        for (Py_ssize_t i = 0; i < n; i += 8) { /* a byte of validity at a time */
            unsigned byte = 0;
            for (Py_ssize_t j = i; j < i + 8 && j < n; j++) {
                unsigned bit = v[j] != NONE;
                byte |= bit << (j - i), valid += bit;
            }
            col.bits[i >> 3] = (uint8_t)byte;
        }
        col.nulls = n - valid;
        result = arrow_export(&col, 1, n, names, formats);
    }
    free(col.vals), free(col.bits); /* moved into the result where it was made */
    PyBuffer_Release(&b);
    return result;
}

static PyObject *link_nodes(PyObject *module, PyObject *args)
{
    (void)module;
    PyObject *cap, *out_o;
    if (!PyArg_ParseTuple(args, "OO", &cap, &out_o))
        return NULL;
    int64_t *out[NOUT] = {NULL};
    PyObject *result = NULL;
    uint8_t *gap_null = NULL;
    Py_ssize_t n = 0;
    int64_t latency = 0;
    Read read;
    int64_t *const *in = read.col;
    Py_buffer ob = {0};
    if (read_columns(cap, NIN, &read, &n) != 0)
        goto done;
    if (PyObject_GetBuffer(out_o, &ob, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) != 0) {
        ob.obj = NULL;
        goto done;
    }
    if (ob.len != (Py_ssize_t)NOUT * n * 8) {
        PyErr_Format(PyExc_ValueError, "out: %zd bytes, not %zd", ob.len, (Py_ssize_t)NOUT * n * 8);
        goto done;
    }
    for (int k = 0; k < NOUT; k++)
        out[k] = (int64_t *)ob.buf + (Py_ssize_t)k * n;
    int failed = (gap_null = malloc((size_t)(n ? n : 1))) == NULL;
    if (!failed) {
        Py_BEGIN_ALLOW_THREADS; /* C arrays only: other threads run meanwhile */
        failed = linked(in, out, gap_null, n, &latency) != 0;
        Py_END_ALLOW_THREADS;
    }
    if (failed) {
        PyErr_NoMemory();
        goto done;
    }
    result = PyLong_FromLongLong((long long)latency);
done:
    if (ob.obj != NULL)
        PyBuffer_Release(&ob);
    read_free(&read);
    free(gap_null);
    return result;
}

/* ---- the host's own time by the innermost range holding it, and the time ranges cover ---- */

static int64_t floor_half(int64_t a, int64_t b) /* (a + b) // 2, as Python floors it */
{
    int64_t s = a + b;
    return s >= 0 ? s / 2 : -((-s + 1) / 2);
}

/* Append one row to ncol Columns of n rows and room for *cap (grown for all at once). */
static int columns_push(Column *c, int ncol, Py_ssize_t *cap, Py_ssize_t n, const int64_t *row)
{
    if (n == *cap) {
        Py_ssize_t big = *cap ? 2 * *cap : 1024;
        for (int k = 0; k < ncol; k++) {
            uint64_t *vals = realloc(c[k].vals, (size_t)big * 8);
            if (vals == NULL)
                return -1;
            c[k].vals = vals;
        }
        *cap = big;
    }
    for (int k = 0; k < ncol; k++)
        c[k].vals[n] = (uint64_t)row[k];
    return 0;
}

enum { C_PID, C_TID, C_A, C_B, C_NODE, NC };
enum { U_PID, U_TID, U_START, U_END, NU };

/* The time of each interval [a, b] of nodes inside the union of ranges, on its thread (pid,
 * tid): the ranges sorted by thread and start, the nodes in any order. Returns a dict of node
 * to b - a less that time, for each node with some inside. */
static PyObject *covered(PyObject *module, PyObject *args)
{
    (void)module;
    static const char *const names[] = {"node", "value"};
    static const char *const formats[] = {"l", "l"};
    PyObject *nodes_o, *ranges_o;
    if (!PyArg_ParseTuple(args, "OO", &nodes_o, &ranges_o))
        return NULL;
    int64_t *ms = NULL, *me = NULL, *before = NULL, *lo_of = NULL, *hi_of = NULL, *at_of = NULL;
    Py_ssize_t nn = 0, nr = 0;
    PyObject *result = NULL;
    int64_t *got_node = NULL, *got_left = NULL;
    Py_ssize_t got = 0;
    Read read_c = {.ncol = 0}, read_u = {.ncol = 0};
    Chains ch = {NULL, NULL, 0, 0};
    int64_t *const *c = read_c.col, *const *u = read_u.col;
    if (read_columns(nodes_o, NC, &read_c, &nn) != 0 ||
        read_columns(ranges_o, NU, &read_u, &nr) != 0)
        goto done;
    size_t bytes = (size_t)(nr ? nr : 1) * sizeof(int64_t);
    ms = malloc(bytes), me = malloc(bytes), before = malloc(bytes);
    lo_of = malloc(bytes), hi_of = malloc(bytes), at_of = malloc(bytes);
    size_t nbytes = (size_t)(nn ? nn : 1) * sizeof(int64_t);
    got_node = malloc(nbytes), got_left = malloc(nbytes);
    if (ms == NULL || me == NULL || before == NULL || lo_of == NULL || hi_of == NULL ||
        at_of == NULL || got_node == NULL || got_left == NULL || chains_init(&ch, 64) != 0) {
        PyErr_NoMemory();
        goto done;
    }
    /* each thread's ranges merged, each with the time covered before it; the thread's
     * number (in the chains table) gives where its merged ranges lie, [lo_of, hi_of) */
    Py_ssize_t m = 0, threads = 0;
    for (Py_ssize_t j = 0; j < nr;) {
        int64_t pid = u[U_PID][j], tid = u[U_TID][j];
        if (chains_swap(&ch, pid, tid, 0, threads) == -2) {
            PyErr_NoMemory();
            goto done;
        }
        lo_of[threads] = at_of[threads] = m;
        for (Py_ssize_t first = m; j < nr && u[U_PID][j] == pid && u[U_TID][j] == tid; j++) {
            if (m > first && u[U_START][j] <= me[m - 1]) {
                if (u[U_END][j] > me[m - 1])
                    me[m - 1] = u[U_END][j];
            } else {
                ms[m] = u[U_START][j], me[m] = u[U_END][j];
                before[m] = m > first ? before[m - 1] + me[m - 1] - ms[m - 1] : 0;
                m++;
            }
        }
        hi_of[threads++] = m;
    }
    Py_BEGIN_ALLOW_THREADS; /* C arrays only: other threads run meanwhile */
    for (Py_ssize_t i = 0; i < nn; i++) {
        int64_t t = ch.node[chains_slot(&ch, c[C_PID][i], c[C_TID][i], 0)];
        if (t == NONE)
            continue; /* no range on its thread */
        int64_t at[2] = {c[C_A][i], c[C_B][i]}, upto[2];
        for (int k = 0; k < 2; k++) { /* the covered time before at[k] */
            Py_ssize_t lo = at_of[t], hi = hi_of[t], base = lo_of[t];
            if (lo > base && ms[lo - 1] > at[k])
                lo = base; /* before the thread's last answer: searched from its first */
            /* the first merged range starting after it: a few steps on (a thread's gaps come
             * in time order), then halving */
            for (int step = 0; step < 8 && lo < hi && ms[lo] <= at[k]; step++)
                lo++;
            while (lo < hi && ms[lo] <= at[k]) {
                Py_ssize_t mid = lo + (hi - lo) / 2;
                if (ms[mid] <= at[k])
                    lo = mid + 1;
                else
                    hi = mid;
            }
            at_of[t] = lo;
            upto[k] = lo == base ? 0
                                 : before[lo - 1] + (at[k] < me[lo - 1] ? at[k] : me[lo - 1]) -
                                       ms[lo - 1];
        }
        int64_t cut = upto[1] - upto[0];
        if (cut > 0) /* the node, and the time [a, b] keeps outside the ranges */
            got_node[got] = c[C_NODE][i], got_left[got++] = c[C_B][i] - c[C_A][i] - cut;
    }
    Py_END_ALLOW_THREADS;
    Column out[2] = {{(uint64_t *)got_node, NULL, 0}, {(uint64_t *)got_left, NULL, 0}};
    result = arrow_export(out, 2, got, names, formats);
    got_node = out[0].vals == NULL ? NULL : got_node; /* moved into the result where made */
    got_left = out[1].vals == NULL ? NULL : got_left;
done:
    free(got_node), free(got_left);
    read_free(&read_c);
    read_free(&read_u);
    free(ms), free(me), free(before), free(lo_of), free(hi_of), free(at_of), free(ch.keys), free(ch.node);
    return result;
}

/* put(array, changed): each node's value of changed (a dict of int to int) written into
 * array (a writable buffer of int64, one value per node). */
static PyObject *put(PyObject *module, PyObject *args)
{
    (void)module;
    PyObject *array_o, *changed;
    if (!PyArg_ParseTuple(args, "OO!", &array_o, &PyDict_Type, &changed))
        return NULL;
    Py_buffer b;
    if (PyObject_GetBuffer(array_o, &b, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) != 0)
        return NULL;
    int64_t *v = b.buf;
    Py_ssize_t n = b.len / 8, pos = 0;
    PyObject *key, *value;
    int bad = 0;
    while (!bad && PyDict_Next(changed, &pos, &key, &value)) {
        long long i = PyLong_AsLongLong(key), x = PyLong_AsLongLong(value);
        if (PyErr_Occurred())
            bad = 1;
        else if (i < 0 || i >= n) {
            PyErr_SetString(PyExc_IndexError, "a node out of range");
            bad = 1;
        } else
            v[i] = x;
    }
    PyBuffer_Release(&b);
    if (bad)
        return NULL;
    Py_RETURN_NONE;
}

/* put_frame(array, stream): each node's value of the stream's frame (Int64 columns node,
 * value, as covered gives them) written into array (as put's). */
static PyObject *put_frame(PyObject *module, PyObject *args)
{
    (void)module;
    PyObject *array_o, *cap;
    if (!PyArg_ParseTuple(args, "OO", &array_o, &cap))
        return NULL;
    Read read;
    Py_ssize_t rows = 0;
    if (read_columns(cap, 2, &read, &rows) != 0) {
        read_free(&read);
        return NULL;
    }
    Py_buffer b;
    if (PyObject_GetBuffer(array_o, &b, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) != 0) {
        read_free(&read);
        return NULL;
    }
    int64_t *v = b.buf, *node = read.col[0], *value = read.col[1];
    Py_ssize_t n = b.len / 8, bad = 0;
    for (Py_ssize_t j = 0; j < rows; j++) {
        if (node[j] < 0 || node[j] >= n)
            bad = 1;
        else
            v[node[j]] = value[j];
    }
    PyBuffer_Release(&b);
    read_free(&read);
    if (bad) {
        PyErr_SetString(PyExc_IndexError, "a node out of range");
        return NULL;
    }
    Py_RETURN_NONE;
}

/* ---- outer: each host call's outermost call on its thread (graph.py's _host) ---- */

enum { H_PID, H_TID, H_START, H_END, H_ID, NH };

/* A thread's calls in order: by start, the longer first, then by id (no state outside: the
 * sort runs without the GIL, beside other threads). */
typedef struct {
    const int64_t *start, *end, *id;
} CallKey;

static int call_before(const CallKey *c, int64_t a, int64_t b)
{
    if (c->start[a] != c->start[b])
        return c->start[a] < c->start[b];
    if (c->end[a] != c->end[b])
        return c->end[a] > c->end[b];
    return c->id[a] < c->id[b];
}

/* rows[0, m) sorted by call_before: a merge sort through tmp (m values), insertion below 16. */
static void sort_calls(int64_t *rows, Py_ssize_t m, const CallKey *c, int64_t *tmp)
{
    if (m < 16) {
        for (Py_ssize_t i = 1; i < m; i++) {
            int64_t x = rows[i];
            Py_ssize_t j = i;
            for (; j > 0 && call_before(c, x, rows[j - 1]); j--)
                rows[j] = rows[j - 1];
            rows[j] = x;
        }
        return;
    }
    Py_ssize_t h = m / 2, i = 0, j = h, k = 0;
    sort_calls(rows, h, c, tmp);
    sort_calls(rows + h, m - h, c, tmp);
    while (i < h && j < m)
        tmp[k++] = call_before(c, rows[j], rows[i]) ? rows[j++] : rows[i++];
    while (i < h)
        tmp[k++] = rows[i++];
    while (j < m)
        tmp[k++] = rows[j++];
    memcpy(rows, tmp, (size_t)m * sizeof *rows);
}

/* The rows of (pid, tid, start, end, id) columns (H_*) by thread: each thread's rows in
 * call_before's order at order[first[t], first[t + 1]), the threads numbered as first seen.
 * Touches no Python object (it runs without the GIL); -1 when memory ran out. */
typedef struct {
    int64_t *order, *first;
    Py_ssize_t threads;
} Threads;

static void threads_free(Threads *t)
{
    free(t->order), free(t->first);
    t->order = t->first = NULL;
}

static int by_thread(int64_t *const *h, Py_ssize_t n, Threads *out)
{
    size_t bytes = (size_t)(n ? n : 1) * sizeof(int64_t);
    int64_t *thread = malloc(bytes), *count = NULL;
    Chains ch = {NULL, NULL, 0, 0};
    *out = (Threads){malloc(bytes), NULL, 0};
    int failed = thread == NULL || out->order == NULL || chains_init(&ch, 64) != 0;
    Py_ssize_t threads = 0; /* each row's thread, numbered as first seen */
    for (Py_ssize_t i = 0; !failed && i < n; i++) {
        if (i > 0 && h[H_PID][i] == h[H_PID][i - 1] && h[H_TID][i] == h[H_TID][i - 1]) {
            thread[i] = thread[i - 1]; /* the row before's thread (most rows): no lookup */
            continue;
        }
        int64_t was = ch.node[chains_slot(&ch, h[H_PID][i], h[H_TID][i], 0)];
        if (was == NONE) /* a new thread */
            failed = chains_swap(&ch, h[H_PID][i], h[H_TID][i], 0, threads) == -2;
        thread[i] = was != NONE ? was : threads++;
    }
    if (!failed) {
        count = calloc((size_t)threads + 1, sizeof(int64_t));
        out->first = malloc(((size_t)threads + 1) * sizeof(int64_t));
        failed = count == NULL || out->first == NULL;
    }
    if (!failed) {
        int64_t *first = out->first, *order = out->order;
        for (Py_ssize_t i = 0; i < n; i++)
            count[thread[i]]++;
        for (Py_ssize_t t = 0, at = 0; t <= threads; t++) {
            first[t] = at;
            at += count[t];
            count[t] = first[t];
        }
        for (Py_ssize_t i = 0; i < n; i++) /* the rows of each thread, in their order */
            order[count[thread[i]]++] = i;
        const CallKey key = {h[H_START], h[H_END], h[H_ID]};
        for (Py_ssize_t t = 0; t < threads; t++) {
            int64_t *rows = order + first[t];
            Py_ssize_t m = first[t + 1] - first[t];
            int sorted = 1; /* by start already (the events table is): only ties put right */
            for (Py_ssize_t k = 1; k < m && sorted; k++)
                sorted = key.start[rows[k - 1]] <= key.start[rows[k]];
            if (!sorted) {
                sort_calls(rows, m, &key, thread); /* (thread: a row's number, done with) */
                continue;
            }
            for (Py_ssize_t k = 0, j; k < m; k = j) {
                for (j = k + 1; j < m && key.start[rows[j]] == key.start[rows[k]]; j++)
                    ;
                if (j - k > 1)
                    sort_calls(rows + k, j - k, &key, thread);
            }
        }
    }
    free(thread), free(count), free(ch.keys), free(ch.node);
    if (failed) {
        threads_free(out);
        return -1;
    }
    out->threads = threads;
    return 0;
}

/* outer's answer (each call's holder, into holder[i]) for rows by start: in one pass, each
 * thread's reach and holder kept by its number, the rows of one start put in call_before's
 * order first (a thread's ties: the longer first, then by id). -1 when memory ran out. */
static int outer_in_order(int64_t *const *h, Py_ssize_t n, int64_t *holder)
{
    Chains ch = {NULL, NULL, 0, 0};
    Py_ssize_t cap = 64, threads = 0;
    int64_t *reach = malloc((size_t)cap * sizeof(int64_t)), *held = malloc((size_t)cap * 8);
    int64_t *ties = NULL, *tmp = NULL;
    Py_ssize_t tie_cap = 0;
    int failed = reach == NULL || held == NULL || chains_init(&ch, 64) != 0;
    const CallKey key = {h[H_START], h[H_END], h[H_ID]};
    int64_t last_pid = 0, last_tid = 0, t = NONE;
    for (Py_ssize_t i = 0, j; !failed && i < n; i = j) {
        for (j = i + 1; j < n && h[H_START][j] == h[H_START][i]; j++)
            ;
        int64_t one = i, *rows = &one;
        if (j - i > 1) { /* equal starts: in call_before's order */
            if (j - i > tie_cap) {
                tie_cap = 2 * (j - i);
                free(ties), free(tmp);
                ties = malloc((size_t)tie_cap * 8), tmp = malloc((size_t)tie_cap * 8);
                if (ties == NULL || tmp == NULL) {
                    failed = 1;
                    break;
                }
            }
            for (Py_ssize_t k = i; k < j; k++)
                ties[k - i] = k;
            sort_calls(ties, j - i, &key, tmp);
            rows = ties;
        }
        for (Py_ssize_t k = 0; k < j - i; k++) {
            int64_t r = rows[k], pid = h[H_PID][r], tid = h[H_TID][r];
            if (t == NONE || pid != last_pid || tid != last_tid) {
                t = ch.node[chains_slot(&ch, pid, tid, 0)];
                if (t == NONE) { /* a new thread: its first call holds itself */
                    if (threads == cap) {
                        cap *= 2;
                        int64_t *a = realloc(reach, (size_t)cap * 8);
                        reach = a != NULL ? a : reach;
                        int64_t *b = a != NULL ? realloc(held, (size_t)cap * 8) : NULL;
                        held = b != NULL ? b : held;
                        if (a == NULL || b == NULL) {
                            failed = 1;
                            break;
                        }
                    }
                    t = threads++;
                    if (chains_swap(&ch, pid, tid, 0, t) == -2) {
                        failed = 1;
                        break;
                    }
                    reach[t] = h[H_END][r], held[t] = h[H_ID][r];
                    holder[r] = held[t];
                    last_pid = pid, last_tid = tid;
                    continue;
                }
                last_pid = pid, last_tid = tid;
            }
            if (!(h[H_START][r] < reach[t]))
                held[t] = h[H_ID][r];
            holder[r] = held[t];
            if (h[H_END][r] > reach[t])
                reach[t] = h[H_END][r];
        }
    }
    free(reach), free(held), free(ties), free(tmp), free(ch.keys), free(ch.node);
    return failed ? -1 : 0;
}

/* outer(stream): the stream's rows (pid, tid, start, end, id; in any order, fastest by start)
 * are calls; returns the (schema, array) capsule pair of one Int64 column, "outer": each
 * call's outermost call on its thread (its own id where nothing holds it), as _host finds it
 * in polars: in each thread's order, a call is held when it starts before the latest end of
 * the calls before it, and then belongs to the last call that was not. */
static PyObject *outer_calls(PyObject *module, PyObject *args)
{
    (void)module;
    static const char *const names[] = {"outer"};
    static const char *const formats[] = {"l"};
    PyObject *cap;
    if (!PyArg_ParseTuple(args, "O", &cap))
        return NULL;
    Read read;
    int64_t *const *h = read.col;
    Py_ssize_t n = 0;
    PyObject *result = NULL;
    Threads th = {NULL, NULL, 0};
    Column col = {NULL, NULL, 0};
    if (read_columns(cap, NH, &read, &n) != 0)
        goto done;
    if ((col.vals = malloc((size_t)(n ? n : 1) * sizeof(int64_t))) == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    int failed;
    Py_BEGIN_ALLOW_THREADS; /* C arrays only: other threads run meanwhile */
    int in_order = 1; /* by start (the events table is): one pass, in the rows' order */
    for (Py_ssize_t i = 1; i < n && in_order; i++)
        in_order = h[H_START][i - 1] <= h[H_START][i];
    failed = in_order ? outer_in_order(h, n, (int64_t *)col.vals) != 0 : by_thread(h, n, &th) != 0;
    for (Py_ssize_t t = 0; !failed && t < th.threads; t++) {
        int64_t reach = 0, holder = NONE;
        for (Py_ssize_t k = th.first[t]; k < th.first[t + 1]; k++) {
            int64_t i = th.order[k];
            if (k == th.first[t] || !(h[H_START][i] < reach))
                holder = h[H_ID][i];
            col.vals[i] = (uint64_t)holder;
            if (k == th.first[t] || h[H_END][i] > reach)
                reach = h[H_END][i];
        }
    }
    Py_END_ALLOW_THREADS;
    if (failed) {
        PyErr_NoMemory();
        goto done;
    }
    result = arrow_export(&col, 1, n, names, formats);
done:
    if (result == NULL)
        free(col.vals);
    read_free(&read);
    threads_free(&th);
    return result;
}

/* The pieces of one thread's ranges, the rows[0, nrows) of r (in call_before's order):
 * between each two of their distinct start and end times, the innermost range holding the
 * middle, as intervals.enclosing finds it (a stack: a range pops those that end before it
 * ends; a point those that end before it). */
static int pieces_of(int64_t *const *r, const int64_t *rows, Py_ssize_t nrows, Column *out,
                     Py_ssize_t *cap, Py_ssize_t *n, int64_t *times, int64_t *stack_end,
                     int64_t *stack_id)
{
    Py_ssize_t m = 0, top = 0, j = 0;
    for (Py_ssize_t i = 0; i < nrows; i++)
        times[m++] = r[H_START][rows[i]], times[m++] = r[H_END][rows[i]];
    qsort(times, (size_t)m, sizeof *times, by_value);
    for (Py_ssize_t k = 0; k + 1 < m; k++) {
        int64_t t = times[k], u = times[k + 1];
        if (u <= t)
            continue;
        int64_t mid = floor_half(t, u);
        for (; j < nrows && r[H_START][rows[j]] <= mid; j++) {
            int64_t i = rows[j];
            while (top && stack_end[top - 1] < r[H_END][i])
                top--;
            stack_end[top] = r[H_END][i], stack_id[top++] = r[H_ID][i];
        }
        while (top && stack_end[top - 1] < mid)
            top--;
        if (!top)
            continue;
        int64_t row[5] = {r[H_PID][rows[0]], r[H_TID][rows[0]], t, u, stack_id[top - 1]};
        if (columns_push(out, 5, cap, *n, row) != 0)
            return -1;
        ++*n;
    }
    return 0;
}

/* A thread: its pid and tid, its number (by_thread's). */
typedef struct {
    int64_t pid, tid, t;
} ThreadKey;

static int by_key(const void *x, const void *y)
{
    const ThreadKey *a = x, *b = y;
    if (a->pid != b->pid)
        return (a->pid > b->pid) - (a->pid < b->pid);
    return (a->tid > b->tid) - (a->tid < b->tid);
}

/* own_pieces(stream): the stream's rows (pid, tid, start, end, id; in any order, fastest by
 * start) are ranges; returns the (schema, array) capsule pair of own.py's pieces (pid, tid,
 * start_ns, end_ns, parent), by thread (pid, then tid) and time. */
static PyObject *own_pieces(PyObject *module, PyObject *args)
{
    (void)module;
    static const char *const names[] = {"pid", "tid", "start_ns", "end_ns", "parent"};
    static const char *const formats[] = {"l", "l", "l", "l", "l"};
    PyObject *cap_o;
    if (!PyArg_ParseTuple(args, "O", &cap_o))
        return NULL;
    int64_t *times = NULL, *stack_end = NULL, *stack_id = NULL;
    Column out[5] = {{0}};
    Py_ssize_t n = 0, cap = 0, rows = 0;
    PyObject *result = NULL;
    Read read;
    Threads th = {NULL, NULL, 0};
    ThreadKey *keys = NULL;
    int64_t *const *r = read.col;
    if (read_columns(cap_o, NH, &read, &rows) != 0)
        goto done;
    size_t bytes = (size_t)(rows ? rows : 1) * sizeof(int64_t);
    times = malloc(2 * bytes), stack_end = malloc(bytes), stack_id = malloc(bytes);
    if (times == NULL || stack_end == NULL || stack_id == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    int failed = 0;
    Py_BEGIN_ALLOW_THREADS; /* C arrays only: other threads run meanwhile */
    failed = by_thread(r, rows, &th) != 0 ||
             (keys = malloc(((size_t)th.threads + 1) * sizeof *keys)) == NULL;
    for (Py_ssize_t t = 0; !failed && t < th.threads; t++) {
        int64_t i = th.order[th.first[t]];
        keys[t] = (ThreadKey){r[H_PID][i], r[H_TID][i], t};
    }
    if (!failed)
        qsort(keys, (size_t)th.threads, sizeof *keys, by_key);
    for (Py_ssize_t k = 0; !failed && k < th.threads; k++) {
        int64_t t = keys[k].t;
        failed = pieces_of(r, th.order + th.first[t], th.first[t + 1] - th.first[t], out, &cap,
                           &n, times, stack_end, stack_id) != 0;
    }
    Py_END_ALLOW_THREADS;
    if (failed) {
        PyErr_NoMemory();
        goto done;
    }
    result = arrow_export(out, 5, n, names, formats);
done:
    for (int k = 0; k < 5; k++)
        free(out[k].vals);
    read_free(&read);
    threads_free(&th);
    free(keys), free(times), free(stack_end), free(stack_id);
    return result;
}

/* spans(starts, start_groups, ends, end_groups, work, work_groups, ngroups, start, end): each
 * window's (first start, end, the node that ends it) as replay.windows finds them: its start
 * marks' earliest start; its end marks' latest start (of equals, the later node), unless
 * the work launched in it (in node order, the first of equals) ends later. Groups of -1 are
 * left out. Returns three lists, one value per group. */
static PyObject *spans(PyObject *module, PyObject *args)
{
    (void)module;
    PyObject *o[8];
    Py_ssize_t ngroups;
    if (!PyArg_ParseTuple(args, "OOOOOOnOO", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &ngroups,
                          &o[6], &o[7]))
        return NULL;
    Py_buffer b[8];
    int got = 0;
    for (; got < 8; got++)
        if (PyObject_GetBuffer(o[got], &b[got], PyBUF_C_CONTIGUOUS) != 0)
            break;
    PyObject *result = NULL;
    int64_t *w0 = NULL, *w1 = NULL, *last = NULL;
    if (got < 8)
        goto done;
    Py_ssize_t size = b[6].len / 8;
    if (ngroups < 0 || b[1].len != b[0].len || b[3].len != b[2].len || b[5].len != b[4].len ||
        b[7].len != b[6].len) {
        PyErr_SetString(PyExc_ValueError, "spans: arrays of mismatched lengths");
        goto done;
    }
    size_t bytes = (size_t)(ngroups ? ngroups : 1) * sizeof(int64_t);
    w0 = malloc(bytes), w1 = malloc(bytes), last = malloc(bytes);
    if (w0 == NULL || w1 == NULL || last == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    const int64_t *st = b[6].buf, *en = b[7].buf;
    for (Py_ssize_t k = 0; k < ngroups; k++)
        w0[k] = INT64_MAX, w1[k] = NEG_INF, last[k] = NONE;
    for (int part = 0; part < 3; part++) {
        const int64_t *node = b[2 * part].buf, *group = b[2 * part + 1].buf;
        for (Py_ssize_t k = 0, m = b[2 * part].len / 8; k < m; k++) {
            int64_t g = group[k], i = node[k];
            if (g < 0)
                continue;
            if (g >= ngroups || i < 0 || i >= size) {
                PyErr_SetString(PyExc_ValueError, "spans: a group or a node out of range");
                goto done;
            }
            if (part == 0 && st[i] < w0[g])
                w0[g] = st[i];
            else if (part == 1 && (st[i] > w1[g] || (st[i] == w1[g] && i > last[g])))
                w1[g] = st[i], last[g] = i;
            else if (part == 2 && en[i] > w1[g])
                w1[g] = en[i], last[g] = i;
        }
    }
    PyObject *lists[3] = {as_list(w0, ngroups), as_list(w1, ngroups), as_list(last, ngroups)};
    if (lists[0] && lists[1] && lists[2])
        result = PyTuple_Pack(3, lists[0], lists[1], lists[2]);
    for (int k = 0; k < 3; k++)
        Py_XDECREF(lists[k]);
done:
    free(w0), free(w1), free(last);
    for (int k = 0; k < got; k++)
        PyBuffer_Release(&b[k]);
    return result;
}

/* ---- waited: the device work each call that waited for the device waited for ---- */

enum { D_EVENT, D_LAUNCH, D_END, D_PID, ND };
enum { C_EV, C_T0, C_T1, C_WPID, C_BLOCKING, C_SYNC, NCALL };

typedef struct { /* a piece of device work launched by a call: by pid, launch, id */
    int64_t pid, at, ev, end;
} Work;

static int by_work(const void *x, const void *y)
{
    const Work *a = x, *b = y;
    if (a->pid != b->pid)
        return a->pid < b->pid ? -1 : 1;
    if (a->at != b->at)
        return a->at < b->at ? -1 : 1;
    return (a->ev > b->ev) - (a->ev < b->ev);
}

/* The index of the first of v[lo, hi) above x, by key (0: pid, 1: at). */
static Py_ssize_t work_above(const Work *v, Py_ssize_t lo, Py_ssize_t hi, int key, int64_t x)
{
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        if ((key ? v[mid].at : v[mid].pid) <= x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* waited(device, calls): device (event_id, launch_event, end_ns, pid) and calls (event_id,
 * start_ns, end_ns, pid, blocking, sync: 0 or 1; nulls as NUL) as waits.py's returns finds
 * them: a blocking call waited for the latest-ending work it launched that ended inside it
 * (of equal ends, the larger id); else a synchronize for the latest-ending work of its pid
 * launched (by its launch call's start; in order of launch, then id, the last of equal ends)
 * at or before its start, where that ended inside it. Returns the (schema, array) capsules of
 * row (the call's index), wait_event, w_end, one row per waiting call, in the calls' order. */
static PyObject *waited(PyObject *module, PyObject *args)
{
    (void)module;
    static const char *const names[] = {"row", "wait_event", "w_end"};
    static const char *const formats[] = {"l", "l", "l"};
    PyObject *d_o, *k_o, *result = NULL;
    if (!PyArg_ParseTuple(args, "OO", &d_o, &k_o))
        return NULL;
    Read rd = {.ncol = 0}, rk = {.ncol = 0};
    int64_t *const *d = rd.col, *const *k = rk.col;
    Py_ssize_t nd = 0, nk = 0, nw = 0, n = 0, cap = 0;
    int64_t *call_of = NULL, *best_ev = NULL, *best_end = NULL, *latest = NULL, *last = NULL;
    Work *work = NULL;
    Column out[3] = {{0}};
    if (read_columns(d_o, ND, &rd, &nd) != 0 || read_columns(k_o, NCALL, &rk, &nk) != 0)
        goto done;
    int64_t size = 0;
    for (Py_ssize_t c = 0; c < nk; c++)
        if (k[C_EV][c] != NUL && k[C_EV][c] >= size)
            size = k[C_EV][c] + 1;
    size_t nk_bytes = (size_t)(nk ? nk : 1) * sizeof(int64_t);
    size_t nd_bytes = (size_t)(nd ? nd : 1) * sizeof(int64_t);
    call_of = malloc((size_t)(size ? size : 1) * sizeof(int64_t));
    best_ev = malloc(nk_bytes), best_end = malloc(nk_bytes);
    latest = malloc(nd_bytes), last = malloc(nd_bytes);
    work = malloc((size_t)(nd ? nd : 1) * sizeof(Work));
    if (call_of == NULL || best_ev == NULL || best_end == NULL || latest == NULL ||
        last == NULL || work == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (int64_t e = 0; e < size; e++)
        call_of[e] = NONE;
    int syncs = 0; /* without a synchronize, no work need be put in order */
    for (Py_ssize_t c = 0; c < nk; c++) {
        syncs |= k[C_SYNC][c] == 1;
        if (k[C_EV][c] != NUL && k[C_EV][c] >= 0)
            call_of[k[C_EV][c]] = c;
        best_ev[c] = NONE;
    }
    for (Py_ssize_t i = 0; i < nd; i++) {
        int64_t l = d[D_LAUNCH][i], c, end = d[D_END][i], ev = d[D_EVENT][i];
        if (l == NUL || l < 0 || l >= size || (c = call_of[l]) == NONE || ev == NUL ||
            end == NUL)
            continue;
        if (k[C_BLOCKING][c] == 1 && k[C_T0][c] < end && end <= k[C_T1][c] &&
            (best_ev[c] == NONE || end > best_end[c] || (end == best_end[c] && ev > best_ev[c])))
            best_ev[c] = ev, best_end[c] = end;
        if (syncs && d[D_PID][i] != NUL && k[C_T0][c] != NUL)
            work[nw++] = (Work){d[D_PID][i], k[C_T0][c], ev, end};
    }
    qsort(work, (size_t)nw, sizeof *work, by_work);
    for (Py_ssize_t i = 0; i < nw; i++) { /* each pid's running latest end, and whose */
        int first = i == 0 || work[i].pid != work[i - 1].pid;
        if (first || work[i].end >= latest[i - 1])
            latest[i] = work[i].end, last[i] = work[i].ev;
        else
            latest[i] = latest[i - 1], last[i] = last[i - 1];
    }
    for (Py_ssize_t c = 0; c < nk; c++) {
        int64_t row[3] = {c, best_ev[c], best_end[c]};
        if (best_ev[c] == NONE) {
            int64_t pid = k[C_WPID][c], t = k[C_T0][c];
            if (k[C_SYNC][c] != 1 || pid == NUL || t == NUL)
                continue;
            Py_ssize_t lo = work_above(work, 0, nw, 0, pid - 1);
            Py_ssize_t j = work_above(work, lo, work_above(work, lo, nw, 0, pid), 1, t) - 1;
            if (j < lo || !(latest[j] > t && latest[j] <= k[C_T1][c]))
                continue;
            row[1] = last[j], row[2] = latest[j];
        }
        if (columns_push(out, 3, &cap, n, row) != 0) {
            PyErr_NoMemory();
            goto done;
        }
        n++;
    }
    result = arrow_export(out, 3, n, names, formats);
done:
    for (int j = 0; j < 3; j++) /* moved into the result where it was made */
        free(out[j].vals);
    read_free(&rd);
    read_free(&rk);
    free(call_of), free(best_ev), free(best_end), free(latest), free(last), free(work);
    return result;
}

/* ---- launched: each node's launch, the outermost call its link names (graph.py) ---- */

/* launched(size, inner, edges, ids): inner (event_id, outer: each host call's outermost call),
 * edges (dst, src: each link, one at most per dst) and ids (event ids, null as NUL), events
 * numbered below size. Returns the (schema, array) capsules of one Int64 column, launch_event:
 * per id, the outer call of the event linked to it, null where there is none. */
static PyObject *launched(PyObject *module, PyObject *args)
{
    (void)module;
    static const char *const names[] = {"launch_event"};
    static const char *const formats[] = {"l"};
    Py_ssize_t size, ni = 0, ne = 0, nd = 0;
    PyObject *inner_o, *edges_o, *ids_o, *result = NULL;
    if (!PyArg_ParseTuple(args, "nOOO", &size, &inner_o, &edges_o, &ids_o))
        return NULL;
    Read ri = {.ncol = 0}, re = {.ncol = 0}, rd = {.ncol = 0};
    int64_t *outer_of = NULL, *src_of = NULL;
    Column col = {NULL, NULL, 0};
    if (size < 0 || read_columns(inner_o, 2, &ri, &ni) != 0 ||
        read_columns(edges_o, 2, &re, &ne) != 0 || read_columns(ids_o, 1, &rd, &nd) != 0)
        goto done;
    size_t bytes = (size_t)(size ? size : 1) * sizeof(int64_t);
    outer_of = malloc(bytes), src_of = malloc(bytes);
    col.vals = malloc((size_t)(nd ? nd : 1) * 8);
    col.bits = calloc((size_t)(nd + 7) / 8 + 1, 1);
    if (outer_of == NULL || src_of == NULL || col.vals == NULL || col.bits == NULL) {
        PyErr_NoMemory();
        goto done;
    }
#define IN_RANGE(e) ((e) != NUL && (e) >= 0 && (e) < size)
    for (Py_ssize_t e = 0; e < size; e++)
        outer_of[e] = src_of[e] = NONE;
    for (Py_ssize_t i = 0; i < ni; i++)
        if (IN_RANGE(ri.col[0][i]) && ri.col[1][i] != NUL)
            outer_of[ri.col[0][i]] = ri.col[1][i];
    for (Py_ssize_t i = 0; i < ne; i++)
        if (IN_RANGE(re.col[0][i]) && re.col[1][i] != NUL)
            src_of[re.col[0][i]] = re.col[1][i];
    int64_t nulls = 0;
    for (Py_ssize_t i = 0; i < nd; i++) {
        int64_t id = rd.col[0][i], src = IN_RANGE(id) ? src_of[id] : NONE;
        int64_t got = src != NONE && IN_RANGE(src) ? outer_of[src] : NONE;
        col.vals[i] = (uint64_t)(got == NONE ? 0 : got);
        if (got == NONE)
            nulls++;
        else
            col.bits[i >> 3] |= (uint8_t)(1u << (i & 7));
    }
#undef IN_RANGE
    col.nulls = nulls;
    result = arrow_export(&col, 1, nd, names, formats);
done:
    free(col.vals), free(col.bits); /* moved into the result where it was made */
    free(outer_of), free(src_of);
    read_free(&ri);
    read_free(&re);
    read_free(&rd);
    return result;
}

static PyMethodDef methods[] = {
    {"spans", spans, METH_VARARGS, "Each window's start, end and the node that ends it."},
    {"launched", launched, METH_VARARGS, "Each node's launch: the outer call linked to it."},
    {"waited", waited, METH_VARARGS, "The device work each waiting call waited for."},
    {"outer", outer_calls, METH_VARARGS, "Each host call's outermost call on its thread."},
    {"put", put, METH_VARARGS, "Each node's changed value written into an array."},
    {"own_pieces", own_pieces, METH_VARARGS, "The host's own time, by the range holding it."},
    {"covered", covered, METH_VARARGS, "The time of each interval inside ranges."},
    {"put_frame", put_frame, METH_VARARGS, "Each node's value of a frame put in."},
    {"nullable", nullable, METH_VARARGS, "A graph's array as an Int64 column, -1 a null."},
    {"link", link_nodes, METH_VARARGS, "A graph's dependencies, gaps, lags and delays (module doc)."},
    {"replay", replay, METH_VARARGS, "The replay's start and end of every node (module doc)."},
    {"ints", ints, METH_VARARGS, "An Int64 column's values from its Arrow C stream."},
    {"walk", walk, METH_VARARGS, "Each window's critical path (module doc)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_replay", "The replay of a critical-path graph, compiled.", -1,
    methods,
};

PyMODINIT_FUNC PyInit__replay(void) { return PyModule_Create(&module); }
