import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { createServer } from 'node:net'

/** A Redis server of a test's own, on a free port, that the test may stop and start again. */
export interface OwnRedis {
  readonly url: string
  /** Kills the server at once (SIGKILL), as a crash or a network cut would take it away. */
  stop(): Promise<void>
  /** Starts it again on the same port, empty. */
  start(): Promise<void>
  /** Freezes it (SIGSTOP): connections stay open and nothing answers, as across a network partition. */
  pause(): void
  /** Thaws it (SIGCONT). */
  resume(): void
}

export async function freePort(): Promise<number> {
  const probe = createServer()
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve))
  const { port } = probe.address() as { port: number }
  await new Promise<void>((resolve) => probe.close(() => resolve()))
  return port
}

/** Resolves once the server says it accepts connections; rejects if it exits first. */
async function started(port: number): Promise<ChildProcess> {
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  let output = ''
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString()
      if (output.includes('Ready to accept connections')) resolve()
    })
    child.once('exit', (code) => reject(new Error(`redis-server exited (${code}): ${output}`)))
  })
  child.stdout!.resume()
  return child
}

export async function startOwnRedis(): Promise<OwnRedis> {
  const port = await freePort()
  let child: ChildProcess | null = await started(port)
  return {
    url: `redis://127.0.0.1:${port}`,
    async stop() {
      if (!child) return
      const exited = once(child, 'exit')
      child.kill('SIGKILL')
      await exited
      child = null
    },
    async start() {
      child ??= await started(port)
    },
    pause() {
      child?.kill('SIGSTOP')
    },
    resume() {
      child?.kill('SIGCONT')
    },
  }
}
