import { createHash } from 'node:crypto'
import { z } from 'zod'
import { idSchema } from './definitions.js'

/** Always the newest version; it cannot be set. */
export const LATEST_LABEL = 'latest'
/** What a reference without a version or label means, when the prompt has it (else `latest`). */
export const PRODUCTION_LABEL = 'production'

const labelNameSchema = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/, 'must be 1-64 characters of A-Z a-z 0-9 _ . - (starting with a letter or digit)')

/** One version's share of a split label, in percent. */
export interface SplitShare {
  version: number
  weight: number
}

const versionSchema = z.number().int().min(1)

const splitSchema = z
  .array(z.strictObject({ version: versionSchema, weight: z.number().int().min(1).max(99) }))
  .min(2)
  .max(10)
  .refine((shares) => new Set(shares.map((s) => s.version)).size === shares.length, 'names a version twice')
  .refine((shares) => shares.reduce((sum, s) => sum + s.weight, 0) === 100, 'weights are percentages and must add up to 100')

/** A move of a label: to one version, or to a split over several; compare-and-set on the version it names now. */
export const labelMoveSchema = z
  .strictObject({
    promptId: idSchema,
    label: labelNameSchema.refine((name) => name !== LATEST_LABEL, `'${LATEST_LABEL}' always names the newest version and cannot be set`),
    version: versionSchema.nullish(),
    split: splitSchema.nullish(),
    expectedVersion: versionSchema.nullish(),
  })
  .refine((m) => (m.version == null) !== (m.split == null), { message: 'give exactly one of version and split', path: ['version'] })

/** A label as it stands: the version it names (a split's first) and the split, when it is one. */
export interface PromptLabel {
  promptId: string
  name: string
  version: number
  split: SplitShare[] | null
  updatedAt: Date
}

/** One move of a label, as kept in its history. */
export interface PromptLabelMove {
  promptId: string
  label: string
  move: number
  version: number
  split: SplitShare[] | null
  previousVersion: number | null
  keyId: string | null
  movedAt: Date
}

/** Which version a request asks for: at most one of a version and a label. */
export const promptRefShape = {
  version: versionSchema.nullish(),
  label: labelNameSchema.nullish(),
}

/**
 * The bucket (0-99) a session falls in for a split label: a hash of the session and the label,
 * so one session stays on one version while the label's split stands, and sessions spread evenly.
 * Without a session every request draws its own.
 */
export function splitBucket(sessionId: string | null, label: string): number {
  if (sessionId === null) return Math.floor(Math.random() * 100)
  return createHash('sha256').update(`${sessionId}\u0000${label}`).digest().readUInt32BE(0) % 100
}

/** The version a bucket lands on: shares are laid out in order over 0-99. */
export function versionInSplit(split: readonly SplitShare[], bucket: number): number {
  let upTo = 0
  for (const share of split) {
    upTo += share.weight
    if (bucket < upTo) return share.version
  }
  return split[split.length - 1]!.version
}

/** Labels only an admin key may move: `production` and those the operator lists. */
export function protectedLabels(listed: readonly string[]): ReadonlySet<string> {
  return new Set([PRODUCTION_LABEL, ...listed])
}
