import { type ApiKeyEntry, LOCAL_PRINCIPAL, type Principal } from '../domain/access.js'
import type { ApiKeyRecord } from '../domain/api-keys.js'
import { sha256Hex } from '../domain/hash.js'
import type { Logger } from '../domain/logger.js'
import type { Fanout } from '../events/deployment-pubsub.js'
import type { ApiKeyStore } from '../store/api-key-store.js'

/** How long an instance trusts what it read of a stored key: a revocation elsewhere takes effect within this. */
const KEY_CACHE_MS = 1_000
/** A key's last use is written at most this often by one instance. */
const LAST_USE_WRITE_MS = 60_000
/** Secrets remembered at once (the answers to unknown ones too, so a flood of them costs one read a second each). */
const MAX_CACHED = 10_000

/** What one secret authenticated as when it was read; `stored` is false when no key has it. */
interface CachedSecret {
  principal: Principal | null
  stored: boolean
  until: number
}

/** A stored key's caller, while the key works (not revoked, not expired). */
function principalOf(key: ApiKeyRecord, now: number): Principal | null {
  if (key.revokedAt !== null || (key.expiresAt !== null && Date.parse(key.expiresAt) <= now)) return null
  const { tenantId, role, id, limits, budget, allowedProfiles, allowedPrompts, expiresAt } = key
  return { tenantId, role, keyId: id, policy: { limits, budget, allowedProfiles, allowedPrompts }, expiresAt }
}

/**
 * Who a secret is: a bootstrap key (PROMPTLINE_API_KEYS, by its sha256), or a key stored in the
 * database, read at most once a second per secret on each instance and forgotten at once when
 * any instance changes it (the deployment link carries the change). With no bootstrap keys the
 * server is open: a caller without a stored key is the local tenant.
 */
export class KeyRing {
  private readonly bootstrap: Map<string, Principal> | null
  private readonly cache = new Map<string, CachedSecret>()
  private readonly lastUseWritten = new Map<string, number>()
  private readonly endedListeners = new Set<(keyId: string) => void>()
  private readonly stopListening: () => void

  constructor(
    entries: readonly ApiKeyEntry[] | null,
    private readonly keys: ApiKeyStore,
    private readonly fanout: Fanout,
    private readonly logger: Logger,
    private readonly clock: () => number = Date.now,
  ) {
    this.bootstrap =
      entries && entries.length > 0
        ? new Map(entries.map((e) => [e.sha256, { ...e, keyId: e.sha256.slice(0, 16), policy: null, expiresAt: null }]))
        : null
    this.stopListening = fanout.listen('keyChanges', 'all', ({ keyId, ended }) => {
      this.cache.clear()
      if (ended) for (const listener of this.endedListeners) listener(keyId)
    })
  }

  /** True when no bootstrap keys are set: callers without a key are the local tenant. */
  get open(): boolean {
    return this.bootstrap === null
  }

  /** The caller of an `Authorization: Bearer <key>` value (the scheme is optional), or null. */
  async authenticate(authorization: unknown): Promise<Principal | null> {
    const secret = typeof authorization === 'string' ? authorization.replace(/^\s*bearer\s+/i, '').trim() : ''
    if (secret === '') return this.open ? LOCAL_PRINCIPAL : null
    const sha256 = sha256Hex(secret)
    const bootstrap = this.bootstrap?.get(sha256)
    if (bootstrap) return bootstrap
    const now = this.clock()
    let known = this.cache.get(sha256)
    if (!known || known.until <= now) {
      const key = await this.keys.findBySecret(sha256, new Date(now))
      known = { principal: key && principalOf(key, now), stored: key !== null, until: now + KEY_CACHE_MS }
      if (this.cache.size >= MAX_CACHED) this.cache.clear()
      this.cache.set(sha256, known)
    }
    const { principal } = known
    if (principal?.expiresAt && Date.parse(principal.expiresAt) <= now) return null
    if (principal) this.used(principal.keyId, now)
    // open: a stored key is itself, a revoked or expired one is refused, anything else is the local tenant
    return principal ?? (this.open && !known.stored ? LOCAL_PRINCIPAL : null)
  }

  /** Tells every instance (this one too) that a key changed; `ended` when it no longer works. */
  changed(keyId: string, ended: boolean): void {
    this.cache.clear()
    this.fanout.pubsub.publish('keyChanges', 'all', { keyId, ended })
  }

  /** Calls `listener` with each key revoked anywhere from now on, until the returned function is called. */
  onEnded(listener: (keyId: string) => void): () => void {
    this.endedListeners.add(listener)
    return () => this.endedListeners.delete(listener)
  }

  close(): void {
    this.stopListening()
  }

  /** Records that a key was used, at most once a minute per key from this instance; a failure is only logged. */
  private used(keyId: string, now: number): void {
    if ((this.lastUseWritten.get(keyId) ?? 0) > now - LAST_USE_WRITE_MS) return
    this.lastUseWritten.set(keyId, now)
    this.keys
      .used(keyId, new Date(now))
      .catch((error: Error) => this.logger.debug('could not record a key use', { keyId, error: error.message }))
  }
}
