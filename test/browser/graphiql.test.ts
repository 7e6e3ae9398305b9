import type { Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CreateSessionDocument, EnqueuePromptDocument } from '../generated/graphql.js'
import { haveChromium, type LoopbackBrowser, launchLoopbackBrowser, NO_CHROMIUM } from '../helpers/browser.js'
import { startTestServer, type TestServer } from '../helpers/server.js'

/** What an editor pane shows: Monaco renders the visible lines only, with non-breaking spaces. */
const shown = async (page: Page, selector: string) => ((await page.locator(selector).textContent()) ?? '').replace(/\u00a0/g, ' ')

/** The text of GraphiQL's result pane once it contains `text`. */
async function resultContaining(page: Page, text: string): Promise<string> {
  await expect.poll(() => shown(page, '.graphiql-response'), { timeout: 15_000 }).toContain(text)
  return shown(page, '.graphiql-response')
}

/** Resolves once the page sends operation `name`, over HTTP or its WebSocket. */
function sent(page: Page, name: string): Promise<void> {
  const names = (text: string | null | undefined) => (text ?? '').includes(`"operationName":"${name}"`)
  return new Promise((resolve) => {
    page.on('request', (request) => names(request.postData()) && resolve())
    page.on('websocket', (socket) => socket.on('framesent', (frame) => names(String(frame.payload)) && resolve()))
  })
}

/**
 * Opens the walk-through tab `name` and runs it. GraphiQL does not always switch tabs on the
 * first click (with four tabs, every other click was seen to be lost), so the tab is clicked
 * until its operation shows; and it takes the tab's operation a moment after showing it, so the
 * run button is pressed again until that operation goes out.
 */
async function runTab(page: Page, name: string): Promise<void> {
  for (let attempt = 0; !(await shown(page, '.graphiql-query-editor')).includes(` ${name}`); attempt++) {
    if (attempt === 10) throw new Error(`GraphiQL never showed the tab ${name}`)
    await page.locator('.graphiql-tab', { hasText: name }).click()
    await expect
      .poll(() => shown(page, '.graphiql-query-editor'), { timeout: 1_000 })
      .toContain(` ${name}`)
      .catch(() => {})
  }
  const operation = sent(page, name)
  for (let attempt = 0; ; attempt++) {
    await page.locator('.graphiql-execute-button').click()
    // a tab of several operations asks which one to run
    const choice = page.getByRole('menuitem', { name })
    if (await choice.isVisible()) await choice.click()
    const went = await Promise.race([operation.then(() => true), page.waitForTimeout(1_000).then(() => false)])
    if (went) return
    if (attempt === 10) throw new Error(`GraphiQL never sent ${name}`)
  }
}

describe.skipIf(!haveChromium)(
  `GraphiQL in headless Chromium with only loopback reachable${haveChromium ? '' : ` (${NO_CHROMIUM})`}`,
  () => {
    let server: TestServer
    let browser: LoopbackBrowser
    let page: Page

    beforeAll(async () => {
      server = await startTestServer({ provider: 'sqlite' })
      browser = await launchLoopbackBrowser()
      page = await browser.context.newPage()
      await page.goto(`${server.http.url}/graphql`)
      await page.waitForSelector('.graphiql-container', { timeout: 30_000 })
    })
    afterAll(async () => {
      await browser?.close()
      await server?.stop({ dropDatabase: true })
    })

    it('opens with the walk-through as tabs and runs its query', async () => {
      expect(await page.locator('.graphiql-tab').allInnerTexts()).toEqual(['Prepare', 'CreateSession', 'Watch', 'CallTool'])
      await runTab(page, 'Prepare')
      expect(await resultContaining(page, '"preparePrompt"')).toMatch(/"role": "USER",\s*"content": "hi"/)
    })

    it('runs a subscription over graphql-ws and shows the tokens, then the finished run', async () => {
      await server.request(CreateSessionDocument, { input: { id: 'demo', defaultProfileId: 'fake-echo' } })
      // the page subscribes over its own socket; the prompt comes from elsewhere, as from another tab
      await runTab(page, 'Watch')
      await new Promise((resolve) => setTimeout(resolve, 300))
      const enqueued = await server.request(EnqueuePromptDocument, {
        input: { sessionId: 'demo', promptId: 'chat', input: 'tokens from the page', overrides: { extra: { tokenDelayMs: 100 } } },
      })
      expect(enqueued.data?.enqueuePrompt.__typename).toBe('EnqueuePromptPayload')
      expect(await resultContaining(page, 'TokenDeltaEvent')).toContain('"text"')
      const finished = await resultContaining(page, 'RunFinishedEvent')
      expect(finished).toContain('"status": "COMPLETED"')
      expect(finished).toContain('"output": "tokens from the page"')
    })

    it('runs the tool tab: the fake backend calls get_weather and the run waits for its result', async () => {
      await runTab(page, 'CallTool')
      const answered = await resultContaining(page, '"runPrompt"')
      expect(answered).toContain('"status": "REQUIRES_ACTION"')
      expect(answered).toContain('"callId": "fake_call_1"')
    })

    it('asked nothing of any host but the server', () => {
      expect(browser.external).toEqual([])
    })
  },
)
