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

/** One open subscription, as its key's count holds it. */
interface OpenSubscription {
  /** Ends it with `error` as its last result (set once its results can be ended: a stored key's). */
  end: (error: PromptlineError) => void
}

/** The subscriptions open on this instance: per key (capped, and ended when the key is), and in all (a metric). */
export class OpenSubscriptions {
  private readonly byKey = new Map<string, Set<OpenSubscription>>()
  total = 0

  /** How many subscriptions of `keyId` are open here. */
  count(keyId: string): number {
    return this.byKey.get(keyId)?.size ?? 0
  }

  /** Counts a subscription of `keyId` until the returned function is called. */
  add(keyId: string, subscription: OpenSubscription): () => void {
    const ofKey = this.byKey.get(keyId) ?? new Set()
    this.byKey.set(keyId, ofKey.add(subscription))
    this.total++
    let released = false
    return () => {
      if (released) return
      released = true
      this.total--
      ofKey.delete(subscription)
      if (ofKey.size === 0 && this.byKey.get(keyId) === ofKey) this.byKey.delete(keyId)
    }
  }

  /** Ends every open subscription of a key that no longer works, with a FORBIDDEN error as its last result. */
  endKey(keyId: string, why: string): void {
    for (const subscription of this.byKey.get(keyId) ?? []) subscription.end(new ForbiddenError(why))
  }
}

/**
 * The results of a stored key's subscription, made endable (revocation, expiry); a bootstrap
 * key's or the local tenant's are left as they are, so they cost nothing more per result.
 */
function endableWhileKeyLasts(
  principal: Principal,
  result: Results,
  subscription: OpenSubscription,
): { results: Results; expiry?: NodeJS.Timeout } {
  if (principal.policy === null) return { results: result }
  const ending = endable(result)
  subscription.end = ending.end
  const untilExpiry = principal.expiresAt === null ? null : Date.parse(principal.expiresAt) - Date.now()
  if (untilExpiry === null || untilExpiry >= MAX_TIMER_MS) return { results: ending.results }
  const expiry = setTimeout(() => ending.end(new ForbiddenError('the API key expired')), Math.max(0, untilExpiry))
  expiry.unref()
  return { results: ending.results, expiry }
}

/**
 * At most `max` subscriptions open at once per key, on every transport; each one counts until it
 * ends. A stored key's subscription is ended when the key is revoked or expires.
 */
export function useSubscriptionCap(max: number, open: OpenSubscriptions): Plugin {
  return {
    onSubscribe({ args, setResultAndStopExecution }) {
      const principal = args.contextValue as unknown as Principal
      if (open.count(principal.keyId) >= max) {
        const message = `this key already holds ${max} open subscriptions (PROMPTLINE_MAX_SUBSCRIPTIONS_PER_KEY)`
        setResultAndStopExecution({
          errors: [maskError(operationError(new RateLimitedError(message, 'subscriptions', SUBSCRIPTION_RETRY_MS)))],
        })
        return
      }
      const subscription: OpenSubscription = { end: () => {} }
      const release = open.add(principal.keyId, subscription)
      return {
        onSubscribeResult: ({ result, setResult }) => {
          if (!(Symbol.asyncIterator in Object(result))) return release()
          const { results, expiry } = endableWhileKeyLasts(principal, result as Results, subscription)
          if (results !== result) setResult(results)
          return {
            onEnd: () => {
              clearTimeout(expiry)
              release()
            },
          }
        },
        onSubscribeError: release,
      }
    },
  }
}
