"""Logging for a person (text) or a log pipeline (JSON, one object per line).

Records carry the object key and controller when the code passes them in `extra`, so
`grep ns/name` on the text log, or a filter on `object` in JSON, follows one object. In
JSON, every line written during a reconcile also carries `controller`, `object` and
`reconcile` (an id per reconcile, `kube.trace.current`): the trace of that reconcile.
This module imports nothing that imports prometheus_client: the supervisor sets up its
logs before it chooses the metrics' multiprocess directory.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any

from cliques.kube import trace

_STD = set(vars(logging.makeLogRecord({})).keys()) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        traced = trace.current.get()
        if traced is not None:
            out["controller"], out["object"], out["reconcile"] = traced
        for k, v in vars(record).items():
            if k not in _STD and not k.startswith("_"):
                out[k] = v
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str)


class TextFormatter(logging.Formatter):
    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)-5s %(name)s: %(message)s", "%H:%M:%S")


def setup(level: str = "info", fmt: str = "text", prefix: str = "") -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
    if prefix:
        old = logging.getLogRecordFactory()

        def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
            record = old(*args, **kwargs)
            record.worker = prefix
            return record

        logging.setLogRecordFactory(factory)
