#!/usr/bin/env bash
# Signatures per second with a key in a PKCS#11 token (SoftHSM) against the same work with a file key, one and
# two threads; not part of `make test` or `make bench`. Makes a throwaway SoftHSM token, imports a fresh P-256
# key with `offer-signer keys import --pkcs11`, then runs offer-signer-bench-crypto (release build).
#
#   bash Scripts/bench-pkcs11.sh [ITERATIONS]     (default 20000; prints one JSON line per run)
set -euo pipefail
cd "$(dirname "$0")/.."
iterations="${1:-20000}"
module=/usr/lib/softhsm/libsofthsm2.so
[ -r "$module" ] || { echo "bench-pkcs11: $module missing (apt-get install softhsm2)" >&2; exit 1; }

swift build -c release --product offer-signer >/dev/null
swift build -c release --product offer-signer-bench-crypto >/dev/null
bin="$(swift build -c release --show-bin-path)"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir "$work/tokens"
printf 'directories.tokendir = %s/tokens\nobjectstore.backend = file\nlog.level = ERROR\n' "$work" >"$work/softhsm2.conf"
export SOFTHSM2_CONF="$work/softhsm2.conf"
pin="bench-pin-$RANDOM$RANDOM"
softhsm2-util --init-token --free --label bench --pin "$pin" --so-pin 56781234 >/dev/null
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$work/AuthKey_BENCH01.p8" 2>/dev/null
chmod 600 "$work/AuthKey_BENCH01.p8"
OFFER_SIGNER_BENCH_PKCS11_PIN="$pin" "$bin/offer-signer" keys import --pkcs11 "pkcs11:token=bench;object=BENCH01" \
    --module "$module" --pin-env OFFER_SIGNER_BENCH_PKCS11_PIN "$work/AuthKey_BENCH01.p8" >/dev/null

export OFFER_SIGNER_BENCH_PKCS11_URI="pkcs11:token=bench;object=BENCH01"
export OFFER_SIGNER_BENCH_PKCS11_MODULE="$module"
export OFFER_SIGNER_BENCH_PKCS11_PIN="$pin"
for threads in 1 2; do
    "$bin/offer-signer-bench-crypto" sign-threads "$iterations" "$threads"
    "$bin/offer-signer-bench-crypto" sign-pkcs11 "$iterations" "$threads"
done
"$bin/offer-signer-bench-crypto" sign-pkcs11 "$iterations" 2 serialized
