// See include/CDBusGLib.h for why this file exists.
#include <dbus/dbus.h>
#include <glib.h>
#include "CDBusGLib.h"
#include <glib-unix.h>
#include <malloc.h>

typedef struct {
    GMainContext *context;
    DBusConnection *connection;   // not owned: the connection owns us
    GSource *dispatch_source;     // pending idle dispatch, or NULL
} Attachment;

static dbus_int32_t attachment_slot = -1;

// ---- watches and timeouts: one GSource per enabled one -------------------

static gboolean watch_ready(gint fd, GIOCondition condition, gpointer user_data) {
    (void)fd;
    DBusWatch *watch = user_data;
    unsigned int flags = 0;
    if (condition & G_IO_IN) flags |= DBUS_WATCH_READABLE;
    if (condition & G_IO_OUT) flags |= DBUS_WATCH_WRITABLE;
    if (condition & G_IO_ERR) flags |= DBUS_WATCH_ERROR;
    if (condition & G_IO_HUP) flags |= DBUS_WATCH_HANGUP;
    dbus_watch_handle(watch, flags);
    return G_SOURCE_CONTINUE;
}

// The GSource that serves an enabled watch: its fd, for what libdbus wants.
static GSource *watch_source_new(DBusWatch *watch) {
    unsigned int flags = dbus_watch_get_flags(watch);
    GIOCondition condition = G_IO_ERR | G_IO_HUP;
    if (flags & DBUS_WATCH_READABLE) condition |= G_IO_IN;
    if (flags & DBUS_WATCH_WRITABLE) condition |= G_IO_OUT;
    GSource *source = g_unix_fd_source_new(dbus_watch_get_unix_fd(watch), condition);
    g_source_set_callback(source, (GSourceFunc)(void (*)(void))watch_ready, watch, NULL);
    return source;
}

static gboolean timeout_fired(gpointer user_data) {
    dbus_timeout_handle((DBusTimeout *)user_data);
    return G_SOURCE_CONTINUE;
}

// The GSource that serves an enabled timeout: its interval, again and again.
static GSource *timeout_source_new(DBusTimeout *timeout) {
    GSource *source = g_timeout_source_new((guint)dbus_timeout_get_interval(timeout));
    g_source_set_callback(source, timeout_fired, timeout, NULL);
    return source;
}

// libdbus treats watches and timeouts alike: it adds one (enabled or not),
// toggles it (enabled or disabled; a timeout's interval may have changed
// too) and removes it before it frees it. For both, the object's data is
// the GSource that serves it while it is enabled, released with
// g_source_unref when the data is replaced. This is that bookkeeping, once:
// kind_start, kind_stop and the three callbacks for
// dbus_connection_set_kind_functions, over libdbus's dbus_kind_get_enabled,
// dbus_kind_get_data and dbus_kind_set_data and our kind_source_new.
#define SOURCE_PER_ENABLED(kind, Type)                                          \
    static void kind##_start(Type *object, GMainContext *context) {             \
        if (!dbus_##kind##_get_enabled(object) || dbus_##kind##_get_data(object)) \
            return;                                                             \
        GSource *source = kind##_source_new(object);                            \
        g_source_attach(source, context);                                       \
        dbus_##kind##_set_data(object, source, (DBusFreeFunction)g_source_unref); \
    }                                                                           \
    static void kind##_stop(Type *object) {                                     \
        GSource *source = dbus_##kind##_get_data(object);                       \
        if (!source) return;                                                    \
        g_source_destroy(source);                                               \
        dbus_##kind##_set_data(object, NULL, NULL); /* unrefs the source */     \
    }                                                                           \
    static dbus_bool_t add_##kind(Type *object, void *user_data) {              \
        kind##_start(object, ((Attachment *)user_data)->context);               \
        return TRUE;                                                            \
    }                                                                           \
    static void remove_##kind(Type *object, void *user_data) {                  \
        (void)user_data;                                                        \
        kind##_stop(object);                                                    \
    }                                                                           \
    static void toggle_##kind(Type *object, void *user_data) {                  \
        kind##_stop(object);                                                    \
        kind##_start(object, ((Attachment *)user_data)->context);               \
    }

SOURCE_PER_ENABLED(watch, DBusWatch)
SOURCE_PER_ENABLED(timeout, DBusTimeout)

// ---- dispatching: drain incoming messages from an idle source ----------

static gboolean dispatch_some(gpointer user_data) {
    Attachment *attachment = user_data;
    // One message per iteration keeps the sensor and polkit responsive while
    // a burst of calls arrives.
    if (dbus_connection_dispatch(attachment->connection) == DBUS_DISPATCH_DATA_REMAINS)
        return G_SOURCE_CONTINUE;
    g_source_unref(attachment->dispatch_source);
    attachment->dispatch_source = NULL;
    return G_SOURCE_REMOVE;
}

static void schedule_dispatch(Attachment *attachment) {
    if (attachment->dispatch_source) return;
    GSource *source = g_idle_source_new();
    g_source_set_priority(source, G_PRIORITY_DEFAULT);
    g_source_set_callback(source, dispatch_some, attachment, NULL);
    attachment->dispatch_source = source;
    g_source_attach(source, attachment->context);
}

static void dispatch_status_changed(DBusConnection *connection, DBusDispatchStatus status, void *user_data) {
    (void)connection;
    if (status == DBUS_DISPATCH_DATA_REMAINS) schedule_dispatch(user_data);
}

static void wakeup_main(void *user_data) {
    Attachment *attachment = user_data;
    // On the loop's own thread the loop is running, not sleeping: waking it
    // would only cost an eventfd write and read and an extra poll per message.
    if (g_main_context_is_owner(attachment->context)) return;
    g_main_context_wakeup(attachment->context);
}

static void attachment_free(void *memory) {
    Attachment *attachment = memory;
    if (attachment->dispatch_source) {
        g_source_destroy(attachment->dispatch_source);
        g_source_unref(attachment->dispatch_source);
    }
    g_main_context_unref(attachment->context);
    g_free(attachment);
}

void cdbusglib_attach(DBusConnection *connection, GMainContext *context) {
    if (!dbus_connection_allocate_data_slot(&attachment_slot)) g_error("out of memory");
    Attachment *attachment = g_new0(Attachment, 1);
    attachment->context = g_main_context_ref(context);
    attachment->connection = connection;
    dbus_connection_set_data(connection, attachment_slot, attachment, attachment_free);
    dbus_connection_set_watch_functions(connection, add_watch, remove_watch, toggle_watch, attachment, NULL);
    dbus_connection_set_timeout_functions(connection, add_timeout, remove_timeout, toggle_timeout, attachment, NULL);
    dbus_connection_set_wakeup_main_function(connection, wakeup_main, attachment, NULL);
    dbus_connection_set_dispatch_status_function(connection, dispatch_status_changed, attachment, NULL);
    if (dbus_connection_get_dispatch_status(connection) == DBUS_DISPATCH_DATA_REMAINS)
        schedule_dispatch(attachment);
}

void cdbusglib_detach(DBusConnection *connection) {
    dbus_connection_set_watch_functions(connection, NULL, NULL, NULL, NULL, NULL);
    dbus_connection_set_timeout_functions(connection, NULL, NULL, NULL, NULL, NULL);
    dbus_connection_set_wakeup_main_function(connection, NULL, NULL, NULL);
    dbus_connection_set_dispatch_status_function(connection, NULL, NULL, NULL);
    dbus_connection_set_data(connection, attachment_slot, NULL, NULL);
}

// ---- running work on the context's thread -------------------------------

typedef struct {
    void (*function)(void *);
    void *data;
    void (*destroy)(void *);
} Work;

static gboolean work_run(gpointer user_data) {
    Work *work = user_data;
    work->function(work->data);
    return G_SOURCE_REMOVE;
}

static void work_free(gpointer user_data) {
    Work *work = user_data;
    if (work->destroy) work->destroy(work->data);
    g_free(work);
}


// ---- the job queue: one GSource per context for all posted work ----------
//
// Posting used to attach a new idle GSource per job; every Swift task resume
// on the loop paid for a source's allocation, a hash-table insert and removal
// in the context, and its own dispatch. One persistent source with a locked
// array of jobs costs an append under a mutex, and one dispatch runs every
// job that was queued when it started (jobs queued meanwhile wait for the
// next iteration, so posting is never re-entrant and I/O is not starved).

typedef struct {
    void (*function)(void *);
    void *data;
} Job;

typedef struct {
    GSource source;
    GMutex lock;
    GArray *queued;    /* Job, appended by any thread */
    GArray *running;   /* Job, swapped in by dispatch; only the loop's thread */
} JobQueue;

static gboolean jobs_ready(GSource *source) {
    JobQueue *queue = (JobQueue *)source;
    g_mutex_lock(&queue->lock);
    gboolean ready = queue->queued->len > 0;
    g_mutex_unlock(&queue->lock);
    return ready;
}

static gboolean jobs_prepare(GSource *source, gint *timeout) {
    *timeout = -1;
    return jobs_ready(source);
}

static gboolean jobs_check(GSource *source) { return jobs_ready(source); }

static gboolean jobs_dispatch(GSource *source, GSourceFunc callback, gpointer user_data) {
    (void)callback; (void)user_data;
    JobQueue *queue = (JobQueue *)source;
    g_mutex_lock(&queue->lock);
    GArray *batch = queue->queued;
    queue->queued = queue->running;
    queue->running = batch;
    g_mutex_unlock(&queue->lock);
    for (guint i = 0; i < batch->len; i++) {
        Job job = g_array_index(batch, Job, i);
        job.function(job.data);
    }
    g_array_set_size(batch, 0);
    return G_SOURCE_CONTINUE;
}

static void jobs_finalize(GSource *source) {
    JobQueue *queue = (JobQueue *)source;
    g_array_unref(queue->queued);
    g_array_unref(queue->running);
    g_mutex_clear(&queue->lock);
}

static GSourceFuncs job_queue_funcs = {
    .prepare = jobs_prepare,
    .check = jobs_check,
    .dispatch = jobs_dispatch,
    .finalize = jobs_finalize,
};

void *cdbusglib_job_queue_new(GMainContext *context) {
    GSource *source = g_source_new(&job_queue_funcs, sizeof(JobQueue));
    JobQueue *queue = (JobQueue *)source;
    g_mutex_init(&queue->lock);
    queue->queued = g_array_sized_new(FALSE, FALSE, sizeof(Job), 64);
    queue->running = g_array_sized_new(FALSE, FALSE, sizeof(Job), 64);
    g_source_set_priority(source, G_PRIORITY_DEFAULT);
    g_source_attach(source, context);
    return source;   /* the context holds it too; this reference is the caller's */
}

void cdbusglib_job_queue_free(void *job_queue) {
    g_source_destroy(job_queue);
    g_source_unref(job_queue);
}

void cdbusglib_job_queue_post(void *job_queue, void (*function)(void *), void *data) {
    JobQueue *queue = job_queue;
    Job job = { function, data };
    g_mutex_lock(&queue->lock);
    gboolean was_empty = queue->queued->len == 0;
    g_array_append_val(queue->queued, job);
    g_mutex_unlock(&queue->lock);
    /* A loop asleep in poll() must notice; one that is running notices at
     * its next prepare. Waking once per batch is enough. */
    if (was_empty) {
        GMainContext *context = g_source_get_context(&queue->source);
        if (context && !g_main_context_is_owner(context)) g_main_context_wakeup(context);
    }
}

void *cdbusglib_timer(GMainContext *context, guint milliseconds,
                      void (*function)(void *), void *data, void (*destroy)(void *)) {
    Work *work = g_new0(Work, 1);
    work->function = function;
    work->data = data;
    work->destroy = destroy;
    GSource *source = g_timeout_source_new(milliseconds);
    g_source_set_callback(source, work_run, work, work_free);
    g_source_attach(source, context);
    return source;   /* the caller's reference: cdbusglib_release_timer */
}

void cdbusglib_cancel_timer(void *timer) {
    /* Safe after the timer fired: destroying a destroyed source does nothing,
     * whereas a source id may already name another source. */
    g_source_destroy((GSource *)timer);
}

void cdbusglib_release_timer(void *timer) {
    g_source_unref((GSource *)timer);
}

static gboolean signal_arrived(gpointer user_data) {
    Work *work = user_data;
    work->function(work->data);
    return G_SOURCE_CONTINUE;
}

guint cdbusglib_on_signal(GMainContext *context, int signal_number,
                          void (*function)(void *), void *data) {
    Work *work = g_new0(Work, 1);
    work->function = function;
    work->data = data;
    GSource *source = g_unix_signal_source_new(signal_number);
    g_source_set_callback(source, signal_arrived, work, g_free);
    guint id = g_source_attach(source, context);
    g_source_unref(source);
    return id;
}

int cdbusglib_fix_mmap_threshold(int bytes) {
    /* Setting it at all turns off glibc's dynamic threshold for good. */
    return mallopt(M_MMAP_THRESHOLD, bytes);
}
