import LocalAuthShared

/// Which reader serves whom, as every operation asks it: the one lookup the
/// seams of the verify (`EvaluationReaders`), the enroll (`Enrollment`
/// takes it as it is), the Enroller (`EnrollerSeams`) and fprintd's Devices
/// (`FprintdSeams`) inherit, instead of each declaring it. `ReaderChoice`
/// adopts it; the unit tests' fakes answer it themselves.
@ServiceActor
protocol ReaderLookup {
    /// The reader that serves `uid` now (ReaderChoice.reader(for:)), or nil.
    func reader(for uid: UInt32) -> Readers.Identity?
    /// Why no reader serves a user now: none, asleep, the lid closed.
    var noReaderError: ServiceError { get }
    /// Whether a person can touch `reader` now (awake, not under a closed lid).
    func isReachable(_ reader: Readers.Identity) -> Bool
}

extension ReaderChoice: ReaderLookup {
    func isReachable(_ reader: Readers.Identity) -> Bool { reachableReaders.contains(reader) }
}

/// An adapter that serves the lookup from the `ReaderChoice` it was given:
/// the one place the lookup is forwarded, for every adapter that adopts it.
@ServiceActor
protocol ReaderLookupWiring: ReaderLookup {
    var readerChoice: ReaderChoice { get }
}

extension ReaderLookupWiring {
    func reader(for uid: UInt32) -> Readers.Identity? { readerChoice.reader(for: uid) }
    var noReaderError: ServiceError { readerChoice.noReaderError }
    func isReachable(_ reader: Readers.Identity) -> Bool { readerChoice.isReachable(reader) }
}
