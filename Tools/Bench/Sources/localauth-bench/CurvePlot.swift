import Foundation

// The curves as one SVG, written by hand (no plotting dependency): a panel
// per curve, the work on an evenly spaced x axis (its values are 1, 100,
// 1,000…: the spacing is by rank, not to scale), the latency on a linear y
// axis from 0; the median solid, the p99 dashed; the verdict under the title.

func curvesPlot(_ curves: [Curve]) -> String {
    let columns = 3
    let width = 360.0
    let height = 230.0
    let rows = (curves.count + columns - 1) / columns
    let total = (width: Double(columns) * width, height: Double(rows) * height + 50)
    var svg = """
        <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(total.width))" height="\(Int(total.height))" \
        viewBox="0 0 \(Int(total.width)) \(Int(total.height))" font-family="sans-serif" font-size="11">
        <rect width="100%" height="100%" fill="white"/>
        <text x="10" y="22" font-size="15" font-weight="bold">localauthd: latency as the work grows (µs; solid median, dashed p99)</text>
        <text x="10" y="36" fill="#555">green: flat within noise; blue: grows where the work must grow; magenta: grows where nothing needs to. x: the points' values, evenly spaced (not to scale)</text>

        """
    for (index, curve) in curves.enumerated() {
        let x0 = Double(index % columns) * width
        let y0 = 50 + Double(index / columns) * height
        svg += panel(curve, x: x0, y: y0, width: width, height: height)
    }
    return svg + "</svg>\n"
}

private func escaped(_ text: String) -> String {
    text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
        .replacingOccurrences(of: ">", with: "&gt;")
}

private func number(_ value: Double) -> String { String(format: "%.1f", value) }

private func panel(_ curve: Curve, x: Double, y: Double, width: Double, height: Double) -> String {
    let left = x + 58
    let right = x + width - 28
    let top = y + 42
    let bottom = y + height - 40
    let points = curve.points.filter { $0.summary.count > 0 }
    let highest = max(1, points.map { max($0.summary.p99, $0.summary.median) }.max() ?? 1)
    let (scale, steps) = niceCeiling(highest * 1.05)
    func px(_ rank: Int) -> Double {
        points.count > 1 ? left + (right - left) * Double(rank) / Double(points.count - 1) : (left + right) / 2
    }
    func py(_ value: Double) -> Double { bottom - (bottom - top) * min(value, scale) / scale }

    let flat = curve.fit?.flat ?? false
    let colour = flat ? "#1b7837" : (curve.shouldBeFlat ? "#c51b7d" : "#2166ac")
    var out = "<g>\n"
    let title = curve.call.replacingOccurrences(of: " (Swift library)", with: " (Swift)") + " vs " + curve.axis
    out += "<text x=\"\(number(x + 10))\" y=\"\(number(y + 14))\" font-weight=\"bold\">\(escaped(title))</text>\n"
    let slope = curve.fit.map { String(format: "%+.1f µs per %@ %@", $0.slope, grouped(curve.per), curve.perName) } ?? ""
    let verdict = curve.fit.map { $0.flat ? "flat" : ($0.rise > 0 ? "grows" : "falls") } ?? ""
    out += "<text x=\"\(number(x + 10))\" y=\"\(number(y + 29))\" fill=\"\(colour)\">\(curve.statistic): \(verdict), \(escaped(slope))</text>\n"
    // Axes, grid and labels.
    for step in 0...steps {
        let value = scale * Double(step) / Double(steps)
        let line = py(value)
        out += "<line x1=\"\(number(left))\" y1=\"\(number(line))\" x2=\"\(number(right))\" y2=\"\(number(line))\" stroke=\"#ddd\"/>\n"
        out += "<text x=\"\(number(left - 6))\" y=\"\(number(line + 4))\" text-anchor=\"end\">\(grouped(Int(value.rounded())))</text>\n"
    }
    out += "<line x1=\"\(number(left))\" y1=\"\(number(top))\" x2=\"\(number(left))\" y2=\"\(number(bottom))\" stroke=\"#444\"/>\n"
    out += "<line x1=\"\(number(left))\" y1=\"\(number(bottom))\" x2=\"\(number(right))\" y2=\"\(number(bottom))\" stroke=\"#444\"/>\n"
    for (rank, point) in points.enumerated() {
        out += "<text x=\"\(number(px(rank)))\" y=\"\(number(bottom + 15))\" text-anchor=\"middle\">\(grouped(point.x))</text>\n"
    }
    out += "<text x=\"\(number((left + right) / 2))\" y=\"\(number(bottom + 31))\" text-anchor=\"middle\" fill=\"#555\">\(escaped(curve.axis))</text>\n"
    // The two series.
    for (statistic, dash) in [("p99", " stroke-dasharray=\"5,3\""), ("median", "")] {
        let coordinates = points.enumerated().map { rank, point in
            "\(number(px(rank))),\(number(py(statistic == "p99" ? point.summary.p99 : point.summary.median)))"
        }
        out += "<polyline points=\"\(coordinates.joined(separator: " "))\" fill=\"none\" stroke=\"\(colour)\" stroke-width=\"2\"\(dash)/>\n"
        for coordinate in coordinates {
            let parts = coordinate.split(separator: ",")
            out += "<circle cx=\"\(parts[0])\" cy=\"\(parts[1])\" r=\"3\" fill=\"\(statistic == "median" ? colour : "white")\" stroke=\"\(colour)\"/>\n"
        }
    }
    return out + "</g>\n"
}

/// The axis' top (1, 2, 2.5 or 5 times a power of ten, at least `value`)
/// and a number of grid steps that keeps their labels round.
private func niceCeiling(_ value: Double) -> (Double, Int) {
    let power = pow(10, floor(log10(value)))
    for factor in [1.0, 2, 2.5, 5, 10] where factor * power >= value { return (factor * power, factor == 2 ? 4 : 5) }
    return (10 * power, 5)
}
