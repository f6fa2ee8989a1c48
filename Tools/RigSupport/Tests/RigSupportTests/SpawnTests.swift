import Glibc
import RigSupport
import XCTest

final class SpawnTests: XCTestCase {
    /// A child gets 0, 1 and 2 and nothing else of ours: not the rig's lock
    /// (`flock LOCK swift test …` leaves it open in the test process, without
    /// close-on-exec), whose copy in an orphaned localauthd once blocked every
    /// later rig run until that daemon died.
    func testAChildInheritsOnlyItsStandardDescriptors() throws {
        let path = "/tmp/rigsupport-inherit-\(getpid()).lock"
        let lock = open(path, O_RDWR | O_CREAT, 0o600)  // as flock(1) opens it: no O_CLOEXEC
        XCTAssertGreaterThanOrEqual(lock, 0)
        defer {
            close(lock)
            unlink(path)
        }
        XCTAssertEqual(fcntl(lock, F_GETFD) & FD_CLOEXEC, 0)
        XCTAssertEqual(flock(lock, LOCK_EX), 0)

        let output = "/tmp/rigsupport-inherit-\(getpid()).out"
        defer { unlink(output) }
        let child = try Child("/bin/sleep", ["30"], stdoutPath: output, stderrPath: output)
        defer {
            child.signal(SIGKILL)
            child.wait(timeout: 5)
        }
        let open = try openDescriptors(of: child.pid)
        XCTAssertEqual(open[0], "/dev/null")
        XCTAssertEqual(open[1], output)
        XCTAssertEqual(open[2], output)
        XCTAssertFalse(open.values.contains(path), "\(open)")
        // Above 2, only what the program opened itself (sleep's locale files
        // while it starts): nothing the test process has open (its sockets
        // and pipes are named by inode, so a leaked one would match).
        let ours = Set(try descriptors(in: "/proc/self/fd").values)
        for (fd, target) in open where fd > 2 && target != "?" {
            XCTAssertFalse(ours.contains(target), "descriptor \(fd) (\(target)) came from the test process")
        }
    }

    /// What /proc says a process has open: descriptor → target. Read once
    /// the child has exec'd (its command line is the program's), so that the
    /// descriptors are those the program starts with, not posix_spawn's own.
    private func openDescriptors(of pid: pid_t) throws -> [Int: String] {
        let deadline = Clock.nanoseconds() + 5_000_000_000
        while !readText("/proc/\(pid)/cmdline").hasPrefix("/bin/sleep") {
            guard Clock.nanoseconds() < deadline else { throw RigError("child \(pid) did not exec") }
            usleep(1_000)
        }
        return try descriptors(in: "/proc/\(pid)/fd")
    }

    private func descriptors(in path: String) throws -> [Int: String] {
        guard let directory = opendir(path) else { throw RigError("cannot list \(path)") }
        defer { closedir(directory) }
        var result: [Int: String] = [:]
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard let fd = Int(name) else { continue }
            var target = [CChar](repeating: 0, count: 4096)
            let count = readlink("\(path)/\(name)", &target, target.count - 1)
            result[fd] = count > 0 ? String(decoding: target.prefix(count).map { UInt8(bitPattern: $0) }, as: UTF8.self) : "?"
        }
        return result
    }
}
