#!/usr/bin/env bash
# Type-checks OfferKit's StoreKit layer (Sources/OfferKit/StoreKit, compiled only where StoreKit exists) and
# the app code in the docs on Linux, against a stub of the StoreKit declarations they use
# (Tests/StoreKitStub/StoreKit.swift, Apple's signatures). Apple's platforms cannot be built here: this is how a
# typo, a wrong label or a wrong type in that code fails `make test`.
# The checked code is every ```swift block that follows a `<!-- checked: storekit -->` line in README.md or
# docs/*.md (the SwiftUI paywall of docs/app-teams.md); DOCS="FILE ..." checks those files instead.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
swiftc=(swiftc -swift-version 6 -I "$work")

# The stub, the wire types and OfferKit as modules and static libraries, in the order they import each other.
# The stub is built from StoreKit.swift alone; PlanMappingCheck.swift beside it is the runtime check below.
"${swiftc[@]}" -emit-library -static -emit-module -parse-as-library -enable-library-evolution -suppress-warnings \
    -module-name StoreKit -emit-module-path "$work/StoreKit.swiftmodule" -o "$work/libStoreKit.a" \
    "$root/Tests/StoreKitStub/StoreKit.swift"
"${swiftc[@]}" -emit-library -static -emit-module -parse-as-library -module-name OfferAPI \
    -emit-module-path "$work/OfferAPI.swiftmodule" -o "$work/libOfferAPI.a" "$root"/Sources/OfferAPI/*.swift
mapfile -t kit < <(find "$root/Sources/OfferKit" -name '*.swift' | sort)
"${swiftc[@]}" -emit-library -static -emit-module -parse-as-library -enable-testing -warnings-as-errors \
    -module-name OfferKit -emit-module-path "$work/OfferKit.swiftmodule" -o "$work/libOfferKit.a" "${kit[@]}"

# Every plan, mapped at run time onto the stub's recording options.
"${swiftc[@]}" -parse-as-library -warnings-as-errors -L "$work" -lOfferKit -lOfferAPI -lStoreKit \
    -o "$work/plan-mapping-check" "$root/Tests/StoreKitStub/PlanMappingCheck.swift"
"$work/plan-mapping-check"

# The StoreKit layer must really have been compiled in: a file that calls it must type-check.
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

# The check itself must be able to fail: a wrong label against the stub is an error.
cat > "$work/wrong-label.swift" <<'SWIFT'
import StoreKit
let wrong = Product.PurchaseOption.promotionalOffer(offerID: "offer", compactJWS: "a.b.c")
SWIFT
if "${swiftc[@]}" -typecheck "$work/wrong-label.swift" 2>/dev/null; then
    echo "check-storekit: the stub accepted a wrong label; it no longer checks anything" >&2
    exit 1
fi
echo "check-storekit: the StoreKit layer (${#kit[@]} OfferKit files) and ${#blocks[@]} docs block(s) type-check"
