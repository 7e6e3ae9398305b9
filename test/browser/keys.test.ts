import { mkdirSync } from 'node:fs'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { PROJECT_ROOT } from '../../src/config.js'
import { CreateSessionDocument, EnqueueForKeyDocument, ViewerDocument } from '../generated/graphql.js'
import { haveChromium, type LoopbackBrowser, launchLoopbackBrowser, NO_CHROMIUM } from '../helpers/browser.js'
import { ADMIN_KEY, completedRun, gql, KEYS_CATALOG } from '../helpers/key-checks.js'
import { startTestServer, type TestServer } from '../helpers/server.js'

const ARTIFACTS = path.join(PROJECT_ROOT, 'test', 'artifacts')

describe.skipIf(!haveChromium)(`the console's keys page in headless Chromium${haveChromium ? '' : ` (${NO_CHROMIUM})`}`, () => {
  let server: TestServer
  let browser: LoopbackBrowser
  beforeAll(async () => {
    // open (no bootstrap keys): the page is the local admin
    server = await startTestServer({ provider: 'sqlite', app: { catalogDir: KEYS_CATALOG() } })
    browser = await launchLoopbackBrowser()
  })
  afterAll(async () => {
    await browser?.close()
    await server?.stop({ dropDatabase: true })
  })

  it('creates a key and shows its secret once, shows its spend and runs, rotates it and revokes it', async () => {
    const url = server.http.url
    const page = await browser.context.newPage()
    page.on('dialog', (dialog) => void dialog.accept())
    await page.goto(`${url}/console#/keys`)
    await expect.poll(() => page.getByTestId('keys-open').textContent(), { timeout: 10_000 }).toContain('PROMPTLINE_API_KEYS is not set')
    const form = page.getByRole('form', { name: 'New key' })
    await form.locator('input[name=name]').fill('ops')
    await form.locator('input[name=costUsd]').fill('0.01')
    await form.locator('select[name=period]').selectOption('TOTAL')
    await form.getByRole('button', { name: 'Create key' }).click()
    await expect.poll(() => page.getByTestId('secret').textContent(), { timeout: 10_000 }).toMatch(/^pl_/)
    const secret = (await page.getByTestId('secret').textContent())!
    await page.getByRole('button', { name: 'Done' }).click()
    expect(await page.getByTestId('secret').count()).toBe(0)

    // a run of the key, priced: the page shows its spend against the budget and its day's run
    await gql(url, ADMIN_KEY, CreateSessionDocument, { input: { id: 'spent', defaultProfileId: 'fake-echo' } })
    const admitted = await gql(url, secret, EnqueueForKeyDocument, { input: { sessionId: 'spent', input: 'hi', profileId: 'priced-slow' } })
    if (admitted.data?.enqueuePrompt.__typename !== 'EnqueuePromptPayload') throw new Error(JSON.stringify(admitted))
    await completedRun(url, { sessionId: 'spent', queueId: admitted.data.enqueuePrompt.entry.queueId })
    const row = page.locator('tr[data-key=ops]')
    await expect.poll(() => row.locator('svg').getAttribute('aria-label'), { timeout: 15_000 }).toBe('1 runs in 14 days')
    expect(Number(await row.locator('meter').getAttribute('value'))).toBeGreaterThan(0)
    await mkdirSync(ARTIFACTS, { recursive: true })
    await page.screenshot({ path: path.join(ARTIFACTS, 'keys.png'), fullPage: true })

    await row.getByRole('button', { name: 'Rotate' }).click()
    await expect.poll(() => page.getByTestId('secret').textContent(), { timeout: 10_000 }).not.toBe(secret)
    const rotated = (await page.getByTestId('secret').textContent())!
    const keyId = (await gql(url, rotated, ViewerDocument)).data?.viewer.key?.id
    expect(keyId).toMatch(/^key_/)
    // open (no bootstrap keys): a secret no key has any more is the local tenant, not the key
    expect((await gql(url, secret, ViewerDocument)).data?.viewer.key).toBeNull()

    await row.getByRole('button', { name: 'Revoke' }).click()
    await expect.poll(() => row.locator('td').nth(2).textContent(), { timeout: 10_000 }).toBe('revoked')
    expect((await gql(url, rotated, ViewerDocument)).errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED')
  }, 60_000)
})
