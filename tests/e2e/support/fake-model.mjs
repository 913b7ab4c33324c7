// A fake DeepSeek chat-completions endpoint on 127.0.0.1: the only thing the
// end-to-end suite fakes besides the page. It speaks the wire the real
// `@deepseek-ai/dsh-llm-deepseek` adapter reads: `POST {base}/chat/completions`
// with `stream: true`, answered as SSE `data:` chunks ending with `[DONE]`.

import { createServer } from 'node:http'

/**
 * The text of a chat message's `content` (a string, or OpenAI-style parts).
 * @param {any} content
 */
export function textOf(content) {
  if (typeof content === 'string') return content
  if (Array.isArray(content)) return content.map(p => (typeof p === 'string' ? p : p?.text ?? '')).join('')
  return content == null ? '' : JSON.stringify(content)
}

/** The `role: 'tool'` messages of a request, as `{ toolCallId, text }`. */
export function toolResults(request) {
  return (request.body.messages ?? []).filter(m => m.role === 'tool').map(m => ({ toolCallId: m.tool_call_id, text: textOf(m.content) }))
}

/** The text of every `role: 'user'` message of a request. */
export function userTexts(request) {
  return (request.body.messages ?? []).filter(m => m.role === 'user').map(m => textOf(m.content))
}

/** True for an agent-turn request (the agent loop sends its tools), false for side calls such as session titles. */
export function isAgentTurn(request) {
  return Array.isArray(request.body.tools) && request.body.tools.length > 0
}

/**
 * A reply that makes the model call one tool. Without `id`, each time the
 * reply is served its call gets a fresh id, as a real endpoint's does (the
 * page refuses to load a history in which two calls share one).
 */
export const callTool = (name, args, id) => ({ toolCalls: [{ id, name, arguments: JSON.stringify(args) }] })
/** A reply with final assistant text. */
export const say = (text) => ({ text })

/**
 * A reply the model holds back until the test says go: `reply` (a reply
 * object or a function of the request) answers the step only after
 * `release()`. A test uses it to make the model call a tool at a moment of
 * its choosing (after a browser tab closed).
 */
export function held(reply) {
  let release
  const released = new Promise((resolve) => { release = resolve })
  return {
    reply: async (request) => { await released; return typeof reply === 'function' ? reply(request) : reply },
    release: () => release(),
  }
}

let callIds = 0

function sseChunks(reply, model) {
  const base = { id: 'chatcmpl-fake', object: 'chat.completion.chunk', created: Math.floor(Date.now() / 1000), model }
  const chunk = (delta, finish = null, extra = {}) => ({ ...base, choices: [{ index: 0, delta, finish_reason: finish }], ...extra })
  const out = [chunk({ role: 'assistant', content: '' })]
  if (reply.toolCalls?.length) {
    reply.toolCalls.forEach((call, index) => {
      out.push(chunk({ tool_calls: [{ index, id: call.id ?? `call_${++callIds}`, type: 'function', function: { name: call.name, arguments: '' } }] }))
      out.push(chunk({ tool_calls: [{ index, function: { arguments: call.arguments } }] }))
    })
    out.push(chunk({}, 'tool_calls'))
  } else {
    const text = String(reply.text ?? 'ok')
    // Two deltas, so the stream is really incremental.
    const cut = Math.ceil(text.length / 2)
    out.push(chunk({ content: text.slice(0, cut) }))
    if (text.length > cut) out.push(chunk({ content: text.slice(cut) }))
    out.push(chunk({}, 'stop'))
  }
  out.push({ ...base, choices: [], usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 } })
  return out
}

/**
 * Start the endpoint.
 * @param {(request: { body: any, headers: object, index: number, agentIndex: number }) => ({ text?: string, toolCalls?: object[] } | Promise<object>)} respond -
 *   called for each request; `index` counts every request, `agentIndex` only agent turns.
 *   Side calls (no tools in the request: session titles and the like) are answered `ok`
 *   unless `respond` handles them (it is called for them too, with `agentIndex` -1).
 * @returns {Promise<{ url: string, baseUrl: string, requests: object[], close(): Promise<void>, waitFor(pred, ms): Promise<object> }>}
 */
export async function startFakeModel(respond) {
  const requests = []
  const waiters = new Set()
  let agentTurns = 0
  const server = createServer((req, res) => {
    let raw = ''
    req.setEncoding('utf8')
    req.on('data', d => { raw += d })
    req.on('end', async () => {
      if (req.method !== 'POST' || !req.url.endsWith('/chat/completions')) {
        res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: `fake endpoint: no route ${req.method} ${req.url}` } }))
        return
      }
      let body
      try { body = JSON.parse(raw) } catch { body = { unparsed: raw } }
      const entry = { body, headers: req.headers, index: requests.length, at: Date.now() }
      entry.agentIndex = isAgentTurn(entry) ? agentTurns++ : -1
      requests.push(entry)
      for (const w of [...waiters]) if (w.pred(entry)) { waiters.delete(w); w.resolve(entry) }
      let reply
      try {
        reply = await respond(entry)
      } catch (error) {
        reply = { text: `fake endpoint: the script threw ${error?.message ?? error}` }
      }
      reply ??= { text: 'ok' }
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' })
      for (const c of sseChunks(reply, body.model ?? 'deepseek-v4-flash')) res.write(`data: ${JSON.stringify(c)}\n\n`)
      res.end('data: [DONE]\n\n')
    })
  })
  await new Promise((resolve, reject) => { server.once('error', reject); server.listen(0, '127.0.0.1', resolve) })
  const { port } = server.address()
  const url = `http://127.0.0.1:${port}`
  return {
    url,
    baseUrl: url,
    requests,
    /** Resolve with the first request (already received or arriving within `ms`) matching `pred`. */
    waitFor(pred, ms = 10_000) {
      const hit = requests.find(pred)
      if (hit) return Promise.resolve(hit)
      return new Promise((resolve, reject) => {
        const w = { pred, resolve: (e) => { clearTimeout(t); resolve(e) } }
        const t = setTimeout(() => { waiters.delete(w); reject(new Error(`fake model: no matching request within ${ms} ms (${requests.length} received)`)) }, ms)
        waiters.add(w)
      })
    },
    async close() {
      server.closeAllConnections?.()
      await new Promise(resolve => server.close(() => resolve()))
    },
  }
}

/** True for user messages the host injects itself (runtime context, reminders), not prompts. */
const injected = (text) => text.startsWith('Current runtime context') || text.startsWith('<system-reminder>')

/** The last prompt of a request: the newest user message the host did not inject. */
export function promptOf(request) {
  const prompts = (request.body.messages ?? []).filter(m => m.role === 'user').map(m => textOf(m.content)).filter(t => !injected(t))
  return prompts.at(-1)
}

/** How many model steps of the current turn came before this request (assistant messages after the last user message). */
export function stepOf(request) {
  const messages = request.body.messages ?? []
  let last = -1
  messages.forEach((m, i) => { if (m.role === 'user') last = i })
  return messages.slice(last + 1).filter(m => m.role === 'assistant').length
}

/** A predicate for the request that carries step `step` of the turn `prompt` started (step 1: the first tool result). */
export const stepRequest = (prompt, step) => (request) => promptOf(request) === prompt && stepOf(request) === step

/** The newest tool result of a request (`{ toolCallId, text }`), if any. */
export const lastToolResult = (request) => toolResults(request).at(-1)

/** The prefix a scripted model puts before a tool result it quotes. */
export const QUOTE = 'The tool answered: '

/** A final reply quoting the newest tool result verbatim, so a test can read what the model saw. */
export const quoteToolResult = (request) => say(`${QUOTE}${lastToolResult(request)?.text ?? '(no tool result)'}`)

/**
 * A responder scripted per prompt: `plans[prompt][step]` answers step `step`
 * of the turn that `prompt` started (a reply object or a function of the
 * request). Past the end of a plan, and for prompts without one, the model
 * quotes the newest tool result, or echoes the prompt when there is none.
 * Side calls (session titles) get a fixed title.
 */
export function byPrompt(plans = {}) {
  return (request) => {
    if (request.agentIndex < 0) return say('E2E session')
    const prompt = promptOf(request)
    const reply = plans[prompt]?.[stepOf(request)]
    if (reply) return typeof reply === 'function' ? reply(request) : reply
    return lastToolResult(request) ? quoteToolResult(request) : say(`ECHO: ${prompt}`)
  }
}
