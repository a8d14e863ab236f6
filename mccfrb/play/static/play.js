// The page of `python -m experiments.play`: plain JavaScript, no build step.
"use strict";

let shown = null;  // The last answer of the server: {game, stats, hand, ...}.
let busy = false;
let answered = 0;  // Requests answered, in data-answered: tests wait on it.

const $ = (id) => document.getElementById(id);

async function api(method, path, body) {
  const options = {method};
  if (body !== undefined) {
    options.headers = {"Content-Type": "application/json"};
    options.body = JSON.stringify(body);
  }
  const response = await fetch(path, options);
  let data;
  try {
    data = await response.json();
  } catch (e) {
    data = {error: `the server answered HTTP ${response.status}`};
  }
  if (!response.ok) {
    const error = new Error(data.error || `HTTP ${response.status}`);
    error.status = response.status;
    throw error;
  }
  return data;
}

// Numbers as the page shows them: at most 3 decimals, a sign on winnings.
function number(x) {
  return String(Math.round(x * 1000) / 1000);
}
function signed(x) {
  return (x > 0 ? "+" : "") + number(x);
}

function showError(error) {
  $("error-text").textContent = error ? `Error: ${error.message}` : "";
  $("error").hidden = !error;
  $("reload").hidden = !(error && error.status === 410);
}

function cardElement(card) {
  const el = document.createElement("span");
  el.className = "card" + (card && card.red ? " red" : "") + (card ? "" : " back");
  el.textContent = card ? `${card.rank}${card.suit}` : "";
  el.title = card ? `${card.rank}${card.suit}` : "hidden card";
  return el;
}

function fillCards(id, cards) {
  $(id).replaceChildren(...cards.map(cardElement));
}

function renderStats(stats) {
  $("hands").textContent = stats.hands;
  $("total").textContent = signed(stats.total);
  $("mean").textContent = stats.mean === null ? "n/a" : signed(stats.mean);
  $("ci").textContent = stats.ci95 === null ? "n/a"
      : `[${number(stats.ci95[0])}, ${number(stats.ci95[1])}]`;
}

function renderStrategy(decisions) {
  const blocks = decisions.map((d) => {
    const block = document.createElement("div");
    block.className = "decision";
    const head = document.createElement("p");
    head.textContent = `Event ${d.step + 1} of the log, at information set:`;
    const key = document.createElement("pre");
    key.textContent = d.infoset;
    const table = document.createElement("table");
    for (const a of d.actions) {
      const row = table.insertRow();
      row.insertCell().textContent = a.label;
      const bar = document.createElement("span");
      bar.className = "bar";
      bar.style.width = `${Math.round(a.prob * 100)}%`;
      const barCell = row.insertCell();
      barCell.className = "bar-cell";
      barCell.append(bar);
      row.insertCell().textContent = a.prob.toFixed(3);
      row.insertCell().textContent = a.label === d.chosen ? "\u25C0 played" : "";
    }
    block.append(head, key, table);
    return block;
  });
  $("strategy").replaceChildren(...blocks);
  if (!decisions.length) $("strategy").textContent = "The bot did not act in this hand.";
}

function render(data) {
  const poker = data.kind !== "generic";
  if (shown === null) $("openspiel").open = !poker;  // Then the person's choice.
  shown = data;
  $("match").textContent = `${data.game} \u2014 bot: ${data.bot} \u2014 seed ${data.seed}`;
  document.body.classList.toggle("generic", !poker);
  renderStats(data.stats);
  const hand = data.hand;
  $("next-hand").hidden = !!hand && hand.status !== "over";
  $("next-hand").textContent = hand ? "Deal the next hand" : "Deal the first hand";
  $("after-hand").hidden = !hand || hand.status !== "over";
  if (!hand) {
    $("status").textContent = "Press the button to deal the first hand.";
    return;
  }
  $("hand-number").textContent = `(hand ${hand.number})`;
  $("your-position").textContent = `(player ${hand.seat})`;
  $("bot-position").textContent = `(player ${hand.bot_seat})`;
  fillCards("your-cards", hand.your_cards);
  fillCards("public-cards", hand.public_cards);
  if (!hand.public_cards.length) {
    const slot = document.createElement("span");
    slot.className = "slot";
    slot.textContent = data.kind === "leduc_poker" ? "dealt after the first round"
        : "none in this game";
    $("public-cards").append(slot);
  }
  fillCards("bot-cards", hand.status === "over" ? hand.bot_cards
      : hand.your_cards.map(() => null));
  $("pot").textContent = hand.pot === null ? data.pot_note
      : `${hand.pot.total} (you ${hand.pot.you}, bot ${hand.pot.bot})`;
  $("observation").textContent = hand.observation === null
      ? "(this game has no observation string)" : hand.observation;
  $("information-state").textContent = hand.information_state;
  $("log").replaceChildren(...hand.log.map((e) => {
    const li = document.createElement("li");
    li.className = e.actor;
    li.textContent = e.text;
    return li;
  }));
  $("actions").replaceChildren(...hand.legal_actions.map((a) => {
    const button = document.createElement("button");
    button.type = "button";
    button.className = "action";
    button.dataset.action = a.id;
    button.textContent = a.label;
    button.addEventListener("click", () => act(a.id));
    return button;
  }));
  if (hand.status === "over") {
    const w = hand.winnings;
    $("status").textContent = w > 0 ? `You won ${number(w)}.`
        : w < 0 ? `You lost ${number(-w)}.` : "A draw.";
    renderStrategy(hand.bot_strategy);
  } else {
    $("status").textContent = "Your turn.";
  }
}

async function request(method, path, body) {
  if (busy) return;
  busy = true;
  document.querySelectorAll("button.action, #next-hand").forEach((b) => { b.disabled = true; });
  try {
    render(await api(method, path, body));
    showError(null);
  } catch (error) {
    showError(error);
  } finally {
    busy = false;
    document.body.dataset.answered = String(++answered);
    document.querySelectorAll("button.action, #next-hand").forEach((b) => { b.disabled = false; });
  }
}

function act(action) {
  return request("POST", "/api/act", {hand_id: shown.hand.hand_id, action});
}

function nextHand() {
  return request("POST", "/api/new_hand",
                 {after: shown && shown.hand ? shown.hand.hand_id : null});
}

$("next-hand").addEventListener("click", nextHand);
$("reload").addEventListener("click", () => window.location.reload());
request("GET", "/api/state");
