import Foundation
import XCTest

/// The service's layers only look down (docs/DESIGN.md, "Layers"): Bus/ is the
/// floor every contract stands on and names no component's or contract's
/// type; a component (any other folder) names no contract's type; the
/// contracts (LocalAuth/, Fprintd/) and Service.swift stand on top. Read from
/// the source files, as scripts/folder-ties.py (make ties) reads them: a type
/// is a top-level declaration, a file names it when its name appears in its
/// code (comments and string literals left out).
final class LayeringTests: XCTestCase {
    static let floor = "Bus"
    static let contracts: Set<String> = ["LocalAuth", "Fprintd"]
    /// Types of a component the floor may name, each with its reason.
    static let floorMayName: [String: String] = [
        // Who a connection is (uid, process, label), from the bus driver: the
        // router needs it before polkit and hands it to every handler
        // (`Request.caller`). It belongs with Callers/, whose work (app
        // identity, presence) it caches.
        "CallerRecord": "the connection's record, made by Callers/ for the router"
    ]

    /// The namespaces of each contract's wire words (its interface, member,
    /// error and polkit names): org.example.LocalAuth's are declared in
    /// LocalAuthShared (another module, which the type walk below does not
    /// read), fprintd's in Fprintd/. The floor names none of them: a
    /// contract's words reach the router through its `BusContract` (its
    /// `ErrorTable`, its rows' `Authorization` and `MethodSpec.scans`).
    static let contractNamespaces = [
        "LocalAuthBus", "LocalAuthRightsBus", "LocalAuthPrompt", "LocalAuthLoginSecretBus", "LocalAuthServiceError",
        "LocalAuthRightsError", "LocalAuthHistory", "FprintdBus", "FprintdRefusal",
    ]

    struct Source {
        let path: String
        let folder: String
        let code: String
    }

    static func sources() throws -> [Source] {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        let root = url.appendingPathComponent("Sources/LocalAuthService").path
        guard let walker = FileManager.default.enumerator(atPath: root) else { throw CocoaError(.fileNoSuchFile) }
        var sources: [Source] = []
        for case let path as String in walker where path.hasSuffix(".swift") {
            let text = try String(contentsOfFile: root + "/" + path, encoding: .utf8)
            let parts = path.split(separator: "/")
            let folder = parts.count > 1 ? String(parts[0]) : (path == "Service.swift" ? "Service.swift" : "(root)")
            sources.append(Source(path: path, folder: folder, code: strip(text)))
        }
        return sources
    }

    /// The code without its comments and string literals.
    static func strip(_ text: String) -> String {
        var code = text
        for (pattern, replacement) in [
            (#"/\*[\s\S]*?\*/"#, " "), (#"\"\"\"[\s\S]*?\"\"\""#, "\"\""), (#""(?:\\.|[^"\\\n])*""#, "\"\""), (#"//[^\n]*"#, " "),
        ] {
            code = code.replacingOccurrences(of: pattern, with: replacement, options: .regularExpression)
        }
        return code
    }

    static func matches(_ pattern: String, in code: String, group: Int) -> [String] {
        let regex = try! NSRegularExpression(pattern: pattern, options: [.anchorsMatchLines])
        let text = code as NSString
        return regex.matches(in: code, range: NSRange(location: 0, length: text.length)).map {
            text.substring(with: $0.range(at: group))
        }
    }

    /// Every top-level type and the folder that declares it.
    static func owners(_ sources: [Source]) -> [String: String] {
        let declaration =
            #"^(?:@\w+(?:\([^)]*\))?\s+)*(?:(?:public|internal|private|fileprivate|package|final|nonisolated|indirect)\s+)*"#
            + #"(?:class|struct|enum|protocol|actor|typealias)\s+([A-Z]\w*)"#
        var owner: [String: String] = [:]
        for source in sources {
            for name in matches(declaration, in: source.code, group: 1) where owner[name] == nil { owner[name] = source.folder }
        }
        return owner
    }

    /// "file: Type (Folder/)" for each type of a folder in `forbidden` that a
    /// file of `folders` names.
    static func ties(from folders: (String) -> Bool, to forbidden: (String) -> Bool, allowing allowed: Set<String> = []) throws -> [String] {
        let sources = try sources()
        let owner = owners(sources)
        var found: [String] = []
        for source in sources where folders(source.folder) {
            // A nested type's own declaration names nothing: only its uses do.
            let uses = source.code.replacingOccurrences(
                of: #"\b(class|struct|enum|protocol|actor|typealias)\s+[A-Z]\w*"#, with: "$1 _", options: .regularExpression)
            for name in Set(matches(#"(?<![.\w])[A-Z]\w*\b"#, in: uses, group: 0)).sorted() {
                guard let there = owner[name], there != source.folder, forbidden(there), !allowed.contains(name) else { continue }
                found.append("\(source.path): \(name) (\(there)/)")
            }
        }
        return found
    }

    static func isComponent(_ folder: String) -> Bool {
        folder != floor && !contracts.contains(folder) && folder != "(root)" && folder != "Service.swift"
    }

    func testTheReaderSeesTheLayers() throws {
        // Guards the two tests below from passing on a parse that found nothing.
        let owner = Self.owners(try Self.sources())
        XCTAssertEqual(owner["CallRecord"], "Bus")
        XCTAssertEqual(owner["Evaluator"], "Evaluation")
        XCTAssertEqual(owner["LocalAuthObject"], "LocalAuth")
        XCTAssertEqual(owner["FprintdDevice"], "Fprintd")
        XCTAssertEqual(Self.strip("let a = \"Evaluator\" // Evaluator\n/* Evaluator */ b"), "let a = \"\"  \n  b")
    }

    func testTheBusNamesNoComponentAndNoContract() throws {
        let ties = try Self.ties(
            from: { $0 == Self.floor }, to: { Self.isComponent($0) || Self.contracts.contains($0) },
            allowing: Set(Self.floorMayName.keys))
        XCTAssert(ties.isEmpty, "Bus/ is the floor (docs/DESIGN.md, \"Layers\"); it names:\n" + ties.joined(separator: "\n"))
    }

    func testTheBusNamesNoContractsWords() throws {
        // Each namespace is still declared where the list says: a rename must not leave the test blind.
        var root = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { root.deleteLastPathComponent() }
        var declared = ""
        for folder in ["Sources/LocalAuthShared", "Sources/LocalAuthService/Fprintd"] {
            let path = root.appendingPathComponent(folder).path
            for file in try FileManager.default.contentsOfDirectory(atPath: path) where file.hasSuffix(".swift") {
                declared += Self.strip(try String(contentsOfFile: path + "/" + file, encoding: .utf8))
            }
        }
        for name in Self.contractNamespaces {
            XCTAssertFalse(Self.matches(#"\benum\s+"# + name + #"\b"#, in: declared, group: 0).isEmpty, "\(name) is declared nowhere")
        }
        var found: [String] = []
        for source in try Self.sources() where source.folder == Self.floor {
            for name in Self.contractNamespaces where !Self.matches(#"(?<![.\w])"# + name + #"\b"#, in: source.code, group: 0).isEmpty {
                found.append("\(source.path): \(name)")
            }
        }
        XCTAssert(
            found.isEmpty,
            "Bus/ is the floor (docs/DESIGN.md, \"Layers\"); it names a contract's words (move them to the contract's folder):\n"
                + found.joined(separator: "\n"))
    }

    func testNoComponentNamesAContract() throws {
        let ties = try Self.ties(from: Self.isComponent, to: { Self.contracts.contains($0) })
        XCTAssert(ties.isEmpty, "a component names a contract's type (docs/DESIGN.md, \"Layers\"):\n" + ties.joined(separator: "\n"))
    }
}
