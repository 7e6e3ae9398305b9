import { z } from 'zod'
import { envNameSchema, idSchema, parseInput, settingsLayerSchema } from './definitions.js'
import { boundedJsonObject } from './json-bounds.js'
import type { RunRequest } from './records.js'

/** The longest user text a request may carry (an input, a steer). */
export const MAX_TEXT = 1024 * 1024

/** What a caller asks to run; validated once, at the service boundary. */
const runRequestSchema = z
  .strictObject({
    promptId: idSchema.nullish(),
    input: z.string().max(MAX_TEXT).nullish(),
    variables: boundedJsonObject('must be a JSON object of variable values').nullish(),
    profileId: idSchema.nullish(),
    overrides: settingsLayerSchema.nullish(),
    credentialEnv: envNameSchema.nullish(),
  })
  .refine((r) => r.promptId != null || r.input != null, { message: 'give a promptId or an input text', path: ['promptId'] })

/** Parses an untrusted run request; a failure is an INVALID_REQUEST naming the field, rooted at `root`. */
export function parseRunRequest(value: unknown, root: string): RunRequest {
  const parsed = parseInput(runRequestSchema, value, root)
  return {
    promptId: parsed.promptId ?? null,
    input: parsed.input ?? null,
    variables: parsed.variables ?? null,
    profileId: parsed.profileId ?? null,
    overrides: parsed.overrides ?? null,
    credentialEnv: parsed.credentialEnv ?? null,
  }
}
