#!/usr/bin/env node
// A Conquian bot in JavaScript, played through the exec protocol (JSON lines on stdin/stdout):
//
//   conquian-evaluate exec:examples/exec_bot.js random --games 20
//
// It reads one JSON object per line. "start" (before each game) gives its seat and a seed;
// "act" gives the legal action ids and the player's view, and wants one line back holding one
// of the legal ids; "end" says how the game ended. Nothing else may go to stdout: logs go to
// stderr. The rules it plays by, simple on purpose:
//   - take the face-up card whenever it may (a take is legal only when the card can be melded),
//   - in a meld, finish as soon as it may, otherwise lay the lowest legal card,
//   - discard the card with the fewest partners in hand (same rank, or next in its suit),
//     ties broken at random by the game's seed,
//   - force (the forcing variant) when the opponent holds two cards or more.
// Card ids: suit * 10 + rank (rank 0 = ace .. 9 = king; the names are in the start line).
"use strict";

const readline = require("readline");

const TAKE = 80, FINISH = 82, FORCE = 83, NO_FORCE = 84, DISCARD_BASE = 40;

let random = mulberry32(0);

function mulberry32(seed) { // a small seeded generator: the same seed, the same game
  let a = seed >>> 0;
  return function () {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function partners(card, hand) { // cards of the hand making a set or a run with `card`
  const suit = Math.floor(card / 10), rank = card % 10;
  return hand.filter((c) => c !== card && (c % 10 === rank ||
    (Math.floor(c / 10) === suit && Math.abs(c % 10 - rank) === 1))).length;
}

function choose(message) {
  const legal = message.legal, view = message.view;
  if (legal.length === 1) return legal[0];
  if (legal.includes(TAKE)) return TAKE;
  if (legal.includes(FINISH)) return FINISH;
  if (legal.includes(FORCE)) return view.opponent_hand_size >= 2 ? FORCE : NO_FORCE;
  const discards = legal.filter((a) => a >= DISCARD_BASE && a < DISCARD_BASE + 40);
  if (discards.length > 0) {
    let best = [], fewest = Infinity;
    for (const action of discards) {
      const n = partners(action - DISCARD_BASE, view.own_hand);
      if (n < fewest) { fewest = n; best = [action]; } else if (n === fewest) best.push(action);
    }
    return best[Math.floor(random() * best.length)];
  }
  return Math.min(...legal); // a meld card (0-39), or refuse (81) when the card cannot be taken
}

const lines = readline.createInterface({ input: process.stdin, terminal: false });
lines.on("line", (line) => {
  const message = JSON.parse(line);
  if (message.type === "start") {
    random = mulberry32(message.seed === null ? 0 : message.seed % 4294967296);
  } else if (message.type === "act") {
    process.stdout.write(choose(message) + "\n");
  }
});
lines.on("close", () => process.exit(0)); // the arena closed our input: stop
