import Foundation
import Glibc
import LocalAuthentication
import RigSupport
import XCTest

/// The system sheet (issue 14), for real: the rig's dbus-daemon and polkitd,
/// localauthd on the virtual reader, and the real `localauth-prompt` agent
/// drawing its GTK window on a real X server (Xvfb), clicked and typed at
/// with xdotool, photographed with ImageMagick's `import`. Screenshots go to
/// .build/test-output/PromptTests/ (printed by each test).
final class PromptTests: RigTestCase, @unchecked Sendable {
    var display: VirtualDisplay!
    var agent: AgentProcess!

    static let outputDirectory = Paths.root + "/.build/test-output/PromptTests"

    override func setUpWithError() throws {
        try super.setUpWithError()
        try FileManager.default.createDirectory(atPath: Self.outputDirectory, withIntermediateDirectories: true)
        display = try VirtualDisplay()
        agent = try AgentProcess(rig: rig, display: display, name: "agent-root")
    }

    override func tearDown() {
        if testRun?.hasSucceeded == false, let agent { print("localauth-prompt log:\n\(agent.log)") }
        agent?.stop()
        display?.stop()
        super.tearDown()
    }

    // MARK: The tests

    /// The sheet names the program that asks (the executable the service sees)
    /// and the app's reason, with the app's cancel title; clicking Cancel gives
    /// the app UserCancel and closes the sheet.
    func testTheSheetNamesTheProgramAndReasonAndCancelGivesUserCancel() async throws {
        try await enroll(as: "owner-finger")
        let context = LAContext()
        context.localizedCancelTitle = "Not now"
        let pending = Task { await self.evaluate(reason: "Unlock the test vault", context: context) }
        let shown = try agent.waitForShow()
        let ourExecutable = try XCTUnwrap(Self.executablePath())
        XCTAssertEqual(shown.program, ourExecutable, "the trusted program is our own executable")
        XCTAssertEqual(shown.reason, "Unlock the test vault")
        let window = try display.waitForWindow(named: "LocalAuth: " + (ourExecutable.split(separator: "/").last.map(String.init) ?? ""))
        let buttons = try agent.waitForGeometry(shown.id)
        XCTAssertNotNil(buttons["fallback"], "the default fallback button is shown")
        try agent.waitForUpdate(shown.id, "place-finger")
        try display.screenshot(Self.outputDirectory + "/sheet-cancel-title.png")
        try display.screenshot(Self.outputDirectory + "/sheet-cancel-title-window.png", window: window)

        try display.click(window, at: try XCTUnwrap(buttons["cancel"]))
        let result = await pending.value
        XCTAssertEqual(result.code, .userCancel, "\(result)")
        XCTAssertTrue(agent.log.contains("answer \(shown.id) user-cancel"), agent.log)
        try display.waitUntilGone(window)
    }

    /// The fallback button gives the app UserFallback.
    func testTheFallbackButtonGivesUserFallback() async throws {
        try await enroll(as: "owner-finger")
        let context = LAContext()
        context.localizedFallbackTitle = "Use Master Password"
        let pending = Task { await self.evaluate(reason: "Open your notes", context: context) }
        let shown = try agent.waitForShow()
        let window = try display.waitForWindow(named: "LocalAuth: ")
        let buttons = try agent.waitForGeometry(shown.id)
        try agent.waitForUpdate(shown.id, "place-finger")
        try display.screenshot(Self.outputDirectory + "/sheet-fallback-title.png", window: window)
        try display.click(window, at: try XCTUnwrap(buttons["fallback"]))
        let result = await pending.value
        XCTAssertEqual(result.code, .userFallback, "\(result)")
        try display.waitUntilGone(window)
    }

    /// An empty fallback title hides the fallback button (Apple's rule);
    /// Escape cancels.
    func testAnEmptyFallbackTitleHidesTheButtonAndEscapeCancels() async throws {
        try await enroll(as: "owner-finger")
        let context = LAContext()
        context.localizedFallbackTitle = ""
        let pending = Task { await self.evaluate(reason: "Sign the document", context: context) }
        let shown = try agent.waitForShow()
        let window = try display.waitForWindow(named: "LocalAuth: ")
        let buttons = try agent.waitForGeometry(shown.id)
        XCTAssertNil(buttons["fallback"], "no fallback button")
        XCTAssertNotNil(buttons["cancel"])
        try agent.waitForUpdate(shown.id, "place-finger")
        try display.screenshot(Self.outputDirectory + "/sheet-no-fallback.png", window: window)
        try display.key(window, "Escape")
        let result = await pending.value
        XCTAssertEqual(result.code, .userCancel, "\(result)")
        try display.waitUntilGone(window)
    }

    /// Enter chooses the fallback. (This agent draws its fingerprint with
    /// cairo, as it does when the icon theme has none.)
    func testEnterChoosesTheFallback() async throws {
        agent.stop()
        agent = try AgentProcess(rig: rig, display: display, name: "agent-drawn-icon",
                                 environment: ["LOCALAUTH_PROMPT_DRAWN_ICON": "1"])
        try await enroll(as: "owner-finger")
        let pending = Task { await self.evaluate(reason: "Unlock", context: LAContext()) }
        let shown = try agent.waitForShow()
        let window = try display.waitForWindow(named: "LocalAuth: ")
        _ = try agent.waitForGeometry(shown.id)
        try agent.waitForUpdate(shown.id, "place-finger")
        usleep(200_000)
        try display.screenshot(Self.outputDirectory + "/sheet-drawn-icon.png", window: window)
        try display.key(window, "Return")
        let result = await pending.value
        XCTAssertEqual(result.code, .userFallback, "\(result)")
    }

    /// The app's declared name beside the program the service sees; a wrong
    /// finger says "Not recognized, try again"; the right one closes the
    /// sheet with success ("Verified", briefly). Run with gdbus, which sends
    /// the app-name option.
    func testAMatchingScanClosesTheSheetWithSuccess() async throws {
        try await enroll(as: "owner-finger")
        let output = rig.directory + "/gdbus-\(UInt32.random(in: 0...UInt32.max)).out"
        let app = try Child("/usr/bin/gdbus", ["call", "--system", "--dest", "org.example.LocalAuth",
                                               "--object-path", "/org/example/LocalAuth",
                                               "--method", "org.example.LocalAuth.EvaluatePolicy", "1",
                                               "Unlock your vault to fill in the password for example.org",
                                               "{'app-name': <'Vault'>, 'request-id': <'vault-1'>}"],
                            environment: ["DBUS_SYSTEM_BUS_ADDRESS": rig.address], stdoutPath: output, stderrPath: output)
        let shown = try agent.waitForShow()
        XCTAssertEqual(shown.program, "/usr/bin/gdbus")
        XCTAssertEqual(shown.appName, "Vault")
        let window = try display.waitForWindow(named: "LocalAuth: gdbus")
        _ = try agent.waitForGeometry(shown.id)
        try agent.waitForUpdate(shown.id, "place-finger")
        try display.screenshot(Self.outputDirectory + "/sheet.png")
        try display.screenshot(Self.outputDirectory + "/sheet-window.png", window: window)

        try service.sensor("SCAN someone-else")
        try agent.waitForUpdate(shown.id, "no-match")
        usleep(200_000)   // the label's next frame
        try display.screenshot(Self.outputDirectory + "/sheet-not-recognized.png", window: window)

        try service.sensor("SCAN owner-finger")
        try agent.waitFor("close \(shown.id) success")
        usleep(150_000)
        try display.screenshot(Self.outputDirectory + "/sheet-verified.png", window: window)
        // The three states side by side: docs/screenshots/prompt-states.png
        // and prompt-sheet.png (README, PROMPT.md) are this run's pictures,
        // never an older sheet's.
        let states = Self.outputDirectory + "/sheet-states.png"
        let composed = try runProgram("/usr/bin/convert", ["sheet-window.png", "sheet-not-recognized.png", "sheet-verified.png"]
                                      .map { Self.outputDirectory + "/" + $0 } + ["-bordercolor", "gray60", "-border", "1", "+append", states])
        XCTAssertEqual(composed.status, 0, composed.output)
        for (picture, doc) in [(states, "prompt-states.png"), (Self.outputDirectory + "/sheet-window.png", "prompt-sheet.png")] {
            try? FileManager.default.removeItem(atPath: Paths.root + "/docs/screenshots/" + doc)
            try FileManager.default.copyItem(atPath: picture, toPath: Paths.root + "/docs/screenshots/" + doc)
        }
        XCTAssertEqual(app.wait(timeout: 20), 0, readText(output))
        XCTAssertTrue(readText(output).contains("(true,)"), readText(output))
        try display.waitUntilGone(window)
    }

    /// Issue 20, item 7: `/usr/bin/python3` declaring itself "System
    /// Settings" is headlined as the program it is; the declared name is
    /// only under it, marked as declared. The screenshot is kept in
    /// docs/screenshots/prompt-impersonation.png.
    func testAProgramDeclaringAnotherNameIsHeadlinedAsItself() async throws {
        try await enroll(as: "owner-finger")
        let output = rig.directory + "/python-\(UInt32.random(in: 0...UInt32.max)).out"
        let script = """
            import dbus, os
            bus = dbus.bus.BusConnection(os.environ['DBUS_SYSTEM_BUS_ADDRESS'])
            service = bus.get_object('org.example.LocalAuth', '/org/example/LocalAuth')
            print(service.EvaluatePolicy(dbus.UInt32(1), 'Allow changes to your system settings',
                                         {'app-name': 'System Settings'}, dbus_interface='org.example.LocalAuth', timeout=60))
            """
        let app = try Child("/usr/bin/python3", ["-c", script], environment: ["DBUS_SYSTEM_BUS_ADDRESS": rig.address],
                            stdoutPath: output, stderrPath: output)
        let shown = try agent.waitForShow()
        let python = try XCTUnwrap(realpath("/usr/bin/python3", nil).map { pointer -> String in
            defer { free(pointer) }
            return String(cString: pointer)
        })
        XCTAssertEqual(shown.program, python, "the trusted program is the interpreter, as the kernel names it")
        XCTAssertEqual(shown.appName, "System Settings")
        let headline = python.split(separator: "/").last.map(String.init) ?? python
        try agent.waitFor("headline \(shown.id) \(headline)")
        XCTAssertFalse(agent.log.contains("headline \(shown.id) System Settings"), agent.log)
        let window = try display.waitForWindow(named: "LocalAuth: \(headline)")
        _ = try agent.waitForGeometry(shown.id)
        try agent.waitForUpdate(shown.id, "place-finger")
        usleep(200_000)   // the label's next frame
        try display.screenshot(Self.outputDirectory + "/sheet-impersonation.png", window: window)
        try? FileManager.default.removeItem(atPath: Paths.root + "/docs/screenshots/prompt-impersonation.png")
        try FileManager.default.copyItem(atPath: Self.outputDirectory + "/sheet-impersonation.png",
                                         toPath: Paths.root + "/docs/screenshots/prompt-impersonation.png")
        try service.sensor("SCAN owner-finger")
        XCTAssertEqual(app.wait(timeout: 20), 0, readText(output))
    }

    /// The sheet in the dark variant of the theme (the desktop's preference,
    /// here forced with LOCALAUTH_PROMPT_COLOR_SCHEME). The program asking is
    /// an app as a person would have it: the AsyncUnlock example installed as
    /// /opt/notes/notes (this screenshot is docs/screenshots/prompt-dark.png).
    func testTheSheetFollowsADarkPreference() async throws {
        agent.stop()
        agent = try AgentProcess(rig: rig, display: display, name: "agent-dark",
                                 environment: ["LOCALAUTH_PROMPT_COLOR_SCHEME": "dark"])
        try await enroll(as: "owner-finger")
        let app = "/opt/notes/notes"
        try? FileManager.default.removeItem(atPath: "/opt/notes")
        try FileManager.default.createDirectory(atPath: "/opt/notes", withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(atPath: "/opt/notes") }
        try FileManager.default.copyItem(atPath: try Paths.example("AsyncUnlock"), toPath: app)
        let log = rig.directory + "/notes.log"
        let notes = try Child(app, [], environment: ["DBUS_SYSTEM_BUS_ADDRESS": rig.address], stdoutPath: log, stderrPath: log)
        defer { notes.signal(SIGKILL) }
        let shown = try agent.waitForShow()
        XCTAssertEqual(shown.program, app)
        let window = try display.waitForWindow(named: "LocalAuth: ")
        let buttons = try agent.waitForGeometry(shown.id)
        try agent.waitForUpdate(shown.id, "place-finger")
        usleep(200_000)
        let path = Self.outputDirectory + "/sheet-dark.png"
        try display.screenshot(path, window: window)
        // The window's background is dark: the top-left pixel's brightness.
        let pixel = try runProgram("/usr/bin/convert", [path, "-format", "%[fx:int(255*p{4,4}.intensity)]", "info:"])
        XCTAssertLessThan(Int(pixel.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 255, 100, pixel.output)
        try display.click(window, at: try XCTUnwrap(buttons["cancel"]))
        XCTAssertEqual(notes.wait(timeout: 30), 1, readText(log))
        XCTAssertEqual(readText(log), "cancelled\n")
    }

    /// Another uid's agent (65534) registers for its own uid, and never sees
    /// root's sheet; it cannot answer it; it cannot show a sheet on root's
    /// agent either. A second agent of the same uid and session is refused.
    func testAnotherUsersAgentNeverSeesNorAnswersThePrompt() async throws {
        let nobody = try AgentProcess(rig: rig, display: display, name: "agent-nobody", uid: 65534)
        defer { nobody.stop() }
        try await enroll(as: "owner-finger")

        let pending = Task { await self.evaluate(reason: "Unlock the root vault", context: LAContext()) }
        let shown = try agent.waitForShow()
        try agent.waitForUpdate(shown.id, "place-finger")
        usleep(300_000)
        XCTAssertFalse(nobody.log.contains("show "), "uid 65534's agent saw root's sheet: \(nobody.log)")

        // It knows the id (here from root's log): answering is still refused.
        let answer = try gdbus("PromptAnswer", [shown.id, "user-cancel"], asNobody: true)
        XCTAssertTrue(answer.output.contains("org.example.LocalAuth.Error.PermissionDenied"), answer.output)
        // Nor may it show a forged sheet on root's agent (bus policy, and the
        // agent believes only the service).
        let forged = try runAs(65534, "/usr/bin/gdbus", ["call", "--system", "--dest", agent.uniqueName,
                                                         "--object-path", "/org/example/LocalAuth/PromptAgent",
                                                         "--method", "org.example.LocalAuth.PromptAgent.ShowPrompt",
                                                         "forged", "{'reason': <'Type your password'>}"])
        XCTAssertNotEqual(forged.status, 0, forged.output)
        XCTAssertTrue(forged.output.contains("AccessDenied"), forged.output)
        XCTAssertFalse(agent.log.contains("show forged"), agent.log)

        // A second agent of root in the same (logind-less) session is refused.
        let second = try AgentProcess(rig: rig, display: display, name: "agent-root-2", waitForRegistration: false)
        defer { second.stop() }
        try second.waitFor("not registered: org.example.LocalAuth.Error.PromptAgentExists")

        // Root's evaluation went on, untouched.
        try service.sensor("SCAN owner-finger")
        let result = await pending.value
        XCTAssertTrue(result.succeeded, "\(result)")
        try agent.waitFor("close \(shown.id) success")
        XCTAssertFalse(nobody.log.contains("show "), nobody.log)
    }

    /// The other direction, as on a shared machine: uid 65534 evaluates with
    /// localauthctl; its own agent shows the sheet, root's agent never does,
    /// and its Cancel ends that evaluation (localauthctl exits 5, cancelled).
    func testAUsersOwnAgentShowsTheirSheetAndRootsAgentDoesNot() async throws {
        try rig.polkit("org.example.LocalAuth.enroll", "yes")
        try rig.polkit("org.example.LocalAuth.evaluate", "yes")
        defer {
            try? rig.polkit("org.example.LocalAuth.enroll", nil)
            try? rig.polkit("org.example.LocalAuth.evaluate", nil)
        }
        let nobody = try AgentProcess(rig: rig, display: display, name: "agent-nobody", uid: 65534)
        defer { nobody.stop() }
        let feeder = present("nobody-finger", times: 5)
        let enrolled = try runAs(65534, Paths.localauthctl, ["enroll"], timeout: 30)
        try await feeder.value
        XCTAssertEqual(enrolled.status, 0, enrolled.output)

        let output = rig.directory + "/nobody-evaluate-\(UInt32.random(in: 0...UInt32.max)).out"
        let app = try startAs(65534, Paths.localauthctl, ["evaluate", "--reason", "Unlock nobody's notes"], output: output)
        let shown = try nobody.waitForShow()
        XCTAssertEqual(shown.program, Paths.localauthctl)
        XCTAssertEqual(shown.reason, "Unlock nobody's notes")
        let window = try display.waitForWindow(named: "LocalAuth: localauthctl")
        let buttons = try nobody.waitForGeometry(shown.id)
        try nobody.waitForUpdate(shown.id, "place-finger")
        try display.screenshot(Self.outputDirectory + "/sheet-uid-65534.png", window: window)
        XCTAssertFalse(agent.log.contains("show "), "root's agent saw uid 65534's sheet: \(agent.log)")

        try display.click(window, at: try XCTUnwrap(buttons["cancel"]))
        XCTAssertEqual(app.wait(timeout: 20), 5, readText(output))
        XCTAssertTrue(readText(output).contains("UserCancel"), readText(output))
        XCTAssertFalse(agent.log.contains("show "), agent.log)
    }

    /// An agent that goes away is forgotten: evaluations go on as without one,
    /// and an agent that registers while one is in progress gets its sheet.
    func testAnAgentThatLeavesIsForgottenAndANewOneGetsTheSheet() async throws {
        try await enroll(as: "owner-finger")
        agent.stop()
        let pending = Task { await self.evaluate(reason: "Unlock after a restart", context: LAContext()) }
        try waitUntil("the service forgot the agent: \(service.log)") { service.log.contains("left") }
        agent = try AgentProcess(rig: rig, display: display, name: "agent-again")
        let shown = try agent.waitForShow()
        XCTAssertEqual(shown.reason, "Unlock after a restart")
        try service.sensor("SCAN owner-finger")
        let result = await pending.value
        XCTAssertTrue(result.succeeded, "\(result)")
    }

    // MARK: Helpers

    static func executablePath() -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        return String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// Xvfb on a display number of its own (from :87 up, the first whose lock
/// file is free), without access control, so that another uid's agent can
/// draw too.
final class VirtualDisplay: @unchecked Sendable {
    let number: Int
    let child: Child
    var name: String { ":\(number)" }

    init() throws {
        var number = 87
        while FileManager.default.fileExists(atPath: "/tmp/.X\(number)-lock") || FileManager.default.fileExists(atPath: "/tmp/.X11-unix/X\(number)") {
            number += 1
        }
        self.number = number
        let log = PromptTests.outputDirectory + "/xvfb-\(number).log"
        child = try Child("/usr/bin/Xvfb", [":\(number)", "-screen", "0", "1024x768x24", "-ac", "-nolisten", "tcp"],
                          stdoutPath: log, stderrPath: log)
        let deadline = Date().addingTimeInterval(10)
        while try runProgram("/usr/bin/xdotool", ["getdisplaygeometry"], environment: ["DISPLAY": ":\(number)"]).status != 0 {
            guard child.isRunning, Date() < deadline else { throw RigError("Xvfb :\(number) did not start: \(readText(log))") }
            usleep(50_000)
        }
    }

    func stop() {
        child.signal(SIGTERM)
        child.wait(timeout: 5)
    }

    private func xdotool(_ arguments: [String]) throws -> Outcome {
        try runProgram("/usr/bin/xdotool", arguments, environment: ["DISPLAY": name], timeout: 10)
    }

    /// The first window whose name contains `name` (xdotool search --name).
    func waitForWindow(named name: String, timeout: Double = 10) throws -> String {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let outcome = try xdotool(["search", "--onlyvisible", "--name", name])
            if outcome.status == 0, let id = outcome.stdout.split(separator: "\n").first { return String(id) }
            guard Date() < deadline else { throw RigError("no window named '\(name)' on \(self.name)") }
            usleep(50_000)
        }
    }

    func waitUntilGone(_ window: String, timeout: Double = 5) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while try xdotool(["search", "--onlyvisible", "--name", "^LocalAuth: "]).stdout.contains(window) {
            guard Date() < deadline else { throw RigError("window \(window) still shown after \(timeout) s") }
            usleep(50_000)
        }
    }

    func click(_ window: String, at point: (Int, Int)) throws {
        let outcome = try xdotool(["mousemove", "--window", window, String(point.0), String(point.1), "click", "1"])
        guard outcome.status == 0 else { throw RigError("xdotool click: \(outcome.output)") }
    }

    func key(_ window: String, _ key: String) throws {
        // Typed at the focused window (the sheet takes focus when shown).
        _ = try xdotool(["windowfocus", "--sync", window])
        let outcome = try xdotool(["key", key])
        guard outcome.status == 0 else { throw RigError("xdotool key: \(outcome.output)") }
    }

    /// The whole screen (`import -window root`), or one window.
    func screenshot(_ path: String, window: String = "root") throws {
        let outcome = try runProgram("/usr/bin/import", ["-display", name, "-window", window, path])
        guard outcome.status == 0 else { throw RigError("import: \(outcome.output)") }
        print("screenshot: \(path)")
    }
}

/// One localauth-prompt process on the rig's bus and the display.
final class AgentProcess: @unchecked Sendable {
    let child: Child
    let logPath: String
    private(set) var uniqueName = ""

    init(rig: BusRig, display: VirtualDisplay, name: String, uid: UInt32? = nil,
         environment extra: [String: String] = [:], waitForRegistration: Bool = true) throws {
        logPath = rig.directory + "/\(name)-\(UInt32.random(in: 0...UInt32.max)).log"
        var environment = ["DBUS_SYSTEM_BUS_ADDRESS": rig.address, "DISPLAY": display.name,
                           "LOCALAUTH_PROMPT_GEOMETRY": "1", "DBUS_SESSION_BUS_ADDRESS": ""]
        environment.merge(extra) { $1 }
        let program = Paths.binaries + "/localauth-prompt"
        if let uid {
            environment["HOME"] = "/nonexistent"
            child = try Child("/usr/bin/setpriv", RigTestCase.dropTo(uid) + [program], environment: environment,
                              stdoutPath: logPath, stderrPath: logPath)
        } else {
            child = try Child(program, [], environment: environment, stdoutPath: logPath, stderrPath: logPath)
        }
        if waitForRegistration {
            try waitFor("registered with ")
            let line = log.split(separator: "\n").first { $0.contains("registered with ") } ?? ""
            uniqueName = line.split(separator: " ").last.map(String.init) ?? ""
        }
    }

    var log: String { readText(logPath) }

    func stop() {
        child.signal(SIGTERM)
        child.wait(timeout: 5)
    }

    func waitFor(_ text: String, timeout: Double = 10) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while !log.contains(text) {
            guard child.isRunning else { throw RigError("localauth-prompt exited: \(log)") }
            guard Date() < deadline else { throw RigError("waited \(timeout) s for '\(text)' from localauth-prompt: \(log)") }
            usleep(20_000)
        }
    }

    struct Shown {
        let id: String
        let program: String
        let appName: String
        let reason: String
    }

    /// The next ShowPrompt the agent logged: "show ID program=P app-name=A reason=R".
    func waitForShow(after count: Int = 0) throws -> Shown {
        try waitFor("show ")
        let line = String(log.split(separator: "\n").filter { $0.hasPrefix("localauth-prompt: show ") }[count])
        let rest = line.dropFirst("localauth-prompt: show ".count)
        let id = String(rest.prefix { $0 != " " })
        func field(_ name: String, before next: String?) -> String {
            guard let start = rest.range(of: " \(name)=") else { return "" }
            let tail = rest[start.upperBound...]
            if let next, let end = tail.range(of: " \(next)=") { return String(tail[..<end.lowerBound]) }
            return String(tail)
        }
        return Shown(id: id, program: field("program", before: "app-name"), appName: field("app-name", before: "reason"),
                     reason: field("reason", before: nil))
    }

    func waitForUpdate(_ id: String, _ status: String) throws {
        try waitFor("update \(id) \(status)")
    }

    /// The buttons' centres in the window, as the agent reported them.
    func waitForGeometry(_ id: String) throws -> [String: (Int, Int)] {
        try waitFor("geometry \(id) ")
        let line = log.split(separator: "\n").first { $0.contains("geometry \(id) ") } ?? ""
        var buttons: [String: (Int, Int)] = [:]
        for part in line.split(separator: " ") where part.contains("=") {
            let pair = part.split(separator: "=")
            let numbers = pair[1].split(separator: ",").compactMap { Int($0) }
            if numbers.count == 2 { buttons[String(pair[0])] = (numbers[0], numbers[1]) }
        }
        return buttons
    }
}
