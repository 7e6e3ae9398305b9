import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { ROOT } from './processes.js'

/** Milliseconds from `npm start` (dist/ up to date, as after npm install) to a 200 from /healthz. */
async function startToHealthy(env: NodeJS.ProcessEnv): Promise<number> {
  const started = performance.now()
  // its own process group: npm, its shell and the server are stopped together
  const child = spawn('npm', ['start', '--silent'], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
    detached: true,
  })
  const exited = new Promise((resolve) => child.once('exit', resolve))
  try {
    const url = await new Promise<string>((resolve, reject) => {
      let out = ''
      child.stdout.on('data', (chunk: Buffer) => {
        out += chunk
        const match = /GraphiQL at (http:\/\/\S+)\/graphql/.exec(out)
        if (match) resolve(match[1]!)
      })
      child.once('exit', (code) => reject(new Error(`npm start exited with ${code}: ${out}`)))
    })
    const health = await fetch(`${url}/healthz`)
    if (health.status !== 200) throw new Error(`/healthz answered ${health.status}`)
    return Math.round(performance.now() - started)
  } finally {
    process.kill(-child.pid!, 'SIGTERM')
    await exited
  }
}

/** `npm start` to healthy on a new SQLite file (created and migrated), then again on the same file. */
export async function startTimes(): Promise<{ newDatabaseMs: number; secondStartMs: number }> {
  const dir = mkdtempSync(path.join(tmpdir(), 'promptline-start-'))
  const env = { PORT: '0', DATABASE_URL: `file:${path.join(dir, 'promptline.db')}`, PROMPTLINE_FILES_DIR: path.join(dir, 'files') }
  try {
    return { newDatabaseMs: await startToHealthy(env), secondStartMs: await startToHealthy(env) }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
