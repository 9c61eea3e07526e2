import Foundation
import OfferAPI

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension OfferClient {
    /// One request with its retries: the body of a `success` answer (200 by default), or the error the last
    /// attempt ended with. With `attested` and an `AppAttest`, each attempt carries a new App Attest proof, and
    /// one more attempt is made when a new key or a new challenge can succeed where the last failed.
    func exchange(
        path: String, body: [UInt8], attested: Bool = true, success: Int = 200
    ) async throws(OfferKitError) -> [UInt8] {
        let request = makeRequest(path: path, body: body, idempotencyKey: UUID().uuidString.lowercased())
        let policy = RetryPolicy(options: options)
        let appAttest = attested ? self.appAttest : nil
        var retry = 0
        // App Attest's one more attempt, apart from the policy's retries: a 401 was refused before anything was
        // signed, so it cannot sign twice.
        var attestationRetried = false
        while true {
            // A cancelled caller has stopped waiting: a request sent now could be signed and counted for nothing.
            if Task.isCancelled { throw .transport(.cancelled) }
            var sent = request
            var proof: AppAttest.Proof?
            if let appAttest {
                do {
                    proof = try await appAttestProof(appAttest, body: body)
                } catch .appAttest(let error) where error.code == .invalidKey && !attestationRetried {
                    // Apple refused the key (already dropped): attest a new one.
                    attestationRetried = true
                    continue
                }
                proof?.add(to: &sent)
            }
            let outcome: RetryPolicy.Outcome
            let failure: OfferKitError
            switch await attempt(sent) {
            case .received(let status, let headers, let data):
                if status == success { return data }
                failure = ResponseCheck.error(status: status, headers: headers, body: data)
                if let appAttest, await appAttest.recover(after: failure, keyId: proof?.keyId), !attestationRetried {
                    attestationRetried = true
                    continue
                }
                outcome = .status(status, retryAfter: ResponseCheck.retryAfter(in: headers))
            case .refused(let problem):
                throw .malformedResponse(problem)
            case .failed(let error):
                failure = .transport(error)
                outcome = .transport(error)
            }
            guard !Task.isCancelled,
                let delay = policy.delay(before: retry, after: outcome, jitter: Double.random(in: 0...1))
            else { throw failure }
            await sleeper(delay)
            retry += 1
        }
    }

    func makeRequest(path: String, body: [UInt8], idempotencyKey: String) -> URLRequest {
        var request = URLRequest(
            url: baseURL.appendingPathComponent(path), cachePolicy: .reloadIgnoringLocalAndRemoteCacheData,
            timeoutInterval: options.timeout)
        request.httpMethod = "POST"
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        request.setValue(idempotencyKey, forHTTPHeaderField: "Idempotency-Key")
        request.httpBody = Data(body)
        return request
    }

    /// How one attempt ended.
    enum Attempt: Sendable {
        /// An HTTP answer (header names lowercased); an error answer over the size cap has its body dropped, so its
        /// status still decides (a proxy's large 503 page is a 503).
        case received(status: Int, headers: [String: String], body: [UInt8])
        /// An answer refused before reading it (a 200 over the size cap, not HTTP).
        case refused(String)
        case failed(TransportError)
    }

    /// Sends once, within `options.timeout` from start to the last byte.
    func attempt(_ request: URLRequest) async -> Attempt {
        let session = self.session
        let timeout = options.timeout
        let maxBytes = options.maxResponseBytes
        let outcome = await withTaskGroup(of: Attempt?.self) { group -> Attempt in
            group.addTask {
                do {
                    let (data, response) = try await session.data(for: request)
                    return Self.read(data: data, response: response, maxBytes: maxBytes)
                } catch {
                    return .failed(TransportError(error))
                }
            }
            group.addTask {
                // The deadline: `nil` when cancelled because the exchange ended first.
                do {
                    try await Task.sleep(nanoseconds: Self.nanoseconds(timeout))
                } catch {
                    return nil
                }
                return .failed(
                    TransportError(kind: .timedOut, message: "no complete answer within \(timeout) seconds"))
            }
            var first: Attempt?
            while first == nil, let next = await group.next() { first = next }
            group.cancelAll()
            return first ?? .failed(.cancelled)
        }
        if Task.isCancelled { return .failed(.cancelled) }
        return outcome
    }

    /// `seconds` for `Task.sleep`, saturated: `UInt64(_:)` traps on infinity and NaN, and an app may well pass
    /// `.infinity` as a timeout. Negative and NaN give 0; the longest is `Int64.max` ns (292 years).
    static func nanoseconds(_ seconds: TimeInterval) -> UInt64 {
        let nanoseconds = seconds * 1_000_000_000
        guard nanoseconds > 0 else { return 0 }
        return nanoseconds < Double(Int64.max) ? UInt64(nanoseconds) : UInt64(Int64.max)
    }

    static func read(data: Data, response: URLResponse, maxBytes: Int) -> Attempt {
        guard let http = response as? HTTPURLResponse else { return .refused("the answer is not HTTP") }
        let oversized = http.expectedContentLength > Int64(maxBytes) || data.count > maxBytes
        if oversized && http.statusCode == 200 { return .refused("the answer is larger than \(maxBytes) bytes") }
        var headers: [String: String] = [:]
        for (name, value) in http.allHeaderFields {
            if let name = name as? String, let value = value as? String { headers[name.lowercased()] = value }
        }
        return .received(status: http.statusCode, headers: headers, body: oversized ? [] : [UInt8](data))
    }
}

extension TransportError {
    /// The calling task was cancelled.
    static let cancelled = TransportError(kind: .cancelled, message: "cancelled")

    /// Sorts a `URLSession` error by whether the request can have reached the service.
    init(_ error: any Error) {
        guard let urlError = error as? URLError else {
            self.init(kind: error is CancellationError ? .cancelled : .other, message: "\(error)")
            return
        }
        let kind: Kind
        switch urlError.code {
        case .cannotFindHost, .cannotConnectToHost, .dnsLookupFailed:
            kind = .cannotConnect
        case .badURL, .unsupportedURL:
            kind = .badURL
        case .secureConnectionFailed, .serverCertificateHasBadDate, .serverCertificateUntrusted,
            .serverCertificateHasUnknownRoot, .serverCertificateNotYetValid, .clientCertificateRejected,
            .clientCertificateRequired:
            kind = .tls
        case .notConnectedToInternet, .internationalRoamingOff, .dataNotAllowed, .callIsActive:
            kind = .offline
        case .timedOut: kind = .timedOut
        // Linux's URLSession reports a connection closed before any answer as a bad server response
        // ("Empty reply from server"); Apple's as a lost connection. Either way the service may have acted.
        case .networkConnectionLost, .badServerResponse: kind = .connectionLost
        case .cancelled: kind = .cancelled
        default: kind = .other
        }
        self.init(kind: kind, urlErrorCode: urlError.code.rawValue, message: urlError.localizedDescription)
    }
}
