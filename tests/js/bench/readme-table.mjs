// Copy the table `bench.mjs` wrote to BENCHMARKS.md into README.md, between the
// `<!-- bench:start -->` and `<!-- bench:end -->` markers, so the two never disagree.
import { readFileSync, writeFileSync } from 'node:fs'

const root = new URL('../../../', import.meta.url)
const bench = readFileSync(new URL('BENCHMARKS.md', root), 'utf8')
const table = bench.split('\n').filter((line) => line.startsWith('|')).join('\n')
const facts = bench.split('\n').filter((line) => /^- (Date|Node|Machine):/.test(line)).join('\n')
const readme = readFileSync(new URL('README.md', root), 'utf8')
const start = '<!-- bench:start -->'
const end = '<!-- bench:end -->'
const [before, rest] = readme.split(start)
if (rest === undefined || !rest.includes(end)) throw new Error('README.md lacks the bench markers')
const after = rest.slice(rest.indexOf(end))
writeFileSync(new URL('README.md', root), `${before}${start}\n${facts}\n\n${table}\n${after}`)
console.log('README.md: benchmark table updated')
