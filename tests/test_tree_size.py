"""The default max_nodes from the available memory, and the size refusal."""

import os

import pytest

import mccfrb
from mccfrb.games import tree_size

GIB = 2**30


@pytest.fixture
def memory(tmp_path, monkeypatch):
  """Points the memory readings at files of the test; returns a writer."""
  paths = {name: tmp_path / name for name in ("meminfo", "max", "current")}
  monkeypatch.setattr(tree_size, "_MEMINFO", str(paths["meminfo"]))
  monkeypatch.setattr(tree_size, "_CGROUP_MAX", str(paths["max"]))
  monkeypatch.setattr(tree_size, "_CGROUP_CURRENT", str(paths["current"]))

  def write(meminfo=None, cgroup_max=None, cgroup_current=None):
    for name, text in (("meminfo", meminfo), ("max", cgroup_max),
                       ("current", cgroup_current)):
      if text is not None:
        paths[name].write_text(text)
  return write


def _meminfo(available_kib):
  return ("MemTotal:       24684084 kB\nMemFree:        22290824 kB\n"
          f"MemAvailable:   {available_kib} kB\nBuffers:            6596 kB\n")


def test_default_is_half_the_available_memory_over_peak_bytes(memory):
  memory(_meminfo(8 * 2**20))  # 8 GiB.
  assert tree_size.available_memory() == 8 * GIB
  expected = 4 * GIB // tree_size.PEAK_BYTES_PER_NODE
  assert tree_size.default_max_nodes() == expected
  assert 10**7 < expected < 10**8


def test_a_cgroup_limit_lowers_the_default(memory):
  memory(_meminfo(8 * 2**20), cgroup_max=str(3 * GIB),
         cgroup_current=str(1 * GIB))
  assert tree_size.available_memory() == 2 * GIB
  memory(cgroup_max="max\n")  # No limit.
  assert tree_size.available_memory() == 8 * GIB


def test_without_meminfo_free_pages_are_used(memory, monkeypatch):
  pages = {"SC_AVPHYS_PAGES": 1000, "SC_PAGE_SIZE": 4096}
  monkeypatch.setattr(os, "sysconf", pages.__getitem__)
  assert tree_size.available_memory() == 4096 * 1000


def test_fallback_when_memory_cannot_be_read(memory, monkeypatch):
  def no_sysconf(name):
    raise ValueError(name)
  monkeypatch.setattr(os, "sysconf", no_sysconf)
  assert tree_size.available_memory() is None
  assert tree_size.default_max_nodes() == tree_size.FALLBACK_MAX_NODES


def test_default_is_clipped(memory):
  memory(_meminfo(1024))  # 1 MiB.
  assert tree_size.default_max_nodes() == tree_size.MIN_DEFAULT_MAX_NODES
  memory(_meminfo(2**40))  # 1 PiB.
  assert tree_size.default_max_nodes() == 2**31 - 1


def test_default_max_nodes_stops_the_walk(monkeypatch):
  monkeypatch.setattr(tree_size, "default_max_nodes", lambda: 5000)
  with pytest.raises(ValueError, match="more than max_nodes=5000 histories"):
    mccfrb.compile_tree("leduc_poker")
  with pytest.raises(ValueError, match="more than max_nodes=5000 histories"):
    mccfrb.CFRSolver("leduc_poker")


def test_trees_beyond_int32_ids_are_refused_whatever_max_nodes():
  with pytest.raises(ValueError, match=r"about 3\.8e\+09 histories, more than "
                     r"the 2\*\*31 - 1"):
    mccfrb.compile_tree("liars_dice(numdice=2)", max_nodes=2**31 - 1)


def test_a_game_estimated_just_above_max_nodes_is_refused_at_once():
  """Refused by the estimate as soon as it does not fit, not only at 10x:
  goofspiel 5 has 3.35 million histories; with max_nodes at 2 million the
  walk stops at its first estimate (after 2**16 nodes), in seconds."""
  import time  # pylint: disable=import-outside-toplevel
  start = time.perf_counter()
  with pytest.raises(ValueError, match="too large to compile.*above "
                     "max_nodes=2000000"):
    mccfrb.compile_tree("goofspiel(num_cards=5,imp_info=True,"
                        "points_order=random)", max_nodes=2_000_000)
  assert time.perf_counter() - start < 30  # The walk itself takes ~60 s.


def test_a_long_compile_shows_a_progress_bar(monkeypatch, capfd):
  from mccfrb.games import tree  # pylint: disable=import-outside-toplevel
  mccfrb.compile_tree("leduc_poker")
  assert "compiling the game tree" not in capfd.readouterr().err  # Fast.
  monkeypatch.setattr(tree, "BAR_AFTER_SECONDS", 0.0)
  compiled = mccfrb.compile_tree("leduc_poker")
  assert compiled.num_nodes == 9457
  assert "compiling the game tree" in capfd.readouterr().err
