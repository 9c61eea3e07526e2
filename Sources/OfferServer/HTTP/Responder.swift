import CMicroHTTPD
import Synchronization

/// The one answer to one request. A handler calls `send` exactly once, on its own thread before returning (no
/// suspension) or later from any thread (the connection is suspended meanwhile and resumed by `send`).
/// Later calls are ignored.
public final class Responder: Sendable {
    private struct State {
        var response: HTTPResponse?
        var sent = false
        /// The worker returned without an answer and suspended the connection.
        var suspended = false
        var resumed = false
    }

    /// `nonisolated(unsafe)`: the connection pointer is only used under `state`'s lock, to resume the
    /// connection, and libmicrohttpd allows `MHD_resume_connection` from any thread.
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

    /// Answers the request. Only the first call counts.
    public func send(_ response: HTTPResponse) {
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
            completion(response)
            return
        }
        if resume, let connection {
            server?.waiting.withLock { _ = $0.removeValue(forKey: ObjectIdentifier(self)) }
            MHD_resume_connection(connection)
        }
    }

    /// On the worker, right after the handler returned: the answer if it is there, else the connection is
    /// suspended (under the lock, so a `send` racing with this either lands first or resumes afterwards).
    func takeResponseOrSuspend() -> HTTPResponse? {
        guard let connection else { return nil }
        return state.withLock { state in
            if let response = state.response {
                state.response = nil
                return response
            }
            state.suspended = true
            server?.waiting.withLock { $0[ObjectIdentifier(self)] = self }
            MHD_suspend_connection(connection)
            return nil
        }
    }

    /// After a resume: the answer `send` stored.
    func takeResponse() -> HTTPResponse? {
        state.withLock { state in
            defer { state.response = nil }
            return state.response
        }
    }
}
