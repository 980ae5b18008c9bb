"""Pinned NDK fetch against a real HTTP server on 127.0.0.1 serving a small NDK-like zip."""

from __future__ import annotations

import hashlib
import http.server
import io
import stat
import tarfile
import threading
import zipfile

import pytest

from mnnrepro.engines.registry import EngineRecord
from mnnrepro.fetch import FetchError, download
from mnnrepro.toolchain.ndk import provide_ndk
from mnnrepro.unpack import safe_extract_zip

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
        self.faults = {}  # path -> the next requests' faults, in order: an HTTP code or "cut"
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                outer.requests.append(self.path)
                body = outer.files.get(self.path)
                fault = (outer.faults.get(self.path) or [None]).pop(0)
                if body is None or isinstance(fault, int):
                    self.send_error(fault or 404)
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                cut = self.path in outer.truncate or fault == "cut"
                self.wfile.write(body[: len(body) // 2] if cut else body)

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


def test_a_transient_fault_is_tried_again_and_a_lasting_one_is_reported_as_such(
    server, tmp_path, monkeypatch
):
    """A 503 and a transfer cut short pass on the third attempt at the same address; a 503
    that lasts ends with a message that says to retry, not to re-pin; a 403 is not retried."""
    import mnnrepro.fetch as fetch

    monkeypatch.setattr(fetch, "RETRY_WAIT_S", 0.01)
    body = ndk_zip()
    pin = pin_for(server, body)
    server.faults["/ndk.zip"] = [503, "cut"]
    got = download(pin["url"], tmp_path / "ndk.zip", pin["sha256"], pin["size"])
    assert got.read_bytes() == body and server.requests == ["/ndk.zip"] * 3
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ndk.zip"]  # no .part left
    server.requests.clear()
    server.faults["/ndk.zip"] = [503] * 3
    with pytest.raises(FetchError, match="run it again later") as err:
        download(pin["url"], tmp_path / "again.zip", pin["sha256"])
    assert "HTTP 503" in str(err.value) and "Update the pin" not in str(err.value)
    assert len(server.requests) == fetch.ATTEMPTS
    server.requests.clear()
    server.faults["/ndk.zip"] = [403]
    with pytest.raises(FetchError, match="403"):
        download(pin["url"], tmp_path / "denied.zip", pin["sha256"])
    assert server.requests == ["/ndk.zip"]


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


def fake_ndk(path, revision=REVISION):
    path.mkdir(parents=True)
    (path / "source.properties").write_text(f"Pkg.Revision = {revision}\n")
    return str(path)


def test_installed_ndks_are_found_where_android_tools_look_in_order(server, tmp_path):
    """$ANDROID_NDK_ROOT, $ANDROID_NDK_HOME, $ANDROID_NDK, then an SDK's side-by-side
    ndk/<revision> ($ANDROID_HOME, $ANDROID_SDK_ROOT); the first with the pinned revision wins,
    a wrong revision is passed over, and nothing is downloaded."""
    pin = pin_for(server, ndk_zip())
    sdk = tmp_path / "sdk"
    fake_ndk(sdk / "ndk" / REVISION)
    fake_ndk(sdk / "ndk" / "26.1.10909125", "26.1.10909125")
    env = {
        "ANDROID_NDK_ROOT": fake_ndk(tmp_path / "old", "25.1.8937393"),
        "ANDROID_NDK": str(tmp_path / "missing"),
        "ANDROID_SDK_ROOT": str(sdk),
    }
    ndk = provide_ndk(pin, tmp_path / "cache", environ=env)
    assert ndk["source"] == f"$ANDROID_SDK_ROOT/ndk/{REVISION}"
    assert ndk["path"] == str((sdk / "ndk" / REVISION).resolve())
    env["ANDROID_HOME"] = str(sdk)  # before $ANDROID_SDK_ROOT
    env["ANDROID_NDK_HOME"] = fake_ndk(tmp_path / "home")  # before both SDKs
    assert provide_ndk(pin, tmp_path / "cache", environ=env)["source"] == "$ANDROID_NDK_HOME"
    del env["ANDROID_NDK_HOME"]
    assert provide_ndk(pin, tmp_path / "cache", environ=env)["source"] == (
        f"$ANDROID_HOME/ndk/{REVISION}"
    )
    assert server.requests == []


# ---- mirrors: an ordered list of addresses, one checksum -----------------------------------


@pytest.fixture
def second_server():
    s = Server()
    yield s
    s.httpd.shutdown()


def test_a_404_moves_to_the_next_mirror(server, second_server, tmp_path):
    """Debian's pool drops a superseded package; its permanent address still has it."""
    body = b"a superseded package"
    second_server.files["/file/permanent"] = body
    pool, permanent = server.url("/pool/gone.deb"), second_server.url("/file/permanent")
    got = download([pool, permanent], tmp_path / "gone.deb", hashlib.sha256(body).hexdigest())
    assert got.read_bytes() == body
    assert server.requests == ["/pool/gone.deb"] and second_server.requests == ["/file/permanent"]


def test_a_checksum_mismatch_on_any_mirror_is_fatal(server, second_server, tmp_path):
    good = b"the pinned file"
    server.files["/x.deb"] = b"another file under the same name"
    second_server.files["/x.deb"] = good
    urls = [server.url("/x.deb"), second_server.url("/x.deb")]
    with pytest.raises(FetchError, match="does not match the pinned"):
        download(urls, tmp_path / "x.deb", hashlib.sha256(good).hexdigest())
    assert second_server.requests == []  # never falls through to a file that happens to match
    assert not list(tmp_path.iterdir())  # nothing half-written under any name


def test_when_every_mirror_fails_the_error_names_the_pin_and_how_to_update_it(
    server, second_server, tmp_path
):
    urls = [server.url("/a.deb"), second_server.url("/b.deb"), "http://127.0.0.1:9/closed.deb"]
    with pytest.raises(FetchError) as err:
        download(urls, tmp_path / "a.deb", "ab" * 32)
    message = str(err.value)
    assert message.startswith(f"a.deb: no mirror has the pinned file (sha256 {'ab' * 32})")
    assert "HTTP 404" in message and "unreachable" in message
    assert "snapshot.debian.org/file/<sha1>" in message and "`mirrors`" in message


def test_the_shipped_debian_pins_have_a_permanent_mirror(root):
    import yaml

    for name in ("emulated-sme2.yaml", "emulated-paper.yaml"):
        pins = yaml.safe_load((root / "config" / name).read_text())["toolchains"]["emulation"]
        for pkg in [pins["qemu"], *pins["arm64_packages"]]:
            assert any(m.startswith("https://snapshot.debian.org/file/") for m in pkg["mirrors"])


# a library's bytes holding what engines/ort_genai/fetch reads: a KleidiAI SME2 kernel's name, a
# session option, a GLIBC symbol version
ORT_LIBRARY = b"\x7fELF\0kai_run_matmul_x_sme2_mopa\0mlas.disable_kleidiai\0GLIBC_2.28\0"


def wheel_zip(package: str) -> bytes:
    """A wheel-shaped zip: the package's directory, and for onnxruntime a library whose bytes
    hold what engines/ort_genai/fetch reads (a KleidiAI kernel name, a session option)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr(f"{package}/__init__.py", "")
        if package == "onnxruntime":
            zf.writestr("onnxruntime/capi/libonnxruntime.so.1.32.0", ORT_LIBRARY)
    return buf.getvalue()


def wheel_pins(server) -> list[dict]:
    pins = []
    for package, version in (("onnxruntime", "1.32.0"), ("onnxruntime_genai", "0.18.0")):
        path = f"/{package}-{version}-cp311-cp311-manylinux_2_28_aarch64.whl"
        body = wheel_zip(package)
        server.files[path] = body
        pins.append({"url": server.url(path), "sha256": hashlib.sha256(body).hexdigest()})
    return pins


def test_the_ort_wheels_are_fetched_verified_unpacked_and_read(server, tmp_path):
    from mnnrepro.engines.ort_genai.fetch import fetch_ort_genai

    record = fetch_ort_genai(
        "linux-arm64", wheel_pins(server), tmp_path / "cache", tmp_path / "site"
    )
    assert record["versions"] == {"onnxruntime": "1.32.0", "onnxruntime_genai": "0.18.0"}
    assert record["target_arch"] == "aarch64" and record["python"] == "cp311"
    assert record["library"]["sme2_kernels"] == ["kai_run_matmul_x_sme2_mopa"]
    assert record["library"]["session_options"] == ["mlas.disable_kleidiai"]
    assert (tmp_path / "site/onnxruntime_genai/__init__.py").is_file()


def test_an_ort_wheel_whose_hash_differs_is_refused_naming_its_key(server, tmp_path):
    from mnnrepro.engines.ort_genai.fetch import WheelError, fetch_ort_genai

    pins = wheel_pins(server)
    pins[1]["sha256"] = "0" * 64
    with pytest.raises(FetchError) as err:
        fetch_ort_genai("linux-arm64", pins, tmp_path / "cache", tmp_path / "site")
    assert str(err.value).startswith("config key `ort_genai.wheels.linux-arm64[1]`: ")
    assert "\n" not in str(err.value) and not (tmp_path / "site").exists()
    assert not list((tmp_path / "cache").glob("onnxruntime_genai*"))  # nothing half-kept
    # the two wheels in the wrong order: the key that names the wrong one
    with pytest.raises(
        WheelError, match=r"`ort_genai.wheels.linux-arm64\[0\]`: expected the onnxruntime wheel"
    ):
        fetch_ort_genai(
            "linux-arm64", wheel_pins(server)[::-1], tmp_path / "cache", tmp_path / "site"
        )


def aar_tarball(package: str, library: bytes) -> bytes:
    """An npm package's tarball holding an AAR-shaped zip: package's arm64 library (bytes
    holding what engines/ort_genai/fetch reads) and a JNI bridge's, an x86_64 one not taken."""
    aar = io.BytesIO()
    with zipfile.ZipFile(aar, "w") as zf:
        zf.writestr(f"jni/arm64-v8a/lib{package}.so", library)
        zf.writestr(f"jni/arm64-v8a/lib{package}-jni.so", b"\x7fELF")
        zf.writestr(f"jni/x86_64/lib{package}.so", b"\x7fELF")
        zf.writestr("headers/ort_genai_c.h", b"// its C API")  # genai's AAR ships its header
        zf.writestr("classes.jar", b"")
    tarball = io.BytesIO()
    with tarfile.open(fileobj=tarball, mode="w:gz") as tar:
        info = tarfile.TarInfo(f"package/Plugins/Android/{package}.aar")
        info.size = len(aar.getvalue())
        tar.addfile(info, io.BytesIO(aar.getvalue()))
    return tarball.getvalue()


def aar_pins(server, library: bytes = ORT_LIBRARY, builder_version: str = "0.15.2") -> dict:
    pins = {}
    for package, name, version in (
        ("onnxruntime", "onnxruntime", "1.29.0"),
        ("onnxruntime_genai", "onnxruntime-genai", "0.15.2"),
    ):
        body = aar_tarball(name, library if package == "onnxruntime" else b"\x7fELF genai")
        server.files[f"/{name}.tgz"] = body
        pins[package] = {
            "version": version,
            "url": server.url(f"/{name}.tgz"),
            "sha256": hashlib.sha256(body).hexdigest(),
            "member": f"package/Plugins/Android/{name}.aar",
        }
    wheel = f"/onnxruntime_genai-{builder_version}-cp311-cp311-manylinux_2_28_x86_64.whl"
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("onnxruntime_genai/__init__.py", "")
        zf.writestr("onnxruntime_genai/models/builder.py", "# the builder")
    server.files[wheel] = buf.getvalue()
    pins["builder"] = {
        "url": server.url(wheel),
        "sha256": hashlib.sha256(buf.getvalue()).hexdigest(),
    }
    return pins


def test_a_phones_ort_libraries_come_from_pinned_aars_and_its_builder_from_the_same_genai(
    server, tmp_path
):
    from mnnrepro.engines.ort_genai.fetch import fetch_ort_genai, genai_library
    from mnnrepro.records import check_record

    site = tmp_path / "site"
    record = fetch_ort_genai("android-arm64", aar_pins(server), tmp_path / "cache", site)
    assert record["versions"] == {"onnxruntime": "1.29.0", "onnxruntime_genai": "0.15.2"}
    assert record["version"] == "1.29.0/genai-0.15.2" and record["python"] is None
    assert [a["member"] for a in record["aars"]] == [
        "package/Plugins/Android/onnxruntime.aar",
        "package/Plugins/Android/onnxruntime-genai.aar",
    ]
    assert record["builder"]["version"] == "0.15.2"
    assert record["library"]["path"] == "lib/libonnxruntime.so"
    assert record["library"]["sme2_kernels"] == ["kai_run_matmul_x_sme2_mopa"]
    assert genai_library(EngineRecord.of({"kind": "ort-genai", **record})) == (
        "lib/libonnxruntime-genai.so"
    )
    # the rule's record (fetch_ort_genai.py adds these) is one the records schema accepts
    check_record({"kind": "ort-genai", "engine": "ort", **record}, "engine", "wheels.json")
    files = sorted(f["path"] for f in record["files"])
    assert files == [
        "include/ort_genai_c.h",  # the genai AAR's: the C API tool is checked against it
        "lib/libonnxruntime-genai-jni.so",
        "lib/libonnxruntime-genai.so",
        "lib/libonnxruntime-jni.so",
        "lib/libonnxruntime.so",
        "onnxruntime_genai/models/builder.py",  # the builder only: no package to import
    ]


def test_a_phones_ort_pins_that_cannot_be_used_are_one_line_naming_the_key(server, tmp_path):
    from mnnrepro.engines.ort_genai.fetch import WheelError, fetch_ort_genai

    def refused(pins, error=WheelError) -> str:
        with pytest.raises(error) as err:
            fetch_ort_genai("android-arm64", pins, tmp_path / "cache", tmp_path / "site")
        assert "\n" not in str(err.value) and not (tmp_path / "site").exists()
        return str(err.value)

    pins = aar_pins(server)
    pins["onnxruntime_genai"]["member"] = "package/Plugins/Android/other.aar"
    assert refused(pins).startswith(
        "config key `ort_genai.aars.android-arm64.onnxruntime_genai.member`: "
        "onnxruntime-genai.tgz holds no file package/Plugins/Android/other.aar"
    )
    neon_only = ORT_LIBRARY.replace(b"_sme2_", b"_neon_")
    assert refused(aar_pins(server, library=neon_only)).startswith(
        "config key `ort_genai.aars.android-arm64`: its libonnxruntime.so holds no KleidiAI "
        "SME2 kernel"
    )
    assert refused(aar_pins(server, builder_version="0.18.0")).startswith(
        "config key `ort_genai.aars.android-arm64.builder`: genai 0.18.0's builder for the "
        "genai 0.15.2 AAR"
    )
    pins = aar_pins(server)
    pins["onnxruntime"]["sha256"] = "0" * 64
    assert refused(pins, FetchError).startswith(
        "config key `ort_genai.aars.android-arm64.onnxruntime`: "
    )


def test_a_wheel_is_read_from_its_file_name_and_a_kind_refuses_what_it_cannot_run():
    from mnnrepro.engines.ort_genai.fetch import WheelError, wheel_identity
    from mnnrepro.fetch import wheel_name

    assert wheel_name("https://x/ruamel_yaml-0.19.1-py3-none-any.whl") == {
        "name": "ruamel_yaml",
        "version": "0.19.1",
        "python": "py3",
        "abi": "none",
        "arch": None,
    }
    arm = "https://x/onnxruntime-1.32.0-cp311-cp311-manylinux_2_28_aarch64.whl"
    assert wheel_name(arm)["arch"] == "aarch64" and wheel_name("https://x/a.tar.gz") is None
    # ONNX Runtime's wheels carry compiled CPython extensions: a pure or abi3 one is refused
    for url in (
        "https://x/onnxruntime-1.0-py3-none-any.whl",
        arm.replace("cp311-cp311", "cp311-abi3"),
    ):
        with pytest.raises(WheelError, match=r"^config key `k`: .* is not a CPython wheel"):
            wheel_identity(url, "k")
