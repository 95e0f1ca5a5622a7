// The ops board's stylesheet and script, served from `<path>/assets/`. No build step, no framework:
// the pages are whole without the script (reading and every action work with scripts off); the
// script refreshes the figures in place and asks before an unlock or a grant.

/** `<path>/assets/board.css`. */
export const BOARD_CSS = `
:root { color-scheme: light dark; --fg: #1d232a; --muted: #5b6672; --line: #d7dde3; --bg: #fff;
  --panel: #f5f7f9; --accent: #0b62c4; --allowed: #1f8a4c; --refused: #c62f2f; --blocked: #8a1fa3;
  --failed: #d9822b; --shadow: #6b7785; }
@media (prefers-color-scheme: dark) { :root { --fg: #e3e8ee; --muted: #9aa5b1; --line: #36404a;
  --bg: #14181c; --panel: #1c2228; --accent: #6aa9f2; } }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg);
  background: var(--bg); }
header { display: flex; gap: 1.5rem; align-items: center; padding: .6rem 1.2rem;
  border-bottom: 1px solid var(--line); background: var(--panel); flex-wrap: wrap; }
header .brand { font-weight: 700; color: var(--fg); text-decoration: none; }
nav { display: flex; gap: 1rem; flex-wrap: wrap; }
nav a { color: var(--accent); text-decoration: none; padding: .15rem 0; }
nav a[aria-current] { color: var(--fg); border-bottom: 2px solid var(--accent); }
.mode { margin-left: auto; font-size: 12px; padding: .1rem .5rem; border: 1px solid var(--line);
  border-radius: 1rem; color: var(--muted); }
main { padding: 1rem 1.2rem 2rem; max-width: 1200px; }
h1 { font-size: 20px; margin: .2rem 0 1rem; }
h2 { font-size: 16px; margin: 1.4rem 0 .5rem; }
table { border-collapse: collapse; width: 100%; margin: .3rem 0 1rem; }
th, td { text-align: left; padding: .35rem .6rem; border-bottom: 1px solid var(--line);
  vertical-align: middle; }
th { font-weight: 600; color: var(--muted); font-size: 12px; text-transform: uppercase; }
td code, .key { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 12.5px;
  word-break: break-all; }
.num { font-variant-numeric: tabular-nums; text-align: right; }
.empty, .note, .clock { color: var(--muted); }
.clock { margin-top: 2rem; font-size: 12px; }
.notice { padding: .5rem .8rem; border-left: 4px solid var(--allowed); background: var(--panel);
  margin: 0 0 1rem; }
.notice.error { border-color: var(--refused); }
form.inline { display: inline; margin: 0 .2rem 0 0; }
input.units { width: 5em; font: inherit; margin: 0 .2rem; }
form.override { display: flex; flex-wrap: wrap; gap: .4rem .8rem; align-items: center; margin: .6rem 0; }
form.override select, form.override input { min-width: 0; }
form.override input.units { width: 6em; }
form.lookup { display: flex; gap: .5rem; flex-wrap: wrap; align-items: center;
  margin: 0 0 1rem; padding: .6rem; background: var(--panel); border-radius: 6px; }
input[type=text], select { font: inherit; padding: .3rem .4rem; border: 1px solid var(--line);
  border-radius: 4px; background: var(--bg); color: var(--fg); min-width: 16rem; }
button { font: inherit; padding: .25rem .7rem; border: 1px solid var(--accent); border-radius: 4px;
  background: var(--bg); color: var(--accent); cursor: pointer; }
button:hover { background: var(--accent); color: var(--bg); }
.tag { display: inline-block; padding: 0 .4rem; border-radius: 3px; font-size: 12px;
  background: var(--panel); border: 1px solid var(--line); }
.tag.shadow { color: var(--shadow); } .tag.block { color: var(--blocked); }
.allowed { color: var(--allowed); } .refused { color: var(--refused); }
.blocked { color: var(--blocked); } .failed { color: var(--failed); }
.shadow-refused { color: var(--shadow); }
svg.spark { width: 240px; height: 40px; display: block; }
svg.spark .allowed { stroke: var(--allowed); } svg.spark .refused { stroke: var(--refused); }
svg.spark .blocked { stroke: var(--blocked); } svg.spark .failed { stroke: var(--failed); }
svg.spark .shadow-refused { stroke: var(--shadow); stroke-dasharray: 3 2; }
svg.spark polyline { fill: none; stroke-width: 1.5; }
svg.spark line.base { stroke: var(--line); }
.legend span { margin-right: .8rem; font-size: 12px; }
`;

/** `<path>/assets/board.js`: progressive only; every page works without it. */
export const BOARD_JS = `'use strict';
(function () {
  document.addEventListener('submit', function (event) {
    var form = event.target;
    var question = form && form.getAttribute && form.getAttribute('data-confirm');
    if (question && !window.confirm(question)) event.preventDefault();
  });
  var main = document.getElementById('main');
  var seconds = main ? Number(main.getAttribute('data-refresh')) : 0;
  if (!seconds) return;
  setInterval(function () {
    if (document.hidden) return;
    fetch(window.location.href, { credentials: 'same-origin', headers: { accept: 'text/html' } })
      .then(function (response) { return response.ok ? response.text() : null; })
      .then(function (body) {
        if (!body) return;
        var next = new DOMParser().parseFromString(body, 'text/html').getElementById('main');
        if (!next) return;
        // The look-up form is kept as it is (what is typed in it, and the focus).
        var kept = main.querySelector('form.lookup');
        var focused = kept && kept.contains(document.activeElement) ? document.activeElement : null;
        main.innerHTML = next.innerHTML;
        var fresh = main.querySelector('form.lookup');
        if (kept && fresh) fresh.replaceWith(kept);
        if (focused) focused.focus();
      })
      .catch(function () {});
  }, seconds * 1000);
})();
`;
