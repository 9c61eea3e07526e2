import CPKCS11
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A PKCS#11 module (the token vendor's shared library), opened with `dlopen` and initialised once per process,
/// then kept until exit: `C_Initialize` may run only once per process, and a reload that names the same module
/// must find it ready. Called through the function list `C_GetFunctionList` returns.
///
/// `@unchecked Sendable`: the function list is a constant table owned by the library, and the library is
/// initialised with `CKF_OS_LOCKING_OK`, which makes a conforming module safe to call from several threads
/// (PKCS#11 2.40, 5.1.6) as long as one session is not used by two threads at once; `TokenKey` gives each
/// session to one signature at a time.
final class PKCS11Module: @unchecked Sendable {
    let path: String
    let functions: UnsafeMutablePointer<CK_FUNCTION_LIST>

    private static let opened = Mutex<[String: PKCS11Module]>([:])

    private init(path: String, functions: UnsafeMutablePointer<CK_FUNCTION_LIST>) {
        self.path = path
        self.functions = functions
    }

    /// The module at `path`, opened and initialised on first use.
    static func open(path: String) throws(CryptoError) -> PKCS11Module {
        try opened.withLock { modules throws(CryptoError) -> PKCS11Module in
            if let module = modules[path] { return module }
            let module = try load(path: path)
            modules[path] = module
            return module
        }
    }

    private static func load(path: String) throws(CryptoError) -> PKCS11Module {
        guard path.hasPrefix("/") else {
            throw CryptoError(.pkcs11ModuleUnusable, "\(path): the PKCS#11 module must be named by an absolute path")
        }
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw CryptoError(.pkcs11ModuleUnusable, "\(path): PKCS#11 module not found")
        }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            throw CryptoError(.pkcs11ModuleUnusable, "\(path): the PKCS#11 module is not a regular file")
        }
        guard let handle = dlopen(path, RTLD_NOW | RTLD_LOCAL) else {
            let reason = dlerror().map { String(cString: $0) } ?? "unknown reason"
            throw CryptoError(.pkcs11ModuleUnusable, "\(path): cannot load the PKCS#11 module: \(reason)")
        }
        guard let symbol = dlsym(handle, "C_GetFunctionList") else {
            dlclose(handle)
            throw CryptoError(.pkcs11ModuleUnusable, "\(path): not a PKCS#11 module (no C_GetFunctionList)")
        }
        let getFunctionList = unsafeBitCast(symbol, to: CK_C_GetFunctionList.self)
        var list: UnsafeMutablePointer<CK_FUNCTION_LIST>?
        var rv = getFunctionList(&list)
        guard rv == CKR_OK, let list else {
            dlclose(handle)
            throw CryptoError(.pkcs11ModuleUnusable, "\(path): C_GetFunctionList failed (\(Self.name(of: rv)))")
        }
        // The library makes its own locks (OS locking), no callbacks from us.
        var arguments = CK_C_INITIALIZE_ARGS()
        arguments.flags = CK_FLAGS(CKF_OS_LOCKING_OK)
        rv = list.pointee.C_Initialize(&arguments)
        guard rv == CKR_OK || rv == CKR_CRYPTOKI_ALREADY_INITIALIZED else {
            dlclose(handle)
            throw CryptoError(.pkcs11ModuleUnusable, "\(path): C_Initialize failed (\(Self.name(of: rv)))")
        }
        return PKCS11Module(path: path, functions: list)
    }

    /// A return value's name as the standard spells it, for messages (`CKR_PIN_INCORRECT`).
    static func name(of rv: CK_RV) -> String {
        let names: [CK_RV: String] = [
            CK_RV(CKR_OK): "CKR_OK", CK_RV(CKR_GENERAL_ERROR): "CKR_GENERAL_ERROR",
            CK_RV(CKR_FUNCTION_FAILED): "CKR_FUNCTION_FAILED", CK_RV(CKR_ARGUMENTS_BAD): "CKR_ARGUMENTS_BAD",
            CK_RV(CKR_ATTRIBUTE_VALUE_INVALID): "CKR_ATTRIBUTE_VALUE_INVALID",
            CK_RV(CKR_DEVICE_ERROR): "CKR_DEVICE_ERROR", CK_RV(CKR_DEVICE_MEMORY): "CKR_DEVICE_MEMORY",
            CK_RV(CKR_DEVICE_REMOVED): "CKR_DEVICE_REMOVED", CK_RV(CKR_KEY_HANDLE_INVALID): "CKR_KEY_HANDLE_INVALID",
            CK_RV(CKR_KEY_TYPE_INCONSISTENT): "CKR_KEY_TYPE_INCONSISTENT",
            CK_RV(CKR_MECHANISM_INVALID): "CKR_MECHANISM_INVALID",
            CK_RV(CKR_OBJECT_HANDLE_INVALID): "CKR_OBJECT_HANDLE_INVALID",
            CK_RV(CKR_PIN_INCORRECT): "CKR_PIN_INCORRECT", CK_RV(CKR_PIN_LOCKED): "CKR_PIN_LOCKED",
            CK_RV(CKR_PIN_EXPIRED): "CKR_PIN_EXPIRED", CK_RV(CKR_PIN_LEN_RANGE): "CKR_PIN_LEN_RANGE",
            CK_RV(CKR_SESSION_CLOSED): "CKR_SESSION_CLOSED", CK_RV(CKR_SESSION_COUNT): "CKR_SESSION_COUNT",
            CK_RV(CKR_SESSION_HANDLE_INVALID): "CKR_SESSION_HANDLE_INVALID",
            CK_RV(CKR_TEMPLATE_INCOMPLETE): "CKR_TEMPLATE_INCOMPLETE",
            CK_RV(CKR_TEMPLATE_INCONSISTENT): "CKR_TEMPLATE_INCONSISTENT",
            CK_RV(CKR_TOKEN_NOT_PRESENT): "CKR_TOKEN_NOT_PRESENT",
            CK_RV(CKR_TOKEN_WRITE_PROTECTED): "CKR_TOKEN_WRITE_PROTECTED",
            CK_RV(CKR_USER_NOT_LOGGED_IN): "CKR_USER_NOT_LOGGED_IN",
            CK_RV(CKR_USER_PIN_NOT_INITIALIZED): "CKR_USER_PIN_NOT_INITIALIZED",
            CK_RV(CKR_CRYPTOKI_NOT_INITIALIZED): "CKR_CRYPTOKI_NOT_INITIALIZED",
            CK_RV(CKR_BUFFER_TOO_SMALL): "CKR_BUFFER_TOO_SMALL",
        ]
        return names[rv] ?? "CKR 0x" + String(rv, radix: 16)
    }
}

extension CryptoError.Code {
    /// The PKCS#11 module cannot be loaded or initialised.
    public static let pkcs11ModuleUnusable = CryptoError.Code(rawValue: "pkcs11_module_unusable")
    /// The URI is not a PKCS#11 URI this service accepts.
    public static let invalidPKCS11URI = CryptoError.Code(rawValue: "invalid_pkcs11_uri")
    /// No token (or more than one) matches the URI.
    public static let pkcs11TokenNotFound = CryptoError.Code(rawValue: "pkcs11_token_not_found")
    /// The token refused the PIN, or the PIN is locked.
    public static let pkcs11PINIncorrect = CryptoError.Code(rawValue: "pkcs11_pin_incorrect")
    /// The PIN's file or environment variable gives nothing.
    public static let pkcs11PINMissing = CryptoError.Code(rawValue: "pkcs11_pin_missing")
    /// No key (or more than one) matches the URI in the token.
    public static let pkcs11KeyNotFound = CryptoError.Code(rawValue: "pkcs11_key_not_found")
    /// `keys import` found an object with the same label or ID already in the token.
    public static let pkcs11KeyExists = CryptoError.Code(rawValue: "pkcs11_key_exists")
    /// A PKCS#11 call failed while using the token.
    public static let pkcs11Failure = CryptoError.Code(rawValue: "pkcs11_failure")
}
