// The flow of docs/app-teams.md against a running offer-signer: the offers a customer may be shown, a promotional offer
// signed as JWS and in the legacy form with an app account token, and an introductory offer decision, each
// printed as the purchase plan an app would hand to StoreKit.
import Foundation
import OfferKit

struct Arguments {
    var url: URL?
    var bundleId = "com.example.app"
    var productId = "com.example.pro.monthly"
    var offerId: String?
    var introOfferId: String?
    var customer = SignedCustomerData.none
    var json = false
    /// App Attest through a device the test kit plays: its executable, CA folder, key file and team ID.
    var attestTestKit: String?
    var attestCA: String?
    var attestKey: String?
    var teamId: String?

    static let usage = """
        Usage: offerkit-demo --url URL [--bundle-id ID] [--product ID] [--offer ID] [--intro-offer ID]
                             [--transaction FILE] [--renewal-info FILE] [--app-transaction FILE] [--json]
                             [--app-attest-testkit PATH --app-attest-ca DIR --app-attest-key FILE --team-id T]

        Asks the offer-signer at URL, through OfferKit, for the offers the customer may be shown, then signs
        --offer (default: the first promotional offer listed) as JWS and in the legacy form with a new app
        account token (a Sandbox customer gets JWS only: the legacy step then shows the refusal), then asks for the introductory offer decision (needs --transaction or
        --app-transaction). FILEs hold the Apple-signed JWS texts StoreKit gives an app. --json prints one
        JSON object per step. With --app-attest-*, every request carries an App Attest assertion (OfferKit's
        AppAttest), made by a device that `offer-signer-testkit app-attest` plays with the CA in DIR and the
        key in FILE.
        """

    init(_ arguments: [String]) throws {
        var rest = arguments[...]
        func value(_ flag: String) throws -> String {
            guard let next = rest.popFirst() else { throw DemoError("\(flag) needs a value") }
            return next
        }
        func file(_ flag: String) throws -> String {
            let path = try value(flag)
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
                throw DemoError("\(flag): cannot read \(path)")
            }
            return text.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        while let flag = rest.popFirst() {
            switch flag {
            case "--url":
                let text = try value(flag)
                guard let url = URL(string: text), url.scheme == "http" || url.scheme == "https" else {
                    throw DemoError("--url: \(text) is not an http(s) URL")
                }
                self.url = url
            case "--bundle-id": bundleId = try value(flag)
            case "--product": productId = try value(flag)
            case "--offer": offerId = try value(flag)
            case "--intro-offer": introOfferId = try value(flag)
            case "--transaction": customer.transaction = try file(flag)
            case "--renewal-info": customer.renewalInfo = try file(flag)
            case "--app-transaction": customer.appTransaction = try file(flag)
            case "--json": json = true
            case "--app-attest-testkit": attestTestKit = try value(flag)
            case "--app-attest-ca": attestCA = try value(flag)
            case "--app-attest-key": attestKey = try value(flag)
            case "--team-id": teamId = try value(flag)
            case "--help", "-h":
                print(Self.usage)
                exit(0)
            default: throw DemoError("unknown option \(flag)\n\n\(Self.usage)")
            }
        }
        guard url != nil else { throw DemoError("--url is required\n\n\(Self.usage)") }
    }
}

struct DemoError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Prints a step for people, or as one JSON object.
struct Printer {
    let json: Bool

    func step(_ name: String, _ text: String, _ fields: [String: Any]) {
        if json {
            var object = fields
            object["step"] = name
            let data = try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
            print(String(decoding: data, as: UTF8.self))
        } else {
            print(text)
        }
    }

    func plan(_ name: String, _ plan: PurchasePlan) {
        var fields: [String: Any] = ["productId": plan.productId]
        fields["appAccountToken"] = plan.appAccountToken?.uuidString ?? NSNull()
        var storeKit: String
        switch plan.offer {
        case .promotional(let offerId, let compactJWS):
            fields["offerId"] = offerId
            fields["compactJWS"] = compactJWS
            storeKit =
                "Product.PurchaseOption.promotionalOffer(\"\(offerId)\", compactJWS: <\(compactJWS.count) characters>)"
        case .legacyPromotional(let signature):
            fields["offerId"] = signature.offerId
            fields["keyId"] = signature.keyId
            fields["nonce"] = signature.nonce.uuidString
            fields["timestamp"] = signature.timestamp
            fields["signatureDER"] = signature.signature.base64EncodedString()
            storeKit = """
                Product.PurchaseOption.promotionalOffer(offerID: "\(signature.offerId)", keyID: "\(signature.keyId)", \
                nonce: UUID(\(signature.nonce.uuidString)), signature: <\(signature.signature.count) bytes of DER>, \
                timestamp: \(signature.timestamp))
                """
        case .introductoryOfferEligibility(let compactJWS):
            fields["compactJWS"] = compactJWS
            storeKit =
                "Product.PurchaseOption.introductoryOfferEligibility(compactJWS: <\(compactJWS.count) characters>)"
        case .winBack(let offerId):
            fields["offerId"] = offerId
            storeKit =
                "Product.PurchaseOption.winBackOffer(<the offer \"\(offerId)\" of product.subscription?.winBackOffers>)"
        case nil:
            storeKit = "no offer"
        }
        if let token = plan.appAccountToken { storeKit += " + .appAccountToken(\(token.uuidString))" }
        step(name, "\(name): purchase plan for \(plan.productId)\n  \(storeKit)", fields)
    }
}

extension Printer {
    /// The legacy plan, or the refusal a Sandbox customer (TestFlight, App Review, the test kit's data) gets: JWS
    /// signatures only. Any other failure is thrown.
    func legacyPlanOrRefusal(_ result: Result<PurchasePlan, any Error>) throws {
        switch result {
        case .success(let purchase):
            plan("legacy", purchase)
        case .failure(OfferKitError.invalidRequest(let error)) where error.field == "format":
            step("legacy", "legacy: refused, \(error.message)", ["refused": error.message])
        case .failure(let error):
            throw error
        }
    }
}

/// An App Attest device played by `offer-signer-testkit app-attest`: the key in a file, attestations by the test kit's
/// CA, each over the client data hash OfferKit made.
struct TestKitDevice: AppAttestProvider {
    let testKit: String
    let ca: String
    let key: String
    let teamId: String
    let bundleId: String

    var isSupported: Bool { true }

    func generateKey() async throws -> String {
        try run(["key", "--key", key]).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    func attestKey(_ keyId: String, clientDataHash: Data) async throws -> Data {
        try member("attestation", of: run(["attest", "--ca", ca] + signing(clientDataHash)))
    }

    func generateAssertion(_ keyId: String, clientDataHash: Data) async throws -> Data {
        try member("X-App-Attest-Assertion", of: run(["assert"] + signing(clientDataHash)))
    }

    private func signing(_ hash: Data) -> [String] {
        [
            "--key", key, "--team-id", teamId, "--bundle-id", bundleId, "--client-data-hash",
            hash.map { String(format: "%02x", $0) }.joined(),
        ]
    }

    private func member(_ name: String, of output: String) throws -> Data {
        guard let object = try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any],
            let text = object[name] as? String, let data = Data(base64Encoded: text)
        else { throw DemoError("the test kit printed no \(name)") }
        return data
    }

    private func run(_ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: testKit)
        process.arguments = ["app-attest"] + arguments
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw DemoError("offer-signer-testkit app-attest failed") }
        return String(decoding: data, as: UTF8.self)
    }
}

func run(_ arguments: Arguments) async throws {
    var appAttest: AppAttest?
    if let testKit = arguments.attestTestKit {
        guard let ca = arguments.attestCA, let key = arguments.attestKey, let teamId = arguments.teamId else {
            throw DemoError("--app-attest-testkit needs --app-attest-ca, --app-attest-key and --team-id")
        }
        let device = TestKitDevice(testKit: testKit, ca: ca, key: key, teamId: teamId, bundleId: arguments.bundleId)
        appAttest = AppAttest(provider: device, keyStore: MemoryAppAttestKeyStore(), policy: .required)
    }
    let client = OfferClient(baseURL: arguments.url!, bundleId: arguments.bundleId, appAttest: appAttest)
    let out = Printer(json: arguments.json)
    let product = arguments.productId

    let eligible = try await client.eligibleOffers(productIds: [product], customer: arguments.customer)
    let promotional = eligible.promotionalOfferIds(for: product)
    let winBack = eligible.winBackOfferIds(for: product)
    out.step(
        "eligible",
        "eligible offers for \(product): promotional \(promotional), win-back (best first) \(winBack)",
        ["promotional": promotional, "winBack": winBack])
    if let first = winBack.first, let plan = eligible.winBackPlan(productId: product, offerId: first) {
        out.plan("win-back", plan)
    }

    guard let offerId = arguments.offerId ?? promotional.first else {
        throw DemoError("no promotional offer listed for \(product); name one with --offer")
    }
    out.plan(
        "jws", try await client.promotionalOffer(productId: product, offerId: offerId, customer: arguments.customer))
    let legacy: Result<PurchasePlan, any Error>
    do {
        legacy = .success(
            try await client.promotionalOffer(
                productId: product, offerId: offerId, customer: arguments.customer, appAccountToken: UUID(),
                format: .legacy))
    } catch {
        legacy = .failure(error)
    }
    try out.legacyPlanOrRefusal(legacy)

    guard arguments.customer.transaction != nil || arguments.customer.appTransaction != nil else {
        out.step("intro", "intro: skipped (needs --transaction or --app-transaction)", ["skipped": true])
        return
    }
    let intro = try await client.introductoryOfferEligibility(
        productId: product, offerId: arguments.introOfferId, customer: arguments.customer)
    out.step(
        "intro-decision",
        "intro: offer \(intro.offerId) \(intro.isAllowed ? "allowed" : "refused \(intro.reasons)")",
        ["offerId": intro.offerId, "allowed": intro.isAllowed, "reasons": intro.reasons.map(\.description)])
    out.plan("intro", intro.plan)
}

do {
    try await run(try Arguments(Array(CommandLine.arguments.dropFirst())))
} catch let error as OfferKitError {
    FileHandle.standardError.write(Data("offerkit-demo: \(error)\n".utf8))
    exit(1)
} catch {
    FileHandle.standardError.write(Data("offerkit-demo: \(error)\n".utf8))
    exit(2)
}
