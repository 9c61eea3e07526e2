"""The docs, tested like code: README.md is the front door and docs/ holds a page per reader (issue 19, items 13
and 14).

1. Links: every relative link of the repository's Markdown files names a file that exists, and its `#anchor` a
   heading of that file (GitHub's slugs).
2. The front door: README.md is at most 250 lines and links each page of docs/ and CONTRIBUTING.md, and each of
   their sections, so every section is one click away. Each of those pages opens with the line saying who it is
   for and a table of contents that matches its headings.
3. Tables: no row outside a table (a `|` line without the header and separator above it); no stray `m.txt`.
4. Configuration: every key the configuration parser reads is in docs/configuration.md.
5. Runnable blocks: every ```sh block after a `<!-- runnable -->` line runs with bash against the real binary
   (OFFER_SIGNER_BIN), exit status 0, and its output matches the ```json block that follows it, if any: the same
   members, and the same values but for those that differ every run (nonces, times, signatures, and strings the
   docs elide with "…" or "..."). A block that calls the service (`:8080`) gets one started for its page: the demo
   configuration for README.md (a copy in a temporary folder, so the demo's ledger is not touched), else the
   page's configuration in the ```json block after `<!-- checked: configuration -->`, which must pass
   `config check` where it appears. The page's blocks run in order in one temporary folder, with `offer-signer`
   and the test kit's `offer-signer-testkit` on the PATH; README.md's `.build/release/offer-signer` and
   `Deploy/demo/offer-signer.json` are the binary and the copy.

Each check is a function returning its problems; the tests run it on the real files (no problem) and on a
synthetic page with one thing broken (that problem), so each check is shown able to fail.
"""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from support import REPO_ROOT, Server, binary, kit_binary

README = REPO_ROOT / "README.md"
CONTRIBUTING = REPO_ROOT / "CONTRIBUTING.md"
DOCS = REPO_ROOT / "docs"
# The pages issue 19 asks for, one per reader.
EXPECTED_PAGES = {"app-teams.md", "marketing-ops.md", "configuration.md", "api.md", "apple.md", "operations.md",
                  "security.md"}
README_MAX_LINES = 250
WHO = "**Who it is for:**"
RUNNABLE = "<!-- runnable -->"
CHECKED_CONFIGURATION = "<!-- checked: configuration -->"
SERVICE_ADDRESS = re.compile(r"(?:http://)?(?:127\.0\.0\.1|localhost):8080")
# Answer members that differ every run: compared by type only.
VOLATILE = {"nonce", "issuedAt", "timestamp"}


def markdown_files() -> list[Path]:
    """Every Markdown file of the repository, outside hidden folders (.build, .venv, .git and the like)."""
    found = []
    for folder, subfolders, files in os.walk(REPO_ROOT):
        subfolders[:] = sorted(name for name in subfolders if not name.startswith("."))
        found += [Path(folder) / name for name in files if name.endswith(".md")]
    return sorted(found)


def reader_pages() -> list[Path]:
    return sorted(DOCS.glob("*.md")) + [CONTRIBUTING]


# MARK: - Markdown, as far as these checks need it


def outside_fences(text: str) -> list[tuple[int, str]]:
    """(line number, line) of every line outside fenced code blocks."""
    lines, fence = [], None
    for number, line in enumerate(text.split("\n"), 1):
        marker = re.match(r"^\s*(```+|~~~+)", line)
        if marker:
            if fence is None:
                fence = marker.group(1)[0] * 3
            elif line.strip().startswith(fence):
                fence = None
            continue
        if fence is None:
            lines.append((number, line))
    return lines


def slug(text: str) -> str:
    """GitHub's anchor for a heading: lowercase, punctuation dropped (letters, digits, `_` and `-` kept), spaces
    to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a link in a heading counts by its text
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


@dataclass
class Heading:
    level: int
    text: str
    anchor: str
    line: int


def headings(text: str) -> list[Heading]:
    out, seen = [], {}
    for number, line in outside_fences(text):
        match = re.match(r"^(#{1,6})\s+(.*?)\s*#*\s*$", line)
        if not match:
            continue
        base = slug(match.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        out.append(Heading(len(match.group(1)), match.group(2), base if count == 0 else f"{base}-{count}", number))
    return out


LINK = re.compile(r"!?\[((?:[^\[\]]|\[[^\]]*\])*)\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)", re.DOTALL)


def links(text: str) -> list[tuple[int, str]]:
    """(line number, target) of every inline link and image outside code blocks and code spans."""
    kept = {number: line for number, line in outside_fences(text)}
    lines = text.split("\n")
    prose = "\n".join(kept.get(number, "") for number in range(1, len(lines) + 1))
    # Code spans become blanks of the same length, so offsets still give line numbers.
    prose = re.sub(r"(`+)(.+?)\1", lambda m: re.sub(r"[^\n]", " ", m.group(0)), prose, flags=re.DOTALL)
    return [(prose.count("\n", 0, m.start(2)) + 1, m.group(2)) for m in LINK.finditer(prose)]


# MARK: - 1. Links


def link_problems(page: Path) -> list[str]:
    """Every relative link of `page` that names no file, or a heading its file does not have."""
    problems = []
    anchors_of: dict[Path, set[str]] = {}
    for number, target in links(page.read_text()):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE):
            continue  # https:, mailto: and the like
        path_part, _, anchor = target.partition("#")
        resolved = (page.parent / path_part).resolve() if path_part else page.resolve()
        where = f"{page.name}:{number}: {target}"
        if not resolved.exists():
            problems.append(f"{where}: no such file")
            continue
        if not anchor:
            continue
        if resolved.suffix != ".md":
            problems.append(f"{where}: an anchor into a file that is not Markdown")
            continue
        if resolved not in anchors_of:
            anchors_of[resolved] = {heading.anchor for heading in headings(resolved.read_text())}
        if anchor not in anchors_of[resolved]:
            problems.append(f"{where}: no heading with that anchor in {resolved.name}")
    return problems


def test_every_relative_link_resolves_to_a_file_and_heading():
    files = markdown_files()
    names = {str(path.relative_to(REPO_ROOT)) for path in files}
    assert {"README.md", "CONTRIBUTING.md", "SECURITY.md", "ARCHITECTURE.md", "Benchmarks/README.md"} <= names
    assert {f"docs/{page}" for page in EXPECTED_PAGES} <= names
    problems = [problem for path in files for problem in link_problems(path)]
    assert not problems, "\n".join(problems)


def test_the_link_check_finds_a_missing_file_and_a_missing_heading(tmp_path):
    (tmp_path / "there.md").write_text(
        "# There\n\n## Known gaps: `apple backfill`\n\n## Known gaps: `apple backfill`\n")
    (tmp_path / "page.md").write_text(
        "# Page\n\n"
        "[fine](there.md#known-gaps-apple-backfill), [the second](there.md#known-gaps-apple-backfill-1),\n"
        "[here](#page), [a folder](./), [a site](https://example.com/missing.md)\n"
        "[gone](missing.md) and [a wrong\nanchor](there.md#known-gaps)\n"
        "`[in code](missing-too.md)`\n\n"
        "```\n[in a block](missing-three.md)\n```\n")
    assert link_problems(tmp_path / "page.md") == [
        "page.md:5: missing.md: no such file",
        "page.md:6: there.md#known-gaps: no heading with that anchor in there.md",
    ]


# MARK: - 2. The front door and the pages by reader


def front_door_problems(readme: Path, pages: list[Path]) -> list[str]:
    """README too long, or a page or one of its sections not linked from it."""
    text = readme.read_text()
    problems = []
    count = len(text.rstrip("\n").split("\n"))
    if count > README_MAX_LINES:
        problems.append(f"{readme.name} has {count} lines, more than {README_MAX_LINES}: move detail into docs/")
    targets = set()
    for _, target in links(text):
        path_part, _, anchor = target.partition("#")
        if path_part:
            targets.add(((readme.parent / path_part).resolve(), anchor))
    for page in pages:
        where = os.path.relpath(page, readme.parent)
        if (page.resolve(), "") not in targets:
            problems.append(f"{readme.name} does not link {where}")
        for heading in headings(page.read_text()):
            linked = (page.resolve(), heading.anchor) in targets
            if heading.level in (2, 3) and heading.text != "Contents" and not linked:
                problems.append(f"{readme.name} does not link {where}#{heading.anchor} ({heading.text})")
    return problems


def page_problems(page: Path) -> list[str]:
    """A page by reader opens with its title, the line saying who it is for, then `## Contents`: a list of links
    to its level 2 and 3 headings, in order, indented by level, with their own text."""
    text = page.read_text()
    lines = [(number, line) for number, line in outside_fences(text) if line.strip()]
    name = page.name
    if not lines or not lines[0][1].startswith("# "):
        return [f"{name}: does not start with a title (# ...)"]
    problems = []
    if len(lines) < 2 or not lines[1][1].startswith(WHO):
        problems.append(f"{name}: the line after the title must say who the page is for ({WHO} ...)")
    all_headings = headings(text)
    contents = [heading for heading in all_headings if heading.level == 2]
    if not contents or contents[0].text != "Contents":
        return problems + [f"{name}: its first section must be ## Contents"]
    start = contents[0].line
    end = contents[1].line if len(contents) > 1 else len(text.split("\n")) + 1
    entries = []
    for number, line in outside_fences(text):
        if start < number < end and line.strip():
            match = re.match(r"^( *)- \[(.*)\]\(#([^)]+)\)$", line)
            if not match:
                problems.append(f"{name}:{number}: not a contents entry: {line}")
                continue
            entries.append((2 + len(match.group(1)) // 2, match.group(2), match.group(3)))
    expected = [(heading.level, heading.text, heading.anchor) for heading in all_headings
                if heading.level in (2, 3) and heading.line > start]
    if entries != expected:
        problems.append(f"{name}: its contents {entries} do not match its headings {expected}")
    return problems


def test_the_readme_is_a_short_front_door_linking_every_page_and_section():
    pages = reader_pages()
    assert {page.name for page in pages if page.parent == DOCS} == EXPECTED_PAGES
    problems = front_door_problems(README, pages)
    assert not problems, "\n".join(problems)


def test_every_page_says_who_it_is_for_and_lists_its_sections():
    problems = [problem for page in reader_pages() for problem in page_problems(page)]
    assert not problems, "\n".join(problems)


def test_the_front_door_and_page_checks_find_what_is_missing(tmp_path):
    page = tmp_path / "docs" / "ops.md"
    page.parent.mkdir()
    page.write_text(
        "# Ops\n\n**Who it is for:** operators.\n\n## Contents\n\n- [Metrics](#metrics)\n  - [Alerts](#alerts)\n"
        "- [Backups](#backups)\n\n## Metrics\n\n### Alerts\n\n## Backups\n")
    assert page_problems(page) == []
    readme = tmp_path / "README.md"
    readme.write_text("# Front\n\n[Ops](docs/ops.md): [metrics](docs/ops.md#metrics), [alerts](docs/ops.md#alerts)\n"
                      + "line\n" * README_MAX_LINES)
    assert front_door_problems(readme, [page]) == [
        f"README.md has {README_MAX_LINES + 3} lines, more than {README_MAX_LINES}: move detail into docs/",
        "README.md does not link docs/ops.md#backups (Backups)",
    ]
    page.write_text("# Ops\n\nOperators.\n\n## Contents\n\n- [Metrics](#metrics)\n\n## Metrics\n\n## Backups\n")
    assert page_problems(page) == [
        f"ops.md: the line after the title must say who the page is for ({WHO} ...)",
        "ops.md: its contents [(2, 'Metrics', 'metrics')] do not match its headings "
        "[(2, 'Metrics', 'metrics'), (2, 'Backups', 'backups')]",
    ]


# MARK: - 3. Tables, and what issue 19 item 14 removed


def orphaned_rows(text: str, name: str) -> list[str]:
    """Every `|` line that is not part of a table: a run of `|` lines whose second line is the separator."""
    separator = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")
    runs, run, last = [], [], None
    for number, line in outside_fences(text):
        if line.lstrip().startswith("|"):
            if run and last != number - 1:
                runs.append(run)
                run = []
            run.append((number, line))
            last = number
        elif run:
            runs.append(run)
            run = []
    if run:
        runs.append(run)
    return [f"{name}:{number}: a table row without a table: {line}"
            for run in runs if len(run) < 2 or not separator.match(run[1][1]) for number, line in run]


def test_no_table_row_stands_outside_a_table():
    problems = [problem for path in markdown_files()
                for problem in orphaned_rows(path.read_text(), str(path.relative_to(REPO_ROOT)))]
    assert not problems, "\n".join(problems)


def test_the_row_check_finds_the_orphaned_peak_rss_row():
    # README.md's benchmark table before issue 19: its last row after a paragraph.
    text = ("| | offer-signer | against |\n|---|---|---|\n| CPU per JWS request | 71.1 µs | 1.99× |\n\n"
            "The request hardening since added about 1,000 instructions.\n| peak RSS | 23.5 MiB | |\n")
    assert orphaned_rows(text, "README.md") == ["README.md:6: a table row without a table: | peak RSS | 23.5 MiB | |"]


def test_the_stray_files_are_gone():
    assert not (REPO_ROOT / "m.txt").exists(), "m.txt (a metrics dump) is back at the repository's root"
    assert not (REPO_ROOT / "Benchmarks" / "reference" / "report-before-cuts.md").exists(), \
        "the report from before issue 11's cuts belongs in Benchmarks/history/"


# MARK: - 4. Every configuration key


def configuration_keys() -> set[str]:
    """The member names the configuration parser reads (`reader.string("port")` and the like)."""
    sources = glob.glob(str(REPO_ROOT / "Sources" / "OfferServer" / "Settings" / "*.swift")) + glob.glob(
        str(REPO_ROOT / "Sources" / "OfferCore" / "Catalog" / "*.swift"))
    pattern = re.compile(r"[rR]eader\.(?:string|strings|int|bool|value|array)\(\s*\"([A-Za-z0-9]+)\"")
    return {match.group(1) for source in sources for match in pattern.finditer(Path(source).read_text())}


def undocumented_keys(keys: set[str], text: str) -> list[str]:
    spans = " ".join(re.findall(r"`[^`]*`", text))
    return sorted(key for key in keys if not re.search(rf"(?<![A-Za-z0-9]){key}(?![A-Za-z0-9])", spans))


def test_every_configuration_key_is_in_the_configuration_page():
    keys = configuration_keys()
    # The parser's calls were found at all: far fewer would mean the pattern no longer matches the code.
    assert len(keys) >= 50 and {"listen", "maxConnectionsPerAddress", "pkcs11Module", "signatureTTLSeconds"} <= keys
    missing = undocumented_keys(keys, (DOCS / "configuration.md").read_text())
    assert not missing, f"keys the configuration reads but docs/configuration.md does not name: {missing}"
    assert undocumented_keys({"listen", "listenBacklog"}, "`listen.host`, `listen.port`") == ["listenBacklog"]


# MARK: - 5. Runnable blocks


@dataclass
class Block:
    page: Path
    line: int
    kind: str  # "sh" (runnable) or "configuration" (checked)
    code: str
    expected: str | None = None  # the ```json block after a runnable one


def marked_blocks(page: Path) -> list[Block]:
    """The blocks `page` marks, in order: `<!-- runnable -->` before ```sh, `<!-- checked: configuration -->`
    before ```json. A marker not followed by its kind of block is an error."""
    lines = page.read_text().split("\n")

    def fenced(start: int) -> tuple[str, str, int]:
        """(language, code, index after the closing fence) of the block whose opening fence is at `start`."""
        language = lines[start].strip()[3:].strip()
        end = start + 1
        while end < len(lines) and not lines[end].strip().startswith("```"):
            end += 1
        assert end < len(lines), f"{page.name}:{start + 1}: a code block without its closing fence"
        return language, "\n".join(lines[start + 1:end]), end + 1

    def next_nonblank(index: int) -> int:
        while index < len(lines) and not lines[index].strip():
            index += 1
        return index

    blocks = []
    for index, line in enumerate(lines):
        marker = line.strip()
        if marker not in (RUNNABLE, CHECKED_CONFIGURATION):
            continue
        start = next_nonblank(index + 1)
        assert start < len(lines) and lines[start].strip().startswith("```"), \
            f"{page.name}:{index + 1}: {marker} is not followed by a code block"
        language, code, after = fenced(start)
        if marker == RUNNABLE:
            assert language in ("sh", "bash"), f"{page.name}:{index + 1}: {marker} before a ```{language} block"
            block = Block(page, start + 1, "sh", code)
            following = next_nonblank(after)
            if following < len(lines) and lines[following].strip() == "```json":
                block.expected = fenced(following)[1]
            blocks.append(block)
        else:
            assert language == "json", f"{page.name}:{index + 1}: {marker} before a ```{language} block"
            blocks.append(Block(page, start + 1, "configuration", code))
    return blocks


def answer_mismatches(expected, actual, path: str = "$") -> list[str]:
    """Where `actual` differs from the documented answer: members, and values but for those that differ every
    run (VOLATILE members, and strings the docs elide with "…" or "...")."""
    name = path.rsplit(".", 1)[-1]
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [f"{path}: expected an object, got {actual!r}"]
        problems = []
        if set(expected) != set(actual):
            problems.append(f"{path}: members {sorted(actual)}, documented {sorted(expected)}")
        for key in sorted(set(expected) & set(actual)):
            problems += answer_mismatches(expected[key], actual[key], f"{path}.{key}")
        return problems
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            return [f"{path}: expected {expected!r}, got {actual!r}"]
        return [problem for index, (e, a) in enumerate(zip(expected, actual))
                for problem in answer_mismatches(e, a, f"{path}[{index}]")]
    if name in VOLATILE or (isinstance(expected, str) and ("…" in expected or "..." in expected)):
        same_type = type(actual) is type(expected) or (isinstance(expected, int) and isinstance(actual, int))
        return [] if same_type else [f"{path}: expected {type(expected).__name__}, got {actual!r}"]
    return [] if expected == actual else [f"{path}: expected {expected!r}, got {actual!r}"]


class PageRun:
    """Runs one page's marked blocks in order in `workdir`, starting the service the first time a block calls it."""

    def __init__(self, page: Path, workdir: Path):
        self.page = page
        self.workdir = workdir
        self.server: Server | None = None
        self.configuration: Path | None = None
        self.substitutions: list[tuple[str, str]] = []
        tools = workdir / ".bin"
        tools.mkdir()
        (tools / "offer-signer").symlink_to(binary())
        (tools / "offer-signer-testkit").symlink_to(kit_binary())
        self.env = {**os.environ, "PATH": f"{tools}{os.pathsep}{os.environ['PATH']}"}
        if page == README:
            self.configuration = demo_copy(workdir)
            self.substitutions = [(".build/release/offer-signer", binary()),
                                  ("Deploy/demo/offer-signer.json", str(self.configuration))]

    def run(self, block: Block) -> list[str]:
        where = f"{self.page.name}:{block.line}"
        if block.kind == "configuration":
            return self.check(block, where)
        code = block.code
        for old, new in self.substitutions:
            code = code.replace(old, new)
        if SERVICE_ADDRESS.search(code):
            if self.server is None:
                if self.configuration is None:
                    return [f"{where}: calls the service, but no configuration is marked before it"]
                self.server = Server.start(self.configuration, self.workdir,
                                           admin="admin" in json.loads(self.configuration.read_text()))
            code = SERVICE_ADDRESS.sub(f"http://127.0.0.1:{self.server.port}", code)
        result = subprocess.run(["bash", "-euo", "pipefail", "-c", code], cwd=self.workdir, env=self.env,
                                capture_output=True, text=True, timeout=60)
        if result.returncode != 0:
            return [f"{where}: exit status {result.returncode}\n{code}\n"
                    f"stdout: {result.stdout}\nstderr: {result.stderr}"]
        if block.expected is None:
            return []
        try:
            actual = json.loads(result.stdout)
        except json.JSONDecodeError:
            return [f"{where}: the answer is not JSON: {result.stdout!r}"]
        return [f"{where}: {problem}" for problem in answer_mismatches(json.loads(block.expected), actual)]

    def check(self, block: Block, where: str) -> list[str]:
        try:
            json.loads(block.code)
        except json.JSONDecodeError as error:
            return [f"{where}: the configuration is not JSON: {error}"]
        path = self.workdir / f"configuration-{block.line}.json"
        path.write_text(block.code)
        result = subprocess.run([binary(), "config", "check", "--config", str(path)], cwd=self.workdir,
                                capture_output=True, text=True, timeout=60)
        if result.returncode != 0:
            return [f"{where}: config check refuses it:\n{result.stdout}{result.stderr}"]
        self.configuration = path
        return []

    def stop(self) -> list[str]:
        if self.server is None:
            return []
        status = self.server.stop(signal.SIGTERM, timeout=10)
        return [] if status == 0 else [f"{self.page.name}: the service exited with {status}: "
                                       + self.server.stderr_path.read_text(errors="replace")]


def demo_copy(workdir: Path) -> Path:
    """Deploy/demo/offer-signer.json in `workdir`: its ledger there, its files named by absolute path (the key
    copied with mode 0600, which git does not keep), and the admin listener on a free port."""
    demo = REPO_ROOT / "Deploy" / "demo"
    config = json.loads((demo / "offer-signer.json").read_text())
    assert config["storage"].startswith("sqlite:"), config["storage"]
    config["storage"] = f"sqlite:{workdir / 'demo-ledger.sqlite'}"
    config["admin"]["listen"]["port"] = 0
    config["trust"]["rootCertificates"] = [str((demo / root).resolve()) for root in config["trust"]["rootCertificates"]]
    for app in config["apps"]:
        for key in app["keys"]:
            copy = workdir / Path(key["privateKeyFile"]).name
            shutil.copyfile(demo / key["privateKeyFile"], copy)
            copy.chmod(0o600)
            key["privateKeyFile"] = str(copy)
    path = workdir / "offer-signer.json"
    path.write_text(json.dumps(config, indent=2))
    return path


def run_page(page: Path, workdir: Path) -> list[str]:
    runner = PageRun(page, workdir)
    problems = []
    try:
        for block in marked_blocks(page):
            problems += runner.run(block)
    finally:
        problems += runner.stop()
    return problems


def pages_with_marked_blocks() -> list[Path]:
    return [page for page in markdown_files()
            if RUNNABLE in page.read_text() or CHECKED_CONFIGURATION in page.read_text()]


def test_the_readme_demo_walk_and_the_test_kit_walk_are_marked_runnable():
    readme = marked_blocks(README)
    # The three curl commands of the demo walk with their answers, and the admin token.
    assert sum(1 for block in readme if block.kind == "sh" and block.expected) >= 3, readme
    assert any("admin token create" in block.code for block in readme)
    app_teams = marked_blocks(DOCS / "app-teams.md")
    assert [block.kind for block in app_teams].count("configuration") == 1, app_teams
    assert sum(1 for block in app_teams if block.kind == "sh" and block.expected) >= 3, app_teams


@pytest.mark.parametrize("page", pages_with_marked_blocks(), ids=lambda page: str(page.relative_to(REPO_ROOT)))
def test_every_runnable_block_runs_and_answers_as_documented(page, tmp_path):
    problems = run_page(page, tmp_path)
    assert not problems, "\n\n".join(problems)


def test_a_block_that_fails_or_answers_otherwise_is_reported(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        f"# Page\n\n{RUNNABLE}\n```sh\nexit 3\n```\n\n"
        f"{RUNNABLE}\n```sh\necho '{{\"format\":\"jws\",\"nonce\":\"n2\",\"extra\":1}}'\n```\n"
        "```json\n{\"format\":\"legacy\",\"nonce\":\"n1\",\"compactJWS\":\"eyJ…\"}\n```\n\n"
        f"{RUNNABLE}\n```sh\ncurl -s http://127.0.0.1:8080/livez\n```\n")
    problems = run_page(page, tmp_path)
    assert len(problems) == 4, problems
    assert problems[0].startswith("page.md:4: exit status 3"), problems[0]
    assert problems[1:] == [
        "page.md:9: $: members ['extra', 'format', 'nonce'], documented ['compactJWS', 'format', 'nonce']",
        "page.md:9: $.format: expected 'legacy', got 'jws'",
        "page.md:17: calls the service, but no configuration is marked before it",
    ]


def test_answers_match_on_members_and_fixed_values_only():
    documented = {"error": {"code": "not_eligible", "reasons": [{"rule": "verifiedCustomer"}]}, "nonce": "d1227976",
                  "issuedAt": 1795988267, "compactJWS": "eyJhbGci…"}
    same = {"error": {"code": "not_eligible", "reasons": [{"rule": "verifiedCustomer"}]}, "nonce": "0193a7c2",
            "issuedAt": 1795990000, "compactJWS": "eyJother.payload.signature"}
    assert answer_mismatches(documented, same) == []
    other = {**same, "error": {"code": "not_eligible", "reasons": [{"rule": "limits"}]}, "issuedAt": "now"}
    assert answer_mismatches(documented, other) == [
        "$.error.reasons[0].rule: expected 'verifiedCustomer', got 'limits'",
        "$.issuedAt: expected int, got 'now'",
    ]
