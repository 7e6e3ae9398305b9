import { randomUUID } from 'node:crypto'
import * as domainErrors from '../domain/errors.js'
import { InternalError, PromptlineError } from '../domain/errors.js'
import type { Logger } from '../domain/logger.js'
import type { DeploymentLink } from '../events/deployment-pubsub.js'
import type { SessionLeases } from '../queue/session-leases.js'
import type { SessionOperation, SessionOperations } from './session-operations.js'

interface Call {
  kind: 'call'
  id: string
  from: string
  tenantId: string
  sessionId: string
  op: SessionOperation
  args: unknown[]
}
type Answer = { kind: 'answer'; id: string } & ({ value: unknown } | { error: SentError } | { notOwner: true })
interface SentError {
  name: string
  message: string
  fields: Record<string, unknown>
}

/** A call reached an instance that no longer owns the session: ask again. */
class NotOwner extends Error {}

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
 * Runs a session's use cases where its queue lives (DESIGN §6): at the session's owner (its lease
 * holder). That is this instance when it holds or can take the lease, else the owner, asked
 * through the deployment's link, whose answer (value or typed error) comes back the same way. One
 * instance alone is the same code with one host. Each operation of `SessionOperations` is
 * registered once with `handle`.
 */
export class SessionRouter {
  private readonly handlers: Partial<SessionOperations> = {}
  private readonly waiting = new Map<string, { settle: (answer: Answer) => void }>()
  private unsubscribe: (() => void) | null = null

  constructor(
    private readonly ownership: SessionLeases,
    /** How the instances reach each other. */
    private readonly link: DeploymentLink,
    private readonly logger: Logger,
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

  handle<K extends SessionOperation>(op: K, handler: SessionOperations[K]): void {
    this.handlers[op] = handler
  }

  /** Runs `op` with `args` at the session's owner; `timeoutMs` bounds the wait for another instance. */
  async call<K extends SessionOperation>(
    tenantId: string,
    sessionId: string,
    op: K,
    args: Parameters<SessionOperations[K]>,
    timeoutMs = 30_000,
  ): Promise<Awaited<ReturnType<SessionOperations[K]>>> {
    for (let attempt = 0; ; attempt++) {
      const claim = await this.ownership.claim(tenantId, sessionId)
      // no owner: no such session; the handler here answers NOT_FOUND
      if (claim.mine || claim.owner === null) return this.runHere(op, args)
      try {
        return (await this.ask(claim.owner, { tenantId, sessionId, op, args }, timeoutMs)) as Awaited<ReturnType<SessionOperations[K]>>
      } catch (error) {
        if (!(error instanceof NotOwner) || attempt >= 5)
          throw error instanceof NotOwner ? new InternalError('the session is moving between instances; try again') : error
      }
    }
  }

  /** Runs a registered operation in this instance. */
  private runHere<K extends SessionOperation>(op: K, args: unknown[]): Promise<Awaited<ReturnType<SessionOperations[K]>>> {
    const handler = this.handlers[op] as ((...args: unknown[]) => Promise<Awaited<ReturnType<SessionOperations[K]>>>) | undefined
    if (!handler) throw new InternalError(`no handler for ${op}`)
    return handler(...args)
  }

  private ask(owner: string, call: Pick<Call, 'tenantId' | 'sessionId' | 'op' | 'args'>, timeoutMs: number): Promise<unknown> {
    const { fanout, instanceId } = this.link
    const id = randomUUID()
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting.delete(id)
        reject(new InternalError('the instance that runs this session did not answer in time; try again'))
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
      const claim = await this.ownership.claim(call.tenantId, call.sessionId)
      if (!claim.mine || !(call.op in this.handlers)) answer = { kind: 'answer', id: call.id, notOwner: true }
      else answer = { kind: 'answer', id: call.id, value: (await this.runHere(call.op, call.args)) ?? null }
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
