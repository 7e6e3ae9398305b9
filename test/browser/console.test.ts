import type { ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdirSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import path from 'node:path'
import type { Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { PROJECT_ROOT } from '../../src/config.js'
import { McpToolServer } from '../fixtures/mcp-tool-server.js'
import {
  AddDatasetItemsDocument,
  CreateDatasetDocument,
  CreateSessionDocument,
  EnqueuePromptDocument,
  ExperimentProgressDocument,
  ExperimentResultDocument,
  RunDocument,
  SetPromptLabelDocument,
  StartExperimentDocument,
  UpsertPromptDocument,
} from '../generated/graphql.js'
import { haveChromium, type LoopbackBrowser, launchLoopbackBrowser, NO_CHROMIUM } from '../helpers/browser.js'
import { createTestDatabase } from '../helpers/databases.js'
import { slow, waitForEntry, words } from '../helpers/flow.js'
import { killHard, post, startServerProcess } from '../helpers/process.js'
import { startOwnRedis } from '../helpers/redis-server.js'
import { startTestServer, type TestServer } from '../helpers/server.js'

/** Where the test keeps its screenshot (CI keeps the folder as an artifact). */
const ARTIFACTS = path.join(PROJECT_ROOT, 'test', 'artifacts')

const streamText = async (page: Page) => (await page.getByTestId('stream').textContent()) ?? ''

/** Fills the console's enqueue form and submits it. */
async function enqueueFromPage(page: Page, input: string, overrides: string) {
  const form = page.getByRole('form', { name: 'Enqueue' })
  await form.locator('textarea[name=input]').fill(input)
  await form.locator('textarea[name=overrides]').fill(overrides)
  await form.getByRole('button', { name: 'Enqueue' }).click()
}

describe.skipIf(!haveChromium)(`the console in headless Chromium${haveChromium ? '' : ` (${NO_CHROMIUM})`}`, () => {
  let server: TestServer
  let browser: LoopbackBrowser
  let mcp: McpToolServer

  beforeAll(async () => {
    mcp = await McpToolServer.start()
    server = await startTestServer({ provider: 'sqlite', app: { toolServers: { origins: [mcp.origin], headerEnvs: [] } } })
    browser = await launchLoopbackBrowser()
  })
  afterAll(async () => {
    await browser?.close()
    await server?.stop({ dropDatabase: true })
    await mcp?.close()
  })

  it('creates a session, streams a run token by token, aborts a second run from the page, and shows it ABORTED', async () => {
    const page = await browser.context.newPage()
    await page.goto(`${server.http.url}/console`)
    const create = page.getByRole('form', { name: 'New session' })
    await create.locator('input[name=id]').fill('from-the-page')
    await create.locator('select[name=defaultProfileId]').selectOption('fake-echo')
    await create.getByRole('button', { name: 'Create session' }).click()
    await expect.poll(() => page.getByTestId('session').textContent(), { timeout: 15_000 }).toContain('from-the-page')
    await expect.poll(() => page.getByTestId('session').textContent()).toContain('live')

    // the fake-echo backend echoes the input one word at a time, 40 ms apart
    await enqueueFromPage(page, words(60), '{"extra": {"tokenDelayMs": 40}}')
    await expect.poll(() => streamText(page), { timeout: 15_000 }).toContain('w3')
    const early = await streamText(page)
    await expect.poll(() => streamText(page), { timeout: 15_000 }).toContain('w30')
    expect(early).not.toContain('w30') // it grew while the run went on: tokens, not one final answer
    await expect.poll(() => page.getByTestId('entry-1').textContent(), { timeout: 15_000 }).toContain('COMPLETED')
    expect(await streamText(page)).toBe('')

    await enqueueFromPage(page, words(400), '{"extra": {"tokenDelayMs": 40}}')
    const second = page.getByTestId('entry-2')
    await expect.poll(() => second.textContent(), { timeout: 15_000 }).toContain('RUNNING')
    await expect.poll(() => streamText(page), { timeout: 15_000 }).toContain('w2')
    await second.getByRole('button', { name: 'Abort' }).click()
    await expect.poll(() => second.getByTestId('run-status').textContent(), { timeout: 15_000 }).toBe('ABORTED')
    await expect.poll(() => second.textContent()).toContain('CANCELLED')

    // the run's detail, from the page, agrees with the server
    await second.getByTestId('run-status').click()
    const detail = page.getByTestId('run-detail')
    await expect.poll(() => detail.textContent(), { timeout: 15_000 }).toContain('ABORTED')
    const runId = new URL(page.url()).hash.split('/').pop()!
    const run = (await server.request(RunDocument, { id: runId })).data!.run!
    expect(run).toMatchObject({ status: 'ABORTED', sessionId: 'from-the-page' })
    expect(await detail.textContent()).toContain(run.id)

    mkdirSync(ARTIFACTS, { recursive: true })
    await page.screenshot({ path: path.join(ARTIFACTS, 'console.png'), fullPage: true })
    expect(browser.external).toEqual([])
    await page.close()
  })

  it('shows the call a run waits for, takes its result typed on the page, and the run completes with it', async () => {
    await server.request(CreateSessionDocument, { input: { id: 'tools-page', defaultProfileId: 'fake-echo' } })
    const tool = { name: 'get_weather', inputSchema: { type: 'object', properties: { city: { type: 'string' } } } }
    const input = {
      sessionId: 'tools-page',
      input: 'use get_weather',
      tools: [tool],
      overrides: { extra: { toolArguments: { city: 'Oslo' } } },
    }
    const admitted = (await server.request(EnqueuePromptDocument, { input })).data!.enqueuePrompt
    if (admitted.__typename !== 'EnqueuePromptPayload') throw new Error('not admitted')
    const runId = (await waitForEntry(server, 'tools-page', admitted.entry.queueId, ['STARTING', 'RUNNING'])).runId!
    await expect
      .poll(async () => (await server.request(RunDocument, { id: runId })).data!.run!.status, { timeout: 15_000 })
      .toBe('REQUIRES_ACTION')

    const page = await browser.context.newPage()
    await page.goto(`${server.http.url}/console#/sessions/tools-page/runs/${runId}`)
    const pending = page.getByTestId('pending-fake_call_1')
    await expect.poll(() => pending.textContent(), { timeout: 15_000 }).toContain('Oslo')
    await pending.locator('textarea[name=output]').fill('sunny from the page')
    await pending.getByRole('button', { name: 'Submit result' }).click()
    await expect
      .poll(async () => (await server.request(RunDocument, { id: runId })).data!.run, { timeout: 15_000 })
      .toMatchObject({
        status: 'COMPLETED',
        output: 'sunny from the page',
      })
    await expect.poll(() => page.getByTestId('run-detail').textContent(), { timeout: 15_000 }).toContain('COMPLETED')
    expect(browser.external).toEqual([])
  })

  it('shows an MCP call awaiting approval as such, declines it from the page, and shows who declined it', async () => {
    await server.request(CreateSessionDocument, { input: { id: 'approval-page', defaultProfileId: 'fake-echo' } })
    const input = {
      sessionId: 'approval-page',
      input: 'use flaky_forecast',
      mcpServers: [{ label: 'cities', url: mcp.url, requireApproval: { mode: 'ALWAYS' as const } }],
      overrides: { extra: { toolArguments: { city: 'Oslo' } } },
    }
    const admitted = (await server.request(EnqueuePromptDocument, { input })).data!.enqueuePrompt
    if (admitted.__typename !== 'EnqueuePromptPayload') throw new Error('not admitted')
    const runId = (await waitForEntry(server, 'approval-page', admitted.entry.queueId, ['STARTING', 'RUNNING'])).runId!

    const page = await browser.context.newPage()
    await page.goto(`${server.http.url}/console#/sessions/approval-page/runs/${runId}`)
    const pending = page.getByTestId('pending-fake_call_1')
    await expect.poll(() => pending.textContent(), { timeout: 15_000 }).toContain('on MCP server cities')
    expect(await pending.locator('textarea[name=output]').count()).toBe(0)
    await pending.locator('input[name=reason]').fill('not from the console')
    await pending.getByRole('button', { name: 'Decline' }).click()
    await expect
      .poll(async () => (await server.request(RunDocument, { id: runId })).data!.run!.status, { timeout: 15_000 })
      .toBe('COMPLETED')
    await expect
      .poll(() => page.getByTestId('run-detail').textContent(), { timeout: 15_000 })
      .toContain('MCP cities; declined by local: not from the console')
    expect(mcp.calls).toEqual([])
    expect(browser.external).toEqual([])
  })

  it('lists experiments live, compares two with a per-item chart and bars, and adds a run to a dataset from its page', async () => {
    const prompt = (content: string) => ({ id: 'pick', messages: [{ role: 'USER' as const, content }], defaultProfileId: 'fake-echo' })
    await server.request(UpsertPromptDocument, { input: prompt('{{word}}') })
    await server.request(UpsertPromptDocument, { input: prompt('{{alt}}') })
    const items = [
      { variables: { word: 'same', alt: 'same' }, expected: 'same' },
      { variables: { word: 'right', alt: 'wrong' }, expected: 'right' },
      { variables: { word: 'wrong', alt: 'fixed' }, expected: 'fixed' },
      { variables: { word: 'good', alt: 'bad' }, expected: 'good' },
    ]
    await server.request(CreateDatasetDocument, { input: { id: 'picks' } })
    await server.request(AddDatasetItemsDocument, { input: { datasetId: 'picks', items } })
    const ids: string[] = []
    for (const version of [1, 2]) {
      const input = {
        name: `pick v${version}`,
        datasetId: 'picks',
        promptRef: { id: 'pick', version },
        scorers: [{ name: 'exact', kind: 'EXACT' as const }],
      }
      const started = (await server.request(StartExperimentDocument, { input })).data!.startExperiment
      if (started.__typename !== 'ExperimentPayload') throw new Error(JSON.stringify(started))
      await server.subscribe(ExperimentProgressDocument, { id: started.experiment.id }).done(15_000)
      ids.push(started.experiment.id)
    }

    const page = await browser.context.newPage()
    await page.goto(`${server.http.url}/console#/experiments`)
    const list = page.getByTestId('experiments')
    await expect.poll(() => list.textContent(), { timeout: 15_000 }).toContain('pick v2')
    expect(await list.textContent()).toContain('4/4')
    await page.getByRole('checkbox', { name: 'compare pick v1' }).check()
    await page.getByRole('checkbox', { name: 'compare pick v2' }).check()
    await page.getByTestId('compare-link').click()
    const comparison = page.getByTestId('comparison')
    await expect
      .poll(() => comparison.getByTestId('counts').textContent(), { timeout: 15_000 })
      .toBe('1 improved, 2 regressed, 1 unchanged')
    expect(await comparison.locator('[data-testid=item-chart] circle.regressed').count()).toBe(2)
    expect(await comparison.locator('[data-testid=item-chart] circle.improved').count()).toBe(1)
    expect(await comparison.getByRole('img', { name: /^pass rate: base 0.75, candidate 0.50$/ }).count()).toBe(1)
    mkdirSync(ARTIFACTS, { recursive: true })
    await page.screenshot({ path: path.join(ARTIFACTS, 'experiments-comparison.png'), fullPage: true })

    // a run of the experiment, kept as an item of another dataset from its page
    await server.request(CreateDatasetDocument, { input: { id: 'kept' } })
    const run = (await server.request(ExperimentResultDocument, { id: ids[0]!, first: 1 })).data!.experiment!.items.edges[0]!.node.runs[0]!
      .run!
    await page.goto(`${server.http.url}/console#/sessions/${run.sessionId}/runs/${run.id}`)
    const form = page.getByRole('form', { name: 'Add to dataset' })
    await form.locator('input[name=datasetId]').fill('kept')
    await form.getByRole('button', { name: 'Add to dataset' }).click()
    await expect.poll(() => form.getByTestId('added').textContent(), { timeout: 15_000 }).toBe('added: version 1')
    expect(browser.external).toEqual([])
  })

  it('shows what changed between two versions of a prompt, and where its labels point', async () => {
    for (const content of ['Write a haiku about {{topic}}.', 'Write a short haiku about {{topic}}!']) {
      await server.request(UpsertPromptDocument, {
        input: { id: 'poem', messages: [{ role: 'USER', content }], defaultProfileId: 'fake-echo' },
      })
    }
    await server.request(SetPromptLabelDocument, { input: { promptId: 'poem', label: 'production', version: 1 } })
    const page = await browser.context.newPage()
    await page.goto(`${server.http.url}/console`)
    const panel = page.getByRole('region', { name: 'Prompt versions' })
    await expect.poll(() => panel.locator('select[name=promptId]').textContent(), { timeout: 15_000 }).toContain('poem (v2)')
    await panel.locator('select[name=promptId]').selectOption('poem')
    const diff = panel.getByTestId('prompt-diff')
    await expect.poll(() => diff.locator('ins').allTextContents(), { timeout: 15_000 }).toEqual(['short ', '!'])
    expect(await diff.locator('del').allTextContents()).toEqual(['.'])
    expect(await panel.getByTestId('labels').textContent()).toBe('production: v1')
    // the same version on both sides: nothing changed
    await panel.locator('select[name=from]').selectOption('2')
    await expect.poll(() => panel.textContent(), { timeout: 15_000 }).toContain('The two versions are the same.')
    expect(await diff.locator('ins, del').count()).toBe(0)
    expect(browser.external).toEqual([])
    await page.close()
  })

  it('loads and works with nothing reachable but loopback: every request goes to this server', async () => {
    const page = await browser.context.newPage()
    const asked: string[] = []
    page.on('request', (request) => asked.push(request.url()))
    await page.goto(`${server.http.url}/console/`)
    await expect.poll(() => page.getByTestId('sessions').textContent(), { timeout: 15_000 }).toContain('from-the-page')
    await expect.poll(() => page.getByTestId('backends').textContent(), { timeout: 15_000 }).toContain('fake')
    expect(browser.external).toEqual([])
    const origin = new URL(server.http.url).origin
    expect(asked.length).toBeGreaterThan(2)
    expect(asked.filter((url) => new URL(url).origin !== origin)).toEqual([])
    await page.close()
  })

  it('shows a banner naming Redis while Redis is away, and takes it down once Redis is back', async () => {
    const redis = await startOwnRedis()
    const withRedis = await startTestServer({
      provider: 'sqlite',
      app: { redisUrl: redis.url, redisPrefix: `test-${randomBytes(6).toString('hex')}:` },
    })
    const page = await browser.context.newPage()
    try {
      await page.goto(`${withRedis.http.url}/console/`)
      await expect.poll(() => page.getByTestId('backends').textContent(), { timeout: 15_000 }).toContain('fake')
      expect(await page.getByRole('alert').count()).toBe(0)
      await redis.stop()
      await expect.poll(() => page.getByRole('alert').textContent(), { timeout: 15_000 }).toContain('redis does not answer')
      await redis.start()
      await expect.poll(() => page.getByRole('alert').count(), { timeout: 20_000 }).toBe(0)
    } finally {
      await page.close()
      await withRedis.stop({ dropDatabase: true })
      await redis.stop()
    }
  }, 60_000)

  it('follows its session across a kill -9 and restart of the server: the stream resumes and the queue stays live', async () => {
    const database = await createTestDatabase('sqlite')
    const port = await freePort()
    let child: ChildProcess | undefined
    try {
      const first = await startServerProcess(database.url, { PORT: String(port) })
      child = first.child
      await post(first.url, CreateSessionDocument, { input: { id: 'survivor', defaultProfileId: 'fake-echo' } })
      const page = await browser.context.newPage()
      await page.goto(`${first.url}/console/#/sessions/survivor`)
      await expect.poll(() => page.getByTestId('session').textContent(), { timeout: 15_000 }).toContain('● live')
      await post(first.url, EnqueuePromptDocument, { input: { sessionId: 'survivor', input: words(400), overrides: slow(40) } })
      await expect.poll(() => streamText(page), { timeout: 15_000 }).toContain('w2')
      await killHard(child)

      const second = await startServerProcess(database.url, { PORT: String(port) })
      child = second.child
      // the run cut off by the kill ends FAILED; a new prompt streams into the same page
      await expect.poll(() => page.getByTestId('entry-1').textContent(), { timeout: 20_000 }).toContain('FAILED')
      await post(second.url, EnqueuePromptDocument, { input: { sessionId: 'survivor', input: words(40, 'after'), overrides: slow(40) } })
      await expect.poll(() => streamText(page), { timeout: 15_000 }).toContain('after3')
      await expect.poll(() => page.getByTestId('entry-2').textContent(), { timeout: 15_000 }).toContain('COMPLETED')
      expect(browser.external).toEqual([])
      await page.close()
    } finally {
      if (child) await killHard(child)
      await database.drop()
    }
  })
})

/** A port nothing listens on now, so a restarted server can take the one its page knows. */
async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  await new Promise((resolve) => server.close(resolve))
  return port
}
