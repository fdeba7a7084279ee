"""A Hub model id for the dense first stage while offline fails at once with one line (issue 42,
item 7): no download is tried, no retry loop."""

from __future__ import annotations

import socket

import pytest

from rcp_data.building import dense
from rcp_data.cli.main import main
from rcp_data.core.errors import InputError


@pytest.fixture
def empty_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    return tmp_path


def test_hf_hub_offline_refuses_an_uncached_id_without_touching_the_network(empty_cache,
                                                                             monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")

    def no_network(*a, **k):
        raise AssertionError("the network was tried")

    monkeypatch.setattr(socket, "create_connection", no_network)
    with pytest.raises(InputError) as err:
        dense.load_model("synthetic-org/no-such-model", device="cpu")
    assert str(err.value) == ("synthetic-org/no-such-model: the Hub model is not in the local "
                              "cache and HF_HUB_OFFLINE is set: download it once online, or "
                              "give a local folder")


def test_an_unreachable_hub_refuses_an_uncached_id(empty_cache, monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "ENDPOINT", "https://huggingface.co")
    calls = []

    def unreachable(address, timeout=None):
        calls.append((address, timeout))
        raise OSError("no route to host")

    monkeypatch.setattr(socket, "create_connection", unreachable)
    with pytest.raises(InputError) as err:
        dense.load_model("synthetic-org/no-such-model", device="cpu")
    assert "the Hub (https://huggingface.co) is unreachable" in str(err.value)
    assert calls == [(("huggingface.co", 443), dense.HUB_TIMEOUT_S)]


def test_suite_first_stage_offline_is_one_line_exit_2(empty_cache, monkeypatch, capsys):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    table = empty_cache / "grades.csv"
    table.write_text("query,document,grade\nplural marking?,SYNTHETIC the plural takes -ak,2\n"
                     "plural marking?,SYNTHETIC vowel harmony,0\n", encoding="utf-8")
    spec = empty_cache / "g.toml"
    assert main(["suite", "init", "g", "--from", str(table), "--grade-positive", "1", "--dense",
                 "mini=synthetic-org/no-such-model", "--out", str(spec), "--no-input"]) == 0
    capsys.readouterr()
    code = main(["suite", "first-stage", "--spec", str(spec), "--out", str(empty_cache / "in")])
    err = capsys.readouterr().err
    assert code == 2
    assert err.strip().splitlines() == [
        "rcp-data suite: error: synthetic-org/no-such-model: the Hub model is not in the local "
        "cache and HF_HUB_OFFLINE is set: download it once online, or give a local folder"]
