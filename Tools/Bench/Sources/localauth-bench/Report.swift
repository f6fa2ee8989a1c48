import Foundation

/// Order statistics of a set of durations, in microseconds.
struct Summary: Codable, Sendable {
    let count: Int
    let median: Double
    let p90: Double
    let p99: Double
    let min: Double
    let max: Double
    let mean: Double

    /// From durations in nanoseconds (nearest-rank percentiles).
    init(nanoseconds: [UInt64]) {
        let sorted = nanoseconds.sorted().map { Double($0) / 1000 }
        count = sorted.count
        func rank(_ p: Double) -> Double {
            guard !sorted.isEmpty else { return .nan }
            let index = Int((p * Double(sorted.count)).rounded(.up)) - 1
            return sorted[Swift.max(0, Swift.min(sorted.count - 1, index))]
        }
        median = rank(0.5)
        p90 = rank(0.9)
        p99 = rank(0.99)
        min = sorted.first ?? .nan
        max = sorted.last ?? .nan
        mean = sorted.isEmpty ? .nan : sorted.reduce(0, +) / Double(sorted.count)
    }
}

/// One line of the table: our figure, the baseline's, and their ratio.
struct Row: Codable, Sendable {
    let id: String
    let label: String
    let unit: String
    let ours: Double
    /// fprintd's figure; for the Ping row, the Ping floor.
    let baseline: Double
    let baselineName: String
    /// ours / baseline.
    let ratio: Double
    let target: String
    let met: Bool?
}

struct Concurrency: Codable, Sendable {
    let clients: Int
    let callsPerClient: Int
    let seconds: Double
    let throughputPerSecond: Double
    let latency: Summary
    let errors: Int
    let firstError: String?
}

struct Memory: Codable, Sendable {
    let pid: Int32
    let afterStartKiB: Int
    let idleKiB: Int
    let after10kKiB: Int
    let atEndKiB: Int
    let callsAtEnd: Int
}

struct DaemonResults: Codable, Sendable {
    var preflight: Summary?
    var evaluation: Summary?
    var evaluationErrors = 0
    /// Evaluations that open the reader first: it closed after the linger
    /// (issue 22), as fprintd's Claim opens it every cycle.
    var evaluationWithOpen: Summary?
    var concurrency: Concurrency?
    var memory: Memory?
    var startup: Summary?
    var startupTrials: [Double] = []
}

struct Results: Codable, Sendable {
    var date = ISO8601DateFormatter().string(from: Date())
    var machine: [String: String] = [:]
    var settings: [String: Int] = [:]
    var ping: Summary?
    var localauthd = DaemonResults()
    var fprintd = DaemonResults()
    /// Rights and secrets (RightsBench.swift); localauthd only.
    var rights: RightsResults?
    /// An app's preflight through the client libraries (AppBench.swift).
    var app: AppPreflights?
    var rows: [Row] = []
    var notes: [String] = []
    /// How latency grows with the work (Curves.swift).
    var curves: [Curve] = []
}

func formatted(_ value: Double, _ unit: String) -> String {
    guard value.isFinite else { return "–" }
    switch unit {
    case "µs", "calls/s": return String(Int(value.rounded()))
    case "MB": return String(format: "%.1f", value)
    default: return value >= 100 ? String(format: "%.0f", value) : String(format: "%.2f", value)
    }
}

/// The table, as plain text (also what BENCHMARKS.md shows).
func table(_ rows: [Row]) -> String {
    let header = ["row", "localauthd", "fprintd", "ratio", "target", "met"]
    var lines: [[String]] = [header]
    for row in rows {
        let met = row.met.map { $0 ? "yes" : "NO" } ?? "–"
        lines.append(["\(row.label) (\(row.unit))", formatted(row.ours, row.unit),
                      "\(formatted(row.baseline, row.unit)) \(row.baselineName)",
                      row.ratio.isFinite ? String(format: "%.2f", row.ratio) : "–", row.target, met])
    }
    var widths = Array(repeating: 0, count: header.count)
    for line in lines { for (index, cell) in line.enumerated() { widths[index] = max(widths[index], cell.count) } }
    func render(_ line: [String]) -> String {
        line.enumerated().map { index, cell in
            let pad = String(repeating: " ", count: widths[index] - cell.count)
            return index == 0 || index >= 4 ? cell + pad : pad + cell
        }.joined(separator: "  ").trimmingCharacters(in: .whitespaces)
    }
    var output = [render(lines[0]), widths.map { String(repeating: "-", count: $0) }.joined(separator: "  ")]
    output += lines.dropFirst().map(render)
    return output.joined(separator: "\n")
}
