#if canImport(Glibc)
    import Glibc
#endif

let arguments = CommandLine.arguments.dropFirst()
let status = CommandLineTool.run(arguments)
exit(status)
