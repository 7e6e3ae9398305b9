import type { Reasoning } from '../domain/records.js'
import { builder } from './builder.js'

export const ReasoningRef = builder.objectRef<Reasoning>('Reasoning').implement({
  description:
    "The model's thinking before its answer, as the vendor sent it (Anthropic's extended thinking; OpenAI's Chat Completions sends none, only Usage.reasoningTokens).",
  fields: (t) => ({
    text: t.exposeString('text', { description: 'The thinking text.' }),
    signature: t.exposeString('signature', {
      nullable: true,
      description: "Anthropic's signature of the thinking, which it asks back with the thinking when the turn is replayed to it.",
    }),
  }),
})
