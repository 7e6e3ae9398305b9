// Builds dist/ (the server with tsc, the console with vite), each part only when its sources
// changed since its last build: `npm install` builds once, `npm start` then starts at once.
// A part is fresh when the hash of its sources equals the one written after its last build;
// contents, not mtimes, so a checkout or a regenerated identical file rebuilds nothing.
import { spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const stampFile = path.join(root, 'dist', '.build-inputs.json')

/** Each part of dist/: the sources it is built from, and the command that builds it. */
const PARTS = {
  server: {
    sources: ['src', 'tsconfig.json', 'tsconfig.build.json'],
    command: ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json'],
  },
  console: {
    sources: ['console', 'src/client', 'tsconfig.json'],
    command: ['node_modules/vite/bin/vite.js', 'build', '--config', 'console/vite.config.ts'],
  },
}

/** The files of a source entry (a file, or a folder's files outside node_modules), relative to the root. */
function filesOf(relative) {
  const full = path.join(root, relative)
  if (!existsSync(full)) return []
  if (!statSync(full).isDirectory()) return [relative]
  return readdirSync(full, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile())
    .map((e) => path.relative(root, path.join(e.parentPath, e.name)))
    .filter((file) => !file.split(path.sep).includes('node_modules'))
}

function sourcesHash(sources) {
  const hash = createHash('sha256')
  const files = sources.flatMap(filesOf).sort()
  for (const file of files)
    hash
      .update(file)
      .update('\0')
      .update(readFileSync(path.join(root, file)))
      .update('\0')
  return hash.digest('hex')
}

function readStamps() {
  try {
    return JSON.parse(readFileSync(stampFile, 'utf8'))
  } catch {
    return {}
  }
}

/** The parts of dist/ whose sources changed since they were built, with their sources' hashes. */
export function staleParts() {
  const stamps = readStamps()
  return Object.entries(PARTS)
    .map(([name, part]) => ({ name, hash: sourcesHash(part.sources) }))
    .filter(({ name, hash }) => stamps[name] !== hash)
}

/** Builds the given parts in turn; the first that fails ends the process with its exit code. */
export function build(parts) {
  for (const { name, hash } of parts) {
    const { status } = spawnSync(process.execPath, PARTS[name].command, { cwd: root, stdio: 'inherit' })
    if (status !== 0) {
      process.stderr.write(`promptline: building the ${name} failed\n`)
      process.exit(status ?? 1)
    }
    writeFileSync(stampFile, `${JSON.stringify({ ...readStamps(), [name]: hash })}\n`)
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) build(staleParts())
