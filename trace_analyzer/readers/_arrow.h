/* Arrow's C data interface (arrow.apache.org/docs/format/CDataInterface.html and
 * CStreamInterface.html), the part the compiled readers use: columns of 64-bit values made in
 * C leave as one struct array that polars takes without a copy (arrow_export), and a string
 * column comes in from polars as a stream of chunks (polars exports strings as "vu", string
 * views). Included by _kscan.c and _ekeys.c, each its own extension.
 */
#ifndef TRACEANA_ARROW_H
#define TRACEANA_ARROW_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>

#define ARROW_MAX_COLUMNS 24

#include "_arrow_abi.h"

typedef struct {
    uint64_t *vals; /* int64 or double, by bits */
    uint8_t *bits;  /* validity, one bit a row (Arrow's layout) */
    int64_t nulls;
} Column;

typedef struct { /* what the struct schema owns, freed by its release */
    struct ArrowSchema schema[ARROW_MAX_COLUMNS], *schemas[ARROW_MAX_COLUMNS];
} SchemaData;

typedef struct { /* what the struct array owns: its children (which own their buffers) */
    struct ArrowArray array[ARROW_MAX_COLUMNS], *arrays[ARROW_MAX_COLUMNS];
    const void *buffers[1];
} ArrayData;

typedef struct { /* what a column owns, apart from its parent: a consumer may move it out */
    const void *buffers[2];
} ChildData;

static void release_child_schema(struct ArrowSchema *x) { x->release = NULL; }

static void release_schema(struct ArrowSchema *x)
{
    for (int i = 0; i < x->n_children; i++)
        if (x->children[i]->release)
            x->children[i]->release(x->children[i]);
    free(x->private_data);
    x->release = NULL;
}

static void release_child_array(struct ArrowArray *x)
{
    ChildData *d = x->private_data;
    free((void *)d->buffers[0]);
    free((void *)d->buffers[1]);
    free(d);
    x->release = NULL;
}

static void release_array(struct ArrowArray *x)
{
    for (int i = 0; i < x->n_children; i++)
        if (x->children[i]->release)
            x->children[i]->release(x->children[i]);
    free(x->private_data);
    x->release = NULL;
}

static void schema_capsule_free(PyObject *cap)
{
    struct ArrowSchema *x = PyCapsule_GetPointer(cap, "arrow_schema");
    if (x != NULL && x->release)
        x->release(x);
    free(x);
}

static void array_capsule_free(PyObject *cap)
{
    struct ArrowArray *x = PyCapsule_GetPointer(cap, "arrow_array");
    if (x != NULL && x->release)
        x->release(x);
    free(x);
}

/* The struct schema of ncol nullable columns, named names[i], of Arrow format formats[i]. */
static struct ArrowSchema *arrow_schema(int ncol, const char *const *names,
                                        const char *const *formats)
{
    struct ArrowSchema *top = calloc(1, sizeof *top);
    SchemaData *d = calloc(1, sizeof *d);
    if (top == NULL || d == NULL) {
        free(top);
        free(d);
        return NULL;
    }
    for (int i = 0; i < ncol; i++) {
        d->schema[i] = (struct ArrowSchema){
            .format = formats[i],
            .name = names[i],
            .flags = 2, /* ARROW_FLAG_NULLABLE */
            .release = release_child_schema,
        };
        d->schemas[i] = &d->schema[i];
    }
    *top = (struct ArrowSchema){.format = "+s", .name = "", .n_children = ncol,
                                .children = d->schemas, .release = release_schema,
                                .private_data = d};
    return top;
}

/* The struct array of the columns, their buffers taken out of col (which keeps none). */
static struct ArrowArray *arrow_array(Column *col, int ncol, int64_t rows)
{
    struct ArrowArray *top = calloc(1, sizeof *top);
    ArrayData *d = calloc(1, sizeof *d);
    ChildData *child[ARROW_MAX_COLUMNS] = {NULL};
    int ok = top != NULL && d != NULL;
    for (int i = 0; i < ncol && ok; i++)
        ok = (child[i] = calloc(1, sizeof(ChildData))) != NULL;
    if (!ok) {
        for (int i = 0; i < ncol; i++)
            free(child[i]);
        free(top);
        free(d);
        return NULL;
    }
    for (int i = 0; i < ncol; i++) {
        child[i]->buffers[0] = col[i].bits;
        child[i]->buffers[1] = col[i].vals;
        d->array[i] = (struct ArrowArray){
            .length = rows, .null_count = col[i].nulls, .n_buffers = 2,
            .buffers = child[i]->buffers, .release = release_child_array,
            .private_data = child[i],
        };
        d->arrays[i] = &d->array[i];
        col[i] = (Column){NULL, NULL, 0};
    }
    *top = (struct ArrowArray){.length = rows, .n_children = ncol, .n_buffers = 1,
                               .buffers = d->buffers, /* the struct's validity: none */
                               .children = d->arrays, .release = release_array,
                               .private_data = d};
    return top;
}

/* (schema capsule, array capsule): what __arrow_c_array__ returns, the columns' buffers moved
 * into the array; NULL with an exception set when memory runs out. */
static PyObject *arrow_export(Column *col, int ncol, int64_t rows, const char *const *names,
                              const char *const *formats)
{
    struct ArrowSchema *schema = arrow_schema(ncol, names, formats);
    if (schema == NULL)
        return PyErr_NoMemory();
    PyObject *sc = PyCapsule_New(schema, "arrow_schema", schema_capsule_free);
    if (sc == NULL) {
        schema->release(schema);
        free(schema);
        return NULL;
    }
    struct ArrowArray *array = arrow_array(col, ncol, rows);
    if (array == NULL) {
        Py_DECREF(sc);
        return PyErr_NoMemory();
    }
    PyObject *ac = PyCapsule_New(array, "arrow_array", array_capsule_free);
    if (ac == NULL) {
        array->release(array);
        free(array);
        Py_DECREF(sc);
        return NULL;
    }
    PyObject *pair = PyTuple_Pack(2, sc, ac);
    Py_DECREF(sc);
    Py_DECREF(ac);
    return pair;
}

#endif
