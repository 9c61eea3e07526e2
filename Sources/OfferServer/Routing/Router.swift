import Dispatch
import OfferAPI
import OfferCore
import OfferCrypto
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Finds a request's route, runs its group's middleware around the handler, and maps every outcome to an HTTP
/// response in one place (`ErrorMapping`). Requests flow one way: `HTTPServer` → `Router.handle` → middleware
/// `before` → the route's handler → `ErrorMapping` → middleware `after` → the `Responder`.
public final class Router: Sendable {
    let routes: [Route]
    let middleware: [Route.Group: [any Middleware]]
    /// Middleware for requests that match no route (404) or the wrong method (405).
    let unmatchedMiddleware: [any Middleware]
    /// The configuration a request starts with.
    let snapshot: @Sendable () -> Snapshot
    let clock: any Clock
    let log: Logger
    let requestIds = RequestIds()

    /// `routes`: the table (no two with the same method and pattern). `middleware`: per group, in order.
    public init(
        routes: [Route], middleware: [Route.Group: [any Middleware]], unmatchedMiddleware: [any Middleware],
        snapshot: @escaping @Sendable () -> Snapshot, clock: any Clock, log: Logger
    ) {
        self.routes = routes
        self.middleware = middleware
        self.unmatchedMiddleware = unmatchedMiddleware
        self.snapshot = snapshot
        self.clock = clock
        self.log = log
    }

    /// The HTTP server's handler.
    @Sendable public func handle(_ request: HTTPRequest, _ responder: Responder) {
        let started = clock.uptimeNanoseconds
        let requestId = requestIds.take(offered: request.headers["x-request-id"])
        var matched: (Route, [String: String])?
        var allowed: [String] = []
        var path = PathPattern.Path(request.path)
        // For a 405: the pattern the path matched, never the path itself (a client's text must not become a label).
        var pattern = "other"
        for route in routes {
            guard let parameters = route.pattern.match(&path) else { continue }
            if route.accepts(request.method) {
                matched = (route, parameters)
                break
            }
            if allowed.isEmpty { pattern = route.pattern.description }
            allowed.append(route.method == "GET" ? "GET, HEAD" : route.method)
        }
        let context = RequestContext(
            requestId: requestId, route: matched?.0.pattern.description ?? pattern,
            parameters: matched?.1 ?? [:], clientAddress: request.clientAddress, now: clock.now, snapshot: snapshot(),
            log: log.with("request_id", requestId), clock: clock, started: started)
        guard let (route, _) = matched else {
            var error: any Error =
                allowed.isEmpty
                ? HTTPError.notFound(request.path)
                : HTTPError.methodNotAllowed(request.method, allow: allowed.joined(separator: ", "))
            do {
                // A check that guards every answer (the admin listener's `Host`) comes before even a 404.
                for step in unmatchedMiddleware { try step.before(request, context) }
            } catch let refused {
                error = refused
            }
            finish(.failure(error), request, context, unmatchedMiddleware, responder)
            return
        }
        let steps = middleware[route.group] ?? []
        do {
            for step in steps { try step.before(request, context) }
        } catch {
            finish(.failure(error), request, context, steps, responder)
            return
        }
        switch route.handler {
        case .sync(let handle):
            let result: Result<HTTPResponse, any Error>
            do {
                result = .success(try handle(request, context))
            } catch {
                result = .failure(error)
            }
            finish(result, request, context, steps, responder)
        case .async(let handle):
            // On this thread until the handler's first real wait; answered inline when it has none.
            Task.immediate(executorPreference: RouteExecutor.shared) { [self] in
                let result: Result<HTTPResponse, any Error>
                do {
                    result = .success(try await handle(request, context))
                } catch {
                    result = .failure(error)
                }
                finish(result, request, context, steps, responder)
            }
        }
    }

    /// Error mapping, middleware `after` and the request ID, run by the HTTP worker that sends the answer (for an
    /// asynchronous handler, after the resume, not on the thread that answered).
    private func finish(
        _ result: Result<HTTPResponse, any Error>, _ request: HTTPRequest, _ context: RequestContext,
        _ steps: [any Middleware], _ responder: Responder
    ) {
        responder.send(making: {
            var response: HTTPResponse
            switch result {
            case .success(let ok): response = ok
            case .failure(let error): response = ErrorMapping.response(for: error, context: context)
            }
            for step in steps.reversed() { step.after(request, context, &response) }
            response.headers.append(HTTPHeader("X-Request-Id", context.requestId))
            return response
        })
    }
}

/// Request IDs: the client's own when it is a plain token (letters, digits, `-`, `_`, `.`, `:`; 1 to 128), so it
/// cannot break a log line or a header; otherwise this process's random prefix and a counter, unique without
/// a call to the random source per request.
final class RequestIds: Sendable {
    private let prefix = Hex.encode(SecureRandom.bytes(6))
    private let counter = Atomic<UInt64>(0)

    func take(offered: String?) -> String {
        if let offered, (1...128).contains(offered.utf8.count),
            offered.utf8.allSatisfy({
                Identifiers.isAlphanumeric($0) || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_")
                    || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: ":")
            })
        {
            return offered
        }
        let number = counter.add(1, ordering: .relaxed).newValue
        return prefix + "-" + String(number, radix: 16)
    }
}

/// Where a route's task goes on after a wait: Dispatch's global pool, which adds threads while some block (a ledger
/// read, a test's waiting client), rather than Swift's cooperative pool, which has one thread per core and must never
/// block. A thread that resumes a route with nothing slow left to do (the ledger's writer, after a record: the route
/// returns its answer) may let it finish where it stands (`finishingHere`), which saves a thread's wake-up.
final class RouteExecutor: TaskExecutor {
    static let shared = RouteExecutor()

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        if Self.isFinishingHere {
            job.runSynchronously(on: asUnownedTaskExecutor())
        } else {
            DispatchQueue.global().async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
        }
    }

    /// Runs `resume` (a continuation's resumption) so that the task it resumes goes on on this thread until its next
    /// wait, instead of on the pool.
    static func finishingHere(_ resume: () -> Void) {
        pthread_setspecific(finishing, UnsafeRawPointer(bitPattern: 1))
        defer { pthread_setspecific(finishing, nil) }
        resume()
    }

    private static var isFinishingHere: Bool { pthread_getspecific(finishing) != nil }

    /// The thread-specific mark of `finishingHere`.
    private static let finishing: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()
}
