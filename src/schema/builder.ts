import SchemaBuilder from '@pothos/core'
import ErrorsPlugin from '@pothos/plugin-errors'
import RelayPlugin from '@pothos/plugin-relay'
import ScopeAuthPlugin from '@pothos/plugin-scope-auth'
import { DateTimeResolver, JSONResolver } from 'graphql-scalars'
import { ForbiddenError, InvalidRequestError } from '../domain/errors.js'
import type { Context } from './context.js'

/** The one Pothos builder: plugins, scalars and the context type; no object types here. */
export const builder = new SchemaBuilder<{
  Context: Context
  /** write: run and change prompts and sessions; admin: also change the catalog. Any key may read. */
  AuthScopes: { write: boolean; admin: boolean }
  DefaultFieldNullability: false
  Scalars: {
    JSON: { Input: unknown; Output: unknown }
    DateTime: { Input: Date; Output: Date | string }
  }
}>({
  // scope-auth first, so no other wrapper runs a field before its check
  plugins: [ScopeAuthPlugin, ErrorsPlugin, RelayPlugin],
  scopeAuth: {
    authScopes: (ctx) => ({ write: ctx.role !== 'read', admin: ctx.role === 'admin' }),
    unauthorizedError: (_parent, ctx, info) =>
      new ForbiddenError(`a ${ctx.role} key may not call ${info.parentType.name}.${info.fieldName}`),
  },
  defaultFieldNullability: false,
  errors: {
    defaultTypes: [InvalidRequestError],
    directResult: true,
    defaultUnionOptions: {
      name: ({ fieldName }) => `${fieldName.charAt(0).toUpperCase()}${fieldName.slice(1)}Result`,
      description: 'The payload on success, or one of the typed errors this mutation answers with (each implements Error).',
    },
  },
  relay: {
    clientMutationId: 'omit',
    cursorType: 'String',
    nodeQueryOptions: false,
    nodesQueryOptions: false,
    pageInfoTypeOptions: { description: 'Where a page is in the whole list.' },
    hasNextPageFieldOptions: { description: 'True when more items follow: ask again with after = endCursor.' },
    hasPreviousPageFieldOptions: { description: 'True when the page was asked for with an after cursor.' },
    startCursorFieldOptions: { description: 'The cursor of the first item; null for an empty page.' },
    endCursorFieldOptions: { description: 'The cursor of the last item, for the next page; null for an empty page.' },
    defaultConnectionTypeOptions: { description: 'A page of a list (a Relay connection).' },
    defaultEdgeTypeOptions: { description: 'One item of a page, with its cursor.' },
    edgesFieldOptions: { description: 'The items of this page, in order.' },
    pageInfoFieldOptions: { description: 'Where this page is in the whole list.' },
    cursorFieldOptions: { description: 'An opaque position: pass it as after to get the items that follow.' },
    nodeFieldOptions: { description: 'The item.' },
  },
})

/** The builder's type parameters, for helpers that build fields or arguments. */
export type BuilderTypes = typeof builder extends PothosSchemaTypes.SchemaBuilder<infer T> ? T : never

builder.addScalarType('JSON', JSONResolver)
builder.addScalarType('DateTime', DateTimeResolver)
builder.queryType({ description: 'Reads: the catalog, dry runs, sessions, queue entries and runs.' })
builder.mutationType({
  description:
    'Changes: the catalog, sessions, and prompts admitted, scheduled, steered, cancelled and aborted. Needs a write or admin key.',
  authScopes: { write: true },
})
