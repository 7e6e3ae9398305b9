import { QueueFullError } from '../domain/errors.js'
import type { QueueLimits } from '../domain/limits.js'
import type { SessionActor } from './session-actor.js'

/**
 * The admission limits: per session (outstanding prompts and steers, and their
 * bytes) and server-wide (admitted prompts not yet started, and their bytes). Over any of them
 * a prompt or steer is refused with QueueFullError before anything is written.
 */
export class AdmissionLimits {
  private pending = { count: 0, bytes: 0 }

  constructor(readonly limits: QueueLimits) {}

  /** Throws QueueFullError when adding `addedCount` items of `addedBytes` would pass a limit. */
  check(actor: SessionActor, addedBytes: number, addedCount: number): void {
    const { limits } = this
    const session = actor.usage()
    const refuse = (limit: string, what: string) => {
      throw new QueueFullError(`${what}; nothing was queued`, limit)
    }
    if (session.count + addedCount > limits.maxOutstandingPerSession) {
      refuse(
        'maxOutstandingPerSession',
        `session '${actor.sessionId}' already has ${session.count} outstanding prompts and steers (limit ${limits.maxOutstandingPerSession})`,
      )
    }
    if (session.bytes + addedBytes > limits.maxOutstandingBytesPerSession) {
      refuse(
        'maxOutstandingBytesPerSession',
        `session '${actor.sessionId}' would hold more than ${limits.maxOutstandingBytesPerSession} outstanding bytes`,
      )
    }
    if (this.pending.count + addedCount > limits.maxPendingAdmissions) {
      refuse('maxPendingAdmissions', `the server already has ${this.pending.count} prompts waiting (limit ${limits.maxPendingAdmissions})`)
    }
    if (this.pending.bytes + addedBytes > limits.maxPendingBytes) {
      refuse('maxPendingBytes', `the server would hold more than ${limits.maxPendingBytes} waiting bytes`)
    }
  }

  /** Counts an admitted prompt as waiting (`count` 0 for a replaced scheduled prompt's new bytes). */
  reserve(bytes: number, count = 1): void {
    this.pending.count += count
    this.pending.bytes += bytes
  }

  /** Stops counting a prompt as waiting: it started, or was cancelled. */
  release(bytes: number, count = 1): void {
    this.pending.count -= count
    this.pending.bytes -= bytes
  }
}
