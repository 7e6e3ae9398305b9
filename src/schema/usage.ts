import type { Usage } from '../domain/records.js'
import { builder } from './builder.js'

export const UsageRef = builder.objectRef<Usage>('Usage').implement({
  description:
    "Token counts as the vendors reported them, normalized: inputTokens counts every input token, the cached ones among them (OpenAI's convention; Anthropic's uncached count is added up). The fake backend counts words.",
  fields: (t) => ({
    inputTokens: t.exposeInt('inputTokens', { description: 'Tokens sent to the model, cached ones included, over every call.' }),
    outputTokens: t.exposeInt('outputTokens', { description: 'Tokens the model produced, reasoning ones included, over every call.' }),
    totalTokens: t.int({ description: 'inputTokens + outputTokens.', resolve: (u) => u.inputTokens + u.outputTokens }),
    cacheReadTokens: t.exposeInt('cacheReadTokens', { description: "Input tokens read from the vendor's prompt cache (priced lower)." }),
    cacheWriteTokens: t.exposeInt('cacheWriteTokens', {
      description: "Input tokens written to the vendor's prompt cache (Anthropic prices them higher).",
    }),
    reasoningTokens: t.exposeInt('reasoningTokens', { description: 'Output tokens spent on reasoning, as OpenAI reports them.' }),
  }),
})
