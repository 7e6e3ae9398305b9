import type { FailoverAttempt } from '../domain/records.js'
import { builder } from './builder.js'

const FailoverOutcomeEnum = builder.enumType('FailoverOutcome', {
  description: 'How one try of a candidate profile went.',
  values: {
    SUCCEEDED: { description: 'The candidate answered.' },
    FAILED: { description: 'The call failed; see errorCode.' },
    SKIPPED: { description: 'The candidate has no credentials; nothing was sent.' },
    STREAM_INTERRUPTED: {
      description:
        "The stream broke after its first token, or stalled (errorCode says how); with the profile's onStreamFailure RESTART the generation started again on the next candidate.",
    },
  },
})

export const FailoverAttemptRef = builder.objectRef<FailoverAttempt>('FailoverAttempt').implement({
  description: 'One try of one candidate profile during a run.',
  fields: (t) => ({
    profileId: t.exposeID('profileId', { description: 'The candidate profile tried.' }),
    backendId: t.exposeID('backendId', { description: "The candidate's backend." }),
    model: t.exposeString('model', { description: 'The model asked.' }),
    outcome: t.field({ type: FailoverOutcomeEnum, description: 'How the try went.', resolve: (a) => a.outcome }),
    errorCode: t.exposeString('errorCode', {
      nullable: true,
      description:
        'RATE_LIMITED, OVERLOADED, SERVER_ERROR, NETWORK, UNAUTHORIZED, NOT_FOUND, CONTEXT_LENGTH, BAD_REQUEST, STREAM_TIMEOUT or NO_CREDENTIALS.',
    }),
    durationMs: t.int({
      description: 'How long the try took, in milliseconds (0 when skipped).',
      resolve: (a) => Math.round(a.durationMs),
    }),
    attempt: t.exposeInt('attempt', { description: '1 for the first call to the candidate, 2 for its first retry, …; 0 when skipped.' }),
  }),
})
