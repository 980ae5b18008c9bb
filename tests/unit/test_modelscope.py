"""ModelScope model source: the real `modelscope` client against a loopback hub endpoint."""

from __future__ import annotations

import hashlib
import os

import pytest
from loopback_modelscope import LoopbackModelScope

from mnnrepro.models.modelscope import ModelSourceError, fetch_model

FILES = {
    "config.json": b'{"llm_model": "llm.mnn"}',
    "llm.mnn": os.urandom(2048),
    "llm.mnn.weight": os.urandom(400_000),
    "visual/visual.mnn": os.urandom(4096),
}


@pytest.fixture
def hub():
    h = LoopbackModelScope()
    h.add("MNN/Tiny-MNN", "v1.0", FILES)
    yield h
    h.close()


def spec_for(hub, **over):
    return {"id": "MNN/Tiny-MNN", "revision": "v1.0", "endpoint": hub.endpoint, **over}


def test_download_verify_and_second_run_moves_zero_bytes(hub, tmp_path):
    pinned = {p: hashlib.sha256(b).hexdigest() for p, b in FILES.items()}
    manifest = fetch_model(
        spec_for(hub, files_sha256=pinned), tmp_path / "cache", tmp_path / "model", "tiny"
    )
    assert {f["path"]: f["sha256"] for f in manifest["files"]} == pinned
    assert manifest["hashes"] == "pinned"
    assert (tmp_path / "model" / "visual" / "visual.mnn").read_bytes() == FILES["visual/visual.mnn"]
    served = hub.bytes_served
    fetch_model(spec_for(hub, files_sha256=pinned), tmp_path / "cache", tmp_path / "model", "tiny")
    assert hub.bytes_served == served  # 0 bytes downloaded the second time
    assert hub.unknown in ([], ["/api/v1/repos/internalAccelerationInfo"] * len(hub.unknown))


def test_pinned_hash_mismatch_names_the_file(hub, tmp_path):
    pinned = {"llm.mnn.weight": "0" * 64}
    with pytest.raises(ModelSourceError, match=r"files_sha256`: llm.mnn.weight has sha256"):
        fetch_model(spec_for(hub, files_sha256=pinned), tmp_path / "c", tmp_path / "m", "tiny")


def test_unpinned_download_is_trust_on_first_use(hub, tmp_path):
    manifest = fetch_model(spec_for(hub), tmp_path / "c", tmp_path / "m", "tiny")
    assert manifest["hashes"] == "trust on first use"


def test_interrupted_download_resumes(hub, tmp_path):
    hub.cut_after["llm.mnn.weight"] = 10_000
    manifest = fetch_model(spec_for(hub), tmp_path / "c", tmp_path / "m", "tiny")
    got = {f["path"]: f["sha256"] for f in manifest["files"]}
    assert got["llm.mnn.weight"] == hashlib.sha256(FILES["llm.mnn.weight"]).hexdigest()
    total = sum(len(b) for b in FILES.values())
    assert hub.bytes_served == total  # resumed from byte 10000, nothing fetched twice


def test_unknown_revision_is_a_clear_error(hub, tmp_path):
    with pytest.raises(ModelSourceError, match=r"`models.tiny.modelscope`.*revision 'v9'"):
        fetch_model(spec_for(hub, revision="v9"), tmp_path / "c", tmp_path / "m", "tiny")


def test_the_manifest_records_the_commit_a_branch_resolved_to(hub, tmp_path):
    """`master` moves; the manifest says which commit this download was."""
    commit = hub.add("MNN/Tiny-MNN", "master", FILES)
    manifest = fetch_model(spec_for(hub, revision="master"), tmp_path / "c", tmp_path / "m", "t")
    assert manifest["revision"] == "master" and manifest["resolved_commit"] == commit
    assert set(manifest["file_revisions"]) == set(FILES)
    # the report says so: a branch is not a pin, and unpinned hashes were trusted
    from mnnrepro.analysis.report import model_pin

    said = model_pin(manifest)
    assert "`master` (**not a commit**" in said and commit in said
    assert "trusted on first use" in said
    pinned = {**manifest, "revision": commit, "hashes": "pinned"}
    assert model_pin(pinned) == f"; MNN/Tiny-MNN at revision `{commit}`"


def test_an_existing_modelscope_cache_is_used(hub, tmp_path, monkeypatch):
    shared = tmp_path / "my-modelscope-cache"
    monkeypatch.setenv("MODELSCOPE_CACHE", str(shared))
    manifest = fetch_model(spec_for(hub), tmp_path / "unused", tmp_path / "m", "tiny")
    assert manifest["cache"] == str(shared) and not (tmp_path / "unused").exists()
    assert any(p.name == "llm.mnn.weight" for p in shared.rglob("*"))
    served = hub.bytes_served
    fetch_model(spec_for(hub), tmp_path / "unused", tmp_path / "m2", "tiny")
    assert hub.bytes_served == served  # a second experiment reuses the user's cache
