"""The wire formats, one package each, and the registry that names them.

A new format is one module or package that defines a :class:`~cdclake.formats.base.Codec` and one line
in ``_CODECS``. Formats load on first use, so a format's dependencies cost nothing until it is chosen.
"""

from __future__ import annotations

import importlib

from cdclake.errors import OptionError
from cdclake.formats.base import Codec

# format id -> (module, attribute holding its Codec)
_CODECS: dict[str, tuple[str, str]] = {
    "open": ("cdclake.formats.open_protocol", "CODEC"),
    "canal-json": ("cdclake.formats.canal_json", "CODEC"),
    "simple": ("cdclake.formats.simple", "JSON_CODEC"),
    "simple-avro": ("cdclake.formats.simple", "AVRO_CODEC"),
    "dataworks": ("cdclake.formats.dataworks", "CODEC"),
}

FORMAT_NAMES = tuple(_CODECS)


def get_codec(name: str) -> Codec:
    """The codec registered as ``name`` (``open``, ``canal-json``, ``simple``, ``simple-avro``, ``dataworks``)."""
    try:
        module_name, attribute = _CODECS[name]
    except KeyError:
        raise OptionError(f"unknown format {name!r}; formats: {', '.join(_CODECS)}") from None
    codec: Codec = getattr(importlib.import_module(module_name), attribute)
    return codec
