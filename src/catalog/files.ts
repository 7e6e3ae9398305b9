import { readdirSync, readFileSync, statSync } from 'node:fs'
import path from 'node:path'
import { parse as parseYaml } from 'yaml'
import { z } from 'zod'
import {
  type BackendDefinition,
  backendSchema,
  describeIssues,
  type ProfileDefinition,
  type PromptDefinition,
  profileSchema,
  promptSchema,
  toPromptDefinition,
} from '../domain/definitions.js'

/** What the catalog folder defines, validated and cross-checked. */
export interface CatalogFiles {
  backends: BackendDefinition[]
  profiles: ProfileDefinition[]
  prompts: { id: string; description: string | null; definition: PromptDefinition }[]
}

/** A catalog file is wrong; the message names the file and the field. */
export class CatalogFileError extends Error {
  override name = 'CatalogFileError'
}

const fileSchema = z.strictObject({
  backends: z.array(backendSchema).optional(),
  profiles: z.array(profileSchema).optional(),
  prompts: z.array(promptSchema).optional(),
})

function catalogFilesIn(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && /\.(ya?ml|json)$/i.test(e.name))
    .map((e) => path.join(e.parentPath, e.name))
    .sort()
}

/** Loads every .yaml/.yml/.json file below `dir`; throws one CatalogFileError listing every problem. */
export function loadCatalogFiles(dir: string): CatalogFiles {
  if (!statSync(dir, { throwIfNoEntry: false })?.isDirectory()) throw new CatalogFileError(`catalog folder ${dir} does not exist`)
  const problems: string[] = []
  type Located<T> = { item: T; where: string }
  const backends: Located<BackendDefinition>[] = []
  const profiles: Located<ProfileDefinition>[] = []
  const prompts: Located<z.infer<typeof promptSchema>>[] = []

  for (const file of catalogFilesIn(dir)) {
    const relative = path.relative(process.cwd(), file)
    const name = relative.startsWith('..') ? file : relative
    let content: unknown
    try {
      content = parseYaml(readFileSync(file, 'utf8'))
    } catch (err) {
      problems.push(`${name}: not valid YAML/JSON: ${(err as Error).message.split('\n')[0]}`)
      continue
    }
    const parsed = fileSchema.safeParse(content ?? {})
    if (!parsed.success) {
      problems.push(
        ...describeIssues(parsed.error)
          .split('; ')
          .map((issue) => `${name}: ${issue}`),
      )
      continue
    }
    const locate = <T>(list: T[] | undefined, key: string, into: Located<T>[]) =>
      list?.forEach((item, i) => {
        into.push({ item, where: `${name}: ${key}[${i}]` })
      })
    locate(parsed.data.backends, 'backends', backends)
    locate(parsed.data.profiles, 'profiles', profiles)
    locate(parsed.data.prompts, 'prompts', prompts)
  }

  const indexById = <T extends { id: string }>(list: Located<T>[], kind: string) => {
    const byId = new Map<string, Located<T>>()
    for (const entry of list) {
      const first = byId.get(entry.item.id)
      if (first) problems.push(`${entry.where}.id: ${kind} '${entry.item.id}' is already defined at ${first.where}`)
      else byId.set(entry.item.id, entry)
    }
    return byId
  }
  const backendIds = indexById(backends, 'backend')
  const profileIds = indexById(profiles, 'profile')
  const promptIds = indexById(prompts, 'prompt')

  for (const { item, where } of profiles) {
    if (!backendIds.has(item.backendId)) problems.push(`${where}.backendId: unknown backend '${item.backendId}'`)
    item.candidates?.forEach((c, i) => {
      if (!profileIds.has(c)) problems.push(`${where}.candidates[${i}]: unknown profile '${c}'`)
    })
  }
  for (const { item, where } of prompts) {
    if (item.defaultProfileId && !profileIds.has(item.defaultProfileId)) {
      problems.push(`${where}.defaultProfileId: unknown profile '${item.defaultProfileId}'`)
    }
    item.parallel?.profiles.forEach((id, i) => {
      if (!profileIds.has(id)) problems.push(`${where}.parallel.profiles[${i}]: unknown profile '${id}'`)
    })
    const judge = item.parallel?.judgePromptId
    if (judge && !promptIds.has(judge)) problems.push(`${where}.parallel.judgePromptId: unknown prompt '${judge}'`)
  }
  if (problems.length > 0) throw new CatalogFileError(`invalid catalog:\n  ${problems.join('\n  ')}`)

  return {
    backends: backends.map((b) => b.item),
    profiles: profiles.map((p) => p.item),
    prompts: prompts.map(({ item }) => ({ id: item.id, ...toPromptDefinition(item) })),
  }
}
