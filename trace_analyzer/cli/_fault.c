/* traceana's last word when native code ends the process (trace_analyzer/cli/fault.py).
 *
 * polars aborts the process when an allocation fails (Rust's allocation error handler calls
 * abort()), and a fault in native code raises SIGSEGV or SIGBUS. Python sees neither: the
 * process dies with its signal and the user reads "Aborted (core dumped)" or a Rust message,
 * exit 134. The handler here writes the one line set beforehand by Python (which run was being
 * analysed, and what to do) to standard error and ends the process with exit code 2, as every
 * other unusable input does. It calls only write() and _exit(), both async-signal-safe, on
 * an alternate stack (a stack overflow can be the fault), from a static buffer: a handler
 * that allocated would fail where memory ran out.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#define MESSAGE_MAX 8192
#define STACK_SIZE (64 * 1024)

static char message[MESSAGE_MAX];
static volatile sig_atomic_t length = 0; /* 0 while the message is rewritten */
static char stack[STACK_SIZE];

static void on_fault(int signo)
{
    (void)signo;
    size_t n = (size_t)length;
    const char *p = message;
    while (n > 0) {
        ssize_t w = write(2, p, n);
        if (w <= 0)
            break;
        p += w;
        n -= (size_t)w;
    }
    _exit(2);
}

static PyObject *set_message(PyObject *self, PyObject *arg)
{
    (void)self;
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    size_t n = (size_t)view.len < MESSAGE_MAX ? (size_t)view.len : MESSAGE_MAX;
    length = 0;
    memcpy(message, view.buf, n);
    if (n == MESSAGE_MAX)
        message[n - 1] = '\n'; /* cut short: still one line */
    length = (sig_atomic_t)n;
    PyBuffer_Release(&view);
    Py_RETURN_NONE;
}

static PyObject *install(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *signals;
    if (!PyArg_ParseTuple(args, "O", &signals))
        return NULL;
    PyObject *seq = PySequence_Fast(signals, "install() takes a sequence of signal numbers");
    if (seq == NULL)
        return NULL;
    stack_t ss;
    memset(&ss, 0, sizeof ss);
    ss.ss_sp = stack;
    ss.ss_size = STACK_SIZE;
    if (sigaltstack(&ss, NULL) != 0) {
        Py_DECREF(seq);
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_fault;
    sa.sa_flags = SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    Py_ssize_t count = PySequence_Fast_GET_SIZE(seq);
    for (Py_ssize_t i = 0; i < count; i++) {
        long signo = PyLong_AsLong(PySequence_Fast_GET_ITEM(seq, i));
        if (signo == -1 && PyErr_Occurred()) {
            Py_DECREF(seq);
            return NULL;
        }
        if (sigaction((int)signo, &sa, NULL) != 0) {
            Py_DECREF(seq);
            return PyErr_SetFromErrno(PyExc_OSError);
        }
    }
    Py_DECREF(seq);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"set_message", set_message, METH_O,
     "set_message(line: bytes): what the handler writes to standard error."},
    {"install", install, METH_VARARGS,
     "install(signals): handle each signal number by writing the message and exiting 2."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_fault",
    "One line and exit 2 when native code aborts or faults (cli/fault.py).", -1, methods,
};

PyMODINIT_FUNC PyInit__fault(void) { return PyModule_Create(&module); }
