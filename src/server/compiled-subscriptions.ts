import {
  createSourceEventStream,
  type DocumentNode,
  type ExecutionResult,
  GraphQLError,
  type GraphQLSchema,
  type Source,
  type SourceLocation,
} from 'graphql'
import { type CompiledQuery, compileQuery, isCompiledQuery } from 'graphql-jit'
import type { Plugin } from 'graphql-yoga'
import { TextKeyedCache } from '../domain/bounded-cache.js'

/** The longest document compiled (its operation name and text, in characters). */
const MAX_DOCUMENT_CHARS = 2 * 1024

/**
 * Each event of a subscription resolved by its selection compiled to a function (graphql-jit)
 * instead of interpreted by graphql-js: a token stream is one execution per event, and an
 * interpreted one walks the document each time. The source stream is still made by graphql-js
 * (`createSourceEventStream`): graphql-jit's own `subscribe` passes the operation's variables to
 * the field's `subscribe` instead of the field's arguments. A document graphql-jit cannot compile
 * keeps the default execution.
 */
export function useCompiledSubscriptions(): Plugin {
  // a compiled document holds a hundred times its text or more (measured: 20 KiB for the bench's
  // 200 characters, 8.7 MiB for 260 documents of 120), so the documents of clients that inline
  // their values keep at most about 2 MiB, and a large one, which would not stay, is interpreted
  const compiled = new TextKeyedCache<CompiledQuery | null>(8 * 1024, MAX_DOCUMENT_CHARS)
  const compiledQuery = (args: { schema: GraphQLSchema; document: DocumentNode; operationName?: string | null }) => {
    const text = args.document.loc?.source.body
    if (text === undefined) return null
    const key = `${args.operationName ?? ''}\n${text}`
    if (key.length > MAX_DOCUMENT_CHARS) return null
    let query = compiled.get(key)
    if (query === undefined) {
      const result = compileQuery(args.schema, args.document, args.operationName ?? undefined)
      query = isCompiledQuery(result) ? result : null
      compiled.set(key, query)
    }
    return query
  }
  return {
    onSubscribe({ args, setSubscribeFn }) {
      const query = compiledQuery(args)
      if (!query) return
      setSubscribeFn(async (args) => {
        const source = await createSourceEventStream(args)
        if (!(Symbol.asyncIterator in source)) return source
        const { contextValue, variableValues } = args
        const documentSource = args.document.loc?.source
        return mapEvents(source, async (event) => {
          const result = (await query.query(event, contextValue, variableValues ?? {})) as ExecutionResult
          return result.errors ? { ...result, errors: result.errors.map((error) => asGraphQLError(error, documentSource)) } : result
        })
      })
    },
  }
}

/**
 * A graphql-jit error as graphql-js makes them, for the error masking and the transports: with
 * its `extensions` (graphql-jit leaves them undefined), and its locations as positions in the
 * document's source (it has neither the document's nodes nor the positions they come from).
 */
function asGraphQLError(error: GraphQLError, source: Source | undefined): GraphQLError {
  const { message, path, originalError, extensions, locations } = error
  const positions = source && locations?.map((location) => positionOf(source.body, location))
  return new GraphQLError(message, { source, positions, path, originalError, extensions })
}

/** The offset of a line and column (both from 1) in `body`. */
function positionOf(body: string, { line, column }: SourceLocation): number {
  let lineStart = 0
  for (let n = 1; n < line; n++) lineStart = body.indexOf('\n', lineStart) + 1
  return lineStart + column - 1
}

/**
 * `source` with `resolve` applied to each event. Unlike an async generator's, its `return()` ends
 * the source at once, even while a `next()` waits for an event that may never come.
 */
function mapEvents<T, R>(source: AsyncIterable<T>, resolve: (event: T) => R | Promise<R>): AsyncIterableIterator<R> {
  const events = source[Symbol.asyncIterator]()
  const mapped: AsyncIterableIterator<R> = {
    async next() {
      const step = await events.next()
      return step.done ? { done: true, value: undefined } : { done: false, value: await resolve(step.value) }
    },
    async return() {
      await events.return?.()
      return { done: true, value: undefined }
    },
    async throw(error: unknown) {
      await events.return?.()
      throw error
    },
    [Symbol.asyncIterator]() {
      return mapped
    },
  }
  return mapped
}
