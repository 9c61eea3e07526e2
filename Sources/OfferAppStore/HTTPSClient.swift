import CCurl
import OfferCore
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// An HTTPS client over libcurl's multi interface, for calls that must not hold a thread while they wait.
///
/// `send` returns at once; the request runs on the client's own thread, an event loop over one libcurl multi
/// handle, and `completion` is called there when the answer is complete, the timeout passes or the transfer fails.
/// The thread is a plain POSIX thread of its own, started when a request comes to an idle client and ending when
/// none is left: it never waits for a thread of Dispatch's or Swift concurrency's pools, which other work may
/// have busy.
/// Why the multi interface rather than a pool of threads each blocked in `curl_easy_perform`: every request in
/// flight costs a socket, not a thread, so a slow or hanging App Store costs no more threads however many lookups
/// wait on it (with a pool, N hung calls would stall every later one for their whole timeout); and the multi
/// handle keeps one connection cache, so TLS sessions and HTTP/2 connections to Apple are reused by every
/// request. The loop runs only while requests are in flight; an idle client holds no thread.
///
/// Completions run on the loop's thread and must return quickly (hand the answer on, as the HTTP server's
/// `Responder.send` does): while one runs, no other transfer progresses. A request refused before it is sent (a
/// URL that is not HTTPS) is completed on the caller's thread, before `send` returns.
///
/// Every request: TLS peer and host verification on (the system CA bundle, or `Options.caFile`), redirects not
/// followed, a total timeout, a bounded body, HTTP/1.1 or HTTP/2. `http://` is allowed only to a loopback host,
/// for test doubles.
///
/// `@unchecked Sendable`: the multi handle is used only by the loop, and one loop runs at a time (`running`,
/// under the lock); other threads only call `curl_multi_wakeup`, which libcurl allows from any thread. The
/// pending requests are behind a `Mutex`.
public final class HTTPSClient: @unchecked Sendable {
    /// What every request of this client shares.
    public struct Options: Sendable {
        /// A PEM file of the certificate authorities to trust instead of the system's (tests with their own CA).
        public var caFile: String?
        /// The largest body accepted; a larger answer fails with `responseTooLarge`.
        public var maxResponseBytes = 1 << 20
        /// Connections to one host at the same time (HTTP/2 multiplexes many requests over one).
        public var maxConnectionsPerHost = 16
        public var userAgent = "offer-signer/0.1.0"

        public init(caFile: String? = nil) { self.caFile = caFile }
    }

    public typealias Completion = @Sendable (Result<HTTPSResponse, HTTPSClientError>) -> Void

    public let options: Options
    private let multi: UnsafeMutableRawPointer
    private let state = Mutex(State())

    private struct State {
        var pending: [Pending] = []
        /// A loop is running (or about to): `send` wakes it instead of starting another.
        var running = false
    }

    struct Pending: Sendable {
        let request: HTTPSRequest
        let completion: Completion
    }

    /// libcurl's global set-up, once per process before the first handle.
    private static let globalSetUp: Bool = curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK

    public init(options: Options = Options()) throws(HTTPSClientError) {
        guard Self.globalSetUp, let multi = curl_multi_init() else {
            throw HTTPSClientError(.transport, "libcurl could not be initialised")
        }
        self.multi = multi
        self.options = options
        _ = offer_curl_multi_setopt_long(multi, CURLMOPT_MAX_HOST_CONNECTIONS, options.maxConnectionsPerHost)
    }

    deinit {
        // No loop runs: it holds the client while it does.
        curl_multi_cleanup(multi)
    }

    /// Sends `request`; `completion` gets the answer (any status), or why there is none, exactly once.
    public func send(_ request: HTTPSRequest, completion: @escaping Completion) {
        if let problem = Self.problem(in: request) {
            completion(.failure(problem))
            return
        }
        let start = state.withLock { state in
            state.pending.append(Pending(request: request, completion: completion))
            if state.running { return false }
            state.running = true
            return true
        }
        if start {
            guard Self.detach({ self.loop() }) else {
                let stranded = state.withLock { state in
                    state.running = false
                    defer { state.pending = [] }
                    return state.pending
                }
                for pending in stranded {
                    pending.completion(.failure(HTTPSClientError(.transport, "no thread could be started")))
                }
                return
            }
        } else {
            curl_multi_wakeup(multi)
        }
    }

    /// What makes `request` unfit to send, checked before it is queued.
    static func problem(in request: HTTPSRequest) -> HTTPSClientError? {
        let url: ServerURL
        do {
            url = try ServerURL(request.url)
        } catch {
            return HTTPSClientError(.invalidRequest, "URL: \(error.message)")
        }
        guard url.isAllowedForServerAPI else {
            return HTTPSClientError(
                .invalidRequest, "plain http:// is allowed only to a loopback host, not \(url.host)")
        }
        guard ["GET", "POST", "PUT", "DELETE"].contains(request.method) else {
            return HTTPSClientError(.invalidRequest, "unsupported method \(request.method)")
        }
        for header in request.headers {
            let bytes = Array(header.name.utf8) + Array(header.value.utf8)
            guard !header.name.isEmpty, !bytes.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0 }),
                !header.name.utf8.contains(UInt8(ascii: ":"))
            else {
                return HTTPSClientError(.invalidRequest, "header \(header.name.prefix(40)) is not a valid header")
            }
        }
        guard request.timeoutMilliseconds > 0 else {
            return HTTPSClientError(.timeout, "no time left for the request")
        }
        return nil
    }

    /// Runs `body` on a new detached POSIX thread; `false` when none could be started.
    private static func detach(_ body: @escaping @Sendable () -> Void) -> Bool {
        final class Box: Sendable {
            let body: @Sendable () -> Void
            init(_ body: @escaping @Sendable () -> Void) { self.body = body }
        }
        let context = Unmanaged.passRetained(Box(body)).toOpaque()
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        var thread = pthread_t()
        let started = pthread_create(
            &thread, &attributes,
            { context in
                let box = Unmanaged<Box>.fromOpaque(context!).takeRetainedValue()
                box.body()
                return nil
            }, context)
        if started != 0 { Unmanaged<Box>.fromOpaque(context).release() }
        return started == 0
    }

    /// The event loop: takes pending requests, drives the transfers, completes the finished ones; returns when
    /// nothing is pending or in flight.
    private func loop() {
        var transfers: [UnsafeMutableRawPointer: HTTPSTransfer] = [:]
        while true {
            let taken: [Pending]? = state.withLock { state in
                if state.pending.isEmpty && transfers.isEmpty {
                    state.running = false
                    return nil
                }
                defer { state.pending = [] }
                return state.pending
            }
            guard let taken else { return }
            for pending in taken {
                switch HTTPSTransfer.start(pending, options: options) {
                case .success(let transfer):
                    guard curl_multi_add_handle(multi, transfer.handle) == CURLM_OK else {
                        transfer.close()
                        pending.completion(.failure(HTTPSClientError(.transport, "libcurl refused the transfer")))
                        continue
                    }
                    transfers[transfer.handle] = transfer
                case .failure(let error):
                    pending.completion(.failure(error))
                }
            }
            var running: Int32 = 0
            _ = curl_multi_perform(multi, &running)
            var left: Int32 = 0
            while let message = curl_multi_info_read(multi, &left) {
                guard message.pointee.msg == CURLMSG_DONE, let handle = message.pointee.easy_handle,
                    let transfer = transfers.removeValue(forKey: handle)
                else { continue }
                let result = offer_curl_message_result(message)
                curl_multi_remove_handle(multi, handle)
                let outcome = transfer.outcome(result)
                transfer.close()
                transfer.completion(outcome)
            }
            if !transfers.isEmpty {
                _ = curl_multi_poll(multi, nil, 0, 1000, nil)
            }
        }
    }
}
