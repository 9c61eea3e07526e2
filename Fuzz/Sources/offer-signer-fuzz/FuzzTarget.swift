/// One parser under fuzz: its name on the command line and what it does with one input. An input the parser
/// refuses is fine (that is what bad input should get); a crash, or a property checked with `check` that does not
/// hold, is a finding: libFuzzer saves the input.
struct FuzzTarget: Sendable {
    let name: String
    /// One line for `--list`.
    let summary: String
    let run: @Sendable ([UInt8]) -> Void

    /// The target the command line chose. Written once by `main.swift` before the driver starts and read by the
    /// callback, which libFuzzer calls on that same thread: no concurrent access.
    nonisolated(unsafe) static var chosen: FuzzTarget?
}

/// Stops the run when a property fails, so libFuzzer keeps the input as a crash. The message names the property,
/// never the input (which may look like a token).
func check(_ condition: Bool, _ property: @autoclosure () -> String, file: StaticString = #fileID, line: UInt = #line) {
    if !condition { fatalError("property failed: \(property())", file: file, line: line) }
}
