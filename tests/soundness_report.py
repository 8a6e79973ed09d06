"""Print what staticexec does today with every model of the soundness corpus, and the counts."""

from __future__ import annotations

import collections
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from soundness import cases, judge  # noqa: E402


def main() -> int:
    counts: collections.Counter = collections.Counter()
    wrong = 0
    for case in cases():
        outcome = judge(case)
        counts[outcome.status] += 1
        mark = "  " if outcome.matches(case) else "XX"
        wrong += mark == "XX"
        print(f"{mark} {case.name:<40} expected {case.expected:<32} got {outcome}"[:220])
    print(", ".join(f"{k} {v}" for k, v in sorted(counts.items())), f"| {wrong} not as expected")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
