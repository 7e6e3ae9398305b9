import { EnvelopArmorPlugin } from '@escape.tech/graphql-armor'
import { useCSRFPrevention } from '@graphql-yoga/plugin-csrf-prevention'
import {
  type DocumentNode,
  type GraphQLError,
  getOperationAST,
  Kind,
  NoSchemaIntrospectionCustomRule,
  type SelectionSetNode,
} from 'graphql'
import { createGraphQLError, type Plugin } from 'graphql-yoga'
import type { Principal } from '../domain/access.js'
import { type ErrorCode, RateLimitedError, UnavailableError } from '../domain/errors.js'
import type { RequestLimits } from '../domain/limits.js'
import { maskError, operationError } from '../schema/errors.js'
import type { KeyLimiter } from '../services/key-limits.js'
import { type OpenSubscriptions, useSubscriptionCap } from './open-subscriptions.js'

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

/**
 * Each key's mutations, counted on counters every instance shares (`KeyLimiter`): its own
 * requests per minute, else the server's mutations per second. Only the operation's kind and
 * root fields are read: a read costs nothing here, a mutation one counter update.
 */
function useMutationRate(limiter: KeyLimiter): Plugin {
  return {
    onExecute({ args, setResultAndStopExecution }) {
      const operation = getOperationAST(args.document, args.operationName)
      if (operation?.operation !== 'mutation') return
      const principal = args.contextValue as unknown as Principal
      return limiter.countRequests(principal, rootFields(args.document, operation.selectionSet)).then(
        () => undefined,
        (refused: unknown) => {
          if (!(refused instanceof RateLimitedError || refused instanceof UnavailableError)) throw refused
          // a refused operation runs none of its fields; a result set here skips yoga's masking, so it is masked here
          setResultAndStopExecution({ errors: [maskError(operationError(refused))] })
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

/**
 * graphql-js's rule refusing introspection, on every transport (yoga's plugin keys it on the
 * HTTP request, so graphql-ws operations passed it).
 */
const noIntrospection: Plugin = {
  onValidate({ addValidationRule }) {
    addValidationRule(NoSchemaIntrospectionCustomRule)
  },
}

/**
 * GraphQL Armor (depth, aliases, directives, tokens, cost), Yoga's CSRF prevention (a browser's
 * "simple" request must carry a custom header; Authorization counts), and introspection only
 * when the schema is public.
 */
export function requestLimitPlugins(limits: RequestLimits, subscriptions: OpenSubscriptions, limiter: KeyLimiter): Plugin[] {
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
    useMutationRate(limiter),
    useSubscriptionCap(limits.subscriptionsPerKey, subscriptions),
    useCSRFPrevention({ requestHeaders: ['x-graphql-yoga-csrf', 'authorization'] }),
    ...(limits.publicSchema ? [] : [noIntrospection]),
  ]
}
