import { inspect } from 'node:util'

/** A secret string that shows as "***" in JSON, logs and `util.inspect`; `reveal()` reads it. */
export class Secret {
  readonly #value: string
  constructor(value: string) {
    this.#value = value
  }
  reveal(): string {
    return this.#value
  }
  toJSON(): string {
    return '***'
  }
  toString(): string {
    return '***'
  }
  [inspect.custom](): string {
    return 'Secret(***)'
  }
}

/** Reads a secret by environment variable name; main.ts binds it to process.env. */
export type SecretLookup = (name: string) => string | undefined

export type CredentialSourceKind = 'DIRECT' | 'REQUEST_ENV' | 'PROFILE_ENV' | 'BACKEND_ENV' | 'NONE'

/**
 * A resolved credential. The value is a private field: it never reaches JSON, logs or
 * `util.inspect`; only a provider calls `reveal()`.
 */
export class Credential {
  readonly #value: string | undefined
  constructor(
    readonly source: CredentialSourceKind,
    /** The env var name, or null for a direct key / no credential. */
    readonly name: string | null,
    value: string | undefined,
    /** False for the fake backend, which needs no credential. */
    readonly required = true,
  ) {
    this.#value = value
  }
  get available(): boolean {
    return !this.required || (this.#value !== undefined && this.#value !== '')
  }
  reveal(): string | undefined {
    return this.#value
  }
  toJSON() {
    return { source: this.source, name: this.name, available: this.available }
  }
  [inspect.custom]() {
    return `Credential(${this.source}${this.name ? ` ${this.name}` : ''})`
  }
}

export interface CredentialSources {
  directKey?: Secret | null
  requestEnv?: string | null
  profileEnv?: string | null
  backendEnv?: string | null
  /** The fake backend needs no credential at all. */
  required: boolean
}

/**
 * The highest-priority source that is named wins: direct key > request env > profile env >
 * backend env. A named env var that is unset does not fall through to a lower one, so a run
 * never silently bills a different account than the one asked for.
 */
export function resolveCredential(sources: CredentialSources, secrets: SecretLookup): Credential {
  const { required } = sources
  if (sources.directKey) return new Credential('DIRECT', null, sources.directKey.reveal(), required)
  if (sources.requestEnv) return new Credential('REQUEST_ENV', sources.requestEnv, secrets(sources.requestEnv), required)
  if (sources.profileEnv) return new Credential('PROFILE_ENV', sources.profileEnv, secrets(sources.profileEnv), required)
  if (sources.backendEnv) return new Credential('BACKEND_ENV', sources.backendEnv, secrets(sources.backendEnv), required)
  return new Credential('NONE', null, undefined, required)
}

/** Fragments of a key shorter than this are too common to recognise as the key. */
const MIN_FRAGMENT = 8

/**
 * Removes a secret from text a vendor wrote (an error body may quote the key back): the whole
 * key, any run of 8+ of its characters, and masked forms that keep its start and end
 * (`sk-pro…wxyz`, `sk-pro****wxyz`).
 */
export function redactSecret(text: string, secret: string | undefined): string {
  if (!secret || secret.length < MIN_FRAGMENT) return secret ? text.replaceAll(secret, '***') : text
  let redacted = text.replaceAll(secret, '***')
  for (let start = 0; start + MIN_FRAGMENT <= secret.length; start++) {
    const fragment = secret.slice(start, start + MIN_FRAGMENT)
    if (!redacted.includes(fragment)) continue
    // widen to the longest run of the key that the text holds here, so no tail is left behind
    redacted = redacted.replace(new RegExp(`\\S*${escapeRegExp(fragment)}\\S*`, 'g'), '***')
  }
  const head = escapeRegExp(secret.slice(0, 3))
  const tail = escapeRegExp(secret.slice(-4))
  return redacted.replace(new RegExp(`${head}\\S*?[*.…]+\\S*?${tail}|[*.…]{3,}\\S*?${tail}`, 'g'), '***')
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

/** What a backend lets profiles and requests choose: where to send, and which server variable holds the key. */
export interface CredentialRouting {
  baseUrl?: string | null
  credentialEnv?: string | null
  endpoints?: readonly string[] | null
  credentialEnvs?: readonly string[] | null
}

/** The backend's own base URL (null: the vendor default) or one it allows. */
export function endpointAllowed(backend: CredentialRouting, endpoint: string | null | undefined): boolean {
  return endpoint == null || endpoint === backend.baseUrl || (backend.endpoints ?? []).includes(endpoint)
}

/**
 * An environment variable a client may name for a backend's key: the backend's own, one it
 * lists, or one the operator allows server-wide. Any other would let a client read a server
 * variable by sending it to a vendor.
 */
export function credentialEnvAllowed(backend: CredentialRouting, name: string, allowlist: readonly string[]): boolean {
  return name === backend.credentialEnv || (backend.credentialEnvs ?? []).includes(name) || allowlist.includes(name)
}
