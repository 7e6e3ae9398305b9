import { createRequire } from 'node:module'
import { type DestinationStream, pino } from 'pino'
import { activeTraceIds } from './tracing.js'

export const LOG_LEVELS = ['debug', 'info', 'warn', 'error', 'silent'] as const
export type LogLevel = (typeof LOG_LEVELS)[number]
export const LOG_FORMATS = ['json', 'pretty'] as const
export type LogFormat = (typeof LOG_FORMATS)[number]

/** The ids a log line carries where they exist. */
interface LogContext {
  requestId?: string
  tenantId?: string
  sessionId?: string | null
  runId?: string
  queueId?: string
}

/** Also yoga's logger: yoga passes errors and other values as the message. */
export interface Logger {
  debug(message: unknown, fields?: Record<string, unknown>): void
  info(message: unknown, fields?: Record<string, unknown>): void
  warn(message: unknown, fields?: Record<string, unknown>): void
  error(message: unknown, fields?: Record<string, unknown>): void
  /** A logger whose every line carries `context`. */
  child(context: LogContext): Logger
}

/**
 * Where a key could sit in what is logged. Callers pass ids and codes, never request bodies or
 * credentials, so nothing secret reaches a line by construction; these paths are the second guard.
 */
const REDACT = [
  'apiKey',
  'api_key',
  'authorization',
  'password',
  'secret',
  'token',
  '*.apiKey',
  '*.api_key',
  '*.authorization',
  '*.password',
  '*.secret',
  '*.headers.authorization',
  '*.extra.api_key',
  '*.*.api_key',
]

const line = (message: unknown): string =>
  typeof message === 'string' ? message : message instanceof Error ? message.message : JSON.stringify(message)

function wrap(log: pino.Logger): Logger {
  const at =
    (level: 'debug' | 'info' | 'warn' | 'error') =>
    (message: unknown, fields?: unknown): void => {
      if (!log.isLevelEnabled(level)) return
      const extra = fields && typeof fields === 'object' && !Array.isArray(fields) ? fields : {}
      log[level](extra, line(message))
    }
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error'), child: (context) => wrap(log.child(context)) }
}

/** pino-pretty, loaded only for pretty logs: a server logging JSON never needs it. */
const prettyStream = (): typeof import('pino-pretty') => createRequire(import.meta.url)('pino-pretty')

/**
 * Logs with pino: one JSON line per entry on stderr (`time`, `level` by name, `message`, then
 * the context and fields), or pino-pretty's lines for people. `write` takes the lines instead
 * (tests read them).
 */
export function createLogger(level: LogLevel, write?: (line: string) => void, format: LogFormat = 'json'): Logger {
  const destination: DestinationStream = write
    ? { write }
    : format === 'pretty'
      ? prettyStream()({ destination: 2, colorize: process.stderr.isTTY, messageKey: 'message', sync: true })
      : pino.destination({ fd: 2, sync: true })
  const log = pino(
    {
      level: level === 'silent' ? 'silent' : level,
      base: undefined,
      messageKey: 'message',
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      redact: { paths: REDACT, censor: '[redacted]' },
      // with tracing on, a line written inside a span names its trace
      mixin: activeTraceIds,
    },
    destination,
  )
  return wrap(log)
}
