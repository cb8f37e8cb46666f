/* The replay of a critical-path graph (questions/critical/replay.py), compiled.
 *
 * replay(first, anchored, pin, recorded, dur, gap, lag, delay, tail, chain, launch, wait, cross)
 * walks the nodes in their order and starts each at the latest of its dependencies plus its
 * delay, exactly as replay.py's loop does (which stays the fallback and the reference: a test
 * holds the two to the same times). Every array is a buffer of int64 ("q"), one value per
 * node (anchored too: non-zero, the node keeps its recorded start); pin is a buffer of bytes
 * (non-zero: the same). The nodes before ``first`` keep their recorded times. Returns (start,
 * end) as bytearrays of int64, which replay.py views as memoryviews.
 *
 * walk(w0s, lasts, start, end, gap, lag, tail, chain, launch, wait, cross, anchored, own) walks
 * each window's critical path back from its last node, as replay.py's path() does (its
 * reference): returns five lists, one value per segment in time order within each window:
 * the window's index, start, end, kind (the codes of replay.KIND_CODES) and node.
 *
 * ints(stream) takes an Int64 column without nulls from polars as an Arrow C stream (its
 * Series.__arrow_c_stream__) and returns its values as a bytearray of int64: the graph's
 * arrays without a Python int per value (graph.py).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../readers/_arrow_abi.h"

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
    PyObject *pin_o, *arr_o[NARR];
    if (!PyArg_ParseTuple(args, "nOOOOOOOOOOOO", &first, &arr_o[ANCHORED], &pin_o,
                          &arr_o[RECORDED], &arr_o[DUR], &arr_o[GAP], &arr_o[LAG], &arr_o[DELAY],
                          &arr_o[TAIL], &arr_o[CHAIN], &arr_o[LAUNCH], &arr_o[WAIT], &arr_o[CROSS]))
        return NULL;
    Py_buffer pin_b, arr_b[NARR];
    if (PyObject_GetBuffer(pin_o, &pin_b, PyBUF_C_CONTIGUOUS) != 0)
        return NULL;
    Py_ssize_t n = pin_b.len;
    if (first < 0 || first > n) {
        PyBuffer_Release(&pin_b);
        PyErr_SetString(PyExc_ValueError, "first: out of range");
        return NULL;
    }
    int got = 0;
    for (; got < NARR; got++)
        if (view(arr_o[got], &arr_b[got], n, 8, "an array") != 0)
            break;
    PyObject *start_o = NULL, *end_o = NULL;
    if (got == NARR) {
        start_o = PyByteArray_FromStringAndSize(NULL, n * 8);
        end_o = start_o ? PyByteArray_FromStringAndSize(NULL, n * 8) : NULL;
    }
    if (end_o != NULL) {
        const uint8_t *pin = pin_b.buf;
        const int64_t *a[NARR];
        for (int k = 0; k < NARR; k++)
            a[k] = arr_b[k].buf;
        int64_t *start = (int64_t *)PyByteArray_AS_STRING(start_o);
        int64_t *end = (int64_t *)PyByteArray_AS_STRING(end_o);
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
    PyBuffer_Release(&pin_b);
    if (end_o == NULL) {
        Py_XDECREF(start_o);
        return NULL;
    }
    PyObject *pair = PyTuple_Pack(2, start_o, end_o);
    Py_DECREF(start_o);
    Py_DECREF(end_o);
    return pair;
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
    if (!failed) {
        PyObject *lists[5] = {NULL};
        int k = 0;
        for (; k < 5 && (lists[k] = as_list(out[k].v, out[k].n)) != NULL; k++)
            ;
        if (k == 5)
            result = PyTuple_Pack(5, lists[0], lists[1], lists[2], lists[3], lists[4]);
        for (int j = 0; j < k; j++)
            Py_DECREF(lists[j]);
    }
    for (int k = 0; k < 5; k++)
        free(out[k].v);
    for (int k = 0; k < got; k++)
        PyBuffer_Release(&b[k]);
    return result;
}

static PyMethodDef methods[] = {
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
