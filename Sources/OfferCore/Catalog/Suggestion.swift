/// "Did you mean" for names typed by people: rule names, configuration keys, commands.
public enum Suggestion {
    /// The candidate closest to `name` within two edits, ignoring case; `nil` when none is that close.
    public static func closest(to name: String, in candidates: [String]) -> String? {
        let target = Array(name.lowercased().utf8)
        var best: (name: String, distance: Int)?
        for candidate in candidates {
            let distance = editDistance(target, Array(candidate.lowercased().utf8))
            if distance <= 2 && distance < best?.distance ?? .max { best = (candidate, distance) }
        }
        return best?.name
    }

    static func editDistance(_ a: [UInt8], _ b: [UInt8]) -> Int {
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                let substitution = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)
                current[j] = Swift.min(previous[j] + 1, current[j - 1] + 1, substitution)
            }
            swap(&previous, &current)
        }
        return previous[b.count]
    }
}
