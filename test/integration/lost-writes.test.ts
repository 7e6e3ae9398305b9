import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Database, openDatabase } from '../../src/store/database.js'
import { migrate } from '../../src/store/migrator.js'
import { Store } from '../../src/store/store.js'
import { createTestDatabase, providers, type TestDatabase } from '../helpers/databases.js'

const LEASE_MS = 60_000

function deferred() {
  let resolve!: () => void
  const promise = new Promise<void>((settle) => {
    resolve = settle
  })
  return { promise, resolve }
}

describe.each(providers)('a transaction that fails never undoes a write acknowledged meanwhile (%s)', (provider) => {
  let database: TestDatabase
  let opened: Database
  let store: Store
  beforeAll(async () => {
    database = await createTestDatabase(provider)
    opened = await openDatabase(database.url)
    await migrate(opened)
    store = new Store(opened)
    const session = {
      title: null,
      defaultProfileId: null,
      metadata: null,
      keepHistory: true,
      webhookUrl: null,
      forkedFrom: null,
      sequenceCeiling: 0,
    }
    await store.sessions.create({ ...session, tenantId: 't', id: 'ceiling' })
    await store.sessions.create({ ...session, tenantId: 't', id: 'leased' })
    await store.profiles.save('t', 'doomed', { backendId: 'fake', model: 'm' })
    await opened.db.webhookDelivery.create({
      data: {
        id: 'run_r1',
        tenantId: 't',
        runId: 'r1',
        url: 'http://127.0.0.1:1/hook',
        event: 'run.finished',
        payload: {},
        status: 'PENDING',
        attempts: [],
        nextAttemptAt: new Date(0),
        createdAt: new Date(0),
      },
    })
  })
  afterAll(async () => {
    await store?.close()
    await database?.drop()
  })

  it('keeps sequence ceilings, leases, webhook claims, upserts and deletes acknowledged while another transaction was open', async () => {
    const open = deferred()
    const written = deferred()
    // the probe: a transaction that writes, stays open until the other writes are acknowledged (or
    // Prisma's timeout ends it, if they wait for it), then fails
    const failing = opened.db.$transaction(
      async (tx) => {
        await tx.session.update({ where: { tenantId_id: { tenantId: 't', id: 'ceiling' } }, data: { title: 'never' } })
        open.resolve()
        await written.promise
        throw new Error('the probe fails')
      },
      { timeout: 1_000 },
    )
    await open.promise
    const now = new Date()
    const acknowledged = await Promise.all([
      store.sessions.raiseSequenceCeiling('t', 'ceiling', 999),
      store.sessions.claimLease('t', 'leased', 'instance-a', LEASE_MS, true),
      store.webhooks.claim('run_r1', now, new Date(now.getTime() + LEASE_MS)),
      store.profiles.save('t', 'kept', { backendId: 'fake', model: 'm' }),
      store.profiles.delete('t', 'doomed'),
    ])
    written.resolve()
    expect(acknowledged.slice(1, 3)).toEqual(['instance-a', true])
    await expect(failing).rejects.toThrow()

    expect(await store.sessions.sequenceCeiling('t', 'ceiling')).toBe(999)
    expect((await store.sessions.find('t', 'ceiling'))!.title).toBeNull()
    // held: another instance cannot take the lease, and the claimed delivery is not due again
    expect(await store.sessions.claimLease('t', 'leased', 'instance-b', LEASE_MS, true)).toBe('instance-a')
    expect(await store.webhooks.due(now, 10)).toEqual([])
    expect((await store.profiles.find(['t'], 'kept')).map((row) => row.id)).toEqual(['kept'])
    expect(await store.profiles.find(['t'], 'doomed')).toEqual([])
  })
})
