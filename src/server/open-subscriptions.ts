import type { ExecutionResult } from 'graphql'
import type { Plugin } from 'graphql-yoga'
import type { Principal } from '../domain/access.js'
import { ForbiddenError, type PromptlineError, RateLimitedError } from '../domain/errors.js'
import { maskError, operationError } from '../schema/errors.js'

/** When a key at its subscription cap may try again: a guess, since it depends on its own subscriptions ending. */
const SUBSCRIPTION_RETRY_MS = 1_000
/** setTimeout's longest delay; a key expiring later is ended by its revocation or the next check instead. */
const MAX_TIMER_MS = 2 ** 31 - 1

type Results = AsyncIterableIterator<ExecutionResult>

/**
 * A subscription's results that can be ended with an error: the error is its last result, on
 * every transport. Per result, one call and one await more than the subscription's own.
 */
function endable(inner: Results): { results: Results; end: (error: PromptlineError) => void } {
  let failure: PromptlineError | null = null
  let finished = false
  const last = (): IteratorResult<ExecutionResult> => {
    finished = true
    return { done: false, value: { errors: [operationError(failure!)] } }
  }
  const results: Results = {
    next: async () => {
      if (finished) return { done: true, value: undefined }
      if (failure) return last()
      const next = await inner.next()
      return next.done && failure ? last() : next
    },
    return: async (value?: unknown) => {
      finished = true
      return inner.return ? inner.return(value) : { done: true, value: undefined }
    },
    [Symbol.asyncIterator]: () => results,
  }
  return {
    results,
    end: (error) => {
      failure ??= error
      void inner.return?.()
    },
  }
}

/** The subscriptions open on this instance: per key (capped, and ended when the key is), and in all (a metric). */
export class OpenSubscriptions {
  readonly byKey = new Map<string, Set<(error: PromptlineError) => void>>()
  total = 0

  /** Ends every open subscription of a key that no longer works, with a FORBIDDEN error as its last result. */
  endKey(keyId: string, why: string): void {
    for (const end of this.byKey.get(keyId) ?? []) end(new ForbiddenError(why))
  }
}

/**
 * At most `max` subscriptions open at once per key, on every transport; each one counts until it
 * ends. A subscription of a key that expires is ended when it does.
 */
export function useSubscriptionCap(max: number, open: OpenSubscriptions): Plugin {
  const { byKey } = open
  return {
    onSubscribe({ args, setResultAndStopExecution }) {
      const { keyId, expiresAt } = args.contextValue as unknown as Principal
      const ends = byKey.get(keyId) ?? new Set()
      if (ends.size >= max) {
        const message = `this key already holds ${max} open subscriptions (PROMPTLINE_MAX_SUBSCRIPTIONS_PER_KEY)`
        setResultAndStopExecution({
          errors: [maskError(operationError(new RateLimitedError(message, 'subscriptions', SUBSCRIPTION_RETRY_MS)))],
        })
        return
      }
      byKey.set(keyId, ends)
      open.total++
      let end: ((error: PromptlineError) => void) | null = null
      let expiry: NodeJS.Timeout | undefined
      const release = () => {
        clearTimeout(expiry)
        if (end === null) return
        ends.delete(end)
        end = null
        open.total--
        if (ends.size === 0 && byKey.get(keyId) === ends) byKey.delete(keyId)
      }
      end = () => {}
      ends.add(end)
      return {
        onSubscribeResult: ({ result, setResult }) => {
          if (!(Symbol.asyncIterator in Object(result))) return release()
          const ending = endable(result as Results)
          ends.delete(end!)
          end = ending.end
          ends.add(end)
          const untilExpiry = expiresAt === null ? null : Date.parse(expiresAt) - Date.now()
          if (untilExpiry !== null && untilExpiry < MAX_TIMER_MS) {
            expiry = setTimeout(() => ending.end(new ForbiddenError('the API key expired')), Math.max(0, untilExpiry))
            expiry.unref()
          }
          setResult(ending.results)
          return { onEnd: release }
        },
        onSubscribeError: release,
      }
    },
  }
}
