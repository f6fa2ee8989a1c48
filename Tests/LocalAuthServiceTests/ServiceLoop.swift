import DBusCore
import Foundation

/// The service's actor runs on the process's default GLib loop, which no one
/// iterates in a test process: one thread does it here, for every test class
/// that awaits service-isolated code (started once, lives with the process).
enum ServiceLoop {
    static let running: Void = {
        let thread = Thread { EventLoop.processDefault.run() }
        thread.start()
    }()
}
