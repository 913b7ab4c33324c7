// Shape codes: the facts classification needs, one number per inbox entry.
//
// A code is read defensively (a throwing getter or a trapping Proxy is a code,
// never an exception), each field of an entry read once, so a batch crosses into
// wasm once, with its codes, or never. Rust decodes them (`Probe::from_code` in
// src/inbox.rs) and decides; nothing here says what a message is. The field
// names, the role, the key of `source`, the numbering and the one code Rust
// calls a usable message are Rust's, handed over when an instance starts
// (`setLayout`).
//
// Also here: which entries the durable log wrote (`loggedPrefix`, `allLogged`),
// the one other fact the claim's fast path needs.
//
// Why JavaScript: a clean batch is judged here with no crossing at all. Read
// from wasm, each of the five property reads an entry needs would be a crossing
// of its own, and so would each look-up among the log's entries (by identity).

/** The layout Rust handed over (`K.shape`), and the code of a usable message. */
let S
let MESSAGE = -1
/** The layout's numbers, kept in locals of the module for the per-entry paths. */
let MISSING, EMPTY, STRING, EXPECTED, ARRAY, OBJECT_KIND, OBJECT, OTHER, UNREADABLE
let T_OBJECT, T_ARRAY, T_FINITE, T_NON_FINITE, T_NULL, T_UNREADABLE
let ROLE, KIND
/** The field names, and where each field's code starts. */
let F_ID, F_ROLE, F_CONTENT, F_SOURCE, AT_ID, AT_ROLE, AT_CONTENT, AT_SOURCE
/**
 * Whether the layout's names are the ones `shapeCode` reads by name, which is
 * several times cheaper than a read by a computed key on the per-claim path. A
 * layout with other names is read by key.
 */
let named = false
/**
 * Whether the message code's field codes are the ones `looksLikeMessage` tests
 * for (a non-empty `id` string, the expected `role`, an array `content`, a
 * `source` object with a string `kind`). Another code Rust might hand over
 * turns it off, and every entry is then coded in full.
 */
let quick = false

/** Take the layout of a new instance (`K.shape`) and the code of a usable message. */
export function setLayout(layout, messageCode) {
  S = layout
  MESSAGE = messageCode
  ;({ missing: MISSING, emptyString: EMPTY, string: STRING, expected: EXPECTED, array: ARRAY } = S)
  ;({ objectKindString: OBJECT_KIND, object: OBJECT, other: OTHER, unreadable: UNREADABLE } = S)
  ;({ object: T_OBJECT, array: T_ARRAY, finite: T_FINITE, nonFinite: T_NON_FINITE, null: T_NULL, unreadable: T_UNREADABLE } = S.types)
  ROLE = S.role
  KIND = S.kindKey
  ;[F_ID, F_ROLE, F_CONTENT, F_SOURCE] = S.fields
  ;[AT_ID, AT_ROLE, AT_CONTENT, AT_SOURCE] = S.shifts
  named = S.fields.join() === 'id,role,content,source' && KIND === 'kind'
  quick = named && typeof ROLE === 'string' && ROLE !== '' && MESSAGE === (T_OBJECT | STRING << AT_ID
    | EXPECTED << AT_ROLE | ARRAY << AT_CONTENT | OBJECT_KIND << AT_SOURCE)
}

/**
 * `shapeCode(value) === MESSAGE`, for the message code `quick` was checked
 * against, decided with the first field that differs. False when a read throws
 * (the entry is then coded in full, from reads of its own).
 */
function looksLikeMessage(value) {
  try {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return false
    const id = value.id
    if (typeof id !== 'string' || id.length === 0 || value.role !== ROLE || !Array.isArray(value.content)) return false
    const source = value.source
    return typeof source === 'object' && source !== null && !Array.isArray(source) && typeof source.kind === 'string'
  } catch {
    return false
  }
}

/** The code of one field's value (`expected`: the literal it may equal). */
function valueCode(value, expected, kindKey) {
  if (typeof value === 'string') return value === expected ? EXPECTED : value.length === 0 ? EMPTY : STRING
  if (value === undefined) return MISSING
  if (typeof value !== 'object' || value === null) return OTHER
  if (Array.isArray(value)) return ARRAY
  return typeof value[kindKey] === 'string' ? OBJECT_KIND : OBJECT
}

/** The code of `object[key]`, a read that may throw. */
function fieldCode(object, key, expected) {
  try {
    return valueCode(object[key], expected, KIND)
  } catch {
    return UNREADABLE
  }
}

/** The fields' codes of an object whose layout names are read by name. */
function namedCode(value) {
  let id, role, content, source
  try {
    id = valueCode(value.id, undefined, 'kind')
  } catch {
    id = UNREADABLE
  }
  try {
    role = valueCode(value.role, ROLE, 'kind')
  } catch {
    role = UNREADABLE
  }
  try {
    content = valueCode(value.content, undefined, 'kind')
  } catch {
    content = UNREADABLE
  }
  try {
    source = valueCode(value.source, undefined, 'kind')
  } catch {
    source = UNREADABLE
  }
  return T_OBJECT | id << AT_ID | role << AT_ROLE | content << AT_CONTENT | source << AT_SOURCE
}

/** The shape code of one value; each of its fields read once. */
export function shapeCode(value) {
  const type = typeof value
  if (type !== 'object' || value === null) {
    if (type === 'number') return Number.isFinite(value) ? T_FINITE : T_NON_FINITE
    return value === null ? T_NULL : S.types[type]
  }
  try {
    if (Array.isArray(value)) return T_ARRAY
  } catch {
    return T_UNREADABLE
  }
  if (named) return namedCode(value)
  return T_OBJECT | fieldCode(value, F_ID) << AT_ID | fieldCode(value, F_ROLE, ROLE) << AT_ROLE
    | fieldCode(value, F_CONTENT) << AT_CONTENT | fieldCode(value, F_SOURCE) << AT_SOURCE
}

/** Whether `value`'s shape code is the one Rust calls a usable message. */
export function hasMessageCode(value) {
  return quick ? looksLikeMessage(value) || shapeCode(value) === MESSAGE : shapeCode(value) === MESSAGE
}

/**
 * The shape codes of a claimed batch: `undefined` when every entry has the
 * message code, else every entry's code; `null` when the batch cannot be read.
 * An entry that does not look like a message is coded from reads of its own
 * (the host's own claim hands over plain data, whose reads agree). The first
 * `known` entries are the log's own (`loggedPrefix`), messages that are not read again.
 */
export function codesOf(batch, known = 0) {
  let codes
  try {
    if (!Array.isArray(batch)) return null
    const n = batch.length
    let i = known
    if (quick) while (i < n && looksLikeMessage(batch[i])) i++
    for (; i < n; i++) {
      const code = shapeCode(batch[i])
      if (codes === undefined) {
        if (code === MESSAGE) continue
        codes = new Uint32Array(n)
        codes.fill(MESSAGE, 0, i)
      }
      codes[i] = code
    }
  } catch {
    return null
  }
  return codes
}

// ---- entries the durable log wrote ----------------------------------------------------

/**
 * The usable messages the observer saw inserted by a durable write: the log's
 * own snapshots (plain JSON data, deep-frozen with the event that carries
 * them), which the host's splice puts in the inbox as they are. `inbox.nextStep`
 * is the live list, so an entry can also be placed there with no write at all;
 * such an entry is not here, and its batch gets the deep check (claims.js). So
 * does the first claim of entries written before the guard was mounted.
 *
 * The log's entries cannot change, so one noted here keeps the message code it
 * was noted with, and a claim finds it by identity alone (`loggedPrefix`),
 * reading none of its fields.
 */
const logged = new WeakSet()

/**
 * The observer's note of an inserted entry with the message code: kept only
 * when the entry and its `source` are frozen, as the log's entries are (plain
 * data, deep-frozen), so that it keeps the code. An entry of an event the log
 * did not freeze (one a plugin emitted itself, say) is not noted, so its batch
 * is judged when it is claimed.
 */
export function noteLogged(entry) {
  try {
    if (Object.isFrozen(entry) && Object.isFrozen(entry.source)) logged.add(entry)
  } catch {
    // A Proxy whose traps throw is not the log's: not noted.
  }
}

/**
 * How many of `batch`'s entries, from the first, the log wrote: all of them for
 * the clean batch of the host's own claim, nearly every batch, found with one
 * look-up per entry. -1 when `batch` is not an array or cannot be read. The
 * entries past the prefix have their codes read (`codesOf`).
 */
export function loggedPrefix(batch) {
  try {
    if (!Array.isArray(batch)) return -1
    let i = 0
    while (i < batch.length && logged.has(batch[i])) i++
    return i
  } catch {
    return -1
  }
}

/**
 * Whether every entry of `batch` with the message code is one the durable log
 * wrote (`codes` as `codesOf` gave them: `undefined`, every entry has it), past
 * the first `known`, which are. The others are non-messages, judged as such.
 * False when the codes could not be read.
 */
export function allLogged(batch, codes, known = 0) {
  if (codes === null) return false
  try {
    for (let i = known; i < batch.length; i++) {
      if (codes !== undefined && codes[i] !== MESSAGE) continue
      if (!logged.has(batch[i])) return false
    }
    return true
  } catch {
    return false
  }
}

/** The shape code of every entry of `list`; none when its length cannot be read (a trapping Proxy). */
export function shapes(list) {
  let codes
  try {
    codes = new Uint32Array(list.length)
  } catch {
    return new Uint32Array(0)
  }
  for (let i = 0; i < codes.length; i++) {
    let entry
    try {
      entry = list[i]
    } catch {
      codes[i] = T_UNREADABLE
      continue
    }
    codes[i] = shapeCode(entry)
  }
  return codes
}
