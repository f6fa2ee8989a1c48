import LocalAuthShared

/// Why a call (of any contract) ended early, and the error its caller gets
/// for it: Cancel or EndEvaluation of its request id, the caller leaving,
/// SIGTERM, sleep, the lid, a timer, the reader removed, the session leaving
/// the front. Whatever holds a call's work (its `CallRecord`, an evaluation,
/// an enrollment, a queue ticket, fprintd's operation) is ended with one of
/// these; the first reason wins.
enum Interruption: Sendable {
    case appCancelled  // Cancel(request-id): AppCancel
    case userCancelled  // the person cancelled in the app's prompt: UserCancel
    case userFallback  // the person chose the app's fallback: UserFallback
    case superseded  // policy 2: the password succeeded first
    case callerVanished  // the caller left the bus: nobody to answer
    case timedOut  // no finger in time: SystemCancel
    case queueTimedOut  // waited too long behind other callers: SystemCancel
    case serviceStopping  // SIGTERM: SystemCancel
    case readerRemoved  // unplugged: SystemCancel
    case systemSleeping  // logind's PrepareForSleep: SystemCancel
    case lidClosed  // the lid closed over the built-in reader: SystemCancel
    case notAtTheReader  // the caller's session left the front (a switch, a logout): NotAtTheReader

    var error: ServiceError {
        switch self {
        case .appCancelled: ServiceErrors.la(.appCancel, "the app cancelled the evaluation")
        case .userCancelled: ServiceErrors.la(.userCancel, "the user cancelled the evaluation")
        case .userFallback: ServiceErrors.la(.userFallback, "the user chose the fallback")
        case .superseded: ServiceErrors.la(.systemCancel, "another way of authenticating succeeded first")
        case .callerVanished: ServiceErrors.la(.systemCancel, "the caller left the bus")
        case .timedOut: ServiceErrors.la(.systemCancel, "no finger was presented in time")
        case .queueTimedOut:
            ServiceErrors.la(
                .systemCancel,
                "the fingerprint reader stayed busy with other callers for "
                    + "\(Int(ServiceLimits.readerQueueWait)) s")
        case .serviceStopping: ServiceErrors.la(.systemCancel, "the authentication service is stopping")
        case .readerRemoved: ServiceErrors.la(.systemCancel, "the fingerprint reader was removed")
        case .systemSleeping: ServiceErrors.la(.systemCancel, "the system is going to sleep")
        case .lidClosed: ServiceErrors.la(.systemCancel, "the lid was closed over the built-in fingerprint reader")
        case .notAtTheReader:
            ServiceError(
                .notAtTheReader,
                "the caller's session is no longer the one in front of the reader "
                    + "(another session was switched to, or it ended)")
        }
    }
}
