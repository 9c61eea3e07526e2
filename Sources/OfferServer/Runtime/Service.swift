/// A part of the running server that starts and stops: a listener, the catalog's watcher, the purge's timer. `serve`
/// lists its services in the order they start (`ServiceGroup`), as swift-service-lifecycle's `ServiceGroup` does.
public protocol Service {
    /// Starts the service; throws, with nothing left running, when it cannot.
    func start() throws
    /// Stops the service; stopping one that did not start does nothing.
    func stop()
}

extension CatalogRuntime: Service {}

/// A service made of two steps (a listener's start on its port and its graceful stop, say).
public struct ServiceSteps: Service {
    private let starting: () throws -> Void
    private let stopping: () -> Void

    public init(start: @escaping () throws -> Void, stop: @escaping () -> Void) {
        starting = start
        stopping = stop
    }

    public func start() throws { try starting() }
    public func stop() { stopping() }
}
