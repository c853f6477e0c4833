const INDEX = JSON.parse(document.getElementById("index").textContent);
const cache = {};
let game = null, step = 0;
function loadGame(i) {
  if (!(i in cache)) {
    const el = document.querySelector(`script[data-game="${i}"]`);
    cache[i] = el ? JSON.parse(el.textContent) : null;
    if (cache[i]) cache[i].steps.forEach((s, k, all) => { if (!("m" in s)) s.m = all[k - 1].m; });
  }
  return cache[i];
}
function sourceText(s, names) {
  return `${s.src === 1 ? "discarded" : "turned"} by ${names[s.o]}${s.p ? ", refused once" : ""}`;
}
function seatHtml(s, seat) {
  const names = game.names, toMove = s.ph !== 4 && s.t === seat;
  const hand = cardsOf(s.h[seat]), laying = s.ph === 1 && s.t === seat ? s.c : 0;
  const meldCards = [].concat(...s.m[seat]).sort((a, b) => a - b);
  let who = esc(names[seat]);
  if (toMove) who += ` &mdash; to move (${PHASES[s.ph]})`;
  if (s.ph === 4 && s.w === seat) who += " &mdash; won";
  const handCards = hand.map(c => {
    const lay = Math.floor(laying / 2 ** c) % 2 === 1;
    return cardSvg(c, lay ? "laying lifted" : "");
  }).join("");
  return `<div class="who${toMove ? " to-move" : ""}">${who}</div>` +
    `<div class="row"><div><div class="label">hand (${hand.length})</div>` +
    `<div class="hand" data-seat="${seat}" data-cards="${namesOf(hand)}">${handCards || EMPTY}</div></div>` +
    `<div><div class="label">meld (${meldCards.length})</div>` +
    `<div class="meld" data-seat="${seat}" data-cards="${namesOf(meldCards)}">${meldHtml(s.m[seat])}</div></div></div>`;
}
function middleHtml(s) {
  const names = game.names, dead = cardsOf(s.d);
  let face = `<span class="empty">none</span>`, caption = "";
  if (s.f >= 0) {
    face = cardSvg(s.f, s.ph === 1 ? "laying" : "");
    caption = s.ph === 1 ? `being melded by ${esc(names[s.t])}` +
      (s.c ? ` with ${namesOf(cardsOf(s.c))}` : "") : `${esc(sourceText(s, names))}; offered to ${esc(names[s.t])}`;
  }
  return `<div class="spot"><div id="stock" data-count="${s.k}">${s.k ? backSvg() : EMPTY}</div>` +
    `<div class="label">stock: ${s.k}</div></div>` +
    `<div class="spot"><div id="face" data-card="${s.f >= 0 ? cardName(s.f) : ""}">${face}</div>` +
    `<div class="label">face-up card</div></div><div class="caption">${caption}</div>` +
    `<div class="spot"><div id="dead" class="pile small" data-cards="${namesOf(dead)}">` +
    `${dead.map(c => cardSvg(c, "small")).join("") || EMPTY}</div>` +
    `<div class="label">dead pile (${dead.length})</div></div>`;
}
function moveHtml() {
  const n = game.moves.length;
  if (step === 0) return `<div class="head">deal (move 0 of ${n})</div><div>${esc(game.start)}</div>`;
  const m = game.moves[step - 1];
  let text = `<div class="head">move ${step} of ${n}: ${esc(game.names[m.s])}: ${esc(m.a)}</div>` +
    m.d.map(line => `<div>${esc(line)}</div>`).join("");
  if (step === n) {
    text += game.problem ? `<div class="problem">warning: ${esc(game.problem)}</div>`
      : `<div><b>end: ${esc(game.result)}</b></div>`;
    if (game.failure) text += `<div class="problem">${esc(game.failure)}</div>`;
  }
  return text;
}
function show() {
  const s = game.steps[step];
  const table = document.getElementById("table");
  table.dataset.game = game.index;
  table.dataset.step = step;
  table.innerHTML = `<div class="seat">${seatHtml(s, 1)}</div><div class="middle">${middleHtml(s)}</div>` +
    `<div class="seat">${seatHtml(s, 0)}</div>`;
  const text = document.getElementById("move-text");
  text.dataset.step = step;
  text.innerHTML = moveHtml();
  const slider = document.getElementById("slider");
  slider.max = game.moves.length;
  slider.value = step;
  document.getElementById("where").textContent = `${step} / ${game.moves.length}`;
  for (const li of document.querySelectorAll("#moves li.current")) li.classList.remove("current");
  const li = document.querySelector(`#moves li[data-step="${step}"]`);
  if (li) {  // keep it in view by scrolling the list only, never the page
    li.classList.add("current");
    const box = document.getElementById("moves");
    if (li.offsetTop < box.scrollTop) box.scrollTop = li.offsetTop;
    else if (li.offsetTop + li.offsetHeight > box.scrollTop + box.clientHeight) {
      box.scrollTop = li.offsetTop + li.offsetHeight - box.clientHeight;
    }
  }
  document.getElementById("prev").disabled = document.getElementById("first").disabled = step === 0;
  document.getElementById("next").disabled = document.getElementById("last").disabled = step === game.moves.length;
  history.replaceState(null, "", `#game=${game.index}&step=${step}`);
}
function go(k) { step = Math.max(0, Math.min(game.moves.length, k)); show(); }
function openGame(i, k = 0) {
  const g = loadGame(i);
  if (!g) return false;
  game = g;
  document.getElementById("game").value = String(i);
  const head = document.getElementById("result");
  head.textContent = `${game.names[0]} vs ${game.names[1]}: ${game.result}` +
    (game.rules && game.rules !== "standard" ? ` (${game.rules} variant)` : "");
  head.className = game.problem ? "problem" : "";
  document.getElementById("moves").innerHTML = `<li data-step="0" value="0">deal</li>` + game.moves.map((m, k) =>
    `<li data-step="${k + 1}" value="${k + 1}">${esc(game.names[m.s])}: ${esc(m.a)}</li>`).join("");
  go(k);
  return true;
}
function fromHash() {
  const q = new URLSearchParams(location.hash.slice(1));
  const i = q.get("game"), k = parseInt(q.get("step") || "0", 10) || 0;
  if (i !== null && openGame(i, k)) return true;
  return false;
}
const picker = document.getElementById("game");
picker.innerHTML = INDEX.map(g => `<option value="${g.i}">${esc(g.label)}</option>`).join("");
picker.disabled = INDEX.length < 2;
picker.addEventListener("change", () => openGame(picker.value));
document.getElementById("first").onclick = () => go(0);
document.getElementById("prev").onclick = () => go(step - 1);
document.getElementById("next").onclick = () => go(step + 1);
document.getElementById("last").onclick = () => go(game.moves.length);
document.getElementById("slider").addEventListener("input", e => go(parseInt(e.target.value, 10)));
document.getElementById("moves").addEventListener("click", e => {
  const li = e.target.closest("li[data-step]");
  if (li) go(parseInt(li.dataset.step, 10));
});
document.addEventListener("keydown", e => {
  if (e.target.tagName === "SELECT" || e.altKey || e.ctrlKey || e.metaKey) return;
  const keys = {ArrowRight: step + 1, ArrowDown: step + 1, ArrowLeft: step - 1, ArrowUp: step - 1, Home: 0,
                End: game.moves.length};
  if (e.key in keys) { e.preventDefault(); go(keys[e.key]); }
  else if (e.key === "PageDown" || e.key === "PageUp") {  // next / previous game of the file
    e.preventDefault();
    const at = INDEX.findIndex(g => String(g.i) === String(game.index)) + (e.key === "PageDown" ? 1 : -1);
    if (at >= 0 && at < INDEX.length) openGame(INDEX[at].i);
  }
});
window.addEventListener("hashchange", () => {
  const q = new URLSearchParams(location.hash.slice(1));
  if (q.get("game") !== String(game.index) || parseInt(q.get("step") || "0", 10) !== step) fromHash();
});
if (!fromHash()) openGame(INDEX[0].i);
