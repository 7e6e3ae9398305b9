import type { InputFieldBuilder } from '@pothos/core'
import type { AccessRole } from '../domain/access.js'
import type { ApiKeyRecord, BUDGET_PERIODS, KeyLimits } from '../domain/api-keys.js'
import type { KeyBudgetUsage } from '../domain/budgets.js'
import { InvalidRequestError, NotFoundError } from '../domain/errors.js'
import type { KeyWithSecret } from '../services/api-key-service.js'
import { type BuilderTypes, builder } from './builder.js'
import { perRequestLoader } from './loaders.js'
import { encodeCursor, forwardPage, pageArgs, toConnection } from './paging.js'

const ApiKeyRoleEnum = builder.enumType('ApiKeyRole', {
  description: 'What a key may do.',
  values: {
    READ: { value: 'read' as AccessRole, description: 'Read everything of its tenant.' },
    WRITE: { value: 'write' as AccessRole, description: 'Also run prompts and change sessions.' },
    ADMIN: { value: 'admin' as AccessRole, description: 'Also change the catalog and manage keys.' },
  },
})

const BudgetPeriodEnum = builder.enumType('BudgetPeriod', {
  description: 'How long a key budget’s window is (UTC).',
  values: {
    DAY: { description: 'A calendar day.' },
    WEEK: { description: 'An ISO week, from Monday.' },
    MONTH: { description: 'A calendar month.' },
    TOTAL: { description: 'Forever: the budget never resets.' },
  } satisfies Record<(typeof BUDGET_PERIODS)[number], { description: string }>,
})

const ApiKeyLimitsRef = builder.objectRef<KeyLimits>('ApiKeyLimits').implement({
  description: 'A key’s own limits, counted by every instance together; a null one does not apply.',
  fields: (t) => ({
    requestsPerMinute: t.exposeInt('requestsPerMinute', {
      nullable: true,
      description: 'Mutations (root fields) and REST requests per minute.',
    }),
    tokensPerMinute: t.exposeInt('tokensPerMinute', {
      nullable: true,
      description: 'Tokens of runs that ended in the last minute’s window; over it, admissions are refused until the window frees.',
    }),
    concurrentRuns: t.exposeInt('concurrentRuns', { nullable: true, description: 'Runs of the key running at once.' }),
  }),
})

const ApiKeyBudgetRef = builder.objectRef<KeyBudgetUsage>('ApiKeyBudget').implement({
  description:
    'A key’s cost budget and its spend in the current window. Every admission reserves its largest possible cost; its end replaces that by what it cost.',
  fields: (t) => ({
    costUsd: t.exposeFloat('costUsd', { description: 'At most this much USD per window.' }),
    period: t.field({ type: BudgetPeriodEnum, description: 'The window’s length.', resolve: (b) => b.period }),
    usedUsd: t.exposeFloat('usedUsd', { description: 'What the runs that ended cost.' }),
    reservedUsd: t.exposeFloat('reservedUsd', { description: 'What the runs admitted and not yet ended may still cost.' }),
    remainingUsd: t.exposeFloat('remainingUsd', { description: 'costUsd − usedUsd − reservedUsd: what another admission may reserve.' }),
    resetsAt: t.field({
      type: 'DateTime',
      nullable: true,
      description: 'When the window ends; null for TOTAL.',
      resolve: (b) => b.resetsAt,
    }),
  }),
})

const keyBudgets = perRequestLoader<ApiKeyRecord, KeyBudgetUsage | null>((keys, ctx) => ctx.services.keys.budgetUsages(keys))

const ApiKeyRef = builder.objectRef<ApiKeyRecord>('ApiKey').implement({
  description: 'An API key stored by the server. Its secret is never shown again after creation or rotation.',
  fields: (t) => ({
    id: t.exposeID('id', { description: 'The key’s id: recorded on what it does (runs, label moves).' }),
    name: t.exposeString('name', { description: 'A name for people.' }),
    prefix: t.exposeString('prefix', { description: 'The secret’s first 8 characters, to tell keys apart.' }),
    role: t.field({ type: ApiKeyRoleEnum, description: 'What it may do.', resolve: (k) => k.role }),
    tenantId: t.exposeID('tenantId', { description: 'The tenant it acts for.' }),
    createdAt: t.field({ type: 'DateTime', description: 'When it was created.', resolve: (k) => k.createdAt }),
    expiresAt: t.field({
      type: 'DateTime',
      nullable: true,
      description: 'When it stops working; null: never.',
      resolve: (k) => k.expiresAt,
    }),
    revokedAt: t.field({
      type: 'DateTime',
      nullable: true,
      description: 'When it was revoked; null while it works.',
      resolve: (k) => k.revokedAt,
    }),
    lastUsedAt: t.field({
      type: 'DateTime',
      nullable: true,
      description: 'When it was last used (written at most once a minute per instance); null: never.',
      resolve: (k) => k.lastUsedAt,
    }),
    allowedProfiles: t.exposeIDList('allowedProfiles', { nullable: true, description: 'The only profiles it may run; null: any.' }),
    allowedPrompts: t.exposeIDList('allowedPrompts', { nullable: true, description: 'The only prompts it may run; null: any.' }),
    limits: t.field({
      type: ApiKeyLimitsRef,
      nullable: true,
      description: 'Its own limits; null: the server’s defaults.',
      resolve: (k) => k.limits,
    }),
    budget: t.field({
      type: ApiKeyBudgetRef,
      nullable: true,
      description: 'Its cost budget with the current window’s spend; null: none.',
      resolve: (k, _args, ctx) => keyBudgets(ctx).load(k),
    }),
  }),
})

const ApiKeyConnection = builder.connectionObject({ type: ApiKeyRef, name: 'ApiKeyConnection' })

const ViewerRef = builder.objectRef<{ tenantId: string; role: AccessRole }>('Viewer').implement({
  description: 'The caller: its tenant, its role, and its stored key.',
  fields: (t) => ({
    tenantId: t.exposeID('tenantId', { description: 'The tenant every read and write is scoped to.' }),
    role: t.field({ type: ApiKeyRoleEnum, description: 'What the caller may do.', resolve: (v) => v.role }),
    keysRequired: t.boolean({
      description:
        'Whether the server refuses a caller without a key (PROMPTLINE_API_KEYS is set). False on an open server: a caller without a key is the local admin, so stored keys limit only the callers that send them.',
      resolve: (_v, _args, ctx) => ctx.services.keys.keysRequired,
    }),
    key: t.field({
      type: ApiKeyRef,
      nullable: true,
      description: 'The stored key the caller used; null for a key of PROMPTLINE_API_KEYS, or with keys off.',
      resolve: (_v, _args, ctx) => ctx.services.keys.viewerKey(ctx),
    }),
  }),
})

builder.queryFields((t) => ({
  viewer: t.field({ type: ViewerRef, description: 'Who is calling.', resolve: (_root, _args, ctx) => ctx }),
  apiKeys: t.field({
    type: ApiKeyConnection,
    description: 'The tenant’s stored keys, newest first (an admin key); a key of another role sees only itself.',
    args: pageArgs(t.arg),
    resolve: async (_root, args, ctx) => {
      const { first, after } = forwardPage(args, 'apiKey', 2)
      const rows = await ctx.services.keys.list(ctx, after && { createdAt: after[0]!, id: after[1]! }, first + 1)
      return toConnection(rows, first, after !== null, (k) => encodeCursor('apiKey', k.createdAt, k.id))
    },
  }),
}))

const ApiKeyLimitsInput = builder.inputType('ApiKeyLimitsInput', {
  description: 'A key’s own limits; leave one out (or null) for none.',
  fields: (t) => ({
    requestsPerMinute: t.int({ description: 'Mutations (root fields) and REST requests per minute, across instances.' }),
    tokensPerMinute: t.int({ description: 'Tokens of ended runs per minute, across instances.' }),
    concurrentRuns: t.int({ description: 'Runs running at once, across instances.' }),
  }),
})

const ApiKeyBudgetInput = builder.inputType('ApiKeyBudgetInput', {
  description: 'A cost budget: at most costUsd per period.',
  fields: (t) => ({
    costUsd: t.float({ required: true, description: 'USD per window (more than 0).' }),
    period: t.field({ type: BudgetPeriodEnum, required: true, description: 'The window’s length.' }),
  }),
})

/** The fields creation and update share. */
const policyFields = (t: InputFieldBuilder<BuilderTypes, 'InputObject'>) => ({
  expiresAt: t.field({ type: 'DateTime', description: 'When it stops working (in the future); null: never.' }),
  limits: t.field({ type: ApiKeyLimitsInput, description: 'Its own limits; null: the server’s defaults.' }),
  budget: t.field({ type: ApiKeyBudgetInput, description: 'Its cost budget; null: none.' }),
  allowedProfiles: t.idList({ description: 'The only profiles it may run; null: any.' }),
  allowedPrompts: t.idList({ description: 'The only prompts it may run (a request without a prompt is refused); null: any.' }),
})

const CreateApiKeyInput = builder.inputType('CreateApiKeyInput', {
  description: 'A new key of the caller’s tenant.',
  fields: (t) => ({
    name: t.string({ required: true, description: 'A name for people.' }),
    role: t.field({ type: ApiKeyRoleEnum, required: true, description: 'What it may do.' }),
    ...policyFields(t),
  }),
})

const UpdateApiKeyInput = builder.inputType('UpdateApiKeyInput', {
  description: 'Changes to a key; a field left out stays, a null one is cleared.',
  fields: (t) => ({
    id: t.id({ required: true, description: 'The key to change.' }),
    name: t.string({ description: 'A new name.' }),
    ...policyFields(t),
  }),
})

const RotateApiKeyInput = builder.inputType('RotateApiKeyInput', {
  description: 'Which key gets a new secret, and how long its old one keeps working.',
  fields: (t) => ({
    id: t.id({ required: true, description: 'The key to rotate.' }),
    graceSeconds: t.int({ description: 'Seconds the old secret keeps working (default 0: it stops at once; at most 30 days).' }),
  }),
})

const RevokeApiKeyInput = builder.inputType('RevokeApiKeyInput', {
  description: 'The key to revoke.',
  fields: (t) => ({ id: t.id({ required: true, description: 'The key to revoke.' }) }),
})

const withSecret = (name: string, description: string) =>
  builder.objectRef<KeyWithSecret>(name).implement({
    description,
    fields: (t) => ({
      key: t.field({ type: ApiKeyRef, description: 'The key.', resolve: (p) => p.key }),
      secret: t.exposeString('secret', {
        description: 'The secret: shown only here, stored nowhere. Send it as Authorization: Bearer <secret>.',
      }),
    }),
  })
const CreateApiKeyPayload = withSecret('CreateApiKeyPayload', 'The new key and its secret.')
const RotateApiKeyPayload = withSecret('RotateApiKeyPayload', 'The key and its new secret.')
const ApiKeyPayload = builder.objectRef<ApiKeyRecord>('ApiKeyPayload').implement({
  description: 'The key as it is now.',
  fields: (t) => ({ key: t.field({ type: ApiKeyRef, description: 'The key.', resolve: (k) => k }) }),
})

builder.mutationFields((t) => ({
  createApiKey: t.field({
    type: CreateApiKeyPayload,
    description: 'Creates a key of the caller’s tenant (an admin key). Its secret is answered once.',
    authScopes: { admin: true },
    errors: { types: [InvalidRequestError] },
    args: { input: t.arg({ type: CreateApiKeyInput, required: true, description: 'The key to create.' }) },
    resolve: (_root, { input }, ctx) => ctx.services.keys.create(ctx, input),
  }),
  updateApiKey: t.field({
    type: ApiKeyPayload,
    description: 'Changes a key’s name, expiry, limits, budget or allow-lists (an admin key); every instance applies it within a second.',
    authScopes: { admin: true },
    errors: { types: [InvalidRequestError, NotFoundError] },
    args: { input: t.arg({ type: UpdateApiKeyInput, required: true, description: 'What to change.' }) },
    resolve: (_root, { input }, ctx) => ctx.services.keys.update(ctx, input),
  }),
  rotateApiKey: t.field({
    type: RotateApiKeyPayload,
    description:
      'Gives a key a new secret, answered once; the old one works for graceSeconds more. Any key may rotate itself; an admin key, any of its tenant.',
    skipTypeScopes: true,
    errors: { types: [InvalidRequestError, NotFoundError] },
    args: { input: t.arg({ type: RotateApiKeyInput, required: true, description: 'The key and the grace.' }) },
    resolve: (_root, { input }, ctx) => ctx.services.keys.rotate(ctx, input),
  }),
  revokeApiKey: t.field({
    type: ApiKeyPayload,
    description: 'Revokes a key (an admin key): every instance refuses it within a second, and its open subscriptions are closed.',
    authScopes: { admin: true },
    errors: { types: [NotFoundError] },
    args: { input: t.arg({ type: RevokeApiKeyInput, required: true, description: 'The key to revoke.' }) },
    resolve: (_root, { input }, ctx) => ctx.services.keys.revoke(ctx, String(input.id)),
  }),
}))
