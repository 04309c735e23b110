"""Shared fixtures: where the third-party test vectors live."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# The vectors sit in ../shared/vectors beside the repository (CI clones main with shared/ beside it).
VECTORS = Path(os.environ.get("CDCLAKE_VECTORS", Path(__file__).resolve().parents[2] / "shared" / "vectors"))
SPECS = VECTORS.parent / "specs"


@pytest.fixture(scope="session")
def vectors() -> Path:
    if not VECTORS.is_dir():
        pytest.fail(f"test vectors not found at {VECTORS}; set CDCLAKE_VECTORS")
    return VECTORS
