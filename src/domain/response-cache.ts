import type { ResponseCacheLayer } from './definitions.js'
import { hashValue } from './hash.js'
import type { ChatMessage, FinishReason, OutputValidation, Usage } from './records.js'

/** The response cache a run asks for, its layers merged. */
export interface ResponseCachePolicy {
  mode: 'EXACT' | 'OFF'
  ttlSeconds: number
  namespace: string
}

const DEFAULT_POLICY: ResponseCachePolicy = { mode: 'OFF', ttlSeconds: 3600, namespace: 'default' }

/** profile < prompt < request: a field given wins; OFF on the request bypasses the cache. */
export function mergeResponseCache(...layers: (ResponseCacheLayer | null | undefined)[]): ResponseCachePolicy {
  const policy = { ...DEFAULT_POLICY }
  for (const layer of layers) {
    if (layer?.mode != null) policy.mode = layer.mode
    if (layer?.ttlSeconds != null) policy.ttlSeconds = layer.ttlSeconds
    if (layer?.namespace != null) policy.namespace = layer.namespace
  }
  return policy
}

/** Everything that decides an answer; two requests with equal parts get the same key. */
export interface ResponseCacheKeyParts {
  tenantId: string
  namespace: string
  messages: ChatMessage[]
  backendId: string
  model: string
  /** The effective settings, secrets included: hashed, never stored. */
  settings: unknown
  output: unknown
  tools: unknown
}

export const responseCacheKey = (parts: ResponseCacheKeyParts): string => hashValue(parts)

/** A completed, valid answer kept for its key. */
export interface CachedAnswer {
  sourceRunId: string
  output: string
  parsedOutput: unknown
  validation: OutputValidation | null
  finishReason: FinishReason | null
  vendorFinishReason: string | null
  sourceUsage: Usage
  sourceCostUsd: number | null
  createdAt: string
}
