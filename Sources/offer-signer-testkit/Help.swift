/// The `--help` texts. The CLI reference in docs/operations.md repeats them; keep both true together.
enum Help {
    static let main = """
        offer-signer-testkit: test certificates, Apple-like signed data and a fake App Store Server API, for
        integration tests of offer-signer. A separate executable: the shipped offer-signer carries none of it.

        Usage: offer-signer-testkit <command> [options]

        Commands:
          ca                         write a test CA (root, intermediate, leaf with Apple's marker extensions)
          sign                       sign a transaction, renewal info, app transaction, notification or
                                     retention request as Apple's server would, with the test CA
          apple-api                  serve a fake App Store Server API
          app-store-connect          serve a fake App Store Connect API (apps, subscriptions, offers)
          app-attest                 a test App Attestation CA, and a device's attestations and assertions
          simulate-campaign          play a campaign with a known true effect against a running service

        Run `offer-signer-testkit <command> --help` for a command's options. `offer-signer-testkit --version`
        prints the version.
        """

    static let appAttest = """
        Usage: offer-signer-testkit app-attest ca --out DIR
               offer-signer-testkit app-attest key --key FILE
               offer-signer-testkit app-attest attest --ca DIR --key FILE --team-id T --bundle-id B
                   (--challenge C | --client-data-hash HEX) [--environment production|development]
                   [--flaw nonce|app|counter|environment|receipt]
               offer-signer-testkit app-attest assert --key FILE --team-id T --bundle-id B
                   (--challenge C --body FILE | --client-data-hash HEX) [--counter N]

        Does what Apple's App Attest service and a device do, with a private CA, so tests can attest keys and
        assert requests (apps[].appAttest) without a device.

          ca       writes the CA to DIR: root.cer (list it in trust.appAttestRootCertificates; tests only),
                   receipt-root.cer (add it to trust.rootCertificates), and the keys that sign.
          key      makes the device key FILE (PKCS#8, mode 0600) unless it exists and prints its key ID, as
                   DCAppAttestService.generateKey does.
          attest   makes the device key FILE unless it exists, and prints the JSON body of POST
                   /v1/app-attest/keys: the key's attestation over challenge C (from POST
                   /v1/app-attest/challenge). --flaw breaks one check on purpose: the nonce, the App ID, the
                   counter (1), the environment's AAGUID, or the receipt's type.
          assert   prints the request's three headers (X-App-Attest-Key-Id, X-App-Attest-Challenge,
                   X-App-Attest-Assertion) as a JSON object: an assertion over a fresh challenge C and the exact
                   bytes of the body file. The counter is N, or one more than the last one used with FILE (kept
                   in FILE.counter).
        With --client-data-hash (the SHA-256 a client made itself, as it passes to attestKey or
        generateAssertion) in place of --challenge, attest and assert sign that hash as given, for a client
        under test that does its own hashing (OfferKit's AppAttest over a provider that runs these commands);
        assert then prints no X-App-Attest-Challenge.
        """

    static let simulateCampaign = """
        Usage: offer-signer-testkit simulate-campaign --url URL --ca DIR --bundle-id B --offer ID
            [--product P] [--win-back] [--customers N] [--seed S] [--baseline RATE] [--lift POINTS]
            [--retention RATE] [--environment Production|Sandbox] [--app-apple-id N] [--price MILLIUNITS]
            [--offer-price MILLIUNITS] [--currency C] [--concurrency N]

        Plays a campaign whose true effect is known against the running service at URL (its public listener),
        so the service's outcome and experiment reports can be checked against the truth. A population of N
        (default 1000) lapsed subscribers, drawn from --seed (default 1; the same seed draws the same campaign;
        their keys hold the seed, so campaigns of different seeds never share a customer), with transactions
        and renewal info signed by the test CA in DIR, asks for offer ID: its promotional offer signature on
        product P, or with --win-back the eligibility listing for product P (their renewal info naming the win-back
        offer; the listing exposes them to every offer it decides on P).
        The answer puts each in an arm: a signature or a listing is the treatment; a refusal by
        rollout_excluded alone, or an offer not listed, the holdout; anything else is counted as an error.
        Then each customer converts with the arm's true rate (--baseline, default 0.2; the treatment's plus
        --lift percentage points, default 0): the treatment buys with the offer (--offer-price), the holdout
        at full price (--price), each sent as Apple's SUBSCRIBED notification to the service; a converted
        customer then renews at full price with probability --retention (default 0.5; DID_RENEW) or lapses
        (EXPIRED). Production notifications carry --app-apple-id (default 1234567890). Prints, as JSON, what
        it did per arm (exposures, converted, retained, lapsed, revenue in --currency milliunits, default
        EUR) and how many answers were not the ones expected ("errors").
        """

    static let ca = """
        Usage: offer-signer-testkit ca --out DIR [--valid-from ISO8601] [--valid-until ISO8601]

        Writes a test root (root.cer, DER), an intermediate and a leaf carrying Apple's marker
        extensions, and the leaf's key, to DIR. Trust root.cer in a test configuration.
        """

    static let sign = """
        Usage:
          offer-signer-testkit sign transaction|renewal-info|app-transaction --ca DIR --payload FILE|- [--xcode]
          offer-signer-testkit sign notification --ca DIR --type TYPE [--subtype S] [--environment E]
              [--app-apple-id N] [--bundle-id B] [--uuid U] [--transaction FILE] [--renewal-info FILE]
          offer-signer-testkit sign notification --ca DIR --payload FILE|-
          offer-signer-testkit sign retention-request --ca DIR --original-transaction-id ID --product-id P
              [--app-apple-id N] [--locale L] [--environment E] [--request-id UUID] [--count N]
          offer-signer-testkit sign retention-request --ca DIR --payload FILE|-

        Signs a JSON payload (Apple's field names; signedDate is added when missing) as an Apple-like
        JWS with the test chain in x5c, and prints the JWS. --xcode signs with the self-signed xcode.cer instead,
        as Xcode's StoreKit testing does (accepted only by apps with "localTesting": true).
        Date fields take Unix milliseconds, "now", a time from now ("-40d", "+2h", "-30m", "+10s": days, hours,
        minutes, seconds) or an ISO 8601 date-time. Unknown field names for the kind (with the closest real
        name), other text in a date field and values the service would reject are warned about on standard
        error; the JWS is still printed, with such values as written.
        `sign notification` prints an App Store Server Notification V2 `signedPayload`, as Apple's server posts
        it to POST /v1/apple/notifications/{bundleId}: notificationType TYPE (any text, unknown ones too),
        subtype S, data.environment E (default: the transaction's, else Sandbox), data.appAppleId N (Apple
        sends it in Production only), data.bundleId B (default: the transaction's), notificationUUID U
        (default: a new UUID; send the same one twice to test a retry), and the transaction and renewal info
        payloads in FILE (templates as above, bundleId and environment filled in from the notification when
        missing) signed inside it by the same chain. --payload signs a whole decoded notification as written
        (its nested signedTransactionInfo and signedRenewalInfo already JWS).
        `sign retention-request` prints a Retention Messaging request's `signedPayload`, as Apple's server posts
        it to POST /v1/apple/retention/{bundleId}: originalTransactionId ID, productId P, appAppleId N (default
        1234567890; required for Production, where the service checks it), userLocale L (default en-US),
        environment E (default Sandbox), requestIdentifier UUID (default: a new one; send the same one twice to
        test a retry) and signedDate now. --count prints N requests, one per line, each with its own
        requestIdentifier (the first one --request-id when given), for load tests. --payload signs a whole
        decoded request as written (to test one with a field missing).
        """

    static let appleAPI = """
        Usage: offer-signer-testkit apple-api --ca DIR --state FILE --port PORT [--host HOST] [--key-id ID]
              [--public-key FILE] [--token-file FILE]

        Serves a fake App Store Server API on HOST:PORT (default host 127.0.0.1; port 0 picks one)
        until SIGTERM or SIGINT, and prints "offer-signer-testkit apple-api listening on http://HOST:PORT" once
        ready: Get All Subscription Statuses and Get Notification History, Production at /inApps/... and Sandbox
        at /sandbox/inApps/..., answered from the state FILE (subscriptions, notifications and fault switches per
        environment; docs/apple.md shows its shape), read again on every request, with the signed data signed by the
        test CA in DIR. Point an app's "appStoreServerAPI": {"baseURL": "http://HOST:PORT"} at it. Each call's
        bearer JWT is checked as Apple checks it (alg, typ, kid, aud, bid, iat if present, exp; the signature with
        --public-key, a PEM public key or the app's .p8) and refused with 401 otherwise, the reason on standard
        error. --key-id requires that kid; --token-file writes the last token seen to FILE (mode 0600).
        GET /__fake/requests counts the calls per environment and endpoint.
        """

    static let appStoreConnect = """
        Usage: offer-signer-testkit app-store-connect --state FILE --port PORT [--host HOST] [--public-key PEM]
                   [--token-file FILE]

        Serves a fake App Store Connect API on HOST (default 127.0.0.1) and PORT (0 picks one) until SIGTERM or
        SIGINT, and prints "offer-signer-testkit app-store-connect listening on http://HOST:PORT" once it listens.
        Point "appStoreConnect": {"baseURL"} at it. FILE is JSON, read again on every request: {"issuerId",
        "keyId", "pageSize", "fault": {"status": 401|403|429|500, "retryAfter": "SECONDS"}, "apps": [{"id",
        "bundleId", "groups": [{"id", "referenceName", "subscriptions": [{"id", "productId", "name", "state",
        "promotionalOffers": [{"id", "offerCode", "name", "duration", "offerMode", "numberOfPeriods"}],
        "introductoryOffers": [{"id", ...}], "winBackOffers": [{"id", "offerId", "referenceName", ...}]}]}]}]}.
        Lists are served pageSize at a time with links.next. Every call needs a team key's JWT as Apple checks
        it (kid and iss those of FILE, aud appstoreconnect-v1, iat, exp at most 20 minutes after iat, no bid;
        signed by --public-key's key when given), else 401 NOT_AUTHORIZED; --token-file keeps the last token.
        GET /__fake/requests answers {"calls": N}.
        """
}
