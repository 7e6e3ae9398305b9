// The README's walk-through as plain documents, for each client library's own gql tag.

export const PREPARE = /* GraphQL */ `
  query Prepare {
    preparePrompt(input: { promptId: "chat", variables: { input: "hi" } }) {
      messages { role content }
      renderedHash
    }
  }
`
export const UPSERT = /* GraphQL */ `
  mutation Upsert($id: ID!) {
    upsertPrompt(input: { id: $id, messages: [{ role: USER, content: "hi" }] }) {
      __typename
      ... on UpsertPromptPayload { prompt { id version } }
      ... on Error { code message }
    }
  }
`
export const CREATE_SESSION = /* GraphQL */ `
  mutation CreateSession($id: ID!) { createSession(input: { id: $id, defaultProfileId: "fake-echo" }) { __typename } }
`
export const ENQUEUE = /* GraphQL */ `
  mutation Enqueue($input: EnqueuePromptInput!) {
    enqueuePrompt(input: $input) {
      __typename
      ... on EnqueuePromptPayload { entry { id queueId status } }
      ... on Error { code message }
    }
  }
`
export const WATCH = /* GraphQL */ `
  subscription Watch($sessionId: ID!) {
    sessionEvents(sessionId: $sessionId, afterSequence: 0) {
      __typename
      sequence
      ... on QueueEntryEvent { entry { id queueId status } }
      ... on TokenDeltaEvent { text }
      ... on RunFinishedEvent { run { id status output } }
    }
  }
`
