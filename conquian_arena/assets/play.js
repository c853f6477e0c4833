const TOKEN = JSON.parse(document.getElementById("token").textContent);
const HEAD = {"X-Conquian-Token": TOKEN, "Content-Type": "application/json"};
let snap = null, busy = false;
async function api(path, body) {
  const r = await fetch(path, body === undefined ? {headers: HEAD} : {method: "POST", headers: HEAD,
    body: JSON.stringify(body)});
  if (!r.ok && r.status !== 409) throw new Error(`${path}: ${r.status}`);  // 409: a snapshot, with its error
  return r.json();
}
function groupsHtml(groups) { return meldHtml(groups, ""); }
// an element is rebuilt only when its markup changes: a poll answered with the same table
// (a long poll's timeout, a newer version of the same view) then leaves every element in
// place, so a link being clicked or a focused button is not swapped under the pointer
const drawn = new WeakMap();
function put(id, html) {
  const el = typeof id === "string" ? document.getElementById(id) : id;
  if (drawn.get(el) !== html) { el.innerHTML = html; drawn.set(el, html); }
  return el;
}
function say(id, text) {
  const el = document.getElementById(id);
  if (el.textContent !== text) el.textContent = text;
}
function render(s) {
  if (snap && (s.game < snap.game || (s.game === snap.game && s.version < snap.version))) return;
  snap = s;
  const me = s.me, opp = 1 - me, legal = new Set(s.legal || []), mine = s.status === "your-move" && !busy;
  const over = s.status === "over";
  say("title", `you against ${s.opponent}${s.rules && s.rules !== "standard" ? ` (${s.rules} variant)` : ""}` +
    (s.seed == null ? "" : `, deal seed ${s.seed}`));
  // the opponent
  const oppHand = over && s.reveal ? s.reveal.hands[opp].map(c => cardSvg(c)).join("")
    : Array.from({length: s.opp_hand || 0}, () => backSvg()).join("");
  say("opp-name", `${s.bot}${s.to_move === opp && !over ? " (to move)" : ""}: ${s.opp_hand} cards in hand`);
  put("opp-hand", oppHand || EMPTY);
  document.getElementById("opp-hand").dataset.count = s.opp_hand;
  put("opp-meld", groupsHtml(s.opp_meld || []));
  // the middle
  put("stock", s.stock ? backSvg() : EMPTY);
  say("stock-count", `stock: ${s.stock}`);
  const face = document.getElementById("face");
  const laying = s.laying || [];
  face.dataset.card = s.face >= 0 ? cardName(s.face) : "";
  put(face, laying.length ? laying.map((c, k) => cardSvg(c, "laying")).join("")
    : s.face >= 0 ? cardSvg(s.face) : '<span class="empty">none</span>');
  face.className = laying.length ? "group" : "";
  say("face-text", laying.length
    ? (s.laying_mine ? "your meld, not played yet" : "being melded by the bot") : s.face_text || "");
  const dead = s.dead || [];
  put("dead", dead.map(c => cardSvg(c, "small")).join("") || EMPTY);
  document.getElementById("dead").dataset.cards = namesOf(dead);
  say("dead-count", `dead pile (${dead.length})`);
  // you
  put("my-meld", groupsHtml(s.meld || []));
  const hand = document.getElementById("hand");
  hand.dataset.cards = namesOf(s.hand || []);
  let hint = "";
  put(hand, (s.hand || []).map(c => {
    const name = cardName(c);
    let move = "";
    if (mine && legal.has("meld " + name)) { move = "meld " + name; hint = "click a card to lay it with the others"; }
    else if (mine && legal.has("discard " + name)) { move = "discard " + name; hint = "click a card to discard it"; }
    return move ? cardSvg(c, "playable", `data-move="${move}" role="button" aria-label="${move}"`) : cardSvg(c);
  }).join("") || EMPTY);
  say("hand-hint", hint);
  say("my-name", `you${s.to_move === me && !over ? " (to move)" : ""}`);
  // buttons: only the legal moves are enabled
  for (const b of document.querySelectorAll(".buttons button[data-move]")) {
    const ok = mine && (b.dataset.move === "back" ? !!s.back : legal.has(b.dataset.move));
    b.disabled = !ok;
    b.hidden = (b.dataset.move === "force" || b.dataset.move === "no force") && !legal.has(b.dataset.move);
    if (b.dataset.move === "back") b.title = s.back || "nothing to take back";
  }
  document.getElementById("resign").disabled = over;
  document.getElementById("new").hidden = !over;
  // what happens
  const status = document.getElementById("status");
  // while a move travels nothing can be clicked, so the page does not say "your-move" (a poll
  // answered meanwhile renders the new snapshot with every button still disabled)
  status.dataset.status = s.status === "your-move" && busy ? "sending" : s.status;
  status.dataset.version = s.version;
  let text = "";
  if (over) {
    text = `<div class="result" id="result">${esc(s.result || "game over")}</div>`;
    if (s.saved) text += `<div>${esc(s.saved)}</div>`;
    if (s.played) text += `<div><a href="replay#game=${s.played - 1}" target="_blank">watch the replay</a></div>`;
  } else if (s.status === "your-move") {
    text = `<div><b>your move</b> (move ${s.move + 1})</div><div>${esc(s.question || "")}</div>`;
  } else {
    text = `<div>${esc(s.bot)} is thinking...</div>`;
  }
  if (s.error) text += `<div class="error">${esc(s.error)}</div>`;
  put(status, text);
  const log = document.getElementById("log");
  const lines = s.log || [];
  put(log, lines.map(l => {
    const cls = (l.seat === me ? "you" : "bot") + (l.text.startsWith("(") ? " note" : "");
    return `<li class="${cls}">${esc(l.text)}</li>`;
  }).join(""));
  log.scrollTop = log.scrollHeight;
}
async function send(move) {
  if (busy || !snap || snap.status !== "your-move") return;
  busy = true;
  render(snap);  // everything disabled while the move travels
  let answer = snap;
  try { answer = await api("api/move", {move, version: snap.version}); } catch (e) { /* the poll goes on */ }
  busy = false;
  render(answer);
  // a poll may have brought a newer state while the move travelled: it was drawn with every
  // button disabled ("sending"), and the older answer is not drawn over it; draw it again, now
  // clickable (before, the page stayed "sending" until the next poll, 20 s later)
  if (snap !== answer) render(snap);
}
document.addEventListener("click", e => {
  const el = e.target.closest("[data-move]");
  if (el && !el.disabled) send(el.dataset.move);
});
document.getElementById("resign").onclick = async () => {
  if (confirm("Resign this game?")) render(await api("api/resign", {}));
};
document.getElementById("new").onclick = async () => { snap = null; render(await api("api/new", {})); };
async function poll() {
  for (;;) {
    try { render(await api(`api/state?game=${snap ? snap.game : -1}&after=${snap ? snap.version : 0}`)); }
    catch (e) { await new Promise(r => setTimeout(r, 1000)); }
  }
}
api("api/state").then(render).then(poll);
