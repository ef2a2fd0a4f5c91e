"""`memtrace collect`: receive OTLP traces live (HTTP and gRPC), spool them durably, load
complete ones."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import click
from rich.markup import escape

from memtrace.attribution.pipeline import Options
from memtrace.attribution.registry import JUDGES, make_judge
from memtrace.cli.options import llm_options, neo4j_options
from memtrace.cli.output import make_console
from memtrace.collect.app import Limits
from memtrace.collect.ingest import IngestOptions
from memtrace.collect.receiver import (
    DEFAULT_GRPC_PORT,
    DEFAULT_PORT,
    DEFAULT_SPOOL_BYTES,
    TOKEN_ENV,
    Receiver,
    ReceiverOptions,
    attributing,
    default_spool,
)
from memtrace.loaders.otlp.timelines import DEFAULT_GROUPING
from memtrace.loaders.otlp.timelines import group_by as group_by_attribute
from memtrace.settings import Settings

err = make_console(stderr=True)


def _log(message: str) -> None:
    stamp = datetime.now(UTC).strftime("%H:%M:%S")
    err.print(f"[dim]{stamp}[/] {escape(message)}", highlight=False, soft_wrap=True)


@click.command("collect")
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help=f"Address to bind; any other than loopback needs {TOKEN_ENV}.",
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=DEFAULT_PORT,
    show_default=True,
    help="OTLP/HTTP port.",
)
@click.option(
    "--grpc-port",
    type=click.IntRange(0, 65535),
    default=DEFAULT_GRPC_PORT,
    show_default=True,
    help="OTLP/gRPC port.",
)
@click.option("--no-grpc", is_flag=True, help="Receive OTLP/HTTP only.")
@click.option(
    "--spool",
    "spool_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Spool directory [default: $MEMTRACE_HOME/collect/spool].",
)
@click.option(
    "--spool-max-mb",
    type=click.IntRange(min=1),
    default=DEFAULT_SPOOL_BYTES // 2**20,
    show_default=True,
    help="Above this many MB not yet loaded, requests get 503 with Retry-After.",
)
@click.option(
    "--quiet-period",
    type=click.FloatRange(min=0),
    default=5.0,
    show_default=True,
    help="Seconds without a new span (after the root span) before a trace loads.",
)
@click.option(
    "--max-wait",
    type=click.FloatRange(min=0),
    default=300.0,
    show_default=True,
    help="Seconds after which a trace whose root span never came loads anyway.",
)
@click.option(
    "--lease-seconds",
    type=click.FloatRange(min=1),
    default=IngestOptions.lease_seconds,
    show_default=True,
    help="How long a trace being loaded stays another receiver's if this one dies mid-load "
    "(renewed every third of it while the load runs; a restart on the same spool takes its "
    "leases over at once).",
)
@click.option(
    "--keep-loaded",
    type=click.FloatRange(min=0),
    default=IngestOptions.keep_loaded_seconds,
    show_default=True,
    help="Seconds a loaded trace stays in the spool's loaded/ for late spans to join it; a "
    "span of it coming later is set aside in rejected/.",
)
@click.option(
    "--attribute",
    "attribute",
    is_flag=True,
    help="Attribute each loaded trace's failed cases at once.",
)
@click.option(
    "--judge",
    type=click.Choice(list(JUDGES)),
    default=None,
    help="The judge of --attribute [default: hybrid when an LLM endpoint is configured, else "
    "offline; `attribute --judge auto` cannot replay a trace before it has arrived].",
)
@click.option("--run-id", help="Attribution run id (with --attribute) [default: per judge].")
@click.option(
    "--timelines",
    is_flag=True,
    help="Append each request (OTel trace) to the trace of its user, conversation or session "
    "(docs/collect.md, Live timelines); requests with no such id load as today.",
)
@click.option(
    "--group-by",
    metavar="ATTRIBUTE",
    help="With --timelines: this span attribute ties requests together instead.",
)
@neo4j_options
@llm_options
def collect_command(
    settings: Settings,
    host: str,
    port: int,
    grpc_port: int,
    no_grpc: bool,
    spool_dir: Path | None,
    spool_max_mb: int,
    quiet_period: float,
    max_wait: float,
    lease_seconds: float,
    keep_loaded: float,
    attribute: bool,
    judge: str | None,
    run_id: str | None,
    timelines: bool,
    group_by: str | None,
) -> None:
    """Receive traces on OTLP/HTTP (POST /v1/traces, protobuf or JSON, gzip or not) and
    OTLP/gRPC (TraceService/Export).

    Each accepted batch is fsync'd to the spool before it is acknowledged; a trace is loaded
    (as `memtrace load` would) once its root span has arrived and it has been quiet for
    --quiet-period. Serves until Ctrl-C; what is not loaded yet stays in the spool for the
    next start. The token, if any, is read from the environment, never from the command line.
    """
    token = os.environ.get(TOKEN_ENV) or None
    if group_by is not None and not timelines:
        raise click.UsageError("--group-by needs --timelines")
    if judge is not None and not attribute:
        raise click.UsageError("--judge chooses the judge of --attribute: add --attribute")
    after_load = None
    if attribute:
        after_load = attributing(make_judge(judge, settings), Options(), run_id, _log)
    options = ReceiverOptions(
        host=host,
        port=port,
        grpc_port=None if no_grpc else grpc_port,
        spool_dir=spool_dir,
        spool_max_bytes=spool_max_mb * 2**20,
        token=token,
        ingest=IngestOptions(
            quiet_seconds=quiet_period,
            max_wait_seconds=max_wait,
            lease_seconds=lease_seconds,
            keep_loaded_seconds=keep_loaded,
            grouping=(group_by_attribute(group_by) if group_by else DEFAULT_GROUPING)
            if timelines
            else None,
        ),
        limits=Limits(),
    )
    receiver = Receiver(settings, options, _log, after_load)
    bound = receiver.bind()  # a busy port is said before anything else
    pending = receiver.spool.pending()
    where = options.spool_dir or default_spool(settings)
    http_port = bound.http.sock.getsockname()[1]
    grpc = f" and OTLP/gRPC on {host}:{bound.grpc_port}" if bound.grpc is not None else ""
    _log(
        f"receiving OTLP/HTTP on http://{host}:{http_port}/v1/traces{grpc}; spool {where} "
        f"({pending['traces']} trace(s) pending from before); loading into {settings.neo4j.uri}"
        + (f"; attributing with {judge or 'the default judge'}" if attribute else "")
    )
    receiver.serve(bound)
    status = receiver.status()
    _log(
        f"stopped: {status['loaded_traces']} trace(s) loaded, {status['rejected_traces']} "
        f"refused; {receiver.spool.pending()['traces']} pending in the spool"
    )
