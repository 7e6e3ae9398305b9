import { FixedBuffer, Repeater } from '@repeaterjs/repeater'
import type { CatalogEvent } from '../domain/catalog.js'
import { SubscriberTooSlowError } from '../domain/errors.js'
import type { Fanout } from './deployment-pubsub.js'

/**
 * A tenant's catalog changes, live to every instance's subscribers through the deployment's
 * fan-out: a client that keeps prompts hears at once that a label moved. Nothing is stored, so
 * nothing is replayed: a subscriber reads the labels it needs after subscribing.
 */
export class CatalogEvents {
  constructor(
    private readonly fanout: Fanout,
    /** Most events buffered for one slow subscriber before it is cut off. */
    private readonly subscriberBuffer = 1_000,
  ) {}

  publish(tenantId: string, event: CatalogEvent): void {
    this.fanout.pubsub.publish('catalogEvents', tenantId, event)
  }

  /** The tenant's catalog events from the moment every instance's events reach this one. */
  subscribe(tenantId: string): AsyncIterableIterator<CatalogEvent> {
    return new Repeater<CatalogEvent>(async (push, stop) => {
      const unlisten = this.fanout.listen('catalogEvents', tenantId, (event) => {
        try {
          void push(event)
        } catch {
          stop(new SubscriberTooSlowError(0))
        }
      })
      try {
        await this.fanout.heard('catalogEvents', tenantId)
        await stop
      } finally {
        unlisten()
      }
    }, new FixedBuffer(this.subscriberBuffer))
  }
}
