// The README pair: README.md and README.zh.md carry equal authority, and
// README.i18n.yaml records the git blob hash of each side as of the last state
// confirmed consistent (the form the @deepseek-ai host packages ship).
//
// Used by readme.test.mjs (the check), readme-record.mjs (`make readme-record`)
// and bench/readme-table.mjs (`make bench` writes its table into both sides).
// Plain Node: no packages beyond the built-ins, so it runs before anything is built.
//
// What "the same structure" means (pairProblems below, one aspect per rule):
// - switch:   the language switch line under the title, in the host packages' form
//             (`English | [中文](README.zh.md)` / `[English](README.md) | 中文`).
// - headings: the same sequence of heading levels (so the same sections, in order).
// - tables:   the same tables in the same order, with the same number of rows (the
//             separator row not counted) and of cells in each row, and in each row
//             the same figures (every number in the row, as a multiset).
// - figures:  in each section, the same set of numbers outside fenced code and the
//             bench block (prose and tables). A set, not a count, so a gloss may
//             repeat a figure; thousands separators are ignored (1,000 = 1000).
// - code:     in each section, the same inline code spans (a multiset: config keys,
//             codes, log lines, commands and file names are never translated) and the
//             same link targets.
// - fences:   the same fenced code blocks in the same order, with the same info
//             string and the same number of lines. Code is not translated, so every
//             line must be identical once its comment is set aside: comments may be
//             translated (`//` in js/ts, `#` in yaml/sh, each only at the start of a
//             line or after whitespace; json and other blocks have none), a line
//             carries a comment on one side exactly when it does on the other, and
//             whitespace before a comment is free (CJK text aligns differently).
// - quotes:   every blockquote line of README.md appears unchanged as a blockquote
//             line of README.zh.md. The README quotes there what the guard gives the
//             model, which stays in English in both; the Chinese side adds a gloss
//             outside the quote.
// - bench:    the block between `<!-- bench:start -->` and `<!-- bench:end -->` is
//             byte for byte the same (`make bench` writes it into both sides).

import { createHash } from 'node:crypto'
import { readFileSync, writeFileSync } from 'node:fs'

/** The repository root (this file is tests/js/support/readme-pair.mjs). */
export const ROOT = new URL('../../../', import.meta.url)
export const EN = 'README.md'
export const ZH = 'README.zh.md'
export const SIDES = [EN, ZH]
export const RECORD = 'README.i18n.yaml'
export const BENCH_START = '<!-- bench:start -->'
export const BENCH_END = '<!-- bench:end -->'

/** `git hash-object` of these bytes: sha1 over `blob <byte length>\0<content>`. */
export function blobHash(bytes) {
  return createHash('sha1').update(`blob ${bytes.length}\0`).update(bytes).digest('hex')
}

export function readSide(side, root = ROOT) {
  return readFileSync(new URL(side, root))
}

/** The blob hash of each side as it is in the working tree. */
export function currentHashes(root = ROOT) {
  return Object.fromEntries(SIDES.map((side) => [side, blobHash(readSide(side, root))]))
}

/** `{ 'README.md': hash, 'README.zh.md': hash }` from README.i18n.yaml; throws on any other shape. */
export function parseRecord(text) {
  const record = {}
  for (const [i, raw] of text.split('\n').entries()) {
    const line = raw.replace(/\r$/, '')
    if (line === '' || line.startsWith('#')) continue
    const m = /^(README(?:\.zh)?\.md): ([0-9a-f]{40})$/.exec(line)
    if (!m) throw new Error(`${RECORD} line ${i + 1} is not \`README.md: <40 hex>\` or \`README.zh.md: <40 hex>\`: ${JSON.stringify(line)}`)
    if (m[1] in record) throw new Error(`${RECORD} records ${m[1]} twice`)
    record[m[1]] = m[2]
  }
  for (const side of SIDES) if (!(side in record)) throw new Error(`${RECORD} has no line for ${side}`)
  return record
}

export function readRecord(root = ROOT) {
  return parseRecord(readFileSync(new URL(RECORD, root), 'utf8'))
}

/** The record's text, in the key layout of the host packages' README.i18n.yaml. */
export function renderRecord(hashes) {
  return [
    '# Bilingual-pair consistency record (tests/js/readme.test.mjs): the git blob hash of each',
    '# side as of the last confirmed-consistent state. Both languages carry equal authority;',
    '# after editing either side, bring the other along and re-record with:',
    '#   make readme-record',
    ...SIDES.map((side) => `${side}: ${hashes[side]}`),
    '',
  ].join('\n')
}

/** Write README.i18n.yaml from the working tree's two sides; returns the hashes written. */
export function writeRecord(root = ROOT) {
  const hashes = currentHashes(root)
  writeFileSync(new URL(RECORD, root), renderRecord(hashes))
  return hashes
}

/** Whether README.i18n.yaml exists, parses and names the working tree's two sides. */
export function recordMatches(root = ROOT) {
  let record
  try {
    record = readRecord(root)
  } catch {
    return false
  }
  const now = currentHashes(root)
  return SIDES.every((side) => record[side] === now[side])
}

// ---------------------------------------------------------------------------
// Structure

const FENCE = /^(\s*)(`{3,}|~{3,})\s*([^`\s]*).*$/
const HEADING = /^(#{1,6})\s+(.*?)\s*#*\s*$/
const QUOTE = /^\s*>\s?(.*)$/
const SWITCH = { [EN]: /^English \| \[中文\]\((?:\.\/)?README\.zh\.md\)$/, [ZH]: /^\[English\]\((?:\.\/)?README\.md\) \| 中文$/ }
const COMMENT = { js: '//', javascript: '//', mjs: '//', ts: '//', typescript: '//', yaml: '#', yml: '#', sh: '#', bash: '#', shell: '#', console: '#' }

/** Inline code spans of one line (CommonMark: a run of N backticks closes on the next run of exactly N). */
export function codeSpans(line) {
  const spans = []
  const re = /(`+)([\s\S]*?[^`])\1(?!`)/g
  for (let m; (m = re.exec(line)); ) spans.push(m[2])
  return spans
}

/** Link targets of one line: `[text](target)`. */
export function linkTargets(line) {
  return [...line.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1])
}

/** Every number in a piece of text: `1,000` and `1000` are one figure; `0.88` and `4.0.4` whole. */
export function numbers(text) {
  const bare = text.replace(/\]\([^)\s]+\)/g, ']')
  return [...bare.matchAll(/\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)*/g)].map((m) => m[0].replaceAll(',', ''))
}

/** Table cells of one row, split on unescaped pipes. */
export function cells(row) {
  const inner = row.trim().replace(/^\|/, '').replace(/(?<!\\)\|$/, '')
  return inner.split(/(?<!\\)\|/).map((c) => c.trim())
}

/** A line of a fenced block split into its code and its comment (null when it has none). */
export function splitComment(line, lang) {
  const marker = COMMENT[lang]
  if (!marker) return { code: line, comment: null }
  const re = marker === '//' ? /(^|\s)\/\/(.*)$/ : /(^|\s)#(.*)$/
  const m = re.exec(line)
  if (!m) return { code: line, comment: null }
  return { code: line.slice(0, m.index + m[1].length).trimEnd(), comment: m[2].trim() }
}

/**
 * One README, parsed into what the pair must share. Sections are numbered from 0
 * (what precedes the first heading), heading i opening section i + 1.
 */
export function parseReadme(text) {
  const lines = text.replace(/\r\n/g, '\n').split('\n')
  const doc = { headings: [], tables: [], fences: [], quotes: [], sections: [newSection()], switchLine: null, bench: null }
  let fence = null
  let table = null
  let inBench = false
  const benchLines = []
  for (const line of lines) {
    const section = doc.sections.at(-1)
    if (fence) {
      const close = FENCE.exec(line)
      if (close && close[2][0] === fence.marker[0] && close[2].length >= fence.marker.length && close[3] === '') {
        doc.fences.push({ lang: fence.lang, lines: fence.lines, section: doc.sections.length - 1 })
        fence = null
      } else {
        fence.lines.push(line)
      }
      if (inBench) benchLines.push(line)
      continue
    }
    if (line.trim() === BENCH_START) {
      inBench = true
      continue
    }
    if (line.trim() === BENCH_END) {
      doc.bench = benchLines.join('\n')
      inBench = false
      continue
    }
    if (inBench) {
      benchLines.push(line)
      continue
    }
    const open = FENCE.exec(line)
    if (open) {
      table = null
      fence = { marker: open[2], lang: open[3].toLowerCase(), lines: [] }
      continue
    }
    const heading = HEADING.exec(line)
    if (heading) {
      table = null
      doc.headings.push({ level: heading[1].length, text: heading[2] })
      doc.sections.push(newSection())
      continue
    }
    if (doc.switchLine === null && doc.headings.length === 1 && (SWITCH[EN].test(line.trim()) || SWITCH[ZH].test(line.trim()))) {
      doc.switchLine = line.trim()
      continue
    }
    if (line.trimStart().startsWith('|')) {
      if (!table) {
        table = { rows: [], section: doc.sections.length - 1 }
        doc.tables.push(table)
      }
      if (!(/^[\s|:-]+$/.test(line) && line.includes('---'))) table.rows.push(cells(line))
    } else {
      table = null
    }
    const quote = QUOTE.exec(line)
    if (quote && quote[1].trim() !== '') doc.quotes.push(quote[1].trim())
    section.text.push(line)
    for (const s of codeSpans(line)) section.code.push(s)
    for (const t of linkTargets(line)) section.links.push(t)
  }
  if (fence) throw new Error('a fenced code block is never closed')
  if (inBench) throw new Error(`${BENCH_START} without ${BENCH_END}`)
  return doc
}

function newSection() {
  return { text: [], code: [], links: [] }
}

function multisetDiff(a, b) {
  const count = new Map()
  for (const x of a) count.set(x, (count.get(x) ?? 0) + 1)
  for (const x of b) count.set(x, (count.get(x) ?? 0) - 1)
  const onlyA = []
  const onlyB = []
  for (const [x, n] of count) {
    for (let i = 0; i < n; i++) onlyA.push(x)
    for (let i = 0; i < -n; i++) onlyB.push(x)
  }
  return { onlyA, onlyB }
}

const show = (xs) => xs.map((x) => JSON.stringify(x)).join(', ')

/**
 * Every way the two READMEs differ in structure, as `{ aspect, message }`
 * (aspects: switch, headings, tables, figures, code, fences, quotes, bench).
 * Empty when they match.
 */
export function pairProblems(enText, zhText) {
  const problems = []
  const add = (aspect, message) => problems.push({ aspect, message })
  let en
  let zh
  try {
    en = parseReadme(enText)
  } catch (error) {
    add('parse', `${EN}: ${error.message}`)
  }
  try {
    zh = parseReadme(zhText)
  } catch (error) {
    add('parse', `${ZH}: ${error.message}`)
  }
  if (!en || !zh) return problems

  for (const [side, doc] of [[EN, en], [ZH, zh]]) {
    if (!doc.switchLine || !SWITCH[side].test(doc.switchLine)) {
      add('switch', `${side}: the line under the title must be the language switch ${side === EN ? '`English | [中文](./README.zh.md)`' : '`[English](./README.md) | 中文`'}`)
    }
  }

  const levels = (doc) => doc.headings.map((h) => h.level)
  const sameHeadings = levels(en).join() === levels(zh).join()
  if (!sameHeadings) {
    const n = Math.max(en.headings.length, zh.headings.length)
    let i = 0
    while (i < n && en.headings[i]?.level === zh.headings[i]?.level) i++
    const at = (doc, j) => (doc.headings[j] ? `${'#'.repeat(doc.headings[j].level)} ${doc.headings[j].text}` : '(no heading)')
    add('headings', `heading levels differ (${EN} has ${en.headings.length} headings, ${ZH} ${zh.headings.length}); first difference at heading ${i + 1}: ${EN} "${at(en, i)}", ${ZH} "${at(zh, i)}"`)
  }

  if (en.tables.length !== zh.tables.length) {
    add('tables', `${EN} has ${en.tables.length} tables, ${ZH} ${zh.tables.length}`)
  }
  for (let t = 0; t < Math.min(en.tables.length, zh.tables.length); t++) {
    const a = en.tables[t]
    const b = zh.tables[t]
    const name = `table ${t + 1} (${EN} section "${en.headings[a.section - 1]?.text ?? ''}")`
    if (a.rows.length !== b.rows.length) add('tables', `${name}: ${EN} has ${a.rows.length} rows, ${ZH} ${b.rows.length}`)
    for (let r = 0; r < Math.min(a.rows.length, b.rows.length); r++) {
      if (a.rows[r].length !== b.rows[r].length) add('tables', `${name}, row ${r + 1}: ${EN} has ${a.rows[r].length} cells, ${ZH} ${b.rows[r].length}`)
      const { onlyA, onlyB } = multisetDiff(numbers(a.rows[r].join(' | ')), numbers(b.rows[r].join(' | ')))
      if (onlyA.length || onlyB.length) add('tables', `${name}, row ${r + 1}: figures only in ${EN}: [${show(onlyA)}]; only in ${ZH}: [${show(onlyB)}]`)
    }
  }

  if (sameHeadings) {
    for (let s = 0; s < en.sections.length; s++) {
      const a = en.sections[s]
      const b = zh.sections[s]
      const name = s === 0 ? 'before the first heading' : `section "${en.headings[s - 1].text}" / "${zh.headings[s - 1].text}"`
      const numsA = new Set(numbers(a.text.join('\n')))
      const numsB = new Set(numbers(b.text.join('\n')))
      const onlyA = [...numsA].filter((x) => !numsB.has(x))
      const onlyB = [...numsB].filter((x) => !numsA.has(x))
      if (onlyA.length || onlyB.length) add('figures', `${name}: figures only in ${EN}: [${show(onlyA)}]; only in ${ZH}: [${show(onlyB)}]`)
      const code = multisetDiff(a.code, b.code)
      if (code.onlyA.length || code.onlyB.length) add('code', `${name}: inline code only in ${EN}: [${show(code.onlyA)}]; only in ${ZH}: [${show(code.onlyB)}]`)
      const links = multisetDiff(a.links, b.links)
      if (links.onlyA.length || links.onlyB.length) add('code', `${name}: link targets only in ${EN}: [${show(links.onlyA)}]; only in ${ZH}: [${show(links.onlyB)}]`)
    }
  }

  if (en.fences.length !== zh.fences.length) add('fences', `${EN} has ${en.fences.length} fenced code blocks, ${ZH} ${zh.fences.length}`)
  for (let f = 0; f < Math.min(en.fences.length, zh.fences.length); f++) {
    const a = en.fences[f]
    const b = zh.fences[f]
    const name = `code block ${f + 1} (\`\`\`${a.lang})`
    if (a.lang !== b.lang) add('fences', `${name}: ${ZH} opens it as \`\`\`${b.lang}`)
    if (a.lines.length !== b.lines.length) {
      add('fences', `${name}: ${EN} has ${a.lines.length} lines, ${ZH} ${b.lines.length}`)
      continue
    }
    for (let l = 0; l < a.lines.length; l++) {
      const x = splitComment(a.lines[l], a.lang)
      const y = splitComment(b.lines[l], a.lang)
      if (x.code.trimEnd() !== y.code.trimEnd()) add('fences', `${name}, line ${l + 1}: code differs: ${EN} ${JSON.stringify(x.code)}, ${ZH} ${JSON.stringify(y.code)}`)
      else if ((x.comment === null) !== (y.comment === null)) add('fences', `${name}, line ${l + 1}: a comment on one side only`)
    }
  }

  const zhQuotes = new Set(zh.quotes)
  const missing = en.quotes.filter((q) => !zhQuotes.has(q))
  if (missing.length) add('quotes', `blockquotes of ${EN} (text the model receives, kept in English) missing from ${ZH}: ${show(missing.map((q) => (q.length > 80 ? `${q.slice(0, 80)}…` : q)))}`)

  if (en.bench === null) add('bench', `${EN} has no ${BENCH_START} … ${BENCH_END} block`)
  if (zh.bench === null) add('bench', `${ZH} has no ${BENCH_START} … ${BENCH_END} block`)
  if (en.bench !== null && zh.bench !== null && en.bench !== zh.bench) add('bench', `the bench blocks differ: run \`node tests/js/bench/readme-table.mjs\` to copy BENCHMARKS.md's table into both`)

  return problems
}

/** pairProblems for the two files as they are in the working tree. */
export function currentProblems(root = ROOT) {
  return pairProblems(readSide(EN, root).toString('utf8'), readSide(ZH, root).toString('utf8'))
}
