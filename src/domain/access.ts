import type { KeyPolicy } from './api-keys.js'
import { ID_PATTERN } from './definitions.js'
import { sha256Hex } from './hash.js'

/** What an API key may do: read everything of its tenant, also run prompts, or also change the catalog. */
const ACCESS_ROLES = ['read', 'write', 'admin'] as const
export type AccessRole = (typeof ACCESS_ROLES)[number]

/** Who is calling: a tenant and the role its key has. */
export interface Principal {
  tenantId: string
  role: AccessRole
  /** Names the key in limits and logs without revealing it: a stored key's id, a prefix of a bootstrap key's sha256, or 'local'. */
  keyId: string
  /** A stored key's limits, budget and allow-lists; null for bootstrap keys (PROMPTLINE_API_KEYS) and the local tenant. */
  policy: KeyPolicy | null
  /** When a stored key stops working (ISO); null when never. */
  expiresAt: string | null
}

/** With no API keys configured, every caller is this one tenant, with every right. */
export const LOCAL_PRINCIPAL: Principal = Object.freeze({
  tenantId: 'local',
  role: 'admin',
  keyId: 'local',
  policy: null,
  expiresAt: null,
})

/** The key's id as recorded with what it did (a version saved, a label moved, a run); null where keys are off. */
export const recordedKeyId = (principal: Principal): string | null => (principal.keyId === LOCAL_PRINCIPAL.keyId ? null : principal.keyId)

/** A configured key: only its sha256 is kept, never the key. */
export interface ApiKeyEntry extends Pick<Principal, 'tenantId' | 'role'> {
  sha256: string
}

const SHA256 = /^sha256:([0-9a-f]{64})$/i

/**
 * Parses `key:tenant:role` entries separated by commas or white space; a key may be given as
 * `sha256:<hex>` so the raw key need not sit in the environment. Errors name the entry by its
 * position, never by its key.
 */
export function parseApiKeys(text: string): ApiKeyEntry[] {
  const entries = text.split(/[\s,]+/).filter(Boolean)
  return entries.map((entry, index) => {
    const where = `entry ${index + 1} of ${entries.length}`
    const parts = entry.split(':')
    if (parts.length < 3) throw new Error(`${where} is not key:tenant:role`)
    const role = parts.pop()!
    const tenantId = parts.pop()!
    const key = parts.join(':')
    if (!(ACCESS_ROLES as readonly string[]).includes(role)) throw new Error(`${where} has role '${role}'; use read, write or admin`)
    if (!ID_PATTERN.test(tenantId)) throw new Error(`${where} has a tenant that is not 1-128 characters of A-Z a-z 0-9 _ . -`)
    if (key.length < 16 && !SHA256.test(key)) throw new Error(`${where} has a key shorter than 16 characters`)
    const hashed = SHA256.exec(key)
    return { sha256: hashed ? hashed[1]!.toLowerCase() : sha256Hex(key), tenantId, role: role as AccessRole }
  })
}
