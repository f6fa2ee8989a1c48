// CDBusGLib: runs a libdbus connection inside a GLib main context.
//
// Why this shim exists: libfprint and polkit's GDBus proxy only make progress
// while a GLib main context iterates, and libdbus has its own watch/timeout
// model. Rather than two event loops (and locks between them), libdbus hands
// its watches, timeouts and dispatching to the same GMainContext, so one thread
// serves the bus, the sensor and polkit. The callbacks libdbus needs are C
// function pointers that own GSources; that bookkeeping is simpler and safer
// in C than through Swift closures.
#ifndef CDBUSGLIB_H
#define CDBUSGLIB_H
// The C types are only declared here, not included: the Swift modules CDBus
// and CGLib own those headers, and including them twice makes Clang see two
// different definitions of GLib's inline helpers.
typedef struct DBusConnection DBusConnection;
typedef struct _GMainContext GMainContext;

/// Attaches `connection`'s I/O, timeouts and message dispatch to `context`.
/// From then on every libdbus callback (filters, object handlers, pending-call
/// notifications) runs on the thread that iterates `context`.
void cdbusglib_attach(DBusConnection *connection, GMainContext *context);

/// Undoes cdbusglib_attach; call before closing the connection.
void cdbusglib_detach(DBusConnection *connection);

/// A queue of work for `context`'s thread: one GSource for all of it, so that
/// posting a job (every Swift task resume on the loop) allocates no source.
/// Returns the queue (as void *), attached to `context`, with a reference
/// the caller keeps for the context's lifetime.
void *cdbusglib_job_queue_new(GMainContext *context);

/// Runs `function(data)` on the queue's context thread at a later iteration,
/// in the order posted; never re-entrantly from inside the caller, even when
/// called on that thread. Safe to call from any thread.
void cdbusglib_job_queue_post(void *job_queue, void (*function)(void *), void *data);

/// Detaches the queue from its context and drops the caller's reference;
/// jobs still queued never run.
void cdbusglib_job_queue_free(void *job_queue);

/// Runs `function(data)` once after `milliseconds` on `context`'s thread.
/// Returns the timer's GSource (as void *: GLib's types belong to CGLib) with
/// a reference for the caller, who cancels with cdbusglib_cancel_timer (safe
/// even after it fired: a source id could by then name another source) and
/// drops it with cdbusglib_release_timer.
void *cdbusglib_timer(GMainContext *context, unsigned int milliseconds,
                      void (*function)(void *), void *data, void (*destroy)(void *));
void cdbusglib_cancel_timer(void *timer);
void cdbusglib_release_timer(void *timer);

/// Runs `function(data)` on `context`'s thread when `signal_number` arrives
/// (SIGTERM, SIGINT, SIGHUP). Returns the source id.
unsigned int cdbusglib_on_signal(GMainContext *context, int signal_number,
                          void (*function)(void *), void *data);

/// glibc's M_MMAP_THRESHOLD, fixed at `bytes` for the whole process (see
/// BusConnection.mapLargeBuffersApart). Returns mallopt's answer: 1 if set.
/// Here because Swift's Glibc module does not include <malloc.h>.
int cdbusglib_fix_mmap_threshold(int bytes);
#endif
