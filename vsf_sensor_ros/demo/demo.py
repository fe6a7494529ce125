"""``vsf_demo``: simulator + sensor node on this host, recorded, tared, summarised (docs/demo.md)."""
from __future__ import annotations

import argparse
import json
import shutil
import sys
from functools import partial
from pathlib import Path
from typing import Any, Optional, Sequence

from vsf_sensor_ros.demo.config import DemoError, check_pairing, resolve_config
from vsf_sensor_ros.demo.ros_env import run_isolated, usage_error
from vsf_sensor_ros.demo.session import DemoSession, Progress, SessionResult
from vsf_sensor_ros.demo.summary import build_summary, clear_outputs, make_plots, series_for, summary_table
from vsf_sensor_ros.rig.launch_support import SIM_WORLD_CONFIGS


def build_parser() -> argparse.ArgumentParser:
    """The demo's command line (docs/demo.md)."""
    p = argparse.ArgumentParser(
        prog="vsf_demo", formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n  vsf_demo --world embedded --duration 10\n"
               "  vsf_demo --world kinova --assets /path/to/kinova_punyo --out demo_out/kinova",
        description="Run the contact simulator and the sensor node on this host, record every "
                    "topic to a rosbag2 MCAP, tare after the contact-free stretch, and write "
                    "plots and summary.json.")
    p.add_argument("--world", choices=sorted(SIM_WORLD_CONFIGS), default="embedded",
                   help="embedded: the package's small arm + bubble (no files needed); "
                        "kinova: Kinova Gen3 + Punyo from --assets (default: embedded)")
    p.add_argument("--assets", type=Path, default=None,
                   help="directory with the Kinova/Punyo assets (kinova world; default: $VSF_ASSETS or "
                        "../shared/fixtures/kinova_punyo next to the checkout)")
    p.add_argument("--out", type=Path, default=None,
                   help="output directory (default: demo_out/<world>, one folder per world)")
    p.add_argument("--duration", type=float, default=10.0,
                   help="simulated seconds (real time when the machine keeps up, slower otherwise); "
                        "the press trajectory "
                        "(2 s contact-free, approach, press, hold, release, retreat) takes 9 s (default: 10)")
    p.add_argument("--rate", type=float, default=50.0,
                   help="simulator steps per second, each 1/rate simulated seconds (one contacts message "
                        "each; default: 50)")
    p.add_argument("--seed", type=int, default=0, help="random seed of the simulated noise (default: 0)")
    p.add_argument("--measured-source", choices=["independent", "model"], default="independent",
                   help="where the simulator's measured streams come from: independent (Klampt's own C++ "
                        "ContactSensor for the pad, the simulator's contact forces for the load cell; the "
                        "Punyo streams stay synthetic) | model (every stream the package's model + offset + "
                        "noise: synthetic) (default: independent)")
    p.add_argument("--backend", choices=["klampt", "mujoco"], default="klampt",
                   help="simulator: klampt (the package's Klampt/ODE contact_sim_node) | mujoco "
                        "(mujoco_contact_node: MuJoCo's contacts, its force and touch sensors measure the "
                        "pad and the load cell; embedded world only; default --out demo_out/mujoco) "
                        "(default: klampt)")
    p.add_argument("--params-file", type=Path, default=None,
                   help="sensor node parameter file (default: config/<world's file>)")
    p.add_argument("--timeout", type=float, default=None,
                   help="hard limit on the whole run in seconds (default: duration + 150)")
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Command-line entry point (``vsf_demo``); returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        cfg = resolve_config(args)
        clear_outputs(cfg.out)
    except (ValueError, DemoError) as exc:
        return usage_error(partial(parser.print_usage, sys.stderr), exc)
    # the parameter file the node runs with, beside the bag: what `vsf_replay` reads for <out>/run.mcap
    if cfg.params_file != (cfg.out / "sensor_node.yaml").resolve():
        shutil.copyfile(cfg.params_file, cfg.out / "sensor_node.yaml")
    try:
        pairing = check_pairing(cfg)
    except DemoError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for line in pairing:
        print(f"warning: {line}", file=sys.stderr)
    logs_dir = cfg.out / "logs"
    return run_isolated(lambda domain: _report(cfg, DemoSession(cfg, Progress(), domain, logs_dir).run(),
                                               pairing), (DemoError,), "demo", logs_dir)


def _report(cfg: Any, session: SessionResult, pairing: Sequence[str]) -> int:
    """Write the bag, summary.json and plots of ``session``, print the table; the exit code."""
    from vsf_sensor_ros.demo.recorder import write_bag
    session.errors[:0] = [f"parameter file does not pair with the simulator: {p}" for p in pairing]
    bag = write_bag(session.logs.values(), cfg.out)
    series = {s.name: series_for(session, s) for s in cfg.sensors}
    summary = build_summary(cfg, session, series, bag)
    plots = make_plots(cfg, session, series)
    (cfg.out / "summary.json").write_text(json.dumps(summary, indent=2, allow_nan=False) + "\n")
    print(f"\n{summary_table(summary)}\n\nfiles in {cfg.out}/:")
    print(f"  run.mcap + metadata.yaml  rosbag2 (MCAP) of {len(bag['counts'])} topics, "
          f"{sum(bag['counts'].values())} messages  (ros2 bag info {cfg.out}; PlotJuggler / Foxglove: "
          f"open {bag['path']})")
    for p in plots:
        print(f"  {p.name}")
    print("  summary.json  logs/")
    problems = list(session.errors)
    silent = [n for n, s in summary["sensors"].items() if s["published"] == 0]
    if silent:
        problems.append(f"sensor(s) published nothing: {', '.join(silent)}")
    short = {n: s["published"] for n, s in summary["sensors"].items()
             if 0 < s["published"] < summary["steps"]}
    if short:
        problems.append("steps without a prediction: " + ", ".join(
            f"{n} {summary['steps'] - k} of {summary['steps']}" for n, k in short.items()))
    if not session.tare.success:
        problems.append(f"tare failed: {session.tare.message or 'no answer'}")
    hard = bool(silent) or not session.tare.success
    if problems:
        print("\n" + "\n".join(f"{'error' if hard else 'warning'}: {p}" for p in problems), file=sys.stderr)
    return 1 if hard else 0


if __name__ == "__main__":
    sys.exit(main())
