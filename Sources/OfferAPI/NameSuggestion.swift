/// "Did you mean" for names people type: rule names, commands, payload fields.
public enum NameSuggestion {
    /// The candidate closest to `name`, ignoring case, when it is at most two edits away and the edits change
    /// under half of it (so "ca" is never offered for "xy"); `nil` when no candidate is that close.
    public static func closest(to name: String, among candidates: some Sequence<String>) -> String? {
        let target = Array(name.lowercased().utf8)
        var best: (name: String, distance: Int)?
        for candidate in candidates {
            let letters = Array(candidate.lowercased().utf8)
            let distance = editDistance(target, letters)
            if distance <= min(2, letters.count / 2) && distance < best?.distance ?? .max {
                best = (candidate, distance)
            }
        }
        return best?.name
    }

    /// Levenshtein distance over bytes.
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
