"""The play page in a real browser: headless Chromium plays whole hands by
clicking, and the page's cards, pot, log and winnings are checked against
the server's OpenSpiel state.

Needs Debian's chromium and chromium-driver and selenium (the test extra);
skips without them, saying how to install them, and fails without them
under CI (the environment variable CI set).
"""

import subprocess
import sys

import numpy as np
import pytest

from mccfrb import play
from mccfrb.play import browser
from tests.conftest import skip_unless_ci
from tests.test_play import GOOFSPIEL3
from tests.test_play import ROOT
from tests.test_play import Server
from tests.test_play import trained

# A study or a long check: left out of the fast loop (tests/conftest.py).
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module", autouse=True)
def needs_browser():
  """Skips without a browser, saying what to install; fails instead under
  CI (the environment variable CI set), whose .ci/run installs one."""
  missing = browser.missing()
  if missing is not None:
    skip_unless_ci(f"needs a browser: {missing}")


SUITS = {"leduc_poker": "\u2660\u2665", "kuhn_poker": "\u2660"}


@pytest.fixture(scope="module")
def driver():
  with browser.chromium() as d:
    yield d


@pytest.fixture
def served():
  servers = []
  def serve(name, seed=0, port=0):
    game, tree, table = trained(name)
    session = play.PlaySession(game, play.Bot(tree, table), seed=seed,
                               description="cfr_plus, 200 iterations")
    server = Server(session, port)
    server.tree, server.table = tree, table
    servers.append(server)
    return server
  yield serve
  for s in servers:
    s.close()


def texts(driver, css):
  return [e.text for e in driver.find_elements("css selector", css)]


def text(driver, element_id):
  return driver.find_element("id", element_id).text


def card_name(name, c):
  """The card the page must show for OpenSpiel card id `c` (written here
  from OpenSpiel's rules, not taken from mccfrb.play.views)."""
  if name == "kuhn_poker":
    return "JQK"[c] + "\u2660"
  return "JQK"[c // 2] + SUITS[name][c % 2]


def contributions(name, state):
  """Chips each player has put in, from OpenSpiel's state."""
  if name == "leduc_poker":
    return [int(100 - m) for m in state.money()]  # Leduc starts with 100 each.
  put = [1, 1]
  for i, action in enumerate(state.history()[2:]):
    put[i % 2] += action  # Kuhn: 1 = Bet.
  return put


def number(text_shown):
  return float(text_shown.replace("+", ""))


def check_turn(driver, server, name):
  """The page at the person's turn against the server's state."""
  hand = server.session.hand
  state, seat = hand.state, hand.seat
  assert state.current_player() == seat
  assert text(driver, "status") == "Your turn."
  assert text(driver, "your-position") == f"(player {seat})"
  buttons = browser.action_buttons(driver)
  assert [b.text for b in buttons] == [state.action_to_string(seat, a)
                                       for a in state.legal_actions()]
  assert [int(b.get_attribute("data-action")) for b in buttons] == (
      state.legal_actions())
  assert texts(driver, "#log li") == [e["hidden_text"] for e in hand.events]
  page = driver.find_element("tag name", "body").text
  if name in SUITS:
    history = state.history()
    assert texts(driver, "#your-cards .card") == [card_name(name, history[seat])]
    bot_card = card_name(name, history[1 - seat])
    backs = driver.find_elements("css selector", "#bot-cards .card")
    assert len(backs) == 1 and backs[0].text == ""
    assert "back" in backs[0].get_attribute("class").split()
    assert bot_card not in page  # Never shown before the hand ends.
    public = state.public_card() if name == "leduc_poker" else -1
    assert texts(driver, "#public-cards .card") == (
        [card_name(name, public)] if public >= 0 else [])
    put = contributions(name, state)
    assert text(driver, "pot") == (
        f"{sum(put)} (you {put[seat]}, bot {put[1 - seat]})")
  else:
    assert driver.find_element("id", "observation").get_attribute(
        "textContent") == state.observation_string(seat)
    assert driver.find_element("id", "information-state").get_attribute(
        "textContent") == state.information_state_string(seat)
    assert text(driver, "pot") == server.session.view.pot_note
    assert not driver.find_element("id", "your-cards").is_displayed()


def check_end(driver, server, name, winnings):
  """The page after a hand: result, revealed cards, strategy, winnings."""
  hand = server.session.hand
  state, seat = hand.state, hand.seat
  assert state.is_terminal() and not browser.action_buttons(driver)
  won = state.returns()[seat]
  winnings.append(won)
  assert text(driver, "status") == (
      f"You won {won:g}." if won > 0 else f"You lost {-won:g}." if won < 0
      else "A draw.")
  assert texts(driver, "#log li") == [e["text"] for e in hand.events]
  if name in SUITS:
    assert texts(driver, "#bot-cards .card") == [
        card_name(name, state.history()[1 - seat])]
  # The bot's strategy: one block per decision, the table's probabilities.
  index = server.tree.infoset_index()
  blocks = driver.find_elements("css selector", "#strategy .decision")
  assert len(blocks) == len(hand.decisions)
  for block, decision in zip(blocks, hand.decisions):
    assert block.find_element("tag name", "pre").get_attribute(
        "textContent") == decision["infoset"]
    infoset = index[decision["infoset"]]
    rows = block.find_elements("css selector", "tr")
    probs = server.table[infoset, :server.tree.infoset_num_actions[infoset]]
    assert [r.find_elements("tag name", "td")[2].text for r in rows] == [
        f"{p:.3f}" for p in probs]
    played = [r.find_elements("tag name", "td")[0].text for r in rows
              if "played" in r.text]
    assert played == [decision["chosen"]]
  # Winnings: total, mean and the normal 95% interval, from OpenSpiel's
  # returns collected here.
  n = len(winnings)
  assert text(driver, "hands") == str(n)
  assert number(text(driver, "total")) == pytest.approx(sum(winnings),
                                                       abs=1e-3)
  assert number(text(driver, "mean")) == pytest.approx(np.mean(winnings),
                                                      abs=1e-3)
  if n < 2:
    assert text(driver, "ci") == "n/a"
  else:
    half = 1.96 * np.std(winnings, ddof=1) / np.sqrt(n)
    low, high = (float(x) for x in text(driver, "ci").strip("[]").split(","))
    assert low == pytest.approx(np.mean(winnings) - half, abs=2e-3)
    assert high == pytest.approx(np.mean(winnings) + half, abs=2e-3)


@pytest.mark.parametrize("name,hands", [("leduc_poker", 4), ("kuhn_poker", 3),
                                        (GOOFSPIEL3, 2)])
def test_whole_hands_by_clicking(driver, served, name, hands):
  server = served(name, seed=3)
  browser.open_page(driver, server.url)
  assert text(driver, "next-hand") == "Deal the first hand"
  assert text(driver, "ci") == "n/a" and text(driver, "hands") == "0"
  rng = np.random.default_rng(1)
  winnings, seats = [], []
  for _ in range(hands):
    browser.play_hand(
        driver, choose=lambda buttons: buttons[rng.integers(len(buttons))],
        on_turn=lambda d: check_turn(d, server, name))
    seats.append(server.session.hand.seat)
    check_end(driver, server, name, winnings)
    assert not driver.find_element("id", "error").is_displayed()
  assert seats == [i % 2 for i in range(hands)]  # The person alternates.
  assert server.session.winnings == winnings


def test_a_page_of_a_restarted_server_offers_a_reload(driver, served):
  first = served("kuhn_poker", seed=1)
  browser.open_page(driver, first.url)
  browser.deal(driver)
  button = browser.action_buttons(driver)[0]
  port = first.httpd.server_address[1]
  first.close()
  second = served("kuhn_poker", seed=1, port=port)  # The same address.
  browser.click(driver, button)
  assert driver.find_element("id", "error").is_displayed()
  assert text(driver, "error-text") == (
      "Error: the server restarted; reload the page.")
  reload = driver.find_element("id", "reload")
  assert reload.is_displayed()
  reload.click()
  browser.wait(driver, lambda: browser.answered(driver) >= 1
               and text(driver, "next-hand") == "Deal the first hand")
  assert not driver.find_element("id", "error").is_displayed()
  browser.play_hand(driver)
  assert second.session.winnings and text(driver, "hands") == "1"


def test_the_screenshot_command(tmp_path):
  out = tmp_path / "play.png"
  result = subprocess.run(
      [sys.executable, "experiments/play.py", "--game=kuhn_poker",
       "--iterations=50", "--seed=3", "--hands=1", f"--screenshot={out}"],
      cwd=ROOT, capture_output=True, text=True, timeout=300)
  assert result.returncode == 0, result.stderr
  data = out.read_bytes()
  assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
