import type { SessionEvent } from '../domain/events.js'
import type { RedisLink } from './redis-link.js'

/** The Redis channel that carries a session's events to the other instances. */
const relayChannel = (tenantId: string, sessionId: string) => `events:${tenantId}/${sessionId}`

interface Relayed {
  origin: string
  event: SessionEvent
}

/**
 * A session's events between instances: each instance sends what it publishes, and hears the
 * others' events of a session while anyone here subscribes to it (one Redis subscription per
 * session, however many subscribers).
 */
export class EventRelay {
  private readonly heard = new Map<string, { subscribers: number; unsubscribe: Promise<() => void> }>()

  constructor(
    private readonly link: RedisLink,
    /** Delivers an event another instance published to the subscribers here. */
    private readonly deliver: (event: SessionEvent) => void,
  ) {}

  send(event: SessionEvent): void {
    this.link.publish(relayChannel(event.tenantId, event.sessionId), { origin: this.link.instanceId, event } satisfies Relayed)
  }

  /** Hears the session's events from the others (once Redis confirmed) until the returned function is called. */
  async hear(tenantId: string, sessionId: string): Promise<() => void> {
    const channel = relayChannel(tenantId, sessionId)
    let heard = this.heard.get(channel)
    if (!heard) {
      const unsubscribe = this.link.subscribe(channel, (message) => {
        const { origin, event } = message as Relayed
        if (origin !== this.link.instanceId) this.deliver(event)
      })
      heard = { subscribers: 0, unsubscribe }
      this.heard.set(channel, heard)
    }
    heard.subscribers++
    const current = heard
    await current.unsubscribe
    return () => {
      if (--current.subscribers > 0 || this.heard.get(channel) !== current) return
      this.heard.delete(channel)
      void current.unsubscribe.then((unsubscribe) => unsubscribe())
    }
  }
}
