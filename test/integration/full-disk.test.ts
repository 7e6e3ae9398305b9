import { execFileSync } from 'node:child_process'
import { closeSync, mkdtempSync, openSync, readdirSync, rmSync, writeSync } from 'node:fs'
import { tmpdir, userInfo } from 'node:os'
import path from 'node:path'
import Sqlite from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { CreateSessionDocument, EnqueuePromptDocument, RunDocument, RunPromptDocument, SessionDocument } from '../generated/graphql.js'
import { enqueue, waitForEntry } from '../helpers/flow.js'
import { startTestServer, type TestServer } from '../helpers/server.js'

const DISK_BYTES = 48 * 1024 * 1024
/** A word the fake model streams as one token, too large for what is left of a full disk. */
const LARGE_WORD = 'x'.repeat(1_000_000)

// mounting a file system takes root, as in CI
describe.skipIf(userInfo().uid !== 0)('a full disk under SQLite (a tmpfs the test mounts)', () => {
  let mount: string
  let server: TestServer
  const logLines: string[] = []
  const filler = () => path.join(mount, 'filler')
  const databaseFile = () => path.join(mount, 'promptline.db')

  beforeAll(async () => {
    mount = mkdtempSync(path.join(tmpdir(), 'promptline-disk-'))
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${DISK_BYTES}`, 'tmpfs', mount])
    server = await startTestServer({
      provider: 'sqlite',
      database: { provider: 'sqlite', url: `file:${databaseFile()}`, drop: async () => {} },
      app: { files: { dir: path.join(mount, 'files') }, requestLimits: { maxBodyBytes: 4 * 1024 * 1024 } },
      logLines,
    })
    await server.request(CreateSessionDocument, { input: { id: 'disk', defaultProfileId: 'fake-echo' } })
  })
  afterAll(async () => {
    await server?.stop()
    execFileSync('umount', [mount])
    rmSync(mount, { recursive: true, force: true })
  })

  /** Empties SQLite's write-ahead log, so every write must grow a file, then fills the disk to its last byte. */
  function fillTheDisk(): void {
    const checkpointing = new Sqlite(databaseFile())
    checkpointing.pragma('wal_checkpoint(TRUNCATE)')
    checkpointing.close()
    const fd = openSync(filler(), 'w')
    const chunk = Buffer.alloc(64 * 1024)
    try {
      for (;;) writeSync(fd, chunk)
    } catch (error) {
      expect((error as NodeJS.ErrnoException).code).toBe('ENOSPC')
    } finally {
      closeSync(fd)
    }
  }

  const enqueueLarge = (input: string, tokenDelayMs = 0) =>
    server.request(EnqueuePromptDocument, { input: { sessionId: 'disk', input, overrides: { extra: { tokenDelayMs } } } })

  it('answers STORAGE_FULL to admissions and uploads, keeps serving reads, keeps the database intact, and admits again once there is room', async () => {
    fillTheDisk()
    try {
      const refused = await enqueueLarge(`refused ${LARGE_WORD}`)
      expect(refused.errors?.[0]?.extensions).toEqual({ code: 'STORAGE_FULL' })
      const form = new FormData()
      form.append('file', new Blob([Buffer.alloc(512 * 1024, 1)], { type: 'application/pdf' }), 'big.pdf')
      const upload = await fetch(`${server.http.url}/files`, { method: 'POST', body: form })
      expect(upload.status).toBe(507)
      expect(((await upload.json()) as { error: { code: string } }).error.code).toBe('STORAGE_FULL')
      // nothing half-written: no partial upload left in the files folder
      const kept = readdirSync(path.join(mount, 'files'), { recursive: true }).map(String)
      expect(kept.filter((name) => name.endsWith('.partial'))).toEqual([])
      const read = await server.request(SessionDocument, { id: 'disk' })
      expect(read.data?.session?.queue).toEqual([])
    } finally {
      rmSync(filler())
    }
    const checked = new Sqlite(databaseFile(), { readonly: true })
    expect(checked.pragma('integrity_check')).toEqual([{ integrity_check: 'ok' }])
    checked.close()
    const ran = await server.request(RunPromptDocument, { input: { sessionId: 'disk', input: 'admitted once there is room' } })
    expect(ran.data?.runPrompt).toMatchObject({ run: { status: 'COMPLETED', output: 'admitted once there is room' } })
  }, 60_000)

  it('ends a run whose end finds the disk full FAILED with STORAGE_FULL, written once there is room, and goes on with the queue', async () => {
    // its large token comes a second after the disk is full
    const { queueId } = await enqueue(server, {
      sessionId: 'disk',
      input: `streaming ${LARGE_WORD}`,
      overrides: { extra: { tokenDelayMs: 1_000 } },
    })
    await waitForEntry(server, 'disk', queueId, ['RUNNING'])
    fillTheDisk()
    const next = await enqueueLarge('refused while full')
    expect(next.errors?.[0]?.extensions).toEqual({ code: 'STORAGE_FULL' })
    await vi.waitFor(() => expect(logLines.some((line) => line.includes('no room to write the end of a run'))).toBe(true), {
      timeout: 10_000,
      interval: 50,
    })
    rmSync(filler())
    const entry = await waitForEntry(server, 'disk', queueId, ['FAILED'], 20_000)
    const run = await server.request(RunDocument, { id: entry.runId! })
    // its answer stays on the row, out of the conversation
    expect(run.data?.run).toMatchObject({
      status: 'FAILED',
      terminalReason: 'ERROR',
      errorCode: 'STORAGE_FULL',
      output: `streaming ${LARGE_WORD}`,
    })
    const after = await server.request(RunPromptDocument, { input: { sessionId: 'disk', input: 'after the disk had room' } })
    expect(after.data?.runPrompt).toMatchObject({ run: { status: 'COMPLETED', output: 'after the disk had room' } })
  }, 60_000)
})
