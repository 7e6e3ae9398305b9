import { EnvelopArmorPlugin } from '@escape.tech/graphql-armor'
import { useCSRFPrevention } from '@graphql-yoga/plugin-csrf-prevention'
import { useDisableIntrospection } from '@graphql-yoga/plugin-disable-introspection'
import { type DocumentNode, type GraphQLError, getOperationAST, Kind, type SelectionSetNode } from 'graphql'
import { createGraphQLError, type Plugin } from 'graphql-yoga'
import RateLimiterMemory from 'rate-limiter-flexible/lib/RateLimiterMemory.js'
import type { ErrorCode } from '../domain/errors.js'
import { RATE_LIMIT_WINDOW_MS, type RequestLimits } from '../domain/limits.js'

/** A limit refused the document: the client's to fix, with its own code. */
const tooComplex = (_ctx: unknown, error: GraphQLError) => {
  ;(error.extensions as Record<string, unknown>).code = 'QUERY_TOO_COMPLEX' satisfies ErrorCode
}

/**
 * A document nested deeper than the parser's stack (a list literal thousands deep overflows it
 * before the token limit is reached) is refused like any other too-complex document. Listed after
 * Armor, so it wraps Armor's token-counting parser.
 */
const useParseOverflowGuard: Plugin = {
  onParse({ parseFn, setParseFn }) {
    setParseFn((source, options) => {
      try {
        return parseFn(source, options)
      } catch (error) {
        if (!(error instanceof RangeError)) throw error
        throw createGraphQLError('the document is nested too deeply to parse', {
          extensions: { code: 'QUERY_TOO_COMPLEX' satisfies ErrorCode },
        })
      }
    })
  },
}

/** An error that the transports report as RATE_LIMITED (maskError and http.ts know the marker). */
const rateLimited = (message: string) => createGraphQLError(message, { extensions: { http: { statusCode: 429 } } })

/**
 * Each key's mutations a second, counted per process (rate-limiter-flexible: one counter a key,
 * reset each window). Only the operation's kind and root fields are read: a read costs nothing
 * here, a mutation one counter update, whatever the document's size or the number of keys.
 */
function useMutationRate(perSecond: number): Plugin {
  const limiter = new RateLimiterMemory({ points: perSecond, duration: RATE_LIMIT_WINDOW_MS / 1000 })
  const message = `this key sent more than ${perSecond} mutations in a second (PROMPTLINE_MUTATIONS_PER_SECOND)`
  return {
    onExecute({ args, setResultAndStopExecution }) {
      const operation = getOperationAST(args.document, args.operationName)
      if (operation?.operation !== 'mutation') return
      const keyId = (args.contextValue as { keyId?: string }).keyId ?? 'unknown'
      return limiter.consume(keyId, rootFields(args.document, operation.selectionSet)).then(
        () => undefined,
        (refused: unknown) => {
          if (refused instanceof Error) throw refused
          // a refused operation runs none of its fields (maskError gives it RATE_LIMITED)
          setResultAndStopExecution({ errors: [rateLimited(message)] })
        },
      )
    },
  }
}

/** How many mutations an operation sends: its root fields, through fragments, without __typename. */
function rootFields(document: DocumentNode, selectionSet: SelectionSetNode): number {
  let count = 0
  for (const selection of selectionSet.selections) {
    if (selection.kind === Kind.FIELD) count += selection.name.value === '__typename' ? 0 : 1
    else if (selection.kind === Kind.INLINE_FRAGMENT) count += rootFields(document, selection.selectionSet)
    else {
      const name = selection.name.value
      const fragment = document.definitions.find((d) => d.kind === Kind.FRAGMENT_DEFINITION && d.name.value === name)
      if (fragment?.kind === Kind.FRAGMENT_DEFINITION) count += rootFields(document, fragment.selectionSet)
    }
  }
  return count
}

/** The subscriptions open on this instance, per key (capped) and in all (a metric). */
export class OpenSubscriptions {
  readonly byKey = new Map<string, number>()
  total = 0
}

/** At most `max` subscriptions open at once per key, on every transport; each one counts until it ends. */
function useSubscriptionCap(max: number, open: OpenSubscriptions): Plugin {
  const { byKey } = open
  return {
    onSubscribe({ args, setResultAndStopExecution }) {
      const keyId = (args.contextValue as { keyId?: string }).keyId ?? 'unknown'
      const count = byKey.get(keyId) ?? 0
      if (count >= max) {
        setResultAndStopExecution({
          errors: [rateLimited(`this key already holds ${max} open subscriptions (PROMPTLINE_MAX_SUBSCRIPTIONS_PER_KEY)`)],
        })
        return
      }
      byKey.set(keyId, count + 1)
      open.total++
      let released = false
      const release = () => {
        if (released) return
        released = true
        open.total--
        const left = (byKey.get(keyId) ?? 1) - 1
        if (left > 0) byKey.set(keyId, left)
        else byKey.delete(keyId)
      }
      return {
        onSubscribeResult: ({ result }) => (Symbol.asyncIterator in Object(result) ? { onEnd: release } : release()),
        onSubscribeError: release,
      }
    },
  }
}

/**
 * GraphQL Armor (depth, aliases, directives, tokens, cost), Yoga's CSRF prevention (a browser's
 * "simple" request must carry a custom header; Authorization counts), and introspection only
 * when the schema is public.
 */
export function requestLimitPlugins(limits: RequestLimits, subscriptions: OpenSubscriptions): Plugin[] {
  const reject = { onReject: [tooComplex], propagateOnRejection: true, exposeLimits: true }
  return [
    EnvelopArmorPlugin({
      maxDepth: { n: limits.maxDepth, flattenFragments: true, ...reject },
      maxAliases: { n: limits.maxAliases, ...reject },
      maxDirectives: { n: limits.maxDirectives, ...reject },
      maxTokens: { n: limits.maxTokens, ...reject },
      costLimit: { maxCost: limits.maxCost, ...reject },
      blockFieldSuggestion: { enabled: !limits.publicSchema },
    }) as Plugin,
    useParseOverflowGuard,
    useMutationRate(limits.mutationsPerSecond),
    useSubscriptionCap(limits.subscriptionsPerKey, subscriptions),
    useCSRFPrevention({ requestHeaders: ['x-graphql-yoga-csrf', 'authorization'] }),
    ...(limits.publicSchema ? [] : [useDisableIntrospection() as Plugin]),
  ]
}
