/**
 * The pages' one stylesheet (the status page, named pages, service pages): light and dark by the reader's
 * preference (prefers-color-scheme), inline and allowed by its hash (page.ts, pagePolicy).
 */
/** Light and dark, readable on a 375 px phone and a wide screen; colours always come with words. */
export const css = `
:root { color-scheme: light dark; --bg: #ffffff; --fg: #1b1f24; --muted: #4d5560; --line: #d8dde3; --card: #f6f8fa;
  --up: #116329; --up-bg: #dafbe1; --down: #a40e26; --down-bg: #ffebe9; --unknown: #4d5560; --unknown-bg: #eaeef2;
  --blocked: #7d4e00; --blocked-bg: #fff8c5;
  --full: #1a7f37; --high: #4ac26b; --mid: #d4a72c; --low: #cf222e; --none: #d0d7de; --focus: #0969da; }
@media (prefers-color-scheme: dark) {
  :root { --bg: #0d1117; --fg: #e6edf3; --muted: #9da7b3; --line: #30363d; --card: #161b22;
    --up: #7ee2a8; --up-bg: #0f2e1b; --down: #ffa198; --down-bg: #3c1618; --unknown: #9da7b3; --unknown-bg: #21262d;
    --blocked: #e3b341; --blocked-bg: #2e2410;
    --full: #2ea043; --high: #56d364; --mid: #e3b341; --low: #f85149; --none: #30363d; --focus: #58a6ff; }
}
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 72rem; padding: 1rem; background: var(--bg); color: var(--fg);
  font: 16px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
h1 { font-size: 1.5rem; margin: 0 0 .5rem; }
header { border-bottom: .25rem solid var(--accent, transparent); margin: 0 0 1rem; }
header .logo { display: block; max-height: 3rem; max-width: min(100%, 16rem); margin: 0 0 .5rem; }
h2 { font-size: 1.2rem; margin: 1.5rem 0 .5rem; display: flex; align-items: center; gap: .5rem; flex-wrap: wrap; }
h3 { font-size: 1rem; margin: 0; overflow-wrap: anywhere; }
.overall { font-size: 1.25rem; font-weight: 600; padding: .75rem 1rem; border-radius: .5rem; margin: 0; }
.overall.up { background: var(--up-bg); color: var(--up); }
.overall.down { background: var(--down-bg); color: var(--down); }
.overall.unknown, .overall.paused, .overall.new { background: var(--unknown-bg); color: var(--unknown); }
.overall.blocked, .overall.late, .overall.degraded { background: var(--blocked-bg); color: var(--blocked); }
.updated, .checked, footer { color: var(--muted); font-size: .875rem; }
.incidents ul { padding-left: 1.25rem; }
.incidents li { color: var(--down); }
.services { list-style: none; padding: 0; margin: 0; display: grid; gap: .75rem; grid-template-columns: repeat(auto-fill, minmax(min(100%, 22rem), 1fr)); }
.service { background: var(--card); border: 1px solid var(--line); border-radius: .5rem; padding: .75rem; min-width: 0; }
.service.down { border-color: var(--down); }
.service.blocked, .service.late, .service.degraded { border-color: var(--blocked); }
.head { display: flex; justify-content: space-between; align-items: center; gap: .5rem; }
.badge { font-size: .8rem; font-weight: 600; padding: .1rem .5rem; border-radius: 1rem; white-space: nowrap; }
.badge.up { background: var(--up-bg); color: var(--up); }
.badge.down { background: var(--down-bg); color: var(--down); }
.badge.unknown, .badge.paused, .badge.new, .badge.quiet { background: var(--unknown-bg); color: var(--unknown); }
.badge.blocked, .badge.late, .badge.degraded { background: var(--blocked-bg); color: var(--blocked); }
.facts { display: flex; flex-wrap: wrap; gap: .25rem 1rem; margin: .5rem 0; }
.facts div { display: flex; gap: .35rem; }
.facts dt { color: var(--muted); }
.facts dd { margin: 0; font-variant-numeric: tabular-nums; }
.incident, .error { margin: .25rem 0; color: var(--down); overflow-wrap: anywhere; }
.waiting { margin: .25rem 0; color: var(--blocked); overflow-wrap: anywhere; }
.bar { display: flex; gap: 1px; list-style: none; padding: 0; margin: .5rem 0 0; height: 1.75rem; position: relative; }
.bar li { flex: 1 1 0; min-width: 1px; border-radius: 1px; background: var(--none); }
.bar li.f { background: var(--full); } .bar li.h { background: var(--high); }
.bar li.m { background: var(--mid); } .bar li.l { background: var(--low); }
.bar li:hover, .bar li:focus { outline: 2px solid var(--focus); outline-offset: 1px; }
.bar li:hover::after, .bar li:focus::after { content: attr(aria-label); position: absolute; left: 0; top: 2rem; z-index: 1; padding: .2rem .5rem;
  background: var(--fg); color: var(--bg); border-radius: .25rem; font-size: .8rem; white-space: nowrap; }
a { color: var(--focus); }
h3 a { color: inherit; }
footer { margin-top: 2rem; }
.announcement { border: 1px solid var(--line); border-left: .35rem solid var(--muted); border-radius: .5rem; padding: .75rem 1rem; margin: 0 0 .75rem; background: var(--card); }
.announcement.outage { border-left-color: var(--down); } .announcement.degraded { border-left-color: var(--blocked); }
.announcement.maintenance, .announcement.info { border-left-color: var(--focus); }
.announcement h3 { display: flex; gap: .5rem; align-items: center; flex-wrap: wrap; }
.badge.outage { background: var(--down-bg); color: var(--down); } .badge.degraded { background: var(--blocked-bg); color: var(--blocked); }
.badge.info, .badge.maintenance { background: var(--unknown-bg); color: var(--fg); }
.when, .quiet-note { color: var(--muted); font-size: .875rem; margin: .25rem 0; }
.md { overflow-wrap: anywhere; } .md p { margin: .25rem 0; } .md ul, .md ol { margin: .25rem 0; padding-left: 1.5rem; }
.updates { list-style: none; padding: 0; margin: .5rem 0 0; border-top: 1px solid var(--line); }
.updates li { padding: .25rem 0; border-bottom: 1px solid var(--line); }
.past-list { list-style: none; padding: 0; } .past-list li { margin: 0 0 .5rem; }
.scheduled ul { padding-left: 1.25rem; }
.description { margin: 0 0 1rem; }
.chart { margin: .5rem 0; } .chart svg { width: 100%; height: auto; display: block; }
.chart .axis { stroke: var(--line); } .chart text { fill: var(--muted); font-size: 11px; }
.chart path { stroke-linecap: round; stroke-linejoin: round; } .chart .p50 { fill: none; stroke: var(--focus); stroke-width: 2; } .chart .p95 { fill: none; stroke: var(--mid); stroke-width: 2; stroke-dasharray: 5 3; }
.legend { display: flex; gap: 1rem; list-style: none; padding: 0; margin: .25rem 0; font-size: .875rem; }
.legend .p50::before, .legend .p95::before { content: ""; display: inline-block; width: 1.5rem; height: 0; margin-right: .35rem; vertical-align: middle; border-top: 2px solid var(--focus); }
.legend .p95::before { border-top: 2px dashed var(--mid); }
.ranges { display: flex; gap: .75rem; list-style: none; padding: 0; margin: .5rem 0; }
.ranges [aria-current] { font-weight: 700; color: var(--fg); text-decoration: none; }
table { border-collapse: collapse; font-variant-numeric: tabular-nums; font-size: .875rem; }
th, td { text-align: right; padding: .15rem .6rem; border-bottom: 1px solid var(--line); } th:first-child, td:first-child { text-align: left; }
details { margin: .5rem 0; } summary { cursor: pointer; color: var(--focus); }
.crumbs { margin: 0 0 .5rem; font-size: .875rem; }
`;
