"""mccfrb.load_game: aliases, conversion, and the promised ValueErrors."""

import pyspiel
import pytest

import mccfrb


def test_matching_pennies_alias_is_turn_based_matrix_mp():
  game = mccfrb.load_game("matching_pennies")
  assert game.get_type().dynamics == pyspiel.GameType.Dynamics.SEQUENTIAL
  assert "matrix_mp" in str(game)


def test_simultaneous_goofspiel_is_converted():
  game = mccfrb.load_game("goofspiel(num_cards=3,imp_info=True)")
  assert game.get_type().dynamics == pyspiel.GameType.Dynamics.SEQUENTIAL
  assert "goofspiel" in str(game) and "num_cards=3" in str(game)


def test_accepts_loaded_game_object():
  game = pyspiel.load_game("kuhn_poker")
  assert mccfrb.load_game(game) is game


def test_unknown_name_suggests_close_names():
  with pytest.raises(ValueError, match=r"Unknown game 'leduc_pokr'.*leduc_poker"):
    mccfrb.load_game("leduc_pokr")
  with pytest.raises(ValueError, match=r"matching_pennies"):
    mccfrb.load_game("matching_penies")


@pytest.mark.parametrize("spec", [
    "leduc_poker(", "leduc_poker(players=2", "leduc_poker(players)",
    "leduc_poker(=2)", "leduc_poker(players=2))", "leduc poker",
    "goofspiel(num_cards=4,,imp_info=True)"])
def test_malformed_parameter_strings(spec):
  with pytest.raises(ValueError, match="Malformed game string"):
    mccfrb.load_game(spec)


def test_unknown_parameter_is_a_value_error():
  with pytest.raises(ValueError, match="could not load.*foo"):
    mccfrb.load_game("leduc_poker(foo=1)")


def test_wrong_number_of_players():
  with pytest.raises(ValueError, match="3 players.*two-player"):
    mccfrb.load_game("kuhn_poker(players=3)")


def test_general_sum_game_is_refused():
  with pytest.raises(ValueError, match="not zero- or constant-sum"):
    mccfrb.load_game("matrix_pd")
  assert mccfrb.load_game("matrix_pd", general=True).num_players() == 2


def test_non_string_is_a_type_error():
  with pytest.raises(TypeError):
    mccfrb.load_game(42)
