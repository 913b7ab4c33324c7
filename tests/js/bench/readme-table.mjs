// Copy the block `bench.mjs` wrote to BENCHMARKS.md (the machine line, the link
// to the full table and the summary of at most 7 rows, between `<!-- readme:start -->`
// and `<!-- readme:end -->`)
// into README.md and README.zh.md, between their `<!-- bench:start -->` and
// `<!-- bench:end -->` markers, so none of them disagree. Both READMEs get the same
// block (readme.test.mjs requires it).
//
// Only the markers are looked for, so the block may sit in any section of either
// README and move when the READMEs are rewritten; a marker may carry spaces around
// it on its line, and one shown inside fenced code is not a marker. Everything outside the markers is left byte for byte as it was.
// A README with no markers, or more than one pair, is an error that says what to add,
// and then neither side is written.
//
// The bench changes both sides alike, so when the pair was recorded consistent
// before (README.i18n.yaml), the record is renewed as `make readme-record` does;
// when it was not (one side edited and not yet brought along), the record is left
// as it is, for whoever brings the sides together to renew.
import { readFileSync, writeFileSync } from 'node:fs'
import { BENCH_END, BENCH_START, RECORD, recordMatches, ROOT, SIDES, writeRecord } from '../support/readme-pair.mjs'

const FROM_START = '<!-- readme:start -->'
const FROM_END = '<!-- readme:end -->'

/** The block of BENCHMARKS.md to copy, without its markers. */
function benchBlock(bench) {
  const lines = bench.split('\n')
  const start = lines.findIndex((line) => line.trim() === FROM_START)
  const end = lines.findIndex((line, i) => i > start && line.trim() === FROM_END)
  if (start >= 0 && end > start) return lines.slice(start + 1, end).join('\n').trim()
  // A BENCHMARKS.md written before the markers: its machine lines and its one table.
  const table = lines.filter((line) => line.startsWith('|')).join('\n')
  const facts = lines.filter((line) => /^- (Date|Node|Machine):/.test(line)).join('\n')
  if (table === '' || facts === '') throw new Error(`BENCHMARKS.md has neither a ${FROM_START} … ${FROM_END} block nor the table and the Date/Node/Machine lines: run \`make bench\``)
  return `${facts}\n\n${table}`
}

/** The indexes of the lines that are `marker` alone, outside fenced code (a README may show the markers in a fence). */
function markerLines(lines, marker) {
  const found = []
  let fence = null
  lines.forEach((line, i) => {
    const f = /^ {0,3}(`{3,}|~{3,})/.exec(line)
    if (fence) {
      if (f && f[1][0] === fence[0] && f[1].length >= fence.length && line.trim() === f[1]) fence = null
    } else if (f) {
      fence = f[1]
    } else if (line.trim() === marker) {
      found.push(i)
    }
  })
  return found
}

/** `text` with the lines between its one pair of bench markers replaced by `block`. */
function place(side, text, block) {
  const lines = text.split('\n')
  const starts = markerLines(lines, BENCH_START)
  const ends = markerLines(lines, BENCH_END)
  if (starts.length !== 1 || ends.length !== 1 || ends[0] < starts[0]) {
    throw new Error(`${side} needs exactly one pair of bench markers, \`${BENCH_START}\` then \`${BENCH_END}\`, each on a line of its own, where the benchmark table goes (found ${starts.length} and ${ends.length}); nothing was written`)
  }
  return [...lines.slice(0, starts[0] + 1), block, ...lines.slice(ends[0])].join('\n')
}

const block = benchBlock(readFileSync(new URL('BENCHMARKS.md', ROOT), 'utf8'))
if (!block.includes('| Measure |')) throw new Error('the BENCHMARKS.md block holds no summary table')

const wasConsistent = recordMatches()
const updated = SIDES.map((side) => [side, place(side, readFileSync(new URL(side, ROOT), 'utf8'), block)])
for (const [side, text] of updated) {
  writeFileSync(new URL(side, ROOT), text)
  console.log(`${side}: benchmark table updated`)
}
if (wasConsistent) {
  writeRecord()
  console.log(`${RECORD}: renewed (the pair was consistent and the bench changed both sides alike)`)
} else {
  console.log(`${RECORD}: left as it was: the pair was not recorded consistent before the bench; bring the sides together, then run \`make readme-record\``)
}
