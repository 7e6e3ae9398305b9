/**
 * A cache keyed by text that holds at most `maxBytes` of keys (values are proportional to their
 * keys: compiled templates and schemas). Oldest entries go first; a key too large to be worth
 * keeping is not kept, so input that is refused or used once cannot pile up in memory.
 */
export class TextKeyedCache<V> {
  private readonly entries = new Map<string, V>()
  private bytes = 0

  constructor(
    private readonly maxBytes: number,
    private readonly maxKeyBytes = maxBytes / 64,
  ) {}

  get(key: string): V | undefined {
    return this.entries.get(key)
  }

  set(key: string, value: V): void {
    if (key.length > this.maxKeyBytes || this.entries.has(key)) return
    this.entries.set(key, value)
    this.bytes += key.length
    for (const oldest of this.entries.keys()) {
      if (this.bytes <= this.maxBytes) break
      this.entries.delete(oldest)
      this.bytes -= oldest.length
    }
  }
}
