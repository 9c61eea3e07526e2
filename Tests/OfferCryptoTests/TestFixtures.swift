import Foundation

/// Paths to the checked-in fixtures under Tests/Fixtures.
enum TestFixtures {
    static let directory: String = {
        let file = URL(fileURLWithPath: #filePath)
        return file.deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fixtures").path
    }()

    static func path(_ relative: String) -> String { directory + "/" + relative }

    static func bytes(_ relative: String) throws -> [UInt8] {
        Array(try Data(contentsOf: URL(fileURLWithPath: path(relative))))
    }

    static func text(_ relative: String) throws -> String {
        String(decoding: try bytes(relative), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
