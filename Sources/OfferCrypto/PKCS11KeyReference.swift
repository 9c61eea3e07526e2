#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A private key kept in a PKCS#11 token (an HSM, a cloud KMS's PKCS#11 library, SoftHSM): which module to load,
/// which key, and where the user PIN comes from. Holds no secret: the PIN is read when the key is opened.
public struct PKCS11KeyReference: Sendable, Equatable, CustomStringConvertible {
    /// Where the token's user PIN is read from; never the configuration file itself.
    public enum PINSource: Sendable, Equatable, CustomStringConvertible {
        /// A file readable by the service only (checked like a key file); one trailing newline is ignored.
        case file(String)
        /// An environment variable of the service's process.
        case environment(String)

        public var description: String {
            switch self {
            case .file(let path): "PIN file \(path)"
            case .environment(let name): "PIN from $\(name)"
            }
        }
    }

    public var uri: PKCS11URI
    /// The absolute path of the vendor's PKCS#11 library, like `/usr/lib/softhsm/libsofthsm2.so`.
    public var modulePath: String
    public var pin: PINSource

    public init(uri: PKCS11URI, modulePath: String, pin: PINSource) {
        self.uri = uri
        self.modulePath = modulePath
        self.pin = pin
    }

    /// The URI and the module, for messages and logs: no PIN.
    public var description: String { "\(uri) (module \(modulePath))" }

    /// Reads the PIN. The caller wipes the returned bytes after use.
    func readPIN() throws(CryptoError) -> [UInt8] {
        var bytes: [UInt8]
        switch pin {
        case .file(let path):
            do {
                bytes = try PrivateKeyFile.readProtected(path: path, what: "PIN file")
            } catch let error as CryptoError {
                throw error
            } catch {
                throw CryptoError(.keyFileUnreadable, "\(path): cannot read PIN file")
            }
        case .environment(let name):
            guard let value = getenv(name) else {
                throw CryptoError(.pkcs11PINMissing, "\(uri): environment variable \(name) (the PIN) is not set")
            }
            bytes = Array(
                UnsafeBufferPointer(
                    start: UnsafeRawPointer(value).assumingMemoryBound(to: UInt8.self),
                    count: strlen(value)))
        }
        while let last = bytes.last, last == UInt8(ascii: "\n") || last == UInt8(ascii: "\r") {
            bytes.removeLast()
        }
        guard !bytes.isEmpty else {
            throw CryptoError(.pkcs11PINMissing, "\(uri): the PIN (\(pin)) is empty")
        }
        return bytes
    }
}
