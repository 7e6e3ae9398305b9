import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { FakeVendorServer } from '../fixtures/fake-vendor.js'
import { RunForAnswerDocument, type RunForAnswerMutationVariables } from '../generated/graphql.js'
import { startWithFakeVendors, type VendorTestServer } from '../helpers/fake-vendors.js'
import { createSession } from '../helpers/flow.js'
import type { TestServer } from '../helpers/server.js'

const closed = '{ type: object, properties: { answer: { type: integer } }, required: [answer], additionalProperties: false }'
// a lower bound: OpenAI's strict mode takes it, Anthropic's does not
const bounded = '{ type: object, properties: { answer: { type: integer, minimum: 0 } }, required: [answer], additionalProperties: false }'
// an open object: neither vendor's strict mode takes it
const open = '{ type: object, properties: { answer: { type: integer } }, required: [answer] }'

// Native structured output: the schema sent in each vendor's own field when it fits what the
// vendor takes (the fake vendors refuse with a 400 what the real ones refuse), validation after
// it either way, and validation with repair alone when it does not fit.
describe('structured output, natively', () => {
  let openai: FakeVendorServer
  let anthropic: FakeVendorServer
  let t: TestServer
  let vendors: VendorTestServer
  let sessionId: string
  beforeAll(async () => {
    const prompt = (id: string, schema: string, enforcement = 'AUTO') =>
      `  - { id: ${id}, maxRepairs: 1, messages: [{ role: user, content: "{{input}}" }], output: { kind: JSON_SCHEMA, enforcement: ${enforcement}, schema: ${schema} } }`
    vendors = await startWithFakeVendors(`
profiles:
  - { id: gpt, backendId: oa, model: gpt-4o }
  - { id: sonnet, backendId: an, model: claude-sonnet-4-5 }
prompts:
${prompt('closed', closed)}
${prompt('bounded', bounded)}
${prompt('open-native', open, 'NATIVE')}
${prompt('closed-validate', closed, 'VALIDATE')}
`)
    ;({ t, openai, anthropic } = vendors)
    sessionId = await createSession(t, 'structured')
  })
  afterAll(() => vendors?.stop())

  async function answer(input: Omit<RunForAnswerMutationVariables['input'], 'sessionId'>) {
    const { data } = await t.request(RunForAnswerDocument, { input: { sessionId, ...input } })
    return data!.runPrompt
  }
  async function run(input: Omit<RunForAnswerMutationVariables['input'], 'sessionId'>) {
    const result = await answer(input)
    if (result.__typename !== 'RunPromptPayload') throw new Error(JSON.stringify(result))
    return result.run!
  }

  it('OpenAI: sends the schema as a strict json_schema response_format, and validates what comes back', async () => {
    openai.script({ tokens: ['{"answer":', ' 4}'] })
    const done = await run({ promptId: 'closed', profileId: 'gpt', input: 'two plus two' })
    expect(openai.requests.at(-1)!.body.response_format).toEqual({
      type: 'json_schema',
      json_schema: {
        name: 'output',
        strict: true,
        schema: { type: 'object', properties: { answer: { type: 'integer' } }, required: ['answer'], additionalProperties: false },
      },
    })
    expect(done).toMatchObject({ status: 'COMPLETED', outputEnforcement: 'NATIVE', parsedOutput: { answer: 4 } })
    expect(done.validation).toMatchObject({ valid: true, attempts: 1 })
  })

  it('Anthropic: sends the schema as output_config.format, and validates what comes back', async () => {
    anthropic.script({ tokens: ['{"answer": 4}'] })
    const done = await run({ promptId: 'closed', profileId: 'sonnet', input: 'two plus two' })
    expect(anthropic.requests.at(-1)!.body.output_config).toEqual({
      format: {
        type: 'json_schema',
        schema: { type: 'object', properties: { answer: { type: 'integer' } }, required: ['answer'], additionalProperties: false },
      },
    })
    expect(done).toMatchObject({ status: 'COMPLETED', outputEnforcement: 'NATIVE', parsedOutput: { answer: 4 } })
  })

  it('falls back to validation and repair for a schema outside the vendor subset (a bound, on Anthropic), and sends it where it fits (OpenAI)', async () => {
    anthropic.script({ tokens: ['{"answer": -1}'] }, { tokens: ['{"answer": 3}'] })
    const fallback = await run({ promptId: 'bounded', profileId: 'sonnet', input: 'a count' })
    const [first, repair] = anthropic.requests.slice(-2)
    expect(first!.body).not.toHaveProperty('output_config')
    expect(repair!.body).not.toHaveProperty('output_config')
    expect(fallback).toMatchObject({ status: 'COMPLETED', outputEnforcement: 'VALIDATE', parsedOutput: { answer: 3 } })
    expect(fallback.validation).toMatchObject({ valid: true, attempts: 2 })

    openai.script({ tokens: ['{"answer": 3}'] })
    const native = await run({ promptId: 'bounded', profileId: 'gpt', input: 'a count' })
    expect(openai.requests.at(-1)!.body.response_format.json_schema.schema.properties.answer).toEqual({ type: 'integer', minimum: 0 })
    expect(native.outputEnforcement).toBe('NATIVE')
  })

  it('refuses NATIVE at admission when the schema does not fit, sending nothing', async () => {
    const before = openai.requests.length
    const refused = await answer({ promptId: 'open-native', profileId: 'gpt', input: 'x' })
    expect(refused).toMatchObject({
      code: 'INVALID_REQUEST',
      message: "promptId: profile 'gpt' cannot enforce the output schema natively: the root does not set additionalProperties: false",
    })
    expect(openai.requests.length).toBe(before)
  })

  it('sends no schema with VALIDATE', async () => {
    openai.script({ tokens: ['{"answer": 1}'] })
    const done = await run({ promptId: 'closed-validate', profileId: 'gpt', input: 'one' })
    expect(openai.requests.at(-1)!.body).not.toHaveProperty('response_format')
    expect(done).toMatchObject({ outputEnforcement: 'VALIDATE', parsedOutput: { answer: 1 } })
  })

  it("records the vendor's refusal under a native schema, with no repair", async () => {
    openai.script({ tokens: ["I'm sorry, I can't help with that."], refusal: true })
    const done = await run({ promptId: 'closed', profileId: 'gpt', input: 'something harmful' })
    expect(done).toMatchObject({
      outputEnforcement: 'NATIVE',
      finishReason: 'REFUSAL',
      refusal: "I'm sorry, I can't help with that.",
    })
    expect(done.validation).toMatchObject({ valid: false, attempts: 1 })
  })
})
