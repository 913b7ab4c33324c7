// README.md and README.zh.md carry equal authority, as the host packages' do.
//
// 1. The record: README.i18n.yaml holds the git blob hash (`git hash-object`) of
//    each side as of the last state confirmed consistent. A side whose hash differs
//    was edited since: bring the other side along, then `make readme-record`.
// 2. The structure: the two sides have the same language switch line, the same
//    sequence of heading levels, the same tables (rows, cells, and the figures of
//    every row), the same figures in each section, the same inline code and link
//    targets in each section, the same fenced code blocks (identical code; only
//    comments may be translated), every blockquote of README.md (what the guard
//    gives the model, kept in English) unchanged in README.zh.md beside its
//    gloss, and the same `make bench` block. The exact rules are in the header of
//    support/readme-pair.mjs.
// 3. The checker itself: mutated copies of README.md (a heading, a table row, a
//    figure, a code line, a quoted message changed) are each caught, and a copy
//    whose comments alone are translated passes, so (2) cannot pass vacuously.
//
// Plain Node, built-ins only, no build needed; reads the READMEs relative to this
// file, not the working directory. Run: node --test readme.test.mjs
// (`make test-readme`; also part of `make test-js`).

import { describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import {
  blobHash, currentHashes, EN, pairProblems, parseReadme, parseRecord, readRecord, RECORD, renderRecord, ROOT, ZH,
} from './support/readme-pair.mjs'

const en = readFileSync(new URL(EN, ROOT), 'utf8')
const zh = readFileSync(new URL(ZH, ROOT), 'utf8')

describe('README.i18n.yaml records the pair as consistent', () => {
  test('blob hashes are git\'s (known vectors of `git hash-object`)', () => {
    assert.equal(blobHash(Buffer.from('')), 'e69de29bb2d1d6434b8b29ae775ad8c2e48c5391')
    assert.equal(blobHash(Buffer.from('hello\n')), 'ce013625030ba8dba906f756967f9e9ca394464a')
    assert.equal(blobHash(Buffer.from('中文\n')), blobHash(Buffer.from([0xe4, 0xb8, 0xad, 0xe6, 0x96, 0x87, 0x0a])), 'hashed over bytes, not characters')
  })

  test(`${RECORD} is in the host packages' form`, () => {
    const text = readFileSync(new URL(RECORD, ROOT), 'utf8')
    const record = parseRecord(text)
    assert.deepEqual(Object.keys(record), [EN, ZH])
    assert.equal(text, renderRecord(record), `${RECORD}: four comment lines, then \`README.md: <hash>\` and \`README.zh.md: <hash>\` (write it with \`make readme-record\`)`)
  })

  let record = null
  let recordError = null
  try {
    record = readRecord()
  } catch (error) {
    recordError = error
  }
  const now = currentHashes()
  for (const [side, other] of [[EN, ZH], [ZH, EN]]) {
    test(`${side} is the version recorded consistent`, () => {
      if (recordError) assert.fail(`${recordError.message}: once the two sides say the same, write it with \`make readme-record\``)
      if (record[side] !== now[side]) {
        assert.fail(`${side} has changed since the pair was last recorded consistent (${RECORD} holds ${record[side]}, ` +
          `the file now hashes to ${now[side]}). Both languages carry equal authority: bring ${other} along so it says the ` +
          `same (same sections, tables, figures and code), then run \`make readme-record\`.`)
      }
    })
  }
})

describe('README.md and README.zh.md have the same structure', () => {
  const problems = pairProblems(en, zh)
  const aspects = {
    parse: 'both parse (every fence closed, the bench markers paired)',
    switch: 'the language switch line under the title',
    headings: 'the same sequence of heading levels',
    tables: 'the same tables: rows, cells and the figures of each row',
    figures: 'the same figures in each section',
    code: 'the same inline code and link targets in each section',
    fences: 'the same fenced code blocks (comments aside)',
    quotes: 'what the model receives is quoted in English on both sides',
    bench: 'the same `make bench` block',
  }
  for (const [aspect, title] of Object.entries(aspects)) {
    test(title, () => {
      const found = problems.filter((p) => p.aspect === aspect).map((p) => `- ${p.message}`)
      if (found.length) assert.fail(`${EN} and ${ZH} differ:\n${found.join('\n')}\nBring the two sides together, then run \`make readme-record\`.`)
    })
  }

  test('there is a structure to compare (the checks are not vacuous)', () => {
    const doc = parseReadme(en)
    assert.ok(doc.headings.length >= 10, `headings found: ${doc.headings.length}`)
    assert.ok(doc.tables.length >= 3, `tables found: ${doc.tables.length}`)
    assert.ok(doc.fences.length >= 4, `fenced blocks found: ${doc.fences.length}`)
    assert.ok(doc.quotes.length >= 1, 'blockquotes found')
    assert.ok(doc.bench && doc.bench.includes('| Measure |'), 'the bench block holds the summary table')
    assert.ok(doc.sections.some((s) => s.code.length > 10), 'inline code found')
  })
})

describe('the structure check catches one side edited alone', () => {
  // README.md against itself (with the Chinese side's switch line) has no problems;
  // each mutation edits one side of that pair alone and must be reported under its
  // aspect. Independent of the state of the translation.
  const mirror = en.replace(/^English \| \[中文\]\((?:\.\/)?README\.zh\.md\)$/m, '[English](./README.md) | 中文')
  const replaceOnce = (text, from, to) => {
    assert.ok(text.includes(from), `the mutation's anchor ${JSON.stringify(from)} is in ${EN}`)
    return text.replace(from, to)
  }
  const firstLine = (re) => {
    const line = en.split('\n').find((l) => re.test(l))
    assert.ok(line, `${EN} has a line matching ${re}`)
    return line
  }
  const mutations = {
    headings: () => replaceOnce(en, '\n## License\n', '\n## License\n\n### Notice\n'),
    tables: () => {
      const row = firstLine(/^\| `inbox\.previewChars`/)
      return replaceOnce(en, `${row}\n`, '')
    },
    figures: () => replaceOnce(en, 'then 16 s', 'then 17 s'),
    code: () => replaceOnce(en, '`INSPECT_CLIENT_GUARD_DISPOSED`', '`INSPECT_CLIENT_GUARD_STOPPED`'),
    fences: () => replaceOnce(en, 'dsh plugin --profile <profile> remove cordis-plugin-harness-guard\n', 'dsh plugin --profile <profile> remove cordis-plugin-harness-guard@latest\n'),
    quotes: () => replaceOnce(en, 'Do not retry platform:"client" queries here', 'Do not retry client queries here'),
    bench: () => {
      const lines = en.split('\n')
      const rows = lines.slice(lines.indexOf('<!-- bench:start -->'), lines.indexOf('<!-- bench:end -->')).filter((l) => l.startsWith('| ') && !l.startsWith('|---'))
      const row = rows.at(-1)
      assert.ok(row, 'the bench block has a table row')
      return replaceOnce(en, row, row.replace('| ', '| x'))
    },
  }
  for (const [aspect, mutate] of Object.entries(mutations)) {
    test(`${aspect}: a change to ${EN} alone is reported`, () => {
      const problems = pairProblems(mutate(), mirror)
      assert.ok(problems.some((p) => p.aspect === aspect), `expected a "${aspect}" problem, got: ${JSON.stringify(problems)}`)
    })
  }

  test('a table row\'s figure changed on one side is reported for that row', () => {
    const row = firstLine(/^\| `inspect\.deadlineMs`/)
    const problems = pairProblems(replaceOnce(en, row, row.replace('`15000`', '`30000`')), mirror)
    assert.ok(problems.some((p) => p.aspect === 'tables' && /row \d+: figures/.test(p.message)), JSON.stringify(problems))
  })

  test('comments in code blocks may be translated; the code around them may not', () => {
    const line = firstLine(/^make test\s+#/)
    const translated = replaceOnce(en, line, 'make test    # 全部测试套件')
    assert.deepEqual(pairProblems(translated, mirror), [])
    const dropped = replaceOnce(en, line, 'make test')
    assert.ok(pairProblems(dropped, mirror).some((p) => p.aspect === 'fences'), 'a comment dropped on one side is reported')
    const changed = replaceOnce(en, line, line.replace('make test', 'make check'))
    assert.ok(pairProblems(changed, mirror).some((p) => p.aspect === 'fences'), 'code changed beside a comment is reported')
  })

  test('the unmutated baseline has no problems', () => {
    assert.notEqual(mirror, en, 'the switch line was swapped')
    assert.deepEqual(pairProblems(en, mirror), [])
  })
})

describe('README.md is a page a user scans', () => {
  // Prose: what is left outside fenced code, tables, headings, pictures, comments
  // and the generated bench block; a paragraph ends at a blank line, a list item or
  // any of those.
  const paragraphs = []
  let current = []
  let fence = false
  let bench = false
  const close = () => { if (current.length) paragraphs.push(current.join(' ')); current = [] }
  for (const line of en.split('\n')) {
    if (/^\s*(```|~~~)/.test(line)) { close(); fence = !fence; continue }
    if (fence) continue
    if (line.trim() === '<!-- bench:start -->') bench = true
    if (bench) { if (line.trim() === '<!-- bench:end -->') bench = false; continue }
    if (line.trim() === '' || /^\s*\|/.test(line) || /^#/.test(line) || /^!\[/.test(line) || /^<!--/.test(line)) { close(); continue }
    if (/^\s*[-*] /.test(line)) close()
    current.push(line)
  }
  close()
  const words = (text) => text.replace(/\]\([^)]*\)/g, ']').split(/\s+/).filter((w) => /[\p{L}\p{N}]/u.test(w)).length

  test('at most 1,500 words of prose', () => {
    const total = paragraphs.reduce((n, p) => n + words(p), 0)
    assert.ok(total > 500, `prose found: ${total} words`)
    assert.ok(total <= 1500, `${total} words of prose`)
  })

  test('no paragraph over 90 words (a sentence that needs more is a list)', () => {
    const long = paragraphs.filter((p) => words(p) > 90).map((p) => `${words(p)} words: ${p.slice(0, 60)}…`)
    assert.deepEqual(long, [])
  })

  test('the symptoms come first: both exact strings before the install', () => {
    const install = en.indexOf('\n## Install')
    assert.ok(install > 0)
    assert.ok(en.indexOf("dsh: UNKNOWN: Cannot read properties of undefined (reading 'kind')") < install)
    assert.ok(en.indexOf('got no answer from any page within 15000ms') < install)
    assert.ok(en.indexOf('![') < install, 'the picture of the page before the install')
  })
})
