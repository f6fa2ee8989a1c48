internal import CGLib
internal import CDBusGLib
import Dispatch
import Glibc
import Synchronization

/// A GLib main context and the one thread that iterates it, usable as a Swift
/// serial executor.
///
/// Why one loop: libfprint and polkit's GDBus proxy only make progress while a
/// GLib main context iterates, and libdbus can hand its I/O to the same context
/// (see CDBusGLib). With the Swift code that drives them running on that
/// thread too (actors whose executor is this loop), the C libraries are only
/// ever touched from one thread and strict concurrency holds without locks.
///
/// It is also a `TaskExecutor`. A task started with `Task(executorPreference:)`
/// on the loop runs its nonisolated parts here too, and, above all, resumes
/// here after a continuation: the runtime resumes every continuation on the
/// "generic" executor, which without a preference is Swift's global thread
/// pool, so each `await` of a libfprint, polkit or libdbus callback cost two
/// thread switches (loop → pool → loop), and the first one at start-up the
/// creation of the pool's threads.
public final class EventLoop: SerialExecutor, TaskExecutor, @unchecked Sendable {
    // GMainContext and GMainLoop are thread-safe objects in GLib.
    let context: OpaquePointer
    private let mainLoop: OpaquePointer
    /// Where posted work and enqueued jobs wait (CDBusGLib's job queue).
    private let jobs: UnsafeMutableRawPointer
    /// Set by `stop()`: work posted after it would never run.
    private let stopped = Atomic<Bool>(false)

    /// The process's default GLib context, for a program whose main thread
    /// runs the loop (`run()`), as the service does.
    public static let processDefault = EventLoop(context: g_main_context_default())

    private init(context: OpaquePointer) {
        self.context = context
        g_main_context_ref(context)
        mainLoop = g_main_loop_new(context, 0)
        jobs = cdbusglib_job_queue_new(context)
    }

    /// A loop with a private context on a new thread of its own. For a library
    /// inside someone else's process: it never touches the app's own GLib context.
    /// (`name` documents the thread's purpose at the call site.)
    public static func startThread(name: String) -> EventLoop {
        let loop = EventLoop(context: g_main_context_new())
        let start = ThreadStart(loop: loop)
        var thread = pthread_t()
        let created = pthread_create(&thread, nil, { raw in
            let start = Unmanaged<ThreadStart>.fromOpaque(raw!).takeRetainedValue()
            g_main_context_push_thread_default(start.loop.context)
            start.ready.signal()
            g_main_loop_run(start.loop.mainLoop)
            g_main_context_pop_thread_default(start.loop.context)
            return nil
        }, Unmanaged.passRetained(start).toOpaque())
        precondition(created == 0, "cannot start the event loop thread")
        pthread_detach(thread)
        start.ready.wait()
        return loop
    }

    deinit {
        cdbusglib_job_queue_free(jobs)
        g_main_loop_unref(mainLoop)
        g_main_context_unref(context)
    }

    /// Iterates the context on the calling thread until `stop()`.
    public func run() {
        g_main_loop_run(mainLoop)
    }

    /// Makes `run()` return. Safe from any thread. Work posted after this
    /// would never run: debug builds trap on it (`post`, `enqueue`).
    public func stop() {
        stopped.store(true, ordering: .releasing)
        g_main_loop_quit(mainLoop)
        g_main_context_wakeup(context)
    }

    /// True on the thread that is iterating this loop now.
    public var isCurrent: Bool { g_main_context_is_owner(context) != 0 }

    /// Runs `work` on the loop's thread at its next iteration.
    public func post(_ work: @escaping @Sendable () -> Void) {
        assertRunning()
        let box = Unmanaged.passRetained(WorkBox(work)).toOpaque()
        cdbusglib_job_queue_post(jobs, { raw in
            Unmanaged<WorkBox>.fromOpaque(raw!).takeRetainedValue().work()
        }, box)
    }

    /// Runs `work` once after `seconds` on the loop's thread, unless cancelled.
    public func schedule(after seconds: Double, _ work: @escaping @Sendable () -> Void) -> Timer {
        let milliseconds = UInt32(clamping: Int((seconds * 1000).rounded(.up)))
        let box = Unmanaged.passRetained(WorkBox(work)).toOpaque()
        let source = cdbusglib_timer(context, milliseconds, { raw in
            Unmanaged<WorkBox>.fromOpaque(raw!).takeUnretainedValue().work()
        }, box, { raw in
            Unmanaged<WorkBox>.fromOpaque(raw!).release()
        })!
        return Timer(source: SourceReference(source))
    }

    /// Runs `handler` on the loop's thread each time `signal` (e.g. SIGTERM) arrives.
    public func onSignal(_ signal: Int32, _ handler: @escaping @Sendable () -> Void) {
        let box = Unmanaged.passRetained(WorkBox(handler)).toOpaque()
        _ = cdbusglib_on_signal(context, signal, { raw in
            Unmanaged<WorkBox>.fromOpaque(raw!).takeUnretainedValue().work()
        }, box)
    }

    /// A pending `schedule(after:)`; `cancel()` is idempotent and safe after
    /// the timer fired (it holds its GSource, never an id that may be reused).
    public struct Timer: Sendable {
        let source: SourceReference
        public func cancel() { cdbusglib_cancel_timer(source.pointer) }
    }

    /// One reference to a GSource (GSources are thread-safe), dropped with the last Timer.
    final class SourceReference: @unchecked Sendable {
        let pointer: UnsafeMutableRawPointer
        init(_ pointer: UnsafeMutableRawPointer) { self.pointer = pointer }
        deinit { cdbusglib_release_timer(pointer) }
    }

    // MARK: SerialExecutor and TaskExecutor

    /// Every job runs on the loop's thread as both executors at once: jobs of
    /// actors on this loop and nonisolated jobs of tasks that prefer it are the
    /// same serial stream, so a task that resumes here and then needs the
    /// loop's actor continues at once instead of being queued again.
    public func enqueue(_ job: consuming ExecutorJob) {
        assertRunning()
        let box = Unmanaged.passRetained(JobBox(job: UnownedJob(job), executor: self)).toOpaque()
        cdbusglib_job_queue_post(jobs, { raw in
            let box = Unmanaged<JobBox>.fromOpaque(raw!).takeRetainedValue()
            box.job.runSynchronously(isolatedTo: box.executor.asUnownedSerialExecutor(),
                                     taskExecutor: box.executor.asUnownedTaskExecutor())
        }, box)
    }

    public func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    public func asUnownedTaskExecutor() -> UnownedTaskExecutor {
        UnownedTaskExecutor(ordinary: self)
    }

    /// Work for a stopped loop is a bug (it would be dropped without a word).
    private func assertRunning() {
        assert(!stopped.load(ordering: .acquiring), "work posted to an event loop after stop()")
    }

    public func checkIsolated() {
        precondition(isCurrent, "not on the event loop's thread")
    }
}

private final class ThreadStart: @unchecked Sendable {
    let loop: EventLoop
    let ready = DispatchSemaphore(value: 0)
    init(loop: EventLoop) { self.loop = loop }
}

private final class WorkBox {
    let work: @Sendable () -> Void
    init(_ work: @escaping @Sendable () -> Void) { self.work = work }
}

private final class JobBox {
    let job: UnownedJob
    let executor: EventLoop
    init(job: UnownedJob, executor: EventLoop) {
        self.job = job
        self.executor = executor
    }
}
