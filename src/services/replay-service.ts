import { randomUUID } from 'node:crypto'
import type { Principal } from '../domain/access.js'
import { parseInput } from '../domain/definitions.js'
import { InvalidRequestError, NotFoundError } from '../domain/errors.js'
import { sha256Hex } from '../domain/hash.js'
import { isTerminalRun } from '../domain/lifecycles.js'
import type { QueueEntryRecord, RunRecord, RunRequest } from '../domain/records.js'
import type { Store } from '../store/store.js'
import { type RunService, recordIdSchema } from './run-service.js'
import type { SessionService } from './session-service.js'

/** A stored request as a client would send it again: what it asked, not what admission made of it. */
function askedAgain(stored: RunRequest): Record<string, unknown> {
  const { admission, webhookUrl, replayOf, promptVersion, promptLabel, tools, ...asked } = stored
  const version = promptVersion ?? admission?.promptVersion
  // the prompt at the version the run ran, unless the caller asks for another
  const promptRef = asked.promptId === null ? null : { id: asked.promptId, ...(version != null ? { version } : { label: promptLabel }) }
  return { ...asked, promptId: null, promptRef, ...tools }
}

/**
 * Replays: a finished run's stored request admitted again, with another prompt version, label or
 * profile when asked, so two versions meet the same inputs; into a given session, or into a fork
 * of the run's own session as it was when the run started.
 */
export class ReplayService {
  constructor(
    private readonly store: Store,
    private readonly sessions: SessionService,
    private readonly runs: RunService,
  ) {}

  async replay(principal: Principal, input: Record<string, unknown>): Promise<QueueEntryRecord> {
    const { tenantId } = principal
    const { runId, promptRef, profileId, sessionId, idempotencyKey } = input
    const id = parseInput(recordIdSchema, runId, 'input.runId')
    // as the run is now: a run still starting may have no row yet
    const source = await this.runs.run(tenantId, id, 'input.runId')
    if (!source) throw new NotFoundError('run', id)
    if (!isTerminalRun(source.status)) throw InvalidRequestError.at('input.runId', `run '${id}' has not ended yet`)
    const stored = await this.store.runs.requestOf(tenantId, id)
    if (!stored) throw InvalidRequestError.at('input.runId', `run '${id}' ran before runs kept their requests; it cannot be replayed`)
    const request = {
      ...askedAgain(stored),
      ...(promptRef != null && { promptRef }),
      ...(profileId != null && { profileId }),
      sessionId: sessionId ?? (await this.forkOf(principal, source, idempotencyKey)),
      idempotencyKey,
    }
    return this.runs.enqueue(principal, request, 'ENQUEUE', id)
  }

  /**
   * A fork of the run's session with the history it had when the run started. With an
   * idempotency key the fork's id comes from it, so a retry finds its fork and its entry.
   */
  private async forkOf(principal: Principal, run: RunRecord, idempotencyKey: unknown): Promise<string> {
    const { tenantId } = principal
    if (run.sessionId === null) throw InvalidRequestError.at('input.sessionId', `run '${run.id}' has no session: name one`)
    const newSessionId =
      typeof idempotencyKey === 'string' ? `replay-${sha256Hex(`${run.id}\u0000${idempotencyKey}`).slice(0, 32)}` : `replay-${randomUUID()}`
    const history = await this.sessions.messages(tenantId, run.sessionId)
    const atPosition = history.filter((m) => m.createdAt < run.startedAt).at(-1)?.position ?? 0
    // a retry forks the same session at the same place, and so finds the fork it made
    return (await this.sessions.fork(tenantId, { sessionId: run.sessionId, atPosition, newSessionId })).id
  }
}
