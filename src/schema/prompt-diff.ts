import type { FieldChange, MessageChange, TextSegment } from '../domain/prompt-diff.js'
import type { PromptVersionDiff } from '../services/catalog-service.js'
import { builder } from './builder.js'
import { describedValues } from './described.js'
import { RoleEnum } from './prompt.js'
import { PromptVersionRef } from './prompt-version.js'

const TextDiffOpEnum = builder.enumType('TextDiffOp', {
  description: 'What a run of text in a message diff is.',
  values: describedValues<TextSegment['op']>({
    EQUAL: 'In both versions.',
    INSERT: 'Only in the to version.',
    DELETE: 'Only in the from version.',
  }),
})

const TextSegmentRef = builder.objectRef<TextSegment>('TextSegment').implement({
  description: 'A run of text of a message diff, by words (white space kept): render them in order.',
  fields: (t) => ({
    op: t.field({ type: TextDiffOpEnum, description: 'Kept, added or taken out.', resolve: (s) => s.op }),
    text: t.exposeString('text', { description: 'The text itself.' }),
  }),
})

const MessageChangeKindEnum = builder.enumType('MessageChangeKind', {
  description: 'How a message differs between the versions.',
  values: describedValues<MessageChange['change']>({
    UNCHANGED: 'The same role and text in both.',
    ADDED: 'Only in the to version.',
    REMOVED: 'Only in the from version.',
    CHANGED: 'At the same place in both, with another role or text.',
  }),
})

const MessageChangeRef = builder.objectRef<MessageChange>('MessageChange').implement({
  description: 'One message of either version, aligned with its counterpart.',
  fields: (t) => ({
    change: t.field({ type: MessageChangeKindEnum, description: 'How it differs.', resolve: (m) => m.change }),
    fromIndex: t.exposeInt('fromIndex', { nullable: true, description: 'Its index in the from version; null when added.' }),
    toIndex: t.exposeInt('toIndex', { nullable: true, description: 'Its index in the to version; null when removed.' }),
    fromRole: t.field({ type: RoleEnum, nullable: true, description: 'Its role in the from version.', resolve: (m) => m.fromRole }),
    toRole: t.field({ type: RoleEnum, nullable: true, description: 'Its role in the to version.', resolve: (m) => m.toRole }),
    segments: t.field({
      type: [TextSegmentRef],
      description: 'Its text as a word diff from the older to the to version (all EQUAL when unchanged).',
      resolve: (m) => m.segments,
    }),
  }),
})

const FieldChangeRef = builder.objectRef<FieldChange>('FieldChange').implement({
  description: 'A part of the definition besides the messages that differs.',
  fields: (t) => ({
    path: t.exposeString('path', {
      description: 'Which part: defaultProfileId, output, maxRepairs, parallel, toolChoice, … and tools.<name> for each tool.',
    }),
    before: t.field({
      type: 'JSON',
      nullable: true,
      description: 'Its value in the from version; null when absent.',
      resolve: (f) => f.before,
    }),
    after: t.field({
      type: 'JSON',
      nullable: true,
      description: 'Its value in the to version; null when absent.',
      resolve: (f) => f.after,
    }),
  }),
})

const PromptDiffRef = builder.objectRef<PromptVersionDiff>('PromptDiff').implement({
  description: 'What changed from one version of a prompt to another, ready to render.',
  fields: (t) => ({
    promptId: t.exposeID('promptId', { description: 'The prompt.' }),
    from: t.field({ type: PromptVersionRef, description: 'The version compared from.', resolve: (d) => d.from }),
    to: t.field({ type: PromptVersionRef, description: 'The version compared to.', resolve: (d) => d.to }),
    identical: t.boolean({
      description: 'True when the definitions are the same.',
      resolve: (d) => d.from.definitionHash === d.to.definitionHash,
    }),
    messages: t.field({
      type: [MessageChangeRef],
      description: 'Every message of both versions, aligned, in order.',
      resolve: (d) => d.messages,
    }),
    fields: t.field({ type: [FieldChangeRef], description: 'The other parts that differ, by path.', resolve: (d) => d.fields }),
  }),
})

builder.queryField('promptDiff', (t) =>
  t.field({
    type: PromptDiffRef,
    description: 'What changed between two stored versions of a prompt (either may be the older). NOT_FOUND when one does not exist.',
    args: {
      id: t.arg.id({ required: true, description: 'The prompt.' }),
      from: t.arg.int({ required: true, description: 'The version to compare from.' }),
      to: t.arg.int({ required: true, description: 'The version to compare to.' }),
    },
    resolve: (_root, { id, from, to }, ctx) => ctx.services.catalog.promptDiff(ctx.tenantId, String(id), from, to),
  }),
)
