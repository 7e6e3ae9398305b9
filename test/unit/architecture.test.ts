import { readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { PROJECT_ROOT } from '../../src/config.js'

// The layer rules of docs/architecture.md, checked over the real import graph of src/.
const SRC = path.join(PROJECT_ROOT, 'src')
// yoga's pub/sub packages (createPubSub, its event targets) carry no GraphQL: events/ fans out through them
const GRAPHQL_PACKAGES =
  /^(graphql|graphql-jit|graphql-yoga|graphql-ws|graphql-scalars|@graphql-yoga\/(?!subscription$|redis-event-target$).*|@pothos\/.*|@envelop\/.*)$/
// the database's packages: Prisma, Kysely and the drivers
const DATABASE_PACKAGES = /^(@prisma\/.*|@db\/client|prisma|kysely|pg|better-sqlite3)$/

interface Import {
  from: string
  /** A folder of src/ ('.' for src/ itself), or null for a package. */
  toFolder: string | null
  specifier: string
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name)
    if (e.isDirectory()) return e.name === 'generated' ? [] : sourceFiles(full)
    return e.name.endsWith('.ts') ? [full] : []
  })
}

const folderOf = (file: string) => path.relative(SRC, file).split(path.sep).slice(0, -1)[0] ?? '.'

function importsOf(file: string): Import[] {
  const text = readFileSync(file, 'utf8')
  const specifiers = [
    ...text.matchAll(/^\s*(?:import|export)\s[^'"]*?from\s+['"]([^'"]+)['"]/gm),
    ...text.matchAll(/import\(\s*['"]([^'"]+)['"]\s*\)/g),
  ].map((m) => m[1]!)
  return specifiers.map((specifier) => {
    const relative = specifier.startsWith('.')
    const target = relative ? path.resolve(path.dirname(file), specifier) : null
    const inGenerated = target !== null && path.relative(SRC, target).startsWith('generated')
    return { from: file, specifier, toFolder: target && !inGenerated ? folderOf(target) : null }
  })
}

const files = sourceFiles(SRC)
const imports = files.flatMap(importsOf)
const describeImport = (i: Import) => `${path.relative(SRC, i.from)} imports ${i.specifier}`

function folderCycles(): string[][] {
  const edges = new Map<string, Set<string>>()
  for (const i of imports) {
    const from = folderOf(i.from)
    if (i.toFolder && i.toFolder !== from) edges.set(from, (edges.get(from) ?? new Set()).add(i.toFolder))
  }
  const cycles: string[][] = []
  const visit = (node: string, trail: string[]) => {
    for (const next of edges.get(node) ?? []) {
      if (next === trail[0]) cycles.push([...trail, next])
      else if (!trail.includes(next) && next > trail[0]!) visit(next, [...trail, next])
    }
  }
  for (const start of edges.keys()) visit(start, [start])
  return cycles
}

describe('the import graph of src/', () => {
  it('reads the real tree', () => {
    expect(files.length).toBeGreaterThan(50)
    expect(imports.some((i) => i.toFolder === 'domain')).toBe(true)
  })

  it('has no cycle between folders', () => {
    expect(folderCycles().map((c) => c.join(' → '))).toEqual([])
  })

  it('keeps domain/ free of every other folder of src/', () => {
    const bad = imports.filter((i) => folderOf(i.from) === 'domain' && i.toFolder !== null && i.toFolder !== 'domain')
    expect(bad.map(describeImport)).toEqual([])
  })

  it('keeps store/ below every use case: it imports only domain/', () => {
    const bad = imports.filter((i) => folderOf(i.from) === 'store' && i.toFolder !== null && !['store', 'domain'].includes(i.toFolder))
    expect(bad.map(describeImport)).toEqual([])
  })

  it('keeps schema/ and providers/ away from store/', () => {
    const bad = imports.filter((i) => ['schema', 'providers'].includes(folderOf(i.from)) && i.toFolder === 'store')
    expect(bad.map(describeImport)).toEqual([])
  })

  it('lets only store/ import Prisma, Kysely or a database driver', () => {
    const bad = imports.filter(
      (i) =>
        folderOf(i.from) !== 'store' && (DATABASE_PACKAGES.test(i.specifier) || (i.toFolder === null && i.specifier.includes('generated'))),
    )
    expect(bad.map(describeImport)).toEqual([])
  })

  it('lets only schema/, server/ and the client import GraphQL packages', () => {
    const bad = imports.filter((i) => !['schema', 'server', 'client'].includes(folderOf(i.from)) && GRAPHQL_PACKAGES.test(i.specifier))
    expect(bad.map(describeImport)).toEqual([])
  })

  it('keeps client/ on its own: it ships to other processes and browsers, so it imports no other folder', () => {
    const bad = imports.filter((i) => (folderOf(i.from) === 'client') !== (i.toFolder === 'client') && i.toFolder !== null)
    expect(bad.map(describeImport)).toEqual([])
  })
})

describe('the write path and the session routing', () => {
  const storeFiles = sourceFiles(path.join(SRC, 'store'))

  it("builds no SQL by hand in store/: Prisma's unsafe raw calls only for PRAGMAs and in the migrator", () => {
    const bad = storeFiles
      .filter((file) => !file.endsWith('migrator.ts'))
      .flatMap((file) =>
        readFileSync(file, 'utf8')
          .split('\n')
          .filter((line) => /\$(query|execute)RawUnsafe/.test(line) && !/\('PRAGMA /.test(line))
          .map((line) => `${path.relative(SRC, file)}: ${line.trim()}`),
      )
    expect(bad).toEqual([])
  })

  it("keeps no listener map in events/: subscribers are the fan-out's (yoga's createPubSub on its event target)", () => {
    const bad = sourceFiles(path.join(SRC, 'events')).filter((file) =>
      /Map<[^>]*Set<|addListener|\.on\('message'/.test(readFileSync(file, 'utf8')),
    )
    expect(bad.map((file) => path.relative(SRC, file))).toEqual([])
  })

  it('routes session operations through one typed map, with no `any`', () => {
    const router = readFileSync(path.join(SRC, 'services/session-router.ts'), 'utf8')
    expect(router.match(/\bany\b(?!thing)/g) ?? []).toEqual([])
  })

  it("has no global write chain: a session's stream commits its own events, and neither the bus nor the batcher keeps a session's state", () => {
    for (const shared of ['events/event-bus.ts', 'events/event-batcher.ts'])
      expect(readFileSync(path.join(SRC, shared), 'utf8')).not.toMatch(/new Map</)
    const stream = readFileSync(path.join(SRC, 'events/session-stream.ts'), 'utf8')
    expect(stream).toMatch(/async commit\(\s*runId: string \| null,/)
  })

  it('reaches a session through one typed host: no operation is registered by name into a partial map', () => {
    const bad = sourceFiles(SRC).filter((file) =>
      /\.handle\(\s*'|Partial<Session(Operations|Changes|Reads)>/.test(readFileSync(file, 'utf8')),
    )
    expect(bad.map((file) => path.relative(SRC, file))).toEqual([])
  })

  it('runs one instance as the several-instance code: no module is told whether the database is shared', () => {
    const bad = sourceFiles(SRC).filter((file) => /\bshared\s*[:=?]|\.shared\b|SOLE_OWNERSHIP/.test(readFileSync(file, 'utf8')))
    expect(bad.map((file) => path.relative(SRC, file))).toEqual([])
  })
})
