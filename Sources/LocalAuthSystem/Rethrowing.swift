/// Runs `body`, a call of a `rethrows` function (the standard library's
/// `withUnsafeBufferPointer`, `withUnsafeBytes`, `map`, …) whose closure
/// throws only `E`, and throws that error as `E` again.
///
/// Why: the Swift of Debian 13 (swiftlang 6.0.3) declares those functions
/// `rethrows`, and a `rethrows` call throws `any Error` whatever its closure
/// throws, so in a `throws(E)` function
/// `try bytes.withUnsafeBufferPointer { (buffer) throws(E) in … }` does not
/// compile there ("thrown expression type 'any Error' cannot be converted
/// to error type 'E'"); later Swifts declare them with typed throws.
/// `try rethrowing(E.self) { try bytes.withUnsafeBufferPointer { … } }`
/// compiles with both and means the same: the closure can throw nothing but
/// an `E`, so the last `catch` is never reached.
@inlinable
package func rethrowing<E: Error, R>(_: E.Type, _ body: () throws -> R) throws(E) -> R {
    do {
        return try body()
    } catch let error as E {
        throw error
    } catch {
        preconditionFailure("rethrowing(\(E.self)): the closure threw \(type(of: error))")
    }
}
