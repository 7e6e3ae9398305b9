import { type ChildProcess, spawn } from 'node:child_process'
import path from 'node:path'
import { print } from 'graphql'
import { PROJECT_ROOT } from '../../src/config.js'

/** Starts `src/main.ts` in a child process on port 0 and resolves with its URL. */
export function startServerProcess(databaseUrl: string): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(path.join(PROJECT_ROOT, 'node_modules/.bin/tsx'), ['src/main.ts'], {
    cwd: PROJECT_ROOT,
    env: { ...process.env, DATABASE_URL: databaseUrl, PORT: '0', LOG_LEVEL: 'error' },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  return new Promise((resolve, reject) => {
    let out = ''
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString()
      const match = /GraphiQL at (http:\/\/\S+)\/graphql/.exec(out)
      if (match) resolve({ child, url: match[1]! })
    })
    child.stderr!.on('data', (chunk: Buffer) => (out += chunk.toString()))
    child.on('exit', (code) => reject(new Error(`server exited (${code}): ${out}`)))
  })
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
