import CPKCS11

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// One token of a PKCS#11 module, found by the URI's token attributes, and the calls made on it: sessions, login,
/// finding, reading and creating objects. Errors name the URI (`uri`, which never holds a PIN) and the standard's
/// return value.
struct PKCS11Token: Sendable {
    let module: PKCS11Module
    let slot: CK_SLOT_ID
    let uri: PKCS11URI

    private var functions: CK_FUNCTION_LIST { module.functions.pointee }

    /// The single token with a matching label (and manufacturer, model, serial where the URI gives them).
    static func find(uri: PKCS11URI, module: PKCS11Module) throws(CryptoError) -> PKCS11Token {
        let functions = module.functions.pointee
        var count: CK_ULONG = 0
        var rv = functions.C_GetSlotList(CK_BBOOL(CK_TRUE), nil, &count)
        guard rv == CKR_OK else { throw failure("C_GetSlotList", rv, uri: uri) }
        var slots = [CK_SLOT_ID](repeating: 0, count: Int(count))
        rv = functions.C_GetSlotList(CK_BBOOL(CK_TRUE), &slots, &count)
        guard rv == CKR_OK else { throw failure("C_GetSlotList", rv, uri: uri) }
        var matches: [CK_SLOT_ID] = []
        var labels: [String] = []
        for slot in slots.prefix(Int(count)) {
            var info = CK_TOKEN_INFO()
            guard functions.C_GetTokenInfo(slot, &info) == CKR_OK else { continue }
            let label = padded(info.label)
            labels.append(label)
            if uri.token.map({ $0 == label }) ?? true,
                uri.manufacturer.map({ $0 == padded(info.manufacturerID) }) ?? true,
                uri.model.map({ $0 == padded(info.model) }) ?? true,
                uri.serial.map({ $0 == padded(info.serialNumber) }) ?? true
            {
                matches.append(slot)
            }
        }
        guard matches.count == 1, let slot = matches.first else {
            let present = labels.isEmpty ? "none" : labels.map { "\"\($0)\"" }.joined(separator: ", ")
            throw CryptoError(
                .pkcs11TokenNotFound,
                matches.isEmpty
                    ? "\(uri): no such token in \(module.path) (tokens present: \(present))"
                    : "\(uri): \(matches.count) tokens match; add serial= to the URI (tokens present: \(present))")
        }
        return PKCS11Token(module: module, slot: slot, uri: uri)
    }

    /// A token's fixed-width, space-padded text field as a string.
    private static func padded<Field>(_ field: Field) -> String {
        withUnsafeBytes(of: field) { bytes in
            var text = Array(bytes)
            while let last = text.last, last == UInt8(ascii: " ") || last == 0 { text.removeLast() }
            return String(decoding: text, as: UTF8.self)
        }
    }

    static func failure(_ call: String, _ rv: CK_RV, uri: PKCS11URI) -> CryptoError {
        CryptoError(.pkcs11Failure, "\(uri): \(call) failed (\(PKCS11Module.name(of: rv)))")
    }

    func failure(_ call: String, _ rv: CK_RV) -> CryptoError { Self.failure(call, rv, uri: uri) }

    func openSession(readWrite: Bool = false) throws(CryptoError) -> CK_SESSION_HANDLE {
        var session: CK_SESSION_HANDLE = 0
        let flags = CK_FLAGS(CKF_SERIAL_SESSION) | (readWrite ? CK_FLAGS(CKF_RW_SESSION) : 0)
        let rv = functions.C_OpenSession(slot, flags, nil, nil, &session)
        guard rv == CKR_OK else { throw failure("C_OpenSession", rv) }
        return session
    }

    func closeSession(_ session: CK_SESSION_HANDLE) { _ = functions.C_CloseSession(session) }

    /// Logs the user in with the PIN from `reference`; a token already logged in by this process counts as done.
    /// The PIN is wiped from memory after the call and appears in no message.
    func login(session: CK_SESSION_HANDLE, reference: PKCS11KeyReference) throws(CryptoError) {
        var pin = try reference.readPIN()
        defer { pin.withUnsafeMutableBytes { if let base = $0.baseAddress { memset(base, 0, $0.count) } } }
        let rv = pin.withUnsafeMutableBufferPointer {
            functions.C_Login(session, CK_USER_TYPE(CKU_USER), $0.baseAddress, CK_ULONG($0.count))
        }
        switch rv {
        case CKR_OK, CKR_USER_ALREADY_LOGGED_IN: return
        case CKR_PIN_INCORRECT, CKR_PIN_INVALID, CKR_PIN_LEN_RANGE:
            throw CryptoError(.pkcs11PINIncorrect, "\(uri): the token refused the PIN (\(reference.pin))")
        case CKR_PIN_LOCKED:
            throw CryptoError(.pkcs11PINIncorrect, "\(uri): the token's user PIN is locked")
        default:
            throw failure("C_Login", rv)
        }
    }

    /// The objects of `objectClass` with the URI's label and ID.
    func objects(
        session: CK_SESSION_HANDLE, class objectClass: CK_OBJECT_CLASS
    ) throws(CryptoError)
        -> [CK_OBJECT_HANDLE]
    {
        var template: [PKCS11Attribute] = [.init(CKA_CLASS, ulong: objectClass)]
        if let label = uri.object { template.append(.init(CKA_LABEL, Array(label.utf8))) }
        if let id = uri.id { template.append(.init(CKA_ID, id)) }
        return try objects(session: session, matching: template)
    }

    /// The one object of `objectClass` with the URI's label and ID; none or several is an error naming `what`.
    func onlyObject(
        session: CK_SESSION_HANDLE, class objectClass: CK_OBJECT_CLASS, _ what: String
    )
        throws(CryptoError) -> CK_OBJECT_HANDLE
    {
        let found = try objects(session: session, class: objectClass)
        guard found.count == 1, let object = found.first else {
            throw CryptoError(
                .pkcs11KeyNotFound,
                found.isEmpty
                    ? "\(uri): no \(what) with this label and ID in the token"
                    : "\(uri): \(found.count) \(what) objects match; add id= to the URI")
        }
        return object
    }

    func objects(
        session: CK_SESSION_HANDLE, matching template: [PKCS11Attribute]
    ) throws(CryptoError)
        -> [CK_OBJECT_HANDLE]
    {
        var rv = PKCS11Attribute.withTemplate(template) { functions.C_FindObjectsInit(session, $0, $1) }
        guard rv == CKR_OK else { throw failure("C_FindObjectsInit", rv) }
        defer { _ = functions.C_FindObjectsFinal(session) }
        var found: [CK_OBJECT_HANDLE] = []
        var batch = [CK_OBJECT_HANDLE](repeating: 0, count: 16)
        while true {
            var count: CK_ULONG = 0
            rv = functions.C_FindObjects(session, &batch, CK_ULONG(batch.count), &count)
            guard rv == CKR_OK else { throw failure("C_FindObjects", rv) }
            if count == 0 { return found }
            found += batch.prefix(Int(count))
        }
    }

    /// An attribute's value; `nil` when the object does not have it or keeps it secret.
    func attribute(session: CK_SESSION_HANDLE, object: CK_OBJECT_HANDLE, _ type: UInt) -> [UInt8]? {
        var attribute = CK_ATTRIBUTE(type: CK_ATTRIBUTE_TYPE(type), pValue: nil, ulValueLen: 0)
        guard functions.C_GetAttributeValue(session, object, &attribute, 1) == CKR_OK,
            attribute.ulValueLen < 1 << 16  // also refuses CK_UNAVAILABLE_INFORMATION, ~0
        else { return nil }
        var value = [UInt8](repeating: 0, count: Int(attribute.ulValueLen))
        let rv = value.withUnsafeMutableBytes { buffer in
            attribute.pValue = buffer.baseAddress
            return functions.C_GetAttributeValue(session, object, &attribute, 1)
        }
        guard rv == CKR_OK else { return nil }
        return Array(value.prefix(Int(attribute.ulValueLen)))
    }

    func createObject(
        session: CK_SESSION_HANDLE, _ template: [PKCS11Attribute], what: String
    ) throws(CryptoError)
        -> CK_OBJECT_HANDLE
    {
        var object: CK_OBJECT_HANDLE = 0
        let rv = PKCS11Attribute.withTemplate(template) { functions.C_CreateObject(session, $0, $1, &object) }
        guard rv == CKR_OK else { throw failure("C_CreateObject (\(what))", rv) }
        return object
    }

    func destroyObject(session: CK_SESSION_HANDLE, _ object: CK_OBJECT_HANDLE) {
        _ = functions.C_DestroyObject(session, object)
    }

    /// ECDSA (`CKM_ECDSA`) over a digest the caller computed: SoftHSM and many HSMs have no ECDSA-with-SHA-256
    /// mechanism, and hashing in the process costs nothing the token need see. Returns `r||s`.
    func sign(
        session: CK_SESSION_HANDLE, key: CK_OBJECT_HANDLE, digest: [UInt8]
    ) -> (
        signature: [UInt8], rv: CK_RV, call: String
    ) {
        var mechanism = CK_MECHANISM(mechanism: CK_MECHANISM_TYPE(CKM_ECDSA), pParameter: nil, ulParameterLen: 0)
        var rv = functions.C_SignInit(session, &mechanism, key)
        guard rv == CKR_OK else { return ([], rv, "C_SignInit") }
        var signature = [UInt8](repeating: 0, count: 132)
        var length = CK_ULONG(signature.count)
        var input = digest
        rv = input.withUnsafeMutableBufferPointer { input in
            signature.withUnsafeMutableBufferPointer { output in
                functions.C_Sign(session, input.baseAddress, CK_ULONG(input.count), output.baseAddress, &length)
            }
        }
        guard rv == CKR_OK else { return ([], rv, "C_Sign") }
        return (Array(signature.prefix(Int(length))), rv, "C_Sign")
    }
}

/// One attribute of a PKCS#11 template, its value held as bytes until the call.
struct PKCS11Attribute: Sendable {
    let type: UInt
    let value: [UInt8]

    init(_ type: UInt, _ value: [UInt8]) {
        self.type = type
        self.value = value
    }

    init(_ type: UInt, ulong: UInt) {
        self.init(type, withUnsafeBytes(of: CK_ULONG(ulong)) { Array($0) })
    }

    init(_ type: UInt, bool: Bool) {
        self.init(type, [bool ? CK_BBOOL(CK_TRUE) : CK_BBOOL(CK_FALSE)])
    }

    /// Runs `body` with a C template whose values point into one buffer, wiped and freed afterwards (a template
    /// may carry a private key's value).
    static func withTemplate<Result>(
        _ attributes: [PKCS11Attribute], _ body: (UnsafeMutablePointer<CK_ATTRIBUTE>, CK_ULONG) -> Result
    ) -> Result {
        let total = attributes.reduce(0) { $0 + $1.value.count }
        let storage = UnsafeMutableRawBufferPointer.allocate(byteCount: max(total, 1), alignment: 8)
        defer {
            memset(storage.baseAddress!, 0, storage.count)
            storage.deallocate()
        }
        var template: [CK_ATTRIBUTE] = []
        var offset = 0
        for attribute in attributes {
            let start = storage.baseAddress! + offset
            attribute.value.withUnsafeBytes { if let base = $0.baseAddress { memcpy(start, base, $0.count) } }
            template.append(
                CK_ATTRIBUTE(
                    type: CK_ATTRIBUTE_TYPE(attribute.type), pValue: start, ulValueLen: CK_ULONG(attribute.value.count))
            )
            offset += attribute.value.count
        }
        return template.withUnsafeMutableBufferPointer { body($0.baseAddress!, CK_ULONG($0.count)) }
    }
}
