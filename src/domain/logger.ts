export const LOG_LEVELS = ['debug', 'info', 'warn', 'error', 'silent'] as const
export type LogLevel = (typeof LOG_LEVELS)[number]

/** Also yoga's logger: yoga passes errors and other values as the message. */
export interface Logger {
  debug(message: unknown, fields?: Record<string, unknown>): void
  info(message: unknown, fields?: Record<string, unknown>): void
  warn(message: unknown, fields?: Record<string, unknown>): void
  error(message: unknown, fields?: Record<string, unknown>): void
}

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 }

/**
 * One JSON line per entry on stderr. Callers pass ids and codes, never request bodies or
 * credentials, so nothing secret can reach a log line.
 */
export function createLogger(level: LogLevel, write: (line: string) => void = (line) => process.stderr.write(line)): Logger {
  const log = (at: Exclude<LogLevel, 'silent'>) => (message: unknown, fields?: unknown) => {
    if (RANK[at] < RANK[level]) return
    const text = typeof message === 'string' ? message : message instanceof Error ? message.message : JSON.stringify(message)
    const extra = fields && typeof fields === 'object' && !Array.isArray(fields) ? fields : {}
    write(`${JSON.stringify({ time: new Date().toISOString(), level: at, message: text, ...extra })}\n`)
  }
  return { debug: log('debug'), info: log('info'), warn: log('warn'), error: log('error') }
}
