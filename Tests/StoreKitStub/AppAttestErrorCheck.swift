// Runs OfferKit's App Attest provider's sorting of Apple's errors against the stub's `DCError`, and checks that each
// becomes the `AppAttestProviderError` code OfferKit acts on (a new key, a temporary failure, an unsupported
// device). Built and run by `Scripts/check-storekit.sh` (OfferKit compiled with testing enabled).
import DeviceCheck
import Foundation

@testable import OfferKit

@main
struct AppAttestErrorCheck {
    static func main() {
        var failures = 0
        let expected: [(DCError.Code, AppAttestProviderError.Code)] = [
            (.invalidKey, .invalidKey), (.invalidInput, .invalidKey), (.serverUnavailable, .serverUnavailable),
            (.featureUnsupported, .unsupported), (.unknownSystemFailure, .failed),
        ]
        for (apple, code) in expected {
            let sorted = DeviceCheckAppAttestProvider.sorted(DCError(apple)) as? AppAttestProviderError
            if sorted?.code != code {
                failures += 1
                print("AppAttestErrorCheck: FAILED: DCError \(apple.rawValue) sorted as \(String(describing: sorted))")
            }
        }
        let other = DeviceCheckAppAttestProvider.sorted(URLError(.timedOut)) as? AppAttestProviderError
        if other?.code != .failed {
            failures += 1
            print("AppAttestErrorCheck: FAILED: an error of another domain sorted as \(String(describing: other))")
        }
        if !(DeviceCheckAppAttestProvider.sorted(CancellationError()) is CancellationError) {
            failures += 1
            print("AppAttestErrorCheck: FAILED: cancellation is not kept as cancellation")
        }
        if failures > 0 { exit(1) }
        print("AppAttestErrorCheck: every DCError sorts into the code OfferKit acts on")
    }
}
