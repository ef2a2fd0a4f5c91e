"""The review app at scale: queues, a case page and a decision over >= 10,000 attributed failed
cases, as ratios to one `MATCH (a:Attribution) RETURN count(a)` (as benchmarks/patterns.py).

    .venv/bin/python benchmarks/review.py --traces 50 --cases 220

1. Writes benchmarks/patterns.py's synthetic attributed graph (one run, --traces x --cases).
2. Times, --repeat times each (median, after one warm-up): the baseline count query; the
   library call `Review.queues(fresh=True)` (every queue with its progress: the queue rows and
   the failure classes read afresh); over HTTP against the app served by uvicorn, `GET /` (the
   queue list, read afresh), `GET /case` (one case page: trails, candidates, SVG, its queue
   position from the kept rows) and `POST /api/review` (a confirm: the checks, the write, the
   next case).
3. Deletes everything it wrote. JSON on stdout, then a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import time
import uuid

import httpx
from patterns import BASELINE, seed, timed

from memtrace.admin import delete_trace, init_schema
from memtrace.db import connect
from memtrace.review.app import case_url, create_app
from memtrace.review.service import Review
from memtrace.serving import serving_in_thread
from memtrace.settings import load_settings

TOKEN = "benchmark"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=int, default=50)
    parser.add_argument("--cases", type=int, default=220, help="failed cases per trace")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    scope = f"br{uuid.uuid4().hex[:8]}"
    with connect(load_settings()) as db:
        init_schema(db)
        started = time.perf_counter()
        run_id, ids = seed(db, scope, args.traces, args.cases)
        seed_seconds = time.perf_counter() - started
        try:
            review = Review(db, run_id, "bench")
            cases, queues = review.queues()
            baseline = timed(lambda: db.run(BASELINE), args.repeat)
            library = timed(lambda: review.queues(fresh=True), args.repeat)
            page_url = case_url(cases[0].ref, "all")
            decision = {"trace_id": ids[0], "case_id": "q1", "decision": "confirm"}
            with (
                serving_in_thread(create_app(review, TOKEN)) as base,
                httpx.Client(base_url=base, timeout=120) as client,
            ):
                client.get(f"/?token={TOKEN}").raise_for_status()

                def get(path: str) -> None:
                    client.get(path).raise_for_status()

                def post() -> None:
                    answer = client.post(
                        "/api/review", json=decision, headers={"x-review-token": TOKEN}
                    )
                    answer.raise_for_status()

                index = timed(lambda: get("/"), args.repeat)
                page = timed(lambda: get(page_url), args.repeat)
                write = timed(post, args.repeat)
        finally:
            for trace_id in ids:
                delete_trace(db, trace_id)
    result = {
        "traces": args.traces,
        "attributed_failed_cases": len(cases),
        "queues": len(queues),
        "seed_seconds": round(seed_seconds, 1),
        "load_average": os.getloadavg()[0],
        "baseline_count_s": baseline,
        "queues_s": library,
        "get_index_s": index,
        "get_case_s": page,
        "post_review_s": write,
    }
    print(json.dumps(result, indent=2))
    rows = [
        ("`MATCH (a:Attribution) RETURN count(a)`", baseline),
        ("`Review.queues(fresh=True)` (library)", library),
        ("`GET /` (queue list)", index),
        ("`GET /case` (a case page)", page),
        ("`POST /api/review` (confirm, then the next case)", write),
    ]
    print("\n| measure | median s | ratio to count(a) |\n|---|---|---|")
    for name, seconds in rows:
        print(f"| {name} | {seconds:.4f} | {seconds / baseline:.0f} |")
    print(
        f"\n{len(cases)} attributed failed cases in {args.traces} traces, {len(queues)} queues; "
        f"load average {result['load_average']:.1f}"
    )


if __name__ == "__main__":
    main()
