/** How a client waits between tries: exponential from `initialDelayMs` to `maxDelayMs`, with jitter. */
export interface RetryOptions {
  /** The first wait (default 250 ms). */
  initialDelayMs?: number
  /** The longest wait (default 10 s). */
  maxDelayMs?: number
  /** Tries before giving up (default Infinity: a stream waits out any outage). */
  maxAttempts?: number
}

export function backoffDelay(attempt: number, options: RetryOptions): number {
  const initial = options.initialDelayMs ?? 250
  const ceiling = Math.min(options.maxDelayMs ?? 10_000, initial * 2 ** attempt)
  return ceiling / 2 + Math.random() * (ceiling / 2)
}

/** Resolves after `ms`, or rejects with the signal's reason once it aborts. */
export function wait(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason)
    const onAbort = () => {
      clearTimeout(timer)
      reject(signal!.reason)
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort)
      resolve()
    }, ms)
    signal?.addEventListener('abort', onAbort, { once: true })
  })
}
