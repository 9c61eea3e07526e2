import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Open connections per client address across every daemon of a server, admitted up to a limit per address.
///
/// libmicrohttpd's own `MHD_OPTION_PER_IP_CONNECTION_LIMIT` counts per daemon, and the server runs one daemon per
/// worker: with N workers one address could hold N times the limit. This count is shared by the accept policy of
/// every daemon instead, and given back by the close notice, so the limit holds for the process.
///
/// An IPv4 address counts as itself (an IPv4-mapped IPv6 address too); an IPv6 address by its /64 prefix, the
/// block one subscriber gets, since a client with one IPv6 address usually has 2^64 more. Entries are removed
/// when their count drops to zero, so the table never holds more than the open connections.
final class ConnectionsPerAddress: Sendable {
    /// An address as counted: its family and its IPv4 address or IPv6 /64 prefix.
    struct Peer: Hashable, Sendable {
        let family: UInt8
        let bits: UInt64

        /// The peer of an IPv4 or IPv6 socket address; `nil` for other families (never counted).
        init?(_ address: UnsafePointer<sockaddr>) {
            switch Int32(address.pointee.sa_family) {
            case AF_INET:
                let raw = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr.s_addr }
                family = 4
                bits = UInt64(UInt32(bigEndian: raw))
            case AF_INET6:
                let bytes = address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { pointer in
                    withUnsafeBytes(of: pointer.pointee.sin6_addr) { Array($0) }
                }
                if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xff && bytes[11] == 0xff {
                    family = 4
                    bits = bytes[12..<16].reduce(0) { $0 << 8 | UInt64($1) }
                } else {
                    family = 6
                    bits = bytes[0..<8].reduce(0) { $0 << 8 | UInt64($1) }
                }
            default:
                return nil
            }
        }

        /// The peer of an address written as text (`HTTPRequest.clientAddress`); `nil` when it is neither IPv4 nor
        /// IPv6.
        init?(text: String) {
            var storage = sockaddr_storage()
            let parsed = withUnsafeMutablePointer(to: &storage) { pointer -> Bool in
                if inet_pton(AF_INET, text, UnsafeMutableRawPointer(pointer) + 4) == 1 {
                    pointer.pointee.ss_family = sa_family_t(AF_INET)
                    return true
                }
                if inet_pton(AF_INET6, text, UnsafeMutableRawPointer(pointer) + 8) == 1 {
                    pointer.pointee.ss_family = sa_family_t(AF_INET6)
                    return true
                }
                return false
            }
            guard parsed else { return nil }
            let peer = withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Peer($0) }
            }
            guard let peer else { return nil }
            self = peer
        }

        init(family: UInt8, bits: UInt64) {
            self.family = family
            self.bits = bits
        }
    }

    let limit: Int
    private let counts = Mutex([Peer: Int]())

    /// `limit` connections per address at most.
    init(limit: Int) { self.limit = limit }

    /// Takes a place for `peer` if it has fewer than `limit`.
    func admit(_ peer: Peer) -> Bool {
        counts.withLock { counts in
            let open = counts[peer, default: 0]
            guard open < limit else { return false }
            counts[peer] = open + 1
            return true
        }
    }

    /// Gives back a place `admit` took.
    func release(_ peer: Peer) {
        counts.withLock { counts in
            guard let open = counts[peer] else { return }
            counts[peer] = open > 1 ? open - 1 : nil
        }
    }

    /// Connections open from `peer` (for tests).
    func open(_ peer: Peer) -> Int { counts.withLock { $0[peer, default: 0] } }

    /// Addresses with a connection open (for tests).
    var addresses: Int { counts.withLock { $0.count } }
}
