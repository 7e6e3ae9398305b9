import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import path from 'node:path'
import { promisify } from 'node:util'
import { OperationTypeNode, parse } from 'graphql'
import { expect } from 'vitest'
import { PROJECT_ROOT } from '../../src/config.js'
import { type DocBlock, documentProblems, RUNNABLE } from './doc-blocks.js'
import { killHard } from './process.js'

const run = promisify(execFile)
/** The address the docs show; every block runs with the test server's instead. */
const DOCUMENTED = /\b(?:127\.0\.0\.1|localhost):4000\b/g
/** Commands that set the checkout up: the suite itself runs on an installed checkout. */
const SET_UP = /^(npm (install|ci|test)|bash \.ci\/run)$/
const START = /^((?:\w+=\S+\s+)*)npm start$/

export async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise((resolve) => server.close(resolve))
  return port
}

/** A server started the README's way (`npm start`'s script) on one SQLite file, restarted when a doc starts it with other variables. */
export class DocServer {
  private child: ChildProcess | null = null

  constructor(
    readonly port: number,
    private readonly databaseUrl: string,
  ) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}`
  }

  /** (Re)starts it with `env`, and resolves once it listens. */
  async start(env: Record<string, string> = {}): Promise<void> {
    await this.stop()
    const child = spawn(process.execPath, ['scripts/start.mjs'], {
      cwd: PROJECT_ROOT,
      env: { ...withoutOurs(process.env), DATABASE_URL: this.databaseUrl, PORT: String(this.port), LOG_LEVEL: 'error', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    this.child = child
    await new Promise<void>((resolve, reject) => {
      let out = ''
      const seen = (chunk: Buffer) => {
        out += chunk.toString()
        if (out.includes('GraphiQL at ')) resolve()
      }
      child.stdout!.on('data', seen)
      child.stderr!.on('data', seen)
      child.once('exit', (code) => reject(new Error(`npm start exited (${code}): ${out}`)))
    })
  }

  async stop(): Promise<void> {
    if (this.child) await killHard(this.child)
    this.child = null
  }
}

/** The environment without what the suite set for its own servers: a doc runs against its defaults. */
function withoutOurs(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const { REDIS_URL: _r, DATABASE_URL: _d, PROMPTLINE_API_KEYS: _k, ...rest } = env
  return rest
}

interface OpenSubscription {
  where: string
  events: unknown[]
  errors: unknown[]
  arrived: Promise<void>
  close: () => void
}

/** Runs a page's blocks in order against `server`, as a reader pasting them would; throws at the first that fails. */
export class DocRunner {
  /** Ids earlier answers gave, by placeholder: `run { id }` → RUN_ID. */
  private readonly ids = new Map<string, string>()
  private readonly subscriptions: OpenSubscription[] = []
  private readonly scratch = path.join(PROJECT_ROOT, '.doc-tests')

  constructor(private readonly server: DocServer) {}

  async runPage(blocks: DocBlock[]): Promise<void> {
    try {
      for (const [i, block] of blocks.entries()) {
        if (block.skip || !RUNNABLE.has(block.lang)) continue
        // a block the next one continues runs with it, as one program
        if (blocks[i + 1]?.continues && !blocks[i + 1]!.skip) continue
        const program = block.continues ? [blocks[i - 1]!.text, block.text].join('\n') : block.text
        await this.runBlock(block, this.local(program)).catch((error: Error) => {
          throw new Error(`${block.where}: ${error.message}`)
        })
      }
      await this.drainSubscriptions()
    } finally {
      for (const s of this.subscriptions.splice(0)) s.close()
    }
  }

  private local(text: string): string {
    return text.replace(DOCUMENTED, `127.0.0.1:${this.server.port}`)
  }

  private runBlock(block: DocBlock, text: string): Promise<void> {
    if (block.lang === 'graphql') return this.graphql(block, text)
    if (block.lang === 'sh') return this.shell(block, text)
    return this.program(block, text)
  }

  private async graphql(block: DocBlock, source: string): Promise<void> {
    const text = source.replace(/"([A-Z][A-Z_]*_ID)"/g, (_all, name: string) => {
      const id = this.ids.get(name)
      if (id === undefined) throw new Error(`no earlier answer gave ${name}`)
      return JSON.stringify(id)
    })
    const document = parse(text)
    const problems = documentProblems(document)
    if (problems.length > 0) throw new Error(problems.join('; '))
    const operation = document.definitions.find((d) => d.kind === 'OperationDefinition')
    if (operation?.operation === OperationTypeNode.SUBSCRIPTION) return void this.subscriptions.push(this.subscribe(block, text))
    const response = await fetch(`${this.server.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: text }),
    })
    const body = (await response.json()) as { data?: Record<string, unknown>; errors?: { message: string }[] }
    if (body.errors) throw new Error(`answered errors: ${JSON.stringify(body.errors)}`)
    if (block.expect !== undefined) expect(body.data).toMatchObject(block.expect as object)
    else refuseRefusals(body.data)
    this.capture(body.data)
  }

  /** Keeps every `<name> { id }` of an answer as NAME_ID for the blocks after it. */
  private capture(value: unknown, key = ''): void {
    if (Array.isArray(value)) for (const item of value) this.capture(item, key)
    else if (value !== null && typeof value === 'object') {
      const record = value as Record<string, unknown>
      if (typeof record.id === 'string' && key) this.ids.set(`${key.replace(/([a-z])([A-Z])/g, '$1_$2').toUpperCase()}_ID`, record.id)
      for (const [k, v] of Object.entries(record)) this.capture(v, k)
    }
  }

  private subscribe(block: DocBlock, query: string): OpenSubscription {
    const controller = new AbortController()
    const subscription: OpenSubscription = {
      where: block.where,
      events: [],
      errors: [],
      arrived: Promise.resolve(),
      close: () => controller.abort(),
    }
    subscription.arrived = (async () => {
      const response = await fetch(`${this.server.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
        body: JSON.stringify({ query }),
        signal: controller.signal,
      })
      const decoder = new TextDecoder()
      let buffered = ''
      const reader = response.body!.getReader()
      for (let read = await reader.read(); !read.done; read = await reader.read()) {
        buffered += decoder.decode(read.value, { stream: true })
        for (let end = buffered.indexOf('\n\n'); end >= 0; end = buffered.indexOf('\n\n')) {
          const data = /^data: (.*)$/m.exec(buffered.slice(0, end))?.[1]
          buffered = buffered.slice(end + 2)
          if (!data) continue
          const payload = JSON.parse(data) as { data?: unknown; errors?: unknown[] }
          if (payload.errors) subscription.errors.push(...payload.errors)
          else subscription.events.push(payload.data)
          await reader.cancel()
          return
        }
      }
    })()
    return subscription
  }

  /** Every subscription of the page has had an event, and none an error. */
  private async drainSubscriptions(): Promise<void> {
    for (const s of this.subscriptions) {
      await s.arrived
      if (s.errors.length > 0 || s.events.length === 0)
        throw new Error(`${s.where}: the subscription answered ${JSON.stringify(s.errors.length > 0 ? s.errors : 'nothing')}`)
    }
  }

  private async shell(block: DocBlock, text: string): Promise<void> {
    let printed = ''
    for (const command of text
      .replace(/\\\n\s*/g, ' ')
      .split('\n')
      .map((l) => l.trim())) {
      if (command === '' || command.startsWith('#') || SET_UP.test(command)) continue
      const start = START.exec(command)
      if (start) {
        const env = Object.fromEntries(
          start[1]!
            .trim()
            .split(/\s+/)
            .filter(Boolean)
            .map((a) => a.split('=', 2) as [string, string]),
        )
        await this.server.start(env)
        continue
      }
      // curl answers an HTTP error with exit code 0 unless told otherwise
      const { stdout } = await run('bash', ['-c', command.replace(/^curl /, 'curl --fail-with-body ')], {
        cwd: PROJECT_ROOT,
        env: withoutOurs(process.env),
      })
      printed += stdout
    }
    if (block.expect !== undefined) expect(printed).toContain(block.expect)
  }

  private async program(block: DocBlock, text: string): Promise<void> {
    mkdirSync(this.scratch, { recursive: true })
    const file = path.join(this.scratch, `${block.where.replace(/\W+/g, '-')}.${block.lang === 'ts' ? 'mts' : 'mjs'}`)
    writeFileSync(file, text)
    try {
      const { stdout } = await run(process.execPath, ['--import', 'tsx', file], {
        cwd: PROJECT_ROOT,
        env: withoutOurs(process.env),
        timeout: 120_000,
      })
      if (block.expect !== undefined) expect(stdout).toContain(block.expect)
    } finally {
      rmSync(file, { force: true })
    }
  }
}

/** A refusal the doc does not show as expected: a typed error member (every union selects `... on Error`). */
function refuseRefusals(value: unknown): void {
  if (value === null || typeof value !== 'object') return
  if (Array.isArray(value)) {
    for (const item of value) refuseRefusals(item)
    return
  }
  const record = value as Record<string, unknown>
  if (typeof record.__typename === 'string' && record.__typename.endsWith('Error')) throw new Error(`answered ${JSON.stringify(record)}`)
  if (typeof record.code === 'string' && typeof record.message === 'string') throw new Error(`answered ${JSON.stringify(record)}`)
  Object.values(record).forEach(refuseRefusals)
}
