import type { CapacityPools, CapacitySnapshot } from '../capacity/capacity-pool.js'
import type { Catalog } from '../catalog/catalog.js'
import { type Principal, recordedKeyId } from '../domain/access.js'
import { type Backend, CATALOG_TENANT, type Profile, type Prompt, type PromptVersion } from '../domain/catalog.js'
import { credentialEnvAllowed, endpointAllowed, type SecretLookup } from '../domain/credentials.js'
import { idSchema, parseInput, profileSchema, promptSchema, templateTextsOf, toPromptDefinition } from '../domain/definitions.js'
import { ForbiddenError, InvalidRequestError, LabelConflictError, NotFoundError } from '../domain/errors.js'
import { type PromptDiff, promptDiff } from '../domain/prompt-diff.js'
import { labelMoveSchema, type PromptLabel, type PromptLabelMove } from '../domain/prompt-labels.js'
import { templateIncludes } from '../domain/template.js'
import type { CatalogEvents } from '../events/catalog-events.js'
import { type ProfileTarget, profileTarget } from '../runner/profile-target.js'
import { resolveIncludes } from '../runner/prompt-includes.js'

export interface ProfileInspection extends ProfileTarget {
  profile: Profile
  backend: Backend
}

/** Profiles written through the API take no direct key: secrets belong in env vars. */
const apiProfileSchema = profileSchema.omit({ apiKey: true })

/** Two versions of a prompt and what changed from the one to the other. */
export interface PromptVersionDiff extends PromptDiff {
  promptId: string
  from: PromptVersion
  to: PromptVersion
}

export interface CatalogPolicy {
  /** Variables any backend's key may be taken from, besides those the backend names. */
  credentialEnvAllowlist: readonly string[]
  /** Labels only an admin key may move. */
  protectedLabels: ReadonlySet<string>
}

/** Use cases over the prompt and profile catalog: listing, inspecting, creating, deleting; versions and labels. */
export class CatalogService {
  constructor(
    private readonly catalog: Catalog,
    private readonly secrets: SecretLookup,
    private readonly capacity: CapacityPools,
    private readonly events: CatalogEvents,
    private readonly policy: CatalogPolicy,
  ) {}

  /** A backend's capacity limits and what is in use right now. */
  capacityOf(backend: Backend): CapacitySnapshot {
    return this.capacity.get(backend).snapshot()
  }

  listPrompts(tenantId: string, afterId: string | null, limit: number): Promise<Prompt[]> {
    return this.catalog.listPrompts(tenantId, afterId, limit)
  }

  async getPrompt(tenantId: string, id: string): Promise<Prompt | null> {
    return this.catalog.getPrompt(tenantId, parseInput(idSchema, id, 'id'))
  }

  async inspectPrompt(tenantId: string, id: string): Promise<Prompt> {
    const prompt = await this.getPrompt(tenantId, id)
    if (!prompt) throw new NotFoundError('prompt', id)
    return prompt
  }

  async upsertPrompt(principal: Principal, input: unknown): Promise<Prompt> {
    const { tenantId } = principal
    const parsed = parseInput(promptSchema, input, 'input')
    const { description, definition } = toPromptDefinition(parsed)
    for (const profileId of [definition.defaultProfileId, ...(definition.parallel?.profiles ?? [])]) {
      if (profileId && !(await this.catalog.getProfile(tenantId, profileId))) throw new NotFoundError('profile', profileId)
    }
    const judge = definition.parallel?.judgePromptId
    if (judge && judge !== parsed.id && !(await this.catalog.getPrompt(tenantId, judge))) throw new NotFoundError('prompt', judge)
    // every include must exist, and none may lead back here (as the labels stand now)
    await resolveIncludes(this.catalog, tenantId, null, { id: parsed.id, definition }, undefined, 'input.messages')
    const before = await this.catalog.getPrompt(tenantId, parsed.id)
    const saved = await this.catalog.savePrompt(tenantId, parsed.id, description, definition, recordedKeyId(principal))
    if (saved.version !== before?.version) {
      const version = await this.catalog.getPromptVersion(tenantId, saved.id, saved.version)
      if (version) this.events.publish(tenantId, { type: 'PROMPT_VERSION_CREATED', version })
    }
    return saved
  }

  /** A prompt's versions, newest first, below `beforeVersion`. */
  promptVersions(tenantId: string, id: string, beforeVersion: number | null, limit: number): Promise<PromptVersion[]> {
    return this.catalog.promptVersions(tenantId, id, beforeVersion, limit)
  }

  promptVersion(tenantId: string, id: string, version: number): Promise<PromptVersion | null> {
    return this.catalog.getPromptVersion(tenantId, id, version)
  }

  /** What changed from one stored version of a prompt to another. */
  async promptDiff(tenantId: string, id: string, from: number, to: number): Promise<PromptVersionDiff> {
    const promptId = parseInput(idSchema, id, 'id')
    const [before, after] = await Promise.all([from, to].map((v) => this.catalog.getPromptVersion(tenantId, promptId, v)))
    if (!before) throw new NotFoundError('prompt version', `${promptId}#${from}`)
    if (!after) throw new NotFoundError('prompt version', `${promptId}#${to}`)
    return { promptId, from: before, to: after, ...promptDiff(before.definition, after.definition) }
  }

  promptLabels(tenantId: string, id: string): Promise<PromptLabel[]> {
    return this.catalog.listPromptLabels(tenantId, id)
  }

  promptLabelMoves(tenantId: string, id: string, label: string | null, limit: number): Promise<PromptLabelMove[]> {
    return this.catalog.promptLabelMoves(tenantId, id, label, limit)
  }

  /**
   * Moves a label to a version, or to a split, if it names `expectedVersion` now (compare-and-set);
   * a protected label needs an admin key. The move is kept, then published to catalog subscribers.
   */
  async setPromptLabel(principal: Principal, input: unknown): Promise<PromptLabel> {
    const { tenantId } = principal
    const move = parseInput(labelMoveSchema, input, 'input')
    if (this.policy.protectedLabels.has(move.label) && principal.role !== 'admin') {
      throw new ForbiddenError(`label '${move.label}' is protected: moving it needs an admin key`)
    }
    if (!(await this.catalog.getPrompt(tenantId, move.promptId))) throw new NotFoundError('prompt', move.promptId)
    const versions = move.split ? move.split.map((s) => s.version) : [move.version!]
    for (const version of versions) {
      if (!(await this.catalog.getPromptVersion(tenantId, move.promptId, version))) {
        throw new NotFoundError('prompt version', `${move.promptId}#${version}`)
      }
    }
    const outcome = await this.catalog.movePromptLabel({
      tenantId,
      promptId: move.promptId,
      label: move.label,
      version: versions[0]!,
      split: move.split ?? null,
      expectedVersion: move.expectedVersion ?? null,
      keyId: recordedKeyId(principal),
    })
    if ('conflict' in outcome) {
      const now = outcome.current === null ? 'does not exist' : `names version ${outcome.current}`
      throw new LabelConflictError(`label '${move.label}' of prompt '${move.promptId}' ${now}; nothing changed`, outcome.current)
    }
    this.events.publish(tenantId, { type: 'PROMPT_LABEL_MOVED', move: outcome.moved })
    return outcome.label
  }

  /** The tenant's catalog changes from now on. */
  catalogEvents(tenantId: string) {
    return this.events.subscribe(tenantId)
  }

  async deletePrompt(tenantId: string, id: string): Promise<string> {
    const dependents = await this.includersOf(tenantId, parseInput(idSchema, id, 'id'))
    if (dependents.length > 0) {
      const names = dependents.map((d) => `'${d}'`).join(', ')
      throw InvalidRequestError.at('id', `prompt '${id}' is included by ${names}; remove those includes first`)
    }
    const outcome = await this.catalog.deletePrompt(tenantId, id)
    if (outcome === 'missing') throw new NotFoundError('prompt', id)
    if (outcome === 'catalog') throw InvalidRequestError.at('id', `prompt '${id}' is defined in the catalog files; change it there`)
    return id
  }

  /** The prompts the tenant sees whose templates include `id`, unless a catalog prompt of that id would stand in for it. */
  private async includersOf(tenantId: string, id: string): Promise<string[]> {
    if (await this.catalog.getPrompt(CATALOG_TENANT, id)) return []
    const includers: string[] = []
    for (let after: string | null = null; ; ) {
      const page = await this.catalog.listPrompts(tenantId, after, 200)
      for (const prompt of page) {
        const includes = templateIncludes(templateTextsOf(prompt.definition.messages))
        if (prompt.id !== id && includes.some((ref) => ref.promptId === id)) includers.push(prompt.id)
      }
      if (page.length < 200) return includers
      after = page.at(-1)!.id
    }
  }

  listProfiles(tenantId: string): Promise<Profile[]> {
    return this.catalog.listProfiles(tenantId)
  }

  async getProfile(tenantId: string, id: string): Promise<Profile | null> {
    return this.catalog.getProfile(tenantId, parseInput(idSchema, id, 'id'))
  }

  async inspectProfile(tenantId: string, id: string): Promise<ProfileInspection> {
    const profile = await this.getProfile(tenantId, id)
    if (!profile) throw new NotFoundError('profile', id)
    const backend = this.catalog.getBackend(profile.backendId)
    if (!backend) throw new NotFoundError('backend', profile.backendId)
    return { profile, backend, ...profileTarget(profile, backend, null, null, this.secrets) }
  }

  async upsertProfile(tenantId: string, input: unknown): Promise<Profile> {
    const definition = parseInput(apiProfileSchema, input, 'input')
    const backend = this.catalog.getBackend(definition.backendId)
    if (!backend) throw new NotFoundError('backend', definition.backendId)
    // a client must not be able to send a server-held key, or read a server variable, anywhere
    if (!endpointAllowed(backend, definition.endpoint)) {
      throw InvalidRequestError.at(
        'input.endpoint',
        `backend '${backend.id}' does not allow this endpoint (the operator lists them in its endpoints)`,
      )
    }
    if (definition.credentialEnv && !credentialEnvAllowed(backend, definition.credentialEnv, this.policy.credentialEnvAllowlist)) {
      throw InvalidRequestError.at(
        'input.credentialEnv',
        `'${definition.credentialEnv}' is not a credential variable backend '${backend.id}' allows (see PROMPTLINE_CREDENTIAL_ENV_ALLOWLIST)`,
      )
    }
    for (const candidate of definition.candidates ?? []) {
      if (candidate === definition.id) throw InvalidRequestError.at('input.candidates', 'a profile cannot be its own candidate')
      if (!(await this.catalog.getProfile(tenantId, candidate))) throw new NotFoundError('profile', candidate)
    }
    return this.catalog.saveProfile(tenantId, definition)
  }

  async deleteProfile(tenantId: string, id: string): Promise<string> {
    const outcome = await this.catalog.deleteProfile(tenantId, parseInput(idSchema, id, 'id'))
    if (outcome === 'missing') throw new NotFoundError('profile', id)
    if (outcome === 'catalog') throw InvalidRequestError.at('id', `profile '${id}' is defined in the catalog files; change it there`)
    return id
  }

  listBackends(): Backend[] {
    return this.catalog.listBackends()
  }
}
