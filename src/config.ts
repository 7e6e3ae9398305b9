import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { z } from 'zod'
import { type ApiKeyEntry, LOCAL_PRINCIPAL, parseApiKeys } from './domain/access.js'
import { type Budget, parseBudgets } from './domain/budgets.js'
import {
  DEFAULT_DURABILITY_TIMES,
  DEFAULT_FILE_LIMITS,
  DEFAULT_QUEUE_LIMITS,
  DEFAULT_REQUEST_LIMITS,
  type DurabilityTimes,
  type FileLimits,
  type QueueLimits,
  type RequestLimits,
} from './domain/limits.js'
import { LOG_FORMATS, LOG_LEVELS, type LogFormat, type LogLevel } from './domain/logger.js'
import type { ToolServerAccess } from './domain/tool-servers.js'
import { checkSecret, DEFAULT_RETRY_DELAYS_MS, parseRetryDelays, parseWebhookSecrets } from './domain/webhooks.js'
import { type CoalescerOptions, DEFAULT_COALESCER_OPTIONS } from './runner/token-coalescer.js'

/** The repository root (two folders above this file, in src/ and in dist/). */
export const PROJECT_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')

/** A variable read by a domain parser; what the parser throws becomes the variable's error. */
const parsedWith = <T>(parse: (text: string) => T) =>
  z.string().transform((text, ctx) => {
    try {
      return parse(text)
    } catch (error) {
      ctx.addIssue({ code: 'custom', message: (error as Error).message, params: { parser: true } })
      return z.NEVER
    }
  })

/** A whole number of at least `min` (and at most `max`), said so when it is not. */
const wholeNumber = (min: number, max?: number, what = 'a whole number') => {
  const error = max === undefined ? `must be ${what}, at least ${min}` : `must be ${what}, ${min} to ${max}`
  const atLeast = z.coerce.number({ error }).int({ error }).min(min, { error })
  return max === undefined ? atLeast : atLeast.max(max, { error })
}
const count = (fallback: number, min = 1) => wholeNumber(min).default(fallback)
const oneOf = <const T extends readonly [string, ...string[]]>(values: T) =>
  z.enum(values, { error: `must be one of ${values.join(', ')}` })
const httpUrl = z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' })

const configSchema = z.object({
  HOST: z.string().min(1).default('127.0.0.1'),
  PORT: wholeNumber(0, 65535, 'a port number').default(4000),
  PROMPTLINE_KEEP_ALIVE_MS: count(65_000, 1000),
  DATABASE_URL: z
    .string()
    .regex(/^(file:|postgres(ql)?:\/\/)/, 'must be a file: URL (SQLite) or a postgres:// / postgresql:// URL')
    .default('file:./data/promptline.db'),
  REDIS_URL: z.url({ protocol: /^rediss?$/, error: 'must be a redis:// or rediss:// URL' }).optional(),
  PROMPTLINE_REDIS_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9_.:-]{1,64}$/, 'must be 1-64 of A-Z a-z 0-9 _ . : -')
    .default('promptline:'),
  PROMPTLINE_CATALOG: z.string().min(1).default(path.join(PROJECT_ROOT, 'catalog')),
  PROMPTLINE_API_KEYS: parsedWith(parseApiKeys).optional(),
  PROMPTLINE_LIMITS_WITHOUT_REDIS: oneOf(['deny', 'allow']).default('deny'),
  PROMPTLINE_ALLOW_OPEN: oneOf(['0', '1']).default('0'),
  PROMPTLINE_BUDGETS: parsedWith(parseBudgets).optional(),
  PROMPTLINE_PUBLIC_SCHEMA: oneOf(['0', '1']).default('1'),
  PROMPTLINE_MAX_DEPTH: count(DEFAULT_REQUEST_LIMITS.maxDepth),
  PROMPTLINE_MAX_ALIASES: count(DEFAULT_REQUEST_LIMITS.maxAliases, 0),
  PROMPTLINE_MAX_DIRECTIVES: count(DEFAULT_REQUEST_LIMITS.maxDirectives, 0),
  PROMPTLINE_MAX_TOKENS: count(DEFAULT_REQUEST_LIMITS.maxTokens),
  PROMPTLINE_MAX_COST: count(DEFAULT_REQUEST_LIMITS.maxCost),
  PROMPTLINE_MAX_BODY_BYTES: count(DEFAULT_REQUEST_LIMITS.maxBodyBytes, 1024),
  PROMPTLINE_MUTATIONS_PER_SECOND: count(DEFAULT_REQUEST_LIMITS.mutationsPerSecond),
  PROMPTLINE_MAX_API_IN_FLIGHT: count(DEFAULT_REQUEST_LIMITS.apiRequestsInFlight),
  PROMPTLINE_MAX_SUBSCRIPTIONS_PER_KEY: count(DEFAULT_REQUEST_LIMITS.subscriptionsPerKey),
  PROMPTLINE_CREDENTIAL_ENV_ALLOWLIST: z
    .string()
    .regex(/^\s*[A-Za-z_][A-Za-z0-9_]*(\s*,\s*[A-Za-z_][A-Za-z0-9_]*)*\s*$/, 'must be environment variable names separated by commas')
    .optional(),
  PROMPTLINE_MCP_ORIGINS: z
    .string()
    .refine(
      (v) => nameList(v).every((o) => o === '*' || (URL.canParse(o) && new URL(o).origin === o)),
      'must be origins (scheme://host:port) separated by commas, or *',
    )
    .optional(),
  PROMPTLINE_MCP_HEADER_ENVS: z
    .string()
    .regex(/^\s*[A-Za-z_][A-Za-z0-9_]*(\s*,\s*[A-Za-z_][A-Za-z0-9_]*)*\s*$/, 'must be environment variable names separated by commas')
    .optional(),
  PROMPTLINE_PROTECTED_LABELS: z
    .string()
    .regex(/^\s*[A-Za-z0-9][A-Za-z0-9_.-]*(\s*,\s*[A-Za-z0-9][A-Za-z0-9_.-]*)*\s*$/, 'must be label names separated by commas')
    .optional(),
  LOG_LEVEL: oneOf(LOG_LEVELS).default('info'),
  LOG_FORMAT: oneOf(LOG_FORMATS).optional(),
  PROMPTLINE_MAX_OUTSTANDING_PER_SESSION: count(DEFAULT_QUEUE_LIMITS.maxOutstandingPerSession),
  PROMPTLINE_MAX_OUTSTANDING_BYTES_PER_SESSION: count(DEFAULT_QUEUE_LIMITS.maxOutstandingBytesPerSession),
  PROMPTLINE_MAX_PENDING_ADMISSIONS: count(DEFAULT_QUEUE_LIMITS.maxPendingAdmissions),
  PROMPTLINE_MAX_PENDING_BYTES: count(DEFAULT_QUEUE_LIMITS.maxPendingBytes),
  PROMPTLINE_RETAINED_TERMINAL_PER_SESSION: count(DEFAULT_QUEUE_LIMITS.retainedTerminalPerSession),
  PROMPTLINE_IDEMPOTENCY_TTL_MS: count(DEFAULT_QUEUE_LIMITS.idempotencyTtlMs),
  PROMPTLINE_RESPONSE_CACHE_MAX_ENTRIES: count(10_000),
  PROMPTLINE_FILES_DIR: z.string().optional(),
  PROMPTLINE_MAX_FILE_BYTES: count(DEFAULT_FILE_LIMITS.maxFileBytes, 1),
  PROMPTLINE_FILE_RETENTION_DAYS: count(DEFAULT_FILE_LIMITS.retentionMs / 86_400_000, 1),
  PROMPTLINE_TOKEN_COALESCE_MS: count(DEFAULT_COALESCER_OPTIONS.windowMs, 0),
  PROMPTLINE_TOKEN_COALESCE_MAX: count(DEFAULT_COALESCER_OPTIONS.maxDeltas),
  PROMPTLINE_TOKEN_EVENTS_PER_SECOND: count(DEFAULT_COALESCER_OPTIONS.eventsPerSecond, 0),
  PROMPTLINE_SHUTDOWN_GRACE_MS: count(10_000, 0),
  PROMPTLINE_HEARTBEAT_MS: count(DEFAULT_DURABILITY_TIMES.heartbeatMs, 10),
  PROMPTLINE_STALE_MS: count(DEFAULT_DURABILITY_TIMES.staleMs, 10),
  PROMPTLINE_INFLIGHT_GRACE_MS: count(DEFAULT_DURABILITY_TIMES.inFlightGraceMs, 0),
  PROMPTLINE_NO_PROGRESS_MS: count(DEFAULT_DURABILITY_TIMES.noProgressMs, 10),
  PROMPTLINE_REAP_INTERVAL_MS: wholeNumber(10).optional(),
  PROMPTLINE_WEBHOOK_SECRET: parsedWith(checkSecret).optional(),
  PROMPTLINE_WEBHOOK_SECRETS: parsedWith(parseWebhookSecrets).optional(),
  PROMPTLINE_WEBHOOK_RETRY_MS: parsedWith(parseRetryDelays).optional(),
  OTEL_EXPORTER_OTLP_ENDPOINT: httpUrl.optional(),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: httpUrl.optional(),
  OTEL_SERVICE_NAME: z.string().min(1).max(256).default('promptline'),
})

export interface Config {
  host: string
  port: number
  /** How long an idle HTTP connection is kept open: longer than clients and proxies keep theirs. */
  keepAliveMs: number
  databaseUrl: string
  /** Set: several instances share the database through this Redis. */
  redisUrl: string | null
  redisPrefix: string
  catalogDir: string
  /** Null: no keys, one local tenant (only on loopback unless allowOpen). */
  apiKeys: ApiKeyEntry[] | null
  /** Variables a profile or request may name for any backend's key, besides those the backend names. */
  credentialEnvAllowlist: string[]
  /** Labels only an admin key may move, besides `production`. */
  protectedLabels: string[]
  /** The MCP servers runs may call: their origins, and the variables their headers may read. */
  toolServers: ToolServerAccess
  logLevel: LogLevel
  /** json for machines; pretty (pino-pretty) by default when stderr is a terminal. */
  logFormat: LogFormat
  limits: QueueLimits
  requestLimits: RequestLimits
  /** Per-tenant budgets; none when unset. */
  budgets: Budget[]
  /** What a key with limits of its own meets while Redis is away: refused, or let through. */
  limitsWithoutRedis: 'deny' | 'allow'
  coalescer: CoalescerOptions
  /** Entries each tenant keeps in the exact response cache. */
  responseCacheMaxEntries: number
  /** Uploaded files: their directory (null: the database), the largest one, how long one is kept. */
  files: { dir: string | null } & FileLimits
  shutdownGraceMs: number
  durability: Partial<DurabilityTimes>
  webhooks: {
    /** Signing secrets by tenant (`whsec_…`); a tenant without one may not name a webhook. */
    secrets: Map<string, string>
    retryDelaysMs: number[]
  }
  /** OpenTelemetry traces over OTLP/HTTP, from the standard OTEL_ variables; null: no tracing. */
  tracing: { tracesUrl: string; serviceName: string } | null
}

/** Hosts only this machine can reach: without API keys the server listens on nothing else. */
const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '::1'])

/** A bad environment variable; the message is one line that names it, what it must be, and (unless it may hold a secret) its value. */
export class ConfigError extends Error {
  override name = 'ConfigError'
}

/** A comma-separated list of names, trimmed, blanks left out. */
const nameList = (value: string | undefined): string[] =>
  (value ?? '')
    .split(',')
    .map((n) => n.trim())
    .filter(Boolean)

/** Variables whose values may hold a password (in a URL): never repeated in an error. */
const UNECHOED = new Set(['DATABASE_URL', 'REDIS_URL'])

type ParsedEnv = z.infer<typeof configSchema>

/** The environment parsed, with the checks that span variables. */
function parseEnv(env: Record<string, string | undefined>): ParsedEnv {
  const present = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''))
  const parsed = configSchema.safeParse(present)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!
    const name = String(issue.path[0])
    // a domain parser's message names the entry at fault itself, and may be about a secret
    if (issue.code === 'custom' && issue.params?.parser) throw new ConfigError(`${name}: ${issue.message}`)
    throw new ConfigError(`${name} ${issue.message}${UNECHOED.has(name) ? '' : ` (got '${present[name]}')`}`)
  }
  const c = parsed.data
  if (c.PROMPTLINE_STALE_MS <= c.PROMPTLINE_HEARTBEAT_MS) {
    throw new ConfigError(
      `PROMPTLINE_STALE_MS must be longer than PROMPTLINE_HEARTBEAT_MS, or live runs would be reaped (got ${c.PROMPTLINE_STALE_MS} and ${c.PROMPTLINE_HEARTBEAT_MS})`,
    )
  }
  const keyed = c.PROMPTLINE_API_KEYS && c.PROMPTLINE_API_KEYS.length > 0
  if (!keyed && !LOOPBACK_HOSTS.has(c.HOST) && c.PROMPTLINE_ALLOW_OPEN !== '1') {
    throw new ConfigError(
      `HOST ${c.HOST} is reachable from other machines and no PROMPTLINE_API_KEYS are set; set keys, or PROMPTLINE_ALLOW_OPEN=1 to serve everyone as one tenant`,
    )
  }
  return c
}

/** What one request, one session's queue and one run's token events may take. */
function limitsOf(c: ParsedEnv): Pick<Config, 'requestLimits' | 'limits' | 'coalescer'> {
  return {
    requestLimits: {
      maxDepth: c.PROMPTLINE_MAX_DEPTH,
      maxAliases: c.PROMPTLINE_MAX_ALIASES,
      maxDirectives: c.PROMPTLINE_MAX_DIRECTIVES,
      maxTokens: c.PROMPTLINE_MAX_TOKENS,
      maxCost: c.PROMPTLINE_MAX_COST,
      maxBodyBytes: c.PROMPTLINE_MAX_BODY_BYTES,
      mutationsPerSecond: c.PROMPTLINE_MUTATIONS_PER_SECOND,
      apiRequestsInFlight: c.PROMPTLINE_MAX_API_IN_FLIGHT,
      subscriptionsPerKey: c.PROMPTLINE_MAX_SUBSCRIPTIONS_PER_KEY,
      publicSchema: c.PROMPTLINE_PUBLIC_SCHEMA === '1',
    },
    limits: {
      maxOutstandingPerSession: c.PROMPTLINE_MAX_OUTSTANDING_PER_SESSION,
      maxOutstandingBytesPerSession: c.PROMPTLINE_MAX_OUTSTANDING_BYTES_PER_SESSION,
      maxPendingAdmissions: c.PROMPTLINE_MAX_PENDING_ADMISSIONS,
      maxPendingBytes: c.PROMPTLINE_MAX_PENDING_BYTES,
      retainedTerminalPerSession: c.PROMPTLINE_RETAINED_TERMINAL_PER_SESSION,
      idempotencyTtlMs: c.PROMPTLINE_IDEMPOTENCY_TTL_MS,
    },
    coalescer: {
      windowMs: c.PROMPTLINE_TOKEN_COALESCE_MS,
      maxDeltas: c.PROMPTLINE_TOKEN_COALESCE_MAX,
      eventsPerSecond: c.PROMPTLINE_TOKEN_EVENTS_PER_SECOND,
    },
  }
}

export function loadConfig(env: Record<string, string | undefined>): Config {
  const c = parseEnv(env)
  // the signal-specific variable is the URL itself; the general one is a base the path is added to
  const tracesUrl =
    c.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ??
    (c.OTEL_EXPORTER_OTLP_ENDPOINT && `${c.OTEL_EXPORTER_OTLP_ENDPOINT.replace(/\/+$/, '')}/v1/traces`)
  return {
    host: c.HOST,
    port: c.PORT,
    keepAliveMs: c.PROMPTLINE_KEEP_ALIVE_MS,
    databaseUrl: c.DATABASE_URL,
    redisUrl: c.REDIS_URL ?? null,
    redisPrefix: c.PROMPTLINE_REDIS_PREFIX,
    catalogDir: path.resolve(c.PROMPTLINE_CATALOG),
    apiKeys: c.PROMPTLINE_API_KEYS && c.PROMPTLINE_API_KEYS.length > 0 ? c.PROMPTLINE_API_KEYS : null,
    budgets: c.PROMPTLINE_BUDGETS ?? [],
    limitsWithoutRedis: c.PROMPTLINE_LIMITS_WITHOUT_REDIS,
    ...limitsOf(c),
    credentialEnvAllowlist: nameList(c.PROMPTLINE_CREDENTIAL_ENV_ALLOWLIST),
    protectedLabels: nameList(c.PROMPTLINE_PROTECTED_LABELS),
    toolServers: { origins: nameList(c.PROMPTLINE_MCP_ORIGINS), headerEnvs: nameList(c.PROMPTLINE_MCP_HEADER_ENVS) },
    logLevel: c.LOG_LEVEL,
    logFormat: c.LOG_FORMAT ?? (process.stderr.isTTY ? 'pretty' : 'json'),
    responseCacheMaxEntries: c.PROMPTLINE_RESPONSE_CACHE_MAX_ENTRIES,
    files: {
      dir: c.PROMPTLINE_FILES_DIR ? path.resolve(c.PROMPTLINE_FILES_DIR) : null,
      maxFileBytes: c.PROMPTLINE_MAX_FILE_BYTES,
      retentionMs: c.PROMPTLINE_FILE_RETENTION_DAYS * 86_400_000,
    },
    shutdownGraceMs: c.PROMPTLINE_SHUTDOWN_GRACE_MS,
    durability: {
      heartbeatMs: c.PROMPTLINE_HEARTBEAT_MS,
      staleMs: c.PROMPTLINE_STALE_MS,
      inFlightGraceMs: c.PROMPTLINE_INFLIGHT_GRACE_MS,
      noProgressMs: c.PROMPTLINE_NO_PROGRESS_MS,
      ...(c.PROMPTLINE_REAP_INTERVAL_MS !== undefined && { reapIntervalMs: c.PROMPTLINE_REAP_INTERVAL_MS }),
    },
    webhooks: {
      secrets: new Map([
        ...(c.PROMPTLINE_WEBHOOK_SECRET ? [[LOCAL_PRINCIPAL.tenantId, c.PROMPTLINE_WEBHOOK_SECRET] as const] : []),
        ...(c.PROMPTLINE_WEBHOOK_SECRETS ?? []),
      ]),
      retryDelaysMs: c.PROMPTLINE_WEBHOOK_RETRY_MS ?? [...DEFAULT_RETRY_DELAYS_MS],
    },
    tracing: tracesUrl ? { tracesUrl, serviceName: c.OTEL_SERVICE_NAME } : null,
  }
}
