import DBusCore
import LocalAuthShared

/// One D-Bus interface the router serves on objects of type `Target`: its
/// methods (one row each), how it names the service's errors, its
/// introspection XML and its properties. org.example.LocalAuth is one
/// (LocalAuth/LocalAuthContract.swift); fprintd's Manager and Device are two more
/// (Fprintd/FprintdContract.swift). Every call of every contract takes the
/// same path through `CallRouter`: bounds, row, arguments decoded once,
/// registration, caller record, polkit, interruption, the handler, the
/// answer in the contract's words.
struct BusContract<Target: AnyObject & Sendable>: Sendable {
    let interface: String
    let methods: [String: MethodSpec<Target>]
    let errors: ErrorTable
    let introspection: String
    /// The interface's properties, read when asked (none: `{}`).
    var properties: (@ServiceActor @Sendable (Target) -> [String: DBusValue])?
    /// How polkit's no reads in this contract (the last action asked and its answer).
    let refusal: @Sendable (_ action: String, _ decision: Authorizer.Decision) -> ServiceError
    /// Runs every handler of the contract and sees how it ended (nil: no
    /// one watches). org.example.LocalAuth's is the history of approvals
    /// (History/): the router stays blind to what a decision is.
    var answers: AnswerWatch?

    /// The largest body any of its calls may have (its largest row's bound;
    /// at least the 16 KiB every other message gets: Properties, Introspect).
    var largestBody: Int { methods.values.map(\.maximumBodyBytes).reduce(ServiceLimits.maximumBodyBytes, max) }
}

/// Runs a contract's handler and sees how it ended (`BusContract.answers`).
typealias AnswerWatch = @ServiceActor @Sendable (
    _ member: String, _ request: Request, _ arguments: any CallArguments, _ errors: ErrorTable,
    _ handler: () async throws(ServiceError) -> [DBusValue]
) async throws(ServiceError) -> [DBusValue]

/// What a row needs from polkit, asked by the router before its handler runs
/// (Bus/Authorization.swift).
struct Authorization: Sendable {
    /// Any one of these suffices; none: no polkit.
    let actions: [String]
    /// Whether polkit may ask the person (a password).
    let interactive: Bool
    /// A call that names another user than the caller (`CallArguments.namedUser`).
    let anotherUser: AnotherUser

    enum AnotherUser: Sendable {
        /// This action instead of the row's (org.example.LocalAuth's `manage`).
        case instead(String)
        /// This action first, then the row's (fprintd's `setusername`).
        case also(String)
    }

    /// No polkit at all (fprintd's Manager). A contract's own rules are
    /// beside its table (org.example.LocalAuth's: LocalAuth/LocalAuthRows.swift).
    static let none = Authorization(actions: [], interactive: false, anotherUser: .instead(""))
}

/// One row of a contract's method table: the signature, polkit, the
/// arguments struct (decoded and validated once, at arrival), what must hold
/// before and after polkit, and the handler on the contract's target.
struct MethodSpec<Target: AnyObject & Sendable>: Sendable {
    let signature: String
    let authorization: Authorization
    /// The largest body the router accepts before decoding it.
    let maximumBodyBytes: Int
    /// Its answer waits for a finger on the reader (an evaluation, an
    /// enrollment, a right's authorization): sleep ends the call itself
    /// (`CallRegistry.interruptReaderWork`), wherever it waits, not only its
    /// place in the reader queue. fprintd's Starts answer before their scans:
    /// their operations end through the reader queue alone.
    let scans: Bool
    /// Decodes and validates the arguments in full, at arrival (Bus/CallArguments.swift).
    let decode: @Sendable ([DBusValue]) throws(ServiceError) -> any CallArguments
    /// Checked before polkit is asked and again after (fprintd's claim: its order is fprintd's).
    let admits: (@ServiceActor @Sendable (Target, Request) throws(ServiceError) -> Void)?
    /// Runs the call once the caller is known and polkit said yes.
    let handler: @ServiceActor @Sendable (Target, Request, any CallArguments) async throws(ServiceError) -> [DBusValue]

    /// A row whose handler takes its arguments typed.
    init<Arguments: CallArguments>(
        signature: String, authorization: Authorization, scans: Bool = false, _ arguments: Arguments.Type,
        maximumBodyBytes: Int = ServiceLimits.maximumBodyBytes,
        admits: (@ServiceActor @Sendable (Target, Request) throws(ServiceError) -> Void)? = nil,
        handler: @escaping @ServiceActor @Sendable (Target, Call<Arguments>) async throws(ServiceError) -> [DBusValue]
    ) {
        self.signature = signature
        self.authorization = authorization
        self.scans = scans
        self.maximumBodyBytes = maximumBodyBytes
        self.admits = admits
        decode = { values throws(ServiceError) in try Arguments(values) }
        self.handler = { target, request, decoded throws(ServiceError) in
            // `decoded` was made by this row's own `decode`: always `Arguments`.
            try await handler(target, Call(request: request, arguments: decoded as! Arguments))
        }
    }
}

/// A method call with its caller resolved and polkit's yes: what a handler
/// knows of who calls (its arguments come typed beside it, `Call`).
struct Request {
    /// The caller's uid, from the bus.
    let uid: UInt32
    /// The caller's connection: its credentials, app identity and presence (Callers/).
    let caller: CallerRecord
    /// Whose prints the call is about: the caller, or the user the call
    /// named once polkit allowed it (`manage`, fprintd's `setusername`).
    let target: UInt32
    /// The call's registration (CallRecord.swift): what ends it, and whether it has ended.
    let record: CallRecord

    init(caller: CallerRecord, target: UInt32? = nil, record: CallRecord) {
        self.caller = caller
        self.uid = caller.uid
        self.target = target ?? uid
        self.record = record
    }
    var sender: String { record.sender }
}

/// A call that passed the router's checks at arrival, on its way to its
/// handler as a task of the service's group (any contract's).
@ServiceActor
protocol RoutedCall: Sendable {
    var record: CallRecord { get }
    /// Who calls, may they, the handler, the answer (CallRouter.serve).
    func serve(on router: CallRouter) async
}

/// A routed call of one contract: the row, the object it was sent to, and
/// its arguments, decoded once.
struct Routed<Target: AnyObject & Sendable>: RoutedCall {
    let call: any WireCall
    let contract: BusContract<Target>
    let spec: MethodSpec<Target>
    let target: Target
    let arguments: any CallArguments
    let record: CallRecord

    func serve(on router: CallRouter) async { await router.serve(self) }
}
