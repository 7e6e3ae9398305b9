// A V8 CPU profile's busy time by package: each sample's time goes to the package of the
// function it was in (from node_modules/<package>/ in its script's URL, `promptline` for dist/,
// `node` for node:… internals), and a frame with no script of its own (a builtin, WebAssembly,
// native code) counts for the nearest caller that has one: Prisma's query-compiler wasm for
// @prisma/client, SQLite's own work for better-sqlite3 (whose statements the bench's counter
// wraps). Garbage collection is its own line; idle time is not busy.
import { readFileSync } from 'node:fs'

interface ProfileNode {
  id: number
  callFrame: { functionName: string; url: string }
  children?: number[]
}
interface CpuProfile {
  nodes: ProfileNode[]
  samples: number[]
  timeDeltas: number[]
}

function packageOf(url: string): string | null {
  // the bench's statement counter wraps the driver's own calls: its time is the driver's
  if (url.endsWith('bench/count-sql.mjs')) return 'better-sqlite3'
  const modules = url.lastIndexOf('node_modules/')
  if (modules >= 0) {
    const [scope, name] = url.slice(modules + 'node_modules/'.length).split('/')
    return scope!.startsWith('@') ? `${scope}/${name}` : scope!
  }
  if (url.includes('/dist/') || url.includes('/src/')) return 'promptline'
  if (url.startsWith('node:')) return 'node'
  return null
}

/** Busy milliseconds by package, largest first, with the total. */
export function busyByPackage(file: string): { total: number; shares: { name: string; ms: number; percent: number }[] } {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile
  const parent = new Map<number, ProfileNode>()
  const byId = new Map(profile.nodes.map((node) => [node.id, node]))
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node)
  const owner = new Map<number, string | null>()
  const ownerOf = (node: ProfileNode): string | null => {
    if (owner.has(node.id)) return owner.get(node.id)!
    const { functionName, url } = node.callFrame
    const up = parent.get(node.id)
    // idle time, and the profiler's own work (taking the profile), are no part of the server's
    const notBusy = functionName === '(idle)' || url.endsWith('bench/cpu-profiler.mjs') || (up !== undefined && ownerOf(up) === null)
    const name = notBusy
      ? null
      : functionName === '(garbage collector)'
        ? 'garbage collection'
        : (packageOf(url) ?? (up ? ownerOf(up) : 'native'))
    owner.set(node.id, name)
    return name
  }
  const ms = new Map<string, number>()
  profile.samples.forEach((id, i) => {
    const name = ownerOf(byId.get(id)!)
    if (name !== null) ms.set(name, (ms.get(name) ?? 0) + (profile.timeDeltas[i] ?? 0) / 1000)
  })
  const total = [...ms.values()].reduce((a, b) => a + b, 0)
  const shares = [...ms]
    .map(([name, time]) => ({ name, ms: Math.round(time), percent: Math.round((time / total) * 1000) / 10 }))
    .sort((a, b) => b.ms - a.ms)
  return { total: Math.round(total), shares }
}

/** The ORM's and the SQLite driver's part: Prisma's packages (their wasm included) and better-sqlite3. */
export const isDatabaseRuntime = (name: string) => name.startsWith('@prisma/') || name === 'better-sqlite3'
