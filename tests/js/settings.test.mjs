// The guard's config changed live, on the real host: the settings namespace
// `harness-guard` on the real `@deepseek-ai/dsh-settings` service, live
// reconfiguration in place, and the "config refused" process warning, which is
// written for a refused live change and never for a validation.
//
// A real cordis Context, the real `CordisInspectRegistryService` and the real
// settings service (`SettingsProvider`: registration, layering, validation,
// revisions, watchers). Its storage is the one part kept in memory: a provider
// is "`writable`, `load()`, `persist(ns, section)`" (its README), and this one
// keeps the document in an object, pushing outside edits through the
// provider's own `publish(doc)`. The agent stack is the real one where an
// inbox is involved (support/agent-rig.mjs).
//
// Needs the packed package installed in the rig (`make pack`, then the
// rig's `node_modules/cordis-plugin-harness-guard`) and Node >= 22.

import { describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { Context } from '@deepseek-ai/cordis'
import { CordisInspectRegistryService } from '@deepseek-ai/dsh-cordis-host-runner'
import { SettingsProvider } from '@deepseek-ai/dsh-settings'
import { capturingWarnings, MANIFEST, PATCHED, rawOf, track, settleWithin, loadGuard } from './support/inspect-rig.mjs'
import { createRig } from './support/agent-rig.mjs'

const NS = 'harness-guard'
const REFUSED = 'harness-guard: config refused, the running config stays: '
const DEADLINE_0 = 'invalid harness-guard config: inspect.deadlineMs is 0, expected an integer in 1..=2147483647'

/** The real settings service over a document kept in memory. */
class MemorySettings extends SettingsProvider {
  static initial = {}
  doc = structuredClone(MemorySettings.initial)
  writes = []
  get writable() { return true }
  async load() { return structuredClone(this.doc) }
  async persist(ns, section) {
    this.writes.push([ns, section])
    this.doc = { ...this.doc, [ns]: structuredClone(section) }
  }
  /** An outside edit of the stored document, as a file watcher would push it. */
  edit(ns, section) {
    this.doc = { ...this.doc, [ns]: section }
    this.publish(structuredClone(this.doc))
  }
}

/** A stored document for the next `MemorySettings` mounted. */
const storing = (doc) => class extends MemorySettings { doc = structuredClone(doc) }

const turn = () => new Promise((resolve) => setImmediate(resolve))
/** Let the settings service's watchers and the link's registration run. */
const settled = async () => { for (let i = 0; i < 5; i++) await turn() }

/** A Context with the registry (a page's manifest synced, so a client query waits), and the guard's plugin module. */
async function host(t) {
  const { plugin } = await loadGuard()
  const ctx = new Context()
  await ctx.plugin(CordisInspectRegistryService)
  const registry = ctx.get('cordisInspect')
  registry.syncClientManifest(MANIFEST)
  t.after(() => ctx.fiber.dispose())
  const h = {
    ctx,
    plugin,
    registry,
    /** Mount the guard with `config` (the row's). */
    async mount(config) {
      const fiber = ctx.plugin(plugin, config)
      await fiber
      return fiber
    },
    /** Mount the settings service (`Provider`, default: an empty document). */
    async settings(Provider = MemorySettings) {
      const fiber = ctx.plugin(Provider)
      await fiber
      await settled()
      return { fiber, service: ctx.get('settings') }
    },
    status: () => ctx.get('inspectClientGuard')?.status(),
    /** Start a client query no page answers; `{ tracked, started }`. */
    ask() {
      const started = performance.now()
      const tracked = track(registry.query('client', MANIFEST[0].id, MANIFEST[0].methods[0].name, {}, { id: 'agent-under-test' }, new AbortController().signal))
      tracked.done.then(() => { tracked.after = performance.now() - started })
      return tracked
    },
    described: () => ctx.get('settings')?.describe().find((row) => row.ns === NS),
  }
  return h
}

/** Wait for a tracked query to end; it must end with `code`, not before `atLeast` ms. */
async function endsWith(tracked, code, atLeast, label) {
  assert.equal(await settleWithin(tracked, 10_000), 'settled', `${label}: it ends`)
  assert.equal(tracked.reason?.code, code, `${label}: ${tracked.reason?.message}`)
  assert.ok(tracked.after >= atLeast - 5, `${label}: not before ${atLeast} ms (after ${tracked.after.toFixed(0)} ms)`)
}

describe('the settings namespace', () => {
  test('registered only where ctx.settings exists, with the row\'s config as base and Config\'s schema', async (t) => {
    const h = await host(t)
    const fiber = await h.mount({ inspect: { deadlineMs: 4000 } })
    assert.equal(h.ctx.get('settings'), undefined)
    assert.equal(h.status().inspect.deadlineMs, 4000, 'headless: the row\'s config, nothing else')
    const { fiber: settingsFiber } = await h.settings()
    const row = h.described()
    assert.ok(row, 'the namespace appears when the service does')
    assert.deepEqual(row.base, { inspect: { enabled: true, deadlineMs: 4000 }, inbox: { enabled: true, mode: 'repair', previewChars: 80 } }, 'base: the row\'s config as cordis validated it')
    assert.equal(row.user, undefined)
    assert.deepEqual(row.value, row.base)
    assert.deepEqual(row.schema, h.plugin.Config.toJSON(), 'the schema is Config\'s: its descriptions, defaults and ranges')
    assert.equal(row.applies, 'live')
    // The service goes away: the namespace with it; the row's config runs on.
    await settingsFiber.dispose()
    await settled()
    assert.equal(h.status().inspect.deadlineMs, 4000)
    // The guard goes away: the namespace with it.
    await h.settings()
    assert.ok(h.described())
    await fiber.dispose()
    await settled()
    assert.equal(h.described(), undefined, 'disposed with the mount')
  })

  test('control: without the guard, the settings service has no harness-guard namespace', async (t) => {
    const h = await host(t)
    const { service } = await h.settings()
    assert.deepEqual(service.describe().map((row) => row.ns), [])
  })

  test('the guard runs with the resolved value: the user\'s section over the row; a saved change applies live', async (t) => {
    const h = await host(t)
    await h.mount({ inspect: { deadlineMs: 5000 }, inbox: { mode: 'report' } })
    const { service } = await h.settings(storing({ [NS]: { inspect: { deadlineMs: 150 } } }))
    assert.deepEqual(h.described().value.inspect, { enabled: true, deadlineMs: 150 })
    assert.equal(h.status().inspect.deadlineMs, 150, 'the user\'s section wins over the row')
    assert.equal(h.status().inbox.mode, 'report', 'what the user left alone is the row\'s')
    await endsWith(h.ask(), 'INSPECT_CLIENT_DEADLINE', 150, 'a query under the user\'s deadline')

    await service.update(NS, { inspect: { deadlineMs: 250 }, inbox: { mode: 'quarantine' } })
    await settled()
    assert.equal(h.status().inspect.deadlineMs, 250, 'a saved change applies live')
    assert.equal(h.status().inbox.mode, 'quarantine')
    // Reset: the user's section cleared re-inherits the row.
    await service.replace(NS, {})
    await settled()
    assert.equal(h.status().inspect.deadlineMs, 5000)
    assert.equal(h.status().inbox.mode, 'report')
  })

  test('the settings service going away: the row\'s config applies again; coming back: the user\'s section again', async (t) => {
    const h = await host(t)
    await h.mount({ inspect: { deadlineMs: 5000 } })
    const stored = storing({ [NS]: { inspect: { deadlineMs: 150 } } })
    const { fiber } = await h.settings(stored)
    assert.equal(h.status().inspect.deadlineMs, 150)
    await fiber.dispose()
    await settled()
    assert.equal(h.status().inspect.deadlineMs, 5000, 'the row\'s config')
    await h.settings(stored)
    assert.equal(h.status().inspect.deadlineMs, 150, 'registered again, the user\'s section again')
  })

  test('control: the same stored section with no settings service: the row\'s deadline', async (t) => {
    const h = await host(t)
    await h.mount({ inspect: { deadlineMs: 5000 } })
    assert.equal(h.status().inspect.deadlineMs, 5000)
  })

  test('an invalid save is refused before anything changes, and said once as the live refusal', async (t) => {
    const h = await host(t)
    await h.mount({ inspect: { deadlineMs: 300 } })
    const { fiber: settingsFiber, service } = await h.settings()
    const provider = rawOf(service)
    const before = h.described()
    let refusal
    const warnings = await capturingWarnings(async () => {
      try { await service.update(NS, { inspect: { deadlineMs: 0 } }) } catch (error) { refusal = error }
    })
    assert.equal(refusal?.message, DEADLINE_0, 'the settings service rejects the write with the mount\'s message')
    assert.deepEqual(provider.writes, [], 'nothing persisted')
    assert.deepEqual(h.described(), before, 'the namespace is as it was')
    assert.equal(h.status().inspect.deadlineMs, 300, 'the running config stays')
    assert.deepEqual(warnings.map((w) => [w.code, w.message]), [['HARNESS_GUARD', REFUSED + DEADLINE_0]])
    // An outside edit of the stored section that the schema refuses: the last good value stays, said the same way.
    const published = await capturingWarnings(async () => {
      provider.edit(NS, { inbox: { previewChars: 0 } })
      await settled()
    })
    assert.deepEqual(published.map((w) => w.message), [`${REFUSED}invalid harness-guard config: inbox.previewChars is 0, expected an integer in 1..=100000`])
    assert.equal(h.status().inspect.deadlineMs, 300)
    await settingsFiber.dispose()
  })

  test('a stored section that is invalid at registration: the guard runs with its row\'s config and says so', async (t) => {
    const h = await host(t)
    const logs = []
    h.ctx.logger.exporter({ levels: { default: 3 }, export: (m) => logs.push(`[${m.type}] ${m.args.map(String).join(' ')}`) })
    await h.mount({ inspect: { deadlineMs: 350 } })
    const warnings = await capturingWarnings(async () => {
      await h.settings(storing({ [NS]: { inspect: { deadlineMs: 0 } } }))
    })
    assert.deepEqual(warnings.map((w) => w.message), [REFUSED + DEADLINE_0])
    assert.equal(h.described(), undefined, 'the service refused the registration')
    assert.equal(h.status().inspect.deadlineMs, 350, 'the row\'s config runs on')
    assert.ok(logs.some((l) => l.startsWith('[warn]') && l.includes(`settings namespace ${NS} not registered`)), logs.join('\n'))
  })
})

describe('live reconfiguration', () => {
  test('a waiting query keeps its deadline; the next one gets the new one; nothing restarts and the records stay', async (t) => {
    const h = await host(t)
    const fiber = await h.mount({ inspect: { deadlineMs: 600 } })
    const { service } = await h.settings()
    const services = h.ctx.get('inspectClientGuard')
    const raw = rawOf(h.registry)
    const query = raw.query
    const waiting = h.ask()
    await service.update(NS, { inspect: { deadlineMs: 120 } })
    await settled()
    const next = h.ask()
    await endsWith(next, 'INSPECT_CLIENT_DEADLINE', 120, 'the next query (new deadline)')
    assert.match(next.reason.message, /within 120ms/)
    assert.equal(waiting.status, 'pending', 'the query already waiting is still waiting (its own 600 ms)')
    await endsWith(waiting, 'INSPECT_CLIENT_DEADLINE', 600, 'the waiting query (its own deadline)')
    assert.match(waiting.reason.message, /within 600ms/)
    assert.equal(raw.query, query, 'the same wrapper: nothing was reinstalled')
    assert.equal(h.ctx.get('inspectClientGuard').counts().deadline, 2, 'the records stay')
    assert.equal(services.counts().deadline, 2, 'a service handle read before the change still answers')
    assert.equal(fiber.state, 2)
  })

  test('a half disabled and enabled live: the registry unpatched and patched again; an inbox half likewise', async (t) => {
    const h = await host(t)
    await h.mount({ inspect: { deadlineMs: 200 } })
    const { service } = await h.settings()
    const raw = rawOf(h.registry)
    assert.ok(raw.query[PATCHED], 'guarded')
    await service.update(NS, { inspect: { enabled: false } })
    await settled()
    assert.equal(Object.hasOwn(raw, 'query'), false, 'the inspect half uninstalled: query is the class\'s own again')
    assert.equal(h.status().inspect.installed, false)
    const unguarded = h.ask()
    assert.equal(await settleWithin(unguarded, 400), 'hung', 'control: unguarded, the query waits past the deadline')
    await service.update(NS, { inspect: { enabled: true } })
    await settled()
    assert.ok(raw.query[PATCHED], 'installed again')
    await endsWith(h.ask(), 'INSPECT_CLIENT_DEADLINE', 200, 'guarded again')
    // The provider stays while a half is enabled, and goes with both.
    const list = () => h.registry.list().filter((p) => p.id === 'HarnessGuard').length
    assert.equal(list(), 1)
    await service.update(NS, { inspect: { enabled: false }, inbox: { enabled: false } })
    await settled()
    assert.equal(list(), 0, 'both halves off: no provider')
    assert.equal(h.status().inbox.installed, false)
    await service.update(NS, { inbox: { enabled: true } })
    await settled()
    assert.equal(list(), 1)
    assert.equal(h.status().inbox.installed, true)
    h.registry.syncClientManifest([])
  })

  test('the inbox half toggled and re-moded live on a real agent: the claim unwrapped, wrapped again, the new mode from the next claim', async (t) => {
    const rig = await createRig()
    t.after(() => rig.dispose())
    const { plugin } = await loadGuard()
    const fiber = await rig.mount(plugin, { inbox: { mode: 'repair' } })
    await rig.mount(MemorySettings)
    await settled()
    const service = rig.ctx.get('settings')
    const agent = await rig.createAgent()
    const send = async (value) => {
      agent.followup(value)
      await rig.waitIdle(agent)
      await settled()
    }
    await send('a bare string')
    assert.ok(agent.inbox.claim[PATCHED], 'the claim is wrapped')
    const claimed = () => rig.ctx.get('inboxInputGuard').violations().filter((v) => v.origin === 'claimed').map((v) => v.action)
    assert.deepEqual(claimed(), ['repaired'])
    await service.update(NS, { inbox: { mode: 'quarantine' } })
    await settled()
    await send('another bare string')
    assert.deepEqual(claimed(), ['repaired', 'quarantined'], 'the new mode from the next claim; the old record stays')
    await service.update(NS, { inbox: { enabled: false } })
    await settled()
    assert.equal(Object.hasOwn(agent.inbox, 'claim'), false, 'disabled: the claim is the class\'s own again')
    await service.update(NS, { inbox: { enabled: true } })
    await settled()
    await send('a third bare string')
    assert.ok(agent.inbox.claim[PATCHED], 'enabled again: wrapped at the next step')
    assert.equal(fiber.state, 2)
  })
})

describe('the "config refused" warning', () => {
  const INVALID = [
    { inspect: { deadlineMs: 0 } },
    { inspect: { deadlineMs: -5 } },
    { inspect: { deadlineMs: 1.5 } },
    { inspect: { deadlineMs: Number.NaN } },
    { inspect: { deadlineMs: 'soon' } },
    { inspect: { deadlineMs: 2147483648 } },
    { bogus: 1 },
    { inspect: { deadlineMs: 100, refusalGraceMs: 200 } },
  ]

  test('validating says nothing: Config(value) and Config[~standard].validate of invalid values, with and without a mount', async (t) => {
    const { plugin } = await loadGuard()
    const validate = () => {
      for (const value of INVALID) {
        assert.throws(() => plugin.Config(value), { code: 'HARNESS_GUARD_INVALID_CONFIG' })
        assert.equal(plugin.Config['~standard'].validate(value).issues?.length, 1)
      }
    }
    assert.deepEqual(await capturingWarnings(async () => validate()), [], 'no mount')
    const h = await host(t)
    await h.mount({})
    await h.settings()
    assert.deepEqual(await capturingWarnings(async () => validate()), [], 'with a mount and its namespace')
  })

  test('a live change refused is said once: fiber.update with an invalid config (control: the same value validated says nothing)', async (t) => {
    const h = await host(t)
    const fiber = await h.mount({ inspect: { deadlineMs: 300 } })
    const warnings = await capturingWarnings(async () => {
      assert.throws(() => fiber.update({ inspect: { deadlineMs: 0 } }), { name: 'ValidationError' })
    })
    assert.deepEqual(warnings.map((w) => [w.code, w.message]), [['HARNESS_GUARD', REFUSED + DEADLINE_0]])
    assert.equal(h.status().inspect.deadlineMs, 300, 'the running config stays')
    const again = await capturingWarnings(async () => {
      assert.throws(() => fiber.update({ inspect: { deadlineMs: 0 } }))
    })
    assert.equal(again.length, 1, 'the same refusal again is a second refused change: said again')
    const control = await capturingWarnings(async () => { h.plugin.Config['~standard'].validate({ inspect: { deadlineMs: 0 } }) })
    assert.deepEqual(control, [])
  })

  test('a valid fiber.update applies in place: no restart, the same services, a waiting query keeps its deadline', async (t) => {
    const h = await host(t)
    let applies = 0
    const counted = { ...h.plugin, apply: (ctx, config) => { applies += 1; return h.plugin.apply(ctx, config) } }
    const fiber = h.ctx.plugin(counted, { inspect: { deadlineMs: 500 } })
    await fiber
    const waiting = h.ask()
    const warnings = await capturingWarnings(async () => { fiber.update({ inspect: { deadlineMs: 100 } }) })
    assert.deepEqual(warnings, [])
    assert.equal(applies, 1, 'not restarted')
    assert.equal(fiber.config.inspect.deadlineMs, 100, 'the fiber holds the new config')
    await endsWith(h.ask(), 'INSPECT_CLIENT_DEADLINE', 100, 'the next query')
    await endsWith(waiting, 'INSPECT_CLIENT_DEADLINE', 500, 'the waiting query')
  })

  test('control: a plugin without the in-place hook is restarted by the same fiber.update', async (t) => {
    const ctx = new Context()
    t.after(() => ctx.fiber.dispose())
    let applies = 0
    const fiber = ctx.plugin({ name: 'plain', apply: () => { applies += 1 } }, { a: 1 })
    await fiber
    fiber.update({ a: 2 })
    await settled()
    assert.equal(applies, 2, 'cordis restarts it')
  })

  test('a row edit under the user\'s section is checked with it: refused when together they are invalid, applied over it otherwise', async (t) => {
    const h = await host(t)
    const fiber = await h.mount({ inspect: { deadlineMs: 5000 } })
    const { service } = await h.settings()
    await service.update(NS, { inspect: { refusalGraceMs: 800 } })
    await settled()
    assert.equal(h.status().inspect.refusalGraceMs, 800)
    const refused = await capturingWarnings(async () => {
      assert.throws(() => fiber.update({ inspect: { deadlineMs: 500 } }), { code: 'HARNESS_GUARD_INVALID_CONFIG' })
    })
    assert.deepEqual(refused.map((w) => w.message), [`${REFUSED}invalid harness-guard config: inspect.refusalGraceMs is 800, expected an integer in 0..=500`])
    assert.equal(h.status().inspect.deadlineMs, 5000, 'the running config stays')
    fiber.update({ inspect: { deadlineMs: 900 } })
    await settled()
    assert.deepEqual([h.status().inspect.deadlineMs, h.status().inspect.refusalGraceMs], [900, 800], 'the new row, the user\'s grace over it')
    assert.deepEqual(h.described().base.inspect, { enabled: true, deadlineMs: 900 }, 'the namespace\'s base is the new row')
    assert.deepEqual(h.described().user, { inspect: { refusalGraceMs: 800 } })
  })
})

describe('the card (the browser half), its form driven against the real settings service', () => {
  /**
   * The shipped client.js run as the page runs it (a classic script registering
   * a factory), materialized with a `require` that has no React: the form the
   * card stages its edits in needs none.
   */
  async function cardModule() {
    const { readFileSync } = await import('node:fs')
    const { createRequire } = await import('node:module')
    const file = createRequire(import.meta.url).resolve('cordis-plugin-harness-guard/client')
    const registered = []
    new Function('window', readFileSync(file, 'utf8'))({ __ModuleLoader__: { load: (r) => registered.push(r) } })
    return registered[0].factory(() => ({ createElement: () => null }))
  }

  /**
   * The card's form over namespace `harness-guard` as the page reads it (the
   * served schema rehydrated by schemastery, as the page's settingsSchema
   * service does; value, base, user and revision from `describe()`) and
   * writing as the page's settings wire does (`mutate` fenced by the revision;
   * a refusal answered with its code and the host's message).
   */
  async function cardOn(h) {
    const { GuardForm } = await cardModule()
    const Schema = (await import('@deepseek-ai/schemastery')).default
    const settings = h.ctx.get('settings')
    const read = () => {
      const row = h.described()
      return row === undefined ? { status: 'unavailable' } : { status: 'ready', writable: true, value: row.value, base: row.base, user: row.user, revision: row.revision, schema: new Schema(row.schema) }
    }
    const write = async (ops, expectedRevision) => {
      try {
        await settings.mutate(NS, ops, expectedRevision)
        return { ok: true }
      } catch (error) {
        return { ok: false, code: error.code === 'SETTINGS_CONFLICT' ? 'settings-conflict' : 'settings-rejected', message: error.message }
      }
    }
    const form = new GuardForm(read, write)
    const field = (key) => form.getSnapshot().sections.flatMap((s) => s.fields).find((f) => f.key === key)
    return { form, field, settings }
  }

  test('each field with its description, default and range from the served schema; the row\'s values; nothing overridden', async (t) => {
    const h = await host(t)
    await h.mount({ inspect: { deadlineMs: 3000 } })
    await h.settings()
    const { form, field } = await cardOn(h)
    const state = form.getSnapshot()
    assert.equal(state.available, true)
    assert.deepEqual(state.sections.map((s) => [s.section, s.fields.map((f) => f.key)]), [
      ['inspect', ['inspect.enabled', 'inspect.deadlineMs', 'inspect.refusalGraceMs']],
      ['inbox', ['inbox.enabled', 'inbox.mode', 'inbox.previewChars']],
    ])
    const deadline = field('inspect.deadlineMs')
    assert.deepEqual([deadline.text, deadline.default, deadline.min, deadline.max, deadline.overridden, deadline.inherited], ['3000', 15000, 1, 2147483647, false, 3000])
    assert.equal(deadline.description, h.plugin.Config.dict.inspect.dict.deadlineMs.meta.description)
    assert.deepEqual(field('inbox.mode').choices, ['repair', 'quarantine', 'report'])
    assert.equal(field('inspect.refusalGraceMs').default, undefined, 'the grace\'s default is derived')
  })

  test('an invalid draft blocks the save with the field\'s own message; a valid one saves, in force at once, marked overridden; a reset re-inherits the row', async (t) => {
    const h = await host(t)
    await h.mount({ inspect: { deadlineMs: 3000 } })
    await h.settings()
    const { form, field } = await cardOn(h)
    for (const [text, message] of [
      ['0', 'inspect.deadlineMs is "0", expected an integer in 1..=2147483647'],
      ['1.5', 'inspect.deadlineMs is "1.5", expected an integer in 1..=2147483647'],
      ['soon', 'inspect.deadlineMs is "soon", expected an integer in 1..=2147483647'],
      ['2147483648', 'inspect.deadlineMs is "2147483648", expected an integer in 1..=2147483647'],
    ]) {
      form.edit('inspect.deadlineMs', text)
      assert.equal(field('inspect.deadlineMs').invalid, message)
      assert.equal(form.getSnapshot().invalid, true)
      assert.equal(form.plan(), undefined, `${text}: no write planned`)
      await form.save()
      assert.equal(h.described().user, undefined, `${text}: nothing was written`)
    }
    form.edit('inspect.refusalGraceMs', '5000')
    form.edit('inspect.deadlineMs', '4000')
    assert.equal(field('inspect.refusalGraceMs').invalid, 'inspect.refusalGraceMs is "5000", expected an integer in 0..=4000', 'the grace within the deadline it would run with')
    form.edit('inspect.refusalGraceMs', '400')
    assert.equal(form.getSnapshot().invalid, false, 'control: valid drafts are not blocked')
    assert.deepEqual(form.plan(), [{ op: 'set', path: ['inspect', 'deadlineMs'], value: 4000 }, { op: 'set', path: ['inspect', 'refusalGraceMs'], value: 400 }])
    await form.save()
    await settled()
    assert.equal(form.getSnapshot().failure, undefined)
    assert.equal(form.getSnapshot().dirty, false, 'saved: no draft left')
    assert.deepEqual(h.described().user, { inspect: { deadlineMs: 4000, refusalGraceMs: 400 } }, 'one write, both fields')
    assert.deepEqual([h.status().inspect.deadlineMs, h.status().inspect.refusalGraceMs], [4000, 400], 'in force at once')
    assert.equal(field('inspect.deadlineMs').overridden, true)
    form.reset('inspect.deadlineMs')
    assert.equal(field('inspect.deadlineMs').text, '3000', 'a reset shows the row\'s value')
    assert.deepEqual(form.plan(), [{ op: 'unset', path: ['inspect', 'deadlineMs'] }])
    await form.save()
    await settled()
    assert.equal(field('inspect.deadlineMs').overridden, false)
    assert.equal(h.status().inspect.deadlineMs, 3000, 'the row\'s deadline again')
  })

  test('a save that did not land is said in the card, and the drafts stay: the host\'s refusal, a conflict', async (t) => {
    const h = await host(t)
    await h.mount({ inspect: { deadlineMs: 3000 } })
    await h.settings()
    const { form, field, settings } = await cardOn(h)
    // A conflict: the namespace moved on elsewhere after the card read it.
    form.edit('inspect.refusalGraceMs', '1500')
    const read = form.read
    const seen = h.described().revision
    form.read = () => ({ ...read(), revision: seen }) // the card holds the revision it read
    await settings.update(NS, { inspect: { deadlineMs: 2000 } })
    await settled()
    await form.save()
    assert.equal(form.getSnapshot().failure?.code, 'settings-conflict', 'fenced: a stale revision is refused')
    assert.deepEqual(h.described().user, { inspect: { deadlineMs: 2000 } }, 'the other writer\'s change stands, untouched')
    assert.equal(field('inspect.refusalGraceMs').text, '1500', 'the draft stays')
    form.read = read
    form.edit('inspect.refusalGraceMs', '2500')
    assert.equal(field('inspect.refusalGraceMs').invalid, 'inspect.refusalGraceMs is "2500", expected an integer in 0..=2000', 'judged against the deadline now in force')
    form.discard()
    assert.equal(form.getSnapshot().dirty, false)
    assert.equal(form.getSnapshot().failure, undefined)
    // The host's own refusal: a value the card lets through is refused by the guard's checks on the host.
    const warnings = await capturingWarnings(async () => {
      form.edit('inbox.mode', 'quarantine')
      const write = form.write
      form.write = (ops, revision) => write([...ops, { op: 'set', path: ['inbox', 'bogus'], value: 1 }], revision)
      await form.save()
      form.write = write
    })
    assert.equal(form.getSnapshot().failure?.code, 'settings-rejected')
    assert.equal(form.getSnapshot().failure.message, 'invalid harness-guard config: inbox.bogus is 1, expected no such key (known keys: enabled, mode, previewChars)', 'the host\'s own message')
    assert.equal(field('inbox.mode').text, 'quarantine', 'the draft stays')
    assert.equal(warnings.length, 1, 'and the host said the refused change')
  })
})
