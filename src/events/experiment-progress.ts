import { FixedBuffer, Repeater } from '@repeaterjs/repeater'
import { SubscriberTooSlowError } from '../domain/errors.js'
import type { ExperimentProgress } from '../domain/experiments.js'
import type { Fanout } from './deployment-pubsub.js'

/**
 * How experiments are going, live to every instance's subscribers through the deployment's
 * fan-out; nothing is stored: a subscriber reads the experiment as it is after subscribing.
 */
export class ExperimentProgressEvents {
  constructor(
    private readonly fanout: Fanout,
    /** Most updates buffered for one slow subscriber before it is cut off. */
    private readonly subscriberBuffer = 1_000,
  ) {}

  publish(tenantId: string, progress: ExperimentProgress): void {
    this.fanout.pubsub.publish('experimentProgress', `${tenantId}/${progress.experimentId}`, progress)
  }

  /** The experiment's updates, from the moment every instance's reach this one; `ready` runs then (to read where it is). */
  subscribe(
    tenantId: string,
    experimentId: string,
    ready: () => Promise<ExperimentProgress | null>,
  ): AsyncIterableIterator<ExperimentProgress> {
    const key = `${tenantId}/${experimentId}`
    return new Repeater<ExperimentProgress>(async (push, stop) => {
      const unlisten = this.fanout.listen('experimentProgress', key, (progress) => {
        try {
          void push(progress)
        } catch {
          stop(new SubscriberTooSlowError(0))
        }
      })
      try {
        await this.fanout.heard('experimentProgress', key)
        const now = await ready()
        if (now) await push(now)
        await stop
      } finally {
        unlisten()
      }
    }, new FixedBuffer(this.subscriberBuffer))
  }
}
