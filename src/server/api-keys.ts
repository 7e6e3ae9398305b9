import { type ApiKeyEntry, LOCAL_PRINCIPAL, type Principal } from '../domain/access.js'
import { sha256Hex } from '../domain/hash.js'

/**
 * The configured API keys, by their sha256. With none configured the server is open: every
 * caller is the local tenant (and config allows that on loopback only, unless told otherwise).
 */
export class ApiKeyRing {
  private readonly byHash: Map<string, Principal> | null

  constructor(entries: readonly ApiKeyEntry[] | null) {
    this.byHash =
      entries && entries.length > 0
        ? new Map(entries.map((e) => [e.sha256, { tenantId: e.tenantId, role: e.role, keyId: e.sha256.slice(0, 16) }]))
        : null
  }

  get open(): boolean {
    return this.byHash === null
  }

  /** The caller of an `Authorization: Bearer <key>` value (the scheme is optional), or null. */
  authenticate(authorization: unknown): Principal | null {
    if (this.byHash === null) return LOCAL_PRINCIPAL
    if (typeof authorization !== 'string') return null
    const key = authorization.replace(/^\s*bearer\s+/i, '').trim()
    return key === '' ? null : (this.byHash.get(sha256Hex(key)) ?? null)
  }
}
