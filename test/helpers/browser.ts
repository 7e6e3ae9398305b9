import { existsSync } from 'node:fs'
import { type Browser, type BrowserContext, chromium } from 'playwright-core'

/** Debian's Chromium (`apt-get install chromium`; `.ci/run` installs it). */
const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'
export const haveChromium = existsSync(CHROMIUM_PATH)
export const NO_CHROMIUM = `skipped: no Chromium at ${CHROMIUM_PATH} (apt-get install chromium, or set CHROMIUM_PATH)`

const LOOPBACK = /^(?:data:|blob:|https?:\/\/(?:127\.0\.0\.1|\[::1\]|localhost)[:/])|^wss?:\/\/(?:127\.0\.0\.1|localhost)[:/]/

/** Headless Chromium whose pages reach nothing but loopback; `external` lists what they tried. */
export interface LoopbackBrowser {
  context: BrowserContext
  /** Every request a page made to anything but loopback (each was refused). */
  readonly external: string[]
  close(): Promise<void>
}

export async function launchLoopbackBrowser(): Promise<LoopbackBrowser> {
  const browser: Browser = await chromium.launch({
    executablePath: CHROMIUM_PATH,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      // no name resolves but loopback's, and anything else goes to a closed port
      '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost',
      '--proxy-server=http://127.0.0.1:9',
    ],
  })
  const context = await browser.newContext()
  const external: string[] = []
  await context.route('**/*', (route) => {
    const url = route.request().url()
    if (LOOPBACK.test(url)) return route.continue()
    external.push(url)
    return route.abort('internetdisconnected')
  })
  context.on('weberror', (error) => external.push(`page error: ${error.error().message}`))
  return { context, external, close: () => browser.close() }
}
