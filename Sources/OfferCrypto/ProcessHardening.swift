import COpenSSL
import CSystem

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// What `offer-signer` does to itself before it reads a key: no core dump, no inspection by other processes of the
/// same user, and private key material in OpenSSL's secure heap.
///
/// - `prctl(PR_SET_DUMPABLE, 0)`: no core dump, and `ptrace` and `/proc/PID/mem` are closed to other processes of
///   the same user (root with `CAP_SYS_PTRACE` can still read them; nothing in a process can stop that).
/// - `setrlimit(RLIMIT_CORE, 0)`: no core file even if something makes the process dumpable again.
/// - `CRYPTO_secure_malloc_init`: OpenSSL 3 allocates an EC key's private scalar with `BN_secure_new`, and once the
///   secure heap is set up that memory comes from it: a region of its own, locked in RAM (never swapped), left out
///   of core dumps (`MADV_DONTDUMP`), and cleared when freed. It must be set up before the first key is parsed.
///
/// Failures are warnings, not fatal: each is a second line of defence (the key file on disk is the first thing an
/// attacker with these powers would read), and a container that forbids `mlock` (a low `RLIMIT_MEMLOCK`) or a
/// seccomp profile that forbids `prctl` should not stop the service. The warnings say what did not take effect.
public enum ProcessHardening {
    /// The secure heap's size: 1 MiB. A P-256 key holds 32 bytes of it (its scalar: 256 keys took 8,704 bytes,
    /// measured with `CRYPTO_secure_used` as in `ProcessHardeningTests`), and a signature borrows a little more while
    /// it runs (its nonce), so 1 MiB holds thousands of keys with every worker thread signing at once, and two whole
    /// catalogs during a reload. Its pages are locked only when touched (`MLOCK_ONFAULT`), so the unused part costs no
    /// memory, and 1 MiB is within Linux's default `RLIMIT_MEMLOCK` (8 MiB since 5.16). A full secure heap would make
    /// key loading or signing fail, not fall back to ordinary memory: hence the generous size.
    public static let secureHeapSize = 1 << 20
    /// The smallest block the secure heap hands out; a power of two, as OpenSSL requires. 16 bytes: an EC scalar is
    /// 32, so nothing is rounded up much, and the heap's free-list bitmap stays at 16 KiB.
    public static let secureHeapMinimumBlock = 16

    /// What did not take effect: one line to log, with no secret in it.
    public struct Warning: Sendable, Equatable, CustomStringConvertible {
        public let message: String
        /// Only the secure heap's memory lock failed (a low `RLIMIT_MEMLOCK`): the heap is still used, but its pages
        /// may be swapped out. `serve` logs it; the short-lived commands do not print it.
        public let isMemoryLockOnly: Bool

        init(_ message: String, isMemoryLockOnly: Bool = false) {
            self.message = message
            self.isMemoryLockOnly = isMemoryLockOnly
        }

        public var description: String { message }
    }

    /// Applies everything once per process (later calls return the first outcome): the warnings to log, one line
    /// each, empty when all took effect.
    public static func apply() -> [Warning] { applied }

    private static let applied: [Warning] = {
        var warnings: [Warning] = []
        #if os(Linux)
            if offer_set_dumpable(0) != 0 {
                warnings.append(
                    Warning(
                        "cannot make the process non-dumpable (prctl PR_SET_DUMPABLE: \(systemError())); other "
                            + "processes of this user may read its memory"))
            }
        #endif
        var noCore = rlimit(rlim_cur: 0, rlim_max: 0)
        if setrlimit(coreLimit, &noCore) != 0 {
            warnings.append(
                Warning("cannot set the core file size limit to 0 (setrlimit RLIMIT_CORE: \(systemError()))"))
        }
        if let warning = startSecureHeap() { warnings.append(warning) }
        return warnings
    }()

    #if os(Linux)
        private static let coreLimit = __rlimit_resource_t(RLIMIT_CORE.rawValue)
    #else
        private static let coreLimit = RLIMIT_CORE
    #endif

    /// Sets up OpenSSL's secure heap alone (the test kit and tests call this; `apply` includes it). Idempotent:
    /// the first call's warning, if any, is returned each time.
    @discardableResult
    public static func startSecureHeap() -> Warning? { secureHeap }

    private static let secureHeap: Warning? = {
        guard CRYPTO_secure_malloc_initialized() == 0 else { return nil }
        switch CRYPTO_secure_malloc_init(secureHeapSize, secureHeapMinimumBlock) {
        case 1:
            return nil
        case 2:
            return Warning(
                "OpenSSL's secure heap is set up but not locked in memory (raise RLIMIT_MEMLOCK, LimitMEMLOCK= in "
                    + "systemd, to at least \(secureHeapSize >> 10) KiB); keys may be swapped out",
                isMemoryLockOnly: true)
        default:
            OpenSSLError.drain()
            return Warning("cannot set up OpenSSL's secure heap; private keys are held in ordinary memory")
        }
    }()

    /// Bytes of the secure heap in use now (`CRYPTO_secure_used`); 0 when it is not set up.
    public static var secureHeapBytesInUse: Int { CRYPTO_secure_used() }

    /// Whether the secure heap is set up.
    public static var secureHeapIsActive: Bool { CRYPTO_secure_malloc_initialized() == 1 }

    /// The environment variable that configures the Swift runtime's crash reports, read by the runtime at start
    /// (so the process cannot set it for itself).
    public static let backtraceVariable = "SWIFT_BACKTRACE"

    /// A warning when `value` (the `SWIFT_BACKTRACE` setting, `nil` when unset) leaves the Swift runtime's crash
    /// report on: that report prints the registers and the memory around them to standard error, that is to the
    /// logs, so a crash while signing could log key bytes. Only `enable=no` (or another false value) turns it off;
    /// `sanitize=yes` hides paths but not memory. `nil` when crash reports are off.
    public static func backtraceWarning(_ value: String?) -> String? {
        let off: Set<String> = ["no", "n", "false", "f", "off", "0"]
        for item in (value ?? "").split(separator: ",") {
            let parts = item.filter { $0 != " " }.lowercased().split(separator: "=", maxSplits: 1)
            if parts.count == 2, parts[0] == "enable", off.contains(String(parts[1])) { return nil }
        }
        return
            "\(backtraceVariable) does not contain enable=no: a crash would print registers and the memory around "
            + "them to standard error (the logs); set \(backtraceVariable)=enable=no in the service's environment"
    }
}
