import type { Alternative } from '../domain/records.js'
import { builder } from './builder.js'
import { ErrorCodeEnum } from './errors.js'

export const AlternativeRef = builder.objectRef<Alternative>('RunAlternative').implement({
  description: 'An answer of a parallel prompt that was not selected.',
  fields: (t) => ({
    profileId: t.exposeID('profileId', { description: 'The parallel profile that gave this answer.' }),
    backendId: t.exposeID('backendId', { description: "The profile's backend." }),
    model: t.exposeString('model', { description: 'The model that answered.' }),
    status: t.exposeString('status', { description: 'COMPLETED, FAILED, or ABORTED (stopped once another was selected).' }),
    output: t.exposeString('output', { description: 'Its answer (partial when it was stopped or failed).' }),
    valid: t.exposeBoolean('valid', {
      nullable: true,
      description: 'Whether it met the output contract; null when it never got to validation.',
    }),
    errorCode: t.field({
      type: ErrorCodeEnum,
      nullable: true,
      description: 'Why it failed; null unless FAILED.',
      resolve: (a) => a.errorCode as never,
    }),
    errorMessage: t.exposeString('errorMessage', {
      nullable: true,
      description: 'What went wrong, or why it was stopped; null when it completed.',
    }),
  }),
})
