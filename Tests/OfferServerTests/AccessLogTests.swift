import Foundation
import OfferAPI
import OfferCore
import OfferTesting
import Testing

@testable import OfferServer

/// Issue 6, item 8: one access-log line per API request, with what ops need and nothing a customer sent.
@Suite("The access log: one line per API request, identifiers and codes only")
struct AccessLogTests {
    /// One access-log line as fields, whichever format it was written in.
    static func fields(_ line: String, _ format: Logger.Format) throws -> [String: String] {
        #expect(line.hasSuffix("\n") && line.dropLast().firstIndex(of: "\n") == nil, "one line: \(line)")
        switch format {
        case .json:
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8))
            let members = try #require(object as? [String: Any], "a JSON object per line: \(line)")
            return try members.mapValues { try #require($0 as? String, "every value is text: \(line)") }
        case .logfmt:
            return try logfmt(String(line.dropLast()))
        }
    }

    /// Reads `key=value key="quoted \"value\""` pairs.
    static func logfmt(_ line: String) throws -> [String: String] {
        var fields: [String: String] = [:]
        var rest = Substring(line)
        while !rest.isEmpty {
            let key = try #require(rest.split(separator: "=", maxSplits: 1).first, "key=value in \(line)")
            rest = rest.dropFirst(key.count + 1)
            var value = ""
            if rest.first == "\"" {
                rest = rest.dropFirst()
                while let character = rest.first, character != "\"" {
                    rest = rest.dropFirst()
                    if character == "\\", let escaped = rest.first {
                        rest = rest.dropFirst()
                        value.append(escaped == "n" ? "\n" : escaped)
                    } else {
                        value.append(character)
                    }
                }
                rest = rest.dropFirst()
            } else {
                let plain = rest.prefix { $0 != " " }
                value = String(plain)
                rest = rest.dropFirst(plain.count)
            }
            fields[String(key)] = value
            rest = rest.drop { $0 == " " }
        }
        return fields
    }

    @Test(
        "each request writes one info line: request_id, method, route, status, duration, app, offer, decision, reason",
        arguments: Logger.Format.allCases)
    func oneLinePerRequest(format: Logger.Format) throws {
        let fixture = try ServiceFixture(format: format)
        defer { fixture.remove() }
        let path = "/v1/signatures/promotional-offer"
        let lapsed = SignedData(transaction: try fixture.transaction(expiredDaysAgo: 90))
        let active = SignedData(transaction: try fixture.transaction(expiredDaysAgo: -5))
        let cases: [(PromotionalOfferRequest, expected: [String: String], absent: [String])] = [
            (
                PromotionalOfferRequest(
                    bundleId: ServiceFixture.bundleId, productId: ServiceFixture.productId, offerId: "lapsed",
                    signedData: lapsed),
                ["status": "200", "app": ServiceFixture.bundleId, "offer": "lapsed", "decision": "eligible"],
                ["reason"]
            ),
            (
                PromotionalOfferRequest(
                    bundleId: ServiceFixture.bundleId, productId: ServiceFixture.productId, offerId: "lapsed",
                    signedData: active),
                [
                    "status": "403", "app": ServiceFixture.bundleId, "offer": "lapsed", "decision": "not_eligible",
                    "reason": "subscription_status_not_allowed",
                ],
                []
            ),
            (
                PromotionalOfferRequest(
                    bundleId: "com.example.unknown", productId: ServiceFixture.productId, offerId: "lapsed",
                    signedData: lapsed),
                ["status": "404", "reason": "unknown_app"], ["app", "offer", "decision"]
            ),
        ]
        for (index, (request, expected, absent)) in cases.enumerated() {
            let requestId = "client-\(index).trace_id:7"
            let response = try fixture.client.post(path, request, headers: ["X-Request-Id": requestId])
            #expect(response.header("X-Request-Id") == requestId)
            let lines = fixture.log.accessLines
            #expect(lines.count == index + 1, "exactly one line per request: \(lines)")
            let line = try Self.fields(try #require(lines.last), format)
            #expect(line["level"] == "info")
            #expect(line["request_id"] == requestId)
            #expect(line["method"] == "POST")
            #expect(line["route"] == path)
            let duration = try #require(line["duration_ms"].flatMap(Double.init), "\(line)")
            #expect(duration >= 0)
            for (key, value) in expected { #expect(line[key] == value, "\(key) in \(line)") }
            for key in absent { #expect(line[key] == nil, "no \(key) in \(line)") }
        }
        #expect(fixture.log.all.count == cases.count, "nothing else was logged: \(fixture.log.all)")
    }

    @Test(
        "an X-Request-Id that is no plain token of 1 to 128 characters is replaced, and the new one echoed and logged",
        arguments: [nil, "", "has space", "new\nline", "quote\"d", String(repeating: "a", count: 129)])
    func generatedRequestId(offered: String?) throws {
        let fixture = try ServiceFixture()
        defer { fixture.remove() }
        var request = HTTPRequest(method: "GET", path: "/v1/nowhere")
        request.headers["x-request-id"] = offered
        let response = try fixture.client.send(request)
        let echoed = try #require(response.header("X-Request-Id"))
        #expect(echoed != offered)
        // This process's random prefix (12 hex digits), a dash, and a counter in hex.
        let parts = echoed.split(separator: "-")
        #expect(parts.count == 2 && parts[0].count == 12, "\(echoed)")
        #expect(parts.allSatisfy { !$0.isEmpty && $0.allSatisfy(\.isHexDigit) }, "\(echoed)")
        let second = try #require(
            try fixture.client.get("/v1/nowhere").header("X-Request-Id"))
        #expect(second != echoed && second.hasPrefix(String(parts[0]) + "-"), "\(second)")
        let line = try Self.fields(try #require(fixture.log.accessLines.first), .logfmt)
        #expect(line["request_id"] == echoed)
        #expect(line["status"] == "404")
        #expect(line["route"] == "other")
    }

    @Test("a client's request ID of 128 plain characters is kept")
    func longestRequestId() throws {
        let fixture = try ServiceFixture()
        defer { fixture.remove() }
        let offered = String(repeating: "Ab9-_.:", count: 18) + "Ab"
        #expect(offered.count == 128)
        var request = HTTPRequest(method: "GET", path: "/v1/nowhere")
        request.headers["x-request-id"] = offered
        #expect(try fixture.client.send(request).header("X-Request-Id") == offered)
    }

    @Test("above info level the access log is silent")
    func quietAboveInfo() throws {
        let fixture = try ServiceFixture(level: .warning)
        defer { fixture.remove() }
        let response = try fixture.client.post(
            "/v1/signatures/promotional-offer",
            PromotionalOfferRequest(
                bundleId: ServiceFixture.bundleId, productId: ServiceFixture.productId, offerId: "lapsed",
                signedData: SignedData(transaction: try fixture.transaction(expiredDaysAgo: 90))))
        #expect(response.status == 200)
        #expect(fixture.log.all.isEmpty)
    }

    @Test(
        "no line ever carries the signed data a request sent, any Base64url segment of it, or the JWS issued",
        arguments: Logger.Format.allCases)
    func noSignedDataInTheLog(format: Logger.Format) throws {
        let fixture = try ServiceFixture(format: format)
        defer { fixture.remove() }
        let transaction = try fixture.transaction(expiredDaysAgo: 90)
        let otherCustomer = try fixture.renewalInfo(originalTransactionId: "3000000000000009")
        let forged = transaction.split(separator: ".").dropLast().joined(separator: ".") + ".AAAA"
        let requests: [(String, [UInt8])] = [
            (
                "/v1/signatures/promotional-offer",
                PromotionalOfferRequest(
                    bundleId: ServiceFixture.bundleId, productId: ServiceFixture.productId, offerId: "lapsed",
                    signedData: SignedData(transaction: transaction)
                ).jsonBytes
            ),
            (
                "/v1/signatures/promotional-offer",
                PromotionalOfferRequest(
                    bundleId: ServiceFixture.bundleId, productId: ServiceFixture.productId, offerId: "lapsed",
                    signedData: SignedData(transaction: transaction, renewalInfo: otherCustomer)
                ).jsonBytes
            ),
            (
                "/v1/eligibility",
                EligibilityRequest(bundleId: ServiceFixture.bundleId, signedData: SignedData(transaction: forged))
                    .jsonBytes
            ),
            (
                "/v1/signatures/introductory-offer-eligibility",
                IntroductoryOfferEligibilityRequest(
                    bundleId: ServiceFixture.bundleId, productId: ServiceFixture.productId,
                    signedData: SignedData(transaction: transaction)
                ).jsonBytes
            ),
            // Not JSON at all: the body must not be echoed either.
            ("/v1/signatures/promotional-offer", Array("{\"signedTransaction\": \"\(transaction)\"".utf8)),
        ]
        var secrets = [transaction, otherCustomer, forged]
        var statuses: [Int] = []
        for (path, body) in requests {
            let response = try fixture.client.post(path, json: body)
            statuses.append(response.status)
            if let issued = response.json?["compactJWS"]?.stringValue { secrets.append(issued) }
        }
        #expect(statuses == [200, 400, 400, 200, 400])
        #expect(secrets.count == 5, "both issued JWS are checked too")
        let lines = fixture.log.all
        #expect(fixture.log.accessLines.count == requests.count)
        for line in lines {
            for secret in secrets {
                #expect(!line.contains(secret))
                for segment in secret.split(separator: ".") where segment.count >= 8 {
                    #expect(!line.contains(segment), "a segment of signed data in: \(line)")
                }
            }
        }
    }
}
