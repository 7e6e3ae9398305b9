import { createHash } from 'node:crypto'

/**
 * Vendor SDK clients keep connection pools, so one is reused per (endpoint, key). Keyed by a
 * hash, never the key itself; bounded, oldest dropped first. `create` may load the SDK, so a
 * server that never calls a vendor never loads (or holds the memory of) its SDK.
 */
export class ClientCache<T> {
  private readonly clients = new Map<string, Promise<T>>()
  constructor(private readonly max = 64) {}

  get(endpoint: string | null, apiKey: string, create: () => Promise<T>): Promise<T> {
    const key = createHash('sha256')
      .update(`${endpoint ?? ''}\u0000${apiKey}`)
      .digest('hex')
    let client = this.clients.get(key)
    if (!client) {
      client = create()
      this.clients.set(key, client)
      if (this.clients.size > this.max) this.clients.delete(this.clients.keys().next().value!)
    }
    return client
  }
}
