import { randomUUID } from 'node:crypto'
import { z } from 'zod'
import type { Catalog } from '../catalog/catalog.js'
import { idSchema, parseInput } from '../domain/definitions.js'
import { InvalidRequestError, NotFoundError } from '../domain/errors.js'
import { boundedJsonObject } from '../domain/json-bounds.js'
import type { MessageRecord, QueueEntryView, SessionFork, SessionRecord, SessionStatus } from '../domain/records.js'
import { type WebhookSigners, webhookUrlSchema } from '../domain/webhooks.js'
import type { PromptQueue } from '../queue/prompt-queue.js'
import { UniqueViolation } from '../store/errors.js'
import type { Totals } from '../store/run-store.js'
import type { SessionMemory } from '../store/session-memory.js'
import type { SessionCursor } from '../store/session-store.js'
import type { Store } from '../store/store.js'
import type { SessionRouter } from './session-router.js'

const createSessionSchema = z.strictObject({
  id: idSchema.nullish(),
  title: z.string().max(1024).nullish(),
  defaultProfileId: idSchema.nullish(),
  metadata: boundedJsonObject().nullish(),
  keepHistory: z.boolean().nullish(),
  webhookUrl: webhookUrlSchema.nullish(),
})

const forkSessionSchema = z.strictObject({
  sessionId: idSchema,
  atPosition: z.number().int().min(0),
  newSessionId: idSchema.nullish(),
})

/**
 * Use cases around sessions: create, list, read the conversation and the queue, delete. Those
 * that read or change what the session's owner keeps in memory run there, through the router.
 */
export class SessionService {
  constructor(
    private readonly store: Store,
    private readonly memory: SessionMemory,
    private readonly catalog: Catalog,
    private readonly queue: PromptQueue,
    private readonly router: SessionRouter,
    private readonly signers: WebhookSigners,
  ) {}

  async create(tenantId: string, input: unknown): Promise<SessionRecord> {
    const parsed = parseInput(createSessionSchema, input, 'input')
    if (parsed.defaultProfileId && !(await this.catalog.getProfile(tenantId, parsed.defaultProfileId))) {
      throw new NotFoundError('profile', parsed.defaultProfileId)
    }
    if (parsed.webhookUrl) this.signers.requireFor(tenantId, 'input.webhookUrl')
    return this.open(tenantId, parsed, [], null)
  }

  /**
   * A new session with the settings of another and its history up to `atPosition` (0: none),
   * copied in one transaction; the source is not changed. A run going on in the source adds
   * nothing to the fork. A retry with the same `newSessionId` answers the fork it made.
   */
  async fork(tenantId: string, input: unknown): Promise<SessionRecord> {
    const { sessionId, atPosition, newSessionId } = parseInput(forkSessionSchema, input, 'input')
    if (newSessionId) {
      const made = await this.get(tenantId, newSessionId)
      if (made?.forkedFrom?.sessionId === sessionId && made.forkedFrom.atPosition === atPosition) return made
    }
    const source = await this.require(tenantId, sessionId, 'input.sessionId')
    const history = await this.messages(tenantId, sessionId)
    if (atPosition > 0 && !history.some((m) => m.position === atPosition)) {
      throw InvalidRequestError.at('input.atPosition', `session '${sessionId}' has no message at position ${atPosition}`)
    }
    const { title, defaultProfileId, keepHistory, webhookUrl } = source
    const metadata = source.metadata as Record<string, unknown> | null
    const id = newSessionId ?? randomUUID()
    const copied = history.filter((m) => m.position <= atPosition).map((m) => ({ ...m, id: randomUUID(), sessionId: id }))
    const settings = { id, title, defaultProfileId, metadata, keepHistory, webhookUrl }
    return this.open(tenantId, settings, copied, { sessionId, atPosition }, 'input.newSessionId')
  }

  private async open(
    tenantId: string,
    parsed: z.infer<typeof createSessionSchema>,
    history: MessageRecord[],
    forkedFrom: SessionFork | null,
    idField = 'input.id',
  ): Promise<SessionRecord> {
    const id = parsed.id ?? randomUUID()
    const lease = this.queue.newLease()
    try {
      const session = await this.store.sessions.create({
        tenantId,
        id,
        title: parsed.title ?? null,
        defaultProfileId: parsed.defaultProfileId ?? null,
        metadata: parsed.metadata ?? null,
        keepHistory: parsed.keepHistory ?? true,
        webhookUrl: parsed.webhookUrl ?? null,
        forkedFrom,
        sequenceCeiling: this.queue.firstSequenceCeiling,
        ...lease,
        history,
      })
      this.memory.remember(session)
      this.queue.created(tenantId, id, lease, history)
      return session
    } catch (error) {
      if (error instanceof UniqueViolation) throw InvalidRequestError.at(idField, `a session '${id}' already exists`)
      throw error
    }
  }

  /**
   * A session by id; `field` names the argument in a validation error. From memory where this
   * instance holds the session (every change goes through it), else from the store: another
   * instance may have deleted it.
   */
  get(tenantId: string, id: string, field = 'id'): Promise<SessionRecord | null> {
    const sessionId = parseInput(idSchema, id, field)
    return this.queue.holds(tenantId, sessionId) ? this.memory.find(tenantId, sessionId) : this.store.sessions.find(tenantId, sessionId)
  }

  async require(tenantId: string, id: string, field = 'sessionId'): Promise<SessionRecord> {
    const session = await this.get(tenantId, id, field)
    if (!session) throw new NotFoundError('session', id)
    return session
  }

  list(tenantId: string, after: SessionCursor | null, take: number): Promise<SessionRecord[]> {
    return this.store.sessions.list(tenantId, after, take)
  }

  /** Cancels the session's whole queue (aborting its running entry), then deletes it. */
  async delete(tenantId: string, id: string): Promise<string> {
    await this.require(tenantId, id, 'id')
    return this.router.change(tenantId, id, 'deleteSession', [tenantId, id])
  }

  messages(tenantId: string, sessionId: string): Promise<MessageRecord[]> {
    return this.router.read(tenantId, sessionId, 'messages', [tenantId, sessionId])
  }

  /** Usage and cost over all the tenant's runs. */
  tenantTotals(tenantId: string): Promise<Totals> {
    return this.store.runs.totals(tenantId)
  }

  /** Usage and cost over each session's runs, in the order of `sessionIds`. */
  sessionTotals(tenantId: string, sessionIds: readonly string[]): Promise<Totals[]> {
    return this.store.runs.totalsBySession(tenantId, sessionIds)
  }

  status(tenantId: string, sessionId: string): Promise<SessionStatus> {
    return this.router.read(tenantId, sessionId, 'status', [tenantId, sessionId])
  }

  /** The sequence of the last event of the session's stream (0 before any), from its owner. */
  lastSequence(tenantId: string, sessionId: string): Promise<number> {
    return this.router.read(tenantId, sessionId, 'lastSequence', [tenantId, sessionId])
  }

  /** Terminal entries (when asked) from the store, then the outstanding ones live, in queueSequence order. */
  queueOf(tenantId: string, sessionId: string, includeTerminal: boolean): Promise<QueueEntryView[]> {
    return this.router.read(tenantId, sessionId, 'queueOf', [tenantId, sessionId, includeTerminal])
  }
}
