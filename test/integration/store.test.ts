import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import type { SessionEvent } from '../../src/domain/events.js'
import type { QueueEntryRecord, RunRecord } from '../../src/domain/records.js'
import { openDatabase } from '../../src/store/database.js'
import { UniqueViolation } from '../../src/store/errors.js'
import { openStore, type Store } from '../../src/store/store.js'
import { createTestDatabase, providers, type TestDatabase } from '../helpers/databases.js'

const at = (ms: number) => new Date(Date.UTC(2026, 0, 2, 3, 4, 5) + ms).toISOString()

describe.each(providers)('records written by the store read back the same (%s)', (provider) => {
  let database: TestDatabase
  let store: Store
  beforeAll(async () => {
    database = await createTestDatabase(provider)
    store = await openStore(database.url)
    await store.sessions.create({
      tenantId: 't',
      id: 's',
      title: 'ü "quoted" \'s',
      defaultProfileId: null,
      metadata: { nested: [1, { a: null }] },
      forkedFrom: { sessionId: 'origin', atPosition: 4 },
      webhookUrl: null,
      keepHistory: true,
      sequenceCeiling: 0,
    })
  })
  afterAll(async () => {
    await store?.close()
    await database?.drop()
  })

  const run: RunRecord = {
    id: 'run-1',
    tenantId: 't',
    sessionId: 's',
    queueId: 'q-1',
    status: 'COMPLETED',
    promptId: 'p',
    promptVersion: 3,
    profileId: 'prof',
    backendId: 'b',
    model: 'm',
    definitionHash: 'd',
    renderedHash: 'r',
    settings: { temperature: 0, extra: { seed: 1 } },
    output: 'line 1\nline 2 "quoted" \u{1F600}',
    parsedOutput: 36,
    validation: { valid: false, errors: ['(root) must be object'], attempts: 3 },
    failoverAttempts: [
      { profileId: 'prof', backendId: 'b', model: 'm', outcome: 'FAILED', errorCode: 'RATE_LIMITED', durationMs: 12, attempt: 1 },
    ],
    alternatives: [
      {
        profileId: 'other',
        backendId: 'b2',
        model: 'm2',
        status: 'ABORTED',
        output: 'par',
        valid: null,
        errorCode: null,
        errorMessage: 'not selected',
      },
    ],
    usage: { inputTokens: 10, outputTokens: 20, cacheReadTokens: 4, cacheWriteTokens: 2, reasoningTokens: 3 },
    costUsd: 0.000123,
    priceTable: 'catalog',
    startedAt: at(0),
    firstTokenAt: at(15),
    finishedAt: at(1234),
    heartbeatAt: at(999),
    inFlightSince: at(1000),
    errorCode: null,
    errorMessage: null,
    terminalReason: 'COMPLETED',
    finishReason: 'REFUSAL',
    vendorFinishReason: 'stop',
    refusal: "I'm sorry, I can't help with that.",
    reasoning: { text: 'The user asks for help.', signature: 'EvMCCkYICxgCKkCH' },
    toolRounds: [
      {
        preamble: [],
        text: 'Let me look.',
        calls: [{ callId: 'call_1', name: 'lookup', arguments: '{"q":"hi"}', argumentErrors: [] }],
        results: [{ callId: 'call_1', output: 'found', isError: false, idempotencyKey: 'k', at: at(3) }],
        deadline: at(600_000),
        reasoning: null,
        usage: { inputTokens: 3, outputTokens: 1, cacheReadTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0 },
        attempt: 0,
      },
    ],
    promptLabel: 'production',
    splitBucket: 42,
    keyId: 'a1b2c3d4e5f60718',
    origin: 'GRAPHQL',
    tags: ['checkout', 'team:web'],
    replayOf: 'run-0',
    includes: [{ key: 'tone@beta', promptId: 'tone', version: 2, definitionHash: 'h' }],
    outputEnforcement: 'NATIVE',
    cache: {
      hit: true,
      sourceRunId: 'run-0',
      ageMs: 1500,
      sourceUsage: { inputTokens: 9, outputTokens: 8, cacheReadTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0 },
      sourceCostUsd: 0.01,
    },
  }

  it('keeps every field of a queue entry', async () => {
    const entry: QueueEntryRecord = {
      queueId: 'q-1',
      tenantId: 't',
      sessionId: 's',
      queueSequence: 1,
      priority: 2,
      status: 'QUEUED',
      request: { promptId: null, input: 'hi', variables: { a: [1] }, profileId: null, overrides: { maxTokens: 5 }, credentialEnv: null },
      requestBytes: 99,
      scheduleKey: 'k',
      fireAt: at(500),
      runId: null,
      error: null,
      unappliedSteerIds: [],
      idempotencyKey: null,
      idempotencyHash: null,
      queuedAt: at(0),
      startedAt: null,
      finishedAt: null,
    }
    await store.ledger.admit(entry, [])
    expect(await store.entries.find('t', 's', 'q-1')).toEqual(entry)
    const done = {
      ...entry,
      status: 'FAILED' as const,
      runId: 'run-1',
      error: { code: 'GENERATION', message: 'boom' },
      unappliedSteerIds: ['a', 'b'],
      startedAt: at(10),
      finishedAt: at(20),
    }
    await store.entries.update(done)
    expect(await store.entries.find('t', 's', 'q-1')).toEqual(done)
  })

  it('keeps events in order with their payloads, in batches larger than one statement', async () => {
    const events = Array.from(
      { length: 450 },
      (_, i): SessionEvent => ({
        type: 'TOKEN_DELTA',
        text: `tok ${i} "q" \u{1F600}`,
        attempt: i % 2,
        candidate: i % 3 ? null : 'p',
        tenantId: 't',
        sessionId: 's',
        runId: 'run-1',
        sequence: i + 1,
        at: at(i),
      }),
    )
    await store.events.append(events)
    expect(await store.events.after('t', 's', 0, 1000)).toEqual(events)
    expect((await store.events.forRun('t', 'run-1', 440, 1000)).map((e) => e.sequence)).toEqual([
      441, 442, 443, 444, 445, 446, 447, 448, 449, 450,
    ])
    expect(await store.events.maxSequence('t', 's')).toBe(450)
  })

  it('starts and ends a run in one transaction each, every field kept, and never ends it twice', async () => {
    const entry = (await store.entries.find('t', 's', 'q-1'))!
    const live: RunRecord = {
      ...run,
      status: 'PREPARING',
      output: null,
      parsedOutput: null,
      validation: null,
      failoverAttempts: [],
      alternatives: [],
      usage: null,
      costUsd: null,
      firstTokenAt: null,
      finishedAt: null,
      terminalReason: null,
    }
    const started: SessionEvent = {
      type: 'QUEUE_ENTRY',
      kind: 'STARTED',
      entry,
      tenantId: 't',
      sessionId: 's',
      runId: null,
      sequence: 460,
      at: at(460),
    }
    await store.ledger.start(live, { ...entry, status: 'STARTING', runId: 'run-1', error: null, finishedAt: null }, [started])
    expect(await store.runs.find('t', 'run-1')).toEqual(live)
    expect(await store.events.after('t', 's', 459, 1)).toEqual([started])
    expect(await store.entries.find('t', 's', 'q-1')).toMatchObject({ status: 'STARTING', runId: 'run-1' })
    for (const parsedOutput of ['36', [1, 'two'], { x: 1 }, true, null]) {
      await store.runs.update({ ...live, status: 'GENERATING', parsedOutput })
      expect((await store.runs.find('t', 'run-1'))!.parsedOutput).toEqual(parsedOutput)
    }
    const ended = { ...entry, status: 'COMPLETED' as const, runId: 'run-1', error: null, finishedAt: at(1234) }
    const message = {
      id: 'm-1',
      sessionId: 's',
      position: 1,
      role: 'assistant' as const,
      content: 'hi',
      parts: [{ type: 'IMAGE' as const, fileId: 'f-1', mediaType: 'image/png', sha256: 'ab', detail: 'LOW' as const }],
      toolCalls: [{ callId: 'call_1', name: 'lookup', arguments: '{"q":"hi"}' }],
      toolCallId: null,
      runId: 'run-1',
      interrupted: false,
      createdAt: at(5),
    }
    const finished: SessionEvent = { type: 'RUN_FINISHED', run, tenantId: 't', sessionId: 's', runId: 'run-1', sequence: 452, at: at(6) }
    const token = (sequence: number): SessionEvent => ({
      type: 'TOKEN_DELTA',
      text: 'hi',
      attempt: 0,
      candidate: null,
      tenantId: 't',
      sessionId: 's',
      runId: 'run-1',
      sequence,
      at: at(5),
    })
    // the events published before the end and not yet written go in its transaction
    expect(await store.ledger.finish({ run, entry: ended, messages: [message], events: [finished], earlier: [token(451)] })).toBe(true)
    expect(await store.runs.find('t', 'run-1')).toEqual(run)
    expect(await store.entries.find('t', 's', 'q-1')).toEqual(ended)
    expect(await store.sessions.messages('t', 's')).toEqual([message])
    expect(await store.events.forRun('t', 'run-1', 450, 10)).toEqual([token(451), finished])
    // a second end (a reaper racing the owner) writes nothing of itself, only the earlier events
    const again = { ...run, status: 'FAILED' as const, terminalReason: 'STALE' as const }
    const second = { ...finished, sequence: 453, run: again }
    expect(
      await store.ledger.finish({
        run: again,
        entry: { ...ended, status: 'FAILED' },
        messages: [{ ...message, id: 'm-2', position: 2 }],
        events: [second],
        earlier: [token(454)],
      }),
    ).toBe(false)
    expect(await store.runs.find('t', 'run-1')).toEqual(run)
    expect(await store.entries.find('t', 's', 'q-1')).toEqual(ended)
    expect(await store.sessions.messages('t', 's')).toHaveLength(1)
    expect(await store.events.forRun('t', 'run-1', 450, 10)).toEqual([token(451), finished, token(454)])
  })

  it('gives writes submitted together each its own outcome, a refused one failing alone', async () => {
    const base = (await store.entries.find('t', 's', 'q-1'))!
    const entry = (id: string, queueSequence: number): QueueEntryRecord => ({
      ...base,
      queueId: id,
      queueSequence,
      idempotencyKey: 'same-key',
    })
    const event = (sequence: number): SessionEvent => ({ ...delta, sequence })
    const delta: SessionEvent = {
      type: 'TOKEN_DELTA',
      text: 'x',
      attempt: 0,
      candidate: null,
      tenantId: 't',
      sessionId: 's',
      runId: 'run-1',
      sequence: 0,
      at: at(7),
    }
    // no await in between: submitted together. Two admissions of one idempotency key: one is
    // kept and the other refused by the unique index; which commits first is the pool's order
    const [first, second, events, lateEnd] = await Promise.allSettled([
      store.ledger.admit(entry('q-first', 10), []),
      store.ledger.admit(entry('q-second', 11), []),
      store.events.append([event(500), event(501)]),
      store.ledger.finish({ run: { ...run, status: 'FAILED' }, entry: null, messages: [], events: [event(502)], earlier: [] }),
    ])
    const [kept, refused] = first.status === 'fulfilled' ? [first, second] : [second, first]
    const [keptId, refusedId] = first.status === 'fulfilled' ? ['q-first', 'q-second'] : ['q-second', 'q-first']
    // and without a refusal, each row gets its own values
    await Promise.all([
      store.entries.update({ ...entry(keptId, 10), priority: 7 }),
      store.entries.update({ ...base, priority: 9 }),
      store.entries.update({ ...entry('q-absent', 12), priority: 1 }),
    ])
    expect((await store.entries.find('t', 's', keptId))!.priority).toBe(7)
    expect((await store.entries.find('t', 's', 'q-1'))!.priority).toBe(9)
    expect(await store.entries.find('t', 's', 'q-absent')).toBeNull()
    expect(kept.status).toBe('fulfilled')
    expect(refused).toMatchObject({ status: 'rejected', reason: expect.any(UniqueViolation) })
    expect(events.status).toBe('fulfilled')
    expect(lateEnd).toEqual({ status: 'fulfilled', value: false }) // the run had ended: nothing of it written
    expect(await store.entries.find('t', 's', keptId)).toMatchObject({ queueId: keptId })
    expect(await store.entries.find('t', 's', refusedId)).toBeNull()
    expect((await store.events.after('t', 's', 499, 10)).map((e) => e.sequence)).toEqual([500, 501])
  })

  it('starts and ends runs submitted together, every step of each written', async () => {
    const base = (await store.entries.find('t', 's', 'q-1'))!
    const ids = ['a', 'b', 'c']
    const entries = ids.map((id, i) => ({ ...base, queueId: `q-${id}`, queueSequence: 20 + i, idempotencyKey: null }))
    await Promise.all(entries.map((e) => store.ledger.admit(e, [])))
    const live = (id: string): RunRecord => ({ ...run, id: `run-${id}`, queueId: `q-${id}`, status: 'GENERATING', finishedAt: null })
    // each start is an insert then an update, each end an update whose count decides the rest
    await Promise.all(ids.map((id, i) => store.ledger.start(live(id), { ...entries[i]!, status: 'STARTING', runId: `run-${id}` }, [])))
    const ends = await Promise.all(
      ids.map((id, i) =>
        store.ledger.finish({
          run: { ...run, id: `run-${id}`, queueId: `q-${id}` },
          entry: { ...entries[i]!, status: 'COMPLETED', runId: `run-${id}`, finishedAt: at(2000) },
          messages: [
            {
              id: `m-${id}`,
              sessionId: 's',
              position: 10 + i,
              role: 'assistant',
              content: id,
              parts: [],
              toolCalls: [],
              toolCallId: null,
              runId: `run-${id}`,
              interrupted: false,
              createdAt: at(7),
            },
          ],
          events: [{ type: 'RUN_FINISHED', run, tenantId: 't', sessionId: 's', runId: `run-${id}`, sequence: 600 + i, at: at(8) }],
          earlier: [],
        }),
      ),
    )
    expect(ends).toEqual([true, true, true])
    for (const [i, id] of ids.entries()) {
      expect(await store.runs.find('t', `run-${id}`)).toMatchObject({ status: run.status, finishedAt: run.finishedAt })
      expect(await store.entries.find('t', 's', `q-${id}`)).toMatchObject({ status: 'COMPLETED', runId: `run-${id}` })
      expect((await store.events.forRun('t', `run-${id}`, 0, 10)).map((e) => e.sequence)).toEqual([600 + i])
    }
    expect((await store.sessions.messages('t', 's')).filter((m) => m.id !== 'm-1').map((m) => m.content)).toEqual(ids)
  })

  it('refuses to read a run whose JSON column does not hold what a run record says, naming the column and the row', async () => {
    const other = await openDatabase(database.url)
    try {
      await other.db.run.update({ where: { id: 'run-1' }, data: { failoverAttempts: { not: 'a list' } } })
    } finally {
      await other.close()
    }
    await expect(store.runs.find('t', 'run-1')).rejects.toThrow(/Run\.failoverAttempts of row 'run-1'/)
  })

  it.runIf(provider === 'postgresql')('goes on writing after the server closed its idle connections, and the process goes on', async () => {
    const delta = (sequence: number): SessionEvent => ({
      type: 'TOKEN_DELTA',
      text: 't',
      attempt: 0,
      candidate: null,
      tenantId: 't',
      sessionId: 's',
      runId: null,
      sequence,
      at: at(sequence),
    })
    await store.events.append([delta(900)]) // leaves a connection of the run path's pool idle
    const admin = new pg.Client({ connectionString: database.url })
    await admin.connect()
    try {
      const others = 'select pid from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()'
      const pids = (await admin.query<{ pid: number }>(others)).rows.map((r) => r.pid)
      expect(pids.length).toBeGreaterThan(0)
      await admin.query(`select pg_terminate_backend(pid) from (${others}) as closed`)
      // the backends have sent their goodbye once they are gone
      await vi.waitFor(async () =>
        expect((await admin.query('select 1 from pg_stat_activity where pid = any($1)', [pids])).rowCount).toBe(0),
      )
    } finally {
      await admin.end()
    }
    await store.events.append([delta(901)])
    expect((await store.events.after('t', 's', 899, 10)).map((e) => e.sequence)).toEqual([900, 901])
  })

  it('renews the leases of 1,500 held sessions at once, and only those its instance holds', async () => {
    const ids = Array.from({ length: 1_500 }, (_, i) => `held-${i}`)
    const held = new Date(Date.now() + 1_000)
    for (const id of ids) {
      await store.sessions.create({
        tenantId: 't',
        id,
        title: null,
        defaultProfileId: null,
        metadata: null,
        forkedFrom: null,
        webhookUrl: null,
        keepHistory: true,
        sequenceCeiling: 0,
        leaseOwner: id === 'held-7' ? 'instance-b' : 'instance-a',
        leaseExpiresAt: held,
      })
    }
    const renewed = await store.sessions.renewLeases('instance-a', 60_000, [...ids.map((id) => ({ tenantId: 't', id }))])
    expect(renewed).toHaveLength(1_499)
    expect(renewed.map((s) => s.id)).not.toContain('held-7')
    const lease = await store.sessions.leaseOf('t', 'held-1499')
    expect(lease!.expiresAt!.getTime()).toBeGreaterThan(held.getTime() + 30_000)
  })

  it("refuses to read a session whose fork is not what a session's fork says, naming the column and the row", async () => {
    const other = await openDatabase(database.url)
    try {
      await other.db.session.update({ where: { tenantId_id: { tenantId: 't', id: 's' } }, data: { forkedFrom: { sessionId: 7 } } })
    } finally {
      await other.close()
    }
    await expect(store.sessions.find('t', 's')).rejects.toThrow(/Session\.forkedFrom of row 's'/)
  })
})
