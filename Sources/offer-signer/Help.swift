/// The `--help` texts. The CLI reference in docs/operations.md repeats them; keep both true together.
enum Help {
    static let main = """
        offer-signer: signs StoreKit subscription offers with App Store Connect keys, after deciding
        eligibility from Apple-signed data and rules written by marketing ops.

        Usage: offer-signer <command> [options]

        Commands:
          serve                      run the HTTP service
          reload                     make a running service reload its configuration; report whether it worked
          config check               validate a configuration file and print a summary
          keys generate              write a new P-256 key (PKCS#8 PEM, mode 0600)
          keys import                put an App Store .p8 key into a PKCS#11 token (HSM), non-extractable
          keys import-storekit       write the key of an Xcode .storekit file as a .p8 (mode 0600)
          sign promotional-offer     sign one promotional offer JWS offline
          sign introductory-offer-eligibility
                                     sign one introductory offer eligibility JWS offline
          sign legacy                sign one legacy (iOS 12.2 to 26) promotional offer signature offline
          explain                    show every rule of an offer evaluated against signed data
          ledger stats               per offer: issued, redeemed, reserved, remaining, conversion
          ledger customer KEY        one customer's recorded signatures, grants and resets
          ledger forget KEY          erase one customer's records (per-offer totals are kept)
          ledger grant               give a customer more places under an offer's perCustomer limit
          ledger reset               set an offer's counts, or one customer's, to zero
          ledger actions             every grant and reset, with its reason
          ledger purge               delete the records older than ledgerRetentionDays (totals are kept)
          ledger app-attest-keys     the App Attest keys attested, per app: counter, last use, revocation
          ledger app-attest-revoke   revoke an App Attest key: its assertions are refused from then on
          report outcomes            per offer, period and arm: exposed, signed, redeemed, converted, revenue
          report experiment          an offer's experiment: rates, intervals, sample size, verdict
          catalog export             write the apps' live offers and retention entries as JSON (for git)
          catalog import             make a JSON file of offers the apps' drafts, or publish it as new versions
          catalog check              check the catalog against App Store Connect (--app-store-connect)
          apple status               one customer's subscriptions from the App Store Server API, verified
          apple backfill             take in the notifications Apple sent in a period (after an outage)
          admin token create         make an admin API token (shown once) with a role
          admin token list           list the admin tokens (never the tokens themselves)
          admin token revoke ID      revoke an admin token and end its console sessions
          audit verify               check the admin audit log's hash chain (and a published head)

        Run `offer-signer <command> --help` for a command's options. `offer-signer --version` prints the version.
        Test certificates, Apple-like signed data and a fake App Store Server API for integration tests come from
        a separate executable, offer-signer-testkit (`offer-signer-testkit --help`), not shipped with this one.
        """

    static let catalog = """
        Usage: offer-signer catalog export --config FILE [--app BUNDLE [--version N]]
               offer-signer catalog import --config FILE --file JSON [--app BUNDLE] [--publish [--message TEXT]
                   [--force REASON]]
               offer-signer catalog check --config FILE --app-store-connect [--app BUNDLE] [--file JSON]
                   [--format text|json]

        Moves the apps' offers and retention entries to and from a JSON file in the configuration's
        format: {"apps": [{"bundleId": "...", "offers": [...], "retention": [...]}]}, so a team can keep
        its catalog in git and publish it from CI while others use the admin console.
        `export` writes the catalog served to standard output, indented: with "catalog": "storage" each
        app's live published version (--version N, with --app, an earlier one), else the configuration
        file's offers. Standard error says which version of each app it wrote.
        `import` validates the file as `config check` validates an app's offers (errors name their JSON
        path) and needs "catalog": "storage". Without --publish each app's document becomes its draft, for
        review in the console; with --publish it is published at once as the app's next version, with
        --message (default "imported from FILE"), unless it equals the live version (then nothing changes,
        so CI may run it on every commit). Every change is in the audit log, by "cli". An app with
        "appStoreConnect" is checked first against App Store Connect, read now (or the copy the service
        keeps, when Apple cannot be read): errors refuse the publish, listed, unless --force gives a reason,
        which the audit log keeps.
        Safe while the service runs: replicas serve a published version within seconds.
        `check --app-store-connect` reads each app's subscriptions and their promotional, introductory and
        win-back offers from the App Store Connect API, with the "appStoreConnect" key of the app (or the
        shared one), and lists where the catalog served (or --file's) disagrees: an offer Apple does not have
        or has for another product, a product unknown, removed or not approved, a win-back rule no customer
        Apple finds eligible can pass (errors and warnings), Apple's offers the catalog does not use (notices).
        Each finding has a code, the catalog's JSON path and Apple's identifier. Exits 1 when any finding is an
        error or App Store Connect cannot be read for an app (said on standard error; the other apps are still
        checked), so CI can run it before publishing.
        """

    static let serve = """
        Usage: offer-signer serve --config FILE [--host HOST] [--port PORT] [--admin-host HOST]
            [--admin-port PORT] [--log-level LEVEL] [--log-format FORMAT]

        Serves the HTTP API on HOST:PORT (default: the config's "listen", else 127.0.0.1:8080).
        Prints "offer-signer listening on http://HOST:PORT" once ready. SIGTERM or SIGINT stop it
        gracefully: new connections are refused, requests in flight finish, exit status 0. SIGHUP reloads
        the configuration, keys and roots (for key rotation); if anything fails to load, the previous
        configuration keeps serving and the reason is logged. "listen", "admin", "rateLimit" and "logging"
        take effect after a restart; a changed "storage" makes the reload fail (restart to use it).
        `offer-signer reload --pid PID` sends SIGHUP and reports whether that reload worked. Every API request is logged at info level in one line (request ID, route, status,
        duration, app, offer, decision, reason code) to standard error. With a ledger, the records older
        than "ledgerRetentionDays" are purged at start and every hour (one log line each time).
        With an "admin" block, the admin API and web console are served on their own listener (admin.listen,
        loopback only unless "allowRemote"), never on the public port, and a second line is printed:
        "offer-signer admin listening on http://HOST:PORT" (the console is at /admin/ there). Both listeners
        stop together. The admin listener answers only requests whose Host names it (its address, or
        "admin.publicOrigin" behind a proxy): any other gets 421. A port another process holds is named
        with the flag and key that move it.
        Key files must be regular files (a FIFO or device is refused); their text is wiped once parsed, the
        process is not dumpable and has no core limit. Run it with SWIFT_BACKTRACE=enable=no, or a crash
        report may print memory to the logs: without it one warning is logged at start.

          --config FILE        configuration file (JSON), required
          --host HOST          listen address, overrides the config
          --port PORT          listen port (0 picks a free port), overrides the config
          --admin-host HOST    the admin listener's address, overrides "admin.listen.host" (loopback
                               unless "admin.allowRemote"); needs an "admin" block
          --admin-port PORT    the admin listener's port (0 picks a free port), overrides
                               "admin.listen.port"; needs an "admin" block
          --log-level LEVEL    debug, info, warning or error; overrides "logging.level" (default info)
          --log-format FORMAT  logfmt or json; overrides "logging.format" (default logfmt)
        """

    static let admin = """
        Usage: offer-signer admin token create --config FILE --name NAME --role ROLE
               offer-signer admin token list --config FILE
               offer-signer admin token revoke ID --config FILE

        Manages the tokens of the admin API (the "admin" listener) in the configuration's storage (a SQLite
        file or a PostgreSQL database; "memory" lives inside the running service, so the command line cannot
        reach it: use the admin API there).
        `create` makes a token "osa_..." for NAME (1 to 64 printable characters, unique among the tokens in
        force) with ROLE: viewer (reads everything but secrets), editor (also changes drafts, simulates),
        publisher (also publishes and rolls back) or admin (also manages tokens). The token is printed alone on
        standard output, once: only its SHA-256 is stored. Use it as "Authorization: Bearer TOKEN", or sign in
        to the web console with it. `list` prints each token's ID, role, name, creation and revocation, never
        the token. `revoke` ends a token and its console sessions at once.
        Each change is appended to the audit log with actor "cli"; its head is logged on standard error
        ("audit appended", sequence and hash: an anchor for `offer-signer audit verify`).
        """

    static let auditVerify = """
        Usage: offer-signer audit verify --config FILE [--anchor COUNT:HASH]

        Checks the admin audit log in the configuration's storage: entries numbered 1, 2, 3... without a gap,
        each linked to the one before by its hash, and each hash recomputed from the entry, so an edited or
        deleted entry is found. --anchor is a head published earlier (the "sequence" and "hash" of a log line
        "audit appended", or offer_signer_audit_entries and offer_signer_audit_head_info from /metrics): the log
        must still hold that entry with that hash, so dropping the newest entries is found too.
        Exit status 0 when the log is valid, 1 with each problem on its own line, 2 on a usage mistake.
        """

    static let reload = """
        Usage: offer-signer reload --pid PID [--timeout SECONDS]

        Sends SIGHUP to the server with process ID PID, waits for the outcome of that reload and prints it:
        exit status 0 when the new configuration, keys and roots are served, 1 with the reason when they
        failed to load (the server keeps the previous configuration) or when no outcome came within the
        timeout, 2 on a usage mistake. For systemd's ExecReload=, so that `systemctl reload` fails visibly.

        The server writes the outcome of each load to offer-signer-PID.reload in $RUNTIME_DIRECTORY (set by
        systemd's RuntimeDirectory=), else $XDG_RUNTIME_DIR, else /tmp: run this command with the same
        environment as the server. A process without that file is not signalled.

          --pid PID          the server's process ID (systemd: $MAINPID), required
          --timeout SECONDS  how long to wait for the outcome (default 30)
        """

    static let configCheck = """
        Usage: offer-signer config check --config FILE [--at ISO8601]

        Validates the configuration strictly (unknown keys with "did you mean", types, rules, key files,
        trust roots), opens the storage as the service would (creating and migrating a SQLite ledger), and
        prints a summary: settings, apps, keys by ID, and each offer with its window and rule. Warns about
        offers whose window has ended or not begun (at --at, default now) and rules that can never pass
        under the trust settings, about apps that accept Xcode data, and about apps without "appAppleId"
        while Production data is trusted (their Production notifications from Apple would be refused).
        Every mistake is printed with its JSON path; exit status 1 if any.
        """

    static let keysGenerate = """
        Usage: offer-signer keys generate --key-id ID --out FILE

        Writes a new P-256 private key as PKCS#8 PEM to FILE with mode 0600 (never overwrites) and prints
        its public key. Useful for tests and local development; App Store keys come from App Store Connect.
        """

    static let keysImport = """
        Usage: offer-signer keys import --pkcs11 URI --module PATH (--pin-file FILE | --pin-env NAME)
              [--key-id ID] FILE.p8

        Puts the App Store key of FILE.p8 into the PKCS#11 token URI names (RFC 7512, like
        "pkcs11:token=offer-signer;object=ABC123DEF4"; object= is the new key's label, id= its CKA_ID, the
        label's bytes when left out) as a private key object that is sensitive, non-extractable and kept in the
        token, with its public key object beside it. PATH is the token's PKCS#11 library (SoftHSM:
        /usr/lib/softhsm/libsofthsm2.so). The user PIN is read from FILE (readable by its owner only) or from
        the environment variable NAME, never from the command line. The key ID comes from the file name
        (AuthKey_ID.p8, SubscriptionKey_ID.p8) unless --key-id gives it. Refuses when the token is missing, the
        PIN is wrong, or the token already holds an object with that label or ID. Opens the key back from the
        token, checks it is the same key, and prints the entry for the configuration's "keys". The service then
        needs only the token: keep an offline copy of FILE.p8 if you want one, and destroy this one.
        """

    static let keysImportStoreKit = """
        Usage: offer-signer keys import-storekit FILE.storekit --out DIR

        Reads the "subscriptionOffersKeyPair" of an Xcode StoreKit configuration file and writes its private
        key to DIR/SubscriptionKey_<KEYID>.p8 (mode 0600; DIR is created with mode 0700 when missing), then
        prints the key ID. Xcode accepts only signatures made with this key when testing offers locally.
        """

    static let sign = """
        Usage:
          offer-signer sign promotional-offer --key FILE --key-id ID --issuer-id UUID --bundle-id ID
              --product-id ID --offer-id ID [--transaction-id ID]
          offer-signer sign introductory-offer-eligibility --key FILE --key-id ID --issuer-id UUID
              --bundle-id ID --product-id ID --transaction-id ID --allow true|false
          offer-signer sign legacy --key FILE --key-id ID --bundle-id ID --product-id ID --offer-id ID
              [--app-account-token UUID]

        Signs one offer offline and prints the same JSON the HTTP API returns, so ops can check a key.
        Nonce (lowercase UUID v7) and time are fresh each run.
        """

    static let explain = """
        Usage:
          offer-signer explain --config FILE --request FILE|- [--offer ID] [--at ISO8601]
          offer-signer explain --config FILE [--offer ID] [--bundle-id ID] [--product-id ID]
              [--signed-transaction FILE] [--signed-renewal-info FILE] [--signed-app-transaction FILE]
              [--at ISO8601]
          offer-signer explain --config FILE --retention FILE|- [--bundle-id ID] [--at ISO8601]

        Decides a request exactly as the service would (the same code path, with the ledger of the
        configured storage) and prints the full decision trace: each rule, the observed fact, the expected
        value, PASS or FAIL, and what the client would be answered. --request takes the app's request body
        as it is (a file, or - for standard input); the endpoint follows from it (an offerId of a
        promotional or intro offer, a productId alone for intro eligibility, else the eligibility listing;
        --offer picks a win-back offer of a listing). Without --request the request is built from the
        options and the files holding the JWS text. The ledger line says whether the limits could be read.
        --at evaluates at another time (default now). Exit status 0 when eligible (or a listing), 3 when not
        eligible, 1 when the service would answer an error (such as untrusted signed data), 2 on a usage
        mistake (such as an offer ID several apps share, without --bundle-id).
        --retention takes a Retention Messaging request as Apple posts it to POST /v1/apple/retention/{bundleId}
        (the body {"signedPayload": "..."}, or the JWS alone) for app --bundle-id (default: the only app), and
        prints the request, the customer's facts (the ledger's server-known state; explain never calls the
        App Store Server API), every retention entry considered with its rule and offer traces, and the answer.
        Exit status 0 for an answer, 3 when no entry applies (404), 1 when the request is refused.
        """

    static let report = """
        Usage: offer-signer report outcomes --offer ID [--app BUNDLE] [--sandbox] [--json | --csv] --config FILE
               offer-signer report experiment --offer ID [--experiment ID] [--app BUNDLE] [--sandbox]
                   [--json | --csv] --config FILE

        Reads what became of the customers an offer was decided for, from the configuration's ledger (a
        SQLite file or a PostgreSQL database; safe while the service runs). Counts only: no customer is named.
        `outcomes` prints, per period (the experiment running when they were exposed, or none) and arm
        (treatment: shown the offer; holdout: kept from it by a rollout alone): the customers exposed, those
        issued a signature, those who redeemed it, those who bought or renewed after the exposure (converted;
        without the offer: every holdout conversion), those who then renewed at full price (retained) or whose
        subscription ended first (lapsed), and the revenue after the exposures, per currency.
        `experiment` reports the offer's experiment (--experiment: its ID, default the offer's current one):
        each arm's rate on the experiment's metric with its 95% Wilson interval, the difference of the rates
        with Newcombe's 95% interval, the relative lift, the exposures per arm the minimum detectable effect
        needs at 80% power and how many are still to come, the revenue per exposure in each currency, and the
        verdict: "collecting" until both arms have the planned exposures, then "no difference detected yet",
        "treatment better" or "holdout better".
        --sandbox reads the app's Sandbox counts; --json and --csv write the admin API's JSON or CSV instead
        of the table.
        """

    static let ledger = """
        Usage: offer-signer ledger stats [--daily] --config FILE
               offer-signer ledger customer KEY --config FILE
               offer-signer ledger forget KEY --config FILE
               offer-signer ledger grant --offer ID --customer KEY --count N --reason TEXT [--app BUNDLE]
                   [--sandbox] --config FILE
               offer-signer ledger reset --offer ID [--customer KEY] --reason TEXT [--app BUNDLE] [--sandbox]
                   --config FILE
               offer-signer ledger actions --config FILE
               offer-signer ledger purge --config FILE
               offer-signer ledger app-attest-keys [--app BUNDLE] [--limit N] --config FILE
               offer-signer ledger app-attest-revoke --key-id ID [--app BUNDLE] --config FILE

        Reads and changes the ledger of the configuration's `storage` (a SQLite file or a PostgreSQL
        database; safe while the service runs).
        `stats` prints, per offer (Production, then Sandbox's offers with records): signatures issued and
        redemptions since the ledger began, reserved (signatures neither redeemed nor expired now: the places
        they hold), what remains of a total (the total less reserved and redeemed since the last reset), and
        the conversion (redeemed over issued). --daily adds what the purge kept of the records it deleted:
        per UTC day and offer, signatures issued and how many of them were redeemed.
        `customer` prints one customer's signatures, oldest first (time, app, offer, product, form, key,
        nonce, request ID), then the grants and resets about them. `forget` erases one customer's records,
        for a data deletion request; the per-offer totals stay, anonymous, so budgets keep counting them.
        `grant` gives the customer N (1 to 1000000) more places under the offer's perCustomer limit.
        `reset` sets counts to zero from now on: with --customer, that customer's places for the offer
        (their grants stay); without, the offer's budget and every customer's count for it.
        Both need a --reason (at most 500 characters), recorded with the action; `actions` lists them all.
        --app names the app (needed when the configuration has several); --sandbox changes the app's
        Sandbox counts (an app with "sandbox": "separate").
        `purge` deletes the signature records older than "ledgerRetentionDays" (default 400) into
        per-offer daily totals, as the service does at start and every hour; redemptions and the per-offer
        totals stay. KEY is the customer key the service uses: the verified originalTransactionId, else the
        appTransactionId.
        `app-attest-keys` lists the App Attest keys attested (apps[].appAttest), the newest N (default 100)
        first: app, key ID, environment, when attested, the last assertion's counter and time, and whether
        revoked.
        `app-attest-revoke` revokes key ID (as listed): the requests it asserts are refused, 401
        attestation_invalid with reason revoked_key (counted only, in report mode); the app's copy makes a new key.
        """

    static let apple = """
        Usage: offer-signer apple status --config FILE [--app BUNDLE] --transaction ID
               offer-signer apple backfill --config FILE [--app BUNDLE] --since ISO8601 [--until ISO8601]
                   [--environment Production|Sandbox]

        Looks up the subscriptions of the customer that transaction ID belongs to (any transaction ID or
        original transaction ID) with the App Store Server API, as the app's "appStoreServerAPI" configures it:
        Production first, then Sandbox when Production does not know the transaction and the app looks Sandbox up.
        Verifies the answer's signed data like any other (the configuration's trust roots and environments) and
        prints the facts per subscription: status, product, dates, offer, renewal. Never prints the
        authentication JWT or the signed data. --app may be left out when one app has "appStoreServerAPI". Exit
        status 0 when the answer verified, 1 on any failure (the reason printed: unauthorized, not_found,
        rate_limited, timeout, ...), 2 on a usage mistake.

        `backfill` reads the notifications Apple sent (or tried to) between --since and --until (default: now)
        with Get Notification History, for --app (default: every app with "appStoreServerAPI") in --environment
        (default: each one the app looks up), and takes each in exactly as POST /v1/apple/notifications does:
        verified, recorded once by its notificationUUID with what it teaches, into the configuration's ledger
        (sqlite: or postgresql:, shared with a running service). Run it after an outage. Prints, per app and
        environment, the notifications read and how many were recorded, duplicate (taken before), ignored and
        refused (by reason). Running it again is harmless: what was taken is a duplicate. Exit status 0 when every
        walk ended, 1 when Apple or the ledger failed (what came before was taken in), 2 on a usage mistake.
        """
}
