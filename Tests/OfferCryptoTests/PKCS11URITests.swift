import Testing

@testable import OfferCrypto

@Suite("PKCS#11 URIs (RFC 7512) name a token and a key, never a PIN")
struct PKCS11URITests {
    @Test(
        "accepted URIs give their attributes, percent-decoded",
        arguments: [
            ("pkcs11:token=offer-signer;object=ABC123", PKCS11URI(token: "offer-signer", object: "ABC123")),
            ("pkcs11:object=k1;id=%01%ff", PKCS11URI(object: "k1", id: [0x01, 0xFF])),
            ("PKCS11:token=My%20HSM;object=a;type=private", PKCS11URI(token: "My HSM", object: "a")),
            (
                "pkcs11:manufacturer=SoftHSM%20project;model=SoftHSM%20v2;serial=8f2e;token=t;id=%41",
                PKCS11URI(token: "t", manufacturer: "SoftHSM project", model: "SoftHSM v2", serial: "8f2e", id: [0x41])
            ),
        ])
    func accepted(text: String, expected: PKCS11URI) throws {
        #expect(try PKCS11URI(parsing: text) == expected)
    }

    @Test("the canonical form parses back to the same URI and encodes what must be encoded")
    func canonicalRoundTrip() throws {
        let uri = PKCS11URI(token: "My HSM;1", object: "key/2", id: [0x00, 0x41])
        #expect(uri.description == "pkcs11:token=My%20HSM%3B1;object=key%2F2;id=%00A")
        #expect(try PKCS11URI(parsing: uri.description) == uri)
    }

    @Test(
        "refused URIs say what is wrong",
        arguments: [
            ("file:///k.p8", "expected a PKCS#11 URI starting with \"pkcs11:\""),
            (
                "pkcs11:token=t;object=k;pin-value=1234",
                "the PIN does not go in the URI; name a \"pinFile\" or a \"pinEnvironment\" variable beside it"
            ),
            (
                "pkcs11:token=t;object=k?pin-value=1234",
                "the PIN does not go in the URI (\"pin-value\" or \"pin-source\"); name a \"pinFile\" or a "
                    + "\"pinEnvironment\" variable beside it"
            ),
            (
                "pkcs11:token=t;object=k?module-path=/x.so",
                "query attributes (\"?module-path...\") are not supported; name the module with \"pkcs11Module\""
            ),
            ("pkcs11:token=t", "the URI names no key: give \"object=\" (its label) or \"id=\""),
            ("pkcs11:token=t;object=a;object=b", "attribute \"object\" appears twice"),
            ("pkcs11:token=t;object=a;id=%4", "attribute \"id\" has a bad percent escape"),
            ("pkcs11:token=t;object", "attribute \"object\" has no value"),
            ("pkcs11:object=a;type=public", "type=public: the URI names the private key (type=private)"),
            (
                "pkcs11:object=a;slot-id=1",
                "attribute \"slot-id\" is not supported (use token, manufacturer, model, serial, object, id, type)"
            ),
        ])
    func refused(text: String, message: String) {
        #expect(throws: CryptoError(.invalidPKCS11URI, message)) { try PKCS11URI(parsing: text) }
    }

    @Test("the PIN never appears in a refusal")
    func pinNotRepeated() {
        do {
            _ = try PKCS11URI(parsing: "pkcs11:token=t;object=k;pin-value=s3cret-pin")
            Issue.record("a URI with a PIN was accepted")
        } catch {
            #expect(!error.message.contains("s3cret-pin"))
        }
    }
}
