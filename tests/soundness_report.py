"""Print what staticexec does today with every model of the soundness corpus, and the counts.

A line starts with `XX` when the case is not as expected (a case with a `# gap:` that now passes
is not as expected either: its gap line must go), with `xf` when it fails as its gap says. The
last line counts silent-wrong outcomes and tracebacks, gap or not. Exit 1 when any case is not as
expected, or any outcome is silent-wrong or a traceback.
"""

from __future__ import annotations

import collections
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from soundness import cases, judge  # noqa: E402


def main(names: list[str]) -> int:
    counts: collections.Counter = collections.Counter()
    wrong, known = [], 0
    for case in cases():
        if names and case.name not in names:
            continue
        outcome = judge(case)
        counts[outcome.status] += 1
        good = outcome.matches(case) and outcome.status not in ("silent-wrong", "traceback")
        mark = "  " if good and not case.gap else "xf" if case.gap and not good else "XX"
        known += mark == "xf"
        if mark == "XX":
            wrong.append(case.name)
        print(f"{mark} {case.name:<48} expected {case.expected:<40} got {outcome}"[:240])
    print(", ".join(f"{k} {v}" for k, v in sorted(counts.items())),
          f"| {sum(counts.values())} cases, {len(wrong)} not as expected, {known} known gaps")
    if wrong:
        print("not as expected:", " ".join(wrong))
    silent, crashed = counts["silent-wrong"], counts["traceback"]
    print(f"silent {silent}, traceback {crashed}")
    return 1 if wrong or silent or crashed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
