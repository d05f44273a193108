"""``python -m federator_emulator --config FILE [--data-dir DIR] [--ready-file FILE] [--outages FILE]``.

The same as ``federator emulator``, for environments without the operator's CLI.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from federator_emulator.server import run_forever


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="federator-emulator", description=__doc__)
    parser.add_argument("--config", type=Path, required=True, help="emulator YAML config")
    parser.add_argument("--data-dir", type=Path, default=None, help="keep state here across restarts")
    parser.add_argument(
        "--ready-file", type=Path, default=None, help="write connection details here when ready"
    )
    parser.add_argument(
        "--outages", type=Path, default=None, help="namespaces to take down, one a line (watched for changes)"
    )
    parser.add_argument("--log-level", default="INFO")
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # proton logs an ERROR ("Couldn't send: BrokenPipeError") whenever a client drops its
    # socket without an AMQP close, which the SDKs routinely do when they shut down.
    logging.getLogger("proton").setLevel(logging.CRITICAL)
    return run_forever(args.config, args.data_dir, args.ready_file, args.outages)


if __name__ == "__main__":
    sys.exit(main())
