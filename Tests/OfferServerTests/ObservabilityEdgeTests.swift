import Foundation
import OfferAPI
import OfferCore
import OfferTesting
import Testing

@testable import OfferServer

/// Issue 19, item 9: every log line starts with its time (RFC 3339, UTC, milliseconds) in both formats, and the
/// requests' durations are a histogram per route with buckets fit for a service that answers in about a millisecond.
@Suite("Observability: timed log lines and the request duration histogram")
struct ObservabilityEdgeTests {
    @Test(
        "each line starts with the clock's time, to the millisecond, in logfmt and JSON",
        arguments: [
            (Int64(1_796_397_892_123), "2026-12-04T15:24:52.123Z"), (1_796_397_892_000, "2026-12-04T15:24:52.000Z"),
            (0, "1970-01-01T00:00:00.000Z"),
        ])
    func timed(_ now: Int64, _ text: String) throws {
        let lines = LogLines()
        for format in Logger.Format.allCases {
            let log = Logger(level: .info, format: format, writer: lines.append, clock: { now })
            log.with("request_id", "r-1").info("hello", [("k", "v")])
        }
        #expect(lines.all[0] == "time=\(text) level=info msg=\"hello\" request_id=r-1 k=v\n")
        #expect(lines.all[1] == #"{"time":"\#(text)","level":"info","msg":"hello","request_id":"r-1","k":"v"}"# + "\n")
    }

    @Test(
        "the service's own lines are timed by its clock, the access log's included", arguments: Logger.Format.allCases)
    func serviceLines(_ format: Logger.Format) throws {
        let fixture = try ServiceFixture(format: format)
        defer { fixture.remove() }
        _ = try fixture.client.get("/livez")
        _ = try fixture.client.post(Fixture.promotional, json: Array(#"{"bundleId":"x"}"#.utf8))
        let lines = fixture.log.all
        #expect(!lines.isEmpty)
        let pattern = #/(time=|\{"time":")\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z/#
        for line in lines { #expect(line.prefixMatch(of: pattern) != nil, "\(line)") }
    }

    @Test("an observation lands in its bucket and every larger one; sum and count follow")
    func histogram() {
        let metrics = Metrics()
        metrics.observe(.requestDuration, ["route": "/livez"], microseconds: 80)
        metrics.observe(.requestDuration, ["route": "/livez"], microseconds: 1_000)
        metrics.observe(.requestDuration, ["route": "/livez"], microseconds: 3_000_000)
        let text = metrics.render()
        let name = "offer_signer_http_request_duration_seconds"
        #expect(text.contains("# TYPE \(name) histogram\n"))
        #expect(text.contains(#"\#(name)_bucket{route="/livez",le="0.0001"} 1"#))
        #expect(text.contains(#"\#(name)_bucket{route="/livez",le="0.0005"} 1"#))
        #expect(text.contains(#"\#(name)_bucket{route="/livez",le="0.001"} 2"#))
        #expect(text.contains(#"\#(name)_bucket{route="/livez",le="2.5"} 2"#))
        #expect(text.contains(#"\#(name)_bucket{route="/livez",le="+Inf"} 3"#))
        #expect(text.contains(#"\#(name)_sum{route="/livez"} 3.00108"#))
        #expect(text.contains(#"\#(name)_count{route="/livez"} 3"#))
    }

    @Test("every request is observed under its route's pattern, never its path")
    func perRoute() throws {
        let fixture = try ServiceFixture()
        defer { fixture.remove() }
        let client = fixture.client
        _ = try client.get("/livez")
        _ = try client.get("/livez")
        _ = try client.get("/no/such/path")
        let text = fixture.client.service.metrics.render()
        let name = "offer_signer_http_request_duration_seconds"
        #expect(text.contains(#"\#(name)_count{route="/livez"} 2"#), "\(text)")
        #expect(text.contains(#"\#(name)_count{route="other"} 1"#))
        #expect(!text.contains("/no/such/path"))
    }
}
