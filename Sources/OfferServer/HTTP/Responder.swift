import CMicroHTTPD
import Synchronization

/// The one answer to one request. A handler calls `send` exactly once, on its own thread before returning (no
/// suspension) or later from any thread (the connection is suspended meanwhile and resumed by `send`).
/// Later calls are ignored.
public final class Responder: Sendable {
    private struct State {
        /// The answer, or how to make it on the worker thread.
        var response: Answer?
        var sent = false
        /// The worker returned without an answer and suspended the connection.
        var suspended = false
        var resumed = false
    }

    /// `nonisolated(unsafe)`: the connection pointer is only used under `state`'s lock, to resume the
    /// connection, and libmicrohttpd allows `MHD_resume_connection` from any thread. The connection knows its
    /// daemon, so it is resumed on the worker that owns it, whichever of the server's daemons that is.
    nonisolated(unsafe) private let connection: OpaquePointer?
    private weak let server: HTTPServer?
    private let state = Mutex(State())
    private let completion: (@Sendable (HTTPResponse) -> Void)?

    init(connection: OpaquePointer, server: HTTPServer) {
        self.connection = connection
        self.server = server
        self.completion = nil
    }

    /// A responder with no connection, for in-process callers (tests, the test kit's client): `send` stores the
    /// response and calls `completion` on the sender's thread.
    public init(completion: @escaping @Sendable (HTTPResponse) -> Void) {
        self.connection = nil
        self.server = nil
        self.completion = completion
    }

    /// An answer ready, or made later by the worker thread that sends it.
    enum Answer: Sendable {
        case ready(HTTPResponse)
        case prepared(@Sendable () -> HTTPResponse)

        var response: HTTPResponse {
            switch self {
            case .ready(let response): return response
            case .prepared(let make): return make()
            }
        }
    }

    /// Answers the request. Only the first call counts.
    public func send(_ response: HTTPResponse) {
        send(.ready(response))
    }

    /// Answers the request with what `make` returns, called on the worker thread that sends it (at once when
    /// the worker is still in the handler, else after the resume): whoever answers (a ledger's writer, say)
    /// only wakes the connection, and the answer's finishing work (error mapping, metrics, the access log)
    /// runs on the HTTP workers. Only the first call counts.
    public func send(making make: @escaping @Sendable () -> HTTPResponse) {
        send(.prepared(make))
    }

    private func send(_ response: Answer) {
        let (first, resume): (Bool, Bool) = state.withLock { state in
            guard !state.sent else { return (false, false) }
            state.sent = true
            state.response = response
            guard state.suspended, !state.resumed else { return (true, false) }
            state.resumed = true
            return (true, true)
        }
        guard first else { return }
        if let completion {
            completion(response.response)
            return
        }
        if resume, let connection {
            server?.waiting.withLock { _ = $0.responders.removeValue(forKey: ObjectIdentifier(self)) }
            MHD_resume_connection(connection)
        }
    }

    /// On the worker, right after the handler returned: the answer if it is there, else the connection is
    /// suspended (under the lock, so a `send` racing with this either lands first or resumes afterwards).
    /// Once the server is stopping nothing is suspended: the request is answered 503 now and a later `send`
    /// is ignored.
    func takeResponseOrSuspend() -> HTTPResponse? {
        guard let connection else { return nil }
        let answer: Answer? = state.withLock { state in
            if let response = state.response {
                state.response = nil
                return response
            }
            let admitted =
                server?.waiting.withLock { waiting in
                    guard !waiting.closed else { return false }
                    waiting.responders[ObjectIdentifier(self)] = self
                    return true
                } ?? false
            guard admitted else {
                state.sent = true
                return .ready(HTTPServer.stoppingResponse)
            }
            state.suspended = true
            MHD_suspend_connection(connection)
            return nil
        }
        // Made outside the lock: `make` may take time and never touches this responder.
        return answer?.response
    }

    /// After a resume: the answer `send` stored, made now on the worker.
    func takeResponse() -> HTTPResponse? {
        let answer: Answer? = state.withLock { state in
            defer { state.response = nil }
            return state.response
        }
        return answer?.response
    }
}
