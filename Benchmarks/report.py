#!/usr/bin/env python3
"""Writes the Markdown report and the charts of a benchmark run from its JSON results (Benchmarks/run.py).

    python Benchmarks/report.py Benchmarks/results/latest.json [OUT_DIR] [--with OTHER.json ...]

With `--with`, the targets table has a column per run (this one first, then the others, e.g. the three runs kept
in Benchmarks/reference/), and says in how many each target was met.

report.md needs the standard library only; throughput.png and latency.png need matplotlib (Benchmarks/requirements.txt)
and are left out, with a warning, without it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


class ReportError(Exception):
    pass


def _number(value: float | None, digits: int = 1) -> str:
    if value is None:
        return "n/a"
    return f"{value:,.{digits}f}"


def _machine(report: dict) -> list[str]:
    machine = report.get("machine", {})
    versions = report.get("versions", {})
    memory = machine.get("memTotalKiB")
    load = machine.get("loadAverageAtStart")
    return [
        "| | |",
        "|---|---|",
        f"| CPU | {machine.get('cpuModel') or 'unknown'} |",
        f"| cores | {machine.get('nproc')} |",
        f"| memory | {memory / 1024 / 1024:.1f} GiB |" if memory else "| memory | unknown |",
        f"| kernel | {machine.get('kernel')} |",
        f"| load average at start | {', '.join(f'{value:.2f}' for value in load) if load else 'unknown'} |",
        f"| OpenSSL | {versions.get('openssl')} |",
        f"| compiler | {versions.get('swift')} |",
        f"| offer-signer | {versions.get('offerSigner')} (commit {str(versions.get('gitCommit'))[:12]}"
        f"{', Sources changed' if versions.get('sourcesDirty') else ''}) |",
        f"| wrk | {versions.get('wrk')} |",
    ]


def _profile(profile: dict) -> list[str]:
    """Where the server's CPU goes per request: the kernel (system time) and user time split by perf's samples."""
    if "skipped" in profile:
        return [f"Where the CPU goes (perf): skipped ({profile['skipped']}).", ""]
    if not profile:
        return []
    groups = list(next(iter(profile.values()))["userUsByGroup"])
    lines = [
        "Where the server's CPU goes, µs per request: the kernel is the run's system time (`/proc`); the user time "
        "is split by library from `perf record -e cpu-clock` samples of a second closed-loop run of the same "
        "scenario (sampling slows it a little, so these totals differ from the table above). \"Swift runtime\" is "
        "reference counting, allocation and the standard library; libc is malloc, free, memcpy and memset.",
        "",
        "| scenario | kernel | " + " | ".join(groups) + " | user + kernel |",
        "|---|---:|" + "---:|" * len(groups) + "---:|",
    ]
    for row in profile.values():
        cells = " | ".join(f"{row['userUsByGroup'][group]:.1f}" for group in groups)
        lines.append(f"| {row['label']} | {row['systemCpuPerRequestUs']:.1f} | {cells} | "
                     f"{row['userCpuPerRequestUs'] + row['systemCpuPerRequestUs']:.1f} |")
    return lines + [""]


def _syscalls(syscalls: dict) -> list[str]:
    """The system calls per request of each scenario (`strace -c -f` over sequential requests), the most called
    first."""
    if "skipped" in syscalls:
        return [f"System calls per request (strace): skipped ({syscalls['skipped']}).", ""]
    if not syscalls:
        return []
    lines = [
        "System calls per request, from `strace -c -f` attached to every server thread over "
        f"{next(iter(syscalls.values()))['requests']} requests sent one after the other on one keep-alive connection "
        "(so each request's own calls; under load one epoll wait serves several). Idle threads' calls in the window "
        "are counted too.",
        "",
        "| scenario | calls per request | the most called |",
        "|---|---:|---|",
    ]
    for row in syscalls.values():
        top = ", ".join(f"{name} {value:.2f}" for name, value in list(row["bySyscall"].items())[:8])
        lines.append(f"| {row['label']} | {row['perRequest']:.2f} | {top} |")
    return lines + [""]


def _attested(attested: dict | None, skipped: str | None) -> list[str]:
    """How the attested request was counted, and its challenge's own figure."""
    if skipped:
        return [f"attested_jws: skipped ({skipped}).", ""]
    if not attested:
        return []
    challenge = attested["challenge"]
    return [
        "attested_jws: `POST /v1/signatures/promotional-offer` with App Attest enforced (the three "
        "`X-App-Attest-*` headers: an assertion verified, its challenge taken back and its counter raised in one "
        f"{attested['storage']} transaction, the signature recorded in the same {attested['storage']} ledger), on a "
        "server of its own. Each attested request needs a fresh challenge, a request of its own, kept out of the "
        f"figure: {attested['method']}. A challenge alone (`POST {challenge['path']}`, a batch of "
        f"{challenge['requests']}): {challenge['instructionsPerRequest']:,.0f} instructions per request.",
        "",
    ]


def _bound(report: dict, target: str) -> str | None:
    """What bounds a missed target, from the run's own measurements: the kernel's share and the system calls for
    the CPU ratios, the busy cores for a latency, the group commits for the limited offer on PostgreSQL."""
    endpoints = report.get("endpoints", {})
    key = "promotional_verified" if "verified" in target else "promotional_jws" if "JWS" in target else None
    if target.startswith("server CPU") and key:
        result = endpoints[key]
        text = (f"kernel {result.get('systemCpuPerRequestUs', 0):.1f} µs of {result.get('cpuPerRequestUs', 0):.1f} µs "
                "per request")
        calls = report.get("syscalls", {}).get(key)
        if calls:
            text += f"; {calls['perRequest']:.2f} system calls per request sequentially"
        library = report.get("profile", {}).get(key, {}).get("userUsByGroup", {})
        if library:
            text += f"; libcrypto {library.get('libcrypto', 0):.1f} µs"
        return text
    if target.startswith("p99 at half load") and key:
        half = endpoints.get(f"{key}_half", {})
        if half:
            cores = " + ".join(f"{value:.2f}" for value in half.get("serverThreadCores", [])[:2])
            return f"at {half.get('requestsPerSecond', 0):,.0f}/s, p50 {half.get('p50Ms', 0):.2f} ms, cores {cores}"
    if "at 1M customers" in target:
        # The same scenario on a ledger of a million customers and on the run's own: the commits and the cores.
        baseline = "sqlite_limited" if "sqlite" in target else "postgresql_limited"
        large, small = endpoints.get(f"{baseline}_1m", {}), endpoints.get(baseline, {})

        def figures(result: dict) -> str:
            commits = result.get("ledgerCommits", {})
            return (f"commits {commits.get('meanCommitMs', 0):.2f} ms (p99 {commits.get('p99CommitMs', 0):.1f}), "
                    f"{result.get('serverCores') or 0:.2f} cores")

        if large and small:
            return f"at 1M {figures(large)}; at 1k {figures(small)}"
    if "PostgreSQL" in target:
        commits = endpoints.get("postgresql_limited", {}).get("ledgerCommits", {})
        if commits:
            return (f"group commits of {commits.get('meanGroup', 0):.1f} records in {commits.get('meanCommitMs', 0):.2f} "
                    "ms on average")
    return None


def _targets(runs: list[dict]) -> list[str]:
    """The targets of every run, one column each (the first run's targets name the rows), in how many runs each was
    met, and for a target missed in the first run what bounds it."""
    rows = runs[0].get("targets", [])
    if not rows:
        return []
    by_run = [{row["target"]: row for row in run.get("targets", [])} for run in runs]
    columns = " | ".join(f"run {index + 1}" for index in range(len(runs)))
    lines = [
        "## Targets (issue 24)",
        "",
        f"Each figure measured in its own run, against a baseline of the same run; {len(runs)} run(s): "
        + ", ".join(run.get("startedAt", "?") for run in runs) + ".",
        "",
        f"| target | {columns} | limit | met |",
        "|---|" + "---:|" * len(runs) + "---:|---|",
    ]
    bounds = []
    for row in rows:
        figures = [found.get(row["target"]) for found in by_run]
        cells = " | ".join(figure["text"] if figure else "–" for figure in figures)
        measured = [figure for figure in figures if figure]
        met = sum(1 for figure in measured if figure["met"])
        verdict = "met" if met == len(measured) else f"**missed** ({met} of {len(measured)} met)"
        limit = ("≥ " if row.get("atLeast") else "≤ ") + f"{row['limit']:.3g}"
        lines.append(f"| {row['target']} | {cells} | {limit} | {verdict} |")
        if not row["met"]:
            bound = _bound(runs[0], row["target"])
            if bound:
                bounds.append(f"- {row['target']}: {bound}.")
    lines.append("")
    if bounds:
        lines += ["What bounds the targets missed in run 1, from its own measurements:", "", *bounds, ""]
    return lines


def markdown(report: dict, others: list[dict] | None = None) -> str:
    settings = report.get("settings", {})
    endpoints = report.get("endpoints", {})
    crypto = report.get("baselines", {}).get("openssl", {})
    lines = [
        "# offer-signer benchmark",
        "",
        f"Run of {report.get('startedAt')} by `Benchmarks/run.py` (`make bench`): wrk -t{settings.get('threads')} "
        f"-c{settings.get('connections')} -d{settings.get('duration')}s, keep-alive, server and load on the same "
        "machine. Absolute figures vary between runs on a shared machine: compare the ratios.",
        "",
        "## Machine",
        "",
        *_machine(report),
        "",
        "## Scenarios",
        "",
        "Closed loop (every connection sends its next request on the answer) unless the label says half load: then "
        "each connection waits after each answer, for about half the peak rate. Percentiles from wrk's own "
        "histogram (a Lua `done()`); CPU per request: the server's user + system time over the run (all processes "
        "and threads, from `/proc`) over the requests wrk completed, then the same apart; peak RSS: `VmHWM` over "
        "the run (reset before it); cores: CPU time over wall time, by thread.",
        "",
        "| scenario | req/s | p50 ms | p99 ms | p99.9 ms | CPU µs/req | user + sys µs | peak RSS MiB | "
        "cores (by thread) |",
        "|---|---:|---:|---:|---:|---:|---|---:|---|",
    ]
    for result in endpoints.values():
        rss = result.get("peakRssKiB")
        split = " + ".join(f"{value:.2f}" for value in result.get("serverThreadCores", [])[:4])
        lines.append(
            f"| {result['label']} | {result['requestsPerSecond']:,.0f} | {result['p50Ms']:.2f} | "
            f"{result['p99Ms']:.2f} | {result['p999Ms']:.2f} | {_number(result.get('cpuPerRequestUs'))} | "
            f"{_number(result.get('userCpuPerRequestUs'))} + {_number(result.get('systemCpuPerRequestUs'))} | "
            f"{_number(rss / 1024 if rss else None)} | {_number(result.get('serverCores'), 2)} ({split}) |"
        )
    lines += ["", "## Floors and ratios", ""]
    if crypto:
        lines += [
            f"`{crypto.get('command')}`, one core: ES256 sign {1e6 / crypto['signPerSecond']:.1f} µs "
            f"({crypto['signPerSecond']:,.0f}/s), P-256 verify {1e6 / crypto['verifyPerSecond']:.1f} µs "
            f"({crypto['verifyPerSecond']:,.0f}/s).",
            "",
        ]
    cpu_floors = report.get("cpuFloors", {})
    if cpu_floors:
        lines += [
            "Server CPU per request against its floor (the sign and verify times above, plus the server CPU of a "
            "bare `/livez` in the same run):",
            "",
            "| scenario | CPU µs/req | floor | floor µs | ratio |",
            "|---|---:|---|---:|---:|",
        ]
        for key, row in cpu_floors.items():
            lines.append(f"| {key} | {row['cpuPerRequestUs']:.1f} | {row['floor']} | {row['floorUs']:.1f} | "
                         f"{row['ratio']:.2f}× |")
        lines.append("")
    instructions = report.get("instructions", {})
    if "floor" in instructions:
        floor = instructions["floor"]
        requests = instructions["requests"]
        lines += [
            "Instructions (`valgrind --tool=callgrind`, user space, all threads): for a request, the server's total "
            f"over a batch of {next(iter(requests.values()))['requests'] if requests else 0} on one keep-alive "
            "connection after a warm-up, instrumentation on only around the batch; for the floor, "
            "`offer-signer-bench-crypto` (the service's own `SigningKey.signatureRaw` and "
            "`VerifyingKey.isValidSignature` calls) run for N and 2N operations, (Ir(2N) - Ir(N)) / N. "
            "Wall-clock rates of the same program on one core beside them.",
            "",
            "| operation | instructions | one core |",
            "|---|---:|---:|",
            f"| ES256 sign (service's call) | {floor['sign']['instructions']:,.0f} | "
            f"{floor['sign']['perSecondOneCore']:,.0f}/s ({floor['sign']['microseconds']:.1f} µs) |",
            f"| P-256 verify (service's call) | {floor['verify']['instructions']:,.0f} | "
            f"{floor['verify']['perSecondOneCore']:,.0f}/s ({floor['verify']['microseconds']:.1f} µs) |",
            "",
            "| scenario | instructions/request | floor | floor instructions | ratio |",
            "|---|---:|---|---:|---:|",
        ]
        for key, row in instructions.get("ratios", {}).items():
            storage = f" ({requests[key]['storage']})" if "storage" in requests[key] else ""
            lines.append(f"| {key}{storage} | {requests[key]['instructionsPerRequest']:,.0f} | {row['floor']} | "
                         f"{row['floorInstructions']:,.0f} | {row['ratio']:.2f}× |")
        lines.append("")
        lines += _attested(requests.get("attested_jws"), instructions.get("attestedSkipped"))
    elif "skipped" in instructions:
        lines += [f"Instructions (callgrind): skipped ({instructions['skipped']}).", ""]
    lines += _profile(report.get("profile", {}))
    lines += _syscalls(report.get("syscalls", {}))
    peer = report.get("peer", {})
    lines += ["## Against the peer", ""]
    if "ratios" in peer:
        lines += [
            f"Apple's App Store Server Library (Python: `SignedDataVerifier`, `PromotionalOfferV2SignatureCreator`) "
            f"behind uvicorn with {peer['workers']} workers (`Benchmarks/peer/`), the same key, root, requests and "
            "wrk scripts. Its CPU counts the uvicorn parent and every worker.",
            "",
            "| scenario | ours req/s | peer req/s | ours / peer | our CPU µs/req | peer CPU µs/req |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        for key, row in peer["ratios"].items():
            ours = endpoints[key]
            theirs = endpoints[f"peer_{key}"]
            lines.append(f"| {key} | {ours['requestsPerSecond']:,.0f} | {theirs['requestsPerSecond']:,.0f} | "
                         f"{row['throughput']:.1f}× | {_number(ours.get('cpuPerRequestUs'))} | "
                         f"{_number(theirs.get('cpuPerRequestUs'))} |")
        lines.append("")
    else:
        lines += [f"Not measured: {peer.get('skipped', 'no peer scenario in this run')}.", ""]
    lines += _targets([report, *(others or [])])
    reports = report.get("reports") or {}
    if reports:
        lines += [
            f"## Reports over a year of data (issue 22): {reports['exposures']:,} exposures",
            "",
            f"An offer's outcomes and its experiment's report, asked of the admin API over {reports['exposures']:,} "
            f"exposures spread over 365 days ({reports['otherExposures']:,} of another offer beside them, "
            f"{reports['revenueRows']:,} revenue rows); five timed requests each after a warm-up. Target: under "
            f"{reports['targetMs']:.0f} ms.",
            "",
            "| backend | outcomes (median / max) | experiment | experiment CSV | `report experiment --json` (wall) | |",
            "|---|---:|---:|---:|---:|---|",
        ]
        for label in ("sqlite", "postgresql"):
            if label not in reports:
                continue
            row = reports[label]
            figures = row["reports"]

            def cell(name: str) -> str:
                return f"{figures[name]['medianMs']:.0f} / {figures[name]['maxMs']:.0f} ms"

            lines.append(f"| {label} | {cell('outcomes')} | {cell('experiment')} | {cell('experimentCsv')} | "
                         f"{figures['commandLine']['wallMs']:.0f} ms | {'met' if row['met'] else '**missed**'} |")
        lines.append("")
    lines += ["![throughput](throughput.png)", "", "![latency](latency.png)", ""]
    return "\n".join(lines)


def charts(report: dict, directory: Path) -> list[Path]:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as error:
        raise ReportError(f"no charts: matplotlib is not installed ({error})") from error
    endpoints = report.get("endpoints", {})
    ours = {key: value for key, value in endpoints.items() if not key.startswith("peer_") and
            not key.endswith("_half")}
    written = []

    # Throughput: ours per scenario, the peer beside it, and the crypto floors as one core's rate.
    figure, axis = plt.subplots(figsize=(10, 0.45 * (len(ours) + 4) + 1.5))
    labels, values, colours = [], [], []
    for key, result in ours.items():
        labels.append(key)
        values.append(result["requestsPerSecond"])
        colours.append("tab:blue")
        if f"peer_{key}" in endpoints:
            labels.append(f"{key} (peer)")
            values.append(endpoints[f"peer_{key}"]["requestsPerSecond"])
            colours.append("tab:orange")
    crypto = report.get("baselines", {}).get("openssl", {})
    if crypto:
        labels += ["openssl ES256 sign, 1 core", "openssl P-256 verify, 1 core"]
        values += [crypto["signPerSecond"], crypto["verifyPerSecond"]]
        colours += ["tab:gray", "tab:gray"]
    positions = range(len(labels))
    axis.barh(positions, values, color=colours)
    axis.set_yticks(list(positions), labels)
    axis.invert_yaxis()
    axis.set_xscale("log")
    axis.set_xlabel("requests (or operations) per second, log scale")
    axis.set_title("Throughput: offer-signer (blue), the peer (orange), raw crypto (grey)")
    for position, value in zip(positions, values):
        axis.text(value, position, f" {value:,.0f}", va="center", fontsize=8)
    figure.tight_layout()
    path = directory / "throughput.png"
    figure.savefig(path, dpi=110)
    plt.close(figure)
    written.append(path)

    # Latency: p50, p99 and p99.9 of each run, peak and half load, ours and the peer's.
    figure, axis = plt.subplots(figsize=(10, 0.45 * len(endpoints) + 1.5))
    keys = list(endpoints)
    for offset, (name, colour) in enumerate((("p50Ms", "tab:green"), ("p99Ms", "tab:blue"),
                                              ("p999Ms", "tab:red"))):
        axis.barh([index + (offset - 1) * 0.27 for index in range(len(keys))],
                  [max(endpoints[key][name], 0.001) for key in keys], height=0.27, color=colour,
                  label=name.removesuffix("Ms").replace("p999", "p99.9"))
    axis.set_yticks(list(range(len(keys))), keys)
    axis.invert_yaxis()
    axis.set_xscale("log")
    axis.set_xlabel("latency, ms (log scale)")
    axis.axvline(2.0, color="black", linestyle="--", linewidth=0.8, label="2 ms (target at half load)")
    axis.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    axis.set_title("Latency at peak and at half load (_half); peer_ is Apple's library behind uvicorn")
    figure.tight_layout()
    path = directory / "latency.png"
    figure.savefig(path, dpi=110)
    plt.close(figure)
    written.append(path)
    return written


def write(report: dict, directory: Path, others: list[dict] | None = None) -> list[Path]:
    """report.md (its targets beside `others`' when given), then the charts (a ReportError for the charts comes after
    report.md is written)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "report.md"
    path.write_text(markdown(report, others), encoding="utf-8")
    written = [path]
    written += charts(report, directory)
    return written


def main(argv: list[str]) -> int:
    others_at = argv.index("--with") if "--with" in argv else len(argv)
    arguments, other_paths = argv[:others_at], argv[others_at + 1:]
    if not 1 <= len(arguments) <= 2 or ("--with" in argv and not other_paths):
        print(__doc__, file=sys.stderr)
        return 2
    runs = []
    for source in [Path(arguments[0]), *map(Path, other_paths)]:
        try:
            runs.append(json.loads(source.read_text(encoding="utf-8")))
        except (OSError, ValueError) as error:
            print(f"error: {source}: {error}", file=sys.stderr)
            return 1
    try:
        for path in write(runs[0], Path(arguments[1]) if len(arguments) > 1 else Path(arguments[0]).parent, runs[1:]):
            print(f"wrote {path}")
    except ReportError as error:
        print(f"warning: {error}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
