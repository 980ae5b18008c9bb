"""A loopback ModelScope endpoint: the calls the real `modelscope` client makes for a snapshot.

`snapshot_download(..., endpoint="http://127.0.0.1:PORT")` reaches it exactly as it reaches
modelscope.cn; only the hub is replaced. Implemented (found by pointing the real client at
it and reading modelscope_hub's legacy API client):

* GET /api/v1/models/<owner>/<name>/repo/files?Revision=R&Recursive=True
  -> {"Code": 200, "Success": true, "Data": {"Files": [{Name, Path, Type, Size, Sha256,
     Revision}]}}; an unknown revision answers 404 with a message;
* GET /api/v1/models/<owner>/<name>/repo?Revision=R&FilePath=P -> the file, with HTTP Range
  (206) so an interrupted download resumes;
* fault injection: `cut_after[path] = n` sends only n bytes of that file once, then drops.

Other paths answer 404 and are recorded in `unknown`, so a test sees any call it lacks.
"""

from __future__ import annotations

import hashlib
import http.server
import json
import re
import threading
from urllib.parse import parse_qs, unquote, urlparse


class LoopbackModelScope:
    def __init__(self):
        self.repos: dict[tuple[str, str], dict[str, bytes]] = {}  # (model_id, revision) -> files
        self.commits: dict[tuple[str, str], str] = {}
        self.cut_after: dict[str, int] = {}
        self.requests: list[str] = []
        self.unknown: list[str] = []
        self.bytes_served = 0
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_HEAD(self):
                outer.handle(self, head=True)

            def do_GET(self):
                outer.handle(self, head=False)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def add(self, model_id: str, revision: str, files: dict[str, bytes]) -> str:
        commit = hashlib.sha1(repr(sorted(files.items())).encode()).hexdigest()
        self.repos[(model_id, revision)] = dict(files)
        self.repos[(model_id, commit)] = dict(files)
        self.commits[(model_id, revision)] = self.commits[(model_id, commit)] = commit
        return commit

    def close(self):
        self.httpd.shutdown()

    # ---- request handling -------------------------------------------------------------

    def handle(self, req, head: bool) -> None:
        url = urlparse(req.path)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        self.requests.append(req.path)
        m = re.fullmatch(r"/api/v1/models/([^/]+/[^/]+)/repo(/files)?", unquote(url.path))
        if not m:
            self.unknown.append(req.path)
            return self.json(req, 404, {"Code": 404, "Success": False, "Message": "not found"})
        model_id, listing = m.group(1), bool(m.group(2))
        revision = query.get("Revision", "master")
        files = self.repos.get((model_id, revision))
        if files is None:
            return self.json(
                req,
                404,
                {
                    "Code": 10010205001,
                    "Success": False,
                    "Message": f"Revision {revision} not found",
                },
            )
        if listing:
            commit = self.commits[(model_id, revision)]
            entries = [
                {
                    "Name": p.rsplit("/", 1)[-1],
                    "Path": p,
                    "Type": "blob",
                    "Size": len(b),
                    "Sha256": hashlib.sha256(b).hexdigest(),
                    "Revision": commit,
                    "IsLFS": len(b) > 1024,
                }
                for p, b in sorted(files.items())
            ]
            return self.json(req, 200, {"Code": 200, "Success": True, "Data": {"Files": entries}})
        path = query.get("FilePath", "")
        if path not in files:
            return self.json(req, 404, {"Code": 404, "Success": False, "Message": "no file"})
        self.send_file(req, path, files[path], head)

    def json(self, req, status: int, body: dict) -> None:
        data = json.dumps(body).encode()
        req.send_response(status)
        req.send_header("Content-Type", "application/json")
        req.send_header("Content-Length", str(len(data)))
        req.end_headers()
        req.wfile.write(data)

    def send_file(self, req, path: str, data: bytes, head: bool) -> None:
        start = 0
        rng = re.fullmatch(r"bytes=(\d+)-(\d*)", req.headers.get("Range", ""))
        if rng:
            start = int(rng.group(1))
        body = data[start:]
        req.send_response(206 if rng else 200)
        req.send_header("Content-Length", str(len(body)))
        req.send_header("Accept-Ranges", "bytes")
        if rng:
            req.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        req.send_header("ETag", hashlib.sha256(data).hexdigest())
        req.end_headers()
        if head:
            return
        cut = self.cut_after.pop(path, None)
        if cut is not None:
            req.wfile.write(body[:cut])
            self.bytes_served += cut
            req.wfile.flush()
            req.close_connection = True
            req.connection.shutdown(2)
            return
        req.wfile.write(body)
        self.bytes_served += len(body)
