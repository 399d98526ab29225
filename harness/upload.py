"""An upload as a raw client sends it, not the browser: straight to Streamlit's upload endpoint
(/_stcore/upload_file/<session>/<file id>) of a served app, for a session this client holds
open on the websocket, with the size declared or (chunked) not at all, so no check in the
browser stands in the way. And what the server then holds: the bytes of its uploaded-file store
as its own /_stcore/metrics reports them."""

from __future__ import annotations

import asyncio
import http.client
import re
import time
import uuid
from contextlib import asynccontextmanager
from urllib.parse import urlsplit

import websockets
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from .protocol import _rerun

XSRF_COOKIE = "_streamlit_xsrf"
CHUNK = 1 << 20
UPLOADS_HELD = re.compile(r'cache_memory_bytes\{cache_type="UploadedFileManager"[^}]*\} (\d+)')


@asynccontextmanager
async def session(url: str):
    """A session of the app at `url` held open on its websocket (the upload page run once): its
    id."""
    host = urlsplit(url).netloc
    async with websockets.connect(f"ws://{host}/_stcore/stream", subprotocols=["streamlit"],
                                  max_size=None) as ws:
        await ws.send(_rerun("traffic", "workload=upload", f"{url}/traffic?workload=upload"))
        session_id = None
        while True:
            message = ForwardMsg()
            message.ParseFromString(await ws.recv())
            if message.WhichOneof("type") == "new_session":
                session_id = message.new_session.initialize.session_id
            elif message.WhichOneof("type") == "script_finished":
                break
        yield session_id


def put_file(url: str, session_id: str, data: bytes, *, declared: bool = True) -> int:
    """PUT `data` as one file of `session_id`, as Streamlit's frontend does (multipart, with
    the XSRF cookie and header); `declared=False` sends it chunked, its size said nowhere. The
    reply's status (204 stored, 413 refused)."""
    host = urlsplit(url).netloc
    token = _xsrf_token(host)
    boundary = uuid.uuid4().hex
    head = (f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="trace.csv"'
            "\r\nContent-Type: text/csv\r\n\r\n").encode()
    body = [head, data, f"\r\n--{boundary}--\r\n".encode()]
    connection = http.client.HTTPConnection(host, timeout=60)
    try:
        connection.putrequest("PUT", f"/_stcore/upload_file/{session_id}/{uuid.uuid4()}")
        connection.putheader("Content-Type", f"multipart/form-data; boundary={boundary}")
        connection.putheader("X-Xsrftoken", token)
        connection.putheader("Cookie", f"{XSRF_COOKIE}={token}")
        if declared:
            connection.putheader("Content-Length", str(sum(map(len, body))))
        else:
            connection.putheader("Transfer-Encoding", "chunked")
        connection.endheaders()
        try:
            for part in body:
                for start in range(0, len(part), CHUNK):
                    piece = part[start:start + CHUNK]
                    connection.send(piece if declared else b"%x\r\n%s\r\n" % (len(piece), piece))
            if not declared:
                connection.send(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass   # the server stopped reading: its reply says why
        return connection.getresponse().status
    finally:
        connection.close()


def _xsrf_token(host: str) -> str:
    """The XSRF cookie the server hands out with its health check (sent back as the header)."""
    connection = http.client.HTTPConnection(host, timeout=30)
    try:
        connection.request("GET", "/_stcore/health")
        reply = connection.getresponse()
        reply.read()
        cookies = reply.headers.get_all("Set-Cookie") or []
    finally:
        connection.close()
    return next(c.split(";")[0].split("=", 1)[1] for c in cookies
                if c.startswith(f"{XSRF_COOKIE}="))


def uploads_held(url: str) -> int:
    """The bytes the server's uploaded-file store holds, from its /_stcore/metrics (which
    recomputes them at most every 5 s)."""
    connection = http.client.HTTPConnection(urlsplit(url).netloc, timeout=30)
    try:
        connection.request("GET", "/_stcore/metrics")
        text = connection.getresponse().read().decode()
    finally:
        connection.close()
    found = UPLOADS_HELD.search(text)
    return int(found.group(1)) if found else 0


def uploads_held_once(url: str, expected: int, within_s: float = 20.0) -> int:
    """`uploads_held`, read until it is `expected` or `within_s` seconds have passed (a test's
    wait for a session's TTL, the app's sweep and the metrics' own cache)."""
    deadline = time.monotonic() + within_s
    while (held := uploads_held(url)) != expected and time.monotonic() < deadline:
        time.sleep(1)
    return held


async def put_in_session(url: str, data: bytes, declared: bool = True) -> int:
    """`put_file` from a session opened for it (closed after)."""
    async with session(url) as session_id:
        return await asyncio.to_thread(put_file, url, session_id, data, declared=declared)
