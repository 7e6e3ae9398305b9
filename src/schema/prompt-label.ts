import type { CatalogEvent } from '../domain/catalog.js'
import { InvalidRequestError, LabelConflictError, NotFoundError } from '../domain/errors.js'
import { LATEST_LABEL, PRODUCTION_LABEL, type PromptLabel, type PromptLabelMove, type SplitShare } from '../domain/prompt-labels.js'
import { builder } from './builder.js'
import { PAGE_MAX } from './paging.js'
import { PromptRef } from './prompt.js'

const SplitShareRef = builder.objectRef<SplitShare>('SplitShare').implement({
  description: "One version's share of a split label.",
  fields: (t) => ({
    version: t.exposeInt('version', { description: 'The prompt version.' }),
    weight: t.exposeInt('weight', { description: 'Its share of sessions, in percent (a split adds up to 100).' }),
  }),
})

const PromptLabelRef = builder.objectRef<PromptLabel>('PromptLabel').implement({
  description: `A name for one version of a prompt, or for a split of sessions over several. A request names it in promptRef; without one, '${PRODUCTION_LABEL}' applies when it exists, else '${LATEST_LABEL}' (always the newest version, never stored).`,
  fields: (t) => ({
    name: t.exposeString('name', { description: 'The label.' }),
    version: t.exposeInt('version', { description: 'The version it names; for a split, the first version of the split.' }),
    split: t.field({
      type: [SplitShareRef],
      nullable: true,
      description: 'For a split: each version with its share; a session always gets the same one while the split stands. Null otherwise.',
      resolve: (l) => l.split,
    }),
    updatedAt: t.field({ type: 'DateTime', description: 'When it last moved.', resolve: (l) => l.updatedAt }),
  }),
})

const PromptLabelMoveRef = builder.objectRef<PromptLabelMove>('PromptLabelMove').implement({
  description: 'One move of a label, as kept in its history (a rollback is a move back).',
  fields: (t) => ({
    promptId: t.exposeID('promptId', { description: 'The prompt.' }),
    label: t.exposeString('label', { description: 'The label moved.' }),
    move: t.exposeInt('move', { description: "The move's number for this label: 1 for its creation, then one more each time." }),
    version: t.exposeInt('version', { description: 'The version it named after the move (a split: its first).' }),
    split: t.field({
      type: [SplitShareRef],
      nullable: true,
      description: 'The split it named after the move; null otherwise.',
      resolve: (m) => m.split,
    }),
    previousVersion: t.exposeInt('previousVersion', { nullable: true, description: 'The version it named before; null for its creation.' }),
    keyId: t.exposeString('keyId', { nullable: true, description: 'The API key that moved it (its id); null where keys are off.' }),
    movedAt: t.field({ type: 'DateTime', description: 'When.', resolve: (m) => m.movedAt }),
  }),
})

builder.objectFields(PromptRef, (t) => ({
  labels: t.field({
    type: [PromptLabelRef],
    description: `The labels this tenant has set on the prompt, by name ('${LATEST_LABEL}' is implicit and not listed).`,
    resolve: (prompt, _args, ctx) => ctx.services.catalog.promptLabels(ctx.tenantId, prompt.id),
  }),
  labelHistory: t.field({
    type: [PromptLabelMoveRef],
    description: 'The latest moves of its labels (or of one label), newest first.',
    args: {
      label: t.arg.string({ description: 'Only the moves of this label.' }),
      first: t.arg.int({ description: `How many: 50 by default, at most ${PAGE_MAX}.` }),
    },
    resolve: (prompt, { label, first }, ctx) => {
      const limit = first ?? 50
      if (limit < 0 || limit > PAGE_MAX) throw InvalidRequestError.at('first', `must be between 0 and ${PAGE_MAX}`)
      return ctx.services.catalog.promptLabelMoves(ctx.tenantId, prompt.id, label ?? null, limit)
    },
  }),
}))

const SplitShareInput = builder.inputType('SplitShareInput', {
  description: "One version's share of a split label.",
  fields: (t) => ({
    version: t.int({ required: true, description: 'A stored version of the prompt.' }),
    weight: t.int({ required: true, description: 'Its share of sessions in percent, 1 to 99; the shares add up to 100.' }),
  }),
})

const SetPromptLabelInput = builder.inputType('SetPromptLabelInput', {
  description: 'Where a label should point: exactly one of version and split.',
  fields: (t) => ({
    promptId: t.id({ required: true, description: 'The prompt.' }),
    label: t.string({ required: true, description: `1-64 characters of A-Z a-z 0-9 _ . -; not '${LATEST_LABEL}'.` }),
    version: t.int({ description: 'The one version it names.' }),
    split: t.field({ type: [SplitShareInput], description: '2 to 10 versions with their shares of sessions.' }),
    expectedVersion: t.int({
      description:
        'Compare-and-set: the version the label names now (a split: its first), as you last read it; absent or null when it must not exist yet. When it differs, nothing changes and the answer is a LabelConflictError.',
    }),
  }),
})

const SetPromptLabelPayload = builder.objectRef<{ label: PromptLabel }>('SetPromptLabelPayload').implement({
  description: 'The label after the move.',
  fields: (t) => ({ label: t.field({ type: PromptLabelRef, description: 'The label as it now stands.', resolve: (p) => p.label }) }),
})

builder.mutationField('setPromptLabel', (t) =>
  t.field({
    type: SetPromptLabelPayload,
    description: `Moves (or creates) a label of a prompt, with compare-and-set; rollback is moving it back. Each move is kept in labelHistory and published to catalogEvents. Queued prompts keep the version they were admitted with. '${PRODUCTION_LABEL}' and the operator's protected labels need an admin key.`,
    errors: { types: [LabelConflictError, InvalidRequestError, NotFoundError] },
    args: { input: t.arg({ type: SetPromptLabelInput, required: true, description: 'The label and where it should point.' }) },
    resolve: async (_root, { input }, ctx) => ({ label: await ctx.services.catalog.setPromptLabel(ctx, input) }),
  }),
)

const PromptVersionCreatedRef = builder
  .objectRef<Extract<CatalogEvent, { type: 'PROMPT_VERSION_CREATED' }>>('PromptVersionCreatedEvent')
  .implement({
    description: 'A prompt got a new version (created, or its definition changed).',
    fields: (t) => ({
      promptId: t.id({ description: 'The prompt.', resolve: (e) => e.version.promptId }),
      version: t.int({ description: 'The new version.', resolve: (e) => e.version.version }),
      definitionHash: t.string({ description: 'sha256 of its canonical definition.', resolve: (e) => e.version.definitionHash }),
    }),
  })

const PromptLabelMovedRef = builder.objectRef<Extract<CatalogEvent, { type: 'PROMPT_LABEL_MOVED' }>>('PromptLabelMovedEvent').implement({
  description: 'A label of a prompt was moved (or created).',
  fields: (t) => ({
    move: t.field({ type: PromptLabelMoveRef, description: 'The move, as kept in the history.', resolve: (e) => e.move }),
  }),
})

const TYPE_NAMES = { PROMPT_VERSION_CREATED: 'PromptVersionCreatedEvent', PROMPT_LABEL_MOVED: 'PromptLabelMovedEvent' } as const

const CatalogEventRef = builder.unionType('CatalogEvent', {
  description: "A change to the caller's tenant's catalog.",
  types: [PromptVersionCreatedRef, PromptLabelMovedRef],
  resolveType: (event: CatalogEvent) => TYPE_NAMES[event.type],
})

builder.subscriptionField('catalogEvents', (t) =>
  t.field({
    type: CatalogEventRef,
    description:
      'New prompt versions and label moves of your tenant, from now on, from every instance: a client that keeps prompts drops its copy when one moves. Nothing is replayed; read the labels after subscribing.',
    subscribe: (_root, _args, ctx) => ctx.services.catalog.catalogEvents(ctx.tenantId),
    resolve: (event: CatalogEvent) => event,
  }),
)
