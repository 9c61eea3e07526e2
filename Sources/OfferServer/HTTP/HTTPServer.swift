import CMicroHTTPD
import OfferCrypto
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Limits the HTTP layer enforces before a handler sees a request.
public struct HTTPServerLimits: Sendable {
    /// Largest request body accepted; larger bodies get 413.
    public var maxBodyBytes = 64 * 1024
    /// Memory per connection for the request line and headers (libmicrohttpd answers 431 past it).
    public var maxHeaderBytes = 16 * 1024
    /// Simultaneous connections, for the whole server (every worker together).
    public var maxConnections = 1024
    /// Simultaneous connections from one client address (an IPv6 client: its /64), for the whole server; 0 means
    /// no limit of its own (the default here; `serve` sets `listen.maxConnectionsPerAddress`).
    public var maxConnectionsPerAddress = 0
    /// Seconds a connection may sit idle before it is closed.
    public var idleTimeoutSeconds = 30
    /// Worker threads, each with its own listening socket; 0 means one per core.
    public var threads = 0
    /// The worker threads `threads` asks for.
    public var workerCount: Int {
        threads > 0 ? threads : max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
    }
    /// Whether handlers see the peer's address (only the rate limiter needs it).
    public var recordsClientAddress = false
    /// Request headers handlers see: `X-Request-Id`, and for example a proxy's client address header.
    public var forwardedHeaders: [String] = [
        "X-Request-Id", "Idempotency-Key", "X-App-Attest-Key-Id", "X-App-Attest-Challenge", "X-App-Attest-Assertion",
    ]
    /// Query string arguments handlers see (percent-decoded by `QueryDecoding`, matched by their name as sent);
    /// the API reads none, the admin API and the test kit's fake read some.
    public var forwardedQueryArguments: [String] = []

    public init() {}
}

/// A bounded HTTP/1.1 server over libmicrohttpd: one epoll daemon per worker thread, each with its own listening
/// socket on the same port (`SO_REUSEPORT`), so the kernel spreads connections over the workers.
///
/// Why not libmicrohttpd's own thread pool: its workers share one listening socket and race to accept, and under
/// load one of them wins most connections, leaving a core idle. With a socket per worker the kernel hashes each
/// new connection (by its addresses and ports) to one socket, so every worker gets its share.
///
/// The concurrency model, for every handler: a handler runs on one of the worker threads (one per core) and
/// answers through its `Responder`, either before it returns (the fast path: no suspension) or later from any
/// thread. In the second case the connection is suspended (`MHD_suspend_connection`), so the worker thread serves
/// other connections meanwhile, and resumed when the answer is ready (libmicrohttpd resumes it on the daemon that
/// owns it: the connection knows its daemon). Work that waits (a group commit to disk, an App Store Server API
/// call) must take that path and never block a worker.
///
/// What reaches the router, and what is refused before: the path exactly as sent (libmicrohttpd decodes nothing,
/// see `keepEscaped`), so an encoded path never matches a route; a head whose body length two parties could read
/// differently answered 400 and the connection closed (`RequestFraming`); an HTTP/1.1 request without `Host`
/// answered 400 by libmicrohttpd (`MHD_OPTION_STRICT_FOR_CLIENT` 1, its text body); a head over `maxHeaderBytes`
/// answered 431 by libmicrohttpd (its text body: 0.9.75 lets no handler answer it).
///
/// `maxConnections` holds for the server, not per worker: an accept policy shared by every daemon admits a
/// connection only while fewer than `maxConnections` are open (one atomic count), and libmicrohttpd's close notice
/// gives the place back. A single count rather than `maxConnections / threads` per daemon, because the kernel's
/// hashing is statistical: a fixed share per daemon would refuse connections on a busy worker while another had
/// room. `maxConnectionsPerAddress` is kept the same way, with a count per address (`ConnectionsPerAddress`).
///
/// One object owns the daemons and their listening sockets. `@unchecked Sendable`: after `start` the workers are
/// only read (and cleared by `stop` on the main thread once the daemons are idle), libmicrohttpd synchronises its
/// own threads, and the counters are atomic or behind `Mutex`es.
public final class HTTPServer: @unchecked Sendable {
    public typealias Handler = @Sendable (HTTPRequest, Responder) -> Void

    let handler: Handler
    let limits: HTTPServerLimits
    private var workers: [Worker] = []
    /// The port actually bound (useful when asked for port 0).
    public private(set) var port: Int = 0
    let inFlight = InFlightCounter()
    /// Connections open on every worker together, admitted up to `limits.maxConnections`.
    let connections = ConnectionCount()
    /// Connections open per client address, when `limits.maxConnectionsPerAddress` is set.
    let connectionsPerAddress: ConnectionsPerAddress?
    /// Responders whose connection is suspended, waiting for an answer; answered 503 if the server stops first.
    let waiting = Mutex(Waiting())

    struct Waiting {
        var responders: [ObjectIdentifier: Responder] = [:]
        /// Set by `stop`: from then on no connection may be suspended (libmicrohttpd aborts the process when
        /// stopped with one), so a handler that returns without an answer is answered 503 at once.
        var closed = false
    }

    /// One libmicrohttpd daemon with its own thread and listening socket; the handler's context.
    final class Worker: @unchecked Sendable {
        /// `unowned`: the server owns its workers and stops their daemons before it goes.
        unowned let server: HTTPServer
        var daemon: OpaquePointer?
        /// Requests whose handler ran on this worker (tests check the spread with it).
        let served = Atomic(0)

        init(server: HTTPServer) { self.server = server }
    }

    public init(limits: HTTPServerLimits, handler: @escaping Handler) {
        self.limits = limits
        self.handler = handler
        connectionsPerAddress =
            limits.maxConnectionsPerAddress > 0 ? ConnectionsPerAddress(limit: limits.maxConnectionsPerAddress) : nil
    }

    deinit {
        for worker in workers { if let daemon = worker.daemon { MHD_stop_daemon(daemon) } }
    }

    /// Requests served so far by each worker, in the workers' order.
    var requestsPerWorker: [Int] { workers.map { $0.served.load(ordering: .relaxed) } }

    /// Binds `host:port` and starts serving. Throws with a readable message on failure.
    public func start(host: String, port: Int) throws(ServerError) {
        let sockets = try Self.listen(host: host, port: port, count: limits.workerCount)
        self.port = sockets.port
        for (index, fd) in sockets.fds.enumerated() {
            let worker = Worker(server: self)
            guard let daemon = startDaemon(listening: fd, worker: worker) else {
                // The daemons started so far own their sockets; the others are closed here.
                for unused in sockets.fds[index...] { close(unused) }
                for started in workers { if let daemon = started.daemon { MHD_stop_daemon(daemon) } }
                workers = []
                throw ServerError("cannot start the HTTP server on \(host):\(port)")
            }
            // From here the daemon owns the listening socket: it closes it when stopped, unless quiesced first.
            worker.daemon = daemon
            workers.append(worker)
        }
    }

    private func startDaemon(listening fd: Int32, worker: Worker) -> OpaquePointer? {
        let server = Unmanaged.passUnretained(self).toOpaque()
        var options = [
            MHD_OptionItem(option: .LISTEN_SOCKET, value: Int(fd), ptr_value: nil),
            // The server's limit is kept by `admitConnection`. A daemon's own is one above it, never reached: a
            // daemon at its own limit stops accepting, and the connections past the server's limit would wait in
            // its backlog instead of being turned away at once.
            MHD_OptionItem(option: .CONNECTION_LIMIT, value: limits.maxConnections + 1, ptr_value: nil),
            MHD_OptionItem(option: .CONNECTION_TIMEOUT, value: limits.idleTimeoutSeconds, ptr_value: nil),
            MHD_OptionItem(option: .CONNECTION_MEMORY_LIMIT, value: limits.maxHeaderBytes, ptr_value: nil),
            // Level 1: an HTTP/1.1 request without `Host` and a request line with a space in its target are refused.
            // (Level -1 refuses whitespace before a header's colon but no longer checks `Host`: `RequestFraming`
            // checks header names instead.)
            MHD_OptionItem(option: .STRICT_FOR_CLIENT, value: 1, ptr_value: nil),
            MHD_OptionItem(
                option: .UNESCAPE_CALLBACK,
                value: unsafeBitCast(keepEscaped as UnescapeCallback, to: Int.self), ptr_value: nil),
            MHD_OptionItem(
                option: .NOTIFY_COMPLETED,
                value: unsafeBitCast(requestCompleted as MHD_RequestCompletedCallback, to: Int.self),
                ptr_value: server),
            MHD_OptionItem(
                option: .NOTIFY_CONNECTION,
                value: unsafeBitCast(connectionChanged as MHD_NotifyConnectionCallback, to: Int.self),
                ptr_value: server),
            MHD_OptionItem(option: .END, value: 0, ptr_value: nil),
        ]
        let flags = MHD_USE_EPOLL_INTERNAL_THREAD.rawValue | MHD_ALLOW_SUSPEND_RESUME.rawValue
        let context = Unmanaged.passUnretained(worker).toOpaque()
        return options.withUnsafeMutableBufferPointer { items in
            withVaList([MHD_OPTION.ARRAY.rawValue, items.baseAddress!, MHD_OPTION.END.rawValue]) { arguments in
                MHD_start_daemon_va(flags, 0, admitConnection, server, accessHandler, context, arguments)
            }
        }
    }

    /// Stops accepting connections on every worker, lets requests in flight finish (up to `grace` seconds),
    /// answers those still waiting for an asynchronous answer 503 `not_ready`, then stops.
    public func stop(graceSeconds: Double = 10) {
        let daemons = workers.compactMap(\.daemon)
        guard !daemons.isEmpty else { return }
        // Closing the listening sockets right away makes new connections fail fast instead of waiting in a backlog.
        for daemon in daemons {
            let quiesced = MHD_quiesce_daemon(daemon)
            if quiesced >= 0 { close(quiesced) }
        }
        var waited = 0.0
        while inFlight.value > 0 && waited < graceSeconds {
            usleep(10_000)
            waited += 0.01
        }
        // libmicrohttpd must not be stopped with suspended connections: answer the ones still waiting, suspend
        // no more (a handler still running answers 503 when it returns), then give the workers a moment to send.
        let stranded = waiting.withLock { waiting in
            waiting.closed = true
            return Array(waiting.responders.values)
        }
        for responder in stranded { responder.send(Self.stoppingResponse) }
        waited = 0
        while inFlight.value > 0 && waited < 1 {
            usleep(10_000)
            waited += 0.01
        }
        for daemon in daemons { MHD_stop_daemon(daemon) }
        workers = []
    }

    /// The answer to requests still waiting when the server stops.
    static var stoppingResponse: HTTPResponse { HTTPError.notReady("the server is stopping").response }

    /// `count` listening sockets on one address of `host` and one port, joined by `SO_REUSEPORT`, and that port.
    ///
    /// The first socket binds without `SO_REUSEPORT`, so a port another process holds (with or without the option)
    /// is refused as before; the option is set once it is bound, before it listens, and the others bind to the
    /// address it got (so port 0 gives them all the port the first was given).
    private static func listen(host: String, port: Int, count: Int) throws(ServerError) -> (fds: [Int32], port: Int) {
        guard (0...65535).contains(port) else { throw ServerError("port \(port) is out of range (0-65535)") }
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV
        var result: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &result)
        guard status == 0, let first = result else { throw ServerError("cannot resolve listen host '\(host)'") }
        defer { freeaddrinfo(result) }
        var lastErrno: Int32 = 0
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let info = entry {
            entry = info.pointee.ai_next
            let family = info.pointee.ai_family
            let leader = ListeningSocket(family: family)
            guard let leader, leader.bind(info.pointee.ai_addr, info.pointee.ai_addrlen), leader.share(),
                leader.listen()
            else {
                lastErrno = errno
                leader?.close()
                continue
            }
            var fds = [leader.fd]
            var bound = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let named = withUnsafeMutablePointer(to: &bound) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(leader.fd, $0, &length) }
            }
            guard named == 0 else {
                lastErrno = errno
                leader.close()
                continue
            }
            while fds.count < count {
                let joined = ListeningSocket(family: family)
                guard let joined, joined.share(), joined.bind(&bound, length), joined.listen() else {
                    let reason = systemError(errno).lowercased()
                    joined?.close()
                    for fd in fds { close(fd) }
                    throw ServerError("cannot listen on \(host):\(port) with \(count) workers (\(reason))")
                }
                fds.append(joined.fd)
            }
            return (fds, Self.port(of: bound) ?? port)
        }
        let reason = lastErrno == 0 ? "no socket could be opened" : systemError(lastErrno).lowercased()
        throw ServerError("cannot listen on \(host):\(port) (\(reason))", addressInUse: lastErrno == EADDRINUSE)
    }

    /// The port in an IPv4 or IPv6 socket address.
    private static func port(of address: sockaddr_storage) -> Int? {
        var address = address
        switch Int32(address.ss_family) {
        case AF_INET:
            return withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin_port)) }
            }
        case AF_INET6:
            return withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) {
                    Int(UInt16(bigEndian: $0.pointee.sin6_port))
                }
            }
        default:
            return nil
        }
    }
}

/// One TCP socket being made into a listening socket; `errno` says why a step failed.
private struct ListeningSocket {
    let fd: Int32

    init?(family: Int32) {
        fd = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return nil }
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
    }

    func bind(_ address: UnsafePointer<sockaddr>?, _ length: socklen_t) -> Bool {
        Glibc.bind(fd, address, length) == 0
    }

    func bind(_ address: inout sockaddr_storage, _ length: socklen_t) -> Bool {
        withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, length) == 0 }
        }
    }

    /// Lets other sockets of this process bind to the same address and port (`SO_REUSEPORT`): the kernel then
    /// spreads new connections over them.
    func share() -> Bool {
        var yes: Int32 = 1
        return setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &yes, socklen_t(MemoryLayout<Int32>.size)) == 0
    }

    func listen() -> Bool { Glibc.listen(fd, 1024) == 0 }

    func close() { Glibc.close(fd) }
}

/// Open connections across every daemon of a server, admitted up to a limit.
final class ConnectionCount: Sendable {
    private let count = Atomic(0)

    var value: Int { count.load(ordering: .relaxed) }

    /// Takes a place if fewer than `limit` are taken.
    func admit(limit: Int) -> Bool {
        var current = count.load(ordering: .relaxed)
        while current < limit {
            let (exchanged, original) = count.compareExchange(
                expected: current, desired: current + 1, ordering: .relaxed)
            if exchanged { return true }
            current = original
        }
        return false
    }

    func release() { count.subtract(1, ordering: .relaxed) }
}

/// A server start-up failure with a message fit for the operator.
public struct ServerError: Error, Sendable, CustomStringConvertible {
    public let description: String
    /// The port is taken (`EADDRINUSE`): the caller says which setting moves it.
    public let addressInUse: Bool
    public init(_ description: String, addressInUse: Bool = false) {
        self.description = description
        self.addressInUse = addressInUse
    }
}

/// Per-request state kept in libmicrohttpd's `con_cls` between handler calls.
final class RequestState {
    var body: [UInt8] = []
    /// Set once the handler ran: its answer comes through here, now or after a resume.
    var responder: Responder?
    /// The body is over the limit: it is dropped and the request answered 413.
    var rejected = false
    /// The 413 was queued already (on the first call, from `Content-Length`).
    var answered = false
    var discarded = 0
}

/// Counts requests from their first handler call to libmicrohttpd's completion notice (response sent or aborted).
final class InFlightCounter: Sendable {
    private let count = Mutex(0)
    var value: Int { count.withLock { $0 } }
    func increment() { count.withLock { $0 += 1 } }
    func decrement() { count.withLock { $0 -= 1 } }
}

/// The accept policy every daemon shares: a connection is admitted while the server has room for it, and its
/// address has room too (an address that is neither IPv4 nor IPv6 is not limited).
private func admitConnection(
    _ cls: UnsafeMutableRawPointer?, _ address: UnsafePointer<sockaddr>?, _ length: socklen_t
) -> MHD_Result {
    guard let cls else { return .NO }
    let server = Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue()
    guard server.connections.admit(limit: server.limits.maxConnections) else { return .NO }
    if let perAddress = server.connectionsPerAddress, let address,
        let peer = ConnectionsPerAddress.Peer(address), !perAddress.admit(peer)
    {
        server.connections.release()
        return .NO
    }
    return .YES
}

/// A connection's place is given back when it closes. (libmicrohttpd tells of every connection it started; one
/// admitted that it then failed to start, out of memory, keeps its place: the limit errs on the safe side.)
private func connectionChanged(
    _ cls: UnsafeMutableRawPointer?, _ connection: OpaquePointer?,
    _ context: UnsafeMutablePointer<UnsafeMutableRawPointer?>?, _ code: MHD_ConnectionNotificationCode
) {
    // The raw-byte check follows the connection from before its first byte is read to its close.
    if let connection {
        let socket = offer_connection_fd(connection)
        if code == .CONNECTION_NOTIFY_STARTED {
            // A socket beyond the table is not watched, and its requests are refused (`ReceiveHook.problem`).
            _ = ReceiveHook.register(socket)
        } else if code == .CONNECTION_NOTIFY_CLOSED {
            ReceiveHook.unregister(socket)
        }
    }
    guard let cls, code == .CONNECTION_NOTIFY_CLOSED else { return }
    let server = Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue()
    server.connections.release()
    if let perAddress = server.connectionsPerAddress, let connection,
        let address = offer_client_sockaddr(connection), let peer = ConnectionsPerAddress.Peer(address)
    {
        perAddress.release(peer)
    }
}

private func requestCompleted(
    _ cls: UnsafeMutableRawPointer?, _ connection: OpaquePointer?,
    _ state: UnsafeMutablePointer<UnsafeMutableRawPointer?>?,
    _ code: MHD_RequestTerminationCode
) {
    guard let state, let pointer = state.pointee else { return }
    // An answer that was never taken (the client left while its connection waited suspended) is still made,
    // so its request is counted and logged like any other; it is sent nowhere.
    _ = Unmanaged<RequestState>.fromOpaque(pointer).takeUnretainedValue().responder?.takeResponse()
    Unmanaged<RequestState>.fromOpaque(pointer).release()
    state.pointee = nil
    if let cls { Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue().inFlight.decrement() }
}

private func accessHandler(
    _ cls: UnsafeMutableRawPointer?, _ connection: OpaquePointer?, _ url: UnsafePointer<CChar>?,
    _ method: UnsafePointer<CChar>?, _ version: UnsafePointer<CChar>?, _ uploadData: UnsafePointer<CChar>?,
    _ uploadSize: UnsafeMutablePointer<Int>?, _ stateSlot: UnsafeMutablePointer<UnsafeMutableRawPointer?>?
) -> MHD_Result {
    guard let cls, let connection, let stateSlot, let uploadSize else { return .NO }
    let worker = Unmanaged<HTTPServer.Worker>.fromOpaque(cls).takeUnretainedValue()
    let server = worker.server
    guard let existing = stateSlot.pointee else {
        // First call: headers only. Answering now would force `Connection: close`, so only set up state,
        // unless the declared body is already too large.
        let state = RequestState()
        stateSlot.pointee = Unmanaged.passRetained(state).toOpaque()
        server.inFlight.increment()
        if let problem = ReceiveHook.problem(offer_connection_fd(connection)) ?? RequestFraming(of: connection).problem
        {
            // Answered before the body is read: libmicrohttpd reads no further and closes after the answer.
            state.rejected = true
            state.answered = true
            return queue(connection, RequestFraming.refusal(problem))
        }
        if let declared = MHD_lookup_connection_value(connection, .HEADER_KIND, "Content-Length"),
            let length = Int(String(cString: declared)), length > server.limits.maxBodyBytes
        {
            state.rejected = true
            state.answered = true
            return queue(connection, HTTPError.payloadTooLarge(limit: server.limits.maxBodyBytes).response)
        }
        return .YES
    }
    let state = Unmanaged<RequestState>.fromOpaque(existing).takeUnretainedValue()
    let limit = server.limits.maxBodyBytes
    if uploadSize.pointee > 0 {
        let count = uploadSize.pointee
        uploadSize.pointee = 0
        if !state.rejected && state.body.count + count > limit {
            // libmicrohttpd cannot answer in the middle of a body, so the rest is read and dropped and the
            // 413 goes out on the final call; a sender that keeps going past 16 times the limit is cut off.
            state.rejected = true
            state.body = []
        }
        if state.rejected {
            state.discarded += count
            return state.discarded > 16 * limit ? .NO : .YES
        }
        if let uploadData {
            uploadData.withMemoryRebound(to: UInt8.self, capacity: count) {
                state.body.append(contentsOf: UnsafeBufferPointer(start: $0, count: count))
            }
        }
        return .YES
    }
    if !state.answered, let problem = ReceiveHook.problem(offer_connection_fd(connection)) {
        // Found in the body's framing (a trailer line ended by a bare LF, ...): refused now that it has been read,
        // before a 413 (which would keep the connection open).
        state.rejected = true
        state.answered = true
        return queue(connection, RequestFraming.refusal(problem))
    }
    if state.rejected {
        // A declared oversize body was already answered on the first call.
        return state.answered ? .YES : queue(connection, HTTPError.payloadTooLarge(limit: limit).response)
    }
    if let responder = state.responder {
        // Called again after a resume: the answer is ready.
        guard let response = responder.takeResponse() else { return .YES }
        return queue(connection, response)
    }
    let path = url.map { String(cString: $0) } ?? "/"
    var request = HTTPRequest(
        method: method.map { String(cString: $0) } ?? "GET",
        // Cut at the first "?" by its byte: a split by Characters walked the path's graphemes on every request.
        path: path.utf8.firstIndex(of: UInt8(ascii: "?")).map { String(path[..<$0]) } ?? path,
        body: state.body)
    for name in server.limits.forwardedHeaders {
        if let value = MHD_lookup_connection_value(connection, .HEADER_KIND, name) {
            request.headers[name.lowercased()] = String(cString: value)
        }
    }
    for name in server.limits.forwardedQueryArguments {
        if let value = MHD_lookup_connection_value(connection, .GET_ARGUMENT_KIND, name) {
            request.query[name] = QueryDecoding.decode(String(cString: value))
        }
    }
    var address = [CChar](repeating: 0, count: 64)
    if server.limits.recordsClientAddress,
        offer_client_address(connection, &address, socklen_t(address.count)) == 1
    {
        request.clientAddress = String(
            decoding: address.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
    state.body = []
    let responder = Responder(connection: connection, server: server)
    state.responder = responder
    worker.served.add(1, ordering: .relaxed)
    server.handler(request, responder)
    // Answered before returning: queue now. Otherwise the connection waits, suspended, for `send`.
    if let response = responder.takeResponseOrSuspend() { return queue(connection, response) }
    return .YES
}

private func queue(_ connection: OpaquePointer, _ response: HTTPResponse) -> MHD_Result {
    var body = response.body
    let created = body.withUnsafeMutableBytes {
        MHD_create_response_from_buffer($0.count, $0.baseAddress, .RESPMEM_MUST_COPY)
    }
    guard let created else { return .NO }
    defer { MHD_destroy_response(created) }
    MHD_add_response_header(created, "Content-Type", response.contentType)
    // Defaults a response may set otherwise (the web console's files may be kept, if asked for again each time).
    for (name, value) in [("Cache-Control", "no-store"), ("X-Content-Type-Options", "nosniff")]
    where !response.headers.contains(where: { $0.name.lowercased() == name.lowercased() }) {
        MHD_add_response_header(created, name, value)
    }
    for header in response.headers { MHD_add_response_header(created, header.name, header.value) }
    return MHD_queue_response(connection, UInt32(response.status), created)
}
