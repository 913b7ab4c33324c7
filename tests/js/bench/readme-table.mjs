// Copy the table `bench.mjs` wrote to BENCHMARKS.md into README.md and README.zh.md,
// between the `<!-- bench:start -->` and `<!-- bench:end -->` markers, so none of
// them disagree. Both READMEs get the same block (readme.test.mjs requires it).
//
// The bench changes both sides alike, so when the pair was recorded consistent
// before (README.i18n.yaml), the record is renewed as `make readme-record` does;
// when it was not (one side edited and not yet brought along), the record is left
// as it is, for whoever brings the sides together to renew.
import { readFileSync, writeFileSync } from 'node:fs'
import { BENCH_END, BENCH_START, RECORD, recordMatches, ROOT, SIDES, writeRecord } from '../support/readme-pair.mjs'

const bench = readFileSync(new URL('BENCHMARKS.md', ROOT), 'utf8')
const table = bench.split('\n').filter((line) => line.startsWith('|')).join('\n')
const facts = bench.split('\n').filter((line) => /^- (Date|Node|Machine):/.test(line)).join('\n')
if (table === '' || facts === '') throw new Error('BENCHMARKS.md lacks the table or the Date/Node/Machine lines')

const wasConsistent = recordMatches()
const updated = SIDES.map((side) => {
  const readme = readFileSync(new URL(side, ROOT), 'utf8')
  const [before, rest, ...more] = readme.split(BENCH_START)
  if (rest === undefined || more.length > 0 || !rest.includes(BENCH_END)) throw new Error(`${side} needs exactly one pair of bench markers`)
  const after = rest.slice(rest.indexOf(BENCH_END))
  return [side, `${before}${BENCH_START}\n${facts}\n\n${table}\n${after}`]
})
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
