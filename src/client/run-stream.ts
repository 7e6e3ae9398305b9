import type { ClientEventFragment, ClientRunFragment } from './generated/graphql.js'

type RunFinished = Extract<ClientEventFragment, { __typename: 'RunFinishedEvent' }>

/** A run's events, to iterate once; `done()` resolves with the run as it ended. */
export class RunStream implements AsyncIterable<ClientEventFragment> {
  private finished: RunFinished | null = null
  private iterating = false

  constructor(private readonly events: AsyncGenerator<ClientEventFragment>) {}

  async *[Symbol.asyncIterator](): AsyncGenerator<ClientEventFragment> {
    if (this.iterating) throw new Error('a RunStream is iterated once')
    this.iterating = true
    for await (const event of this.events) {
      if (event.__typename === 'RunFinishedEvent') this.finished = event
      yield event
    }
  }

  /** The run as it ended: after iterating, or by reading the rest of the stream. */
  async done(): Promise<ClientRunFragment> {
    if (!this.iterating) for await (const _ of this) void _
    if (!this.finished) throw new Error('the run stream ended before the run did')
    return this.finished.run
  }
}
