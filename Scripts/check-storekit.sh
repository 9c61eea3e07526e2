#!/usr/bin/env bash
# Type-checks OfferKit's Apple-only layers and the app code in the docs on Linux, against stubs of the Apple
# declarations they use (Apple's signatures): the StoreKit layer (Sources/OfferKit/StoreKit) against
# Tests/StoreKitStub/StoreKit.swift, the App Attest provider (Sources/OfferKit/DeviceCheck) against
# Tests/StoreKitStub/DeviceCheck.swift, and OfferKit's CryptoKit SHA-256 against Tests/StoreKitStub/CryptoKit.swift.
# Each is compiled only where its framework exists. Apple's platforms cannot be built here: this is how a typo, a
# wrong label or a wrong type in that code fails `make test`.
# The checked code is every ```swift block that follows a `<!-- checked: storekit -->` line in README.md or
# docs/*.md (the SwiftUI paywall of docs/app-teams.md); DOCS="FILE ..." checks those files instead.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
swiftc=(swiftc -swift-version 6 -I "$work")

# The stubs, the wire types and OfferKit as modules and static libraries, in the order they import each other.
# Each stub is built from its own file alone (library evolution, as Apple's frameworks are: their enums are not
# frozen); PlanMappingCheck.swift and AppAttestErrorCheck.swift beside them are the runtime checks below.
for framework in StoreKit DeviceCheck CryptoKit; do
    "${swiftc[@]}" -emit-library -static -emit-module -parse-as-library -enable-library-evolution -suppress-warnings \
        -module-name "$framework" -emit-module-path "$work/$framework.swiftmodule" -o "$work/lib$framework.a" \
        "$root/Tests/StoreKitStub/$framework.swift"
done
stubs=(-lStoreKit -lDeviceCheck -lCryptoKit)
"${swiftc[@]}" -emit-library -static -emit-module -parse-as-library -module-name OfferAPI \
    -emit-module-path "$work/OfferAPI.swiftmodule" -o "$work/libOfferAPI.a" "$root"/Sources/OfferAPI/*.swift
mapfile -t kit < <(find "$root/Sources/OfferKit" -name '*.swift' | sort)
"${swiftc[@]}" -emit-library -static -emit-module -parse-as-library -enable-testing -warnings-as-errors \
    -module-name OfferKit -emit-module-path "$work/OfferKit.swiftmodule" -o "$work/libOfferKit.a" "${kit[@]}"

# Every plan, mapped at run time onto the stub's recording options.
"${swiftc[@]}" -parse-as-library -warnings-as-errors -L "$work" -lOfferKit -lOfferAPI "${stubs[@]}" \
    -o "$work/plan-mapping-check" "$root/Tests/StoreKitStub/PlanMappingCheck.swift"
"$work/plan-mapping-check"

# Every DCError, sorted at run time into what OfferKit's App Attest acts on.
"${swiftc[@]}" -parse-as-library -warnings-as-errors -L "$work" -lOfferKit -lOfferAPI "${stubs[@]}" \
    -o "$work/app-attest-error-check" "$root/Tests/StoreKitStub/AppAttestErrorCheck.swift"
"$work/app-attest-error-check"

# The StoreKit layer and the App Attest provider must really have been compiled in: a file that calls them must
# type-check.
cat > "$work/uses-glue.swift" <<'SWIFT'
import Foundation
import OfferKit
import StoreKit

func glueIsThere(_ plan: PurchasePlan, _ product: Product, _ client: OfferClient, _ offer: Product.SubscriptionOffer)
    async throws -> Set<Product.PurchaseOption>
{
    _ = try await client.compactJWS(product: product, offer: offer)
    _ = try await client.introductoryOfferCompactJWS(product: product)
    _ = await SignedCustomerData.current(for: product)
    return try plan.purchaseOptions(for: product)
}

func appAttestIsThere(_ url: URL) async throws -> Data {
    let provider: any AppAttestProvider = DeviceCheckAppAttestProvider()
    let client = OfferClient(
        baseURL: url, bundleId: "com.example.app",
        appAttest: AppAttest(provider: provider, keyStore: UserDefaultsAppAttestKeyStore(), policy: .required))
    _ = client.appAttest?.policy
    guard provider.isSupported else { return Data() }
    let keyId = try await provider.generateKey()
    _ = try await provider.attestKey(keyId, clientDataHash: Data(repeating: 0, count: 32))
    return try await provider.generateAssertion(keyId, clientDataHash: Data(repeating: 0, count: 32))
}
SWIFT
"${swiftc[@]}" -typecheck -parse-as-library "$work/uses-glue.swift"

# The app code in the docs: one awk run reads every file, so blocks are numbered across them. README (the
# variable this script read before the docs moved) still names a single file to check.
if [ -n "${DOCS:-${README:-}}" ]; then
    read -r -a docs <<< "${DOCS:-${README:-}}"
else
    shopt -s nullglob
    docs=("$root/README.md" "$root"/docs/*.md)
    shopt -u nullglob
fi
awk -v out="$work/doc" '
    FNR == 1 { armed = 0; inside = 0 }
    /<!-- checked: storekit -->/ { armed = 1; next }
    armed && /^```swift/ { inside = 1; n++; file = sprintf("%s-%02d.swift", out, n); next }
    inside && /^```/ { inside = 0; armed = 0; close(file); next }
    inside { print > file }
' "${docs[@]}"
blocks=("$work"/doc-*.swift)
if [ ! -e "${blocks[0]}" ]; then
    echo "check-storekit: no <!-- checked: storekit --> swift block in ${docs[*]}" >&2
    exit 1
fi
"${swiftc[@]}" -typecheck -parse-as-library -warnings-as-errors "${blocks[@]}"

# The check itself must be able to fail: a wrong label against each stub is an error.
cat > "$work/wrong-label.swift" <<'SWIFT'
import StoreKit
let wrong = Product.PurchaseOption.promotionalOffer(offerID: "offer", compactJWS: "a.b.c")
SWIFT
cat > "$work/wrong-label-devicecheck.swift" <<'SWIFT'
import DeviceCheck
import Foundation
func wrong() async throws -> Data { try await DCAppAttestService.shared.attestKey(keyID: "k", clientDataHash: Data()) }
SWIFT
for wrong in "$work/wrong-label.swift" "$work/wrong-label-devicecheck.swift"; do
    if "${swiftc[@]}" -typecheck "$wrong" 2>/dev/null; then
        echo "check-storekit: a stub accepted a wrong label ($(basename "$wrong")); it no longer checks anything" >&2
        exit 1
    fi
done
echo "check-storekit: the StoreKit layer and the App Attest provider (${#kit[@]} OfferKit files) and" \
    "${#blocks[@]} docs block(s) type-check"
