"""The command line: `python -m core list | run | reference | smoke | env | checkpoints | text-checkpoints`.

Needs torch, numpy and pandas. Bad input exits 2 with one line on stderr naming the option and what is allowed,
before anything is measured. A run that fails or reaches its time limit keeps its rows, ends its CSV with a status
row, and exits 1 or 124. The run itself, shared with a page's worker, is core/run_record.py.
"""

from __future__ import annotations

import argparse
import sys
import traceback

from core.run_record import RunFailed, Terminated, TimeLimit, positive_seconds, run_one, sigterm_raises, why_stopped


def _parse_sets(pairs: list[str]) -> dict:
    out = {}
    for pair in pairs or []:
        if "=" not in pair:
            raise ValueError(f"--set: {pair!r} must look like FIELD=VALUE")
        k, v = pair.split("=", 1)
        out[k.strip()] = v
    return out


def cmd_list(args) -> int:
    from core.config import describe_range, field_info
    from core.experiments import EXPERIMENTS

    for name, exp in EXPERIMENTS.items():
        print(f"{name}: {exp.summary}")
        print(f"  presets: {', '.join(exp.presets)}")
        for info in field_info(exp.config_cls):
            d = info["default"]
            default = ",".join(map(str, d)) if isinstance(d, tuple) else d
            print(
                f"  {info['name']:<14} default {default!s:<24} allowed {describe_range(info)}"
                + (f"  — {info['help']}" if info.get("help") else "")
            )
        print()
    return 0


def cmd_run(args) -> int:
    from core.store.outputs import check_out_dir, check_out_file

    if args.out and args.out_dir:
        raise ValueError("--out, --out-dir: give one of them")
    limit = positive_seconds("--time-limit", args.time_limit)
    out = check_out_file("--out", args.out) if args.out else None
    out_dir = check_out_dir("--out-dir", args.out_dir) if args.out_dir else None
    with sigterm_raises():
        run_one(
            args.experiment,
            args.preset,
            args.device,
            args.seed,
            _parse_sets(args.set),
            out,
            time_limit=limit,
            out_dir=out_dir,
        )
    return 0


def cmd_reference(args) -> int:
    from core.offline.reference import cli

    with sigterm_raises():  # stopped from outside: the running experiment's rows are kept and logged first
        return cli(args)


def cmd_smoke(args) -> int:
    from core.store.outputs import check_out_dir

    out_dir = check_out_dir("--out-dir", args.out_dir) if args.out_dir else None
    from core.offline.smoke import run_smoke  # after the check: a bad folder costs no torch import

    with sigterm_raises():
        return run_smoke(args.device, out_dir)


def cmd_worker(args) -> int:
    import socket

    from core.server.worker import serve
    from core.server.zygote import serve_forks

    return serve_forks(socket.socket(fileno=0)) if args.zygote else serve()


def cmd_env(args) -> int:
    from core.offline.smoke import describe_environment

    print(describe_environment(args.device))
    return 0


def cmd_checkpoints(args) -> int:
    from core.offline.checkpoints import cli
    from core.store.outputs import check_out_dir

    if args.out_dir:
        check_out_dir("--out-dir", args.out_dir)
    return cli(args)


def cmd_text_checkpoints(args) -> int:
    from core.store.outputs import check_out_dir

    if args.out_dir:
        check_out_dir("--out-dir", args.out_dir)
    from core.offline.text_checkpoints import cli  # after the check: a bad folder costs no torch import

    return cli(args)


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="python -m core", description="Transformer Bottleneck Lab: run experiments without the dashboard."
    )
    sub = ap.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="experiments, presets, config fields with defaults and allowed ranges")
    r = sub.add_parser("run", help="run one experiment and write its CSV as it is measured")
    r.add_argument("experiment")
    r.add_argument("--preset", default="quick")
    r.add_argument("--device", default=None, help="auto|cpu|cuda|mps (default: the preset's, auto)")
    r.add_argument("--seed", default=None)
    r.add_argument("--set", action="append", metavar="FIELD=VALUE", help="override a config field (lists: a,b,c)")
    r.add_argument("--out", default=None, metavar="FILE.csv")
    r.add_argument("--out-dir", default=None, help="write <experiment>-<device>.csv into this folder instead")
    r.add_argument("--time-limit", default=None, metavar="SECONDS", help="stop after this long, keeping the rows")
    ref = sub.add_parser("reference", help="every experiment's preset, each in its own process, into a folder")
    ref.add_argument("--device", default="auto")
    ref.add_argument("--preset", default="full")
    ref.add_argument("--only", nargs="*", help="only these experiments, in this order")
    ref.add_argument("--out-dir", default=None, help="default: data/reference/")
    ref.add_argument(
        "--time-limit",
        action="append",
        default=[],
        metavar="[NAME=]SECONDS",
        help="per experiment (repeatable): its rows so far are kept and the next one starts",
    )
    ref.add_argument("--log", default=None, help="one line per experiment (default: OUT_DIR/reference.log)")
    ref.add_argument(
        "--deadline",
        default=None,
        metavar="EPOCH_SECONDS",
        help="the whole run ends by then: each experiment may use the time the ones before it left, "
        "never the time given to those after it",
    )
    sm = sub.add_parser("smoke", help="a short test of the risky paths (SDPA backends, fused RNNs, memory, OOM)")
    sm.add_argument("--device", default="auto")
    sm.add_argument("--out-dir", default=None)
    worker = sub.add_parser(
        "worker", help="a page's live run: one job (JSON) on stdin, its progress as JSON lines on stdout"
    )
    worker.add_argument(
        "--zygote",
        action="store_true",
        help="(the server's) import once, then fork a worker per request on stdin, a Unix socket",
    )
    ev = sub.add_parser("env", help="Python, torch, CUDA, cuDNN, the device and its free memory, TF32")
    ev.add_argument("--device", default="auto")
    ck = sub.add_parser("checkpoints", help="train the small recall models shipped in data/checkpoints/")
    ck.add_argument("--out-dir", default=None)
    ck.add_argument("--steps", default=None, help="training steps per model (default: the shipped spec's)")
    tx = sub.add_parser("text-checkpoints", help="train the real-text models shipped in data/checkpoints/ (minutes)")
    tx.add_argument("--models", nargs="*", help="default: every model tagged real_text")
    tx.add_argument("--seeds", nargs="*", help="default: 0 1 (one process per seed trains two at once on 2 cores)")
    tx.add_argument("--steps", default=None, help="training steps per model (default: the shipped spec's)")
    tx.add_argument("--out-dir", default=None)
    tx.add_argument("--state-dir", default=None, help="where resume states go (default: data/checkpoints/training)")
    return ap


COMMANDS = {
    "list": cmd_list,
    "run": cmd_run,
    "reference": cmd_reference,
    "smoke": cmd_smoke,
    "env": cmd_env,
    "checkpoints": cmd_checkpoints,
    "text-checkpoints": cmd_text_checkpoints,
    "worker": cmd_worker,
}
EXIT_CODES = ((RunFailed, 1), (TimeLimit, 124), (KeyboardInterrupt, 130), (Terminated, 143))


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except (Exception, Terminated, KeyboardInterrupt) as err:  # noqa: BLE001 - rows and status row already written
        for kind, code in EXIT_CODES:
            if isinstance(err, kind):
                return code
        traceback.print_exception(err, file=sys.stderr)
        print(f"error: {why_stopped(err, None)}", file=sys.stderr)
        return 1
