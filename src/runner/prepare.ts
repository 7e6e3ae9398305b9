import type { Backend, CatalogReader, Profile, Prompt } from '../domain/catalog.js'
import type { ContentPart } from '../domain/content-parts.js'
import { credentialEnvAllowed, endpointAllowed, type SecretLookup } from '../domain/credentials.js'
import type { OutputContract, SettingsLayer } from '../domain/definitions.js'
import {
  CredentialsError,
  InvalidRequestError,
  NotFoundError,
  ProfileLoadError,
  ProfileRequiredError,
  PromptLoadError,
} from '../domain/errors.js'
import { hashValue } from '../domain/hash.js'
import { compileOutputSchema } from '../domain/output-schema.js'
import type { ChatMessage, RunRequest } from '../domain/records.js'
import { promptCacheKey } from '../domain/settings.js'
import { renderTemplates } from '../domain/template.js'
import { serverRefused, type ToolServerAccess } from '../domain/tool-servers.js'
import { mergeTooling, pairedHistory, type ToolCall, type Tooling, type ToolLayer, toolLayerOf, undeclaredChoice } from '../domain/tools.js'
import { unsupportedSetting, unsupportedTooling } from '../providers/capabilities.js'
import { type OutputEnforcementPlan, outputEnforcementFor } from '../providers/structured-output.js'
import { admitParts as checkedParts, type FileLookup, renderParts, withRequestParts } from './message-parts.js'
import { type ProfileTarget, profileTarget } from './profile-target.js'
import { includedText, NO_INCLUDES, type ResolvedIncludes, resolveIncludes } from './prompt-includes.js'
import { choosePrompt } from './prompt-ref.js'

/** The sessions a request may name (their default profile). */
export interface SessionLookup {
  find(tenantId: string, id: string): Promise<{ defaultProfileId: string | null } | null>
}

/** A message of a session's history, as a prompt renders it after its system messages. */
type StoredMessage = { role: string; content: string; parts: ContentPart[]; toolCalls: ToolCall[]; toolCallId: string | null }

function missingProfile(id: string, promptId: string): never {
  throw new ProfileLoadError(`parallel profile '${id}' of prompt '${promptId}' does not exist`)
}

/** A stored message as a model receives it. */
function toChatMessage(m: StoredMessage): ChatMessage {
  const message: ChatMessage = { role: m.role as ChatMessage['role'], content: m.content }
  if (m.parts.length > 0) message.parts = m.parts
  if (m.toolCalls.length > 0) message.toolCalls = m.toolCalls
  if (m.toolCallId !== null) message.toolCallId = m.toolCallId
  return message
}

/** The request's variables; a plain input is the `input` variable too, unless one is given. */
function variablesOf({ variables, input }: RunRequest): Record<string, unknown> {
  const given = variables ?? {}
  return input !== null && !Object.hasOwn(given, 'input') ? { ...given, input } : { ...given }
}

/** Some profile of the run (or of its candidates) must have its credential. */
function requireCredentials(profile: Profile, everyone: Candidate[]): void {
  if (everyone.some((c) => c.credential.available)) return
  const missing = everyone.map((c) =>
    c.credential.name ? `${c.credential.name} (profile '${c.profile.id}')` : `a credentialEnv for profile '${c.profile.id}'`,
  )
  throw new CredentialsError(
    `no credentials for profile '${profile.id}'${everyone.length > 1 ? ' or its candidates' : ''}: set ${missing.join(' or ')}`,
  )
}

/** A request's own output contract (an OpenAI response format) gets this many repairs. */
const REQUEST_CONTRACT_REPAIRS = 2

/** The leading system messages, and the rest. */
function splitLeadingSystem(messages: ChatMessage[]): [ChatMessage[], ChatMessage[]] {
  const first = messages.findIndex((m) => m.role !== 'system')
  const split = first < 0 ? messages.length : first
  return [messages.slice(0, split), messages.slice(split)]
}

/** One profile a run may use: the requested one first, then its failover candidates. */
export interface Candidate extends ProfileTarget {
  profile: Profile
  backend: Backend
  /** The tools it offers the model: the profile's, the prompt's and the request's; null when none. */
  tooling: Tooling | null
  /** The vendor's prompt-cache routing key (OpenAI's prompt_cache_key); null when none is asked for. */
  promptCacheKey: string | null
  /** How it enforces the output contract, with the schema its vendor is sent. */
  output: OutputEnforcementPlan
}

/** The cheap half: everything routing and admission need, no rendering, no model. */
export interface Resolution extends ProfileTarget {
  /** The profile first, then its candidates in priority order. */
  candidates: Candidate[]
  /** For a parallel prompt: one such chain per parallel profile. */
  parallel: Candidate[][] | null
  tenantId: string
  sessionId: string | null
  /** Null for a plain `input` message; else the version chosen. */
  prompt: Prompt | null
  /** The label that chose the version (`latest` included), and a split label's bucket. */
  promptLabel: string | null
  splitBucket: number | null
  /** The prompt versions its includes stand for, fixed here. */
  includes: ResolvedIncludes
  input: string | null
  /** The request's own parts, for its user message. */
  parts: ContentPart[] | null
  /** The conversation the request gives whole, after the prompt's messages. */
  messages: ChatMessage[] | null
  profile: Profile
  backend: Backend
  output: OutputContract
  /** Repair generations after an invalid answer: the prompt's, else a request contract's default. */
  maxRepairs: number
  variables: Record<string, unknown>
}

/** Resolved and rendered once, at admission: everything a run sends but the session history. */
export interface AdmittedPrompt extends Resolution {
  /** The leading system messages, which go before the history. */
  leading: ChatMessage[]
  /** What this prompt adds to the conversation: its rendered messages after the system ones. */
  turn: ChatMessage[]
}

/** The whole request as a model receives it: the admitted prompt around the history as it is now. */
export interface PreparedPrompt extends AdmittedPrompt {
  messages: ChatMessage[]
  renderedHash: string
}

/**
 * A request's resolution and completion, for a request validated at the service boundary:
 * load the prompt, pick and load the profile and backend, merge settings, resolve credentials
 * and the output contract, and render the templates (`admit`, once per request); then place the
 * rendering around the session history as it is when the run starts and hash it (`assemble`).
 */
export class PromptPreparer {
  constructor(
    private readonly catalog: CatalogReader,
    private readonly sessions: SessionLookup,
    private readonly secrets: SecretLookup,
    /** Uploaded files that message parts name. */
    private readonly files: FileLookup,
    /** Variables any backend's key may be taken from, besides those the backend names. */
    private readonly credentialEnvAllowlist: readonly string[] = [],
    /** The MCP servers runs may call. */
    private readonly toolServerAccess: ToolServerAccess = { origins: [], headerEnvs: [] },
  ) {}

  /** A dry run: admission, then assembly around the session's `history`. */
  async prepare(
    tenantId: string,
    sessionId: string | null,
    request: RunRequest,
    history: readonly StoredMessage[],
  ): Promise<PreparedPrompt> {
    return this.assemble(await this.admit(tenantId, sessionId, request), history)
  }

  /** Resolves and renders a request without reading the history: what admission checks and keeps. */
  async admit(tenantId: string, sessionId: string | null, request: RunRequest): Promise<AdmittedPrompt> {
    const rendered = this.render(await this.resolve(tenantId, sessionId, request))
    const everyone = rendered.parallel?.flat() ?? rendered.candidates
    const admitParts = (messages: ChatMessage[]) => checkedParts(messages, tenantId, this.files, everyone)
    return { ...rendered, leading: await admitParts(rendered.leading), turn: await admitParts(rendered.turn) }
  }

  private async resolve(tenantId: string, sessionId: string | null, request: RunRequest): Promise<Resolution> {
    // 1. the request was validated by the service; a plain input is the `input` variable too
    const { promptId, input, profileId: requestProfileId, overrides, credentialEnv: requestEnv } = request
    const variables = variablesOf(request)
    const session = sessionId === null ? null : await this.sessions.find(tenantId, sessionId)
    if (sessionId !== null && !session) throw new NotFoundError('session', sessionId)

    // 2. the prompt definition, at the version the request (or its admission) chose
    const chosen = promptId === null ? null : await choosePrompt(this.catalog, tenantId, sessionId, { ...request, promptId })
    const prompt = chosen?.prompt ?? null
    const pinned = request.admission?.includes
    const includes = prompt ? await resolveIncludes(this.catalog, tenantId, sessionId, prompt, pinned, 'promptId') : NO_INCLUDES

    // 3. the profile
    const parallelSpec = prompt?.definition.parallel ?? null
    const profile = await this.chooseProfile(tenantId, sessionId, requestProfileId, prompt, session?.defaultProfileId ?? null)

    // 4.-6. the backend, settings (defaults < backend < profile < request) and credentials, for
    // the profile and each failover candidate (for each parallel profile)
    const toolLayers = [prompt?.definition, request.tools]
    const scope = { tenantId, sessionId, promptId: prompt?.id ?? null }
    const output = request.output ?? prompt?.definition.output ?? { kind: 'TEXT', schema: null }
    const chain = (of: Profile) => this.chain(scope, of, { overrides, requestEnv, toolLayers, output })
    const candidates = await chain(profile)
    const parallel = parallelSpec
      ? await Promise.all(
          parallelSpec.profiles.map(async (id) => chain((await this.catalog.getProfile(tenantId, id)) ?? missingProfile(id, prompt!.id))),
        )
      : null
    requireCredentials(profile, parallel ? parallel.flat() : candidates)
    const primary = candidates[0]!

    // 7. the output contract (its schema is compiled in the completion phase)
    return {
      tenantId,
      sessionId,
      prompt,
      promptLabel: chosen?.label ?? null,
      splitBucket: chosen?.bucket ?? null,
      includes,
      input,
      parts: request.parts ?? null,
      messages: request.messages ?? null,
      profile,
      backend: primary.backend,
      model: primary.model,
      endpoint: primary.endpoint,
      settings: primary.settings,
      credential: primary.credential,
      candidates,
      parallel,
      output,
      maxRepairs: prompt?.definition.maxRepairs ?? (request.output ? REQUEST_CONTRACT_REPAIRS : 0),
      variables,
    }
  }

  /** The request's profile, else the prompt's default, else the session's; a parallel prompt runs its own profiles. */
  private chooseProfile(
    tenantId: string,
    sessionId: string | null,
    requestProfileId: string | null,
    prompt: Prompt | null,
    sessionProfileId: string | null,
  ): Promise<Profile> {
    const parallelSpec = prompt?.definition.parallel ?? null
    if (parallelSpec && requestProfileId !== null) {
      throw InvalidRequestError.at('profileId', `prompt '${prompt!.id}' runs its parallel profiles; a profileId does not apply`)
    }
    const profileId = parallelSpec?.profiles[0] ?? requestProfileId ?? prompt?.definition.defaultProfileId ?? sessionProfileId
    return this.loadProfile(tenantId, profileId, requestProfileId !== null, { prompt, sessionId })
  }

  /** The profile chosen; `requested`: the request named it (a missing one is then NOT_FOUND, not a broken default). */
  private async loadProfile(
    tenantId: string,
    profileId: string | null,
    requested: boolean,
    of: { prompt: Prompt | null; sessionId: string | null },
  ): Promise<Profile> {
    const { prompt, sessionId } = of
    if (profileId === null) {
      throw new ProfileRequiredError(
        prompt
          ? `prompt '${prompt.id}' has no default profile: pass profileId`
          : 'a plain input needs a profileId (or a session default profile)',
      )
    }
    const profile = await this.catalog.getProfile(tenantId, profileId)
    if (!profile) {
      if (requested) throw new NotFoundError('profile', profileId)
      throw new ProfileLoadError(
        `default profile '${profileId}' of ${prompt ? `prompt '${prompt.id}'` : `session '${sessionId}'`} does not exist`,
      )
    }
    return profile
  }

  /** A profile and its failover candidates, each with its backend, settings and credential. */
  private async chain(
    scope: { tenantId: string; sessionId: string | null; promptId: string | null },
    profile: Profile,
    asked: {
      overrides: SettingsLayer | null
      requestEnv: string | null
      toolLayers: (ToolLayer | null | undefined)[]
      output: OutputContract
    },
  ): Promise<Candidate[]> {
    const { overrides, requestEnv, toolLayers } = asked
    const chain: Candidate[] = []
    for (const id of [profile.id, ...(profile.candidates ?? [])]) {
      const member = id === profile.id ? profile : await this.catalog.getProfile(scope.tenantId, id)
      if (!member) throw new ProfileLoadError(`candidate profile '${id}' of profile '${profile.id}' does not exist`)
      const backend = this.catalog.getBackend(member.backendId)
      if (!backend) throw new ProfileLoadError(`profile '${member.id}' names unknown backend '${member.backendId}'`)
      this.checkRouting(member, backend, requestEnv)
      const target = profileTarget(member, backend, overrides, requestEnv, this.secrets)
      const unsupported = unsupportedSetting(backend, target.settings)
      if (unsupported) throw InvalidRequestError.at('overrides', `profile '${member.id}': ${unsupported}`)
      const tooling = mergeTooling([toolLayerOf(member), ...toolLayers])
      const undeclared = tooling && undeclaredChoice(tooling)
      if (undeclared) throw InvalidRequestError.at('tools.toolChoice', `names tool '${undeclared}', which is not declared`)
      const toolProblem = tooling && unsupportedTooling(backend, tooling)
      if (toolProblem) throw InvalidRequestError.at('tools.parallelToolCalls', `profile '${member.id}': ${toolProblem}`)
      for (const server of tooling?.mcpServers ?? []) {
        const refused = serverRefused(server, this.toolServerAccess)
        if (refused) throw InvalidRequestError.at('mcpServers', refused)
      }
      const output = outputEnforcementFor(backend, asked.output)
      if (asked.output.enforcement === 'NATIVE' && output.problem !== null) {
        throw InvalidRequestError.at('promptId', `profile '${member.id}' cannot enforce the output schema natively: ${output.problem}`)
      }
      const cacheKey = promptCacheKey(target.settings.promptCache, scope)
      chain.push({ profile: member, backend, ...target, tooling, promptCacheKey: cacheKey, output })
    }
    return chain
  }

  /** A client may not route a server-held key: its env names and endpoints must be the operator's. */
  private checkRouting(profile: Profile, backend: Backend, requestEnv: string | null): void {
    if (requestEnv !== null && !credentialEnvAllowed(backend, requestEnv, this.credentialEnvAllowlist)) {
      throw InvalidRequestError.at('credentialEnv', `'${requestEnv}' is not a credential variable backend '${backend.id}' allows`)
    }
    // catalog files are the operator's own; API profiles were checked when saved, and again here
    if (profile.source !== 'API') return
    if (!endpointAllowed(backend, profile.endpoint)) {
      throw new ProfileLoadError(`profile '${profile.id}' sends to an endpoint backend '${backend.id}' does not allow`)
    }
    if (profile.credentialEnv && !credentialEnvAllowed(backend, profile.credentialEnv, this.credentialEnvAllowlist)) {
      throw new ProfileLoadError(`profile '${profile.id}' names a credential variable backend '${backend.id}' does not allow`)
    }
  }

  /** Step 7's schema check and the rendering of the templates; no history is read. */
  private render(resolution: Resolution): AdmittedPrompt {
    const { prompt, output } = resolution
    if (prompt && output.kind === 'JSON_SCHEMA' && output.schema) {
      const { error } = compileOutputSchema(output.schema)
      if (error !== undefined) throw new PromptLoadError(`output schema of prompt '${prompt.id}' does not compile: ${error}`)
    }
    // a plain input is sent as it is: it is the user's text, not a template; a conversation given whole stands for it
    const given = resolution.messages ?? []
    let rendered: ChatMessage[] = given.length > 0 && resolution.input === null ? [] : [{ role: 'user', content: resolution.input ?? '' }]
    if (prompt) {
      const templates = prompt.definition.messages
      const included = includedText(resolution.includes)
      const contents = renderTemplates(
        templates.map((m) => m.content),
        resolution.variables,
        included,
      )
      const parts = renderParts(templates, resolution.variables, included)
      rendered = templates.map((m, i) => ({ role: m.role, content: contents[i]!, ...(parts[i] && { parts: parts[i] }) }))
    }
    const [leading, turn] = splitLeadingSystem(rendered)
    const [givenLeading, givenTurn] = splitLeadingSystem(given)
    return {
      ...resolution,
      leading: [...leading, ...givenLeading],
      turn: withRequestParts([...turn, ...givenTurn], resolution.parts ?? undefined),
    }
  }

  /** The admitted rendering after the leading system messages and the session's history as it is now. */
  assemble(admitted: AdmittedPrompt, stored: readonly StoredMessage[]): PreparedPrompt {
    const history = pairedHistory(stored).map(toChatMessage)
    const messages = [...admitted.leading, ...history, ...admitted.turn]
    return { ...admitted, messages, renderedHash: hashValue(messages) }
  }
}
