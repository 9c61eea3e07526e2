// offer-signer-fuzz TARGET [libFuzzer flags and corpus folders]: runs libFuzzer on one of the parsers in
// `FuzzTarget.all`; `--list` prints their names. The target's name is taken off the arguments, the rest go to
// libFuzzer as they are (`-max_total_time=60`, `-artifact_prefix=DIR/`, corpus folders, or files to re-run).
// The name is also put in the environment: the processes libFuzzer's `-fork=N` and `-jobs=N` start get the flags
// only, and read it there.
import CFuzzerDriver

#if canImport(Glibc)
    import Glibc
#endif

/// libFuzzer's callback: one input to the chosen target. Always 0 (a finding stops the process instead). Passed to
/// the driver, and exported under libFuzzer's usual name as well, which its runtime refers to.
@_cdecl("LLVMFuzzerTestOneInput")
func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    FuzzTarget.chosen?.run(bytes)
    return 0
}

/// Writes to standard error (file descriptor 2: the C `stderr` variable is shared mutable state to Swift 6).
func printError(_ text: String) {
    let bytes = Array(text.utf8)
    _ = bytes.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
}

func usage() -> Never {
    var text = "usage: offer-signer-fuzz TARGET [libFuzzer flags] [CORPUS_DIR...]\n       offer-signer-fuzz --list\n"
    text += "targets:\n"
    for target in FuzzTarget.all { text += "  \(target.name)  \(target.summary)\n" }
    printError(text)
    exit(2)
}

let environmentName = "OFFER_SIGNER_FUZZ_TARGET"
var arguments = CommandLine.arguments
if arguments.count >= 2 && arguments[1] == "--list" {
    print(FuzzTarget.all.map(\.name).joined(separator: " "))
    exit(0)
}
let target: FuzzTarget
if arguments.count >= 2, let named = FuzzTarget.all.first(where: { $0.name == arguments[1] }) {
    target = named
    arguments.remove(at: 1)
} else if let name = getenv(environmentName).map({ String(cString: $0) }),
    let inherited = FuzzTarget.all.first(where: { $0.name == name })
{
    target = inherited
} else {
    if arguments.count >= 2 { printError("offer-signer-fuzz: no target \"\(arguments[1])\"\n") }
    usage()
}
FuzzTarget.chosen = target
setenv(environmentName, target.name, 1)

// libFuzzer reads argv[0] and its flags: the program's own argv without the target's name.
var driverArguments: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) }
driverArguments.append(nil)
var argc = CInt(driverArguments.count - 1)
let status = driverArguments.withUnsafeMutableBufferPointer { buffer in
    var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = buffer.baseAddress
    return LLVMFuzzerRunDriver(&argc, &argv, fuzzOneInput)
}
exit(status)
