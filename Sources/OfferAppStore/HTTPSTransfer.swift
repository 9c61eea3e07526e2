import CCurl
import OfferCore

/// One request in flight on `HTTPSClient`'s loop: its libcurl easy handle, header list and error buffer (owned
/// here, freed by `close`), and the answer as it arrives. Used on the loop's thread only.
final class HTTPSTransfer {
    let handle: UnsafeMutableRawPointer
    let completion: HTTPSClient.Completion
    private let host: String
    private let limit: Int
    private var headerList: UnsafeMutablePointer<curl_slist>?
    private let errorBuffer: UnsafeMutablePointer<CChar>
    private var closed = false

    private var headers: [String: String] = [:]
    private var headerBytes = 0
    private var body: [UInt8] = []
    private var tooLarge = false

    /// Headers past this size (all of them together) fail the request like a body over the limit.
    static let maxHeaderBytes = 64 * 1024

    private init(
        handle: UnsafeMutableRawPointer, completion: @escaping HTTPSClient.Completion, host: String, limit: Int
    ) {
        self.handle = handle
        self.completion = completion
        self.host = host
        self.limit = limit
        errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE))
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE))
    }

    deinit {
        close()
        errorBuffer.deallocate()
    }

    /// An easy handle set up for `pending`, or why there is none.
    static func start(
        _ pending: HTTPSClient.Pending, options: HTTPSClient.Options
    ) -> Result<HTTPSTransfer, HTTPSClientError> {
        let request = pending.request
        guard let handle = curl_easy_init() else {
            return .failure(HTTPSClientError(.transport, "libcurl could not create a transfer"))
        }
        let host = (try? ServerURL(request.url).host) ?? "the server"
        let transfer = HTTPSTransfer(
            handle: handle, completion: pending.completion, host: host, limit: options.maxResponseBytes)
        let context = Unmanaged.passUnretained(transfer).toOpaque()
        let timeout = request.timeoutMilliseconds
        var ok = true
        func check(_ code: CURLcode) { ok = ok && code == CURLE_OK }
        check(offer_curl_setopt_string(handle, CURLOPT_URL, request.url))
        check(offer_curl_setopt_string(handle, CURLOPT_PROTOCOLS_STR, "https,http"))
        check(offer_curl_setopt_long(handle, CURLOPT_NOSIGNAL, 1))
        check(offer_curl_setopt_long(handle, CURLOPT_FOLLOWLOCATION, 0))
        check(offer_curl_setopt_long(handle, CURLOPT_SSL_VERIFYPEER, 1))
        check(offer_curl_setopt_long(handle, CURLOPT_SSL_VERIFYHOST, 2))
        if let caFile = options.caFile { check(offer_curl_setopt_string(handle, CURLOPT_CAINFO, caFile)) }
        check(offer_curl_setopt_long(handle, CURLOPT_TIMEOUT_MS, timeout))
        check(offer_curl_setopt_long(handle, CURLOPT_CONNECTTIMEOUT_MS, timeout))
        check(offer_curl_setopt_long(handle, CURLOPT_TCP_KEEPALIVE, 1))
        check(offer_curl_setopt_off(handle, CURLOPT_MAXFILESIZE_LARGE, curl_off_t(options.maxResponseBytes)))
        check(offer_curl_setopt_string(handle, CURLOPT_USERAGENT, options.userAgent))
        check(offer_curl_setopt_pointer(handle, CURLOPT_ERRORBUFFER, transfer.errorBuffer))
        check(offer_curl_setopt_write_function(handle, CURLOPT_WRITEFUNCTION, receiveBody))
        check(offer_curl_setopt_pointer(handle, CURLOPT_WRITEDATA, context))
        check(offer_curl_setopt_write_function(handle, CURLOPT_HEADERFUNCTION, receiveHeader))
        check(offer_curl_setopt_pointer(handle, CURLOPT_HEADERDATA, context))
        switch request.method {
        case "GET": check(offer_curl_setopt_long(handle, CURLOPT_HTTPGET, 1))
        default:
            if request.method != "POST" {
                check(offer_curl_setopt_string(handle, CURLOPT_CUSTOMREQUEST, request.method))
            }
            check(offer_curl_setopt_long(handle, CURLOPT_POST, 1))
            check(offer_curl_setopt_off(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(request.body.count)))
            // COPYPOSTFIELDS copies the bytes now (POSTFIELDSIZE set first, so they may hold any byte).
            var body = request.body
            body.withUnsafeMutableBytes {
                check(offer_curl_setopt_pointer(handle, CURLOPT_COPYPOSTFIELDS, $0.baseAddress))
            }
        }
        // libcurl adds `Expect: 100-continue` to larger POSTs; an empty value turns that off.
        for line in request.headers.map({ "\($0.name): \($0.value)" }) + ["Expect:"] {
            guard let appended = curl_slist_append(transfer.headerList, line) else {
                ok = false
                break
            }
            transfer.headerList = appended
        }
        check(offer_curl_setopt_slist(handle, CURLOPT_HTTPHEADER, transfer.headerList))
        guard ok else {
            transfer.close()
            return .failure(HTTPSClientError(.invalidRequest, "libcurl refused an option of the request"))
        }
        return .success(transfer)
    }

    /// The answer, once libcurl reports the transfer done with `code`.
    func outcome(_ code: CURLcode) -> Result<HTTPSResponse, HTTPSClientError> {
        if code == CURLE_OK {
            var status = 0
            _ = offer_curl_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
            return .success(HTTPSResponse(status: status, headers: headers, body: body))
        }
        let detail = errorBuffer.pointee == 0 ? String(cString: curl_easy_strerror(code)) : String(cString: errorBuffer)
        if tooLarge || code == CURLE_FILESIZE_EXCEEDED {
            return .failure(HTTPSClientError(.responseTooLarge, "the answer from \(host) is over \(limit) bytes"))
        }
        if code == CURLE_OPERATION_TIMEDOUT {
            return .failure(HTTPSClientError(.timeout, "\(host) did not answer in time (\(detail))"))
        }
        if Self.tlsCodes.contains(code.rawValue) {
            return .failure(HTTPSClientError(.tls, "TLS with \(host) failed: \(detail)"))
        }
        return .failure(HTTPSClientError(.transport, "\(host): \(detail)"))
    }

    /// libcurl's TLS failures: handshake, certificate verification, CA file, pinning.
    private static let tlsCodes: Set<UInt32> = [
        CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER,
        CURLE_SSL_CACERT_BADFILE, CURLE_SSL_ISSUER_ERROR, CURLE_SSL_PINNEDPUBKEYNOTMATCH,
        CURLE_SSL_INVALIDCERTSTATUS, CURLE_SSL_CRL_BADFILE, CURLE_SSL_SHUTDOWN_FAILED, CURLE_USE_SSL_FAILED,
        CURLE_SSL_ENGINE_NOTFOUND, CURLE_SSL_ENGINE_SETFAILED, CURLE_SSL_ENGINE_INITFAILED,
    ].reduce(into: []) { $0.insert($1.rawValue) }

    /// Frees the easy handle and the header list; the handle must be out of the multi handle.
    func close() {
        guard !closed else { return }
        closed = true
        curl_easy_cleanup(handle)
        if let headerList { curl_slist_free_all(headerList) }
        headerList = nil
    }

    fileprivate func append(body bytes: UnsafeRawBufferPointer) -> Bool {
        guard body.count + bytes.count <= limit else {
            tooLarge = true
            return false
        }
        body.append(contentsOf: bytes)
        return true
    }

    /// One header line: a status line starts a new set (an interim `100 Continue` leaves none behind).
    fileprivate func append(headerLine bytes: UnsafeRawBufferPointer) -> Bool {
        headerBytes += bytes.count
        guard headerBytes <= Self.maxHeaderBytes else {
            tooLarge = true
            return false
        }
        var line = Array(bytes)
        while let last = line.last, last == 0x0D || last == 0x0A { line.removeLast() }
        if line.starts(with: Array("HTTP/".utf8)) {
            headers = [:]
            return true
        }
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { return true }
        let name = String(decoding: line[..<colon], as: UTF8.self).lowercased()
        var value = line[(colon + 1)...]
        while let first = value.first, first == 0x20 || first == 0x09 { value.removeFirst() }
        while let last = value.last, last == 0x20 || last == 0x09 { value.removeLast() }
        headers[name] = String(decoding: value, as: UTF8.self)
        return true
    }
}

/// CURLOPT_WRITEFUNCTION: appends to the transfer's body; answering less than given stops the transfer.
private func receiveBody(
    _ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ context: UnsafeMutableRawPointer?
) -> Int {
    guard let context else { return 0 }
    let length = size * count
    guard length > 0, let data else { return 0 }
    let transfer = Unmanaged<HTTPSTransfer>.fromOpaque(context).takeUnretainedValue()
    return transfer.append(body: UnsafeRawBufferPointer(start: data, count: length)) ? length : 0
}

/// CURLOPT_HEADERFUNCTION: one complete header line per call.
private func receiveHeader(
    _ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ context: UnsafeMutableRawPointer?
) -> Int {
    guard let context else { return 0 }
    let length = size * count
    guard length > 0, let data else { return length }
    let transfer = Unmanaged<HTTPSTransfer>.fromOpaque(context).takeUnretainedValue()
    return transfer.append(headerLine: UnsafeRawBufferPointer(start: data, count: length)) ? length : 0
}
