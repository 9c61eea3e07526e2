import Foundation
import OfferAPI
import OfferCore
import OfferTesting
import Testing

@testable import OfferServer

/// Issue 10, item 5: the web console, embedded in the binary and served with a strict Content-Security-Policy.
@Suite("The web console's routes: its files, their types, the security headers, and a page without inline code")
struct ConsoleRoutesTests {
    static let expectedHeaders = [
        "Content-Security-Policy":
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
            + "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        "X-Frame-Options": "DENY",
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
    ]

    static var page: String { String(decoding: ConsoleRoutes.page.bytes, as: UTF8.self) }
    static var script: String { String(decoding: ConsoleRoutes.assets["console.js"]?.bytes ?? [], as: UTF8.self) }
    static var styleSheet: String { String(decoding: ConsoleRoutes.assets["console.css"]?.bytes ?? [], as: UTF8.self) }

    /// Every value of header `name` in `response`.
    static func values(_ name: String, _ response: TestResponse) -> [String] {
        response.headers.filter { $0.name.lowercased() == name.lowercased() }.map(\.value)
    }

    @Test(
        "the admin listener serves the page, the style sheet, the script and the icon, with their types, to anyone",
        arguments: [
            ("/admin/", "text/html; charset=utf-8", "<!doctype html>"),
            ("/admin/assets/console.css", "text/css; charset=utf-8", "system-ui"),
            ("/admin/assets/console.js", "text/javascript; charset=utf-8", "'use strict';"),
            ("/admin/assets/favicon.svg", "image/svg+xml", "<svg xmlns=\"http://www.w3.org/2000/svg\""),
        ])
    func served(path: String, contentType: String, beginning: String) throws {
        let fixture = try AdminFixture()
        defer { fixture.remove() }
        let response = try fixture.send("GET", path)
        #expect(response.status == 200)
        #expect(response.contentType == contentType)
        #expect(response.text.contains(beginning))
        let head = try fixture.send("HEAD", path)
        #expect(head.status == 200)
        #expect(head.contentType == contentType)
    }

    @Test(
        "every answer carries the CSP, X-Frame-Options DENY, nosniff and no-referrer once; the files say no-cache",
        arguments: [
            ("/admin/", "no-cache"), ("/admin", "no-cache"), ("/admin/assets/console.js", "no-cache"),
            ("/admin/assets/console.css", "no-cache"), ("/admin/assets/x.js", "no-store"),
        ])
    func securityHeaders(path: String, caching: String) throws {
        let fixture = try AdminFixture()
        defer { fixture.remove() }
        let response = try fixture.send("GET", path)
        for (name, value) in Self.expectedHeaders {
            #expect(Self.values(name, response) == [value], "\(path): \(name)")
        }
        #expect(Self.values("Cache-Control", response) == [caching], "\(path)")
    }

    @Test("/admin redirects to /admin/, where the page's relative links resolve under /admin/assets/")
    func redirect() throws {
        let fixture = try AdminFixture()
        defer { fixture.remove() }
        let response = try fixture.send("GET", "/admin")
        #expect(response.status == 301)
        #expect(response.header("Location") == "/admin/")
        #expect(response.body.isEmpty)
    }

    @Test(
        "an unknown asset name is a 404 not_found in JSON, never a file read from the disk",
        arguments: [
            "/admin/assets/missing.js", "/admin/assets/index.html", "/admin/assets/..", "/admin/assets/CONSOLE.JS",
        ])
    func unknownAsset(path: String) throws {
        let fixture = try AdminFixture()
        defer { fixture.remove() }
        let response = try fixture.send("GET", path)
        #expect(response.status == 404)
        #expect(response.contentType == "application/json")
        #expect(response.errorCode == .notFound)
        #expect(response.header("Content-Security-Policy") == Self.expectedHeaders["Content-Security-Policy"])
    }

    @Test("the public listener serves no console", arguments: ["/admin/", "/admin", "/admin/assets/console.js"])
    func notOnThePublicListener(path: String) throws {
        let fixture = try AdminFixture()
        defer { fixture.remove() }
        let response = try fixture.publicClient.get(path)
        #expect(response.status == 404)
        #expect(response.errorCode == .notFound)
    }

    @Test("every file the page links to is an embedded asset")
    func linkedAssetsExist() throws {
        let links = HTMLTags.scan(Self.page).flatMap { tag in
            tag.attributes.filter { $0.name == "src" || $0.name == "href" }.map(\.value)
        }
        let assets = links.filter { $0.hasPrefix("assets/") }.map { String($0.dropFirst("assets/".count)) }
        #expect(Set(assets) == Set(ConsoleRoutes.assets.keys))
        #expect(links.allSatisfy { $0.hasPrefix("assets/") || $0.hasPrefix("#") }, "\(links)")
    }

    @Test("the page has no inline script, no inline event handler and no inline style")
    func noInlineCode() {
        let problems = HTMLTags.inlineCode(Self.page)
        #expect(problems.isEmpty, "\(problems)")
        #expect(HTMLTags.scan(Self.page).contains { $0.name == "script" && $0.attribute("src") == "assets/console.js" })
    }

    @Test(
        "the inline check finds each kind of inline code in a page that has it",
        arguments: [
            ("<script>alert(1)</script>", "script without src"),
            ("<SCRIPT type=\"module\">x()</SCRIPT>", "script without src"),
            ("<script src=\"assets/a.js\">x()</script>", "script with a body"),
            ("<button onclick=\"go()\">Go</button>", "onclick"),
            ("<body ONLOAD='go()'>", "onload"),
            ("<p style=\"color: red\">x</p>", "style attribute"),
            ("<style>p { color: red }</style>", "style element"),
            ("<a href=\"javascript:go()\">x</a>", "javascript: URL"),
            ("<script src=\"https://cdn.example.com/x.js\"></script>", "outside resource"),
            ("<link rel=\"stylesheet\" href=\"//fonts.example.com/a.css\">", "outside resource"),
        ])
    func inlineCheckFindsInlineCode(html: String, problem: String) {
        let page = "<!doctype html><html><head></head><body>\(html)</body></html>"
        #expect(HTMLTags.inlineCode(page).contains { $0.hasPrefix(problem) }, "\(HTMLTags.inlineCode(page))")
    }

    @Test("the script builds the page without HTML strings, eval or inline styles, and calls no other origin")
    func scriptStaysInItsLane() {
        let script = Self.script
        for forbidden in [
            "innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function", ".style.",
            "'style'", "localStorage", "sessionStorage", "document.cookie",
        ] {
            #expect(!script.contains(forbidden), "console.js uses \(forbidden)")
        }
        // The one URL in it is the SVG namespace, which names and loads nothing.
        let urls = script.matches(of: /https?:\/\/[^\s'"`)]*/).map { String($0.output) }
        #expect(urls == ["http://www.w3.org/2000/svg"])
        #expect(script.contains("'X-CSRF-Token'"))
        let sheet = Self.styleSheet
        #expect(!sheet.contains("@import") && !sheet.contains("url("))
    }
}

/// A small reader of an HTML page's tags, enough to find inline code in a page we write ourselves.
enum HTMLTags {
    struct Tag {
        let name: String
        let attributes: [(name: String, value: String)]
        /// The text up to the matching end tag, for `script` and `style`.
        let body: String

        func attribute(_ name: String) -> String? { attributes.first { $0.name == name }?.value }
    }

    static func scan(_ html: String) -> [Tag] {
        let text = html.replacing(/<!--.*?-->/.dotMatchesNewlines(), with: "")
        var tags: [Tag] = []
        for match in text.matches(of: /<([a-zA-Z][a-zA-Z0-9-]*)((?:[^>"']|"[^"]*"|'[^']*')*)>/) {
            let name = String(match.output.1).lowercased()
            var attributes: [(String, String)] = []
            for attribute in String(match.output.2).matches(
                of: /([^\s=\/"'>]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+)))?/)
            {
                let value = attribute.output.2 ?? attribute.output.3 ?? attribute.output.4 ?? ""
                attributes.append((String(attribute.output.1).lowercased(), String(value)))
            }
            var body = ""
            if name == "script" || name == "style" {
                let rest = text[match.range.upperBound...]
                if let end = rest.range(of: "</\(name)", options: .caseInsensitive) {
                    body = String(rest[..<end.lowerBound])
                }
            }
            tags.append(Tag(name: name, attributes: attributes, body: body))
        }
        return tags
    }

    /// What the CSP would block or what loads from elsewhere, one line each.
    static func inlineCode(_ html: String) -> [String] {
        var problems: [String] = []
        for tag in scan(html) {
            if tag.name == "script" {
                if tag.attribute("src") == nil { problems.append("script without src") }
                if !tag.body.allSatisfy(\.isWhitespace) { problems.append("script with a body") }
            }
            if tag.name == "style" { problems.append("style element") }
            for (name, value) in tag.attributes {
                if name.hasPrefix("on") { problems.append("\(name) on <\(tag.name)>") }
                if name == "style" { problems.append("style attribute on <\(tag.name)>") }
                let trimmed = value.trimmingCharacters(in: .whitespaces).lowercased()
                if trimmed.hasPrefix("javascript:") { problems.append("javascript: URL on <\(tag.name)>") }
                if (name == "src" || name == "href")
                    && (trimmed.hasPrefix("http:") || trimmed.hasPrefix("https:") || trimmed.hasPrefix("//"))
                {
                    problems.append("outside resource \(value)")
                }
            }
        }
        return problems
    }
}
