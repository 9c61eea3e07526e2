"""The benchmark's targets (issue 24): run.py decides each target on the figures of one run (a ratio of the same run,
at most or at least its limit), and report.py writes the targets of several runs side by side, says in how many
each was met, and what bounds a target the first run missed. Synthetic runs: the figures are chosen, the verdicts
are checked."""

from __future__ import annotations

import importlib
import sys

from support import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "Benchmarks"))
run = importlib.import_module("run")
report = importlib.import_module("report")


def endpoint(label: str, rate: float, **extra) -> dict:
    return {"label": label, "requestsPerSecond": rate, "peakRssKiB": 20 * 1024, **extra}


def results(limited_rate: float, rss_mib: float = 20) -> dict:
    return {
        "promotional_jws": endpoint("POST promotional-offer JWS", 20_000, cpuPerRequestUs=70.0,
                                    systemCpuPerRequestUs=20.0, serverThreadCores=[0.7, 0.69]),
        "promotional_jws_half": endpoint("half", 10_000, p99Ms=2.5, p50Ms=0.6, serverThreadCores=[0.4, 0.3]),
        "promotional_verified_half": endpoint("half", 3_000, p99Ms=3.5),
        "promotional_verified": endpoint("POST promotional-offer verified", 6_000),
        "postgresql_jws": endpoint("pg", 10_000),
        "postgresql_limited": endpoint("pg limited", limited_rate, peakRssKiB=int(rss_mib * 1024),
                                       ledgerCommits={"meanGroup": 12.0, "meanCommitMs": 1.5}),
    }


def verdicts(rows: list[dict]) -> dict[str, bool]:
    return {row["target"].split(" (")[0].split(",")[0]: row["met"] for row in rows}


def test_each_target_is_met_or_missed_on_its_own_side_of_its_limit():
    floors = {"promotional_jws": {"floor": "sign + bare HTTP", "ratio": 1.25}}
    peer = {"ratios": {"promotional_jws": {"throughput": 1.9}, "promotional_verified": {"throughput": 20.0}}}
    rows = run.targets(results(limited_rate=8_000), floors, {}, peer)
    by_name = {row["target"]: row for row in rows}
    limited = next(row for name, row in by_name.items() if name.startswith("req/s of a limited offer on PostgreSQL"))
    assert limited["met"] and limited["atLeast"] and limited["figure"] == 0.8
    assert by_name["server CPU per signed JWS request / (sign + bare HTTP)"]["met"]
    assert not by_name["p99 at half load, POST promotional-offer JWS (ms)"]["met"]  # 2.5 ms over 2 ms
    assert by_name["p99 at half load, POST promotional-offer verified (ms)"]["met"]  # 3.5 ms under 4 ms
    assert not by_name["req/s, ours / the peer's, promotional_jws"]["met"]
    assert by_name["req/s, ours / the peer's, promotional_verified"]["met"]
    # Just under 0.8 is missed; memory is judged in every scenario, the largest named.
    rows = run.targets(results(limited_rate=7_999, rss_mib=33), floors, {}, peer)
    by_name = {row["target"]: row for row in rows}
    assert not next(row for name, row in by_name.items() if name.startswith("req/s of a limited"))["met"]
    memory = by_name["peak RSS (MiB), every scenario, the largest"]
    assert not memory["met"] and "postgresql_limited" in memory["text"]


def test_the_report_puts_three_runs_side_by_side_and_says_what_bounds_a_miss():
    runs = []
    for index, limited in enumerate((9_000, 7_000, 8_500)):
        rows = run.targets(results(limited_rate=limited), {}, {}, None)
        runs.append({"startedAt": f"run-{index}", "targets": rows, "endpoints": results(limited),
                     "syscalls": {}, "profile": {}})
    text = "\n".join(report._targets(runs))
    limited = next(line for line in text.splitlines() if line.startswith("| req/s of a limited offer"))
    assert "0.90x" in limited and "0.70x" in limited and "0.85x" in limited
    assert limited.endswith("| ≥ 0.8 | **missed** (2 of 3 met) |")
    half = next(line for line in text.splitlines() if line.startswith("| p99 at half load, POST promotional-offer JWS"))
    assert half.endswith("| ≤ 2 | **missed** (0 of 3 met) |")
    assert "- p99 at half load, POST promotional-offer JWS (ms): at 10,000/s, p50 0.60 ms, cores 0.40 + 0.30." in text
    # Met in run 1: not in the list of what bounds a miss.
    assert "- req/s of a limited offer" not in text
