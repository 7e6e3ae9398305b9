import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { generate } from '@graphql-codegen/cli'
import { afterAll, describe, expect, it } from 'vitest'
import { PROJECT_ROOT } from '../../src/config.js'

// What a graphql-codegen client-preset user of the committed schema gets, with the scalar map
// docs/clients.md gives: it must compile under tsc --strict, and know every shape the API knows.
const dir = mkdtempSync(path.join(PROJECT_ROOT, 'test/.codegen-consumer-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const OPERATIONS = `
query Prepare { preparePrompt(input: { promptId: "chat", variables: { input: "hi" } }) { messages { role content } settings } }
mutation Enqueue($input: EnqueuePromptInput!) {
  enqueuePrompt(input: $input) {
    __typename
    ... on EnqueuePromptPayload { entry { id status queuedAt } }
    ... on Error { code message }
  }
}
subscription Watch($sessionId: ID!, $afterSequence: Int) {
  sessionEvents(sessionId: $sessionId, afterSequence: $afterSequence) {
    __typename
    sequence
    at
    ... on TokenDeltaEvent { runId text }
    ... on RunStartedEvent { runId }
    ... on MessageCreatedEvent { runId message { role content } }
    ... on RunFinishedEvent { runId run { status output parsedOutput usage { totalTokens } } }
  }
}
query Session($id: ID!) { session(id: $id) { id lastSequence queue { id status } } }
`

const CONSUMER = `
import type { EnqueueMutation, PrepareQuery, WatchSubscription } from './generated/graphql.js'

export function entryOrError(result: EnqueueMutation['enqueuePrompt']): string {
  // every error member implements Error: one branch narrows all of them
  if (result.__typename === 'EnqueuePromptPayload') return result.entry.id
  return \`\${result.code}: \${result.message}\`
}

type RunEvent = Extract<WatchSubscription['sessionEvents'], { __typename: 'TokenDeltaEvent' | 'RunStartedEvent' | 'MessageCreatedEvent' | 'RunFinishedEvent' }>
export const runIdOf = (event: RunEvent): string => event.runId // non-null on every run event

export const startedAt = (event: WatchSubscription['sessionEvents']): number => Date.parse(event.at)
export const settingsOf = (data: PrepareQuery) => data.preparePrompt.settings
`

describe('a graphql-codegen client-preset consumer of schema/schema.graphql', () => {
  it('compiles under tsc --strict, with no unknown where the API has a known shape', async () => {
    writeFileSync(path.join(dir, 'operations.graphql'), OPERATIONS)
    writeFileSync(path.join(dir, 'json.ts'), readFileSync(path.join(PROJECT_ROOT, 'src/client/json.ts')))
    writeFileSync(path.join(dir, 'consumer.ts'), CONSUMER)
    await generate(
      {
        schema: path.join(PROJECT_ROOT, 'schema/schema.graphql'),
        documents: [path.join(dir, 'operations.graphql')],
        generates: {
          [`${dir}/generated/`]: {
            preset: 'client',
            config: { useTypeImports: true, scalars: { DateTime: 'string', JSON: '../json.js#JsonValue' } },
          },
        },
        silent: true,
      },
      true,
    )
    const generated = readFileSync(path.join(dir, 'generated/graphql.ts'), 'utf8')
    // the document constants' casts and the Exact<> helper are codegen's own; every type of the API's must be known
    const unknowns = generated
      .split('\n')
      .filter((line) => /\bunknown\b/.test(line) && !/\[key: string\]: unknown| as unknown as /.test(line))
    expect(unknowns).toEqual([])
    const tsc = path.join(PROJECT_ROOT, 'node_modules/.bin/tsc')
    const args = ['--strict', '--noEmit', '--skipLibCheck', '--module', 'nodenext', '--moduleResolution', 'nodenext', '--target', 'es2022']
    expect(() => execFileSync(tsc, [...args, path.join(dir, 'consumer.ts')], { cwd: dir, stdio: 'pipe' })).not.toThrow()
  })
})
