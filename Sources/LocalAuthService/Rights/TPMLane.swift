import DBusCore
import Glibc
import LocalAuthRights
import LocalAuthShared
import Synchronization

// The TPM never blocks the loop (docs/TPM.md, "A TPM that stops answering").
// A TPM command is a blocking round trip through tpm2-tss with no time-out of
// its own: a TPM (or swtpm) that stops answering would hold the service's one
// loop, and with it every other caller and SIGTERM. So every TPM command runs
// here: on a thread of its own, one at a time, within
// `RightsServiceLimits.tpmCommandSeconds`. Past it the caller gets
// TPMNotResponding at once; the thread stays with the stuck command until the
// TPM answers (or the service exits), and until then every other TPM use is
// TPMNotResponding at once too, so a stuck TPM costs one thread, not one per
// call. Nothing else waits on it: software rights, evaluations and SIGTERM go on.

/// The one way to the TPM.
@ServiceActor
final class TPMLane {
    /// A command is running, or stuck.
    private(set) var busy = false
    /// Which command `busy` is about: a stuck command's thread that returns
    /// late frees the lane only if no later command holds it.
    private var command: UInt64 = 0
    private let seconds: Double

    init(seconds: Double = RightsServiceLimits.tpmCommandSeconds) {
        self.seconds = seconds
    }

    /// Why a TPM command gave no value, as a type: the callers that treat
    /// a TPM that does not answer apart from one that failed switch on it.
    enum Failure: Error {
        /// The TPM did not answer in time, or an earlier command still holds the lane.
        case notResponding(String)
        /// The command answered with a failure.
        case failed(RightsError)

        /// The caller's error: TPMNotResponding, or the failure as RightsErrors.tpm maps it.
        var answer: ServiceError {
            switch self {
            case .notResponding(let why): ServiceError(.tpmNotResponding, "\(why); try again later")
            case .failed(let error): RightsErrors.tpm(error)
            }
        }
    }

    /// Runs `body` (which talks to the TPM) off the loop, within the time limit.
    func run<R: Sendable>(_ what: String, _ body: @escaping @Sendable () throws(RightsError) -> R) async throws(ServiceError) -> R {
        do throws(Failure) {
            return try await attempt(what, body)
        } catch {
            throw error.answer
        }
    }

    /// `run`, with its failure as a `Failure`.
    func attempt<R: Sendable>(_ what: String, _ body: @escaping @Sendable () throws(RightsError) -> R) async throws(Failure) -> R {
        guard !busy else { throw .notResponding("an earlier TPM command has not returned") }
        busy = true
        command &+= 1
        let mine = command
        let answer = OneAnswer<Result<R, RightsError>>()
        let seconds = self.seconds
        let outcome: Result<R, RightsError>? = await withCheckedContinuation { continuation in
            answer.wait(continuation)
            let timer = EventLoopTimers.after(seconds) { answer.give(nil) }
            let started = BlockingThread.start {
                let result: Result<R, RightsError>
                do throws(RightsError) { result = .success(try body()) } catch { result = .failure(error) }
                answer.give(result)
                Task { @ServiceActor [weak self] in
                    timer.cancel()
                    if let self, self.command == mine { self.busy = false }
                }
            }
            if !started {
                timer.cancel()
                answer.give(.failure(RightsError(.tpm, "no thread for the TPM command")))
                busy = false
            }
        }
        // A command that answered frees the lane now, before its caller can
        // ask for the next one (its thread's own note arrives a turn later).
        if outcome != nil { busy = false }
        switch outcome {
        case nil:
            Log.error("rights: \(what): the TPM did not answer within \(Int(seconds)) s")
            throw .notResponding("the TPM did not answer within \(Int(seconds)) s")
        case .success(let value)?: return value
        case .failure(let error)?: throw .failed(error)
        }
    }
}

/// The first of two answers (the work's, the time limit's) wins; the other is dropped.
final class OneAnswer<Value: Sendable>: Sendable {
    private let state = Mutex<(continuation: CheckedContinuation<Value?, Never>?, answered: Bool)>((nil, false))

    func wait(_ continuation: CheckedContinuation<Value?, Never>) {
        state.withLock { $0.continuation = continuation }
    }

    func give(_ value: Value?) {
        let continuation = state.withLock { state -> CheckedContinuation<Value?, Never>? in
            guard !state.answered else { return nil }
            state.answered = true
            defer { state.continuation = nil }
            return state.continuation
        }
        continuation?.resume(returning: value)
    }
}

/// A detached POSIX thread for one blocking job (not the Swift concurrency
/// pool, whose few threads a stuck TPM must not hold).
enum BlockingThread {
    private final class Job: @unchecked Sendable {
        let work: @Sendable () -> Void
        init(_ work: @escaping @Sendable () -> Void) { self.work = work }
    }

    static func start(_ work: @escaping @Sendable () -> Void) -> Bool {
        let job = Unmanaged.passRetained(Job(work)).toOpaque()
        var thread = pthread_t()
        let created = pthread_create(&thread, nil, { raw in
            let job = Unmanaged<Job>.fromOpaque(raw!).takeRetainedValue()
            job.work()
            return nil
        }, job)
        guard created == 0 else {
            Unmanaged<Job>.fromOpaque(job).release()
            return false
        }
        pthread_detach(thread)
        return true
    }
}
