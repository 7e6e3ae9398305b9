/** A catalog whose fake calls the tools a message names with `{ city: Paris }`, and given results echoes them. */
export const TOOL_LOOP_CATALOG = `
backends:
  - { id: fake, kind: FAKE }
profiles:
  - { id: fake-echo, backendId: fake, model: echo, settings: { extra: { toolArguments: { city: Paris } } } }
`
