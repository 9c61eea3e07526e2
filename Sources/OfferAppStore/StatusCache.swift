/// The statuses of recent lookups, by transaction ID, for `cacheSeconds`; bounded, the oldest entry going first
/// when it is full. Pure: the time is passed in.
struct StatusCache {
    private struct Entry {
        let response: StatusResponse
        let expires: Int64
    }

    let capacity: Int
    private var entries: [String: Entry] = [:]
    /// Keys in insertion order, from `head` on; a key may repeat (an updated entry), its entry goes once.
    private var order: [String] = []
    private var head = 0

    init(capacity: Int) { self.capacity = max(1, capacity) }

    var count: Int { entries.count }

    /// The answer kept for `key`, unless it expired at `now`.
    mutating func lookup(_ key: String, now: Int64) -> StatusResponse? {
        guard let entry = entries[key] else { return nil }
        guard now < entry.expires else {
            entries[key] = nil
            return nil
        }
        return entry.response
    }

    /// Keeps `response` under each of `keys` until `expires`.
    mutating func insert(_ response: StatusResponse, keys: [String], expires: Int64) {
        for key in keys {
            if entries.updateValue(Entry(response: response, expires: expires), forKey: key) == nil {
                order.append(key)
            }
        }
        while entries.count > capacity, head < order.count {
            entries[order[head]] = nil
            head += 1
        }
        if head > 1024 && head * 2 > order.count {
            order.removeFirst(head)
            head = 0
        }
    }
}
