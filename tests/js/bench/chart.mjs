// The chart `make bench` writes next to BENCHMARKS.md: plain SVG text, built
// here with no dependency. Three panels:
//
// A. per row of sections 1 and 2, the cost each guard adds over the unguarded
//    host (one scale per row, so a 30 ns pass-through and a 50 µs claim are
//    both readable), with the row's budget where it has one in ns, and
//    harness-guard's paired ratio to each peer;
// B. p99 lateness of unanswered client queries past their deadline, against
//    the number of queries waiting at once (log-log), with a 50 ms reference line;
// C. memory per waiting query: the host's own, and what each guard adds.

import { writeFileSync } from 'node:fs'

import { int } from './format.mjs'

const ARMS = [
  { id: 'hg', name: 'harness-guard', color: '#1f5fbf' },
  { id: 'pj', name: 'plain-JS guard', color: '#e07b00' },
  { id: 'sd', name: 'seed\'s guard (000 inspect / 002 inbox)', color: '#2e9d3a' },
]
const WIDTH = 1000
const FONT = 'font-family="DejaVu Sans, Helvetica, Arial, sans-serif"'

const esc = (text) => String(text).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;')
/** A time in ns, in the unit that reads best. */
function time(nsValue, signed = true) {
  const sign = nsValue < 0 ? '−' : signed ? '+' : ''
  const a = Math.abs(nsValue)
  if (a >= 1e6) return `${sign}${(a / 1e6).toFixed(2)} ms`
  if (a >= 1e4) return `${sign}${(a / 1e3).toFixed(1)} µs`
  if (a >= 1e3) return `${sign}${(a / 1e3).toFixed(2)} µs`
  return `${sign}${int(a)} ns`
}
const bytes = (b) => (b >= 1024 ? `${(b / 1024).toFixed(2)} KiB` : `${int(b)} B`)

function text(x, y, content, { size = 12, anchor = 'start', weight = 'normal', color = '#222', style = '' } = {}) {
  return `<text x="${x.toFixed(1)}" y="${y.toFixed(1)}" font-size="${size}" text-anchor="${anchor}" font-weight="${weight}" fill="${color}"${style ? ` font-style="${style}"` : ''}>${esc(content)}</text>`
}
const line = (x1, y1, x2, y2, { color = '#999', width = 1, dash = '' } = {}) =>
  `<line x1="${x1.toFixed(1)}" y1="${y1.toFixed(1)}" x2="${x2.toFixed(1)}" y2="${y2.toFixed(1)}" stroke="${color}" stroke-width="${width}"${dash ? ` stroke-dasharray="${dash}"` : ''}/>`
const rect = (x, y, w, h, color, extra = '') => `<rect x="${x.toFixed(1)}" y="${y.toFixed(1)}" width="${Math.max(0, w).toFixed(1)}" height="${h.toFixed(1)}" fill="${color}"${extra}/>`

/** Split a label into lines of at most `chars` characters, at spaces. */
function wrap(label, chars) {
  const lines = []
  let current = ''
  for (const word of label.split(' ')) {
    if (current && (current + ' ' + word).length > chars) { lines.push(current); current = word } else current = current ? `${current} ${word}` : word
  }
  if (current) lines.push(current)
  return lines
}

function legend(y) {
  const out = []
  let x = 20
  for (const arm of ARMS) {
    out.push(rect(x, y - 10, 14, 12, arm.color), text(x + 20, y, arm.name, { size: 12 }))
    x += 40 + arm.name.length * 7
  }
  return out
}

/** Panel A: one block per row, bars of added cost, scaled per row. */
function costPanel(rows, top) {
  const out = []
  const labelW = 300
  const x0 = 20 + labelW
  const barW = 440
  const barH = 13
  out.push(text(20, top + 18, 'A. Cost each guard adds over the unguarded host (0 = unguarded), per row of §1 and §2', { size: 15, weight: 'bold' }))
  out.push(text(20, top + 36, 'Medians over rounds; each row has its own scale. Right: harness-guard\'s paired ratio to each peer, per call or claim (below 1.00× = faster).', { size: 11, color: '#555' }))
  out.push(...legend(top + 56))
  let y = top + 72
  for (const r of rows) {
    const values = ARMS.map((arm) => r.values[arm.id]).filter((v) => v !== undefined)
    const marks = [r.budget].filter((v) => v !== undefined && v > 0)
    // The scale: the largest figure either way (a row of noise around zero keeps a scale of its own size).
    const max = Math.max(1, ...values.map(Math.abs), ...marks) * 1.08
    const scale = barW / max
    const blockH = ARMS.length * (barH + 4) + 12
    out.push(line(20, y, WIDTH - 20, y, { color: '#ddd' }))
    const labelLines = wrap(r.label, 40)
    labelLines.forEach((l, i) => out.push(text(20, y + 16 + i * 14, l, { size: 12, weight: 'bold' })))
    out.push(text(20, y + 16 + labelLines.length * 14, `added ${r.unit}${r.base === undefined ? '' : ` (unguarded: ${time(r.base, false)})`}`, { size: 11, color: '#666' }))
    ARMS.forEach((arm, i) => {
      const v = r.values[arm.id]
      if (v === undefined) return
      const by = y + 8 + i * (barH + 4)
      out.push(rect(x0, by, Math.max(0, v) * scale, barH, arm.color))
      out.push(text(x0 + Math.max(0, v) * scale + 5, by + barH - 2, time(v), { size: 11 }))
    })
    out.push(line(x0, y + 5, x0, y + blockH - 2, { color: '#444' }))
    if (r.budget !== undefined) {
      const bx = x0 + r.budget * scale
      out.push(line(bx, y + 4, bx, y + blockH - 1, { color: '#7a00b0', width: 1.5, dash: '2 2' }))
      out.push(text(bx, y + blockH + 8, `budget < ${time(r.budget, false)}`, { size: 10, anchor: 'end', color: '#7a00b0' }))
    }
    const rx = WIDTH - 20
    if (r.vs?.sd) out.push(text(rx, y + 18, `÷ seed ${r.vs.sd.median.toFixed(2)}×`, { size: 12, anchor: 'end', weight: 'bold', color: r.vs.sd.median <= 1 ? '#1a7a1a' : '#b00' }))
    if (r.vs?.pj) out.push(text(rx, y + 34, `÷ plain-JS ${r.vs.pj.median.toFixed(2)}×`, { size: 12, anchor: 'end', weight: 'bold', color: r.vs.pj.median <= 1 ? '#1a7a1a' : '#b00' }))
    y += Math.max(blockH, 16 + labelLines.length * 14 + 6) + (r.budget !== undefined ? 14 : 4)
  }
  return { svg: out, bottom: y }
}

/** Panel B: p99 lateness against N waiting, log-log. */
function latenessPanel(points, top, budget) {
  const out = []
  const h = 300
  const left = 90
  const right = WIDTH - 260
  const plotTop = top + 50
  const plotBottom = plotTop + h
  out.push(text(20, top + 18, 'B. Unanswered client queries: p99 lateness past the deadline against the number waiting at once', { size: 15, weight: 'bold' }))
  out.push(text(20, top + 36, 'Every query is issued before the first deadline; lateness is measured in the caller\'s rejection handler. Both axes logarithmic.', { size: 11, color: '#555' }))
  const ns = points.map((p) => p.n)
  const ys = points.flatMap((p) => ARMS.map((a) => p[a.id]).filter((v) => v !== undefined))
  if (ns.length === 0 || ys.length === 0) {
    out.push(text(left, plotTop + 20, 'not measured in this run', { size: 12, style: 'italic' }))
    return { svg: out, bottom: plotTop + 40 }
  }
  const xMin = Math.log10(Math.min(...ns) / 1.5)
  const xMax = Math.log10(Math.max(...ns) * 1.5)
  const yMin = Math.log10(Math.max(0.1, Math.min(...ys, budget) / 2))
  const yMax = Math.log10(Math.max(...ys, budget) * 2)
  const X = (n) => left + (Math.log10(n) - xMin) / (xMax - xMin) * (right - left)
  const Y = (v) => plotBottom - (Math.log10(Math.max(v, 0.1)) - yMin) / (yMax - yMin) * h
  out.push(rect(left, plotTop, right - left, h, '#fafafa', ' stroke="#bbb"'))
  for (const t of [0.1, 0.3, 1, 3, 10, 30, 100, 300, 1000, 3000, 10000]) {
    const lt = Math.log10(t)
    if (lt < yMin || lt > yMax) continue
    out.push(line(left, Y(t), right, Y(t), { color: '#e4e4e4' }), text(left - 6, Y(t) + 4, `${t} ms`, { size: 11, anchor: 'end', color: '#444' }))
  }
  for (const n of ns) out.push(line(X(n), plotTop, X(n), plotBottom, { color: '#e4e4e4' }), text(X(n), plotBottom + 16, int(n), { size: 11, anchor: 'middle', color: '#444' }))
  out.push(text((left + right) / 2, plotBottom + 34, 'client queries waiting at once (N)', { size: 12, anchor: 'middle' }))
  out.push(`<text x="24" y="${(plotTop + h / 2).toFixed(1)}" font-size="12" text-anchor="middle" transform="rotate(-90 24 ${(plotTop + h / 2).toFixed(1)})" fill="#222">p99 lateness (ms)</text>`)
  out.push(line(left, Y(budget), right, Y(budget), { color: '#7a00b0', width: 1.5, dash: '6 3' }))
  out.push(text(left + 6, Y(budget) - 5, `${budget} ms (for reference; the budget at 100,000 is the seed's guard's p99)`, { size: 11, color: '#7a00b0' }))
  ARMS.forEach((arm, i) => {
    const pts = points.filter((p) => p[arm.id] !== undefined)
    if (pts.length > 1) out.push(`<polyline fill="none" stroke="${arm.color}" stroke-width="2" points="${pts.map((p) => `${X(p.n).toFixed(1)},${Y(p[arm.id]).toFixed(1)}`).join(' ')}"/>`)
    for (const p of pts) {
      out.push(`<circle cx="${X(p.n).toFixed(1)}" cy="${Y(p[arm.id]).toFixed(1)}" r="3.5" fill="${arm.color}"/>`)
    }
    // Values of each series beside the plot, one column per arm, in ms.
    const lx = right + 20
    const ly = plotTop + 10 + i * (pts.length * 15 + 28)
    out.push(rect(lx, ly - 9, 12, 10, arm.color), text(lx + 18, ly, arm.name.replace(' (000 inspect / 002 inbox)', ' (000)'), { size: 11, weight: 'bold' }))
    pts.forEach((p, k) => out.push(text(lx + 18, ly + 15 * (k + 1), `${int(p.n)}: ${p[arm.id].toFixed(1)} ms`, { size: 11 })))
  })
  return { svg: out, bottom: plotBottom + 50 }
}

/** Panel C: memory per waiting query. */
function memoryPanel(memory, top) {
  const out = []
  out.push(text(20, top + 18, `C. Memory per waiting client query, with ${int(memory.n)} waiting`, { size: 15, weight: 'bold' }))
  out.push(text(20, top + 36, 'JS heap after collection (a guard\'s: over the unguarded arm\'s) plus the growth of the guard\'s wasm memory, ÷ N.', { size: 11, color: '#555' }))
  const items = [{ name: 'the host itself (unguarded)', color: '#888', v: memory.host },
    ...ARMS.filter((a) => memory[a.id] !== undefined).map((a) => ({ name: `${a.name}: added`, color: a.color, v: memory[a.id] }))]
  const max = Math.max(...items.map((i) => i.v)) * 1.1
  const x0 = 320
  const w = 480
  let y = top + 48
  for (const item of items) {
    out.push(text(20, y + 11, item.name, { size: 12 }), rect(x0, y, Math.max(0, item.v) / max * w, 14, item.color))
    out.push(text(x0 + Math.max(0, item.v) / max * w + 5, y + 11, bytes(item.v), { size: 11 }))
    y += 20
  }
  return { svg: out, bottom: y + 10 }
}

/**
 * Write the chart of `data` ({ rows, lateness, memory }) to `file`.
 * rows: [{ label, unit, values: { hg, pj, sd } (ns), vs, budget? }];
 * lateness: [{ n, hg?, pj?, sd? } (ms)]; memory: { n, host, hg?, pj?, sd? } (bytes).
 */
export function writeChart(file, data, { title, budgetMs = 50 } = {}) {
  const parts = [text(20, 28, title, { size: 17, weight: 'bold' })]
  let y = 44
  if (data.rows.length) {
    const a = costPanel(data.rows, y)
    parts.push(...a.svg)
    y = a.bottom + 20
  }
  if (data.lateness.length) {
    const b = latenessPanel(data.lateness, y, budgetMs)
    parts.push(...b.svg)
    y = b.bottom + 10
  }
  if (data.memory) {
    const c = memoryPanel(data.memory, y)
    parts.push(...c.svg)
    y = c.bottom
  }
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${Math.ceil(y + 10)}" viewBox="0 0 ${WIDTH} ${Math.ceil(y + 10)}" ${FONT}>
<rect width="100%" height="100%" fill="#fff"/>
${parts.join('\n')}
</svg>
`
  writeFileSync(file, svg)
}
