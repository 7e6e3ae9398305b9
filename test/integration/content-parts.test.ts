import { createHash } from 'node:crypto'
import { mkdtempSync, readdirSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { FakeVendorServer } from '../fixtures/fake-vendor.js'
import { RunEventsDocument, RunForAnswerDocument, type RunForAnswerMutationVariables } from '../generated/graphql.js'
import { startWithFakeVendors, type VendorTestServer } from '../helpers/fake-vendors.js'
import { createSession } from '../helpers/flow.js'
import type { TestServer } from '../helpers/server.js'

// the 8-byte PNG signature and a little more: the fakes never decode it
const PNG = Buffer.from('89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489', 'hex')
const PDF = Buffer.from('%PDF-1.4\n1 0 obj << >> endobj\ntrailer << >>\n%%EOF\n')

async function upload(t: TestServer, bytes: Buffer, mediaType: string) {
  const form = new FormData()
  form.append('file', new Blob([new Uint8Array(bytes)], { type: mediaType }), 'upload.bin')
  const response = await fetch(`${t.http.url}/files`, { method: 'POST', body: form })
  // biome-ignore lint/suspicious/noExplicitAny: the answer is read by shape
  return { status: response.status, body: (await response.json()) as Record<string, any> }
}

const CATALOG = `
profiles:
  - { id: gpt, backendId: oa, model: gpt-4o }
  - { id: sonnet, backendId: an, model: claude-sonnet-4-5 }
prompts:
  - id: describe
    messages:
      - role: user
        content: "Describe {{subject}}."
        parts: [{ type: IMAGE, variable: photo, detail: LOW }]
`

// Images and files in messages: uploaded once (POST /files), named by id, sent to each vendor in
// its own format, refused at admission where a backend cannot take them.
describe('content parts and files', () => {
  let openai: FakeVendorServer
  let anthropic: FakeVendorServer
  let t: TestServer
  let vendors: VendorTestServer
  const logLines: string[] = []
  beforeAll(async () => {
    vendors = await startWithFakeVendors(CATALOG, { app: { files: { maxFileBytes: 64 * 1024 } }, logLines })
    ;({ t, openai, anthropic } = vendors)
  })
  afterAll(() => vendors?.stop())

  async function answer(input: RunForAnswerMutationVariables['input']) {
    const { data } = await t.request(RunForAnswerDocument, { input })
    return data!.runPrompt
  }
  async function run(input: Omit<RunForAnswerMutationVariables['input'], 'sessionId'>) {
    const result = await answer({ sessionId: await createSession(t, `parts-${Math.random()}`), ...input })
    if (result.__typename !== 'RunPromptPayload') throw new Error(JSON.stringify(result))
    return result.run!
  }
  const lastUser = (vendor: FakeVendorServer) => vendor.requests.at(-1)!.body.messages.at(-1)

  it('stores an upload and answers its id, digest, type and size', async () => {
    const { status, body } = await upload(t, PNG, 'image/png')
    expect(status).toBe(201)
    expect(body).toEqual({
      fileId: expect.stringMatching(/^[0-9a-f-]{36}$/),
      sha256: createHash('sha256').update(PNG).digest('hex'),
      mediaType: 'image/png',
      bytes: PNG.length,
    })
  })

  it('sends an uploaded image and PDF to OpenAI as a data URL and file_data', async () => {
    const image = (await upload(t, PNG, 'image/png')).body.fileId
    const pdf = (await upload(t, PDF, 'application/pdf')).body.fileId
    const parts = [
      { type: 'IMAGE' as const, fileId: image, detail: 'HIGH' as const },
      { type: 'FILE' as const, fileId: pdf },
    ]
    const done = await run({ profileId: 'gpt', input: 'what are these', parts })
    expect(done.status).toBe('COMPLETED')
    expect(lastUser(openai)).toEqual({
      role: 'user',
      content: [
        { type: 'text', text: 'what are these' },
        { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG.toString('base64')}`, detail: 'high' } },
        { type: 'file', file: { file_data: `data:application/pdf;base64,${PDF.toString('base64')}`, filename: `${pdf}.pdf` } },
      ],
    })
  })

  it('sends an uploaded image and PDF to Anthropic as base64 image and document blocks, and an image URL as a url source', async () => {
    const image = (await upload(t, PNG, 'image/png')).body.fileId
    const pdf = (await upload(t, PDF, 'application/pdf')).body.fileId
    const parts = [
      { type: 'IMAGE' as const, fileId: image },
      { type: 'FILE' as const, fileId: pdf },
      { type: 'IMAGE' as const, url: 'https://images.example/cat.jpg' },
    ]
    await run({ profileId: 'sonnet', input: 'what are these', parts })
    expect(lastUser(anthropic)).toEqual({
      role: 'user',
      content: [
        { type: 'text', text: 'what are these' },
        { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG.toString('base64') } },
        { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: PDF.toString('base64') } },
        { type: 'image', source: { type: 'url', url: 'https://images.example/cat.jpg' } },
      ],
    })
  })

  it("fills a template's image variable from the request's variables, and the file's digest enters the rendered hash", async () => {
    const first = (await upload(t, PNG, 'image/png')).body.fileId
    const other = (await upload(t, Buffer.concat([PNG, Buffer.from([1])]), 'image/png')).body.fileId
    const describeWith = (fileId: string) =>
      run({ promptId: 'describe', profileId: 'gpt', variables: { subject: 'the picture', photo: { fileId } } })
    const a = await describeWith(first)
    expect(lastUser(openai).content).toEqual([
      { type: 'text', text: 'Describe the picture.' },
      { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG.toString('base64')}`, detail: 'low' } },
    ])
    const b = await describeWith(other)
    expect(b.renderedHash).not.toBe(a.renderedHash)
  })

  it("keeps a turn's image in the session's history, so the next run sends it again", async () => {
    const image = (await upload(t, PNG, 'image/png')).body.fileId
    const sessionId = await createSession(t, 'parts-history')
    await answer({ sessionId, profileId: 'gpt', input: 'what is this', parts: [{ type: 'IMAGE', fileId: image }] })
    await answer({ sessionId, profileId: 'gpt', input: 'and its colour?' })
    const [question, , followUp] = openai.requests.at(-1)!.body.messages
    expect(question.content[1]).toEqual({ type: 'image_url', image_url: { url: `data:image/png;base64,${PNG.toString('base64')}` } })
    expect(followUp).toEqual({ role: 'user', content: 'and its colour?' })
  })

  it('refuses at admission a part the backend cannot take, sending and queueing nothing', async () => {
    const image = (await upload(t, PNG, 'image/png')).body.fileId
    const sessionId = await createSession(t, 'parts-refused')
    const before = openai.requests.length
    expect(await answer({ sessionId, profileId: 'fake-echo', input: 'look', parts: [{ type: 'IMAGE', fileId: image }] })).toMatchObject({
      code: 'INVALID_REQUEST',
      message: "parts: profile 'fake-echo' (backend 'fake'): a FAKE backend takes no IMAGE parts",
    })
    expect(
      await answer({ sessionId, profileId: 'gpt', input: 'read', parts: [{ type: 'FILE', url: 'https://docs.example/a.pdf' }] }),
    ).toMatchObject({
      code: 'INVALID_REQUEST',
      message: "parts: profile 'gpt' (backend 'oa'): a OPENAI backend takes a file only as an uploaded file, not by URL",
    })
    expect(await answer({ sessionId, profileId: 'gpt', input: 'look', parts: [{ type: 'IMAGE', fileId: 'no-such-file' }] })).toMatchObject({
      code: 'NOT_FOUND',
    })
    expect(openai.requests.length).toBe(before)
    const { data } = await t.request(RunForAnswerDocument, { input: { sessionId, profileId: 'fake-echo', input: 'plain' } })
    expect(data!.runPrompt).toMatchObject({ run: { status: 'COMPLETED' } })
  })

  it('refuses an upload over the file cap with 413 FILE_TOO_LARGE', async () => {
    const tooBig = Buffer.alloc(64 * 1024 + 1, 7)
    const { status, body } = await upload(t, tooBig, 'image/png')
    expect(status).toBe(413)
    expect(body.error.code).toBe('FILE_TOO_LARGE')
  })

  it('never shows the bytes of a file in a log line or an event', async () => {
    const image = (await upload(t, PNG, 'image/png')).body.fileId
    const done = await run({ profileId: 'gpt', input: 'look', parts: [{ type: 'IMAGE', fileId: image }] })
    const events = t.subscribe(RunEventsDocument, { runId: done.id, afterSequence: 0 })
    await events.until((results) => results.some((r) => r.data?.runEvents.__typename === 'RunFinishedEvent'))
    events.unsubscribe()
    const base64 = PNG.toString('base64')
    expect(JSON.stringify(events.results)).not.toContain(base64)
    expect(logLines.join('\n')).not.toContain(base64)
  })
})

describe('files kept in PROMPTLINE_FILES_DIR', () => {
  let anthropic: FakeVendorServer
  let t: TestServer
  let vendors: VendorTestServer
  const dir = mkdtempSync(path.join(tmpdir(), 'promptline-files-'))
  beforeAll(async () => {
    vendors = await startWithFakeVendors(CATALOG, { app: { files: { dir, maxFileBytes: 1024 } } })
    ;({ t, anthropic } = vendors)
  })
  afterAll(() => vendors?.stop())

  it('writes the bytes to the directory, sends them from there, and keeps nothing of an upload over the cap', async () => {
    const { body } = await upload(t, PNG, 'image/png')
    const files = () =>
      readdirSync(dir, { recursive: true, withFileTypes: true })
        .filter((e) => e.isFile())
        .map((e) => e.name)
    expect(files()).toEqual([body.fileId])
    const sessionId = await createSession(t, 'parts-dir')
    await t.request(RunForAnswerDocument, {
      input: { sessionId, profileId: 'sonnet', input: 'look', parts: [{ type: 'IMAGE', fileId: body.fileId }] },
    })
    expect(anthropic.requests.at(-1)!.body.messages.at(-1).content[1].source.data).toBe(PNG.toString('base64'))
    expect((await upload(t, Buffer.alloc(2048, 1), 'image/png')).status).toBe(413)
    expect(files()).toEqual([body.fileId])
  })
})
