/**
 * A service's latency over time as an SVG drawn on the server (readable without JavaScript, styled by the
 * page's own stylesheet in light and dark), and the same numbers as a table for screen readers and for
 * copying. d3-scale and d3-shape compute the axes and the lines; they need no DOM. Pure.
 */
import { scaleLinear, scaleUtc } from "d3-scale";
import { line } from "d3-shape";
import { escape, html, raw, type Html } from "./html.ts";

export interface LatencyPoint {
  /** The hour's or day's start, ISO 8601. */
  readonly at: string;
  readonly checks: number;
  readonly uptime: number | null;
  readonly p50: number | null;
  readonly p95: number | null;
}

const width = 720;
const height = 220;
const margin = { top: 12, right: 12, bottom: 26, left: 52 };

const ms = (value: number) => (value === 0 ? "0 ms" : value >= 10_000 ? `${(value / 1000).toFixed(0)} s` : value >= 1000 ? `${(value / 1000).toFixed(1)} s` : `${value >= 10 ? value.toFixed(0) : value.toFixed(1)} ms`);
const label = (at: string, per: "hour" | "day") => (per === "hour" ? `${at.slice(11, 16)}` : at.slice(5, 10));

/** The chart and its table. `title`: what it shows ("Latency, last 24 hours"); `id`: unique on the page. */
export function latencyChart(points: readonly LatencyPoint[], options: { title: string; per: "hour" | "day"; id: string }): Html {
  const times = points.map((p) => Date.parse(p.at));
  const measured = points.filter((p) => p.p95 !== null);
  const top = Math.max(1, ...measured.map((p) => p.p95!));
  const x = scaleUtc()
    .domain([times[0] ?? 0, times.at(-1) ?? 1])
    .range([margin.left, width - margin.right]);
  const y = scaleLinear()
    .domain([0, top * 1.1])
    .nice(4)
    .range([height - margin.bottom, margin.top]);
  const path = (pick: (p: LatencyPoint) => number | null) =>
    line<LatencyPoint>()
      .defined((p) => pick(p) !== null)
      .x((p) => Math.round(x(Date.parse(p.at)) * 10) / 10)
      .y((p) => Math.round(y(pick(p)!) * 10) / 10)(points as LatencyPoint[]) ?? "";
  // A value with no measured neighbour makes no line (a new service's only hour was a lone dot): a ring marks it.
  const lone = (pick: (p: LatencyPoint) => number | null, cls: string) =>
    points
      .map((p, i) => {
        const value = pick(p);
        const before = i > 0 ? pick(points[i - 1]!) : null;
        const after = i < points.length - 1 ? pick(points[i + 1]!) : null;
        if (value === null || before !== null || after !== null) return "";
        return `<circle class="${cls}" cx="${Math.round(x(Date.parse(p.at)) * 10) / 10}" cy="${Math.round(y(value) * 10) / 10}" r="3"/>`;
      })
      .join("");
  const yTicks = y.ticks(4);
  // A label every so many points, so that they never crowd: 6 or 7 along the axis.
  const every = Math.max(1, Math.ceil(points.length / 6));
  const xTicks = points.filter((_, i) => i % every === 0);
  const summary =
    measured.length === 0
      ? "No checks in this span."
      : `Median (p50) from ${ms(Math.min(...measured.map((p) => p.p50!)))} to ${ms(Math.max(...measured.map((p) => p.p50!)))}; p95 up to ${ms(top)}. The table below gives every value.`;
  const id = escape(options.id);
  const svg = `<svg viewBox="0 0 ${width} ${height}" role="img" aria-labelledby="${id}-title ${id}-desc"><title id="${id}-title">${escape(options.title)}</title><desc id="${id}-desc">${summary}</desc>${yTicks
    .map((t) => `<line class="axis" x1="${margin.left}" x2="${width - margin.right}" y1="${y(t)}" y2="${y(t)}"/><text x="${margin.left - 6}" y="${y(t) + 4}" text-anchor="end">${ms(t)}</text>`)
    .join("")}${xTicks
    .map((p) => `<text x="${x(Date.parse(p.at))}" y="${height - 8}" text-anchor="middle">${label(p.at, options.per)}</text>`)
    .join("")}<path class="p95" d="${path((p) => p.p95)}"/><path class="p50" d="${path((p) => p.p50)}"/>${lone((p) => p.p95, "p95")}${lone((p) => p.p50, "p50")}</svg>`;
  return html`<figure class="chart">${raw(svg)}<figcaption><ul class="legend"><li class="p50">p50 (median)</li><li class="p95">p95</li></ul></figcaption></figure>
<details><summary>${options.title}: the numbers</summary><table><caption class="when">Per ${options.per}, UTC</caption><thead><tr><th scope="col">${options.per === "hour" ? "Hour" : "Day"}</th><th scope="col">Checks</th><th scope="col">Uptime</th><th scope="col">p50</th><th scope="col">p95</th></tr></thead><tbody>
${points.map(
  (p) =>
    html`<tr><th scope="row"><time datetime="${p.at}">${options.per === "hour" ? p.at.slice(0, 16).replace("T", " ") : p.at.slice(0, 10)}</time></th><td>${p.checks}</td><td>${p.uptime === null ? "no data" : `${(Math.floor(p.uptime * 10_000) / 100).toFixed(2)} %`}</td><td>${p.p50 === null ? "no data" : ms(p.p50)}</td><td>${p.p95 === null ? "no data" : ms(p.p95)}</td></tr>
`,
)}</tbody></table></details>`;
}
