import type { Principal } from '../domain/access.js'
import type { KeyPolicy } from '../domain/api-keys.js'
import { type RateLimit, RateLimitedError, UnavailableError } from '../domain/errors.js'
import { type Count, CountersUnreachable, type KeyCounters, TOKENS_PER_MINUTE } from '../events/key-counters.js'

/** What a limit does while its shared counters cannot be reached (Redis away). */
export type WithoutCounters = 'deny' | 'allow'

const MINUTE_MS = 60_000
/** How soon to ask again while the counters are away. */
const UNREACHABLE_RETRY_MS = 1_000

/**
 * The rate limits of every key, on counters every instance shares (in Redis with one): a key's
 * own `requestsPerMinute`, else the server's mutations per second; its `tokensPerMinute`. While
 * Redis is away, a key with limits of its own is refused or let through as `withoutCounters`
 * says; the server's default limit lets it through.
 */
export class KeyLimiter {
  constructor(
    private readonly counters: KeyCounters,
    private readonly mutationsPerSecond: number,
    private readonly withoutCounters: WithoutCounters,
  ) {}

  /** Counts `points` requests (a mutation's root fields, or one REST request); throws RateLimitedError past the key's limit. */
  async countRequests(principal: Principal, points: number): Promise<void> {
    const perMinute = principal.policy?.limits?.requestsPerMinute ?? null
    if (perMinute !== null) {
      const count = this.counters.take('requests', principal.keyId, points, perMinute, MINUTE_MS)
      return this.judged(count, 'requestsPerMinute', `this key sent more than ${perMinute} requests in a minute`, true)
    }
    const perSecond = this.mutationsPerSecond
    const count = this.counters.take('mutations', principal.keyId, points, perSecond, 1_000)
    return this.judged(
      count,
      'mutationsPerSecond',
      `this key sent more than ${perSecond} mutations in a second (PROMPTLINE_MUTATIONS_PER_SECOND)`,
      false,
    )
  }

  /** Throws RateLimitedError while the key's ended runs have used its tokens of the current minute. */
  async requireTokens(keyId: string | null, policy: KeyPolicy | null): Promise<void> {
    const perMinute = policy?.limits?.tokensPerMinute ?? null
    if (keyId === null || perMinute === null) return
    const count = this.counters.room(TOKENS_PER_MINUTE.name, keyId, perMinute, TOKENS_PER_MINUTE.windowMs)
    return this.judged(count, 'tokensPerMinute', `this key's runs used its ${perMinute} tokens of this minute`, true)
  }

  private async judged(pending: Promise<Count>, limit: RateLimit, message: string, ownLimit: boolean): Promise<void> {
    let count: Count
    try {
      count = await pending
    } catch (error) {
      if (!(error instanceof CountersUnreachable)) throw error
      if (!ownLimit || this.withoutCounters === 'allow') return
      throw new UnavailableError('the shared rate counters cannot be reached (redis); try again shortly', UNREACHABLE_RETRY_MS)
    }
    if (!count.taken) throw new RateLimitedError(`${message}; try again in ${count.retryAfterMs} ms`, limit, count.retryAfterMs)
  }
}
