import type { GraphiQLOptions } from 'graphql-yoga'

/** The README's walk-through, one tab each, for a first visit (GraphiQL keeps the user's tabs after). */
const WALK_THROUGH_TABS: { query: string }[] = [
  {
    query: `# Render the shipped "chat" prompt with the fake-echo profile, without calling a model.
query Prepare {
  preparePrompt(input: { promptId: "chat", variables: { input: "hi" } }) {
    messages { role content }
    definitionHash
    renderedHash
    profileId
    model
    settings
  }
}
`,
  },
  {
    query: `# Open a session, then run the next tab's subscription and this tab's Enqueue.
mutation CreateSession {
  createSession(input: { id: "demo", defaultProfileId: "fake-echo" }) {
    __typename
    ... on CreateSessionPayload { session { id } }
    ... on Error { code message }
  }
}

mutation Enqueue {
  enqueuePrompt(input: {
    sessionId: "demo"
    promptId: "chat"
    input: "tokens arrive one by one"
    overrides: { extra: { tokenDelayMs: 200 } }
  }) {
    __typename
    ... on EnqueuePromptPayload { entry { queueId status position } }
    ... on Error { code message }
  }
}
`,
  },
  {
    query: `# Watch the session live (over graphql-ws); add afterSequence: 0 to replay it from the start.
subscription Watch {
  sessionEvents(sessionId: "demo") {
    __typename
    sequence
    ... on TokenDeltaEvent { text }
    ... on RunFinishedEvent { run { status output usage { totalTokens } } }
  }
}
`,
  },
  {
    query: `# A tool call: the fake backend calls the tools a message names; the run waits for the result.
# Run CallTool, then put its run id into SubmitResult and run that: the same run goes on.
mutation CallTool {
  runPrompt(input: {
    sessionId: "demo"
    input: "use get_weather for Oslo"
    tools: [{ name: "get_weather", inputSchema: { type: "object", properties: { city: { type: "string" } } } }]
    overrides: { extra: { toolArguments: { city: "Oslo" } } }
  }) {
    __typename
    ... on RunPromptPayload { run { id status pendingToolCalls { callId name arguments } } }
    ... on Error { code message }
  }
}

mutation SubmitResult {
  submitToolResults(input: { runId: "RUN_ID", results: [{ callId: "fake_call_1", output: "clear, 18 °C" }] }) {
    __typename
    ... on SubmitToolResultsPayload { run { status pendingToolCalls { callId } } }
    ... on Error { code message }
  }
}
`,
  },
]

/** Options of the page: subscriptions over graphql-ws, the walk-through preloaded. */
export const GRAPHIQL_OPTIONS: GraphiQLOptions = {
  title: 'promptline',
  subscriptionsProtocol: 'WS',
  defaultTabs: WALK_THROUGH_TABS,
}

let page: Promise<string> | undefined

/**
 * The self-contained GraphiQL page (its script, styles and editor workers inline, no CDN), so it
 * works on a machine without internet access. Its bundle (about 9 MB, some 40 MB of memory once
 * loaded) is loaded on the first visit, not at start; the page is rendered once, the same for everyone.
 */
export const renderSelfHostedGraphiQL = (options: GraphiQLOptions): Promise<string> =>
  (page ??= import('@graphql-yoga/render-graphiql').then(({ renderGraphiQL }) => renderGraphiQL(options)))
