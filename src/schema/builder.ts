import SchemaBuilder from '@pothos/core'
import ErrorsPlugin from '@pothos/plugin-errors'
import RelayPlugin from '@pothos/plugin-relay'
import { DateTimeResolver, JSONResolver } from 'graphql-scalars'
import { InvalidRequestError } from '../domain/errors.js'
import type { Context } from './context.js'

/** The one Pothos builder: plugins, scalars and the context type; no object types here. */
export const builder = new SchemaBuilder<{
  Context: Context
  DefaultFieldNullability: false
  Scalars: {
    JSON: { Input: unknown; Output: unknown }
    DateTime: { Input: Date; Output: Date | string }
  }
}>({
  plugins: [ErrorsPlugin, RelayPlugin],
  defaultFieldNullability: false,
  errors: {
    defaultTypes: [InvalidRequestError],
    directResult: true,
    defaultUnionOptions: {
      name: ({ fieldName }) => `${fieldName.charAt(0).toUpperCase()}${fieldName.slice(1)}Result`,
    },
  },
  relay: {
    clientMutationId: 'omit',
    cursorType: 'String',
    nodeQueryOptions: false,
    nodesQueryOptions: false,
  },
})

builder.addScalarType('JSON', JSONResolver)
builder.addScalarType('DateTime', DateTimeResolver)
builder.queryType({})
builder.mutationType({})
