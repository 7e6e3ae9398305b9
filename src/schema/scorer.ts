import { InvalidRequestError, NotFoundError } from '../domain/errors.js'
import type { HumanScore, Score, Scorer, ScorerKind } from '../domain/experiments.js'
import type { RunRecord } from '../domain/records.js'
import { builder } from './builder.js'
import { describedValues } from './described.js'
import { RunRef } from './run.js'

const ScorerKindEnum = builder.enumType('ScorerKind', {
  description: "How a scorer judges a run's output, as a value in [0, 1] and a pass.",
  values: describedValues<ScorerKind>({
    EXACT: "The output equals the item's expected (a string as it is, other JSON as JSON text), spaces around trimmed.",
    CONTAINS: "The output contains the item's expected.",
    REGEX: 'The output matches `pattern`.',
    JSON_SCHEMA: 'The output is JSON valid against `schema`.',
    JSON_PATH_EQUALS: "The output's JSON value at `path` (`$.a.b[0]`) equals the expected's at the same path.",
    LLM_JUDGE:
      'A judge prompt (`promptRef`, run on `profileId`) rendered with `input`, `output` and `expected` answers `{ score, reason }`; it passes at `threshold` or above. Its run is its own record.',
  }),
})

export const ScorerRef = builder.objectRef<Scorer>('Scorer').implement({
  description: 'A check every run of an experiment is scored by.',
  fields: (t) => ({
    name: t.exposeString('name', { description: 'Names its scores.' }),
    kind: t.field({ type: ScorerKindEnum, description: 'How it judges.', resolve: (s) => s.kind }),
    pattern: t.exposeString('pattern', { nullable: true, description: 'REGEX: the pattern.' }),
    schema: t.field({ type: 'JSON', nullable: true, description: 'JSON_SCHEMA: the schema.', resolve: (s) => s.schema }),
    path: t.exposeString('path', { nullable: true, description: 'JSON_PATH_EQUALS: the path.' }),
    judgePromptId: t.string({ nullable: true, description: 'LLM_JUDGE: the judge prompt.', resolve: (s) => s.judge?.promptId ?? null }),
    judgePromptVersion: t.int({
      nullable: true,
      description: 'LLM_JUDGE: its version, frozen at the start.',
      resolve: (s) => s.judge?.promptVersion ?? null,
    }),
    threshold: t.float({ nullable: true, description: 'LLM_JUDGE: the score that passes.', resolve: (s) => s.judge?.threshold ?? null }),
  }),
})

export const ScoreRef = builder.objectRef<Score>('Score').implement({
  description: "One scorer's judgment of one run.",
  fields: (t) => ({
    scorer: t.exposeString('scorer', { description: 'The scorer.' }),
    value: t.exposeFloat('value', { description: 'From 0 to 1.' }),
    pass: t.exposeBoolean('pass', { description: 'Whether it passed.' }),
    reason: t.exposeString('reason', { nullable: true, description: 'Why it failed, where the scorer says (a judge gives its reason).' }),
    judgeRun: t.field({
      type: RunRef,
      nullable: true,
      description: "LLM_JUDGE: the judge's run, its own record.",
      resolve: (s, _args, ctx) => (s.judgeRunId ? ctx.services.runs.run(ctx.tenantId, s.judgeRunId) : null),
    }),
  }),
})

export const ScorerInput = builder.inputType('ScorerInput', {
  description: 'A scorer: its name, its kind, and the field its kind needs.',
  fields: (t) => ({
    name: t.string({ required: true, description: 'Names its scores: 1-64 characters of A-Z a-z 0-9 _ . -' }),
    kind: t.field({ type: ScorerKindEnum, required: true, description: 'How it judges.' }),
    pattern: t.string({ description: 'REGEX: the pattern (JavaScript syntax).' }),
    schema: t.field({ type: 'JSON', description: 'JSON_SCHEMA: the JSON Schema.' }),
    path: t.string({ description: 'JSON_PATH_EQUALS: the path, as $.a.b[0].' }),
    promptRef: t.field({
      type: builder.inputType('JudgePromptRefInput', {
        description:
          'The judge prompt, at a version or a label (resolved when the experiment starts; default its production label, else its newest version).',
        fields: (f) => ({
          id: f.id({ required: true, description: 'The prompt.' }),
          version: f.int({ description: 'A version.' }),
          label: f.string({ description: 'A label.' }),
        }),
      }),
      description: 'LLM_JUDGE: the judge prompt.',
    }),
    profileId: t.id({ description: "LLM_JUDGE: the judge's profile (default the judge prompt's)." }),
    threshold: t.float({ description: 'LLM_JUDGE: the score that passes, 0 to 1 (default 0.5).' }),
  }),
})

const HumanScoreRef = builder.objectRef<HumanScore>('HumanScore').implement({
  description: "A person's score of a run (scoreRun).",
  fields: (t) => ({
    name: t.exposeString('name', { description: 'What it scores.' }),
    value: t.exposeFloat('value', { description: 'From 0 to 1.' }),
    comment: t.exposeString('comment', { nullable: true, description: 'What they said.' }),
    keyId: t.exposeString('keyId', { nullable: true, description: 'The API key that scored it (its id); null where keys are off.' }),
    createdAt: t.field({ type: 'DateTime', description: 'When.', resolve: (s) => s.createdAt }),
  }),
})

builder.objectField(RunRef, 'humanScores', (t) =>
  t.field({
    type: [HumanScoreRef],
    description: "People's scores of the run (scoreRun), by name.",
    resolve: (run, _args, ctx) => ctx.services.experiments.humanScores(ctx.tenantId, run.id),
  }),
)

builder.mutationField('scoreRun', (t) =>
  t.field({
    type: builder.objectRef<{ run: RunRecord }>('ScoreRunPayload').implement({
      description: 'The run scored.',
      fields: (f) => ({ run: f.field({ type: RunRef, description: 'The run, with its humanScores.', resolve: (p) => p.run }) }),
    }),
    description: "Keeps a person's score of a run, 0 to 1, by name (a later score of the same name replaces it).",
    errors: { types: [InvalidRequestError, NotFoundError] },
    args: {
      input: t.arg({
        type: builder.inputType('ScoreRunInput', {
          description: "A person's score of a run.",
          fields: (f) => ({
            runId: f.id({ required: true, description: 'The run.' }),
            name: f.string({ required: true, description: 'What it scores: 1-64 characters of A-Z a-z 0-9 _ . -' }),
            value: f.float({ required: true, description: 'From 0 to 1.' }),
            comment: f.string({ description: 'Why.' }),
          }),
        }),
        required: true,
        description: 'The run and the score.',
      }),
    },
    resolve: async (_root, { input }, ctx) => ({ run: await ctx.services.experiments.scoreRun(ctx, input) }),
  }),
)
