import { LRUCache } from 'lru-cache'
import {
  type Backend,
  CATALOG_TENANT,
  type CatalogReader,
  type Profile,
  type Prompt,
  type PromptVersion,
  promptDefinitionHash,
} from '../domain/catalog.js'
import {
  describeIssues,
  type ProfileDefinition,
  type PromptDefinition,
  partVariablesOf,
  profileSchema,
  promptSchema,
  templateTextsOf,
  toPromptDefinition,
} from '../domain/definitions.js'
import { ProfileLoadError, PromptLoadError } from '../domain/errors.js'
import type { PromptLabel, PromptLabelMove } from '../domain/prompt-labels.js'
import { templateVariables } from '../domain/template.js'
import type { ProfileRow } from '../store/profile-store.js'
import type { LabelMoveOutcome, LabelMoveRequest } from '../store/prompt-label-store.js'
import type { PromptRow, PromptVersionRow } from '../store/prompt-store.js'
import type { Store } from '../store/store.js'
import type { CatalogFiles } from './files.js'

/**
 * Backends, profiles and prompts, layered: a tenant's own definition shadows the catalog
 * file's one with the same id. Backends are operator configuration and come from files only;
 * file profiles stay in memory (they may hold a direct key, which is never written anywhere);
 * file prompts are stored under CATALOG_TENANT so their versions survive restarts.
 */
export class Catalog implements CatalogReader {
  private readonly backends: Map<string, Backend>
  private readonly fileProfiles: Map<string, Profile>
  /**
   * Parsed lookups by tenant and id, so a run reads no definition from the database. This
   * process writes every change through save/delete below, which drop the entry. With several
   * instances another one may change a definition, so nothing is cached: every lookup reads.
   */
  private readonly prompts: LookupCache<Prompt>
  private readonly profiles: LookupCache<Profile>
  private readonly labels: LookupCache<PromptLabel>
  /** A stored version never changes, so it is kept once read, whoever else writes. */
  private readonly versions = new LRUCache<string, PromptVersion>({ max: 2_000 })

  private constructor(
    private readonly store: Store,
    files: CatalogFiles,
    cached: boolean,
  ) {
    this.prompts = new LookupCache(cached)
    this.profiles = new LookupCache(cached)
    this.labels = new LookupCache(cached)
    this.backends = new Map(files.backends.map((b) => [b.id, b]))
    this.fileProfiles = new Map(files.profiles.map((p) => [p.id, { ...p, source: 'CATALOG', updatedAt: null }]))
  }

  /** Writes the file prompts to the store (bumping versions of changed ones) and returns the catalog. */
  static async open(store: Store, files: CatalogFiles, { cached = true } = {}): Promise<Catalog> {
    for (const prompt of files.prompts) {
      await store.prompts.save({
        tenantId: CATALOG_TENANT,
        id: prompt.id,
        description: prompt.description,
        definition: prompt.definition,
        definitionHash: promptDefinitionHash(prompt.definition),
        floorVersion: await store.prompts.latestVersion(CATALOG_TENANT, prompt.id),
        authorKeyId: null,
      })
    }
    await store.prompts.deleteExcept(
      CATALOG_TENANT,
      files.prompts.map((p) => p.id),
    )
    return new Catalog(store, files, cached)
  }

  getBackend(id: string): Backend | null {
    return this.backends.get(id) ?? null
  }

  listBackends(): Backend[] {
    return [...this.backends.values()]
  }

  getPrompt(tenantId: string, id: string): Promise<Prompt | null> {
    return this.prompts.get(tenantId, id, async () => {
      const rows = await this.store.prompts.find([tenantId, CATALOG_TENANT], id)
      const row = rows.find((r) => r.tenantId === tenantId) ?? rows[0]
      return row ? toPrompt(row) : null
    })
  }

  /** Up to `limit` prompts with id > afterId, in id order, a tenant's own shadowing the catalog's. */
  async listPrompts(tenantId: string, afterId: string | null, limit: number): Promise<Prompt[]> {
    // Each id appears at most twice (tenant + catalog), so 2×limit rows always cover `limit` ids.
    const rows = await this.store.prompts.list([tenantId, CATALOG_TENANT], afterId, limit * 2)
    const byId = new Map<string, PromptRow>()
    for (const row of rows) if (!byId.has(row.id) || row.tenantId === tenantId) byId.set(row.id, row)
    return [...byId.values()].slice(0, limit).map(toPrompt)
  }

  async savePrompt(
    tenantId: string,
    id: string,
    description: string | null,
    definition: PromptDefinition,
    authorKeyId: string | null,
  ): Promise<Prompt> {
    const [catalogRows, latest] = await Promise.all([
      this.store.prompts.find([CATALOG_TENANT], id),
      this.store.prompts.latestVersion(tenantId, id),
    ])
    this.prompts.drop(tenantId, id)
    const row = await this.store.prompts.save({
      tenantId,
      id,
      description,
      definition,
      definitionHash: promptDefinitionHash(definition),
      // a shadowing prompt continues the numbering of the one it shadows, and a re-created
      // one the numbering of its deleted predecessor: a (id, version) pair is never reused
      floorVersion: Math.max(latest, catalogRows[0]?.version ?? 0),
      authorKeyId,
    })
    this.prompts.drop(tenantId, id) // a lookup that raced the write may have cached the old row
    return toPrompt(row)
  }

  /** Deletes a tenant's own prompt; a file-defined one cannot be deleted through the API. */
  async deletePrompt(tenantId: string, id: string): Promise<'deleted' | 'catalog' | 'missing'> {
    this.prompts.drop(tenantId, id)
    if (await this.store.prompts.delete(tenantId, id)) return 'deleted'
    return (await this.store.prompts.find([CATALOG_TENANT], id)).length > 0 ? 'catalog' : 'missing'
  }

  /** The versions of a prompt id the tenant sees, newest first: its own, and the catalog file's it shadows. */
  async promptVersions(tenantId: string, id: string, beforeVersion: number | null, limit: number): Promise<PromptVersion[]> {
    // a version number is stored at most twice (tenant + catalog), so 2×limit rows cover `limit` versions
    const rows = await this.store.prompts.versions([tenantId, CATALOG_TENANT], id, beforeVersion, limit * 2)
    const byVersion = new Map<number, PromptVersionRow>()
    for (const row of rows) if (!byVersion.has(row.version) || row.tenantId === tenantId) byVersion.set(row.version, row)
    return [...byVersion.values()].slice(0, limit).map(toPromptVersion)
  }

  async getPromptVersion(tenantId: string, id: string, version: number): Promise<PromptVersion | null> {
    const key = `${tenantId}/${id}#${version}`
    const kept = this.versions.get(key)
    if (kept) return kept
    const rows = await this.store.prompts.version([tenantId, CATALOG_TENANT], id, version)
    const row = rows.find((r) => r.tenantId === tenantId) ?? rows[0]
    if (!row) return null
    const found = toPromptVersion(row)
    this.versions.set(key, found)
    return found
  }

  getPromptLabel(tenantId: string, promptId: string, name: string): Promise<PromptLabel | null> {
    return this.labels.get(tenantId, `${promptId}@${name}`, () => this.store.labels.find(tenantId, promptId, name))
  }

  listPromptLabels(tenantId: string, promptId: string): Promise<PromptLabel[]> {
    return this.store.labels.list(tenantId, promptId)
  }

  async movePromptLabel(request: LabelMoveRequest): Promise<LabelMoveOutcome> {
    const key = `${request.promptId}@${request.label}`
    this.labels.drop(request.tenantId, key)
    const outcome = await this.store.labels.move(request)
    this.labels.drop(request.tenantId, key) // a lookup that raced the move may have cached the old label
    return outcome
  }

  promptLabelMoves(tenantId: string, promptId: string, label: string | null, limit: number): Promise<PromptLabelMove[]> {
    return this.store.labels.moves(tenantId, promptId, label, limit)
  }

  getProfile(tenantId: string, id: string): Promise<Profile | null> {
    return this.profiles.get(tenantId, id, async () => {
      const [row] = await this.store.profiles.find([tenantId], id)
      return row ? toProfile(row) : (this.fileProfiles.get(id) ?? null)
    })
  }

  async listProfiles(tenantId: string): Promise<Profile[]> {
    const merged = new Map(this.fileProfiles)
    for (const row of await this.store.profiles.list([tenantId])) merged.set(row.id, toProfile(row))
    return [...merged.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
  }

  async saveProfile(tenantId: string, definition: ProfileDefinition): Promise<Profile> {
    this.profiles.drop(tenantId, definition.id)
    const row = await this.store.profiles.save(tenantId, definition.id, definition)
    this.profiles.drop(tenantId, definition.id) // a lookup that raced the write may have cached the old row
    return toProfile(row)
  }

  async deleteProfile(tenantId: string, id: string): Promise<'deleted' | 'catalog' | 'missing'> {
    this.profiles.drop(tenantId, id)
    if (await this.store.profiles.delete(tenantId, id)) return 'deleted'
    return this.fileProfiles.has(id) ? 'catalog' : 'missing'
  }
}

/** Lookups by (tenant, id), misses included; bounded by clearing when full; off, every lookup loads. */
class LookupCache<T> {
  private readonly entries = new Map<string, Promise<T | null>>()
  constructor(
    private readonly enabled: boolean,
    private readonly max = 10_000,
  ) {}

  get(tenantId: string, id: string, load: () => Promise<T | null>): Promise<T | null> {
    if (!this.enabled) return load()
    const key = `${tenantId}/${id}`
    let found = this.entries.get(key)
    if (!found) {
      if (this.entries.size >= this.max) this.entries.clear()
      found = load()
      this.entries.set(key, found)
      found.catch(() => this.entries.delete(key))
    }
    return found
  }

  drop(tenantId: string, id: string): void {
    this.entries.delete(`${tenantId}/${id}`)
  }
}

/** What a prompt's row and a stored version of it hold alike, checked on the way out. */
function storedPrompt(
  row: { tenantId: string; version: number; definitionHash: string; definition: unknown },
  id: string,
  description: string | null,
) {
  const parsed = promptSchema.safeParse({ id, description, ...(row.definition as object) })
  if (!parsed.success) {
    throw new PromptLoadError(`prompt '${id}' version ${row.version} has an invalid stored definition: ${describeIssues(parsed.error)}`)
  }
  const { description: described, definition } = toPromptDefinition(parsed.data)
  return {
    source: row.tenantId === CATALOG_TENANT ? ('CATALOG' as const) : ('API' as const),
    version: row.version,
    definitionHash: row.definitionHash,
    description: described,
    definition,
    variables: [...new Set([...templateVariables(templateTextsOf(definition.messages)), ...partVariablesOf(definition.messages)])],
  }
}

function toPromptVersion(row: PromptVersionRow): PromptVersion {
  const { description: _, ...stored } = storedPrompt(row, row.promptId, null)
  return { promptId: row.promptId, ...stored, authorKeyId: row.authorKeyId, createdAt: row.createdAt }
}

function toPrompt(row: PromptRow): Prompt {
  return { id: row.id, ...storedPrompt(row, row.id, row.description), updatedAt: row.updatedAt }
}

function toProfile(row: ProfileRow): Profile {
  const parsed = profileSchema.safeParse(row.definition)
  if (!parsed.success) throw new ProfileLoadError(`profile '${row.id}' has an invalid stored definition: ${describeIssues(parsed.error)}`)
  return { ...parsed.data, source: 'API', updatedAt: row.updatedAt }
}
