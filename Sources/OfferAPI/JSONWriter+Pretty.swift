extension JSONWriter {
    /// `value` as compact JSON text, members sorted.
    public static func compact(_ value: JSONValue) -> [UInt8] {
        var writer = JSONWriter()
        writer.value(value)
        return writer.bytes
    }

    /// `value` as indented JSON text ending in a newline, members sorted: for files people keep in git and read
    /// (`catalog export`). Empty arrays and objects stay on one line.
    public static func pretty(_ value: JSONValue, indent: Int = 2) -> [UInt8] {
        var out: [UInt8] = []
        write(value, depth: 0, indent: indent, to: &out)
        out.append(UInt8(ascii: "\n"))
        return out
    }

    private static func write(_ value: JSONValue, depth: Int, indent: Int, to out: inout [UInt8]) {
        func newline(_ level: Int) {
            out.append(UInt8(ascii: "\n"))
            out += [UInt8](repeating: UInt8(ascii: " "), count: level * indent)
        }
        switch value {
        case .array(let elements) where !elements.isEmpty:
            out.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                newline(depth + 1)
                write(element, depth: depth + 1, indent: indent, to: &out)
            }
            newline(depth)
            out.append(UInt8(ascii: "]"))
        case .object(let members) where !members.isEmpty:
            out.append(UInt8(ascii: "{"))
            for (index, name) in members.keys.sorted().enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                newline(depth + 1)
                appendQuoted(name, to: &out)
                out += Array(": ".utf8)
                write(members[name]!, depth: depth + 1, indent: indent, to: &out)
            }
            newline(depth)
            out.append(UInt8(ascii: "}"))
        default:
            var writer = JSONWriter()
            writer.value(value)
            out += writer.bytes
        }
    }
}
