// `make readme-record`: renew README.i18n.yaml from the git blob hashes of
// README.md and README.zh.md as they are in the working tree (committed or not),
// once the two have been brought to say the same thing. Refuses while they differ
// in structure (what readme.test.mjs checks), since such a pair is not consistent.
// Plain Node, built-ins only.
import { currentProblems, RECORD, writeRecord } from './support/readme-pair.mjs'

const problems = currentProblems()
if (problems.length) {
  console.error(`${RECORD} not renewed: README.md and README.zh.md differ in structure:`)
  for (const p of problems) console.error(`- [${p.aspect}] ${p.message}`)
  process.exit(1)
}
const hashes = writeRecord()
for (const [side, hash] of Object.entries(hashes)) console.log(`${RECORD}: ${side} ${hash}`)
