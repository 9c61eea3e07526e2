/// File paths written in a configuration file are relative to the file's folder; one rule for every setting.
public enum ConfigFilePath {
    /// `path` as written, resolved against `base` (the configuration file's folder) unless it is absolute or
    /// `base` is empty.
    public static func resolve(_ path: String, against base: String) -> String {
        if path.hasPrefix("/") || base.isEmpty { return path }
        return base.hasSuffix("/") ? base + path : base + "/" + path
    }
}
