import type { Redis } from 'ioredis'
import type { Fanout } from './deployment-pubsub.js'

/** How often a waiter asks again without being told a slot was freed: a dead instance's slots lapse without a word. */
const RETRY_MS = 1_000

// Drops lapsed holders, then takes (or renews) ARGV[1]'s slot when it holds one or fewer than
// ARGV[2] are held; a slot lapses ARGV[3] ms after it was taken or renewed, by Redis's clock.
const TAKE_SCRIPT = `
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZSCORE', KEYS[1], ARGV[1]) or redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[1])
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
  return 1
end
return 0`

/** Where the slots are kept: Redis (every instance) or this process. */
interface SlotStore {
  /** Takes or renews `holder`'s slot of `keyId` if it has one or fewer than `limit` are held. */
  take(keyId: string, holder: string, limit: number, ttlMs: number): Promise<boolean>
  release(keyId: string, holder: string): Promise<void>
}

class MemorySlots implements SlotStore {
  private readonly byKey = new Map<string, Map<string, number>>()

  async take(keyId: string, holder: string, limit: number, ttlMs: number): Promise<boolean> {
    const now = Date.now()
    const holders = this.byKey.get(keyId) ?? new Map<string, number>()
    for (const [h, until] of holders) if (until <= now) holders.delete(h)
    if (!holders.has(holder) && holders.size >= limit) return false
    this.byKey.set(keyId, holders.set(holder, now + ttlMs))
    return true
  }

  async release(keyId: string, holder: string): Promise<void> {
    const holders = this.byKey.get(keyId)
    holders?.delete(holder)
    if (holders?.size === 0) this.byKey.delete(keyId)
  }
}

class RedisSlots implements SlotStore {
  constructor(
    private readonly client: Redis,
    private readonly prefix: string,
  ) {}

  async take(keyId: string, holder: string, limit: number, ttlMs: number): Promise<boolean> {
    return (await this.client.eval(TAKE_SCRIPT, 1, `${this.prefix}${keyId}`, holder, limit, ttlMs)) === 1
  }

  async release(keyId: string, holder: string): Promise<void> {
    await this.client.zrem(`${this.prefix}${keyId}`, holder)
  }
}

/**
 * A semaphore per key over every instance: a run takes one of its key's `concurrentRuns` slots
 * as it starts and gives it back as it ends. A slot is a lease: its holder renews it every third
 * of `ttlMs` while it runs, so a dead instance's slots come back within `ttlMs`. A waiter is
 * woken when a slot of its key is given back anywhere (the deployment link says so), and asks
 * again every second besides. Its owner calls `close()`.
 */
export class RunSlots {
  private readonly held = new Map<string, { keyId: string; holder: string }>()
  /** Each waiter's cancel. */
  private readonly waiters = new Set<() => void>()
  private renewal: NodeJS.Timeout | null = null

  private constructor(
    private readonly store: SlotStore,
    private readonly fanout: Fanout,
    /** How long a slot outlives its holder's last renewal: the stale bound. */
    private readonly ttlMs: number,
  ) {}

  static inMemory(fanout: Fanout, ttlMs: number): RunSlots {
    return new RunSlots(new MemorySlots(), fanout, ttlMs)
  }

  static inRedis(client: Redis, prefix: string, fanout: Fanout, ttlMs: number): RunSlots {
    return new RunSlots(new RedisSlots(client, prefix), fanout, ttlMs)
  }

  /** Takes a slot of `keyId` for `holder` (a queue entry), unless `limit` are held; renewed until released. */
  async take(keyId: string, holder: string, limit: number): Promise<boolean> {
    if (!(await this.store.take(keyId, holder, limit, this.ttlMs))) return false
    this.held.set(`${keyId}\n${holder}`, { keyId, holder })
    this.renewal ??= setInterval(() => this.renew(), Math.max(10, Math.floor(this.ttlMs / 3)))
    this.renewal.unref()
    return true
  }

  /** Gives a slot back, and tells every instance's waiters for its key. */
  async release(keyId: string, holder: string): Promise<void> {
    this.held.delete(`${keyId}\n${holder}`)
    if (this.held.size === 0 && this.renewal) {
      clearInterval(this.renewal)
      this.renewal = null
    }
    await this.store.release(keyId, holder)
    this.fanout.pubsub.publish('slotsFreed', keyId, holder)
  }

  /** Calls `wake` once: when a slot of `keyId` is given back, or after a second, whichever comes first. */
  whenFree(keyId: string, wake: () => void): void {
    const cancel = () => {
      stopListening()
      clearTimeout(timer)
      this.waiters.delete(cancel)
    }
    const woken = () => {
      cancel()
      wake()
    }
    const stopListening = this.fanout.listen('slotsFreed', keyId, woken)
    const timer = setTimeout(woken, RETRY_MS)
    timer.unref()
    this.waiters.add(cancel)
  }

  /** Stops renewing and waiting (at shutdown: a slot still held lapses by itself). */
  close(): void {
    if (this.renewal) clearInterval(this.renewal)
    this.renewal = null
    this.held.clear()
    for (const cancel of this.waiters) cancel()
  }

  /** Renews every slot held here (limit 0: only one already held); a renewal that fails leaves the slot to lapse. */
  private renew(): void {
    for (const { keyId, holder } of this.held.values()) void this.store.take(keyId, holder, 0, this.ttlMs).catch(() => false)
  }
}
