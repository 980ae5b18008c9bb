"""Pinned NDK fetch against a real HTTP server on 127.0.0.1 serving a small NDK-like zip."""

from __future__ import annotations

import hashlib
import http.server
import io
import stat
import threading
import zipfile

import pytest

from mnnrepro.build.ndk import provide_ndk
from mnnrepro.files import FetchError, download, safe_extract_zip

REVISION = "27.2.12479018"


def ndk_zip(extra=None) -> bytes:
    """The layout the build needs: source.properties, the CMake toolchain file, a symlink."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr(
            "android-ndk-r27c/source.properties",
            f"Pkg.Desc = Android NDK\nPkg.Revision = {REVISION}\n",
        )
        zf.writestr("android-ndk-r27c/build/cmake/android.toolchain.cmake", "# toolchain\n")
        zf.writestr("android-ndk-r27c/bin/clang-18", "#!/bin/sh\n")
        link = zipfile.ZipInfo("android-ndk-r27c/bin/clang")
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        zf.writestr(link, "clang-18")
        for name, data in (extra or {}).items():
            if isinstance(data, zipfile.ZipInfo):
                zf.writestr(data, name)
            else:
                zf.writestr(name, data)
    return buf.getvalue()


class Server:
    """A loopback HTTP server: serves bodies by path; can lie about Content-Length."""

    def __init__(self):
        self.files, self.truncate, self.requests = {}, set(), []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                outer.requests.append(self.path)
                body = outer.files.get(self.path)
                if body is None:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body[: len(body) // 2] if self.path in outer.truncate else body)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def url(self, path):
        return f"http://127.0.0.1:{self.httpd.server_address[1]}{path}"


@pytest.fixture
def server():
    s = Server()
    yield s
    s.httpd.shutdown()


def pin_for(server, body, path="/ndk.zip", **over):
    server.files[path] = body
    return {
        "version": "r27c",
        "url": server.url(path),
        "revision": REVISION,
        "sha256": hashlib.sha256(body).hexdigest(),
        "sha1": hashlib.sha1(body).hexdigest(),
        "size": len(body),
        **over,
    }


def test_good_pin_is_fetched_verified_extracted_and_cached(server, tmp_path):
    pin = pin_for(server, ndk_zip())
    ndk = provide_ndk(pin, tmp_path / "cache", environ={})
    assert ndk["revision"] == REVISION
    root = tmp_path / "cache" / "r27c" / "android-ndk-r27c"
    assert (root / "build/cmake/android.toolchain.cmake").is_file()
    assert (root / "bin" / "clang").is_symlink()
    assert not list((tmp_path / "cache").glob("*.zip")) and not list(
        (tmp_path / "cache").glob(".*")
    )
    provide_ndk(pin, tmp_path / "cache", environ={})
    assert len(server.requests) == 1  # the second call used the cache


@pytest.mark.parametrize("bad", ["sha256", "sha1", "size"])
def test_bad_checksum_is_an_error_and_nothing_is_published(server, tmp_path, bad):
    pin = pin_for(server, ndk_zip())
    pin[bad] = ("0" * 64 if bad == "sha256" else "0" * 40) if bad != "size" else 12
    with pytest.raises(FetchError, match=bad if bad != "size" else "the pin says 12"):
        provide_ndk(pin, tmp_path / "cache", environ={})
    assert list((tmp_path / "cache").iterdir()) == []  # no final name, no .part left


def test_truncated_download_is_an_error(server, tmp_path):
    pin = pin_for(server, ndk_zip())
    server.truncate.add("/ndk.zip")
    with pytest.raises(FetchError):
        download(pin["url"], tmp_path / "ndk.zip", pin["sha256"], pin["size"])
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("member", ["../evil.txt", "/abs/evil.txt", "a/../../evil.txt"])
def test_path_traversal_entry_is_rejected(tmp_path, member):
    (tmp_path / "evil.zip").write_bytes(ndk_zip({member: "x"}))
    with pytest.raises(FetchError, match="unsafe member"):
        safe_extract_zip(tmp_path / "evil.zip", tmp_path / "out" / "ndk")
    assert not (tmp_path / "evil.txt").exists()
    assert list((tmp_path / "out").iterdir()) == []  # no final name, no staging left


def test_symlink_escaping_the_directory_is_rejected(tmp_path):
    link = zipfile.ZipInfo("android-ndk-r27c/bin/escape")
    link.external_attr = (stat.S_IFLNK | 0o777) << 16
    (tmp_path / "evil.zip").write_bytes(ndk_zip({"../../../../etc/passwd": link}))
    with pytest.raises(FetchError, match="leaves the extraction directory"):
        safe_extract_zip(tmp_path / "evil.zip", tmp_path / "out")
    assert list(tmp_path.glob("out*")) == [] and list(tmp_path.glob(".out*")) == []


def test_matching_local_ndk_is_reused_without_download(server, tmp_path):
    local = tmp_path / "my-ndk"
    local.mkdir()
    (local / "source.properties").write_text(f"Pkg.Revision = {REVISION}\n")
    pin = pin_for(server, ndk_zip())
    ndk = provide_ndk(pin, tmp_path / "cache", environ={"ANDROID_NDK_HOME": str(local)})
    assert ndk["source"] == "$ANDROID_NDK_HOME" and server.requests == []


def test_mismatching_local_ndk_is_not_used(server, tmp_path):
    local = tmp_path / "old-ndk"
    local.mkdir()
    (local / "source.properties").write_text("Pkg.Revision = 25.1.8937393\n")
    pin = pin_for(server, ndk_zip())
    ndk = provide_ndk(pin, tmp_path / "cache", environ={"ANDROID_NDK": str(local)})
    assert ndk["source"] == pin["url"]


def test_md5_only_pin_as_mnn_checks_kleidiai(server, tmp_path):
    body = b"kleidiai tarball"
    server.files["/kai.tgz"] = body
    url = server.url("/kai.tgz")
    download(url, tmp_path / "kai.tgz", None, md5=hashlib.md5(body).hexdigest())
    with pytest.raises(FetchError, match="md5"):
        download(url, tmp_path / "other.tgz", None, md5="0" * 32)
    with pytest.raises(FetchError, match="no checksum pinned"):
        download(url, tmp_path / "third.tgz", None)
