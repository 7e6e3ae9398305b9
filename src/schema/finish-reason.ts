import type { FinishReason } from '../domain/records.js'
import { builder } from './builder.js'
import { describedValues } from './described.js'

export const FinishReasonEnum = builder.enumType('FinishReason', {
  description: "Why the model's answer ended, the same for every vendor; Run.vendorFinishReason has the vendor's own word.",
  values: describedValues<FinishReason>({
    STOP: 'The model finished its answer (or reached a stop sequence).',
    LENGTH: "The answer reached the token limit (maxTokens, or the model's context) and was cut off.",
    TOOL_CALLS: 'The model asked to call tools.',
    CONTENT_FILTER: "The vendor's content filter cut the answer off.",
    REFUSAL: 'The model declined to answer; Run.refusal has its words where the vendor sends them apart.',
    OTHER: 'The vendor gave a reason promptline does not know, or none.',
  }),
})
