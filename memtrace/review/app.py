"""The review web app: Starlette routes, Jinja2 pages, one JSON endpoint that writes.

Security, as for every local server of memtrace: it answers only with the random token (in the
URL it prints, then a SameSite=Strict cookie), only for the loopback host names (no DNS
rebinding), and a write needs the token again in an ``X-Review-Token`` header (a cross-site
page can neither read it nor send a custom header without a CORS preflight this app never
grants) and no foreign ``Origin`` / ``Sec-Fetch-Site``. The Content-Security-Policy allows
nothing but this app's own scripts, styles and images: every asset ships in the package.
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable
from importlib import resources
from typing import Any
from urllib.parse import urlencode

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from memtrace.browser import BrowserTarget, launch_url
from memtrace.errors import MemtraceError, ReviewError
from memtrace.patterns.export import for_people
from memtrace.review.model import DECISIONS, Queue, ReviewInput
from memtrace.review.picture import variable_label
from memtrace.review.queues import next_case
from memtrace.review.service import LABEL_TYPES, Review
from memtrace.taxonomy import default_error_type, type_fits_kind

COOKIE = "memtrace_review_token"
TOKEN_HEADER = "x-review-token"
LOOPBACK_HOSTS = ["127.0.0.1", "localhost", "::1", "[::1]"]
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",  # the first URL carries the token
    "Cache-Control": "no-store",
}
_PACKAGE = resources.files("memtrace.review")


def _secured(response: Response) -> Response:
    response.headers.update(SECURITY_HEADERS)
    return response


def _forbidden(why: str) -> Response:
    return _secured(PlainTextResponse(f"403 forbidden: {why}\n", status_code=403))


class TokenGuard(BaseHTTPMiddleware):
    def __init__(self, app: Any, token: str) -> None:
        super().__init__(app)
        self.token = token

    async def dispatch(
        self, request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        from_url = request.query_params.get("token")
        given = from_url or request.cookies.get(COOKIE) or ""
        if not secrets.compare_digest(given.encode(), self.token.encode()):
            return _forbidden("open the URL `memtrace review` printed (it carries the token)")
        if request.method not in ("GET", "HEAD"):
            refused = self._cross_site(request)
            if refused:
                return _forbidden(refused)
        response = _secured(await call_next(request))
        if from_url:
            response.set_cookie(COOKIE, self.token, httponly=True, samesite="strict")
        return response

    def _cross_site(self, request: Request) -> str | None:
        header = request.headers.get(TOKEN_HEADER, "")
        if not secrets.compare_digest(header.encode(), self.token.encode()):
            return f"a write needs the {TOKEN_HEADER} header (cross-site request protection)"
        origin = request.headers.get("origin")
        own = f"{request.url.scheme}://{request.headers.get('host', '')}"
        if origin is not None and origin != own:
            return f"cross-site write from {origin} refused"
        site = request.headers.get("sec-fetch-site")
        if site is not None and site not in ("same-origin", "none"):
            return f"cross-site write refused (Sec-Fetch-Site: {site})"
        return None


def case_url(ref: tuple[str, str], queue: str) -> str:
    return "/case?" + urlencode({"trace": ref[0], "case": ref[1], "queue": queue})


def create_app(
    review: Review,
    token: str,
    browser: BrowserTarget | None = None,
    allow_remote: bool = False,
    bound_host: str = "127.0.0.1",
) -> Starlette:
    """The app over one reviewer's session; Host headers other than the loopback names and
    ``bound_host`` are refused unless ``allow_remote``."""
    templates = Jinja2Templates(
        directory=str(_PACKAGE / "templates"),
        context_processors=[lambda request: {"saved": review.last_saved()}],
    )
    templates.env.filters["when"] = for_people
    templates.env.globals |= {
        "token": token,
        "run_id": review.run_id,
        "reviewer": review.reviewer,
        "case_url": case_url,
        "variable_label": variable_label,
    }

    def queue_named(queues: list[Queue], key: str) -> Queue | None:
        return next((q for q in queues if q.key == key), None)

    def index(request: Request) -> Response:
        cases, queues = review.queues(fresh=True)
        return templates.TemplateResponse(
            request, "index.html", {"queues": queues, "cases": len(cases)}
        )

    def queue(request: Request) -> Response:
        key = request.path_params["key"]
        cases, queues = review.queues()
        found = queue_named(queues, key)
        if found is None:
            return templates.TemplateResponse(
                request, "message.html", {"message": f"no queue {key!r}"}, status_code=404
            )
        first = next_case(found, cases, ("", ""))
        if first is None:
            return templates.TemplateResponse(
                request, "message.html", {"message": f"every case of “{found.title}” is reviewed"}
            )
        return RedirectResponse(case_url(first, key), status_code=303)

    def case(request: Request) -> Response:
        trace_id = request.query_params.get("trace", "")
        case_id = request.query_params.get("case", "")
        key = request.query_params.get("queue", "all")
        try:
            page = review.case_page(trace_id, case_id)
        except MemtraceError as exc:
            return templates.TemplateResponse(
                request, "message.html", {"message": str(exc)}, status_code=404
            )
        _, queues = review.queues()
        found = queue_named(queues, key)
        position = found.cases.index((trace_id, case_id)) + 1 if found and (
            trace_id, case_id) in found.cases else None  # fmt: skip
        link = launch_url(browser, "edit", page.browser_cypher) if browser else None
        return templates.TemplateResponse(
            request,
            "case.html",
            {
                "page": page,
                "queue": found,
                "queue_key": key,
                "position": position,
                "label_types": LABEL_TYPES,
                "default_type": {c.op.id: default_error_type(c.op.kind) for c in page.candidates},
                "fits": {
                    c.op.id: [t for t in LABEL_TYPES if type_fits_kind(t, c.op.kind)]
                    for c in page.candidates
                },
                "browser_link": link,
            },
        )

    async def post_review(request: Request) -> Response:
        try:
            body = await request.json()
        except ValueError:
            return _error(400, "the body must be JSON")
        if not isinstance(body, dict):
            return _error(400, "the body must be a JSON object")
        fields = ("trace_id", "case_id", "decision", "op_id", "error_type", "note", "queue")
        values = {name: body.get(name) for name in fields}
        if not all(isinstance(v, str) or v is None for v in values.values()):
            return _error(400, "every field must be a string")
        if not values["trace_id"] or not values["case_id"]:
            return _error(400, "trace_id and case_id are required")
        decision = next((d for d in DECISIONS if d == values["decision"]), None)
        if decision is None:
            return _error(422, f"decision must be one of {', '.join(DECISIONS)}")
        given = ReviewInput(
            decision=decision,
            op_id=values["op_id"],
            error_type=values["error_type"],  # idem, a label type
            note=(values["note"] or "").strip(),
        )
        ref = (values["trace_id"], values["case_id"])
        try:
            saved = await run_in_threadpool(review.record, ref[0], ref[1], given)
        except ReviewError as exc:
            return _error(422, str(exc))
        except MemtraceError as exc:
            return _error(404, str(exc))
        key = values["queue"] or "all"
        cases, queues = await run_in_threadpool(review.queues)
        found = queue_named(queues, key)
        after = next_case(found, cases, ref) if found else None
        target = case_url(after, key) if after else f"/queue/{key}"
        return JSONResponse(
            {"review_id": saved.review_id, "decision": saved.decision, "next": target}
        )

    async def post_undo(request: Request) -> Response:
        try:
            body = await request.json()
        except ValueError:
            return _error(400, "the body must be JSON")
        review_id = body.get("review_id") if isinstance(body, dict) else None
        if not isinstance(review_id, str) or not review_id:
            return _error(400, "review_id is required")
        queue_key = body.get("queue")
        try:
            undone = await run_in_threadpool(review.undo, review_id)
        except ReviewError as exc:
            return _error(409, str(exc))
        key = queue_key if isinstance(queue_key, str) and queue_key else "all"
        ref = (undone.trace_id, undone.case_id)
        return JSONResponse({"undone": undone.review_id, "next": case_url(ref, key)})

    return Starlette(
        routes=[
            Route("/", index),
            Route("/queue/{key}", queue),
            Route("/case", case),
            Route("/api/review", post_review, methods=["POST"]),
            Route("/api/undo", post_undo, methods=["POST"]),
            Mount("/static", StaticFiles(directory=str(_PACKAGE / "static")), name="static"),
        ],
        middleware=[
            Middleware(
                TrustedHostMiddleware,
                allowed_hosts=["*"] if allow_remote else [*LOOPBACK_HOSTS, bound_host],
            ),
            Middleware(TokenGuard, token=token),
        ],
    )


def _error(status: int, message: str) -> Response:
    return JSONResponse({"error": message}, status_code=status)
