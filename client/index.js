// The browser half: the guard's card under Settings → Plugins → Plugin configuration.
//
// This file is the body of a lazy-CJS factory: `make` wraps it as the client
// module system loads a `dsh.client` package (`window.__ModuleLoader__.load({ id,
// factory: (require) => … })`), so `require` is the page's (React from the
// shell's static table) and `module.exports` is the browser plugin. It imports no
// host package as a value: the settings service, the schema service, the wire
// and the slots are reached through cordis services, as the host's own cards
// reach them.
//
// What the card shows is the namespace `harness-guard` as the host serves it
// (`settings.describe`, through the shared describe mirror): the schema (each
// field's description, default and range come from it), the resolved value, the
// row's config (`base`) and the user's section (`user`). Edits are staged; Save
// writes them in one `settings.mutate`, fenced by the revision the card read, and
// folds the answer back into the mirror; the host's verdict is final (a refused
// save shows the host's own message and keeps the drafts).
const React = require('react')
const h = React.createElement

// The card's look, in the host's design tokens (the `--dsw-alias-*` variables
// the host's own cards use), added once when the factory runs in a page.
const CSS = `
.harness-guard-card{list-style:none;border:1px solid var(--dsw-alias-border-l2);border-radius:12px;background:var(--dsw-alias-bg-layer-3);transition:border-color .16s,background .16s}
.harness-guard-card:hover{border-color:var(--dsw-alias-label-dimmed)}
.harness-guard-card[data-open]{background:var(--dsw-alias-bg-layer-2);border-color:var(--dsw-alias-label-dimmed)}
.harness-guard-card>button{appearance:none;width:100%;display:flex;gap:12px;align-items:center;padding:14px 16px;border:0;background:none;font:inherit;color:inherit;text-align:left;cursor:pointer;border-radius:12px}
.harness-guard-card>button:focus-visible{outline:2px solid var(--dsw-alias-brand-primary);outline-offset:-2px}
.harness-guard-heading{flex:1;min-width:0;display:flex;flex-direction:column;gap:4px}
.harness-guard-title{font-size:15px;font-weight:600;line-height:1.4;color:var(--dsw-alias-label-primary)}
.harness-guard-description{font-size:13px;line-height:1.5;color:var(--dsw-alias-label-tertiary)}
.harness-guard-chevron{flex:none;color:var(--dsw-alias-label-tertiary);transition:transform .16s}
.harness-guard-card[data-open] .harness-guard-chevron{transform:rotate(180deg)}
.harness-guard-body{margin:0 16px;padding-bottom:8px;border-top:1px solid var(--dsw-alias-border-l2)}
.harness-guard-body fieldset{border:0;margin:12px 0 0;padding:0}
.harness-guard-body legend{padding:0;font-size:13px;font-weight:600;color:var(--dsw-alias-label-secondary)}
.harness-guard-field{display:flex;flex-direction:column;gap:6px;padding:12px 0}
.harness-guard-field+.harness-guard-field{border-top:1px solid var(--dsw-alias-border-l2)}
.harness-guard-head{display:flex;gap:8px;align-items:center;font-size:13px;font-weight:500;line-height:1.5;color:var(--dsw-alias-label-primary)}
.harness-guard-head label{flex:1;min-width:0}
.harness-guard-field input[type=text],.harness-guard-field select{height:34px;padding:0 12px;border:1px solid var(--dsw-alias-border-l2);border-radius:8px;background:var(--dsw-alias-bg-layer-3);font:inherit;font-size:13px;color:var(--dsw-alias-label-primary)}
.harness-guard-field input[type=text]:focus-visible,.harness-guard-field select:focus-visible{border-color:var(--dsw-alias-brand-primary);outline:none}
.harness-guard-field input[aria-invalid=true]{border-color:var(--dsw-alias-label-error)}
.harness-guard-field input[type=checkbox]{align-self:flex-start}
.harness-guard-badge{flex:none;white-space:nowrap;padding:1px 8px;border-radius:999px;font-size:11px;font-weight:500;line-height:17px;background:var(--dsw-alias-bg-module-platform);color:var(--dsw-alias-label-secondary)}
.harness-guard-reset{appearance:none;padding:0;border:0;background:none;font:inherit;font-size:12px;line-height:1.5;color:var(--dsw-alias-label-secondary);cursor:pointer}
.harness-guard-reset:hover:not(:disabled){color:var(--dsw-alias-label-primary)}
.harness-guard-reset:disabled{cursor:default}
.harness-guard-hint,.harness-guard-facts{margin:0;font-size:12px;line-height:1.5;color:var(--dsw-alias-label-tertiary)}
.harness-guard-invalid,.harness-guard-failed{margin:0;font-size:12px;line-height:1.5;color:var(--dsw-alias-label-error)}
.harness-guard-footer{display:flex;gap:8px;align-items:center;justify-content:flex-end;padding:12px 0 4px;border-top:1px solid var(--dsw-alias-border-l2)}
.harness-guard-footer .harness-guard-failed{flex:1;min-width:0}
.harness-guard-footer button{appearance:none;padding:5px 14px;border-radius:8px;border:1px solid transparent;font:inherit;font-size:13px;line-height:1.5;cursor:pointer}
.harness-guard-footer button:focus-visible{outline:2px solid var(--dsw-alias-brand-primary);outline-offset:1px}
.harness-guard-footer .harness-guard-discard{border-color:var(--dsw-alias-border-l2);background:none;color:var(--dsw-alias-label-secondary)}
.harness-guard-footer .harness-guard-discard:hover:not(:disabled){color:var(--dsw-alias-label-primary)}
.harness-guard-footer .harness-guard-save{background:var(--dsw-alias-label-primary);color:var(--dsw-alias-bg-layer-3)}
.harness-guard-footer button:disabled{opacity:.4;cursor:default}
`
if (typeof document !== 'undefined' && document.querySelector('style[data-plugin-css="cordis-plugin-harness-guard/card"]') === null) {
  const tag = document.createElement('style')
  tag.dataset.plugin = 'cordis-plugin-harness-guard'
  tag.dataset.pluginCss = 'cordis-plugin-harness-guard/card'
  tag.textContent = CSS
  document.head.appendChild(tag)
}

/** The settings namespace (the host plugin's name). */
const NS = 'harness-guard'
/** The card's dictionary namespace. */
const LOCALE = 'harness-guard.card'

/** The fields the card edits, in order: the dotted path and the control. */
const FIELDS = [
  { path: ['inspect', 'enabled'], control: 'boolean' },
  { path: ['inspect', 'deadlineMs'], control: 'integer' },
  { path: ['inspect', 'refusalGraceMs'], control: 'integer' },
  { path: ['inbox', 'enabled'], control: 'boolean' },
  { path: ['inbox', 'mode'], control: 'choice' },
  { path: ['inbox', 'previewChars'], control: 'integer' },
]
const SECTIONS = ['inspect', 'inbox']
const keyOf = (path) => path.join('.')

const has = (object, key) => object !== null && typeof object === 'object' && Object.hasOwn(object, key)
/** `object` at `path`, or `undefined`. */
function at(object, path) {
  let value = object
  for (const key of path) value = has(value, key) ? value[key] : undefined
  return value
}
const present = (object, path) => has(at(object, path.slice(0, -1)), path[path.length - 1])

/** The schema node at `path` of a live (rehydrated) schemastery object schema. */
function nodeAt(schema, path) {
  let node = schema
  for (const key of path) node = node?.type === 'object' ? node.dict?.[key] : undefined
  return node
}

/** A field's description, default, range and choices, as the served schema states them. */
function specOf(schema, field) {
  const node = nodeAt(schema, field.path)
  const meta = node?.meta ?? {}
  const choices = field.control === 'choice' ? (node?.list ?? []).map((option) => option.value).filter((v) => typeof v === 'string') : undefined
  return { ...field, key: keyOf(field.path), description: meta.description, default: meta.default, min: meta.min, max: meta.max, choices }
}

/** How a value reads in the card. */
const shown = (value) => (value === undefined ? '' : String(value))

/**
 * The staged form over one snapshot of the namespace. Pure: it reads the
 * namespace through `read()` and writes through `write(ops, revision)`; the
 * card and the tests drive it the same way.
 *
 * A draft is what the user typed (or a reset, which stages a clear back to the
 * row's value). A draft the field does not accept blocks the save with the
 * field's own message (its path, what was typed, and the range the schema
 * states; the refusal grace also within the deadline it would run with). The
 * host checks again on save, and its message is the one shown when it refuses.
 */
class GuardForm {
  staged = new Map()
  listeners = new Set()
  saving = false
  /** Why the last save did not land (the host's words), if it did not. */
  failure = undefined
  version = 0
  projection = undefined

  /**
   * @param read - `() => ({ status, value, base, user, revision, writable, schema })`, `schema` a live schemastery schema.
   * @param write - `(ops, expectedRevision) => Promise<{ ok: true, view } | { ok: false, code, message }>`.
   */
  constructor(read, write) {
    this.read = read
    this.write = write
  }

  /** Listen for changes of the projection. */
  subscribe = (listener) => {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  /** The card's state: stable until something changes. */
  getSnapshot = () => {
    this.projection ??= this.project()
    return this.projection
  }

  /** The namespace changed underneath (a read, a save elsewhere). */
  changed() {
    this.projection = undefined
    for (const listener of this.listeners) listener()
  }

  specs() {
    const { schema } = this.read()
    return schema === undefined ? [] : FIELDS.map((field) => specOf(schema, field))
  }

  /** What a field would be after a save: the draft, else the resolved value. */
  effective(spec) {
    const staged = this.staged.get(spec.key)
    const { value, base } = this.read()
    if (staged === undefined) return at(value, spec.path)
    if (staged.clear) return at(base, spec.path) ?? spec.default
    return this.parse(spec, staged.text).value
  }

  /** A draft's value, or the field's own message when the field does not accept it. */
  parse(spec, text) {
    const message = (expected) => ({ message: `${spec.key} is ${JSON.stringify(text)}, expected ${expected}` })
    if (spec.control === 'boolean') return text === 'true' || text === 'false' ? { value: text === 'true' } : message('true or false')
    if (spec.control === 'choice') return spec.choices.includes(text) ? { value: text } : message(`one of ${spec.choices.map((c) => `"${c}"`).join(', ')}`)
    const trimmed = text.trim()
    const number = trimmed === '' ? Number.NaN : Number(trimmed)
    let max = spec.max
    if (spec.key === 'inspect.refusalGraceMs') {
      const deadline = this.effective(this.specs().find((s) => s.key === 'inspect.deadlineMs'))
      if (Number.isInteger(deadline)) max = Math.min(max ?? deadline, deadline)
    }
    const ok = Number.isInteger(number) && (spec.min === undefined || number >= spec.min) && (max === undefined || number <= max)
    return ok ? { value: number } : message(`an integer in ${spec.min ?? 0}..=${max}`)
  }

  /** One field's state for the card. */
  field(spec) {
    const { value, base, user } = this.read()
    const staged = this.staged.get(spec.key)
    const fallback = at(base, spec.path) ?? spec.default
    if (staged === undefined) {
      return { ...spec, text: shown(at(value, spec.path)), overridden: present(user, spec.path), inherited: fallback, dirty: false }
    }
    const text = staged.clear ? shown(fallback) : staged.text
    const parsed = staged.clear ? { value: fallback } : this.parse(spec, staged.text)
    return { ...spec, text, overridden: !staged.clear, inherited: fallback, dirty: true, invalid: parsed.message }
  }

  project() {
    const snapshot = this.read()
    const fields = this.specs().map((spec) => this.field(spec))
    const dirty = fields.some((f) => f.dirty)
    const invalid = fields.some((f) => f.invalid !== undefined)
    return {
      available: snapshot.status === 'ready' && snapshot.schema !== undefined,
      writable: snapshot.writable === true,
      sections: SECTIONS.map((section) => ({ section, description: nodeAt(snapshot.schema, [section])?.meta?.description, fields: fields.filter((f) => f.path[0] === section) })),
      dirty,
      invalid,
      saving: this.saving,
      failure: this.failure,
    }
  }

  stage(key, edit) {
    this.staged.set(key, edit)
    this.failure = undefined
    this.changed()
  }

  /** The user typed `text` into field `key` (a checkbox stages `'true'`/`'false'`). */
  edit = (key, text) => {
    this.stage(key, { text: String(text), clear: false })
  }

  /** Stage a clear of field `key`: after a save it re-inherits the row's value. */
  reset = (key) => {
    this.stage(key, { text: '', clear: true })
  }

  /** Drop every draft. */
  discard = () => {
    if (this.staged.size === 0 && this.failure === undefined) return
    this.staged.clear()
    this.failure = undefined
    this.changed()
  }

  /** The writes a save would make (`set`/`unset` ops by path); `undefined` while a draft is invalid. */
  plan() {
    const ops = []
    const { user } = this.read()
    for (const spec of this.specs()) {
      const staged = this.staged.get(spec.key)
      if (staged === undefined) continue
      if (staged.clear) {
        if (present(user, spec.path)) ops.push({ op: 'unset', path: spec.path })
        continue
      }
      const parsed = this.parse(spec, staged.text)
      if (parsed.message !== undefined) return undefined
      ops.push({ op: 'set', path: spec.path, value: parsed.value })
    }
    return ops
  }

  /**
   * Write every draft in one mutate, fenced by the revision the card read. A
   * save that did not land (a conflict, the host's refusal) keeps the drafts
   * and says why in the card.
   */
  save = async () => {
    const ops = this.plan()
    if (ops === undefined || this.saving || this.staged.size === 0) return
    if (ops.length === 0) {
      this.staged.clear()
      this.changed()
      return
    }
    this.saving = true
    this.failure = undefined
    this.changed()
    let outcome
    try {
      outcome = await this.write(ops, this.read().revision)
    } catch (error) {
      outcome = { ok: false, code: 'unreachable', message: error instanceof Error ? error.message : String(error) }
    }
    this.saving = false
    if (outcome.ok) this.staged.clear()
    else this.failure = outcome
    this.changed()
  }
}

// ---- the view ------------------------------------------------------------------------

const ids = (key) => ({ input: `harness-guard-${key.replace('.', '-')}`, hint: `harness-guard-${key.replace('.', '-')}-hint` })

function Field({ t, field, disabled, edit, reset }) {
  const { input, hint } = ids(field.key)
  const label = t(`field.${field.key}`)
  const control =
    field.control === 'boolean'
      ? h('input', { id: input, type: 'checkbox', checked: field.text === 'true', disabled, 'aria-describedby': hint, onChange: (event) => edit(field.key, event.target.checked) })
      : field.control === 'choice'
        ? h('select', { id: input, value: field.text, disabled, 'aria-describedby': hint, onChange: (event) => edit(field.key, event.target.value) }, field.choices.map((choice) => h('option', { key: choice, value: choice }, choice)))
        : h('input', { id: input, type: 'text', inputMode: 'numeric', value: field.text, disabled, 'aria-invalid': field.invalid !== undefined ? true : undefined, 'aria-describedby': hint, onChange: (event) => edit(field.key, event.target.value) })
  const range = field.control === 'integer' ? t('range', { min: field.min, max: field.key === 'inspect.refusalGraceMs' ? 'deadlineMs' : field.max }) : undefined
  const row = field.inherited === undefined ? undefined : t('rowValue', { value: shown(field.inherited) })
  const facts = [t('default', { value: field.default === undefined ? t('derived') : shown(field.default) }), range, row].filter(Boolean).join(' · ')
  return h('div', { className: 'harness-guard-field', 'data-field': field.key }, [
    h('div', { key: 'head', className: 'harness-guard-head' }, [
      h('label', { key: 'label', htmlFor: input }, label),
      field.overridden ? h('span', { key: 'badge', className: 'harness-guard-badge' }, t('overridden')) : null,
      field.overridden ? h('button', { key: 'reset', type: 'button', className: 'harness-guard-reset', disabled, 'aria-label': t('resetField', { field: field.key }), onClick: () => reset(field.key) }, t('reset')) : null,
    ]),
    h(React.Fragment, { key: 'control' }, control),
    h('p', { key: 'hint', id: hint, className: field.invalid ? 'harness-guard-invalid' : 'harness-guard-hint', role: field.invalid ? 'alert' : undefined }, field.invalid ?? field.description ?? ''),
    h('p', { key: 'facts', className: 'harness-guard-facts' }, facts),
  ])
}

/** The expand/collapse mark the host's cards carry (turned over while the card is open). */
const Chevron = () =>
  h('svg', { className: 'harness-guard-chevron', width: 14, height: 14, viewBox: '0 0 14 14', fill: 'none', 'aria-hidden': true }, h('path', { d: 'M3 5.25 7 9.25l4-4', stroke: 'currentColor', strokeWidth: 1.2 }))

function GuardCard(props) {
  const { t } = props
  const state = props.useHarnessGuardCard((snapshot) => snapshot)
  const [open, setOpen] = React.useState(false)
  if (!state.available) return null
  const title = t('title')
  const disabled = !state.writable || state.saving
  return h('li', { className: 'harness-guard-card', 'aria-label': title, 'data-open': open ? '' : undefined }, [
    h('button', { key: 'header', type: 'button', 'aria-expanded': open, 'aria-label': `${t(open ? 'collapse' : 'expand')}: ${title}`, onClick: () => setOpen(!open) }, [
      h('span', { key: 'heading', className: 'harness-guard-heading' }, [
        h('span', { key: 'title', className: 'harness-guard-title' }, title),
        h('span', { key: 'description', className: 'harness-guard-description' }, t('description')),
      ]),
      state.dirty ? h('span', { key: 'unsaved', className: 'harness-guard-badge' }, t('unsaved')) : null,
      h(Chevron, { key: 'chevron' }),
    ]),
    open
      ? h('div', { key: 'body', className: 'harness-guard-body' }, [
          state.writable ? null : h('p', { key: 'readonly', role: 'status' }, t('readOnly')),
          ...state.sections.map((section) =>
            h('fieldset', { key: section.section }, [
              h('legend', { key: 'legend' }, t(`section.${section.section}`)),
              ...section.fields.map((field) => h(Field, { key: field.key, t, field, disabled, edit: props.edit, reset: props.reset })),
            ]),
          ),
          h('p', { key: 'status', className: 'harness-guard-hint', role: 'note' }, t('status')),
          h('div', { key: 'footer', className: 'harness-guard-footer' }, [
            state.failure ? h('p', { key: 'failed', className: 'harness-guard-failed', role: 'alert' }, t(state.failure.code === 'settings-conflict' ? 'conflict' : 'refused', { message: state.failure.message })) : null,
            h('button', { key: 'discard', type: 'button', className: 'harness-guard-discard', disabled: !state.dirty || state.saving, onClick: props.discard }, t('discard')),
            h('button', { key: 'save', type: 'button', className: 'harness-guard-save', disabled: !state.dirty || state.invalid || disabled, onClick: props.save }, t(state.saving ? 'saving' : 'save')),
          ]),
        ])
      : null,
  ])
}

// ---- copy -----------------------------------------------------------------------------

const en = {
  title: 'Harness guard',
  description: 'Client inspect queries end at a deadline instead of hanging; bad inbox entries are repaired.',
  expand: 'Show settings',
  collapse: 'Hide settings',
  'section.inspect': 'Client inspect queries',
  'section.inbox': 'Agent inbox entries',
  'field.inspect.enabled': 'Guard client inspect queries',
  'field.inspect.deadlineMs': 'Deadline (ms)',
  'field.inspect.refusalGraceMs': 'Refusal grace (ms)',
  'field.inbox.enabled': 'Guard agent inboxes',
  'field.inbox.mode': 'Inbox mode',
  'field.inbox.previewChars': 'Preview length (characters)',
  default: 'Default: {value}',
  derived: 'min(1000, deadline)',
  range: 'Range: {min} ..= {max}',
  rowValue: 'Row value: {value}',
  overridden: 'Overridden',
  reset: 'Reset to row value',
  resetField: 'Reset {field} to the row\'s value',
  unsaved: 'Unsaved',
  readOnly: 'This deployment stores settings read-only.',
  status: 'What the guard is doing in this process (guarding, stood down, recovered, its counts) is not offered to the browser by this host; type /harness-guard in a session to see it.',
  save: 'Save',
  saving: 'Saving…',
  discard: 'Discard',
  refused: 'Not saved: {message}',
  conflict: 'Not saved: the settings changed elsewhere since this card read them ({message}). Discard and edit again.',
}
const zh = {
  title: 'Harness guard',
  description: '客户端 inspect 查询到期即结束，不再挂起；坏的收件箱条目会被修复。',
  expand: '展开设置',
  collapse: '收起设置',
  'section.inspect': '客户端 inspect 查询',
  'section.inbox': 'Agent 收件箱条目',
  'field.inspect.enabled': '守护客户端 inspect 查询',
  'field.inspect.deadlineMs': '期限（毫秒）',
  'field.inspect.refusalGraceMs': '拒绝宽限（毫秒）',
  'field.inbox.enabled': '守护 agent 收件箱',
  'field.inbox.mode': '收件箱模式',
  'field.inbox.previewChars': '预览长度（字符）',
  default: '默认：{value}',
  derived: 'min(1000, 期限)',
  range: '范围：{min} ..= {max}',
  rowValue: '行配置值：{value}',
  overridden: '已覆盖',
  reset: '恢复为行配置值',
  resetField: '将 {field} 恢复为行配置值',
  unsaved: '未保存',
  readOnly: '本部署的设置为只读。',
  status: '本主机不向浏览器提供守护在本进程中的状态（守护中、已停用、已恢复、计数）；在会话中输入 /harness-guard 查看。',
  save: '保存',
  saving: '保存中…',
  discard: '放弃修改',
  refused: '未保存：{message}',
  conflict: '未保存：读取后设置已在别处更改（{message}）。请放弃修改后重新编辑。',
}

// ---- the plugin ------------------------------------------------------------------------

/**
 * Mount the card. Nothing is required of the page up front (a page missing a
 * service would otherwise hold its whole boot): the card is registered once the
 * slots, the locale, the settings services and the connection exist.
 */
function apply(ctx) {
  ctx.inject(['slots', 'locale', 'settingsScope', 'settingsSchema', 'connection'], (c) => {
    c.effect(() => c.locale.register(LOCALE, { en, zh }), 'harness-guard: card dictionaries')
    const scope = c.settingsScope.bind({ namespace: NS })
    const mirror = c.settingsScope.describe()
    const { api } = c.get('connection')
    let rehydrated
    const read = () => {
      const snapshot = scope.getSnapshot()
      const served = mirror.getSnapshot().view?.namespaces.find((row) => row.ns === NS)?.schema
      if (served !== undefined && rehydrated?.served !== served) {
        try {
          rehydrated = { served, schema: c.settingsSchema.rehydrate(served) }
        } catch {
          rehydrated = { served, schema: undefined }
        }
      }
      return { ...snapshot, schema: served === undefined ? undefined : rehydrated.schema }
    }
    const write = async (ops, expectedRevision) => {
      const response = await api.settings.mutate({ ns: NS, ops, ...(expectedRevision === undefined ? {} : { expectedRevision }) })
      if (response.result.ok) {
        mirror.acceptView(response.result.value)
        return { ok: true }
      }
      await mirror.load()
      return { ok: false, code: response.result.error.code, message: response.result.error.message }
    }
    const form = new GuardForm(read, write)
    c.effect(() => scope.subscribe(() => form.changed()), 'harness-guard: card follows the namespace')
    c.effect(() => mirror.subscribe(() => form.changed()), 'harness-guard: card follows the served schema')
    c.slots.inject('settings.plugin.item', () =>
      c.slots.register(
        {
          name: 'settings.plugin.item',
          key: NS,
          locale: LOCALE,
          inject: () => ({ hooks: { harnessGuardCard: form }, edit: form.edit, reset: form.reset, save: form.save, discard: form.discard }),
        },
        GuardCard,
      ),
    )
  })
}

module.exports = { name: 'harness-guard-card', inject: [], apply, GuardForm, GuardCard }
