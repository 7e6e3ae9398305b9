import { z } from 'zod'

/** Which calls of a server's tools wait for an approval: all, none, or by name (an unnamed tool waits). */
export type ApprovalPolicy = 'ALWAYS' | 'NEVER' | { always: string[]; never: string[] }

/** A header an MCP server receives, its value read from an environment variable when the call is made. */
interface ServerHeader {
  name: string
  valueEnv: string
}

/** An MCP server whose tools promptline offers to the model and calls itself. */
export interface ToolServer {
  /** Names the server in calls, records and events; unique among a run's servers. */
  label: string
  /** Its Streamable HTTP endpoint. */
  url: string
  /** The tools offered; null offers every tool the server lists. */
  allowedTools: string[] | null
  requireApproval: ApprovalPolicy
  headers: ServerHeader[]
}

const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/
const HEADER_NAME = /^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}$/

const toolNames = z.array(z.string().regex(TOOL_NAME, 'must be 1-64 characters of A-Z a-z 0-9 _ -')).max(128)

const approvalPolicySchema = z.preprocess(
  // a file's `always` or `{ always, never }`, and GraphQL's ApprovalPolicyInput ({ mode, always, never }) alike
  (v) => {
    if (typeof v === 'string') return v.toUpperCase()
    if (v && typeof v === 'object' && 'mode' in v) {
      const { mode, always, never } = v as { mode?: unknown; always?: unknown; never?: unknown }
      return mode === 'BY_TOOL' ? { always, never } : mode
    }
    return v
  },
  z.union([
    z.enum(['ALWAYS', 'NEVER']),
    z.strictObject({ always: toolNames.nullish(), never: toolNames.nullish() }).transform((p) => ({
      always: p.always ?? [],
      never: p.never ?? [],
    })),
  ]),
)

/** An MCP server as a prompt file, a profile, a prompt or a request declares it. */
export const toolServerSchema = z
  .strictObject({
    label: z.string().regex(TOOL_NAME, 'must be 1-64 characters of A-Z a-z 0-9 _ -'),
    url: z.url({ protocol: /^https?$/ }),
    allowedTools: toolNames.nullish(),
    requireApproval: approvalPolicySchema.nullish(),
    headers: z
      .array(
        z.strictObject({
          name: z.string().regex(HEADER_NAME, 'must be an HTTP header name'),
          valueEnv: z.string().regex(ENV_NAME, 'must name an environment variable'),
        }),
      )
      .max(16)
      .nullish(),
  })
  .transform(
    (s): ToolServer => ({
      label: s.label,
      url: s.url,
      allowedTools: s.allowedTools ?? null,
      // as OpenAI's hosted MCP tool does: a call waits for an approval unless told otherwise
      requireApproval: s.requireApproval ?? 'ALWAYS',
      headers: s.headers ?? [],
    }),
  )

/** Whether a call of `tool` waits for an approval before promptline makes it. */
export function approvalRequired(policy: ApprovalPolicy, tool: string): boolean {
  if (policy === 'ALWAYS' || policy === 'NEVER') return policy === 'ALWAYS'
  return policy.always.includes(tool) || !policy.never.includes(tool)
}

/** Where the operator lets MCP servers be: their origins (`*` for any), and the variables their headers may read. */
export interface ToolServerAccess {
  origins: readonly string[]
  headerEnvs: readonly string[]
}

/** Why a server may not be called from here (its origin, or a header's variable, is not allowed), or null. */
export function serverRefused(server: ToolServer, allowed: ToolServerAccess): string | null {
  const { origin } = new URL(server.url)
  if (!allowed.origins.includes('*') && !allowed.origins.includes(origin)) {
    return `server '${server.label}': origin ${origin} is not in PROMPTLINE_MCP_ORIGINS`
  }
  const secret = server.headers.find((h) => !allowed.headerEnvs.includes(h.valueEnv))
  if (secret) return `server '${server.label}': header ${secret.name} reads ${secret.valueEnv}, which is not in PROMPTLINE_MCP_HEADER_ENVS`
  return null
}
