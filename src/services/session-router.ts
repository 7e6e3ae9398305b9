import { randomUUID } from 'node:crypto'
import * as domainErrors from '../domain/errors.js'
import { InternalError, PromptlineError, UnavailableError } from '../domain/errors.js'
import type { Logger } from '../domain/logger.js'
import type { DeploymentLink } from '../events/deployment-pubsub.js'
import type { SessionLeases } from '../queue/session-leases.js'
import type { SessionChange, SessionChanges, SessionOperations, SessionRead, SessionReads } from './session-operations.js'

type SessionOperation = SessionChange | SessionRead

/** Calls `op` of `on` with arguments as they arrived (from this instance, or parsed off the link). */
function invoke<T>(on: SessionOperations | SessionReads, op: SessionOperation, args: readonly unknown[]): Promise<T> {
  const method = (on as Record<SessionOperation, unknown>)[op] as ((...args: unknown[]) => Promise<T>) | undefined
  if (!method) throw new InternalError(`no ${op} here`)
  return method.apply(on, [...args])
}

interface Call {
  kind: 'call'
  id: string
  from: string
  tenantId: string
  sessionId: string
  op: SessionOperation
  args: unknown[]
  /** A read: answered only by an instance holding the session, which takes no lease for it. */
  read: boolean
}
type Answer = { kind: 'answer'; id: string } & ({ value: unknown } | { error: SentError } | { notOwner: true })
interface SentError {
  name: string
  message: string
  fields: Record<string, unknown>
}

/** A call reached an instance that no longer owns the session: ask again. */
class NotOwner extends Error {}

/** When a call that could not reach the session's holder may be asked again (ms). */
const RETRY_AFTER_MS = 1000
const READ_TIMEOUT_MS = 5_000

/** Attempts at finding the session's owner before a call gives up. */
const MAX_ATTEMPTS = 6

/** Returns when the call should be asked again (it reached an instance that no longer holds the session); throws otherwise. */
function askAgainOrThrow(error: unknown, attempt: number): void {
  if (!(error instanceof NotOwner)) throw error
  if (attempt + 1 >= MAX_ATTEMPTS) throw new InternalError('the session is moving between instances; try again')
}

type ErrorClass = { name: string; prototype: PromptlineError }
const ERROR_CLASSES = new Map<string, ErrorClass>(
  (Object.values(domainErrors) as unknown[])
    .filter((value): value is ErrorClass => typeof value === 'function' && value.prototype instanceof PromptlineError)
    .map((cls) => [cls.name, cls]),
)

/** A domain error as it crossed the wire: the same class, code and fields; anything else is INTERNAL. */
function received({ name, message, fields }: SentError): Error {
  const cls = ERROR_CLASSES.get(name)
  if (!cls) return new InternalError(message)
  return Object.assign(Object.create(cls.prototype) as PromptlineError, fields, { message })
}

function sent(error: unknown): SentError {
  if (error instanceof PromptlineError) return { name: error.name, message: error.message, fields: { ...error } }
  return { name: 'InternalError', message: 'the instance that owns this session failed; see its log', fields: {} }
}

/**
 * Runs a session's use cases where it lives: at the instance holding its lease. A change runs
 * here when this instance holds or can take the lease, else at the holder, asked through the
 * deployment's link, whose answer (value or typed error) comes back the same way. A read never
 * takes the lease: it is answered here or by the holder, or from the store when nobody holds the
 * session. One instance alone is the same code with one host. Both sides call one typed
 * `SessionOperations`: this instance's `SessionHost`.
 */
export class SessionRouter {
  private readonly waiting = new Map<string, { settle: (answer: Answer) => void }>()
  private unsubscribe: (() => void) | null = null

  constructor(
    private readonly ownership: SessionLeases,
    /** How the instances reach each other. */
    private readonly link: DeploymentLink,
    private readonly logger: Logger,
    /** The sessions this instance holds. */
    private readonly host: SessionOperations,
    /** The reads of a session nobody holds. */
    private readonly stored: SessionReads,
  ) {}

  /** Starts answering calls from other instances. */
  async start(): Promise<void> {
    const { fanout, instanceId } = this.link
    this.unsubscribe = fanout.listen('calls', instanceId, (message) => {
      const m = message as Call | Answer
      if (m.kind === 'answer') this.waiting.get(m.id)?.settle(m)
      else void this.answer(m)
    })
    await fanout.heard('calls', instanceId)
  }

  /** Runs change `op` at the session's owner; `timeoutMs` bounds the wait for another instance. */
  async change<K extends SessionChange>(
    tenantId: string,
    sessionId: string,
    op: K,
    args: Parameters<SessionChanges[K]>,
    timeoutMs = 30_000,
  ): Promise<Awaited<ReturnType<SessionChanges[K]>>> {
    for (let attempt = 0; ; attempt++) {
      const claim = await this.ownership.claim(tenantId, sessionId)
      // no owner: no such session; the host answers NOT_FOUND
      if (claim.mine || claim.owner === null) return invoke<Awaited<ReturnType<SessionChanges[K]>>>(this.host, op, args)
      try {
        return (await this.ask(claim.owner, { tenantId, sessionId, op, args, read: false }, timeoutMs)) as Awaited<
          ReturnType<SessionChanges[K]>
        >
      } catch (error) {
        askAgainOrThrow(error, attempt)
      }
    }
  }

  /**
   * Answers read `op` where the session is held, or from the store when nobody holds it; takes no
   * lease. A holder answers a read at once: one that does not within `READ_TIMEOUT_MS` missed the
   * call (its Redis connection was just back, say), and UNAVAILABLE says to ask again.
   */
  async read<K extends SessionRead>(
    tenantId: string,
    sessionId: string,
    op: K,
    args: Parameters<SessionReads[K]>,
  ): Promise<Awaited<ReturnType<SessionReads[K]>>> {
    let refused: string | null = null
    for (let attempt = 0; ; attempt++) {
      if (this.ownership.holds(tenantId, sessionId)) return invoke<Awaited<ReturnType<SessionReads[K]>>>(this.host, op, args)
      const holder = await this.ownership.leaseHolder(tenantId, sessionId)
      // an instance that just said it does not hold the session has let it lapse: all of it is written
      if (holder === null || holder === refused) return invoke<Awaited<ReturnType<SessionReads[K]>>>(this.stored, op, args)
      try {
        return (await this.ask(holder, { tenantId, sessionId, op, args, read: true }, READ_TIMEOUT_MS)) as Awaited<
          ReturnType<SessionReads[K]>
        >
      } catch (error) {
        askAgainOrThrow(error, attempt)
        refused = holder
      }
    }
  }

  private ask(owner: string, call: Pick<Call, 'tenantId' | 'sessionId' | 'op' | 'args' | 'read'>, timeoutMs: number): Promise<unknown> {
    const { fanout, instanceId } = this.link
    if (!this.link.reachable)
      return Promise.reject(new UnavailableError('the instance that holds this session cannot be reached now; try again', RETRY_AFTER_MS))
    const id = randomUUID()
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting.delete(id)
        reject(new UnavailableError('the instance that holds this session did not answer in time; try again', RETRY_AFTER_MS))
      }, timeoutMs)
      this.waiting.set(id, {
        settle: (answer) => {
          clearTimeout(timer)
          this.waiting.delete(id)
          if ('value' in answer) resolve(answer.value)
          else if ('error' in answer) reject(received(answer.error))
          else reject(new NotOwner())
        },
      })
      fanout.pubsub.publish('calls', owner, { kind: 'call', id, from: instanceId, ...call } satisfies Call)
    })
  }

  private async answer(call: Call): Promise<void> {
    let answer: Answer
    try {
      const { tenantId, sessionId } = call
      const mine = call.read ? this.ownership.holds(tenantId, sessionId) : (await this.ownership.claim(tenantId, sessionId)).mine
      if (!mine) answer = { kind: 'answer', id: call.id, notOwner: true }
      else answer = { kind: 'answer', id: call.id, value: (await invoke(this.host, call.op, call.args)) ?? null }
    } catch (error) {
      if (!(error instanceof PromptlineError)) this.logger.error('a routed call failed', { op: call.op, error: (error as Error).message })
      answer = { kind: 'answer', id: call.id, error: sent(error) }
    }
    this.link.fanout.pubsub.publish('calls', call.from, answer)
  }

  close(): void {
    this.unsubscribe?.()
    for (const { settle } of this.waiting.values()) settle({ kind: 'answer', id: '', error: sent(new InternalError('shutting down')) })
  }
}
