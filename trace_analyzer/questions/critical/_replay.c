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
 * ints(stream) takes an Int64 column without nulls from polars as an Arrow C stream (its
 * Series.__arrow_c_stream__) and returns its values as a bytearray of int64: the graph's
 * arrays without a Python int per value (graph.py).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
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

static PyMethodDef methods[] = {
    {"replay", replay, METH_VARARGS, "The replay's start and end of every node (module doc)."},
    {"ints", ints, METH_VARARGS, "An Int64 column's values from its Arrow C stream."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_replay", "The replay of a critical-path graph, compiled.", -1,
    methods,
};

PyMODINIT_FUNC PyInit__replay(void) { return PyModule_Create(&module); }
