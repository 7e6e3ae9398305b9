import { type ChildProcess, spawn } from 'node:child_process'
import { print } from 'graphql'
import { PROJECT_ROOT } from '../../src/config.js'
import type { TestDatabase } from './databases.js'
import type { TestServer } from './server.js'

/**
 * Starts `src/main.ts` in a child process on port 0 and resolves with its URL. Node itself runs
 * it (tsx as a loader, not its CLI, which would put the server in a grandchild a kill misses).
 */
export function startServerProcess(
  databaseUrl: string,
  env: Record<string, string> = {},
): Promise<{ child: ChildProcess; url: string; output: () => string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: PROJECT_ROOT,
    // alone on its database unless the test gives it a Redis (CI's REDIS_URL is for the tests that ask)
    env: { ...withoutRedis(process.env), DATABASE_URL: databaseUrl, PORT: '0', LOG_LEVEL: 'error', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  return new Promise((resolve, reject) => {
    let out = ''
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString()
      const match = /GraphiQL at (http:\/\/\S+)\/graphql/.exec(out)
      if (match) resolve({ child, url: match[1]!, output: () => out })
    })
    child.stderr!.on('data', (chunk: Buffer) => (out += chunk.toString()))
    child.on('exit', (code) => reject(new Error(`server exited (${code}): ${out}`)))
  })
}

function withoutRedis(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const { REDIS_URL: _, ...rest } = env
  return rest
}

export async function post<T, V>(
  url: string,
  document: import('@graphql-typed-document-node/core').TypedDocumentNode<T, V>,
  variables: V,
): Promise<T> {
  const response = await fetch(`${url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query: print(document), variables }),
  })
  return ((await response.json()) as { data: T }).data
}

/** Kills a server process without warning (SIGKILL) and waits until it is gone. */
export async function killHard(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise((resolve) => child.once('exit', resolve))
  child.kill('SIGKILL')
  await exited
}

/** What a test of real server processes leaves behind, ended: the process killed, the in-process server stopped, the database dropped. */
export async function releaseAll(
  child: ChildProcess | undefined,
  server: TestServer | undefined,
  database: TestDatabase | undefined,
): Promise<void> {
  if (child) await killHard(child)
  await server?.stop()
  await database?.drop()
}
