import { randomBytes } from 'node:crypto'
import { z } from 'zod'
import type { AccessRole } from './access.js'
import { idSchema } from './definitions.js'

/** A key's own limits; a limit left null does not apply (the server's defaults do). */
export interface KeyLimits {
  /** Mutations and REST requests per minute, counted by every instance together. */
  requestsPerMinute: number | null
  /** Input and output tokens of ended runs per minute; over it, admissions wait for the window. */
  tokensPerMinute: number | null
  /** Runs of the key running at once, across instances. */
  concurrentRuns: number | null
}

/** How long a budget's window is: a UTC day, an ISO week (from Monday), a UTC month, or forever. */
export const BUDGET_PERIODS = ['DAY', 'WEEK', 'MONTH', 'TOTAL'] as const
export type BudgetPeriod = (typeof BUDGET_PERIODS)[number]

/** At most `costUsd` of spend per `period`. */
interface KeyBudget {
  costUsd: number
  period: BudgetPeriod
}

/** What a key may use and spend: checked at admission, on whichever instance admits. */
export interface KeyPolicy {
  limits: KeyLimits | null
  budget: KeyBudget | null
  /** Null: every profile; else only these ids. */
  allowedProfiles: string[] | null
  /** Null: every prompt; else only these ids (a request without a prompt is refused too). */
  allowedPrompts: string[] | null
}

/** A key kept in the database, as the API shows it: never its secret. */
export interface ApiKeyRecord extends KeyPolicy {
  id: string
  tenantId: string
  name: string
  /** The secret's first characters. */
  prefix: string
  role: AccessRole
  createdAt: string
  expiresAt: string | null
  revokedAt: string | null
  lastUsedAt: string | null
}

/** Characters of the secret shown as its prefix. */
const PREFIX_LENGTH = 8

/** A new secret (256 random bits) and what is kept of it. */
export function newSecret(): { secret: string; prefix: string } {
  const secret = `pl_${randomBytes(32).toString('base64url')}`
  return { secret, prefix: secret.slice(0, PREFIX_LENGTH) }
}

/** A new key's id: public, names the key in records and limits. */
export const newKeyId = (): string => `key_${randomBytes(9).toString('base64url')}`

/** The budget window `now` falls in; TOTAL has one window, from the epoch, that never resets. */
export function budgetPeriodWindow(period: BudgetPeriod, now = new Date()): { start: Date; end: Date | null } {
  const y = now.getUTCFullYear()
  const m = now.getUTCMonth()
  const d = now.getUTCDate()
  switch (period) {
    case 'DAY':
      return { start: new Date(Date.UTC(y, m, d)), end: new Date(Date.UTC(y, m, d + 1)) }
    case 'WEEK': {
      const monday = d - ((now.getUTCDay() + 6) % 7)
      return { start: new Date(Date.UTC(y, m, monday)), end: new Date(Date.UTC(y, m, monday + 7)) }
    }
    case 'MONTH':
      return { start: new Date(Date.UTC(y, m, 1)), end: new Date(Date.UTC(y, m + 1, 1)) }
    case 'TOTAL':
      return { start: new Date(0), end: null }
  }
}

const positiveInt = z.number().int().min(1).max(1_000_000_000)
const limitsSchema = z.strictObject({
  requestsPerMinute: positiveInt.nullish().transform((v) => v ?? null),
  tokensPerMinute: positiveInt.nullish().transform((v) => v ?? null),
  concurrentRuns: z
    .number()
    .int()
    .min(1)
    .max(10_000)
    .nullish()
    .transform((v) => v ?? null),
})
const budgetSchema = z.strictObject({ costUsd: z.number().positive().max(1e9), period: z.enum(BUDGET_PERIODS) })
const idList = z.array(idSchema).max(1000)
const futureDate = z.date().refine((d) => d.getTime() > Date.now(), 'must be in the future')

/** The fields of a key that may be set at creation and changed later; null clears one. */
const keyFields = {
  name: z.string().trim().min(1).max(200),
  expiresAt: futureDate.nullish(),
  limits: limitsSchema.nullish(),
  budget: budgetSchema.nullish(),
  allowedProfiles: idList.nullish(),
  allowedPrompts: idList.nullish(),
}

export const createKeySchema = z.strictObject({ ...keyFields, role: z.enum(['read', 'write', 'admin']) })

export const updateKeySchema = z.strictObject({ id: z.string().min(1).max(64), ...keyFields, name: keyFields.name.optional() })

export const rotateKeySchema = z.strictObject({
  id: z.string().min(1).max(64),
  graceSeconds: z
    .number()
    .int()
    .min(0)
    .max(30 * 86_400)
    .nullish(),
})
