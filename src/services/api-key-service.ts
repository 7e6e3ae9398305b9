import type { Principal } from '../domain/access.js'
import { type ApiKeyRecord, createKeySchema, newKeyId, newSecret, rotateKeySchema, updateKeySchema } from '../domain/api-keys.js'
import type { KeyBudgetUsage } from '../domain/budgets.js'
import { parseInput } from '../domain/definitions.js'
import { ForbiddenError, NotFoundError } from '../domain/errors.js'
import { sha256Hex } from '../domain/hash.js'
import type { ApiKeyStore } from '../store/api-key-store.js'
import type { BudgetGuard } from './budget-guard.js'
import type { KeyRing } from './key-ring.js'

/** A key with its secret: answered once, at creation or rotation. */
export interface KeyWithSecret {
  key: ApiKeyRecord
  secret: string
}

/**
 * API keys stored in the database: an admin key manages its tenant's keys; any other key sees
 * and rotates only itself. Every change reaches every instance at once through the ring.
 */
export class ApiKeyService {
  constructor(
    private readonly keys: ApiKeyStore,
    private readonly ring: KeyRing,
    private readonly budgets: BudgetGuard,
  ) {}

  async create(principal: Principal, input: unknown): Promise<KeyWithSecret> {
    const { role, name, expiresAt, limits, budget, allowedProfiles, allowedPrompts } = parseInput(createKeySchema, input, 'input')
    const { secret, prefix } = newSecret()
    const key = await this.keys.create({
      id: newKeyId(),
      tenantId: principal.tenantId,
      name,
      prefix,
      role,
      secretSha256: sha256Hex(secret),
      expiresAt: expiresAt ?? null,
      limits: limits ?? null,
      budget: budget ?? null,
      allowedProfiles: allowedProfiles ?? null,
      allowedPrompts: allowedPrompts ?? null,
    })
    return { key, secret }
  }

  /** A page of the tenant's keys, newest first (an admin); only the caller's own key otherwise. */
  async list(principal: Principal, after: { createdAt: string; id: string } | null, take: number): Promise<ApiKeyRecord[]> {
    if (principal.role === 'admin') return this.keys.list(principal.tenantId, after, take)
    const own = after === null ? await this.keys.find(principal.tenantId, principal.keyId) : null
    return own ? [own] : []
  }

  /** The caller's own stored key; null for a bootstrap key or the local tenant. */
  /** Whether a caller must send a key; false on an open server (no bootstrap keys). */
  get keysRequired(): boolean {
    return !this.ring.open
  }

  viewerKey(principal: Principal): Promise<ApiKeyRecord | null> {
    return principal.policy === null ? Promise.resolve(null) : this.keys.find(principal.tenantId, principal.keyId)
  }

  /** Keys' cost budgets with their current window's spend, in the order given; null for a key without one. */
  budgetUsages(keys: readonly ApiKeyRecord[]): Promise<(KeyBudgetUsage | null)[]> {
    return this.budgets.keyUsages(keys)
  }

  async update(principal: Principal, input: unknown): Promise<ApiKeyRecord> {
    const { id, ...changes } = parseInput(updateKeySchema, input, 'input')
    const key = this.found(await this.keys.update(principal.tenantId, id, changes), id)
    this.ring.changed(id, key.expiresAt !== null && Date.parse(key.expiresAt) <= Date.now())
    return key
  }

  /** A new secret for a key (an admin: any of the tenant's; else only the caller's own); the old one works for `graceSeconds` more. */
  async rotate(principal: Principal, input: unknown): Promise<KeyWithSecret> {
    const { id, graceSeconds } = parseInput(rotateKeySchema, input, 'input')
    if (principal.role !== 'admin' && id !== principal.keyId) throw new ForbiddenError('a key that is not admin may rotate only itself')
    const { secret, prefix } = newSecret()
    const graceEndsAt = graceSeconds ? new Date(Date.now() + graceSeconds * 1000) : null
    const key = this.found(await this.keys.rotate(principal.tenantId, id, { sha256: sha256Hex(secret), prefix }, graceEndsAt), id)
    this.ring.changed(id, false)
    return { key, secret }
  }

  /** Revokes a key: every instance refuses it within a second and closes its subscriptions. */
  async revoke(principal: Principal, id: string): Promise<ApiKeyRecord> {
    const key = this.found(await this.keys.revoke(principal.tenantId, parseInput(updateKeySchema.shape.id, id, 'input.id'), new Date()), id)
    this.ring.changed(id, true)
    return key
  }

  private found(key: ApiKeyRecord | null, id: string): ApiKeyRecord {
    if (!key) throw new NotFoundError('unrevoked API key', id)
    return key
  }
}
