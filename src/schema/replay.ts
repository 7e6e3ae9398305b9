import { InvalidRequestError } from '../domain/errors.js'
import type { QueueEntryRecord } from '../domain/records.js'
import { builder } from './builder.js'
import { ADMISSION_ERRORS, QueueEntryRef } from './queue-entry.js'
import { PromptRefInput } from './settings.js'

const ReplayRunInput = builder.inputType('ReplayRunInput', {
  description: 'Which finished run to replay, and what to change.',
  fields: (t) => ({
    runId: t.id({ required: true, description: 'A finished run (COMPLETED, FAILED or ABORTED).' }),
    promptRef: t.field({
      type: PromptRefInput,
      description: 'Another prompt version or label to run; absent: the version the run ran.',
    }),
    profileId: t.id({ description: "Another profile; absent: the run's own request's." }),
    sessionId: t.id({
      description:
        "The session to run it in (its history as it is now comes first); absent: a new session forked from the run's own, with the history it had when the run started.",
    }),
    idempotencyKey: t.string({ description: 'Retrying with the same key answers the same entry (and reuses the same fork).' }),
  }),
})

const ReplayRunPayload = builder.objectRef<{ entry: QueueEntryRecord }>('ReplayRunPayload').implement({
  description: 'The replay, admitted.',
  fields: (t) => ({
    entry: t.field({
      type: QueueEntryRef,
      description: "The new entry (its sessionId is the fork's, when one was made); its run records replayOf.",
      resolve: (p) => p.entry,
    }),
  }),
})

builder.mutationField('replayRun', (t) =>
  t.field({
    type: ReplayRunPayload,
    description:
      "Admits a finished run's stored request again (its input, variables, overrides, tools and tags), optionally with another prompt version, label or profile, so two versions meet the same inputs. Keys, budgets, limits and idempotency apply as to any admission.",
    errors: { types: [InvalidRequestError, ...ADMISSION_ERRORS] },
    args: { input: t.arg({ type: ReplayRunInput, required: true, description: 'The run and what to change.' }) },
    resolve: async (_root, { input }, ctx) => ({ entry: await ctx.services.replays.replay(ctx, input) }),
  }),
)
