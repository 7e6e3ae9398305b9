import type { Profile } from '../domain/catalog.js'
import type { Credential } from '../domain/credentials.js'
import type { StreamFailurePolicy } from '../domain/definitions.js'
import { NotFoundError } from '../domain/errors.js'
import { toolLayerOf } from '../domain/tools.js'
import type { ProfileInspection } from '../services/catalog-service.js'
import { BackendRef } from './backend.js'
import { builder } from './builder.js'
import { describedValues } from './described.js'
import { DefinitionSourceEnum } from './prompt.js'
import { ResponseCacheInput, ResponseCacheLayerRef } from './response-cache.js'
import { SettingsOverrideInput, settingsJson } from './settings.js'
import { ToolSettingsRef, toolInputFields } from './tool.js'

const StreamFailurePolicyEnum = builder.enumType('StreamFailurePolicy', {
  description: 'What a run does when its stream breaks after the first token, or stalls past firstTokenTimeoutMs / streamIdleTimeoutMs.',
  values: describedValues<StreamFailurePolicy>({
    FAIL: 'The run fails (GENERATION, or STREAM_TIMEOUT for a stall); no text is repeated.',
    RESTART:
      'The generation starts again on the next candidate profile (GenerationRestartedEvent, a new attempt); both attempts count in usage and cost. With no candidate left, the run fails.',
  }),
})

const CredentialSourceKindEnum = builder.enumType('CredentialSourceKind', {
  description: 'Where a credential comes from, highest priority first.',
  values: {
    DIRECT: { description: 'A key written in the catalog file (never shown).' },
    REQUEST_ENV: { description: 'An environment variable named by the request.' },
    PROFILE_ENV: { description: "The profile's environment variable." },
    BACKEND_ENV: { description: "The backend's environment variable." },
    NONE: { description: 'No credential (the fake backend needs none).' },
  },
})

export const CredentialSourceRef = builder.objectRef<Credential>('CredentialSource').implement({
  description: 'Which credential a request would use. Never its value.',
  fields: (t) => ({
    source: t.field({ type: CredentialSourceKindEnum, description: 'Which source wins.', resolve: (c) => c.source }),
    name: t.string({ nullable: true, description: 'The environment variable name, if any.', resolve: (c) => c.name }),
    available: t.boolean({ description: 'Whether the credential is set (always true when none is needed).', resolve: (c) => c.available }),
  }),
})

const ProfileRef = builder.objectRef<Profile>('Profile').implement({
  description: 'A named target: backend, model, settings and credential source.',
  fields: (t) => ({
    id: t.exposeID('id', { description: 'The profile id.' }),
    source: t.field({ type: DefinitionSourceEnum, description: 'Catalog file or API.', resolve: (p) => p.source }),
    backendId: t.exposeID('backendId', { description: 'The backend it sends to.' }),
    backend: t.field({
      type: BackendRef,
      nullable: true,
      description: 'Null when the backend no longer exists.',
      resolve: (p, _args, ctx) => ctx.services.catalog.listBackends().find((b) => b.id === p.backendId) ?? null,
    }),
    model: t.exposeString('model', { description: 'The model it asks for.' }),
    endpoint: t.string({ nullable: true, description: "Overrides the backend's base URL.", resolve: (p) => p.endpoint ?? null }),
    settings: t.field({ type: 'JSON', description: 'The profile settings layer.', resolve: (p) => settingsJson(p.settings) }),
    credentialEnv: t.string({
      nullable: true,
      description: 'The environment variable holding its API key (never its value).',
      resolve: (p) => p.credentialEnv ?? null,
    }),
    candidates: t.idList({ description: 'Failover profiles, in priority order.', resolve: (p) => p.candidates ?? [] }),
    cache: t.field({
      type: ResponseCacheLayerRef,
      nullable: true,
      description: "The profile's layer of the exact response cache; null when unset.",
      resolve: (p) => p.cache ?? null,
    }),
    onStreamFailure: t.field({
      type: StreamFailurePolicyEnum,
      description:
        "What a run does when its stream breaks after the first token, or stalls (the run's own profile decides for its candidates).",
      resolve: (p) => p.onStreamFailure ?? 'FAIL',
    }),
    tooling: t.field({
      type: ToolSettingsRef,
      description: 'The tools every run of the profile may call (a prompt and a request add theirs), and how.',
      resolve: (p) => toolLayerOf(p),
    }),
    updatedAt: t.field({ type: 'DateTime', nullable: true, description: 'Null for catalog profiles.', resolve: (p) => p.updatedAt }),
  }),
})

const ProfileInspectionRef = builder.objectRef<ProfileInspection>('ProfileInspection').implement({
  description: 'What a run with this profile (and no request overrides) would use.',
  fields: (t) => ({
    profile: t.field({ type: ProfileRef, description: 'The profile itself.', resolve: (i) => i.profile }),
    backend: t.field({ type: BackendRef, description: 'Its backend.', resolve: (i) => i.backend }),
    endpoint: t.string({
      nullable: true,
      description: "The base URL requests go to; null for the vendor's default.",
      resolve: (i) => i.endpoint,
    }),
    model: t.exposeString('model', { description: 'The model it asks for.' }),
    settings: t.field({
      type: 'JSON',
      description: 'Effective settings: defaults < backend < profile.',
      resolve: (i) => settingsJson(i.settings),
    }),
    credential: t.field({
      type: CredentialSourceRef,
      description: 'Where the API key comes from (never its value).',
      resolve: (i) => i.credential,
    }),
  }),
})

builder.queryFields((t) => ({
  profiles: t.field({
    type: [ProfileRef],
    description: 'Profiles visible to the caller, by id.',
    resolve: (_root, _args, ctx) => ctx.services.catalog.listProfiles(ctx.tenantId),
  }),
  profile: t.field({
    type: ProfileRef,
    nullable: true,
    description: 'A profile by id, or null.',
    args: { id: t.arg.id({ required: true, description: 'The profile id.' }) },
    resolve: (_root, { id }, ctx) => ctx.services.catalog.getProfile(ctx.tenantId, String(id)),
  }),
  inspectProfile: t.field({
    type: ProfileInspectionRef,
    description: 'Effective settings and credential source of a profile. NOT_FOUND when it does not exist.',
    args: { id: t.arg.id({ required: true, description: 'The profile id.' }) },
    resolve: (_root, { id }, ctx) => ctx.services.catalog.inspectProfile(ctx.tenantId, String(id)),
  }),
}))

const UpsertProfileInput = builder.inputType('UpsertProfileInput', {
  description: 'A profile of this tenant.',
  fields: (t) => ({
    id: t.id({ required: true, description: '1-128 characters of A-Z a-z 0-9 _ . -' }),
    backendId: t.id({ required: true, description: 'A configured backend.' }),
    model: t.string({ required: true, description: "The vendor's model name." }),
    endpoint: t.string({ description: "An http(s) URL overriding the backend's base URL." }),
    settings: t.field({ type: SettingsOverrideInput, description: 'The profile settings layer, over the backend.' }),
    credentialEnv: t.string({ description: 'The environment variable that holds the API key.' }),
    candidates: t.idList({ description: 'Failover profiles, in priority order.' }),
    onStreamFailure: t.field({ type: StreamFailurePolicyEnum, description: 'FAIL (the default) or RESTART on the next candidate.' }),
    cache: t.field({ type: ResponseCacheInput, description: "The profile's layer of the exact response cache." }),
    ...toolInputFields(t),
  }),
})

const UpsertProfilePayload = builder.objectRef<{ profile: Profile }>('UpsertProfilePayload').implement({
  description: 'The saved profile.',
  fields: (t) => ({ profile: t.field({ type: ProfileRef, description: 'The profile as saved.', resolve: (p) => p.profile }) }),
})

const DeleteProfilePayload = builder.objectRef<{ deletedId: string }>('DeleteProfilePayload').implement({
  description: 'The deleted profile.',
  fields: (t) => ({ deletedId: t.exposeID('deletedId', { description: 'The id of the profile deleted.' }) }),
})

builder.mutationFields((t) => ({
  upsertProfile: t.field({
    type: UpsertProfilePayload,
    authScopes: { admin: true },
    description: "Creates or replaces this tenant's profile. Needs an admin key.",
    errors: { types: [NotFoundError] },
    args: { input: t.arg({ type: UpsertProfileInput, required: true, description: 'The profile.' }) },
    resolve: async (_root, { input }, ctx) => ({ profile: await ctx.services.catalog.upsertProfile(ctx.tenantId, input) }),
  }),
  deleteProfile: t.field({
    type: DeleteProfilePayload,
    authScopes: { admin: true },
    description: "Deletes this tenant's profile. Needs an admin key.",
    errors: { types: [NotFoundError] },
    args: { id: t.arg.id({ required: true, description: 'The profile to delete.' }) },
    resolve: async (_root, { id }, ctx) => ({ deletedId: await ctx.services.catalog.deleteProfile(ctx.tenantId, String(id)) }),
  }),
}))
