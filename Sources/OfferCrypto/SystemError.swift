#if canImport(Glibc)
    import Glibc
#endif

/// The system's words for an error number ("No such file or directory"), for messages in every module that
/// touches files or processes: never a bare errno.
public func systemError(_ code: Int32 = errno) -> String {
    String(cString: strerror(code))
}
