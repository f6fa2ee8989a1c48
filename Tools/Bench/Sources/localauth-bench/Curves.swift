import Foundation

// Curves (issue 25, "curves, not points"): how a call's latency grows with
// the work the service holds — users with prints, prints per user,
// LAEnvironment subscribers, rights per user, concurrent callers. Each curve
// is one measured call against one kind of work; its slope is a least-squares
// fit of the chosen statistic (median, or p99 for concurrency) on the work,
// and it is "flat" when the fitted rise over the whole range is within the
// noise measured at its own points (BENCHMARKS.md, "Curves").

/// One point of a curve: the amount of work, and the call's latency there.
struct CurvePoint: Codable, Sendable {
    let x: Int
    let summary: Summary
    /// The curve's statistic (median or p99) of each round at this point,
    /// in µs: their spread is the noise the slope is judged against.
    let rounds: [Double]
    var errors = 0
    /// Concurrency points: successful calls per second over all callers.
    var throughput: Double?
}

struct CurveFit: Codable, Sendable {
    /// Least-squares slope of the statistic on x, in µs per `Curve.per` items.
    let slope: Double
    /// The fitted change from the first to the last x, µs.
    let rise: Double
    /// The largest spread of round statistics at any point (at least 3% of
    /// the first point's value), µs.
    let noise: Double
    var flat: Bool { abs(rise) <= noise }
}

struct Curve: Codable, Sendable {
    /// e.g. "users-preflight".
    let id: String
    /// What was timed, e.g. "preflight (CanEvaluatePolicy)".
    let call: String
    /// The work on the x axis, e.g. "users with prints".
    let axis: String
    /// Slope unit: µs per `per` items of `perName`.
    let per: Int
    let perName: String
    /// "median" or "p99": which statistic the slope and the verdict use.
    let statistic: String
    /// Whether nothing in this call needs to grow with the work (the issue's
    /// "flat where nothing needs to grow").
    let shouldBeFlat: Bool
    var points: [CurvePoint] = []
    var fit: CurveFit?
    var note: String?

    init(
        id: String, call: String, axis: String, per: Int, perName: String, statistic: String = "median",
        shouldBeFlat: Bool, note: String? = nil
    ) {
        self.id = id
        self.call = call
        self.axis = axis
        self.per = per
        self.perName = perName
        self.statistic = statistic
        self.shouldBeFlat = shouldBeFlat
        self.note = note
    }

    func value(_ point: CurvePoint) -> Double { statistic == "p99" ? point.summary.p99 : point.summary.median }

    /// Fits the slope once every point is in.
    mutating func finish() {
        let usable = points.filter { $0.summary.count > 0 && value($0).isFinite }
        guard usable.count >= 2 else { return }
        let xs = usable.map { Double($0.x) }
        let ys = usable.map(value)
        let meanX = xs.reduce(0, +) / Double(xs.count)
        let meanY = ys.reduce(0, +) / Double(ys.count)
        var covariance = 0.0
        var variance = 0.0
        for (x, y) in zip(xs, ys) {
            covariance += (x - meanX) * (y - meanY)
            variance += (x - meanX) * (x - meanX)
        }
        let perItem = variance > 0 ? covariance / variance : 0
        let spread = usable.map { ($0.rounds.max() ?? 0) - ($0.rounds.min() ?? 0) }.max() ?? 0
        fit = CurveFit(
            slope: perItem * Double(per), rise: perItem * (xs.last! - xs.first!),
            noise: max(spread, 0.03 * ys[0]))
    }

    var verdict: String {
        guard let fit else { return "–" }
        let shape = fit.flat ? "flat" : (fit.rise > 0 ? "grows" : "falls")
        // Falling is never a defect: it is noise, or a cache warming up.
        let expectation = shouldBeFlat ? (fit.flat || fit.rise < 0 ? "" : " (should be flat)") : " (may grow)"
        return "\(shape)\(expectation): rise \(Int(fit.rise.rounded())) vs noise \(Int(fit.noise.rounded())) µs"
    }
}

/// Groups of every point of every curve on one axis, as text (stdout and BENCHMARKS.md).
func curvesTable(_ curves: [Curve]) -> String {
    var output: [String] = []
    var axes: [String] = []
    for curve in curves where !axes.contains(curve.axis) { axes.append(curve.axis) }
    for axis in axes {
        let group = curves.filter { $0.axis == axis }
        let xs = group.flatMap { $0.points.map(\.x) }.reduce(into: [Int]()) { if !$0.contains($1) { $0.append($1) } }
        var lines: [[String]] = [[axis] + xs.map(grouped) + ["slope", "verdict"]]
        for curve in group {
            for statistic in ["median", "p99"] {
                let cells = xs.map { x -> String in
                    guard let point = curve.points.first(where: { $0.x == x }), point.summary.count > 0 else { return "–" }
                    let value = statistic == "p99" ? point.summary.p99 : point.summary.median
                    return String(Int(value.rounded())) + (point.errors > 0 ? "!\(point.errors)" : "")
                }
                let judged = statistic == curve.statistic
                let slope = judged ? curve.fit.map { String(format: "%+.1f µs per %@ %@", $0.slope, grouped(curve.per), curve.perName) } ?? "–" : ""
                lines.append(["  \(curve.call), \(statistic) (µs)"] + cells + [slope, judged ? curve.verdict : ""])
            }
            if curve.points.contains(where: { $0.throughput != nil }) {
                let cells = xs.map { x in curve.points.first(where: { $0.x == x })?.throughput.map { String(Int($0.rounded())) } ?? "–" }
                lines.append(["  \(curve.call), throughput (calls/s)"] + cells + ["", ""])
            }
        }
        output.append(render(lines))
    }
    return output.joined(separator: "\n\n")
}

/// 10000 → "10,000".
func grouped(_ value: Int) -> String {
    let digits = Array(String(abs(value)))
    var text = ""
    for (index, digit) in digits.enumerated() {
        if index > 0 && (digits.count - index) % 3 == 0 { text.append(",") }
        text.append(digit)
    }
    return (value < 0 ? "-" : "") + text
}

/// Left-aligned first and last two columns, numbers right-aligned.
private func render(_ lines: [[String]]) -> String {
    let columns = lines.map(\.count).max() ?? 0
    var widths = Array(repeating: 0, count: columns)
    for line in lines { for (index, cell) in line.enumerated() { widths[index] = max(widths[index], cell.count) } }
    return lines.map { line in
        line.enumerated().map { index, cell in
            let pad = String(repeating: " ", count: widths[index] - cell.count)
            return index == 0 || index >= columns - 2 ? cell + pad : pad + cell
        }.joined(separator: "  ").trimmingCharacters(in: .whitespaces)
    }.joined(separator: "\n")
}
