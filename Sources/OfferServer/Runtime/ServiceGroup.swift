/// Services started in the order listed and stopped in the reverse order, as swift-service-lifecycle's
/// `ServiceGroup` runs them: what starts later may rely on what started before it, until it stops. When a service
/// fails to start, those started before it are stopped, in reverse, and the error is thrown.
public struct ServiceGroup {
    private let services: [any Service]

    public init(_ services: [any Service]) { self.services = services }

    /// Starts each service in order; see the type for a failure.
    public func start() throws {
        for (index, service) in services.enumerated() {
            do {
                try service.start()
            } catch {
                for started in services[..<index].reversed() { started.stop() }
                throw error
            }
        }
    }

    /// Stops every service, the last started first.
    public func stop() {
        for service in services.reversed() { service.stop() }
    }
}
