import type { Redis } from 'ioredis'
import type { RateLimiterAbstract, RateLimiterRes } from 'rate-limiter-flexible'
import RateLimiterMemory from 'rate-limiter-flexible/lib/RateLimiterMemory.js'
import RateLimiterRedis from 'rate-limiter-flexible/lib/RateLimiterRedis.js'

/** A counter's answer: taken, or refused until `retryAfterMs` from now. */
export type Count = { taken: true } | { taken: false; retryAfterMs: number }

/** The counter a key's `tokensPerMinute` is kept in. */
export const TOKENS_PER_MINUTE = { name: 'tokens', windowMs: 60_000 } as const

/** Thrown when the counters cannot be reached (Redis away); what to do then is the caller's policy. */
export class CountersUnreachable extends Error {}

const refusedOrUnreachable = (refused: unknown): Count => {
  if (refused instanceof Error) throw new CountersUnreachable(refused.message)
  return { taken: false, retryAfterMs: Math.max(1, (refused as RateLimiterRes).msBeforeNext) }
}

/**
 * Fixed-window counters by key, shared by every instance that shares them: in Redis
 * (rate-limiter-flexible's atomic script, one round trip), or in this process's memory. One
 * limiter per (name, points, window), made at first use.
 */
export class KeyCounters {
  private readonly limiters = new Map<string, RateLimiterAbstract>()

  private constructor(private readonly make: (options: { keyPrefix: string; points: number; duration: number }) => RateLimiterAbstract) {}

  static inMemory(): KeyCounters {
    return new KeyCounters((options) => new RateLimiterMemory(options))
  }

  /** Counters in Redis under `prefix`; while the connection is not ready each call fails at once. */
  static inRedis(client: Redis, prefix: string): KeyCounters {
    return new KeyCounters(
      (options) =>
        new RateLimiterRedis({ storeClient: client, rejectIfRedisNotReady: true, ...options, keyPrefix: `${prefix}${options.keyPrefix}` }),
    )
  }

  /** Takes `points` of `key`'s window of `windowMs`, unless that passes `limit`. */
  async take(name: string, key: string, points: number, limit: number, windowMs: number): Promise<Count> {
    return this.limiter(name, limit, windowMs)
      .consume(key, points)
      .then((): Count => ({ taken: true }), refusedOrUnreachable)
  }

  /** Whether `key`'s window has room left, without taking any. */
  async room(name: string, key: string, limit: number, windowMs: number): Promise<Count> {
    const used = await this.limiter(name, limit, windowMs)
      .get(key)
      .catch((error: Error) => {
        throw new CountersUnreachable(error.message)
      })
    if (!used || used.consumedPoints < limit) return { taken: true }
    return { taken: false, retryAfterMs: Math.max(1, used.msBeforeNext) }
  }

  /** Adds `points` to `key`'s window even past its limit (what was spent is spent). */
  async debit(name: string, key: string, points: number, limit: number, windowMs: number): Promise<void> {
    await this.limiter(name, limit, windowMs).penalty(key, points)
  }

  private limiter(name: string, points: number, windowMs: number): RateLimiterAbstract {
    const id = `${name}:${points}:${windowMs}`
    let limiter = this.limiters.get(id)
    if (!limiter) {
      // the stored count is named without the limit, so changing a key's limit keeps its count
      limiter = this.make({ keyPrefix: `${name}:${windowMs}:`, points, duration: windowMs / 1000 })
      this.limiters.set(id, limiter)
    }
    return limiter
  }
}
