import DBusCore
import Foundation
@testable import LocalAuthService
import LocalAuthRights
import LocalAuthShared
import XCTest

/// The TPM lane (Rights/TPMLane.swift) and the rights store's opening
/// through it: a TPM that does not answer and a TPM that fails are told
/// apart by type (`TPMLane.Failure`), not by an error's name or message.
final class TPMLaneTests: XCTestCase {
    override func setUp() {
        super.setUp()
        _ = ServiceLoop.running
    }

    @ServiceActor
    func testACommandPastItsTimeIsNotRespondingAndHoldsTheLaneUntilItReturns() async throws {
        let lane = TPMLane(seconds: 0.05)
        let release = DispatchSemaphore(value: 0)
        do throws(TPMLane.Failure) {
            _ = try await lane.attempt("a stuck command") { () throws(RightsError) in release.wait() }
            XCTFail("a stuck command answered")
        } catch {
            guard case .notResponding = error else { return XCTFail("\(error)") }
        }
        XCTAssertTrue(lane.busy, "the stuck command still holds the lane")
        do throws(ServiceError) {
            _ = try await lane.run("the next command") { () throws(RightsError) in 1 }
            XCTFail("the lane ran a command beside a stuck one")
        } catch {
            XCTAssertEqual(error.kind, .tpmNotResponding)
        }
        release.signal()
        // The stuck thread's note frees the lane on the loop: wait for it, not for time.
        let deadline = ContinuousClock.now + .seconds(2)
        while lane.busy, ContinuousClock.now < deadline { await Task.yield() }
        XCTAssertFalse(lane.busy)
        let value = try await lane.run("a command that answers") { () throws(RightsError) in 42 }
        XCTAssertEqual(value, 42)
    }

    @ServiceActor
    func testAFailingCommandIsItsOwnFailure() async {
        let lane = TPMLane(seconds: 5)
        do throws(TPMLane.Failure) {
            _ = try await lane.attempt("a failing command") { () throws(RightsError) -> Int in
                throw RightsError(.notFound, "nothing there")
            }
            XCTFail("a failing command answered")
        } catch {
            guard case .failed(let cause) = error else { return XCTFail("\(error)") }
            XCTAssertEqual(cause.code, .notFound)
            XCTAssertEqual(error.answer.kind, .rightNotFound)
        }
        XCTAssertFalse(lane.busy)
    }

    /// A TPM that cannot be reached (nothing listens at the address) fails at
    /// once: the rights store is StorageFailed, not TPMNotResponding.
    @ServiceActor
    func testAnUnreachableTPMMakesTheStoreFailNotHang() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tpm-lane-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(at: directory) }
        let state = RightsState(stateDirectory: directory.path, keyBackend: .tcti("swtpm:host=127.0.0.1,port=1"))
        do throws(ServiceError) {
            _ = try await state.openStorage()
            XCTFail("a store opened without its TPM")
        } catch {
            XCTAssertEqual(error.localAuthName, LocalAuthServiceError.storageFailed, error.message)
        }
        XCTAssertFalse(state.tpm.busy)
    }
}
