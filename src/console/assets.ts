import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

/** A file the console serves under /assets/. */
export interface Asset {
  type: string;
  body: string;
}

/** The console's own stylesheet: no framework, nothing from a CDN. */
const CSS = `
:root { --fg:#1d2430; --muted:#5b6676; --line:#dde2ea; --bg:#f6f8fb; --ok:#1a7f37; --warn:#9a6700; --bad:#c62828; --accent:#2754c5; }
* { box-sizing: border-box; }
body { margin:0; font:14px/1.45 system-ui, sans-serif; color:var(--fg); background:var(--bg); }
header { display:flex; align-items:center; gap:24px; padding:10px 24px; background:#1d2430; color:#fff; }
header .brand { font-weight:600; }
header nav a { color:#c9d3e3; margin-right:16px; text-decoration:none; }
header nav a.current { color:#fff; border-bottom:2px solid #fff; }
header .who { margin-left:auto; color:#c9d3e3; }
main { padding:16px 24px 48px; }
h1 { font-size:22px; margin:4px 0 12px; } h2 { font-size:16px; margin:24px 0 8px; }
table { border-collapse:collapse; background:#fff; width:100%; }
th, td { border-bottom:1px solid var(--line); padding:6px 8px; text-align:left; vertical-align:top; }
th { color:var(--muted); font-weight:600; }
td.num, th.num { text-align:right; font-variant-numeric:tabular-nums; }
td.error, td.url, td.origin, td.key { word-break:break-all; max-width:420px; }
td.id { white-space:nowrap; }
.when, .hint { color:var(--muted); font-size:12px; }
.tiles { display:flex; flex-wrap:wrap; gap:12px; }
.tile { background:#fff; border:1px solid var(--line); padding:10px 14px; min-width:150px; }
.tile .value { display:block; font-size:24px; font-weight:600; }
.tile .label { color:var(--muted); font-size:12px; }
.chart { background:#fff; border:1px solid var(--line); padding:8px; min-height:320px; }
.badge { padding:2px 8px; border-radius:10px; font-size:12px; background:#e7f4ea; color:var(--ok); white-space:nowrap; }
.badge.paused { background:#fff4d6; color:var(--warn); }
.badge.circuit-open { background:#fde7e7; color:var(--bad); }
.badge.limited { background:#e8eefc; color:var(--accent); }
.badge.held { background:#fff4d6; color:var(--warn); }
.badge.stopped { background:#fde7e7; color:var(--bad); }
.badge.draining { background:#e8eefc; color:var(--accent); }
.notice { padding:8px 12px; border:1px solid var(--line); background:#fff; }
.notice.ok { border-color:var(--ok); } .notice.warn { border-color:var(--warn); } .notice.error { border-color:var(--bad); color:var(--bad); }
form.inline { display:inline; margin:0; }
button, .button { font:inherit; padding:4px 10px; border:1px solid var(--accent); background:var(--accent); color:#fff; cursor:pointer; text-decoration:none; display:inline-block; }
button.danger, .button.danger { background:#fff; color:var(--bad); border-color:var(--bad); }
button.link { background:none; border:none; color:#c9d3e3; text-decoration:underline; padding:0; }
.actions { margin:10px 0; display:flex; gap:10px; align-items:center; }
.filter { display:flex; flex-wrap:wrap; gap:10px; align-items:flex-end; margin:8px 0; }
.filter label, .login label { display:flex; flex-direction:column; font-size:12px; color:var(--muted); }
.filter input, .login input, select { font:inherit; padding:4px 6px; border:1px solid var(--line); }
.filter input[name=id] { min-width:340px; }
.login { display:flex; gap:10px; align-items:flex-end; }
pre.body { background:#fff; border:1px solid var(--line); padding:10px; white-space:pre-wrap; word-break:break-all; max-height:480px; overflow:auto; }
dl.record { display:grid; grid-template-columns:max-content 1fr; gap:4px 16px; background:#fff; border:1px solid var(--line); padding:10px; }
dl.record dt { color:var(--muted); } dl.record dd { margin:0; word-break:break-all; }
.where { font-size:16px; }
.empty { color:var(--muted); }
`;

/**
 * Draws the overview's chart from its JSON data block with uPlot (loaded before it from /assets).
 * A file of its own: the Content-Security-Policy allows scripts from the console only, never inline.
 */
const OVERVIEW_JS = `(function () {
  var holder = document.getElementById('chart');
  var block = document.getElementById('chart-data');
  if (!holder || !block || typeof uPlot === 'undefined') return;
  var d = JSON.parse(block.textContent);
  var width = Math.max(480, holder.clientWidth - 16);
  new uPlot({
    width: width, height: 300,
    scales: { x: { time: true } },
    series: [
      {},
      { label: 'delivered', stroke: '#1a7f37', width: 2 },
      { label: 'retries', stroke: '#9a6700', width: 2 },
      { label: 'dead letters', stroke: '#c62828', width: 2 }
    ],
    axes: [{}, { label: 'per minute' }]
  }, [d.t, d.delivered, d.retries, d.dead], holder);
})();
`;

/** uPlot's files from its npm package, read once at start: served by the console, never from a CDN. */
function uplotFile(name: string): string {
  const require = createRequire(import.meta.url);
  return readFileSync(join(dirname(require.resolve('uplot/package.json')), 'dist', name), 'utf8');
}

/** Every asset by its path under /assets/. */
export function loadAssets(): Map<string, Asset> {
  return new Map<string, Asset>([
    ['console.css', { type: 'text/css; charset=utf-8', body: CSS }],
    ['overview.js', { type: 'text/javascript; charset=utf-8', body: OVERVIEW_JS }],
    ['uPlot.iife.min.js', { type: 'text/javascript; charset=utf-8', body: uplotFile('uPlot.iife.min.js') }],
    ['uPlot.min.css', { type: 'text/css; charset=utf-8', body: uplotFile('uPlot.min.css') }],
  ]);
}
