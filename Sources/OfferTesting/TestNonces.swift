import OfferCrypto
import Synchronization

/// The service's nonces made predictable: the same one every time (`fixed`), or lowercase UUID v4 values
/// counting up from 1 (`sequence`: `00000000-0000-4000-8000-000000000001`, then `...002`), so a test knows the
/// nonce a signature must carry before it asks. Remembers every nonce it gave out.
public final class TestNonces: Sendable {
    private enum Mode {
        case fixed(String)
        case sequence
    }

    private struct State {
        var counter: UInt64
        var issued: [String] = []
    }

    private let mode: Mode
    private let state: Mutex<State>

    private init(mode: Mode, start: UInt64) {
        self.mode = mode
        state = Mutex(State(counter: start))
    }

    /// `nonce` for every signature (a lowercase UUID, as the service would make).
    public static func fixed(_ nonce: String) -> TestNonces { TestNonces(mode: .fixed(nonce), start: 0) }

    /// `sequence(from: n)` gives `uuid(n)`, then `uuid(n + 1)`, ...
    public static func sequence(from start: UInt64 = 1) -> TestNonces { TestNonces(mode: .sequence, start: start) }

    /// The `n`th nonce of a sequence: a lowercase UUID v4 whose last 12 hex digits count `n` (modulo 2^48).
    public static func uuid(_ n: UInt64) -> String {
        var raw = [UInt8](repeating: 0, count: 16)
        raw[6] = 0x40  // version 4
        raw[8] = 0x80  // RFC 4122 variant
        for index in 0..<6 { raw[15 - index] = UInt8(truncatingIfNeeded: n >> (8 * UInt64(index))) }
        return SecureRandom.formatUUID(raw)
    }

    /// The next nonce; this is the function `OfferService` calls for each signature.
    @Sendable public func next() -> String {
        state.withLock { state in
            let nonce: String
            switch mode {
            case .fixed(let text): nonce = text
            case .sequence:
                nonce = Self.uuid(state.counter)
                state.counter &+= 1
            }
            state.issued.append(nonce)
            return nonce
        }
    }

    /// What `next` will give without taking it.
    public var upcoming: String {
        switch mode {
        case .fixed(let text): return text
        case .sequence: return Self.uuid(state.withLock { $0.counter })
        }
    }

    /// Every nonce given out so far, in order.
    public var issued: [String] { state.withLock { $0.issued } }

    /// The latest nonce given out, if any.
    public var last: String? { issued.last }
}
