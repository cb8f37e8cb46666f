/* Arrow's C data and stream interfaces, the structs alone (arrow.apache.org/docs/format/
 * CDataInterface.html, CStreamInterface.html): what _arrow.h builds on, and what the critical
 * path's compiled replay reads a polars column through (questions/critical/_replay.c).
 */
#ifndef TRACEANA_ARROW_ABI_H
#define TRACEANA_ARROW_ABI_H

#include <stdint.h>

struct ArrowSchema {
    const char *format, *name, *metadata;
    int64_t flags, n_children;
    struct ArrowSchema **children, *dictionary;
    void (*release)(struct ArrowSchema *);
    void *private_data;
};

struct ArrowArray {
    int64_t length, null_count, offset, n_buffers, n_children;
    const void **buffers;
    struct ArrowArray **children, *dictionary;
    void (*release)(struct ArrowArray *);
    void *private_data;
};

struct ArrowArrayStream {
    int (*get_schema)(struct ArrowArrayStream *, struct ArrowSchema *);
    int (*get_next)(struct ArrowArrayStream *, struct ArrowArray *);
    const char *(*get_last_error)(struct ArrowArrayStream *);
    void (*release)(struct ArrowArrayStream *);
    void *private_data;
};

#endif
