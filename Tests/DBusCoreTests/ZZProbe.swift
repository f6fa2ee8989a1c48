import XCTest
import DBusCore
import Foundation

final class ZZProbe: XCTestCase {
    func mc(_ a: [DBusValue]) throws -> Message {
        try Message.methodCall(destination: "org.x.Y", path: "/a", interface: "org.x.Y", member: "M", arguments: a)
    }
    func testProbe() throws {
        guard let p = ProcessInfo.processInfo.environment["PROBE"] else { return }
        print("PROBE", p)
        do {
            switch p {
            case "sigdict": _ = try mc([.signature("{sv}")]); print("RESULT ok")
            case "topdict": _ = try mc([.dictEntry(.string("a"), .int32(1))]); print("RESULT ok")
            case "emptyarr": _ = try mc([.array(Signature(rawValue: "")!, [])]); print("RESULT ok")
            case "emptystruct": let m = try mc([.structure([])]); print("RESULT ok", m.signature, m.arguments)
            case "multiarr": _ = try mc([.array(Signature(rawValue: "ss")!, [])]); print("RESULT ok")
            case "vardict": _ = try mc([.variant(.dictEntry(.string("a"), .int32(1)))]); print("RESULT ok")
            case "dictdict": _ = try mc([.array(Signature(rawValue: "{sv}{sv}")!, [])]); print("RESULT ok")
            case "badmember": _ = try Message.methodCall(destination: "org.x.Y", path: "/a", interface: "org.x.Y", member: "bad member"); print("RESULT ok")
            case "baddest": _ = try Message.methodCall(destination: "not a name", path: "/a", interface: "org.x.Y", member: "M"); print("RESULT ok")
            case "baderr": let m = try mc([]); let r = m.errorReply(DBusError("not valid", "x")); print("RESULT ok", r as Any)
            case "badsigdest": _ = try Message.signal(path: "/a", interface: "org.x.Y", member: "S", destination: "bad dest"); print("RESULT ok")
            case "nonbasickey": _ = try mc([.array(Signature(rawValue: "{vs}") ?? "s", [])]); print("RESULT ok nil? \(Signature(rawValue: "{vs}") == nil)")
            case "deep":
                var v: DBusValue = .int32(1)
                for _ in 0..<40 { v = .array(v.signature, [v]) }
                let m = try mc([v]); print("RESULT ok", m.signature.count)
            case "deepvar":
                var v: DBusValue = .int32(1)
                for _ in 0..<100 { v = .variant(v) }
                let m = try mc([v]); print("RESULT ok", m.arguments == [v])
            case "readback":
                let m = try mc([.string("x")]); print("RESULT ok", m.arguments)
            default: print("unknown")
            }
        } catch {
            print("RESULT threw", error)
        }
    }
}
