import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
export const BENCH_KEY = 'bench-key'
export const PROFILE_DIR = path.join(ROOT, 'bench/profiles')
/** Node flags for the server (BENCH_NODE_FLAGS, space-separated), to measure V8 settings such as --optimize-for-size. */
const NODE_FLAGS = (process.env.BENCH_NODE_FLAGS ?? '').split(' ').filter(Boolean)
const CLOCK_TICKS = Number(execFileSync('getconf', ['CLK_TCK']).toString())

/** Starts a child and resolves with the first stdout line matching `pattern`. */
export function startChild(
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  pattern: RegExp,
): Promise<{ child: ChildProcess; match: RegExpExecArray }> {
  const child = spawn(command, args, {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
  })
  return new Promise((resolve, reject) => {
    let out = ''
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk
      const match = pattern.exec(out)
      if (match) resolve({ child, match })
    })
    child.on('exit', (code) => reject(new Error(`${args.join(' ')} exited with ${code}`)))
  })
}

export async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return
  child.kill('SIGTERM')
  await new Promise((r) => child.once('exit', r))
}

/** Limits raised past the GraphQL levels' load, which a default server refuses at 50 clients. */
const RAISED_LIMITS = {
  PROMPTLINE_MUTATIONS_PER_SECOND: '100000',
  PROMPTLINE_MAX_PENDING_ADMISSIONS: '100000',
  PROMPTLINE_MAX_PENDING_BYTES: String(1024 ** 3),
}

/** promptline built and run in a process of its own, on a fresh SQLite file. */
export class PromptlineProcess {
  private constructor(
    readonly child: ChildProcess,
    readonly url: string,
    private readonly dir: string,
  ) {}

  /** `env` adds to the server's: the bench's raised limits (RAISED_LIMITS), keys. */
  static async start(catalogDir: string, profile: boolean, env: NodeJS.ProcessEnv): Promise<PromptlineProcess> {
    const dir = mkdtempSync(path.join(tmpdir(), 'promptline-bench-'))
    if (profile) mkdirSync(PROFILE_DIR, { recursive: true })
    const { child, match } = await startChild(
      process.execPath,
      [
        ...NODE_FLAGS,
        '--import',
        './bench/count-sql.mjs',
        '--import',
        './bench/handles.mjs',
        ...(profile ? ['--import', './bench/cpu-profiler.mjs'] : []),
        'dist/main.js',
      ],
      {
        DATABASE_URL: `file:${path.join(dir, 'bench.db')}`,
        PORT: '0',
        LOG_LEVEL: 'error',
        PROMPTLINE_CATALOG: catalogDir,
        BENCH_KEY,
        ...env,
      },
      /GraphiQL at (http:\/\/\S+)\/graphql/,
    )
    return new PromptlineProcess(child, match[1]!, dir)
  }

  /** CPU time used so far, user + system. */
  cpuMs(): number {
    // fields 14 and 15 of /proc/<pid>/stat, counted after the command name's closing parenthesis
    const fields = readFileSync(`/proc/${this.child.pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS
  }

  rssMiB(): number {
    const rss = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${this.child.pid}/status`, 'utf8'))
    return rss ? Number(rss[1]) / 1024 : Number.NaN
  }

  /** SQL statements executed so far, and how many of them wrote, counted by bench/count-sql.mjs inside the server. */
  sqlStatements(): Promise<{ sql: number; writes: number }> {
    return new Promise((resolve) => {
      this.child.once('message', (m: { sql: number; writes: number }) => resolve(m))
      this.child.send('sql')
    })
  }

  /** How many resources keep the server's event loop busy, counted by bench/handles.mjs inside it. */
  async activeHandles(): Promise<number> {
    return (await this.ask<{ count: number }>({ type: 'handles' }, 'handles')).count
  }

  /** Starts the server's CPU profiler (a server started with `profile`). */
  async startProfile(): Promise<void> {
    await this.ask({ type: 'profile-start' }, 'profile-started')
  }

  /** Stops it and has the server write the profile to `file`. */
  async stopProfile(file: string): Promise<void> {
    await this.ask({ type: 'profile-stop', file }, 'profile-written')
  }

  /** Sends `message` and resolves with the server's first message of type `answer`. */
  private ask<T>(message: object, answer: string): Promise<T> {
    return new Promise((resolve) => {
      const onMessage = (m: { type?: string }) => {
        if (m?.type !== answer) return
        this.child.off('message', onMessage)
        resolve(m as T)
      }
      this.child.on('message', onMessage)
      this.child.send(message)
    })
  }

  async close(): Promise<void> {
    await stop(this.child)
    rmSync(this.dir, { recursive: true, force: true })
  }
}

/**
 * The fake OpenAI at `delayMs` a token in a process of its own, and promptline before it with the
 * bench's raised limits (a backend `bench-openai`, a profile `bench`); `close()` stops both.
 */
export async function benchServer(delayMs: number, profile: boolean) {
  const vendor = await startChild(
    path.join(ROOT, 'node_modules/.bin/tsx'),
    ['bench/fake-openai.ts', String(delayMs)],
    {},
    /(http:\/\/\S+)\n/,
  )
  const catalog = mkdtempSync(path.join(tmpdir(), 'promptline-bench-catalog-'))
  // the backend's capacity is left at its defaults: they are part of what is measured
  writeFileSync(
    path.join(catalog, 'bench.yaml'),
    `backends:\n  - { id: bench-openai, kind: OPENAI, baseUrl: "${vendor.match[1]}", credentialEnv: BENCH_KEY }\n` +
      `profiles:\n  - { id: bench, backendId: bench-openai, model: gpt-bench }\n`,
  )
  const stopAll = async (server?: PromptlineProcess) => {
    await server?.close()
    await stop(vendor.child)
    rmSync(catalog, { recursive: true, force: true })
  }
  const server = await PromptlineProcess.start(catalog, profile, RAISED_LIMITS).catch(async (error) => {
    await stopAll()
    throw error
  })
  return { server, vendorUrl: vendor.match[1]!, close: () => stopAll(server) }
}
