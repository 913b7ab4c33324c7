// `dsh web`'s real page in a real browser: Debian's Chromium, driven by
// `playwright-core` (pinned in package-lock.json; it downloads no browser).
//
// The browser is started with `launchServer`, which hands back its process:
// Chromium leads a process group of its own, registered with `adopt()` so a
// test that overruns, or a suite that exits, ends it by that id. Normally
// `close()` (in `finally`) shuts it down; past `lifetimeMs` the group is
// killed, whatever the test is doing.

import { existsSync } from 'node:fs'
import { chromium } from 'playwright-core'
import { adopt, killGroup, sleep, waitUntil } from './dsh.mjs'

/** Debian's binary, called directly (the `/usr/bin/chromium` wrapper script prints a shell error). */
export const CHROMIUM = process.env.HARNESS_GUARD_CHROMIUM || '/usr/lib/chromium/chromium'
/** What a root shell runs to get it (the Makefile's e2e target does this when it is missing). */
export const CHROMIUM_INSTALL = 'apt-get update && apt-get install -y --no-install-recommends chromium'

/**
 * `--no-sandbox`: the suite runs as root, where Chromium's sandbox refuses to
 * start. The rest keep it off the network beyond the loopback page: no
 * background fetches, component updates, sync, first-run tasks or QUIC.
 */
const FLAGS = ['--no-sandbox', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic']

/** The window every picture and layout assertion is made in. */
export const VIEWPORT = Object.freeze({ width: 1280, height: 800 })

/** The environment Chromium gets: the suite's, without `DISPLAY` (headless needs none). */
function browserEnv() {
  const env = { ...process.env }
  delete env.DISPLAY
  delete env.WAYLAND_DISPLAY
  return env
}

/**
 * Start Chromium headless with one browser context (locale `en-US`, so the
 * page's labels are the ones the tests name; a 1280x800 viewport).
 * @returns {Promise<{ context: import('playwright-core').BrowserContext, pid: number, close(): Promise<void> }>}
 */
export async function launchBrowser({ lifetimeMs = 170_000 } = {}) {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`the end-to-end suite drives dsh web's page in Chromium, and ${CHROMIUM} is missing. As root, run:\n  ${CHROMIUM_INSTALL}\n(or set HARNESS_GUARD_CHROMIUM to another Chromium build)`)
  }
  const server = await chromium.launchServer({ executablePath: CHROMIUM, args: FLAGS, env: browserEnv(), timeout: 60_000 })
  const child = server.process()
  const release = adopt(child)
  const overrun = setTimeout(() => killGroup(child, 'SIGKILL'), lifetimeMs)
  let browser
  try {
    browser = await chromium.connect(server.wsEndpoint(), { timeout: 30_000 })
    const context = await browser.newContext({ locale: 'en-US', viewport: VIEWPORT })
    context.setDefaultTimeout(15_000)
    let closed
    return {
      context,
      pid: child.pid,
      close() {
        closed ??= (async () => {
          try {
            await Promise.race([browser.close().then(() => server.close()), sleep(10_000)])
          } catch {}
          clearTimeout(overrun)
          killGroup(child, 'SIGKILL') // anything left in its group
          release()
        })()
        return closed
      },
    }
  } catch (error) {
    clearTimeout(overrun)
    killGroup(child, 'SIGKILL')
    release()
    throw error
  }
}

/** `POST /api/<method>` bodies a tab sent, decoded (`{ method, payload }`). */
function recordApi(page) {
  const calls = []
  page.on('request', (request) => {
    const [, method] = /\/api\/(.+)$/.exec(new URL(request.url()).pathname) ?? []
    if (!method || request.method() !== 'POST') return
    let body
    try { body = JSON.parse(request.postData() ?? 'null') } catch { return }
    calls.push({ method, payload: body?.payload })
  })
  return calls
}

/**
 * Open `url` in a new tab of `context` and wait until the page has synced its
 * client providers twice (publish, then reconnect), as it does on every load.
 * `firstRun`: a fresh `DSH_HOME` shows the "Internal Testing Notice" once;
 * it must be there and is dismissed with **Continue**.
 */
export async function openTab(context, url, { firstRun = false } = {}) {
  const page = await context.newPage()
  const calls = recordApi(page)
  const tab = {
    page,
    /** Every `/api` call the tab made. */
    calls,
    /** The `providers` of each `dynamicCordisRunner/syncInspectManifest` the tab sent. */
    syncs: () => calls.filter(c => c.method === 'dynamicCordisRunner/syncInspectManifest').map(c => c.payload.args.providers),
    /** The tab's answers: the args of each `dynamicCordisRunner/resolveInspectQuery` it sent (`{ agentId, requestId, resolution }`). */
    answers: () => calls.filter(c => c.method === 'dynamicCordisRunner/resolveInspectQuery').map(c => c.payload.args),
    close: () => page.close(),
  }
  try {
    await page.goto(url)
    if (firstRun) await page.getByRole('dialog', { name: 'Internal Testing Notice' }).getByRole('button', { name: 'Continue' }).click()
    await waitUntil(() => tab.syncs().length >= 2, { ms: 15_000, every: 50, what: 'the page to sync its client providers twice' })
    return tab
  } catch (error) {
    await page.close().catch(() => {})
    throw error
  }
}

/**
 * A PNG of the region that covers every locator in `parts` (plus `pad` px).
 * The first part is scrolled to near the top of its scroll container (or as
 * far as the container goes) and the layout left to settle. `between`: two
 * locators (a header above, a composer below) that the region must fit
 * between, so a picture never shows a part half hidden under them; `within`:
 * one locator (a dialog) whose box the region must fit in.
 */
export async function shoot(page, parts, file, { pad = 16, between, within } = {}) {
  // Scroll, let two frames pass, measure; again until nothing moves (an
  // expanding block grows for a while after it is clicked).
  let boxes = []
  for (let settled = false, tries = 0; !settled; tries++) {
    if (tries > 50) throw new Error(`screenshot ${file}: the layout did not settle`)
    await parts[0].evaluate((el, margin) => {
      el.scrollIntoView({ block: 'start', behavior: 'instant' })
      for (let box = el.parentElement; box; box = box.parentElement) {
        if (box.scrollHeight <= box.clientHeight || !/auto|scroll/.test(getComputedStyle(box).overflowY)) continue
        // Flush with the top only when the container could scroll that far: leave a margin there.
        if (box.scrollTop + box.clientHeight < box.scrollHeight - 1) box.scrollTop -= margin
        break
      }
    }, 2 * pad)
    await page.evaluate(() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r))))
    const next = await Promise.all(parts.map(part => part.boundingBox()))
    if (next.some(b => !b)) throw new Error(`screenshot ${file}: a part is not visible`)
    settled = JSON.stringify(next) === JSON.stringify(boxes)
    boxes = next
  }
  const viewport = page.viewportSize() ?? VIEWPORT
  let [top, bottom] = [0, viewport.height]
  if (between) {
    const [above, below] = await Promise.all(between.map(l => l.boundingBox()))
    ;[top, bottom] = [above.y + above.height, below.y]
  } else if (within) {
    const box = await within.boundingBox()
    ;[top, bottom] = [box.y, box.y + box.height]
  }
  const y0 = Math.min(...boxes.map(b => b.y))
  const y1 = Math.max(...boxes.map(b => b.y + b.height))
  if (y0 < top || y1 > bottom) throw new Error(`screenshot ${file}: the region (y ${y0}..${y1}) does not fit in the visible ${top}..${bottom}`)
  const x = Math.max(0, Math.min(...boxes.map(b => b.x)) - pad)
  const y = Math.max(top, y0 - pad)
  const right = Math.min(viewport.width, Math.max(...boxes.map(b => b.x + b.width)) + pad)
  const end = Math.min(bottom, y1 + pad)
  await page.screenshot({ path: file, clip: { x, y, width: right - x, height: end - y }, animations: 'disabled', caret: 'hide' })
  return file
}
