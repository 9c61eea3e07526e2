import OfferAPI
import OfferCore
import Synchronization

extension AppStoreServerAPI {
    /// One page of Get Notification History in `environment` (Production unless told): the notifications the App
    /// Store tried to send between the request's dates, up to 20, with the token of the next page. Pass the same
    /// request with `paginationToken` for the next. The signed payloads are not verified.
    public func notificationHistory(
        _ request: NotificationHistoryRequest, paginationToken: String? = nil,
        environment: AppStoreEnvironment = .production, timeoutMilliseconds: Int? = nil,
        completion: @escaping Completion<NotificationHistoryResponse>
    ) {
        let started = ContinuousClock.now
        let finish: Completion<NotificationHistoryResponse> = { [self] result in
            reportLookup(.notificationHistory, result: Self.label(result), started: started)
            completion(result)
        }
        guard settings.environments.contains(environment) else {
            finish(
                .failure(
                    AppStoreServerAPIError(
                        .invalidRequest, "\(bundleId) does not look up \(environment) (appStoreServerAPI.environments)",
                        environment: environment)))
            return
        }
        var query = ""
        if let paginationToken { query = "?paginationToken=" + Self.percentEncoded(paginationToken) }
        let budget = min(timeoutMilliseconds ?? settings.timeoutMilliseconds, settings.timeoutMilliseconds)
        call(
            .notificationHistory, environment: environment, method: "POST", path: "/inApps/v1/notifications/history",
            query: query, body: request.jsonBytes, deadline: started + .milliseconds(budget)
        ) { result in
            switch result {
            case .success(let json):
                do throws(PayloadError) {
                    finish(.success(try NotificationHistoryResponse(json: json)))
                } catch {
                    finish(.failure(Self.invalid(environment, "NotificationHistoryResponse: \(error.message)")))
                }
            case .failure(let error):
                finish(.failure(error))
            }
        }
    }

    /// Every page of the history for `request`, in order: `page` gets each one as it arrives and returns whether
    /// to go on; `completion` gets the number of pages read, or the error that stopped the walk (the pages before
    /// it were handed to `page` already). Stops after `maxPages`, and when Apple says there is more but gives no
    /// new token.
    public func walkNotificationHistory(
        _ request: NotificationHistoryRequest, environment: AppStoreEnvironment = .production,
        maxPages: Int = 10_000, page: @escaping @Sendable (NotificationHistoryResponse) -> Bool,
        completion: @escaping Completion<Int>
    ) {
        walk(request, token: nil, environment: environment, read: 0, maxPages: maxPages, page: page, completion)
    }

    private func walk(
        _ request: NotificationHistoryRequest, token: String?, environment: AppStoreEnvironment, read: Int,
        maxPages: Int, page: @escaping @Sendable (NotificationHistoryResponse) -> Bool,
        _ completion: @escaping Completion<Int>
    ) {
        notificationHistory(request, paginationToken: token, environment: environment) { [self] result in
            switch result {
            case .failure(let error):
                completion(.failure(error))
            case .success(let response):
                let pages = read + 1
                guard page(response), response.hasMore, pages < maxPages else {
                    completion(.success(pages))
                    return
                }
                guard let next = response.paginationToken, !next.isEmpty, next != token else {
                    completion(
                        .failure(
                            Self.invalid(environment, "hasMore is true but the page carries no new paginationToken")))
                    return
                }
                walk(
                    request, token: next, environment: environment, read: pages, maxPages: maxPages, page: page,
                    completion)
            }
        }
    }

    /// `text` with every byte but RFC 3986's unreserved characters percent-encoded, for a query value.
    static func percentEncoded(_ text: String) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        for byte in text.utf8 {
            if Identifiers.isAlphanumeric(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")
                || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "~")
            {
                out.append(byte)
            } else {
                out += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
