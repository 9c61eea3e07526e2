#if canImport(Glibc)
    import Glibc
#endif

/// Where the server sees a connection's bytes before libmicrohttpd does, for `RawRequestCheck`.
///
/// libmicrohttpd 0.9.75 reads its sockets with `recv` and offers no hook for the bytes it reads: its API hands
/// over headers as C strings (cut at a NUL) and bodies already decoded from their chunks. So this executable
/// defines `recv` itself: the dynamic linker binds libmicrohttpd's calls (and libpq's and libcurl's) to it rather
/// than to glibc's, as it would for an `LD_PRELOAD` library. It receives with glibc's `recvfrom` (the same system
/// call, no address asked), and then, only for a socket the HTTP server registered when libmicrohttpd announced
/// the connection, scans what was received. Every other socket passes through untouched; a socket is known by
/// its number in a table as long as the file descriptor limit.
///
/// Safe without locks: a connection's socket is registered, read and unregistered by the one libmicrohttpd
/// thread that owns the connection (its daemon's), from its start notice to its close notice, and a number is
/// only reused once the socket has been closed, after that notice. The table's slots are written once per
/// connection; the table itself never moves.
public enum ReceiveHook {
    /// One slot per possible file descriptor: the connection's check, or nil. Zeroed by `calloc`, so the pages of
    /// slots never used are never touched.
    nonisolated(unsafe) static let slots: UnsafeMutablePointer<UnsafeMutablePointer<RawRequestCheck>?> = {
        let size = MemoryLayout<UnsafeMutablePointer<RawRequestCheck>?>.stride
        guard let memory = calloc(capacity, size) else { fatalError("cannot allocate the receive hook's table") }
        return memory.bindMemory(to: UnsafeMutablePointer<RawRequestCheck>?.self, capacity: capacity)
    }()

    /// The hard limit on open files (at least 1,024, at most 1,048,576): no socket can have a higher number unless
    /// that limit is above 1,048,576, and a connection whose socket is beyond the table is refused (`watches`).
    static let capacity: Int = {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1 << 20 }
        return Int(min(max(limit.rlim_max, 1024), 1 << 20))
    }()

    /// Whether `socket`'s bytes are checked.
    static func watches(_ socket: Int32) -> Bool { socket >= 0 && Int(socket) < capacity && slots[Int(socket)] != nil }

    /// Starts checking `socket`'s bytes; false when its number is beyond the table.
    static func register(_ socket: Int32) -> Bool {
        guard socket >= 0, Int(socket) < capacity else { return false }
        let check = UnsafeMutablePointer<RawRequestCheck>.allocate(capacity: 1)
        check.initialize(to: RawRequestCheck())
        if let old = slots[Int(socket)] {
            old.deinitialize(count: 1)
            old.deallocate()
        }
        slots[Int(socket)] = check
        return true
    }

    /// Stops checking `socket` (its connection closed).
    static func unregister(_ socket: Int32) {
        guard socket >= 0, Int(socket) < capacity, let check = slots[Int(socket)] else { return }
        slots[Int(socket)] = nil
        check.deinitialize(count: 1)
        check.deallocate()
    }

    /// Whether libmicrohttpd's `recv` is this one (the executable exports it): `serve` refuses to start without it.
    public static var isInstalled: Bool {
        typealias Receive = @convention(c) (Int32, UnsafeMutableRawPointer?, Int, Int32) -> Int
        let bound = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "recv")  // RTLD_DEFAULT
        return bound == unsafeBitCast(offerSignerReceive as Receive, to: UnsafeMutableRawPointer.self)
    }

    /// What the bytes of `socket` so far were refused for, if anything.
    static func problem(_ socket: Int32) -> String? {
        guard socket >= 0, Int(socket) < capacity, let check = slots[Int(socket)] else {
            return "the connection's socket is beyond the server's table of checked sockets (too many open files)"
        }
        return check.pointee.problem
    }
}

/// The process's `recv` (see `ReceiveHook`).
@_cdecl("recv")
public func offerSignerReceive(
    _ socket: Int32, _ buffer: UnsafeMutableRawPointer?, _ length: Int, _ flags: Int32
) -> Int {
    let received = recvfrom(socket, buffer, length, flags, nil, nil)
    guard received > 0, socket >= 0, Int(socket) < ReceiveHook.capacity,
        let check = ReceiveHook.slots[Int(socket)], let buffer, flags & Int32(MSG_PEEK) == 0
    else { return received }
    check.pointee.scan(buffer.assumingMemoryBound(to: UInt8.self), count: received)
    return received
}
