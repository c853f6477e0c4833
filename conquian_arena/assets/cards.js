const RANKS = "A234567JQK", SUITS = "CDHS";
const PHASES = ["offer", "meld", "discard", "force", "over"];
function cardName(c) { return RANKS[c % 10] + SUITS[Math.floor(c / 10)]; }
function cardsOf(mask) {  // card indexes of a bit mask (exact: masks stay below 2**40)
  const out = [];
  for (let c = 0; c < 40; c++) if (Math.floor(mask / 2 ** c) % 2 === 1) out.push(c);
  return out;
}
function namesOf(cards) { return cards.map(cardName).join(" "); }
function esc(text) {
  const table = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"};
  return String(text).replace(/[&<>"']/g, ch => table[ch]);
}
function cardSvg(c, cls = "", attrs = "") {
  const rank = RANKS[c % 10], suit = SUITS[Math.floor(c / 10)];
  const color = (suit === "D" || suit === "H") ? "red" : "black";
  return `<svg class="card ${color} ${cls}" viewBox="0 0 56 80" data-card="${rank}${suit}" ${attrs}>` +
    `<title>${rank}${suit}</title>` +
    `<rect class="face" x="0.75" y="0.75" width="54.5" height="78.5" rx="5"/>` +
    `<text class="rank" x="4" y="19">${rank}</text>` +
    `<use href="#suit-${suit}" x="4" y="23" width="13" height="13"/>` +
    `<use href="#suit-${suit}" x="20" y="40" width="30" height="30"/></svg>`;
}
function backSvg(cls = "") {
  return `<svg class="card back ${cls}" viewBox="0 0 56 80"><rect class="face" x="0.75" y="0.75" width="54.5"` +
    ` height="78.5" rx="5"/><rect class="inner" x="6" y="6" width="44" height="68" rx="3"/></svg>`;
}
const EMPTY = '<span class="empty">empty</span>';
function meldHtml(groups, cls = "") {  // groups: lists of card indexes (sets and runs)
  if (!groups.length) return `<span class="empty">no meld</span>`;
  return groups.map(g => `<span class="group">${g.map(c => cardSvg(c, cls)).join("")}</span>`).join("");
}
