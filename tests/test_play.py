"""mccfrb.play without a browser: the session, the HTTP API, the binary and
`load_solver`."""

import json
import os
import pathlib
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import numpy as np
import pyspiel
import pytest
from scipy import stats

import mccfrb
from mccfrb import play
from mccfrb.experiment import registry
from mccfrb.play import server as server_lib
from mccfrb.play import views
from mccfrb.solvers import base

ROOT = pathlib.Path(__file__).resolve().parents[1]
GOOFSPIEL3 = "goofspiel(num_cards=3)"  # Random point order: chance events.
GAMES = ("leduc_poker", "kuhn_poker", GOOFSPIEL3, "matching_pennies")


def trained(game_name, iterations=200):
  """(game, tree, CFR+ average table); CFR+ on these games takes ms."""
  game = mccfrb.load_game(game_name)
  tree = mccfrb.compile_tree(game)
  runner = registry.make("cfr_plus", game, 0, tree)
  runner.run(iterations)
  return game, tree, runner.average_policy_table(tree)


@pytest.fixture(scope="module")
def bots():
  return {name: trained(name) for name in GAMES}


def new_session(bots, name, seed=0, table=None):
  game, tree, average = bots[name]
  return play.PlaySession(game, play.Bot(tree, average if table is None
                                         else table), seed=seed,
                          description="test bot")


class Server:
  """A session served on a free port in a thread, with urllib requests."""

  def __init__(self, session, port=0):
    self.session = session
    self.httpd = play.make_server(session, "127.0.0.1", port)
    self.url = play.url(self.httpd)
    self.thread = threading.Thread(target=self.httpd.serve_forever,
                                   kwargs={"poll_interval": 0.05}, daemon=True)
    self.thread.start()

  def close(self):
    self.httpd.shutdown()
    self.httpd.server_close()

  def request(self, method, path, body=None, raw=None):
    """(status, decoded JSON or text, content type)."""
    data = raw if raw is not None else (
        None if body is None else json.dumps(body).encode())
    req = urllib.request.Request(self.url.rstrip("/") + path, data=data,
                                 method=method)
    if data is not None:
      req.add_header("Content-Type", "application/json")
    try:
      with urllib.request.urlopen(req, timeout=10) as r:
        status, text, kind = r.status, r.read().decode(), r.headers[
            "Content-Type"]
    except urllib.error.HTTPError as e:
      status, text, kind = e.code, e.read().decode(), e.headers["Content-Type"]
    return status, (json.loads(text) if "json" in kind else text), kind

  def ok(self, method, path, body=None):
    status, answer, _ = self.request(method, path, body)
    assert status == 200, answer
    return answer


@pytest.fixture
def server_factory():
  servers = []
  def make(session):
    servers.append(Server(session))
    return servers[-1]
  yield make
  for s in servers:
    s.close()


def play_hands(server, num_hands, rng):
  """Plays whole hands through the API, the person choosing at random;
  returns [(answer at the end, the OpenSpiel history)]."""
  done, after = [], None
  for _ in range(num_hands):
    answer = server.ok("POST", "/api/new_hand", {"after": after})
    while answer["hand"]["status"] != "over":
      hand = answer["hand"]
      state = server.session.hand.state
      assert state.current_player() == hand["seat"]  # The person's turn.
      assert [a["id"] for a in hand["legal_actions"]] == state.legal_actions()
      choice = hand["legal_actions"][rng.integers(len(hand["legal_actions"]))]
      answer = server.ok("POST", "/api/act", {"hand_id": hand["hand_id"],
                                              "action": choice["id"]})
    after = answer["hand"]["hand_id"]
    done.append((answer, server.session.hand.state.history()))
  return done


@pytest.mark.parametrize("name", GAMES)
def test_whole_hands_pay_openspiels_returns_and_seats_alternate(
    bots, server_factory, name):
  server = server_factory(new_session(bots, name, seed=5))
  hands = play_hands(server, 8, np.random.default_rng(0))
  fresh = mccfrb.load_game(name)  # An independent replay of each history.
  winnings = []
  for number, (answer, history) in enumerate(hands, start=1):
    hand = answer["hand"]
    assert hand["number"] == number and hand["seat"] == (number - 1) % 2
    assert hand["bot_seat"] == 1 - hand["seat"]
    replay = fresh.new_initial_state()
    for action in history:
      replay.apply_action(action)
    assert replay.is_terminal()
    assert hand["returns"] == replay.returns()
    assert hand["winnings"] == replay.returns()[hand["seat"]]
    assert len(hand["log"]) == len(history)  # One event per action.
    winnings.append(hand["winnings"])
    stats_now = answer["stats"]
    assert stats_now["hands"] == number
    assert stats_now["total"] == pytest.approx(sum(winnings))
    # The bot acted at its own infosets, with the table's probabilities.
    game, tree, table = bots[name]
    index = tree.infoset_index()
    for decision in hand["bot_strategy"]:
      infoset = index[decision["infoset"]]
      assert tree.infoset_player[infoset] == hand["bot_seat"]
      probs = [a["prob"] for a in decision["actions"]]
      np.testing.assert_array_equal(
          probs, table[infoset, :tree.infoset_num_actions[infoset]])
      assert decision["chosen"] in [a["label"] for a in decision["actions"]]
  assert len({h["hand"]["seat"] for h, _ in hands}) == 2


def test_statistics_mean_and_normal_interval():
  assert play.summarize([]) == {"hands": 0, "total": 0.0, "mean": None,
                                "ci95": None}
  assert play.summarize([3.0])["ci95"] is None  # "n/a" until two hands.
  w = [2.0, -1.0, 5.0, -3.0]
  s = play.summarize(w)
  assert s["total"] == 3.0 and s["mean"] == 0.75
  half = 1.959963984540054 * np.std(w, ddof=1) / 2.0
  assert s["ci95"] == pytest.approx([0.75 - half, 0.75 + half], rel=1e-12)


def test_the_same_seed_replays_deals_and_bot_actions(bots):
  def transcript(seed):
    session = new_session(bots, "leduc_poker", seed=seed)
    out, after = [], None
    for _ in range(12):
      answer = session.new_hand(after)
      while answer["hand"]["status"] != "over":
        hand = answer["hand"]
        answer = session.act(hand["hand_id"], hand["legal_actions"][-1]["id"])
      after = answer["hand"]["hand_id"]
      out.append(session.hand.state.history())
    return out
  assert transcript(7) == transcript(7)
  assert transcript(7) != transcript(8)


def test_deals_follow_the_chance_probabilities(bots):
  # Leduc's first card: 6 cards, uniform; chi-square over 1200 hands.
  session = new_session(bots, "leduc_poker", seed=11)
  counts = np.zeros(6)
  after = None
  for _ in range(1200):
    answer = session.new_hand(after)
    counts[session.hand.state.history()[0]] += 1
    while answer["hand"]["status"] != "over":  # Fold at once.
      hand = answer["hand"]
      answer = session.act(hand["hand_id"], hand["legal_actions"][0]["id"])
    after = answer["hand"]["hand_id"]
  assert stats.chisquare(counts).pvalue > 1e-4, counts


def test_the_bot_samples_from_its_policy(bots):
  """Chi-square of the bot's actions per infoset against its table.

  The table is a random one (Dirichlet rows, far from uniform), so a bot
  that ignored it, or read the wrong row or column, fails: the same counts
  against uniform rows are rejected (checked below), and p > 1e-4 for the
  real rows fails by chance once in 10^4 runs.
  """
  game, tree, _ = bots["kuhn_poker"]
  rng = np.random.default_rng(3)
  table = np.zeros((tree.num_infosets, tree.max_actions))
  for i, n in enumerate(tree.infoset_num_actions):
    table[i, :n] = rng.dirichlet(np.full(n, 0.7))
  table[:, :2] = np.clip(table[:, :2], 0.08, 0.92)
  table /= table.sum(axis=1, keepdims=True)
  session = new_session(bots, "kuhn_poker", seed=1, table=table)
  index = tree.infoset_index()
  counts = np.zeros((tree.num_infosets, tree.max_actions))
  after = None
  person = np.random.default_rng(4)
  for _ in range(3000):
    answer = session.new_hand(after)
    while answer["hand"]["status"] != "over":
      hand = answer["hand"]
      answer = session.act(hand["hand_id"], hand["legal_actions"][
          person.integers(len(hand["legal_actions"]))]["id"])
    after = answer["hand"]["hand_id"]
    for d in answer["hand"]["bot_strategy"]:
      labels = [a["label"] for a in d["actions"]]
      counts[index[d["infoset"]], labels.index(d["chosen"])] += 1
  visited = counts.sum(axis=1) >= 100
  assert visited.sum() >= 8  # Most of Kuhn's 12 infosets.
  def pvalue(expected_rows):
    observed = counts[visited, :2]
    expected = expected_rows[visited, :2] * observed.sum(axis=1, keepdims=True)
    chi2 = ((observed - expected) ** 2 / expected).sum()
    return stats.chi2.sf(chi2, df=int(visited.sum()))
  assert pvalue(table) > 1e-4
  assert pvalue(np.full_like(table, 0.5)) < 1e-6  # The check has power.


def test_a_running_hand_never_shows_the_bots_private_information(bots):
  for name in ("leduc_poker", "kuhn_poker"):
    session = new_session(bots, name, seed=2)
    view = session.view
    rng = np.random.default_rng(9)
    after, checked = None, 0
    for _ in range(60):
      answer = session.new_hand(after)
      while answer["hand"]["status"] != "over":
        hand = answer["hand"]
        state = session.hand.state
        bot = hand["bot_seat"]
        bot_card = views.card_text(view.private_cards(state, bot)[0])
        text = json.dumps(answer, ensure_ascii=False)
        assert bot_card not in text, (bot_card, text)
        # The strings sent are the person's; none is the bot's (in Leduc not
        # even inside another string).
        assert hand["information_state"] == state.information_state_string(
            hand["seat"])
        assert hand["observation"] == state.observation_string(hand["seat"])
        secret = state.information_state_string(bot)
        assert secret not in _strings(answer)
        assert name == "kuhn_poker" or secret not in text
        assert "bot_cards" not in hand and "bot_strategy" not in hand
        assert "The bot is dealt a card" in [e["text"] for e in hand["log"]]
        checked += 1
        answer = session.act(hand["hand_id"], hand["legal_actions"][
            rng.integers(len(hand["legal_actions"]))]["id"])
      after = answer["hand"]["hand_id"]
      # Once over, the bot's card is shown.
      assert answer["hand"]["bot_cards"] == view.private_cards(
          session.hand.state, answer["hand"]["bot_seat"])
    assert checked > 60


def _strings(obj):
  """Every string value inside a JSON answer."""
  if isinstance(obj, str):
    return [obj]
  if isinstance(obj, dict):
    obj = list(obj.values())
  if isinstance(obj, list):
    return [s for item in obj for s in _strings(item)]
  return []


def test_hidden_moves_of_a_generic_game_show_only_when_the_hand_ends(bots):
  # Matching pennies made turn-based: player 1 must not see player 0's coin.
  session = new_session(bots, "matching_pennies", seed=0)
  first = session.new_hand()  # The person is player 0: no bot move yet.
  assert first["hand"]["seat"] == 0 and first["hand"]["log"] == []
  answer = session.act(first["hand"]["hand_id"], 0)
  second = session.new_hand(answer["hand"]["hand_id"])
  hand = second["hand"]
  assert hand["seat"] == 1 and hand["status"] == "your_turn"
  assert [e["text"] for e in hand["log"]] == [
      "Bot: acted (shown when the hand ends)"]
  assert "Bot: Heads" not in json.dumps(second) and "Bot: Tails" not in (
      json.dumps(second))
  over = session.act(hand["hand_id"], 1)["hand"]
  assert over["log"][0]["text"] in ("Bot: Heads", "Bot: Tails")
  assert over["log"][1]["text"] == "You: Tails"


def test_cards_and_pot_of_the_poker_views(bots):
  leduc = mccfrb.load_game("leduc_poker")
  state = leduc.new_initial_state()
  for action in (5, 0, 2, 2, 1, 3, 2):  # K-heart, J-spade; raise, raise, call.
    state.apply_action(action)
  view = views.view_for(leduc)
  assert view.private_cards(state, 0) == [views.card("K", "\u2665")]
  assert view.private_cards(state, 1) == [views.card("J", "\u2660")]
  assert view.public_cards(state) == [views.card("Q", "\u2665")]
  # Antes 1 + 1, raises of 2 in round 1 (5 each), player 0 raises 4 in round 2.
  assert view.pot(state, 0) == {"total": 14, "you": 9, "bot": 5}
  assert view.pot(state, 1) == {"total": 14, "you": 5, "bot": 9}
  kuhn = mccfrb.load_game("kuhn_poker")
  state = kuhn.new_initial_state()
  for action in (2, 0, 0, 1):  # K, J; pass, bet.
    state.apply_action(action)
  view = views.view_for(kuhn)
  assert view.pot(state, 0) == {"total": 3, "you": 1, "bot": 2}
  assert view.private_cards(state, 1) == [views.card("J", "\u2660")]
  assert views.view_for(mccfrb.load_game(GOOFSPIEL3)).kind == "generic"


# The HTTP API: pages, errors, restarts.

def test_the_page_and_its_files_are_served(bots, server_factory):
  server = server_factory(new_session(bots, "kuhn_poker"))
  status, page, kind = server.request("GET", "/")
  assert status == 200 and kind.startswith("text/html")
  assert 'src="play.js"' in page and 'href="play.css"' in page
  for path, kind_wanted in (("/play.js", "text/javascript"),
                            ("/play.css", "text/css")):
    status, _, kind = server.request("GET", path)
    assert status == 200 and kind.startswith(kind_wanted)
  state = server.ok("GET", "/api/state")
  assert state["hand"] is None and state["stats"]["hands"] == 0
  assert state["game"] == "kuhn_poker()" and state["kind"] == "kuhn_poker"


def test_bad_requests_get_a_4xx_json_error_and_the_server_goes_on(
    bots, server_factory):
  server = server_factory(new_session(bots, "leduc_poker", seed=1))
  hand = server.ok("POST", "/api/new_hand", {})["hand"]
  hand_id = hand["hand_id"]
  token = hand_id.split("-")[0]
  bad = [
      ("POST", "/api/act", None, b"{not json", 400, "not valid JSON"),
      ("POST", "/api/act", [1, 2], None, 400, "JSON object"),
      ("POST", "/api/act", {"action": 1}, None, 400, "'hand_id'"),
      ("POST", "/api/act", {"hand_id": hand_id}, None, 400, "'action'"),
      ("POST", "/api/act", {"hand_id": hand_id, "action": "Call"}, None, 400,
       "integer action id"),
      ("POST", "/api/act", {"hand_id": hand_id, "action": True}, None, 400,
       "integer action id"),
      ("POST", "/api/act", {"hand_id": hand_id, "action": 1.0}, None, 400,
       "integer action id"),
      ("POST", "/api/act", {"hand_id": hand_id, "action": 7}, None, 400,
       "not legal here"),
      ("POST", "/api/act", {"hand_id": 12, "action": 1}, None, 400,
       "must be a string"),
      ("POST", "/api/act", {"hand_id": "nonsense", "action": 1}, None, 400,
       "malformed hand id"),
      ("POST", "/api/act", {"hand_id": f"{token}-99", "action": 1}, None,
       404, "unknown hand"),
      ("POST", "/api/act", {"hand_id": "00000000-1", "action": 1}, None, 410,
       "the server restarted; reload the page"),
      ("POST", "/api/new_hand", {"after": hand_id}, None, 409,
       "still being played"),
      ("GET", "/nowhere", None, None, 404, "no such page"),
      ("POST", "/nowhere", {}, None, 404, "cannot POST"),
      ("GET", "/api/act", None, None, 405, "takes POST"),
      ("POST", "/api/state", {}, None, 405, "cannot POST"),
      ("PUT", "/api/act", {}, None, 405, "PUT is not allowed"),
      ("DELETE", "/", None, None, 405, "DELETE is not allowed"),
      ("PATCH", "/api/state", {}, None, 405, "PATCH is not allowed"),
      ("FROB", "/", None, None, 405, "FROB is not allowed"),
      ("POST", "/api/act", None, b"[" * 30000 + b"]" * 30000, 400,
       "not valid JSON"),
      ("POST", "/api/act", None, b'{"a":' * 10000 + b"1" + b"}" * 10000, 400,
       "not valid JSON"),
      ("POST", "/api/act", None, b'{"action": 1' + b"0" * 5000 + b"}", 400,
       "not valid JSON"),
  ]
  for method, path, body, raw, status_wanted, words in bad:
    status, answer, kind = server.request(method, path, body, raw)
    assert (status, kind) == (status_wanted, "application/json; charset=utf-8"
                              ), (path, body, raw, answer)
    assert set(answer) == {"error"} and words in answer["error"], answer
    # Still serving, and the hand is untouched.
    assert server.ok("GET", "/api/state")["hand"] == hand
  # An illegal action names the legal ones.
  _, answer, _ = server.request("POST", "/api/act",
                                {"hand_id": hand_id, "action": 0})
  assert "legal: 1 (Call), 2 (Raise)" in answer["error"]
  # Finish the hand; acting on it again, or dealing "after" an old hand, is a
  # conflict.
  answer = server.ok("GET", "/api/state")
  while answer["hand"]["status"] != "over":
    answer = server.ok("POST", "/api/act", {
        "hand_id": hand_id, "action": answer["hand"]["legal_actions"][0]["id"]})
  status, answer, _ = server.request("POST", "/api/act",
                                     {"hand_id": hand_id, "action": 1})
  assert status == 409 and "is over" in answer["error"]
  status, answer, _ = server.request("POST", "/api/new_hand", {})
  assert status == 409 and "'after'" in answer["error"]
  second = server.ok("POST", "/api/new_hand", {"after": hand_id})["hand"]
  status, answer, _ = server.request("POST", "/api/act",
                                     {"hand_id": hand_id, "action": 1})
  assert status == 409 and "the current hand is 2" in answer["error"]
  assert second["number"] == 2


def _connect(url):
  """A raw socket to the server at `url`."""
  host, port = url.split("//")[1].rstrip("/").rsplit(":", 1)
  return socket.create_connection((host, int(port)), timeout=10)


def _raw_exchange(url, request_bytes):
  """Sends raw bytes to the server; its status line."""
  with _connect(url) as s:
    s.sendall(request_bytes)
    return s.makefile("rb").readline().decode()


def test_raw_requests_negative_length_and_clients_that_go_away(
    bots, server_factory, capfd):
  server = server_factory(new_session(bots, "kuhn_poker", seed=1))
  status = _raw_exchange(server.url, b"POST /api/new_hand HTTP/1.1\r\n"
                         b"Host: x\r\nContent-Length: -5\r\n\r\n")
  assert " 400 " in status, status
  status = _raw_exchange(server.url, b"POST /api/new_hand HTTP/1.1\r\n"
                         b"Host: x\r\nContent-Length: many\r\n\r\n")
  assert " 400 " in status, status
  # A client that promises a body and disconnects: one line, no traceback.
  capfd.readouterr()
  s = _connect(server.url)
  s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\0\0\0\0\0\0\0")
  s.sendall(b"POST /api/new_hand HTTP/1.1\r\nHost: x\r\n"
            b"Content-Length: 100\r\n\r\n{")
  s.close()  # SO_LINGER 0: a reset, as a client killed mid-request.
  assert server.ok("GET", "/api/state")  # Still serving.
  err, deadline = "", time.monotonic() + 5
  while "went away" not in err and "Traceback" not in err and (
      time.monotonic() < deadline):
    time.sleep(0.05)
    err += capfd.readouterr().err
  assert "Traceback" not in err, err
  assert len(err.strip().splitlines()) <= 1, err


def _closed_by_server(sock):
  """Whether the server closes `sock` (within the socket's timeout)."""
  try:
    return sock.recv(1024) == b""
  except ConnectionResetError:
    return True


def test_idle_connections_hold_no_threads_and_the_page_answers(
    bots, server_factory):
  server = server_factory(new_session(bots, "kuhn_poker", seed=1))
  assert server.ok("GET", "/api/state")
  before = threading.active_count()
  idle = [_connect(server.url) for _ in range(100)]
  try:
    deadline = time.monotonic() + 10
    while server.httpd._pool._incoming and time.monotonic() < deadline:  # pylint: disable=protected-access
      time.sleep(0.01)
    assert server.ok("GET", "/api/state")["stats"]["hands"] == 0
    assert server.ok("POST", "/api/new_hand", {})["hand"]["number"] == 1
    # A thread per connection made 100 more; the pool has one waiting
    # thread and at most WORKERS workers.
    assert threading.active_count() - before <= server_lib.WORKERS + 1
    assert server.httpd.pool_threads() <= server_lib.WORKERS + 1
  finally:
    for s in idle:
      s.close()


def test_stalled_and_idle_clients_are_closed_and_cannot_block_the_page(
    bots, monkeypatch):
  monkeypatch.setattr(server_lib, "READ_TIMEOUT", 0.5)
  monkeypatch.setattr(server_lib, "TIMEOUT", 1.0)
  server = Server(new_session(bots, "kuhn_poker", seed=1))
  before = threading.active_count()
  try:
    stalled = []
    for _ in range(2 * server_lib.WORKERS):  # More than the workers.
      s = _connect(server.url)
      s.sendall(b"POST /api/new_hand HTTP/1.1\r\nHost: x\r\n"
                b"Content-Length: 100\r\n\r\n{")
      stalled.append(s)
    idle = [_connect(server.url) for _ in range(10)]
    assert threading.active_count() - before <= server_lib.WORKERS + 1
    # Each stalled request ends after READ_TIMEOUT, freeing its worker.
    assert server.ok("GET", "/api/state")["hand"] is None
    assert threading.active_count() - before <= server_lib.WORKERS + 1
    assert all(_closed_by_server(s) for s in stalled + idle)
  finally:
    for s in stalled + idle:
      s.close()
    server.close()


def test_a_page_of_a_restarted_server_is_told_to_reload(bots, server_factory):
  first = server_factory(new_session(bots, "kuhn_poker"))
  hand_id = first.ok("POST", "/api/new_hand", {})["hand"]["hand_id"]
  first.close()
  second = server_factory(new_session(bots, "kuhn_poker"))
  for path, body in (("/api/act", {"hand_id": hand_id, "action": 0}),
                     ("/api/new_hand", {"after": hand_id})):
    status, answer, _ = second.request("POST", path, body)
    assert status == 410, answer
    assert answer == {"error": "the server restarted; reload the page."}
  assert second.ok("GET", "/api/state")["hand"] is None


def test_concurrent_clicks_deal_one_hand(bots, server_factory):
  server = server_factory(new_session(bots, "kuhn_poker"))
  results = []
  threads = [threading.Thread(target=lambda: results.append(server.request(
      "POST", "/api/new_hand", {})[0])) for _ in range(8)]
  for t in threads:
    t.start()
  for t in threads:
    t.join()
  assert sorted(results).count(200) == 1 and results.count(409) == 7


# load_solver.

class _LaterSolver(mccfrb.CFRSolver):
  """A solver class defined after mccfrb was imported (like a new module)."""


@pytest.mark.parametrize("make", [
    lambda: mccfrb.CFRSolver("kuhn_poker", variant="cfr+"),
    lambda: mccfrb.MCCFRbSolver("kuhn_poker", seed=1),
    lambda: mccfrb.OutcomeSamplingSolver("kuhn_poker", seed=1),
    lambda: mccfrb.ExternalSamplingSolver("kuhn_poker", seed=1),
    lambda: mccfrb.PublicSamplingSolver("kuhn_poker", seed=1),
    lambda: _LaterSolver("kuhn_poker"),
])
def test_load_solver_dispatches_on_the_recorded_class(tmp_path, make):
  solver = make()
  solver.run(20)
  path = tmp_path / "solver.npz"
  solver.save(path)
  loaded = mccfrb.load_solver(path)
  assert type(loaded) is type(solver)
  np.testing.assert_array_equal(loaded.average_policy_table(),
                                solver.average_policy_table())
  assert loaded.num_iterations == 20
  assert type(mccfrb.load_solver(path, "kuhn_poker")) is type(solver)
  with pytest.raises(ValueError, match="was saved for kuhn_poker"):
    mccfrb.load_solver(path, "leduc_poker")


def test_load_solver_refuses_unknown_classes_and_foreign_files(tmp_path):
  solver = mccfrb.CFRSolver("kuhn_poker")
  path = tmp_path / "solver.npz"
  solver.save(path)
  meta, tables = base.read_checkpoint(path)
  meta["class"] = "NoSuchSolver"
  np.savez(tmp_path / "odd.npz", meta=np.array(json.dumps(meta)), **tables)
  with pytest.raises(ValueError, match="'NoSuchSolver', which is not a known "
                     "solver; known: .*CFRSolver"):
    mccfrb.load_solver(tmp_path / "odd.npz")
  np.save(tmp_path / "plain.npy", np.zeros(3))
  with pytest.raises(ValueError, match="not an mccfrb checkpoint"):
    mccfrb.load_solver(tmp_path / "plain.npy")


# The binary.

def run_play(*args, by_path=True):
  command = ([sys.executable, "experiments/play.py"] if by_path
             else [sys.executable, "-m", "experiments.play"])
  return subprocess.run([*command, *args], cwd=ROOT, capture_output=True,
                        text=True, timeout=300, env=dict(os.environ))


def test_the_binary_refuses_bad_input_in_one_line(tmp_path):
  kuhn = mccfrb.CFRSolver("kuhn_poker")
  kuhn.run(5)
  kuhn.save(tmp_path / "kuhn.npz")
  cases = [
      ([f"--checkpoint={tmp_path}/kuhn.npz", "--game=leduc_poker"],
       "was saved for kuhn_poker(), not leduc_poker()"),
      ([f"--checkpoint={tmp_path}/kuhn.npz", "--solver=cfr"],
       "not both"),
      ([f"--checkpoint={tmp_path}/none.npz"], "no such checkpoint file"),
      (["--solver=nope"], "Unknown algorithm(s) 'nope'"),
      (["--game=kuhn_poker(players=3)"], "has 3 players"),
  ]
  procs = [subprocess.Popen([sys.executable, "experiments/play.py", *args],
                            cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
           for args, _ in cases]
  for proc, (args, words) in zip(procs, cases):
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 1, (args, out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("play: error: "), err
    assert words in lines[0], (args, lines)
    assert "serving" not in out


def _serve(args, by_path):
  """Starts the binary; returns (process, the URL it prints)."""
  command = ([sys.executable, "experiments/play.py"] if by_path
             else [sys.executable, "-m", "experiments.play"])
  proc = subprocess.Popen([*command, "--port=0", *args], cwd=ROOT,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True)
  lines = []
  for line in proc.stdout:
    lines.append(line)
    if line.startswith("play: serving"):
      return proc, line.split(" at ")[1].split()[0], lines
  proc.kill()
  raise AssertionError(f"no URL printed: {lines} {proc.stderr.read()}")


@pytest.mark.parametrize("by_path", [True, False])
def test_the_binary_serves_a_trained_or_loaded_bot(tmp_path, by_path):
  if by_path:
    args = ["--game=kuhn_poker", "--solver=cfr_plus", "--iterations=50",
            "--seed=4"]
  else:
    solver = mccfrb.CFRSolver("kuhn_poker", variant="cfr+")
    solver.run(30)
    solver.save(tmp_path / "kuhn.npz")
    args = ["--game=kuhn_poker", f"--checkpoint={tmp_path}/kuhn.npz",
            "--seed=4"]
  proc, url, lines = _serve(args, by_path)
  try:
    assert url.startswith("http://127.0.0.1:")
    assert "seed 4" in lines[0]
    with urllib.request.urlopen(url + "api/state", timeout=10) as r:
      state = json.loads(r.read())
    assert state["game"] == "kuhn_poker()" and state["seed"] == 4
    want = ("cfr_plus, 50 iterations" if by_path
            else "CFRSolver from kuhn.npz, 30 iterations")
    assert state["bot"].startswith(want), state["bot"]
    req = urllib.request.Request(url + "api/new_hand", data=b"{}",
                                 method="POST")
    with urllib.request.urlopen(req, timeout=10) as r:
      assert json.loads(r.read())["hand"]["number"] == 1
  finally:
    proc.terminate()
    proc.communicate(timeout=30)


def test_setup_installs_every_file_of_the_page():
  import fnmatch  # pylint: disable=g-import-not-at-top
  import re  # pylint: disable=g-import-not-at-top
  setup = (ROOT / "setup.py").read_text()
  patterns = re.findall(r'"(static/[^"]+)"', setup)
  static = ROOT / "mccfrb" / "play" / "static"
  files = [f"static/{p.name}" for p in static.iterdir()]
  assert {"static/index.html", "static/play.js", "static/play.css"} <= set(files)
  for f in files:
    assert any(fnmatch.fnmatch(f, p) for p in patterns), (f, patterns)
